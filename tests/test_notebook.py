"""Jupyter notebooks through the real CLI: cells, magics, outputs, metadata, layout, diagnostics."""

from __future__ import annotations

import json
import os

import pytest

from hcmigrate.api import Options
from hcmigrate.notebook import _mask, _unmask, dump_like, migrate_notebook
from cli_helpers import run


def lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def make_notebook(indent=1) -> tuple[dict, str]:
    """A notebook as Jupyter writes it (nbformat 4: sorted keys, indent 1, UTF-8, final newline)."""
    cells = [
        {
            "cell_type": "markdown",
            "metadata": {},
            "source": lines("# Progress with host_callback\nSee `hcb.id_tap` — über."),
        },
        {
            "cell_type": "code",
            "execution_count": 1,
            "metadata": {"tags": ["setup"]},
            "outputs": [],
            "source": lines(
                "%matplotlib inline\n!pip install -q tqdm\nimport jax\nfrom jax.experimental import host_callback as hcb"
            ),
        },
        {
            "cell_type": "code",
            "execution_count": 2,
            "metadata": {},
            "source": lines("%%bash\necho hcb.id_tap(x)"),
            "outputs": [{"name": "stdout", "output_type": "stream", "text": ["hcb.id_tap(x)\n"]}],
        },
        {
            "cell_type": "code",
            "execution_count": 3,
            "metadata": {"collapsed": False},
            "outputs": [
                {
                    "data": {"text/plain": ["Array(2., dtype=float32)"]},
                    "execution_count": 3,
                    "metadata": {},
                    "output_type": "execute_result",
                }
            ],
            "source": lines(
                "def step(x):\n    hcb.id_tap(lambda a, t: print(a), x)\n    %time y = 1\n    return x * 2\n\nstep(1.0)"
            ),
        },
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": lines("files = !ls\nlen?"),
        },
    ]
    nb = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return nb, json.dumps(nb, sort_keys=True, indent=indent, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("indent", [1, 2, 4])
def test_notebook_migrated_cell_by_cell_layout_kept(tmp_path, indent):
    nb, text = make_notebook(indent)
    path = tmp_path / "demo.ipynb"
    path.write_text(text, encoding="utf-8")
    res = run(["demo.ipynb"], tmp_path)
    assert res.exit_code == 0, res.output
    assert "rewrote demo.ipynb" in res.stdout
    assert "demo.ipynb:cell 4:2:5: HCB101" in res.stdout
    new_text = path.read_text(encoding="utf-8")
    new = json.loads(new_text)
    # Layout: the file is exactly what Jupyter would write for the new content.
    assert new_text == json.dumps(new, sort_keys=True, indent=indent, ensure_ascii=False) + "\n"
    assert "über" in new_text
    # Everything but the code cells' sources is untouched.
    for old_cell, new_cell in zip(nb["cells"], new["cells"]):
        assert {k: v for k, v in old_cell.items() if k != "source"} == {
            k: v for k, v in new_cell.items() if k != "source"
        }
    assert new["metadata"] == nb["metadata"]
    assert (
        new["cells"][0] == nb["cells"][0] and new["cells"][2] == nb["cells"][2]
    )  # markdown, %%bash
    src1 = "".join(new["cells"][1]["source"])
    src3 = "".join(new["cells"][3]["source"])
    assert src1.startswith("%matplotlib inline\n!pip install -q tqdm\n")
    assert "host_callback" not in src1 + src3
    assert "jax.debug.callback" in src1 + src3 and "    %time y = 1\n" in src3
    assert new["cells"][4] == nb["cells"][4]  # only magics: untouched
    assert not src3.endswith("\n")  # Jupyter's source lists have no final newline
    # Second run: nothing to do, byte-identical.
    res = run(["--check", "demo.ipynb"], tmp_path)
    assert res.exit_code == 0 and path.read_text(encoding="utf-8") == new_text


def test_untouched_notebook_is_byte_identical(tmp_path):
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": ["x = 1  # host_callback is mentioned only here\n", "%time x"],
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    text = json.dumps(nb, indent=3)  # unusual layout, no final newline
    path = tmp_path / "same.ipynb"
    path.write_text(text)
    before = os.stat(path)
    res = run(["same.ipynb"], tmp_path)
    assert res.exit_code == 0 and "1 unchanged" in res.stdout
    assert path.read_text() == text and os.stat(path).st_mtime_ns == before.st_mtime_ns


def test_invalid_notebook_reported_and_left_alone(tmp_path):
    bad = tmp_path / "bad.ipynb"
    bad.write_text('{"cells": [ {"source": "import jax.experimental.host_callback"\n')
    good = tmp_path / "good.py"
    good.write_text("from jax.experimental import host_callback as hcb\nhcb.barrier_wait()\n")
    res = run(["."], tmp_path)
    assert res.exit_code == 2
    assert "error: bad.ipynb: not a valid notebook: invalid JSON" in res.stderr
    assert bad.read_text().startswith('{"cells": [ {"source"')
    assert "host_callback" not in good.read_text()


def test_syntax_error_in_a_cell_names_the_cell(tmp_path):
    nb, _ = make_notebook()
    nb["cells"][3]["source"] = lines("def f(:\n    hcb.id_tap(print, 1)")
    path = tmp_path / "err.ipynb"
    text = json.dumps(nb, indent=1)
    path.write_text(text)
    res = run(["err.ipynb"], tmp_path)
    assert res.exit_code == 2
    assert "error: err.ipynb:cell 4:1" in res.stderr
    assert path.read_text() == text


def test_non_python_notebook_left_alone(tmp_path):
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
                "source": ["hcb.id_tap <- function() host_callback"],
            }
        ],
        "metadata": {"kernelspec": {"language": "R", "name": "ir"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "r.ipynb").write_text(json.dumps(nb))
    res = run(["--check", "r.ipynb"], tmp_path)
    assert res.exit_code == 0


def test_mask_roundtrip():
    src = "%load_ext autoreload\nfor i in range(3):\n    !echo {i} \\\n      more\n    x = i\nfiles = !ls\nobj?\n"
    masks: list[str] = []
    masked = _mask(src, masks)
    compile(masked, "<cell>", "exec")
    assert _unmask(masked, masks) == src
    masks2: list[str] = []
    cell = "%%bash\necho hcb.id_tap\n"  # a cell magic that is not Python: masked whole
    assert "id_tap" not in _mask(cell, masks2)
    masks3: list[str] = []
    timed = "%%time\nx = hcb.id_tap(f, 1)\n"  # runs its cell as Python: only its line masked
    assert _mask(timed, masks3).splitlines()[1] == "x = hcb.id_tap(f, 1)"
    assert _unmask(_mask(timed, masks3), masks3) == timed


def test_library_notebook_api():
    _, text = make_notebook()
    res = migrate_notebook(text, Options())
    assert res.changed and res.changed_cells == [2, 4]
    assert all(d.cell in (2, 4) for d in res.diagnostics)
    assert dump_like(json.loads(text), text) == text  # (the untouched layout is reproduced)


def test_cells_may_await_at_top_level():
    # IPython runs `await` outside functions; the rewrite is compiled as a notebook's code.
    nb, _ = make_notebook()
    nb["cells"][3]["source"] = lines("await asyncio.sleep(0)\nhcb.barrier_wait()")
    res = migrate_notebook(json.dumps(nb, indent=1), Options())
    assert res.changed_cells == [2, 4]
    assert "".join(json.loads(res.code)["cells"][3]["source"]).endswith("jax.effects_barrier()")


# A notebook as other tools write it: escapes where Jupyter writes characters, numbers spelled
# as they were typed, keys in no order, a duplicate key (json.loads keeps the last), a source
# as one string, a one-line empty source.
HAND_WRITTEN = r"""{
 "metadata": {"kernelspec": {"language": "python", "name": "python3"}, "x": 1.0e3,
  "y": -0.0, "z": 1E+2, "u": "caf\u00e9 \/ slash", "big": 12345678901234567890.000},
 "nbformat": 4,
 "cells": [
  {"cell_type": "markdown", "source": ["# T\u00edtulo"], "metadata": {}},
  {
   "source": "an ignored duplicate",
   "cell_type": "code",
   "execution_count": 1.50,
   "metadata": {},
   "outputs": [{"output_type": "stream", "name": "stdout", "text": ["\u00e9\n"]}],
   "source": [
    "from jax.experimental import host_callback as hcb\n",
    "# caf\u00e9 \u2028 comment kept\n",
    "def f(x):\n",
    "    hcb.id_tap(lambda a, t: print(a), x)\n",
    "    return x"
   ]
  },
  {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": null,
   "source": "y = f(2)\nhcb_not = 1  # \u00fc\nhcb.barrier_wait()"},
  {"cell_type": "code", "metadata": {}, "outputs": [], "source": [], "execution_count": 2}
 ],
 "nbformat_minor": 5
}
"""


def test_notebook_json_outside_the_changed_sources_is_kept_byte_for_byte(tmp_path):
    text = HAND_WRITTEN
    path = tmp_path / "hand.ipynb"
    path.write_text(text, encoding="utf-8")
    res = run(["hand.ipynb"], tmp_path)
    assert res.exit_code == 0, res.output
    new = path.read_text(encoding="utf-8")
    nb_before, nb_after = json.loads(text), json.loads(new)
    # Only the two changed sources differ: the text before, between and after them is the same.
    first = text.index('"source": [\n    "from jax')
    first_end = text.index("]", first) + 1
    second = text.index('"source": "y = f(2)')
    second_end = text.index('"}', second) + 1
    assert new.startswith(text[:first])
    assert new.endswith(text[second_end:])
    after_first = new.index("]", new.index('"source": [\n    "import')) + 1
    between = text[first_end:second]
    assert new[after_first : after_first + len(between)] == between
    # The changed sources: migrated, in the same layout, unchanged lines spelled as they were.
    assert '\n    "# caf\\u00e9 \\u2028 comment kept\\n",\n' in new
    assert '"source": "' in new[after_first:]  # (a string stays a string)
    code = "".join(nb_after["cells"][1]["source"])
    assert "hcb" not in code and "jax.debug.callback" in code
    assert nb_after["cells"][2]["source"].endswith("jax.effects_barrier()")
    assert nb_after["cells"][0] == nb_before["cells"][0]
    assert nb_after["metadata"] == nb_before["metadata"]


def test_notebook_splice_falls_back_only_where_it_must(tmp_path):
    from hcmigrate.notebook import source_spans, splice_sources

    text = HAND_WRITTEN
    spans = source_spans(text)
    assert len(spans) == 4 and all(spans)
    cells = json.loads(text)["cells"]
    for (start, end), cell in zip(spans, cells):
        assert json.loads(text[start:end]) == cell["source"]  # (the last duplicate key)
    nb = json.loads(text)
    nb["cells"][3]["source"] = ["x = 1\n", "y = 2"]  # an empty list gets lines
    out = splice_sources(text, nb, [4])
    assert json.loads(out) == nb
    assert '"source": [\n   "x = 1\\n",\n   "y = 2"\n  ]' in out
    assert splice_sources("[]", nb, [4]) is None  # not a notebook: the caller re-serialises


def code_notebook(cells: list[str]) -> dict:
    """A notebook of code cells with these sources."""
    return {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": None,
                "outputs": [],
                "source": lines(c),
            }
            for c in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def test_magics_that_use_the_legacy_module_leave_the_notebook_for_a_human(tmp_path):
    """`%timeit hcb.id_print(x)`: the codemod cannot rewrite inside a line magic, and removing
    the import it uses would break it (issue 17). The notebook stays byte for byte as it was,
    with a manual finding per magic naming its cell."""
    cells = [
        "from jax.experimental import host_callback as hcb\nimport jax\n",
        "%timeit hcb.id_print(1)\n",
        "%%timeit -n 1 hcb.barrier_wait()\nx = 1\n",
    ]
    nb = code_notebook(cells)
    path = tmp_path / "m.ipynb"
    path.write_text(json.dumps(nb, indent=1))
    before = path.read_bytes()
    res = run([str(path)], tmp_path)
    assert path.read_bytes() == before
    assert res.exit_code == 1
    assert "m.ipynb:cell 2:1:1: HCB009 [manual] a magic uses `hcb`" in res.output
    assert "m.ipynb:cell 3:1:1: HCB009 [manual]" in res.output  # (%%timeit's setup line)
    # without the magics, the same notebook is migrated
    nb["cells"] = nb["cells"][:1] + [
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": lines("hcb.id_print(1)\n"),
        }
    ]
    path.write_text(json.dumps(nb, indent=1))
    run([str(path)], tmp_path)
    assert "jax.debug.callback(lambda v: print(np.array2string(np.asarray(v))), 1" in (
        path.read_text()
    )


def test_a_python_cell_magic_keeps_its_line_and_its_code_is_migrated(tmp_path):
    """`%%time` (and `%%capture`, `%%prun`, `%%timeit`, `%%debug`) run the rest of their cell
    as Python: the codemod migrates that code and the magic stays the cell's first line."""
    cells = [
        "from jax.experimental import host_callback as hcb\nimport jax\n",
        "%%time\nhcb.id_print(jax.numpy.ones(2), what='ones')\nhcb.barrier_wait()\n",
        "%%bash\necho hcb\n",
    ]
    nb = code_notebook(cells)
    path = tmp_path / "m.ipynb"
    path.write_text(json.dumps(nb, indent=1))
    res = run([str(path)], tmp_path)
    assert res.exit_code == 0, res.output
    new = json.loads(path.read_text())
    # (one array: a one-line print, no helper cell: issue 37)
    assert len(new["cells"]) == len(nb["cells"])
    timed = "".join(new["cells"][1]["source"])
    assert timed.startswith("%%time\n")
    assert (
        'lambda v: print("what: ones", np.array2string(np.asarray(v)), sep="\\n")' in timed
        and "jax.effects_barrier()" in timed
        and "hcb" not in timed
    )
    assert new["cells"][2] == nb["cells"][2]  # a %%bash cell is not Python
    assert "host_callback" not in "".join(new["cells"][0]["source"])
