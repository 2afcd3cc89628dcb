"""Walking libcst trees without the cost of libcst's visitor machinery.

A CSTVisitor calls several hooks per node and per field (`on_visit`, `on_visit_attribute`,
`on_leave_attribute`, `on_leave`, each looking up a method by a formatted name): walking a
host function's body that way cost a fixture's migration more than parsing the body did. The
analyses that only read a tree (which names a function uses, whether it is pure, whether a
block imports the legacy module) walk the node dataclasses' fields directly instead
(`descendants`), several times faster (docs/performance.md). The transformers, which must go through libcst's
machinery to rebuild what they change, at least skip its per-field hooks (`Transformer`).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Iterator

import libcst as cst

_FIELDS: dict[type, tuple[str, ...]] = {}
_IS_NODE: dict[type, bool] = {}  # (a dict look-up: isinstance on libcst's abstract classes is slow)


def _field_names(kind: type) -> tuple[str, ...]:
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind))
    return names


def _is_node(kind: type) -> bool:
    flag = _IS_NODE.get(kind)
    if flag is None:
        flag = _IS_NODE[kind] = issubclass(kind, cst.CSTNode)
    return flag


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and every node below it: each node before its children, children in the order of
    their fields."""
    stack = [node]
    pop, push = stack.pop, stack.append
    while stack:
        current = pop()
        yield current
        children = []
        for name in _field_names(type(current)):
            value = getattr(current, name)
            kind = type(value)
            if kind is tuple or kind is list:
                children.extend(item for item in value if _is_node(type(item)))
            elif kind is not str and _is_node(kind):  # (most fields that are not nodes are strings)
                children.append(value)
        while children:
            push(children.pop())


def names_used(node: cst.CSTNode) -> set[str]:
    """Every bare Name value appearing in `node` (conservative: shadowing counts as a use)."""
    Name = cst.Name
    return {n.value for n in descendants(node) if type(n) is Name}


def not_a_read(node: cst.CSTNode) -> cst.Name | None:
    """The Name under `node` that names no variable: `f(a=...)`'s keyword, `obj.a`'s
    attribute (a walk in `descendants`' order meets `node` before that Name)."""
    if isinstance(node, cst.Arg):
        return node.keyword
    if isinstance(node, cst.Attribute):
        return node.attr
    return None


_FIELD_HOOK = re.compile(r"(visit|leave)_[A-Z][A-Za-z]*_[a-z]\w*")


class Transformer(cst.CSTTransformer):
    """A CSTTransformer without per-field hooks (`visit_Call_func`, `leave_Call_args` ...):
    libcst would look each one up, by a formatted name, for every field of every node the
    transformer walks. A subclass that defines one is refused when it is created (the hook
    would never run)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        hooks = [name for name in vars(cls) if _FIELD_HOOK.fullmatch(name)]
        if hooks:
            raise TypeError(
                f"{cls.__name__} defines per-field hooks, which hcmigrate.codemod.walk.Transformer never calls: {hooks}"
            )

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        pass

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass
