#!/usr/bin/env python3
"""Measure where an io_callback runs under autodiff, on the JAX releases given: directly under
`jax.grad` (ordered or not) and in a `jax.custom_vjp` forward rule under `jax.grad`. The floor
hcmigrate.facts.IO_CALLBACK_IN_CUSTOM_VJP_SINCE rests on it (docs/callback-semantics.md).

    python scripts/measure_io_callback_autodiff.py PYTHON...   # one line per release and case

Each PYTHON is an interpreter with the JAX release to measure (e.g. virtualenvs made with
`pip install jax==V jaxlib==V`); the legacy reference (jax 0.4.30) and this Python are used
when none is given.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PROBE = r"""
import jax
from jax.experimental import io_callback

def log(v):
    pass

def direct(x, ordered):
    io_callback(log, None, x, ordered=ordered)
    return x * x

@jax.custom_vjp
def in_rule(x):
    return x * x

def forward(x):
    io_callback(log, None, x, ordered=False)
    return x * x, x

in_rule.defvjp(forward, lambda x, ct: (2 * x * ct,))

cases = [
    ("grad, io_callback", lambda x: direct(x, False)),
    ("grad, io_callback(ordered=True)", lambda x: direct(x, True)),
    ("grad of custom_vjp, io_callback in its forward rule", in_rule),
]
for name, function in cases:
    try:
        jax.grad(function)(3.0)
        jax.effects_barrier()
        outcome = "works"
    except Exception as error:
        outcome = f"{type(error).__name__}: {str(error).splitlines()[0]}"
    print(f"jax {jax.__version__:8} {name:52} {outcome}")
"""


def main(pythons: list[str]) -> int:
    if not pythons:
        from hcmigrate.legacy_env import legacy_python

        pythons = [str(legacy_python()), sys.executable]
    for python in pythons:
        run = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=300)
        print(run.stdout, end="" if run.returncode == 0 else run.stderr[-500:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
