"""Convert a legacy `result_shape` expression into a tree of `jax.ShapeDtypeStruct` leaves.

Legacy `call` accepted: an object with .shape/.dtype (array, ShapeDtypeStruct), a numeric
scalar (1.0 -> float32[], after canonicalisation), a pytree of those, or None/() for no
result. Modern callbacks need ShapeDtypeStruct-like leaves with canonical dtypes (a bare
float fails; float64 raises without x64). Literal forms are converted in place; an
expression whose kind is unknown gets a general conversion evaluated at trace time: one
module helper (`_shape_dtype_structs`, hcmigrate.codemod.module_helpers), called on the
expression. A name the code visibly bound to a `ShapeDtypeStruct` with a canonical dtype is
used as it is, as a person would write it; so is a name bound to a `ShapeDtypeStruct` (or a
tuple or list of them) whose dtype the code does not show to be canonical (`x.dtype`): its
dtypes are then used as given (`dtypes_as_given`), which the rule's note says (legacy made a
64-bit dtype 32-bit without x64; pure_callback raises on it).

Where 64-bit mode is on whenever the code runs (the module or a package `__init__` above it
turns it on: hcmigrate.project_model.x64_mode), canonicalisation is the identity: dtypes are
written as the user wrote them, and a scalar gets the 64-bit dtype legacy gave it there
(`x64_as_written`, which the rule's note says with where x64 is turned on).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import libcst as cst

from hcmigrate.rules.nodes import parse
from hcmigrate.facts import CANONICAL_DTYPE_NAMES, ONE_ARRAY_FUNCTIONS
from hcmigrate.rules.nodes import literal_value


@dataclass
class Converted:
    expr: cst.BaseExpression | None  # None: no result (legacy result_shape None / absent)
    is_empty: bool  # no result at all (None or ())
    general: bool  # the general trace-time conversion was needed
    dtypes_as_given: bool = False  # ShapeDtypeStructs whose dtype may not be canonical, kept
    # dtypes legacy canonicalised, kept as written: where 64-bit mode is turned on (x64_on)
    x64_as_written: str | None = None


class ShapeConverter:
    def __init__(
        self,
        modern: Callable[[str], str],
        qualified_names: Callable[[cst.CSTNode], set[str]],
        use_helper: Callable[[str], str],
        visible_value: Callable[[cst.Name], cst.BaseExpression | None],
        traced_parameter: Callable[[cst.Name], bool],
        x64_on: str | None = None,
    ):
        self._modern = modern  # key in facts.MODERN -> spelled name (import requested)
        self._qualified = qualified_names
        self._use_helper = use_helper  # key in module_helpers.HELPERS -> its name (added)
        self._visible_value = visible_value  # the one value a name was assigned, if visible
        self._traced_parameter = traced_parameter  # a parameter of a jitted function?
        # where 64-bit mode is turned on before the code runs ("line 19 of pkg/__init__.py")
        self.x64_on = x64_on
        self.general = False
        self.dtypes_as_given = False
        self.x64_as_written: str | None = None

    def convert(self, node: cst.BaseExpression | None) -> Converted:
        self.general = self.dtypes_as_given = False
        self.x64_as_written = None
        if node is None or literal_value(node) is None:
            return Converted(None, True, False)
        if isinstance(node, cst.Tuple) and not node.elements:
            return Converted(node, True, False)
        converted = self._leaf_or_tree(node)
        return Converted(converted, False, self.general, self.dtypes_as_given, self.x64_as_written)

    def _leaf_or_tree(self, node: cst.BaseExpression) -> cst.BaseExpression:
        if isinstance(node, (cst.Tuple, cst.List)):
            if any(isinstance(e, cst.StarredElement) for e in node.elements):
                return self._general(node)
            return node.with_changes(
                elements=[e.with_changes(value=self._leaf_or_tree(e.value)) for e in node.elements]
            )
        if isinstance(node, cst.Dict):
            if any(not isinstance(e, cst.DictElement) for e in node.elements):
                return self._general(node)
            return node.with_changes(
                elements=[e.with_changes(value=self._leaf_or_tree(e.value)) for e in node.elements]
            )
        value = literal_value(node)
        if value is None:
            return node
        if isinstance(node, cst.Name) and (
            self._is_canonical_struct(node) or self._traced_parameter(node)
        ):
            return node  # (a traced array's dtype is canonical)
        if isinstance(node, cst.Name) and self._bound_to_structs(node):
            if self.x64_on is None:
                self.dtypes_as_given = True
            return node
        if isinstance(value, (bool, int, float, complex)):
            return self._scalar(type(value).__name__)
        if isinstance(node, cst.Call):
            names = self._qualified(node.func)
            if any(n.endswith("ShapeDtypeStruct") for n in names):
                return self._canonical_sds(node)
            if "jax.eval_shape" in names:
                return node  # already ShapeDtypeStructs with canonical dtypes
            if names and names <= ONE_ARRAY_FUNCTIONS:
                return node  # one jax.numpy array (`jnp.ones((n,))`): its dtype is canonical
        return self._general(node)

    def _scalar(self, python_type: str) -> cst.BaseExpression:
        # The dtype of the mode the program runs in (legacy's, see facts.py): 64-bit mode
        # may be switched on where the module does not show it (`JAX_ENABLE_X64` in the
        # environment, another module), and a hard-coded float32 then fails at run time.
        sds = self._modern("ShapeDtypeStruct")
        if self.x64_on is not None:  # (the 64-bit dtype, spelled without an import)
            self.x64_as_written = self.x64_on
            return parse(f'{sds}((), "{_X64_SCALAR_DTYPES[python_type]}")')
        canon = self._modern("canonicalize_dtype")
        return parse(f"{sds}((), {canon}({python_type}))")

    def _canonical_sds(self, node: cst.Call) -> cst.Call:
        """Keep a ShapeDtypeStruct; canonicalise a dtype that may be 64-bit (unless 64-bit mode
        is on: the dtype as written)."""
        args = list(node.args)
        dtypes = {id(a) for a in _dtype_args(node)}
        for i, a in enumerate(args):
            if id(a) in dtypes and not self._is_canonical_dtype(a.value):
                if self.x64_on is not None:
                    self.x64_as_written = self.x64_on
                    continue
                canon = self._modern("canonicalize_dtype")
                args[i] = a.with_changes(value=cst.Call(func=parse(canon), args=[cst.Arg(a.value)]))
        return node.with_changes(args=args)

    def _is_canonical_struct(self, name: cst.Name) -> bool:
        """Is `name` visibly bound (once) to a ShapeDtypeStruct with a canonical dtype, or to
        what `jax.eval_shape` returned?"""
        value = self._visible_value(name)
        if not isinstance(value, cst.Call):
            return False
        names = self._qualified(value.func)
        if "jax.eval_shape" in names:
            return True
        if not any(n.endswith("ShapeDtypeStruct") for n in names):
            return False
        dtype = _dtype_args(value)
        return len(dtype) == 1 and self._is_canonical_dtype(dtype[0].value)

    def _bound_to_structs(self, name: cst.Name) -> bool:
        """Is `name` visibly bound (once) to a `ShapeDtypeStruct(...)`, or to a tuple or list
        of them (or of names so bound)?"""
        value = self._visible_value(name)
        if isinstance(value, (cst.Tuple, cst.List)):
            return bool(value.elements) and all(
                isinstance(e, cst.Element)
                and (
                    self._is_struct_call(e.value)
                    or (
                        isinstance(e.value, cst.Name)
                        and self._is_struct_call(self._visible_value(e.value))
                    )
                )
                for e in value.elements
            )
        return self._is_struct_call(value) or self._maps_to_structs(value)

    def _maps_to_structs(self, value) -> bool:
        """Is `value` a tree map of a lambda that builds a ShapeDtypeStruct
        (`jax.tree_map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), params)`)?"""
        if not isinstance(value, cst.Call) or not value.args:
            return False
        names = self._qualified(value.func)
        function = value.args[0].value
        return (
            any(n.rpartition(".")[2] == "tree_map" or n.endswith("jax.tree.map") for n in names)
            and isinstance(function, cst.Lambda)
            and self._is_struct_call(function.body)
        )

    def _is_struct_call(self, value) -> bool:
        return isinstance(value, cst.Call) and any(
            n.endswith("ShapeDtypeStruct") for n in self._qualified(value.func)
        )

    def _is_canonical_dtype(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Name):  # (`dtype = jax.dtypes.canonicalize_dtype(...)` above)
            value = self._visible_value(node)
            if isinstance(value, cst.Call):
                return any(n.endswith("canonicalize_dtype") for n in self._qualified(value.func))
            return isinstance(value, (cst.Attribute, cst.SimpleString)) and (
                self._is_canonical_dtype(value)
            )
        if (
            isinstance(node, cst.Attribute)
            and node.attr.value == "dtype"
            and isinstance(node.value, cst.Name)
        ):
            return self._traced_parameter(node.value)  # a traced array's dtype is canonical
        if isinstance(node, cst.Attribute):
            return node.attr.value in CANONICAL_DTYPE_NAMES
        value = literal_value(node)
        if isinstance(value, str):
            return value in CANONICAL_DTYPE_NAMES
        return False

    def _general(self, node: cst.BaseExpression) -> cst.BaseExpression:
        self.general = True
        helper = self._use_helper("shape_dtype_structs")
        return cst.Call(cst.Name(helper), [cst.Arg(node)])


# The canonical dtype of a Python scalar type in 64-bit mode (what legacy `call` gave
# `result_shape=1.0` there: facts.py).
_X64_SCALAR_DTYPES = {"float": "float64", "int": "int64", "complex": "complex128", "bool": "bool"}


def _dtype_args(call: cst.Call) -> list[cst.Arg]:
    """The dtype argument of a `ShapeDtypeStruct(shape, dtype)` call (positional or keyword)."""
    return [
        a
        for i, a in enumerate(call.args)
        if (a.keyword is not None and a.keyword.value == "dtype") or (a.keyword is None and i == 1)
    ]
