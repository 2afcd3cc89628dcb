"""A verify run stopped by a signal (SIGTERM from a CI time limit) keeps what finished: the
report, `--json` and `--keep-traces` hold every test that finished on both sides, name the
ones that did not, and the exit status is 128 + the signal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from verify_helpers import REPO

STEPS = """\
import jax
from jax.experimental import host_callback as hcb

SEEN = []


def record(value, transforms):
    SEEN.append(float(value))


def doubled(x):
    return jax.jit(lambda v: hcb.id_tap(record, v * 2.0))(x)
"""

# Every test notes in $MARKS when it ran, and where from (the original or the migrated copy).
FAST = """\
import os

import jax
from mylib.steps import SEEN, doubled


def _mark(what):
    with open(os.environ["MARKS"], "a") as fh:
        fh.write(f"{what} {os.path.dirname(os.path.dirname(__file__))}\\n")


def test_one():
    assert float(doubled(1.0)) == 2.0
    jax.effects_barrier()
    _mark("one")


def test_two():
    assert float(doubled(2.0)) == 4.0
    jax.effects_barrier()
    _mark("two")
"""

SLOW = """\
import os
import time

from mylib.steps import doubled


def test_three():
    with open(os.environ["MARKS"], "a") as fh:
        fh.write(f"three {os.path.dirname(os.path.dirname(__file__))}\\n")
    doubled(3.0)
    time.sleep(300)


def test_four():
    doubled(4.0)
    time.sleep(300)
"""


def _package(root: Path) -> Path:
    for name, text in {
        "mylib/__init__.py": "",
        "mylib/steps.py": STEPS,
        "tests/test_fast.py": FAST,
        "tests/test_slow.py": SLOW,
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_sigterm_mid_suite_keeps_the_tests_that_finished(tmp_path):
    pkg = _package(tmp_path / "pkg")
    marks = tmp_path / "marks"
    marks.touch()
    report, traces = tmp_path / "report.json", tmp_path / "traces"
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "hcmigrate", "verify", str(pkg), "--pytest", "tests"),
            *("--json", str(report), "--keep-traces", str(traces), "--timeout", "600"),
        ],
        cwd=REPO,
        env={**os.environ, "MARKS": str(marks)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # the reference is in test_three, the candidate has run test_one and test_two (it
        # follows the reference: it waits for test_three to finish there)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            lines = marks.read_text().split("\n")
            if f"three {pkg}" in lines and any(
                line.startswith("two ") and not line.endswith(str(pkg)) for line in lines
            ):
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"the suite did not get to test_three:\n{marks.read_text()}")
        time.sleep(5)  # (test_two's teardown on the candidate, written to its stream)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, out + err
    assert "INTERRUPTED by SIGTERM" in out, out + err
    data = json.loads(report.read_text())
    assert data["verdict"] == "interrupted" and data["exit_code"] == 143
    assert data["interrupted"]["signal"] == "SIGTERM"
    assert data["interrupted"]["unfinished"] == [
        "tests/test_slow.py::test_three",
        "tests/test_slow.py::test_four",
    ]
    tests = {t["nodeid"]: t for t in data["tests"]}
    assert set(tests) == {"tests/test_fast.py::test_one", "tests/test_fast.py::test_two"}
    assert all(t["verdict"] == "equivalent" and t["reference_events"] == 1 for t in tests.values())
    for side in ("reference", "candidate"):
        kept = json.loads((traces / f"{side}.json").read_text())
        assert sorted(t["nodeid"] for t in kept["tests"]) == sorted(tests)
