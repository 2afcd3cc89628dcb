"""`hcmigrate verify PACKAGE --pytest TESTS`: each test's outcome and its own host calls are compared
between the original on real legacy JAX (0.4.30) and the migrated package on current JAX."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from hcmigrate.verify.compare import compare_pytest_traces

from verify_helpers import hcmigrate_verify

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "fixtures" / "verify" / "pytest_pkg"
BAD = REPO / "fixtures" / "verify" / "pytest_pkg_bad"
T_CALL = "tests/test_dynamics.py::test_damping_comes_back_from_the_host"
T_LOG = "tests/test_dynamics.py::test_energy_is_logged_every_step"
T_LOSS = "tests/test_dynamics.py::test_simulation_loses_energy"


def _written_files(folder: Path) -> list[Path]:
    return [
        p
        for p in folder.rglob("*")
        if p.name in ("__pycache__", ".pytest_cache") or p.suffix == ".pyc"
    ]


def test_package_tests_verify_against_real_legacy_jax(legacy_python, tmp_path):
    report = tmp_path / "report.json"
    res = hcmigrate_verify(
        PKG, "--pytest", "tests", "--reference", "legacy", "--json", report, "--json-events"
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "reference: legacy jax 0.4.30" in res.stdout
    assert re.search(
        r"EQUIVALENT: 3 test\(s\) \(3 passed\): same outcomes, [1-9]\d* host call\(s\) match",
        res.stdout,
    )
    data = json.loads(report.read_text())
    assert data["verdict"] == "equivalent" and data["mode"] == "pytest"
    tests = {t["nodeid"]: t for t in data["tests"]}
    assert set(tests) == {T_CALL, T_LOG, T_LOSS}
    assert all(
        t["reference_outcome"] == t["candidate_outcome"] == "passed" and t["equivalent"]
        for t in tests.values()
    )
    assert tests[T_CALL]["reference_events"] == 1 and tests[T_LOG]["reference_events"] == 8
    ref, cand = data["traces"]["reference"], data["traces"]["candidate"]
    assert ref["jax"] == "0.4.30" and cand["jax"] != "0.4.30"
    # the test's own callback trace: the value coming back through `call` is recorded
    (ev,) = [e for e in ref["events"] if e["entry"] == T_CALL]
    assert (
        ev["api"] == "call"
        and ev["class"] == "value"
        and ev["callback"]["simple"] == "_host_damping"
    )
    assert not _written_files(PKG), "verify wrote into the original folder"


def test_dropped_tap_names_the_test_and_the_event(legacy_python, tmp_path):
    report = tmp_path / "report.json"
    res = hcmigrate_verify(
        PKG, "--pytest", "tests", "--candidate", BAD, "--reference", "legacy", "--json", report
    )
    assert res.returncode == 1, res.stdout + res.stderr
    out = res.stdout
    assert f"DIFF {T_LOG}: passed in the reference, failed in the candidate" in out
    assert f"DIFF {T_LOSS}: passed, 6 host call(s) in the reference, 3 in the candidate" in out
    assert f"ok   {T_CALL}" in out
    assert re.search(
        rf"- \[{re.escape(T_LOSS)}\] event #1 `simlib.dynamics._log_energy` via id_tap \(ordered\) is missing "
        r"in the candidate",
        out,
    )
    assert "got (candidate):      failed: assert 0 == 4" in out
    assert re.search(
        r"hint: the candidate registers no callback from the legacy call site "
        r"\S*fixtures/verify/pytest_pkg/simlib/dynamics\.py:28\n",
        out,
    ), out
    data = json.loads(report.read_text())
    tests = {t["nodeid"]: t for t in data["tests"]}
    assert tests[T_LOG]["candidate_outcome"] == "failed"
    assert [d["kind"] for d in tests[T_LOG]["differences"]] == ["missing-event", "outcome"]
    assert tests[T_LOSS]["differences"][0]["position"] == 1 and tests[T_CALL]["equivalent"]


def test_changed_call_result_and_one_sided_tests(legacy_python, tmp_path):
    from hcmigrate.api import Options, migrate_source

    cand = tmp_path / "pkg"
    shutil.copytree(PKG, cand)
    for f in cand.rglob("*.py"):
        f.write_text(migrate_source(f.read_text(), Options(), filename=str(f)).code)
    dyn = cand / "simlib" / "dynamics.py"
    dyn.write_text(dyn.read_text().replace("(0.5 * np.tanh(v))", "(0.25 * np.tanh(v))"))
    tests = cand / "tests" / "test_dynamics.py"
    tests.write_text(
        tests.read_text().replace("def test_simulation_loses_energy", "def test_renamed")
    )
    # --all-tests: the candidate runs every test, not only those with host calls in the
    # reference, so a test only the candidate has is seen too.
    res = hcmigrate_verify(
        PKG, "--pytest", "tests", "--candidate", cand, "--reference", "legacy", "--all-tests"
    )
    assert res.returncode == 1, res.stdout + res.stderr
    out = res.stdout
    assert re.search(
        rf"- \[{re.escape(T_CALL)}\] event #0 `simlib.dynamics._host_damping` via call \(ordered\): "
        r"callback result differs: values differ at result at index \(1,\)",
        out,
    ), out
    assert f"- [{T_CALL}] test outcome passed in the reference, failed in the candidate" in out
    assert (
        f"- [{T_LOSS}] test ran only in the reference (passed); the candidate did not run it" in out
    )
    assert "- [tests/test_dynamics.py::test_renamed] test ran only in the candidate (passed)" in out


def test_could_not_run(tmp_path):
    res = hcmigrate_verify(PKG / "simlib" / "dynamics.py", "--pytest", "tests")
    assert res.returncode == 2 and "needs ORIGINAL to be the package's folder" in res.stdout
    res = hcmigrate_verify(PKG, "--pytest", "no_such_tests")
    assert res.returncode == 2 and "no no_such_tests in" in res.stdout
    broken = tmp_path / "broken"
    shutil.copytree(PKG, broken)
    (broken / "tests" / "test_dynamics.py").write_text("import no_such_module_hcmigrate\n")
    res = hcmigrate_verify(
        broken, "--pytest", "tests", "--candidate", PKG
    )  # compat reference: fast
    assert res.returncode == 2, res.stdout + res.stderr
    assert "pytest could not run the original's tests on the reference" in res.stdout
    assert "no_such_module_hcmigrate" in res.stdout


def _trace(tests, events=()):
    return {
        "mode": "pytest",
        "tests": [{"nodeid": n, "outcome": o, "stdout": s} for n, o, s in tests],
        "events": list(events),
        "registrations": [],
        "collect_errors": [],
    }


def test_compare_pytest_traces_unit():
    ev = {
        "entry": "t::a",
        "api": "id_tap",
        "class": "effect",
        "ordered": True,
        "args": [{"k": "py", "t": "int", "v": 1}],
        "callback": {"name": "m.f", "simple": "f", "lambda": False},
    }
    ref = _trace([("t::a", "passed", "x 1.0\n"), ("t::b", "skipped", "")], [ev])
    same = compare_pytest_traces(
        ref, _trace([("t::a", "passed", "x 1.00001\n"), ("t::b", "skipped", "")], [dict(ev)])
    )
    assert same.equivalent and [t["nodeid"] for t in same.tests] == ["t::a", "t::b"]
    diff = compare_pytest_traces(ref, _trace([("t::a", "passed", "x 2\n"), ("t::c", "passed", "")]))
    kinds = [(d.entry, d.kind) for d in diff.differences]
    assert kinds == [
        ("t::a", "missing-event"),
        ("t::a", "stdout"),
        ("t::b", "test-missing"),
        ("t::c", "test-extra"),
    ]


def test_shared_pytest_folder_holds_only_pytest_and_its_dependencies(tmp_path):
    """The offline fallback for a reference interpreter without pytest (same Python version)."""
    from hcmigrate.verify.pytest_env import shared_pytest_dir

    shared = shared_pytest_dir(tmp_path)
    names = {p.name for p in Path(shared).iterdir()}
    assert {"pytest", "_pytest", "pluggy", "iniconfig", "packaging"} <= names
    assert not names & {"jax", "jaxlib", "numpy", "hcmigrate"}
    probe = subprocess.run(
        [
            sys.executable,
            "-S",
            "-c",
            f"import sys; sys.path.insert(0, {shared!r}); import pytest; print(pytest.__file__)",
        ],
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 0 and probe.stdout.startswith(shared), probe.stderr
