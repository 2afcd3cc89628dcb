#!/usr/bin/env python3
"""Measure that each PositionalSharding form JAX113 rewrites places every shard as its
NamedSharding spelling does (issue 36).

On jax 0.4.30 (the legacy environment of hcmigrate.legacy_env), with 4 forced CPU devices
(`XLA_FLAGS=--xla_force_host_platform_device_count=4`), each form is built both ways, as
hcmigrate.rules.removed_positional_sharding writes it, and compared: the device and index of
every shard of `jax.device_put` (and `devices_indices_map`) for an array of the form's rank.
On the current JAX (no PositionalSharding) the NamedSharding spellings are measured alone and
must give the placements jax 0.4.30 gave for PositionalSharding.

    python scripts/measure_positional_sharding.py     # prints one line per form, exit 1 if
                                                      #   any placement differs
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

# (form, the legacy spelling, the NamedSharding spelling JAX113 writes, the array's shape)
FORMS = [
    (
        "construct",
        "PositionalSharding(jax.devices())",
        'NamedSharding(Mesh(jax.devices(), ("d",)), PartitionSpec("d"))',
        (8,),
    ),
    (
        "reshape(4, 1)",
        "PositionalSharding(jax.devices()).reshape(4, 1)",
        'NamedSharding(Mesh(np.array(jax.devices()).reshape(4, 1), ("d0", "d1")), '
        'PartitionSpec("d0", "d1"))',
        (8, 6),
    ),
    (
        "reshape(2, 2) of a name",
        "s.reshape(2, 2)",
        'NamedSharding(Mesh(s.mesh.devices.reshape(2, 2), ("d0", "d1")), '
        'PartitionSpec("d0", "d1"))',
        (8, 6),
    ),
    (
        "reshape(1, 4)",
        "PositionalSharding(jax.devices()).reshape((1, 4))",
        'NamedSharding(Mesh(np.array(jax.devices()).reshape(1, 4), ("d0", "d1")), '
        'PartitionSpec("d0", "d1"))',
        (8, 8),
    ),
    ("replicate of a name", "s.replicate()", "NamedSharding(s.mesh, PartitionSpec())", (8,)),
    (
        "reshape(4, 1).replicate()",
        "PositionalSharding(jax.devices()).reshape(4, 1).replicate()",
        'NamedSharding(Mesh(np.array(jax.devices()).reshape(-1), ("d",)), PartitionSpec())',
        (8, 6),
    ),
]

_PROBE = """
import json, sys
import jax, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
forms = json.loads(sys.argv[1])
try:
    from jax.sharding import PositionalSharding
except ImportError:
    PositionalSharding = None

def placed(sharding, shape):
    x = jax.device_put(np.arange(int(np.prod(shape))).reshape(shape), sharding)
    return sorted([s.device.id, str(s.index)] for s in x.addressable_shards)

out = {"jax": jax.__version__, "devices": len(jax.devices()), "forms": {}}
for name, legacy, named, shape in forms:
    shape = tuple(shape)
    s = NamedSharding(Mesh(jax.devices(), ("d",)), PartitionSpec("d"))
    entry = {"named": placed(eval(named), shape)}
    if PositionalSharding is not None:
        s = PositionalSharding(jax.devices())
        entry["positional"] = placed(eval(legacy), shape)
    out["forms"][name] = entry
print(json.dumps(out))
"""


def measure(python: str) -> dict:
    env = dict(
        os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=4"
    )
    run = subprocess.run(
        [python, "-c", _PROBE, json.dumps(FORMS)], capture_output=True, text=True, env=env
    )
    if run.returncode:
        raise SystemExit(run.stderr)
    return json.loads(run.stdout)


def main() -> int:
    from hcmigrate.legacy_env import legacy_python

    legacy = measure(str(legacy_python()))
    current = measure(sys.executable)
    same = True
    for name, *_ in FORMS:
        old = legacy["forms"][name]
        ok = old["positional"] == old["named"] == current["forms"][name]["named"]
        same &= ok
        print(
            f"{name}: jax {legacy['jax']} PositionalSharding == NamedSharding "
            f"{old['positional'] == old['named']}; == jax {current['jax']} NamedSharding "
            f"{old['positional'] == current['forms'][name]['named']}"
        )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
