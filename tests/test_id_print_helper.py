"""The id_print helper once per package (issue 37, hcmigrate.shared_helpers): two or more modules
of a package that print containers import `_print_like_id_print` from one module the run
creates (`<pkg>/_id_print.py`); one module, a script outside packages, or a package where a file
of that name is not ours, keep it inline. `--diff` shows the new file as a patch that creates
it, `--check` counts it, a second run changes nothing, and the programs print what the inline
helper (legacy's text) prints."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from cli_helpers import program, run

HCB = "from jax.experimental import host_callback as hcb\n"
A = HCB + '\n\ndef step(x):\n    hcb.id_print((x, x * 2), what="pair")\n    return x\n'
B = (
    HCB
    + "\nfrom . import other\n\n\n"
    + 'def show(x):\n    hcb.id_print({"a": x, "b": [x, x + 1]}, what="dict", step=3)\n'
    + "    return x + other.X\n"
)
DRIVER = """\
import jax
import jax.numpy as jnp

from pkg.a import step
from pkg.sub.b import show

jax.jit(step)(jnp.arange(3.0))
show(jnp.float32(2.0))
show(jnp.arange(30.0))
jax.effects_barrier()
"""
# What legacy id_print printed for the driver's first values (the wide one, wrapped at 80, is
# compared with the inline helper's text, which tests/test_id_print_text.py compares with
# jax 0.4.30's).
LEGACY = """\
what: pair
( [0. 1. 2.] [0. 2. 4.] )
step: 3 what: dict
{ a=2. b=[ 2. 3. ] }
"""


def package(root):
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "sub" / "__init__.py").write_text("")
    (root / "pkg" / "sub" / "other.py").write_text("X = 1\n")
    (root / "pkg" / "a.py").write_text(A)
    (root / "pkg" / "sub" / "b.py").write_text(B)
    (root / "driver.py").write_text(DRIVER)
    return root


def printed(root) -> str:
    proc = subprocess.run(
        [sys.executable, "driver.py"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=str(root), JAX_PLATFORMS="cpu"),
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def tree(root) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and ".git" not in p.parts
    }


def test_two_modules_of_a_package_import_one_helper_module(tmp_path):
    src = package(tmp_path / "src")
    check = run(["--check", "."], src)
    assert check.exit_code == 1 and "would create pkg/_id_print.py" in check.output
    assert not (src / "pkg" / "_id_print.py").exists()

    shared = tmp_path / "shared"
    shutil.copytree(src, shared)
    res = run(["."], shared)
    assert res.exit_code == 0, res.output
    assert "created pkg/_id_print.py" in res.output
    helper = (shared / "pkg" / "_id_print.py").read_text()
    assert helper.count("def _print_like_id_print(") == 1
    compile(helper, "_id_print.py", "exec")
    a, b = (shared / "pkg" / "a.py").read_text(), (shared / "pkg" / "sub" / "b.py").read_text()
    assert "from pkg._id_print import _print_like_id_print\n" in a  # (absolute, as a's imports)
    assert "from .._id_print import _print_like_id_print\n" in b  # (b imports relatively)
    assert "def _print_like_id_print" not in a + b and "import numpy" not in a + b
    # laid out as black lays it out, and passes the linter
    black = subprocess.run(
        [
            sys.executable,
            "-m",
            "black",
            "--check",
            "-q",
            "pkg/_id_print.py",
            "pkg/a.py",
            "pkg/sub/b.py",
        ],
        cwd=shared,
    )
    assert black.returncode == 0
    lint = subprocess.run(
        ["ruff", "check", "-q", "--isolated", "--select", "E,F,I", "pkg"], cwd=shared
    )
    assert lint.returncode == 0

    # a second run changes nothing and creates nothing
    before = tree(shared)
    again = run(["."], shared)
    assert again.exit_code == 0 and "created" not in again.output
    assert tree(shared) == before
    assert run(["--check", "."], shared).exit_code == 0

    # each module migrated on its own keeps the helper inline; both print legacy's text
    inline = tmp_path / "inline"
    shutil.copytree(src, inline)
    for module in ("pkg/a.py", "pkg/sub/b.py"):
        assert run([module], inline).exit_code == 0
    assert not (inline / "pkg" / "_id_print.py").exists()
    assert "def _print_like_id_print(" in (inline / "pkg" / "a.py").read_text()
    text = printed(shared)
    assert text == printed(inline) and text.startswith(LEGACY) and "\n  b=[ [ 0." in text


def test_the_diff_creates_the_helper_module_as_the_run_writes_it(tmp_path):
    src = package(tmp_path / "src")
    res = program("--diff", "-j2", ".", cwd=src)
    assert res.returncode == 0, res.stderr.decode(errors="replace")
    patch = res.stdout
    assert b"--- /dev/null\n+++ b/pkg/_id_print.py\n" in patch
    assert b"--- a/pkg/a.py\n" in patch and b"--- a/pkg/sub/b.py\n" in patch
    by_git, by_patch = tmp_path / "git", tmp_path / "patch"
    shutil.copytree(src, by_git)
    shutil.copytree(src, by_patch)
    subprocess.run(["git", "init", "-q", "."], cwd=by_git, check=True)
    subprocess.run(["git", "apply", "-"], input=patch, cwd=by_git, check=True)
    subprocess.run(["patch", "-p1", "-s"], input=patch, cwd=by_patch, check=True)
    assert program("-j1", ".", cwd=src).returncode == 0
    written = tree(src)
    assert "pkg/_id_print.py" in written
    assert tree(by_patch) == written
    assert {k: v for k, v in tree(by_git).items()} == written


def test_one_module_keeps_the_helper_inline(tmp_path):
    src = package(tmp_path)
    (src / "pkg" / "sub" / "b.py").write_text("X = 2\n")
    assert run(["."], src).exit_code == 0
    assert not (src / "pkg" / "_id_print.py").exists()
    assert "def _print_like_id_print(" in (src / "pkg" / "a.py").read_text()


def test_scripts_outside_packages_keep_the_helper_inline(tmp_path):
    (tmp_path / "one.py").write_text(A)
    (tmp_path / "two.py").write_text(A.replace("step", "other"))
    assert run(["."], tmp_path).exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.py", "two.py"]
    for name in ("one.py", "two.py"):
        assert "def _print_like_id_print(" in (tmp_path / name).read_text()


def test_a_file_of_that_name_not_ours_is_left_and_modules_keep_their_own(tmp_path):
    src = package(tmp_path)
    (src / "pkg" / "_id_print.py").write_text("VALUE = 1\n")
    assert run(["."], src).exit_code == 0
    assert (src / "pkg" / "_id_print.py").read_text() == "VALUE = 1\n"
    for module in ("pkg/a.py", "pkg/sub/b.py"):
        text = (src / module).read_text()
        assert "def _print_like_id_print(" in text and "_id_print import" not in text


def test_a_later_module_imports_the_helper_module_an_earlier_run_wrote(tmp_path):
    src = package(tmp_path)
    assert run(["."], src).exit_code == 0
    helper = (src / "pkg" / "_id_print.py").read_bytes()
    (src / "pkg" / "c.py").write_text(A.replace("step", "later"))
    res = run(["pkg/c.py"], src)
    assert res.exit_code == 0 and "created" not in res.output
    assert "from pkg._id_print import _print_like_id_print\n" in (src / "pkg" / "c.py").read_text()
    assert (src / "pkg" / "_id_print.py").read_bytes() == helper


def test_id_print_helper_names_the_module_that_holds_it(tmp_path):
    src = package(tmp_path)
    (src / "pkg" / "utils").mkdir()
    (src / "pkg" / "utils" / "__init__.py").write_text("")
    (src / "pyproject.toml").write_text(
        '[tool.hcmigrate]\nid-print-helper = "pkg/utils/printing.py"\n'
    )
    res = run(["."], src)
    assert res.exit_code == 0, res.output
    assert "created pkg/utils/printing.py" in res.output
    assert not (src / "pkg" / "_id_print.py").exists()
    assert "def _print_like_id_print(" in (src / "pkg" / "utils" / "printing.py").read_text()
    a, b = (src / "pkg" / "a.py").read_text(), (src / "pkg" / "sub" / "b.py").read_text()
    assert "from pkg.utils.printing import _print_like_id_print\n" in a
    assert "from ..utils.printing import _print_like_id_print\n" in b
    assert printed(src).startswith(LEGACY)


def test_id_print_helper_outside_a_package_is_an_error(tmp_path):
    package(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.hcmigrate]\nid-print-helper = "tools/p.py"\n')
    res = run(["--check", "."], tmp_path)
    assert res.exit_code == 2 and "id-print-helper must name a .py module" in res.output


def test_a_helper_module_that_cannot_be_created_leaves_its_modules_inline(tmp_path):
    """A file of that name appeared after the plan: nothing is written over it, and the
    modules that would import the helper define it instead."""
    import dataclasses

    from hcmigrate.options import Options
    from hcmigrate.runner import Task
    from hcmigrate.shared_helpers import NewFile, write_new_files

    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "_id_print.py").write_text("MINE = 1\n")
    shared = Options(shared_helpers=(("id_print", "pkg._id_print", "._id_print"),))
    task = Task("a.py", "a.py", False, "fix", shared)
    new = NewFile(tmp_path / "_id_print.py", "pkg/_id_print.py", "HELPER = 1\n", [3])
    tasks = write_new_files([new], [(3, task), (4, task)])
    assert (tmp_path / "_id_print.py").read_text() == "MINE = 1\n"
    assert new.result.status == "failed" and "keep the helper inline" in new.result.error
    assert tasks == [(3, dataclasses.replace(task, options=Options())), (4, task)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["__init__.py", "_id_print.py"]


def test_reports_name_the_created_module_apart(tmp_path):
    import json

    src = package(tmp_path)
    res = run(["--check", "--output-format", "json", "."], src)
    report = json.loads(res.output)
    created = [f for f in report["files"] if f.get("created")]
    assert [f["path"] for f in created] == ["pkg/_id_print.py"]
    assert report["summary"]["files_changed"] == 2 and report["summary"]["files_scanned"] == 6
    github = run(["--check", "--output-format", "github", "."], src).output
    assert "file=pkg/_id_print.py" not in github and "file=pkg/a.py" in github
