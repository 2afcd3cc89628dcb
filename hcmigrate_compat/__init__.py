"""hcmigrate_compat: legacy ``jax.experimental.host_callback`` semantics on any JAX.

``from hcmigrate_compat import host_callback as hcb`` gives the legacy API.
``hcmigrate_compat.install()`` makes ``import jax.experimental.host_callback`` (and ``from
jax.experimental import host_callback``) resolve to it, so unmodified legacy programs run;
``python -m hcmigrate_compat SCRIPT [ARGS]`` runs a script that way.

On a JAX whose own host_callback is still the legacy implementation (up to 0.4.33),
``hcmigrate_compat.host_callback`` *is* that module (``_jax_legacy``); on later JAX it is
the compat runtime (``hcmigrate_compat/host_callback.py``). ``uses_jax_legacy()`` says which.

Its own distribution, ``hcmigrate-compat``, depends on jax and numpy only, for libraries;
hcmigrate ships it too, with ``compat`` as a second name for the same modules (the name
hcmigrate's codemod writes). This package imports only jax, numpy and the standard library,
and importing it imports no JAX.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

from ._install import install, installed, uninstall

__version__ = "0.1.0"  # the version of hcmigrate it ships with (pyproject.toml)
__all__ = ["install", "uninstall", "installed", "host_callback", "uses_jax_legacy"]

_HOST_CALLBACK = __name__ + ".host_callback"


class _JaxLegacyLoader(importlib.abc.Loader):
    """Loads ``hcmigrate_compat.host_callback`` as JAX's own legacy module."""

    def create_module(self, spec):
        from ._jax_legacy import JAX_MODULE

        module = importlib.import_module(JAX_MODULE)
        if not hasattr(module, "id_tap_dep_p"):  # gone from JAX's own module since 0.4.16
            from ._id_tap_dep import id_tap_dep_p

            module.id_tap_dep_p = id_tap_dep_p
        return module

    def exec_module(self, module):
        pass  # executed under its own name


class _HostCallbackChooser(importlib.abc.MetaPathFinder):
    """Answers ``hcmigrate_compat.host_callback`` with JAX's own module where that is the
    legacy implementation; otherwise the file (the compat runtime) is found as usual. It
    imports JAX only when that name is imported, which imports JAX either way."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _HOST_CALLBACK:
            return None
        from ._jax_legacy import jax_has_legacy_default

        if not jax_has_legacy_default():
            return None
        return importlib.util.spec_from_loader(fullname, _JaxLegacyLoader())


if not any(type(f).__name__ == "_HostCallbackChooser" for f in sys.meta_path):
    sys.meta_path.insert(0, _HostCallbackChooser())


def uses_jax_legacy() -> bool:
    """True when ``hcmigrate_compat.host_callback`` is the installed JAX's own legacy
    implementation (JAX <= 0.4.33), False when it is the compat runtime. Imports JAX."""
    from ._jax_legacy import jax_has_legacy_default

    return jax_has_legacy_default()


def __getattr__(name):
    if name == "host_callback":
        return importlib.import_module(_HOST_CALLBACK)
    raise AttributeError(name)
