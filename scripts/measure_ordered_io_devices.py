#!/usr/bin/env python3
"""Measure where an ordered host call runs on several devices, release by release.

The question the codemod's choice for a module run on several devices rests on
(docs/callback-semantics.md, "Ordered callbacks on several devices, release by release"):
does `io_callback(f, None, x, ordered=True)` run in a jit of an array sharded over a 4-device
mesh, in shard_map, in pmap, and under vmap or grad there, and how often is the host
function called; and the same for an ordered `jax.debug.callback` and, where the release has
it, the legacy `id_tap` (the behaviour to keep). Each (spelling, context) runs in its own
child process of the measured interpreter with 4 forced CPU devices.

    python scripts/measure_ordered_io_devices.py            # measure, write the JSON and
                                                            #   the docs section
    python scripts/measure_ordered_io_devices.py --python 0.8.0=/path/bin/python  # add one
    python scripts/measure_ordered_io_devices.py --render   # only regenerate the section

Interpreters: this Python's JAX, the cached jax 0.6.2 and legacy jax 0.4.30 environments
(hcmigrate.legacy_env), the jax 0.4.26 floor environment when it exists, and any given with
`--python LABEL=PATH`. A new measurement keeps the releases it does not measure. The probe
side (`--probe SPELLING CONTEXT`) imports only the standard library, numpy and jax, and runs
on Python 3.9.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "docs" / "ordered_io_devices.json"
DOC = REPO / "docs" / "callback-semantics.md"
BEGIN = "<!-- BEGIN GENERATED: scripts/measure_ordered_io_devices.py -->"
END = "<!-- END GENERATED: scripts/measure_ordered_io_devices.py -->"
DEVICES = 4
SPELLINGS = ("io_ord", "dbg_cb_ord", "id_tap")
CONTEXTS = (
    "jit_mesh",
    "jit_sharding_constraint",
    "shard_map",
    "pmap",
    "jit_mesh_vmap",
    "jit_mesh_grad",
)
# What each cell runs (the docs' legend).
LEGEND = {
    "io_ord": "`io_callback(f, None, x, ordered=True)`",
    "dbg_cb_ord": "`jax.debug.callback(f, x, ordered=True)`",
    "id_tap": "legacy `host_callback.id_tap(f, x)` (releases that have it)",
    "jit_mesh": "`jit(emit)` of a float32[8] sharded over a 4-device `Mesh` (`NamedSharding`)",
    "jit_sharding_constraint": "`jit` of an unsharded float32[8] that `with_sharding_constraint`"
    " shards over the mesh before `emit`",
    "shard_map": "`jit(shard_map(emit, mesh, P('d'), P('d')))` of the sharded float32[8]",
    "pmap": "`pmap(emit)` of a float32[4, 2]",
    "jit_mesh_vmap": "`jit(vmap(emit))` of a float32[4, 2] sharded over the mesh",
    "jit_mesh_grad": "`jit(grad(lambda x: emit(x).sum()))` of the sharded float32[8]",
}

# ----------------------------------------------------------------------------------------------
# Probe side: runs inside the measured interpreter (Python 3.9 and up).
# ----------------------------------------------------------------------------------------------


def probe(spelling: str, context: str) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    calls = []

    def host(x):
        calls.append(list(np.shape(x)))

    def emit(x):
        if spelling == "io_ord":
            from jax.experimental import io_callback

            io_callback(host, None, x, ordered=True)
        elif spelling == "dbg_cb_ord":
            jax.debug.callback(host, x, ordered=True)
        else:
            from jax.experimental import host_callback

            host_callback.id_tap(lambda arg, transforms: host(arg), x)
        return x * 2

    mesh = Mesh(np.array(jax.devices()[:DEVICES]), ("d",))
    sharded = NamedSharding(mesh, PartitionSpec("d"))
    data = jnp.arange(8.0)
    if context == "jit_mesh":
        out = jax.jit(emit)(jax.device_put(data, sharded))
    elif context == "jit_sharding_constraint":
        out = jax.jit(lambda x: emit(jax.lax.with_sharding_constraint(x, sharded)))(data)
    elif context == "shard_map":
        if hasattr(jax, "shard_map"):
            mapped = jax.shard_map(
                emit, mesh=mesh, in_specs=PartitionSpec("d"), out_specs=PartitionSpec("d")
            )
        else:
            from jax.experimental.shard_map import shard_map

            mapped = shard_map(emit, mesh, PartitionSpec("d"), PartitionSpec("d"))
        out = jax.jit(mapped)(jax.device_put(data, sharded))
    elif context == "pmap":
        out = jax.pmap(emit)(data.reshape(DEVICES, 2))
    elif context == "jit_mesh_vmap":
        out = jax.jit(jax.vmap(emit))(jax.device_put(data.reshape(DEVICES, 2), sharded))
    else:
        out = jax.jit(jax.grad(lambda x: emit(x).sum()))(jax.device_put(data, sharded))
    jax.block_until_ready(out)
    jax.effects_barrier()
    return {"calls": calls}


def error_text(exc: BaseException) -> str:
    """The exception's type and first line, with object addresses blanked."""
    import re

    first = (str(exc).strip().splitlines() or [""])[0]
    return re.sub(r" at 0x[0-9a-f]+", " at 0x…", f"{type(exc).__name__}: {first}")[:300]


def run_probe(spelling: str, context: str) -> None:
    try:
        result = probe(spelling, context)
    except AttributeError as exc:
        if spelling == "id_tap" and "host_callback" in str(exc):
            result = {"absent": True}
        else:
            result = {"error": error_text(exc)}
    except ImportError:
        result = {"absent": True}
    except NotImplementedError as exc:  # (jax 0.4.34 to 0.9: host_callback only raises this)
        no_longer = spelling == "id_tap" and "no longer supported" in str(exc)
        result = {"absent": True} if no_longer else {"error": error_text(exc)}
    except Exception as exc:  # noqa: BLE001 (the exception is the measurement)
        result = {"error": error_text(exc)}
    print(json.dumps(result))


# ----------------------------------------------------------------------------------------------
# Driver side.
# ----------------------------------------------------------------------------------------------


def interpreters(extra: list[str]) -> dict[str, str]:
    """Path of each interpreter to measure, by label (its JAX release is read from it)."""
    sys.path.insert(0, str(REPO))
    from hcmigrate.legacy_env import jax_env_python, legacy_python

    found = {
        "current": sys.executable,
        "oldest": str(jax_env_python("0.6.2", "compat")),
        "legacy": str(legacy_python()),
    }
    floor = Path.home() / ".cache/hcmigrate/compat-floor-jax-0.4.26-numpy-1.26.4-py39/bin/python"
    if floor.exists():
        found["floor"] = str(floor)
    for item in extra:
        label, _, path = item.partition("=")
        found[label] = path
    return found


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    flags = [f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f]
    env["XLA_FLAGS"] = " ".join([*flags, f"--xla_force_host_platform_device_count={DEVICES}"])
    env["JAX_PLATFORMS"] = "cpu"
    env.pop("PYTHONPATH", None)
    return env


def measure(python: str) -> tuple[str, dict]:
    env = child_env()
    version = subprocess.run(
        [python, "-c", "import jax; print(jax.__version__)"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout.strip()
    cells = {}
    for spelling in SPELLINGS:
        for context in CONTEXTS:
            done = subprocess.run(
                [python, __file__, "--probe", spelling, context],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
            lines = done.stdout.strip().splitlines()
            cells[f"{spelling}/{context}"] = (
                json.loads(lines[-1]) if lines else {"error": f"exit {done.returncode}"}
            )
            print(
                f"jax {version} {spelling}/{context}: {cells[f'{spelling}/{context}']}",
                file=sys.stderr,
            )
    return version, cells


def _release_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def cell_text(cell: dict, footnotes: dict[str, str]) -> str:
    if cell.get("absent"):
        return "n/a"
    if "error" in cell:
        key = footnotes.setdefault(cell["error"], f"D{len(footnotes) + 1}")
        return f"✗ [{key}](#{key.lower()})"
    calls = cell["calls"]
    if not calls:
        return "✓ 0 calls"
    shapes = sorted({json.dumps(c) for c in calls})
    return "✓ " + ", ".join(
        f"{sum(json.dumps(c) == s for c in calls)}×{s.replace(' ', '')}" for s in shapes
    )


def render(data: dict) -> str:
    versions = sorted(data, key=_release_key)
    footnotes: dict[str, str] = {}
    out = [
        BEGIN,
        "",
        "Generated by `scripts/measure_ordered_io_devices.py` from `docs/ordered_io_devices.json`:"
        f" do not edit by hand. {DEVICES} CPU devices; ✓ it works, then the host calls as"
        " `count×argument shape`; ✗ it fails (footnotes); n/a: the release has no such API.",
        "",
    ]
    for spelling in SPELLINGS:
        out += [f"#### {LEGEND[spelling]}", ""]
        out.append("| context | " + " | ".join(f"jax {v}" for v in versions) + " |")
        out.append("|---|" + "---|" * len(versions))
        for context in CONTEXTS:
            row = [cell_text(data[v][f"{spelling}/{context}"], footnotes) for v in versions]
            out.append(f"| {context} | " + " | ".join(row) + " |")
        out.append("")
    out += ["Contexts:", ""]
    out += [f"- `{context}`: {LEGEND[context]}" for context in CONTEXTS]
    out += ["", "Footnotes:", ""]
    for text, key in footnotes.items():
        out.append(f'- <a id="{key.lower()}"></a>**{key}** `` {text} ``')
    out += ["", END]
    return "\n".join(out)


def write_doc(data: dict) -> None:
    text = DOC.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    DOC.write_text(text[:start] + render(data) + text[end:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", action="append", default=[], metavar="LABEL=PATH")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="LABEL",
        help="measure only these interpreters (labels)",
    )
    parser.add_argument("--render", action="store_true")
    parser.add_argument("--probe", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe:
        run_probe(*args.probe)
        return 0
    data = json.loads(DATA.read_text()) if DATA.exists() else {}
    if not args.render:
        for label, python in interpreters(args.python).items():
            if args.only and label not in args.only:
                continue
            version, cells = measure(python)
            data[version] = cells
        DATA.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    write_doc(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
