"""Add the imports the rewritten code needs, once, at the top of the module.

A small, top-level-only replacement for libcst's AddImportsVisitor (which walks the whole
tree with matcher machinery). It reuses what is
there: a needed `import jax` already present is not repeated, and `from M import n` joins an
existing `from M import ...` statement. New statements go after the module's last top-level
import before the first definition (or after the docstring and `__future__` imports).
"""

from __future__ import annotations

import sys

import libcst as cst

from hcmigrate.codemod.partial_parse import VerbatimStatement
from hcmigrate.rules.nodes import parse
from hcmigrate.rules.nodes import dotted_name

Needed = tuple[str, "str | None", "str | None"]  # (module, name or None, alias or None)


def _binds(statement: cst.BaseStatement, needed: Needed) -> bool:
    module, name, alias = needed
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Import) and name is None:
            if any(
                dotted_name(a.name) == module and (a.evaluated_alias == alias) for a in small.names
            ):
                return True
        if (
            isinstance(small, cst.ImportFrom)
            and name is not None
            and not small.relative
            and small.module is not None
        ):
            if dotted_name(small.module) == module and not isinstance(small.names, cst.ImportStar):
                if any(
                    a.evaluated_name == name and a.evaluated_alias == alias for a in small.names
                ):
                    return True
    return False


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


def add_imports(module: cst.Module, needed: list[Needed]) -> cst.Module:
    body = list(module.body)
    missing = [n for n in dict.fromkeys(needed) if not any(_binds(s, n) for s in body)]
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
        merged = False
        for i, statement in enumerate(body):
            if _is_import_line(statement) and len(statement.body) == 1:
                small = statement.body[0]
                if (
                    isinstance(small, cst.ImportFrom)
                    and not small.relative
                    and small.module is not None
                    and dotted_name(small.module) == mod
                    and not isinstance(small.names, cst.ImportStar)
                    and not small.lpar
                ):
                    names = list(small.names)
                    names[-1] = names[-1].with_changes(
                        comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                    )
                    names.append(cst.ImportAlias(name=cst.Name(name), asname=asname))
                    body[i] = statement.with_changes(body=[small.with_changes(names=names)])
                    merged = True
                    break
        if not merged:
            new_lines.append(
                cst.SimpleStatementLine(
                    [
                        cst.ImportFrom(
                            module=parse(mod),
                            names=[cst.ImportAlias(name=cst.Name(name), asname=asname)],
                        )
                    ]
                )
            )
    if not new_lines:
        return module.with_changes(body=body)
    insert_at = insertion_point(body)
    for line in [line for line in new_lines if _is_standard_library(line)]:
        at = _after_standard_library_imports(body, insert_at)
        if at is None:
            break
        # (isort's order: the standard library's group first, `import x` lines sorted)
        while (
            at > 0
            and _is_import_line(body[at - 1])
            and _is_standard_library(body[at - 1])
            and isinstance(body[at - 1].body[0], cst.Import)
            and _module_of(body[at - 1]) > _module_of(line)
        ):
            at -= 1
        if at < len(body) and body[at].leading_lines:
            # (the blank lines and comments above the group's first line stay above the group)
            line = line.with_changes(leading_lines=body[at].leading_lines)
            body[at] = body[at].with_changes(leading_lines=[])
        body = [*body[:at], line, *body[at:]]
        new_lines = [other for other in new_lines if not _module_of(other) == _module_of(line)]
        insert_at += 1
    return module.with_changes(body=[*body[:insert_at], *new_lines, *body[insert_at:]])


def _module_of(line: cst.SimpleStatementLine) -> str:
    small = line.body[0]
    if isinstance(small, cst.Import):
        return dotted_name(small.names[0].name) or ""
    if small.relative or small.module is None:
        return ""
    return dotted_name(small.module) or ""


def _is_standard_library(line: cst.SimpleStatementLine) -> bool:
    name = _module_of(line).split(".")[0]
    return bool(name) and name != "__future__" and name in sys.stdlib_module_names


def _after_standard_library_imports(body: list[cst.BaseStatement], end: int) -> int | None:
    """Where a new standard-library import goes among the first `end` statements: after the
    last standard-library import line before the first other import, or before the first
    import (None: no top-level import before `end`)."""
    first_import = None
    for i, statement in enumerate(body[:end]):
        if not _is_import_line(statement) or _is_preamble(statement, i):
            continue
        if first_import is None:
            first_import = i
        if not _is_standard_library(statement):
            return i if i == first_import else _last_standard(body, first_import, i)
    return None if first_import is None else _last_standard(body, first_import, end)


def _last_standard(body: list[cst.BaseStatement], start: int, stop: int) -> int:
    last = start
    for i in range(start, stop):
        if (
            _is_import_line(body[i])
            and _is_standard_library(body[i])
            and not _is_preamble(body[i], i)
        ):
            last = i + 1
    return last


def insertion_point(body: list[cst.BaseStatement]) -> int:
    """Where new top-level code goes: after the last import that precedes the first definition,
    reading past settings made between imports (`os.environ[...] = ...` before `import jax`
    must stay before what needs it)."""
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
            continue  # guarded imports and `if TYPE_CHECKING:` blocks may sit among the imports
        elif _is_setting(statement) and insert_at > 0:
            # `os.environ["JAX_ENABLE_X64"] = "1"` between imports: the new imports go after
            # it, as the legacy import they replace did (jax reads the setting when imported)
            insert_at = i + 1
        else:
            break
    return insert_at


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
