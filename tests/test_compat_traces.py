"""The compat runtime reproduces legacy host_callback traces exactly.

Every scenario in fixtures/compat/scenarios runs on current JAX through
``python -m compat`` (fast path and public-only path) and its trace must equal the one
``scripts/record_compat_traces.py`` recorded under real jax==0.4.30.
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "fixtures" / "compat"))
import runner  # noqa: E402

NAMES = runner.scenario_names()
CASES = [(n, "fast") for n in NAMES] + [
    (n, "public") for n in NAMES if n not in runner.FAST_PATH_ONLY
]


@pytest.fixture(scope="module")
def compat_traces():
    def go(case):
        name, path = case
        extra = {"HCMIGRATE_COMPAT_PUBLIC_ONLY": "1" if path == "public" else "0"}
        return case, runner.run_scenario(sys.executable, name, use_compat=True, extra_env=extra)

    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(go, CASES))


def test_every_scenario_has_a_recorded_trace():
    recorded = sorted(p.stem for p in runner.TRACES.glob("*.json"))
    assert recorded == NAMES


@pytest.mark.parametrize("name,path", CASES, ids=[f"{n}-{p}" for n, p in CASES])
def test_trace_matches_legacy(compat_traces, name, path):
    expected = json.loads((runner.TRACES / f"{name}.json").read_text())
    assert expected.pop("recorded_with").startswith("jax==jaxlib==0.4.30")
    got = compat_traces[(name, path)]
    assert got["returncode"] == 0, got["stderr_tail"]
    assert runner.comparable(got) == expected
