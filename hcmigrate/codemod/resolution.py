"""What the module's nodes refer to, and where they stand: the questions every stage asks.

No libcst metadata: parents and positions come from hcmigrate.codemod.node_index (one code
generation pass) and names are resolved by hcmigrate.codemod.scopes on Python's ast, at a
fraction of what libcst's ScopeProvider, PositionProvider and ParentNodeProvider cost.
"""

from __future__ import annotations

import ast

import libcst as cst

from hcmigrate.codemod.device_reach import Span, per_device_spans
from hcmigrate.codemod.legacy_names import LegacyRef, classify, legacy_member
from hcmigrate.codemod.node_index import NodeIndex, root_name
from hcmigrate.codemod.scopes import LOCAL, QualifiedName, ScopeAnalysis
from hcmigrate.facts import IO_BREAKING_TRANSFORMS, LEGACY_PUBLIC_NAMES, MULTI_DEVICE_APIS
from hcmigrate.project_model.model import ProjectModel
from hcmigrate.project_model.module_facts import (
    PER_DEVICE,
    SEVERAL_DEVICES,
    ModuleFacts,
    facts_of,
)
from hcmigrate.rules.nodes import dotted_name


class Resolver:
    def __init__(
        self,
        index: NodeIndex,
        scopes: ScopeAnalysis,
        reexports: dict[str, str],
        runs_under: tuple[tuple[str, str, str], ...] = (),
        several_devices: bool = False,
        ordered_io_under_pmap: bool = False,
    ):
        self.index = index
        self.scopes = scopes
        self.reexports = reexports
        self._runs_elsewhere = runs_under  # hcmigrate.options.Options.runs_under
        self._runs_under: tuple[tuple[str, str, str], ...] | None = None
        self._several_devices_setting = several_devices  # Options.several_devices
        # The target JAX runs ordered io_callbacks under pmap (facts.ORDERED_IO_UNDER_PMAP_SINCE)
        self._ordered_io_under_pmap = ordered_io_under_pmap
        self._facts: ModuleFacts | None = None
        self.star_refs: dict[int, cst.Name] = {}  # names resolved through a legacy star import
        self._vmapped_names: dict[str, int] | None = None  # (_names_given_to_vmap)
        self._spans: dict[frozenset[str], list[Span] | None] = {}  # (_runs_per_device)

    # ---------------------------------------------------------------- names
    def qualified_names(self, node: cst.CSTNode) -> set[QualifiedName]:
        while isinstance(node, (cst.Call, cst.Subscript)):
            node = node.func if isinstance(node, cst.Call) else node.value
        full = dotted_name(node)
        if full is None:
            return set()
        while isinstance(node, cst.Attribute):
            node = node.value
        offset = self.index.start_offset(node)
        return set() if offset is None else self.scopes.qualified_names(offset, full)

    def qualified(self, node: cst.CSTNode) -> set[str]:
        return {q.name for q in self.qualified_names(node)}

    def legacy_ref(self, node: cst.CSTNode) -> LegacyRef | None:
        """What `node` is of the legacy API (None: nothing)."""
        if root_name(node) not in self.index.legacy_roots:
            return None  # cannot be bound to the legacy module: skip the scope query
        names = self.qualified_names(node)
        if not names and isinstance(node, cst.Name) and not self._is_attribute_name(node):
            if self.index.legacy_star and node.value in LEGACY_PUBLIC_NAMES:
                # bound by nothing but `from jax.experimental.host_callback import *`
                self.star_refs[id(node)] = node
                return LegacyRef(member=node.value)
            if node.value in self.index.star_names:
                # bound by a star import of a module that re-exports it (nothing to clean up)
                member = legacy_member(self.index.star_names[node.value])
                return None if member is False else LegacyRef(member=member)
            return None
        return classify(names, self.index.guard_fallbacks, self.reexports)

    def _is_attribute_name(self, name: cst.Name) -> bool:
        """Is `name` the attribute of `x.name` (bound by nothing: no star import binds it)?"""
        parent = self.parent(name)
        return isinstance(parent, cst.Attribute) and parent.attr is name

    @property
    def module_facts(self) -> ModuleFacts:
        """What the module's code says, read once (hcmigrate.project_model.module_facts)."""
        if self._facts is None:
            self._facts = facts_of(self.scopes.tree, "", False)
        return self._facts

    @property
    def runs_under(self) -> tuple[tuple[str, str, str], ...]:
        """(function, transformation, where) for the functions of the module that run under
        a transformation: applied in this module (followed through its own calls: a helper a
        vmapped function calls is vmapped too; `where` is "line N") or in another module of
        the run (Options.runs_under)."""
        if self._runs_under is None:
            model = ProjectModel()
            model.add(self.module_facts)
            own = tuple(
                (r.function, r.transform, r.where.partition(", ")[2])
                for r in model.runs_under(self.module_facts.name)
            )
            self._runs_under = own + self._runs_elsewhere
        return self._runs_under

    def several_devices(self, node: cst.CSTNode | None = None) -> str | None:
        """Why the module's code runs on several devices: the multi-device API its code names
        (not a docstring, comment or string), a function of it that another module of the
        run applies one to (hcmigrate.project_model), or the project says so (the
        `several-devices` setting); None: none of these. With `node` (a site), a pmap or xmap
        counts only where it runs the code around `node` (_runs_per_device)."""
        named = self.module_facts.names_in_code & set(MULTI_DEVICE_APIS)
        api = self.module_facts.multi_device_api
        if api is not None and not (
            named <= PER_DEVICE and not self._runs_per_device(node, frozenset(named))
        ):
            return f"the module uses {api}"
        for function, transform, where in self.runs_under:
            if transform in SEVERAL_DEVICES and not (
                transform in PER_DEVICE and not self._runs_per_device(node, frozenset({transform}))
            ):
                return f"`{function}` runs under {transform} ({where})"
        if self._several_devices_setting:
            return "the several-devices setting"
        return None

    def per_device(self, node: cst.CSTNode | None = None) -> str | None:
        """Why the module's code runs once per device where an ordered io_callback is refused
        too (pmap before jax 0.8, xmap: its code names one, or another module of the run
        applies one to a function of it); None: neither. With `node` (a site): only where
        that pmap or xmap runs the code around it (_runs_per_device)."""
        refused = PER_DEVICE - ({"pmap"} if self._ordered_io_under_pmap else set())
        for api in sorted(refused & self.module_facts.names_in_code):
            if self._runs_per_device(node, frozenset({api})):
                return f"the module uses {api}"
        for function, transform, where in self.runs_under:
            if transform in refused and self._runs_per_device(node, frozenset({transform})):
                return f"`{function}` runs under {transform} ({where})"
        return None

    def _runs_per_device(self, node: cst.CSTNode | None, apis: frozenset[str]) -> bool:
        """May the code around `node` run under one of `apis` (pmap, xmap): in a function the
        module or another module of the run gives to one, or one such a function calls or hands
        on (hcmigrate.codemod.device_reach)? True without `node`, and where that cannot be
        followed (the module as a whole, as before issue 37's econpizza finding)."""
        offset = None if node is None else self.index.start_offset(node)
        if offset is None:
            return True
        if apis not in self._spans:
            elsewhere = [f for f, transform, _ in self.runs_under if transform in apis]
            self._spans[apis] = per_device_spans(self.scopes.tree, apis, elsewhere)
        spans = self._spans[apis]
        if spans is None:
            return True
        text = self.index.text
        line_start = text.rfind("\n", 0, offset) + 1
        at = (self.index.line_at(offset), len(text[line_start:offset].encode()))  # (as ast's)
        return any((s[0], s[1]) <= at < (s[2], s[3]) for s in spans)

    def io_chain_blocker(self, node: cst.CSTNode | None = None) -> str | None:
        """What keeps the module's host calls off an ordered io_callback chain on several
        devices: the pmap it runs under ("the module uses pmap"), or a transformation an
        ordered io_callback fails under ("it uses vmap"); None: nothing. With `node`: the
        pmap only where it runs the code around that site."""
        transform = self.io_breaking_transform()
        return self.per_device(node) or (None if transform is None else f"it uses {transform}")

    def devices_join_io_chain(self, node: cst.CSTNode | None = None) -> bool:
        """Does the module run on several devices through sharded programs (sharded jit,
        shard_map; pmap too when the target JAX runs ordered io_callbacks there), using no
        transformation an ordered io_callback fails under? Then
        its taps, prints and calls are ordered io_callbacks, which run there as legacy's
        did (docs/callback-semantics.md, "Ordered callbacks on several devices"). With `node`
        (a site): a pmap counts only where it runs the code around it."""
        return self.several_devices(node) is not None and self.io_chain_blocker(node) is None

    def io_breaking_transform(self) -> str | None:
        """The first transformation of facts.IO_BREAKING_TRANSFORMS the module's code names
        or another module of the run applies to a function of it (None: none)."""
        for transform in IO_BREAKING_TRANSFORMS:
            if self.runs_under_any((transform,)):
                return transform
        return None

    def runs_under_any(self, transforms) -> bool:
        """Does the module's code name one of `transforms` (`vmap`, `grad`: code, not its
        strings), or does another module of the run apply one to a function of it?"""
        return not self.module_facts.names_in_code.isdisjoint(transforms) or any(
            transform in transforms for _, transform, _ in self.runs_under
        )

    def patched_internal(self) -> str | None:
        """The legacy internal (facts.PATCHED_INTERNALS) the module's code names, if any."""
        return self.module_facts.patched_internal

    def is_guard_fallback(self, node: cst.CSTNode) -> bool:
        """Is `node`'s root name one an import guard sets (`except ImportError: hcb = None`)?"""
        return root_name(node) in self.index.guard_fallbacks

    def function_def(self, name: cst.Name) -> cst.FunctionDef | None:
        """The module's one `def` that `name` refers to, if it refers to exactly one."""
        offset = self.index.start_offset(name)
        bindings = self.scopes.bindings_at(offset, name.value) if offset is not None else []
        if len(bindings) != 1 or not bindings[0].is_def:
            return None
        node = self.parent(self.index.name_at(bindings[0].offset))
        return node if isinstance(node, cst.FunctionDef) else None

    def _only_binding(self, name: cst.Name) -> cst.Name | None:
        """The Name that binds `name` where it is used, when exactly one (not a def, not an
        import) does."""
        offset = self.index.start_offset(name)
        bindings = self.scopes.bindings_at(offset, name.value) if offset is not None else []
        if len(bindings) != 1 or bindings[0].kind != LOCAL or bindings[0].is_def:
            return None
        return self.index.name_at(bindings[0].offset)

    def visible_value(self, name: cst.Name) -> cst.BaseExpression | None:
        """The value of the one assignment `name = value` that binds `name` where it is used."""
        bound = self._only_binding(name)
        target = self.parent(bound) if bound is not None else None
        assign = self.parent(target) if isinstance(target, cst.AssignTarget) else None
        if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and target.target is bound:
            return assign.value
        return None

    def is_jitted_parameter(self, name: cst.Name) -> bool:
        """Is `name` a parameter of a function decorated with `jax.jit` (so a traced array)?"""
        bound = self._only_binding(name)
        param = self.parent(bound) if bound is not None else None
        if not isinstance(param, cst.Param):
            return False
        fdef = self.parent(self.parent(param))
        return isinstance(fdef, cst.FunctionDef) and any(
            self._jits_every_argument(d.decorator) for d in fdef.decorators
        )

    def _jits_every_argument(self, decorator: cst.BaseExpression) -> bool:
        """`@jax.jit`, `@jax.jit(...)` or `@partial(jax.jit, ...)` with no static argument."""
        if not isinstance(decorator, cst.Call):
            return "jax.jit" in self.qualified(decorator)
        if any(
            a.keyword is not None and a.keyword.value.startswith("static") for a in decorator.args
        ):
            return False
        if "jax.jit" in self.qualified(decorator.func):
            return True
        first = decorator.args[0].value if decorator.args else None
        return first is not None and "jax.jit" in self.qualified(first)

    # ---------------------------------------------------------------- transformations seen
    def vmapped_at(self, node: cst.CSTNode) -> int | None:
        """The line of the `jax.vmap` that visibly runs the function `node` is in, or a
        function around it: a lambda given to it, a def given to it by name or decorated with
        it (`@jax.vmap`, `@partial(jax.vmap, ...)`). None: none this module shows."""
        given = self._names_given_to_vmap()
        ancestor = self.parent(node)
        while ancestor is not None:
            if isinstance(ancestor, cst.Lambda):
                call = self._vmap_given(ancestor)
                if call is not None:
                    return self.index.start(call)[0]
            if isinstance(ancestor, cst.FunctionDef):
                if ancestor.name.value in given:
                    return given[ancestor.name.value]
                for d in ancestor.decorators:
                    if self._is_vmap(d.decorator):
                        return self.index.start(d.decorator)[0]
            ancestor = self.parent(ancestor)
        return None

    def vmapped_elsewhere(self, node: cst.CSTNode) -> str | None:
        """Where another module of the run applies `jax.vmap` to a function around `node`
        (directly or through the calls the code shows: hcmigrate.project_model), as
        "p.solver, line 12"; None: the project model saw none."""
        vmapped = {f: where for f, transform, where in self.runs_under if transform == "vmap"}
        if not vmapped:
            return None
        names = []
        ancestor = self.parent(node)
        while ancestor is not None:
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                names.insert(0, ancestor.name.value)
            ancestor = self.parent(ancestor)
        for cut in (1, 2):  # a module-level def, or a method (`Class.method`)
            if len(names) >= cut and ".".join(names[:cut]) in vmapped:
                return vmapped[".".join(names[:cut])]
        return None

    def _is_vmap(self, expr: cst.BaseExpression) -> bool:
        """`jax.vmap`, or `partial(jax.vmap, ...)`."""
        if isinstance(expr, cst.Call):
            first = expr.args[0].value if expr.args else None
            return (
                "functools.partial" in self.qualified(expr.func)
                and first is not None
                and "jax.vmap" in self.qualified(first)
            )
        return "jax.vmap" in self.qualified(expr)

    def _vmap_given(self, function: cst.CSTNode) -> cst.Call | None:
        """The `jax.vmap(function, ...)` call `function` is the first argument of, if any."""
        arg, call = self.parent(function), None
        if isinstance(arg, cst.Arg) and arg.keyword is None and arg.star == "":
            call = self.parent(arg)
        if isinstance(call, cst.Call) and call.args[0] is arg and self._is_vmap(call.func):
            return call
        return None

    def _names_given_to_vmap(self) -> dict[str, int]:
        """name -> line of each `vmap(name, ...)` / `jax.vmap(name, ...)` in the module, read
        from Python's ast of the whole text (statements without a legacy call are not parsed
        by libcst: hcmigrate.codemod.partial_parse)."""
        if self._vmapped_names is None:
            self._vmapped_names = {}
            for node in ast.walk(self.scopes.tree):
                if (
                    isinstance(node, ast.Call)
                    and node.args
                    and isinstance(node.args[0], ast.Name)
                    and (
                        (isinstance(node.func, ast.Name) and node.func.id == "vmap")
                        or (isinstance(node.func, ast.Attribute) and node.func.attr == "vmap")
                    )
                ):
                    self._vmapped_names.setdefault(node.args[0].id, node.lineno)
        return self._vmapped_names

    # ---------------------------------------------------------------- where nodes stand
    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.index.parents.get(id(node))

    def value_used(self, call: cst.Call) -> bool:
        return not isinstance(self.parent(call), cst.Expr)

    def enclosing_statement(self, node: cst.CSTNode) -> cst.CSTNode | None:
        while node is not None and not isinstance(
            node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)
        ):
            node = self.parent(node)
        return node

    def inside(self, node: cst.CSTNode, ancestor: cst.CSTNode) -> bool:
        """Is the original `node` below `ancestor` (or `ancestor` itself)?"""
        while node is not None:
            if node is ancestor:
                return True
            node = self.parent(node)
        return False

    def assignment_target(self, node: cst.CSTNode) -> str | None:
        assign = self.parent(node)
        if (
            not isinstance(assign, cst.Assign)
            or len(assign.targets) != 1
            or not isinstance(assign.targets[0].target, cst.Name)
        ):
            return None
        line = self.parent(assign)
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return None
        return assign.targets[0].target.value

    def is_returned(self, node: cst.CSTNode) -> bool:
        ret = self.parent(node)
        line = self.parent(ret) if isinstance(ret, cst.Return) else None
        return isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1

    def with_ancestors(self, nodes) -> set[int]:
        """Ids of `nodes` (original ones) and of every node above them, up to the module."""
        found: set[int] = set()
        for node in nodes:
            while node is not None and id(node) not in found:
                found.add(id(node))
                node = self.parent(node)
        return found
