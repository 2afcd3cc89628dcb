"""Add the imports the rewritten code needs, once, at the top of the module.

A small, top-level-only replacement for libcst's AddImportsVisitor (which walks the whole
tree with matcher machinery). It reuses what is
there: a needed `import jax` already present is not repeated, and `from M import n` joins an
existing `from M import ...` statement. A new statement goes where isort (ruff's `I` rules) would
put it among the module's top-level imports: in its section (standard library, third party,
first party), in order; or after the docstring and `__future__` imports when there is none.
"""

from __future__ import annotations

import dataclasses
import sys

import libcst as cst

from hcmigrate.codemod.partial_parse import VerbatimStatement
from hcmigrate.facts import LEGACY_MODULE
from hcmigrate.projects.import_style import (
    FIRSTPARTY,
    FUTURE,
    LOCALFOLDER,
    STDLIB,
    THIRDPARTY,
    ImportStyle,
)
from hcmigrate.rules.nodes import parse
from hcmigrate.rules.nodes import dotted_name

# (module, name or None, alias or None); the module of a `from` import may be relative (`._x`)
Needed = tuple[str, "str | None", "str | None"]


def _binds(statement: cst.BaseStatement, needed: Needed) -> bool:
    module, name, alias = needed
    text = getattr(statement, "text", None)  # (partial_parse's VerbatimStatement)
    if isinstance(text, str) and "importorskip" in text and name is None:
        try:
            statement = cst.parse_statement(text)
        except cst.ParserSyntaxError:
            return False
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if name is None and _imports_or_skips(small, module, alias or module):
            return True
        if isinstance(small, cst.Import) and name is None:
            if any(
                dotted_name(a.name) == module and (a.evaluated_alias == alias) for a in small.names
            ):
                return True
        if isinstance(small, cst.ImportFrom) and name is not None and small.module is not None:
            spelled = "." * len(small.relative) + (dotted_name(small.module) or "")
            if spelled == module and not isinstance(small.names, cst.ImportStar):
                if any(
                    a.evaluated_name == name and a.evaluated_alias == alias for a in small.names
                ):
                    return True
    return False


def _imports_or_skips(small: cst.BaseSmallStatement, module: str, local: str) -> bool:
    """`local = pytest.importorskip("module")`: a test module's import of an optional package
    (an `import` written above it would fail where the package is missing, not skip)."""
    if not (
        isinstance(small, cst.Assign)
        and len(small.targets) == 1
        and isinstance(small.targets[0].target, cst.Name)
        and small.targets[0].target.value == local
        and isinstance(small.value, cst.Call)
        and small.value.args
        and isinstance(small.value.args[0].value, cst.SimpleString)
    ):
        return False
    func = dotted_name(small.value.func) or ""
    return func.rsplit(".", 1)[-1] == "importorskip" and (
        small.value.args[0].value.evaluated_value == module
    )


def _is_import_line(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body
    )


def _is_preamble(statement: cst.BaseStatement, index: int) -> bool:
    """Docstring (first statement) or `from __future__ import ...`."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    if (
        index == 0
        and isinstance(small, cst.Expr)
        and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString))
    ):
        return True
    return (
        isinstance(small, cst.ImportFrom)
        and small.module is not None
        and dotted_name(small.module) == "__future__"
    )


def add_imports(
    module: cst.Module, needed: list[Needed], style: ImportStyle = ImportStyle()
) -> cst.Module:
    """`module` with the imports `needed` that it lacks, placed by the project's import
    `style` (its sections, order and first-party names). A module that guards its jax imports
    (`try: import jax ... except ImportError: raise ...`) gets its new third-party imports
    inside the guard, after the imports it protects."""
    body = list(module.body)
    guard = _jax_guard(body)
    guarded = list(body[guard].body.body) if guard is not None else []
    missing = [n for n in dict.fromkeys(needed) if not any(_binds(s, n) for s in [*body, *guarded])]
    missing.sort(
        key=lambda n: (n[1] is not None, n[0], n[1] or "")
    )  # `import x` lines first, as isort does
    if not missing:
        return module
    new_lines: list[cst.SimpleStatementLine] = []
    for mod, name, alias in missing:
        asname = cst.AsName(name=cst.Name(alias)) if alias else None
        if name is None:
            new_lines.append(
                cst.SimpleStatementLine(
                    [cst.Import(names=[cst.ImportAlias(name=parse(mod), asname=asname)])]
                )
            )
            continue
        alias_node = cst.ImportAlias(name=cst.Name(name), asname=asname)
        if style.force_single_line or not (
            _merge_into(body, mod, alias_node) or _merge_into(guarded, mod, alias_node)
        ):
            new_lines.append(cst.SimpleStatementLine([_import_from(mod, alias_node)]))
    guard_node = body[guard] if guard is not None else None
    for line in new_lines:
        if guard_node is not None and _section(line, style) not in (FUTURE, STDLIB):
            guarded = _place(guarded, line, style)
        else:
            body = _place(body, line, style)
    if guard_node is not None:
        at = next(i for i, s in enumerate(body) if s is guard_node)
        body[at] = guard_node.with_changes(body=guard_node.body.with_changes(body=guarded))
    return module.with_changes(body=body)


def _import_from(module: str, alias: cst.ImportAlias) -> cst.ImportFrom:
    """`from module import alias`; `module` may be relative (`.._id_print`)."""
    dotted = module.lstrip(".")
    return cst.ImportFrom(
        module=parse(dotted) if dotted else None,
        relative=[cst.Dot()] * (len(module) - len(dotted)),
        names=[alias],
    )


def in_file_order(body: list[cst.BaseStatement], style: ImportStyle) -> ImportStyle:
    """`style`, sorting by module name within sections (`force_sort_within_sections`, google's
    order: `from flax import nn` before `import jax`) where the project declares no isort
    settings and the module's own imports follow that order, in every block of them, and
    not isort's default (some `from` line comes before an `import` line). Asked of the module
    as its authors wrote it (the legacy import included: a file that placed it out of either
    order is sorted by no tool)."""
    if style.source or style.force_sort_within_sections:
        return style
    forced = dataclasses.replace(style, force_sort_within_sections=True)
    blocks = _import_blocks(body)

    def in_order(order: ImportStyle) -> bool:
        return all(
            _sort_key(a, order) <= _sort_key(b, order)
            for block in blocks
            for a, b in zip(block, block[1:])
        )

    return forced if in_order(forced) and not in_order(style) else style


def _import_blocks(body: list[cst.BaseStatement]) -> list[list[cst.SimpleStatementLine]]:
    """The module's top-level one-import lines, in runs without a blank line between them."""
    blocks: list[list[cst.SimpleStatementLine]] = []
    previous = None
    for i in range(insertion_point(body)):
        line = body[i]
        if not _is_import_line(line) or _is_preamble(line, i) or len(line.body) != 1:
            previous = None
            continue
        blank = any(e.comment is None for e in line.leading_lines)
        if previous is None or blank or previous != i - 1:
            blocks.append([])
        blocks[-1].append(line)
        previous = i
    return blocks


def _merge_into(body: list[cst.BaseStatement], module: str, alias: cst.ImportAlias) -> bool:
    """Add `alias` to a `from module import ...` line of `body` (in place); was there one?"""
    for i, statement in enumerate(body):
        if _is_import_line(statement) and len(statement.body) == 1:
            small = statement.body[0]
            if (
                isinstance(small, cst.ImportFrom)
                and not small.relative
                and small.module is not None
                and dotted_name(small.module) == module
                and not isinstance(small.names, cst.ImportStar)
                and not small.lpar
                # (isort keeps `from M import a as b` a line of its own: combine_as_imports)
                and not any(a.asname for a in small.names)
            ):
                body[i] = statement.with_changes(
                    body=[small.with_changes(names=_with_name(list(small.names), alias))]
                )
                return True
    return False


def _with_name(names: list[cst.ImportAlias], alias: cst.ImportAlias) -> list[cst.ImportAlias]:
    """`names` of a one-line `from M import ...` with `alias` added: where isort (and ruff's
    `I`) puts it when the names are in their order (constants, classes, then the rest, each
    ignoring case), else last."""
    keys = [_name_key(a) for a in names]
    at = len(names)
    if keys == sorted(keys):
        at = sum(key <= _name_key(alias) for key in keys)
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if at == len(names):
        return [*names[:-1], names[-1].with_changes(comma=comma), alias]
    return [*names[:at], alias.with_changes(comma=comma), *names[at:]]


def _name_key(alias: cst.ImportAlias) -> tuple[int, str]:
    """isort's `order_by_type` key of an imported name (its default, and ruff's)."""
    name = alias.evaluated_name
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return kind, name.lower()


def _jax_guard(body: list[cst.BaseStatement]) -> int | None:
    """The index of a top-level `try` among the imports that imports jax (other than the legacy
    module) and handles the ImportError: the module's guard of its jax imports. Not a guard: a
    `try` in a module that imports jax unguarded, or one whose handler imports from jax (a
    shim for older JAX releases: `except ImportError: import jax.linear_util as lu`)."""
    end = insertion_point(body, past_blocks=True)
    if any(_imports_jax(line) for line in body[:end]):
        return None
    for i in range(end):
        statement = body[i]
        if not isinstance(statement, cst.Try) or not any(
            catches_import_error(h) for h in statement.handlers
        ):
            continue
        if any(_imports_jax(line) for h in statement.handlers for line in h.body.body):
            continue
        if any(_imports_jax(line) for line in statement.body.body):
            return i
    return None


def _imports_jax(line: cst.BaseStatement) -> bool:
    """An import line taking a jax module (other than the legacy module)."""
    return _is_import_line(line) and any(
        (top := _module_of_small(small)).split(".")[0] == "jax"
        and not top.startswith(LEGACY_MODULE)
        for small in line.body
    )


def catches_import_error(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
    return any(
        dotted_name(n.value if isinstance(n, cst.Element) else n)
        in ("ImportError", "ModuleNotFoundError", "Exception")
        for n in names
    )


def _module_of_small(small: cst.BaseSmallStatement) -> str:
    if isinstance(small, cst.Import):
        return dotted_name(small.names[0].name) or ""
    if isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None:
        return dotted_name(small.module) or ""
    return ""


def _module_of(line: cst.SimpleStatementLine) -> str:
    return _module_of_small(line.body[0])


def _section(line: cst.SimpleStatementLine, style: ImportStyle) -> str:
    """isort's section of an import line, by the project's style."""
    small = line.body[0]
    if isinstance(small, cst.ImportFrom) and small.relative:
        return LOCALFOLDER
    module = _module_of(line)
    known = [
        (len(prefix), section)
        for prefix, section in style.known
        if module == prefix or module.startswith(prefix + ".")
    ]
    if known:
        return max(known)[1]
    top = module.split(".")[0]
    if top == "__future__":
        return FUTURE
    if top in sys.stdlib_module_names:
        return STDLIB
    return FIRSTPARTY if top in style.first_party else style.default_section


def _rank(line: cst.SimpleStatementLine, style: ImportStyle) -> int:
    section = _section(line, style)
    order = style.sections
    return order.index(section) if section in order else order.index(THIRDPARTY)


def _sort_key(line: cst.SimpleStatementLine, style: ImportStyle) -> tuple:
    """isort's order within a section: `import x` lines first, then `from x import ...`,
    each by module name, ignoring case (`import x` before `import x as y`); with
    force-sort-within-sections, both kinds by module name."""
    small = line.body[0]
    if style.force_sort_within_sections:
        text = cst.Module(body=[]).code_for_node(small).lower()
        return (text.removeprefix("from ").removeprefix("import "),)
    alias = ""
    if isinstance(small, cst.Import) and small.names[0].asname is not None:
        alias = cst.Module(body=[]).code_for_node(small.names[0].asname.name)
    module: tuple = (0, _module_of(line).lower())
    if isinstance(small, cst.ImportFrom) and small.relative:
        # (furthest first: `from .. import a` before `from . import b`, isort's and ruff's
        # default)
        module = (1, -len(small.relative), (dotted_name(small.module) or "").lower())
    return isinstance(small, cst.ImportFrom), module, alias


def _place(
    body: list[cst.BaseStatement], line: cst.SimpleStatementLine, style: ImportStyle
) -> list[cst.BaseStatement]:
    """`body` with the new import `line` where isort would put it: in its section, in order;
    a new section goes between the sections before and after it, a blank line apart."""
    end = insertion_point(body)
    imports = [
        i
        for i in range(end)
        if _is_import_line(body[i]) and not _is_preamble(body[i], i) and len(body[i].body) == 1
    ]
    if not imports:  # (no import to sort among: the new lines go after the preamble)
        if (
            end > 0
            and _is_preamble(body[end - 1], end - 1)
            and not (
                end < len(body)
                and isinstance(body[end], cst.SimpleStatementLine)
                and _is_import_line(body[end])
            )
        ):
            line = line.with_changes(leading_lines=[cst.EmptyLine()])  # (after the docstring)
        following = body[end:]
        if following and not _blank_line_above(following[0]):
            # (a blank line between the imports and the code after them, as isort leaves it)
            following[0] = following[0].with_changes(
                leading_lines=[cst.EmptyLine(), *following[0].leading_lines]
            )
        return [*body[:end], line, *following]
    rank = _rank(line, style)
    settings = [i for i in range(imports[0], end) if not _is_import_line(body[i])]
    if settings and all(_rank(body[i], style) < rank for i in imports if i < settings[-1]):
        line = _noqa_like(line, [body[i] for i in imports if i > settings[-1]])
    same = [i for i in imports if _rank(body[i], style) == rank]
    if same:
        after = [i for i in same if _sort_key(body[i], style) > _sort_key(line, style)]
        if after:
            return _insert_taking_leading_lines(body, after[0], line)
        return [*body[: same[-1] + 1], line, *body[same[-1] + 1 :]]
    before = [i for i in imports if _rank(body[i], style) < rank]
    if before:
        at = before[-1] + 1
        settings = [i for i in range(at, end) if not _is_import_line(body[i])]
        if settings:  # (after settings made between imports: jax reads them when imported)
            later = [i for i in imports if i > settings[-1] and _rank(body[i], style) > rank]
            if later:  # (a `sys.path` bootstrap, then first-party imports: before those)
                return _above_section(body, later[0], line)
            at = end
        return [*body[:at], line.with_changes(leading_lines=[cst.EmptyLine()]), *body[at:]]
    return _above_section(body, imports[0], line)


def _above_section(
    body: list[cst.BaseStatement], first: int, line: cst.SimpleStatementLine
) -> list[cst.BaseStatement]:
    """`body` with `line` a section of its own above the import `body[first]`."""
    following = body[first]
    blank = [cst.EmptyLine()] + [e for e in following.leading_lines if e.comment is not None]
    kept = []
    for e in following.leading_lines:  # (blank lines above the imports stay above them)
        if e.comment is not None:
            break
        kept.append(e)
    return [
        *body[:first],
        line.with_changes(leading_lines=kept),
        following.with_changes(leading_lines=blank),
        *body[first + 1 :],
    ]


def _noqa_like(
    line: cst.SimpleStatementLine, neighbours: list[cst.BaseStatement]
) -> cst.SimpleStatementLine:
    """`line`, placed after a setting among the imports (`sys.path.insert(...)`), with the
    `# noqa: E402` its neighbours there carry (module-level import not at the top)."""
    for other in neighbours:
        comment = getattr(getattr(other, "trailing_whitespace", None), "comment", None)
        if comment is not None and "noqa" in comment.value and "E402" in comment.value:
            return line.with_changes(
                trailing_whitespace=cst.TrailingWhitespace(
                    whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment("# noqa: E402")
                )
            )
    return line


def _blank_line_above(statement: cst.BaseStatement) -> bool:
    """Is `statement` an import, a notebook's cell boundary (a blank line there would end the
    previous cell), or already a blank line apart from what precedes it?"""
    if statement.leading_lines:
        return statement.leading_lines[0].comment is None
    if isinstance(statement, VerbatimStatement):  # (its blank lines are in its text)
        text = statement.text.lstrip(" \t")
        return text.startswith(("\n", "\r", _CELL_MARK))
    if isinstance(statement, cst.SimpleStatementLine):
        code = cst.Module(body=[]).code_for_node(statement)
        if code.startswith(_CELL_MARK):
            return True
    return _is_import_line(statement)


_CELL_MARK = "__hcmigrate_cell__("  # (hcmigrate.notebook.CELL_MARK)


def _insert_taking_leading_lines(
    body: list[cst.BaseStatement], at: int, line: cst.SimpleStatementLine
) -> list[cst.BaseStatement]:
    """`line` before `body[at]`; the blank lines and comments above `body[at]` (above its
    group) stay above the group."""
    following = body[at]
    return [
        *body[:at],
        line.with_changes(leading_lines=following.leading_lines),
        following.with_changes(leading_lines=[]),
        *body[at + 1 :],
    ]


def insertion_point(body: list[cst.BaseStatement], past_blocks: bool = False) -> int:
    """Where new top-level code goes: after the last import that precedes the first definition,
    reading past settings made between imports (`os.environ[...] = ...` before `import jax`
    must stay before what needs it, as must `sys.path.insert(...)` before the imports it is
    for); `past_blocks`: also past the `try`/`if` blocks of imports among them (a guard of
    the jax imports, `if TYPE_CHECKING:`), where new definitions go."""
    insert_at = 0
    for i, statement in enumerate(body):
        if isinstance(statement, VerbatimStatement):
            # (a statement the partial parse left as text: read it to place code after it)
            try:
                statement = cst.parse_statement(statement.text)
            except cst.ParserSyntaxError:
                break
        if _is_import_line(statement) or _is_preamble(statement, i):
            insert_at = i + 1
        elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)) or not isinstance(
            statement, (cst.SimpleStatementLine, cst.Try, cst.If)
        ):
            break
        elif isinstance(statement, (cst.Try, cst.If)):
            # guarded imports and `if TYPE_CHECKING:` blocks may sit among the imports
            if past_blocks and _only_imports(statement):
                insert_at = i + 1
            continue
        elif _is_setting(statement) and insert_at > 0:
            # `os.environ["JAX_ENABLE_X64"] = "1"` between imports: the new imports go after
            # it, as the legacy import they replace did (jax reads the setting when imported)
            insert_at = i + 1
        else:
            break
    return insert_at


def _only_imports(block: cst.Try | cst.If) -> bool:
    """Does the block hold only imports and what handles their absence (`pass`, `raise`,
    `name = None`, a flag)?"""
    bodies = [block.body]
    if isinstance(block, cst.Try):
        bodies += [h.body for h in block.handlers]
        bodies += [b.body for b in (block.orelse, block.finalbody) if b is not None]
    elif block.orelse is not None:
        if isinstance(block.orelse, cst.If):
            return _only_imports(block.orelse)
        bodies.append(block.orelse.body)
    for suite in bodies:
        for line in getattr(suite, "body", ()):
            if not isinstance(line, cst.SimpleStatementLine) or not all(
                isinstance(
                    s, (cst.Import, cst.ImportFrom, cst.Pass, cst.Raise, cst.Assign, cst.Expr)
                )
                for s in line.body
            ):
                return False
    return True


def _is_setting(statement: cst.BaseStatement) -> bool:
    """A simple statement that assigns to or calls something reached through a module name
    (`os.environ[...] = ...`, `jax.config.update(...)`, `sys.path.append(...)`)."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            targets = [small.value.func]
        else:
            return False
        if not all(isinstance(t, (cst.Subscript, cst.Attribute)) for t in targets):
            return False
    return True
