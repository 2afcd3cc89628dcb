"""Convert a legacy `result_shape` expression into a tree of `jax.ShapeDtypeStruct` leaves.

Legacy `call` accepted: an object with .shape/.dtype (array, ShapeDtypeStruct), a numeric
scalar (1.0 -> float32[], after canonicalisation), a pytree of those, or None/() for no
result. Modern callbacks need ShapeDtypeStruct-like leaves with canonical dtypes (a bare
float fails; float64 raises without x64). Literal forms are converted in place; an
expression whose kind is unknown gets a general conversion evaluated at trace time.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import libcst as cst

from hcmigrate.rules.nodes import parse
from hcmigrate.facts import CANONICAL_DTYPE_NAMES, SCALAR_RESULT_DTYPES
from hcmigrate.rules.nodes import literal_value

# General conversion, valid for every legacy form (arrays, tracers, ShapeDtypeStructs,
# Python/numpy scalars, pytrees, None). `type(leaf)` covers Python scalars: float -> float32.
GENERAL = (
    '{tree_map}(lambda leaf: {SDS}(getattr(leaf, "shape", ()), '
    '{canon}(getattr(leaf, "dtype", type(leaf)))), {expr})'
)


@dataclass
class Converted:
    expr: cst.BaseExpression | None  # None: no result (legacy result_shape None / absent)
    is_empty: bool  # no result at all (None or ())
    general: bool  # the general trace-time conversion was needed


class ShapeConverter:
    def __init__(
        self,
        modern: Callable[[str], str],
        qualified_names: Callable[[cst.CSTNode], set[str]],
        x64_possible: bool,
    ):
        self._modern = modern  # key in facts.MODERN -> spelled name (import requested)
        self._qualified = qualified_names
        self._x64_possible = x64_possible
        self.general = False

    def convert(self, node: cst.BaseExpression | None) -> Converted:
        self.general = False
        if node is None or literal_value(node) is None:
            return Converted(None, True, False)
        if isinstance(node, cst.Tuple) and not node.elements:
            return Converted(node, True, False)
        return Converted(self._leaf_or_tree(node), False, self.general)

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
        if isinstance(value, (bool, int, float, complex)):
            return self._scalar(type(value).__name__)
        if isinstance(node, cst.Call):
            names = self._qualified(node.func)
            if any(n.endswith("ShapeDtypeStruct") for n in names):
                return self._canonical_sds(node)
            if "jax.eval_shape" in names:
                return node  # already ShapeDtypeStructs with canonical dtypes
        return self._general(node)

    def _scalar(self, python_type: str) -> cst.BaseExpression:
        sds = self._modern("ShapeDtypeStruct")
        if self._x64_possible:
            canon = self._modern("canonicalize_dtype")
            return parse(f"{sds}((), {canon}({python_type}))")
        return parse(f'{sds}((), "{SCALAR_RESULT_DTYPES[python_type]}")')

    def _canonical_sds(self, node: cst.Call) -> cst.Call:
        """Keep a ShapeDtypeStruct; canonicalise a dtype that may be 64-bit."""
        args = list(node.args)
        for i, a in enumerate(args):
            is_dtype = (a.keyword is not None and a.keyword.value == "dtype") or (
                a.keyword is None and i == 1
            )
            if is_dtype and not self._is_canonical_dtype(a.value):
                canon = self._modern("canonicalize_dtype")
                args[i] = a.with_changes(value=cst.Call(func=parse(canon), args=[cst.Arg(a.value)]))
        return node.with_changes(args=args)

    @staticmethod
    def _is_canonical_dtype(node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Attribute):
            return node.attr.value in CANONICAL_DTYPE_NAMES
        value = literal_value(node)
        if isinstance(value, str):
            return value in CANONICAL_DTYPE_NAMES
        return False

    def _general(self, node: cst.BaseExpression) -> cst.BaseExpression:
        self.general = True
        template = _general_template(
            self._modern("tree_map"),
            self._modern("ShapeDtypeStruct"),
            self._modern("canonicalize_dtype"),
        )
        *leading, last = template.args
        return template.with_changes(args=[*leading, last.with_changes(value=node)])


@lru_cache(maxsize=16)
def _general_template(tree_map: str, sds: str, canon: str) -> cst.Call:
    """GENERAL with these names, `{expr}` left as a placeholder name (parsed once per spelling:
    running libcst's parser is the costly part of building it). Its nodes are shared by every
    site that uses it, as libcst's own `with_changes` shares unchanged children."""
    template = parse(GENERAL.format(tree_map=tree_map, SDS=sds, canon=canon, expr="_"))
    assert isinstance(template, cst.Call)
    return template
