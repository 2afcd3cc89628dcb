"""Add the imports the rewritten code needs, once, at the top of the module.

A small, top-level-only replacement for libcst's AddImportsVisitor (which walks the whole
tree with matcher machinery). It reuses what is
there: a needed `import jax` already present is not repeated, and `from M import n` joins an
existing `from M import ...` statement. A new statement goes where isort (ruff's `I` rules) would
put it among the module's top-level imports: in its section (standard library, third party,
first party), in order; or after the docstring and `__future__` imports when there is none.
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


def add_imports(
    module: cst.Module, needed: list[Needed], first_party: str | None = None
) -> cst.Module:
    """`module` with the imports `needed` that it lacks (`first_party`: the top-level package
    of the module's own project, whose imports form isort's first-party section)."""
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
    for line in new_lines:
        body = _place(body, line, first_party)
    return module.with_changes(body=body)


def _module_of(line: cst.SimpleStatementLine) -> str:
    small = line.body[0]
    if isinstance(small, cst.Import):
        return dotted_name(small.names[0].name) or ""
    if small.relative or small.module is None:
        return ""
    return dotted_name(small.module) or ""


STANDARD_LIBRARY, THIRD_PARTY, FIRST_PARTY = 0, 1, 2


def _section(line: cst.SimpleStatementLine, first_party: str | None) -> int:
    """isort's section of an import line (ruff's default sections, without `__future__`)."""
    small = line.body[0]
    if isinstance(small, cst.ImportFrom) and small.relative:
        return FIRST_PARTY
    top = _module_of(line).split(".")[0]
    if top in sys.stdlib_module_names:
        return STANDARD_LIBRARY
    return FIRST_PARTY if first_party and top == first_party else THIRD_PARTY


def _sort_key(line: cst.SimpleStatementLine) -> tuple[bool, str, str]:
    """isort's order within a section: `import x` lines first, then `from x import ...`,
    each by module name, ignoring case (`import x` before `import x as y`)."""
    small = line.body[0]
    alias = ""
    if isinstance(small, cst.Import) and small.names[0].asname is not None:
        alias = cst.Module(body=[]).code_for_node(small.names[0].asname.name)
    return isinstance(small, cst.ImportFrom), _module_of(line).lower(), alias


def _place(
    body: list[cst.BaseStatement], line: cst.SimpleStatementLine, first_party: str | None
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
        return [*body[:end], line, *body[end:]]
    section = _section(line, first_party)
    same = [i for i in imports if _section(body[i], first_party) == section]
    if same:
        after = [i for i in same if _sort_key(body[i]) > _sort_key(line)]
        if after:
            return _insert_taking_leading_lines(body, after[0], line)
        return [*body[: same[-1] + 1], line, *body[same[-1] + 1 :]]
    before = [i for i in imports if _section(body[i], first_party) < section]
    if before:
        at = before[-1] + 1
        if not all(_is_import_line(s) for s in body[at:end]):
            at = end  # (after settings made between imports: jax reads them when imported)
        return [*body[:at], line.with_changes(leading_lines=[cst.EmptyLine()]), *body[at:]]
    first = imports[0]
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
