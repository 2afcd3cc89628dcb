"""The context a rule's rewrite receives (hcmigrate.rules.context.RuleContext), for one module.

Each site runs as a small transaction (`run_site`): the diagnostics, imports and statement edits
its rewrite asks for are kept only if the site is handled (a rule reported or rewrote it), and
only while the rewrite's result is still part of the module: when an enclosing site's rewrite
drops the node an inner site produced (`barrier_wait(logging_name=str(hcb.CallbackFlavor.X))`
loses its argument), the inner site's diagnostics, imports and edits are dropped with it.
"""

from __future__ import annotations

import ast
import re

from dataclasses import dataclass, field

import libcst as cst

from hcmigrate.options import Options
from hcmigrate.codemod.dispatch import Dispatch
from hcmigrate.codemod.host_functions import (
    Adaptation,
    adapted_function,
    has_no_leaves,
    returns_nothing,
    takes_arrays_as_they_come,
)
from hcmigrate.codemod.comments import comments_lost
from hcmigrate.codemod.context_parts import NamesContext, StatementsContext
from hcmigrate.codemod.hoisting import Hoisting, LambdaDefs
from hcmigrate.codemod.import_names import ImportNames
from hcmigrate.codemod.module_helpers import HelperDef
from hcmigrate.codemod.node_index import NodeIndex
from hcmigrate.codemod.numpy_args import callee, called_with_numpy, without_result
from hcmigrate.codemod.plan import Plan, is_pure
from hcmigrate.codemod.reporting import Reporter, SiteSkipped
from hcmigrate.codemod.resolution import Resolver
from hcmigrate.codemod.result_shape import ShapeConverter
from hcmigrate.codemod.scopes import ScopeAnalysis
from hcmigrate.codemod.statement_edits import StatementEdits
from hcmigrate.codemod.walk import descendants, names_used
from hcmigrate.native_needs import SINCE
from hcmigrate.diagnostics import Diagnostic, Level
from hcmigrate.project_model.x64_mode import FLAG, may_run_as_script, x64_switch

from hcmigrate.facts import (
    IO_BREAKING_TRANSFORMS,
    ORDERED_IO_UNDER_PMAP_SINCE,
)
from hcmigrate.rules.context import REMOVE_STATEMENT, CallSite
from hcmigrate.rules.nodes import parse
from hcmigrate.rules.values import last_name, tapped_name
from hcmigrate.rules.registry import Registry
from hcmigrate.rules.spec import Handler, Rule


_TAPS = frozenset({"id_tap", "id_print"})

Import = tuple[str, "str | None", "str | None"]  # (module, name or None, alias or None)


@dataclass(eq=False)
class SiteRecord:
    """What one handled site asked for, and what its rewrite produced."""

    original: cst.CSTNode
    output: cst.CSTNode | None = None  # None: the statement holding it was removed
    diagnostics: list[Diagnostic] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)  # keys of hcmigrate.codemod.module_helpers
    queued: list[cst.CSTNode] = field(default_factory=list)  # statements it added
    inner: list["SiteRecord"] = field(default_factory=list)  # sites whose output it kept
    retracted: bool = False

    def retract(self) -> None:
        self.retracted = True
        for record in self.inner:
            record.retract()


def at_least(version: tuple[int, ...], since: tuple[int, ...]) -> bool:
    """Is `version` (`jax>=0.8` reads (0, 8)) at least `since` ((0, 8, 0))?"""
    version = tuple(version)
    return version + (0,) * (len(since) - len(version)) >= since


class ModuleContext(NamesContext, StatementsContext):
    """The context of one module's rewrite: its site transactions here, the names and
    statements parts of hcmigrate.rules.context.RuleContext in the mixins."""

    def __init__(
        self, index: NodeIndex, scopes: ScopeAnalysis, options: Options, registry: Registry
    ):
        self.options = options
        self.resolver = Resolver(
            index,
            scopes,
            dict(options.reexports),
            options.runs_under,
            options.several_devices,
            ordered_io_under_pmap=options.target_jax is None
            or at_least(options.target_jax, ORDERED_IO_UNDER_PMAP_SINCE),
        )
        self.reporter = Reporter(index, options)
        self.edits = StatementEdits()
        self.plan = Plan()
        self.dispatch = Dispatch(self, registry)
        self.replaced: set[int] = set()  # ids of original nodes a rewrite replaced or removed
        self.rebuilt: dict[int, cst.CSTNode] = {}  # id(node of the rewritten tree) -> original
        self._records: list[SiteRecord] = []
        self._open: list[SiteRecord] = []  # handled sites no enclosing site has handled yet
        self._record: SiteRecord | None = None  # the site being rewritten
        self._site: cst.CSTNode | None = None  # (positions of nodes a rule built)
        self._module_imports: list[Import] = []
        self._module_helpers: list[str] = []  # (helpers the import clean-up asked for)
        self._module_diagnostics: list[Diagnostic] = []
        self._names: set[str] | None = None
        self._next_suffix: dict[str, int] = {}  # base of a fresh name -> the suffix to try next
        # module-level statements a rule asked for by key (`module_binding`): key -> (name, helper)
        self.module_bindings: dict[str, tuple] = {}
        self.hoisting = Hoisting(
            self.resolver, lambda call: self.dispatch.legacy_function(call) is not None
        )
        self.lambda_defs = LambdaDefs(self.resolver, self.edits, self.fresh_name)
        self.names = ImportNames(scopes, self.fresh_name)
        self._x64_module: tuple | None = None  # (its own x64 Switch or None, may run as a script)

    # ------------------------------------------------------------------ sites
    def run_site(self, handlers: list[Handler], site, original, updated):
        """The first of `handlers` that reports or rewrites the site handles it; the result is
        the site's new node (`updated`: unchanged), or REMOVE_STATEMENT."""
        self._site = original
        for handler in handlers:
            record = self._record = SiteRecord(original)
            try:
                result = handler(site, self)
            except SiteSkipped:
                record.retracted = True
                return updated
            finally:
                self._record = None
            if result is None and not record.diagnostics:
                record.retracted = True  # declined: the next handler may take the site
                continue
            if result is REMOVE_STATEMENT or (result is not None and result is not updated):
                self.replaced.add(id(original))
            record.output = (
                None if result is REMOVE_STATEMENT else updated if result is None else result
            )
            if result is not None and result is not REMOVE_STATEMENT and result is not updated:
                self._keep_lost_comments(record, updated)
            self._close_inner_sites(record)
            self._records.append(record)
            self._open.append(record)
            return updated if result is None else result
        return updated

    def _keep_lost_comments(self, record: SiteRecord, updated: cst.CSTNode) -> None:
        """Comments of the site (`updated`: its inner sites already rewritten) that neither its
        output nor the statements it queued hold go above its statement: a call split into a
        callback and its value, or moved before its statement, keeps every comment."""
        missing = comments_lost(updated, [record.output, *record.queued])
        statement = self.resolver.enclosing_statement(record.original)
        if missing and statement is not None:
            self.edits.keep_comments(statement, missing, record)

    def _close_inner_sites(self, outer: SiteRecord) -> None:
        """Sites are handled children first: the open ones inside `outer` are the last ones.
        Those whose output `outer`'s rewrite no longer holds are retracted."""
        inner = []
        while self._open and self.resolver.inside(self._open[-1].original, outer.original):
            inner.append(self._open.pop())
        if not inner:
            return
        roots = [*([outer.output] if outer.output is not None else []), *outer.queued]
        kept = [node for root in roots for node in descendants(root)]
        kept_ids = {id(node) for node in kept}
        for record in inner:
            output = record.output
            if output is not None and (
                id(output) in kept_ids
                # (a rewrite may rebuild what it keeps from its text: same nodes, new objects)
                or any(type(node) is type(output) and node.deep_equals(output) for node in kept)
            ):
                outer.inner.append(record)
            else:
                record.retract()

    def left_in_place(self) -> set[int]:
        """The ids of original sites a kept record left as they were (a manual finding): the
        legacy names in them are still used, inside a rewritten call too."""
        return {
            id(r.original)
            for r in self._records
            if not r.retracted and r.output is not None and id(r.original) not in self.replaced
        }

    @property
    def diagnostics(self) -> list[Diagnostic]:
        live = [d for r in self._records if not r.retracted for d in r.diagnostics]
        return live + self._module_diagnostics

    @property
    def imports(self) -> list[Import]:
        """The imports the kept rewrites need, in the order they were asked for."""
        live = [i for r in self._records if not r.retracted for i in r.imports]
        return live + self._module_imports

    @property
    def helpers(self) -> list[str]:
        """The module helpers the kept rewrites call (and the import clean-up's definitions)."""
        return [
            *(h for r in self._records if not r.retracted for h in r.helpers),
            *self._module_helpers,
        ]

    def define_after_imports(self, key: str, name: str, source: str, imports=()) -> None:
        """A module-level definition of `name` (`source`, a HelperDef template), written after
        the module's imports as the helpers are: the import clean-up's native definition of a
        name other modules import from here."""
        self.module_bindings[key] = (name, HelperDef(name, source, tuple(imports)))
        self._module_helpers.append(key)

    def use_module_helper(self, key: str) -> str:
        """The name of the module helper `key`, written with the module (no site owns it)."""
        self._module_helpers.append(key)
        return self._helper(key).name

    def note_rebuilt(self, original: cst.CSTNode, result) -> None:
        """What the rewrite rebuilt from `original` (the clean-up finds the imports through it)."""
        for node in result.nodes if isinstance(result, cst.FlattenSentinel) else (result,):
            if node is not original and isinstance(node, cst.CSTNode):
                self.rebuilt[id(node)] = original

    # ------------------------------------------------------------------ RuleContext: reports
    def report(
        self, rule: Rule, node: cst.CSTNode, message: str, level: Level | None = None
    ) -> None:
        self.reporter.check(rule, node)
        diagnostic = self.reporter.diagnostic(rule, node, message, level, self._site)
        self._record.diagnostics.append(diagnostic)
        if diagnostic.level is Level.MANUAL and self.options.add_todos:
            statement = self.resolver.enclosing_statement(node)
            if statement is not None:
                self.edits.add_todo(statement, f"{rule.code} {message}", self._record)

    def reported(self, rule: Rule) -> bool:
        return any(d.code == rule.code for d in self.diagnostics)

    def report_for_module(
        self, rule: Rule, node: cst.CSTNode | None, message: str, level: Level | None = None
    ) -> None:
        """A diagnostic that no site owns (import clean-up): shown if the rule is selected."""
        if self.reporter.selected(rule.code):
            self._module_diagnostics.append(
                self.reporter.diagnostic(rule, node, message, level, self._site)
            )

    def import_module(self, module: str) -> None:
        self._module_imports.append((module, None, None))

    # ------------------------------------------------------------------ RuleContext: the rest
    def adaptation(self, site: CallSite) -> Adaptation:
        return self.plan.adaptations.get(id(site.original), Adaptation("as_is"))

    def device_axis(self, site: CallSite) -> str | None:
        return self.plan.device_axes.get(id(site.original))

    def returns_nothing(self, func: cst.BaseExpression | None) -> bool:
        return func is not None and returns_nothing(self.resolver, func)

    def adapted_function(
        self, site: CallSite, adaptation: Adaptation, pass_transforms: bool
    ) -> cst.BaseExpression:
        return adapted_function(site, adaptation, pass_transforms, self.fresh_name)

    def is_pure(self, func: cst.BaseExpression) -> bool:
        return is_pure(self.resolver, func)

    def only_checks(self, func: cst.BaseExpression) -> bool:
        return is_pure(self.resolver, func, allow_raise=True)

    def visible_value(self, name: cst.Name) -> cst.BaseExpression | None:
        return self.resolver.visible_value(name)

    def several_devices(self, node: cst.CSTNode | None = None) -> str | None:
        return self.resolver.several_devices(node)

    def io_chain_blocker(self, node: cst.CSTNode | None = None) -> str | None:
        return self.resolver.io_chain_blocker(node)

    def patched_internal(self) -> str | None:
        return self.resolver.patched_internal()

    def module_names(self, word: str) -> bool:
        return re.search(rf"\b{re.escape(word)}\b", self.resolver.index.text) is not None

    def imported_plainly(self, module: str, besides: cst.CSTNode) -> bool:
        start = self.resolver.index.start(besides)
        for statement in self.resolver.scopes.tree.body:  # (the module's ast)
            if not isinstance(statement, ast.Import) or (
                start is not None and statement.lineno == start[0]
            ):
                continue
            if any(a.asname is None and a.name == module for a in statement.names):
                return True
        return False

    def with_numpy_args(
        self,
        func: cst.BaseExpression,
        original: cst.BaseExpression | None,
        arg: cst.BaseExpression | None = None,
    ) -> cst.BaseExpression:
        if not self._tells_numpy_apart(original, arg):
            return func
        return called_with_numpy(func, self._numpy_copies, self._lambda_parameter(func))

    def tap_with_numpy_args(
        self,
        func: cst.BaseExpression,
        original: cst.BaseExpression | None,
        arg: cst.BaseExpression | None = None,
    ) -> cst.BaseExpression:
        parameter = self._lambda_parameter(func)
        if original is None or self._tells_numpy_apart(original, arg):
            func = called_with_numpy(func, self._numpy_copies, parameter)
        if original is not None and returns_nothing(self.resolver, original):
            return func
        if isinstance(original, cst.Lambda) and isinstance(original.body, cst.Call):
            original = original.body.func  # (`lambda v: bar.update(v)`: `tap_update`)
        base = f"tap_{last_name(original) or ''}".rstrip("_")
        # (a second such def in the module says what it taps: `tap_send_tokens`)
        what = tapped_name(arg)
        names = (base, f"{base}_{what}") if what else (base,)
        return self._def_before_site(func, parameter, names) or without_result(func, parameter)

    def _def_before_site(
        self, func: cst.BaseExpression, parameter, names: tuple[str, ...]
    ) -> cst.Name | None:
        """A def placed before the site's statement that calls `func` and returns nothing
        (`def tap_show(x):` / `show(jax.tree.map(np.array, x))`), as a person would write
        it; None where no def can go there (a class body, a comprehension, a lambda whose
        parameters `func` uses)."""
        statement = self.resolver.enclosing_statement(self._site)
        if not isinstance(statement, cst.SimpleStatementLine):
            return None
        used = names_used(func)
        node = self.resolver.parent(self._site)
        while node is not statement:
            if isinstance(node, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
                return None
            if isinstance(node, cst.Lambda) and used & names_used(node.params):
                return None
            node = self.resolver.parent(node)
        block = owner = self.resolver.parent(statement)
        while not isinstance(owner, (cst.FunctionDef, cst.Module)):
            if owner is None or isinstance(owner, cst.ClassDef):
                return None  # (a def in a class body would be a method of the class)
            owner = self.resolver.parent(owner)
        if isinstance(func, cst.Lambda):
            params, body = func.params, func.body.with_changes(lpar=[], rpar=[])
        else:
            name = parameter()
            params = cst.Parameters([cst.Param(cst.Name(name))])
            body = cst.Call(callee(func), [cst.Arg(cst.Name(name))])
        first_in_block = isinstance(block, cst.IndentedBlock) and block.body[0] is statement
        definition = cst.FunctionDef(
            name=cst.Name(self.fresh_name(*names)),
            params=params,
            body=cst.IndentedBlock([cst.SimpleStatementLine([cst.Expr(body)])]),
            leading_lines=[] if first_in_block else [cst.EmptyLine(indent=False)],
        )
        self.edits.insert_before(statement, definition, self._record)
        self._record.queued.append(definition)
        return definition.name

    def _numpy_copies(self, arg: cst.BaseExpression) -> cst.BaseExpression:
        """`jax.tree.map(np.array, arg)` in the module's spellings (`jax.tree_util.tree_map`
        below the JAX that has `jax.tree`, as the project declares it: no floor is raised)."""
        if self.declared_at_least(SINCE["jax.tree.map"]):
            tree_map = self.modern("tree_map")
        else:
            tree_map = self.dotted("jax.tree_util.tree_map")
        numpy, needed = self.names.local_name(
            "numpy", alias=self.options.numpy_alias, at=self._site_offset()
        )
        self._record.imports.append(needed)
        return cst.Call(parse(tree_map), [cst.Arg(parse(f"{numpy}.array")), cst.Arg(arg)])

    def _lambda_parameter(self, func: cst.BaseExpression):
        """The parameter of a lambda made around `func`: `x`, or `arg` where the site or `func`
        uses `x` (`lambda x: io_callback(lambda x: ...` would read as the same `x`), ..."""

        def name() -> str:
            used = names_used(func) | names_used(self._site)
            free = [name for name in ("x", "arg", "value") if name not in used]
            return free[0] if free else self.fresh_name("x")

        return name

    def _tells_numpy_apart(
        self, original: cst.BaseExpression | None, arg: cst.BaseExpression | None
    ) -> bool:
        """May the host function see whether it got numpy arrays or jax.Array? Not when it
        gets no array (`None`), ignores its arguments, or only hands them to numpy."""
        return not (
            original is None
            or has_no_leaves(arg)
            or takes_arrays_as_they_come(self.resolver, original)
        )

    @property
    def module_has_ordered_io(self) -> bool:
        return self.plan.module_has_ordered_io

    @property
    def taps_apart_from_ordered_io(self) -> bool:
        names = self.resolver.module_facts.names_in_code
        return not names.isdisjoint(_TAPS) and not self.taps_join_ordered_io

    @property
    def taps_join_ordered_io(self) -> bool:
        return self.plan.module_has_ordered_io and not self.resolver.runs_under_any(
            IO_BREAKING_TRANSFORMS
        )

    @property
    def shapes(self) -> ShapeConverter:
        return ShapeConverter(
            self.modern,
            self.resolver.qualified,
            use_helper=self.use_helper,
            visible_value=self.resolver.visible_value,
            traced_parameter=self.resolver.is_jitted_parameter,
            x64_on=self._x64_on(self._site),
        )

    def _x64_on(self, site: cst.CSTNode | None) -> str | None:
        """Where 64-bit mode is turned on before the code of `site` runs (None: not known):
        by the module above the site, or by a package above the module when it is imported
        (Options.x64_on_import), unless the module may also run as a script."""
        if self._x64_module is None:
            tree = self.resolver.scopes.tree
            found = x64_switch(tree) if FLAG in self.resolver.index.text else None
            self._x64_module = (found, may_run_as_script(tree))
        own, script = self._x64_module
        start = None if site is None else self.resolver.index.start(site)
        if own is not None and start is not None and start[0] > own.line:
            return f"line {own.line} of this module"
        return None if script else self.options.x64_on_import

    def target_at_least(self, version: tuple[int, ...]) -> bool:
        return self.options.target_jax is None or at_least(self.options.target_jax, version)

    def declared_at_least(self, version: tuple[int, ...]) -> bool:
        # No floor known (no --target-jax, no jax pin the run could read, or no project owning
        # the file: praxis keeps its metadata in a folder beside its code, and its CI installs
        # jax 0.3.25): the spelling that works on every JAX where the table has one
        # (`jax.tree_util.tree_map`, not `jax.tree.map`, which needs 0.4.25). The host_callback
        # rewrite still targets current JAX (target_at_least).
        declared = self.options.declared_jax
        if declared is None:
            declared = self.options.target_jax
        return declared is not None and at_least(declared, version)

    @property
    def target_jax(self) -> tuple[int, ...] | None:
        return tuple(self.options.target_jax) if self.options.target_jax is not None else None
