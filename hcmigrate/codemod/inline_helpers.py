"""A module helper only where it pays for itself (issue 27): `_with_numpy_args` called at one
site of a module is written inline there, when the inline expression fits on a line:

- `_with_numpy_args(save)` -> `lambda *args: save(*jax.tree.map(np.asarray, args))`;
- `_with_numpy_args(lambda v: print(name, v))`, each parameter read once ->
  `lambda v: print(name, jax.tree.map(np.asarray, v))`.

Several sites, a lambda that reads a parameter twice (or never) or has defaults, or an
inline expression too long for a line keep the helper. `_shape_dtype_structs` stays a
helper: its inline expression never fits on a line. `_tap_with_numpy_args` also drops its
function's result, which no one-line lambda says plainly.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from hcmigrate.codemod.module_helpers import HELPERS
from hcmigrate.rules.nodes import parse

_INLINE_KEY = "numpy_args"
_MARGIN = 8  # (the inline expression must fit on a line indented this much, at least)


def inline_single_uses(
    module: cst.Module,
    helpers: list[str],
    defined: set[str],
    spell: Callable[[str, str | None], tuple[str, tuple]],
    line_length: int,
) -> tuple[cst.Module, list[str], list[tuple]]:
    """(`module` with a single-site helper call written inline, the helper keys still needed,
    the imports the inline expression needs). `defined`: the module's own top-level defs (a
    helper the module already has is left as it is); `spell(module, alias)`: the local name
    generated code uses for a module, and its import."""
    name = HELPERS[_INLINE_KEY].name
    if _INLINE_KEY not in helpers or name in defined:
        return module, helpers, []
    finder = _Calls(name)
    module.visit(finder)
    if len(finder.calls) != 1:
        return module, helpers, []
    (jax, jax_import), (np, np_import) = spell("jax", None), spell("numpy", "np")
    inline = _inline(finder.calls[0], f"{jax}.tree.map({np}.asarray, {{}})")
    if inline is None or len(_code(inline)) > line_length - _MARGIN:
        return module, helpers, []
    module = module.visit(_Replace(finder.calls[0], inline, finder.holders))
    return module, [k for k in helpers if k != _INLINE_KEY], [jax_import, np_import]


def _inline(call: cst.Call, convert: str) -> cst.BaseExpression | None:
    """The expression that calls the call's function with numpy arrays, or None."""
    if len(call.args) != 1 or call.args[0].keyword or call.args[0].star:
        return None
    function = call.args[0].value
    if isinstance(function, (cst.Name, cst.Attribute)):
        return parse(f"lambda *args: {_code(function)}(*{convert.format('args')})")
    if not isinstance(function, cst.Lambda):
        return None
    params = function.params
    if (
        params.star_arg is not cst.MaybeSentinel.DEFAULT
        or params.kwonly_params
        or params.star_kwarg
        or params.posonly_params
        or any(p.default is not None for p in params.params)
    ):
        return None
    names = [p.name.value for p in params.params]
    reads = _Reads(set(names))
    function.body.visit(reads)
    if not names or any(reads.count.get(n, 0) != 1 for n in names) or reads.shadowed:
        return None
    body = function.body.visit(_Convert(set(names), convert))
    return function.with_changes(body=body)


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


class _Calls(cst.CSTVisitor):
    """The calls of the helper, and the ids of the nodes that hold them."""

    def __init__(self, name: str):
        self.name = name
        self.calls: list[cst.Call] = []
        self.holders: set[int] = set()
        self._path: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self._path.append(node)
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Name)
            and node.func.value == self.name
        ):
            self.calls.append(node)
            self.holders.update(id(n) for n in self._path)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._path.pop()


class _Replace(cst.CSTTransformer):
    """Replaces the call, walking only down the nodes that hold it (the others stay the very
    nodes they were: the printer copies untouched statements from the source)."""

    def __init__(self, target: cst.Call, new: cst.BaseExpression, holders: set[int]):
        self.target, self.new, self.holders = target, new, holders

    def on_visit(self, node: cst.CSTNode) -> bool:
        return id(node) in self.holders

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        return self.new if original is self.target else updated


class _Reads(cst.CSTVisitor):
    """How often each of `names` is read; `shadowed`: a nested lambda or comprehension binds
    one of them again (its reads are not the parameter's)."""

    def __init__(self, names: set[str]):
        self.names = names
        self.count: dict[str, int] = {}
        self.shadowed = False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.names:
            self.count[node.value] = self.count.get(node.value, 0) + 1

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.shadowed = True

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.shadowed = True

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)  # (`x.name`: only `x` is a read)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)  # (`f(name=x)`: the keyword is no read)
        return False


class _Convert(cst.CSTTransformer):
    def __init__(self, names: set[str], convert: str):
        self.names, self.convert = names, convert

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return True

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
        # (the attribute's name stays; only the object it is read from is converted)
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg):
        return updated.with_changes(keyword=original.keyword)

    def leave_Name(self, original: cst.Name, updated: cst.Name):
        if original.value in self.names:
            return parse(self.convert.format(original.value))
        return updated
