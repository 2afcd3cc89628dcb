"""Operations on recorded traces: loading one, writing JSON-able copies (`clean`), reading the
candidate's paths as the original's, and keeping, merging or selecting the tests of a
--pytest trace."""

from __future__ import annotations

import json
from pathlib import Path


def normalise_paths(trace: dict | None, replace: list[tuple[str, str]]) -> None:
    """The candidate runs from another folder than the original: its paths, in what it printed
    and in its string values, read as the original's (the one documented normalisation)."""
    if not trace or not replace:
        return
    pairs = sorted({(a, b) for a, b in replace if a and a != b}, key=lambda ab: -len(ab[0]))

    def fix(text):
        for a, b in pairs:
            text = text.replace(a, b)
        return text

    def walk_value(v):
        if isinstance(v, dict):
            if v.get("k") == "str":
                v["v"] = fix(v["v"])
            for item in v.get("items", []) if v.get("k") != "dict" else []:
                walk_value(item)
            if v.get("k") == "dict":
                for _, item in v["items"]:
                    walk_value(item)

    for key in ("stdout", "error"):
        if isinstance(trace.get(key), str):
            trace[key] = fix(trace[key])
    for ev in trace.get("events", []):
        ev["stdout"] = fix(ev.get("stdout") or "")
        for a in ev.get("args", []):
            walk_value(a)
        if "result" in ev:
            walk_value(ev["result"])
    for entry in trace.get("entries", []):
        if "result" in entry:
            walk_value(entry["result"])
    for t in trace.get("tests", []):
        t["stdout"] = fix(t.get("stdout") or "")
        if t.get("message"):
            t["message"] = fix(t["message"])


def load_trace(path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def only_tests(trace: dict, keep: set[str]) -> dict:
    out = dict(trace)
    out["tests"] = [t for t in trace.get("tests", []) if t["nodeid"] in keep]
    out["events"] = [e for e in trace.get("events", []) if e.get("entry") in keep]
    return out


def merge_tests(first: dict, second: dict, nodeids: set[str]) -> dict:
    """`first` with the results of `nodeids` taken from `second` (registration ids shifted)."""
    out = dict(first)
    shift = len(first.get("registrations", []))
    out["registrations"] = list(first.get("registrations", [])) + [
        dict(r, id=r["id"] + shift) for r in second.get("registrations", [])
    ]
    second_tests = {t["nodeid"]: t for t in second.get("tests", [])}
    out["tests"] = [
        second_tests.get(t["nodeid"], t) if t["nodeid"] in nodeids else t
        for t in first.get("tests", [])
    ]
    out["events"] = [e for e in first.get("events", []) if e.get("entry") not in nodeids] + [
        dict(e, reg=e["reg"] + shift) if "reg" in e else e
        for e in second.get("events", [])
        if e.get("entry") in nodeids
    ]
    return out


def write_traces(folder: Path, reference: dict, candidate: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, trace in (("reference", reference), ("candidate", candidate)):
        (folder / f"{name}.json").write_text(json.dumps(clean(trace), indent=1), encoding="utf-8")


def clean(obj):
    """A JSON-able copy of a trace (drops cached numpy arrays)."""
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items() if k != "_np"}
    if isinstance(obj, list):
        return [clean(v) for v in obj]
    return obj
