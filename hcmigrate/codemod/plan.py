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
)
from hcmigrate.codemod.numpy_args import LEGACY_ARRAYS, uses_array_flags
from hcmigrate.codemod.reporting import Reporter
from hcmigrate.codemod.resolution import Resolver
from hcmigrate.rules.context import CallSite
from hcmigrate.rules.spec import Rule


@dataclass
class Plan:
    adaptations: dict[int, Adaptation] = field(default_factory=dict)  # id(original Call) ->
    def_drops: dict[int, tuple[str, ...]] = field(default_factory=dict)  # id(FunctionDef) ->
    defs: dict[int, cst.FunctionDef] = field(default_factory=dict)  # id(FunctionDef) -> it
    module_has_ordered_io: bool = False


class Planner:
    """What a rule's plan hook may ask and decide."""

    def __init__(self, resolver: Resolver, reporter: Reporter):
        self._resolver = resolver
        self._reporter = reporter
        self._plan = Plan()
        self._uses: dict[int, list[tuple[cst.Call, cst.Name, Adaptation]]] = {}
        self._ordered_io: list[cst.Call] = []  # the calls planned as ordered io_callbacks

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

    def left_under_vmap(self, site: CallSite, legacy_did: str) -> bool:
        """Is the site left as it is (no native spelling) because this module visibly runs its
        function under `jax.vmap` (hcmigrate.codemod.resolution.Resolver.vmapped_at), or
        another module of the run does (Resolver.vmapped_elsewhere)?
        `legacy_did`: what legacy did there that jax.debug callbacks do not."""
        line = self._resolver.vmapped_at(site.original)
        where = f"line {line}" if line is not None else None
        if where is None:
            where = self._resolver.vmapped_elsewhere(site.original)
        if where is None:
            return False
        self.left_as_is(site, f"runs under jax.vmap ({where}), where {legacy_did}")
        return True

    def on_ordered_chain(self, site: CallSite) -> None:
        """The site (a tap, print or call for its effect, planned natively) is on the module's
        ordered chain: in a module on several devices through sharded jit it is an ordered
        io_callback (Resolver.devices_join_io_chain), as the module's taps then are."""
        if self._resolver.devices_join_io_chain():
            self.joins_ordered_io(site)

    def left_as_is(self, site: CallSite, reason: str) -> None:
        """The site has no native spelling that keeps legacy behaviour: it is left as it is (a
        manual finding), its host function keeps its signature."""
        self._plan.adaptations[id(site.original)] = Adaptation("compat", reason=reason)

    def joins_ordered_io(self, site: CallSite) -> None:
        """The site becomes an ordered io_callback."""
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
        if isinstance(func, cst.Name) and adaptation.mode == "edit":
            fdef = self._resolver.function_def(func)
            self._plan.defs[id(fdef)] = fdef
            self._uses.setdefault(id(fdef), []).append((site.original, func, adaptation))
        self._plan.adaptations[id(site.original)] = adaptation
        return adaptation

    def _needs_legacy_arrays(self, func) -> Adaptation | None:
        """No native spelling (yet) for a host function that reads or sets its arrays' flags: legacy's were
        read-only on CPU (what the compat runtime gives), a native rewrite's are writeable
        copies (hcmigrate.codemod.numpy_args)."""
        if isinstance(func, cst.Name):
            fdef = self._resolver.function_def(func)
            func = fdef if fdef is not None and not fdef.decorators else None
        if isinstance(func, (cst.Lambda, cst.FunctionDef)) and uses_array_flags(func.body):
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
        plan, index, scopes = self._plan, self._resolver.index, self._resolver.scopes
        plan.module_has_ordered_io = bool(self._ordered_io)
        for key, uses in self._uses.items():
            fdef = plan.defs[key]
            offset = index.start_offset(fdef.name)
            references = {
                access
                for binding in scopes.bindings_at(offset, fdef.name.value)
                for access in binding.accesses
            }
            tap_nodes = {index.start_offset(func) for _, func, _ in uses}
            drops = {adaptation.drop for _, _, adaptation in uses}
            if references <= tap_nodes and len(drops) == 1:
                plan.def_drops[key] = drops.pop()
            else:
                for call, _, _ in uses:
                    plan.adaptations[id(call)] = Adaptation("wrap", reason="is used elsewhere too")
        return plan


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
        try:
            site = dispatch.call_site(call, call, function)
        except CannotBind:
            continue
        for handler in dispatch.call_handlers(site):
            if handler.plan is not None:
                handler.plan(site, planner)
    return planner.finish()
