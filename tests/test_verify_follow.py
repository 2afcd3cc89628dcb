"""`hcmigrate verify --pytest` recording the reference: the candidate runs at the same time and
follows it, running each test that made host calls there as soon as the reference has run it.
Its report must be the one a candidate run afterwards on the selection gives (a run reusing the
recorded reference): the same tests, outcomes and fixture teardowns, on one pytest process and
on pytest-xdist workers, and every test when host calls came after the tests. Real legacy JAX
(the cached jax 0.4.30 venv) against current JAX, real pytest, no mocks."""

from __future__ import annotations

import json
import re

import pytest

from test_verify_suites import TAPPING_MODULE, write_package
from verify_helpers import hcmigrate_verify

# A module-scoped fixture whose teardown fails on current JAX only, in a module whose last test
# makes no host call: pytest tears the fixture down after `test_taps` when the next test that
# runs is in another module, so `test_taps` reports the failure, whether `test_pure` was
# deselected or left out while following the reference.
SUITE = {
    "lib/__init__.py": "",
    "lib/core.py": TAPPING_MODULE,
    "tests/test_a.py": """\
        import jax
        import jax.numpy as jnp
        import pytest

        from lib import core


        @pytest.fixture(scope="module")
        def resource():
            yield
            if not jax.__version__.startswith("0.4."):
                raise RuntimeError("teardown failed on current JAX")


        def test_taps(resource):
            assert float(core.doubled(jnp.float32(2.0))) == 4.0


        def test_pure(resource):
            assert float(jnp.sum(jnp.arange(3))) == 3
        """,
    "tests/test_b.py": """\
        import jax.numpy as jnp

        from lib import core


        def test_pure_first():
            assert float(jnp.max(jnp.arange(4))) == 3


        def test_taps_again():
            assert float(core.doubled(jnp.float32(1.0))) == 2.0


        def test_pure_last():
            assert float(jnp.min(jnp.arange(4))) == 0
        """,
}


def _verdict_lines(stdout: str) -> list[str]:
    """The report without the notes that say how the sides ran (the reference reused, the
    xdist workers shared while both ran)."""
    notes = ("note: reference:", "note: pytest-xdist:", "reference:", "candidate:")
    return [
        re.sub(r"/tmp/\S+", "PATH", line)
        for line in stdout.splitlines()
        if not line.lstrip().startswith(notes)
    ]


@pytest.mark.parametrize("xdist", [[], ["--", "-n", "2"]], ids=["one process", "xdist"])
def test_following_the_reference_reports_what_the_selection_does(legacy_python, tmp_path, xdist):
    pkg = write_package(tmp_path / "proj", SUITE)
    keep = tmp_path / "traces"
    cold = hcmigrate_verify(
        pkg, "--pytest", "tests", "--reference", "legacy", "--keep-traces", keep, *xdist
    )
    assert cold.returncode == 1, cold.stdout + cold.stderr
    assert "3 test(s) made no host call in the reference: not run on the candidate" in cold.stdout
    assert (
        "test outcome passed in the reference, error in the candidate" in cold.stdout
        and "teardown: RuntimeError: teardown failed on current JAX" in cold.stdout
    ), cold.stdout
    cand = json.loads((keep / "candidate.json").read_text())
    ran = ["tests/test_a.py::test_taps", "tests/test_b.py::test_taps_again"]
    assert sorted(t["nodeid"] for t in cand["tests"]) == ran
    assert sorted(cand["collected"]) == ran and "not_run" not in cand
    outcomes = {t["nodeid"]: t["outcome"] for t in cand["tests"]}
    assert outcomes == {ran[0]: "error", ran[1]: "passed"}
    warm = hcmigrate_verify(pkg, "--pytest", "tests", "--reference", "legacy", *xdist)
    assert "reference: recorded by an earlier run" in warm.stdout, warm.stdout
    assert warm.returncode == 1
    assert _verdict_lines(warm.stdout) == _verdict_lines(cold.stdout)


def test_host_calls_after_the_tests_run_every_test_on_the_candidate(legacy_python, tmp_path):
    """A host call at the end of the session (no test running) means any test may matter: the
    candidate runs them all, although while following it had left out the ones without."""
    pkg = write_package(
        tmp_path / "proj",
        {
            **{k: v for k, v in SUITE.items() if k != "tests/test_a.py"},
            "tests/conftest.py": """\
                import jax
                import jax.numpy as jnp


                def pytest_sessionfinish(session):
                    from lib import core

                    core.doubled(jnp.float32(3.0))
                    jax.effects_barrier()
                """,
        },
    )
    keep = tmp_path / "traces"
    res = hcmigrate_verify(pkg, "--pytest", "tests", "--reference", "legacy", "--keep-traces", keep)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "made no host call in the reference" not in res.stdout
    assert "ok   tests/test_b.py::test_pure_last" in res.stdout
    cand = json.loads((keep / "candidate.json").read_text())
    assert len(cand["tests"]) == 3 and "not_run" not in cand


def test_xdist_workers_are_shared_by_the_sides_running_at_once():
    """Both sides run at the same time: `-n N` beyond half the CPUs would only queue, so each
    side gets that half (at least one worker, still under pytest-xdist)."""
    from hcmigrate.verify.pytest_env import available_cpus, share_workers

    half = max(1, available_cpus() // 2)
    many = str(available_cpus() * 2)
    for given, expected in (
        (["tests", "-n", many], ["tests", "-n", str(half)]),
        ([f"-n{many}", "-x"], [f"-n{half}", "-x"]),
        ([f"--numprocesses={many}"], [f"--numprocesses={half}"]),
        (
            ["--numprocesses", "auto"],
            ["--numprocesses", str(half)] if half < available_cpus() else None,
        ),
    ):
        shared, note = share_workers(given)
        assert shared == (expected or given)
        assert (note is not None) == (shared != given)
    assert share_workers(["tests", "-n", "1", "-k", "n"]) == (["tests", "-n", "1", "-k", "n"], None)
    assert share_workers(["tests", "-q"]) == (["tests", "-q"], None)
