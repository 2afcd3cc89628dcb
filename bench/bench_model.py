#!/usr/bin/env python3
"""Cost of large modules and of the project model on a whole tree (issue 38), against the
parser's and grep's floors. Not a test: numbers go to docs/performance.md.

Large modules: a generated module of one jitted function holding every statement, at 100 KiB,
1 MiB and 4 MiB, in two shapes: `dense` (every statement a tap, `x = hcb.id_tap(_log, x + k)`)
and `sparse` (one tap in twenty statements, the others plain jnp arithmetic). Each
measurement is its own process (peak RSS is the process's): libcst's own parse (CPU seconds,
peak RSS), its print of that tree, and `hcmigrate.migrate_source` (CPU seconds, peak RSS).
Medians of --repeat runs.

Whole tree: a copy of a site-packages folder (default: the legacy reference environment's,
jax 0.4.30 whose own files name host_callback in strings and comments, else this Python's)
plus a planted package of modules that bind the legacy API, import each other and jit or pmap
each other's functions (star chains included). Timed, wall seconds (medians): `grep -rlF
host_callback`; libcst's parse and print of every file the pre-filter selects (one process);
`hcmigrate --check -q --no-cache` with -j 1 and with every core. The same tree without the
planted package (no legacy binding anywhere) against grep.

    python bench/bench_model.py --out /tmp/hcb38                 # everything
    python bench/bench_model.py --out /tmp/hcb38 --only modules --sizes 102400 1048576
    python bench/bench_model.py --out /tmp/hcb38 --only tree --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LEGACY = "jax.experimental.host_callback"

_HEAD = (
    "import jax\nimport jax.numpy as jnp\nfrom jax.experimental import host_callback as hcb\n\n\n"
    'def _log(value, transforms):\n    print("log", value)\n\n\n@jax.jit\ndef run(x):\n'
)


def large_module(size: int, shape: str) -> str:
    """A module of about `size` bytes: one jitted function holding every statement."""
    parts, n, k = [_HEAD], len(_HEAD), 0
    while n < size:
        if shape == "dense" or k % 20 == 0:
            line = f"    x = hcb.id_tap(_log, x + {k})\n"
        else:
            line = f"    x = jnp.sin(x) * {k} + 1.0\n"
        parts.append(line)
        n += len(line)
        k += 1
    parts.append("    return x\n")
    return "".join(parts)


# One measurement in a fresh process: prints a JSON object.
_MEASURE = r"""
import json, resource, sys, time
path, what = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
text = open(path, encoding="utf-8").read()
import libcst
if what == "hcmigrate":
    from hcmigrate import migrate_source
    from hcmigrate.api import Options
    migrate_source("import jax\n", Options())  # (imports and first-use caches)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = {"base_rss_kib": base}
t = time.process_time()
if what == "libcst":
    module = libcst.parse_module(text)
    out["parse_s"] = time.process_time() - t
    out["parse_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.process_time()
    code = module.code
    out["print_s"] = time.process_time() - t
    assert code == text
else:
    result = migrate_source(text, Options())
    out["migrate_s"] = time.process_time() - t
    out["sites"] = len(result.diagnostics)
out["rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(out))
"""


def measure(path: Path, what: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path), what, str(REPO)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_modules(out: Path, sizes: list[int], shapes: list[str], repeat: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    print(
        "| module | shape | taps | libcst parse s | + print s | hcmigrate s | time / (parse + print) "
        "| libcst parse peak MiB | hcmigrate peak MiB | peak / parse peak |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for size in sizes:
        for shape in shapes:
            text = large_module(size, shape)
            path = out / f"large_{shape}_{size}.py"
            path.write_text(text)
            runs: dict[str, list[dict]] = {"libcst": [], "hcmigrate": []}
            for _ in range(repeat):  # (in turns: a shared machine's minutes affect both alike)
                for what in runs:
                    runs[what].append(measure(path, what))

            def med(what, key):
                return statistics.median(r[key] for r in runs[what])

            parse, printing, ours = (
                med("libcst", "parse_s"),
                med("libcst", "print_s"),
                med("hcmigrate", "migrate_s"),
            )
            parse_peak = med("libcst", "parse_rss_kib") / 1024
            our_peak = med("hcmigrate", "rss_kib") / 1024
            print(
                f"| {size // 1024:,} KiB | {shape} | {text.count('hcb.id_tap'):,} | {parse:.2f} | "
                f"{printing:.2f} | {ours:.2f} | {ours / (parse + printing):.2f} | "
                f"{parse_peak:.0f} | {our_peak:.0f} | {our_peak / parse_peak:.2f} |",
                flush=True,
            )


# ---------------------------------------------------------------------------- whole tree
def _planted() -> dict[str, str]:
    """A package whose modules bind the legacy API and run each other's functions."""
    files = {
        "planted/__init__.py": "",
        "planted/taps.py": f"from {LEGACY.rsplit('.', 1)[0]} import host_callback as hcb\n\n\n"
        "def _log(x, transforms):\n    print(x)\n\n\ndef step(x):\n"
        "    return hcb.id_tap(_log, x) * 2\n",
        "planted/utils.py": f"from {LEGACY} import id_print\n\n\ndef show(x):\n"
        "    return id_print(x)\n",
        "planted/m0.py": f"from {LEGACY} import *\n",
        "planted/m1.py": "from planted.m0 import *\n",
        "planted/m2.py": "from .m1 import *\n\n\ndef tapped(x):\n    return id_tap(print, x)\n",
    }
    for k in range(20):
        files[f"planted/prog{k}.py"] = (
            "import jax\nimport jax.numpy as jnp\n\nfrom planted.taps import step\n"
            "from planted.utils import show\nfrom planted import m2\n\n\n"
            f"def run{k}(x):\n    return show(m2.tapped(step(x)))\n\n\n"
            f"jax.{'pmap' if k % 2 else 'jit'}(run{k})(jnp.ones((1, 3)))\n"
        )
    return files


def build_trees(out: Path, site: Path) -> tuple[Path, Path]:
    plain, planted = out / "tree-plain", out / "tree-planted"
    for tree in (plain, planted):
        if tree.exists():
            shutil.rmtree(tree)
        for src in site.rglob("*.py"):
            rel = src.relative_to(site)
            if "__pycache__" in rel.parts:
                continue
            target = tree / "copy0" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                shutil.copyfile(src, target)
            except OSError:
                continue
    for rel, text in _planted().items():
        (planted / rel).parent.mkdir(parents=True, exist_ok=True)
        (planted / rel).write_text(text)
    return plain, planted


_TIMED = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); rc = subprocess.run("
    "sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode; "
    "w = time.perf_counter() - t; u = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print(rc, w, u.ru_utime + u.ru_stime)"
)


def timed(cmd: list[str], repeat: int, env=None) -> tuple[float, float]:
    """Medians of (wall seconds, CPU seconds of the command and every process it waited for)."""
    walls, cpus = [], []
    for _ in range(repeat):
        proc = subprocess.run(
            [sys.executable, "-c", _TIMED, *cmd], capture_output=True, text=True, env=env
        )
        rc, w, cpu = proc.stdout.split()
        if int(rc) not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} failed with exit {rc}")
        walls.append(float(w))
        cpus.append(float(cpu))
    return statistics.median(walls), statistics.median(cpus)


_PARSE_PRINT = r"""
import sys, libcst
for path in sys.argv[1:]:
    try:
        text = open(path, encoding="utf-8").read()
        libcst.parse_module(text).code
    except Exception:
        pass
"""


def candidates_of(tree: Path) -> list[str]:
    sys.path.insert(0, str(REPO))
    from hcmigrate.discover import Selector
    from hcmigrate.prefilter import scan

    targets = [t.display for t in Selector(Path.cwd()).select([str(tree)]).targets]
    scanned = scan(targets)
    return [targets[i] for i in sorted(scanned.candidates)], len(targets), len(scanned.legacy)


def bench_tree(out: Path, site: Path, repeat: int) -> None:
    plain, planted = build_trees(out, site)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    hcm = [sys.executable, "-m", "hcmigrate", "--check", "-q", "--no-cache"]
    print(
        f"Trees: a copy of {site} ({len(list(plain.rglob('*.py'))):,} .py files); the same "
        f"with {len(_planted())} planted modules. Medians of {repeat}: wall seconds, and CPU "
        "seconds (user + system, the workers included) in brackets.\n"
    )
    print(
        "| tree | files | candidates | with a binding | grep | floor: grep + libcst parse/print "
        "of the candidates | --check -j1 | / floor | --check (all cores) | / floor | / grep |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, tree in (("planted", planted), ("no binding", plain)):
        found, files, bound = candidates_of(tree)
        timed(hcm + ["-j1", str(tree)], 1, env)  # (bytecode, page cache)
        grep = timed(["grep", "-rlF", "host_callback", str(tree)], repeat)
        parse = timed([sys.executable, "-c", _PARSE_PRINT, *found], repeat)
        serial = timed(hcm + ["-j1", str(tree)], repeat, env)
        every = timed(hcm + [str(tree)], repeat, env)
        floor = (grep[0] + parse[0], grep[1] + parse[1])

        def both(pair):
            return f"{pair[0]:.2f} ({pair[1]:.2f})"

        def ratio(a, b):
            return f"{a[0] / b[0]:.2f} ({a[1] / max(b[1], 1e-3):.2f})"

        print(
            f"| {name} | {files:,} | {len(found)} | {bound} | {both(grep)} | {both(floor)} | "
            f"{both(serial)} | {ratio(serial, floor)} | {both(every)} | {ratio(every, floor)} | "
            f"{ratio(every, grep)} |",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", choices=["modules", "tree"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100 * 1024, 1 << 20, 4 << 20])
    parser.add_argument("--shapes", nargs="+", default=["sparse", "dense"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--site", type=Path, help="the site-packages folder to copy")
    args = parser.parse_args(argv)
    if args.only != "tree":
        bench_modules(args.out / "modules", args.sizes, args.shapes, args.repeat)
        print()
    if args.only != "modules":
        site = args.site
        if site is None:
            sys.path.insert(0, str(REPO))
            from hcmigrate.legacy_env import legacy_python

            python = legacy_python()
            site = Path(
                subprocess.run(
                    [
                        str(python),
                        "-c",
                        "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                    ],
                    capture_output=True,
                    text=True,
                ).stdout.strip()
                or sysconfig.get_paths()["purelib"]
            )
        bench_tree(args.out, site, args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
