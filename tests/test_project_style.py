"""The project's own style (issue 37): small library-shaped projects (a pyproject with a name,
a package, the project's formatter settings where it keeps them), migrated by the real
command, then checked by the project's own checker with the project's own settings (black,
ruff format, isort): every written file that passed before passes after, and the lines the
rewrite did not change keep their bytes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import run

PYPROJECT = """\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "stylelib"
version = "0.1"
dependencies = ["jax>=0.4.30", "numpy"]
"""


def _project(root: Path, files: dict[str, str]) -> Path:
    files = {"pyproject.toml": PYPROJECT, "src/stylelib/__init__.py": "", **files}
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _migrate(root: Path) -> str:
    result = run(["--no-cache", "."], root)
    assert result.exit_code == 0, result.output
    return result.output


def _check(root: Path, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *command], cwd=root, capture_output=True, text=True
    )


# A tap whose rewrite is 95 columns on one line: black lays it out at 88 in three lines
# (no trailing comma), which black at 100 joins again.
TAP_95 = """\
import jax
from jax.experimental import host_callback as hcb


def _log(arg, transforms):
    print("step", arg)


def train_step(params):
    hcb.id_tap(_log, params["w"][:, -1], result=None)
    return params
"""


@pytest.mark.parametrize(
    "where, text",
    [
        (
            ".github/workflows/format.yml",
            "name: format\non: [push]\njobs:\n  fmt:\n    runs-on: ubuntu-latest\n    steps:\n"
            "      - uses: actions/checkout@v4\n      - run: pip install black\n"
            "      - run: black -l 100 --check .\n",
        ),
        (
            ".pre-commit-config.yaml",
            "repos:\n  - repo: https://github.com/psf/black\n    rev: 24.1.0\n    hooks:\n"
            "      - id: black\n        args: [--line-length=100]\n"
            "  - repo: https://github.com/pycqa/flake8\n    rev: 7.0.0\n    hooks:\n"
            "      - id: flake8\n        args: [--max-line-length=120]\n",
        ),
        (
            ".pre-commit-config.yaml",
            "repos:\n- repo: https://github.com/psf/black\n  rev: 24.1.0\n  hooks:\n"
            "  - id: black\n    args:\n    - --line-length\n    - '100'\n",
        ),
        (
            ".github/workflows/lint.yml",
            "jobs:\n  lint:\n    runs-on: ubuntu-latest\n    steps:\n"
            "      - uses: actions/checkout@v4\n      - uses: psf/black@stable\n"
            "        with:\n          options: --check --verbose -l 100\n",
        ),
    ],
    ids=["workflow-command", "pre-commit-args", "pre-commit-arg-list", "black-action"],
)
def test_the_line_length_stated_only_in_ci_lays_the_new_lines_out(tmp_path, where, text):
    root = _project(tmp_path / "p", {where: text, "src/stylelib/train.py": TAP_95})
    assert _check(root, "black", "-q", "-l", "100", "--check", "src").returncode == 0
    _migrate(root)
    written = (root / "src/stylelib/train.py").read_text()
    assert "jax.debug.callback(" in written and "hcb" not in written
    checked = _check(root, "black", "-l", "100", "--check", "--diff", "src")
    assert checked.returncode == 0, written + checked.stdout + checked.stderr
    assert max(len(line) for line in written.splitlines()) <= 100


def _changed_old_lines(before: str, after: str) -> list[str]:
    """The lines of `before` that `after` does not keep as they were."""
    import difflib

    return [
        line[1:]
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line.startswith("-") and not line.startswith("---")
    ]


# Written by hand, with its own spacing: no formatter is configured.
UNUSUAL_SPACING = """\
import jax
from jax.experimental import host_callback as hcb


def _log(arg, transforms):
    print('step', arg)


def assign(cost, preds, num_samples):
    hcb.id_tap(_log, (cost[:,-1], preds['pred_scores'], num_samples-1), result=None)
    best = cost.argmin(axis=-1)  # the cheapest column
    return best, preds['pred_scores'][best], cost[:,-1]
"""


def test_untouched_parts_of_a_rewritten_statement_keep_their_bytes(tmp_path):
    root = _project(tmp_path / "p", {"src/stylelib/assign.py": UNUSUAL_SPACING})
    _migrate(root)
    written = (root / "src/stylelib/assign.py").read_text()
    assert "jax.debug.callback(" in written, written
    # the statement was too long for one line: black laid out only what the rewrite wrote
    assert "(cost[:,-1], preds['pred_scores'], num_samples-1)," in written, written
    assert "cost[:, -1]" not in written and "num_samples - 1" not in written, written
    assert "print('step', arg)" in written
    assert max(len(line) for line in written.splitlines()) <= 88
    assert set(_changed_old_lines(UNUSUAL_SPACING, written)) == {
        "from jax.experimental import host_callback as hcb",
        "def _log(arg, transforms):",
        "    hcb.id_tap(_log, (cost[:,-1], preds['pred_scores'], num_samples-1), result=None)",
    }


def test_a_black_project_keeping_its_quotes_passes_black_after(tmp_path):
    black = "\n[tool.black]\nline-length = 88\nskip-string-normalization = true\n"
    text = UNUSUAL_SPACING.replace("cost[:,-1]", "cost[:, -1]").replace(
        "num_samples-1", "num_samples - 1"
    )
    root = _project(
        tmp_path / "p",
        {"pyproject.toml": PYPROJECT + black, "src/stylelib/assign.py": text},
    )
    assert _check(root, "black", "-q", "--check", "src").returncode == 0
    _migrate(root)
    written = (root / "src/stylelib/assign.py").read_text()
    assert "preds['pred_scores']" in written and "jax.debug.callback(" in written
    checked = _check(root, "black", "--check", "--diff", "src")
    assert checked.returncode == 0, written + checked.stdout + checked.stderr


# A file kept at 120 columns, by a project that states no line length.
WIDE = """\
import jax
import jax.numpy as jnp
from jax.experimental import host_callback as hcb


def _log(arg, transforms):
    print("step", arg)


def loss_fn(params, batch, weight_decay):
    logits = jnp.einsum("bd,dk->bk", batch["inputs_for_the_model_of_this_step"], params["kernel_of_the_first_layer"])
    labels = jax.nn.one_hot(batch["labels_for_the_model"], num_classes=logits.shape[-1], dtype=logits.dtype)  # 1-hot
    penalty = sum(jnp.sum(jnp.square(p)) for p in jax.tree_util.tree_leaves(params)) * weight_decay * 0.5 * 1.0
    hcb.id_tap(_log, (logits.mean(), labels.sum(axis=-1)), result=None)
    hcb.id_tap(_log, (logits.mean(), labels.sum(axis=-1), penalty, batch["labels_for_the_model"]), result=None)
    return -jnp.mean(jnp.sum(labels * jax.nn.log_softmax(logits), axis=-1)) + penalty
"""


def test_a_file_at_its_own_wider_limit_is_not_reflowed_at_88(tmp_path):
    root = _project(tmp_path / "p", {"src/stylelib/loss.py": WIDE})
    own = max(len(line) for line in WIDE.splitlines())
    _migrate(root)
    written = (root / "src/stylelib/loss.py").read_text()
    lines = written.splitlines()
    # 117 columns: on one line, as the file writes its statements
    assert any(
        line.startswith("    jax.debug.callback(") and line.endswith("ordered=True)")
        for line in lines
    ), written
    # too long even there: laid out within the file's own limit, not at 88
    assert max(len(line) for line in lines) <= own
    assert any(88 < len(line) <= own and "jax.tree.map(np.array" in line for line in lines)
    for line in WIDE.splitlines()[9:13]:
        assert line in lines
    found = _check(
        root, "ruff", "check", "--isolated", "--select", "E501", "--line-length", str(own), "src"
    )
    assert found.returncode == 0, found.stdout


# A project declaring a JAX older than `jax.tree`: renames write `jax.tree_util.tree_*`,
# longer than the names they replace.
OLD_FLOOR = PYPROJECT.replace("jax>=0.4.30", "jax>=0.4.20") + "\n[tool.black]\nline-length = 88\n"
RENAMES = """\
import jax
import jax.numpy as jnp


def update(params, grads, learning_rate, momentum_buffers, decay):
    for leaf_index, leaf in enumerate(jax.tree_leaves(jax.tree_map(jnp.abs, grads))):
        print(leaf_index, leaf)
    new = jax.tree_map(lambda p, g: p - learning_rate * g, params, grads, is_leaf=None)
    if jax.tree_util.tree_structure(new) != jax.tree_structure(params, is_leaf=None):
        pass
    elif jax.tree_util.tree_structure(new) == jax.tree_structure(params):  # same
        return new
    with jax.named_scope(str(jax.tree_structure(momentum_buffers, is_leaf=None))):
        pass
    return jax.tree_map(lambda p, m: p - decay * m, new, momentum_buffers)  # decayed


class Averager:
    def average(self, trees, weights, mapper=jax.tree_map, leaves_of=jax.tree_leaves):
        return mapper(lambda *xs: sum(xs) / len(xs), *trees), leaves_of(weights)
"""


def test_lines_a_rename_pushed_over_the_limit_are_rewrapped_as_black_would(tmp_path):
    root = _project(tmp_path / "p", {"pyproject.toml": OLD_FLOOR, "src/stylelib/opt.py": RENAMES})
    assert _check(root, "black", "-q", "--check", "src").returncode == 0
    _migrate(root)
    written = (root / "src/stylelib/opt.py").read_text()
    assert "jax.tree_util.tree_leaves(" in written and "jax.tree_map" not in written, written
    checked = _check(root, "black", "--check", "--diff", "src")
    assert checked.returncode == 0, written + checked.stdout + checked.stderr
    # nothing else moved: every line the run changed names a renamed function
    assert all("tree_" in line for line in _changed_old_lines(RENAMES, written))


TWO_SPACES = """\
import jax
from jax.experimental import host_callback as hcb


def _log(arg, transforms):
  print("step", arg)


class Trainer:
  def step(self, params, batch):
    if batch is None:
      return params
    hcb.id_tap(_log, (params["weights"], batch["inputs"], batch["labels"]), result=None)
    return self.loss_fn(
      params["weights_of_the_model"], batch["inputs_of_the_model"], batch["labels"]
    )
"""


def test_a_two_space_file_gets_two_space_continuation_lines(tmp_path):
    ruff = "\n[tool.ruff]\nline-length = 88\nindent-width = 2\n"
    root = _project(
        tmp_path / "p",
        {"pyproject.toml": PYPROJECT + ruff, "src/stylelib/trainer.py": TWO_SPACES},
    )
    assert _check(root, "ruff", "format", "--check", "src").returncode == 0
    _migrate(root)
    written = (root / "src/stylelib/trainer.py").read_text()
    assert "    jax.debug.callback(\n      lambda x: " in written, written
    checked = _check(root, "ruff", "format", "--check", "--diff", "src")
    assert checked.returncode == 0, written + checked.stdout + checked.stderr


def test_a_two_space_file_hanging_by_four_keeps_its_hanging_indent(tmp_path):
    text = TWO_SPACES.replace('      params["weights', '        params["weights')
    root = _project(tmp_path / "p", {"src/stylelib/trainer.py": text})
    _migrate(root)
    written = (root / "src/stylelib/trainer.py").read_text()
    assert "    jax.debug.callback(\n        lambda x: " in written, written
    assert set(_changed_old_lines(text, written)) == {
        "from jax.experimental import host_callback as hcb",
        "def _log(arg, transforms):",
        '    hcb.id_tap(_log, (params["weights"], batch["inputs"], batch["labels"]), result=None)',
    }


LIB_LAYOUT = PYPROJECT.replace('name = "stylelib"', 'name = "ilib"') + (
    '\n[tool.setuptools.packages.find]\nwhere = ["lib"]\n\n'
    '[tool.isort]\nprofile = "black"\nsrc_paths = ["lib"]\n'
)
BOOTSTRAPPED = """\
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))

from jax.experimental import host_callback as hcb  # noqa: E402

from ilib.util import helper  # noqa: E402


def main(x):
    hcb.id_tap(lambda a, _: print(helper(a)), x)
"""
IN_PACKAGE = """\
import os

from jax.experimental import host_callback as hcb

from ilib.util import helper


def _log(arg, transforms):
    print("step", helper(arg), os.sep)


def step(x):
    return hcb.id_tap(_log, x)
"""


def test_new_imports_go_in_isorts_sections_below_a_sys_path_bootstrap(tmp_path):
    root = _project(
        tmp_path / "p",
        {
            "pyproject.toml": LIB_LAYOUT,
            "lib/ilib/__init__.py": "",
            "lib/ilib/util.py": "def helper(x):\n    return x\n",
            "lib/ilib/tap.py": IN_PACKAGE,
            "scripts/run.py": BOOTSTRAPPED,
        },
    )
    assert _check(root, "isort", "--check", "lib", "scripts").returncode == 0
    _migrate(root)
    script = (root / "scripts/run.py").read_text()
    assert "jax.debug.callback(" in script, script
    bootstrap = script.index("sys.path.insert(")
    assert bootstrap < script.index("import jax") < script.index("from ilib.util import helper")
    assert "import jax  # noqa: E402\nimport numpy as np  # noqa: E402\n" in script, script
    checked = _check(root, "isort", "--check", "--diff", "lib", "scripts")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    found = _check(root, "ruff", "check", "--isolated", "--select", "E402", "scripts")
    assert found.returncode == 0, found.stdout


def test_written_code_says_numpy_the_way_the_package_imports_it(tmp_path):
    files = {
        f"src/stylelib/{m}.py": "import jax.numpy as np\nimport numpy as onp\n\n\n"
        f"def to_host_{m}(x):\n    return onp.asarray(np.sum(x))\n"
        for m in ("ops", "metrics", "io")
    }
    files["src/stylelib/tap.py"] = (
        "import jax\nfrom jax.experimental import host_callback as hcb\n\n\n"
        "def _log(arg, transforms):\n    print('step', arg)\n\n\n"
        "def step(x):\n    return hcb.id_tap(_log, x)\n"
    )
    root = _project(tmp_path / "p", files)
    _migrate(root)
    written = (root / "src/stylelib/tap.py").read_text()
    assert "import numpy as onp\n" in written and "onp.array" in written, written
    assert "import numpy as np" not in written and "np.array" not in written.replace(
        "onp.array", ""
    )


def test_a_project_that_imports_numpy_as_np_gets_np(tmp_path):
    files = {
        "src/stylelib/ops.py": "import numpy as np\n",
        "src/stylelib/metrics.py": "import numpy as np\n",
        "src/stylelib/legacy.py": "import numpy as onp\n",
        "src/stylelib/tap.py": "from jax.experimental import host_callback as hcb\n\n\n"
        "def step(x):\n    return hcb.id_tap(lambda a, _: print(a), x)\n",
    }
    root = _project(tmp_path / "p", files)
    _migrate(root)
    written = (root / "src/stylelib/tap.py").read_text()
    assert "import numpy as np\n" in written and "onp" not in written, written


def test_standard_input_is_laid_out_as_a_file_is(tmp_path):
    root = _project(tmp_path / "p", {})
    result = run(["--no-cache", "-"], root, input=UNUSUAL_SPACING)
    assert result.exit_code == 0, result.output
    written = result.stdout
    assert "(cost[:,-1], preds['pred_scores'], num_samples-1)," in written, written
    assert max(len(line) for line in written.splitlines()) <= 88, written


def test_ruffs_own_file_states_the_line_length(tmp_path):
    root = _project(
        tmp_path / "p",
        {"ruff.toml": "line-length = 100\n", "src/stylelib/train.py": TAP_95},
    )
    assert _check(root, "ruff", "format", "--check", "src").returncode == 0
    _migrate(root)
    written = (root / "src/stylelib/train.py").read_text()
    assert "jax.debug.callback(" in written
    checked = _check(root, "ruff", "format", "--check", "--diff", "src")
    assert checked.returncode == 0, written + checked.stdout + checked.stderr


HEADERS_ONLY = """\
import jax


class Averager:
    def average(self, trees, weights, mapper=jax.tree_map, leaves_of=jax.tree_leaves):
        return mapper(lambda *xs: sum(xs) / len(xs), *trees), leaves_of(weights)


async def gather(x, y=jax.tree_map, leaves_of_the_tree=jax.tree_leaves) -> "int":  # c
    return x
"""


def test_definition_headers_a_rename_pushed_over_the_limit_are_rewrapped(tmp_path):
    root = _project(
        tmp_path / "p", {"pyproject.toml": OLD_FLOOR, "src/stylelib/avg.py": HEADERS_ONLY}
    )
    assert _check(root, "black", "-q", "--check", "src").returncode == 0
    _migrate(root)
    written = (root / "src/stylelib/avg.py").read_text()
    assert "mapper=jax.tree_util.tree_map,\n" in written, written
    checked = _check(root, "black", "--check", "--diff", "src")
    assert checked.returncode == 0, written + checked.stdout + checked.stderr
    assert all("tree_" in line for line in _changed_old_lines(HEADERS_ONLY, written))


def _google_module() -> str:
    """A module in Google's style (two-space blocks, wrapped at 80 columns) whose project
    states no line length: 44 code lines, one in four near 80, and a tap whose rewrite is
    87 columns on one line."""
    lines = [
        "import jax",
        "import jax.numpy as jnp",
        "from jax.experimental import host_callback as hcb",
        "",
        "",
        "def _log(arg, transforms):",
        "  print('step', arg)",
        "",
    ]
    for n in range(10):
        lines += [
            "",
            f"def scaled_update_number_{n}(parameters, gradients, learning_rate_values):",
            "  scaled = jax.tree_util.tree_map(lambda p: p * learning_rate_value, gradients)",
            "  total = jnp.sum(jnp.asarray(jax.tree_util.tree_leaves(scaled)[0]))",
            "  return parameters, total",
        ]
    lines += [
        "",
        "def step(parameters, grads_in):",
        "  hcb.id_tap(_log, grads_in)",
        "  return parameters",
    ]
    return "\n".join(lines) + "\n"


def test_a_file_kept_at_80_columns_gets_its_new_lines_at_80(tmp_path):
    """praxis and chex state no line length; their Google-style modules keep to 80 columns.
    The rewrite is laid out within 80 there, not at black's 88."""
    text = _google_module()
    assert max(len(line) for line in text.splitlines()) <= 80
    root = _project(tmp_path / "p", {"src/stylelib/google.py": text})
    _migrate(root)
    written = (root / "src/stylelib/google.py").read_text()
    assert "jax.debug.callback(" in written, written
    assert max(len(line) for line in written.splitlines()) <= 80, written
    # (a short file says nothing about its width: 88, as before)
    short = "\n".join(text.splitlines()[:8] + text.splitlines()[-4:]) + "\n"
    root = _project(tmp_path / "q", {"src/stylelib/short.py": short})
    _migrate(root)
    assert max(len(line) for line in (root / "src/stylelib/short.py").read_text().splitlines()) > 80


def test_pragma_url_and_import_lines_do_not_widen_a_file_kept_at_80(tmp_path):
    """praxis: a Google-style module within 80 columns but for lines ruff's E501 (and Google's
    pylintrc) lets run long: a trailing `# pylint: disable=...` or `# pytype: disable=...`, a
    URL, an import. Its new lines are kept within 80 all the same (issue 37)."""
    lines = _google_module().splitlines()
    long = [
        "from jax.experimental.array_serialization.serialization import GlobalAsyncCheckpointManager",
        "# See https://github.com/tensorflow/tensorflow/blob/v2.9.1/tensorflow/python/training/x.py",
        "def HParamsLanguageModeling(cls):  # pylint: disable=invalid-name,too-many-arguments-here",
        "  return cls  # pytype: disable=wrong-arg-types  # jax-ndarray, a note of some length here",
        "LONG_ONE = scaled_update_number_1(1, 2, 3)  # noqa: E501  (a pragma that runs past 80)",
    ]
    text = "\n".join(lines[:3] + long[:1] + lines[3:] + ["", ""] + long[1:]) + "\n"
    assert max(len(line) for line in text.splitlines()) > 80
    root = _project(tmp_path / "p", {"src/stylelib/google.py": text})
    _migrate(root)
    written = (root / "src/stylelib/google.py").read_text()
    assert "jax.debug.callback(" in written, written
    new = [line for line in written.splitlines() if line not in text.splitlines()]
    assert new and max(len(line) for line in new) <= 80, written


def test_a_statement_with_a_trailing_pragma_is_not_wrapped_away_from_it(tmp_path):
    """praxis py_utils.py: `flat_pytrees.append(jax.tree_map(...))  # pylint: disable=
    cell-var-from-loop` grew past 80 with the rename. Wrapped, the pragma would end the
    closing bracket's line, not the line it silences: the statement stays on its line."""
    lines = _google_module().splitlines()
    pragma = "  # pylint: disable=cell-var-from-loop"
    body = [
        "",
        "",
        "def unstack(tree, axis, n):",
        "  flat_pytrees = []",
        "  for i in range(n):",
        "    flat_pytrees.append(jax.tree_map(lambda x: x.take(i, axis), tree))" + pragma,
        "  return flat_pytrees",
    ]
    text = "\n".join(lines + body) + "\n"
    # (a floor below jax.tree.map's: the rename is jax.tree_util.tree_map, 82 columns)
    floor = PYPROJECT.replace("jax>=0.4.30", "jax>=0.4.20")
    root = _project(tmp_path / "p", {"pyproject.toml": floor, "src/stylelib/google.py": text})
    _migrate(root)
    written = (root / "src/stylelib/google.py").read_text()
    assert (
        "    flat_pytrees.append(jax.tree_util.tree_map(lambda x: x.take(i, axis), tree))"
        + pragma
        + "\n"
    ) in written, written
