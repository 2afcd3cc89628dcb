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
black is missing or refuses a statement, the rewrite keeps its printed layout.
"""

from __future__ import annotations

import ast
import bisect
import textwrap

from hcmigrate.options import DEFAULT_LINE_LENGTH
from hcmigrate.codemod.line_diff import opcodes
from hcmigrate.codemod.partial_parse import BLOCK_STATEMENTS

_COMPOUND = BLOCK_STATEMENTS  # (ast statements that hold blocks)


def written_lines(source: str, code: str) -> set[int]:
    """The 1-based numbers of the lines of `code` that are not lines of `source`."""
    return _changed_lines(source, code)[1]


def _changed_lines(source: str, code: str) -> tuple[set[int], set[int]]:
    """(lines of `source` the rewrite replaced or removed, lines of `code` it wrote), 1-based."""
    replaced: set[int] = set()
    written: set[int] = set()
    for tag, i1, i2, j1, j2 in opcodes(source.splitlines(), code.splitlines()):
        if tag in ("replace", "delete"):
            replaced.update(range(i1 + 1, i2 + 1))
        if tag in ("replace", "insert"):
            written.update(range(j1 + 1, j2 + 1))
    return replaced, written


def format_written_lines(
    source: str, code: str, line_length: int = DEFAULT_LINE_LENGTH, source_tree=None
) -> str:
    """`code` (the rewrite of `source`, whose ast is `source_tree` if the caller has it) with
    the statements the codemod wrote formatted."""
    if code == source:
        return code
    replaced, written = _changed_lines(source, code)
    if not written:
        return code
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
    if not spans:
        return code
    try:  # (asked only when a statement needs black)
        black_style = _black_style(black, source, replaced, line_length, source_tree)
    except Exception:
        return code
    if not black_style:  # only statements with a written line over the limit
        spans = [
            (first, last)
            for first, last in spans
            if any(
                i in written and len(lines[i - 1].rstrip("\r\n")) > line_length
                for i in range(first, last + 1)
            )
        ]
    changed = False
    for first, last in sorted(spans, reverse=True):  # (bottom up: line numbers stay valid)
        text = "".join(lines[first - 1 : last])
        indent = text[: len(text) - len(text.lstrip(" "))]
        statement = textwrap.dedent(text)
        width = max(line_length - len(indent), 20)
        try:  # (black's layout is the same program; the pipeline compiles the result)
            formatted = _black(black, statement, width, black_style)
            if _split_for_a_comment(formatted, statement):
                formatted = _black(black, _comments_above(statement, width), width, black_style)
        except Exception:
            continue
        formatted = textwrap.indent(formatted, indent)
        if not text.endswith("\n"):
            formatted = formatted.rstrip("\n")
        if formatted != text:
            lines[first - 1 : last] = [formatted]
            changed = True
    return "".join(lines) if changed else code


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
        if first == last and len(lines[first - 1].rstrip("\r\n")) <= line_length:
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


def _black(black, text: str, line_length: int, normalize_strings: bool) -> str:
    mode = black.Mode(line_length=line_length, string_normalization=normalize_strings)
    return black.format_str(text, mode=mode)
