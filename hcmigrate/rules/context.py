"""What a rule's rewrite receives: the site it rewrites and a context.

A context is everything a rule may ask about the module or do to it: `RuleContext` for the
sites of the rewrite, `ImportContext` for import statements once the rewrite is done,
`ReportContext` at the module's end. hcmigrate.codemod implements them; a rule never holds on
to one after it returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.rules.nodes import call_like, literal_value

if TYPE_CHECKING:
    from hcmigrate.codemod.host_functions import Adaptation
    from hcmigrate.codemod.legacy_names import LegacyRef
    from hcmigrate.options import Options
    from hcmigrate.codemod.result_shape import ShapeConverter
    from hcmigrate.diagnostics import Diagnostic
    from hcmigrate.jax_removals import RemovedApi
    from hcmigrate.rules.spec import Rule


class Remove:
    """Returned by a rewrite of a call that is a statement of its own: the statement goes."""

    def __repr__(self) -> str:
        return "REMOVE_STATEMENT"


REMOVE_STATEMENT = Remove()


@dataclass
class CallSite:
    """A call of a legacy function, with its arguments bound to the legacy parameter names."""

    function: str  # the legacy function ("id_tap")
    original: cst.Call  # the node as parsed (positions, names, the plan refer to it)
    updated: cst.Call  # the same call with the rewrites inside it already applied
    args: dict[str, cst.BaseExpression]  # updated argument values by legacy parameter name
    extra_keywords: dict[str, cst.BaseExpression] = field(default_factory=dict)  # id_print's
    value_used: bool = True  # False when the call is a statement of its own
    original_args: dict[str, cst.BaseExpression] = field(default_factory=dict)
    arg_nodes: dict[str, cst.Arg] = field(default_factory=dict)  # updated Args (layout, comments)

    def call_like(self, func: cst.BaseExpression, *args: tuple[cst.Arg, str | None]) -> cst.Call:
        """A new call laid out like this site's call; each argument that comes from a legacy
        argument (named by its parameter) keeps that argument's trailing comment."""
        return call_like(
            self.updated,
            func,
            [a for a, _ in args],
            [self.arg_nodes.get(o) if o else None for _, o in args],
        )

    def literal(self, param: str, default=None):
        """The Python value of a literal argument (True/False/None/number/str), else `...`."""
        if param not in self.args:
            return default
        return literal_value(self.args[param])


@dataclass
class UnbindableSite:
    """A call of a legacy function whose arguments cannot be bound statically."""

    function: str
    original: cst.Call
    updated: cst.Call
    why: str


@dataclass
class ReferenceSite:
    """A use of a legacy name other than as the callee of a rewritten call."""

    original: cst.BaseExpression
    updated: cst.BaseExpression
    ref: LegacyRef
    guard_fallback: bool  # its name is also what an import guard sets (`except: hcb = None`)


@dataclass
class ModernCallSite:
    """A call of a modern API object that a rule's trigger matched."""

    original: cst.Call
    updated: cst.Call
    qualified_names: set[str]
    value_used: bool


@dataclass
class RemovedApiSite:
    """A use of a removed JAX API (hcmigrate.rules.spec.RemovedJaxApi): `original` is the name
    or attribute (`jax.tree_map`, `jnp.round_`, `x.device_buffer`), the call (a removed
    keyword, `x.device()`, a call into a module whose behaviour changed) or the import
    statement (`from jax import tree_map`); `row` its row (for an import or a call, the first
    removed one it holds)."""

    row: RemovedApi
    original: cst.CSTNode
    updated: cst.CSTNode
    qualified: str = ""  # what the name refers to ("jax.numpy.round_"); "" for imports
    # imports: (alias, row, what it imports) for each name taken from a removed name or module
    aliases: tuple = ()
    # the module of the star import that bound the site's bare name ("jax.numpy" for `round_`
    # after `from jax.numpy import *`); "" where an import statement names it
    star_import: str = ""
    # a call whose callee reaches the function through a binding of the module (`clip =
    # jnp.clip`, a dict, a namespace, a parameter it is passed for):
    # hcmigrate.codemod.removed_aliases.Alias; None where the call names it
    via: object = None
    # the call is `functools.partial(F, ..., keyword=...)`: the removed keyword is bound there
    # (the function is its first argument, so no argument can be passed by F's positions)
    partial: bool = False

    @property
    def row_group(self) -> tuple[RemovedApi, ...]:
        """Every row of the same rule and name (`jax.numpy.clip`'s removed keywords)."""
        from hcmigrate.jax_removals import rows_of

        return tuple(r for r in rows_of(self.row.rule) if r.name == self.row.name)


@dataclass
class ImportSite:
    """An import statement binding legacy names (with --strategy compat, also a spelled-out
    use of the legacy module, `jax.experimental.host_callback.id_tap`)."""

    original: cst.Import | cst.ImportFrom | cst.Attribute
    updated: cst.Import | cst.ImportFrom | cst.Attribute


@dataclass
class ModuleSite:
    """A whole module, once it is migrated."""

    options: Options
    diagnostics: list[Diagnostic]  # what the module's sites reported
    text: str = ""  # the module's source
    tree: Any = None  # its ast.Module, when the pipeline parsed it (else None)
    code: str | None = None  # the module as migrated (None: as `text`)
    # (branch, line of its first host_callback name): branches for old JAX the rewrite left
    # as they are (hcmigrate.codemod.version_guards)
    kept_branches: tuple = ()


class ReportContext(Protocol):
    def report(
        self,
        rule: Rule,
        node: cst.CSTNode | None,
        message: str,
        level: Level | None = None,
        line: int = 1,
    ) -> None:
        """Record a diagnostic at `node` (None: at `line`), if `rule` is selected."""


class ImportContext(ReportContext, Protocol):
    """What an import rule may ask once the rewrite is done. Imports are cleaned up whatever
    rules are selected: deselecting a rule only hides its diagnostics."""

    reexports: dict[str, str]  # re-exported legacy names of the tree: "pkg.mod.name" -> legacy
    exported_here: frozenset[str]  # names other modules import from this one
    published_here: frozenset[str]  # of those, its `__all__` ("*": it hands out its namespace)
    passed_on: dict[str, tuple[str, ...]]  # legacy name -> other modules that re-export it

    def still_used(self, import_node: cst.CSTNode, bound: str) -> bool:
        """Is `bound`, as this import binds it, still used after the rewrite?"""

    def ever_used(self, import_node: cst.CSTNode, bound: str) -> bool:
        """Did the module use `bound`, as this import binds it, before the rewrite?"""

    def imported_elsewhere(self, import_node: cst.CSTNode, module: str) -> bool:
        """Does another import in the same scope bind `module` as such (`import jax`)?"""

    def star_names_still_used(self) -> bool:
        """Is a name the legacy star import provides still used after the rewrite?"""

    def suppressed(self, node: cst.CSTNode, code: str) -> bool:
        """Do `# noqa` / `# hcmigrate: ignore` comments keep `node` from rule `code`?"""

    def qualified(self, node: cst.CSTNode) -> set[str]:
        """The qualified names an expression may refer to."""

    def import_module(self, module: str) -> None:
        """Add `import module` to the module."""

    options: Options

    def at_module_level(self, node: cst.CSTNode) -> bool:
        """Is the import statement `node` a statement of the module itself (not in a block)?"""

    def use_module_helper(self, key: str) -> str:
        """The name of the module helper `key` (hcmigrate.codemod.module_helpers), written
        with the module."""

    def define_after_imports(self, key: str, name: str, source: str, imports=()) -> None:
        """Write `source` (a module helper's template: `{jax}` the module's name of jax, for
        (placeholder, module, alias) in `imports`), defining `name`, after the imports."""


class RuleContext(Protocol):
    """What a rule may ask about the module and do to it, while it rewrites one site."""

    # ---- reporting
    def report(
        self, rule: Rule, node: cst.CSTNode, message: str, level: Level | None = None
    ) -> None:
        """Record a diagnostic at `node`. The one gate of --select/--ignore and `# noqa` /
        `# hcmigrate: ignore`: for a site the rule may not touch it ends the rewrite (the site
        stays as it is, and nothing the rewrite asked for is kept)."""

    # ---- names and imports
    def modern(self, key: str) -> str:
        """How the module spells the modern API object `facts.MODERN[key]`; its import is
        added if the site is rewritten."""

    def dotted(self, name: str) -> str:
        """`name` (`jax.errors.JaxRuntimeError`), its root module imported if the site is
        rewritten."""

    def import_submodule(self, module: str) -> None:
        """`import module` (`jax.extend.core`, which `import jax` does not load) is added if
        the site is rewritten."""

    def reported(self, rule: Rule) -> bool:
        """Has a site of this module already reported `rule` (for one note per module)?"""

    def device_axis(self, site: CallSite) -> str | None:
        """The pmap axis whose index gives the site's tap its device, where the plan found
        one (hcmigrate.codemod.plan.Planner.device_of_shard)."""

    def returns_nothing(self, func: cst.BaseExpression | None) -> bool:
        """Does the host function visibly return None whatever it is given?"""

    def numpy(self) -> str:
        """The module's name for numpy (`np`, or its own alias), imported if the site is
        rewritten."""

    def qualified(self, node: cst.CSTNode) -> set[str]:
        """The qualified names an expression may refer to."""

    def use_helper(self, key: str) -> str:
        """The name of the module helper `key` (hcmigrate.codemod.module_helpers.HELPERS),
        defined once after the module's imports if the site is rewritten."""

    def module_binding(self, key: str, name: str, statement) -> str | None:
        """A module-level name bound by the statement `statement(name)` returns (its source
        text: a guarded import), added once after the module's imports if the site is
        rewritten; `name` where the module binds it nowhere the site sees, else a fresh name;
        None where the site's own scope binds the name chosen at an earlier site."""

    def fresh_name(self, base: str, *alternatives: str) -> str:
        """A name no statement of the module uses yet (`base`, then the `alternatives`, then
        `base_1`, ...)."""

    # ---- where the site stands, and statements around it
    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The node enclosing an original node."""

    def assignment_target(self, node: cst.CSTNode) -> str | None:
        """`name` when `node` is the whole value of a plain `name = node` statement line."""

    def is_returned(self, node: cst.CSTNode) -> bool:
        """`node` is the whole value of a `return` statement line of its own."""

    def insert_before(self, node: cst.CSTNode, statement: cst.BaseSmallStatement) -> None:
        """Run `statement` before the statement that holds `node`."""

    def insert_after(self, node: cst.CSTNode, statement: cst.BaseSmallStatement) -> None:
        """Run `statement` after the statement that holds `node`."""

    def replace_statement(self, node: cst.CSTNode) -> None:
        """The statement that holds `node` is replaced by what insert_before queued."""

    # ---- host functions, purity, shapes, target
    def adaptation(self, site: CallSite) -> Adaptation:
        """How the plan adapts the site's host function (hcmigrate.codemod.host_functions)."""

    def adapted_function(
        self, site: CallSite, adaptation: Adaptation, pass_transforms: bool
    ) -> cst.BaseExpression:
        """The site's host function, made callable as `f(arg)` as `adaptation` says."""

    def is_pure(self, func: cst.BaseExpression) -> bool:
        """Is the host function visibly free of side effects?"""

    def only_checks(self, func: cst.BaseExpression) -> bool:
        """Is the host function a check: free of side effects but the errors it raises?"""

    def tap_with_numpy_args(
        self,
        func: cst.BaseExpression,
        original: cst.BaseExpression | None,
        arg: cst.BaseExpression | None = None,
    ) -> cst.BaseExpression:
        """`func` called with numpy arrays and returning None (an io_callback with no result):
        `lambda x: (f(jax.tree.map(np.array, x)), None)[1]`, without the conversion where it
        cannot tell numpy from jax.Array (see `with_numpy_args`), without the `None` where it
        visibly returns None (a module function, `print`)."""

    @property
    def taps_join_ordered_io(self) -> bool:
        """Does the module have ordered io_callbacks and no transformation that an ordered
        io_callback cannot run under? Then its taps join that chain, in program order."""

    def visible_value(self, name: cst.Name) -> cst.BaseExpression | None:
        """The value of the one assignment `name = value` that binds an original `name` where
        it is used (None: not visibly one)."""

    def several_devices(self, node: cst.CSTNode | None = None) -> str | None:
        """Why the module runs on several devices: "the module uses pmap" (its code names a
        multi-device API), or "`step` runs under pmap (p.solver, line 12)" (another module of
        the run applies one to its function); None: neither. With `node` (an original site),
        a pmap counts only where it may run the code around that site (issue 37)."""

    def io_chain_blocker(self, node: cst.CSTNode | None = None) -> str | None:
        """What keeps the module's host calls (the one at `node`) off an ordered io_callback
        chain on several devices: "the module uses pmap", "it uses vmap" (a transformation an
        ordered io_callback fails under); None: nothing, and a module on several devices puts
        its taps, prints and calls there (Resolver.devices_join_io_chain)."""

    def patched_internal(self) -> str | None:
        """The legacy internal the module patches (`outside_call_p`), or None."""

    def module_names(self, word: str) -> bool:
        """Does the module's text name `word` (a whole word)?"""

    def imported_plainly(self, module: str, besides: cst.CSTNode) -> bool:
        """Does another top-level statement than `besides` (an import statement) import
        `module` as itself (`import jax`, no `as`)?"""

    def with_numpy_args(
        self,
        func: cst.BaseExpression,
        original: cst.BaseExpression | None,
        arg: cst.BaseExpression | None = None,
    ) -> cst.BaseExpression:
        """`func` (the adapted form of the site's `original` host function) called with numpy
        arrays, as legacy called it (writeable copies, inline: hcmigrate.codemod.numpy_args),
        unless it cannot tell them from jax.Array: it only hands them to numpy or scipy,
        ignores its arguments, or the site's `arg` is a literal without leaves (`None`)."""

    @property
    def module_has_ordered_io(self) -> bool:
        """Does the plan turn some legacy call of this module into an ordered io_callback?"""

    @property
    def taps_apart_from_ordered_io(self) -> bool:
        """Does the module have taps or prints that become ordered jax.debug callbacks, a
        chain apart from its ordered io_callbacks?"""

    @property
    def shapes(self) -> ShapeConverter:
        """Converts a legacy `result_shape` into ShapeDtypeStruct leaves."""

    def target_at_least(self, version: tuple[int, ...]) -> bool:
        """May the generated code use what JAX `version` introduced?"""

    def declared_at_least(self, version: tuple[int, ...]) -> bool:
        """Does the floor the project declares (before the run raises it) have what JAX
        `version` introduced? Where it does not and an older spelling does the same, that
        spelling is written. No floor known: no."""

    @property
    def target_jax(self) -> tuple[int, ...] | None:
        """The oldest JAX the project supports (--target-jax or its pin), if known."""
