"""Whether the installed JAX still has the real legacy ``host_callback`` as its default.

Up to JAX 0.4.33 ``jax.experimental.host_callback`` is the legacy implementation itself
(from 0.4.26 each use warns ``DeprecationWarning``, as it warned every program then); 0.4.34
made a thin ``io_callback`` layer the default, 0.4.35-0.7.x ship a stub and 0.8 removed the
module (docs/compat.md, "Which JAX runs what").
Where the real implementation is the default, it *is* the legacy behaviour, on every
backend: ``hcmigrate_compat.host_callback`` is that module (``hcmigrate_compat.__init__``)
and ``install()`` leaves the name to it. Elsewhere the compat runtime is used.
"""

from __future__ import annotations

import re

# The newest JAX whose own host_callback runs the legacy implementation by default.
LAST_JAX_WITH_LEGACY_DEFAULT = (0, 4, 33)
JAX_MODULE = "jax.experimental.host_callback"


def jax_version() -> tuple:
    """The imported JAX's release as (major, minor, patch) ("0.4.31.dev2024" -> (0, 4, 31))."""
    import jax

    return tuple(int(n) for n in re.findall(r"\d+", jax.__version__)[:3])


def jax_has_legacy_default() -> bool:
    """True when the installed JAX's own host_callback is the legacy implementation."""
    return jax_version() <= LAST_JAX_WITH_LEGACY_DEFAULT
