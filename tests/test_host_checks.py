"""A host check (`call` with no result whose host function only raises), as libraries write
`error_if`, becomes an unordered jax.debug.callback (HCB305): the library's callers may run it
on several devices, where legacy ran it and an ordered jax.debug callback is refused. The
library module names no multi-device API, so the project model cannot tell; the callers
below run the migrated module under pmap on two CPU devices, on the current JAX."""

from __future__ import annotations

import os
import subprocess
import sys

from cli_helpers import REPO, run

LIBRARY = """\
import jax
from jax.experimental import host_callback as hcb

MESSAGES = ["x must be >= 0", "x must be finite"]


def error_if(pred, index):
    def raise_error(i):
        raise RuntimeError(MESSAGES[i.item()])

    jax.lax.cond(pred, lambda: hcb.call(raise_error, index), lambda: None)


def report(x):
    hcb.call(lambda v: print("checked", v), x)
"""

CALLER = """\
import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
import jax
import jax.numpy as jnp

from checks import error_if


def checked_sqrt(x):
    error_if(jnp.any(x < 0), 0)
    return jnp.sqrt(x)


print(jax.pmap(checked_sqrt)(jnp.arange(4.0).reshape(2, 2)).tolist())
try:
    jax.pmap(checked_sqrt)(-jnp.ones((2, 2))).block_until_ready()
except Exception as e:
    print("raised:", "x must be >= 0" in str(e))
"""


def test_a_host_check_runs_on_several_devices_and_its_error_reaches_the_caller(tmp_path):
    (tmp_path / "checks.py").write_text(LIBRARY)
    result = run(["checks.py"], tmp_path)
    assert (
        "HCB305 [fixed-with-behaviour-note] call -> jax.debug.callback (unordered)" in result.output
    )
    migrated = (tmp_path / "checks.py").read_text()
    assert "jax.debug.callback(raise_error, index)" in migrated
    # a host call with another effect (it prints) keeps its order: not a check
    assert "HCB304" in result.output and "ordered=True" in migrated

    (tmp_path / "caller.py").write_text(CALLER)
    proc = subprocess.run(
        [sys.executable, "caller.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert proc.stdout.splitlines() == [
        "[[0.0, 1.0], [1.4142135381698608, 1.7320507764816284]]",
        "raised: True",
    ], proc.stderr[-3000:]
