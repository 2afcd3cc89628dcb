"""compat: legacy ``jax.experimental.host_callback`` semantics on current JAX.

``from compat import host_callback as hcb`` gives the legacy API. ``compat.install()``
makes ``import jax.experimental.host_callback`` (and ``from jax.experimental import
host_callback``) resolve to it, so unmodified legacy programs run; ``python -m compat
SCRIPT [ARGS]`` runs a script that way.

This package imports only jax, numpy and the standard library.
"""

from __future__ import annotations

from ._install import install, installed, uninstall

__all__ = ["install", "uninstall", "installed", "host_callback"]


def __getattr__(name):
    if name == "host_callback":
        import importlib

        return importlib.import_module(".host_callback", __name__)
    raise AttributeError(name)
