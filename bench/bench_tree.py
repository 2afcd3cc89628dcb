"""Benchmark hcmigrate on a large real tree (issue 5). Not a test: numbers go to docs/performance.md.

Corpus: N copies of the .py files of the installed site-packages (each copy under `copyK/`,
so hcmigrate's skip list does not hide them), plus the project's fixtures (`fixtures/**/*.in.py`)
copied in at several depths, so a small share of files use host_callback.

Measured (medians of --repeat runs):
  * `hcmigrate --check` over the tree vs `grep -rlF host_callback` (the floor: reading bytes)
    vs libcst's own runner doing a no-op codemod (timed on a sample, scaled to the tree); cold
    (`--no-cache`, as a fresh CI clone) and with a warm result cache (nothing changed since);
  * per-file migration (hcmigrate.migrate_source) vs bare libcst parse+print of the same files,
    next to libcst's idiomatic no-op codemod (parse, one transformer pass, print);
  * `-j 1` vs `-j 2` on the migration-heavy part (fixtures only, 160 and 640 files), timed in
    turns with the speed-up this machine gives two identical CPU-bound processes, and the best
    two perfect cores could give given the run's serial part (Amdahl);
  * peak memory (max RSS) of a whole-tree `--check` for the 1x and the 4x tree.

    python bench/bench_tree.py --out /tmp/hcbench            # build + measure, print markdown
    python bench/bench_tree.py --out /tmp/hcbench --quick    # fewer repeats, smaller sample

With `--no-legacy BEFORE` only the cost of a tree with no legacy names is measured: `--check`
over the 1x tree without the fixture copies, this checkout and the checkout BEFORE (e.g. a
`git archive` of an earlier commit) in turns, wall and CPU seconds (children's user + system).
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEPTHS = ("", "a", "a/b/c", "a/b/c/d/e/f")


def copy_fixtures(fixtures: list[Path], folder: Path) -> int:
    """Copy each `NAME.in.py` into `folder` as `NAME.py` (a user's module); the number copied."""
    folder.mkdir(parents=True, exist_ok=True)
    for f in fixtures:
        shutil.copyfile(f, folder / f.name.replace(".in.py", ".py"))
    return len(fixtures)


def build_tree(out: Path, copies: int, fixture_sets: int) -> dict:
    site = Path(sysconfig.get_paths()["purelib"])
    fixtures = sorted(REPO.glob("fixtures/**/*.in.py"))
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    n_py = n_lines = 0
    for k in range(copies):
        dst = out / f"copy{k}"
        for src in site.rglob("*.py"):
            rel = src.relative_to(site)
            if any(part in ("site-packages", "__pycache__") for part in rel.parts):
                continue
            target = dst / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                shutil.copyfile(src, target)
            except OSError:
                continue
            n_py += 1
    for k in range(fixture_sets * copies):
        for depth in DEPTHS:
            d = out / f"copy{k % copies}" / "hcb_users" / f"set{k}" / depth
            n_py += copy_fixtures(fixtures, d)
    for p in out.rglob("*.py"):
        with open(p, "rb") as fh:
            n_lines += fh.read().count(b"\n")
    users = int(
        subprocess.run(
            ["grep", "-rlF", "host_callback", str(out)], capture_output=True, text=True
        ).stdout.count("\n")
    )
    return {
        "files": n_py,
        "lines": n_lines,
        "host_callback_files": users,
        "fixtures": len(fixtures),
    }


def timed(cmd, cwd=None, repeat=3) -> tuple[float, int]:
    """Median wall time of `cmd`, and the max RSS (KiB) over its runs (children included)."""
    times = []
    peak = 0
    for _ in range(repeat):
        wrapper = [
            sys.executable,
            "-c",
            "import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL,"
            " stderr=subprocess.DEVNULL).returncode; print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
            *cmd,
        ]
        t0 = time.perf_counter()
        p = subprocess.run(wrapper, cwd=cwd, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        rc, rss = p.stdout.split()
        # A run that failed would time nothing real (grep: 0/1; hcmigrate --check: 0/1).
        if int(rc) not in (0, 1):
            raise SystemExit(f"benchmark command failed with exit {rc}: {' '.join(map(str, cmd))}")
        peak = max(peak, int(rss))
    return statistics.median(times), peak


def timed_cpu(cmd, env) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its children) of one run of `cmd`."""
    wrapper = [
        sys.executable,
        "-c",
        "import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL,"
        " stderr=subprocess.DEVNULL).returncode; u = resource.getrusage(resource.RUSAGE_CHILDREN);"
        " print(rc, u.ru_utime + u.ru_stime)",
        *cmd,
    ]
    t0 = time.perf_counter()
    p = subprocess.run(wrapper, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    rc, cpu = p.stdout.split()
    if int(rc) not in (0, 1):
        raise SystemExit(f"benchmark command failed with exit {rc}: {' '.join(map(str, cmd))}")
    return wall, float(cpu)


def no_legacy_ab(out: Path, before: Path, repeat: int) -> None:
    """`--check` over a tree with no legacy names, BEFORE and this checkout in turns."""
    tree = out / "tree1x-no-legacy"
    info = build_tree(tree, 1, fixture_sets=0)
    print(
        f"Corpus: {info['files']} .py files, {info['lines']:,} lines, "
        f"{info['host_callback_files']} mention host_callback"
    )
    cmd = [sys.executable, "-m", "hcmigrate", "--check", "-q", "--no-cache", str(tree)]
    sides = {"before": before.resolve(), "after": REPO}
    runs: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
    for side, checkout in sides.items():  # (an untimed run each: bytecode written)
        timed_cpu(cmd, dict(os.environ, PYTHONPATH=str(checkout)))
    for _ in range(repeat):
        for side, checkout in sides.items():
            runs[side].append(timed_cpu(cmd, dict(os.environ, PYTHONPATH=str(checkout))))
    wall = {s: statistics.median(w for w, _ in r) for s, r in runs.items()}
    cpu = {s: statistics.median(c for _, c in r) for s, r in runs.items()}
    print(
        "| `hcmigrate --check` (all cores, no cache), seconds | before | after | after / before |"
    )
    print("|---|---|---|---|")
    print(
        f"| wall, median of {repeat} | {wall['before']:.2f} | {wall['after']:.2f} | "
        f"{wall['after'] / wall['before']:.2f} |"
    )
    print(
        f"| CPU (user + system), median of {repeat} | {cpu['before']:.2f} | {cpu['after']:.2f} | "
        f"{cpu['after'] / cpu['before']:.2f} |"
    )


def libcst_noop_sample(tree: Path, sample: int) -> tuple[float, int]:
    """Time libcst's runner with a no-op codemod on `sample` files; returns (seconds, files)."""
    files = sorted(tree.rglob("*.py"))
    step = max(1, len(files) // sample)
    chosen = files[::step][:sample]
    work = tree.parent / (tree.name + "-libcst-sample")
    if work.exists():
        shutil.rmtree(work)
    for i, f in enumerate(chosen):
        d = work / f"d{i // 100}"
        d.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, d / f"f{i}.py")
    noop = work.parent / "hcbench_noop.py"
    noop.write_text(
        textwrap.dedent("""
        from libcst.codemod import VisitorBasedCodemodCommand

        class NoopCommand(VisitorBasedCodemodCommand):
            DESCRIPTION = "does nothing"
    """)
    )
    env = dict(os.environ, PYTHONPATH=str(noop.parent))
    t0 = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "libcst.tool",
            "codemod",
            "-x",
            "hcbench_noop.NoopCommand",
            "--no-format",
            "--hide-progress",
            "-j",
            "1",
            str(work),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=work.parent,
    )
    return time.perf_counter() - t0, len(chosen)


# What a real module that uses the API looks like to the codemod: an installed module of a few
# hundred lines with a progress tap and a host call added at the end.
USER_CODE = """

import jax.experimental.host_callback as hcb


def _hcm_progress(x, step):
    hcb.id_tap(lambda a, transforms: print("step", a), step)
    return hcb.call(lambda v: v * 2, x, result_shape=x)
"""


def realistic_modules(count: int) -> list[str]:
    import random

    import libcst as cst

    site = Path(sysconfig.get_paths()["purelib"])
    paths = [
        p
        for p in sorted(site.rglob("*.py"))
        if 3_000 < p.stat().st_size < 60_000 and "site-packages" not in p.relative_to(site).parts
    ]
    random.Random(0).shuffle(paths)
    texts = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8") + USER_CODE
            cst.parse_module(text)
        except Exception:  # not UTF-8, or syntax libcst does not take: not a sample
            continue
        texts.append(text)
        if len(texts) == count:
            break
    return texts


def per_text(texts: list[str], repeat: int) -> list[tuple[float, float, float]]:
    """Median libcst parse+print, median migrate_source and median of libcst's idiomatic no-op
    codemod (parse, one CSTTransformer pass, print) of each text, timed in turns."""
    import libcst as cst

    from hcmigrate.api import migrate_source

    noop = type("NoOp", (cst.CSTTransformer,), {})

    def clock(work) -> float:
        # As timeit does: the garbage collector off while timing, and the garbage of the
        # previous measurement collected first (else it lands on whichever runs next).
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            work()
            return time.perf_counter() - t0
        finally:
            gc.enable()

    rows = []
    for text in texts:
        migrate_source(text)  # warm caches
        t_parse, t_mig, t_noop = [], [], []
        for _ in range(repeat):
            t_parse.append(clock(lambda: cst.parse_module(text).code))
            t_mig.append(clock(lambda: migrate_source(text)))
            t_noop.append(clock(lambda: cst.parse_module(text).visit(noop()).code))
        rows.append(
            (statistics.median(t_parse), statistics.median(t_mig), statistics.median(t_noop))
        )
    return rows


def _spin(_: int) -> int:
    total = 0
    for i in range(3_000_000):
        total += i * i
    return total


def parallel_ceiling(repeat: int) -> float:
    """Median speed-up two forked processes get over one on this machine for identical
    CPU-bound work: what `-j 2` can reach at best (shared virtual cores often give less than 2x)."""
    import multiprocessing

    ratios = []
    with multiprocessing.get_context("fork").Pool(2) as pool:
        pool.map(_spin, [0, 1], chunksize=1)
        for _ in range(repeat):
            t0 = time.perf_counter()
            _spin(0)
            _spin(1)
            serial = time.perf_counter() - t0
            t0 = time.perf_counter()
            pool.map(_spin, [0, 1], chunksize=1)
            ratios.append(serial / (time.perf_counter() - t0))
    return statistics.median(ratios)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", type=Path, default=Path("/tmp/hcbench"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--libcst-sample", type=int, default=300)
    ap.add_argument("--no-legacy", type=Path, metavar="BEFORE", default=None)
    args = ap.parse_args()
    repeat = 1 if args.quick else args.repeat
    if args.no_legacy is not None:
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = str(args.out / "pycache")
        no_legacy_ab(args.out, args.no_legacy, repeat)
        return
    hcm = [sys.executable, "-m", "hcmigrate"]
    # hcmigrate runs as an installed package does: from compiled bytecode. (An environment with
    # PYTHONDONTWRITEBYTECODE set, as the one this was developed in, would otherwise make every
    # run compile hcmigrate's modules again: ~40 ms of each run's start-up.)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(args.out / "pycache")
    report = []

    def out(line=""):
        print(line, flush=True)
        report.append(line)

    trees = {}
    for scale in (1, 4):
        tree = args.out / f"tree{scale}x"
        trees[scale] = (tree, build_tree(tree, scale, fixture_sets=1))
    info1 = trees[1][1]
    tree1 = trees[1][0]
    out(f"Machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    for scale, (tree, info) in trees.items():
        out(
            f"Corpus {scale}x: {info['files']} .py files, {info['lines']:,} lines, "
            f"{info['host_callback_files']} mention host_callback ({info['fixtures']} fixtures at {len(DEPTHS)} depths per set)"
        )
    out()
    grep_t, _ = timed(["grep", "-rlF", "host_callback", str(tree1)], repeat=repeat)
    # Cold runs (--no-cache): what a fresh CI clone costs. The warm row reuses a result cache
    # filled by one untimed run (a CI run that restored .hcmigrate_cache, a second local run).
    timed([*hcm, "--check", "-q", "--no-cache", str(tree1)], repeat=1)  # (writes the bytecode)
    check_t, check_rss = timed([*hcm, "--check", "-q", "--no-cache", str(tree1)], repeat=repeat)
    check1_t, _ = timed([*hcm, "--check", "-q", "--no-cache", "-j", "1", str(tree1)], repeat=repeat)
    cache = args.out / "result-cache"
    shutil.rmtree(cache, ignore_errors=True)
    warm = [*hcm, "--check", "-q", "--cache-dir", str(cache), str(tree1)]
    timed(warm, repeat=1)
    warm_t, _ = timed(warm, repeat=repeat)
    noop_t, noop_n = libcst_noop_sample(tree1, 50 if args.quick else args.libcst_sample)
    noop_tree = noop_t / noop_n * info1["files"]
    out("| whole tree (1x) | seconds | vs grep |")
    out("|---|---|---|")
    out(f"| `grep -rlF host_callback` (floor) | {grep_t:.2f} | 1.0x |")
    out(f"| `hcmigrate --check` (all cores, no cache) | {check_t:.2f} | {check_t / grep_t:.1f}x |")
    out(f"| `hcmigrate --check -j 1` (no cache) | {check1_t:.2f} | {check1_t / grep_t:.1f}x |")
    out(
        f"| `hcmigrate --check` (all cores), result cache warm: no candidate changed since the last run | {warm_t:.2f} | "
        f"{warm_t / grep_t:.1f}x |"
    )
    bare_t, _ = timed(
        [*hcm, "--check", "-q", "--no-cache", "--exclude", "hcb_users", str(tree1)], repeat=repeat
    )
    out(
        f"| `hcmigrate --check`, fixture copies excluded (no candidates: walk + pre-filter only) | {bare_t:.2f} | "
        f"{bare_t / grep_t:.1f}x |"
    )
    out(
        f"| libcst runner, no-op codemod, -j 1 (timed on {noop_n} files, scaled) | {noop_tree:.0f} | {noop_tree / grep_t:.0f}x |"
    )
    out()
    out(f"`hcmigrate --check` is {noop_tree / check_t:.0f}x faster than the naive libcst run.")
    out()
    # Migration-heavy part: fixtures only, a small and a large tree (start-up weighs less).
    fixtures = sorted(REPO.glob("fixtures/**/*.in.py"))
    # -j 1, -j 2 and the machine's own ceiling are timed in turns, so that each speed-up is
    # set against what the shared cores gave at that moment (they drift by tens of percent).
    # The part no worker can share: start-up, the codemod's import, the walk and the report,
    # timed as a run over a single fixture file. With it, what two perfect cores could give
    # at best (Amdahl): j1 / (serial + (j1 - serial) / 2).
    single = args.out / "single"
    shutil.rmtree(single, ignore_errors=True)
    single.mkdir(parents=True)
    shutil.copy(fixtures[0], single / fixtures[0].name.replace(".in.py", ".py"))
    serial_t = statistics.median(
        timed([*hcm, "--check", "-q", "--no-cache", "-j", "1", str(single)], repeat=1)[0]
        for _ in range(max(5, repeat))
    )
    rows = []
    for sets in (4, 16):
        heavy = args.out / f"heavy{sets}"
        if heavy.exists():
            shutil.rmtree(heavy)
        for k in range(sets):
            copy_fixtures(fixtures, heavy / f"set{k}")
        j1s, j2s, ceilings = [], [], []
        for _ in range(max(5, repeat)):
            j1s.append(
                timed([*hcm, "--check", "-q", "--no-cache", "-j", "1", str(heavy)], repeat=1)[0]
            )
            j2s.append(
                timed([*hcm, "--check", "-q", "--no-cache", "-j", "2", str(heavy)], repeat=1)[0]
            )
            ceilings.append(parallel_ceiling(1))
        speedups = [a / b for a, b in zip(j1s, j2s)]
        j1 = statistics.median(j1s)
        bound = j1 / (serial_t + (j1 - serial_t) / 2)
        rows.append(
            f"| {sets * len(fixtures)} fixture files | {j1:.2f} | {statistics.median(j2s):.2f} | "
            f"{statistics.median(speedups):.2f}x | {statistics.median(ceilings):.2f}x | "
            f"{min(speedups):.2f}x-{max(speedups):.2f}x | {bound:.2f}x |"
        )
    out(
        "| migration-heavy tree | `--check -j 1` s | `--check -j 2` s | speed-up (median of pairs) "
        "| machine ceiling in the same turns | speed-ups seen | best two perfect cores could give |"
    )
    out("|---|---|---|---|---|---|---|")
    for row in rows:
        out(row)
    out(
        f"Serial part (a `--check -j 1` run over one fixture file: start-up, the codemod's import, walk, report): "
        f"{serial_t:.2f} s."
    )
    out()
    samples = {
        f"{len(fixtures)} fixtures (every line a legacy use: the worst case)": [
            f.read_text() for f in fixtures
        ],
        "30 installed modules (median ~360 lines) with a tap and a host call added": realistic_modules(
            30
        ),
    }
    out(
        "| per file, median of runs | libcst parse+print | hcmigrate migrate_source | ratio (total) | ratio (per-file median) "
        "| libcst no-op codemod: parse, one transformer pass, print (ratio, total) |"
    )
    out("|---|---|---|---|---|---|")
    for label, texts in samples.items():
        rows = per_text(texts, repeat=3 if args.quick else 5)
        tot_p = sum(r[0] for r in rows)
        tot_m = sum(r[1] for r in rows)
        tot_n = sum(r[2] for r in rows)
        ratios = sorted(r[1] / r[0] for r in rows)
        out(
            f"| {label} | {1000 * tot_p / len(rows):.2f} ms | {1000 * tot_m / len(rows):.2f} ms | {tot_m / tot_p:.2f}x | "
            f"{statistics.median(ratios):.2f}x | {tot_n / tot_p:.2f}x |"
        )
    out()
    _, rss4 = timed([*hcm, "--check", "-q", "--no-cache", str(trees[4][0])], repeat=1)
    out(
        f"Peak memory (max RSS of any process) of `hcmigrate --check`: 1x tree {check_rss / 1024:.0f} MiB, "
        f"4x tree {rss4 / 1024:.0f} MiB"
    )
    (args.out / "report.md").write_text("\n".join(report) + "\n")


if __name__ == "__main__":
    main()
