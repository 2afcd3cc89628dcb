"""`hcmigrate verify` raises no false alarm: on every codemod fixture (NAME.in.py against
NAME.out.py), on legacy programs whose codemod migration reaches the host function through a
wrapper of its own (tap factories, callbacks passed through parameters, bound methods,
partials, helpers), on notebooks, and on programs that configure JAX through the environment
before importing it; and it still names what differs (per notebook cell). Real JAX on both
sides: jax 0.4.30 in the cached legacy venv and the compat runtime on current JAX."""

from __future__ import annotations


import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from verify_helpers import hcmigrate_verify

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
PROGRAMS = FIXTURES / "verify" / "no_false_alarm"
CASES = FIXTURES / "verify"


CODEMOD_PAIRS = sorted(p.name[: -len(".in.py")] for p in FIXTURES.glob("*.in.py"))
# Written for a JAX older than 0.4.30: they use APIs jax 0.4.30 no longer had (`from
# jax.config import config`, removed in 0.4.29; jax.random.PRNGKeyArray, 0.4.24), which the
# JAX-removal rules rewrite; the reference runs the newest legacy JAX that has them
# (hcmigrate.verify.reference_jax), and says so.
NEED_OLDER_JAX = {"jr1_removed_apis_import_styles"}


@pytest.fixture(scope="module")
def codemod_pair_reports(legacy_python) -> dict:
    """Every codemod fixture verified against its expected output, two at a time."""

    def one(name):
        return name, hcmigrate_verify(
            FIXTURES / f"{name}.in.py",
            "--candidate",
            FIXTURES / f"{name}.out.py",
            "--reference",
            "legacy",
        )

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, CODEMOD_PAIRS))


@pytest.mark.parametrize("name", CODEMOD_PAIRS)
def test_codemod_fixture_raises_no_false_alarm(name, codemod_pair_reports):
    res = codemod_pair_reports[name]
    original = (FIXTURES / f"{name}.in.py").read_text(encoding="utf-8")
    migrated = (FIXTURES / f"{name}.out.py").read_text(encoding="utf-8")
    out = res.stdout + res.stderr
    if re.search(r"^\s*import mypkg|^\s*from mypkg", original, re.M):
        # imports a package that exists only in the codemod's cross-module tests
        assert res.returncode == 2 and "No module named 'mypkg'" in out, out
    elif name in NEED_OLDER_JAX:
        assert res.returncode == 0, out
        assert "reference: legacy jax 0.4.23" in out and "EQUIVALENT" in out, out
        assert "note: reference: jax 0.4.23: the original uses `jax.numpy.NINF`" in out, out
    elif re.search(r"^from jax\.experimental import host_callback", migrated, re.M):
        # sites the codemod leaves for a human (internals, suppressions): the candidate cannot
        # run on current JAX, and the report says why instead of listing calls as missing
        assert res.returncode == 1, out
        assert "the candidate still uses jax.experimental.host_callback" in out, out
    else:
        assert res.returncode == 0, out
        assert "EQUIVALENT" in out


PROGRAM_NAMES = sorted(p.name for p in PROGRAMS.iterdir() if p.suffix in (".py", ".ipynb"))


@pytest.mark.parametrize("reference", ["legacy", "compat"])
@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_codemod_migration_verifies_equivalent(name, reference, legacy_python):
    res = hcmigrate_verify(PROGRAMS / name, "--reference", reference)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "migrated by the codemod" in res.stdout
    assert re.search(r"EQUIVALENT: [1-9]\d* host call", res.stdout), res.stdout


def test_tap_factory_calls_are_named_by_the_function_they_reach(legacy_python, tmp_path):
    """The reference calls `trace.<locals>._tap`; the candidate a lambda around
    `trace("scan")`: both reach the same function, which the trace records."""
    res = hcmigrate_verify(
        PROGRAMS / "tap_factory.py", "--reference", "legacy", "--keep-traces", tmp_path
    )
    assert res.returncode == 0, res.stdout + res.stderr
    ref = json.loads((tmp_path / "reference.json").read_text())
    cand = json.loads((tmp_path / "candidate.json").read_text())
    assert ref["events"][0]["callback"]["name"] == "__main__.trace.<locals>._tap"
    assert cand["events"][0]["callback"]["lambda"] is True
    assert cand["events"][0]["receivers"] == ["__main__.trace.<locals>._tap"]


def test_a_dropped_factory_tap_is_still_caught(legacy_python, tmp_path):
    from hcmigrate.api import migrate_source

    migrated = migrate_source((PROGRAMS / "tap_factory.py").read_text()).code
    line = next(x for x in migrated.splitlines() if 'trace("scan")' in x)
    candidate = tmp_path / "tap_factory.py"
    candidate.write_text(migrated.replace(line + "\n", ""))
    res = hcmigrate_verify(
        PROGRAMS / "tap_factory.py", "--candidate", candidate, "--reference", "legacy"
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert "event #0 `trace.<locals>._tap` via id_tap (ordered) is missing" in res.stdout


def test_lambdas_passed_as_parameters_are_identified_by_the_lambda_they_reach(
    legacy_python, tmp_path
):
    """The reference taps the caller's lambda itself; the candidate reaches it through the
    codemod's `def tap_on_step(arg): on_step(jax.tree.map(np.array, arg), ())` (numpy copies,
    the value dropped for an io_callback). Both calls finally reach the same lambda (one of
    several in `main`, told apart by the names it refers to): no false alarm."""
    res = hcmigrate_verify(
        PROGRAMS / "lambda_parameters.py", "--reference", "legacy", "--keep-traces", tmp_path
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "EQUIVALENT: 8 host call(s)" in res.stdout
    ref = json.loads((tmp_path / "reference.json").read_text())
    cand = json.loads((tmp_path / "candidate.json").read_text())
    taps = [e for e in cand["events"] if e["callback"]["simple"] == "tap_on_step"]
    assert len(taps) == 4
    assert [e["host"]["name"] for e in taps] == ["__main__.main.<locals>.<lambda>"] * 4
    assert [e["host"]["refs"] for e in taps] == [["SEEN", "append", "int"]] * 2 + [
        ["TOTALS", "append", "float", "round", "sum"]
    ] * 2
    assert ref["events"][0]["host"]["refs"] == ["SEEN", "append", "int"]


def test_another_lambda_passed_as_parameter_is_still_caught(legacy_python, tmp_path):
    from hcmigrate.api import migrate_source

    migrated = migrate_source((PROGRAMS / "lambda_parameters.py").read_text()).code
    wrong = migrated.replace(
        "lambda arg, _: SEEN.append(int(arg[0]))", "lambda arg, _: TOTALS.append(int(arg[0]))"
    )
    assert wrong != migrated
    candidate = tmp_path / "lambda_parameters.py"
    candidate.write_text(wrong)
    res = hcmigrate_verify(
        PROGRAMS / "lambda_parameters.py", "--candidate", candidate, "--reference", "legacy"
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert "event #0 `main.<locals>.<lambda>` via id_tap (ordered) is missing" in res.stdout


def test_x64_by_environment_verifies_on_the_compat_reference_too():
    res = hcmigrate_verify(
        CASES / "x64_from_environment.original.py",
        "--candidate",
        CASES / "x64_from_environment.good.py",
        "--reference",
        "compat",
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_program_starts_with_nothing_imported(legacy_python, tmp_path):
    """As `python script.py`: neither jax nor numpy is imported before the program's first line."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys\n"
        "print('preloaded', sorted(m for m in ('jax', 'numpy') if m in sys.modules))\n"
        "import jax\n"
    )
    res = hcmigrate_verify(
        script, "--candidate", script, "--reference", "legacy", "--keep-traces", tmp_path / "t"
    )
    assert res.returncode == 0, res.stdout + res.stderr
    for side in ("reference", "candidate"):
        trace = json.loads((tmp_path / "t" / f"{side}.json").read_text())
        assert trace["stdout"] == "preloaded []\n", trace["stdout"]


def test_notebook_difference_names_the_cell_and_line(legacy_python, tmp_path):
    from hcmigrate.api import Options
    from hcmigrate.notebook import migrate_notebook

    notebook = PROGRAMS / "notebook.ipynb"
    migrated = json.loads(migrate_notebook(notebook.read_text(), Options()).code)
    # the original's cell 3 (the tap factory and the scan step): a helper cell the rewrite adds
    # may stand before it (tests/test_placement.py)
    step_cell = next(
        c
        for c in migrated["cells"]
        if "def trace" in "".join(c["source"]) or "debug.callback(" in "".join(c["source"])
    )
    # the callback statement (laid out over several lines) becomes `pass`
    lines = "".join(step_cell["source"]).splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if "debug.callback(" in line)
    last, depth = first, 0
    for last in range(first, len(lines)):  # (to the line that closes its brackets)
        depth += lines[last].count("(") - lines[last].count(")")
        if depth == 0:
            break
    indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
    lines[first : last + 1] = [f"{indent}pass\n"]
    step_cell["source"] = lines
    candidate = tmp_path / "notebook.ipynb"
    candidate.write_text(json.dumps(migrated, indent=1))
    res = hcmigrate_verify(notebook, "--candidate", candidate, "--reference", "legacy")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "`trace.<locals>._tap` via id_tap (ordered) is missing" in res.stdout
    assert re.search(r"reference source: \S*notebook\.ipynb cell 3, line 9: ", res.stdout), (
        res.stdout
    )


def test_notebook_that_is_not_json_cannot_run(tmp_path):
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json")
    res = hcmigrate_verify(broken, "--candidate", broken)
    assert res.returncode == 2 and "not a readable notebook" in res.stdout


def test_notebook_cells_run_as_a_kernel_runs_them(tmp_path):
    """In the notebook's folder (a module next to it imports), without __file__."""
    (tmp_path / "helper_mod.py").write_text("VALUE = 41\n")
    cell = {
        "cell_type": "code",
        "metadata": {},
        "execution_count": None,
        "outputs": [],
        "source": [
            "import os, helper_mod\n",
            # (an original that never names host_callback is refused: nothing to verify)
            "from jax.experimental import host_callback\n",
            "print(helper_mod.VALUE + 1, os.path.basename(os.getcwd()), '__file__' in globals())",
        ],
    }
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4}))
    res = hcmigrate_verify(notebook, "--keep-traces", tmp_path / "t")
    assert res.returncode == 0, res.stdout + res.stderr
    for side in ("reference", "candidate"):
        trace = json.loads((tmp_path / "t" / f"{side}.json").read_text())
        assert trace["stdout"] == f"42 {tmp_path.name} False\n"
