#!/usr/bin/env python3
"""Record golden traces: run every runnable codemod fixture on REAL legacy JAX (0.4.30).

A fixture `fixtures/NAME.in.py` is runnable when its first line is
`# hcmigrate-fixture: runnable`. Each one runs under the legacy reference interpreter
(hcmigrate.legacy_env, created on first use) with the verify recorder
(hcmigrate/verify/_runner.py), and its trace is written to `fixtures/golden/NAME.json`.
tests/test_golden.py compares `NAME.out.py` on current JAX against it.

`--folder F` records the programs of another fixture folder into `F/golden/NAME.json`
(fixtures/realworld and fixtures/fidelity, read by scripts/check_fidelity.py): its runnable
`NAME.in.py` files and its multi-module programs, folders `NAME/` whose `main.py` starts
with the same marker.

    python scripts/record_golden.py            # all runnable fixtures
    python scripts/record_golden.py t1_progress_bar c9_custom_jvp
    python scripts/record_golden.py --check    # exit 1 if a golden file is missing or stale
    python scripts/record_golden.py --folder fixtures/realworld

Goldens are never edited by hand. Exit status: 0 all recorded, 1 some fixture failed on
legacy JAX (named, with the reason; the others are still recorded).
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from hcmigrate.verify.execute import run_sides  # noqa: E402
from hcmigrate.verify.launch import Side  # noqa: E402
from hcmigrate.verify.traces import clean  # noqa: E402
from hcmigrate.verify.workspace import scratch_folder  # noqa: E402
from hcmigrate.verify.golden import MARKER  # noqa: E402
from hcmigrate.verify.golden import runnable_fixtures as find_runnable  # noqa: E402

FIXTURES = REPO / "fixtures"
GOLDEN = REPO / "fixtures" / "golden"
PROGRAM_MAIN = "main.py"  # entry script of a multi-module program folder

# Programs whose legacy behaviour the recorder cannot capture yet (name -> why). The recorder
# now starts programs as python does (nothing imported before the program's own code), so a
# program setting JAX_ENABLE_X64 in os.environ before its `import jax` is recorded as it runs.
WAITING_FOR_RECORDER: dict[str, str] = {}


def runnable_fixtures() -> list[Path]:
    return find_runnable(FIXTURES)


def runnable_programs(folder: Path) -> list[Path]:
    """The runnable `NAME.in.py` files of `folder` and the `NAME/main.py` of its program
    folders, sorted by name."""
    found = list(find_runnable(folder))
    for main in sorted(folder.glob(f"*/{PROGRAM_MAIN}")):
        with main.open(encoding="utf-8") as fh:
            if fh.readline().strip() == MARKER:
                found.append(main)
    return sorted(found, key=fixture_name)


def fixture_name(path: Path) -> str:
    if path.name == PROGRAM_MAIN:
        return path.parent.name
    return path.name[: -len(".in.py")]


def portable(trace: dict) -> dict:
    """Make a trace independent of this checkout's location and the interpreter path."""
    text = json.dumps(clean(trace))
    text = text.replace(str(REPO) + "/", "")
    data = json.loads(text)
    data["python"] = "legacy reference (hcmigrate.legacy_env)"
    data["seconds"] = None
    return data


def record(
    paths: list[Path], jobs: int = 2, timeout: float = 300.0, golden: Path = GOLDEN
) -> dict[str, str | None]:
    from hcmigrate.legacy_env import legacy_python

    python = str(legacy_python())
    golden.mkdir(parents=True, exist_ok=True)

    def one(path: Path) -> tuple[str, str | None]:
        name = fixture_name(path)
        side = Side("reference", python, path)
        with scratch_folder() as workdir:
            [result] = run_sides(
                [side], script_args=[], entries=[], timeout=timeout, workdir=workdir
            )
        if result.trace is None:
            return name, result.why_no_trace()
        if result.trace.get("exit_status") != 0:
            tail = "\n".join(result.stderr.strip().splitlines()[-3:])
            return (
                name,
                f"exit status {result.trace['exit_status']}: {result.trace.get('error')}\n{tail}",
            )
        data = portable(result.trace)
        data["fixture"] = path.relative_to(REPO).as_posix()
        data["recorded_by"] = "scripts/record_golden.py"
        (golden / f"{name}.json").write_text(
            json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
        return name, None

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return dict(pool.map(one, paths))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="fixture names (default: every runnable fixture)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--check", action="store_true", help="only report missing golden files")
    parser.add_argument(
        "--folder",
        type=Path,
        default=FIXTURES,
        help="fixture folder whose programs to record into FOLDER/golden (default: fixtures)",
    )
    ns = parser.parse_args(argv)
    folder = ns.folder.resolve()
    golden = folder / "golden"
    paths = runnable_programs(folder)
    waiting = {fixture_name(p) for p in paths} & WAITING_FOR_RECORDER.keys()
    for name in sorted(waiting):
        print(
            f"not recorded: {name} ({WAITING_FOR_RECORDER[name]}; the recorder imports jax first)"
        )
    paths = [p for p in paths if fixture_name(p) not in waiting]
    if ns.names:
        wanted = set(ns.names)
        paths = [p for p in paths if fixture_name(p) in wanted]
        unknown = wanted - {fixture_name(p) for p in paths}
        if unknown:
            print(f"not runnable fixtures: {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
    where = golden.relative_to(REPO).as_posix()
    if ns.check:
        missing = [fixture_name(p) for p in paths if not _recorded(golden, p)]
        for name in missing:
            print(f"missing golden trace: {where}/{name}.json")
        return 1 if missing else 0
    results = record(paths, jobs=ns.jobs, golden=golden)
    failed = {k: v for k, v in results.items() if v}
    for name in sorted(results):
        print(
            f"{'FAILED' if name in failed else 'recorded'} {where}/{name}.json"
            + (f": {failed[name]}" if name in failed else "")
        )
    print(f"{len(results) - len(failed)} recorded, {len(failed)} failed on legacy JAX")
    return 1 if failed else 0


def _recorded(golden: Path, path: Path) -> bool:
    """A golden trace of this program written by this script exists."""
    trace = golden / f"{fixture_name(path)}.json"
    if not trace.exists():
        return False
    data = json.loads(trace.read_text(encoding="utf-8"))
    return data.get("recorded_by") == "scripts/record_golden.py" and data.get("fixture") in (
        path.relative_to(REPO).as_posix(),
        f"fixtures/{path.name}",
    )


if __name__ == "__main__":
    sys.exit(main())
