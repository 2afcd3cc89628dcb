"""Parse with libcst only the top-level statements the codemod can read or change.

libcst's parser is the largest cost of a migration, and in a real module that uses
host_callback most top-level statements have nothing to do with it. Python's own `ast` (far
cheaper, and needed anyway for hcmigrate.codemod.scopes) splits the module into top-level regions (a statement with the comment and blank lines above it, as libcst
groups them); the regions the codemod needs are parsed by libcst, the others become
`VerbatimStatement`s that print their source text unchanged. The module built from both prints
exactly the source, so every offset (hcmigrate.codemod.node_index, hcmigrate.codemod.scopes) stays that of the
file, and an untouched region is copied byte for byte.

What the codemod reads outside the legacy call sites, hence what is parsed (`needed_regions`):
  * every region that mentions a name an import of the legacy module (or of a module that
    re-exports it) can bind, `host_callback` or `vectorized`: all sites and legacy imports;
  * every top-level import line, and the statements before the first definition (docstring,
    `__future__`, guarded imports): hcmigrate.codemod.add_imports reuses and places imports there;
  * `__all__` assignments (names other modules import);
  * the defs of functions those regions name, and so on: tap functions lose their
    `transforms` parameter, and the purity check follows the functions a callback calls;
  * module-level result shapes those regions name (`SPEC = jax.ShapeDtypeStruct(...)`): a
    shape the codemod can see is used as it is (hcmigrate.codemod.result_shape).
Anything else in the module reaches the codemod only through the scope analysis (which sees
the whole module) and `identifiers` (the names a fresh name must avoid).

A needed region that is one large block (a def, class, `with`, or a loop or `if` without
`else`, of LARGE_BLOCK statements or more: a generated module's one function of thousands of
lines) is cut the same way inside: its block's statement lines are regions of their own,
picked by the same rules, and the others are VerbatimStatements within the parsed block
(`_block_plan`). Its first statement line goes with the header and is always parsed.

`None` from `parse_needed` means "parse the whole module instead": every region is needed (one
parse is then cheaper), or the module has a shape this does not handle (mixed line endings, no
final line break, a grammar-changing `__future__` import, blocks indented two ways among the
needed regions). hcmigrate.codemod also parses the whole module when the partial one does not
print back to the very source, or binds legacy names that were not looked for.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

import libcst as cst
from libcst._add_slots import add_slots
from libcst._nodes.internal import CodegenState

_WORD = re.compile(r"\w+")


@add_slots
@dataclass(frozen=True)
class VerbatimStatement(cst.BaseCompoundStatement):
    """A top-level statement (with the lines above it) the codemod never looks into: it
    prints its source text. Comments of a removed line above it can still be attached
    (`leading_lines`), as to any statement."""

    text: str
    leading_lines: Sequence[cst.EmptyLine] = ()

    def _visit_and_replace_children(self, visitor) -> "VerbatimStatement":
        return self

    def _codegen_impl(self, state: CodegenState) -> None:
        for line in self.leading_lines:
            line._codegen(state)
        state.add_token(self.text)


@dataclass
class Region:
    start: int  # character offsets into the source
    end: int
    statements: list  # the top-level ast statements it holds (several: `a = 1; b = 2`)


def top_level_regions(text: str, tree: ast.Module, starts: list[int]) -> list[Region]:
    """The module cut into one region per top-level statement line (`starts`: the offset of
    each line, as hcmigrate.codemod.scopes.ScopeAnalysis.line_starts), as libcst groups lines:
    comment and blank lines belong to the statement below them, except indented comment
    lines right after a block (libcst keeps them in the block's footer) and the lines after
    the last statement (the module's footer, here part of the last region)."""
    regions = _statement_regions(text, tree.body, starts)
    if regions:
        regions[0].start, regions[-1].end = 0, len(text)
    return regions


def _statement_regions(text: str, statements: list[ast.stmt], starts: list[int]) -> list[Region]:
    """One region per statement line of a block, as top_level_regions (the first one starting
    at its first line, the last one ending after its block's footer)."""
    regions: list[Region] = []
    last_line = 0
    for statement in statements:
        first = _first_line(statement)
        if regions and first <= last_line:  # `a = 1; b = 2`: one statement line for libcst
            regions[-1].statements.append(statement)
        else:
            regions.append(Region(0, 0, [statement]))
        last_line = statement.end_lineno
    for previous, region in zip(regions, regions[1:]):
        previous.end = region.start = _after_block_footer(text, previous.statements[-1], starts)
    if regions:
        regions[0].start = starts[_first_line(regions[0].statements[0]) - 1]
        regions[-1].end = _after_block_footer(text, regions[-1].statements[-1], starts)
    return regions


def _first_line(statement: ast.stmt) -> int:
    """The statement's first line: its first decorator's, for a decorated def or class."""
    return min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))])


def _after_block_footer(text: str, statement: ast.stmt, starts: list[int]) -> int:
    """Where the region of a top-level statement ends: after its last line and the lines that
    libcst keeps in the footer of its last block (of the comment and blank lines that follow,
    all up to the last one indented at least as the block's statements)."""
    line = statement.end_lineno  # (the index of the line after it)
    end = starts[line] if line < len(starts) else len(text)
    indent = _last_block_indent(text, statement, starts)
    while indent is not None and line < len(starts):
        line_end = starts[line + 1] if line + 1 < len(starts) else len(text)
        content = text[starts[line] : line_end].rstrip("\r\n")
        if content.lstrip(" \t\f") and not content.lstrip(" \t\f").startswith("#"):
            break  # the next statement
        if content.startswith(indent):
            end = line_end
        line += 1
    return end


def _last_block_indent(text: str, statement: ast.stmt, starts: list[int]) -> str | None:
    """The indentation of a compound statement's last block (None: no indented block)."""
    if not isinstance(statement, BLOCK_STATEMENTS):
        return None
    children = _block_children(statement)
    if not children:
        return None
    return _own_line_indent(text, max(children, key=lambda s: (s.lineno, s.col_offset)), starts)


def _block_children(statement: ast.stmt) -> list[ast.stmt]:
    """The statements directly inside a compound statement's blocks."""
    return [
        *getattr(statement, "body", ()),
        *getattr(statement, "orelse", ()),
        *getattr(statement, "finalbody", ()),
        *(s for h in getattr(statement, "handlers", ()) for s in h.body),
        *(s for c in getattr(statement, "cases", ()) for s in c.body),
    ]


def _own_line_indent(text: str, statement: ast.stmt, starts: list[int]) -> str | None:
    """The indentation of a statement that starts its own line (None: it follows a `:` or `;`)."""
    start = starts[statement.lineno - 1]
    indent = text[start : start + statement.col_offset]
    return indent if indent and not indent.strip(" \t\f") else None


BLOCK_STATEMENTS = (
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
    ast.Match,
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
)


@dataclass
class PartialModule:
    module: cst.Module  # prints exactly the source
    verbatim: list[ast.stmt]  # the top-level statements left unparsed


def parse_needed(
    text: str,
    tree: ast.Module,
    starts: list[int],
    seeds: Iterable[str],
    sites: Iterable[int] | None = None,
) -> PartialModule | None:
    """The module with only the regions `needed_regions` picks parsed by libcst; None when the
    whole module should be parsed instead (see the module docstring). `starts`: the offset of
    each line (hcmigrate.codemod.scopes.ScopeAnalysis.line_starts). `sites`: instead of
    seeds, the offsets of every site (a site needs no def it names: the import header and
    the regions holding them are parsed)."""
    newline = _single_newline(text)
    if newline is None or "barry_as_FLUFL" in text:
        return None
    regions = top_level_regions(text, tree, starts)
    if sites is None:
        needed = needed_regions(text, regions, tuple(seeds))
    else:
        needed = _regions_holding(regions, sorted(sites))
    seeds = tuple(seeds)
    if len(needed) == len(regions) and not any(
        _large_block(regions[index].statements) for index in needed
    ):
        return None  # (one parse of the whole is cheaper than one per region)
    try:
        return _build(text, tree, starts, regions, needed, newline, seeds, sites)
    except cst.ParserSyntaxError:
        return None  # (a part libcst rejects: the whole-module parse reports it)


def _build(
    text: str,
    tree: ast.Module,
    starts: list[int],
    regions: list[Region],
    needed: set[int],
    newline: str,
    seeds: tuple[str, ...] = (),
    sites: Iterable[int] | None = None,
) -> PartialModule | None:
    body: list[cst.BaseStatement] = []
    header: Sequence[cst.EmptyLine] = ()
    footer: Sequence[cst.EmptyLine] = ()
    verbatim: list[ast.stmt] = []
    block_indents: set[str] = set()
    last = len(regions) - 1
    for index, region in enumerate(regions):
        chunk = text[region.start : region.end]
        if index not in needed:
            if index == 0:  # the lines above the first statement are the module's header, as
                # in a whole-module parse (new imports go below them)
                cut = starts[_first_line(region.statements[0]) - 1]
                header, chunk = cst.parse_module(text[:cut]).header, text[cut : region.end]
            body.append(VerbatimStatement(chunk))
            verbatim.extend(region.statements)
            continue
        inner = _block_plan(text, region, starts, seeds, sites)
        if inner is None:
            snippet = cst.parse_module(chunk)
        else:
            snippet = cst.parse_module(inner.skeleton)
        if len(snippet.body) != 1 or (snippet.footer and index != last):
            return None
        statement = snippet.body[0]
        if inner is not None:
            statement = inner.splice(statement, text)
            if statement is None:
                return None
            verbatim.extend(inner.verbatim)
        if index == 0:
            header = snippet.header  # the file's top lines, as a whole-module parse has them
        elif snippet.header:  # lines above a later statement are its leading lines
            statement = statement.with_changes(
                leading_lines=[*snippet.header, *statement.leading_lines]
            )
        if index == last:
            footer = snippet.footer
        if isinstance(getattr(statement, "body", None), cst.IndentedBlock):
            block_indents.add(snippet.default_indent)
        body.append(statement)
    if len(block_indents) > 1:
        return None  # blocks stored relative to different default indents cannot share one module
    module = cst.Module(
        body=body,
        header=header,
        footer=footer,
        default_indent=block_indents.pop() if block_indents else _first_indent(text, tree, starts),
        default_newline=newline,
        has_trailing_newline=True,
    )
    return PartialModule(module, verbatim)


# A block of fewer statements is parsed whole: cutting it costs more than it saves.
LARGE_BLOCK = 16
# The statements whose one block may be cut (an `else`, `except`... holds more blocks).
_ONE_BLOCK = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.With, ast.AsyncWith)


def _one_block(statement: ast.stmt) -> list[ast.stmt] | None:
    if isinstance(statement, _ONE_BLOCK) or (
        isinstance(statement, (ast.For, ast.AsyncFor, ast.While, ast.If)) and not statement.orelse
    ):
        return statement.body
    return None


def _large_block(statements: list[ast.stmt]) -> bool:
    block = _one_block(statements[0]) if len(statements) == 1 else None
    return block is not None and len(block) >= LARGE_BLOCK


@dataclass
class _BlockPlan:
    """A compound statement parsed with only the statements of its block the codemod needs
    (found as among top-level regions): `skeleton` is its text without the others, which
    `splice` puts back into the parsed block as VerbatimStatements."""

    skeleton: str
    parts: list  # per statement line of the block: its text (left unparsed) or None (parsed)
    verbatim: list[ast.stmt]

    def splice(self, statement: cst.CSTNode, text: str) -> cst.CSTNode | None:
        block = getattr(statement, "body", None)
        if not isinstance(block, cst.IndentedBlock):
            return None
        parsed = iter(block.body)
        body = []
        for part in self.parts:
            body.append(next(parsed, None) if part is None else VerbatimStatement(part))
        if body[-1] is None or next(parsed, None) is not None or None in body:
            return None  # (libcst saw other statements than the ast did)
        return statement.with_changes(body=block.with_changes(body=body))


def _block_plan(
    text: str,
    region: Region,
    starts: list[int],
    seeds: tuple[str, ...],
    sites: Iterable[int] | None,
) -> _BlockPlan | None:
    """How to parse the region's one compound statement with only the statements of its block
    the codemod needs (None: parse it whole). The block's first statement line is always
    parsed (the header and the lines above it go with it)."""
    if not _large_block(region.statements):
        return None
    inner = _statement_regions(text, _one_block(region.statements[0]), starts)
    if any(_own_line_indent(text, part.statements[0], starts) is None for part in inner):
        return None  # (`if x: a; b`: a block on its header's line is not cut)
    inner[0].start = region.start
    tail = text[inner[-1].end : region.end]  # (the block's footer, the module's at its end)
    if sites is None:
        needed = needed_regions(text, inner, seeds)
    else:
        needed = _regions_holding(inner, sorted(sites))
    needed.add(0)
    if len(needed) * 10 > len(inner) * 9:
        return None  # (nearly all of it is needed: one parse is cheaper)
    parts, verbatim, kept = [], [], []
    for index, part in enumerate(inner):
        chunk = text[part.start : part.end]
        if index in needed:
            parts.append(None)
            kept.append(chunk)
        else:
            parts.append(chunk)
            verbatim.extend(part.statements)
    return _BlockPlan("".join(kept) + tail, parts, verbatim)


def needed_regions(text: str, regions: list[Region], seeds: tuple[str, ...]) -> set[int]:
    """Indexes of the regions the codemod reads (see the module docstring). Seeds are matched
    as plain substrings and def names as words (comments and strings included): supersets of
    the uses, so never fewer regions than needed."""
    needed = _header_regions(regions)
    chunks = [text[region.start : region.end] for region in regions]
    sites = [index for index, chunk in enumerate(chunks) if any(seed in chunk for seed in seeds)]
    needed.update(sites)
    needed.update(
        index
        for index, region in enumerate(regions)
        if _is_import_line(region) or "__all__" in chunks[index]
    )
    # The defs the regions with sites name (as words: a superset of the names they use), and
    # the defs those name, until no new one is found.
    defs = {
        index: names
        for index in range(len(regions))
        if index not in needed
        and (
            names := _defined_functions(regions[index].statements)
            or _shape_names(regions[index].statements, chunks[index])
        )
    }
    found = sites
    while found and defs:
        words = {word for index in found for word in _WORD.findall(chunks[index])}
        found = [index for index, names in defs.items() if not words.isdisjoint(names)]
        for index in found:
            del defs[index]
            needed.add(index)
    return needed


def _header_regions(regions: list[Region]) -> set[int]:
    """The regions at the module's top that hcmigrate.codemod.add_imports reads."""
    needed: set[int] = set()
    for index, region in enumerate(regions):
        first = region.statements[0]
        if (
            _is_import_line(region)
            or isinstance(first, (ast.Try, ast.If))
            or (index == 0 and _is_docstring(first))
        ):
            needed.add(index)
        else:
            break
    return needed


def _regions_holding(regions: list[Region], offsets: list[int]) -> set[int]:
    """The regions that hold these offsets (sorted)."""
    needed, at = set(), 0
    for offset in offsets:
        while at < len(regions) and regions[at].end <= offset:
            at += 1
        if at < len(regions) and regions[at].start <= offset:
            needed.add(at)
    return needed


def identifiers(statements: Iterable[ast.AST]) -> set[str]:
    """Every name libcst would have as a `Name` node in these statements (a fresh name must
    avoid them): names, attribute labels, def/class/parameter/keyword names, import path
    parts and aliases, and True/False/None (Names in libcst)."""
    found: set[str] = set()
    add, update = found.add, found.update
    for statement in statements:
        for node in ast.walk(statement):
            kind = type(node)
            if kind is ast.Name:
                add(node.id)
            elif kind is ast.Attribute:
                add(node.attr)
            elif kind is ast.Constant:
                if node.value is None or node.value is True or node.value is False:
                    add(repr(node.value))
            elif kind is ast.arg:
                add(node.arg)
            elif kind is ast.keyword:
                if node.arg:
                    add(node.arg)
            elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
                add(node.name)
            elif kind is ast.alias:
                if node.name != "*":
                    update(node.name.split("."))
                if node.asname:
                    add(node.asname)
            elif kind is ast.ImportFrom:
                if node.module:
                    update(node.module.split("."))
            elif kind is ast.Global or kind is ast.Nonlocal:
                update(node.names)
            elif kind is ast.ExceptHandler or kind is ast.MatchAs or kind is ast.MatchStar:
                if node.name:
                    add(node.name)
            elif kind is ast.MatchMapping:
                if node.rest:
                    add(node.rest)
            elif kind is ast.MatchClass:
                update(node.kwd_attrs)
    return found


def _single_newline(text: str) -> str | None:
    """The module's one line-break style; None for mixed ones, a lone CR, or no final break."""
    if not text.endswith("\n"):
        return None
    crlf = text.count("\r\n")
    if crlf == 0:
        return None if "\r" in text else "\n"
    return "\r\n" if crlf == text.count("\n") == text.count("\r") else None


def _first_indent(text: str, tree: ast.Module, starts: list[int]) -> str:
    """The indentation of the module's first indented block, as libcst detects its default."""
    for statement in tree.body:
        if isinstance(statement, BLOCK_STATEMENTS):
            for child in sorted(_block_children(statement), key=lambda s: (s.lineno, s.col_offset)):
                indent = _own_line_indent(text, child, starts)
                if indent is not None:
                    return indent
    return "    "


def _is_import_line(region: Region) -> bool:
    return all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in region.statements)


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _shape_names(statements: list[ast.stmt], chunk: str) -> list[str]:
    """The names `NAME = ...ShapeDtypeStruct(...)` / `jax.eval_shape(...)` binds."""
    if "ShapeDtypeStruct" not in chunk and "eval_shape" not in chunk:
        return []
    return [
        target.id
        for statement in statements
        if isinstance(statement, ast.Assign)
        for target in statement.targets
        if isinstance(target, ast.Name)
    ]


def _defined_functions(statements: list[ast.stmt]) -> list[str]:
    """Names of the functions these statements define in the module's scope (also under
    if/try/with/for, not inside other defs or classes)."""
    names: list[str] = []
    stack = list(statements)
    while stack:
        statement = stack.pop()
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.append(statement.name)
        elif isinstance(statement, BLOCK_STATEMENTS) and not isinstance(statement, ast.ClassDef):
            stack.extend(_block_children(statement))
    return names
