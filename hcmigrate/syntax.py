"""Asking CPython whether code is valid Python: the one check every self-check and message uses.

The check is a real `compile()`: besides the grammar it catches what only the compiler rejects
(an assignment expression in a class-body comprehension, `return` outside a function), which
`ast.parse` accepts.
"""

from __future__ import annotations

import ast
import re

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


def python2_hint(text: str) -> str:
    """A note to add to a syntax error when the text looks like Python 2."""
    return (
        " (this looks like Python 2 code; hcmigrate only reads Python 3)"
        if _PY2.search(text)
        else ""
    )


def describe(
    text: str, message: str, line: int, col: int, *, top_level_await: bool = False
) -> tuple[str, int, int]:
    """Python's own account of why `text` cannot be migrated (clearer and better placed than
    libcst's), else `message` (as a parse failure unless it says otherwise); with its line and
    column."""
    try:
        error = compile_error(text, top_level_await=top_level_await)
    except (RecursionError, MemoryError):
        error = None
    if error is not None:
        return f"syntax error: {error.msg}", error.lineno or line, error.offset or col
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
        raise MigrationError(f"{message}{python2_hint(text)}", line, col) from None
    except ValueError as error:  # (NUL bytes)
        raise MigrationError(f"cannot parse: {error}", line=None, col=None) from None
    except RecursionError:
        raise MigrationError(TOO_DEEP, line=None, col=None) from None
    except MemoryError:
        raise MigrationError(TOO_COMPLEX, line=None, col=None) from None
