"""Worker processes that migrate files, one file at a time each, under the main process's watch.

A file that crashes the process migrating it (a stack overflow in libcst's native parser on
deeply nested code, the kernel's out-of-memory killer) must cost only that file: the main
process knows which file each worker is on, so when a worker dies its file gets an error naming
the signal, a fresh worker takes its place and the run goes on. (A process pool cannot say which
file killed it: concurrent.futures marks the whole pool broken.)

A worker that makes no progress must not block the run either: each file has a time budget
(`budget`, `--file-timeout`), and a worker still on its file when the budget is spent, or one
found stopped (SIGSTOP: state T in /proc, on Linux) twice a grace apart, is stopped as below and
its file gets `on_overrun` (an error naming the budget, or that the worker was stopped); a fresh
worker goes on with the other files. When the main process itself is continued (SIGCONT, after
Ctrl-Z stopped the whole run), the budgets under way start again.

Stopping: the main process stops its workers with SIGTERM (on Ctrl-C, SIGTERM or SIGHUP, see
hcmigrate.cli), and a worker turns SIGTERM and SIGHUP into an exception, so that what it was
doing unwinds: a temporary file being written is removed (hcmigrate.files.write_atomic), a file
being overwritten in place is finished first (signals are held back meanwhile). Workers ignore
SIGINT (the main process decides what Ctrl-C does) and, on Linux, get SIGTERM when the main
process dies, however it dies: none is ever left running on its own.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections import deque
from typing import Callable, Iterable, Iterator

# How long a stopped worker may take to unwind before it is killed.
STOP_GRACE_S = 5.0
# How long one that ran out of time gets (it may be deep in the parser's native code, where
# Python's signal handlers do not run).
OVERRUN_GRACE_S = 1.0
# How often busy workers are looked at for a stop (SIGSTOP), and how long one must stay stopped.
POLL_S = 0.5
STOPPED_GRACE_S = 1.0
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


class Stop(BaseException):
    """Raised in a worker by SIGTERM / SIGHUP: unwind (finally blocks run) and exit."""


def _raise_stop(signum, frame):
    raise Stop(signum)


def worker_signals(parent_pid: int | None = None) -> None:
    """Signal handling of a worker process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process decides what Ctrl-C does
    signal.signal(signal.SIGTERM, _raise_stop)
    signal.signal(signal.SIGHUP, _raise_stop)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    if sys.platform.startswith("linux"):
        try:  # SIGTERM when the main process dies (prctl PR_SET_PDEATHSIG)
            import ctypes  # (imported by the main process before it forks: see _Worker)

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
        except (OSError, AttributeError):  # pragma: no cover
            pass
    if parent_pid is not None and os.getppid() != parent_pid:
        raise Stop(signal.SIGTERM)  # (it died before the line above)


def _work(fn: Callable, conn, parent_pid: int | None, init: Callable[[], None] | None) -> None:
    """A worker: receive (index, item), send back (index, fn(item)), until told to stop."""
    try:
        worker_signals(parent_pid)
        if init is not None:
            init()
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return  # the main process is gone
            if message is None:
                return
            index, item = message
            conn.send((index, fn(item)))
    except Stop:
        return  # (what was under way has unwound: its temporary file is removed)


class _Worker:
    def __init__(self, context, fn, init):
        receive, send = context.Pipe(duplex=True)
        parent = None
        if context.get_start_method() == "fork":
            parent = os.getpid()
            if sys.platform.startswith("linux"):
                import ctypes  # noqa: F401 (once here, not in each forked worker: ~10 ms each)
        self.process = context.Process(target=_work, args=(fn, send, parent, init), daemon=True)
        # Stop signals are held back while a forked worker starts: it inherits this process's
        # handlers until it installs its own. (Not for a forkserver: the server it may start
        # here would keep the mask.)
        if parent is None:
            self.process.start()
        else:
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
            try:
                self.process.start()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        send.close()
        self.conn = receive
        self.job: tuple[int, object] | None = None  # (index, item) being worked on
        self.started = 0.0  # when it got its job (time.monotonic)
        self.stopped_since: float | None = None  # when it was first seen stopped (SIGSTOP)

    def give(self, index: int, item) -> None:
        self.job = (index, item)
        self.started = time.monotonic()
        self.stopped_since = None
        self.conn.send((index, item))

    def is_stopped(self) -> bool:
        """Whether the process is stopped (SIGSTOP, SIGTSTP: state T), where /proc says so."""
        try:
            with open(f"/proc/{self.process.pid}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state == b"T"

    def end_overrun(self) -> None:
        """Stop a worker that ran out of time or was stopped: SIGTERM (it unwinds, removing the
        temporary file it was writing), SIGCONT (a stopped process handles it only once
        continued), then SIGKILL after a short grace."""
        for signum in (signal.SIGTERM, signal.SIGCONT):
            try:
                os.kill(self.process.pid, signum)
            except ProcessLookupError:
                break
        self.reap(time.monotonic() + OVERRUN_GRACE_S)

    def exit_signal(self) -> str:
        self.process.join(1.0)
        code = self.process.exitcode
        if code is None:
            self.process.kill()
            self.process.join()
            code = self.process.exitcode
        if code is not None and code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:  # pragma: no cover
                return f"killed by signal {-code}"
        return f"exited with status {code}"

    def ask_to_stop(self, now: bool) -> None:
        """Ask the worker to finish (None: after its current item), or to stop now (SIGTERM)."""
        if self.process.exitcode is not None:
            return
        if now:
            try:
                os.kill(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        else:
            try:
                self.conn.send(None)
            except OSError:
                pass
        try:  # (a stopped worker, SIGSTOP, acts on neither until continued)
            os.kill(self.process.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass

    def reap(self, deadline: float) -> None:
        self.process.join(max(0.0, deadline - time.monotonic()))
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join()
        self.conn.close()


def _stop(workers: list[_Worker], now: bool) -> None:
    for worker in workers:
        worker.ask_to_stop(now)
    deadline = time.monotonic() + STOP_GRACE_S
    for worker in workers:
        worker.reap(deadline)


def _wait_time(busy: list[_Worker], budget: float | None) -> float:
    """How long to wait for a result before looking at the busy workers again: until the first
    budget runs out, and at most POLL_S (a stopped worker is seen within it)."""
    if budget is None:
        return POLL_S
    now = time.monotonic()
    return max(0.0, min(POLL_S, *(w.started + budget - now for w in busy)))


# When this process was last continued (SIGCONT: Ctrl-Z then `fg` stopped and continued the
# whole process group). The time a run is suspended is no worker's: each busy worker's budget
# starts again then, and one seen stopped meanwhile is not held stopped.
_resumed_at = 0.0


def _on_continue(signum, frame) -> None:
    global _resumed_at
    _resumed_at = time.monotonic()


def _watch_resumes():
    """Install the SIGCONT handler for a run; returns the handler to put back (None: not
    installed, outside the main thread)."""
    try:
        return signal.signal(signal.SIGCONT, _on_continue)
    except ValueError:  # (not the main thread: a suspended run may then fail a file)
        return None


def _overrun(worker: _Worker, budget: float | None) -> bool | None:
    """None while `worker` may go on with its job; else whether it was stopped (True) or ran
    out of its time budget (False)."""
    now = time.monotonic()
    if worker.started < _resumed_at:  # (the run was suspended and resumed since it started)
        worker.started = _resumed_at
        worker.stopped_since = None
    if worker.is_stopped():
        if worker.stopped_since is None:
            worker.stopped_since = now
        if now - worker.stopped_since >= STOPPED_GRACE_S:
            return True
    else:
        worker.stopped_since = None
    if budget is not None and now - worker.started >= budget:
        return worker.stopped_since is not None
    return None


def run_in_workers(
    fn: Callable,
    items: Iterable,
    jobs: int,
    context,
    on_death: Callable[[object, str], object],
    init: Callable[[], None] | None = None,
    budget: float | None = None,
    on_overrun: Callable[[object, bool], object] | None = None,
) -> Iterator:
    """`fn(item)` for each item, in `jobs` worker processes, yielded in the items' order. An item
    whose worker dies gives `on_death(item, how)` instead (`how`: "killed by SIGSEGV"), and a new
    worker goes on with the others. With `on_overrun`, an item whose worker is still on it after
    `budget` seconds (None: no limit), or whose worker is found stopped, gives
    `on_overrun(item, stopped)` and its worker is replaced. Stopping the iteration (an exception
    in the consumer, a KeyboardInterrupt here) stops every worker at once."""
    from multiprocessing.connection import wait

    previous_handler = _watch_resumes() if on_overrun is not None else None
    pending = deque(enumerate(items))
    total = len(pending)
    workers: list[_Worker] = []
    done: dict[int, object] = {}
    next_out = 0
    try:
        for _ in range(min(jobs, total)):
            workers.append(_Worker(context, fn, init))
        while next_out < total:
            for k, worker in enumerate(workers):
                if worker.job is not None or not pending:
                    continue
                if worker.process.exitcode is not None:  # (died between two items)
                    worker.reap(0.0)
                    worker = workers[k] = _Worker(context, fn, init)
                index, item = pending.popleft()
                try:
                    worker.give(index, item)
                except OSError:  # (it died as it started)
                    done[index] = on_death(item, worker.exit_signal())
                    worker.reap(0.0)
                    workers[k] = _Worker(context, fn, init)
            while next_out in done:
                yield done.pop(next_out)
                next_out += 1
            busy = [w for w in workers if w.job is not None]
            if next_out >= total or not busy:
                continue
            timeout = _wait_time(busy, budget) if on_overrun is not None else None
            ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout))
            for worker in busy:
                if worker.conn not in ready and worker.process.sentinel not in ready:
                    stopped = _overrun(worker, budget) if on_overrun is not None else None
                    if stopped is not None:
                        index, item = worker.job
                        worker.end_overrun()
                        done[index] = on_overrun(item, stopped)
                        if pending:
                            workers[workers.index(worker)] = _Worker(context, fn, init)
                        else:
                            workers.remove(worker)
                    continue
                index, item = worker.job
                try:
                    if not worker.conn.poll():
                        raise EOFError
                    got, result = worker.conn.recv()
                except Exception:  # (EOF, a message cut short): it died on this item
                    done[index] = on_death(item, worker.exit_signal())
                    worker.reap(0.0)
                    if pending:
                        workers[workers.index(worker)] = _Worker(context, fn, init)
                    else:
                        workers.remove(worker)
                    continue
                done[got] = result
                worker.job = None
        _stop(workers, now=False)
        workers = []
    finally:
        _stop(workers, now=True)  # interrupted, or the consumer stopped early
        if previous_handler is not None:
            signal.signal(signal.SIGCONT, previous_handler)
