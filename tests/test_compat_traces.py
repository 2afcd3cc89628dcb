"""The compat runtime reproduces legacy host_callback traces exactly.

Every scenario in fixtures/compat_runtime/scenarios runs on current JAX through
``python -m compat`` (fast path and public-only path), on each number of CPU devices it
names, and its trace must equal the one ``scripts/record_compat_traces.py`` recorded under
real jax==0.4.30. Each run is its own process, forked by one interpreter that imported JAX
once (``scripts/forked_runs.py``; ``# own process`` scenarios start fresh).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "fixtures" / "compat_runtime"))
import runner  # noqa: E402

CASES = runner.path_cases()


@pytest.fixture(scope="module")
def compat_traces():
    return runner.run_compat_cases(sys.executable, CASES)


def test_every_scenario_run_has_a_recorded_trace():
    recorded = sorted(p.name for p in runner.TRACES.glob("*.json"))
    assert recorded == sorted(runner.trace_path(*case).name for case in runner.cases())


def test_multi_device_scenarios_exist():
    assert sum(1 for _, devices in runner.cases() if devices > 1) >= 8


@pytest.mark.parametrize(
    "name,devices,path", CASES, ids=[f"{runner.case_id(n, d)}-{p}" for n, d, p in CASES]
)
def test_trace_matches_legacy(compat_traces, name, devices, path):
    got = compat_traces[(name, devices, path)]
    assert got["returncode"] == 0, got["stderr_tail"]
    assert runner.comparable(got) == runner.expected_trace(name, devices)
