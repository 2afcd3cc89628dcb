"""The statements the codemod wrote, laid out as the project's formatter lays out code.

A rewrite is built as syntax trees, which print on one line however long they are. Each
simple statement the codemod wrote (and only those) is handed to black, whose style
`ruff format` shares, with the project's line length less its indentation: a call too long
for a line comes out one argument a line, with its closing bracket on a line of its own, as
in the rest of a formatted file. Statements are formatted one at a time, as text of their
own: black never sees, so never changes, a line around them.

What is formatted:
- in a file black already leaves alone, every statement with a line the codemod wrote, in
  black's whole style (string quotes included): the project's formatter would make the same
  change on its next run;
- in any other file, only statements with a written line longer than the limit, with their
  strings' quotes kept (the layout a call had is kept otherwise: hcmigrate.rules.nodes.call_like);
and the result must be the same program (the same ast) as the unformatted rewrite. Where
black is missing or refuses a statement, the rewrite keeps its printed layout.
"""

from __future__ import annotations

import ast
import difflib
import textwrap

from hcmigrate.api import DEFAULT_LINE_LENGTH

_COMPOUND = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.TryStar,
    ast.Match,
)


def written_lines(source: str, code: str) -> set[int]:
    """The 1-based numbers of the lines of `code` that are not lines of `source`."""
    matcher = difflib.SequenceMatcher(None, source.splitlines(), code.splitlines(), autojunk=False)
    return {
        line
        for tag, _, _, j1, j2 in matcher.get_opcodes()
        if tag in ("replace", "insert")
        for line in range(j1 + 1, j2 + 1)
    }


def format_written_lines(source: str, code: str, line_length: int = DEFAULT_LINE_LENGTH) -> str:
    """`code` (the rewrite of `source`) with the statements the codemod wrote formatted."""
    if code == source:
        return code
    written = written_lines(source, code)
    if not written:
        return code
    try:
        import black
    except ImportError:  # (a dependency; an environment without it keeps the printed layout)
        return code
    try:
        tree = ast.parse(code)
        black_style = _black(black, source, line_length, True) == source
    except Exception:  # (top-level await in a notebook cell, a syntax black does not know)
        return code
    lines = code.splitlines(keepends=True)
    spans = _statement_spans(tree, lines, written, line_length, black_style)
    changed = False
    for first, last in sorted(spans, reverse=True):  # (bottom up: line numbers stay valid)
        text = "".join(lines[first - 1 : last])
        indent = text[: len(text) - len(text.lstrip(" "))]
        try:
            formatted = _black(
                black, textwrap.dedent(text), max(line_length - len(indent), 20), black_style
            )
        except Exception:
            continue
        formatted = textwrap.indent(formatted, indent)
        if not text.endswith("\n"):
            formatted = formatted.rstrip("\n")
        if formatted != text:
            lines[first - 1 : last] = [formatted]
            changed = True
    if not changed:
        return code
    result = "".join(lines)
    try:
        return result if ast.dump(ast.parse(result)) == ast.dump(tree) else code
    except SyntaxError:
        return code


def _statement_spans(
    tree: ast.Module, lines: list[str], written: set[int], line_length: int, black_style: bool
) -> list[tuple[int, int]]:
    """(first, last) lines of the simple statements to format: alone on their lines, with a
    written line (black style), or a written line over the limit (otherwise)."""
    spans = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or isinstance(node, _COMPOUND):
            continue
        first, last = node.lineno, node.end_lineno or node.lineno
        span = range(first, last + 1)
        if not written.intersection(span):
            continue
        if not black_style and not any(
            i in written and len(lines[i - 1].rstrip("\r\n")) > line_length for i in span
        ):
            continue
        before = lines[first - 1][: node.col_offset]
        after = lines[last - 1].encode()[node.end_col_offset :].decode(errors="replace")
        if before.strip() or (after.strip() and not after.lstrip().startswith("#")):
            continue  # (shares a line with another statement: `a = 1; b = 2`)
        if "\t" in before or "\\\n" in "".join(lines[first - 1 : last]):
            continue
        spans.append((first, last))
    return spans


def _black(black, text: str, line_length: int, normalize_strings: bool) -> str:
    mode = black.Mode(line_length=line_length, string_normalization=normalize_strings)
    return black.format_str(text, mode=mode)
