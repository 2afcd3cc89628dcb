"""Spreading a scan over forked worker processes (hcmigrate.prefilter), for large trees."""

from __future__ import annotations

import signal
import sys
from typing import Callable, Iterator

# Below this many files, worker processes cost more than they save.
PARALLEL_MIN_FILES = 2000
# Files per unit of work: small enough that interleaved units balance the workers (files differ
# a lot in size), large enough that the messages (the few non-trivial results) cost nothing.
_SLICE = 128
_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


def can_fork(jobs: int, n_files: int) -> bool:
    """Whether to spread a scan of `n_files` over `jobs` forked processes.

    Only with fork: a worker starts at once and inherits what it works on (the path list, the
    phase-2 probe), so nothing is pickled on the way in. Not when this process has imported JAX
    (tests, notebooks): forking a multithreaded JAX process can deadlock, and a forkserver or
    spawn start would cost more than it saves.
    """
    if jobs <= 1 or n_files < PARALLEL_MIN_FILES or "jax" in sys.modules:
        return False
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def in_workers(work: Callable[[int, int], list], n: int, jobs: int) -> Iterator:
    """Run `work(start, stop)` over slices of range(n) in `jobs` forked processes (slice k in
    worker k % jobs) and yield the items of the slices' results in order.

    Plain processes and pipes, no multiprocessing.Pool: a pool feeds its workers from a thread
    of this process, which stalls behind the GIL while this process imports the codemod
    (see hcmigrate.prefilter.scan's on_first_candidate); here each worker knows its slices from the start.
    """
    import multiprocessing

    context = multiprocessing.get_context("fork")
    slices = [(start, min(start + _SLICE, n)) for start in range(0, n, _SLICE)]
    sys.stdout.flush()  # a forked child flushes its copy of the buffers when it exits
    sys.stderr.flush()
    workers, pipes = [], []
    try:
        for k in range(jobs):
            receive, send = context.Pipe(duplex=False)
            worker = context.Process(
                target=_work_slices, args=(work, slices[k::jobs], send), daemon=True
            )
            # (stop signals held back until the worker has reset this process's handlers)
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
            try:
                worker.start()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
            send.close()
            workers.append(worker)
            pipes.append(receive)
        for k in range(len(slices)):
            ok, result = pipes[k % jobs].recv()
            if not ok:
                raise result
            yield from result
    finally:
        for worker in workers:
            worker.kill()  # all done (or given up on): nothing left to wait for
            worker.join()
        for pipe in pipes:
            pipe.close()


def _work_slices(work: Callable[[int, int], list], slices: list[tuple[int, int]], send) -> None:
    """A worker: send (True, result) per slice, in order, or (False, error) and stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process decides what Ctrl-C does
    # SIGTERM / SIGHUP end a scan worker at once (it writes nothing); the handlers inherited
    # from the main process (hcmigrate.cli) would raise in it instead.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    try:
        for start, stop in slices:
            send.send((True, work(start, stop)))
    except Exception as exc:  # a bug: raised again in the main process
        send.send((False, exc))
    send.close()
