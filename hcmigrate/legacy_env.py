"""The legacy-JAX reference environment: a cached virtualenv with jax==jaxlib==0.4.30.

Golden traces, the compat runtime's proof and `hcmigrate verify --reference legacy` all run
"what the old code did" in this interpreter. It is created on first use through pip and
reused afterwards; the cache folder is `$HCMIGRATE_CACHE_DIR` or
`$XDG_CACHE_HOME/hcmigrate` (default `~/.cache/hcmigrate`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path
from typing import Callable

LEGACY_JAX_VERSION = "0.4.30"
# scipy: fixtures and user code call numpy/scipy on the host, as the surveyed projects do.
LEGACY_REQUIREMENTS = (
    f"jax=={LEGACY_JAX_VERSION}",
    f"jaxlib=={LEGACY_JAX_VERSION}",
    "numpy",
    "scipy",
)


class LegacyEnvError(RuntimeError):
    """The reference environment could not be created."""


def cache_dir() -> Path:
    explicit = os.environ.get("HCMIGRATE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hcmigrate"


def env_dir() -> Path:
    return cache_dir() / f"legacy-jax-{LEGACY_JAX_VERSION}-py{sys.version_info.major}{sys.version_info.minor}"


def _python_in(env: Path) -> Path:
    return env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _is_ready(python: Path) -> bool:
    if not python.exists():
        return False
    probe = subprocess.run(
        [str(python), "-c", "import jax, sys; sys.stdout.write(jax.__version__)"],
        capture_output=True,
        text=True,
    )
    return probe.returncode == 0 and probe.stdout.strip() == LEGACY_JAX_VERSION


def legacy_python(progress: Callable[[str], None] | None = None) -> Path:
    """Return the reference interpreter, creating the environment on first use."""
    env = env_dir()
    python = _python_in(env)
    if _is_ready(python):
        return python
    say = progress or (lambda message: print(message, file=sys.stderr, flush=True))
    say(f"hcmigrate: creating the legacy JAX {LEGACY_JAX_VERSION} reference environment in {env} (one time, about a minute)")
    env.parent.mkdir(parents=True, exist_ok=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(env)
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *LEGACY_REQUIREMENTS],
        capture_output=True,
        text=True,
    )
    if install.returncode != 0 or not _is_ready(python):
        raise LegacyEnvError(
            f"could not install {' '.join(LEGACY_REQUIREMENTS)} into {env}:\n{install.stderr[-2000:]}"
        )
    say("hcmigrate: legacy reference environment ready")
    return python


if __name__ == "__main__":  # `python -m hcmigrate.legacy_env` prints the interpreter path
    print(legacy_python())
