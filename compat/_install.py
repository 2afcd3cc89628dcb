"""install()/uninstall(): alias compat.host_callback as jax.experimental.host_callback."""

from __future__ import annotations

import sys


_MODULE_NAME = "jax.experimental.host_callback"
_saved: dict = {}


def install() -> None:
    """Make ``jax.experimental.host_callback`` resolve to ``compat.host_callback``.

    Works whether the real module is gone (JAX >= 0.8), is a stub (0.4.35 - 0.7.x) or is
    still there. Idempotent.
    """
    import jax.experimental as jexp

    from compat import host_callback

    if installed():
        return
    if "module" not in _saved:
        _saved["module"] = sys.modules.get(_MODULE_NAME)
        _saved["attr"] = jexp.__dict__.get("host_callback", None)
    sys.modules[_MODULE_NAME] = host_callback
    setattr(jexp, "host_callback", host_callback)


def installed() -> bool:
    from compat import host_callback

    return sys.modules.get(_MODULE_NAME) is host_callback


def uninstall() -> None:
    """Undo :func:`install` (restores whatever was there before)."""
    import jax.experimental as jexp

    if not _saved:
        return
    module, attr = _saved.pop("module"), _saved.pop("attr")
    if module is None:
        sys.modules.pop(_MODULE_NAME, None)
    else:
        sys.modules[_MODULE_NAME] = module
    if attr is None:
        if "host_callback" in jexp.__dict__:
            delattr(jexp, "host_callback")
    else:
        setattr(jexp, "host_callback", attr)
