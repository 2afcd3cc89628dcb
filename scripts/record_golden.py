#!/usr/bin/env python3
"""Record golden traces: run every runnable codemod fixture on REAL legacy JAX (0.4.30).

A fixture `fixtures/NAME.in.py` is runnable when its first line is
`# hcmigrate-fixture: runnable`. Each one runs under the legacy reference interpreter
(hcmigrate.legacy_env, created on first use) with the verify recorder
(hcmigrate/verify/_runner.py), and its trace is written to `fixtures/golden/NAME.json`.
tests/test_golden.py compares `NAME.out.py` on current JAX against it.

    python scripts/record_golden.py            # all runnable fixtures
    python scripts/record_golden.py t1_progress_bar c9_custom_jvp
    python scripts/record_golden.py --check    # exit 1 if a golden file is missing or stale

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

from hcmigrate.verify.core import clean  # noqa: E402
from hcmigrate.verify.execute import Side, run_sides, scratch_folder  # noqa: E402
from hcmigrate.verify.golden import runnable_fixtures as find_runnable  # noqa: E402

FIXTURES = REPO / "fixtures"
GOLDEN = REPO / "fixtures" / "golden"


def runnable_fixtures() -> list[Path]:
    return find_runnable(FIXTURES)


def fixture_name(path: Path) -> str:
    return path.name[: -len(".in.py")]


def portable(trace: dict) -> dict:
    """Make a trace independent of this checkout's location and the interpreter path."""
    text = json.dumps(clean(trace))
    text = text.replace(str(REPO) + "/", "")
    data = json.loads(text)
    data["python"] = "legacy reference (hcmigrate.legacy_env)"
    data["seconds"] = None
    return data


def record(paths: list[Path], jobs: int = 2, timeout: float = 300.0) -> dict[str, str | None]:
    from hcmigrate.legacy_env import legacy_python

    python = str(legacy_python())
    GOLDEN.mkdir(parents=True, exist_ok=True)

    def one(path: Path) -> tuple[str, str | None]:
        name = fixture_name(path)
        side = Side("reference", python, path, align_modern_defaults=True)
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
        data["fixture"] = f"fixtures/{path.name}"
        data["recorded_by"] = "scripts/record_golden.py"
        (GOLDEN / f"{name}.json").write_text(
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
    ns = parser.parse_args(argv)
    paths = runnable_fixtures()
    if ns.names:
        wanted = set(ns.names)
        paths = [p for p in paths if fixture_name(p) in wanted]
        unknown = wanted - {fixture_name(p) for p in paths}
        if unknown:
            print(f"not runnable fixtures: {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
    if ns.check:
        missing = [
            fixture_name(p) for p in paths if not (GOLDEN / f"{fixture_name(p)}.json").exists()
        ]
        for name in missing:
            print(f"missing golden trace: fixtures/golden/{name}.json")
        return 1 if missing else 0
    results = record(paths, jobs=ns.jobs)
    failed = {k: v for k, v in results.items() if v}
    for name in sorted(results):
        print(
            f"{'FAILED' if name in failed else 'recorded'} fixtures/golden/{name}.json"
            + (f": {failed[name]}" if name in failed else "")
        )
    print(f"{len(results) - len(failed)} recorded, {len(failed)} failed on legacy JAX")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
