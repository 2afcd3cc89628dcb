"""Verify a Jupyter notebook: its code cells, in order, run as one program.

Magics are handled as the codemod handles them (hcmigrate/notebook.py): a line magic or shell
escape (`%time x`, `!pip ...`) becomes `pass` with its indentation, a cell magic (`%%bash`)
masks its whole cell; none of them is run (there is no IPython kernel), on either side. The
cells run like a kernel runs them: in the notebook's folder, with that folder first on
`sys.path` and no `__file__`. Report lines name the cell and the line in it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from hcmigrate.notebook import _mask  # the codemod's own masking of magics


class NotebookProblem(Exception):
    pass


@dataclass
class CellMap:
    """Lines of the generated script -> (cell number, line in the cell), cells counted from 1
    over all cells (markdown too), as Jupyter shows them."""

    notebook: str
    script: str
    starts: list[tuple[int, int, int]] = field(default_factory=list)  # (first line, cell, lines)

    def locate(self, line: int) -> tuple[int, int] | None:
        for first, cell, count in self.starts:
            if first <= line < first + count:
                return cell, line - first + 1
        return None


def notebook_script(notebook: Path, out: Path) -> CellMap:
    """Write the notebook's code cells to `out` as one script; returns the line map."""
    try:
        nb = json.loads(notebook.read_text(encoding="utf-8"))
        cells = nb["cells"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise NotebookProblem(f"{notebook}: not a readable notebook ({e})") from None
    lines: list[str] = []
    cmap = CellMap(str(notebook), str(out))
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        body = _mask(text, []).splitlines()
        cmap.starts.append((len(lines) + 1, number, len(body)))
        lines += body
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return cmap


def relabel(trace: dict, cmap: CellMap) -> None:
    """Point a trace's source locations at the notebook's cells (`nb.ipynb, cell 3, line 2`);
    the script line stays in `raw` for mapping the candidate's lines to the original's."""

    def fix(site: dict | None, file_key: str = "file", line_key: str = "line") -> None:
        if not site or site.get(file_key) != cmap.script:
            return
        found = cmap.locate(site.get(line_key) or 0)
        if found is None:
            return
        site["raw"] = [site[file_key], site[line_key]]
        site[file_key], site["cell"], site[line_key] = cmap.notebook, found[0], found[1]

    for ev in trace.get("events", []) + trace.get("registrations", []):
        fix(ev.get("site"))
        fix(ev.get("callback"))
