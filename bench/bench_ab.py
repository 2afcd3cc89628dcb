#!/usr/bin/env python3
"""A/B of two checkouts of hcmigrate, in turns in one run (numbers go to docs/performance.md).

    git worktree add /tmp/hc-before <commit>
    python bench/bench_ab.py /tmp/hc-before . --tree /tmp/abtree

Measured for each checkout, turn about:
  * CPU time of `migrate_source` over the fixture and corpus programs (fixtures/*.in.py,
    fixtures/realworld/*.in.py, fixtures/fidelity/*.in.py; every one changes), median of
    --passes passes, with and without layout where the checkout has the option;
  * with --tree: user CPU of `hcmigrate --check --no-cache -j 1 -q TREE` and of a rewrite of a
    copy of TREE (a tree the caller builds: e.g. site-packages' jax and numpy plus copies of
    the fixtures).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_PER_FILE = r"""
import gc, glob, json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from hcmigrate import migrate_source
from hcmigrate.api import Options
lay = sys.argv[2] == "1"
if "lay_out" in Options.__dataclass_fields__:
    options = Options(lay_out=lay)
elif lay:
    options = Options()
else:
    print(json.dumps(None)); sys.exit()
root = sys.argv[3]
files = sorted(glob.glob(root + "/fixtures/*.in.py") + glob.glob(root + "/fixtures/realworld/*.in.py")
               + glob.glob(root + "/fixtures/fidelity/*.in.py"))
texts = [open(f).read() for f in files]
for t in texts:
    migrate_source(t, options)
times = []
for _ in range(int(sys.argv[4])):
    gc.collect(); start = time.process_time()
    for t in texts:
        migrate_source(t, options)
    times.append(time.process_time() - start)
print(json.dumps([len(texts), statistics.median(times)]))
"""


def per_file(checkout: Path, lay_out: bool, passes: int) -> list | None:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            _PER_FILE,
            str(checkout),
            "1" if lay_out else "0",
            str(REPO),
            str(passes),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def cli_user_cpu(checkout: Path, args: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    subprocess.run(
        [sys.executable, "-m", "hcmigrate", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--tree", type=Path)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args()
    rows: dict[str, dict[str, list]] = {}
    for _ in range(args.turns):
        for name, checkout in (("before", args.before.resolve()), ("after", args.after.resolve())):
            for lay in (False, True):
                result = per_file(checkout, lay, args.passes)
                if result is not None:
                    key = f"migrate_source, {result[0]} programs, layout={'on' if lay else 'off'}"
                    rows.setdefault(key, {}).setdefault(name, []).append(result[1])
            if args.tree:
                check = cli_user_cpu(
                    checkout, ["--check", "--no-cache", "-j", "1", "-q", str(args.tree)]
                )
                rows.setdefault("whole tree --check, user CPU", {}).setdefault(name, []).append(
                    check
                )
                with tempfile.TemporaryDirectory() as scratch:
                    copy = Path(scratch) / "tree"
                    shutil.copytree(args.tree, copy)
                    fix = cli_user_cpu(checkout, ["--no-cache", "-j", "1", "-q", str(copy)])
                rows.setdefault("whole tree rewrite, user CPU", {}).setdefault(name, []).append(fix)
    print("| seconds (median of turns) | before | after | after / before |")
    print("|---|---|---|---|")
    for key, by in rows.items():
        before = sorted(by.get("before", []))
        after = sorted(by.get("after", []))
        b = before[len(before) // 2] if before else None
        a = after[len(after) // 2] if after else None
        ratio = f"{a / b:.2f}" if a and b else "-"
        print(
            f"| {key} | {b if b is None else f'{b:.3f}'} | {a if a is None else f'{a:.3f}'} | {ratio} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
