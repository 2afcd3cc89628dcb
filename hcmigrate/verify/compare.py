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

import math
import re
from dataclasses import asdict, dataclass, field

import numpy as np

from hcmigrate.verify.sites import SiteMap
from hcmigrate.verify.identity import (
    callbacks_compatible,
    display_name,
    same_host_function,
)

DEFAULT_RTOL = 1e-4
DEFAULT_ATOL = 1e-6

# Exceptions that legitimately differ between legacy and modern JAX for the same failure.
EQUIVALENT_EXCEPTIONS = {"CallbackException", "XlaRuntimeError", "JaxRuntimeError"}


@dataclass
class Tolerance:
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL


@dataclass
class Difference:
    entry: str
    kind: str  # event | missing-event | extra-event | result | stdout | exit-status | entry
    message: str
    position: int | None = None
    callback: str | None = None
    expected: str | None = None
    got: str | None = None
    reference_source: str | None = None
    candidate_source: str | None = None
    hint: str | None = None

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class Comparison:
    differences: list[Difference] = field(default_factory=list)
    entries: list[dict] = field(default_factory=list)  # per-entry summary
    tests: list[dict] | None = None  # --pytest: per-test results

    @property
    def equivalent(self) -> bool:
        return not self.differences


# ---------------------------------------------------------------------------------------
# Values


def _as_array(v: dict) -> np.ndarray | None:
    cached = v.get("_np")
    if cached is not None:
        return cached
    if v["k"] == "array" and "data" in v:
        dtype = (
            np.dtype(v["dtype"])
            if v["dtype"] in np.sctypeDict or _is_np_dtype(v["dtype"])
            else np.float64
        )
        if dtype.kind == "c":
            re_, im = v["data"]
            arr = np.asarray(re_, dtype=np.float64) + 1j * np.asarray(im, dtype=np.float64)
        elif dtype.kind in "biu":
            arr = np.asarray(v["data"], dtype=np.int64 if dtype.kind != "b" else bool)
        else:
            arr = np.asarray(_floats(v["data"]), dtype=np.float64)
        arr = arr.reshape(v["shape"])
    elif v["k"] == "py" and v["t"] in ("int", "float", "bool"):
        arr = np.asarray(v["v"])
    elif v["k"] == "py" and v["t"] == "complex":
        arr = np.asarray(complex(*v["v"]))
    else:
        return None
    v["_np"] = arr
    return arr


def _floats(data):
    if isinstance(data, list):
        return [_floats(d) for d in data]
    return float(data) if not isinstance(data, str) else float(data)


def _is_np_dtype(name: str) -> bool:
    try:
        np.dtype(name)
        return True
    except TypeError:
        return False


def _close(a: np.ndarray, b: np.ndarray, tol: Tolerance) -> np.ndarray:
    if a.dtype.kind in "biu" and b.dtype.kind in "biu":
        return a == b
    return np.isclose(a, b, rtol=tol.rtol, atol=tol.atol, equal_nan=True)


def diff_values(a: dict, b: dict, tol: Tolerance, path: str = "") -> str | None:
    """None when equal, else a short reason naming where they differ."""
    where = f" at {path}" if path else ""
    ka, kb = a["k"], b["k"]
    numeric = ("array", "py")
    if ka in numeric and kb in numeric and not (a.get("t") == "str" or b.get("t") == "str"):
        return _diff_numeric(a, b, tol, where)
    if ka != kb:
        return f"{_kind_name(a)} vs {_kind_name(b)}{where}"
    if ka == "none":
        return None
    if ka in ("str", "device"):
        return None if a["v"] == b["v"] else f"{a['v']!r} vs {b['v']!r}{where}"
    if ka in ("tuple", "list", "namedtuple", "pytree"):
        if ka in ("namedtuple", "pytree") and a.get("t") != b.get("t"):
            return f"{a.get('t')} vs {b.get('t')}{where}"
        ia, ib = a["items"], b["items"]
        if len(ia) != len(ib):
            return f"{ka} of {len(ia)} vs {ka} of {len(ib)}{where}"
        for i, (x, y) in enumerate(zip(ia, ib)):
            r = diff_values(x, y, tol, f"{path}[{i}]")
            if r:
                return r
        return None
    if ka == "dict":
        keys_a = [k for k, _ in a["items"]]
        keys_b = [k for k, _ in b["items"]]
        if keys_a != keys_b:
            return f"dict keys {keys_a} vs {keys_b}{where}"
        for (k, x), (_, y) in zip(a["items"], b["items"]):
            r = diff_values(x, y, tol, f"{path}[{k!r}]")
            if r:
                return r
        return None
    if ka == "array":  # non-numeric arrays: compare their text
        return (
            None
            if (a.get("repr"), a["shape"], a["dtype"]) == (b.get("repr"), b["shape"], b["dtype"])
            else f"values differ{where}"
        )
    # objects: only the type can be compared across processes
    return None if a.get("t") == b.get("t") else f"{a.get('t')} vs {b.get('t')}{where}"


def _kind_name(v: dict) -> str:
    k = v["k"]
    if k == "none":
        return "None"
    if k == "array":
        return f"{v['dtype']}{list(v['shape'])}"
    if k in ("tuple", "list"):
        return f"{k} of {len(v['items'])}"
    if k in ("namedtuple", "pytree", "object"):
        return str(v.get("t"))
    if k == "py":
        return f"Python {v['t']}"
    return k


def _diff_numeric(a: dict, b: dict, tol: Tolerance, where: str) -> str | None:
    if a["k"] == "array" and b["k"] == "array":
        if list(a["shape"]) != list(b["shape"]):
            return f"shape {tuple(a['shape'])} vs {tuple(b['shape'])}{where}"
        if a["dtype"] != b["dtype"]:
            return f"dtype {a['dtype']} vs {b['dtype']}{where}"
        if "summary" in a or "summary" in b:
            sa, sb = a.get("summary"), b.get("summary")
            if not sa or not sb:
                return f"values differ{where}"
            if sa["sha256"] == sb["sha256"]:
                return None
            for key in ("sum", "min", "max"):
                if not np.allclose(
                    sa[key],
                    sb[key],
                    rtol=tol.rtol,
                    atol=tol.atol * max(1, a.get("size", 1)),
                    equal_nan=True,
                ):
                    return f"values differ{where} ({key} {sa[key]} vs {sb[key]})"
            return None
    x, y = _as_array(a), _as_array(b)
    if x is None or y is None:
        return None if a.get("repr") == b.get("repr") else f"values differ{where}"
    if x.shape != y.shape:
        return f"shape {x.shape} vs {y.shape}{where}"
    ok = _close(x, y, tol)
    if np.all(ok):
        return None
    bad = np.argwhere(~np.asarray(ok))
    if x.ndim == 0:
        return f"value {x.item()!r} vs {y.item()!r}{where}"
    idx = tuple(int(i) for i in bad[0])
    return f"values differ{where} at index {idx}: {x[idx]!r} vs {y[idx]!r} ({len(bad)} of {x.size} elements differ)"


def flat_leaves(v: dict) -> list[dict]:
    k = v["k"]
    if k == "none":
        return []
    if k in ("tuple", "list", "namedtuple", "pytree"):
        return [leaf for i in v["items"] for leaf in flat_leaves(i)]
    if k == "dict":
        return [leaf for _, i in v["items"] for leaf in flat_leaves(i)]
    return [v]


def format_value(v: dict | None, limit: int = 160) -> str:
    if v is None:
        return "nothing"
    text = _fmt(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _fmt(v: dict) -> str:
    k = v["k"]
    if k == "none":
        return "None"
    if k == "py":
        return repr(complex(*v["v"])) if v["t"] == "complex" else repr(v["v"])
    if k in ("str", "device"):
        return repr(v["v"])
    if k == "array":
        arr = _as_array(v) if "data" in v else None
        head = f"{v['dtype']}{list(v['shape'])}".replace("[]", "[]")
        if arr is None:
            return f"{head} {v.get('repr', '<summary>')}"
        with np.printoptions(precision=6, threshold=8, edgeitems=3, linewidth=10_000):
            body = np.array2string(
                arr.astype(v["dtype"]) if _is_np_dtype(v["dtype"]) else arr, separator=" "
            )
        return f"{head} {body}"
    if k == "tuple":
        inner = ", ".join(_fmt(i) for i in v["items"])
        return f"({inner}{',' if len(v['items']) == 1 else ''})"
    if k == "list":
        return "[" + ", ".join(_fmt(i) for i in v["items"]) + "]"
    if k in ("namedtuple", "pytree"):
        return f"{v['t']}(" + ", ".join(_fmt(i) for i in v["items"]) + ")"
    if k == "dict":
        return "{" + ", ".join(f"{key!r}: {_fmt(i)}" for key, i in v["items"]) + "}"
    if k == "spec":
        return f"{v['dtype']}{list(v['shape'])}"
    return f"<{v.get('t')}> {v.get('repr', '')}"


def format_spec(s: dict | None) -> str:
    if s is None:
        return "no result"
    k = s["k"]
    if k == "none":
        return "None"
    if k == "spec":
        return f"{s['dtype']}{list(s['shape'])}"
    if k in ("tuple", "namedtuple"):
        return "(" + ", ".join(format_spec(i) for i in s["items"]) + ")"
    if k == "dict":
        return "{" + ", ".join(f"{key!r}: {format_spec(i)}" for key, i in s["items"]) + "}"
    return f"<{s.get('t')}>"


def diff_specs(a: dict, b: dict) -> bool:
    """True when two result specs differ (tuple and list are the same)."""
    ka = "tuple" if a["k"] in ("tuple", "namedtuple") else a["k"]
    kb = "tuple" if b["k"] in ("tuple", "namedtuple") else b["k"]
    if ka != kb:
        return True
    if ka == "spec":
        return list(a["shape"]) != list(b["shape"]) or a["dtype"] != b["dtype"]
    if ka == "tuple":
        return len(a["items"]) != len(b["items"]) or any(
            diff_specs(x, y) for x, y in zip(a["items"], b["items"])
        )
    if ka == "dict":
        return [k for k, _ in a["items"]] != [k for k, _ in b["items"]] or any(
            diff_specs(x, y) for (_, x), (_, y) in zip(a["items"], b["items"])
        )
    return False


# ---------------------------------------------------------------------------------------
# Text


_NUMBER = r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?\b(?:nan|inf)\b"
_TOKEN = re.compile(rf"(?P<num>{_NUMBER})|(?P<word>[A-Za-z_]\w*)|(?P<sym>\S)")
_ARRAY_WRAP = re.compile(r"\b[Aa]rray\(")
_DTYPE_TAIL = re.compile(r",\s*dtype=\w+(?:,\s*weak_type=True)?\)")
_WEAK = re.compile(r",\s*weak_type=True")


def _tokens(text: str, *, drop: str = "") -> list:
    out = []
    for m in _TOKEN.finditer(text):
        if m.group("num") is not None:
            out.append(float(m.group("num")))
        elif m.group("word") is not None:
            out.append(m.group("word"))
        elif m.group("sym") not in drop:
            out.append(m.group("sym"))
    return out


def normalise_print(text: str) -> list:
    text = _DTYPE_TAIL.sub("", _ARRAY_WRAP.sub("", text))
    return _tokens(text, drop="()[],")


def normalise_text(text: str) -> list:
    text = _WEAK.sub("", _ARRAY_WRAP.sub("array(", text))
    return _tokens(text)


def diff_tokens(a: list, b: list, tol: Tolerance) -> str | None:
    for i, (x, y) in enumerate(zip(a, b)):
        if isinstance(x, float) and isinstance(y, float):
            if (
                (math.isnan(x) and math.isnan(y))
                or math.isclose(x, y, rel_tol=tol.rtol, abs_tol=tol.atol)
                or x == y
            ):
                continue
            return f"number {_num(x)} vs {_num(y)} (token {i + 1})"
        if x != y:
            return f"{_num(x)!r} vs {_num(y)!r} (token {i + 1})"
    if len(a) != len(b):
        extra = a[len(b) :] if len(a) > len(b) else b[len(a) :]
        side = "reference" if len(a) > len(b) else "candidate"
        return f"the {side} printed more: {' '.join(str(_num(t)) for t in extra[:8])}"
    return None


def _num(x):
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return x


def first_line_diff(a: str, b: str, tol: Tolerance) -> tuple[int, str, str] | None:
    la, lb = a.splitlines(), b.splitlines()
    la = [line for line in la if line.strip()]
    lb = [line for line in lb if line.strip()]
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else ""
        y = lb[i] if i < len(lb) else ""
        if diff_tokens(normalise_text(x), normalise_text(y), tol):
            return i + 1, x, y
    return None


# ---------------------------------------------------------------------------------------
# Events


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
        la = [leaf for a in ea for leaf in flat_leaves(a)] + [
            leaf for v in (e.get("kwargs") or {}).values() for leaf in flat_leaves(v)
        ]
        lb = [leaf for a in ga for leaf in flat_leaves(a)] + [
            leaf for v in (g.get("kwargs") or {}).values() for leaf in flat_leaves(v)
        ]
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
                f"({', '.join(_kind_name(a) for a in ea)}), the candidate's {_count(len(ga))} "
                f"({', '.join(_kind_name(a) for a in ga)})"
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


def _group(events: list[dict]) -> dict[str, list[dict]]:
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
    d.message = f"event #{pos} {describe_event(e)}: {reason}"
    d.hint = _per_element_hint(E, G, g, e) if "batch" in (e.get("transforms") or "") else None
    if d.hint and "once per element" in d.hint:
        d.message = (
            f"event #{pos} {describe_event(e)}: fires once per element under vmap instead of once per batch "
            f"({reason})"
        )
    return d


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


# ---------------------------------------------------------------------------------------
# Whole traces


def compare_traces(
    ref: dict, cand: dict, tol: Tolerance | None = None, sites: SiteMap | None = None
) -> Comparison:
    tol = tol or Tolerance()
    out = Comparison()
    ref_groups, cand_groups = _group(ref.get("events", [])), _group(cand.get("events", []))
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
    if ref.get("exit_status") != cand.get("exit_status"):
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
    ref_groups, cand_groups = _group(ref.get("events", [])), _group(cand.get("events", []))
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
                    hint=f"collecting {err['nodeid']} failed in the candidate: {err['message']}"
                    if err
                    else None,
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
            d = compare_event_lists(name, E, G, tol, regs, sites)
            if d is not None:
                diffs.append(d)
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
            if r and c and r["outcome"] != c["outcome"]:
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
