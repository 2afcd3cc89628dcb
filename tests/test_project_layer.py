"""The project layer (hcmigrate.projects, issue 34): real temporary projects of every kind, run
through the real command. For each: only the project that owns the migrated code changes, the
metadata it gets parses, `--diff` applied by `git apply` gives exactly the tree the write gives,
`--check` after a run whose metadata edit was lost (an interrupted run) reports the missing
edit and a rerun completes it, and the floor is the highest release the APIs written into that
package's code need."""

from __future__ import annotations

import configparser
import ast
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from cli_helpers import run

from hcmigrate.native_needs import needs_of

# A package module whose migration writes jax.numpy.trapezoid (JAX 0.4.26: the highest).
CODE = """\
import jax
from jax.experimental import host_callback as hcb


def step(x):
    hcb.id_tap(lambda v, _: print(v), x)
    return jax.numpy.trapz(x)
"""
# A docs example whose migration writes the same: docs do not ship, they raise no floor.
DOCS = CODE


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def _parses(name: str, text: str) -> None:
    if name.endswith(".toml"):
        tomllib.loads(text)
    elif name.endswith(".cfg"):
        configparser.ConfigParser(interpolation=None).read_string(text)
    elif name.endswith(".py"):
        compile(text, name, "exec")


def _highest_need(root: Path, package: str) -> str:
    need = (0,)
    for path in (root / package).rglob("*.py"):
        need = max(need, needs_of(path.read_text()).jax)
    return ".".join(map(str, need))


# (files, the package folder, the metadata file, the floor's text in it after the run)
PROJECTS = {
    "pep621": (
        {
            "pyproject.toml": '[project]\nname = "p"\ndependencies = ["jax>=0.4.1", "numpy"]\n',
            "p/__init__.py": "",
            "p/step.py": CODE,
        },
        "p",
        "pyproject.toml",
        '"jax>=0.4.26"',
    ),
    "poetry": (
        {
            "pyproject.toml": '[tool.poetry]\nname = "p"\n\n[tool.poetry.dependencies]\n'
            'python = "^3.9"\njax = "^0.4.1"\n',
            "p/__init__.py": "",
            "p/step.py": CODE,
        },
        "p",
        "pyproject.toml",
        'jax = "^0.4.26"',
    ),
    "setup-cfg-with-extra": (
        {
            "setup.cfg": "[metadata]\nname = p\n\n[options]\npackages = find:\ninstall_requires =\n"
            "    numpy\n\n[options.extras_require]\njax = jax >= 0.4.1\n",
            "p/__init__.py": "",
            "p/step.py": CODE,
        },
        "p",
        "setup.cfg",
        "jax = jax >= 0.4.26",
    ),
    "setup-py-literal": (
        {
            "setup.py": "from setuptools import setup\n\nsetup(\n    name='p',\n"
            "    install_requires=['jax>=0.4.1'],\n)\n",
            "p/__init__.py": "",
            "p/step.py": CODE,
        },
        "p",
        "setup.py",
        "'jax>=0.4.26'",
    ),
    "setup-py-bound-name": (
        {
            "setup.py": "from setuptools import setup\n\nREQUIRES = ['jax>=0.4.1', 'numpy']\n\n"
            "setup(name='p', install_requires=REQUIRES)\n",
            "p/__init__.py": "",
            "p/step.py": CODE,
        },
        "p",
        "setup.py",
        "'jax>=0.4.26'",
    ),
    "requirements-with-r": (
        {
            "requirements.txt": "-r base.txt\njax>=0.4.1\n",
            "base.txt": "numpy\n",
            "step.py": CODE,
        },
        ".",
        "requirements.txt",
        "jax>=0.4.26",
    ),
}


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.mark.parametrize("kind", PROJECTS)
def test_a_project_gets_the_floor_its_package_code_needs(tmp_path, kind):
    files, package, metadata, floor = PROJECTS[kind]
    root = tmp_path / "proj"
    _write(root, files)
    _write(root, {"docs/example.py": DOCS})
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "before")
    before = _tree(root)

    # --diff, applied with git, gives what the write gives
    diff = run(["--no-cache", "--diff", "."], root)
    patch = tmp_path / "patch.diff"
    patch.write_text(diff.stdout)
    _git(root, "apply", str(patch))
    applied = _tree(root)
    _git(root, "checkout", "-q", ".")
    assert _tree(root) == before
    res = run(["--no-cache", "."], root)
    assert _tree(root) == applied, res.output
    text = (root / metadata).read_text()
    _parses(metadata, text)
    assert floor in text, res.output
    if package != ".":
        assert _highest_need(root, package) == "0.4.26"
    # an interrupted run: the code written, the metadata edit lost
    (root / metadata).write_bytes(before[metadata])
    check = run(["--no-cache", "--check", "."], root)
    assert check.exit_code == 1
    assert f"{metadata}:" in check.output and "would raise the project's JAX floor" in (
        check.output
    ), check.output
    again = run(["--no-cache", "."], root)
    assert (root / metadata).read_text() == text, again.output
    assert run(["--no-cache", "."], root).output.count("HCB008 [fixed]") == 0


def test_docs_and_tests_never_raise_a_distributions_floor(tmp_path):
    """A docs example and a test that now use jax.numpy.trapezoid (0.4.26), in a project whose
    package code needs only jax.debug.callback (0.3.17): the floor stays, and the run says
    what the docs and tests need."""
    files = {
        "pyproject.toml": '[project]\nname = "p"\ndependencies = ["jax>=0.4.1"]\n',
        "p/__init__.py": "",
        "p/tap.py": MONOREPO["packages/b/b/tap.py"],
        "docs/example.py": DOCS,
        "tests/test_step.py": DOCS,
        "examples/demo.ipynb": "",
    }
    _write(tmp_path, {k: v for k, v in files.items() if not k.endswith(".ipynb")})
    res = run(["--no-cache", "."], tmp_path)
    assert (tmp_path / "pyproject.toml").read_text() == files["pyproject.toml"], res.output
    assert "trapezoid" in (tmp_path / "docs/example.py").read_text()
    notes = [line for line in res.output.splitlines() if ": note: uses" in line]
    assert notes == [
        "docs/example.py:7: note: uses jax.numpy.trapezoid, which needs JAX >= 0.4.26, above "
        "the project's JAX floor; docs do not ship: the floor is not raised for them",
        "tests/test_step.py:7: note: uses jax.numpy.trapezoid, which needs JAX >= 0.4.26, "
        "above the project's JAX floor; tests do not ship: the floor is not raised for them",
    ], res.output


def test_a_target_without_metadata_leaves_the_working_folder_alone(tmp_path):
    """`cd somewhere && hcmigrate ../target`: the working folder's metadata is not the
    target's; nothing of it changes."""
    here = tmp_path / "here"
    _write(
        here,
        {
            "requirements.txt": "jax>=0.4.1\n",
            "setup.py": "from setuptools import setup\nsetup(name='h', install_requires=['jax>=0.4.1'])\n",
        },
    )
    _write(tmp_path / "target", {"step.py": CODE})
    (tmp_path / "target" / ".git").mkdir()  # (its own repository: the search stops there)
    before = _tree(here)
    res = run(["--no-cache", "../target"], here)
    assert _tree(here) == before, res.output
    assert "trapezoid" in (tmp_path / "target" / "step.py").read_text()
    assert "HCB008 [fixed]" not in res.output


def test_a_config_file_of_another_project_edits_nothing_there(tmp_path):
    """`--config ../other/pyproject.toml .`: the settings come from there, the metadata edits
    stay in the project that owns the code."""
    other = tmp_path / "other"
    _write(other, {"pyproject.toml": '[project]\nname = "o"\ndependencies = ["jax>=0.4.1"]\n'})
    me = tmp_path / "me"
    _write(
        me,
        {
            "pyproject.toml": '[project]\nname = "m"\ndependencies = ["jax>=0.4.1"]\n',
            "m/__init__.py": "",
            "m/step.py": CODE,
        },
    )
    before = other.joinpath("pyproject.toml").read_text()
    res = run(["--no-cache", "--config", "../other/pyproject.toml", "."], me)
    assert other.joinpath("pyproject.toml").read_text() == before, res.output
    assert '"jax>=0.4.26"' in me.joinpath("pyproject.toml").read_text(), res.output


MONOREPO = {
    "packages/a/pyproject.toml": '[project]\nname = "a"\ndependencies = ["jax>=0.4.1"]\n',
    "packages/a/a/__init__.py": "",
    "packages/a/a/step.py": CODE,
    "packages/b/pyproject.toml": '[project]\nname = "b"\ndependencies = ["jax>=0.4.1"]\n',
    "packages/b/b/__init__.py": "",
    # (b's code needs only what jax.debug.callback needs: 0.3.17, below its floor)
    "packages/b/b/tap.py": "from jax.experimental import host_callback as hcb\n\n\n"
    "def f(x):\n    return hcb.id_tap(lambda v, _: print(v), x)\n",
}


@pytest.mark.parametrize(
    "paths", [["packages"], ["packages/a", "packages/b"], ["packages/b", "packages/a"]]
)
def test_each_package_of_a_monorepo_gets_the_edits_of_its_own_code(tmp_path, paths):
    """Running on the root equals running on each package: a's floor rises for a's code;
    b's code needs nothing above its floor, so b's metadata is not touched."""
    _write(tmp_path, MONOREPO)
    res = run(["--no-cache", *paths], tmp_path)
    a = (tmp_path / "packages/a/pyproject.toml").read_text()
    b = (tmp_path / "packages/b/pyproject.toml").read_text()
    assert '"jax>=0.4.26"' in a, res.output
    assert b == MONOREPO["packages/b/pyproject.toml"], res.output
    assert "packages/a/pyproject.toml:3:18: HCB008 [fixed]" in res.output


def test_metadata_above_a_vcs_root_is_not_the_projects(tmp_path):
    _write(
        tmp_path, {"pyproject.toml": '[project]\nname = "outer"\ndependencies = ["jax>=0.4.1"]\n'}
    )
    inner = tmp_path / "work" / "repo"
    _write(inner, {"step.py": CODE})
    (inner / ".git").mkdir()
    before = (tmp_path / "pyproject.toml").read_text()
    res = run(["--no-cache", "."], inner)
    assert (tmp_path / "pyproject.toml").read_text() == before, res.output
    assert "trapezoid" in (inner / "step.py").read_text()


def test_a_classifier_quoted_in_prose_is_kept(tmp_path):
    """Raising the Python floor drops old classifiers from the classifier list only: the same
    words in a long_description string stay."""
    setup_py = (
        "from setuptools import setup\n\nLONG = '''\nSupported:\n"
        "Programming Language :: Python :: 3.8\n'''\n\nsetup(\n    name='p',\n"
        "    long_description=LONG,\n    python_requires='>=3.8',\n    classifiers=[\n"
        "        'Programming Language :: Python :: 3.8',\n"
        "        'Programming Language :: Python :: 3.11',\n    ],\n"
        "    install_requires=['jax>=0.4.1'],\n)\n"
    )
    _write(tmp_path, {"setup.py": setup_py, "p/__init__.py": "", "p/step.py": CODE})
    res = run(["--no-cache", "."], tmp_path)
    text = (tmp_path / "setup.py").read_text()
    assert "Supported:\nProgramming Language :: Python :: 3.8\n'''" in text, res.output
    assert "        'Programming Language :: Python :: 3.8',\n" not in text
    assert "python_requires='>=3.9'" in text and "'jax>=0.4.26'" in text
    compile(text, "setup.py", "exec")


def test_a_constraints_file_capping_jax_is_named_and_nothing_raised(tmp_path):
    """The cap (a `-c` file) keeps the rewrite on the declared floor (trapz stays, manual), and
    the run names the cap, not only "raise the requirement", which would not resolve."""
    files = {
        "requirements.txt": "-c constraints.txt\njax>=0.4.1\n",
        "constraints.txt": "jax<0.4.20\n",
        "step.py": CODE,
    }
    _write(tmp_path, files)
    res = run(["--no-cache", "."], tmp_path)
    assert (tmp_path / "requirements.txt").read_text() == files["requirements.txt"]
    assert (
        "constraints.txt: HCB008 [manual] the project's JAX floor is not raised to 0.4.26 for "
        "the native rewrite: `jax<0.4.20` in constraints.txt caps jax below 0.4.26"
    ) in res.output, res.output
    assert res.exit_code == 1


@pytest.mark.parametrize("problem", ["latin-1", "symlink-out", "immutable"])
def test_a_metadata_file_that_cannot_be_edited_stops_all_of_its_projects_edits(tmp_path, problem):
    """One line names the file and why; none of the project's metadata is edited (two floors
    that disagree are worse than none), and no traceback."""
    _write(
        tmp_path / "p",
        {
            "pyproject.toml": '[project]\nname = "p"\ndependencies = ["jax>=0.4.1"]\n',
            "p/__init__.py": "",
            "p/step.py": CODE,
        },
    )
    root = tmp_path / "p"
    if problem == "latin-1":
        (root / "requirements.txt").write_bytes("# caf\xe9\njax>=0.4.1\n".encode("latin-1"))
        culprit = "requirements.txt"
    elif problem == "symlink-out":
        (tmp_path / "elsewhere.txt").write_text("jax>=0.4.1\n")
        (root / "requirements.txt").symlink_to(tmp_path / "elsewhere.txt")
        culprit = "requirements.txt"
    else:
        if shutil.which("chattr") is None:
            pytest.skip("chattr is not installed")
        made = subprocess.run(["chattr", "+i", str(root / "pyproject.toml")], capture_output=True)
        if made.returncode != 0:
            pytest.skip("this file system has no immutable flag")
        culprit = "pyproject.toml"
    before = {
        n: (root / n).read_bytes()
        for n in ("pyproject.toml", "requirements.txt")
        if (root / n).exists()
    }
    try:
        res = run(["--no-cache", "."], root)
    finally:
        if problem == "immutable":
            subprocess.run(["chattr", "-i", str(root / "pyproject.toml")])
    after = {n: (root / n).read_bytes() for n in before}
    assert after == before, res.output
    refusal = [
        line for line in res.output.splitlines() if "none of this project's metadata" in line
    ]
    assert len(refusal) == 1 and refusal[0].startswith(f"{culprit}: manual:"), res.output
    assert "Traceback" not in res.output and res.exit_code == 1
    assert "trapezoid" in (root / "p" / "step.py").read_text()


def test_a_dependency_added_by_hand_is_seen(tmp_path):
    """A user who adds `hcmigrate-compat` to a computed setup.py list as asked is not asked
    again forever."""
    from hcmigrate.projects.compat_dependency import declare_compat

    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\nBASE = ['jax']\n"
        "setup(name='p', install_requires=BASE + ['hcmigrate-compat'])\n"
    )
    assert declare_compat(tmp_path) is None


def test_the_project_layer_is_the_one_place_metadata_is_read_from():
    """The codemod, the metadata edits and verify import the project facts from
    hcmigrate.projects; the modules that once read them alone are gone."""
    repo = Path(__file__).resolve().parent.parent
    for gone in ("jax_floor", "compat_dependency", "project_pins", "import_style"):
        assert not (repo / "hcmigrate" / f"{gone}.py").exists()
    tree = ast.parse((repo / "hcmigrate" / "cli.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "hcmigrate.projects.metadata_plan" in imported
    assert os.path.isdir(repo / "hcmigrate" / "projects")


def test_a_cap_below_what_the_written_code_needs_is_named(tmp_path):
    """uv's constraint-dependencies caps jax below what code already written needs (a tree
    migrated before): the floor is not raised past the cap; the cap is named."""
    files = {
        "pyproject.toml": '[project]\nname = "p"\ndependencies = ["jax>=0.4.1"]\n\n'
        '[tool.uv]\nconstraint-dependencies = ["jax<0.4.20"]\n',
        "p/__init__.py": "",
        "p/step.py": "import jax\n\n\ndef f(x):\n    return jax.numpy.trapezoid(x)\n",
    }
    _write(tmp_path, files)
    res = run(["--no-cache", "--check", "."], tmp_path)
    assert (tmp_path / "pyproject.toml").read_text() == files["pyproject.toml"]
    # (the run wrote none of the code: told as a note, not the run's manual work)
    assert (
        "pyproject.toml: note: `jax<0.4.20` caps jax below 0.4.26, which "
        "p/step.py:5 uses jax.numpy.trapezoid (JAX >= 0.4.26): the project's JAX floor is not "
        "raised"
    ) in res.output, res.output
    assert res.exit_code == 0


UNREAD = [
    pytest.param(
        {
            "pyproject.toml": '[tool.poetry]\nname = "p"\n\n[tool.poetry.dependencies]\n'
            'jax = [\n  {version = "^0.4.1", python = "<3.11"},\n'
            '  {version = "^0.4.10", python = ">=3.11"},\n]\n'
        },
        "pyproject.toml: HCB008 [manual] declares its requirements in a form hcmigrate does not "
        "read, a poetry list of constraints for `jax`",
        id="poetry-multiple-constraints",
    ),
    pytest.param(
        {
            "setup.py": "from setuptools import setup\nEXTRA = ['numpy']\n"
            "setup(name='p', install_requires=['jax>=0.4.1'] + EXTRA)\n"
        },
        "setup.py: HCB008 [manual] declares its requirements in a form hcmigrate does not read, "
        "a computed install_requires (`['jax>=0.4.1'] + EXTRA`)",
        id="setup-py-concatenation",
    ),
    pytest.param(
        {
            "setup.py": "from setuptools import setup\n\n\ndef deps():\n    return ['jax>=0.4.1']\n\n\n"
            "setup(name='p', install_requires=deps())\n"
        },
        "setup.py: HCB008 [manual] declares its requirements in a form hcmigrate does not read, "
        "a computed install_requires (`deps()`)",
        id="setup-py-function",
    ),
]


@pytest.mark.parametrize("files, finding", UNREAD)
def test_a_requirement_in_a_form_not_read_is_named(tmp_path, files, finding):
    """A floor the run cannot read is never ignored without a word: the finding names the file
    and the form, and what the code needs."""
    _write(tmp_path, {**files, "p/__init__.py": "", "p/step.py": CODE})
    before = {name: (tmp_path / name).read_text() for name in files}
    res = run(["--no-cache", "."], tmp_path)
    assert {name: (tmp_path / name).read_text() for name in files} == before
    assert finding in res.output, res.output
    assert res.exit_code == 1


def test_a_metadata_file_with_a_byte_order_mark_is_read_and_keeps_it(tmp_path):
    text = '[project]\nname = "p"\ndependencies = ["jax>=0.4.1"]\n'
    (tmp_path / "pyproject.toml").write_bytes(b"\xef\xbb\xbf" + text.encode())
    _write(tmp_path, {"p/__init__.py": "", "p/step.py": CODE})
    res = run(["--no-cache", "."], tmp_path)
    data = (tmp_path / "pyproject.toml").read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and b'"jax>=0.4.26"' in data, res.output


def test_interactive_asks_about_the_metadata_edit_as_a_hunk(tmp_path):
    """--interactive shows the metadata edit as a hunk and asks, as for code: refused, the file
    stays; accepted, it is written."""
    files = {"requirements.txt": "jax>=0.4.1\n", "step.py": CODE}
    _write(tmp_path, files)
    # every code hunk accepted, the metadata hunk refused
    code_hunks = 2
    res = run(["--no-cache", "--interactive", "."], tmp_path, input="y\n" * code_hunks + "n\n")
    assert "trapezoid" in (tmp_path / "step.py").read_text(), res.output
    assert "-jax>=0.4.1\n+jax>=0.4.26" in res.output, res.output
    assert (tmp_path / "requirements.txt").read_text() == "jax>=0.4.1\n"
    # a second run asks only about the metadata (the code is migrated): accepted
    res = run(["--no-cache", "--interactive", "."], tmp_path, input="y\n")
    assert (tmp_path / "requirements.txt").read_text() == "jax>=0.4.26\n", res.output


def test_a_compat_dependency_lost_by_an_interrupted_run_is_declared_by_the_next(tmp_path):
    """The package's code already imports the compat runtime (written by a run stopped before
    its metadata edit): --check reports the missing dependency, --diff's patch has it, and a
    run declares it; a test importing it declares nothing."""
    files = {
        "pyproject.toml": '[project]\nname = "p"\nrequires-python = ">=3.9"\n'
        'dependencies = ["jax>=0.4.26"]\n',
        "p/__init__.py": "",
        "p/serve.py": "from hcmigrate_compat import host_callback as hcb\n\n\n"
        "def step(x):\n    return hcb.id_tap(print, x, device_index=1)\n",
    }
    _write(tmp_path, files)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base")
    check = run(["--no-cache", "--check", "."], tmp_path)
    assert "would add `hcmigrate-compat` to pyproject.toml" in check.output, check.output
    assert check.exit_code == 1
    diff = run(["--no-cache", "--diff", "."], tmp_path)
    assert '+    "hcmigrate-compat"' in diff.stdout or '"hcmigrate-compat"]' in diff.stdout, (
        diff.stdout
    )
    (tmp_path / "patch.diff").write_text(diff.stdout)
    _git(tmp_path, "apply", "patch.diff")
    applied = (tmp_path / "pyproject.toml").read_text()
    _git(tmp_path, "checkout", "-q", ".")
    run(["--no-cache", "."], tmp_path)
    assert (tmp_path / "pyproject.toml").read_text() == applied
    tomllib.loads(applied)
    again = run(["--no-cache", "--check", "."], tmp_path)
    assert again.exit_code == 0, again.output


def test_a_test_importing_the_compat_runtime_declares_nothing(tmp_path):
    files = {
        "pyproject.toml": '[project]\nname = "p"\ndependencies = ["jax>=0.4.26"]\n',
        "p/__init__.py": "",
        "tests/test_it.py": "from hcmigrate_compat import host_callback as hcb\n",
    }
    _write(tmp_path, files)
    res = run(["--no-cache", "--check", "."], tmp_path)
    assert "hcmigrate-compat" not in res.output and res.exit_code == 0, res.output


def test_a_prng_key_array_rewritten_to_jax_array_counts_for_the_floor(tmp_path):
    """JAX104 writes jax.Array (first in jax 0.3.18, measured by
    scripts/measure_native_since.py): a project declaring jax>=0.3.13 gets its floor raised."""
    files = {
        "requirements.txt": "jax>=0.3.13\n",
        "keys.py": "import jax\n\n\ndef split(key: jax.random.PRNGKeyArray):\n"
        "    return jax.random.split(key)\n",
    }
    _write(tmp_path, files)
    res = run(["--no-cache", "."], tmp_path)
    assert "jax.Array" in (tmp_path / "keys.py").read_text(), res.output
    assert (tmp_path / "requirements.txt").read_text() == "jax>=0.3.18\n", res.output
    assert "keys.py:4 uses jax.Array (JAX >= 0.3.18)" in res.output


def test_a_version_switch_raises_no_floor_for_its_old_jax_branch(tmp_path):
    """Code that picks its spelling by JAX version (`if jax.__version__ >= ...: ... else: ...`)
    runs each branch only where it works: neither branch raises the floor."""
    files = {
        "requirements.txt": "jax>=0.4.1\n",
        "p/__init__.py": "",
        "p/integrate.py": "import jax\n\nif jax.__version__ >= '0.4.26':\n"
        "    integrate = jax.numpy.trapezoid\nelse:\n    integrate = jax.numpy.trapz\n",
    }
    _write(tmp_path, files)
    res = run(["--no-cache", "--check", "."], tmp_path)
    assert "would raise" not in res.output, res.output


def test_the_compat_dependency_goes_to_each_requirements_file_that_installs_jax(tmp_path):
    """(econpizza) setup.py declares the package's dependencies and requirements.txt the
    environment its tests install: both get `hcmigrate-compat` with the floor they get, so the
    two never disagree."""
    files = {
        "setup.py": "from setuptools import setup\n\nsetup(name='p', install_requires=['jax'])\n",
        "requirements.txt": "jax\nnumpy\n",
        "docs/requirements.txt": "sphinx\n",
        "p/__init__.py": "",
        "p/serve.py": "from hcmigrate_compat import host_callback as hcb\n",
    }
    _write(tmp_path, files)
    res = run(["--no-cache", "."], tmp_path)
    assert "'hcmigrate-compat'" in (tmp_path / "setup.py").read_text(), res.output
    assert (tmp_path / "requirements.txt").read_text() == "hcmigrate-compat\njax\nnumpy\n"
    assert (tmp_path / "docs/requirements.txt").read_text() == "sphinx\n"
    assert "added `hcmigrate-compat` to setup.py install_requires, requirements.txt" in (
        res.output
    ), res.output


@pytest.mark.parametrize(
    "metadata, said",
    [
        ("setup.py", "lists jax without a floor"),
        (None, "does not declare jax (an optional dependency, or its users' choice)"),
    ],
)
def test_code_that_needs_a_jax_the_metadata_does_not_name_gets_a_note(tmp_path, metadata, said):
    """(grgrjax, PennyLane) jax unpinned, or optional and not declared: nothing to raise, and
    the run says what the package's code now needs."""
    files = {
        "setup.py": "from setuptools import setup\n\nsetup(name='p', install_requires=["
        + ("'jax'" if metadata else "'numpy'")
        + "])\n",
        "p/__init__.py": "",
        "p/step.py": CODE,
    }
    _write(tmp_path, files)
    res = run(["--no-cache", "."], tmp_path)
    assert (tmp_path / "setup.py").read_text() == files["setup.py"]
    assert (
        f"p/step.py:7: note: uses jax.numpy.trapezoid, which needs JAX >= 0.4.26; the project "
        f"{said}: say `jax>=0.4.26` where it names jax"
    ) in res.output, res.output


def test_an_extend_spelling_written_for_a_removed_module_counts_for_the_floor(tmp_path):
    """(netket) JAX105 writes `jax.extend.linear_util` for jax.linear_util where the code
    reaches it through `jax` (`import jax.linear_util`): the package then needs JAX 0.4.16
    (measured), and its floor says so. A module bound by its own name (`import jax.linear_util
    as lu`) is imported guarded instead, which runs on the declared floor: nothing raised."""
    files = {
        "requirements.txt": "jax>=0.3.16\n",
        "scan.py": "import jax.linear_util\n\n\ndef wrap(f):\n    return jax.linear_util.wrap_init(f)\n",
    }
    _write(tmp_path, files)
    res = run(["--no-cache", "."], tmp_path)
    assert "jax.extend.linear_util.wrap_init" in (tmp_path / "scan.py").read_text(), res.output
    assert (tmp_path / "requirements.txt").read_text() == "jax>=0.4.16\n", res.output
    assert "scan.py:6 uses jax.extend.linear_util (JAX >= 0.4.16)" in res.output
    files["requirements.txt"] = "jax>=0.3.16\n"
    files["scan.py"] = (
        "import jax.linear_util as lu\n\n\ndef wrap(f):\n    return lu.wrap_init(f)\n"
    )
    _write(tmp_path, files)
    res = run(["--no-cache", "."], tmp_path)
    assert (
        "except ImportError:\n    import jax.linear_util as lu\n"
        in (tmp_path / "scan.py").read_text()
    ), res.output
    assert (tmp_path / "requirements.txt").read_text() == "jax>=0.3.16\n", res.output


def test_metadata_kept_in_a_pip_package_folder_beside_the_code_is_the_projects(tmp_path):
    """(praxis) No metadata above the package: its setup.py, the requirements.in that setup.py
    reads and the pip-compiled requirements.txt its CI installs live in pkg/pip_package/. The
    folder above the package is the project (the package is its code), its floor is read
    there, and the lock's exact pin, which keeps out the io_callback the rewrite writes, is a
    finding naming the file and what to raise (it was said nowhere: no project owned the code):
    0.4.21, where an ordered io_callback runs on several devices (the project's setting)."""
    files = {
        "pkg/__init__.py": "",
        "pkg/decode.py": (
            "import jax\nfrom jax.experimental import host_callback as hcb\n\n\n"
            "def step(x):\n    hcb.id_tap(lambda v, _: print(v), x)\n    return x\n"
        ),
        "pkg/pip_package/setup.py": (
            "import os\nfrom setuptools import find_packages, setup\n\n\n"
            "def _requirements():\n"
            "    with open(os.path.join(os.path.dirname(__file__), 'requirements.in')) as f:\n"
            "        return [line.strip() for line in f if line.strip()]\n\n\n"
            "setup(name='pkg', packages=find_packages(), install_requires=_requirements())\n"
        ),
        "pkg/pip_package/requirements.in": "jax\nnumpy\n",
        "pkg/pip_package/requirements.txt": (
            "#\n# This file is autogenerated by pip-compile with Python 3.8\n"
            "# by the following command:\n#\n"
            "#    pip-compile --output-file=requirements.txt requirements.in\n#\n"
            "jax==0.3.25\n    # via -r requirements.in\nnumpy==1.23.5\n"
            "    # via -r requirements.in\n"
        ),
        "pyproject.toml": "[tool.hcmigrate]\nseveral-devices = true\n",
    }
    _write(tmp_path, files)
    (tmp_path / ".git").mkdir()
    res = run(["--no-cache", "."], tmp_path)
    assert "io_callback" in (tmp_path / "pkg/decode.py").read_text(), res.output
    assert (
        "pkg/pip_package/requirements.txt: HCB008 [manual] the project's JAX floor is not raised "
        "to 0.4.21, which pkg/decode.py:" in res.output
    ), res.output
    assert "pins `jax==0.3.25`" in res.output
    assert "docs do not ship" not in res.output
    assert res.exit_code == 1
    for name in ("pkg/pip_package/requirements.txt", "pkg/pip_package/requirements.in"):
        assert (tmp_path / name).read_text() == files[name]


def test_a_lock_beside_an_edited_pyproject_is_named_with_its_command(tmp_path):
    """(jax-tqdm) poetry.lock records pyproject's content hash: the run says how to update it
    (hcmigrate never edits a lock)."""
    files = {
        "pyproject.toml": '[tool.poetry]\nname = "p"\n\n[tool.poetry.dependencies]\njax = ">=0.3.5"\n',
        "poetry.lock": "# a lock\n",
        "p/__init__.py": "",
        "p/step.py": CODE,
    }
    _write(tmp_path, files)
    res = run(["--no-cache", "."], tmp_path)
    assert (tmp_path / "poetry.lock").read_text() == "# a lock\n"
    assert (
        "poetry.lock: note: pyproject.toml's requirements changed: run `poetry lock --no-update` "
        "to bring the lock up to date"
    ) in res.output, res.output


def test_a_url_requirement_has_no_floor_to_raise(tmp_path):
    """(paxml, saxml) `jax @ git+...` tracks a branch: nothing to raise, nothing refused."""
    files = {
        "requirements.in": "jax @ git+https://example.invalid/jax\nnumpy>=1.20\n",
        "step.py": CODE,
    }
    _write(tmp_path, files)
    res = run(["--no-cache", "."], tmp_path)
    assert (tmp_path / "requirements.in").read_text() == files["requirements.in"]
    assert "not a specifier" not in res.output, res.output


def test_the_compat_dependency_joins_a_setup_py_list_with_f_string_items(tmp_path):
    """numpyro's `install_requires=[f"jax{_jax_version_constraints}", ..., "tqdm"]` is a
    literal list whose items are strings and f-strings: the compat strategy appends the
    dependency to it (the file read back declares exactly one item more), not a manual line."""
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\n\n"
        '_jax_version_constraints = ">=0.4.26"\n\n'
        "setup(\n"
        '    name="numlib",\n'
        '    packages=["numlib"],\n'
        "    install_requires=[\n"
        '        f"jax{_jax_version_constraints}",\n'
        '        "tqdm",\n'
        "    ],\n"
        ")\n"
    )
    (tmp_path / "numlib").mkdir()
    (tmp_path / "numlib" / "__init__.py").write_text("")
    (tmp_path / "numlib" / "bar.py").write_text(
        "from jax.experimental import host_callback as hcb\n\n\n"
        "def tick(x):\n    return hcb.id_tap(lambda a, t: print(a, t), x)\n"
    )
    result = run(["--no-cache", "--strategy", "compat", "."], tmp_path)
    assert "added `hcmigrate-compat` to setup.py install_requires" in result.output, result.output
    written = (tmp_path / "setup.py").read_text()
    assert '        "tqdm",\n        "hcmigrate-compat",\n    ],\n' in written
    compile(written, "setup.py", "exec")


@pytest.mark.parametrize("git", [True, False], ids=["committed", "no-git"])
def test_a_module_the_run_leaves_raises_the_floor_for_what_was_written_since_the_last_commit(
    tmp_path, git
):
    """The project's own code raises no floor: in a git work tree, a module the run leaves
    counts only for what changed since the last commit (what an interrupted run wrote). Out of
    one nothing tells the project's own uses apart, and what the module uses counts."""
    files = {
        "pyproject.toml": '[project]\nname = "p"\ndependencies = ["jax>=0.3.2"]\n',
        "p/__init__.py": "",
        "p/tap.py": "from jax.experimental import host_callback as hcb\n\n\n"
        "def step(x):\n    hcb.id_tap(lambda v, _: print(v), x)\n    return x\n",
        "p/own.py": "import jax\n\n\ndef is_array(x):\n    return isinstance(x, jax.Array)\n",
    }
    _write(tmp_path, files)
    if git:
        _git(tmp_path, "init", "-q")
        _git(tmp_path, "add", "-A")
        _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "before")
    res = run(["--no-cache", "."], tmp_path)
    need, why = (
        ("0.3.17", "uses jax.debug.callback") if git else ("0.3.18", "p/own.py:5 uses jax.Array")
    )
    assert f"jax>={need}" in (tmp_path / "pyproject.toml").read_text(), res.output
    assert f"{why} (JAX >= {need})" in res.output
    if git:  # (an interrupted run: the code written, the metadata edit lost)
        (tmp_path / "pyproject.toml").write_text(files["pyproject.toml"])
        again = run(["--no-cache", "."], tmp_path)
        assert "jax>=0.3.17" in (tmp_path / "pyproject.toml").read_text(), again.output
        assert "uses jax.debug.callback (JAX >= 0.3.17)" in again.output
