#!/usr/bin/env python3
"""Which `except` branch runs when a tap raises, around `except hcb.CallbackException`: on
real jax 0.4.30 (the cached legacy environment, hcmigrate.legacy_env) through both of
legacy's paths (inline, CPU's default; outfeed, GPU's and TPU's, forced here on CPU with
legacy's own config flags), and on this Python's JAX after hcmigrate's migration of the same
program. Contexts: a jitted step then block_until_ready, a jitted step left to barrier_wait,
the step run eagerly, and a `try` around barrier_wait alone.

    python scripts/measure_callback_exception.py            # print the table (markdown)

The table is docs/callback-exception.md; HCB403's messages (hcmigrate/rules/references.py)
say what it shows.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONTEXTS = ("jit_block", "jit_no_block", "eager", "barrier_only")

PROBE = """\
import sys

import jax
import jax.numpy as jnp
from jax.experimental import host_callback as hcb

if sys.argv[1] == "outfeed":
    jax.config.update("jax_host_callback_inline", False)
    jax.config.update("jax_host_callback_outfeed", True)
context = sys.argv[2]


def fail(a, transforms):
    raise ValueError("raised by the tap")


def step(x):
    return hcb.id_tap(fail, x) + 1


branch = "none: no exception"
try:
    try:
        if context == "jit_block":
            jax.jit(step)(jnp.arange(3)).block_until_ready()
            hcb.barrier_wait()
        elif context == "jit_no_block":
            jax.jit(step)(jnp.arange(3))
            hcb.barrier_wait()
        elif context == "eager":
            step(jnp.arange(3))
            hcb.barrier_wait()
    except hcb.CallbackException:
        branch = "the CallbackException handler"
    if context == "barrier_only":
        jax.jit(step)(jnp.arange(3))
        try:
            hcb.barrier_wait()
        except hcb.CallbackException:
            branch = "the CallbackException handler"
except RuntimeError as error:
    branch = "an outer RuntimeError handler (" + type(error).__name__ + ")"
except Exception as error:  # (no handler of a program like this one would catch it)
    branch = "neither: " + type(error).__name__ + " escapes"
print(branch)
"""


def branch(python: str, script: Path, path: str, context: str) -> str:
    res = subprocess.run(
        [python, str(script), path, context],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    lines = res.stdout.strip().splitlines()
    return lines[-1] if res.returncode == 0 and lines else f"exit {res.returncode}"


def main() -> int:
    sys.path.insert(0, str(REPO))
    from hcmigrate.legacy_env import legacy_python

    legacy = str(legacy_python())
    with tempfile.TemporaryDirectory() as tmp:
        original = Path(tmp, "legacy", "probe.py")
        migrated = Path(tmp, "migrated", "probe.py")
        for path in (original, migrated):
            path.parent.mkdir()
            path.write_text(PROBE)
        subprocess.run(
            [sys.executable, "-m", "hcmigrate", "--no-cache", "-q", str(migrated)],
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            check=False,
        )
        import jax

        rows = [
            "| context | jax 0.4.30 inline (CPU) | jax 0.4.30 outfeed (GPU/TPU) "
            f"| jax {jax.__version__}, migrated |",
            "|---|---|---|---|",
        ]
        for context in CONTEXTS:
            cells = [
                branch(legacy, original, "inline", context),
                branch(legacy, original, "outfeed", context),
                branch(sys.executable, migrated, "current", context),
            ]
            rows.append(f"| `{context}` | " + " | ".join(cells) + " |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
