"""The compat runtime under a program's own callbacks: `python -m compat` runs a program whose
`io_callback` host functions run jnp code on the host beside `barrier_wait` (on one device and
several, after a tap failed) to the end, and Ctrl-C (SIGINT) ends a run whose main thread is
stuck in native code under a host callback. The real program in a subprocess, with timeouts
far above the normal case."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.cli_helpers import REPO, default_signals

HOST_JNP = """\
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback
from jax.experimental import host_callback as hcb


def all_positive(x):
    # the program's own host function runs JAX code on the host
    return np.asarray(jnp.all(jnp.asarray(x) >= 0))


def step(x):
    ok = io_callback(all_positive, jax.ShapeDtypeStruct((), jnp.bool_), x, ordered=True)
    return jnp.where(ok, x + 1, x)


def failing_tap(x, transforms):
    raise ValueError("a tap failed")


try:
    jax.jit(lambda v: hcb.id_tap(failing_tap, v))(jnp.ones(2)).block_until_ready()
except Exception as error:
    print("the tap's error:", type(error).__name__)
hcb.barrier_wait()
for i in range(3):
    print(i, np.asarray(jax.jit(step)(jnp.arange(3.0) - i)).tolist())
    hcb.barrier_wait()
unordered = lambda v: io_callback(all_positive, jax.ShapeDtypeStruct((), jnp.bool_), v)
print("pmap", np.asarray(jax.pmap(unordered)(jnp.ones((2, 3)))).tolist())
hcb.barrier_wait()
print("done")
"""

HOST_JNP_OUTPUT = """\
the tap's error: JaxRuntimeError
0 [1.0, 2.0, 3.0]
1 [-1.0, 0.0, 1.0]
2 [-2.0, -1.0, 0.0]
pmap [True, True]
done
"""


def _compat(script, **popen):
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        XLA_FLAGS="--xla_force_host_platform_device_count=2",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "compat", str(script)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,
        **popen,
    )


def test_host_functions_running_jnp_beside_barrier_wait_finish(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(HOST_JNP)
    proc = _compat(script)
    out, err = proc.communicate(timeout=600)  # (a deadlock fails here, not the suite)
    assert proc.returncode == 0, out + err
    assert out == HOST_JNP_OUTPUT


STUCK = """\
import ctypes
import ctypes.util

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback
from jax.experimental import host_callback as hcb

libc = ctypes.CDLL(ctypes.util.find_library("c"))
mutex = ctypes.create_string_buffer(64)  # a default pthread mutex (all zero bytes)


def host(x):
    print("in the host function", flush=True)
    libc.pthread_mutex_lock(mutex)
    libc.pthread_mutex_lock(mutex)  # (locked again by its owner: never returns, deaf to signals)
    return np.asarray(x)


jax.jit(lambda v: io_callback(host, jax.ShapeDtypeStruct(v.shape, v.dtype), v))(jnp.ones(2))
hcb.barrier_wait()
"""

IN_PYTHON = """\
import time

import jax.numpy as jnp
from jax.experimental import host_callback as hcb

hcb.barrier_wait()
print("in the host function", flush=True)
time.sleep(600)
"""


def _wait_until_in_a_futex(pid: int) -> None:
    """Until the main thread sleeps in the kernel on the mutex (the signal must find it in
    native code, not in the Python lines before); a timeout far above the normal case."""
    wchan = Path(f"/proc/{pid}/wchan")
    deadline = time.monotonic() + 300
    while "futex" not in wchan.read_text():
        assert time.monotonic() < deadline, "the host function never reached the mutex"
        time.sleep(0.1)


@pytest.mark.skipif(not Path("/proc/self/wchan").exists(), reason="glibc's pthread mutex, /proc")
def test_sigint_ends_a_run_stuck_in_native_code(tmp_path):
    script = tmp_path / "stuck.py"
    script.write_text(STUCK)
    proc = _compat(script)
    try:
        assert proc.stdout.readline() == "in the host function\n"
        _wait_until_in_a_futex(proc.pid)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "compat: interrupted (SIGINT) while the main thread was blocked in native code" in err


def test_sigint_in_python_code_is_a_keyboard_interrupt_as_ever(tmp_path):
    script = tmp_path / "sleeps.py"
    script.write_text(textwrap.dedent(IN_PYTHON))
    proc = _compat(script)
    try:
        assert proc.stdout.readline() == "in the host function\n"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert "KeyboardInterrupt" in err and "compat: interrupted" not in err, err
    assert proc.returncode in (1, -signal.SIGINT), err
