"""The plan: what the rules decide about the module's legacy calls before any rewrite.

A rule whose rewrite depends on the whole module says so with a `plan` hook on its handler
(hcmigrate.rules.spec.handles). Each legacy call is offered to the plan hooks of the handlers
its trigger matches, through a `Planner`: how each host function is adapted to be called as
`f(arg)` (hcmigrate.codemod.host_functions), which module-local defs therefore lose their
`transforms`/`device` parameters (only defs used as nothing but such callbacks, all in the
same way), and whether the module will have ordered io_callbacks (id_print then joins their
chain).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from hcmigrate.codemod.binding import CannotBind
from hcmigrate.codemod.host_functions import (
    Adaptation,
    PurityChecker,
    adapt,
    mutable_module_state,
    scalar_conversions,
)
from hcmigrate.codemod.numpy_args import LEGACY_ARRAYS, reads_array_flags
from hcmigrate.codemod.reporting import Reporter
from hcmigrate.codemod.resolution import Resolver
from hcmigrate.codemod.version_guards import in_kept_branch
from hcmigrate.rules.context import CallSite
from hcmigrate.rules.spec import Rule


@dataclass
class Plan:
    adaptations: dict[int, Adaptation] = field(default_factory=dict)  # id(original Call) ->
    def_drops: dict[int, tuple[str, ...]] = field(default_factory=dict)  # id(FunctionDef) ->
    defs: dict[int, cst.FunctionDef] = field(default_factory=dict)  # id(FunctionDef) -> it
    module_has_ordered_io: bool = False
    # some legacy call stays on the compat runtime (its host function, or a legacy function
    # used as a value): the module's taps and prints follow it (Planner._taps_follow_compat)
    module_keeps_compat: bool = False
    # only because another module sharing its chain keeps calls there (Options.follows_compat)
    follows_other_module: bool = False
    # id(original Call) -> it: `int(v)` of a host function's argument, written `int(v.item())`
    # (hcmigrate.codemod.host_functions.scalar_conversions)
    scalar_items: dict[int, cst.Call] = field(default_factory=dict)


class Planner:
    """What a rule's plan hook may ask and decide."""

    def __init__(self, resolver: Resolver, reporter: Reporter):
        self._resolver = resolver
        self._reporter = reporter
        self._plan = Plan()
        self._uses: dict[int, list[tuple[cst.Call, cst.Name, Adaptation]]] = {}
        self._taps: list[cst.Call] = []  # the taps, prints and calls that may follow compat
        self._ordered_io: list[cst.Call] = []  # the calls planned as ordered io_callbacks
        # id(FunctionDef) -> (its scalar conversions, offsets of the host-function arguments
        # naming it): written only where every reference to the def is such an argument
        self._scalar_defs: dict[int, tuple[list[cst.Call], set[int]]] = {}

    def suppressed(self, node: cst.CSTNode, rule: Rule) -> bool:
        """Is `node` kept from `rule` by a suppression comment, or the rule not selected?"""
        return not self._reporter.selected(rule.code) or self._reporter.suppressed(node, rule.code)

    def is_pure(self, func: cst.BaseExpression) -> bool:
        return is_pure(self._resolver, func)

    def only_checks(self, func: cst.BaseExpression) -> bool:
        return is_pure(self._resolver, func, allow_raise=True)

    def patched_internal(self) -> str | None:
        """The legacy internal the module patches, if any (no call of it is rewritten)."""
        return self._resolver.patched_internal()

    def several_devices(self) -> str | None:
        """Why the module runs on several devices, if it does:
        hcmigrate.codemod.resolution.Resolver.several_devices."""
        return self._resolver.several_devices()

    def io_chain_blocker(self) -> str | None:
        """What keeps the module's host calls off an ordered io_callback chain on several
        devices (Resolver.io_chain_blocker)."""
        return self._resolver.io_chain_blocker()

    def keeps_compat_under_vmap(self, site: CallSite, legacy_did: str) -> bool:
        """Does the site stay on the compat runtime because this module visibly runs its
        function under `jax.vmap` (hcmigrate.codemod.resolution.Resolver.vmapped_at), or
        another module of the run does (Resolver.vmapped_elsewhere)?
        `legacy_did`: what legacy did there that jax.debug callbacks do not."""
        line = self._resolver.vmapped_at(site.original)
        where = f"line {line}" if line is not None else None
        if where is None:
            where = self._resolver.vmapped_elsewhere(site.original)
        if where is None:
            return False
        self.keeps_compat(site, f"runs under jax.vmap ({where}), where {legacy_did}")
        return True

    def may_follow_compat(self, site: CallSite) -> None:
        """The site (a tap, print or call planned natively onto an ordered chain) moves to the
        compat runtime if some other legacy call of the module stays there (finish:
        _taps_follow_compat)."""
        self._taps.append(site.original)

    def on_ordered_chain(self, site: CallSite) -> None:
        """The site (a tap, print or call for its effect, planned natively) is on the module's
        ordered chain: it follows the compat runtime if another call stays there
        (may_follow_compat); in a module on several devices through sharded jit it is an
        ordered io_callback (Resolver.devices_join_io_chain), as the module's taps then are."""
        self.may_follow_compat(site)
        if self._resolver.devices_join_io_chain():
            self.joins_ordered_io(site)

    def keeps_compat(self, site: CallSite, reason: str) -> None:
        """The site stays on the compat runtime: its host function keeps its signature."""
        self._plan.adaptations[id(site.original)] = Adaptation("compat", reason=reason)
        self._scalar_conversions(site)

    def _scalar_conversions(self, site: CallSite) -> None:
        """`int(v)` of the site's host function's argument becomes `int(v.item())`, on the
        compat runtime too (its numpy 2 arrays refuse what legacy's numpy 1.26 took): in a
        lambda at the site, in a module def that nothing but such sites names."""
        func = site.args.get("tap_func", site.args.get("callback_func"))
        qualified = self._resolver.qualified
        if isinstance(func, cst.Lambda):
            for call in scalar_conversions(func.params, func.body, qualified):
                self._plan.scalar_items[id(call)] = call
        elif isinstance(func, cst.Name):
            fdef = self._resolver.function_def(func)
            if fdef is None:
                return
            calls, offsets = self._scalar_defs.setdefault(
                id(fdef), (scalar_conversions(fdef.params, fdef.body, qualified), set())
            )
            offsets.add(self._resolver.index.start_offset(func))
            self._plan.defs[id(fdef)] = fdef

    def joins_ordered_io(self, site: CallSite) -> None:
        """The site becomes an ordered io_callback (unless it follows compat, finish)."""
        self._ordered_io.append(site.original)

    def adapt(
        self,
        site: CallSite,
        func: cst.BaseExpression | None,
        *,
        passes_transforms: bool,
        passes_device: bool,
    ) -> Adaptation:
        """How the site's host function `func` becomes callable as `f(arg)`, legacy having
        passed it `transforms` and/or `device` too; recorded for the rewrite."""
        adaptation = self._needs_legacy_arrays(func) or self._adaptation_of(
            func, passes_transforms, passes_device
        )
        self._scalar_conversions(site)
        if isinstance(func, cst.Name) and adaptation.mode == "edit":
            fdef = self._resolver.function_def(func)
            self._plan.defs[id(fdef)] = fdef
            self._uses.setdefault(id(fdef), []).append((site.original, func, adaptation))
        self._plan.adaptations[id(site.original)] = adaptation
        return adaptation

    def _needs_legacy_arrays(self, func) -> Adaptation | None:
        """Compat for a host function that reads its arrays' flags: legacy's were read-only
        on CPU (what the compat runtime gives), a native rewrite's are writeable copies
        (hcmigrate.codemod.numpy_args). One that only sets them (`x.flags.writeable = True`
        before handing the buffer to C code) gets owned copies natively, as legacy's were."""
        if isinstance(func, cst.Name):
            fdef = self._resolver.function_def(func)
            func = fdef if fdef is not None and not fdef.decorators else None
        if isinstance(func, (cst.Lambda, cst.FunctionDef)) and reads_array_flags(func.body):
            return Adaptation("compat", reason=LEGACY_ARRAYS)
        return None

    def _adaptation_of(self, func, passes_transforms: bool, passes_device: bool) -> Adaptation:
        if not passes_transforms and not passes_device:
            return Adaptation("as_is")
        if isinstance(func, cst.Lambda):
            return adapt(
                func.params,
                func.body,
                passes_transforms=passes_transforms,
                passes_device=passes_device,
            )
        if isinstance(func, cst.Name):
            fdef = self._resolver.function_def(func)
            if fdef is not None and not fdef.decorators:
                return adapt(
                    fdef.params,
                    fdef.body,
                    passes_transforms=passes_transforms,
                    passes_device=passes_device,
                )
        if passes_device:
            return Adaptation(
                "compat", reason="may use the `device` argument (it is not defined in this module)"
            )
        return Adaptation("wrap", reason="is not defined in this module")

    def finish(self) -> Plan:
        """The plan, with the defs whose every reference is such a callback losing their
        parameters (each such use then passes the def as it is); a def used otherwise keeps
        its signature and is wrapped at each site."""
        plan, index = self._plan, self._resolver.index
        plan.module_has_ordered_io = bool(self._ordered_io)
        self._taps_follow_compat()
        for key, (calls, offsets) in self._scalar_defs.items():
            if calls and self._references(plan.defs[key]) <= offsets:
                plan.scalar_items.update((id(call), call) for call in calls)
        for key, uses in self._uses.items():
            fdef = plan.defs[key]
            references = self._references(fdef)
            tap_nodes = {index.start_offset(func) for _, func, _ in uses}
            drops = {adaptation.drop for _, _, adaptation in uses}
            if references <= tap_nodes and len(drops) == 1:
                plan.def_drops[key] = drops.pop()
            else:
                for call, _, _ in uses:
                    plan.adaptations[id(call)] = Adaptation("wrap", reason="is used elsewhere too")
        return plan

    def _references(self, fdef: cst.FunctionDef) -> set[int]:
        """Offsets of the names that read the def."""
        index, scopes = self._resolver.index, self._resolver.scopes
        offset = index.start_offset(fdef.name)
        return {
            access
            for binding in scopes.bindings_at(offset, fdef.name.value)
            for access in binding.accesses
        }

    def _taps_follow_compat(self) -> None:
        """Where some legacy call of the module stays on the compat runtime, its taps, prints
        and calls on an ordered chain stay there too (a `pure_callback` is on no chain): the compat runtime's ordered calls and ordered jax.debug callbacks are two
        chains, which ran in program order on CPU but not on a GPU (docs/migration-decisions.md);
        legacy kept one order. Their defs keep their parameters."""
        plan = self._plan
        plan.module_keeps_compat = (
            any(a.mode == "compat" for a in plan.adaptations.values())
            or self._legacy_function_used_as_value()
        )
        reason = ""
        if not plan.module_keeps_compat and self._resolver.follows_compat:
            plan.module_keeps_compat = plan.follows_other_module = True
            reason = self._resolver.follows_compat
        if not plan.module_keeps_compat:
            return
        moved = {
            id(call)
            for call in self._taps
            if plan.adaptations.get(id(call), Adaptation("as_is")).mode != "compat"
        }
        for key in moved:
            plan.adaptations[key] = Adaptation("compat", reason=reason, follows_compat=True)
        plan.module_has_ordered_io = any(id(call) not in moved for call in self._ordered_io)
        for key, uses in list(self._uses.items()):
            self._uses[key] = [use for use in uses if id(use[0]) not in moved]
            if not self._uses[key]:
                del self._uses[key]

    def _legacy_function_used_as_value(self) -> bool:
        """Is `id_tap`, `id_print` or `call` used other than called (`partial(hcb.id_tap, f)`)?
        Such a use is pointed at the compat runtime (HCB502)."""
        resolver = self._resolver
        for name in resolver.index.name_nodes:
            if name.value not in resolver.index.legacy_roots:
                continue
            node, parent = name, resolver.parent(name)
            if isinstance(parent, cst.Attribute) and parent.value is name:
                node, parent = parent, resolver.parent(parent)
            ref = resolver.legacy_ref(node)
            if ref is None or ref.member not in ("id_tap", "id_print", "call"):
                continue
            if not (isinstance(parent, cst.Call) and parent.func is node):
                return True
        return False


def is_pure(resolver: Resolver, func: cst.BaseExpression, allow_raise: bool = False) -> bool:
    """Is the host function `func` visibly free of side effects (but raising errors, with
    `allow_raise`: a host check)?"""
    return PurityChecker(
        resolver.qualified,
        resolver.function_def,
        mutable_module_state(resolver.index.text),
        allow_raise=allow_raise,
    ).function(func)


def make_plan(resolver: Resolver, reporter: Reporter, dispatch) -> Plan:
    """Offer every legacy call of the module to the plan hooks its handlers have."""
    planner = Planner(resolver, reporter)
    for call in resolver.index.calls:
        function = dispatch.legacy_function(call)
        if function is None or not dispatch.plans(function):
            continue
        if in_kept_branch(resolver.index, call):
            continue  # (a branch for old JAX, left as it is: hcmigrate.codemod.version_guards)
        try:
            site = dispatch.call_site(call, call, function)
        except CannotBind:
            continue
        for handler in dispatch.call_handlers(site):
            if handler.plan is not None:
                handler.plan(site, planner)
    return planner.finish()
