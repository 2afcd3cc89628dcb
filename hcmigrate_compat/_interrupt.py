"""Ctrl-C (SIGINT) always ends a ``python -m compat`` run.

Python runs its SIGINT handler (``KeyboardInterrupt``) only in the main thread, between
bytecodes. A main thread waiting inside a jitted computation whose host callback does not
return (a host function that waits, or one that needs what the main thread holds) never gets
there: the run ignored Ctrl-C for as long as it hung. A watcher thread learns of each SIGINT
through ``signal.set_wakeup_fd``; when the main thread has neither run the handler nor run a
single line of Python within a grace time, it is stuck in native code, and the watcher ends
the process with status 130 (as a shell reports a run ended by SIGINT), saying why.

Nothing is installed where SIGINT is ignored (a run under ``nohup`` keeps ignoring it), off
the main thread, or where something else already owns the wakeup fd.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time

GRACE_S = 3.0  # how long the main thread has to take a SIGINT before the process ends
EXIT_STATUS = 130


def install(grace_s: float = GRACE_S) -> bool:
    """Start the watcher (True), or leave SIGINT as it is (False)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False  # (ignored, or the embedding program's own handler)
    receiver, sender = socket.socketpair()
    sender.setblocking(False)
    if signal.set_wakeup_fd(sender.fileno(), warn_on_full_buffer=False) != -1:
        signal.set_wakeup_fd(-1)  # (not ours to take: leave SIGINT as Python has it)
        receiver.close()
        sender.close()
        return False
    taken = [0]

    def keyboard_interrupt(signum, frame):
        taken[0] += 1
        signal.default_int_handler(signum, frame)

    signal.signal(signal.SIGINT, keyboard_interrupt)
    main = threading.main_thread().ident
    watcher = threading.Thread(
        target=_watch,
        args=(receiver, sender, taken, main, grace_s),
        name="compat-sigint-watcher",
        daemon=True,
    )
    watcher.start()
    return True


def _main_position(main: int | None):
    frame = sys._current_frames().get(main)
    return None if frame is None else (id(frame), frame.f_lasti)


def _watch(receiver, sender, taken, main, grace_s) -> None:
    arrived = 0
    while True:
        try:
            data = receiver.recv(64)
        except OSError:
            return
        if not data:
            return
        arrived += data.count(bytes([int(signal.SIGINT)]))
        if arrived <= taken[0]:
            continue
        before = _main_position(main)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            time.sleep(0.05)
            if taken[0] >= arrived or _main_position(main) != before:
                break  # (the main thread runs Python: it takes the signal itself)
        else:
            os.write(
                2,
                b"compat: interrupted (SIGINT) while the main thread was blocked in native code "
                b"(JAX waiting on a host callback that did not return); exiting\n",
            )
            os._exit(EXIT_STATUS)
        arrived = max(arrived, taken[0])
