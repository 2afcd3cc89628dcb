#!/usr/bin/env python3
"""Measure what a host function's array operations give on legacy's numpy array (jax 0.4.30,
numpy 1.26: what host_callback handed over) and on current JAX's jax.Array and numpy 2 array
(what a migrated callback hands over, with and without the codemod's numpy copy). The facts
in hcmigrate/facts.py (NOT_ARRAY_AGNOSTIC's in-place functions, SCALAR_CONVERSIONS) rest on
this table.

    python scripts/measure_host_boundary.py     # a table: operation, legacy, jax.Array, numpy 2
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PROBE = r"""
import ctypes, json, sys, warnings
import numpy as np

def as_jax(x):
    import jax.numpy as jnp
    return jnp.asarray(x)

OPERATIONS = {
    "int(float32[1])": lambda x: int(x[:1]),
    "float(float32[1])": lambda x: float(x[:1]),
    "complex(float32[1])": lambda x: complex(x[:1]),
    "int(float32[])": lambda x: int(x[1]),
    "int(x[:1].item())": lambda x: int(x[:1].item()),
    "np.ctypeslib.as_ctypes(x)": lambda x: type(np.ctypeslib.as_ctypes(x)).__name__,
    "np.copyto(x, 0)": lambda x: (np.copyto(x, 0), x.tolist())[1],
    "np.add(x, 1, out=x)": lambda x: np.add(x, 1, out=x).tolist(),
    "np.put(x, 0, 9)": lambda x: (np.put(x, 0, 9), x.tolist())[1],
    "np.putmask(x, x > 1, 0)": lambda x: (np.putmask(x, x > 1, 0), x.tolist())[1],
    "np.place(x, x > 1, 0)": lambda x: (np.place(x, x > 1, 0), x.tolist())[1],
    "x.tobytes()": lambda x: len(x.tobytes()),
    "memoryview(x)": lambda x: memoryview(x).nbytes,
    "np.frombuffer(x)": lambda x: np.frombuffer(x, np.float32).tolist(),
    "ctypes from_buffer(x)": lambda x: len((ctypes.c_float * 3).from_buffer(x)),
    "flags.writeable = True; from_buffer": lambda x: (
        setattr(x.flags, "writeable", True), len((ctypes.c_float * 3).from_buffer(x)))[1],
}

def outcome(operation, x):
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = operation(x)
        return repr(value) + (" (warns)" if caught else "")
    except Exception as error:
        return type(error).__name__

kind = sys.argv[1]
results = {}
for name, operation in OPERATIONS.items():
    x = np.arange(3, dtype=np.float32)
    if kind == "legacy":  # what host_callback handed over on CPU: an owned, read-only array
        x.flags.writeable = False
    elif kind == "jax":
        x = as_jax(x)
    results[name] = outcome(operation, x)
print(json.dumps(results))
"""


def measure(python: str, kind: str) -> dict:
    run = subprocess.run(
        [python, "-c", PROBE, kind], capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(run.stdout.splitlines()[-1])


def main() -> int:
    from hcmigrate.legacy_env import legacy_python

    columns = {
        "legacy numpy 1.26": measure(str(legacy_python()), "legacy"),
        "jax.Array": measure(sys.executable, "jax"),
        "numpy 2 copy": measure(sys.executable, "numpy"),
    }
    names = list(next(iter(columns.values())))
    width = max(map(len, names)) + 2
    print("operation".ljust(width) + "".join(c.ljust(26) for c in columns))
    for name in names:
        print(
            name.ljust(width) + "".join(str(col[name])[:24].ljust(26) for col in columns.values())
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
