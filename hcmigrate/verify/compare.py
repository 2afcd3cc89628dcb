"""Compare two traces written by `_runner.py`: the reference (legacy behaviour) and the candidate.

Rules (docs/verify.md describes them for users):
* Numbers: arrays must have the same shape and dtype; values are compared with
  `rtol`/`atol` (integers and booleans exactly, NaN equals NaN). A Python scalar and a 0-d
  array compare by value.
* Events are grouped by entry point. Two events are compared in program order when both
  come from ordered APIs (legacy taps and calls, `io_callback(ordered=True)`,
  `jax.debug.*(ordered=True)`); an event from an unordered API (`pure_callback`,
  `io_callback(ordered=False)`, `jax.debug.*` without `ordered=True`) may match anywhere.
* Event classes: `value` (the program uses the callback's result), `effect` (taps, calls
  without a result) and `print` (`id_print`, `jax.debug.print`). A `value` event only
  matches a `value` event; `effect` and `print` match each other.
* Callback identity: two named functions must have the same qualified name; a lambda
  matches a named function it refers to, or a lambda referring to the same names.
* Arguments: the positional arguments the host function received (legacy: the single
  `arg`; transforms and device are not arguments) with their pytree structure.
* Print normalisation (the documented differences between legacy `id_print` and
  `jax.debug.print` output, nothing else): whitespace and line breaks, tuple brackets
  `( a b )` versus `(a, b)`, `[...]`/`,` punctuation, and `Array(..., dtype=...)` wrappers
  are ignored; the remaining words must be equal and the numbers equal within tolerance.
  The printed values themselves are compared as arrays too.
* Other text (stdout outside callbacks, what a callback printed): whitespace ignored,
  numbers within tolerance, `Array(` == `array(` and `, weak_type=True` ignored (legacy
  callbacks received numpy arrays, modern ones receive jax.Array).
"""

from __future__ import annotations

import re

from hcmigrate.verify.differences import Comparison, Difference
from hcmigrate.verify.event_diff import compare_event_lists, group_by_entry
from hcmigrate.verify.sites import SiteMap
from hcmigrate.verify.stops import UNKNOWN_CALLS, after_stop, script_stop, stopped_test
from hcmigrate.verify.text_diff import first_line_diff
from hcmigrate.verify.values import Tolerance, diff_values, format_value

# Exceptions that legitimately differ between legacy and modern JAX for the same failure.
EQUIVALENT_EXCEPTIONS = {"CallbackException", "XlaRuntimeError", "JaxRuntimeError"}


# Whole traces


def compare_traces(
    ref: dict, cand: dict, tol: Tolerance | None = None, sites: SiteMap | None = None
) -> Comparison:
    tol = tol or Tolerance()
    out = Comparison()
    ref_groups, cand_groups = (
        group_by_entry(ref.get("events", [])),
        group_by_entry(cand.get("events", [])),
    )
    ref_entries = {e["name"]: e for e in ref.get("entries", [])}
    cand_entries = {e["name"]: e for e in cand.get("entries", [])}
    names: list[str] = []
    for n in ["<script>", *ref_entries, *ref_groups, *cand_entries, *cand_groups]:
        if n not in names:
            names.append(n)
    regs = cand.get("registrations", [])
    for name in names:
        E, G = ref_groups.get(name, []), cand_groups.get(name, [])
        summary = {"entry": name, "reference_events": len(E), "candidate_events": len(G)}
        out.entries.append(summary)
        diff = None
        if name != "<script>" and name in ref_entries and name not in cand_entries:
            diff = Difference(
                entry=name,
                kind="entry",
                message=f"entry `{name}` ran in the reference but not in the candidate",
            )
        elif name != "<script>" and name in cand_entries and name not in ref_entries:
            diff = Difference(
                entry=name,
                kind="entry",
                message=f"entry `{name}` ran in the candidate but not in the reference",
            )
        if diff is None:
            diff = compare_event_lists(name, E, G, tol, regs, sites)
        if diff is None and name in ref_entries and name in cand_entries:
            diff = _compare_entry_result(name, ref_entries[name], cand_entries[name], tol)
        summary["equivalent"] = diff is None
        if diff is not None:
            out.differences.append(diff)
    # stdout outside callbacks
    line_diff = first_line_diff(ref.get("stdout", ""), cand.get("stdout", ""), tol)
    if line_diff is not None:
        n, x, y = line_diff
        out.differences.append(
            Difference(
                entry="<script>",
                kind="stdout",
                position=n,
                message=f"stdout differs at line {n} (outside callbacks)",
                expected=x or "nothing",
                got=y or "nothing",
            )
        )
    stop = script_stop(ref, cand)
    if stop is not None:  # what the candidate did first leads, and explains what is missing
        after_stop(out.differences)
        out.differences.insert(0, stop)
    elif ref.get("exit_status") != cand.get("exit_status"):
        out.differences.append(
            Difference(
                entry="<script>",
                kind="exit-status",
                message=f"exit status {ref.get('exit_status')} vs {cand.get('exit_status')}",
                expected=_first_line(ref.get("error")) or f"exit {ref.get('exit_status')}",
                got=_first_line(cand.get("error")) or f"exit {cand.get('exit_status')}",
            )
        )
    return out


def _compare_entry_result(name: str, r: dict, c: dict, tol: Tolerance) -> Difference | None:
    if r.get("raised") or c.get("raised"):
        if bool(r.get("raised")) != bool(c.get("raised")):
            return Difference(
                entry=name,
                kind="result",
                message=f"entry `{name}`: raised {r.get('raised') or 'nothing'} vs {c.get('raised') or 'nothing'}",
                expected=r.get("raised") or format_value(r.get("result")),
                got=c.get("raised") or format_value(c.get("result")),
            )
        te, tg = r["raised"].split(":", 1)[0], c["raised"].split(":", 1)[0]
        if te != tg and not {te, tg} <= EQUIVALENT_EXCEPTIONS:
            return Difference(
                entry=name,
                kind="result",
                message=f"entry `{name}` raised {te} in the reference, {tg} in the candidate",
                expected=r["raised"],
                got=c["raised"],
            )
        return None
    reason = diff_values(r["result"], c["result"], tol)
    if reason is None:
        return None
    hint = None
    if c["result"]["k"] == "none" or any(leaf["k"] == "none" for leaf in _all_nodes(c["result"])):
        hint = (
            "a value the original computed is None in the candidate (jax.debug.print / jax.debug.callback return None; "
            "legacy id_print / id_tap returned their argument or `result=`)"
        )
    return Difference(
        entry=name,
        kind="result",
        message=f"entry `{name}` returned a different value: {reason}",
        expected=format_value(r["result"]),
        got=format_value(c["result"]),
        hint=hint,
    )


def _all_nodes(v: dict):
    yield v
    for item in v.get("items", []) if v["k"] in ("tuple", "list", "namedtuple", "pytree") else []:
        yield from _all_nodes(item)
    if v["k"] == "dict":
        for _, item in v["items"]:
            yield from _all_nodes(item)


def _first_line(text: str | None) -> str | None:
    if not text:
        return None
    line = text.strip().splitlines()[0]
    return line if len(line) <= 200 else line[:197] + "..."


# ---------------------------------------------------------------------------------------
# --pytest: per-test comparison

SESSION = "<session>"  # host calls made outside any test (imports, collection)
FAILED = ("failed", "error")
_EXCEPTION_NAME = re.compile(r"^\s*(?:[\w.]+\.)?(\w+(?:Error|Exception|Exit|Interrupt|Warning))\b")


def failure_reason(test: dict) -> str:
    """The kind of failure a test record shows: its exception's class name (`assert ...`
    messages are AssertionError); the runtime errors legacy and current JAX name differently
    for the same failure count as one."""
    message = (test.get("message") or "").strip()
    m = _EXCEPTION_NAME.match(message)
    name = m.group(1) if m else ("AssertionError" if message.startswith("assert") else "")
    if not name:
        name = message.split(":", 1)[0][:80] or "unknown"
    return "runtime error" if name in EQUIVALENT_EXCEPTIONS else name


def _outcome_text(t: dict) -> str:
    msg = (t.get("message") or "").strip().splitlines()
    return t["outcome"] + (f": {msg[0][:200]}" if msg else "")


def compare_pytest_traces(
    ref: dict, cand: dict, tol: Tolerance | None = None, sites: SiteMap | None = None
) -> Comparison:
    """Compare two --pytest traces test by test (nodeid): the outcome, the test's own host calls
    (under the event rules above; the first difference is reported) and what it printed."""
    tol = tol or Tolerance()
    out = Comparison(tests=[])
    ref_tests = {t["nodeid"]: t for t in ref.get("tests", [])}
    cand_tests = {t["nodeid"]: t for t in cand.get("tests", [])}
    ref_groups, cand_groups = (
        group_by_entry(ref.get("events", [])),
        group_by_entry(cand.get("events", [])),
    )
    regs = cand.get("registrations", [])
    cand_collect_errors = cand.get("collect_errors", [])
    names = list(ref_tests) + [n for n in cand_tests if n not in ref_tests]
    if ref_groups.get(SESSION) or cand_groups.get(SESSION):
        names.insert(0, SESSION)
    for name in names:
        r, c = ref_tests.get(name), cand_tests.get(name)
        E, G = ref_groups.get(name, []), cand_groups.get(name, [])
        summary = {
            "nodeid": name,
            "reference_outcome": r["outcome"] if r else (None if name != SESSION else "-"),
            "candidate_outcome": c["outcome"] if c else (None if name != SESSION else "-"),
            "reference_events": len(E),
            "candidate_events": len(G),
        }
        diffs: list[Difference] = []
        if name != SESSION and c is None:
            module = name.split("::", 1)[0]
            err = next(
                (e for e in cand_collect_errors if e["nodeid"] and module.startswith(e["nodeid"])),
                None,
            )
            diffs.append(
                Difference(
                    entry=name,
                    kind="test-missing",
                    message=f"test ran only in the reference ({r['outcome']}); the candidate did not run it",
                    expected=_outcome_text(r),
                    got="not collected",
                    hint=_collection_hint(err) if err else None,
                )
            )
        elif name != SESSION and r is None:
            diffs.append(
                Difference(
                    entry=name,
                    kind="test-extra",
                    message=f"test ran only in the candidate ({c['outcome']}); the reference did not run it",
                    expected="not collected",
                    got=_outcome_text(c),
                )
            )
        else:
            stop = None
            if r and c:
                stop = stopped_test(name, r, c, E, G, (_outcome_text(r), _outcome_text(c)))
            if stop is not None:
                diffs.append(stop)
            if stop is None or c["outcome"] not in UNKNOWN_CALLS:
                d = compare_event_lists(name, E, G, tol, regs, sites)
                if d is not None:
                    diffs.append(d)
            if stop is not None:
                after_stop(diffs)
            same_outcome = r and c and r["outcome"] == c["outcome"]
            if same_outcome and r["outcome"] in FAILED and failure_reason(r) != failure_reason(c):
                diffs.append(
                    Difference(
                        entry=name,
                        kind="outcome",
                        message=f"test {r['outcome']} on both sides, for different reasons: "
                        f"{failure_reason(r)} in the reference, {failure_reason(c)} in the candidate",
                        expected=_outcome_text(r),
                        got=_outcome_text(c),
                    )
                )
            if r and c and r["outcome"] != c["outcome"] and stop is None:
                diffs.append(
                    Difference(
                        entry=name,
                        kind="outcome",
                        message=f"test outcome {r['outcome']} in the reference, {c['outcome']} in the candidate",
                        expected=_outcome_text(r),
                        got=_outcome_text(c),
                    )
                )
            if r and c:
                line_diff = first_line_diff(r.get("stdout", ""), c.get("stdout", ""), tol)
                if line_diff is not None:
                    n, x, y = line_diff
                    diffs.append(
                        Difference(
                            entry=name,
                            kind="stdout",
                            position=n,
                            message=f"the test printed differently at line {n} (outside callbacks)",
                            expected=x or "nothing",
                            got=y or "nothing",
                        )
                    )
        summary["equivalent"] = not diffs
        summary["differences"] = [d.to_dict() for d in diffs]
        out.tests.append(summary)
        out.differences += diffs
    return out


def _collection_hint(err: dict) -> str:
    hint = f"collecting {err['nodeid']} failed in the candidate: {err['message']}"
    if err.get("package"):  # (a dependency raised it, not the project's code)
        hint += f" (raised in the installed package `{err['package']}`)"
    return hint
