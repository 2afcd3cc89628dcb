"""Two lists of host calls matched against each other: `compare_event_lists` pairs the
reference's events with the candidate's (ordered ones in program order, unordered ones
anywhere, preferring the call registered at the same legacy call site) and explains the first
that has no match: reordered, missing, called differently, or extra calls, with a hint."""

from __future__ import annotations

import os

from hcmigrate.verify.devices import per_device
from hcmigrate.verify.differences import Difference
from hcmigrate.verify.event_match import (
    describe_event,
    event_call_text,
    event_reason,
    same_callback,
    source_of,
)
from hcmigrate.verify.identity import callbacks_compatible, display_name, same_host_function
from hcmigrate.verify.sites import SiteMap
from hcmigrate.verify.values import Tolerance


def group_by_entry(events: list[dict]) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = {}
    for ev in events:
        groups.setdefault(ev.get("entry", "<script>"), []).append(ev)
    return groups


def compare_event_lists(
    entry: str,
    E: list[dict],
    G: list[dict],
    tol: Tolerance,
    cand_regs: list[dict],
    sites: SiteMap | None = None,
) -> Difference | None:
    """The first difference between the reference's host calls E and the candidate's G (or
    None), device by device where the calls know their device (devices.py: the interleaving
    of devices is the runtime's, not the program's)."""
    for device, e_lane, g_lane in per_device(E, G):
        d = _compare_sequence(entry, e_lane, g_lane, tol, cand_regs, sites)
        if d is not None:
            if device is not None:
                d.message = f"on device {device}: {d.message}"
            return d
    return None


def _compare_sequence(
    entry: str,
    E: list[dict],
    G: list[dict],
    tol: Tolerance,
    cand_regs: list[dict],
    sites: SiteMap | None = None,
) -> Difference | None:
    used: set[int] = set()  # indices into G
    g_ordered = [j for j, g in enumerate(G) if g["ordered"]]
    g_unordered = [j for j, g in enumerate(G) if not g["ordered"]]
    ptr = 0  # position in g_ordered
    for pos, e in enumerate(E):
        while ptr < len(g_ordered) and g_ordered[ptr] in used:
            ptr += 1
        if (
            e["ordered"]
            and ptr < len(g_ordered)
            and event_reason(e, G[g_ordered[ptr]], tol) is None
        ):
            used.add(g_ordered[ptr])
            ptr += 1
            continue
        matches = [j for j in g_unordered if j not in used and event_reason(e, G[j], tol) is None]
        # Of equal calls, the one registered at the legacy call site this one came from.
        found = next(
            (
                j
                for j in matches
                if sites is not None and sites.agrees(e.get("site"), G[j].get("site"))
            ),
            matches[0] if matches else None,
        )
        if found is None and not e["ordered"]:
            found = next(
                (
                    j
                    for j in g_ordered[ptr:]
                    if j not in used and event_reason(e, G[j], tol) is None
                ),
                None,
            )
        if found is not None:
            used.add(found)
            continue
        rest_ordered = [G[j] for j in g_ordered[ptr:] if j not in used]
        rest_unordered = [G[j] for j in g_unordered if j not in used]
        return _explain(entry, pos, e, E, G, rest_ordered, rest_unordered, tol, cand_regs, sites)
    leftover = [g for j, g in enumerate(G) if j not in used]
    if leftover:
        g = leftover[0]
        counts = _count_by_key(leftover)
        return Difference(
            entry=entry,
            kind="extra-event",
            position=len(E),
            callback=display_name(g),
            message=f"the candidate made {len(leftover)} host call(s) more than the reference ({counts})",
            expected="nothing (the reference made no more host calls)",
            got=f"{event_call_text(g)} via {g['api']}",
            candidate_source=source_of(g),
            hint=_per_element_hint(E, G, g),
        )
    return None


def _count_by_key(events: list[dict]) -> str:
    counts: dict[str, int] = {}
    for ev in events:
        k = display_name(ev)
        counts[k] = counts.get(k, 0) + 1
    return ", ".join(f"{k} x{n}" for k, n in counts.items())


def _per_element_hint(E, G, g, e=None) -> str | None:
    """Explain a count mismatch for the callback of candidate event g (same registration site)."""
    n_cand = sum(1 for x in G if x.get("reg") == g.get("reg"))
    if e is None:
        ref = [
            x
            for x in E
            if (x["class"] == g["class"] == "print")
            or (x["class"] != "print" and g["class"] != "print" and same_host_function(x, g))
        ]
    else:
        ref = [x for x in E if x.get("reg") == e.get("reg")]
    batched = [x for x in ref if "batch" in (x.get("transforms") or "")]
    if batched:
        return (
            f"the reference called it once per batch under vmap (transforms {batched[0]['transforms']}); "
            f"the candidate called it {n_cand} times from {g['site']['file'].rsplit('/', 1)[-1]}:{g['site']['line']} "
            f"({g['api']} under vmap runs once per element)"
            if g.get("site")
            else f"the reference called it once per batch under vmap; the candidate {n_cand} times ({g['api']} under vmap runs once per element)"
        )
    if ref and n_cand != len(ref):
        return f"the reference called it {len(ref)} time(s), the candidate {n_cand} time(s)"
    return None


def _explain(
    entry, pos, e, E, G, g_ordered_rest, g_unordered_rest, tol, cand_regs, sites=None
) -> Difference:
    rest = g_ordered_rest + g_unordered_rest
    name = display_name(e)
    d = Difference(
        entry=entry,
        kind="event",
        position=pos,
        callback=name,
        message="",
        expected=f"{event_call_text(e)} via {e['api']}",
        reference_source=source_of(e),
    )
    same = [
        g
        for g in rest
        if same_callback(e, g)
        and (sites is None or sites.agrees(e.get("site"), g.get("site")) is not False)
    ]
    if not same:
        # One host function called from several sites (a progress bar's start, update and
        # last update): the line-by-line site map cannot always tell a rewritten site's calls
        # apart. When the candidate still calls the function as often as the reference does
        # from here, its next call is this one, called differently; missing it is not.
        calls = [g for g in rest if same_callback(e, g)]
        if calls and len(calls) == sum(1 for x in E[pos:] if same_callback(e, x)):
            same = calls
    # 1. e does happen, later: the candidate ran something else first (reordered).
    later_match = next((g for g in rest if event_reason(e, g, tol) is None), None)
    if later_match is not None and rest and rest[0] is not later_match:
        g = rest[0]
        j = next((k for k in range(pos + 1, len(E)) if event_reason(E[k], g, tol) is None), None)
        where = f" (reference event #{j})" if j is not None else ""
        d.got = f"{event_call_text(g)} via {g['api']}"
        d.candidate_source = source_of(g)
        d.message = (
            f"event #{pos}: host calls out of order: the reference called {describe_event(e)} here, "
            f"the candidate called {describe_event(g)}{where} first"
        )
        d.hint = "taps reordered"
        return d
    # 2. the candidate never calls this callback again: missing.
    if not same:
        d.kind = "missing-event"
        n_ref = sum(1 for x in E[pos:] if same_callback(e, x) and x.get("reg") == e.get("reg"))
        d.got = (
            "nothing: the candidate made no more host calls"
            if not rest
            else f"no further call of `{name}` (next candidate call: {event_call_text(rest[0])} via {rest[0]['api']})"
        )
        d.message = (
            f"event #{pos} {describe_event(e)} is missing in the candidate "
            f"(the reference calls `{name}` {n_ref} more time(s) from here, the candidate 0)"
        )
        regs = [r for r in cand_regs if _reg_matches(r, e, sites)]
        if regs:
            r = regs[0]
            d.candidate_source = source_of(r)
            site = f"{r['site']['file']}:{r['site']['line']}" if r.get("site") else "?"
            d.hint = f"the candidate registers it via {r['api']} at {site} but it never ran"
            if r["api"] == "pure_callback":
                d.hint += " (a pure_callback whose result is unused is removed by the compiler)"
        elif sites is not None and sites.files and e.get("site"):
            site = e["site"]
            where = f"{site['file']}" + (f" cell {site['cell']}," if "cell" in site else ":")
            d.hint = (
                f"the candidate registers no callback from the legacy call site {where}"
                f"{' line ' if 'cell' in site else ''}{site['line']}"
            )
        else:
            d.hint = f"the candidate never registers a callback `{name}`"
        return d
    # 3. the same callback runs, but differently.
    g = same[0]
    reason = event_reason(e, g, tol) or "no equivalent candidate event"
    d.got = f"{event_call_text(g)} via {g['api']}"
    d.candidate_source = source_of(g)
    d.message = f"event #{pos} {describe_event(e)}: {reason}{_at_candidate(g)}"
    d.hint = _per_element_hint(E, G, g, e) if "batch" in (e.get("transforms") or "") else None
    if d.hint and "once per element" in d.hint:
        d.message = (
            f"event #{pos} {describe_event(e)}: fires once per element under vmap instead of once per batch "
            f"({reason})"
        )
    return d


def _at_candidate(g: dict) -> str:
    """' (candidate FILE:LINE)': the candidate's own line for a call (its innermost frame)."""
    site = g.get("site")
    if not site:
        return ""
    where = f"{os.path.basename(site['file'])}" + (
        f" cell {site['cell']}, line " if "cell" in site else ":"
    )
    return f" (candidate {where}{site['line']})"


def _reg_matches(reg: dict, e: dict, sites: SiteMap | None = None) -> bool:
    """Is a candidate registration (which never ran) the reference event's callback? By the
    legacy call site it came from when that is known, else by name."""
    if sites is not None:
        agrees = sites.agrees(e.get("site"), reg.get("site"))
        if agrees is not None:
            return agrees and (reg["class"] == "print") == (e["class"] == "print")
    if e["class"] == "print" or reg["class"] == "print":
        return e["class"] == reg["class"] == "print"
    return (
        bool(reg.get("callback"))
        and callbacks_compatible(reg["callback"], e.get("callback"))
        and (
            reg["callback"]["name"] == (e.get("callback") or {}).get("name")
            or reg["callback"]["lambda"]
            or (e.get("callback") or {}).get("lambda", False)
        )
    )
