"""Asking CPython whether code is valid Python: the one check every self-check and message uses.

The check is a real `compile()`: besides the grammar it catches what only the compiler rejects
(an assignment expression in a class-body comprehension, `return` outside a function), which
`ast.parse` accepts.
"""

from __future__ import annotations

import ast
import re
import sys

from hcmigrate.errors import MigrationError

_PY2 = re.compile(
    r"^[ \t]*(print[ \t]+[\"'\w]|exec[ \t]+[\"']|except[ \t]+[\w.]+[ \t]*,[ \t]*\w+[ \t]*:)|`\w+`|^[ \t]*raise[ \t]+\w+[ \t]*,",
    re.M,
)


def compile_error(
    code: str, filename: str = "<unknown>", *, top_level_await: bool = False
) -> SyntaxError | None:
    """What CPython's compiler says of `code` (None: it compiles). `top_level_await`: accept
    `await` outside functions, as notebook cells may use it."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if top_level_await else 0
    try:
        compile(code, filename, "exec", flags=flags, dont_inherit=True)
    except SyntaxError as error:
        return error
    except ValueError as error:  # (older Pythons: NUL bytes)
        return SyntaxError(str(error))
    return None


# Git's merge-conflict markers, each at the start of a line of its own (diff3's `|||||||` too).
_CONFLICT = re.compile(r"^(<{7}|\|{7}|>{7})(?: .*)?$|^(={7})$", re.M)

# Grammar newer than some Pythons hcmigrate runs on: (pattern of the line, what, the version).
_NEWER_SYNTAX = (
    (
        re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+\w+[ \t]*\["),
        "type parameters (`def f[T]`)",
        (3, 12),
    ),
    (re.compile(r"^[ \t]*class[ \t]+\w+[ \t]*\["), "type parameters (`class C[T]`)", (3, 12)),
    (re.compile(r"^[ \t]*type[ \t]+\w+[ \t]*(?:\[.*\])?[ \t]*="), "`type` aliases", (3, 12)),
)


def conflict_marker(text: str) -> tuple[str, int] | None:
    """The first merge-conflict marker left in `text` and its line, if any."""
    found = _CONFLICT.search(text)
    if found is None:
        return None
    return found.group(1) or found.group(2), text.count("\n", 0, found.start()) + 1


def newer_syntax(text: str, error: SyntaxError) -> str:
    """What on the line of `error` is grammar of a newer Python than this one ("": nothing
    known): said so, with the version it needs."""
    lines = text.splitlines()
    line = error.lineno or 0
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    found = [(what, v) for pattern, what, v in _NEWER_SYNTAX if pattern.match(source)]
    if (error.msg or "").startswith("f-string") and not found:
        # (Python 3.12 reads f-strings with its grammar: quotes reused inside `{}`, lines
        # broken there; older Pythons say only "f-string: ...")
        found = [
            (
                "if this f-string reuses its quotes or breaks lines inside `{}`, such f-strings",
                (3, 12),
            )
        ]
    for what, version in found:
        if sys.version_info < version:
            needed = ".".join(map(str, version))
            running = ".".join(map(str, sys.version_info[:2]))
            return (
                f"{what} need Python {needed}, and hcmigrate runs on Python {running} here: "
                f"run hcmigrate under Python >= {needed}"
            )
    return ""


def python2_hint(text: str) -> str:
    """A note to add to a syntax error when the text looks like Python 2 (and has no merge
    conflict left in it, which `describe` names instead)."""
    return (
        " (this looks like Python 2 code; hcmigrate only reads Python 3)"
        if _PY2.search(text) and conflict_marker(text) is None
        else ""
    )


def describe(
    text: str, message: str, line: int, col: int, *, top_level_await: bool = False
) -> tuple[str, int, int]:
    """Python's own account of why `text` cannot be migrated (clearer and better placed than
    libcst's: a merge-conflict marker named as such, grammar of a newer Python with the
    version it needs, a hint for Python 2 code), else `message` (as a parse failure unless it
    says otherwise); with its line and column."""
    try:
        error = compile_error(text, top_level_await=top_level_await)
    except (RecursionError, MemoryError):
        error = None
    marker = conflict_marker(text) if error is not None else None
    if marker is not None:
        return (
            f"unresolved merge-conflict marker `{marker[0]}` on line {marker[1]}: a merge was "
            "left unfinished; resolve the conflict first",
            marker[1],
            1,
        )
    if error is not None:
        newer = newer_syntax(text, error)
        why = f" ({newer})" if newer else python2_hint(text)
        return f"syntax error: {error.msg}{why}", error.lineno or line, error.offset or col
    if not message.startswith(("cannot parse", "syntax error", "internal error")):
        message = f"cannot parse: {message}"
    return message, line, col


def non_docstring_strings(tree: ast.AST):
    """The string constants of `tree` that are not docstrings (of the module, a class or a
    function): the strings code may use, such as code run with `exec` or a module's name."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                yield node


TOO_DEEP = "cannot parse: nesting too deep (RecursionError); file left unchanged"
TOO_COMPLEX = "cannot parse: too complex for the parser (MemoryError); file left unchanged"


def python_parses(text: str, *, top_level_await: bool = False) -> None:
    """Raise MigrationError when Python's own parser rejects `text`: its syntax error, or
    nesting too deep or too complex for it. Python's parser has limits and reports them
    (too many nested parentheses, RecursionError, MemoryError), while libcst's native parser
    can overflow its stack on such text and crash the process (a segfault)."""
    flags = ast.PyCF_ONLY_AST | (ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if top_level_await else 0)
    try:
        compile(text, "<unknown>", "exec", flags=flags, dont_inherit=True)
    except SyntaxError as error:
        message, line, col = describe(
            text, error.msg, error.lineno or 1, error.offset or 1, top_level_await=top_level_await
        )
        raise MigrationError(message, line, col) from None
    except ValueError as error:  # (NUL bytes)
        raise MigrationError(f"cannot parse: {error}", line=None, col=None) from None
    except RecursionError:
        raise MigrationError(TOO_DEEP, line=None, col=None) from None
    except MemoryError:
        raise MigrationError(TOO_COMPLEX, line=None, col=None) from None
