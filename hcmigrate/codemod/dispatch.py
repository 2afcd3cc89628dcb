"""Which handlers a site goes to: the registry's triggers matched against the module's nodes."""

from __future__ import annotations

import functools

import libcst as cst

from hcmigrate.codemod.binding import CannotBind, bind_argument_nodes
from hcmigrate.facts import LEGACY_FUNCTIONS
from hcmigrate.codemod.removed_apis import RemovedApis
from hcmigrate.rules.removed_api_rewrite import report_target
from hcmigrate.codemod.removed_sharding import NAME as SHARDING
from hcmigrate.rules.context import (
    CallSite,
    ModernCallSite,
    ReferenceSite,
    RemovedApiSite,
    UnbindableSite,
)
from hcmigrate.codemod.triggers import modern_call_matches
from hcmigrate.rules.nodes import dotted_name
from hcmigrate.rules.registry import Registry
from hcmigrate.rules.spec import Handler


class Dispatch:
    def __init__(self, ctx, registry: Registry):
        self._ctx = ctx  # hcmigrate.codemod.context.ModuleContext
        self._registry = registry
        self._tails = tuple(sorted(registry.words.callee_tails))
        self._removed: RemovedApis | None = None

    @property
    def removed(self) -> RemovedApis | None:
        """The module's uses of removed JAX APIs (None: no rule handles any)."""
        if self._removed is None and self._registry.words.removed:
            self._removed = RemovedApis(
                self._ctx.resolver,
                self._registry.words.removed,
                dict(self._ctx.options.removed_exports),
                self._ctx.options.module_name,
            )
        return self._removed

    # ---------------------------------------------------------------- legacy calls
    def legacy_function(self, call: cst.Call) -> str | None:
        """The legacy function `call` calls, when it is one the rules may rewrite."""
        ref = self._ctx.resolver.legacy_ref(call.func)
        if ref is None or ref.is_ambiguous or ref.member not in LEGACY_FUNCTIONS:
            return None
        return ref.member

    def plans(self, function: str) -> bool:
        return any(h.plan is not None for h in self._registry.calls.get(function, ()))

    def call_site(self, original: cst.Call, updated: cst.Call, function: str) -> CallSite:
        """The site with its arguments bound; raises CannotBind."""
        nodes, extra = bind_argument_nodes(function, updated)
        original_nodes, _ = bind_argument_nodes(function, original)
        return CallSite(
            function,
            original,
            updated,
            {k: a.value for k, a in nodes.items()},
            {k: a.value for k, a in extra.items()},
            self._ctx.resolver.value_used(original),
            {k: a.value for k, a in original_nodes.items()},
            {**extra, **nodes},
        )

    def call_handlers(self, site: CallSite) -> list[Handler]:
        """The function's handlers whose keyword, if any, the call passes."""
        return [
            h
            for h in self._registry.calls.get(site.function, ())
            if h.trigger.keyword is None
            or h.trigger.keyword in site.args
            or h.trigger.keyword in site.extra_keywords
        ]

    def legacy_call(self, original: cst.Call, updated: cst.Call):
        function = self.legacy_function(original)
        try:
            site = self.call_site(original, updated, function)
        except CannotBind as why:
            unbindable = UnbindableSite(function, original, updated, str(why))
            return self._ctx.run_site(self._registry.unbindable, unbindable, original, updated)
        return self._ctx.run_site(self.call_handlers(site), site, original, updated)

    # ---------------------------------------------------------------- other legacy names
    def reference(self, original: cst.BaseExpression, updated: cst.BaseExpression):
        ref = self._ctx.resolver.legacy_ref(original)
        if ref is None:
            return self.removed_use(original, updated)
        guard_fallback = self._ctx.resolver.is_guard_fallback(original)
        site = ReferenceSite(original, updated, ref, guard_fallback)
        handlers = self._registry.references(ref.member, guard_fallback)
        return self._ctx.run_site(handlers, site, original, updated)

    # ---------------------------------------------------------------- modern calls
    def may_be_modern_call(self, call: cst.Call) -> bool:
        """Could a modern-call trigger match `call`? (Its callee's spelling ends right.)"""
        return bool(self._tails) and (dotted_name(call.func) or "").endswith(self._tails)

    def modern_call(self, original: cst.Call, updated: cst.Call):
        if not self.may_be_modern_call(original):
            return updated
        names = self._ctx.resolver.qualified(original.func)
        handlers = [
            h
            for h in self._registry.modern_calls
            if modern_call_matches(h.trigger, original, names)
        ]
        if not handlers:
            return updated
        site = ModernCallSite(original, updated, names, self._ctx.resolver.value_used(original))
        return self._ctx.run_site(handlers, site, original, updated)

    # ---------------------------------------------------------------- removed JAX APIs
    def _removed_site(
        self, row, original, updated, qualified: str = "", aliases=(), via=None, partial=False
    ):
        handlers = self._registry.removed.get(row.rule, [])
        star = self.removed.star_of(original) if qualified and not partial else ""
        site = RemovedApiSite(row, original, updated, qualified, tuple(aliases), star, via, partial)
        return self._ctx.run_site(handlers, site, original, updated)

    def removed_use(self, original: cst.BaseExpression, updated: cst.BaseExpression):
        found = self.removed.use(original) if self.removed is not None else None
        if found is None:
            return updated
        target = self.removed.target_of(original)
        if target:  # (JAX's own name set or deleted: kept as it is, for a human)
            site = RemovedApiSite(found[0], original, updated, found[1])
            handler = functools.partial(report_target, what=target)
            return self._ctx.run_site([handler], site, original, updated)
        return self._removed_site(found[0], original, updated, found[1])

    def removed_call(self, original: cst.Call, updated: cst.Call):
        if self.removed is None:
            return updated
        row, via = self.removed.keyword_call(original), None
        if row is None:  # (`c(x, a_min=0)`, `OPS["clip"](x, a_max=1)`: through a name)
            row, via = self.removed.aliased_keyword_call(original) or (None, None)
        if row is None:  # (`functools.partial(jnp.reshape, newshape=s)`)
            row = self.removed.partial_keyword_call(original)
            if row is not None:
                return self._removed_site(row, original, updated, row.name, partial=True)
        if row is None:  # (`jax.xla_computation(f)(x)`: JAX114)
            row = self.removed.applied_call(original)
            if row is not None:
                return self._removed_site(row, original, updated, row.name)
        if row is None:  # (`PositionalSharding(jax.devices()).reshape(4, 1)`: JAX113)
            form = self.removed.sharding_call(original)
            if form is None:
                return updated
            row = self.removed.row_of_import(SHARDING)
            alone = self.removed.sharding_alone(original, form)
            return self._removed_site(row, original, updated, f"{SHARDING}.{form}", via=alone)
        return self._removed_site(row, original, updated, row.name, via=via)

    def removed_import(self, original, updated):
        found = self.removed.import_rows(original) if self.removed is not None else None
        if not found:
            return updated
        # (JAX113: the names of PositionalSharding whose every use a call site rewrites)
        uses = {
            id(alias): self.removed.sharding_uses_left(original, alias)
            for alias, row, _ in found
            if row.name == SHARDING
        }
        # (JAX114: the names of jax.xla_computation only called at once, `f(g)(x)`)
        uses.update(
            (id(alias), (not self.removed.applied_uses_left(original, alias), ()))
            for alias, row, real in found
            if row.applied_form and real == row.name
        )
        return self._removed_site(found[0][1], original, updated, aliases=found, via=uses)
