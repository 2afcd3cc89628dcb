"""Migrating one module, stage by stage.

1. parse (hcmigrate.codemod.parsing): libcst parses the statements a rule may read or change,
   Python's ast the whole module for the scopes; the node index (hcmigrate.codemod.node_index)
   notes parents, positions, names and calls, and the local names an import of the legacy
   module bound. Modules where no rule can apply stop here.
2. plan (hcmigrate.codemod.plan): the rules' plan hooks see every legacy call first.
3. rewrite (hcmigrate.codemod.rewrite): every site goes to the handlers the registry
   (hcmigrate.rules.registry) has for it, through the module's context
   (hcmigrate.codemod.context), the single gate of --select/--ignore and suppressions.
4. imports (hcmigrate.codemod.import_passes): import statements go to the import rules, and the
   imports the new code needs are added once at the top (hcmigrate.codemod.add_imports).
5. print, copying the top-level statements no rule touched from the source; the
   lines the codemod wrote are laid out as the project's formatter would (hcmigrate.codemod.layout); a
   rewrite that does not compile is refused.

With --strategy compat, stages 2-3 are replaced by one pass that points imports at the compat
runtime and runs the removed-JAX-API rules (which apply under every strategy).
"""

from __future__ import annotations

import contextlib
import gc
import re
from dataclasses import replace

import libcst as cst

from hcmigrate.native_needs import needs_of
from hcmigrate.projects.targets import never_reaches
from hcmigrate.options import MigrationResult, Options
from hcmigrate.codemod.add_imports import add_imports, in_file_order
from hcmigrate.codemod.context import ModuleContext
from hcmigrate.codemod.layout import format_written_lines
from hcmigrate.codemod.line_diff import source_line
from hcmigrate.codemod.module_helpers import (
    add_helpers,
    aliases_bound_by_guarded_imports,
    merged_guarded_imports,
    indent_unit,
    shared_imports,
    space_new_guarded_imports,
)
from hcmigrate.codemod.import_passes import CleanUpImports, ImportRulesContext, PointAtCompat
from hcmigrate.codemod.node_index import NodeIndex
from hcmigrate.codemod.partial_parse import VerbatimStatement
from hcmigrate.codemod.parsing import (
    might_use_host_callback,
    might_call_removed_exports,
    parse_partially,
    parse_whole,
    printed_back_error,
)
from hcmigrate.codemod.plan import make_plan
from hcmigrate.codemod.version_guards import in_kept_branch, in_legacy_branch, kept_branches
from hcmigrate.codemod.rewrite import Rewriter
from hcmigrate.codemod.scopes import ScopeAnalysis
from hcmigrate.codemod.usage import Usage
from hcmigrate.codemod.reporting import selected
from hcmigrate.diagnostics import Diagnostic, Level
from hcmigrate.errors import MigrationError
from hcmigrate.facts import NATIVE_OUTPUT_SINCE
from hcmigrate.rules.context import ModuleSite
from hcmigrate.rules.registry import Registry, registry as the_registry
from hcmigrate.rules.spec import Rule
from hcmigrate.syntax import compile_error


def migrate(
    text: str, options: Options, *, filename: str = "<string>", top_level_await: bool = False
) -> MigrationResult:
    """Migrate one module's source text (see hcmigrate.api.migrate_source)."""
    with _collector_paused():
        return _migrate(text, options, filename, top_level_await)


@contextlib.contextmanager
def _collector_paused():
    """The cyclic garbage collector off while one module migrates (as it was after). What a
    migration builds lives until its end and holds no cycles (libcst's nodes are immutable
    trees), yet each full collection walks all of it again: in a module of 1,000 taps the
    collections cost a sixth of the migration, and more the more sites (docs/performance.md)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _migrate(text: str, options: Options, filename: str, top_level_await: bool) -> MigrationResult:
    registry = the_registry()
    may_use = might_use_host_callback(text, options, registry.words)
    parsed = parse_partially(text, options, filename, registry.words) if may_use else None
    if parsed is None:
        # (a file that cannot use the API still gets its syntax checked)
        module = parse_whole(text, filename)
        if not may_use:
            return _result(text, text, [], options, registry)
        index, scopes = NodeIndex(module, dict(options.reexports)), None
    else:
        module, index, scopes = parsed
    if index.text != text:  # (libcst drops a blank line before a trailing indented comment)
        raise printed_back_error(text, index.text)
    if not index.worth_migrating(registry.words) and not might_call_removed_exports(
        text, options
    ):  # e.g. "host_callback" only in a comment
        return _result(text, text, [], options, registry)
    if scopes is None:
        try:
            scopes = ScopeAnalysis(text)
        except (SyntaxError, ValueError) as error:  # libcst accepts a few things CPython does not
            raise MigrationError(
                f"syntax error: {getattr(error, 'msg', error)}",
                getattr(error, "lineno", 1) or 1,
                getattr(error, "offset", 1) or 1,
            ) from None
    try:
        new_module, diagnostics = migrate_module(module, options, index, scopes, registry)
    except (RecursionError, MemoryError):
        raise
    except Exception as error:  # a bug of ours must never cost the user their file
        raise MigrationError(
            f"internal error ({type(error).__name__}: {error}); file left unchanged — please report it"
        ) from error
    kept_barriers = _barriers_beside_legacy_sites(diagnostics, options)
    if kept_barriers:  # (the module is migrated again with those barriers left as they are)
        options = replace(options, dropped_sites=options.dropped_sites | kept_barriers)
        return _migrate(text, options, filename, top_level_await)
    code, _ = index.print_module(new_module)
    beyond_cap = _sites_beyond_the_projects_cap(code, diagnostics, options)
    if beyond_cap:  # (migrated again with the module's rewrites left as they are)
        options = replace(options, dropped_sites=options.dropped_sites | beyond_cap)
        return _migrate(text, options, filename, top_level_await)
    if options.lay_out:
        code = format_written_lines(
            text,
            code,
            options.line_length,
            scopes.tree,
            options.yapf_style,
            line_length_stated=options.line_length_stated,
        )
    diagnostics = sorted(diagnostics, key=lambda d: (d.line, d.col, d.code))
    if code != text:  # never hand back code that does not compile
        error = compile_error(code, filename, top_level_await=top_level_await)
        if error is not None:
            own = compile_error(text, filename, top_level_await=top_level_await)
            if own is not None:  # the file itself does not compile: its own error is reported
                raise MigrationError(
                    f"syntax error: {own.msg}", own.lineno or 1, own.offset or 1
                ) from None
            line = source_line(text, code, error.lineno or 1)
            dropped = _sites_to_drop(diagnostics, line, error.msg, options)
            if dropped:  # (only those sites are left as they are; the others are rewritten)
                options = replace(options, dropped_sites=options.dropped_sites | dropped)
                return _migrate(text, options, filename, top_level_await)
            raise MigrationError(
                f"internal error: the rewrite would not compile ({error.msg}); file left unchanged",
                line,
                error.offset or 1,
            ) from None
    if options.dropped_sites:
        diagnostics = sorted(
            [*diagnostics, *_dropped_findings(options)], key=lambda d: (d.line, d.col, d.code)
        )
    return _result(text, code, diagnostics, options, registry, scopes.tree, kept_branches(index))


def _sites_to_drop(diagnostics, line: int, why: str, options: Options) -> frozenset:
    """The sites of the removed-JAX-API rules (JAX1xx) on `line`, where the rewrite does not
    compile, not dropped yet: a rewrite that fits where a name is read may not fit where
    only a dotted name may stand (`case jnp.NINF:` -> `-jnp.inf` in a pattern). The
    host_callback rules' rewrites must always compile: theirs stays an internal error."""
    return _left_as_they_are(
        diagnostics,
        options,
        lambda d: d.code.startswith("JAX") and d.line == line,
        lambda d: (
            f"{d.message}: that rewrite does not compile here ({why}); left as it is "
            "(the module's other sites are rewritten): change it by hand"
        ),
    )


def _barriers_beside_legacy_sites(diagnostics, options: Options) -> frozenset:
    """The `barrier_wait()` sites (HCB401) of a module whose other host_callback sites are left
    as they are (manual): legacy's barrier waits for those taps, and on an accelerator with
    jax 0.4.26-0.4.34 (legacy's outfeed) `jax.effects_barrier()` does not, nor does it raise
    their errors (chex's value assertions): the barrier stays with them."""
    left = sorted(
        {
            d.line
            for d in diagnostics
            if d.level is Level.MANUAL and d.code[:4] in ("HCB1", "HCB2", "HCB3", "HCB5")
        }
    )
    if not left:
        return frozenset()
    lines = ", ".join(map(str, left[:3])) + (", ..." if len(left) > 3 else "")
    why = (
        f"barrier_wait() kept: the module's host_callback sites on line(s) {lines} stay, and "
        "legacy's barrier waits for their taps where jax.effects_barrier() does not (an "
        "accelerator's outfeed on jax < 0.4.35); rewrite it with them"
    )
    return _left_as_they_are(diagnostics, options, lambda d: d.code == "HCB401", lambda d: why)


def _sites_beyond_the_projects_cap(code: str, diagnostics, options: Options) -> frozenset:
    """Every site rewrite of a module whose rewrite writes an API the project's own `jax`
    requirement never allows, in a project capped below the JAX that deprecated host_callback
    (netket's older trees: `jax<0.4`, beside `io_callback`, 0.4.1): that code could not run on
    any JAX the project installs, and the cap is no reaction to the deprecation, so the module
    is left as it is and each site is a manual finding naming the cap. (A cap at 0.4.30, set
    when host_callback began to warn or broke, is what the migration lifts: the code is
    rewritten and the cap reported, HCB008.) Empty when the requirements allow what it writes."""
    if not options.jax_requirements or not never_reaches(
        options.jax_requirements, ".".join(map(str, NATIVE_OUTPUT_SINCE))
    ):
        return frozenset()
    needs = needs_of(code, options.several_devices)
    beyond = [
        use
        for use in needs.above((0,))
        if never_reaches(options.jax_requirements, ".".join(map(str, use[2])))
    ]
    if not beyond:
        return frozenset()
    name, _, since = beyond[0]
    cap = ", ".join(options.jax_requirements)
    why = (
        f"left as it is: the rewrite writes `{name}` (JAX >= {'.'.join(map(str, since))}), "
        f"which the project's jax requirement ({cap}) never allows; raise that cap, then run "
        "again (or choose the compat runtime)"
    )
    return _left_as_they_are(
        diagnostics,
        options,
        lambda d: _REWRITES_A_SITE.match(d.code) is not None,
        lambda d: f"{d.message}: {why}",
    )


# The rules that rewrite a call site: host_callback's calls (HCB1xx-HCB6xx; the imports,
# HCB0xx, follow their uses) and the removed JAX APIs (not the notes on behaviour that
# changed with no rewrite: JAX110's random stream, JAX115's calls)
_REWRITES_A_SITE = re.compile(r"HCB[1-6]\d\d|JAX1(?!10|15)\d\d")


def _left_as_they_are(diagnostics, options: Options, chosen, why) -> frozenset:
    """Options.dropped_sites entries, (code, line, col, `why(d)`), for the sites `chosen`
    picks among those the run rewrote (not manual) and does not drop already."""
    done = {(code, at, col) for code, at, col, _ in options.dropped_sites}
    return frozenset(
        (d.code, d.line, d.col, why(d))
        for d in diagnostics
        if chosen(d) and d.level is not Level.MANUAL and (d.code, d.line, d.col) not in done
    )


def _dropped_findings(options: Options) -> list[Diagnostic]:
    return [
        Diagnostic(
            code,
            why,
            Level.MANUAL,
            line,
            col,
        )
        for code, line, col, why in sorted(options.dropped_sites)
    ]


def _result(
    text: str,
    code: str,
    diagnostics: list[Diagnostic],
    options: Options,
    registry: Registry,
    tree=None,  # the source's ast, when the pipeline has it
    kept=(),  # the branches for old JAX left as they are (hcmigrate.codemod.version_guards)
) -> MigrationResult:
    """The result, with what the module-end rules add to the diagnostics."""
    ctx = ModuleEndContext(options)
    site = ModuleSite(options, diagnostics, text, tree, code, tuple(kept))
    for handler in registry.module_end:
        handler(site, ctx)
    return MigrationResult(text, code, diagnostics + ctx.diagnostics, compile_checked=True)


class ModuleEndContext:
    """hcmigrate.rules.context.ReportContext for the module-end rules."""

    def __init__(self, options: Options):
        self._options = options
        self.diagnostics: list[Diagnostic] = []

    def report(
        self,
        rule: Rule,
        node: cst.CSTNode | None,
        message: str,
        level: Level | None = None,
        line: int = 1,
    ) -> None:
        if selected(self._options, rule.code):
            self.diagnostics.append(Diagnostic(rule.code, message, level or rule.level, line, 1))


def migrate_module(
    module: cst.Module,
    options: Options,
    index: NodeIndex | None = None,  # already taken over `module`
    scopes: ScopeAnalysis | None = None,  # of the same module
    registry: Registry | None = None,
) -> tuple[cst.Module, list[Diagnostic]]:
    """The migrated module and its diagnostics (in the order the rules reported them)."""
    registry = registry or the_registry()
    index = index or NodeIndex(module, dict(options.reexports))
    if not might_use_host_callback(index.text, options, registry.words):
        return module, []
    ctx = ModuleContext(index, scopes or ScopeAnalysis(index.text), options, registry)
    style = options.import_style  # (the module's own package is first party, as isort sees it)
    if options.module_name:
        style = style.with_first_party([options.module_name.split(".")[0]])
    style = in_file_order(list(module.body), style)
    imports = ImportRulesContext(
        ctx, Usage(ctx.resolver, ctx.replaced, options, module, ctx.left_in_place)
    )
    cleanup = CleanUpImports(imports, registry.imports)
    if options.strategy == "compat":
        result = module.visit(PointAtCompat(ctx, imports, registry.compat))
        # (the compat pass rebuilt the tree without noting what from: the clean-up walks it all;
        # the JAX1xx rules of that pass may ask for module bindings: JAX107's guarded imports)
        return _with_imports_and_helpers(result.visit(cleanup), ctx, style, index.text)
    ctx.plan = make_plan(ctx.resolver, ctx.reporter, ctx.dispatch)
    rewritten = module.visit(Rewriter(ctx, _nodes_to_rewrite(ctx)))
    cleanup.descend = _only_to_imports(ctx)
    return _with_imports_and_helpers(rewritten.visit(cleanup), ctx, style, index.text)


def _with_imports_and_helpers(cleaned: cst.Module, ctx: ModuleContext, style, text: str):
    # (a helper the run writes once for the package is imported from there: shared_imports)
    shared = shared_imports(cleaned, ctx.helpers, ctx.options.shared_helpers)
    own = [key for key in ctx.helpers if key not in shared]
    imports = [*ctx.imports, *ctx.helper_imports(own), *shared.values()]
    with_imports = add_imports(cleaned, imports, style)
    indent = indent_unit(text)
    definitions = ctx.helper_definitions(own)
    # (`Var = jax.core.Var` -> `Var = Var_1`: the guarded import binds `Var` and the alias goes)
    guarded = {
        chosen: key.rsplit(".", 1)[1]
        for key, (chosen, _) in ctx.module_bindings.items()
        if key.startswith("guarded:") and key in own and chosen != key.rsplit(".", 1)[1]
    }
    diagnostics = ctx.diagnostics
    if guarded:
        with_imports, renames = aliases_bound_by_guarded_imports(with_imports, guarded, text)
        for chosen, name in renames.items():
            definitions = [
                (name, source.replace(f"{name} as {chosen}", name))
                if helper == chosen
                # (another helper's text never names a guarded import's fresh name)
                else (helper, source)
                for helper, source in definitions
            ]
            diagnostics = [
                replace(d, message=d.message.replace(f"`{chosen}`", f"`{name}`"))
                for d in diagnostics
            ]
    helped = add_helpers(with_imports, merged_guarded_imports(definitions), indent)
    spaced = space_new_guarded_imports(
        helped, ctx.resolver.index.module, ctx.options.import_style.lines_after_imports
    )
    return _no_blank_lines_at_top(spaced), diagnostics


def _no_blank_lines_at_top(module: cst.Module) -> cst.Module:
    """`module` without the blank lines that stood below a first statement the run removed
    (the legacy import, above a blank line and `import os`): a parsed module keeps the lines
    above its first statement in its header, so blank lines above the first statement of a
    module with no header are the run's, and black removes them."""
    if module.header or not module.body or isinstance(module.body[0], VerbatimStatement):
        return module
    first = module.body[0]
    lines = list(first.leading_lines)
    while lines and lines[0].comment is None:
        lines.pop(0)
    if len(lines) == len(first.leading_lines):
        return module
    return module.with_changes(body=[first.with_changes(leading_lines=lines), *module.body[1:]])


def _nodes_to_rewrite(ctx: ModuleContext) -> set[int]:
    """The rewrite only walks down to nodes a rule may change: names an import of the legacy
    module can bind (outside imports, which the rewrite leaves to the clean-up), calls a
    modern-call trigger may match, the defs whose signatures change, names bound to JAX and
    imports of removed JAX names (hcmigrate.codemod.removed_apis). Everything else is left
    as it is, unvisited (walking a whole module costs as much as parsing it)."""
    index, roots = ctx.resolver.index, ctx.resolver.index.legacy_roots
    removed = ctx.dispatch.removed
    return ctx.resolver.with_ancestors(
        node
        for node in [
            *(name for name in index.name_nodes if name.value in roots),
            *(call for call in index.calls if ctx.dispatch.may_be_modern_call(call)),
            *(ctx.plan.defs[key] for key in ctx.plan.def_drops),
            *ctx.plan.scalar_items.values(),
            *(
                node
                for node in (removed.hot_nodes() if removed is not None else ())
                if not in_legacy_branch(index, node)  # (old JAX has its old APIs)
            ),
        ]
        # (a branch for old JAX that holds host_callback code is left as it is, whole:
        # hcmigrate.codemod.version_guards)
        if not in_kept_branch(index, node)
    )


def _only_to_imports(ctx: ModuleContext):
    """The clean-up walks only down to import and try statements: through original nodes on
    the way to one, or nodes the rewrite rebuilt from such a node."""
    imports = ctx.resolver.with_ancestors(ctx.resolver.index.import_nodes)
    is_original, rebuilt = ctx.resolver.index.is_original, ctx.rebuilt

    def descend(node: cst.CSTNode) -> bool:
        original = node if is_original(node) else rebuilt.get(id(node))
        return original is not None and id(original) in imports

    return descend
