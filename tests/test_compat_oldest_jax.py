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

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hcmigrate.legacy_env import is_ready, jax_env_python

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "fixtures" / "compat"))
import runner  # noqa: E402

OLDEST_JAX = "0.6.2"  # keep in step with pyproject (jax>=0.6) and docs/compat.md


def oldest_jax_python() -> Path:
    """The cached interpreter with the oldest supported JAX, created on first use (the same
    cached, atomically built environments as the legacy reference)."""
    explicit = os.environ.get("HCMIGRATE_OLDEST_JAX_PYTHON")
    if explicit:
        return Path(explicit)
    return jax_env_python(OLDEST_JAX, "compat")


CASES = [(n, "fast") for n in runner.scenario_names()] + [
    (n, "public") for n in runner.scenario_names() if n not in runner.FAST_PATH_ONLY
]


@pytest.fixture(scope="module")
def oldest_traces():
    python = str(oldest_jax_python())

    def go(case):
        name, path = case
        extra = {"HCMIGRATE_COMPAT_PUBLIC_ONLY": "1" if path == "public" else "0"}
        return case, runner.run_scenario(python, name, use_compat=True, extra_env=extra)

    with ThreadPoolExecutor(max(2, min(4, os.cpu_count() or 2))) as pool:
        return python, dict(pool.map(go, CASES))


def test_oldest_jax_environment_is_the_claimed_version(oldest_traces):
    python, _ = oldest_traces
    assert is_ready(Path(python), OLDEST_JAX)
    pyproject = (REPO / "pyproject.toml").read_text()
    assert '"jax>=0.6"' in pyproject  # the claim this test checks; update both together


def test_every_scenario_matches_legacy_on_oldest_jax(oldest_traces):
    _, traces = oldest_traces
    mismatched = []
    for name, path in CASES:
        expected = json.loads((runner.TRACES / f"{name}.json").read_text())
        expected.pop("recorded_with")
        got = traces[(name, path)]
        if got["returncode"] != 0 or runner.comparable(got) != expected:
            mismatched.append(
                f"{name} [{path}] rc={got['returncode']}\n{got['stderr_tail'][-1500:]}"
            )
    assert not mismatched, "\n\n".join(mismatched)
