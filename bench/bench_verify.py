#!/usr/bin/env python3
"""`hcmigrate verify --pytest` on a ~100-test package, against running its suite on each side.

    python bench/bench_verify.py [--repeats 3] [--package fixtures/verify/suite_pkg]

The baseline is what a maintainer does by hand: the original suite on the legacy reference
(jax 0.4.30, the cached venv) plus the migrated suite on current JAX, one after the other, each
a plain `python -m pytest -q -p no:cacheprovider tests` in its folder. It is timed against
`hcmigrate verify PKG --pytest tests --reference legacy` (which records the reference, then
runs on the candidate only the tests that made host calls) serially and with `-- -n 2`
(pytest-xdist on both sides): "cold" runs the reference (`--fresh-reference`), "warm" reuses
the reference trace an earlier run recorded for the same sources (what a CI job re-running on
an unchanged legacy base does). Targets (docs/verify.md): verify <= 1.5x the baseline, and
<= 0.8x with -n 2. Rounds run in turns, median of `--repeats`.

Every command runs from compiled bytecode, as on a maintainer's machine: bytecode (and
pytest's rewritten modules) is cached under one PYTHONPYCACHEPREFIX in the bench's scratch
folder, warmed by a first untimed run of each command, instead of PYTHONDONTWRITEBYTECODE (set
in the environment this was developed in), which made every pytest process rewrite its plugins
(hypothesis: ~1 s each) again.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


CPU: list[float] = []  # CPU seconds of the last timed command and all it started


def timed(cmd: list[str], cwd: Path, env: dict) -> float:
    """Wall seconds of `cmd`; its CPU seconds (user + system, children included) go to CPU.
    On a machine other work shares, CPU time is the steadier of the two for serial runs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    run = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU[:] = [after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime]
    if run.returncode not in (0,):
        raise SystemExit(
            f"{' '.join(cmd)} exited {run.returncode}:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
        )
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--package", type=Path, default=REPO / "fixtures" / "verify" / "suite_pkg")
    ns = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from hcmigrate.api import migrate_source
    from hcmigrate.legacy_env import legacy_python

    legacy = str(legacy_python())
    work = Path(tempfile.mkdtemp(prefix="bench-verify-"))
    original = work / "original"
    migrated = work / "migrated"
    shutil.copytree(ns.package, original)
    shutil.copytree(ns.package, migrated)
    for f in migrated.rglob("*.py"):
        f.write_text(migrate_source(f.read_text()).code)
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPYCACHEPREFIX": str(work / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    plain = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
    verify = [
        sys.executable,
        "-m",
        "hcmigrate",
        "verify",
        str(original),
        "--pytest",
        "tests",
        "--reference",
        "legacy",
        "-q",
    ]
    n_tests = subprocess.run(
        [legacy, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=original,
        env=env,
        capture_output=True,
        text=True,
    ).stdout.count("::")
    n2 = ["--", "-n", "2"]
    # untimed: bytecode for every command; the reference traces the warm runs reuse
    timed([legacy, *plain], original, env)
    timed([sys.executable, *plain], migrated, env)
    timed(verify, REPO, env)
    timed([*verify, *n2], REPO, env)
    runs = {
        "verify cold": [*verify, "--fresh-reference"],
        "verify -n 2 cold": [*verify, "--fresh-reference", *n2],
        "verify warm": verify,
        "verify -n 2 warm": [*verify, *n2],
    }
    rounds: dict[str, list[float]] = {"baseline": [], **{name: [] for name in runs}}
    cpu: dict[str, list[float]] = {name: [] for name in rounds}
    for _ in range(ns.repeats):
        ref = timed([legacy, *plain], original, env)
        ref_cpu = CPU[0]
        cand = timed([sys.executable, *plain], migrated, env)
        rounds["baseline"].append(ref + cand)
        cpu["baseline"].append(ref_cpu + CPU[0])
        for name, cmd in runs.items():
            rounds[name].append(timed(cmd, REPO, env))
            cpu[name].append(CPU[0])
    shutil.rmtree(work, ignore_errors=True)
    base = statistics.median(rounds["baseline"])
    base_cpu = statistics.median(cpu["baseline"])
    print(
        f"package: {ns.package.relative_to(REPO)} ({n_tests} tests), {os.cpu_count()} CPU cores, "
        f"load average {os.getloadavg()[0]:.1f}, median of {ns.repeats}"
    )
    print(f"{'run':<18}{'wall s':>8}{'x base':>8}{'CPU s':>8}{'x base':>8}   wall rounds")
    for name, values in rounds.items():
        median, median_cpu = statistics.median(values), statistics.median(cpu[name])
        shown = " ".join(f"{v:.1f}" for v in values)
        print(
            f"{name:<18}{median:>8.1f}{median / base:>8.2f}{median_cpu:>8.1f}"
            f"{median_cpu / base_cpu:>8.2f}   {shown}"
        )


if __name__ == "__main__":
    main()
