"""Locks on the cached environments (`hcmigrate.legacy_env`) that several hcmigrate processes
share: two verify runs on one machine, a CI job's steps, the test suite beside a verify.

An environment is changed (built, rebuilt, pytest installed into it) only under an exclusive
lock, and a verify run holds a shared lock on the environments it runs from until it ends, so
no process changes an environment another is running from, and two never build or install
into one at once. Locks are `fcntl.flock` on a `<environment>.lock` file beside the
environment's folder (never inside: a rebuild replaces the folder); the kernel drops them when
their process ends, however it ends.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from pathlib import Path
from typing import Callable, Iterator

# lock file -> descriptor holding a shared lock for the run in progress (see `using`)
_held: dict[str, int] = {}


def lock_file(env: Path) -> Path:
    return env.with_name(env.name + ".lock")


def _acquire(fd: int, mode: int, env: Path, say: Callable[[str], None] | None) -> None:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        others = (
            "other hcmigrate processes using"
            if mode == fcntl.LOCK_EX
            else "another hcmigrate process changing"
        )
        (say or _stderr)(f"hcmigrate: waiting for {others} {env}")
        fcntl.flock(fd, mode)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _open(env: Path) -> int:
    env.parent.mkdir(parents=True, exist_ok=True)
    return os.open(lock_file(env), os.O_RDWR | os.O_CREAT, 0o644)


@contextlib.contextmanager
def changing(env: Path, say: Callable[[str], None] | None = None) -> Iterator[None]:
    """Exclusive: no other process uses, builds or changes `env` meanwhile. Check again inside
    whether the change is still needed (another process may have made it while this one
    waited). A shared lock this process holds on `env` (`using`) becomes exclusive for the
    change and shared again after it."""
    path = str(lock_file(env))
    held = _held.get(path)
    fd = held if held is not None else _open(env)
    try:
        if held is not None:
            # flock converts a lock by dropping it first: another process waiting to change
            # `env` may go first, which is why callers check again inside
            fcntl.flock(held, fcntl.LOCK_UN)
        _acquire(fd, fcntl.LOCK_EX, env, say)
        yield
    finally:
        if held is None:
            os.close(fd)  # releases the lock
        else:
            fcntl.flock(held, fcntl.LOCK_SH)


def using(env: Path, say: Callable[[str], None] | None = None) -> None:
    """Shared, until `release_all`: other processes may use `env` too, none may change it."""
    path = str(lock_file(env))
    if path in _held:
        return
    fd = _open(env)
    try:
        _acquire(fd, fcntl.LOCK_SH, env, say)
    except BaseException:
        os.close(fd)
        raise
    _held[path] = fd


def release_all() -> None:
    """Release every lock `using` took (the end of a verify run)."""
    while _held:
        _, fd = _held.popitem()
        os.close(fd)
