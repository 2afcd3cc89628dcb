#!/usr/bin/env python3
"""Cost of one module against its number of sites (issue 24, point 6). Numbers go to
docs/performance.md; not a test (tests/test_bench_sites.py holds the bound on a smaller pair).

A generated module with N taps (a third statement taps, a third taps whose value is used, a
third `id_print`s, each in a function of its own, and a jitted driver running them in turn) is
migrated with `migrate_source` (layout on, as a fix or `--diff` runs it); CPU time, median of
--repeat runs, for each size, and the ratio of the largest to the smallest. Linear cost gives
a ratio near the ratio of the sizes (10 for 100 vs 1,000).

    python bench/bench_sites.py                    # 100 vs 1,000 taps, median of 3
    python bench/bench_sites.py --sizes 100 1000 --repeat 5
    python bench/bench_sites.py --profile 1000     # cProfile of one migration, top 25
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hcmigrate import migrate_source  # noqa: E402
from hcmigrate.api import Options  # noqa: E402

_HEADER = '''\
"""A generated module with many host_callback sites."""

import jax
import jax.numpy as jnp
from jax.experimental import host_callback as hcb


def _log(value, transforms):
    print("log", value)

'''

_SHAPES = (
    "def step_{k}(x):\n    hcb.id_tap(_log, x)  # tap {k}\n    return x + {k}\n",
    "def step_{k}(x):\n    y = hcb.id_tap(_log, x * 2) + {k}\n    return y\n",
    'def step_{k}(x):\n    return hcb.id_print(x, what="step {k}")\n',
)


def module_with_sites(n: int) -> str:
    """A module of `n` functions, each holding one legacy site, and a driver calling them."""
    parts = [_HEADER]
    for k in range(n):
        parts.append("\n" + _SHAPES[k % len(_SHAPES)].format(k=k) + "\n")
    steps = "".join(f"    step_{k},\n" for k in range(n))
    parts.append(f"\nSTEPS = (\n{steps})\n\n\n@jax.jit\ndef run(x):\n")
    parts.append("    for step in STEPS:\n        x = step(x)\n    return x\n")
    return "".join(parts)


def cpu_seconds(text: str, options: Options) -> float:
    gc.collect()  # (the collector stays on during the run, as in a real one)
    start = time.process_time()
    migrate_source(text, options)
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", type=int, metavar="N", help="profile one migration of N sites")
    args = parser.parse_args(argv)
    options = Options()
    if args.profile:
        text = module_with_sites(args.profile)
        profiler = cProfile.Profile()
        profiler.runcall(migrate_source, text, options)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        return 0
    migrate_source(module_with_sites(3), options)  # (imports and first-use caches)
    texts = {n: module_with_sites(n) for n in args.sizes}
    times: dict[int, list[float]] = {n: [] for n in args.sizes}
    for _ in range(args.repeat):  # (sizes in turns: a shared machine's minutes affect all alike)
        for n in args.sizes:
            times[n].append(cpu_seconds(texts[n], options))
    medians = {n: statistics.median(times[n]) for n in args.sizes}
    print("| taps in the module | lines | CPU seconds (median of %d) |" % args.repeat)
    print("|---|---|---|")
    for n in args.sizes:
        print(f"| {n:,} | {texts[n].count(chr(10)):,} | {medians[n]:.3f} |")
    small, large = min(args.sizes), max(args.sizes)
    print(
        f"\nratio {large:,} / {small:,} taps: {medians[large] / medians[small]:.2f}"
        f" (sizes {large / small:.0f}x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
