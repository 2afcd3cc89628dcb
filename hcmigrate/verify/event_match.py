"""One host call against another: `event_reason` says why a candidate event is not equivalent
to a reference event (event class, callback identity, result spec, arguments, what it printed,
what it raised, its result), or None when it is; `same_callback` tells whether two events come
from the same host function; and the text a report shows for an event and its source."""

from __future__ import annotations

from hcmigrate.verify.identity import display_name, same_host_function
from hcmigrate.verify.text_diff import diff_tokens, normalise_print, normalise_text
from hcmigrate.verify.values import (
    Tolerance,
    diff_specs,
    diff_values,
    flat_leaves,
    format_spec,
    format_value,
    kind_name,
)


def describe_event(ev: dict) -> str:
    api = ev["api"]
    order = "ordered" if ev["ordered"] else "unordered"
    if ev["class"] == "print":
        return f"{api} ({order})"
    return f"`{display_name(ev)}` via {api} ({order})"


def event_call_text(ev: dict) -> str:
    args = ", ".join(format_value(a, 80) for a in ev.get("args", []))
    kwargs = ev.get("kwargs") or {}
    if kwargs:
        args += (", " if args else "") + ", ".join(
            f"{k}={format_value(v, 60)}" for k, v in kwargs.items()
        )
    text = f"{display_name(ev)}({args})"
    if ev["class"] == "value":
        text += f" -> {format_value(ev.get('result'), 100)}"
    if ev.get("raised"):
        text += f" raised {ev['raised']}"
    out = (ev.get("stdout") or "").strip()
    if out:
        out = out.replace("\n", "\\n")
        text += f"  [printed {out[:100]!r}]"
    return text


def source_of(ev_or_reg: dict | None) -> str | None:
    if not ev_or_reg:
        return None
    site = ev_or_reg.get("site")
    if not site:
        cb = ev_or_reg.get("callback") or {}
        if cb.get("file"):
            return f"{cb['file']}:{cb['line']}"
        return None
    if "cell" in site:  # a notebook: its cell and the line in that cell
        return f"{site['file']} cell {site['cell']}, line {site['line']}: {site.get('code', '')}"
    return f"{site['file']}:{site['line']}: {site.get('code', '')}"


def event_reason(e: dict, g: dict, tol: Tolerance) -> str | None:
    """None when the candidate event g is equivalent to the reference event e."""
    ce, cg = e["class"], g["class"]
    if (ce == "value") != (cg == "value"):
        if ce == "value":
            return f"the reference used the callback's result ({format_spec(e.get('spec'))}); the candidate's {g['api']} returns no result"
        return f"the candidate's {g['api']} returns a result ({format_spec(g.get('spec'))}) where the reference had none"
    if ce != "print" and cg != "print" and not same_host_function(e, g):
        return f"different callback: `{display_name(e)}` vs `{display_name(g)}`"
    if ce == "value" and e.get("spec") and g.get("spec") and diff_specs(e["spec"], g["spec"]):
        return f"result shape/dtype changed: {format_spec(e['spec'])} vs {format_spec(g['spec'])}"
    ea, ga = e.get("args", []), g.get("args", [])
    if ce == "print" or cg == "print":
        la, lb = _printed_values(e), _printed_values(g)
        if ce == "print" and cg == "print":
            r = _diff_leaf_multiset(la, lb, tol)
            if r:
                return f"printed values differ: {r}"
            r = diff_tokens(
                normalise_print(e.get("stdout", "")), normalise_print(g.get("stdout", "")), tol
            )
            if r:
                return f"printed text differs: {r}"
        else:
            if len(la) != len(lb):
                return f"{len(la)} values vs {len(lb)} values"
            for i, (x, y) in enumerate(zip(la, lb)):
                r = diff_values(x, y, tol, f"value {i + 1}")
                if r:
                    return r
            r = diff_tokens(
                normalise_print(e.get("stdout", "")), normalise_print(g.get("stdout", "")), tol
            )
            if r:
                return f"printed text differs: {r}"
    else:
        if len(ea) != len(ga):
            return (
                f"arguments packed differently: the reference callback received {_count(len(ea))} "
                f"({', '.join(kind_name(a) for a in ea)}), the candidate's {_count(len(ga))} "
                f"({', '.join(kind_name(a) for a in ga)})"
            )
        for i, (x, y) in enumerate(zip(ea, ga)):
            r = diff_values(x, y, tol, f"argument {i + 1}")
            if r:
                if x["k"] != y["k"] and {x["k"], y["k"]} & {
                    "tuple",
                    "list",
                    "namedtuple",
                    "dict",
                    "pytree",
                }:
                    return f"arguments packed differently: {r}"
                return f"arguments differ: {r}"
        ek, gk = e.get("kwargs") or {}, g.get("kwargs") or {}
        if sorted(ek) != sorted(gk):
            return f"keyword arguments {sorted(ek)} vs {sorted(gk)}"
        for k in ek:
            r = diff_values(ek[k], gk[k], tol, f"keyword {k}")
            if r:
                return f"arguments differ: {r}"
        r = diff_tokens(
            normalise_text(e.get("stdout", "")), normalise_text(g.get("stdout", "")), tol
        )
        if r:
            return f"the callback printed differently: {r}"
    if bool(e.get("raised")) != bool(g.get("raised")):
        return f"raised: {e.get('raised') or 'nothing'} vs {g.get('raised') or 'nothing'}"
    if ce == "value" and cg == "value" and "result" in e and "result" in g:
        r = diff_values(e["result"], g["result"], tol, "result")
        if r:
            return f"callback result differs: {r}"
    return None


def _printed_values(event: dict) -> list[dict]:
    """The values a print event printed. A string given to jax.debug.print is part of its
    text (e.g. the "{" the codemod passes where a format must not start with an escaped
    brace), compared with the rest of the printed text, not as a value."""
    leaves = [leaf for a in event.get("args", []) for leaf in flat_leaves(a)] + [
        leaf for v in (event.get("kwargs") or {}).values() for leaf in flat_leaves(v)
    ]
    if event["class"] == "print":
        leaves = [leaf for leaf in leaves if leaf["k"] != "str"]
    return leaves


def _count(n: int) -> str:
    return f"{n} argument" + ("" if n == 1 else "s")


def _diff_leaf_multiset(la: list, lb: list, tol: Tolerance) -> str | None:
    if len(la) != len(lb):
        return f"{len(la)} values vs {len(lb)} values"
    remaining = list(lb)
    for i, x in enumerate(la):
        for j, y in enumerate(remaining):
            if diff_values(x, y, tol) is None:
                del remaining[j]
                break
        else:
            other = lb[i] if i < len(lb) else None
            return (
                diff_values(x, other, tol, f"value {i + 1}")
                if other
                else f"value {i + 1} {format_value(x)} not printed"
            )
    return None


def same_callback(e: dict, g: dict) -> bool:
    """Do two events come from the same host function (for explaining a difference)?"""
    pe, pg = e["class"] == "print", g["class"] == "print"
    if pe or pg:
        if pe and pg:
            return True
        other = g if pe else e
        cb = other.get("callback") or {}
        return bool(cb.get("lambda")) and "print" in cb.get("refs", ())
    if not e.get("callback") or not g.get("callback"):
        return False
    return same_host_function(e, g)
