#!/usr/bin/env python3
"""Record the compat scenarios' traces under REAL legacy JAX (jax==jaxlib==0.4.30).

Runs every ``fixtures/compat/scenarios/*.py`` with the legacy interpreter (see
``hcmigrate.legacy_env``) and writes ``fixtures/compat/traces/NAME.json``. The tests run the
same programs on current JAX with ``python -m compat`` and require identical traces.

    python scripts/record_compat_traces.py [NAME ...] [--python /path/to/legacy/python]
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "fixtures" / "compat"))

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
    names = args.names or runner.scenario_names()
    runner.TRACES.mkdir(parents=True, exist_ok=True)

    def record(name):
        trace = runner.run_scenario(python, name, use_compat=False)
        return name, trace

    failed = 0
    with ThreadPoolExecutor(args.jobs) as pool:
        for name, trace in pool.map(record, names):
            if trace["returncode"] != 0 or trace["events"] is None:
                failed += 1
                print(
                    f"FAILED {name}: rc={trace['returncode']}\n{trace['stderr_tail']}",
                    file=sys.stderr,
                )
                continue
            out = runner.TRACES / f"{name}.json"
            data = runner.comparable(trace)
            data["recorded_with"] = "jax==jaxlib==0.4.30 (legacy host_callback)"
            out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
            print(
                f"recorded {name}: {len(trace['events'])} events, {len(trace['stdout'])} stdout lines"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
