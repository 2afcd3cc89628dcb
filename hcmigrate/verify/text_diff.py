"""Printed text compared within tolerance: text is split into numbers, words and symbols;
`normalise_print` drops the documented differences between legacy `id_print` and
`jax.debug.print` output (brackets, commas, `Array(..., dtype=...)` wrappers),
`normalise_text` those between numpy and jax.Array reprs (both: how a device is named,
devices.py); `diff_tokens` and `first_line_diff`
say where two texts first differ, numbers compared with the tolerance."""

from __future__ import annotations

import math
import re

from hcmigrate.verify.devices import device_text
from hcmigrate.verify.values import Tolerance


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
    text = device_text(text)
    text = _DTYPE_TAIL.sub("", _ARRAY_WRAP.sub("", text))
    return _tokens(text, drop="()[],")


def normalise_text(text: str) -> list:
    text = device_text(text)
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
