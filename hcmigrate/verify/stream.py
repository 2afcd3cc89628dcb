"""Read a side's trace back from the stream files its processes wrote as they ran.

The recorder (`_runner.py`, and in pytest-xdist workers `_worker/`) appends one JSON object per
line to `BASE` (the main process) and `BASE.<worker>.<pid>` (each xdist worker): `start`,
`jax` (when the program imported it), `collected` (pytest's test ids), `test-start`, `test`
(a finished test with the host calls and registrations made since the previous record),
`not-run` (a test a candidate following the reference left out: it made no host call there),
`teardown-error` (a fixture of the last test that ran, failing as the follower tore it down),
`collect-error` and, when the process ends normally, `end`. A crash or a kill leaves every
finished test in place and the test that was running as a `test-start` with no `test`.

`read_trace` assembles them into one trace (the format docs/verify.md describes): registrations
are renumbered per process so events from several workers never share an id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


def stream_files(base: Path) -> list[Path]:
    """The main process's stream first, then the workers' (in name order)."""
    workers = sorted(p for p in base.parent.glob(base.name + ".*") if not p.name.endswith(".tmp"))
    return ([base] if base.exists() else []) + workers


def _records(path: Path) -> list[dict]:
    out = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:  # a line cut short by a crash
            continue
    return out


def read_trace(base: Path) -> dict | None:
    """The assembled trace, or None when the main process wrote nothing at all."""
    files = stream_files(base)
    if not files or files[0] != base:
        return None
    trace: dict = {
        "version": 2,
        "exit_status": None,
        "error": None,
        "stdout": "",
        "jax": None,
        "host_callback": [],
        "entries": [],
        "events": [],
        "registrations": [],
        "complete": False,
    }
    tests: list[dict] = []
    collected: list[str] = []
    collect_errors: list[dict] = []
    not_run: list[str] = []
    started: dict[str, dict] = {}
    finished: set[str] = set()
    pytest_mode = False

    def add(events: list, registrations: list, offset: int) -> None:
        for reg in registrations:
            reg = dict(reg, id=reg["id"] + offset)
            trace["registrations"].append(reg)
        for ev in events:
            ev = dict(ev, i=len(trace["events"]))
            if "reg" in ev:
                ev["reg"] += offset
            trace["events"].append(ev)

    for n, path in enumerate(files):
        main = n == 0
        offset = len(trace["registrations"])
        for rec in _records(path):
            kind = rec.get("t")
            if kind == "start" and main:
                for key in ("side", "script", "argv", "python"):
                    trace[key] = rec.get(key)
            elif kind == "start":
                trace.setdefault("workers", []).append(rec.get("worker") or path.name)
            elif kind == "jax":
                trace["jax"] = trace["jax"] or rec.get("version")
            elif kind == "collected":
                pytest_mode = True
                collected += [t for t in rec.get("nodeids", []) if t not in collected]
            elif kind == "test-start":
                pytest_mode = True
                started[rec["nodeid"]] = {"worker": None if main else path.name, **rec}
            elif kind == "not-run":
                not_run.append(rec["nodeid"])
            elif kind == "teardown-error":
                _teardown_error(tests, rec)
            elif kind == "test":
                pytest_mode = True
                tests.append(rec["test"])
                finished.add(rec["test"]["nodeid"])
                add(rec.get("events", []), rec.get("registrations", []), offset)
            elif kind == "collect-error":
                if all(e["nodeid"] != rec["nodeid"] for e in collect_errors):
                    collect_errors.append({k: v for k, v in rec.items() if k != "t"})
            elif kind == "end":
                add(rec.get("events", []), rec.get("registrations", []), offset)
                for name in rec.get("host_callback", []):
                    if name not in trace["host_callback"]:
                        trace["host_callback"].append(name)
                trace["jax"] = trace["jax"] or rec.get("jax")
                if main:
                    trace["complete"] = True
                    for key in (
                        "exit_status",
                        "error",
                        "error_at",
                        "stdout",
                        "entries",
                        "seconds",
                        "pytest",
                    ):
                        if key in rec:
                            trace[key] = rec[key]
                for err in rec.get("collect_errors", []):
                    if all(e["nodeid"] != err["nodeid"] for e in collect_errors):
                        collect_errors.append(err)
    if pytest_mode or "pytest" in trace:
        trace["mode"] = "pytest"
        trace["tests"] = tests
        # (the tests left out count as not collected, as tests deselected before they ran do)
        left_out = set(not_run)
        trace["collected"] = [t for t in collected if t not in left_out]
        if not_run:
            trace["not_run"] = not_run
        trace["collect_errors"] = collect_errors
        trace["unfinished"] = [started[t] for t in started if t not in finished]
    return trace


def _teardown_error(tests: list[dict], rec: dict) -> None:
    """A fixture of a test that ran failed while a follower tore it down after leaving out the
    next test: the test's own teardown failed (as _pytest_plugin.py records it)."""
    test = next((t for t in reversed(tests) if t["nodeid"] == rec["nodeid"]), None)
    if test is None:
        return
    if test["outcome"] in (None, "passed", "skipped", "xfailed"):
        test["outcome"] = "error"
    test["phases"]["teardown"] = "failed"
    message = test.get("message")
    test["message"] = (message + "; " if message else "") + "teardown: " + rec["message"]


@dataclass
class Watch:
    """Follows a side's stream files while it runs: tests finished, tests running (with
    since when, and in which process), so the caller can show progress and enforce a per-test
    timeout."""

    base: Path
    offsets: dict = field(default_factory=dict)
    collected: set = field(default_factory=set)
    finished: set = field(default_factory=set)
    not_run: set = field(default_factory=set)  # left out by a side following another
    running: dict = field(default_factory=dict)  # nodeid -> (pid, start time)
    pids: dict = field(default_factory=dict)  # stream file name -> pid

    def poll(self) -> None:
        for path in stream_files(self.base):
            try:
                with open(path, "rb") as fh:
                    fh.seek(self.offsets.get(path.name, 0))
                    chunk = fh.read()
            except OSError:
                continue
            end = chunk.rfind(b"\n")
            if end < 0:
                continue
            self.offsets[path.name] = self.offsets.get(path.name, 0) + end + 1
            chunk = chunk[: end + 1].decode("utf-8", errors="replace")
            for line in chunk.splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                kind = rec.get("t")
                if kind == "start":
                    self.pids[path.name] = rec.get("pid")
                elif kind == "collected":
                    self.collected.update(rec.get("nodeids", []))
                elif kind == "test-start":
                    self.running[rec["nodeid"]] = (self.pids.get(path.name), rec.get("time"))
                elif kind == "test":
                    nodeid = rec["test"]["nodeid"]
                    self.finished.add(nodeid)
                    self.running.pop(nodeid, None)
                elif kind == "not-run":
                    self.not_run.add(rec["nodeid"])
