"""The statements the codemod wrote, laid out as the project's formatter lays out code.

A rewrite is built as syntax trees, which print on one line however long they are. Each
simple statement the codemod wrote (and only those) is handed to black, whose style
`ruff format` shares, with the project's line length less its indentation: a call too long
for a line comes out one argument a line, with its closing bracket on a line of its own, as
in the rest of a formatted file. Statements are formatted one at a time, as text of their
own: black never sees, so never changes, a line around them.

What is formatted (a one-line statement within the limit is already as black writes it):
- in a file laid out by black (the statements the rewrite replaced are as black writes
  them), every statement with a line the codemod wrote, in
  black's whole style (string quotes included): the project's formatter would make the same
  change on its next run;
- in any other file, only statements with a written line longer than the limit, with their
  strings' quotes kept (the layout a call had is kept otherwise: hcmigrate.rules.nodes.call_like);
and the result must be the same program (the same ast) as the unformatted rewrite. Where
black is missing or refuses a statement, the rewrite keeps its printed layout. Black lays out
only the tokens the rewrite wrote: each part of the statement copied from the source that
black kept on one line is spliced back with its own bytes (`cost[:,-1]`, `n-1` as the user
spaced them). The header of a compound statement (`if`, `elif`, `for`, `while`, `with`) with a
written line over the limit (a rename that made it longer) is laid out as black lays it out in
the file. Where the project states no line length, a file whose own lines go past 88 (many of
them) is held to its own longest code line, not reflowed at 88, and one whose code keeps to 80
(Google's style; a stray longer line, 1 in 200 code lines at most, aside) is held to 80.
Lines a linter lets run long count for neither (ruff's E501, Google's pylintrc): a trailing
pragma comment (`# pylint: disable=...`, `# pytype: ...`, `# noqa`, `# type: ignore`) is left
out of its line's length, and a line with a URL or an import line is left out. A statement
with a trailing pragma is never wrapped: the pragma covers only the line it ends. In a file
not laid out by black, black's 4 columns a bracket become the file's own hanging indent (2 in a file whose
lines after a bracket that ends a line are indented by 2; a file that shows none keeps 4, as
Google's 2-space style does); black's layout is never taken for a file's style where its
blocks are indented by 2.

A project formatted with yapf (hcmigrate.config.yapf_style_file) never gets black's layout:
the statements black would have been given go to yapf, with the project's style file, in
their place in the file (yapf's `lines`); where yapf (an optional extra) is not installed,
they keep their printed layout. A file with no formatter configured that is laid out as Google's
style guide lays code out (two-space indents, closing brackets kept at the end of a line, as
yapf's `yapf` style writes them: chex, with only a .pylintrc) gets yapf's layout in that
style, and only for the statements black would have been given there (too long a line); black's
closing bracket on a line of its own would stand out in it.

Two kinds of written statement are never handed to black, in any file: one whose only change
is a rename (`jax.tree_map` -> `jax.tree.map`, `hcb.id_tap` -> `hcb.id_tap`), with no line
longer than the limit or than it was, keeps its layout and quotes; and in a file not laid
out by black, continuation lines aligned with an open bracket (`call(a,\n     b)`, pycodestyle's
visual indent) in the statement the rewrite replaced are aligned with that bracket where it
now stands (a longer callee, an argument wrapped in a helper call), nested brackets included;
a realigned line that lands past the limit makes its statement one to lay out.
Such a realigned statement keeps the alignment, not black's layout, where its lines fit in
the file's own longest line and the file has many lines over the limit (it does not keep to
it): one file, one layout.
"""

from __future__ import annotations

import ast
import bisect
import io
import re
import textwrap
import tokenize

from hcmigrate.options import DEFAULT_LINE_LENGTH
from hcmigrate.codemod.line_diff import opcodes
from hcmigrate.codemod.partial_parse import BLOCK_STATEMENTS

_COMPOUND = BLOCK_STATEMENTS  # (ast statements that hold blocks)


def written_lines(source: str, code: str) -> set[int]:
    """The 1-based numbers of the lines of `code` that are not lines of `source`."""
    return _changed_lines(source, code)[1]


def _changed_lines(source: str, code: str, ops=None) -> tuple[set[int], set[int]]:
    """(lines of `source` the rewrite replaced or removed, lines of `code` it wrote), 1-based."""
    replaced: set[int] = set()
    written: set[int] = set()
    for tag, i1, i2, j1, j2 in ops or opcodes(source.splitlines(), code.splitlines()):
        if tag in ("replace", "delete"):
            replaced.update(range(i1 + 1, i2 + 1))
        if tag in ("replace", "insert"):
            written.update(range(j1 + 1, j2 + 1))
    return replaced, written


def format_written_lines(
    source: str,
    code: str,
    line_length: int = DEFAULT_LINE_LENGTH,
    source_tree=None,
    yapf_style: str | None = None,
    line_length_stated: bool = True,
) -> str:
    """`code` (the rewrite of `source`, whose ast is `source_tree` if the caller has it) with
    the statements the codemod wrote formatted: by yapf with the style file `yapf_style` in a
    project formatted with yapf, by black otherwise. Where the project states no line length
    (`line_length_stated`), a file whose own lines go past `line_length` is held to its own
    longest line instead (a file at 120 columns is not reflowed at 88)."""
    if code == source:
        return code
    if not line_length_stated:
        line_length = own_line_limit(source, line_length)
    ops = opcodes(source.splitlines(), code.splitlines())
    replaced, written = _changed_lines(source, code, ops)
    if not written:
        return code
    black = None
    if yapf_style is None:
        try:
            import black
        except ImportError:  # (a dependency; an environment without it keeps the printed layout)
            return code
    try:
        tree = ast.parse(code)
    except Exception:  # (top-level await in a notebook cell, a syntax black does not know)
        return code
    lines = code.splitlines(keepends=True)
    spans = _statement_spans(tree, lines, written, line_length)
    headers = _long_headers(tree, lines, written, line_length)
    if not spans and not headers:
        return code
    try:  # (asked only when a statement needs black)
        source_tree = source_tree or ast.parse(source)
        black_style = black is not None and _black_style(
            black, source, replaced, line_length, source_tree
        )
    except Exception:
        return code
    old_lines = source.splitlines(keepends=True)
    hanging, block = _indent_steps(old_lines)
    black_style = black_style and block != 2  # (black indents every block by 4)
    step = None if black_style else hanging  # (none shown: 4, as Google's 2-space style has it)
    file_limit = _file_limit(
        [line_without_pragma(t) for t in old_lines if not _long_by_exemption(t)], line_length
    )
    old_of = _old_line_numbers(ops)
    changed = False
    to_format = []
    for first, last in spans:
        old = _old_statement(source_tree, old_lines, old_of, first, last)
        text = "".join(lines[first - 1 : last])
        moved = False  # (continuation lines realigned: written too, though the rewrite kept them)
        if old is None or _visually_aligned(old):
            realigned = _realigned(text)
            renamed = old is not None and _renamed_only(old, realigned, line_length)
            if realigned != text and (renamed or not black_style):
                lines[first - 1 : last] = realigned.splitlines(keepends=True)
                text, changed, moved = realigned, True, True
        if old is not None and _renamed_only(old, text, line_length):
            continue  # (the file's own layout and quotes)
        if _has_pragma(text):
            continue  # (wrapped, its pragma would leave the line it silences)
        if (
            not black_style
            and yapf_style is None
            and old is not None
            and _visually_aligned(old)
            and _visually_aligned(text)
            and max(len(t.rstrip("\r\n")) for t in text.splitlines()) <= file_limit
        ):
            continue  # (aligned as the file aligns, within the lengths the file itself has)
        if (
            black_style
            or yapf_style is not None
            or any(
                (i in written or moved) and len(line_without_pragma(lines[i - 1])) > line_length
                for i in range(first, last + 1)
            )
        ):
            to_format.append((first, last))
    to_format += list(headers)
    if yapf_style is not None:
        laid_out = _yapf("".join(lines), to_format, yapf_style) if to_format else None
        return laid_out or ("".join(lines) if changed else code)
    if to_format and not black_style and _google_layout(old_lines):
        laid_out = _yapf("".join(lines), to_format, _GOOGLE_STYLE % line_length)
        if laid_out is not None:  # (else black's layout, as where yapf is not installed)
            return laid_out
    for first, last in sorted(to_format, reverse=True):  # (bottom up: line numbers stay valid)
        text = "".join(lines[first - 1 : last])
        indent = text[: len(text) - len(text.lstrip(" "))]
        statement = textwrap.dedent(text)
        width = max(line_length - len(indent), 20)
        header = headers.get((first, last))
        if header is not None:  # (`if x:` is formatted as `if x:\n    pass`; `elif` as `if`)
            statement = statement[len(header) :] if header == "el" else statement
            statement = statement.rstrip("\r\n") + "\n    pass\n"
            width -= len(header)
        try:  # (black's layout is the same program; the pipeline compiles the result)
            formatted = _black(black, statement, width, black_style)
            if _split_for_a_comment(formatted, statement):
                statement = _comments_above(statement, width)
                formatted = _black(black, statement, width, black_style)
            old = _old_statement(source_tree, old_lines, old_of, first, last)
            formatted = _untouched_kept(statement, formatted, old or "", width)
            if step is not None and step != 4:
                formatted = _reindented(formatted, step)
        except Exception:
            continue
        if header is not None:
            body = formatted.splitlines(keepends=True)
            if len(body) < 2 or body[-1].strip() != "pass":
                continue
            formatted = header + "".join(body[:-1])
            if "\r\n" in text:
                formatted = formatted.replace("\r\n", "\n").replace("\n", "\r\n")
        formatted = textwrap.indent(formatted, indent)
        if not text.endswith("\n"):
            formatted = formatted.rstrip("\n")
        if formatted != text:
            lines[first - 1 : last] = [formatted]
            changed = True
    return "".join(lines) if changed else code


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_HEADERS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, *_DEFINITIONS)


def _colon_row(lines: list[str], first: int) -> int | None:
    """The line of the colon that ends the `def` or `class` header starting on line `first`
    (the first colon outside brackets: defaults, annotations and bases are inside them)."""
    depth = 0
    text = "".join(lines[first - 1 : first + 200])
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type != tokenize.OP:
                continue
            if token.string in _OPENING:
                depth += 1
            elif token.string in _CLOSING:
                depth -= 1
            elif token.string == ":" and depth == 0:
                return first + token.start[0] - 1
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return None


def _long_headers(
    tree: ast.Module, lines: list[str], written: set[int], line_length: int
) -> dict[tuple[int, int], str]:
    """(first, last) lines of the headers of compound statements (`if`, `elif`, `for`,
    `while`, `with`, `def`, `class`) with a written line longer than the limit (a rename that made
    `jax.tree_leaves` `jax.tree_util.tree_leaves` in a `for`), each with what black must not
    see of it: "el" for an `elif` (formatted as an `if`), else ""."""
    found = {}
    for node in ast.walk(tree):
        if not isinstance(node, _HEADERS) or not node.body:
            continue
        if isinstance(node, _DEFINITIONS):
            last = _colon_row(lines, node.lineno)
            if last is None:
                continue
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            ends = [i.optional_vars or i.context_expr for i in node.items]
            last = max(e.end_lineno or e.lineno for e in ends)
        else:
            ends = [node.test if isinstance(node, (ast.If, ast.While)) else node.iter]
            last = max(e.end_lineno or e.lineno for e in ends)
        first = node.lineno
        if node.body[0].lineno <= last or not any(
            i in written and len(lines[i - 1].rstrip("\r\n")) > line_length
            for i in range(first, last + 1)
        ):
            continue  # (`if x: y` on one line; or nothing too long)
        head = lines[first - 1]
        if head[: node.col_offset].strip() or "\t" in head[: node.col_offset]:
            continue
        header = "".join(lines[first - 1 : last])
        if "\\\n" in header or not header.split("#")[0].rstrip().endswith(":"):
            continue  # (a backslash continuation; a comment line in the header)
        keyword = head[node.col_offset :]
        found[(first, last)] = "el" if keyword.startswith("elif") else ""
    return found


def _indent_steps(lines: list[str]) -> tuple[int | None, int | None]:
    """(how far the file indents the lines after a bracket that ends a line, `f(\n  a)`: 2
    or 4 columns, whichever it does more; how far it indents
    a block: 2 or 4), None where the file does not say."""
    steps = {2: 0, 4: 0}
    blocks = {2: 0, 4: 0}
    previous = None
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if previous is not None:
            step = (len(line) - len(line.lstrip(" "))) - (len(previous) - len(previous.lstrip(" ")))
            code = previous.rstrip("\r\n")
            if step in steps and _OPENS_A_LINE_BREAK.search(code):
                steps[step] += 1
            elif step in blocks and code.rstrip().endswith(":"):
                blocks[step] += 1
        previous = line
    hanging = (2 if steps[2] > steps[4] else 4) if max(steps.values()) else None
    block = (2 if blocks[2] > blocks[4] else 4) if max(blocks.values()) else None
    return hanging, block


def _reindented(statement: str, step: int) -> str:
    """`statement` (black's layout, 4 columns a bracket) with `step` columns a bracket; lines
    inside a string are kept."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(statement).readline))
    except (tokenize.TokenError, SyntaxError):
        return statement
    inside = {
        row
        for t in tokens
        if t.type == tokenize.STRING or t.type == getattr(tokenize, "FSTRING_MIDDLE", -1)
        for row in range(t.start[0] + 1, t.end[0] + 1)
    }
    lines = statement.splitlines(keepends=True)
    for row, line in enumerate(lines, 1):
        indent = len(line) - len(line.lstrip(" "))
        if row not in inside and indent % 4 == 0 and line.strip():
            lines[row - 1] = " " * (indent // 4 * step) + line.lstrip(" ")
    return "".join(lines)


def own_line_limit(source: str, line_length: int) -> int:
    """The longest line a file keeps to where its project states none: `line_length`, or, in
    a file with many code lines over it (3 and 1 in 100), its own longest code line. Lines
    black could not have shortened do not count: comments, lines of a docstring or other
    string over several lines, lines with a long string literal."""
    lines = source.splitlines()
    unsplittable: set[int] = set()
    fstring_start = getattr(tokenize, "FSTRING_START", None)  # (Python 3.12's f-strings)
    opened: list[tuple[int, int]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            start, end = token.start, token.end
            if token.type == fstring_start:
                opened.append(start)
                continue
            if token.type == getattr(tokenize, "FSTRING_END", None) and opened:
                start = opened.pop()
            elif token.type == tokenize.COMMENT and not token.line[: start[1]].strip():
                unsplittable.add(start[0])
                continue
            elif token.type != tokenize.STRING:
                continue
            if start[0] != end[0] or end[1] - start[1] >= 30:
                unsplittable.update(range(start[0], end[0] + 1))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        unsplittable = {i for i, line in enumerate(lines, 1) if line.lstrip().startswith("#")}
    code = [
        line_without_pragma(line)
        for i, line in enumerate(lines, 1)
        if i not in unsplittable and not _long_by_exemption(line)
    ]
    return _narrow_limit(code, line_length) or _file_limit(code, line_length)


# A comment that speaks to a tool about its own line (pylint's and pytype's `disable=...`,
# ruff's and flake8's `noqa`, `type: ignore`): ruff's E501 leaves it out of the line's length,
# and it covers only the line it ends, so a statement that has one is never wrapped.
_PRAGMA = re.compile(
    r"\s#\s*(?:noqa\b|type:|pylint:|pytype:|pyright:|mypy:|nosec\b|ruff:|flake8:|isort:)"
)
# Lines a linter lets run long (ruff's E501; Google's pylintrc `ignore-long-lines`): one with a
# URL, an import line.
_EXEMPT = re.compile(r"https?://\S|^\s*(?:from\s+\S+\s+)?import\s+\S")


def line_without_pragma(line: str) -> str:
    """`line` without its trailing pragma comment (and newline), as ruff's E501 measures it."""
    line = line.rstrip("\r\n")
    found = _PRAGMA.search(line)
    return line[: found.start()].rstrip() if found else line


def _long_by_exemption(line: str) -> bool:
    """Is `line` one a linter lets run past the limit (a URL, an import)?"""
    return _EXEMPT.search(line) is not None


def _has_pragma(text: str) -> bool:
    return any(_PRAGMA.search(line) for line in text.splitlines())


# A file written to 80 (Google's style) or 79 columns (PEP 8) where the project states no
# length: all its code lines fit in 80, it has enough of them to tell (a short file says
# nothing), and many come close to the limit (the author wraps there, rather than writing
# short lines). Its rewrites are held to 80 (79 where no line reaches 80), not to black's 88
# (chex's and praxis's modules got lines of 81-88 columns).
# A stray longer line, 1 in 200 code lines at most, does not make such a file wide (praxis's
# pipeline.py: 1 of 867, a dataclass field's default yapf cannot break).
_NARROW_FILES = (40, 80, 72, 20)  # (code lines at least, limit, near it from, 1 in N near it)
_STRAY = 200  # (1 in N code lines over the limit at most)


def _narrow_limit(code: list[str], line_length: int) -> int | None:
    least, limit, near, one_in = _NARROW_FILES
    lengths = [len(line.rstrip("\r\n")) for line in code if line.strip()]
    if line_length <= limit or len(lengths) < least:
        return None
    within = [n for n in lengths if n <= limit]
    if (len(lengths) - len(within)) * _STRAY > len(lengths):
        return None
    if sum(n >= near for n in within) * one_in < len(lengths):
        return None
    return max(max(within), limit - 1)


def _untouched_kept(statement: str, formatted: str, old: str, width: int) -> str:
    """`formatted` (black's layout of `statement`) with each part of the statement that the
    rewrite copied from the source (`old`, the statement it replaced) written with its own
    bytes where black kept it on one line: `cost[:,-1]`, `n-1`, `d['k']` as the user wrote
    them, not re-spaced. Only the tokens the rewrite wrote take black's spacing; a part whose
    own text would push its line past `width` keeps black's."""
    if not old:
        return formatted
    try:
        before, after = ast.parse(statement), ast.parse(formatted)
    except SyntaxError:
        return formatted
    if ast.dump(before) != ast.dump(after):
        return formatted
    pre_lines = [line.encode() for line in statement.splitlines(keepends=True)]
    out_lines = [line.encode() for line in formatted.splitlines(keepends=True)]
    grown: dict[int, int] = {}  # line of `formatted` -> bytes its splices add
    splices: list[tuple[int, int, int, bytes]] = []  # (line, start, end, the source's bytes)

    def segment(lines, node) -> bytes | None:
        if node.lineno != node.end_lineno:
            return None
        return lines[node.lineno - 1][node.col_offset : node.end_col_offset]

    def visit(pre, out) -> None:
        if isinstance(pre, ast.JoinedStr):
            return  # (positions inside an f-string are not the text's before Python 3.12)
        if isinstance(pre, (ast.expr, ast.keyword, ast.arg)) and hasattr(pre, "end_lineno"):
            own, black_text = segment(pre_lines, pre), segment(out_lines, out)
            if own is not None and black_text is not None:
                if own == black_text:
                    return
                text = own.decode(errors="replace")
                row = out.lineno
                longer = grown.get(row, 0) + len(own) - len(black_text)
                fits = len(out_lines[row - 1].rstrip(b"\r\n")) + longer <= width
                if text in old and (fits or len(own) <= len(black_text)):
                    splices.append((row, out.col_offset, out.end_col_offset, own))
                    grown[row] = longer
                    return
        for pre_child, out_child in zip(ast.iter_child_nodes(pre), ast.iter_child_nodes(out)):
            visit(pre_child, out_child)

    visit(before, after)
    for row, start, end, own in sorted(splices, reverse=True):
        line = out_lines[row - 1]
        out_lines[row - 1] = line[:start] + own + line[end:]
    return b"".join(out_lines).decode()


def _file_limit(lines: list[str], line_length: int) -> int:
    """The longest line the file keeps to: `line_length`, or, in a file with many lines over
    it (3 and 1 in 100, not one stray URL), its own longest line: an aligned statement that
    fits there keeps the file's alignment rather than get black's layout beside it."""
    lengths = [len(line.rstrip("\r\n")) for line in lines]
    over = sum(n > line_length for n in lengths)
    return max(lengths) if over >= max(3, len(lengths) // 100) else line_length


# yapf's style for the Google layout it infers (`yapf` is Google's with two-space indents).
_GOOGLE_STYLE = "{based_on_style: yapf, column_limit: %d}"
_OPENS_A_LINE_BREAK = re.compile(r"[([{]\s*(#.*)?$")
_CLOSERS_ONLY = re.compile(r"\s*[)\]}]+[,:]?\s*(#.*)?")


def _google_layout(lines: list[str]) -> bool:
    """Is the file laid out in Google's style: blocks indented by two spaces, and brackets
    opened at a line's end closed at the end of a later line (not on a line of their own, as
    black closes them), with at most one in eight otherwise? (chex: 2 of 17.)"""
    steps = {2: 0, 4: 0}
    previous = None
    for line in lines:
        if not line.strip():
            continue
        if previous is not None and previous.rstrip().endswith(":"):
            step = (len(line) - len(line.lstrip(" "))) - (len(previous) - len(previous.lstrip(" ")))
            if step in steps:
                steps[step] += 1
        previous = line
    if steps[2] <= steps[4]:
        return False
    opened = sum(1 for line in lines if _OPENS_A_LINE_BREAK.search(line.rstrip("\r\n")))
    closed_alone = sum(1 for line in lines if _CLOSERS_ONLY.fullmatch(line.rstrip("\r\n")))
    return opened >= 4 and closed_alone * 8 <= opened


def _statement_spans(
    tree: ast.Module, lines: list[str], written: set[int], line_length: int
) -> list[tuple[int, int]]:
    """(first, last) lines of the simple statements with a written line, alone on their lines,
    that black could lay out differently: written over several lines, or too long (a short
    one-line statement is already what black writes: generated code is spaced as black
    spaces it, and what it copies comes from the file)."""
    spans = []
    for node in _statements_on(tree, written):
        first, last = node.lineno, node.end_lineno or node.lineno
        if first == last and len(line_without_pragma(lines[first - 1])) <= line_length:
            continue
        before = lines[first - 1][: node.col_offset]
        after = lines[last - 1].encode()[node.end_col_offset :].decode(errors="replace")
        if before.strip() or (after.strip() and not after.lstrip().startswith("#")):
            continue  # (shares a line with another statement: `a = 1; b = 2`)
        if "\t" in before or "\\\n" in "".join(lines[first - 1 : last]):
            continue
        spans.append((first, last))
    return spans


def _black_style(black, source: str, replaced: set[int], line_length: int, tree=None) -> bool:
    """Does the project format with black (or ruff format)? Asked of the statements the
    rewrite replaced (lines `replaced` of `source`, at most a few statements): black leaves
    them alone. (The whole file would answer it too, at many times the cost: black is the
    largest part of a migration's time.)"""
    old = source.splitlines(keepends=True)
    tree = tree or ast.parse(source)
    checked = 0
    for node in _statements_on(tree, replaced):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue  # (black leaves an import line alone in any file: it tells nothing)
        first, last = node.lineno, node.end_lineno or node.lineno
        text = "".join(old[first - 1 : last])
        indent = text[: len(text) - len(text.lstrip(" "))]
        if node.col_offset != len(indent) or "\t" in indent:
            continue
        if _black(black, textwrap.dedent(text), max(line_length - len(indent), 20), True) != (
            textwrap.dedent(text)
        ):
            return False
        checked += 1
        if checked == 2:
            break
    return checked > 0


def _statements_on(tree: ast.Module, lines: set[int]):
    """The simple statements with a line in `lines`, in order; blocks that hold none of the
    lines are not walked."""
    ordered = sorted(lines)
    stack = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        first, last = node.lineno, node.end_lineno or node.lineno
        at = bisect.bisect_left(ordered, first)  # (the first of the lines from `first` on)
        if at == len(ordered) or ordered[at] > last:
            continue
        if isinstance(node, _COMPOUND):
            children = [
                child
                for field in ("body", "orelse", "finalbody", "handlers", "cases")
                for child in getattr(node, field, ())
            ]
            blocks = [
                getattr(c, "body", None) if not isinstance(c, ast.stmt) else [c] for c in children
            ]
            stack.extend(reversed([s for block in blocks if block for s in block]))
        else:
            yield node


def _split_for_a_comment(formatted: str, statement: str) -> bool:
    """Did black split a bracket only to fit a trailing comment (`f(\\n x\\n),  # ...`)?"""
    return any(
        line.lstrip().startswith(")") and "#" in line and line not in statement
        for line in formatted.splitlines()
    )


def _comments_above(statement: str, width: int) -> str:
    """`statement` with each trailing comment that makes its line too long on a line of its
    own above that line (black keeps such a comment where it is: the code is not split)."""
    import io
    import tokenize

    lines = statement.splitlines(keepends=True)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(statement).readline))
    except (tokenize.TokenError, SyntaxError):
        return statement
    for token in reversed(tokens):
        if token.type != tokenize.COMMENT:
            continue
        row, col = token.start
        line = lines[row - 1]
        code = line[:col].rstrip()
        if not code.strip() or len(line.rstrip("\r\n")) <= width:
            continue
        indent = line[: len(line) - len(line.lstrip())]
        ending = line[len(line.rstrip("\r\n")) :]
        lines[row - 1 : row] = [f"{indent}{token.string}{ending}", f"{code}{ending}"]
    return "".join(lines)


def _yapf(code: str, spans: list[tuple[int, int]], style_file: str) -> str | None:
    """`code` with the statements on lines `spans` laid out by yapf in the project's style
    (yapf formats only those lines, in their place in the file); None where yapf is not
    installed (an optional extra: the printed layout is kept, black's is never imposed on a
    yapf project) or refuses the file."""
    try:
        from yapf.yapflib.yapf_api import FormatCode
    except ImportError:
        return None
    crlf = "\r\n" in code
    try:
        formatted, _ = FormatCode(
            code.replace("\r\n", "\n") if crlf else code, style_config=style_file, lines=spans
        )
    except Exception:  # (a style file yapf rejects, a syntax it does not know)
        return None
    if crlf:
        formatted = formatted.replace("\n", "\r\n")
    before, after = code.splitlines(keepends=True), formatted.splitlines(keepends=True)
    first, last = min(a for a, _ in spans), max(b for _, b in spans)
    tail = len(before) - last
    if before[: first - 1] != after[: first - 1] or before[last:] != after[len(after) - tail :]:
        return None  # (yapf touched a line around the statements: the file's own are kept)
    return formatted


def _black(black, text: str, line_length: int, normalize_strings: bool) -> str:
    """`text` laid out by black for the Pythons JAX runs on (3.9 and newer): a statement alone
    shows black no Python 3.6 syntax, and black would then write no trailing comma after
    `*args` / `**kwargs` in a call it splits, where ruff format always does and black does on
    a file that needs 3.6 (netket's `odefun(...)`); written with it, black infers 3.6 from
    that very comma, so both formatters keep it. (Only where a `*` may be such an argument:
    black formats a fifth slower with target versions given.)"""
    targets = set()
    if "*" in text:
        targets = {v for v in black.TargetVersion if v.value >= black.TargetVersion.PY39.value}
    mode = black.Mode(
        line_length=line_length, string_normalization=normalize_strings, target_versions=targets
    )
    return black.format_str(text, mode=mode)


def _old_line_numbers(ops) -> dict[int, int]:
    """Line of the rewrite -> the line of the source it stands for (1-based): a kept line, or
    a line of a rewritten block (the block's last source line past its end)."""
    old_of = {}
    for tag, i1, i2, j1, j2 in ops:
        if tag in ("equal", "replace"):
            for j in range(j1, j2):
                old_of[j + 1] = i1 + min(j - j1, i2 - i1 - 1) + 1
    return old_of


def _old_statement(tree, old_lines, old_of, first: int, last: int) -> str | None:
    """The text of the source's simple statement that lines `first`..`last` of the rewrite
    replaced (the one on the source line their first line stands for)."""
    line = old_of.get(first)
    if line is None:
        return None
    node = next(_statements_on(tree, {line}), None)
    if node is None:
        return None
    return "".join(old_lines[node.lineno - 1 : node.end_lineno or node.lineno])


_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def _renamed_only(old: str, new: str, line_length: int) -> bool:
    """Is `new` the statement `old` with only names changed (`jax.tree_map` -> `jax.tree.map`),
    line for line, and no line longer than the limit or than it was?"""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    return len(old_lines) == len(new_lines) and all(
        _DOTTED_NAME.sub("N", o.strip()) == _DOTTED_NAME.sub("N", n.strip())
        and len(n) <= max(line_length, len(o))
        for o, n in zip(old_lines, new_lines)
    )


def _visually_aligned(statement: str) -> bool:
    """Does `statement` align continuation lines with an open bracket followed by code on its
    line (`call(a,\n     b)`), every one of them?"""
    realigned, count = _align_visual(statement)
    return count > 0 and realigned == statement


def _realigned(statement: str) -> str:
    return _align_visual(statement)[0]


_OPENING, _CLOSING = "([{", ")]}"
_LAYOUT = (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)


def _align_visual(statement: str) -> tuple[str, int]:
    """(`statement` with each line that continues a visually indented bracket aligned with it,
    where that bracket now stands, and the number of such lines). A bracket is visual when
    code follows it on its line; a line that starts with a closing bracket, or inside a
    string, is left as it is."""
    lines = statement.splitlines(keepends=True)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(statement).readline))
    except (tokenize.TokenError, SyntaxError):
        return statement, 0
    shift: dict[int, int] = {}  # row -> columns its line moves
    open_brackets: list[tuple[int, bool]] = []  # (column after it, once moved; visual?)
    started: set[int] = set()
    count = 0
    for at, token in enumerate(tokens):
        if token.type in _LAYOUT:
            continue
        row, col = token.start
        if row not in started:
            started.add(row)
            line = lines[row - 1]
            if (
                open_brackets
                and open_brackets[-1][1]
                and not line[:col].strip()
                and "\t" not in line[:col]
                and token.string not in _CLOSING
            ):
                shift[row] = open_brackets[-1][0] - col
                count += token.type != tokenize.COMMENT
        if token.type == tokenize.OP and token.string in _OPENING:
            following = tokens[at + 1] if at + 1 < len(tokens) else token
            visual = following.start[0] == row and following.type not in (
                tokenize.NL,
                tokenize.COMMENT,
            )
            open_brackets.append((col + shift.get(row, 0) + 1, visual))
        elif token.type == tokenize.OP and token.string in _CLOSING and open_brackets:
            open_brackets.pop()
    for row, by in shift.items():
        if by:
            lines[row - 1] = " " * (len(lines[row - 1]) - len(lines[row - 1].lstrip(" ")) + by) + (
                lines[row - 1].lstrip(" ")
            )
    return "".join(lines), count
