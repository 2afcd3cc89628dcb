"""Values recorded in a trace, compared and shown: `Tolerance` (rtol/atol), `diff_values`
(arrays by shape, dtype and values within tolerance, integers and booleans exactly, NaN equal
to NaN, containers item by item), result specs (`diff_specs`, `format_spec`) and the short
text a report shows for a value (`format_value`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hcmigrate.verify.devices import device_text


DEFAULT_RTOL = 1e-4
DEFAULT_ATOL = 1e-6


@dataclass
class Tolerance:
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL


def _as_array(v: dict) -> np.ndarray | None:
    cached = v.get("_np")
    if cached is not None:
        return cached
    if v["k"] == "array" and "data" in v:
        dtype = (
            np.dtype(v["dtype"])
            if v["dtype"] in np.sctypeDict or _is_np_dtype(v["dtype"])
            else np.dtype(np.float64)  # a dtype numpy does not know (bfloat16): as floats
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
        return f"{kind_name(a)} vs {kind_name(b)}{where}"
    if ka == "none":
        return None
    if ka == "device":  # (the same device is named otherwise on each JAX version)
        same = device_text(a["v"]) == device_text(b["v"])
        return None if same else f"device {a['v']!r} vs {b['v']!r}{where}"
    if ka == "str":
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


def kind_name(v: dict) -> str:
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
