"""Shared fixtures. The legacy reference interpreter is real jax 0.4.30 in its own venv."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


@pytest.fixture(scope="session")
def legacy_python() -> Path:
    """Path to the interpreter with real jax==jaxlib==0.4.30 (created on first use)."""
    from hcmigrate.legacy_env import legacy_python as ensure

    return ensure()


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
