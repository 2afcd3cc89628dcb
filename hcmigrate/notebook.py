"""Jupyter notebooks: migrate the code cells, keep everything else byte for byte where possible.

The code cells are joined into one module (names imported in one cell are used in others), with
a marker statement before each cell, so the codemod sees the notebook as Python sees it. Magics
are masked first: a line magic / shell escape (``%time x``, ``!pip ...``, ``y = !ls``, ``x?``)
becomes ``pass  # <token>`` with the same indentation, a cell magic (``%%bash`` ...) masks its
whole cell, except the magics that run their cell as Python (``%%time``, ``%%capture`` ...):
only their first line is masked and the cell's code is migrated. A line magic whose argument
uses the legacy module (``%timeit hcb.id_print(x)``) cannot be rewritten: such a notebook is
left unchanged, with a manual finding. After the rewrite the markers split the module back into cells and the masks are
restored. Only the changed cells' ``source`` values are replaced, in the original text: every
other byte of the file (escapes, number spellings, key order, duplicate keys, whitespace) stays
as it was, and in a changed source the lines that did not change keep their own spelling. An
unchanged notebook is never rewritten. Diagnostics carry the cell number (1-based, counting
every cell of the original). A helper the rewrite defines (`_print_like_id_print`) gets a new
code cell of its own, after the first code cell (before it, where that cell uses it): never the
cell with `!pip` or `%` lines, nor above a cell's own imports; the notebook is then written
anew, as Jupyter writes it.
"""

from __future__ import annotations

import dataclasses
import json
import re

from hcmigrate.api import migrate_source
from hcmigrate.options import MigrationResult, Options
from hcmigrate.diagnostics import Diagnostic, Level
from hcmigrate.errors import MigrationError
from hcmigrate.syntax import describe, python_parses


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


def _legacy_names_in_magics(module: str, masks: list[str]) -> list[tuple[str, int]]:
    """(name, line in `module`) for each masked magic that mentions a name the notebook's
    code binds to host_callback (`%timeit hcb.id_print(x)`)."""
    from hcmigrate.project_model.bindings import legacy_binding_targets

    names = legacy_binding_targets(module)
    if not names:
        return []
    found = []
    for line_no, line in enumerate(module.splitlines(), start=1):
        m = _MAGIC_RE.match(line)
        if not m:
            continue
        magic = masks[int(m.group("n"))].strip()
        # (a `%%time`-like cell's own lines are not masked: the codemod migrates them)
        code = magic.partition(" ")[2] if _magic_name(magic) in _PYTHON_MAGICS else ""
        found += [(n, line_no) for n in sorted(names) if re.search(rf"\b{re.escape(n)}\b", code)]
    return found


# Magics whose argument (or, as a cell magic, whose cell) is Python code run in the namespace.
_PYTHON_MAGICS = frozenset({"time", "timeit", "prun", "debug", "capture"})


def _magic_name(magic: str) -> str:
    words = magic.lstrip("%").split(maxsplit=1)
    return words[0] if words else ""


def _source_text(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _mask(text: str, masks: list[str]) -> str:
    lines = text.splitlines(keepends=True)
    out = []
    if lines and lines[0].lstrip().startswith("%%"):
        if _magic_name(lines[0].strip()) not in _PYTHON_MAGICS:  # (a %%bash cell: not Python)
            for line in lines:
                n = len(masks)
                masks.append(line.rstrip("\r\n"))
                out.append(f"pass  # {_MAGIC_TOKEN.format(n=n)}\n")
            return "".join(out)
        # `%%time` and the like run the rest of the cell as Python: only their line is masked,
        # and the codemod migrates the cell's code like any other.
        n = len(masks)
        masks.append(lines[0].rstrip("\r\n"))
        out.append(f"pass  # {_MAGIC_TOKEN.format(n=n)}" + lines[0][len(masks[-1]) :])
        lines = lines[1:]
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


# Following the layout of a notebook's JSON text, to replace cells' sources in place. Values the
# walk does not descend into are skipped by json's own (C) scanner.
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _skip(text: str, i: int) -> int:
    return _WS.match(text, i).end()


def _members(text: str, i: int):
    """(key, value start, value end) of each member of the object at text[i] ("{")."""
    i = _skip(text, i + 1)
    if text[i] == "}":
        return
    while True:
        if text[i] != '"':
            raise ValueError("object key expected")
        key, i = json.decoder.scanstring(text, i + 1)
        i = _skip(text, i)
        if text[i] != ":":
            raise ValueError("':' expected")
        start = _skip(text, i + 1)
        end = _DECODER.raw_decode(text, start)[1]
        yield key, start, end
        i = _skip(text, end)
        if text[i] == "}":
            return
        if text[i] != ",":
            raise ValueError("',' expected")
        i = _skip(text, i + 1)


def _elements(text: str, i: int):
    """(start, end) of each element of the array at text[i] ("[")."""
    i = _skip(text, i + 1)
    if text[i] == "]":
        return
    while True:
        end = _DECODER.raw_decode(text, i)[1]
        yield i, end
        i = _skip(text, end)
        if text[i] == "]":
            return
        if text[i] != ",":
            raise ValueError("',' expected")
        i = _skip(text, i + 1)


def _last(members, key: str):
    """The span of the last member named `key` (the one json.loads keeps), or None."""
    span = None
    for name, start, end in members:
        if name == key:
            span = (start, end)
    return span


def source_spans(text: str) -> list[tuple[int, int] | None]:
    """Where each cell's "source" value lies in a notebook's JSON text (None: a cell that is no
    object or has no source), in the order of json.loads(text)["cells"]."""
    top = _skip(text, 0)
    if text[top] != "{":
        raise ValueError("not an object")
    cells = _last(_members(text, top), "cells")
    if cells is None or text[cells[0]] != "[":
        raise ValueError("no cells array")
    spans: list[tuple[int, int] | None] = []
    for start, _ in _elements(text, cells[0]):
        spans.append(_last(_members(text, start), "source") if text[start] == "{" else None)
    return spans


def _render_source(value, old: str, text: str, at: int, ensure_ascii: bool) -> str:
    """`value` (a cell's new source, a list of lines or a string) as JSON in the layout of its
    old spelling `old` (at offset `at` of the notebook `text`): the same whitespace around and
    between the lines, and each line that did not change spelled as it was."""

    def dumps(line: str) -> str:
        return json.dumps(line, ensure_ascii=ensure_ascii)

    if not isinstance(value, list):
        return dumps(value)
    spans = list(_elements(old, 0)) if old.startswith("[") else []
    spelled = {}
    for start, end in spans:
        spelled.setdefault(json.loads(old[start:end]), old[start:end])
    if spans:
        lead = old[1 : spans[0][0]]
        close = old[spans[-1][1] : -1]
        sep = old[spans[0][1] : spans[1][0]] if len(spans) > 1 else "," + lead
    else:  # "[]": one level deeper than the line of the key
        line_start = text.rfind("\n", 0, at) + 1
        indent = re.match(r"[ \t]*", text[line_start:]).group(0)
        unit = _detect_indent(text)
        if unit is None:
            lead, close = "", ""
            sep = ", " if ", " in text else ","
        else:
            step = " " * unit if isinstance(unit, int) else unit
            lead, close = "\n" + indent + step, "\n" + indent
            sep = "," + lead
    if not value:
        return "[]"
    return "[" + lead + sep.join(spelled.get(line) or dumps(line) for line in value) + close + "]"


def splice_sources(text: str, nb: dict, changed: list[int]) -> str | None:
    """`text` with the sources of the `changed` cells (1-based) replaced by those of `nb`, every
    other byte kept; None when the text's layout could not be followed."""
    try:
        spans = source_spans(text)
    except (ValueError, IndexError, json.JSONDecodeError):
        return None
    if len(spans) != len(nb["cells"]) or any(spans[idx - 1] is None for idx in changed):
        return None
    ensure_ascii = not any(ord(ch) > 127 for ch in text) and "\\u" in text
    out = text
    for idx in sorted(changed, reverse=True):
        start, end = spans[idx - 1]
        new = _render_source(
            nb["cells"][idx - 1]["source"], text[start:end], text, start, ensure_ascii
        )
        out = out[:start] + new + out[end:]
    try:  # (never trust the splice blindly: it must read back as the migrated notebook)
        back = json.loads(out)
        if len(back["cells"]) != len(nb["cells"]) or any(
            back["cells"][idx - 1]["source"] != nb["cells"][idx - 1]["source"] for idx in changed
        ):
            return None
    except (ValueError, KeyError, TypeError, IndexError):
        return None
    return out


def _split_source(new_text: str, old_source):
    """The new source in the old one's form: a string, or a list of lines cut as the old list
    was cut (after each LF, or, as Jupyter cuts them, also after a CR, form feed, U+2028...)."""
    if not isinstance(old_source, list):
        return new_text
    if any(isinstance(line, str) and line[-1:] in _OTHER_BREAKS for line in old_source):
        return new_text.splitlines(keepends=True)
    return [part + "\n" for part in new_text.split("\n")[:-1]] + (
        [new_text.rsplit("\n", 1)[-1]] if not new_text.endswith("\n") and new_text else []
    )


# What str.splitlines cuts after besides LF.
_OTHER_BREAKS = frozenset("\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


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

    in_magics = _legacy_names_in_magics(module, masks)
    if in_magics:
        # The codemod cannot see into magics: removing or renaming the import they use would
        # break them. The notebook is left as it is, for a human.
        found = []
        for name, line in in_magics:
            cell, cell_line = locate(line)
            message = (
                f"a magic uses `{name}` (host_callback); hcmigrate cannot rewrite inside "
                "magics: the notebook is left unchanged, migrate it by hand"
            )
            found.append(Diagnostic("HCB009", message, Level.MANUAL, cell_line, 1, cell=cell))
        return NotebookResult(text, text, found, [])

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
    # Definitions the rewrite placed before the first cell (a helper such as
    # `_print_like_id_print`) get a code cell of their own: never one with shell or magic lines,
    # nor above a cell's own imports (issue 36).
    preamble, definitions = _split_definitions(preamble)
    while len(preamble) > 1 and not preamble[-1].strip() and not preamble[-2].strip():
        preamble.pop()  # (one blank line, not a def's two, between the new and the own imports)
    helper_cell = None
    if definitions:
        first = min(new_cells)
        uses_them = _names_defined(definitions) & _identifiers("".join(new_cells[first]))
        helper_cell = (first if uses_them else first + 1, definitions)
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
    if helper_cell is not None:
        before, definitions = helper_cell
        # (the cell comes before the `before`-th cell of the notebook: cells are numbered over
        # all cells, markdown ones included; the diagnostics keep the numbers of the original)
        position = _position_before(nb["cells"], before)
        nb["cells"].insert(position, _code_cell(nb, "".join(definitions).strip("\n")))
        return NotebookResult(text, dump_like(nb, text), diagnostics, changed_cells)
    if not changed_cells:
        return NotebookResult(text, text, diagnostics, [])
    code = splice_sources(text, nb, changed_cells)
    if code is None:  # (a layout the splice cannot follow: the whole notebook is written anew)
        code = dump_like(nb, text)
    return NotebookResult(text, code, diagnostics, changed_cells)


def _split_definitions(preamble: list[str]) -> tuple[list[str], list[str]]:
    """The preamble's imports, and the definitions from its first top-level `def`, `class` or
    decorator on (with what follows them)."""
    for k, line in enumerate(preamble):
        if re.match(r"(def|class|async def)\b|@", line):
            return preamble[:k], preamble[k:]
    return preamble, []


def _names_defined(lines: list[str]) -> set[str]:
    return set(re.findall(r"^(?:async\s+)?(?:def|class)\s+(\w+)", "".join(lines), re.M))


def _identifiers(text: str) -> set[str]:
    return set(re.findall(r"\b\w+\b", text))


def _position_before(cells: list, number: int) -> int:
    """The list index at which a new cell comes before the cell numbered `number` (1-based,
    over all cells); after the last cell when there is none."""
    return min(number - 1, len(cells))


def _code_cell(nb: dict, source: str) -> dict:
    """A new code cell as the notebook's own cells are written (an `id` where they have one,
    as nbformat 4.5 requires)."""
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": _split_source(source, []),
    }
    has_ids = any(isinstance(c, dict) and "id" in c for c in nb["cells"])
    if has_ids or (nb.get("nbformat", 0), nb.get("nbformat_minor", 0)) >= (4, 5):
        taken = {c.get("id") for c in nb["cells"] if isinstance(c, dict)}
        n = 1
        while f"hcmigrate-helpers-{n}" in taken:
            n += 1
        cell["id"] = f"hcmigrate-helpers-{n}"
    return cell
