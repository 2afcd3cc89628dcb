"""The first line of a difference says what the candidate did first: it raised before its first
host call, raised inside one (which, where), or timed out; the host calls then missing are not
explained as callbacks the migration lost."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from verify_helpers import hcmigrate_verify

ORIGINAL = """
import jax
from jax.experimental import host_callback as hcb

SEEN = []


def _record(x, transforms):
    SEEN.append(float(x))


def run(x):
    return jax.lax.fori_loop(0, 3, lambda i, v: hcb.id_tap(_record, v + i), x)
"""

# Three migrations gone wrong, one per test: fori_loop called without its initial value
# (raises before any host call), a callback still taking the legacy `transforms` (raises
# inside the first host call), and a run that hangs before its host calls.
CANDIDATE = """
import time

import jax

SEEN = []


def _record(x):
    SEEN.append(float(x))


def _record_legacy(x, transforms):
    SEEN.append(float(x))


def _loop(callback, x, *, init=True, hang=False):
    if hang:
        time.sleep(120)

    def step(i, v):
        jax.debug.callback(callback, v + i, ordered=True)
        return v + i

    if not init:
        return jax.lax.fori_loop(0, 3, step)  # raises here
    return jax.lax.fori_loop(0, 3, step, x)


def run(x):
    test = __import__("os").environ["PYTEST_CURRENT_TEST"]
    if "test_before" in test:
        return _loop(_record, x, init=False)
    if "test_inside" in test:
        return _loop(_record_legacy, x)
    return _loop(_record, x, hang=True)
"""

TESTS = """
import jax
import jax.numpy as jnp

from mylib.steps import SEEN, run


def _three_calls():
    SEEN.clear()
    run(jnp.float32(1.0))
    jax.effects_barrier()
    assert len(SEEN) == 3


def test_before():
    _three_calls()


def test_inside():
    _three_calls()


def test_timeout():
    _three_calls()
"""


def _package(root: Path, steps: str) -> Path:
    (root / "mylib").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "mylib" / "__init__.py").write_text("")
    (root / "mylib" / "steps.py").write_text(textwrap.dedent(steps).lstrip())
    (root / "tests" / "test_steps.py").write_text(textwrap.dedent(TESTS).lstrip())
    return root


def _line(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_first_line_says_the_candidate_raised_or_timed_out(tmp_path):
    original = _package(tmp_path / "original", ORIGINAL)
    candidate = _package(tmp_path / "candidate", CANDIDATE)
    steps = candidate / "mylib" / "steps.py"
    res = hcmigrate_verify(
        original, "--pytest", "tests", "--candidate", candidate, "--timeout", "20"
    )
    assert res.returncode == 1, res.stdout + res.stderr
    heads = {}
    for m in re.finditer(r"^- \[tests/test_steps.py::(\w+)\] (.*)$", res.stdout, re.M):
        heads.setdefault(m.group(1), m.group(2))  # each test's first difference
    assert heads["test_before"] == (
        f"the candidate test raised TypeError at {steps}:{_line(steps, '# raises here')} "
        "before its first host call (the reference: passed)"
    ), res.stdout
    assert heads["test_inside"] == (
        "the candidate test raised TypeError inside host call 1 (`mylib.steps._record_legacy`) "
        f"at {steps}:{_line(steps, 'def _record_legacy')} (the reference: passed)"
    ), res.stdout
    assert heads["test_timeout"] == (
        "the candidate test timed out after 20 s (its process was killed); the host calls it "
        "made are not recorded (the reference: passed)"
    ), res.stdout
    # what follows from stopping is not blamed on the migration
    assert "registers no callback" not in res.stdout
    assert "the candidate stopped before this call" in res.stdout
    timeout_lines = [line for line in res.stdout.splitlines() if "test_timeout]" in line]
    assert len(timeout_lines) == 1, res.stdout  # its host calls are unknown: no "missing" line


def test_first_line_of_a_script_that_raised(tmp_path):
    original = tmp_path / "train.py"
    original.write_text(
        textwrap.dedent(
            """
            import jax
            import jax.numpy as jnp
            from jax.experimental import host_callback as hcb


            def log(x, transforms):
                print("step", x)


            def main():
                return jax.lax.fori_loop(0, 3, lambda i, v: hcb.id_tap(log, v + i), jnp.float32(0))


            if __name__ == "__main__":
                main()
            """
        ).lstrip()
    )
    candidate = tmp_path / "migrated" / "train.py"
    candidate.parent.mkdir()
    candidate.write_text(
        original.read_text()
        .replace("from jax.experimental import host_callback as hcb\n", "")
        .replace("def log(x, transforms):", "def log(x):")
        .replace(
            "lambda i, v: hcb.id_tap(log, v + i), jnp.float32(0))",
            "lambda i, v: v + i, jnp.float32(0), unrolled=True)",
        )
    )
    res = hcmigrate_verify(original, "--candidate", candidate)
    assert res.returncode == 1, res.stdout + res.stderr
    first = next(line for line in res.stdout.splitlines() if line.startswith("- "))
    assert first == (
        f"- [<script>] the candidate raised TypeError at {candidate}:{_line(candidate, 'unrolled')} "
        "before its first host call"
    ), res.stdout
    assert "hint: the candidate stopped before this call" in res.stdout
