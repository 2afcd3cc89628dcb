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
`HCMIGRATE_VERIFY_FOLLOW` (the reference's stream, recorded at the same time) makes the same
choice as the reference goes: each test waits until the reference has run it (`Follower`).
"""

from __future__ import annotations

import inspect
import json
import os
import re
import sys
import time
from pathlib import Path

import pytest

# From jax 0.4.26 every use of host_callback's functions (a module attribute access) warns with a
# DeprecationWarning whose message starts with this (0.4.25 does not warn): a suite under
# `filterwarnings = error` then fails on the legacy reference for the reference's own sake, so
# the reference ignores exactly this warning (tests/test_verify_gate.py runs such a suite on
# the legacy environment: test_ci_switch_of_verify_never_reaches_the_tests). (Here, not in
# hcmigrate.facts: this module imports no hcmigrate.)
HOST_CALLBACK_DEPRECATION = "The host_callback APIs are deprecated"

SELECT_ENV = "HCMIGRATE_VERIFY_SELECT"
FOLLOW_ENV = "HCMIGRATE_VERIFY_FOLLOW"
SESSION = "<session>"


class Follower:
    """The candidate run at the same time as the reference. It runs the tests that made or
    registered host calls in the reference (every test when host calls were made outside tests,
    or none at all: the choice a finished reference trace gives, which
    hcmigrate/verify/pytest_mode.py checks afterwards), each once the reference has run it.

    A test left out is not run and reported by nobody, as if deselected: it is written as
    `not-run`, and what pytest would have torn down before the next test (the fixtures of a
    module the next test is not in) is torn down now. A fixture failing there is what the
    last test that ran would have reported in its teardown: it is written as that test's
    `teardown-error`."""

    def __init__(self, spec: dict, write):
        self.base = spec["trace"]  # the reference's stream (its xdist workers': BASE.*)
        self.done = spec["done"]  # exists once the reference has ended for good
        self.write = write
        self.offsets: dict[str, int] = {}
        self.finished: set[str] = set()
        self.entries: set = set()  # tests (or <session>) that made or registered host calls
        self.choices: dict[str, bool] = {}
        self.last_run: str | None = None

    def _read(self) -> None:
        folder, name = os.path.split(self.base)
        try:
            names = [
                n
                for n in os.listdir(folder)
                if n == name or (n.startswith(name + ".") and not n.endswith(".tmp"))
            ]
        except OSError:
            return
        for n in names:
            try:
                with open(os.path.join(folder, n), "rb") as fh:
                    fh.seek(self.offsets.get(n, 0))
                    chunk = fh.read()
            except OSError:
                continue
            end = chunk.rfind(b"\n")
            if end < 0:
                continue
            self.offsets[n] = self.offsets.get(n, 0) + end + 1
            for line in chunk[: end + 1].decode("utf-8", errors="replace").splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("t") == "test":
                    self.finished.add(rec["test"]["nodeid"])
                if rec.get("t") in ("test", "end"):
                    for ev in rec.get("events", []) + rec.get("registrations", []):
                        self.entries.add(ev.get("entry"))

    def runs(self, nodeid: str) -> bool:
        """Does the test run here? Waits until the reference tells."""
        if nodeid not in self.choices:
            while True:
                ended = os.path.exists(self.done)  # (before reading: then all of it is read)
                self._read()
                if SESSION in self.entries:
                    choice = True
                elif ended:
                    choice = not self.entries or nodeid in self.entries
                elif nodeid in self.finished and self.entries:
                    choice = nodeid in self.entries
                else:
                    time.sleep(0.05)
                    continue
                break
            self.choices[nodeid] = choice
            if choice:
                self.last_run = nodeid
        return self.choices[nodeid]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if self.runs(item.nodeid):
            return None
        self.write({"t": "not-run", "nodeid": item.nodeid})
        teardown = item.session._setupstate.teardown_exact
        before_7 = len(inspect.signature(teardown).parameters) == 2  # (item, nextitem)
        try:
            teardown(*((item, nextitem) if before_7 else (nextitem,)))
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # noqa: BLE001  (a fixture's finalizer failed)
            if type(e).__name__ == "Exit":
                raise
            if self.last_run is not None:
                message = f"{type(e).__name__}: {e}".strip()
                self.write(
                    {"t": "teardown-error", "nodeid": self.last_run, "message": message[:500]}
                )
        return True  # not run, nothing reported


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
        follow = os.environ.get(FOLLOW_ENV)
        self.follower = Follower(json.loads(follow), self._write) if follow else None

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
        if self.collect_errors and getattr(self.r.STATE, "side", "") == "reference":
            # (a reference that cannot import a test module ends the comparison as "could not
            # run" whatever its other tests do: said now, not after the whole suite ran; no
            # test is run)
            session.items[:] = []

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
            error = {"nodeid": report.nodeid, "message": msg}
            package = _installed_package_raising(report)
            if package:
                error["package"] = package
            self.collect_errors.append(error)
            self._write({"t": "collect-error", **error})
            rec = self._record(report.nodeid or "<collection>")
            rec["outcome"], rec["message"], rec["phases"]["collect"] = "error", msg, "failed"

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)  # old-style wrapper: any pytest >= 3
    def pytest_runtest_protocol(self, item, nextitem):
        if self.follower is not None and not self.follower.runs(item.nodeid):
            yield  # (left out by the follower's own hook)
            return
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

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        """Where a failing test first raised, in the program's own code (`where`)."""
        report = (yield).get_result()
        if report.failed and call.excinfo is not None:
            rec = self._record(item.nodeid)
            if not rec.get("where"):
                rec["where"] = self.r.raised_at(call.excinfo.tb)

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


def _installed_package_raising(report) -> str | None:
    """The top-level package, installed outside the tested folder (cwd), whose code raised a
    collection error (the traceback's last frame): a dependency's own import failing, e.g. a
    warning it gives that the project's `filterwarnings = error` makes an error. None when
    the project's own code raised it."""
    frames = re.findall(r"^(\S+\.py):\d+: in ", str(getattr(report, "longrepr", "")), re.M)
    if not frames:
        return None
    root = Path.cwd().resolve()
    path = (root / frames[-1]).resolve()
    if path.is_relative_to(root):
        return None
    for entry in sorted((e for e in sys.path if e), key=len, reverse=True):
        base = Path(entry).resolve()
        if path.is_relative_to(base) and path != base:
            return path.relative_to(base).parts[0].removesuffix(".py")
    return None


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
        # legacy JAX's own deprecation warning for host_callback (0.4.26 on), which a suite under
        # `filterwarnings = error` would turn into failures of the reference alone; a -W option
        # comes after the configuration's filters, so it wins, and only this warning is affected
        "-W",
        f"ignore:{HOST_CALLBACK_DEPRECATION}:DeprecationWarning",
        *args,
    ]
    if not getattr(sys, "pycache_prefix", None):
        sys.dont_write_bytecode = True  # never write into the original's folder
    plugins = [plugin] if plugin.follower is None else [plugin, plugin.follower]
    try:
        code = int(pytest.main(full, plugins=plugins))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 4
    error = None
    if code not in (0, 1):
        names = {2: "interrupted", 3: "internal error", 4: "usage error", 5: "no tests collected"}
        error = f"pytest exit code {code} ({names.get(code, 'unknown')})"
    return code, error, plugin
