"""Where the codemod puts what it writes (issue 36 item 8): a helper never in a notebook cell
with shell (`!pip`) or magic (`%...`) lines, but in a code cell of its own; no call spliced
into an f-string's expression (`f"{hcb.id_print(x)}"`: the call becomes a statement before).
Notebooks are real .ipynb files run through the CLI; each program prints on current JAX what
it printed on jax 0.4.30."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from hcmigrate.api import migrate_source
from cli_helpers import run

SETUP = """\
!pip install -q jax
%matplotlib inline
import jax
import jax.numpy as jnp
from jax.experimental import host_callback as hcb"""

PRINTS = """\
@jax.jit
def f(x):
    hcb.id_print((x, x + 1), what="pair")
    return x * 2

print(f(jnp.arange(3.0)).tolist())"""

FSTRING = """\
@jax.jit
def g(x):
    y = x + 1
    print(f"traced: {hcb.id_print(y, what='y').shape}")
    return y

g(jnp.ones(2))
jax.effects_barrier()"""


def _notebook(sources: list[str], minor: int = 5, ids: bool = True) -> str:
    cells = []
    for n, source in enumerate(sources):
        kind = "markdown" if source.startswith("# ") else "code"
        cell = {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True)}
        if kind == "code":
            cell |= {"execution_count": None, "outputs": []}
        if ids:
            cell["id"] = f"cell-{n}"
        cells.append(cell)
    nb = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}
        },
        "nbformat": 4,
        "nbformat_minor": minor,
    }
    return json.dumps(nb, sort_keys=True, indent=1) + "\n"


def _valid(nb: dict) -> None:
    """What nbformat 4.5's schema asks of the cells we write."""
    ids = [c.get("id") for c in nb["cells"]]
    if nb["nbformat_minor"] >= 5:
        assert all(isinstance(i, str) and re.fullmatch(r"[a-zA-Z0-9-_]{1,64}", i) for i in ids)
        assert len(set(ids)) == len(ids)
    for cell in nb["cells"]:
        keys = {"cell_type", "metadata", "source"} | (
            {"execution_count", "outputs"} if cell["cell_type"] == "code" else set()
        )
        assert keys <= set(cell), cell


def _code(cell) -> str:
    return "".join(cell["source"])


def _printed(python, cells: list[str]) -> str:
    """What the notebook's code cells print, run in order (shell and magic lines left out)."""
    code = "\n".join(
        "\n".join(line for line in cell.splitlines() if not line.lstrip().startswith(("!", "%")))
        for cell in cells
    )
    run_ = subprocess.run(
        [str(python), "-W", "ignore", "-c", code + "\njax.effects_barrier()\n"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run_.returncode == 0, run_.stderr[-3000:]
    return run_.stdout


def test_a_helper_gets_a_cell_of_its_own_not_the_one_with_shell_lines(tmp_path, legacy_python):
    path = tmp_path / "demo.ipynb"
    path.write_text(_notebook([SETUP, "# Run it", PRINTS, FSTRING]))
    result = run(["demo.ipynb"], tmp_path)
    assert result.exit_code == 0, result.output
    nb = json.loads(path.read_text())
    _valid(nb)
    sources = [_code(c) for c in nb["cells"]]
    kinds = [c["cell_type"] for c in nb["cells"]]
    assert kinds == ["code", "code", "markdown", "code", "code"]
    setup, helpers = sources[0], sources[1]
    assert setup.startswith("!pip install -q jax\n%matplotlib inline\n")
    assert "def " not in setup and "host_callback" not in setup
    assert helpers.startswith("def _print_like_id_print(") and nb["cells"][1]["id"]
    assert "!" not in helpers.split("\n")[0] and "%" not in helpers.split("\n")[0]
    assert 'print(f"traced: {y.shape}")' in sources[4]  # (the print hoisted before it)
    assert run(["--check", "demo.ipynb"], tmp_path).exit_code == 0  # (idempotent)
    code_cells = [s for s, k in zip(sources, kinds) if k == "code"]
    legacy = _printed(legacy_python, [SETUP, PRINTS, FSTRING])
    assert _printed(sys.executable, code_cells) == legacy


def test_a_helper_the_first_cell_uses_comes_before_it(tmp_path):
    """Where the first code cell calls what the helper serves, the helper's cell comes first
    (an nbformat 4.4 notebook: its cells have no ids, nor does the new one)."""
    path = tmp_path / "one.ipynb"
    path.write_text(_notebook([SETUP + "\n\n" + PRINTS], minor=4, ids=False))
    assert run(["one.ipynb"], tmp_path).exit_code == 0
    nb = json.loads(path.read_text())
    _valid(nb)
    first, second = (_code(c) for c in nb["cells"])
    assert first.startswith("def _print_like_id_print(") and "id" not in nb["cells"][0]
    assert second.startswith("!pip install -q jax\n") and "def " not in second.split("@jax.jit")[0]


def test_a_call_in_an_f_string_becomes_a_statement_before_it(legacy_python, tmp_path):
    source = """\
import jax
import jax.numpy as jnp
from jax.experimental import host_callback as hcb


@jax.jit
def g(x):
    y = x + 1
    print(f"y: {hcb.id_tap(lambda v, t: print('tap', v), y).dtype}")
    print(f"{x.shape} {hcb.call(lambda v: print('call', v), y)!r:>6}")
    return y


print(g(jnp.ones(2)))
jax.effects_barrier()
"""
    code = migrate_source(source).code
    assert 'print(f"y: {y.dtype}")' in code
    assert "[1]}" not in code and "{(" not in code  # (no tuple-index idiom in the f-string)
    assert migrate_source(code).code == code
    (tmp_path / "before.py").write_text(source)
    (tmp_path / "after.py").write_text(code)
    legacy = subprocess.run(
        [str(legacy_python), "-W", "ignore", "before.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    current = subprocess.run(
        [sys.executable, "after.py"], cwd=tmp_path, capture_output=True, text=True
    )
    assert legacy.returncode == 0 and current.returncode == 0, legacy.stderr + current.stderr
    assert current.stdout == legacy.stdout
