#!/usr/bin/env python3
"""Record the compat scenarios' traces under REAL legacy JAX (jax==jaxlib==0.4.30).

Runs every ``fixtures/compat_runtime/scenarios/*.py`` with the legacy interpreter (see
``hcmigrate.legacy_env``), on each number of CPU devices the scenario names, and writes
``fixtures/compat_runtime/traces/NAME.json`` (one device) or ``NAME.Ndev.json`` (N devices). The tests
run the same programs on current and oldest supported JAX with ``python -m compat`` and
require identical traces.

    python scripts/record_compat_traces.py [NAME ...] [--python /path/to/legacy/python]
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "fixtures" / "compat_runtime"))

import runner  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="scenarios to record (default: all)")
    ap.add_argument("--python", help="legacy interpreter (default: hcmigrate.legacy_env)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    if args.python:
        python = args.python
    else:
        sys.path.insert(0, str(REPO))
        from hcmigrate.legacy_env import legacy_python

        python = str(legacy_python(progress=lambda m: print(m, file=sys.stderr)))
    names = set(args.names or runner.scenario_names())
    unknown = names - set(runner.scenario_names())
    if unknown:
        ap.error(f"no such scenario: {', '.join(sorted(unknown))}")
    cases = [case for case in runner.cases() if case[0] in names]
    runner.TRACES.mkdir(parents=True, exist_ok=True)

    def record(case):
        name, devices = case
        return case, runner.run_scenario(python, name, devices, use_compat=False)

    failed = 0
    with ThreadPoolExecutor(args.jobs) as pool:
        for (name, devices), trace in pool.map(record, cases):
            label = runner.case_id(name, devices)
            if trace["returncode"] != 0 or trace["events"] is None:
                failed += 1
                print(
                    f"FAILED {label}: rc={trace['returncode']}\n{trace['stderr_tail']}",
                    file=sys.stderr,
                )
                continue
            out = runner.trace_path(name, devices)
            data = runner.comparable(trace)
            data["recorded_with"] = "jax==jaxlib==0.4.30 (legacy host_callback)"
            out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
            print(
                f"recorded {label}: {len(trace['events'])} events, "
                f"{len(trace['stdout'])} stdout lines"
            )
    if not args.names:  # a full recording: drop the traces of runs that no longer exist
        wanted = {runner.trace_path(*case) for case in runner.cases()}
        for stale in set(runner.TRACES.glob("*.json")) - wanted:
            stale.unlink()
            print(f"removed {stale.name} (no such scenario run)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
