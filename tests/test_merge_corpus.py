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

from tests.merge_helpers import (
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
            assert lines_touched_without_need(source, changed[path].decode()) == [], path
            new = findings(project, path)
            assert new == [] or new == findings(original, path), path
    written = tree(project)
    args = case / "args"
    run_hcmigrate(project, args.read_text().split() if args.is_file() else [])
    assert tree(project) == written
