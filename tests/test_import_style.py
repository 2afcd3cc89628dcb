"""Imports the codemod adds follow the project's isort settings wherever the project keeps them
(hcmigrate.projects.import_style): each project below is judged by real isort with its own config file.
fixtures/merge/ covers pyproject's [tool.isort], setup.cfg's [isort] and [tool.ruff.lint.isort];
these are the other places."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hcmigrate import Options, migrate_source
from hcmigrate.projects.import_style import read_import_style

LEGACY = """\
import os

import tqdm

import jax
from jax.experimental import host_callback as hcb


def monitor(x):
    print(os.getpid())
    return hcb.call(lambda v: tqdm.tqdm.write(str(v)), jax.numpy.asarray(x), result_shape=x)
"""

ISORT_SETTINGS = """\
profile = black
sections = FUTURE,STDLIB,THIRDPARTY,NUMPY,JAX,FIRSTPARTY,LOCALFOLDER
known_numpy = numpy
known_jax = jax
"""


@pytest.mark.parametrize(
    "name, text",
    [
        (".isort.cfg", "[settings]\n" + ISORT_SETTINGS),
        ("tox.ini", "[tox]\nenvlist = py311\n\n[isort]\n" + ISORT_SETTINGS),
        ("setup.cfg", "[metadata]\nname = x\n\n[tool:isort]\n" + ISORT_SETTINGS),
    ],
)
def test_custom_sections_from_each_isort_file(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    style = read_import_style(tmp_path)
    assert ("numpy", "NUMPY") in style.known and style.sections[3] == "NUMPY"
    code = migrate_source(LEGACY, Options(import_style=style)).code
    assert "\nimport tqdm\n\nimport numpy as np\n\nimport jax\n" in code
    (tmp_path / "monitor.py").write_text(code)
    check = subprocess.run(
        [sys.executable, "-m", "isort", "--check-only", "--diff", "monitor.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_ruff_custom_sections_from_the_older_ruff_isort_table(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        "[tool.ruff]\n[tool.ruff.isort]\n"
        'section-order = ["future", "standard-library", "third-party", "numpy", "jax", '
        '"first-party", "local-folder"]\n'
        '[tool.ruff.isort.sections]\nnumpy = ["numpy"]\njax = ["jax"]\n'
    )
    code = migrate_source(LEGACY, Options(import_style=read_import_style(tmp_path))).code
    (tmp_path / "monitor.py").write_text(code)
    check = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "I", "monitor.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "\nimport tqdm\n\nimport numpy as np\n\nimport jax\n" in code


def test_the_projects_own_packages_are_first_party(tmp_path):
    (tmp_path / "src" / "mylib").mkdir(parents=True)
    (tmp_path / "src" / "mylib" / "__init__.py").write_text("")
    (tmp_path / "tools.py").write_text("")
    assert {"mylib", "tools"} <= set(read_import_style(tmp_path).first_party)


GOOGLE_ORDER = """\
import functools

from absl import logging
import jax
from jax.experimental import host_callback as hcb
import tqdm


def monitor(x):
  return hcb.id_tap(lambda v, _: logging.info(functools.reduce(max, v)), x)
"""


def test_a_file_in_googles_order_gets_its_imports_in_that_order(tmp_path):
    """No isort settings declared, and the file's imports are sorted by module name with `from`
    and `import` lines interleaved (google's force_sort_within_sections): `import numpy` goes
    between `import jax` and `import tqdm`, as isort with that setting puts it, not above
    `from absl` as isort's default order would (praxis `sample_decode.py`; issue 27)."""
    code = migrate_source(GOOGLE_ORDER).code
    imports = code[: code.index("\n\n\ndef")] + "\n"
    assert "import jax\nimport numpy as np\nimport tqdm\n" in imports
    isort = [
        sys.executable,
        "-m",
        "isort",
        "--check-only",
        "--diff",
        "--force-sort-within-sections",
    ]
    check = subprocess.run([*isort, "-"], input=imports, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize(
    "imports, expected",
    [
        # isort's default order (`import` lines first): it is kept
        (
            "import jax\nimport tqdm\nfrom absl import logging\n",
            "import jax\nimport numpy as np\nimport tqdm\nfrom absl import logging\n",
        ),
        # neither order throughout (the second block breaks google's): isort's default
        (
            "from absl import logging\nimport jax\n\nimport tqdm\nimport functools\n",
            "import numpy as np\nfrom absl import logging\nimport jax\n\nimport tqdm\n",
        ),
    ],
)
def test_the_files_order_is_inferred_only_where_it_is_consistent(imports, expected):
    source = imports.replace(
        "import jax\n", "import jax\nfrom jax.experimental import host_callback as hcb\n"
    )
    source += (
        "\n\ndef monitor(x):\n  return hcb.id_tap(lambda v, _: logging.info(tqdm.tqdm(v)), x)\n"
    )
    assert expected in migrate_source(source).code


def test_declared_isort_settings_win_over_the_files_order(tmp_path):
    (tmp_path / ".isort.cfg").write_text("[settings]\nprofile = black\n")
    code = migrate_source(GOOGLE_ORDER, Options(import_style=read_import_style(tmp_path))).code
    assert "import functools\n\nimport numpy as np\nfrom absl import logging\n" in code


def test_the_order_is_read_from_the_file_as_its_authors_wrote_it():
    """netket's `tdvp.py`: `from typing import ...` above `import warnings` fits google's order
    only, but the legacy import stood out of either order (`import jax.numpy as jnp`, then
    `import jax.experimental.host_callback as hcb`): no sorter keeps this file, so the new
    import follows isort's default, after the block's `import` lines."""
    source = (
        "from typing import Any\n"
        "import warnings\n"
        "\n"
        "import jax\n"
        "import jax.numpy as jnp\n"
        "import jax.experimental.host_callback as hcb\n"
        "import tqdm\n"
        "\n"
        "\n"
        "def monitor(x: Any):\n"
        "  warnings.warn('monitored')\n"
        "  return hcb.call(lambda v: tqdm.tqdm.write(str(v)), jnp.abs(x), result_shape=x)\n"
    )
    code = migrate_source(source).code
    assert "\nimport tqdm\nfrom jax.experimental import io_callback\n" in code


@pytest.mark.parametrize(
    "name, text",
    [
        ("pyproject.toml", "[tool.isort]\nprofile = 'black'\nlines_after_imports = 2\n"),
        (".isort.cfg", "[settings]\nlines_after_imports=2\n"),
        ("setup.cfg", "[isort]\nlines_after_imports = 2\n"),
        ("pyproject.toml", "[tool.ruff.lint.isort]\nlines-after-imports = 2\n"),
    ],
)
def test_lines_after_imports_from_each_file(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    assert read_import_style(tmp_path).lines_after_imports == 2
    (tmp_path / name).write_text(text.replace("2", "-1"))
    assert read_import_style(tmp_path).lines_after_imports == -1
