"""The reports of a verify run: `text_report` (what the command prints: the sides, notes, each
entry's or test's verdict, and every difference with what was expected, what came, the
sources and a hint) and `json_report` (the same as data, in brief; both traces only when asked)."""

from __future__ import annotations

from hcmigrate.verify.outcome import CANDIDATE_BROKEN, CANNOT_RUN, Outcome
from hcmigrate.verify.traces import clean


def text_report(out: Outcome, *, verbose: bool = False) -> str:
    lines = [
        f"hcmigrate verify {out.original}"
        + (f" --pytest {out.tests}" if out.mode == "pytest" else "")
    ]
    if out.reference:
        lines.append(f"  reference: {out.reference}")
    if out.candidate:
        cj = (out.candidate_trace or {}).get("jax")
        lines.append(f"  candidate: {out.candidate}" + (f" (jax {cj})" if cj else ""))
    for note in out.notes:
        lines.append(f"  note: {note}")
    if out.kept:
        lines.append(f"  kept: {out.kept} (the migrated copy and the traces; --keep)")
    if out.exit_code == CANNOT_RUN:
        if out.comparison is not None and out.comparison.tests is not None:
            lines += _pytest_report_lines(out)  # (some tests could not be compared)
        lines.append(f"COULD NOT RUN: {out.why}")
        return "\n".join(lines)
    comp = out.comparison
    if comp is None and out.interrupted:
        lines.append(f"INTERRUPTED: {out.why}")
        return "\n".join(lines)
    assert comp is not None
    if comp.tests is not None:
        lines += _pytest_report_lines(out) + _unrelated_lines(out) + _interrupted_lines(out)
        return "\n".join(lines)
    if out.exit_code == CANDIDATE_BROKEN:
        return "\n".join(lines + _unrelated_lines(out))
    for s in comp.entries:
        if s["entry"] == "<script>" and not s["reference_events"] and not s["candidate_events"]:
            continue
        mark = "ok  " if s["equivalent"] else "DIFF"
        lines.append(
            f"  {mark} entry {s['entry']}: {s['reference_events']} host call(s) in the reference, "
            f"{s['candidate_events']} in the candidate"
        )
    if comp.equivalent:
        ref = out.reference_trace or {}
        n_ev = len(ref.get("events", []))
        n_entries = len(ref.get("entries", []))
        lines.append(
            f"EQUIVALENT: {n_ev} host call(s), {n_entries} entry result(s), stdout and exit status match"
        )
        return "\n".join(lines + _interrupted_lines(out))
    lines.append(f"DIFFERENT: {len(comp.differences)} difference(s)")
    lines += _difference_lines(comp.differences)
    if out.candidate_trace and out.candidate_trace.get("exit_status"):
        tail = [line for line in out.candidate_stderr.strip().splitlines() if line.strip()][-6:]
        if tail:
            lines.append("  candidate stderr (last lines):")
            lines += [f"    {line}" for line in tail]
    return "\n".join(lines + _interrupted_lines(out))


def _interrupted_lines(out: Outcome) -> list[str]:
    """A run stopped by a signal: the verdict above covers only what finished on both sides."""
    if not out.interrupted:
        return []
    unfinished = out.interrupted["unfinished"]
    head = f"INTERRUPTED by {out.interrupted['signal']}: the lines above cover what finished"
    if not unfinished:
        return [head]
    lines = [
        f"{head}, {out.interrupted.get('finished', 0)} test(s); {len(unfinished)} did not finish "
        "on both sides:"
    ]
    lines += [f"  not finished: {nodeid}" for nodeid in unfinished[:20]]
    if len(unfinished) > 20:
        lines.append(f"  ... and {len(unfinished) - 20} more (--json lists them all)")
    return lines


def _unrelated_lines(out: Outcome) -> list[str]:
    """Candidate failures the migration did not cause, and the verdict line when they are all
    that differs."""
    if not out.unrelated:
        return []
    lines = []
    if out.exit_code == CANDIDATE_BROKEN:
        lines.append(
            f"CANDIDATE BROKEN (not by the migration): {len(out.unrelated)} failure(s) on current "
            "JAX for other reasons; the host calls that ran match"
        )
    else:
        lines.append(f"also {len(out.unrelated)} candidate failure(s) not caused by the migration:")
    for u in out.unrelated:
        lines.append(f"- [{u['where']}] {u['failure']}")
        if u.get("error"):
            lines.append(f"    error: {u['error'].strip().splitlines()[0][:200]}")
    return lines


def _difference_lines(differences) -> list[str]:
    lines = []
    for d in differences:
        lines.append(f"- [{d.entry}] {d.message}")
        if d.expected is not None:
            lines.append(f"    expected (reference): {d.expected}")
        if d.got is not None:
            lines.append(f"    got (candidate):      {d.got}")
        if d.reference_source:
            lines.append(f"    reference source: {d.reference_source}")
        if d.candidate_source:
            lines.append(f"    candidate source: {d.candidate_source}")
        if d.hint:
            lines.append(f"    hint: {d.hint}")
    return lines


# (a test set apart from the verdict: a candidate failure the migration did not cause, or an
# original the reference's JAX cannot run)
_MARKS = {"unrelated": "NOTE", "reference-cannot-run": "SKIP", "nondeterministic": "SKIP"}


def _pytest_report_lines(out: Outcome) -> list[str]:
    comp = out.comparison
    lines = []
    for t in comp.tests:
        mark = "ok  " if t["equivalent"] else _MARKS.get(t.get("category"), "DIFF")
        ro, co = t["reference_outcome"], t["candidate_outcome"]
        if ro == co:
            outcome = ro if ro != "-" else "outside tests"
        else:
            outcome = f"{ro or 'not run'} in the reference, {co or 'not run'} in the candidate"
        if t["reference_events"] == t["candidate_events"]:
            calls = f"{t['reference_events']} host call(s)"
        else:
            calls = f"{t['reference_events']} host call(s) in the reference, {t['candidate_events']} in the candidate"
        lines.append(f"  {mark} {t['nodeid']}: {outcome}, {calls}")
        if t.get("note"):  # (what the candidate's failure was, when it is the migration's)
            lines.append(f"       why: {t['note']}")
        if t.get("category") in ("reference-cannot-run", "nondeterministic"):
            lines.append(f"       {t['failure']}")
    tests = [t for t in comp.tests if t["reference_outcome"] != "-"]
    if out.exit_code in (CANDIDATE_BROKEN, CANNOT_RUN):
        return lines
    if comp.equivalent:
        counts: dict[str, int] = {}
        for t in tests:
            counts[t["reference_outcome"]] = counts.get(t["reference_outcome"], 0) + 1
        n_ev = sum(t["reference_events"] for t in comp.tests)
        summary = ", ".join(f"{n} {k}" for k, n in counts.items())
        lines.append(
            f"EQUIVALENT: {len(tests)} test(s) ({summary}): same outcomes, {n_ev} host call(s) match"
        )
        return lines
    bad = [t for t in comp.tests if not t["equivalent"] and not t.get("category")]
    lines.append(
        f"DIFFERENT: {len(bad)} of {len(comp.tests)} test(s) differ, {len(comp.differences)} difference(s)"
    )
    lines += _difference_lines(comp.differences)
    return lines


def json_report(out: Outcome, *, events: bool = False) -> dict:
    """The report as data: the verdict, each side in brief, and per entry (script) or per test
    (--pytest) the host calls on each side, its verdict and its first difference. Every
    recorded host call (both traces) only with `events` (--json-events): a suite makes tens of
    thousands."""
    comp = out.comparison
    data = {
        "verdict": out.verdict,
        "exit_code": out.exit_code,
        "original": out.original,
        "candidate": out.candidate,
        "reference": out.reference,
        "why": out.why,
        "notes": out.notes,
        "unrelated": out.unrelated,
        "not_comparable": out.not_comparable,
        "kept": out.kept,
        "sides": {
            "reference": _side_summary(out.reference_trace),
            "candidate": _side_summary(out.candidate_trace),
        },
        "differences": [d.to_dict() for d in comp.differences] if comp else [],
        "entries": [_with_verdict(e, comp) for e in comp.entries] if comp else [],
    }
    if out.interrupted:
        data["interrupted"] = out.interrupted
    if out.mode == "pytest":
        data["mode"] = "pytest"
        data["pytest_tests"] = out.tests
        data["tests"] = (
            [_with_verdict(t, comp) for t in comp.tests]
            if comp
            else _reference_only(out.reference_trace)
        )
    if events:
        data["traces"] = {
            "reference": clean(out.reference_trace),
            "candidate": clean(out.candidate_trace),
        }
    return data


def _reference_only(trace: dict | None) -> list[dict]:
    """The reference's per-test results when nothing could be compared (the candidate could
    not start): kept, as a run on the legacy reference is worth keeping."""
    if not trace:
        return []
    calls: dict[str, int] = {}
    for ev in trace.get("events", []):
        calls[ev.get("entry")] = calls.get(ev.get("entry"), 0) + 1
    return [
        {
            "nodeid": t["nodeid"],
            "reference_outcome": t["outcome"],
            "reference_events": calls.get(t["nodeid"], 0),
            "verdict": "not compared",
        }
        for t in trace.get("tests", [])
    ]


def _side_summary(trace: dict | None) -> dict | None:
    if trace is None:
        return None
    keys = ("jax", "python", "exit_status", "error", "error_at", "pytest")
    summary = {k: trace[k] for k in keys if trace.get(k) is not None}
    summary["host_calls"] = len(trace.get("events", []))
    if trace.get("tests") is not None:
        summary["tests"] = len(trace["tests"])
    return summary


def _with_verdict(summary: dict, comp) -> dict:
    """An entry's or test's summary with its verdict and its first difference's message."""
    name = summary.get("nodeid", summary.get("entry"))
    diffs = summary.get("differences")
    if diffs is None:
        diffs = [d.to_dict() for d in comp.differences if d.entry == name]
    verdict = summary.get("category") or ("equivalent" if summary["equivalent"] else "different")
    first = diffs[0]["message"] if diffs else None
    return {**summary, "verdict": verdict, "first_difference": first}
