"""Each case of fixtures/merge/ is migrated in its project's tree as a user runs hcmigrate, and
read as a pull request to that project (issue 27):

- the files written are the reviewed ones (`after/`), and nothing else changes;
- a line of the file that the migration replaced or removed is part of a statement that uses
  a legacy name (the diff touches only what the migration needs);
- the project's own checkers, with its own configuration (ruff's linter, ruff format or black,
  isort), pass on every written file that they passed before;
- a second run changes nothing.
"""

from __future__ import annotations

import pytest

import shutil
from pathlib import Path

from tests.cli_helpers import run

from tests.merge_helpers import (
    MERGE,
    cases,
    findings,
    lines_touched_without_need,
    migrate_case,
    run_hcmigrate,
    tree,
)

CASES = cases()


def test_the_corpus_has_a_case_for_each_reason():
    assert len(CASES) >= 10


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_is_mergeable(case, tmp_path):
    project = tmp_path / "project"
    changed, report = migrate_case(case, project)
    assert changed == tree(case / "after")
    assert report == (case / "report.txt").read_text()
    original = tmp_path / "original"  # (out of this repository, whose ruff config excludes it)
    shutil.copytree(case / "before", original)
    for path in changed:
        if path.endswith(".py"):
            compile(changed[path], path, "exec")
            source = (case / "before" / path).read_bytes().decode()
            if Path(path).name != "setup.py":  # (its edits are the metadata's: report.txt)
                assert lines_touched_without_need(source, changed[path].decode()) == [], path
            new = findings(project, path)
            assert new == [] or new == findings(original, path), path
    written = tree(project)
    args = case / "args"
    run_hcmigrate(project, args.read_text().split() if args.is_file() else [])
    assert tree(project) == written


def test_a_dependency_to_declare_by_hand_is_a_manual_finding(tmp_path):
    """A computed install_requires (`BASE + [...]`: not a literal list, nor a name bound to
    one) is not edited: the run that chose the compat runtime names the file and exits as
    runs with sites left for a human do."""
    shutil.copytree(MERGE / "compat_dep_computed" / "before", tmp_path / "p")
    setup_py = tmp_path / "p" / "setup.py"
    setup_py.write_text(setup_py.read_text().replace("=BASE,", '=BASE + ["scipy"],'))
    result = run(["--no-cache", "--strategy", "compat", "."], cwd=tmp_path / "p")
    assert "setup.py: manual: this project now imports hcmigrate_compat" in result.output
    assert result.exit_code == 1
    # a second run changes no file, and still names it: it exits as the first did
    again = run(["--no-cache", "--strategy", "compat", "."], cwd=tmp_path / "p")
    assert "setup.py: manual: this project now imports hcmigrate_compat" in again.output
    assert "0 rewritten" in again.output and again.exit_code == 1


def test_no_compat_cannot_go_with_the_compat_strategy(tmp_path):
    (tmp_path / "a.py").write_text("from jax.experimental import host_callback as hcb\n")
    result = run(["--strategy", "compat", "--no-compat", "a.py"], cwd=tmp_path)
    assert result.exit_code == 2
    assert "not with no-compat" in result.output


def test_a_project_that_ships_the_compat_runtime_gets_no_dependency_on_it(tmp_path):
    """The README's demo migrates a copy of the examples inside hcmigrate's own tree: the
    nearest pyproject is hcmigrate's, which ships hcmigrate_compat itself."""
    from hcmigrate.projects.compat_dependency import declare_compat

    pyproject = '[project]\nname = "{}"\ndependencies = ["jax"]\n'
    (tmp_path / "pyproject.toml").write_text(pyproject.format("hcmigrate"))
    assert declare_compat(tmp_path) is None
    (tmp_path / "pyproject.toml").write_text(pyproject.format("mysolver"))
    assert '"hcmigrate-compat"' in declare_compat(tmp_path).new_text


def test_a_bazel_target_of_a_module_pointed_at_compat_is_named_for_a_human(tmp_path):
    """(saxml) A BUILD file beside a module lists the module's dependencies in its target:
    hcmigrate edits no BUILD file, and every run that chose the compat runtime names it while
    the module imports
    hcmigrate_compat and the target does not list it (exit 1, as for a manual site)."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "b"\ndependencies = ["jax"]\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "BUILD").write_text(
        'py_library(\n    name = "serve",\n    srcs = ["serve.py"],\n'
        '    deps = ["//third_party/py/jax"],\n)\n'
    )
    (tmp_path / "pkg" / "serve.py").write_text(
        "from jax.experimental import host_callback as hcb\n\n\n"
        "def step(x):\n    return hcb.id_tap(print, x, device_index=1)\n"
    )
    line = (
        "pkg/BUILD: manual: the Bazel target whose srcs has serve.py lists its dependencies: "
        "add `hcmigrate-compat` (imported as hcmigrate_compat) there by hand"
    )
    first = run(["--no-cache", "--strategy", "compat", "."], cwd=tmp_path)
    assert line in first.output and first.exit_code == 1, first.output
    assert "hcmigrate_compat" in (tmp_path / "pkg" / "serve.py").read_text()
    assert "added `hcmigrate-compat` to pyproject.toml" in first.output
    again = run(["--no-cache", "--strategy", "compat", "."], cwd=tmp_path)
    assert line in again.output and again.exit_code == 1, again.output
    # (the summary counts it apart from the sites: "0 manual" sites, yet the run exits 1)
    assert again.output.rstrip().endswith("0 manual; 1 by hand in the project's files"), (
        again.output
    )


def test_the_dependency_goes_where_a_sorted_requirements_file_sorts_it(tmp_path):
    """(chex) A requirements file sorted by name gets `hcmigrate-compat` in its place; one
    that is not sorted, or holds more than requirements, gets it at the end."""
    from hcmigrate.projects.compat_dependency import declare_compat

    cases = {
        "absl-py>=0.9\n# pinned\nJax>=0.4.30\ntoolz\n": "absl-py>=0.9\n# pinned\nhcmigrate-compat\nJax>=0.4.30\ntoolz\n",
        "absl_py\ndm-tree\n": "absl_py\ndm-tree\nhcmigrate-compat\n",
        "numpy\njax\n": "numpy\njax\nhcmigrate-compat\n",
        "-r base.txt\njax\nnumpy\n": "-r base.txt\njax\nnumpy\nhcmigrate-compat\n",
    }
    for before, after in cases.items():
        (tmp_path / "requirements.txt").write_text(before)
        assert declare_compat(tmp_path).new_text == after, before
