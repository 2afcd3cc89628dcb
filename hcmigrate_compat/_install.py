"""install()/uninstall(): make ``jax.experimental.host_callback`` resolve to compat's module.

The alias is an import hook (a finder first on ``sys.meta_path``), so installing it imports
nothing: JAX is imported when the program first imports it, after the program's own code
has set what JAX reads at import (``JAX_ENABLE_X64``, ``XLA_FLAGS``, ...). A module already
imported under that name (JAX 0.4.35-0.7.x ship a stub) is replaced at once. On a JAX whose
own module is still the legacy implementation (``_jax_legacy``) the name is left to it:
``hcmigrate_compat.host_callback`` is that module there.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

_MODULE_NAME = "jax.experimental.host_callback"
_IMPLEMENTATION = __name__.rpartition(".")[0] + ".host_callback"
_saved: dict = {}


class _AliasLoader(importlib.abc.Loader):
    """Loads the name by returning compat's host_callback module itself."""

    def create_module(self, spec):
        return importlib.import_module(_IMPLEMENTATION)

    def exec_module(self, module):
        pass  # already executed under its own name


class _HostCallbackFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != _MODULE_NAME:
            return None
        from ._jax_legacy import jax_has_legacy_default

        if jax_has_legacy_default():  # JAX's own module is legacy itself (jax is imported)
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader())


_FINDER = _HostCallbackFinder()


def install() -> None:
    """Make ``jax.experimental.host_callback`` resolve to ``hcmigrate_compat.host_callback``.

    Works whether the real module is gone (JAX >= 0.8), is a stub (0.4.35 - 0.7.x) or is
    still there (up to 0.4.33 it is the legacy implementation, which both names then give).
    Imports JAX only if the name was already imported. Idempotent.
    """
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    jexp = sys.modules.get("jax.experimental")
    loaded = sys.modules.get(_MODULE_NAME)
    if loaded is None and (jexp is None or "host_callback" not in jexp.__dict__):
        return  # the finder will answer the first import
    host_callback = importlib.import_module(_IMPLEMENTATION)
    if loaded is host_callback:
        return
    if "module" not in _saved:
        _saved["module"] = loaded
        _saved["attr"] = jexp.__dict__.get("host_callback") if jexp is not None else None
    sys.modules[_MODULE_NAME] = host_callback
    if jexp is not None:
        setattr(jexp, "host_callback", host_callback)


def installed() -> bool:
    """True while :func:`install` is in effect."""
    return _FINDER in sys.meta_path


def uninstall() -> None:
    """Undo :func:`install` (restores whatever was there before)."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    jexp = sys.modules.get("jax.experimental")
    implementation = sys.modules.get(_IMPLEMENTATION)
    module, attr = _saved.pop("module", None), _saved.pop("attr", None)
    if module is not None:
        sys.modules[_MODULE_NAME] = module
    elif implementation is not None and sys.modules.get(_MODULE_NAME) is implementation:
        del sys.modules[_MODULE_NAME]
    if jexp is not None:
        if attr is not None:
            setattr(jexp, "host_callback", attr)
        elif implementation is not None and jexp.__dict__.get("host_callback") is implementation:
            delattr(jexp, "host_callback")
