"""Runnable codemod fixtures: NAME.out.py on current JAX must do what NAME.in.py did on REAL
legacy jax 0.4.30, as recorded in fixtures/golden/NAME.json by scripts/record_golden.py; and the
unmodified NAME.in.py under the compat runtime (as `python -m compat NAME.in.py` runs it) must
do the same."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hcmigrate.verify.compare import compare_traces
from hcmigrate.verify.execute import run_sides
from hcmigrate.verify.golden import MARKER, printed_text, runnable_fixtures
from hcmigrate.verify.launch import Side
from hcmigrate.verify.outcome import CANNOT_RUN, DIFFERENT, EQUIVALENT, Outcome
from hcmigrate.verify.reference_env import project_compat_dir
from hcmigrate.verify.report import text_report
from hcmigrate.verify.values import Tolerance
from hcmigrate.verify.workspace import scratch_folder

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
GOLDEN = REPO / "fixtures" / "golden"
RUNNABLE = [path.name[: -len(".in.py")] for path in runnable_fixtures(FIXTURES)]


def _record_all(suffix: str, install_compat: bool) -> dict:
    """Run every NAME{suffix} once with the recorder (2 at a time)."""

    def one(name):
        script = FIXTURES / f"{name}{suffix}"
        if not script.exists():
            return name, (None, f"{script.name} does not exist")
        side = Side(
            "candidate",
            sys.executable,
            script,
            install_compat=install_compat,
            compat_dir=project_compat_dir(),
        )
        with scratch_folder() as workdir:
            [res] = run_sides([side], script_args=[], entries=[], timeout=300, workdir=workdir)
        return name, (res.trace, None if res.trace else res.why_no_trace())

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, RUNNABLE))


@pytest.fixture(scope="session")
def candidate_traces() -> dict:
    return _record_all(".out.py", install_compat=False)


@pytest.fixture(scope="session")
def compat_traces() -> dict:
    return _record_all(".in.py", install_compat=True)


def test_fixtures_are_discovered():
    assert RUNNABLE, f"no fixture in {FIXTURES} starts with {MARKER!r}"


# Fixtures whose printed digits current JAX's own arithmetic changes (the program prints a
# float32 result: `0.5258966` on jax 0.4.30, `0.52589667` on current JAX). Their migrated
# program must print what the unmigrated one prints on the compat runtime, on the same JAX.
ARITHMETIC_DIGITS = {"seed_000_tutorial"}


@pytest.mark.parametrize("name", RUNNABLE)
def test_out_matches_golden_legacy_trace(name, candidate_traces, compat_traces):
    reference = _assert_matches_golden(name, candidate_traces, f"fixtures/{name}.out.py")
    # what it printed (id_print's text, its own prints) is legacy's, character for character
    expected = printed_text(reference)
    if name in ARITHMETIC_DIGITS:
        expected = printed_text(compat_traces[name][0])
        assert expected != printed_text(reference), f"{name} prints legacy's digits now"
    assert printed_text(candidate_traces[name][0]) == expected


@pytest.mark.parametrize("name", RUNNABLE)
def test_unmodified_legacy_program_under_compat_matches_golden(name, compat_traces):
    candidate = f"fixtures/{name}.in.py under the compat runtime"
    reference = _assert_matches_golden(name, compat_traces, candidate)
    if name not in ARITHMETIC_DIGITS:
        assert printed_text(compat_traces[name][0]) == printed_text(reference)


def _assert_matches_golden(name: str, traces: dict, candidate: str) -> dict:
    """Assert the candidate's trace is equivalent to the golden one; the golden trace."""
    golden = GOLDEN / f"{name}.json"
    if not golden.exists():
        pytest.fail(
            f"missing {golden.relative_to(REPO)}: run `python scripts/record_golden.py {name}` (real legacy JAX)"
        )
    reference = json.loads(golden.read_text(encoding="utf-8"))
    assert reference.get("recorded_by") == "scripts/record_golden.py"
    trace, why = traces[name]
    if trace is None:
        pytest.fail(f"{candidate} could not run: {why}")
    comparison = compare_traces(reference, trace, Tolerance())
    outcome = Outcome(
        exit_code=EQUIVALENT if comparison.equivalent else DIFFERENT,
        original=f"fixtures/{name}.in.py",
        candidate=candidate,
        reference=f"golden trace {golden.relative_to(REPO)} (jax {reference.get('jax')})",
        comparison=comparison,
        reference_trace=reference,
        candidate_trace=trace,
    )
    assert outcome.exit_code != CANNOT_RUN
    assert comparison.equivalent, "\n" + text_report(outcome)
    return reference
