"""Pytest side of the `hcmigrate verify --pytest` recorder.

Loaded BY FILE PATH from `_runner.py --pytest` (also inside the legacy venv, where hcmigrate is
not installed): it needs only the standard library, numpy, jax and pytest, and imports nothing
from hcmigrate. The recording itself (patched host_callback / io_callback / pure_callback /
jax.debug.*) is `_runner.py`'s; this module only tells it which test is running:

* events (host calls) and registrations made while a test runs (its setup, call and teardown)
  carry the test's nodeid as their entry; anything else is `<session>` (collection, imports);
* per test: its outcome (passed / failed / skipped / error / xfailed / xpassed), the failure
  message, what it printed outside callbacks, and its duration;
* after each phase the recorder waits for pending effects (`jax.effects_barrier()`) so
  asynchronous callbacks are attributed to the test that caused them.

The plugin object is handed to `pytest.main(args, plugins=[...])` (no `-p NAME` and no folder
of ours on sys.path, so nothing here can shadow a module of the code under test). In
pytest-xdist workers the same plugin is registered by `_worker/_hcmigrate_verify_worker.py`,
which pytest loads by name there (`PYTEST_PLUGINS`); each worker writes its own stream.

Each finished test is written to the trace stream at once (`_runner._Stream`), with the host
calls made since the previous test; a `test-start` record names the test that was running if
the process dies. `HCMIGRATE_VERIFY_SELECT` (a file of test ids, one a line) keeps only those
tests: the candidate runs only the tests that made host calls in the reference.
"""

from __future__ import annotations

import os
import sys
import time

import pytest

SELECT_ENV = "HCMIGRATE_VERIFY_SELECT"


class RecorderPlugin:
    def __init__(self, runner):
        self.r = runner  # the _runner module: STATE, STREAM, _Tee, _barrier
        self.tests: list[dict] = []
        self.by_id: dict[str, dict] = {}
        self.collect_errors: list[dict] = []
        self.selected: set[str] | None = None
        select = os.environ.get(SELECT_ENV)
        if select:
            with open(select, encoding="utf-8") as fh:
                self.selected = {line.rstrip("\n") for line in fh if line.strip()}

    def _write(self, record: dict) -> None:
        if self.r.STREAM is not None:
            self.r.STREAM.write(record)

    # -- selection and collection ----------------------------------------------------------

    def pytest_collection_modifyitems(self, session, config, items):
        if self.selected is None:
            return
        keep = [item for item in items if item.nodeid in self.selected]
        dropped = [item for item in items if item.nodeid not in self.selected]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep

    def pytest_collection_finish(self, session):
        self._write({"t": "collected", "nodeids": [item.nodeid for item in session.items]})

    # -- bookkeeping ---------------------------------------------------------------------

    def _record(self, nodeid: str) -> dict:
        rec = self.by_id.get(nodeid)
        if rec is None:
            rec = {
                "nodeid": nodeid,
                "outcome": None,
                "phases": {},
                "message": None,
                "stdout": "",
                "duration": 0.0,
            }
            self.by_id[nodeid] = rec
            self.tests.append(rec)
        return rec

    # -- hooks ---------------------------------------------------------------------------

    def pytest_collectreport(self, report):
        if report.failed:
            msg = _message(report)
            self.collect_errors.append({"nodeid": report.nodeid, "message": msg})
            self._write({"t": "collect-error", "nodeid": report.nodeid, "message": msg})
            rec = self._record(report.nodeid or "<collection>")
            rec["outcome"], rec["message"], rec["phases"]["collect"] = "error", msg, "failed"

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)  # old-style wrapper: any pytest >= 3
    def pytest_runtest_protocol(self, item, nextitem):
        state = self.r.STATE
        rec = self._record(item.nodeid)
        parts: list[str] = []
        with state.lock:
            state.entry_stack.append(item.nodeid)
            session_parts, state.stdout_parts = state.stdout_parts, parts
        self._write({"t": "test-start", "nodeid": item.nodeid, "time": time.time()})
        started = time.perf_counter()
        try:
            yield
        finally:
            self.r._barrier()
            with state.lock:
                state.entry_stack.pop()
                state.stdout_parts = session_parts
            rec["stdout"] = "".join(parts)
            rec["duration"] = round(time.perf_counter() - started, 4)
            if self.r.STREAM is not None:
                events, registrations = self.r.STREAM.take()
                self._write(
                    {"t": "test", "test": rec, "events": events, "registrations": registrations}
                )

    def _phase(self):
        # Innermost wrapper: pytest's capture (if any) already replaced sys.stdout; tee it so
        # output of the test and of its callbacks is recorded, and still captured by pytest.
        old = sys.stdout
        tee = self.r._Tee(old)
        sys.stdout = tee
        try:
            yield
        finally:
            self.r._barrier()
            if sys.stdout is tee:
                sys.stdout = old

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_setup(self, item):
        yield from self._phase()

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_call(self, item):
        yield from self._phase()

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_teardown(self, item, nextitem):
        yield from self._phase()

    def pytest_runtest_logreport(self, report):
        rec = self._record(report.nodeid)
        when = report.when
        xfail = hasattr(report, "wasxfail")
        rec["phases"][when] = report.outcome
        if when == "setup":
            if report.failed:
                rec["outcome"], rec["message"] = "error", _message(report)
            elif report.skipped:
                rec["outcome"] = "xfailed" if xfail else "skipped"
                rec["message"] = _message(report)
        elif when == "call":
            if report.passed:
                rec["outcome"] = "xpassed" if xfail else "passed"
            elif report.failed:
                rec["outcome"], rec["message"] = "failed", _message(report)
            else:
                rec["outcome"] = "xfailed" if xfail else "skipped"
                rec["message"] = getattr(report, "wasxfail", None) or _message(report)
        elif when == "teardown" and report.failed:
            if rec["outcome"] in (None, "passed", "skipped", "xfailed"):
                rec["outcome"] = "error"
            rec["message"] = (
                (rec["message"] + "; " if rec["message"] else "")
                + "teardown: "
                + (_message(report) or "")
            )


def _message(report) -> str | None:
    longrepr = getattr(report, "longrepr", None)
    if longrepr is None:
        return None
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # skip: (path, line, reason)
        return str(longrepr[2])[:500]
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and getattr(crash, "message", None):
        return crash.message.strip()[:500]
    text = str(longrepr).strip().splitlines()
    return (text[-1] if text else "")[:500] or None


def run_pytest(runner, root: str, args: list[str]) -> tuple[int, str | None, RecorderPlugin]:
    """Run pytest in root (its rootdir and conftest cut-off) with the recorder plugin."""
    import os

    os.chdir(root)
    plugin = RecorderPlugin(runner)
    full = [
        "--rootdir",
        root,
        "--confcutdir",
        root,
        "-p",
        "no:cacheprovider",
        "--continue-on-collection-errors",
        *args,
    ]
    sys.dont_write_bytecode = True  # never write into the original's folder
    try:
        code = int(pytest.main(full, plugins=[plugin]))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 4
    error = None
    if code not in (0, 1):
        names = {2: "interrupted", 3: "internal error", 4: "usage error", 5: "no tests collected"}
        error = f"pytest exit code {code} ({names.get(code, 'unknown')})"
    return code, error, plugin
