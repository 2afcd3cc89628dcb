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
module function is passed to) reaches every function that value may hold (`_held`: by name,
whatever the order of the statements). What cannot
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
        # def name -> each such def's parameters (a class's name: each of its methods')
        self.params: dict[str, list[list[str]]] = {}
        self.imported: set[str] = set()
        self.lambdas: list[ast.Lambda] = []
        self.decorated: list[ast.AST] = []  # defs and classes with a decorator
        self.nodes: list[ast.AST] = []  # every node, once
        self.returned: dict[int, list[ast.AST]] = {}  # id(def) -> the values it returns
        self.calls: list[ast.Call] = []
        stack: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]  # (node, innermost def)
        while stack:
            node, around = stack.pop()
            self.nodes.append(node)
            if isinstance(node, _FUNCTIONS):
                around = node
            stack.extend((child, around) for child in ast.iter_child_nodes(node))
            if isinstance(node, ast.Return) and node.value is not None and around is not None:
                self.returned.setdefault(id(around), []).append(node.value)
            if isinstance(node, ast.Call):
                self.calls.append(node)
            if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
                self.defs.setdefault(node.name, []).append(node)
                if node.decorator_list:
                    self.decorated.append(node)
            if isinstance(node, _FUNCTIONS):
                self.params.setdefault(node.name, []).append(_parameters(node))
            if isinstance(node, ast.ClassDef):  # (`Runner(g)`: its methods' `self` holds g)
                for item in node.body:
                    if isinstance(item, _FUNCTIONS):
                        self.params.setdefault(node.name, []).append(_parameters(item))
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

    for node in module.nodes:
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
    for node in module.nodes:
        if isinstance(node, (ast.Name, ast.Attribute)) and not isinstance(node.ctx, ast.Store):
            if module.is_api(node) and id(node) not in applied:
                return True
    return False


def _held(module: _Module) -> dict[str, list[ast.AST]]:
    """name -> the functions of the module a variable, parameter, container or attribute
    (by its root name) of that name may hold, flow-insensitively: a def named other than as a
    callee, a lambda, a class (its instances carry its methods), what a factory of the module
    returns; through assignments, loops, `with`, the parameters of the module's defs that
    calls (or decorators) hand them to, and containers given them by a method (`fns.append(f)`)."""
    callees = {id(call.func) for call in module.calls}
    flowing: list[tuple[list[str], ast.AST]] = []  # (names bound, the value they get)
    calls: list[tuple[list[str], list[ast.AST]]] = []  # (names handed to, the arguments)
    for node in module.nodes:
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            targets, value = [node.target], node.value
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            targets, value = [node.target], node.iter
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets, value = [node.optional_vars], node.context_expr
        elif isinstance(node, ast.Call):
            receivers = [
                p for name in _receivers(node) for ps in module.params.get(name, []) for p in ps
            ]
            if isinstance(node.func, ast.Attribute):  # (`fns.append(f)`, `self.add(f)`)
                receivers += [r for r in _target_roots(node.func.value) if r not in module.imported]
            arguments = [*node.args, *(k.value for k in node.keywords)]
            if receivers and arguments:
                calls.append((receivers, arguments))
        if targets and value is not None:
            flowing.append(([n for t in targets for n in _target_roots(t)], value))
    for node in module.decorated:  # (a decorator of the module gets the def)
        for decorator in node.decorator_list:
            for named in ast.walk(decorator):
                name = _last(named) if isinstance(named, _NAMES) else None
                for params in module.params.get(name, []) if name else []:
                    flowing.append((params, node))
    factories = [
        ([node.name], module.returned.get(id(node), []))
        for nodes in module.defs.values()
        for node in nodes
        if isinstance(node, _FUNCTIONS)
    ]
    bindable = {n for names, _ in flowing for n in names} | {n for ns, _ in calls for n in ns}

    def summary(expr: ast.AST) -> tuple[dict[int, ast.AST], list[str], list[str], list[str]]:
        """What an expression may hold, read once: the functions it names (lambdas, defs
        named other than as a callee, classes called), the factories it calls, the names it
        reads that may hold functions, those it calls."""
        static: dict[int, ast.AST] = {}
        factories_called, names, names_called = [], [], []
        if isinstance(expr, (*_FUNCTIONS, ast.ClassDef)):
            return {id(expr): expr}, [], [], []
        for node in ast.walk(expr):
            if isinstance(node, ast.Lambda):
                static[id(node)] = node
            name = _last(node) if isinstance(node, _NAMES) else None
            if name is None or isinstance(node.ctx, ast.Store):
                continue
            called = id(node) in callees
            if name in module.defs:
                if called:  # (a factory's result; an instance of a class)
                    factories_called.append(name)
                    static.update((id(d), d) for d in module.defs[name] if _is_class(d))
                else:
                    static.update((id(d), d) for d in module.defs[name])
            if isinstance(node, ast.Name) and node.id in bindable:
                (names_called if called else names).append(node.id)
        return static, factories_called, names, names_called

    held: dict[str, dict[int, ast.AST]] = {}
    returns: dict[str, dict[int, ast.AST]] = {}  # factory def name -> what it returns

    def functions(read) -> dict[int, ast.AST]:
        static, factories_called, names, names_called = read
        found = dict(static)
        for name in factories_called:
            found.update(returns.get(name, {}))
        for name in names:
            found.update(held.get(name, {}))
        for name in names_called:  # (what calling a held function returns)
            for function in held.get(name, {}).values():
                if not isinstance(function, ast.Lambda):
                    found.update(returns.get(function.name, {}))
        return found

    rules = [(held, names, [summary(value)]) for names, value in flowing]
    rules += [(held, names, [summary(a) for a in arguments]) for names, arguments in calls]
    rules += [(returns, names, [summary(v) for v in values]) for names, values in factories]
    grew = True
    while grew:
        grew = False
        for into, names, reads in rules:
            found: dict[int, ast.AST] = {}
            for read in reads:
                found.update(functions(read))
            if not found:
                continue
            for name in names:
                known = into.setdefault(name, {})
                before = len(known)
                known.update(found)
                grew |= len(known) != before
    return {name: list(found.values()) for name, found in held.items()}


def _receivers(call: ast.Call) -> list[str]:
    """The names of the functions a call hands its arguments to: its callee (`run(f)`), the
    function of `partial(step, model)` and of `jax.jit(step)(model)`."""
    names = [_last(call.func)]
    inner = call.func if isinstance(call.func, ast.Call) else call
    if (inner is not call or _is_partial(call.func)) and inner.args:
        names.append(_last(inner.args[0]))
    return [name for name in names if name is not None]


def _is_class(node: ast.AST) -> bool:
    return isinstance(node, ast.ClassDef)


def _reach(module: _Module, roots: list[ast.AST]) -> list[ast.AST]:
    held: dict[str, list[ast.AST]] | None = None
    reached: dict[int, ast.AST] = {}
    work = list(roots)
    while work:
        unit = work.pop()
        if id(unit) in reached:
            continue
        reached[id(unit)] = unit
        for node in ast.walk(unit):
            name = _last(node) if isinstance(node, _NAMES) else None
            if name is not None and not isinstance(node.ctx, ast.Store) and name in module.defs:
                work.extend(module.defs[name])
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Call) and _last(node.func.func) == "getattr":
                raise _Undecided  # (`getattr(obj, name)(x)`: any method)
            root = _root(node.func)
            if not isinstance(root, ast.Name) or root.id in module.imported:
                continue  # (code outside the module: handed none of its functions here)
            if held is None:
                held = _held(module)
            work.extend(held.get(root.id, ()))  # (what a value called here may hold)
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
