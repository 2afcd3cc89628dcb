"""Jupyter notebooks: migrate the code cells, keep everything else byte for byte where possible.

The code cells are joined into one module (names imported in one cell are used in others), with
a marker statement before each cell, so the codemod sees the notebook as Python sees it. Magics
are masked first: a line magic / shell escape (``%time x``, ``!pip ...``, ``y = !ls``, ``x?``)
becomes ``pass  # <token>`` with the same indentation, a cell magic (``%%bash`` ...) masks its
whole cell. After the rewrite the markers split the module back into cells and the masks are
restored. Only the changed cells' ``source`` is replaced; the JSON is written back with the
original indentation, key order, escaping and final newline, and an unchanged notebook is never
rewritten. Diagnostics carry the cell number (1-based, counting every cell).
"""

from __future__ import annotations

import dataclasses
import json
import re

from hcmigrate.api import MigrationResult, Options, migrate_source
from hcmigrate.errors import MigrationError
from hcmigrate.syntax import describe


class NotebookError(MigrationError):
    """A notebook that cannot be migrated; `cell` says which cell, when one is to blame."""


CELL_MARK = (
    "__hcmigrate_cell__({n})"  # a statement, so no rewrite can drop it with a neighbour's comments
)
_CELL_MARK_RE = re.compile(r"^__hcmigrate_cell__\((\d+)\)\r?\n?$")
_MAGIC_TOKEN = "__hcmigrate_magic_{n}__"
_MAGIC_RE = re.compile(r"^(?P<indent>[ \t]*)pass  # __hcmigrate_magic_(?P<n>\d+)__$")
_LINE_MAGIC = re.compile(
    r"^[ \t]*(?:[%!]|\w+(?:\s*,\s*\w+)*\s*=\s*[%!])|^[ \t]*[\w.]+\?{1,2}\s*$|^[ \t]*\?"
)


@dataclasses.dataclass
class NotebookResult:
    original: str
    code: str  # the whole notebook JSON text after migration
    diagnostics: list
    changed_cells: list[int]

    @property
    def changed(self) -> bool:
        return self.code != self.original

    @property
    def needs_human(self) -> bool:
        return any(d.level.needs_human for d in self.diagnostics)


def _source_text(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _mask(text: str, masks: list[str]) -> str:
    lines = text.splitlines(keepends=True)
    if lines and lines[0].lstrip().startswith("%%"):
        out = []
        for line in lines:
            n = len(masks)
            masks.append(line.rstrip("\r\n"))
            out.append(f"pass  # {_MAGIC_TOKEN.format(n=n)}\n")
        return "".join(out)
    out = []
    continuation = False
    indent = ""
    for line in lines:
        body = line.rstrip("\r\n")
        if continuation or _LINE_MAGIC.match(body):
            n = len(masks)
            masks.append(body)
            if not continuation:
                indent = re.match(r"[ \t]*", body).group(0)
            out.append(f"{indent}pass  # {_MAGIC_TOKEN.format(n=n)}" + line[len(body) :])
            continuation = body.endswith("\\")
        else:
            out.append(line)
    return "".join(out)


def _unmask(text: str, masks: list[str]) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        m = _MAGIC_RE.match(body)
        if m:
            out.append(masks[int(m.group("n"))] + line[len(body) :])
        else:
            out.append(line)
    return "".join(out)


def _detect_indent(text: str) -> int | str | None:
    m = re.search(r"^\{\s*\n([ \t]+)\"", text)
    if m:
        ws = m.group(1)
        return len(ws) if set(ws) == {" "} else ws
    return None if "\n" not in text.strip() else 1


def dump_like(nb: dict, original: str) -> str:
    """Serialise `nb` in the layout of `original` (indent, escaping, separators, final newline)."""
    indent = _detect_indent(original)
    ensure_ascii = not any(ord(ch) > 127 for ch in original) and "\\u" in original
    separators = (
        (",", ": ") if indent is not None else ((", ", ": ") if ", " in original else (",", ":"))
    )
    text = json.dumps(nb, indent=indent, ensure_ascii=ensure_ascii, separators=separators)
    if original.endswith("\n"):
        text += "\n"
    return text


def _split_source(new_text: str, old_source):
    if isinstance(old_source, list):
        return new_text.splitlines(keepends=True)
    return new_text


def migrate_notebook(
    text: str, options: Options, *, filename: str = "<notebook>"
) -> NotebookResult:
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(
            f"not a valid notebook: invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})",
            line=None,
            col=None,
        ) from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookError("not a valid notebook: no 'cells' list", line=None, col=None)
    lang = (
        (nb.get("metadata", {}).get("kernelspec", {}) or {}).get("language")
        or (nb.get("metadata", {}).get("language_info", {}) or {}).get("name")
        or "python"
    )
    if str(lang).lower() != "python":
        return NotebookResult(text, text, [], [])

    masks: list[str] = []
    parts: list[str] = []
    cell_of_part: list[int] = []
    originals: dict[int, str] = {}
    starts: list[tuple[int, int]] = []  # (first line of cell body in module, cell number)
    line_no = 1
    for idx, cell in enumerate(nb["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = _source_text(cell)
        originals[idx] = src
        body = _mask(src, masks)
        if not body.endswith("\n"):
            body += "\n"
        parts.append(CELL_MARK.format(n=idx) + "\n" + body)
        starts.append((line_no + 1, idx))
        cell_of_part.append(idx)
        line_no += 1 + body.count("\n")
    if not parts:
        return NotebookResult(text, text, [], [])
    module = "".join(parts)

    def locate(line: int) -> tuple[int, int]:
        cell, first = starts[0][1], starts[0][0]
        for start, n in starts:
            if start <= line:
                cell, first = n, start
        return cell, max(1, line - first + 1)

    from hcmigrate.runner import python_parses

    try:
        # (Python's parser first: code too deep for it must not reach libcst's native parser)
        python_parses(module, top_level_await=True)
        result: MigrationResult = migrate_source(
            module, options, filename=filename, top_level_await=True
        )
    except MigrationError as exc:
        if exc.line is None:  # (nesting too deep: no line to point at)
            raise NotebookError(exc.message, line=None, col=None) from None
        message, line, _ = describe(module, exc.message, exc.line, exc.col, top_level_await=True)
        cell, line = locate(line)
        raise NotebookError(message, line=line, col=None, cell=cell) from None
    diagnostics = []
    for d in result.diagnostics:
        cell, line = locate(d.line)
        diagnostics.append(dataclasses.replace(d, cell=cell, line=line))
    if not result.changed:
        return NotebookResult(text, text, diagnostics, [])

    # Split the migrated module back into cells at the markers.
    new_cells: dict[int, list[str]] = {}
    current: int | None = None
    preamble: list[str] = []
    for line in result.code.splitlines(keepends=True):
        m = _CELL_MARK_RE.match(line)
        if m:
            current = int(m.group(1))
            new_cells[current] = []
            continue
        (new_cells[current] if current is not None else preamble).append(line)
    if sorted(new_cells) != sorted(originals):
        raise NotebookError(
            "the rewrite moved notebook cell boundaries; left unchanged", line=None, col=None
        )
    if preamble:  # text placed before the first cell (new imports) joins the first Python cell,
        # after its leading magics (a `%%` cell magic must stay the first line of its cell).
        for idx in sorted(new_cells):
            body = new_cells[idx]
            if originals[idx].lstrip().startswith("%%"):
                continue
            k = 0
            while k < len(body) and _MAGIC_RE.match(body[k].rstrip("\r\n")):
                k += 1
            new_cells[idx] = body[:k] + preamble + body[k:]
            break
        else:
            raise NotebookError(
                "no Python cell to hold the new imports; left unchanged", line=None, col=None
            )

    changed_cells = []
    for idx, lines in new_cells.items():
        new_src = _unmask("".join(lines), masks)
        old_src = originals[idx]
        if not old_src.endswith("\n") and new_src.endswith("\n"):
            new_src = new_src[:-1]
        if new_src != old_src:
            cell = nb["cells"][idx - 1]
            cell["source"] = _split_source(new_src, cell.get("source"))
            changed_cells.append(idx)
    if not changed_cells:
        return NotebookResult(text, text, diagnostics, [])
    return NotebookResult(text, dump_like(nb, text), diagnostics, changed_cells)
