"""JAX functions that lost a keyword, reached through a name (issue 36): which calls call them.

`jnp.clip(x, a_min=0)` names its function; real code often does not: `clip = jnp.clip` in a
backend module, `from jax.numpy import clip as c`, `OPS = {"clip": jnp.clip}` then
`OPS["clip"](x, a_max=1)`, `ns = SimpleNamespace(clip=jnp.clip)` or a class body's
`clip = staticmethod(jnp.clip)` then `ns.clip(...)` / `Backend().clip(...)`, or `jnp.clip`
passed as an argument to a function of the module that calls its parameter with the keyword.
Each of these calls fails on the JAX that removed the keyword, and the name alone says nothing.

This module follows those bindings on the scope analysis' ast (hcmigrate.codemod.scopes), as
Python binds them: a call is **certainly** the JAX function where the callee's one binding is
such an alias and nothing in the module rebinds the attribute or key it reads (then the call
is rewritten like a direct one); it **may be** the JAX function where one of several bindings
is, or where a parameter is called and the module passes the function for it (then the call
is reported with the line of the binding, never rewritten: another caller may pass numpy's
`clip`, which still takes `a_min`). What another module binds is not followed here.
"""

from __future__ import annotations

import ast
import re
import weakref
from dataclasses import dataclass

from hcmigrate.codemod.scopes import IMPORT, LOCAL, ScopeAnalysis
from hcmigrate.project_model.module_facts import dotted

# The constructors whose keywords become attributes of the value they build.
_NAMESPACES = frozenset({"types.SimpleNamespace", "argparse.Namespace"})
_DICT = "builtins.dict"
_WRAPPERS = frozenset({"builtins.staticmethod"})
_DEF_NAME = re.compile(r"(?:async[\s\\]+)?(?:def|class)[\s\\]+")


@dataclass(frozen=True)
class Alias:
    """What a call's callee reaches: `qualified` (the JAX function), `spelled` (the binding
    as written, for the message), `line` (where it is bound or passed), `certain` (one
    binding, not rebound: the call may be rewritten)."""

    qualified: str
    spelled: str
    line: int  # (0: bound in another module, `exported`)
    certain: bool
    exported: str = ""  # the other module's name for it ("pkg.backend.clip")


@dataclass(frozen=True)
class _Bound:
    qualified: str
    line: int
    exported: str = ""


class ValueAliases:
    """The module's bindings of the JAX functions `functions` (qualified names) as values."""

    def __init__(self, scopes: ScopeAnalysis, functions: frozenset[str]):
        self._scopes = scopes
        self._functions = functions
        self.values: dict[int, _Bound] = {}  # binding offset of `clip = jnp.clip`
        self.maps: dict[int, dict[str, _Bound]] = {}  # binding offset -> key/attribute -> fn
        # binding offset of `be = Backend()` -> where its class's name is read, and the name
        self.instances: dict[int, tuple[int, str]] = {}
        self.passed: dict[int, list[_Bound]] = {}  # parameter offset -> what calls pass it
        self.rebound_attributes: set[str] = set()  # `x.clip = ...` anywhere
        self.mutated: set[str] = set()  # `OPS[...] = ...`, `OPS.update(...)`: their names
        self.names: set[str] = set()  # every local name that may lead to a function
        if functions:
            self._read(scopes.tree)

    # ------------------------------------------------------------------ reading the module
    def _function_of(self, node: ast.AST) -> str | None:
        """The JAX function `node` is (`jnp.clip`, `staticmethod(jnp.clip)`), if one."""
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            if self._qualified(node.func) in _WRAPPERS:
                node = node.args[0]
        found = self._qualified(node)
        return found if found in self._functions else None

    def _qualified(self, node: ast.AST) -> str | None:
        name = single_binding(self._scopes, node)
        return name.name if name is not None and name.source != LOCAL else None

    def _read(self, tree: ast.Module) -> None:
        params: dict[str, dict[object, int]] = {}  # def name offset -> param index/name -> offset
        calls: list[ast.Call] = []
        for node in ast.walk(tree):
            kind = type(node)
            if kind in (ast.Assign, ast.AnnAssign):
                targets = node.targets if kind is ast.Assign else [node.target]
                for target in targets:
                    self._note_rebinding(target)
                if node.value is not None and len(targets) == 1:
                    if isinstance(targets[0], ast.Name):
                        self._assigned(targets[0], node.value)
                    elif (  # `jb, nb = JaxBackend(), NumpyBackend()`
                        isinstance(targets[0], ast.Tuple)
                        and isinstance(node.value, ast.Tuple)
                        and len(targets[0].elts) == len(node.value.elts)
                    ):
                        for target, value in zip(targets[0].elts, node.value.elts):
                            if isinstance(target, ast.Name):
                                self._assigned(target, value)
            elif kind is ast.AugAssign:
                self._note_rebinding(node.target)
            elif kind is ast.Delete:
                for target in node.targets:
                    self._note_rebinding(target)
            elif kind is ast.ClassDef:
                self._class(node)
            elif kind in (ast.FunctionDef, ast.AsyncFunctionDef):
                params[self._def_offset(node)] = _parameters(self._scopes, node.args)
            elif kind is ast.Call:
                calls.append(node)
                func = node.func
                if (
                    isinstance(func, ast.Attribute)
                    and func.attr in ("update", "setdefault", "__setitem__", "pop", "clear")
                    and isinstance(func.value, ast.Name)
                ):
                    self.mutated.add(func.value.id)
                elif isinstance(func, ast.Name) and func.id in ("setattr", "delattr"):
                    self.mutated.update(a.id for a in node.args[:1] if isinstance(a, ast.Name))
        for call in calls:
            self._passes(call, params)

    def _note_rebinding(self, target: ast.AST) -> None:
        if isinstance(target, ast.Attribute):
            self.rebound_attributes.add(target.attr)
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            self.mutated.add(target.value.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._note_rebinding(element)
        elif isinstance(target, ast.Starred):
            self._note_rebinding(target.value)

    def _assigned(self, target: ast.Name, value: ast.AST) -> None:
        at = self._scopes.offset(target)
        function = self._function_of(value)
        if function is not None:
            self.values[at] = _Bound(function, value.lineno)
            self.names.add(target.id)
            return
        entries: dict[str, _Bound] = {}
        if isinstance(value, ast.Dict):
            for key, item in zip(value.keys, value.values):
                function = self._function_of(item) if item is not None else None
                if function is not None and isinstance(key, ast.Constant):
                    entries[str(key.value)] = _Bound(function, item.lineno)
        elif isinstance(value, ast.Call):
            builder = self._qualified(value.func)
            if builder in _NAMESPACES or builder == _DICT:
                for keyword in value.keywords:
                    function = self._function_of(keyword.value) if keyword.arg else None
                    if function is not None:
                        entries[keyword.arg] = _Bound(function, keyword.value.lineno)
            elif isinstance(value.func, ast.Name):
                # `be = Backend()`: an instance of a class of the module that binds one
                self.instances[at] = (self._scopes.offset(value.func), value.func.id)
                self.names.add(target.id)
        if entries:
            self.maps[at] = entries
            self.names.add(target.id)

    def _class(self, node: ast.ClassDef) -> None:
        entries: dict[str, _Bound] = {}
        for statement in node.body:
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
            ):
                function = self._function_of(statement.value)
                if function is not None:
                    entries[statement.targets[0].id] = _Bound(function, statement.lineno)
        if entries:
            self.maps[self._def_offset(node)] = entries
            self.names.add(node.name)

    def _def_offset(self, node: ast.AST) -> int:
        start = self._scopes.offset(node)
        match = _DEF_NAME.match(self._scopes.text, start)
        return match.end() if match else start

    def _passes(self, call: ast.Call, params: dict[str, dict[object, int]]) -> None:
        """`apply(jnp.clip, x)`: the parameter of `apply` (a def of the module) it fills."""
        if not isinstance(call.func, ast.Name):
            return
        arguments = [(i, a) for i, a in enumerate(call.args) if not isinstance(a, ast.Starred)]
        arguments += [(k.arg, k.value) for k in call.keywords if k.arg]
        passed = [(where, f) for where, a in arguments if (f := self._function_of(a))]
        if not passed:
            return
        bindings = self._scopes.bindings_at(self._scopes.offset(call.func), call.func.id)
        for binding in bindings:
            by_place = params.get(binding.offset) if binding.is_def else None
            for where, function in passed if by_place else ():
                parameter = by_place.get(where)
                if parameter is not None:
                    self.passed.setdefault(parameter, []).append(_Bound(function, call.lineno))
                    self.names.add(_parameter_name(self._scopes, parameter))

    # ------------------------------------------------------------------ a call site
    def alias(self, func, offset_of, exported=lambda qualified: None) -> Alias | None:
        """What the callee `func` (a libcst node) of a call reaches, when it is one of the
        functions through a binding of the module (`offset_of`: a libcst node's start offset)
        or through a name another module of the run exports (`exported`: "pkg.backend.clip"
        -> "jax.numpy.clip", or None)."""
        import libcst as cst  # (the run's export reading, hcmigrate.removed_exports, needs none)

        self._exported = exported
        if isinstance(func, cst.Name):
            return self._name(func, offset_of)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            return self._member(func.value, func.attr.value, offset_of, attribute=True)
        if (
            isinstance(func, cst.Subscript)
            and isinstance(func.value, cst.Name)
            and len(func.slice) == 1
            and isinstance(func.slice[0].slice, cst.Index)
            and isinstance(func.slice[0].slice.value, cst.SimpleString)
        ):
            key = func.slice[0].slice.value.evaluated_value
            if isinstance(key, str):
                return self._member(func.value, key, offset_of, attribute=False)
        return None

    def _bindings(self, name, offset_of) -> list:
        if name.value not in self.names:
            return []
        offset = offset_of(name)
        return self._scopes.bindings_at(offset, name.value) if offset is not None else []

    def _name(self, name, offset_of) -> Alias | None:
        bindings = self._bindings(name, offset_of)
        found = []
        for binding in bindings:
            if binding.kind == IMPORT:
                return None  # (an import of the function itself: its import is the site)
            bound = self.values.get(binding.offset)
            passed = self.passed.get(binding.offset)
            if bound is not None:
                found.append((bound, True))
            elif passed:
                found += [(p, False) for p in passed]
        if not found:
            return None
        certain = len(bindings) == 1 and len(found) == 1 and found[0][1]
        (bound, _), *_ = found
        return Alias(bound.qualified, name.value, bound.line, certain)

    def _member(self, name, key: str, offset_of, attribute: bool) -> Alias | None:
        bindings = self._bindings(name, offset_of)
        if not bindings:
            return None
        found = []
        for binding in bindings:
            instance = self.instances.get(binding.offset) if attribute else None
            if instance is not None:  # (an instance: its class's attribute)
                classes = self._scopes.bindings_at(*instance)
                entries = [
                    self._exported_entry(c, key)
                    if c.kind == IMPORT
                    else self.maps.get(c.offset, {}).get(key)
                    for c in classes
                ]
                one = len(classes) == 1 and (classes[0].is_def or classes[0].kind == IMPORT)
                found += [(e, one) for e in entries if e]
                continue
            entry = self.maps.get(binding.offset, {}).get(key)
            if entry is not None:
                found.append((entry, True))
        if not found:
            return None
        rebound = key in self.rebound_attributes if attribute else name.value in self.mutated
        rebound = rebound or name.value in self.mutated
        certain = len(bindings) == 1 and len(found) == 1 and found[0][1] and not rebound
        (bound, _), *_ = found
        spelled = f"{name.value}.{key}" if attribute else f'{name.value}["{key}"]'
        return Alias(bound.qualified, spelled, bound.line, certain, bound.exported)

    def _exported_entry(self, binding, key: str) -> _Bound | None:
        """`Backend().clip` where `Backend` is imported from a module of the run that binds
        `clip` in its class body."""
        exported = f"{binding.real}.{key}"
        qualified = self._exported(exported)
        return _Bound(qualified, 0, exported) if qualified else None


def exports_of(scopes: ScopeAnalysis, aliases: ValueAliases) -> dict[str, str]:
    """What a module binds once at module level to the functions, as other modules reach it:
    "clip" (`clip = jnp.clip`, `from jax.numpy import clip`), "ns.clip" (a namespace or a
    class body, where no `x.clip = ...` rebinds it) -> "jax.numpy.clip"."""
    found: dict[str, str] = {}
    for name, bindings in scopes.module.bindings.items():
        if len(bindings) != 1:
            continue
        (binding,) = bindings
        if binding.kind == IMPORT and binding.real in aliases._functions and "." not in name:
            found[name] = binding.real
        elif binding.offset in aliases.values:
            found[name] = aliases.values[binding.offset].qualified
        elif binding.offset in aliases.maps and name not in aliases.mutated:
            for key, bound in aliases.maps[binding.offset].items():
                if key.isidentifier() and key not in aliases.rebound_attributes:
                    found[f"{name}.{key}"] = bound.qualified
        elif binding.offset in aliases.instances and name not in aliases.mutated:
            # `xnp = JaxBackend()`: the class's attributes, where one class of the module
            classes = scopes.bindings_at(*aliases.instances[binding.offset])
            if len(classes) == 1 and classes[0].is_def:
                for key, bound in aliases.maps.get(classes[0].offset, {}).items():
                    if key not in aliases.rebound_attributes:
                        found[f"{name}.{key}"] = bound.qualified
    return found


def _parameters(scopes: ScopeAnalysis, args: ast.arguments) -> dict[object, int]:
    """A def's parameters by position and by name -> the offset of their binding."""
    found: dict[object, int] = {}
    positional = [*args.posonlyargs, *args.args]
    for i, arg in enumerate(positional):
        found[i] = scopes.offset(arg)
    for arg in [*args.args, *args.kwonlyargs]:
        found[arg.arg] = scopes.offset(arg)
    return found


def _parameter_name(scopes: ScopeAnalysis, offset: int) -> str:
    return re.match(r"\w+", scopes.text[offset:]).group(0)


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def value_aliases(scopes: ScopeAnalysis, functions: frozenset[str]) -> ValueAliases:
    """The module's aliases (read once per module: the parse's seed words and the dispatch
    ask the same)."""
    found = _CACHE.get(scopes)
    if found is None or found._functions != functions:
        found = ValueAliases(scopes, functions)
        _CACHE[scopes] = found
    return found


def single_binding(scopes: ScopeAnalysis, node: ast.AST):
    """What the dotted name `node` (`a.b.c`) stands for where it is read, when one binding
    reaches it (its qualified name and source); None otherwise."""
    spelled = dotted(node)
    if spelled is None:
        return None
    root = node
    while isinstance(root, ast.Attribute):
        root = root.value
    names = scopes.qualified_names(scopes.offset(root), spelled)
    return next(iter(names)) if len(names) == 1 else None
