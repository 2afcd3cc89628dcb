"""Which uses of `jax.sharding.PositionalSharding` (removed in JAX 0.7.0) have a
`NamedSharding(Mesh(...), PartitionSpec(...))` spelling, for the dispatch and JAX113.

The forms found in code written for jax 0.4 (each measured on 4 forced CPU devices by
scripts/measure_positional_sharding.py: the same device of every shard, on jax 0.4.30):

- `PositionalSharding(D)` where `D` is visibly one-dimensional (`jax.devices()`,
  `jax.local_devices()`, a slice of them, a list): a sharding of the first axis over `D`;
- `R.reshape(n, m, ...)` with whole-number literals, and `R.replicate()`, where `R` is such a
  call (any `D`: reshaped or flattened) or a name bound once to one (then rewritten too);
- that name passed on (`jax.device_put(x, sharding)`): it is a NamedSharding of the same
  placement, so nothing changes there.

Everything here reads the scope analysis' ast (so the import's rewrite and the sites' agree on
which uses are rewritten) and answers for libcst nodes by their start offsets.
"""

from __future__ import annotations

import ast

from hcmigrate.codemod.scopes import IMPORT, LOCAL, ScopeAnalysis
from hcmigrate.codemod.removed_aliases import single_binding

NAME = "jax.sharding.PositionalSharding"
CONSTRUCT, RESHAPE, REPLICATE = "construct", "reshape", "replicate"
_ONE_DIMENSIONAL = frozenset({"jax.devices", "jax.local_devices"})
# What a NamedSharding has as a PositionalSharding had it (jax.sharding.Sharding's API): a name
# bound to a rewritten construct may be read this way; any other attribute (`.shape`) keeps
# the construct as it is, reported.
SHARDING_API = frozenset(
    {
        "device_set",
        "devices_indices_map",
        "addressable_devices",
        "addressable_devices_indices_map",
        "is_fully_replicated",
        "is_fully_addressable",
        "is_equivalent_to",
        "memory_kind",
        "with_memory_kind",
        "shard_shape",
        "num_devices",
    }
)


class ShardingUses:
    """The module's uses of PositionalSharding, by the offset of each call's start."""

    def __init__(self, scopes: ScopeAnalysis):
        self._scopes = scopes
        # (call start, CONSTRUCT / RESHAPE / REPLICATE): `PositionalSharding(D).reshape(4, 1)`
        # and its receiver start at the same offset
        self.calls: set[tuple[int, str]] = set()
        self.constructs_alone: set[int] = set()  # CONSTRUCT calls rewritten on their own
        # reshape/replicate calls that are the receiver of another one (rewritten with it)
        self.receivers: set[tuple[int, str]] = set()
        self.variables: dict[int, str] = {}  # binding offset -> name, bound once to a CONSTRUCT
        self.names: set[str] = set()  # those variables' names
        self.rewritten_names: set[int] = set()  # offsets of names of the class the calls take
        if "PositionalSharding" in scopes.text:
            self._read()

    def _qualified(self, node: ast.AST) -> str | None:
        name = single_binding(self._scopes, node)
        return name.name if name is not None and name.source == IMPORT else None

    def _is_construct(self, node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Call)
            and len(node.args) == 1
            and not node.keywords
            and not isinstance(node.args[0], ast.Starred)
            and self._qualified(node.func) == NAME
        )

    def _one_dimensional(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            node = node.value
        if isinstance(node, ast.Call):
            return self._qualified(node.func) in _ONE_DIMENSIONAL
        return isinstance(node, ast.List) and all(
            not isinstance(e, (ast.List, ast.Tuple, ast.Starred)) for e in node.elts
        )

    def _variable(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Name):
            return False
        bindings = self._scopes.bindings_at(self._scopes.offset(node), node.id)
        return len(bindings) == 1 and bindings[0].offset in self.variables

    def _read(self) -> None:
        tree = self._scopes.tree
        offset = self._scopes.offset
        # names bound once (in their scope) to a construct that is rewritten on its own
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and self._is_construct(node.value)
                and self._one_dimensional(node.value.args[0])
            ):
                target = node.targets[0]
                bindings = self._scopes.bindings_at(offset(target), target.id)
                if len(bindings) == 1 and bindings[0].kind == LOCAL:
                    self.variables[offset(target)] = target.id
                    self.names.add(target.id)
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        self._parents = parents
        if self.variables:
            self._drop_variables_read_otherwise(tree, parents)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if (
                self._is_construct(node)
                and self._one_dimensional(node.args[0])
                and self._value_kept_track_of(node, parents)
            ):
                self.calls.add((offset(node), CONSTRUCT))
                self.constructs_alone.add(offset(node))
            elif isinstance(func, ast.Attribute) and self._rewritten_sharding(func.value):
                if func.attr == RESHAPE and _shape(node) is not None:
                    self.calls.add((offset(node), RESHAPE))
                elif func.attr == REPLICATE and not node.args and not node.keywords:
                    self.calls.add((offset(node), REPLICATE))
                else:
                    continue
                if self._is_construct(func.value):
                    self.calls.add((offset(func.value), CONSTRUCT))
                elif isinstance(func.value, ast.Call):  # (a reshape/replicate of one)
                    self.receivers.add((offset(func.value), func.value.func.attr))
        # (a call starts where its callee's name does)
        self.rewritten_names = {at for at, form in self.calls if form == CONSTRUCT}

    def _rewritten_sharding(self, node: ast.AST) -> bool:
        """Is `node` a PositionalSharding the rewrite turns into a NamedSharding: a construct,
        a name bound to one, or a reshape/replicate of one (`s.reshape(4, 1).replicate()`)?"""
        if self._is_construct(node) or self._variable(node):
            return True
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and (
                (node.func.attr == RESHAPE and _shape(node) is not None)
                or (node.func.attr == REPLICATE and not node.args and not node.keywords)
            )
            and self._rewritten_sharding(node.func.value)
        )

    def _value_kept_track_of(self, construct: ast.Call, parents: dict) -> bool:
        """Is every use of the construct's value one this module rewrites: bound to a name
        followed here, or used where it stands (an argument)? Not: bound to an attribute or to a
        name read as a PositionalSharding only."""
        parent = parents.get(construct)
        if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            return (
                len(targets) == 1
                and isinstance(targets[0], ast.Name)
                and self._scopes.offset(targets[0]) in self.variables
            )
        return not isinstance(parent, (ast.Return, ast.Yield, ast.Lambda))

    def _drop_variables_read_otherwise(self, tree: ast.Module, parents: dict) -> None:
        """A name some use reads as a PositionalSharding only (`s.shape`, `s.reshape(n)` with
        a computed shape) keeps its construct, reported."""
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
                continue
            if node.id not in self.names:
                continue
            bindings = self._scopes.bindings_at(self._scopes.offset(node), node.id)
            if len(bindings) != 1 or bindings[0].offset not in self.variables:
                continue
            parent = parents.get(node)
            if not isinstance(parent, ast.Attribute) or parent.attr in SHARDING_API:
                continue
            call = parents.get(parent)
            called = isinstance(call, ast.Call) and call.func is parent
            if called and parent.attr == RESHAPE and _shape(call) is not None:
                continue
            if called and parent.attr == REPLICATE and not call.args and not call.keywords:
                continue
            del self.variables[bindings[0].offset]
        self.names = set(self.variables.values())

    def uses_left(self, binding) -> tuple[bool, tuple[int, ...]]:
        """For the name an import binds (scopes.Binding): is every use the callee of a call
        rewritten here (then the import goes), and the lines of the uses left that are no type
        check or annotation (a guarded import keeps those working)."""
        left = [a for a in binding.accesses if a not in self.rewritten_names]
        if not binding.accesses:
            return False, ()
        names = {
            self._scopes.offset(n): n
            for n in ast.walk(self._scopes.tree)
            if isinstance(n, ast.Name) and n.id == binding.key
        }
        lines = tuple(
            sorted(
                {
                    names[a].lineno
                    for a in left
                    if a in names and not self._type_check_or_annotation(names[a])
                }
            )
        )
        return not left, lines

    def _type_check_or_annotation(self, node: ast.AST) -> bool:
        child, parent = node, getattr(self, "_parents", {}).get(node)
        while parent is not None:
            if isinstance(parent, ast.Tuple):
                child, parent = parent, self._parents.get(parent)
                continue
            if (
                isinstance(parent, ast.Call)
                and isinstance(parent.func, ast.Name)
                and parent.func.id in ("isinstance", "issubclass")
                and len(parent.args) == 2
                and parent.args[1] is child
            ):
                return True
            if isinstance(parent, ast.arg) and parent.annotation is child:
                return True
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return parent.returns is child
            if isinstance(parent, ast.AnnAssign):
                return parent.annotation is child
            if isinstance(parent, (ast.stmt, ast.arguments)):
                return False
            child, parent = parent, self._parents.get(parent)
        return False


def _shape(call: ast.Call) -> tuple[int, ...] | None:
    """`reshape(4, 1)` / `reshape((4, 1))`: the whole numbers, when all are literals."""
    args = call.args
    if call.keywords:
        return None
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        args = args[0].elts
    if not args or not all(
        isinstance(a, ast.Constant) and type(a.value) is int and a.value > 0 for a in args
    ):
        return None
    return tuple(a.value for a in args)
