"""The rule registry: every handler of every module of this package, found by importing them.

A module becomes part of the codemod by defining handlers (`@handles(...)`, hcmigrate.rules.spec);
nothing lists them anywhere else. The registry sorts them by trigger for the engine, and its
rules (the records the handlers report) are what --list-rules, --select/--ignore, the README
table and the rule docs show.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from types import ModuleType

from hcmigrate.rules.spec import (
    CompatStrategy,
    Handler,
    LegacyCall,
    LegacyImport,
    LegacyReference,
    ModernCall,
    ModuleEnd,
    RemovedJaxApi,
    Rule,
    TriggerWords,
    UnbindableCall,
)


class Registry:
    def __init__(self, handlers: list[Handler]):
        self.handlers = tuple(handlers)
        by_code: dict[str, Rule] = {}
        for handler in handlers:
            for rule in handler.reports:
                if by_code.setdefault(rule.code, rule) is not rule:
                    raise ValueError(f"two rules have the code {rule.code}")
        self.rules: tuple[Rule, ...] = tuple(sorted(by_code.values(), key=lambda r: r.code))
        self.by_code = {rule.code: rule for rule in self.rules}

        def of(kind) -> list[Handler]:
            return [h for h in handlers if isinstance(h.trigger, kind)]

        # Handlers with a narrower trigger come first (a keyword, members, guard names); then
        # by code.
        def order(handler: Handler):
            trigger = handler.trigger
            narrow = (
                getattr(trigger, "keyword", None)
                or getattr(trigger, "members", None)
                or getattr(trigger, "guard_fallback", False)
            )
            return (not narrow, handler.reports[0].code if handler.reports else "")

        self.calls: dict[str, list[Handler]] = {}
        for handler in sorted(of(LegacyCall), key=order):
            self.calls.setdefault(handler.trigger.function, []).append(handler)
        self.unbindable = sorted(of(UnbindableCall), key=order)
        self._references = sorted(of(LegacyReference), key=order)
        self.modern_calls = sorted(of(ModernCall), key=order)
        self.removed: dict[str, list[Handler]] = {}  # by the code of the rows they handle
        for handler in sorted(of(RemovedJaxApi), key=order):
            self.removed.setdefault(handler.trigger.rule, []).append(handler)
        self.imports = sorted(of(LegacyImport), key=order)
        self.compat = sorted(of(CompatStrategy), key=order)
        self.module_end = sorted(of(ModuleEnd), key=order)
        self.words = TriggerWords([h.trigger for h in handlers])

    def references(self, member: str | None, guard_fallback: bool) -> list[Handler]:
        """The handlers for a use of `member` (None: the module), the narrower first;
        `guard_fallback`: the name is also what an import guard sets."""
        return [
            h
            for h in self._references
            if (h.trigger.members is None or member in h.trigger.members)
            and (guard_fallback or not h.trigger.guard_fallback)
        ]


def handlers_of(module: ModuleType) -> list[Handler]:
    """The handlers `module` defines (not those it imports)."""
    return [
        value
        for value in vars(module).values()
        if isinstance(value, Handler) and value.module == module.__name__
    ]


def discover(package: ModuleType) -> Registry:
    """The registry of every module of `package` (its `__path__`, all of it)."""
    handlers: list[Handler] = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        handlers += handlers_of(importlib.import_module(f"{package.__name__}.{info.name}"))
    return Registry(handlers)


@lru_cache(maxsize=1)
def registry() -> Registry:
    """Every rule of hcmigrate.rules, found on first use."""
    import hcmigrate.rules as package

    return discover(package)
