"""hcmigrate_compat: legacy ``jax.experimental.host_callback`` semantics on current JAX.

``from hcmigrate_compat import host_callback as hcb`` gives the legacy API.
``hcmigrate_compat.install()`` makes ``import jax.experimental.host_callback`` (and ``from
jax.experimental import host_callback``) resolve to it, so unmodified legacy programs run;
``python -m hcmigrate_compat SCRIPT [ARGS]`` runs a script that way.

Its own distribution, ``hcmigrate-compat``, depends on jax and numpy only, for libraries;
hcmigrate ships it too, with ``compat`` as a second name for the same modules (the name
hcmigrate's codemod writes). This package imports only jax, numpy and the standard library,
and importing it imports no JAX.
"""

from __future__ import annotations

from ._install import install, installed, uninstall

__version__ = "0.1.0"  # the version of hcmigrate it ships with (pyproject.toml)
__all__ = ["install", "uninstall", "installed", "host_callback"]


def __getattr__(name):
    if name == "host_callback":
        import importlib

        return importlib.import_module(".host_callback", __name__)
    raise AttributeError(name)
