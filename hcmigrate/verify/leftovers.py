"""Processes a side leaves behind. Each side runs in its own process group, killed as a whole on
timeout, on Ctrl-C / SIGTERM and when it ends; a process that left that group (`setsid`,
`start_new_session=True`, a daemon's double fork) would outlive verify and its time limit. So a
side's whole tree of processes is killed with it, and while sides run verify is the Linux
"child subreaper" of everything it starts: a process orphaned below it is re-parented to verify
instead of to init, and `adopting_orphans` kills it when the sides are done."""

from __future__ import annotations

import ctypes
import sys
from contextlib import contextmanager
from typing import Iterator

import psutil

_PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
_PR_GET_CHILD_SUBREAPER = 37


def _prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _set_subreaper(on: bool) -> bool | None:
    """Set this process's subreaper flag; returns the flag it had (None: not supported)."""
    prctl = _prctl()
    if prctl is None:
        return None
    was = ctypes.c_int(0)
    if prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(was), 0, 0, 0) != 0:
        return None
    prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)
    return bool(was.value)


def descendants(pid: int) -> list[psutil.Process]:
    """Every process below `pid` now (found before it dies, while they are still its own)."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def kill_all(processes: list[psutil.Process]) -> None:
    """SIGKILL each process (psutil checks it is still the same process, not a reused pid) and
    reap the ones that are this process's children."""
    for p in processes:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(processes, timeout=5)


@contextmanager
def adopting_orphans() -> Iterator[None]:
    """While the block runs, orphans of processes it starts become this process's children;
    when it ends, every child started in it that is still alive (and what runs below it) is
    killed, and the subreaper flag is put back as it was."""
    me = psutil.Process()
    before = {p.pid for p in me.children()}
    was = _set_subreaper(True)
    try:
        yield
    finally:
        try:
            stray = [p for p in me.children() if p.pid not in before]
            kill_all([q for p in stray for q in descendants(p.pid)] + stray)
        finally:
            if was is not None:
                _set_subreaper(was)
