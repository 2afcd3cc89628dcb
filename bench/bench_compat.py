#!/usr/bin/env python3
"""Per-call cost of compat id_tap / call in a jitted fori_loop, against JAX's own callbacks
on current JAX and against legacy host_callback on jax 0.4.30 (run in the legacy
interpreter through a subprocess), in one run.

    python bench/bench_compat.py [--iters 2000] [--repeats 7] [--rounds 5] [--legacy-python PATH]

Within one worker process each number is the best of ``--repeats`` runs of (loop time /
iterations), after a warm-up run that compiles. The loop carries a float32[3] value
through the callback. The legacy and the compat (fast path) workers run in turns,
``--rounds`` times, so that both see the same load of a shared machine: a row's cost is the
median over the rounds, its ratio the median of the ratios taken within each round. The
public-only path and JAX's own callbacks are measured once, for comparison.
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
    return min(ts)


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
        if kind != "native":
            for name, step in _steps(hcb).items():
                out[f"compat {name}"] = _measure(step, iters, repeats)
        else:
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
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--legacy-python", help="interpreter with jax==0.4.30 (default: hcmigrate.legacy_env)"
    )
    ap.add_argument("--no-legacy", action="store_true")
    ap.add_argument(
        "--worker", choices=["legacy", "current", "public", "native"], help=argparse.SUPPRESS
    )
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
    current = [sys.executable, __file__, "--worker", "current", *common]
    current_env = dict(env, HCMIGRATE_COMPAT_PUBLIC_ONLY="0")
    legacy = None
    if not args.no_legacy:
        py = args.legacy_python
        if py is None:
            sys.path.insert(0, str(REPO))
            from hcmigrate.legacy_env import legacy_python

            py = str(legacy_python())
        legacy_env = dict(env)
        legacy_env.pop("PYTHONPATH")
        legacy = ([py, __file__, "--worker", "legacy", *common], legacy_env)

    rounds = []  # [(legacy result, current result)] measured back to back
    for _ in range(args.rounds):
        leg = _run(*legacy) if legacy else {}
        rounds.append((leg, _run(current, current_env)))
    pub = _run(
        [sys.executable, __file__, "--worker", "public", *common],
        dict(env, HCMIGRATE_COMPAT_PUBLIC_ONLY="1"),
    )
    native = _run([sys.executable, __file__, "--worker", "native", *common], current_env)
    jax_version = rounds[0][1]["jax"]
    legacy_version = rounds[0][0].get("jax", "-")

    def median_of(key, which):
        values = [r[which].get(key) for r in rounds]
        return statistics.median(values) if None not in values else None

    def paired_ratio(key, base):
        if not legacy:
            return None
        return statistics.median(r[1][key] / r[0][base] for r in rounds)

    rows = []  # (name, us per call, ratio to legacy)
    for op in ("id_tap", "call"):
        base = f"legacy {op}"
        rows.append((f"legacy host_callback.{op} (jax {legacy_version})", median_of(base, 0), 1.0))
        rows.append(
            (
                f"compat {op}, fast path (jax {jax_version})",
                median_of(f"compat {op}", 1),
                paired_ratio(f"compat {op}", base),
            )
        )
        once = median_of(base, 0)
        pub_us = pub[f"compat {op}"]
        rows.append((f"compat {op}, public-only path", pub_us, pub_us / once if once else None))
    for k in (
        "io_callback(ordered=True), no result",
        "io_callback(ordered=True), result",
        "pure_callback, result",
        "jax.debug.callback(ordered=True)",
    ):
        base = median_of("legacy id_tap" if "no result" in k or "debug" in k else "legacy call", 0)
        rows.append((f"native {k}", native[k], native[k] / base if base else None))

    print(
        f"per-call cost in a jitted fori_loop ({args.iters} iterations, best of {args.repeats} "
        f"per process, median of {args.rounds} rounds), CPU"
    )
    print(f"{'variant':62s} {'us/call':>9s} {'x legacy':>9s}")
    for name, us, ratio in rows:
        shown = f"{ratio:8.2f}x" if ratio else "     n/a"
        print(f"{name:62s} {us:9.2f} {shown}")
    print(
        "(id_tap-like rows against legacy id_tap, call-like rows against legacy call; the "
        "fast path's ratios are paired within each round)"
    )


if __name__ == "__main__":
    main()
