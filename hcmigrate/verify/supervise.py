"""Watching the running sides until they end: the time limit of a script run; for --pytest
the per-test time limit, a side whose process dies in a test started again on the tests left,
and the tests a killed or crashed process was running recorded as results of their own."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from hcmigrate.verify.launch import Running, done_path, kill_side, start_side
from hcmigrate.verify.stream import read_trace


MAX_RESTARTS = 5  # a --pytest side that dies in a test goes on with the tests left, this often


def wait_for_sides(
    running, timeout, workdir, base_env, script_args, entries, cwd, progress
) -> None:
    while True:
        alive = 0
        now = time.monotonic()
        for r in running:
            if r.side.pytest:
                before = _counts(r.watch)
                r.watch.poll()
                if _counts(r.watch) != before:
                    r.last_activity = now
            if r.proc.poll() is None:
                alive += 1
                if r.leader is not None and r.leader.proc.poll() is None:
                    r.last_activity = now  # waiting for the side it follows is no hang
                if r.side.pytest:
                    _enforce_test_timeout(r, timeout, now)
                elif now - r.started > timeout:
                    r.timed_out = True
                    kill_side(r)
                continue
            if r.side.pytest and _restart_needed(r):
                remaining = [
                    t for t in _collected_order(r) if t not in r.watch.finished and t not in r.died
                ]
                if remaining and r.restarts < MAX_RESTARTS:
                    r.restarts += 1
                    fresh = start_side(
                        r.side,
                        r.index,
                        workdir,
                        base_env,
                        script_args,
                        entries,
                        cwd,
                        select=remaining,
                        attempt=r.restarts,
                        follow=r.follow,
                    )
                    r.tags += fresh.tags
                    r.proc, r.out, r.err, r.last_activity = (
                        fresh.proc,
                        fresh.out,
                        fresh.err,
                        time.monotonic(),
                    )
                    alive += 1
                    continue
            done = done_path(r.trace_path)
            if not done.exists():
                done.touch()  # ended for good: a side following this one reads all it wrote
        if progress is not None:
            for r in running:
                if r.side.pytest:
                    progress(
                        {
                            "side": r.side.label,
                            "finished": len(r.watch.finished),
                            "total": len(r.watch.collected - r.watch.not_run),
                            "running": sorted(r.watch.running),
                            "seconds": now - r.started,
                        }
                    )
        if not alive:
            return
        time.sleep(0.1)


def _counts(watch) -> tuple:
    return len(watch.finished), len(watch.running), len(watch.collected), len(watch.not_run)


def _collected_order(r: Running) -> list[str]:
    trace = read_trace(r.trace_path) or {}
    return trace.get("collected", [])


def _restart_needed(r: Running) -> bool:
    """The side's main process died (killed, crashed) while tests were running."""
    trace = read_trace(r.trace_path)
    if trace is None:
        return False
    unfinished = [u["nodeid"] for u in trace.get("unfinished", [])]
    new = [t for t in unfinished if t not in r.died]
    if not new or _ended_last_attempt(r.trace_path):
        return False
    for nodeid in new:
        r.died[nodeid] = r.proc.returncode
    return True


def _ended_last_attempt(base: Path) -> bool:
    """Did the main process's last run end normally (an `end` after its last `start`)?"""
    last = None
    try:
        lines = base.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return False
    for line in lines:
        try:
            kind = json.loads(line).get("t")
        except ValueError:
            continue
        if kind in ("start", "end"):
            last = kind
    return last == "end"


def _enforce_test_timeout(r: Running, timeout: float, now: float) -> None:
    wall = time.time()
    for nodeid, (pid, since) in list(r.watch.running.items()):
        if since is not None and wall - since > timeout and nodeid not in r.timed_out_tests:
            r.timed_out_tests[nodeid] = round(wall - since)
            if pid is not None and pid != r.proc.pid:
                try:  # a pytest-xdist worker: xdist replaces it and goes on
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            else:
                kill_side(r)
    if not r.watch.running and now - r.last_activity > timeout:
        r.timed_out = True  # no test running and nothing happening: start-up or collection hangs
        kill_side(r)


def note_unfinished(trace: dict, r: Running) -> None:
    """Tests a killed or crashed process was running become results of their own."""
    for u in trace.pop("unfinished", []):
        nodeid = u["nodeid"]
        if nodeid in r.timed_out_tests:
            outcome = "timeout"
            message = f"timed out after {r.timed_out_tests[nodeid]} s (its process was killed)"
        else:
            outcome = "crashed"
            status = r.died.get(nodeid, r.proc.returncode)
            message = f"the {r.side.label} process running it died" + (
                f" (exit status {status})" if status is not None else ""
            )
        trace.setdefault("tests", []).append(
            {"nodeid": nodeid, "outcome": outcome, "message": message, "phases": {}, "stdout": ""}
        )
    trace["restarts"] = r.restarts
