"""Is 64-bit mode on whenever a module's code runs (issue 27)?

Legacy `call` canonicalised result_shape's dtypes (float64 became float32 without x64); modern
callbacks refuse a 64-bit dtype without x64, so the rewrite wraps a dtype that may be 64-bit in
`jax.dtypes.canonicalize_dtype(...)` (hcmigrate.codemod.result_shape). Where 64-bit mode is
on whenever the code runs, that is the identity, and the dtype is written as the user wrote it.
That is known where a statement at module level, run unconditionally (not inside a def, an
`if`, a `with`, or a `try` whose handlers may go on), turns it on:
- in the module itself, above the code (a statement above it has run when the code runs);
- or in the `__init__.py` of a package above the module, before that `__init__` imports any
  module of its own package (every module of the package is then imported after it), for a
  module that is not also a script (`if __name__ == "__main__":`: `python pkg/mod.py` runs no
  package `__init__`).

The switch is `jax.config.update("jax_enable_x64", True)` (or a non-zero int literal) in any
spelling the imports above it bind (`import jax`, `from jax import config`, the legacy `from
jax.config import config`, aliases). `os.environ["JAX_ENABLE_X64"] = "1"` before `import jax`
does not count: JAX reads the variable once, when jax is first imported, and a program that
imported jax before the package (`import jax; import pkg`) runs in 32-bit mode (measured on
jax 0.10.2). A later module-level update that may turn it off again cancels the switch.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from hcmigrate.files import FileError, read_regular
from hcmigrate.project_model.module_facts import dotted

FLAG = "jax_enable_x64"
_UPDATES = frozenset({"jax.config.update", "jax.config.config.update"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@dataclass(frozen=True)
class Switch:
    line: int  # of the statement that turns 64-bit mode on
    after_own_imports: bool  # a module of the module's own package was imported above it


def x64_switch(tree: ast.Module, package_root: str = "") -> Switch | None:
    """The module-level statement of `tree` that turns 64-bit mode on for good (None: none).
    `package_root`: the top-level package the module belongs to (its own imports)."""
    names: dict[str, str] = {}  # name bound above -> the dotted name it stands for
    found: Switch | None = None
    own_imported = False
    for statement in _unconditional(tree.body):
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            own_imported |= _bind(statement, names, package_root)
            continue
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            value = _update_value(statement.value, names)
            if value is not None:
                found = Switch(statement.lineno, own_imported) if value else None
                continue
        if found is not None and _may_turn_off(statement, names):
            found = None
        _unbind(statement, names)
    return found


def may_run_as_script(tree: ast.Module) -> bool:
    """Has the module an `if __name__ == "__main__":` block at module level?"""
    for statement in tree.body:
        test = statement.test if isinstance(statement, ast.If) else None
        if isinstance(test, ast.Compare) and len(test.comparators) == 1:
            sides = {dotted(test.left), dotted(test.comparators[0])}
            constants = [
                s.value for s in (test.left, test.comparators[0]) if isinstance(s, ast.Constant)
            ]
            if "__name__" in sides and constants == ["__main__"]:
                return True
    return False


def _unconditional(body: list[ast.stmt]):
    """The statements of `body` that run whenever the module runs, in order: a `try` whose
    every handler raises again (an install hint) runs its body."""
    for statement in body:
        if isinstance(statement, ast.Try) and statement.handlers and not statement.orelse:
            if all(h.body and isinstance(h.body[-1], ast.Raise) for h in statement.handlers):
                yield from _unconditional(statement.body)
                yield from _unconditional(statement.finalbody)
                continue
        yield statement


def _bind(statement: ast.Import | ast.ImportFrom, names: dict[str, str], root: str) -> bool:
    """Record what an import binds; True when it imports a module of the package `root`."""
    if isinstance(statement, ast.Import):
        own = False
        for alias in statement.names:
            if alias.asname:
                names[alias.asname] = alias.name
            else:
                first = alias.name.partition(".")[0]
                names[first] = first
            own |= bool(root) and alias.name.partition(".")[0] == root
        return own
    for alias in statement.names:
        if alias.name != "*":
            module = statement.module or ""
            names[alias.asname or alias.name] = (
                f"{module}.{alias.name}" if not statement.level else f".{alias.name}"
            )
    return statement.level > 0 or (
        bool(root) and (statement.module or "").partition(".")[0] == root
    )


def _update_value(call: ast.Call, names: dict[str, str]) -> bool | None:
    """For `<jax config>.update("jax_enable_x64", value)`: True when `value` is a literal that
    turns it on (True, a non-zero int), False for any other value; None for any other call."""
    name = dotted(call.func)
    if name is None:
        return None
    root, _, rest = name.partition(".")
    if root not in names or f"{names[root]}.{rest}" not in _UPDATES:
        return None
    flag, value = _argument(call, 0, "name"), _argument(call, 1, "val")
    if not isinstance(flag, ast.Constant) or flag.value != FLAG:
        return None
    return (
        isinstance(value, ast.Constant)
        and type(value.value) in (bool, int)
        and value.value is not False
        and value.value != 0
    )


def _argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    if len(call.args) > position:
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _may_turn_off(statement: ast.stmt, names: dict[str, str]) -> bool:
    """Does the module-level `statement` (an `if`, a loop...) hold an update of the flag that
    is not the literal switch, outside functions and classes (which may never run)?"""
    stack: list[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call) and _update_value(node, names) is False:
            return True
        stack.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, _SCOPES))
    return False


def _unbind(statement: ast.stmt, names: dict[str, str]) -> None:
    """Forget names `statement` binds or deletes (`del config`, `config = ...`, a def)."""
    if isinstance(statement, _SCOPES):
        names.pop(statement.name, None)
        return
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.pop(node.id, None)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.pop((alias.asname or alias.name).partition(".")[0], None)


class PackageSwitches:
    """Which package above a module turns 64-bit mode on at import ("line 19 of
    pkg/__init__.py"), for the modules of one run: each folder is looked at, and its `__init__.py` read,
    once."""

    def __init__(self) -> None:
        # folder -> (its dotted package name, where a package down to it turns x64 on), or
        # None: not a package
        self._folders: dict[Path, tuple[str, str | None] | None] = {}

    def enabled_by(self, path: str | Path) -> str | None:
        path = Path(path).resolve()
        folder = path.parent.parent if path.name == "__init__.py" else path.parent
        package = self._package(folder)
        return None if package is None else package[1]

    def _package(self, folder: Path) -> tuple[str, str | None] | None:
        if folder in self._folders:
            return self._folders[folder]
        self._folders[folder] = None
        found = None
        init = folder / "__init__.py"
        if folder != folder.parent and init.is_file():
            outer = self._package(folder.parent)
            name = f"{outer[0]}.{folder.name}" if outer else folder.name
            where = outer[1] if outer else None
            found = (name, where or _init_switch(init, name))
        self._folders[folder] = found
        return found


def _init_switch(init: Path, package: str) -> str | None:
    try:
        data = read_regular(init)
        if FLAG.encode() not in data:
            return None
        tree = ast.parse(data)
    except (FileError, OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    switch = x64_switch(tree, package.partition(".")[0])
    if switch is None or switch.after_own_imports:
        return None
    return f"line {switch.line} of {package.replace('.', '/')}/__init__.py"
