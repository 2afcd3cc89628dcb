"""The CI gate is meaningful on projects as they are: verify's own switches (CI) never reach the
programs it runs, a reference in which no test made a host call is no pass, and a stored
reference never outlives `--fresh-reference`. Each case is a small temporary git project,
verified by the real `hcmigrate verify` command on real JAX (legacy jax 0.4.30 where named)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from verify_helpers import hcmigrate_verify

# A library whose progress taps are switched off under CI, as numpy-like projects do
# (`if "CI" in os.environ: progress_bar = False`), and by a switch of its own.
PROGRESS = """\
import os

import jax
import jax.numpy as jnp
from jax.experimental import host_callback as hcb

SHOW = "CI" not in os.environ and not os.environ.get("STEPLIB_QUIET")
STEPS = int(os.environ.get("STEPLIB_STEPS", "3"))


def _tick(arg, transforms):
    print("step", int(arg))


def run(x):
    def body(carry, i):
        if SHOW:
            i = hcb.id_tap(_tick, i)
        return carry * 0.5 + i, None

    out, _ = jax.lax.scan(body, x, jnp.arange(STEPS))
    return out
"""

TESTS = """\
import jax.numpy as jnp

from steplib.progress import run


def test_run_halves():
    assert float(run(jnp.float32(4.0))) > 0
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def make_project(root: Path, files: dict[str, str]) -> Path:
    """A git work tree whose `main` holds `files` (the legacy code), committed."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "legacy")
    return root


def migrate_on_branch(repo: Path) -> None:
    """The migration as a pull request: a branch where `hcmigrate .` rewrote the code."""
    git(repo, "checkout", "-q", "-b", "migrate")
    done = subprocess.run(
        [sys.executable, "-m", "hcmigrate", "."], cwd=repo, capture_output=True, text=True
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    git(repo, "commit", "-q", "-am", "migrate")


WARNINGS_ARE_ERRORS = '\n[tool.pytest.ini_options]\nfilterwarnings = ["error"]\n'


def steplib(tmp_path: Path, tests: str = TESTS, pyproject_tail: str = "") -> Path:
    """The progress library as a git project: its tests `tests`, `pyproject_tail` after its
    `[project]` table (a pytest configuration)."""
    return make_project(
        tmp_path / "steplib",
        {
            "pyproject.toml": '[project]\nname = "steplib"\nversion = "0.1"\n' + pyproject_tail,
            "steplib/__init__.py": "",
            "steplib/progress.py": PROGRESS,
            "tests/test_progress.py": tests,
        },
    )


def user_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "STEPLIB_QUIET")}
    env.update(extra)
    return env


def legacy_gate(repo: Path, env: dict, *more: str):
    """The documented gate's verify step on `repo`'s tests, with the legacy reference."""
    return hcmigrate_verify(
        ".", "--pytest", "tests", "--reference", "legacy", *more, cwd=repo, env=env
    )


def host_calls(stdout: str) -> int:
    found = re.search(r"EQUIVALENT: .*?(\d+) host call\(s\) match", stdout)
    assert found, stdout
    return int(found.group(1))


def test_ci_switch_of_verify_never_reaches_the_tests(legacy_python, tmp_path):
    """In CI (CI=true picks the merge base as the original) the project's tests still run with
    their progress taps: CI is verify's switch, not the program's. The suite runs under
    `filterwarnings = error` (blackjax's): legacy jax 0.4.30's own deprecation warning for
    host_callback does not fail the reference."""
    repo = make_project(
        tmp_path / "steplib",
        {
            "pyproject.toml": (
                '[project]\nname = "steplib"\nversion = "0.1"\n\n'
                '[tool.pytest.ini_options]\nfilterwarnings = ["error"]\n'
            ),
            "steplib/__init__.py": "",
            "steplib/progress.py": PROGRESS,
            "tests/test_progress.py": TESTS,
        },
    )
    migrate_on_branch(repo)
    res = hcmigrate_verify(
        ".", "--pytest", "tests", "--reference", "legacy", cwd=repo, env=user_env(CI="true")
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "CI: the merge base with main" in res.stdout
    assert host_calls(res.stdout) == 3


def test_a_reference_without_host_calls_is_not_a_pass(tmp_path):
    """Every test passes on both sides but none made a host call: exit 2, one line that says so
    and what to check (not a vacuous EQUIVALENT)."""
    repo = steplib(tmp_path)
    res = hcmigrate_verify(".", "--pytest", "tests", cwd=repo, env=user_env(STEPLIB_QUIET="1"))
    assert res.returncode == 2, res.stdout + res.stderr
    assert "EQUIVALENT" not in res.stdout
    line = next(ln for ln in res.stdout.splitlines() if "no test made a host call" in ln)
    assert "1 test(s) ran, 0 host calls" in line and "check that the tests reach" in line


def test_fresh_reference_replaces_the_stored_one(tmp_path):
    """A reference recorded under other settings of the project's own (3 steps) is stored; a
    `--fresh-reference` run under new ones (5 steps) replaces it, so the next run reuses the
    new trace, not the stale one."""
    repo = steplib(tmp_path)
    cache = tmp_path / "cache"
    first = hcmigrate_verify(
        ".", "--pytest", "tests", cwd=repo, env=user_env(HCMIGRATE_CACHE_DIR=str(cache))
    )
    assert first.returncode == 0 and host_calls(first.stdout) == 3, first.stdout + first.stderr
    five = user_env(HCMIGRATE_CACHE_DIR=str(cache), STEPLIB_STEPS="5")
    fresh = hcmigrate_verify(".", "--pytest", "tests", "--fresh-reference", cwd=repo, env=five)
    assert fresh.returncode == 0 and host_calls(fresh.stdout) == 5, fresh.stdout + fresh.stderr
    again = hcmigrate_verify(".", "--pytest", "tests", cwd=repo, env=five)
    assert "recorded by an earlier run" in again.stdout, again.stdout
    assert again.returncode == 0 and host_calls(again.stdout) == 5, again.stdout + again.stderr


def test_reference_is_keyed_by_the_environment_it_ran_with(tmp_path):
    """A stored reference is not reused under other JAX settings from the environment."""
    repo = steplib(tmp_path)
    cache = tmp_path / "cache"
    first = hcmigrate_verify(
        ".", "--pytest", "tests", cwd=repo, env=user_env(HCMIGRATE_CACHE_DIR=str(cache))
    )
    assert first.returncode == 0, first.stdout + first.stderr
    other = hcmigrate_verify(
        ".",
        "--pytest",
        "tests",
        cwd=repo,
        env=user_env(HCMIGRATE_CACHE_DIR=str(cache), JAX_ENABLE_X64="1"),
    )
    assert other.returncode == 0, other.stdout + other.stderr
    assert "recorded by an earlier run" not in other.stdout


# One host function tapped from several sites (a progress bar's update and its last update),
# as jax-tqdm and blackjax do.
MULTI_SITE = """\
import jax
import jax.numpy as jnp
from jax.experimental import host_callback


def _start(arg, transform):
    print("start", arg)


def _advance(arg, transform):
    print("advance", arg)


def progress(num, rate):
    remainder = num % rate

    def _bar(i):
        jax.lax.cond(i == 0, lambda _: host_callback.id_tap(_start, num, result=i), lambda _: i, None)
        jax.lax.cond((i % rate == 0) & (i != num - remainder) & (i > 0),
                     lambda _: host_callback.id_tap(_advance, rate, result=i), lambda _: i, None)
        jax.lax.cond(i == num - remainder,
                     lambda _: host_callback.id_tap(_advance, remainder, result=i), lambda _: i, None)

    def wrap(f):
        def step(carry, i):
            _bar(i)
            return f(carry, i)
        return step
    return wrap


def total(n):
    @progress(n, 5)
    def step(c, i):
        return c + i, None
    return jax.lax.scan(step, 0, jnp.arange(n))[0]
"""


def test_a_changed_value_at_one_of_several_sites_is_reported_as_that_value(legacy_python, tmp_path):
    """The last update's argument changed by hand on the migration branch: the report gives
    the value (2 vs 3) and the candidate's own line, not "missing in the candidate"."""
    repo = make_project(
        tmp_path / "barlib",
        {
            "pyproject.toml": '[project]\nname = "barlib"\nversion = "0.1"\n',
            "barlib/__init__.py": "",
            "barlib/bar.py": MULTI_SITE,
            "tests/test_bar.py": (
                "from barlib.bar import total\n\n\n"
                "def test_total():\n    assert int(total(12)) == 66\n"
            ),
        },
    )
    migrate_on_branch(repo)
    bar = repo / "barlib" / "bar.py"
    migrated = bar.read_text()
    edited = migrated.replace("), remainder, ", "), remainder + 1, ")
    assert edited != migrated, migrated
    bar.write_text(edited)
    lines = edited.splitlines()
    line = next(i for i, t in enumerate(lines, 1) if "remainder + 1" in t)
    res = hcmigrate_verify(
        ".", "--pytest", "tests", "--reference", "legacy", cwd=repo, env=user_env(CI="true")
    )
    assert res.returncode == 1, res.stdout + res.stderr
    first = next(ln for ln in res.stdout.splitlines() if ln.startswith("- ["))
    assert "value 2 vs 3" in first, res.stdout
    assert re.search(rf"\(candidate bar\.py:({line}|{line - 1})\)", first), res.stdout
    assert "missing" not in res.stdout and "registers no callback" not in res.stdout


def test_a_version_file_the_build_generates_is_carried_into_the_base(tmp_path):
    """setuptools_scm writes `pkg/_version.py`, which git ignores: the exported base lacks it
    and its package imports it first thing. The working tree's copy is carried over, with a
    note saying so; other ignored files (a venv's, a build folder's) are not."""
    repo = make_project(
        tmp_path / "verlib",
        {
            "pyproject.toml": '[project]\nname = "verlib"\ndynamic = ["version"]\n',
            ".gitignore": "verlib/_version.py\nbuild/\n",
            "verlib/__init__.py": "from verlib._version import version as __version__\n",
            "verlib/progress.py": PROGRESS.replace("steplib", "verlib"),
            "tests/test_progress.py": TESTS.replace("steplib", "verlib"),
        },
    )
    (repo / "verlib" / "_version.py").write_text("version = '0.1.dev3+g1234567'\n")
    (repo / "build" / "lib" / "verlib").mkdir(parents=True)
    (repo / "build" / "lib" / "verlib" / "_version.py").write_text("version = 'old'\n")
    migrate_on_branch(repo)
    cache = tmp_path / "cache"
    res = hcmigrate_verify(
        ".",
        "--pytest",
        "tests",
        cwd=repo,
        env=user_env(CI="true", HCMIGRATE_CACHE_DIR=str(cache)),
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert host_calls(res.stdout) == 3
    note = next(ln for ln in res.stdout.splitlines() if "note: original:" in ln)
    assert note.endswith(
        "carried over from the working tree, as the build generates them (git ignores them, "
        "so the revision lacks them): verlib/_version.py"
    ), note
    (exported,) = (cache / "original-refs").iterdir()
    assert not (exported / "build").exists()


def test_the_recipe_fits_a_layout_without_src_or_tests(tmp_path):
    """`hcmigrate --check .` and `--pytest .` on a project whose tests are in `test/`, named
    by its pytest configuration (testpaths); a folder of other test files (benchmarks) that
    the configuration leaves out is not run."""
    repo = make_project(
        tmp_path / "flatlib",
        {
            "pyproject.toml": (
                '[project]\nname = "flatlib"\nversion = "0.1"\n\n'
                '[tool.pytest.ini_options]\ntestpaths = ["test"]\n'
            ),
            "flatlib/__init__.py": "",
            "flatlib/progress.py": PROGRESS.replace("steplib", "flatlib"),
            "test/test_progress.py": TESTS.replace("steplib", "flatlib"),
            "benchmarks/test_bench.py": "def test_not_a_unit_test():\n    assert False\n",
        },
    )
    migrate_on_branch(repo)
    check = subprocess.run(
        [sys.executable, "-m", "hcmigrate", "--check", "."],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**user_env(), "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    assert check.returncode == 0, check.stdout + check.stderr
    res = hcmigrate_verify(".", "--pytest", ".", cwd=repo, env=user_env(CI="true"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "ok   test/test_progress.py::test_run_halves: passed, 3 host call(s)" in res.stdout
    assert "benchmarks" not in res.stdout


SETUP_PY = """\
from setuptools import setup

_jax_version_constraints = ">=0.4.14"

setup(
    name="numlike",
    install_requires=[f"jax{_jax_version_constraints}", "multipledispatch", "numpy", "tqdm"],
    extras_require={
        "doc": ["sphinx", "nbsphinx>=0.8.9", "sphinx-gallery"],
        "test": ["pytest>=4.1", "scipy>=1.9", "pre-commit", "flake8"],
        "dev": ["dm-haiku", "flax", "tensorflow-probability>=0.18.0", "pre-commit", "tox"],
        "cpu": f"jax[cpu]{_jax_version_constraints}",
        "cuda": [f"jax[cuda]{_jax_version_constraints}"],
    },
)
"""


def test_project_deps_take_runtime_and_test_requirements_only(tmp_path):
    """A setup.py laid out as numpy-like projects write it: install_requires and the `test`
    extra are used; the docs and dev extras, and the tooling the test extra lists, are not;
    an extra given as a string (cpu) is no reason to say the dict is not literal."""
    from hcmigrate.verify.project_deps import project_dependencies

    (tmp_path / "setup.py").write_text(SETUP_PY)
    deps = project_dependencies(tmp_path)
    assert deps.requirements == ["multipledispatch", "numpy", "tqdm", "scipy>=1.9"]
    notes = "\n".join(deps.notes())
    assert notes.startswith(
        "project dependencies from: setup.py install_requires, setup.py extra 'test'"
    ), notes
    assert "not a literal" not in notes
    assert "pre-commit, flake8 (development tooling, not what the tests import)" in notes
    with_dev = project_dependencies(tmp_path, dev=True)
    assert {"flax", "dm-haiku", "pre-commit", "tox"} <= set(with_dev.requirements)


def capped_numpy_project(root: Path, pin: str) -> Path:
    return make_project(
        root,
        {
            "pyproject.toml": (
                f'[project]\nname = "cappedlib"\nversion = "0.1"\ndependencies = ["{pin}"]\n'
            ),
            "cappedlib/__init__.py": "",
            "cappedlib/progress.py": PROGRESS.replace("steplib", "cappedlib"),
            "tests/test_progress.py": TESTS.replace("steplib", "cappedlib")
            + (
                "\n\ndef test_numpy_as_pinned_on_legacy_jax():\n"
                "    import jax, numpy\n"
                "    from packaging.version import Version\n"
                "    if jax.__version__ == '0.4.30':\n"
                "        assert Version(numpy.__version__) < Version('1.25'), numpy.__version__\n"
                "    assert float(run(numpy.float32(1.0))) > 0\n"
            ),
        },
    )


def test_the_reference_honours_the_projects_numpy_pin(legacy_python, tmp_path):
    """`numpy<1.25` cannot sit beside the legacy environment's numpy 1.26.4: the reference
    gets the newest numpy of jax 0.4.30's era that the pin allows (1.24.4), and says so."""
    repo = capped_numpy_project(tmp_path / "cappedlib", "numpy<1.25")
    res = hcmigrate_verify(
        ".", "--pytest", "tests", "--reference", "legacy", "--project-deps", cwd=repo
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert (
        "note: numpy 1.24.4 in the reference: the newest numpy of jax 0.4.30's era that the "
        "project's numpy<1.25 allows (the legacy environment has 1.26.4)"
    ) in res.stdout
    assert "ok   tests/test_progress.py::test_numpy_as_pinned_on_legacy_jax: passed" in res.stdout


def test_a_numpy_pin_no_legacy_jax_runs_with_is_named_in_one_line(legacy_python, tmp_path):
    repo = capped_numpy_project(tmp_path / "cappedlib", "numpy<1.22")
    res = hcmigrate_verify(
        ".", "--pytest", "tests", "--reference", "legacy", "--project-deps", cwd=repo
    )
    assert res.returncode == 2, res.stdout + res.stderr
    (line,) = [ln for ln in res.stdout.splitlines() if ln.startswith("COULD NOT RUN")]
    assert (
        "the project's pin numpy<1.22 (pyproject.toml [project] dependencies) conflicts with "
        "jax 0.4.30, which runs with numpy 1.23.2 to 1.26.4"
    ) in line
    assert "ResolutionImpossible" not in res.stdout + res.stderr
    assert res.stdout.rstrip().endswith(line)


# A chaotic recurrence (an expanding map modulo 1) fed by a mean: XLA's reductions (and, on some
# CPUs, its matrix products) differ by an ulp between jax 0.4.30 and current JAX, and the map
# carries that past any tolerance within a few steps. (Measured: without the mean fed back, the
# ulp stayed an ulp on a machine whose products agree.)
DRIFTING = """\
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import host_callback as hcb

_rng = np.random.RandomState(1)
W = (_rng.randn(16, 16) / 4.0).astype(np.float32)
X0 = _rng.randn(16).astype(np.float32)


def _record(m, transforms):
    pass


def trajectory(steps=60):
    def body(x, _):
        y = jnp.mod(7.0 * jnp.tanh(W @ x) + 3.0 * x + jnp.mean(x), 1.0)
        m = hcb.id_tap(_record, jnp.mean(y), result=jnp.mean(y))
        return y, m

    return jax.lax.scan(body, jnp.asarray(X0), None, length=steps)[1]
"""


def test_jax_drift_is_a_note_and_a_changed_value_still_differs(legacy_python, tmp_path):
    """Values that drift between jax 0.4.30 and current JAX (the original itself drifts) are
    reported as drift, exit 0; a value the migration branch changed by hand is still DIFFERENT."""
    repo = make_project(
        tmp_path / "chaoslib",
        {
            "pyproject.toml": '[project]\nname = "chaoslib"\nversion = "0.1"\n',
            "chaoslib/__init__.py": "",
            "chaoslib/rnn.py": DRIFTING,
            "tests/test_rnn.py": (
                "import numpy as np\nfrom chaoslib.rnn import trajectory\n\n\n"
                "def test_bounded():\n    assert np.all(np.abs(trajectory()) <= 1)\n"
            ),
        },
    )
    migrate_on_branch(repo)
    ci = user_env(CI="true")
    res = hcmigrate_verify(".", "--pytest", "tests", "--reference", "legacy", cwd=repo, env=ci)
    assert res.returncode == 0, res.stdout + res.stderr
    note = next(ln for ln in res.stdout.splitlines() if "note: JAX drift" in ln)
    assert "tests/test_rnn.py::test_bounded: event #" in note and "differ" in note, note
    assert "DIFFERENT" not in res.stdout
    rnn = repo / "chaoslib" / "rnn.py"
    migrated = rnn.read_text()
    assert migrated.count("jnp.mean(y)") == 2, migrated
    rnn.write_text(migrated.replace("jnp.mean(y)", "jnp.mean(y) * 1.5", 1))
    broken = hcmigrate_verify(".", "--pytest", "tests", "--reference", "legacy", cwd=repo, env=ci)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "note: JAX drift" not in broken.stdout


def test_drift_that_cannot_be_told_apart_says_so(legacy_python, tmp_path):
    """The same drifting program whose original also uses an API current JAX removed
    (`jax.tree_map`): the drift check cannot run the original on current JAX, so the
    difference stands (exit 1) and a note says it may be drift all the same, and why."""
    repo = make_project(
        tmp_path / "chaoslib",
        {
            "pyproject.toml": '[project]\nname = "chaoslib"\nversion = "0.1"\n',
            "chaoslib/__init__.py": "",
            "chaoslib/rnn.py": DRIFTING.replace("jnp.asarray(X0)", "jax.tree_map(jnp.asarray, X0)"),
            "tests/test_rnn.py": (
                "import numpy as np\nfrom chaoslib.rnn import trajectory\n\n\n"
                "def test_bounded():\n    assert np.all(np.abs(trajectory()) <= 1)\n"
            ),
        },
    )
    migrate_on_branch(repo)
    assert "jax.tree_map" not in (repo / "chaoslib" / "rnn.py").read_text()
    res = hcmigrate_verify(
        ".", "--pytest", "tests", "--reference", "legacy", cwd=repo, env=user_env(CI="true")
    )
    assert res.returncode == 1, res.stdout + res.stderr
    note = next(ln for ln in res.stdout.splitlines() if "note: drift check not possible" in ln)
    assert (
        ("for 1 test(s) (tests/test_rnn.py::test_bounded, ...): the original does not run on JAX ")
        in note
        and "jax.tree_map" in note
        and "may be JAX's drift" in note
    ), note


OLD_API = """\
import jax
import jax.numpy as jnp
from jax.experimental import host_callback as hcb

SCALE = jax.tree_map(lambda x: x * 2, {"a": jnp.ones(2)})["a"]


def main():
    return hcb.id_tap(lambda a, t: None, SCALE)


if __name__ == "__main__":
    main()
"""


def test_an_original_only_legacy_jax_runs_gets_advice_on_the_compat_reference(tmp_path):
    """An original using an API current JAX removed cannot run on the default (compat)
    reference: one line naming the API and the option that runs it, no traceback; as a script
    and as a package's tests (failing at collection)."""
    script = tmp_path / "old_api.py"
    script.write_text(OLD_API)
    advice = (
        "COULD NOT RUN: the original uses `jax.tree_map`, which current JAX no longer has "
        "(removed in JAX 0.6.0), so it cannot run on the compat reference (the compat runtime "
        "on current JAX): use --reference legacy (real jax 0.4.30)"
    )
    res = hcmigrate_verify(script, cwd=tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stdout.rstrip().endswith(advice) and "Traceback" not in res.stdout
    repo = make_project(
        tmp_path / "oldlib",
        {
            "oldlib/__init__.py": "",
            "oldlib/core.py": OLD_API,
            "tests/test_core.py": "from oldlib.core import main\n\n\ndef test_main():\n    main()\n",
        },
    )
    res = hcmigrate_verify(".", "--pytest", "tests", cwd=repo, env=user_env())
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stdout.rstrip().endswith(advice), res.stdout


def test_an_already_migrated_file_is_refused_not_verified_against_itself(tmp_path):
    """A migrated module whose docstring and comments still name host_callback has nothing to
    verify; a module importing it inside a function still does."""
    migrated = tmp_path / "migrated.py"
    migrated.write_text(
        '"""Progress taps (formerly jax.experimental.host_callback.id_tap)."""\n'
        "import jax\n\n\n"
        "def main():\n"
        "    # was: host_callback.id_tap(print, 1)\n"
        "    jax.debug.callback(print, 1)\n"
        "    jax.effects_barrier()\n"
    )
    res = hcmigrate_verify(migrated, cwd=tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "the original does not use jax.experimental.host_callback" in res.stdout
    inner = tmp_path / "inner.py"
    inner.write_text(
        "def main():\n"
        "    from jax.experimental import host_callback\n"
        "    import jax.numpy as jnp\n"
        "    host_callback.id_tap(lambda a, t: print(a), jnp.ones(1))\n"
    )
    res = hcmigrate_verify(inner, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr


def test_a_test_import_the_project_does_not_declare_is_named_in_one_line(legacy_python, tmp_path):
    """The tests import a package (yaml) the candidate's environment has and the project never
    declared: the legacy reference lacks it; one line names it and the option that adds it,
    said once the reference has collected, before any other test runs (hoi's 1,543 tests ran
    for 5 minutes first)."""
    repo = steplib(tmp_path)
    tests = repo / "tests" / "test_progress.py"
    tests.write_text("import yaml  # noqa: F401\n" + tests.read_text())
    ran = tmp_path / "other-ran-on-the-reference"
    (repo / "tests" / "test_other.py").write_text(
        "import jax\n\n\ndef test_other():\n"
        f"    if jax.__version__.startswith('0.4.'):\n        open({str(ran)!r}, 'w').close()\n"
    )
    res = legacy_gate(repo, os.environ.copy(), "--project-deps")
    assert res.returncode == 2, res.stdout + res.stderr
    assert not ran.exists()  # (collected, never run)
    last = res.stdout.rstrip().splitlines()[-1]
    assert last.startswith(
        "COULD NOT RUN: the original's tests need the module `yaml` (ModuleNotFoundError: No "
        "module named 'yaml'), which the reference environment (legacy jax 0.4.30"
    ), res.stdout
    assert "--project-deps-from FILE" in last


def test_project_deps_resolve_as_of_the_legacy_jax_release(legacy_python, tmp_path):
    """With uv (a dependency of hcmigrate), the project's dependencies are resolved with an
    upload-date bound, the day jax 0.4.30 came out: an unpinned tqdm is 4.66.4 (4.66.5 came in August 2024), not
    today's; the note names the bound and the pins."""
    repo = make_project(
        tmp_path / "eralib",
        {
            "pyproject.toml": '[project]\nname = "eralib"\nversion = "0.1"\ndependencies = ["tqdm"]\n',
            "eralib/__init__.py": "",
            "eralib/progress.py": PROGRESS.replace("steplib", "eralib"),
            "tests/test_progress.py": TESTS.replace("steplib", "eralib")
            + (
                "\n\ndef test_tqdm_of_the_era():\n"
                "    import jax, tqdm\n"
                "    if jax.__version__ == '0.4.30':\n"
                "        assert tqdm.__version__ == '4.66.4', tqdm.__version__\n"
                "    assert float(run(1.0)) > 0\n"
            ),
        },
    )
    res = legacy_gate(repo, user_env(), "--project-deps")
    assert res.returncode == 0, res.stdout + res.stderr
    assert (
        "note: project dependencies resolved as of 2024-06-19, the release of jax 0.4.30 (uv "
        "--exclude-newer): tqdm==4.66.4"
    ) in res.stdout, res.stdout
    assert "ok   tests/test_progress.py::test_tqdm_of_the_era: passed" in res.stdout
    # In CI a requirement file named by --project-deps-from is read as the base has it: the
    # pull request's adds the compat runtime's wheel, which the legacy reference cannot install
    # (nor needs: it runs the base)
    (repo / "requirements.txt").write_text("tqdm\n", encoding="utf-8")
    git(repo, "add", "requirements.txt")
    git(repo, "commit", "-q", "-m", "requirements file")
    migrate_on_branch(repo)
    (repo / "requirements.txt").write_text("tqdm\nhcmigrate-compat\n", encoding="utf-8")
    git(repo, "commit", "-q", "-am", "a requirement the base lacks")
    base = git(repo, "rev-parse", "main")
    ci = legacy_gate(repo, user_env(CI="true"), "--project-deps-from", "requirements.txt")
    assert ci.returncode == 0, ci.stdout + ci.stderr
    assert f"--project-deps-from read at {base[:12]}: requirements.txt" in ci.stdout, ci.stdout
    assert "tqdm==4.66.4" in ci.stdout and "hcmigrate-compat" not in ci.stdout, ci.stdout


def test_older_reference_jax_releases_have_their_own_upload_date():
    """The older legacy JAX the reference may run (0.4.25, the last whose host_callback does
    not warn; 0.4.23, blackjax 1.1.0's) get the bound of their own release: an unpinned tqdm
    resolves to that day's release, not to pip's newest."""
    from hcmigrate.verify.era import as_of_era

    for jax_version, numpy, date, tqdm in [
        ("0.4.25", "1.26.4", "2024-02-26", "4.66.2"),  # (4.66.3 came in May 2024)
        ("0.4.23", "1.24.4", "2023-12-15", "4.66.1"),  # (4.66.2 came in February 2024)
    ]:
        notes: list[str] = []
        assert as_of_era(["tqdm"], jax_version, numpy, notes) == [f"tqdm=={tqdm}"], notes
        assert notes == [
            f"project dependencies resolved as of {date}, the release of jax {jax_version} "
            f"(uv --exclude-newer): tqdm=={tqdm}"
        ]


def test_the_reference_jax_is_the_one_the_original_ran_with(tmp_path):
    """The reference runs the JAX the original ran with: the newest legacy JAX released by the
    day it was committed (blackjax 1.1.0, December 2023: 0.4.23, whose host_callback and
    jnp.clip do not warn under its `filterwarnings = error`), and none newer than the APIs it
    uses allow (ott-jax 0.4.3's `jax.random.PRNGKeyArray`, gone in 0.4.24: 0.4.23), each with
    a note. Uses in fallbacks that only run where the API exists (`except ImportError`, a
    `hasattr` or version test) do not count, nor one no JAX here has."""
    from hcmigrate.verify.reference_jax import choose_reference_jax

    def chosen(files: dict[str, str], date: str | None = None) -> tuple[str, list[str]]:
        root = tmp_path / f"p{len(list(tmp_path.iterdir()))}"
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        notes: list[str] = []
        return choose_reference_jax(root, "0.4.30", notes, date=date), notes

    key_type = "import jax\n\ndef draw(key: jax.random.PRNGKeyArray):\n    return key\n"
    config = "from jax.config import config\n\nconfig.update('jax_enable_x64', True)\n"
    assert chosen({"pkg/keys.py": key_type, "pkg/setup.py": config}) == (
        "0.4.23",
        [
            "reference: jax 0.4.23: the original uses `jax.random.PRNGKeyArray` "
            "(pkg/keys.py), removed in JAX 0.4.24 (--reference-jax VERSION chooses another)"
        ],
    )
    assert chosen({"pkg/setup.py": config})[0] == "0.4.25"  # (jax.config: gone in 0.4.29)
    # committed on a day: the newest legacy JAX released by then (0.4.25: 2024-02-25)
    assert chosen({"pkg/ok.py": "import jax\n"}, date="2024-03-01") == (
        "0.4.25",
        [
            "reference: jax 0.4.25, the newest legacy JAX released by 2024-03-01, when the "
            "original was committed (--reference-jax VERSION chooses another)"
        ],
    )
    assert chosen({"pkg/ok.py": "import jax\n"}, date="2023-06-01") == (
        "0.4.23",
        [
            "reference: jax 0.4.23, the oldest legacy JAX this tool picks by date: the original was "
            "committed on 2023-06-01, before its release (--reference-jax VERSION chooses another)"
        ],
    )
    assert chosen({"pkg/ok.py": "import jax\n"}, date="2026-12-01") == ("0.4.30", [])
    # fallbacks that run only where the API exists; a use no JAX here has
    guarded = (
        "import jax\nimport jax.numpy as jnp\n\n"
        "try:\n    import jax.extend.linear_util as lu\nexcept ImportError:\n"
        "    import jax.linear_util as lu\n\n\n"
        "def is_array(x):\n    if hasattr(jax, 'Array'):\n        return isinstance(x, jax.Array)\n"
        "    else:\n        return isinstance(x, jnp.DeviceArray)\n"
    )
    assert chosen({"pkg/compat.py": guarded}) == ("0.4.30", [])
    inline = "import jax\nimport jax.numpy as jnp\n\n\ndef is_array(x):\n    return (\n"
    inline += "        isinstance(x, jax.Array)\n        if hasattr(jax, 'Array')\n"
    inline += "        else isinstance(x, jnp.DeviceArray)\n    )\n"
    assert chosen({"pkg/utils.py": inline}) == ("0.4.30", [])
    early = "import jax\nimport jax.numpy as jnp\n\n\ndef is_array(x):\n"
    early += "    if hasattr(jax, 'Array'):\n        return isinstance(x, jax.Array)\n"
    early += "    return isinstance(x, jnp.DeviceArray)\n"
    assert chosen({"pkg/utils.py": early}) == ("0.4.30", [])
    # removed before every dated reference: 0.4.13, the one older JAX with wheels here
    assert chosen({"pkg/old.py": "import jax.numpy as jnp\nx = jnp.NaN\n" + key_type}) == (
        "0.4.13",
        [
            "reference: jax 0.4.13: the original uses `jax.numpy.NaN` (pkg/old.py), removed in "
            "JAX 0.4.16 (--reference-jax VERSION chooses another)"
        ],
    )
    # current spellings, a removed name only in a virtualenv the walk skips
    clean = {
        "pkg/ok.py": "import jax\ny = jax.tree_util.tree_map(abs, [1])\nkey: jax.Array\n",
        ".venv/lib/jax_old.py": key_type,
    }
    assert chosen(clean) == ("0.4.30", [])


def test_a_removed_api_named_only_in_comments_or_docstrings_keeps_the_reference_jax(tmp_path):
    """cola 0.0.6 (2024-09-24) says `# device = A.device_buffer.device()` in a comment of
    backends/jax_fns.py and reads `array.device` (the property of JAX >= 0.4.31) under a
    `hasattr`: the comment took its reference down to jax 0.4.25, where `array.device` is a
    bound method, so two of its tests failed there ("There is a device mismatch in Product")
    and verify reported them DIFFERENT. A name in a comment or a docstring is no use."""
    from hcmigrate.verify.reference_jax import choose_reference_jax

    root = tmp_path / "pkg"
    root.mkdir()
    (root / "jax_fns.py").write_text(
        "import jax\n\n\n"
        "def eig(A):\n"
        '    """Not `A.device()`: see jax.random.PRNGKeyArray."""\n'
        "    # device = A.device_buffer.device()\n"
        "    return jax.numpy.linalg.eig(A)\n\n\n"
        "def get_device(array):\n"
        "    if not isinstance(array, jax.core.Tracer) and hasattr(array, 'device'):\n"
        "        return array.device\n"
        "    return None  # x.device()\n",
        encoding="utf-8",
    )
    notes: list[str] = []
    assert choose_reference_jax(root, "0.4.30", notes) == "0.4.30"
    assert notes == []
    # the same call in code still counts
    (root / "old.py").write_text(
        "import jax\n\n\ndef dev(A):\n    return A.device()  # jax < 0.4.27\n"
    )
    assert choose_reference_jax(root, "0.4.30", notes) == "0.4.25"
    assert notes == [
        "reference: jax 0.4.25: the original uses `jax.Array.device` (old.py), removed in "
        "JAX 0.4.27 (--reference-jax VERSION chooses another)"
    ]


def test_a_difference_names_the_host_function_not_a_helper_it_hands_data_to(tmp_path):
    """cola 0.0.6's migrated `lambda arg: update_info(jax.tree_util.tree_map(np.array, arg), ())`:
    update_info calls `errorfn(arg)` with part of its argument, and the report's "got
    (candidate)" line named that helper (`lanczos_fact.<locals>.error`) instead of update_info,
    the function the data was followed to."""
    orig = tmp_path / "orig.py"
    orig.write_text(
        textwrap.dedent(
            """\
            import jax
            import jax.numpy as jnp
            import numpy as np
            from jax.experimental import host_callback


            def make(errorfn):
                info = {"errors": []}

                def update_info(ival, _):
                    i, arg = ival
                    info["errors"].append(errorfn(arg))

                def run(x):
                    host_callback.id_tap(update_info, (0, x))
                    return x

                return run, info


            def error(state):
                return float(np.sum(state))


            def main():
                run, info = make(error)
                jax.jit(run)(jnp.ones(3))
                jax.effects_barrier()
                return len(info["errors"])
            """
        )
    )
    cand = tmp_path / "cand.py"
    cand.write_text(
        orig.read_text()
        .replace("from jax.experimental import host_callback\n", "")
        .replace(
            "host_callback.id_tap(update_info, (0, x))",
            "jax.debug.callback(lambda arg: update_info(jax.tree_util.tree_map(np.array, arg), ()),"
            " (0, x + 1), ordered=True)",
        )
    )
    r = hcmigrate_verify(str(orig), "--candidate", str(cand), "--reference", "compat")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "got (candidate):      make.<locals>.update_info((int32[] 0" in r.stdout, r.stdout
    assert "error((int32[]" not in r.stdout, r.stdout


def test_a_test_extra_that_adds_its_list_to_install_requires_is_read(tmp_path):
    """hoi 0.0.1's setup.py: `install_requires=requirements` (read from requirements.txt) and
    `extras_require={"test": requirements + test_deps}`, test_deps a literal list naming
    xarray, which its tests import. The extra was skipped as "not a literal list", so the gate
    stopped (exit 2) saying the project's test requirements do not name xarray."""
    from hcmigrate.verify.project_deps import project_dependencies

    (tmp_path / "requirements.txt").write_text("jax\nnumpy>=1.22\ntqdm\n")
    (tmp_path / "setup.py").write_text(
        textwrap.dedent(
            """\
            from setuptools import setup

            with open("requirements.txt") as f:
                requirements = f.read().splitlines()
            test_deps = ["pytest", "xarray"]
            doc_deps = ["sphinx"]
            setup(
                name="hoi",
                install_requires=requirements,
                extras_require={
                    "test": requirements + test_deps,
                    "doc": requirements + doc_deps,
                    "odd": requirements + unknown,
                },
            )
            """
        )
    )
    deps = project_dependencies(tmp_path)
    assert deps.requirements == ["numpy>=1.22", "tqdm", "xarray"]
    assert "setup.py extra 'test'" in deps.used
    assert not any("'test'" in s for s in deps.skipped), deps.skipped


def test_an_unfinished_migration_is_a_difference_that_says_so(tmp_path):
    """A pull request whose conftest still imports host_callback (so the candidate's pytest
    cannot start) is exit 1, DIFFERENT, with the reason under each test: the migration is not
    finished there; never "could not run" (exit 2), which reads as verify's own trouble."""
    repo = make_project(
        tmp_path / "steplib",
        {
            "pyproject.toml": '[project]\nname = "steplib"\nversion = "0.1"\n',
            "steplib/__init__.py": "",
            "steplib/progress.py": PROGRESS,
            "tests/conftest.py": "from jax.experimental import host_callback as hcb  # noqa\n",
            "tests/test_progress.py": TESTS,
        },
    )
    git(repo, "checkout", "-q", "-b", "migrate")
    (repo / "steplib" / "progress.py").write_text(
        PROGRESS.replace(
            "from jax.experimental import host_callback as hcb", "import compat as hcb"
        ),
        encoding="utf-8",
    )
    git(repo, "commit", "-q", "-am", "half a migration")
    res = hcmigrate_verify(".", "--pytest", "tests", cwd=repo, env=user_env(CI="true"))
    assert res.returncode == 1, res.stdout + res.stderr
    assert (
        "       why: the candidate still uses jax.experimental.host_callback, which JAX "
    ) in res.stdout, res.stdout
    assert "the migration is not finished there" in res.stdout
    assert "DIFFERENT: 1 of 1 test(s) differ" in res.stdout


def test_a_backport_pinned_for_an_older_python_does_not_stop_the_reference(legacy_python, tmp_path):
    """jax-sgmc declares the `dataclasses` backport unconditionally: resolved as of the legacy
    release, uv (which ignores Requires-Python upper bounds) pins `dataclasses==0.8`, for Python
    3.6 only, and pip refuses it. The reference environment takes the release pip may install
    here instead, and the gate runs."""
    repo = make_project(
        tmp_path / "backlib",
        {
            "pyproject.toml": (
                '[project]\nname = "backlib"\nversion = "0.1"\ndependencies = ["dataclasses"]\n'
            ),
            "backlib/__init__.py": "",
            "backlib/progress.py": PROGRESS.replace("steplib", "backlib"),
            "tests/test_progress.py": TESTS.replace("steplib", "backlib"),
        },
    )
    migrate_on_branch(repo)
    # (a cache of its own, so the project's environment is built by this run; the legacy JAX
    # environment is the suite's, linked)
    cache = tmp_path / "cache"
    cache.mkdir()
    legacy_env = Path(legacy_python).parent.parent
    (cache / legacy_env.name).symlink_to(legacy_env, target_is_directory=True)
    res = legacy_gate(repo, user_env(CI="true", HCMIGRATE_CACHE_DIR=str(cache)), "--project-deps")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "dataclasses==0.8" in res.stdout  # (what uv chose, as the note says)
    # (and what pip did instead, as the build says)
    assert (
        "hcmigrate: dataclasses==0.8: no release for this Python (Requires-Python); pip "
        "chooses one that is"
    ) in res.stderr, res.stderr
    assert host_calls(res.stdout) == 3


# A suite written against JAX 0.4.13 (SGMCMCJax's): its test calls `jnp.alltrue`, which JAX
# removed in 0.4.16, before every dated legacy reference.
OLD_SUITE_TESTS = """\
import jax.numpy as jnp

from steplib.progress import run


def test_run_halves():
    assert jnp.alltrue(run(jnp.float32(4.0)) > 0)
"""


def test_an_original_older_than_the_dated_references_runs_on_jax_0_4_13(tmp_path):
    """The reference runs the JAX the original ran with even before 0.4.18: a suite calling
    `jnp.alltrue` gets jax 0.4.13 (the one such JAX with wheels for this Python) and is
    compared. Told to run 0.4.23, which lacks it, the reference cannot run that test: it is
    not compared and not a difference (exit 2), and the line says which JAX would run it."""
    repo = steplib(tmp_path, OLD_SUITE_TESTS)
    migrate_on_branch(repo)
    assert "jnp.all(" in (repo / "tests" / "test_progress.py").read_text()
    env = user_env(CI="true")
    res = legacy_gate(repo, env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "reference: legacy jax 0.4.13" in res.stdout, res.stdout
    assert (
        "note: reference: jax 0.4.13: the original uses `jax.numpy.alltrue` "
        "(tests/test_progress.py), removed in JAX 0.4.16"
    ) in res.stdout, res.stdout
    assert host_calls(res.stdout) == 3
    told = legacy_gate(repo, env, "--reference-jax", "0.4.23")
    assert told.returncode == 2, told.stdout + told.stderr
    assert (
        # (`jnp.alltrue` fails before its argument, the run, is evaluated)
        "  SKIP tests/test_progress.py::test_run_halves: failed in the reference, passed in the "
        "candidate, 0 host call(s) in the reference, 3 in the candidate\n"
        "       the reference cannot run the original: `jax.numpy.alltrue` is not in JAX 0.4.23 "
        "(removed in JAX 0.4.16)\n"
        "COULD NOT RUN: the reference cannot run the original: 1 test(s) failed there on "
        "`jax.numpy.alltrue` (removed in JAX 0.4.16): the reference's JAX no longer has it, "
        "so they were not compared (no other test was); --reference-jax 0.4.13 runs a "
        "legacy JAX before that"
    ) in told.stdout, told.stdout


def test_a_dependency_warning_on_import_is_not_the_migration(tmp_path):
    """blackjax's suite runs under `filterwarnings = error` and imports jaxopt: today's jaxopt
    warns on import ("no longer maintained"), the reference's did not. The candidate's test
    module then fails to collect; that is a package version outside the migration (exit 3,
    the package named), not a difference."""
    site = tmp_path / "site"
    (site / "oldopt").mkdir(parents=True)
    (site / "oldopt" / "__init__.py").write_text(
        "import warnings\n\nimport jax\n\n"
        "if int(jax.__version__.split('.')[1]) > 4:  # (the candidate's JAX)\n"
        "    warnings.warn('oldopt is no longer maintained', DeprecationWarning)\n",
        encoding="utf-8",
    )
    repo = steplib(tmp_path, "import oldopt  # noqa: F401\n" + TESTS, WARNINGS_ARE_ERRORS)
    migrate_on_branch(repo)
    res = legacy_gate(repo, user_env(CI="true", PYTHONPATH=str(site)))
    assert res.returncode == 3, res.stdout + res.stderr
    assert "CANDIDATE BROKEN (not by the migration)" in res.stdout, res.stdout
    assert (
        "the candidate's environment's `oldopt` warns on import (`DeprecationWarning: oldopt is "
        "no longer maintained`)"
    ) in res.stdout, res.stdout


def test_a_deprecation_the_reference_makes_an_error_is_not_a_difference(legacy_python, tmp_path):
    """A suite under `filterwarnings = error` whose test calls `jnp.clip(x, a_max=...)`: jax
    0.4.30 deprecates that keyword (since 0.4.27), so the original ran with an older JAX: the
    reference is 0.4.25. Told to run 0.4.30, the original fails there while the candidate
    (rewritten) passes: not a difference; the test is not compared, and the line names the
    JAX before the deprecation."""
    clipping = TESTS.replace(
        "assert float(run(jnp.float32(4.0))) > 0",
        "assert float(jnp.clip(run(jnp.float32(4.0)), a_max=100.0)) > 0",
    )
    repo = steplib(tmp_path, clipping, WARNINGS_ARE_ERRORS)
    migrate_on_branch(repo)
    assert "a_max" not in (repo / "tests" / "test_progress.py").read_text()
    env = user_env(CI="true")
    res = legacy_gate(repo, env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (
        "note: reference: jax 0.4.25: the original uses `jax.numpy.clip` "
        "(tests/test_progress.py), deprecated in JAX 0.4.27, which the project's warning "
        "filters make an error"
    ) in res.stdout, res.stdout
    assert host_calls(res.stdout) == 3
    res = legacy_gate(repo, env, "--reference-jax", "0.4.30")
    assert res.returncode == 2, res.stdout + res.stderr
    assert (
        "       the reference cannot run the original: JAX 0.4.30 deprecates "
        "`jax.numpy.clip(a/a_min/a_max=...)` (since JAX 0.4.27) and the project's warning filters make "
        "that an error\n"
        "COULD NOT RUN: the reference cannot run the original: 1 test(s) failed there on "
        "`jax.numpy.clip(a/a_min/a_max=...)` (deprecated in JAX 0.4.27): the reference's JAX "
        "deprecates "
        "it, and the project's warning filters make that an error, so they were not compared "
        "(no other test was); --reference-jax 0.4.25 runs a legacy JAX before that"
    ) in res.stdout, res.stdout


# A solver test that draws its input without a seed (CoLA's `generate_pd_from_diag(seed=None)`):
# its host calls differ from one run of the original to the next.
UNSEEDED = """\
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import host_callback as hcb


def _record(value, transforms):
    pass


def run(x):
    start = float(np.random.rand())

    def body(carry, i):
        carry = hcb.id_tap(_record, carry * 0.5 + start, result=carry * 0.5 + start)
        return carry, None

    return jax.lax.scan(body, x, jnp.arange(3))[0]
"""


def test_a_test_whose_original_differs_from_itself_is_not_compared(legacy_python, tmp_path):
    """Host calls that change from run to run of the original itself cannot tell whether the
    migration changed them: such a test is set apart (SKIP, exit 2 naming it and how to leave
    it out), never DIFFERENT."""
    repo = make_project(
        tmp_path / "noisylib",
        {
            "pyproject.toml": '[project]\nname = "noisylib"\nversion = "0.1"\n',
            "noisylib/__init__.py": "",
            "noisylib/solve.py": UNSEEDED,
            "tests/test_solve.py": (
                "import jax.numpy as jnp\nfrom noisylib.solve import run\n\n\n"
                "def test_converges():\n    assert float(run(jnp.float32(1.0))) > 0\n"
            ),
        },
    )
    migrate_on_branch(repo)
    res = legacy_gate(repo, user_env(CI="true"))
    assert res.returncode == 2, res.stdout + res.stderr
    assert "  SKIP tests/test_solve.py::test_converges: passed, 3 host call(s)\n" in res.stdout
    assert (
        "not compared: the original's own host calls differ from one run to the next" in res.stdout
    )
    assert (
        "COULD NOT RUN: 1 test(s) make host calls that differ from one run of the original to "
        "the next on the same JAX (tests/test_solve.py::test_converges: "
    ) in res.stdout, res.stdout
    assert '(-- -k "not test_converges")' in res.stdout, res.stdout


def test_a_mixed_set_apart_counts_each_cause_apart():
    """Two tests the reference's JAX cannot run and one that differs from itself: the
    message counts the two on the removed API, and names the third apart (it was counted
    with them)."""
    from hcmigrate.jax_removals import REMOVED_APIS
    from hcmigrate.verify.classify import Failure
    from hcmigrate.verify.differences import Comparison
    from hcmigrate.verify.outcome import Outcome, not_comparable
    from hcmigrate.verify.pytest_mode import _why_not_comparable

    row = next(r for r in REMOVED_APIS if r.removed_in)
    failure = Failure("removed-jax-api", row.name, row, "AttributeError: gone")
    out = Outcome(exit_code=2, original="o.py")
    out.comparison = Comparison(
        tests=[{"nodeid": f"t.py::test_{i}", "category": "c"} for i in range(3)]
        + [{"nodeid": "t.py::test_ok"}]
    )
    out.not_comparable = [
        not_comparable("t.py::test_0", failure.kind, failure.message, failure),
        not_comparable("t.py::test_1", failure.kind, failure.message, failure),
        not_comparable("t.py::test_2", "nondeterministic", "event #3 differs"),
    ]
    why = _why_not_comparable(out)
    assert "2 test(s) failed there on" in why, why
    assert f"`{row.name}`" in why, why
    assert "1 more test(s) differ from one run of the original to the next" in why, why
    assert "t.py::test_2" in why and "the 1 other test(s) above were" in why, why
