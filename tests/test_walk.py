"""hcmigrate.codemod.walk: the read-only walk reaches exactly the nodes libcst's own visitor reaches.

The purity check, the tap-parameter analysis and the import-guard look-up moved from libcst
visitors to this walk (about four times cheaper); they stay right only if no node is missed."""

from __future__ import annotations

import random
from pathlib import Path

import jax
import libcst as cst
import pytest

from hcmigrate.codemod.walk import Transformer, descendants, names_used

FIXTURES = sorted((Path(__file__).parent.parent / "fixtures").glob("*.py"))
JAX_SOURCES = sorted(
    p for p in Path(jax.__file__).parent.rglob("*.py") if p.stat().st_size < 60_000
)


def _visited_by_libcst(node: cst.CSTNode) -> tuple[list[cst.CSTNode], dict[int, cst.CSTNode]]:
    """Every node libcst's visitor reaches, and each one's parent."""
    seen: list[cst.CSTNode] = []
    parents: dict[int, cst.CSTNode] = {}
    stack: list[cst.CSTNode] = []

    class _All(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            seen.append(n)
            if stack:
                parents[id(n)] = stack[-1]
            stack.append(n)
            return True

        def on_leave(self, n: cst.CSTNode) -> None:
            stack.pop()

    node.visit(_All())
    return seen, parents


@pytest.mark.parametrize(
    "path", [*FIXTURES, *random.Random(7).sample(JAX_SOURCES, 60)], ids=lambda p: p.name
)
def test_walk_reaches_every_node_libcst_visits(path):
    module = cst.parse_module(path.read_text(encoding="utf-8"))
    expected, parents = _visited_by_libcst(module)
    walked = list(descendants(module))
    assert len(walked) == len(expected)
    assert {id(n) for n in walked} == {id(n) for n in expected}
    order = {id(n): i for i, n in enumerate(walked)}
    assert walked[0] is module
    assert all(order[id(parents[id(n)])] < order[id(n)] for n in walked[1:])  # parents first


def test_names_used_includes_names_in_every_position():
    code = "lambda a, *b, c=d, **e: f(g.h, [i for j in k if l], m[n:o], p := q, *r, s=t)"
    expected = set("abcdefghijklmnopqrst")
    assert names_used(cst.parse_expression(code)) == expected


def test_transformer_refuses_per_field_hooks_it_would_never_call():
    with pytest.raises(TypeError, match="visit_Call_func"):
        type("WithFieldHook", (Transformer,), {"visit_Call_func": lambda self, node: None})

    # per-node hooks are what it runs
    class Renamer(Transformer):
        def leave_Name(self, original_node, updated_node):
            return updated_node.with_changes(value=updated_node.value.upper())

    assert cst.parse_module("a.b(c)\n").visit(Renamer()).code == "A.B(C)\n"
