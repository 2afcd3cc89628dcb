"""JAX's own numerical drift, told apart from the migration's differences (--pytest).

The legacy reference runs the original on an older JAX: XLA computes some float results a few
ulps apart there (a matrix product, a reduction), and an iterative or chaotic program carries
that far past any tolerance. When the candidate differs from such a reference in a test whose
outcome is the same on both sides, that test is run a third time: the original on the
candidate's interpreter (current JAX) with the compat runtime as host_callback. If the
candidate matches that run (same host calls, same values, the run's tolerance), the migration
changed nothing there: what differs from the legacy reference is JAX's drift between versions,
reported as a note, never as DIFFERENT. A candidate that also differs from the third run keeps
its verdict."""

from __future__ import annotations

import dataclasses

from hcmigrate.verify.classify import classify
from hcmigrate.verify.compare import compare_pytest_traces
from hcmigrate.verify.execute import SidesInterrupted, interruption, run_sides
from hcmigrate.verify.launch import Side
from hcmigrate.verify.outcome import not_comparable
from hcmigrate.verify.project import source_paths
from hcmigrate.verify.reference_env import project_compat_dir
from hcmigrate.verify.traces import only_tests

LABEL = "original-on-current-jax"


def may_drift(ref_side: Side | None, ref_trace: dict, cand_trace: dict) -> bool:
    """Do the reference and the candidate run on different JAX versions (a legacy reference)?"""
    return (
        ref_side is not None
        and not ref_side.install_compat
        and bool(ref_trace.get("jax"))
        and ref_trace.get("jax") != cand_trace.get("jax")
    )


def separate_drift(req, out, comparison, ref_trace, cand_trace, cand_side, site_map, args, workdir):
    """`comparison` with the tests whose difference is JAX's drift (see the module) marked
    equivalent, each with its `drift` (the legacy comparison's first difference), and a note."""
    suspects = [
        t["nodeid"]
        for t in comparison.tests
        if not t["equivalent"]
        and t["reference_outcome"] == t["candidate_outcome"]
        and t["reference_outcome"] not in (None, "-")
    ]
    if not suspects:
        return comparison
    original = req.original.resolve()
    third = Side(
        LABEL,
        cand_side.python,
        original,
        install_compat=True,
        compat_dir=project_compat_dir(),
        description=f"the original on current JAX with the compat runtime ({cand_side.python})",
        pytest=True,
        append_paths=cand_side.append_paths,
        cwd=str(original),
        extra_paths=[str(p) for p in source_paths(original)],
        select=suspects,
    )
    run = _run_original(req, out, comparison, third, args, workdir)
    if run is None:
        return comparison
    if run.trace is None:
        _cannot_tell(out, suspects, cand_trace, run.why_no_trace())
        return comparison
    keep = set(suspects)
    tight = compare_pytest_traces(
        only_tests(run.trace, keep), only_tests(cand_trace, keep), req.tolerance, sites=site_map
    )
    outcomes = {t["nodeid"]: t for t in tight.tests}
    third_tests = {t["nodeid"]: t for t in run.trace.get("tests", [])}
    unrun = [
        n
        for n in suspects
        if n not in outcomes or outcomes[n]["reference_outcome"] != outcomes[n]["candidate_outcome"]
    ]
    if unrun:
        first = third_tests.get(unrun[0], {})
        why = first.get("message") or run.trace.get("error") or "it did not run them"
        _cannot_tell(out, unrun, cand_trace, why.strip().splitlines()[0][:200])
    drifted = {
        n
        for n in suspects
        if n in outcomes
        and outcomes[n]["equivalent"]
        and outcomes[n]["reference_outcome"] == outcomes[n]["candidate_outcome"]
    }
    undecided = [
        n
        for n in suspects
        if n in outcomes
        and n not in drifted
        and outcomes[n]["reference_outcome"] == outcomes[n]["candidate_outcome"]
    ]
    if undecided:
        _set_apart_unstable(req, out, comparison, run, third, undecided, args, workdir)
    if not drifted:
        return comparison
    first = {}
    for d in comparison.differences:
        first.setdefault(d.entry, d.message)
    for t in comparison.tests:
        if t["nodeid"] in drifted:
            t["equivalent"], t["drift"], t["differences"] = True, first.get(t["nodeid"]), []
    comparison.differences = [d for d in comparison.differences if d.entry not in drifted]
    example = sorted(drifted)[0]
    out.notes.append(
        f"JAX drift, not the migration: {len(drifted)} test(s) differ from the legacy reference "
        f"(JAX {ref_trace.get('jax')}) as the original itself does on JAX "
        f"{cand_trace.get('jax')} (compat runtime), which the candidate matches exactly; "
        f"{example}: {first.get(example)}"
    )
    return comparison


def _cannot_tell(out, tests: list[str], cand_trace: dict, why: str) -> None:
    """The drift check could not run the original on current JAX for `tests` (an API current
    JAX removed, an import that fails): their differences stand, and a note says they may be
    drift all the same."""
    failure = classify(why)
    if failure is not None and failure.kind == "removed-jax-api":
        why = f"it uses `{failure.api}`{failure.removed_when}"
    out.notes.append(
        f"drift check not possible for {len(tests)} test(s) ({tests[0]}, ...): the original "
        f"does not run on JAX {cand_trace.get('jax')} with the compat runtime ({why}), so a "
        "numerical difference there may be JAX's drift rather than the migration's"
    )


def _run_original(req, out, comparison, side: Side, args, workdir):
    """The original's tests `side.select` on current JAX (compat runtime); None when stopped
    by a signal (the plain comparison stands)."""
    try:
        [run] = run_sides(
            [side],
            script_args=list(args),
            entries=[],
            timeout=req.timeout,
            workdir=workdir,
            platform=req.platform,
        )
    except SidesInterrupted as stop:
        out.interrupted = interruption(stop)
        out.interrupted["finished"] = len(comparison.tests)
        return None
    return run


def _set_apart_unstable(req, out, comparison, run, third, tests, args, workdir):
    """Of `tests` (the candidate differs from the original run on its own JAX), those whose
    original differs from itself when run again there: their host calls change from run to run
    (unseeded random numbers, the clock: CoLA's solvers draw `generate_pd_from_diag(seed=None)`),
    so no comparison can judge the migration. Each is set apart (category "nondeterministic",
    `out.not_comparable`), never DIFFERENT."""
    again = _run_original(
        req, out, comparison, dataclasses.replace(third, select=tests), args, workdir
    )
    if again is None or again.trace is None:
        return
    keep = set(tests)
    # (no site map: both sides are the original, there is no candidate line to name)
    itself = compare_pytest_traces(
        only_tests(run.trace, keep), only_tests(again.trace, keep), req.tolerance
    )
    first = {}
    for d in itself.differences:
        first.setdefault(d.entry, d.message)
    unstable = {t["nodeid"] for t in itself.tests if not t["equivalent"]}
    for t in comparison.tests:
        if t["nodeid"] in unstable:
            t["category"] = "nondeterministic"
            t["failure"] = (
                "not compared: the original's own host calls differ from one run to the next "
                f"on JAX {again.trace.get('jax')} ({first.get(t['nodeid'])})"
            )
            out.not_comparable.append(
                not_comparable(t["nodeid"], "nondeterministic", first.get(t["nodeid"]))
            )
    comparison.differences = [d for d in comparison.differences if d.entry not in unstable]
