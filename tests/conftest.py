"""Shared fixtures. The legacy reference interpreter is real jax 0.4.30 in its own venv."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


@pytest.fixture(scope="session")
def legacy_python() -> Path:
    """Path to the interpreter with real jax==jaxlib==0.4.30 (created on first use)."""
    from hcmigrate.legacy_env import legacy_python as ensure

    return ensure()


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The hcmigrate-compat wheel built from a copy of this checkout (packaging/hcmigrate-compat;
    the checkout is left as it was). Built once per session: tests/test_compat_packaging.py
    and tests/test_compat_floor.py install it."""
    src = tmp_path_factory.mktemp("src")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info")
    shutil.copytree(REPO / "hcmigrate_compat", src / "hcmigrate_compat", ignore=ignore)
    shutil.copytree(
        REPO / "packaging" / "hcmigrate-compat",
        src / "packaging" / "hcmigrate-compat",
        ignore=ignore,
    )
    out = tmp_path_factory.mktemp("dist")
    project = str(src / "packaging" / "hcmigrate-compat")
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--disable-pip-version-check",
            "wheel",
            "--no-deps",
            project,
            "-w",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (found,) = out.glob("hcmigrate_compat-*.whl")
    return found


@pytest.fixture(autouse=True)
def _own_result_cache(tmp_path_factory, monkeypatch):
    """Each test gets an empty result cache (hcmigrate.cache), so no test sees results another
    test, or an earlier run of the suite, left behind. tests/test_cache.py covers the cache."""
    monkeypatch.setenv(
        "HCMIGRATE_RESULT_CACHE_DIR", str(tmp_path_factory.mktemp("hcmigrate-cache"))
    )


# The suite runs the same on a CI service: `CI=true` makes `hcmigrate verify` take the
# original from git (hcmigrate.verify.original_ref), which only the tests of that set. Unset
# for the whole session, before any fixture (module- and session-scoped ones run verify too).
os.environ.pop("CI", None)
