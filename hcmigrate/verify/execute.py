"""Run the reference and the candidate, each in its own subprocess, and collect their traces."""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from hcmigrate.verify.launch import (
    Running,
    Side,
    done_path,
    kill_group,
    start_side,
    subprocess_env,
)
from hcmigrate.verify.leftovers import kill_leftovers
from hcmigrate.verify.stream import read_trace
from hcmigrate.verify.supervise import note_unfinished, wait_for_sides


@dataclass
class RunResult:
    side: Side
    trace: dict | None
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    def why_no_trace(self) -> str:
        if self.timed_out:
            return f"the {self.side.label} run timed out after {self.seconds:.0f} s (process group killed)"
        tail = "\n".join(self.stderr.strip().splitlines()[-15:])
        return f"the {self.side.label} run exited with status {self.returncode} without writing a trace:\n{tail}"


def run_sides(
    sides: list[Side],
    *,
    script_args: list[str],
    entries: list[str],
    timeout: float,
    workdir: Path,
    cwd: str | None = None,
    platform: str | None = "cpu",
    progress: Callable[[dict], None] | None = None,
) -> list[RunResult]:
    """Run the sides concurrently (each in its own process group) and read their traces.

    Script mode: `timeout` limits each whole run. `--pytest`: it limits each test (a test still
    running after it is killed, with its process, and reported as timed out) and any stretch
    without progress (collection, start-up); when a side's process dies in a test, it starts
    again on the tests not run yet, so every other test still gets its verdict. A side that
    `follows` another (listed before it) reads that side's stream as it runs: see Side.follows."""
    base_env = subprocess_env(platform)
    running: list[Running] = []
    try:
        for i, side in enumerate(sides):
            leader = next((r for r in running if r.side.label == side.follows), None)
            follow = None
            if leader is not None:
                follow = {
                    "trace": str(leader.trace_path),
                    "done": str(done_path(leader.trace_path)),
                }
            started = start_side(
                side, i, workdir, base_env, script_args, entries, cwd, follow=follow
            )
            started.leader = leader
            running.append(started)
        wait_for_sides(running, timeout, workdir, base_env, script_args, entries, cwd, progress)
        return [_result(r) for r in running]
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP (hcmigrate.cli): keep what ended
        for r in running:
            kill_group(r.proc)
        signum = getattr(exc, "signum", signal.SIGINT)
        raise SidesInterrupted(signum, [_partial_result(r) for r in running]) from None
    finally:  # ended, Ctrl-C or any error: nothing a side started is left running
        for r in running:
            kill_group(r.proc)
        kill_leftovers({tag for r in running for tag in r.tags})  # (one walk for all sides)


class SidesInterrupted(KeyboardInterrupt):
    """The run was stopped by a signal while the sides ran (their processes are killed):
    `results` holds what each side had finished (a --pytest side: its finished tests, the tests
    it was running in `trace["unfinished"]`; a script: nothing unless it had ended)."""

    def __init__(self, signum: int, results: list[RunResult]):
        super().__init__(signum)
        self.signum = signum
        self.results = results


def interruption(stop: SidesInterrupted, unfinished: list[str] | None = None) -> dict:
    """What `Outcome.interrupted` records of a stop: the signal, the exit status it means
    (128 + its number) and what did not finish."""
    return {
        "signal": signal.Signals(stop.signum).name,
        "exit_code": 128 + stop.signum,
        "unfinished": unfinished or [],
    }


def _partial_result(r: Running) -> RunResult:
    trace = read_trace(r.trace_path)
    if trace is not None and not trace.get("complete") and not r.side.pytest:
        trace = None
    return RunResult(
        r.side, trace, r.proc.returncode, _read(r.out), _read(r.err), time.monotonic() - r.started
    )


def _result(r: Running) -> RunResult:
    trace = read_trace(r.trace_path)
    seconds = time.monotonic() - r.started
    if trace is not None and not r.side.pytest and not trace.get("complete"):
        trace = None  # a script that did not finish has no verdict
    if trace is not None and r.side.pytest:
        note_unfinished(trace, r)
        if not trace.get("complete") and not trace.get("tests") and not r.timed_out:
            trace = None
    return RunResult(
        r.side,
        trace,
        r.proc.returncode,
        _read(r.out),
        _read(r.err),
        seconds,
        r.timed_out and (trace is None or not trace.get("tests")),
    )


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
