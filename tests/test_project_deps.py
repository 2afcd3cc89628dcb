"""`--project-deps` reads a project's dependencies as its packaging declares them
(hcmigrate/verify/project_deps.py): [project], poetry, setup.cfg, setup.py (literal lists,
never executed), requirement files only when chosen; what is skipped is said, with why. Small
projects of each shape, written here; the last test runs the real command up to the report."""

from __future__ import annotations

from pathlib import Path

from hcmigrate.verify.project_deps import dependency_root, project_dependencies
from verify_helpers import hcmigrate_verify


def _project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_pep621_dependencies_and_test_extras(tmp_path):
    root = _project(
        tmp_path,
        {
            "pyproject.toml": """
[project]
name = "p"
dependencies = ["jax>=0.4.20", "tqdm>=4.60", "optax @ git+https://github.com/x/optax"]
[project.optional-dependencies]
test = ["pytest", "chex"]
docs = ["sphinx"]
""",
            "requirements-doc.txt": "sphinx\ngit+https://github.com/x/theme\n",
        },
    )
    deps = project_dependencies(root)
    assert deps.requirements == ["tqdm>=4.60", "chex"]  # jax and pytest: verify's own
    assert deps.used == [
        "pyproject.toml [project] dependencies",
        "pyproject.toml [project] extra 'test'",
    ]
    assert deps.skipped == [
        "optax @ git+https://github.com/x/optax (pyproject.toml [project] dependencies: a git URL)",
        "requirements-doc.txt (not chosen: --project-deps-from requirements-doc.txt)",
    ]


def test_poetry_constraints_groups_and_what_pip_cannot_install(tmp_path):
    root = _project(
        tmp_path,
        {
            "pyproject.toml": """
[tool.poetry]
name = "p"
[tool.poetry.dependencies]
python = "^3.9"
jax = "^0.4.20"
numpy = "^1.24"
scipy = "~1.11.2"
tqdm = "*"
optax = ">=0.1.7,<0.3"
chex = {version = "^0.1.0", extras = ["docs"]}
flax = {git = "https://github.com/google/flax.git"}
local = {path = "../local"}
plot = {version = "^3", optional = true}
zero = "^0.0.3"
[tool.poetry.group.test.dependencies]
hypothesis = "6.90.0"
[tool.poetry.group.dev.dependencies]
black = "^24"
""",
        },
    )
    deps = project_dependencies(root)
    assert deps.requirements == [
        "numpy>=1.24,<2",
        "scipy>=1.11.2,<1.12",
        "tqdm",
        "optax>=0.1.7,<0.3",
        "chex[docs]>=0.1.0,<0.2",
        "zero>=0.0.3,<0.0.4",
        "hypothesis==6.90.0",
    ]
    assert deps.used == [
        "pyproject.toml [tool.poetry.dependencies]",
        "pyproject.toml [tool.poetry.group.test.dependencies]",
    ]
    assert deps.skipped == [
        "poetry's dev group (not asked: --project-deps-dev)",
        "flax (pyproject.toml [tool.poetry.dependencies]: a git URL)",
        "local (pyproject.toml [tool.poetry.dependencies]: a local path)",
        "plot (pyproject.toml [tool.poetry.dependencies]: optional (installed by an extra))",
    ]
    with_dev = project_dependencies(root, dev=True)
    assert with_dev.requirements[-1] == "black>=24,<25"
    assert "pyproject.toml [tool.poetry.group.dev.dependencies]" in with_dev.used


def test_setup_cfg_install_requires_and_test_extras(tmp_path):
    root = _project(
        tmp_path,
        {
            "setup.cfg": """
[metadata]
name = p
[options]
install_requires =
    numpy>=1.22  # arrays
    tqdm
[options.extras_require]
testing =
    chex
""",
        },
    )
    deps = project_dependencies(root)
    assert deps.requirements == ["numpy>=1.22", "tqdm", "chex"]
    assert deps.used == ["setup.cfg install_requires", "setup.cfg extra 'testing'"]
    assert deps.skipped == []


def test_setup_py_is_read_never_run(tmp_path):
    marker = tmp_path / "ran"
    root = _project(
        tmp_path / "literal",
        {
            "setup.py": f"""
import pathlib
from setuptools import setup
pathlib.Path({str(marker)!r}).write_text("setup.py was executed")
REQUIRES = ["numpy", "tqdm>=4"]
setup(name="p", install_requires=REQUIRES, extras_require={{"test": ["chex"]}})
""",
        },
    )
    deps = project_dependencies(root)
    assert deps.requirements == ["numpy", "tqdm>=4", "chex"]
    assert deps.used == ["setup.py install_requires", "setup.py extra 'test'"]
    assert not marker.exists()
    computed = _project(
        tmp_path / "computed",
        {
            # (a file name made at run time: no file setup.py visibly reads)
            "setup.py": """
import setuptools
NAME = "requirements" + ".txt"
setuptools.setup(name="p", install_requires=open(NAME).read().split())
""",
            "requirements.txt": "numpy\n",
        },
    )
    deps = project_dependencies(computed)
    assert deps.requirements == [] and deps.used == []
    assert deps.skipped == [
        "setup.py install_requires (not a literal list)",
        "requirements.txt (not chosen: --project-deps-from requirements.txt)",
    ]
    # chosen, the requirement file is read (its pip options and URLs are said, not installed)
    (computed / "requirements.txt").write_text(
        "-r base.txt\nnumpy>=1.22\nscipy  # solvers\ngit+https://github.com/x/y\n"
    )
    chosen = project_dependencies(computed, (computed / "requirements.txt",))
    assert chosen.requirements == ["numpy>=1.22", "scipy"]
    assert chosen.used == [str(computed / "requirements.txt")]
    assert chosen.skipped == [
        "setup.py install_requires (not a literal list)",
        f"-r base.txt ({computed / 'requirements.txt'}: a pip option)",
        f"git+https://github.com/x/y ({computed / 'requirements.txt'}: a git URL)",
    ]


def test_the_project_folder_is_the_nearest_with_packaging_metadata(tmp_path):
    root = _project(tmp_path, {"setup.cfg": "[options]\n", "src/pkg/__init__.py": ""})
    assert dependency_root(root / "src" / "pkg") == root
    assert dependency_root(root / "src" / "pkg" / "__init__.py") == root


def test_the_report_names_the_sources_used_and_skipped(legacy_python, tmp_path):
    """The real command on real legacy JAX: a project whose only dependency besides jax is a
    git URL needs no environment of its own, and the report says what was read and why the
    rest was not."""
    root = _project(
        tmp_path / "proj",
        {
            "setup.cfg": "[options]\ninstall_requires =\n    jax\n    foo @ git+https://x/foo\n",
            "requirements-docs.txt": "sphinx\n",
            "main.py": """
import jax.numpy as jnp
from jax.experimental import host_callback as hcb


def main():
    return hcb.id_tap(lambda x, _: print(x), jnp.arange(3))
""",
        },
    )
    res = hcmigrate_verify(root, "--reference", "legacy", "--project-deps")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "  note: project dependencies from: setup.cfg install_requires\n" in res.stdout
    assert (
        "  note: project dependencies skipped: foo @ git+https://x/foo (setup.cfg "
        "install_requires: a git URL); requirements-docs.txt (not chosen: --project-deps-from "
        "requirements-docs.txt)\n"
    ) in res.stdout
    compat = hcmigrate_verify(root, "--reference", "compat", "--project-deps")
    assert compat.returncode == 2 and "use --reference legacy" in compat.stdout, compat.stdout
    missing = hcmigrate_verify(root, "--reference", "legacy", "--project-deps-from", "nope.txt")
    assert missing.returncode == 2, missing.stdout + missing.stderr
    assert "--project-deps-from nope.txt: no such file" in missing.stdout
    assert "Traceback" not in missing.stdout + missing.stderr


def test_setup_py_requirements_computed_from_its_constants_are_read(tmp_path):
    """numpyro 0.15.0's shape: `f"jax{_jax_version_constraints}"` with the constraint a literal
    bound once at the top of setup.py; the same reader gives hcmigrate its JAX pin
    (tests/test_config.py). A string computed from anything else is still no literal."""
    root = _project(
        tmp_path / "p",
        {
            "setup.py": """
from setuptools import setup
_jax_version_constraints = ">=0.4.14"
_jaxlib_version_constraints = ">=0.4.14"
setup(
    name="p",
    install_requires=[
        f"jax{_jax_version_constraints}",
        f"jaxlib{_jaxlib_version_constraints}",
        "tqdm",
    ],
    extras_require={"test": ["pytest>=" + "4.1"], "cpu": f"jax[cpu]{_jax_version_constraints}"},
)
""",
        },
    )
    deps = project_dependencies(root)
    assert deps.declared == [
        ("setup.py install_requires", "jax>=0.4.14"),
        ("setup.py install_requires", "jaxlib>=0.4.14"),
        ("setup.py install_requires", "tqdm"),
        ("setup.py extra 'test'", "pytest>=4.1"),
    ]
    assert deps.requirements == ["tqdm"]  # (verify brings its own JAX and pytest)
    (root / "setup.py").write_text(
        "import os\nfrom setuptools import setup\n"
        "setup(install_requires=[f\"jax{os.environ['PIN']}\"])\n"
    )
    assert project_dependencies(root).skipped == ["setup.py install_requires (not a literal list)"]


SETUP_READS_REQUIREMENTS = """\
from setuptools import setup

with open("requirements.txt") as f:
    lines = f.readlines()
install_requires = [line.strip() for line in lines]

extras_require = {"tests": ["pytest"]}
for name in ("dev_requirements.txt",):
    with open(name) as f:
        extras_require["dev"] = [line.strip() for line in f]

setup(name="sc", install_requires=install_requires, extras_require=extras_require)
"""


def test_setup_py_reading_its_requirements_file_through_a_variable(tmp_path):
    """SCICO: `install_requires=install_requires`, computed from `open("requirements.txt")`:
    the runtime dependencies are that file's (the reference needs imageio, ...), not skipped
    as "not a literal list", and the file is not also reported as not chosen; the compat
    dependency goes there too, so `--check` can reach exit 0."""
    from hcmigrate.projects.compat_dependency import _setup_py

    (tmp_path / "setup.py").write_text(SETUP_READS_REQUIREMENTS)
    (tmp_path / "requirements.txt").write_text("numpy\nimageio>=2.17\n")
    (tmp_path / "dev_requirements.txt").write_text("black\n")  # (read into an extra)
    deps = project_dependencies(tmp_path)
    assert deps.requirements == ["numpy", "imageio>=2.17"]
    assert deps.notes()[0] == (
        "project dependencies from: setup.py install_requires (read from requirements.txt), "
        "setup.py extra 'tests'"
    )
    assert "requirements.txt (not chosen" not in " ".join(deps.skipped)
    declaration = _setup_py(tmp_path)
    assert declaration.problem is None and declaration.path.name == "requirements.txt"
    assert declaration.new_text == "numpy\nimageio>=2.17\nhcmigrate-compat\n"
