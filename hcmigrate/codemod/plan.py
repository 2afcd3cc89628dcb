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

import ast
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
from hcmigrate.codemod.walk import descendants
from hcmigrate.rules.context import CallSite
from hcmigrate.rules.spec import Rule


@dataclass
class Plan:
    adaptations: dict[int, Adaptation] = field(default_factory=dict)  # id(original Call) ->
    def_drops: dict[int, tuple[str, ...]] = field(default_factory=dict)  # id(FunctionDef) ->
    defs: dict[int, cst.FunctionDef] = field(default_factory=dict)  # id(FunctionDef) -> it
    module_has_ordered_io: bool = False
    # id(original Call) -> it: `int(v)` of a host function's argument, written `int(v.item())`
    # (hcmigrate.codemod.host_functions.scalar_conversions)
    scalar_items: dict[int, cst.Call] = field(default_factory=dict)
    # id(original Call) -> the pmap axis whose index picks the device a tap reads
    # (Planner.device_of_shard)
    device_axes: dict[int, str] = field(default_factory=dict)


class Planner:
    """What a rule's plan hook may ask and decide."""

    def __init__(self, resolver: Resolver, reporter: Reporter):
        self._resolver = resolver
        self._reporter = reporter
        self._plan = Plan()
        self._uses: dict[int, list[tuple[cst.Call, cst.Name, Adaptation]]] = {}
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

    def several_devices(self, node: cst.CSTNode | None = None) -> str | None:
        """Why the module (the code around `node`, a site) runs on several devices, if it
        does: hcmigrate.codemod.resolution.Resolver.several_devices."""
        return self._resolver.several_devices(node)

    def io_chain_blocker(self, node: cst.CSTNode | None = None) -> str | None:
        """What keeps the module's host calls (the one at `node`) off an ordered io_callback
        chain on several devices (Resolver.io_chain_blocker)."""
        return self._resolver.io_chain_blocker(node)

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
        if self._resolver.devices_join_io_chain(site.original):
            self.joins_ordered_io(site)

    def left_as_is(self, site: CallSite, reason: str) -> None:
        """The site has no native spelling that keeps legacy behaviour: it is left as it is (a
        manual finding), its host function keeps its signature."""
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

    def device_of_shard(self, site: CallSite) -> bool:
        """A tap that reads its `device` in a function this module gives to `jax.pmap` with an
        axis name, on the module's ordered io_callback chain: legacy's device for shard i was
        the pmap's i-th device, `jax.local_devices()[i]` (no `devices=`); the callback is given
        `jax.lax.axis_index(name)` to pick it (hcmigrate.rules.id_tap). False: no such pmap."""
        if not self._resolver.devices_join_io_chain(site.original):
            return False
        axis = pmap_axis_name(self._resolver, site.original)
        if axis is None:
            return False
        self._plan.device_axes[id(site.original)] = axis
        self._plan.adaptations[id(site.original)] = Adaptation("as_is")
        return True

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
        self._scalar_conversions(site)
        if isinstance(func, cst.Name) and adaptation.mode == "edit":
            fdef = self._resolver.function_def(func)
            self._plan.defs[id(fdef)] = fdef
            self._uses.setdefault(id(fdef), []).append((site.original, func, adaptation))
        self._plan.adaptations[id(site.original)] = adaptation
        return adaptation

    def _needs_legacy_arrays(self, func) -> Adaptation | None:
        """No native spelling for a host function that reads its arrays' flags: legacy's were
        read-only on CPU (what the compat runtime gives), a native rewrite's are writeable
        copies (hcmigrate.codemod.numpy_args). One that only sets them (`x.flags.writeable =
        True` before handing the buffer to C code) gets owned copies natively, as legacy's were."""
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
                adaptation = adapt(
                    fdef.params,
                    fdef.body,
                    passes_transforms=passes_transforms,
                    passes_device=passes_device,
                )
                if adaptation.transforms_used and adaptation.mode == "compat":
                    return self._transforms_passed_on(fdef) or adaptation
                return adaptation
        if passes_device:
            return Adaptation(
                "compat", reason="may use the `device` argument (it is not defined in this module)"
            )
        return Adaptation("wrap", reason="is not defined in this module")

    def _transforms_passed_on(self, fdef: cst.FunctionDef) -> Adaptation | None:
        """A tap whose every read of `transforms` hands it on to a function of this module
        that never reads the parameter it binds (`update_info(x, transforms)` with
        `def update_info(ival, _)`) does not read it: it is called with `()`, as legacy called
        it outside vmap, its signature kept (None: a real read)."""
        positional = [*fdef.params.posonly_params, *fdef.params.params]
        if len(positional) < 2:
            return None
        transforms = positional[1].name.value
        reads = sum(
            1 for n in descendants(fdef.body) if isinstance(n, cst.Name) and n.value == transforms
        )
        helpers: set[str] = set()
        for node in descendants(fdef.body):
            if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Name):
                continue
            for position, argument in enumerate(node.args):
                if not (
                    isinstance(argument.value, cst.Name) and argument.value.value == transforms
                ):
                    continue
                if argument.star or any(a.star for a in node.args[:position]):
                    return None
                keyword = argument.keyword.value if argument.keyword is not None else None
                if not ignores_parameter(self._resolver, node.func, position, keyword):
                    return None
                helpers.add(node.func.value)
                reads -= 1
        if reads or not helpers:
            return None
        names = ", ".join(f"`{h}`" for h in sorted(helpers))
        return Adaptation("wrap", reason=f"passes `transforms` only to {names}, which ignores it")

    def finish(self) -> Plan:
        """The plan, with the defs whose every reference is such a callback losing their
        parameters (each such use then passes the def as it is); a def used otherwise keeps
        its signature and is wrapped at each site."""
        plan, index = self._plan, self._resolver.index
        plan.module_has_ordered_io = bool(self._ordered_io)
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


def pmap_axis_name(resolver: Resolver, node: cst.CSTNode) -> str | None:
    """The axis name of the `jax.pmap` this module applies to the function `node` is in (the
    outermost enclosing def: `jax.pmap(f, axis_name="i")`, or a decorator
    `functools.partial(jax.pmap, axis_name="i")`), when every use of that function's name is
    such a pmap, without `devices=`; None otherwise (a function also run outside that pmap
    would fail there on an unbound axis name)."""
    outermost = None
    while node is not None:
        if isinstance(node, cst.FunctionDef):
            outermost = node
        node = resolver.parent(node)
    if outermost is None:
        return None
    name = outermost.name.value
    tree = resolver.scopes.tree
    defs = [d for d in ast.walk(tree) if isinstance(d, ast.FunctionDef) and d.name == name]
    if len(defs) != 1:
        return None
    decorators = defs[0].decorator_list
    if decorators:  # (then every use of the name is the pmapped function)
        if len(decorators) != 1 or not isinstance(decorators[0], ast.Call):
            return None
        return _axis_name(decorators[0]) if _is_partial_of_pmap(decorators[0]) else None
    axes: list[str | None] = []
    pmapped: set[int] = set()  # ids of the Name nodes given to pmap
    for call in ast.walk(tree):
        given = call.args[0] if isinstance(call, ast.Call) and call.args else None
        if isinstance(given, ast.Name) and given.id == name and _is_pmap(call.func):
            pmapped.add(id(given))
            axes.append(_axis_name(call))
    reads = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Name) and n.id == name and id(n) not in pmapped
    ]
    if reads or len(set(axes)) != 1 or axes[0] is None:
        return None
    return axes[0]


def _is_pmap(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "pmap") or (
        isinstance(func, ast.Attribute) and func.attr == "pmap"
    )


def _is_partial_of_pmap(call: ast.Call) -> bool:
    partial = call.func
    named = (isinstance(partial, ast.Name) and partial.id == "partial") or (
        isinstance(partial, ast.Attribute) and partial.attr == "partial"
    )
    return named and bool(call.args) and _is_pmap(call.args[0])


def _axis_name(call: ast.Call) -> str | None:
    """The literal `axis_name=` of a pmap call (None: none, another spelling, or `devices=`)."""
    keywords = {k.arg: k.value for k in call.keywords}
    axis = keywords.get("axis_name")
    if "devices" in keywords or None in keywords:
        return None
    if isinstance(axis, ast.Constant) and isinstance(axis.value, str):
        return axis.value
    return None


def ignores_parameter(
    resolver: Resolver, name: cst.Name, position: int, keyword: str | None
) -> bool:
    """Is `name` the one def it refers to where it is called (at module level or nested, as
    cola's factories define their tap helpers), undecorated, which never reads the parameter
    an argument at `position` (or passed as `keyword`) binds?"""
    fdef = resolver.function_def(name)
    if fdef is None or fdef.decorators:
        return False
    params = fdef.params
    positional = [*params.posonly_params, *params.params]
    if keyword is not None:
        named = [*positional, *params.kwonly_params]
        bound = next((p for p in named if p.name.value == keyword), None)
    else:
        bound = positional[position] if position < len(positional) else None
    if bound is None:
        return False
    return not any(
        isinstance(node, cst.Name) and node.value == bound.name.value
        for node in descendants(fdef.body)
    )


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
