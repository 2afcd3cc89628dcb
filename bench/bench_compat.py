#!/usr/bin/env python3
"""Per-call cost of compat id_tap / call in a jitted fori_loop, against JAX's own callbacks
on current JAX and against legacy host_callback on jax 0.4.30 (run in the legacy
interpreter through a subprocess), in one run.

    python bench/bench_compat.py [--iters 2000] [--repeats 7] [--legacy-python PATH]

Each number is the median over ``--repeats`` runs of (loop time / iterations), after a
warm-up run that compiles. The loop carries a float32[3] value through the callback.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _measure(step, iters, repeats):
    import jax
    import jax.numpy as jnp

    @jax.jit
    def loop(x):
        return jax.lax.fori_loop(0, iters, lambda i, c: step(c), x)

    x = jnp.zeros(3, jnp.float32)
    jax.block_until_ready(loop(x))
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(loop(x))
        jax.effects_barrier()
        ts.append((time.perf_counter() - t0) / iters * 1e6)
    return statistics.median(ts)


def _steps(hcb_module):
    import jax
    import numpy as np

    def noop_tap(a, t):
        return None

    def plus1(a):
        return a + np.float32(1)

    sds = jax.ShapeDtypeStruct((3,), np.float32)
    steps = {
        "id_tap": lambda c: hcb_module.id_tap(noop_tap, c + 1),
        "call": lambda c: hcb_module.call(plus1, c, result_shape=sds),
    }
    return steps


def worker(kind, iters, repeats):
    """Runs inside the measured interpreter; prints JSON {name: us_per_call}."""
    import warnings

    warnings.simplefilter("ignore")
    import jax
    import numpy as np

    out = {"jax": jax.__version__}
    if kind == "legacy":
        from jax.experimental import host_callback as hcb

        for name, step in _steps(hcb).items():
            out[f"legacy {name}"] = _measure(step, iters, repeats)
    else:
        from jax.experimental import io_callback

        from compat import host_callback as hcb

        out["path"] = "fast" if hcb.using_fast_path() else "public-only"
        for name, step in _steps(hcb).items():
            out[f"compat {name}"] = _measure(step, iters, repeats)
        if kind == "current":
            sds = jax.ShapeDtypeStruct((3,), np.float32)
            plus1 = lambda a: np.asarray(a) + np.float32(1)  # noqa: E731
            out["io_callback(ordered=True), no result"] = _measure(
                lambda c: (io_callback(lambda a: None, None, c + 1, ordered=True), c + 1)[1],
                iters,
                repeats,
            )
            out["io_callback(ordered=True), result"] = _measure(
                lambda c: io_callback(plus1, sds, c, ordered=True), iters, repeats
            )
            out["pure_callback, result"] = _measure(
                lambda c: jax.pure_callback(plus1, sds, c), iters, repeats
            )
            out["jax.debug.callback(ordered=True)"] = _measure(
                lambda c: (jax.debug.callback(lambda a: None, c + 1, ordered=True), c + 1)[1],
                iters,
                repeats,
            )
    print(json.dumps(out))


def _run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit(f"benchmark worker failed: {' '.join(cmd)}\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description="compat host_callback benchmark")
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument(
        "--legacy-python", help="interpreter with jax==0.4.30 (default: hcmigrate.legacy_env)"
    )
    ap.add_argument("--no-legacy", action="store_true")
    ap.add_argument("--worker", choices=["legacy", "current", "public"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.iters, args.repeats)

    common = ["--iters", str(args.iters), "--repeats", str(args.repeats)]
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        JAX_PLATFORMS="cpu",
        PYTHONWARNINGS="ignore",
    )
    env.pop("XLA_FLAGS", None)
    cur = _run(
        [sys.executable, __file__, "--worker", "current", *common],
        dict(env, HCMIGRATE_COMPAT_PUBLIC_ONLY="0"),
    )
    pub = _run(
        [sys.executable, __file__, "--worker", "public", *common],
        dict(env, HCMIGRATE_COMPAT_PUBLIC_ONLY="1"),
    )
    leg = {}
    if not args.no_legacy:
        py = args.legacy_python
        if py is None:
            sys.path.insert(0, str(REPO))
            from hcmigrate.legacy_env import legacy_python

            py = str(legacy_python())
        leg_env = dict(env)
        leg_env.pop("PYTHONPATH")
        leg = _run([py, __file__, "--worker", "legacy", *common], leg_env)

    rows = []
    for op in ("id_tap", "call"):
        base = leg.get(f"legacy {op}")
        rows.append((f"legacy host_callback.{op} (jax {leg.get('jax', '-')})", base, base))
        rows.append((f"compat {op}, fast path (jax {cur['jax']})", cur[f"compat {op}"], base))
        rows.append((f"compat {op}, public-only path", pub[f"compat {op}"], base))
    for k in (
        "io_callback(ordered=True), no result",
        "io_callback(ordered=True), result",
        "pure_callback, result",
        "jax.debug.callback(ordered=True)",
    ):
        base = (
            leg.get("legacy id_tap") if "no result" in k or "debug" in k else leg.get("legacy call")
        )
        rows.append((f"native {k}", cur[k], base))

    print(
        f"per-call cost in a jitted fori_loop ({args.iters} iterations, median of {args.repeats}), CPU"
    )
    print(f"{'variant':62s} {'us/call':>9s} {'x legacy':>9s}")
    for name, us, base in rows:
        ratio = f"{us / base:8.2f}x" if base else "     n/a"
        print(f"{name:62s} {us:9.2f} {ratio}")
    print("(ratios: id_tap-like rows vs legacy id_tap, call-like rows vs legacy call)")


if __name__ == "__main__":
    main()
