"""Which code of a module runs once per device: the functions it gives to `pmap` (or `xmap`),
and what they call or hand on, read from Python's ast (issue 37).

A module that uses `pmap` for one function may print in another that never runs under it
(econpizza's `stacking.py` pmaps a model function and prints in the function its root finder
calls). A site is judged on several devices through pmap only where a function around it is
reached from a pmapped one: a function given to `pmap` (`jax.pmap(f)`, `jax.pmap(lambda x:
f(x))`, `functools.partial(jax.pmap, ...)(f)`, `@jax.pmap`, `@partial(jax.pmap, ...)`), or
one another module of the run applies it to (hcmigrate.project_model), then every function of
the module that a reached function names (called or handed on: `lax.scan(body, ...)`), and
everything written inside a reached function.

Names are matched by name, wherever the def is (over-reaching only keeps a site as it is today).
A reached function that calls a value the module may have put a function of its own in (a
variable, container or attribute given a def, lambda, class or such a value, a parameter a
module function is passed to) reaches every function the module hands on that way. What cannot
be followed is undecided, and the whole module stays on several devices: a pmap given something
other than a def of the module, a lambda or `partial(f, ...)`; the API named other than applied
(`p = partial(jax.pmap, axis_name="i")`); a call through `getattr`. Code outside the module
(the functions it imports, what its callers pass) is taken not to call back into it unless the
module hands it one of its functions.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_UNITS = (*_FUNCTIONS, ast.Lambda, ast.ClassDef)
_NAMES = (ast.Name, ast.Attribute)

Span = tuple[int, int, int, int]  # (line, byte column, end line, end byte column) of ast


class _Undecided(Exception):
    pass


def _last(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_partial(node: ast.AST) -> bool:
    return _last(node) == "partial"


def _root(node: ast.AST) -> ast.AST:
    """The innermost node of `a.b[c](d).e`: the Name `a`, or what is not a chain."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call, ast.Starred)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def _target_roots(target: ast.AST) -> Iterable[str]:
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _target_roots(element)
        return
    root = _root(target)
    if isinstance(root, ast.Name):
        yield root.id


def _parameters(function: ast.AST) -> list[str]:
    args = function.args
    found = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    found += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return found


class _Module:
    def __init__(self, tree: ast.Module, apis: frozenset[str]):
        self.tree = tree
        self.apis = apis
        self.defs: dict[str, list[ast.AST]] = {}  # name -> the defs and classes of that name
        self.params: dict[str, list[list[str]]] = {}  # def name -> each such def's parameters
        self.imported: set[str] = set()
        self.lambdas: list[ast.Lambda] = []
        self.decorated: list[ast.AST] = []  # defs and classes with a decorator
        for node in ast.walk(tree):
            if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
                self.defs.setdefault(node.name, []).append(node)
                if node.decorator_list:
                    self.decorated.append(node)
            if isinstance(node, _FUNCTIONS):
                self.params.setdefault(node.name, []).append(_parameters(node))
            if isinstance(node, ast.Lambda):
                self.lambdas.append(node)
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    self.imported.add(alias.asname or alias.name.split(".")[0])

    def is_api(self, node: ast.AST) -> bool:
        return _last(node) in self.apis


def _applications(module: _Module) -> tuple[list[ast.AST], set[int]]:
    """The functions the module gives to the APIs, and the ids of the API names so applied."""
    roots: list[ast.AST] = []
    applied: set[int] = set()

    def given(function: ast.AST | None) -> None:
        if isinstance(function, ast.Call) and _is_partial(function.func) and function.args:
            function = function.args[0]  # (`pmap(partial(f, cfg))`)
        if isinstance(function, ast.Lambda):
            roots.append(function)
            return
        name = _last(function) if function is not None else None
        if name is None or name not in module.defs:
            raise _Undecided  # (a value: which function it holds is not followed)
        roots.extend(module.defs[name])

    for node in ast.walk(module.tree):
        if isinstance(node, ast.Call):
            if module.is_api(node.func):
                applied.add(id(node.func))
                given(node.args[0] if node.args else None)
            elif (
                isinstance(node.func, ast.Call)
                and _is_partial(node.func.func)
                and node.func.args
                and module.is_api(node.func.args[0])
            ):
                applied.add(id(node.func.args[0]))
                given(node.args[0] if node.args else None)
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            for decorator in node.decorator_list:
                api = decorator
                if isinstance(decorator, ast.Call):
                    api = decorator.func
                    if _is_partial(decorator.func) and decorator.args:
                        api = decorator.args[0]
                if module.is_api(api):
                    applied.add(id(api))
                    roots.append(node)
    return roots, applied


def _named_unapplied(module: _Module, applied: set[int]) -> bool:
    """Does the code name an API other than where it is applied (`p = jax.pmap`)?"""
    for node in ast.walk(module.tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and not isinstance(node.ctx, ast.Store):
            if module.is_api(node) and id(node) not in applied:
                return True
    return False


def _handed_on(module: _Module) -> tuple[set[str], list[ast.AST]]:
    """The names that may hold a function of the module (flow-insensitive, by name), and the
    functions so held: defs named other than as a callee, decorated ones, classes (their
    instances carry their methods), lambdas."""
    callees = {id(n.func) for n in ast.walk(module.tree) if isinstance(n, ast.Call)}
    held: set[str] = set()
    for node in ast.walk(module.tree):
        if (
            isinstance(node, (ast.Name, ast.Attribute))
            and not isinstance(node.ctx, ast.Store)
            and id(node) not in callees
            and _last(node) in module.defs
        ):
            held.add(_last(node))
    held.update(name for name, nodes in module.defs.items() if any(_is_class(n) for n in nodes))
    held.update(node.name for node in module.decorated)
    functions = [n for name in held for n in module.defs[name]] + list(module.lambdas)

    def holds(expr: ast.AST | None) -> bool:
        if expr is None:
            return False
        for node in ast.walk(expr):
            if isinstance(node, ast.Lambda):
                return True
            if isinstance(node, ast.Name) and node.id in held:
                return True
            if isinstance(node, ast.Attribute) and node.attr in held:
                return True
        return False

    changed = True
    while changed:
        before = len(held)
        for node in ast.walk(module.tree):
            targets: list[ast.AST] = []
            value: ast.AST | None = None
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                targets, value = [node.target], node.value
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                targets, value = [node.target], node.iter
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                targets, value = [node.optional_vars], node.context_expr
            elif isinstance(node, ast.Call):
                arguments = [*node.args, *(k.value for k in node.keywords)]
                if any(holds(a) for a in arguments):
                    for named in ast.walk(node):  # (`run(f)`, `partial(step, model)`)
                        name = _last(named) if isinstance(named, _NAMES) else None
                        for params in module.params.get(name, []) if name else []:
                            held.update(params)  # (handed to a def of the module)
                    if isinstance(node.func, ast.Attribute):
                        targets = [node.func.value]  # (`fns.append(f)`, `registry.add(f)`)
                        value = node
            elif isinstance(node, _FUNCTIONS):
                if any(holds(r.value) for r in ast.walk(node) if isinstance(r, ast.Return)):
                    held.add(node.name)  # (a factory: what it returns holds a function)
            if value is not None and holds(value):
                for target in targets:
                    held.update(_target_roots(target))
        changed = len(held) != before
    return held, functions


def _is_class(node: ast.AST) -> bool:
    return isinstance(node, ast.ClassDef)


def _reach(module: _Module, roots: list[ast.AST]) -> list[ast.AST]:
    held: set[str] | None = None
    handed: list[ast.AST] = []
    reached: dict[int, ast.AST] = {}
    work = list(roots)
    while work:
        unit = work.pop()
        if id(unit) in reached:
            continue
        reached[id(unit)] = unit
        for node in ast.walk(unit):
            name = _last(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
            if name is not None and not isinstance(node.ctx, ast.Store) and name in module.defs:
                work.extend(module.defs[name])
            if not isinstance(node, ast.Call) or _last(node.func) in module.defs:
                continue
            root = _root(node.func)
            if isinstance(root, ast.Call) or _last(node.func) == "getattr":
                raise _Undecided  # (`getattr(obj, name)(x)`)
            if not isinstance(root, ast.Name) or root.id in module.imported:
                continue  # (code outside the module: handed none of its functions here)
            if held is None:
                held, handed = _handed_on(module)
            if root.id in held:
                work.extend(handed)  # (a value that may hold what the module hands on)
    return list(reached.values())


def per_device_spans(
    tree: ast.Module, apis: Iterable[str], elsewhere: Iterable[str] = ()
) -> list[Span] | None:
    """The spans of the module's code that may run under one of `apis` (`pmap`, `xmap`),
    applied here or, to the functions named in `elsewhere` (`f`, `Class.method`), by another
    module of the run; None: undecided (the module stays on several devices as a whole)."""
    module = _Module(tree, frozenset(apis))
    try:
        roots, applied = _applications(module)
        if _named_unapplied(module, applied):
            return None
        for function in elsewhere:
            name = function.rpartition(".")[2]
            if name not in module.defs:
                return None
            roots.extend(module.defs[name])
        reached = _reach(module, roots)
    except _Undecided:
        return None
    return [(n.lineno, n.col_offset, n.end_lineno, n.end_col_offset) for n in reached]
