"""Processes a side leaves behind. Each side runs in its own process group, killed as a whole on
timeout, on Ctrl-C / SIGTERM and when the run ends; a process that left that group (`setsid`,
`start_new_session=True`, a daemon's double fork) would outlive verify and its time limit.
Every process of a side inherits the side's tag in its environment (SIDE_TAGS_ENV), whoever
its parent is by then, so verify finds them all: those still below the side, and orphans
re-parented to init."""

from __future__ import annotations

import os
import uuid

import psutil

# A colon-separated list: a verify run inside a verified program adds its sides' tags to the
# ones it inherited, so the outer run still finds the inner run's processes.
SIDE_TAGS_ENV = "HCMIGRATE_VERIFY_SIDE_TAGS"


def new_side_tag(env: dict) -> tuple[str, str]:
    """A fresh tag, and the SIDE_TAGS_ENV value that adds it to those `env` carries."""
    tag = uuid.uuid4().hex
    inherited = env.get(SIDE_TAGS_ENV, "")
    return tag, f"{inherited}:{tag}" if inherited else tag


def tagged(tags: set[str]) -> list[psutil.Process]:
    """The processes (other than this one) whose environment carries one of `tags`."""
    found = []
    for p in psutil.process_iter():
        if p.pid == os.getpid():
            continue
        try:
            value = p.environ().get(SIDE_TAGS_ENV, "")
        except psutil.Error:  # gone, or not ours to read
            continue
        if tags.intersection(value.split(":")):
            found.append(p)
    return found


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


def kill_leftovers(tags: set[str]) -> None:
    """Kill every process still carrying one of the sides' tags, and what runs below them."""
    if tags:
        left = tagged(tags)
        kill_all([q for p in left for q in descendants(p.pid)] + left)
