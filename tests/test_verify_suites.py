"""`hcmigrate verify --pytest` on suites as real projects have them: candidate failures the
migration did not cause (a removed JAX API) set apart with exit status 3, a crash or a hang in
one test that keeps every other test's verdict, pytest-xdist workers recorded, the candidate
running only the tests that made host calls, a reference that warns as legacy JAX does, failures
on both sides compared by reason, and tests that pytest collects from notebooks. Real legacy JAX
(the cached jax 0.4.30 venv) against current JAX, real pytest, no mocks."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from verify_helpers import hcmigrate_verify

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "fixtures" / "verify" / "pytest_pkg"
PKG_BAD = REPO / "fixtures" / "verify" / "pytest_pkg_bad"
NB_PKG = REPO / "fixtures" / "verify" / "notebook_pkg"


def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


TAPPING_MODULE = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp
    from jax.experimental import host_callback as hcb

    SEEN = []


    def record(value, transforms):
        SEEN.append(float(value))


    def doubled(x):
        return jax.jit(lambda v: hcb.id_tap(record, v * 2.0))(x)
    """)


def without_jax_rules(original: Path, candidate: Path) -> Path:
    """The original migrated with the JAX-removal rules switched off (`--ignore JAX`): its
    candidate still uses the removed JAX API, as a project that chose so would."""
    from hcmigrate.api import Options, migrate_source

    options = Options(ignore=frozenset({"JAX"}))
    if original.is_file():
        candidate.write_text(migrate_source(original.read_text(), options).code)
        return candidate
    shutil.copytree(original, candidate)
    for f in candidate.rglob("*.py"):
        f.write_text(migrate_source(f.read_text(), options).code)
    return candidate


def test_removed_jax_api_in_the_candidate_is_named_apart(legacy_python, tmp_path):
    pkg = write_package(
        tmp_path / "proj",
        {
            "lib/__init__.py": "",
            "lib/core.py": TAPPING_MODULE + "\n\ndef scaled_tree(tree):\n"
            "    doubled(jnp.float32(1.0))\n"
            "    return jax.tree_map(lambda x: x * 3, tree)\n",
            "tests/test_core.py": """\
                import jax.numpy as jnp
                from lib import core


                def test_doubled():
                    assert float(core.doubled(jnp.float32(2.0))) == 4.0


                def test_scaled_tree():
                    assert core.scaled_tree({"a": 1.0})["a"] == 3.0
                """,
        },
    )
    report = tmp_path / "report.json"
    res = hcmigrate_verify(
        pkg, "--pytest", "tests", "--candidate", without_jax_rules(pkg, tmp_path / "cand"),
        "--reference", "legacy", "--json", report,
    )  # fmt: skip
    assert res.returncode == 3, res.stdout + res.stderr
    out = res.stdout
    assert "ok   tests/test_core.py::test_doubled" in out
    assert "NOTE tests/test_core.py::test_scaled_tree" in out
    assert "CANDIDATE BROKEN (not by the migration)" in out
    assert "`jax.tree_map` is not in JAX 0.10.2 (removed in JAX 0.6.0); use jax.tree.map" in out, (
        out
    )
    data = json.loads(report.read_text())
    assert data["verdict"] == "candidate-broken" and data["exit_code"] == 3
    assert [u["where"] for u in data["unrelated"]] == ["tests/test_core.py::test_scaled_tree"]


def test_removed_jax_api_in_a_script(legacy_python, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        TAPPING_MODULE
        + "\n\ndef main():\n    doubled(jnp.float32(1.0))\n    return jax.tree_map(lambda v: v * 2, [1.0])\n"
    )
    (tmp_path / "cand").mkdir()
    candidate = without_jax_rules(script, tmp_path / "cand" / "train.py")
    res = hcmigrate_verify(script, "--candidate", candidate, "--reference", "legacy")
    assert res.returncode == 3, res.stdout + res.stderr
    assert "- [<script>] `jax.tree_map` is not in JAX" in res.stdout


def test_a_host_callback_difference_outranks_an_unrelated_failure(legacy_python):
    res = hcmigrate_verify(
        PKG, "--pytest", "tests", "--candidate", PKG_BAD, "--reference", "legacy"
    )
    assert res.returncode == 1, res.stdout + res.stderr


def crashing_candidate(tmp_path: Path, body: str) -> Path:
    """A migrated copy of the fixture package whose middle test runs `body` first."""
    from hcmigrate.api import migrate_source

    cand = tmp_path / "cand"
    shutil.copytree(PKG, cand)
    for f in cand.rglob("*.py"):
        f.write_text(migrate_source(f.read_text()).code)
    tests = cand / "tests" / "test_dynamics.py"
    text = tests.read_text()
    head = "def test_energy_is_logged_every_step():\n"
    assert head in text
    tests.write_text(text.replace(head, head + textwrap.indent(body, "    ")))
    return cand


T_LOG = "tests/test_dynamics.py::test_energy_is_logged_every_step"


def test_a_crash_keeps_the_other_tests_and_names_the_one_that_died(legacy_python, tmp_path):
    cand = crashing_candidate(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    res = hcmigrate_verify(PKG, "--pytest", "tests", "--candidate", cand, "--reference", "legacy")
    assert res.returncode == 1, res.stdout + res.stderr
    out = res.stdout
    assert f"DIFF {T_LOG}: passed in the reference, crashed in the candidate" in out, out
    assert "the candidate process running it died (exit status -11)" in out
    # the tests before and after it still have their verdicts
    assert "ok   tests/test_dynamics.py::test_damping_comes_back_from_the_host" in out
    assert "ok   tests/test_dynamics.py::test_simulation_loses_energy" in out


def test_a_hung_test_times_out_alone(legacy_python, tmp_path):
    # (the hung test sleeps far past the helper's own timeout: only verify's --timeout ends it)
    cand = crashing_candidate(tmp_path, "import time\ntime.sleep(3000)\n")
    res = hcmigrate_verify(
        PKG, "--pytest", "tests", "--candidate", cand, "--reference", "legacy", "--timeout", "15"
    )
    assert res.returncode == 1, res.stdout + res.stderr
    out = res.stdout
    assert f"DIFF {T_LOG}: passed in the reference, timeout in the candidate" in out, out
    assert "timed out after" in out
    assert "ok   tests/test_dynamics.py::test_simulation_loses_energy" in out


def test_xdist_workers_are_recorded(legacy_python):
    good = hcmigrate_verify(PKG, "--pytest", "tests", "--reference", "legacy", "--", "-n", "2")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "EQUIVALENT: 3 test(s) (3 passed): same outcomes, 15 host call(s) match" in good.stdout
    bad = hcmigrate_verify(
        PKG, "--pytest", "tests", "--candidate", PKG_BAD, "--reference", "legacy", "--", "-n", "2"
    )
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "`simlib.dynamics._log_energy` via id_tap (ordered) is missing" in bad.stdout


def test_only_tests_with_host_calls_run_on_the_candidate(legacy_python, tmp_path):
    pkg = write_package(
        tmp_path / "proj",
        {
            "lib/__init__.py": "",
            "lib/core.py": TAPPING_MODULE,
            "tests/test_core.py": """\
                import jax.numpy as jnp
                from lib import core


                def test_doubled():
                    assert float(core.doubled(jnp.float32(2.0))) == 4.0


                def test_pure():
                    assert float(jnp.sum(jnp.arange(3))) == 3
                """,
        },
    )
    keep = tmp_path / "traces"
    res = hcmigrate_verify(pkg, "--pytest", "tests", "--reference", "legacy", "--keep-traces", keep)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 test(s) made no host call in the reference: not run on the candidate" in res.stdout
    cand = json.loads((keep / "candidate.json").read_text())
    assert [t["nodeid"] for t in cand["tests"]] == ["tests/test_core.py::test_doubled"]
    everything = hcmigrate_verify(pkg, "--pytest", "tests", "--reference", "legacy", "--all-tests")
    assert everything.returncode == 0 and "ok   tests/test_core.py::test_pure" in everything.stdout


def test_the_reference_warns_like_a_plain_legacy_run_but_for_host_callbacks_own(
    legacy_python, tmp_path
):
    """Under `filterwarnings = error` a plain legacy run fails on host_callback's own
    DeprecationWarning (jax 0.4.26 on) and on any other the code triggers (`jnp.clip(a_max=)`,
    0.4.27 on). The reference ignores exactly host_callback's (the legacy JAX's artifact: the
    suite ran clean on the JAX it was written for, blackjax 1.1.0's) and fails the other as the
    plain run does."""
    pkg = write_package(
        tmp_path / "proj",
        {
            "pytest.ini": "[pytest]\nfilterwarnings =\n    error\n",
            "lib/__init__.py": "",
            "lib/core.py": TAPPING_MODULE,
            "tests/test_core.py": """\
                import jax.numpy as jnp
                from lib import core


                def test_doubled():
                    assert float(core.doubled(jnp.float32(2.0))) == 4.0


                def test_clipped():
                    clipped = jnp.clip(core.doubled(jnp.float32(2.0)), a_max=3.0)
                    assert float(clipped) == 3.0
                """,
        },
    )
    plain = subprocess.run(
        [str(legacy_python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=pkg,
        capture_output=True,
        text=True,
        env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert plain.returncode == 1 and "2 failed" in plain.stdout, plain.stdout
    assert "The host_callback APIs are deprecated" in plain.stdout, plain.stdout
    keep = tmp_path / "traces"
    # (0.4.30 named: by itself the reference picks the JAX before the clip deprecation)
    res = hcmigrate_verify(
        pkg,
        "--pytest",
        "tests",
        "--reference",
        "legacy",
        "--reference-jax",
        "0.4.30",
        "--keep-traces",
        keep,
    )
    # (the test the reference fails on the deprecation is not compared: exit 2, named)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "  SKIP tests/test_core.py::test_clipped: failed in the reference" in res.stdout
    ref = json.loads((keep / "reference.json").read_text())
    outcome = {t["nodeid"].rsplit("::", 1)[1]: t for t in ref["tests"]}
    assert outcome["test_doubled"]["outcome"] == "passed", outcome
    clipped = outcome["test_clipped"]
    assert clipped["outcome"] == "failed" and "DeprecationWarning" in clipped["message"], clipped
    assert "host_callback" not in clipped["message"], clipped


def test_installed_modules_load_from_the_bytecode_pip_wrote(tmp_path):
    """A dependency whose source warns when compiled (jaxopt 0.8.3's invalid escape sequences)
    imports cleanly in a plain run, which reads its precompiled bytecode. Under `filterwarnings
    = error` the sides must read that bytecode too: compiled afresh into a folder of verify's
    own, the warning became a SyntaxError and no reference test ran (blackjax 1.1.0)."""
    deps = write_package(
        tmp_path / "deps",
        {"olddep.py": 'def scale(x):\n    """Scale x \\m by two."""\n    return x * 2\n'},
    )
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(deps)], capture_output=True)
    strict = [sys.executable, "-W", "error:invalid escape sequence", "-c", "import olddep"]
    plain = subprocess.run(strict, capture_output=True, text=True, env={"PYTHONPATH": str(deps)})
    assert plain.returncode == 0, plain.stderr
    fresh = {"PYTHONPATH": str(deps), "PYTHONPYCACHEPREFIX": str(tmp_path / "elsewhere")}
    compiled = subprocess.run(strict, capture_output=True, text=True, env=fresh)
    assert "invalid escape sequence" in compiled.stderr  # (what a fresh compile meets)
    pkg = write_package(
        tmp_path / "proj",
        {
            "pytest.ini": "[pytest]\nfilterwarnings =\n    error:invalid escape sequence\n",
            "lib/__init__.py": "",
            "lib/core.py": TAPPING_MODULE,
            "tests/test_core.py": """\
                import jax.numpy as jnp
                import olddep
                from lib import core


                def test_doubled():
                    assert float(core.doubled(jnp.float32(olddep.scale(1.0)))) == 4.0
                """,
        },
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    env["PYTHONPATH"] = str(deps)
    res = hcmigrate_verify(pkg, "--pytest", "tests", env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "EQUIVALENT: 1 test(s) (1 passed)" in res.stdout, res.stdout
    assert not list(pkg.rglob("*.pyc"))  # (still nothing written into the original's folder)


def test_failures_on_both_sides_are_compared_by_reason(legacy_python, tmp_path):
    original = write_package(
        tmp_path / "orig",
        {
            "lib/__init__.py": "",
            "lib/core.py": TAPPING_MODULE,
            "tests/test_core.py": """\
                import jax.numpy as jnp
                from lib import core


                def test_doubled():
                    core.doubled(jnp.float32(2.0))
                    assert False, "expected failure"
                """,
        },
    )
    res = hcmigrate_verify(original, "--pytest", "tests", "--reference", "legacy")
    assert res.returncode == 0, res.stdout + res.stderr  # same failure, same reason
    from hcmigrate.api import migrate_source

    cand = tmp_path / "cand"
    shutil.copytree(original, cand)
    for f in cand.rglob("*.py"):
        f.write_text(migrate_source(f.read_text()).code)
    test = cand / "tests" / "test_core.py"
    test.write_text(
        test.read_text().replace('assert False, "expected failure"', "raise ValueError")
    )
    res = hcmigrate_verify(
        original, "--pytest", "tests", "--candidate", cand, "--reference", "legacy"
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert (
        "test failed on both sides, for different reasons: AssertionError in the reference, "
        "ValueError in the candidate" in res.stdout
    )


def test_tests_collected_from_notebooks(legacy_python):
    """The package's conftest.py makes pytest collect each notebook as a test; the candidate
    copy's notebooks are migrated by the codemod like its .py files."""
    res = hcmigrate_verify(NB_PKG, "--pytest", "notebooks", "--reference", "legacy")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "note: migrated notebook_pkg/notebooks/scan_progress.ipynb" in res.stdout
    assert re.search(
        r"ok   notebooks/scan_progress\.ipynb::run: passed, [1-9]\d* host call", res.stdout
    )


def test_progress_is_shown_on_a_terminal(legacy_python):
    """On a terminal, a progress line is rewritten as each side's tests finish."""
    import os
    import pty

    leader, follower = pty.openpty()
    try:
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "hcmigrate",
                "verify",
                str(PKG),
                "--pytest",
                "tests",
                "--reference",
                "legacy",
                "--fresh-reference",
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=follower,
            text=True,
            timeout=600,
        )
        os.close(follower)
        follower = None
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if follower is not None:
            os.close(follower)
        os.close(leader)
    assert run.returncode == 0, run.stdout
    text = shown.decode(errors="replace")
    assert re.search(r"\rhcmigrate verify: reference \d+/3 tests", text), text
    assert re.search(r"\rhcmigrate verify: candidate \d+/3 tests", text), text


def test_the_reference_is_recorded_once(legacy_python, tmp_path):
    """A second run on the same sources reuses the reference trace; any change to the
    original's files runs the reference again."""
    pkg = tmp_path / "pkg"
    shutil.copytree(PKG, pkg)
    reused = "reference: recorded by an earlier run"
    first = hcmigrate_verify(pkg, "--pytest", "tests", "--reference", "legacy")
    assert first.returncode == 0 and reused not in first.stdout, first.stdout + first.stderr
    second = hcmigrate_verify(pkg, "--pytest", "tests", "--reference", "legacy")
    assert second.returncode == 0 and reused in second.stdout, second.stdout + second.stderr
    assert "15 host call(s) match" in second.stdout
    test = pkg / "tests" / "test_dynamics.py"
    test.write_text(test.read_text() + "\n# changed\n")
    third = hcmigrate_verify(pkg, "--pytest", "tests", "--reference", "legacy")
    assert third.returncode == 0 and reused not in third.stdout
    fresh = hcmigrate_verify(pkg, "--pytest", "tests", "--reference", "legacy", "--fresh-reference")
    assert fresh.returncode == 0 and reused not in fresh.stdout
