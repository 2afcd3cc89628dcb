"""The compat runtime on the OLDEST JAX the project claims (jax==jaxlib==0.6.2).

Creates (once, cached next to the legacy reference environment of
``hcmigrate.legacy_env``: ``$HCMIGRATE_CACHE_DIR`` or ``~/.cache/hcmigrate``) a virtualenv
with jax==jaxlib==0.6.2 through pip -- only the package registries pip is configured with
are needed -- and runs every compat trace scenario there (fast and public-only path),
requiring the traces recorded under real legacy jax 0.4.30. Always runs: if the
environment cannot be created the test fails, it is not skipped.

``HCMIGRATE_OLDEST_JAX_PYTHON=/path/to/python`` uses an existing interpreter instead.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from hcmigrate.legacy_env import is_ready, jax_env_python

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "fixtures" / "compat_runtime"))
import runner  # noqa: E402

CASES = runner.path_cases()
OLDEST_JAX = "0.6.2"  # keep in step with pyproject (jax>=0.6) and docs/compat.md


def oldest_jax_python() -> Path:
    """The cached interpreter with the oldest supported JAX, created on first use (the same
    cached, atomically built environments as the legacy reference)."""
    explicit = os.environ.get("HCMIGRATE_OLDEST_JAX_PYTHON")
    if explicit:
        return Path(explicit)
    return jax_env_python(OLDEST_JAX, "compat")


@pytest.fixture(scope="module")
def oldest_traces():
    python = str(oldest_jax_python())
    jobs = max(2, min(4, os.cpu_count() or 2))
    return python, runner.run_compat_cases(python, CASES, jobs)


def test_oldest_jax_environment_is_the_claimed_version(oldest_traces):
    python, _ = oldest_traces
    assert is_ready(Path(python), OLDEST_JAX)
    pyproject = (REPO / "pyproject.toml").read_text()
    assert '"jax>=0.6"' in pyproject  # the claim this test checks; update both together


def test_every_scenario_matches_legacy_on_oldest_jax(oldest_traces):
    _, traces = oldest_traces
    mismatched = []
    for name, devices, path in CASES:
        got = traces[(name, devices, path)]
        if got["returncode"] != 0 or runner.comparable(got) != runner.expected_trace(name, devices):
            mismatched.append(
                f"{runner.case_id(name, devices)} [{path}] rc={got['returncode']}\n"
                f"{got['stderr_tail'][-1500:]}"
            )
    assert not mismatched, "\n\n".join(mismatched)
