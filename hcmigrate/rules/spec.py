"""What a rule is, without libcst: its record (code, level, docs, examples) and its trigger.

A rule module (any module of this package) declares its records and decorates each rewrite
with `@handles(trigger, reports=...)`; hcmigrate.rules.registry finds them. Triggers are plain
data: the engine dispatches by them, and the pre-filter (which runs before libcst is imported)
and the partial parse derive from them which words a file must contain for a rule to apply.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

from hcmigrate.diagnostics import Level
from hcmigrate.facts import LEGACY_MODULE
from hcmigrate.jax_removals import RemovedApi, rows_of
from hcmigrate.removed_api_scan import RemovedApiScan

LEGACY_WORD = LEGACY_MODULE.rsplit(".", 1)[1]  # every use of the legacy module spells it


@dataclass(frozen=True)
class Example:
    """A rule at work, Fixit-style: `before` is migrated (with `options`, an hcmigrate.options.Options
    keyword dict) to exactly `after`, with exactly `diagnostics` (`line:col CODE [level] message`).
    The test suite runs every example; the rule docs show them."""

    before: str
    after: str
    diagnostics: tuple[str, ...]
    options: dict = field(default_factory=dict)
    title: str = ""


@dataclass(frozen=True)
class Rule:
    """A rule, Ruff-style: a code, a name, a default level and what it does to behaviour."""

    code: str
    name: str
    level: Level
    legacy: str  # the legacy form it matches
    modern: str  # what it writes
    summary: str
    behaviour_note: str = ""  # what changes at run time (README table, --list-rules)
    examples: tuple[Example, ...] = ()


# ------------------------------------------------------------------------------------ triggers
@dataclass(frozen=True)
class LegacyCall:
    """A call of a legacy function (`hcb.id_tap(...)`, through any alias or import form) whose
    arguments bind to its legacy signature. With `keyword`: only calls passing it (such
    handlers are tried before the function's general one)."""

    function: str
    keyword: str | None = None


@dataclass(frozen=True)
class UnbindableCall:
    """A call of a legacy function whose arguments cannot be bound statically."""


@dataclass(frozen=True)
class LegacyReference:
    """Any other use of a legacy name: the module or a member used as a value, an attribute of
    it, an exception class. With `members`: only those (None: the module itself); with
    `guard_fallback`: only names an import guard also sets (`except ImportError: hcb = None`).
    Such narrower handlers are tried before the general ones."""

    members: tuple[str | None, ...] | None = None
    guard_fallback: bool = False


@dataclass(frozen=True)
class ModernCall:
    """A call of a modern API object (`callees`: qualified names) passing `keyword`, or whose
    first argument is one of the string literals `first_argument`."""

    callees: tuple[str, ...]
    keyword: str | None = None
    first_argument: tuple[str, ...] = ()

    @property
    def callee_tail(self) -> str:
        """The last part of the callee's name: what any spelling of the call ends with."""
        return self.callees[0].rsplit(".", 1)[-1]

    @property
    def words(self) -> tuple[str, ...]:
        """Words every file with a matching call contains."""
        if self.keyword is not None:
            return (self.callee_tail, self.keyword)
        return (self.callee_tail, os.path.commonprefix(list(self.first_argument)))


@dataclass(frozen=True)
class LegacyImport:
    """An import statement binding legacy names, once the rewrite is done (native strategy):
    what to do with it now that some uses are gone."""


@dataclass(frozen=True)
class CompatStrategy:
    """With `--strategy compat`: each import binding legacy names, and each spelled-out use of
    the legacy module (`jax.experimental.host_callback.id_tap`)."""


@dataclass(frozen=True)
class RemovedJaxApi:
    """A use of a removed JAX API of the rows of hcmigrate.jax_removals that name `rule` (a
    code): a name or module used through any import form or alias (`jax.tree_map`,
    `jnp.round_`, `core.Primitive`), an import of one (`from jax import tree_map as tm`), a
    call passing a removed keyword (`jnp.clip(x, a_min=0)`), a removed method's name
    (`x.device_buffer`), or a call into a module whose behaviour changed (`jax.random.normal`).
    Uses are resolved like legacy names: a local `tree_map`, numpy's `np.clip` are not sites."""

    rule: str

    @property
    def rows(self) -> tuple[RemovedApi, ...]:
        return rows_of(self.rule)


@dataclass(frozen=True)
class ModuleEnd:
    """Once per module, after the rewrite, with its diagnostics (also for modules that did not
    need rewriting)."""


Trigger = (
    LegacyCall
    | UnbindableCall
    | LegacyReference
    | ModernCall
    | RemovedJaxApi
    | LegacyImport
    | CompatStrategy
    | ModuleEnd
)
LEGACY_TRIGGERS = (LegacyCall, UnbindableCall, LegacyReference, LegacyImport, CompatStrategy)


@dataclass(frozen=True)
class Handler:
    """A rewrite, the trigger that dispatches sites to it and the rules it may report.

    Sites of one trigger go to the matching handlers in turn (the more specific first); the
    first that reports a diagnostic or rewrites the site handles it. `plan`, for legacy calls:
    what the rule decides about the site before any rewrite (see hcmigrate.codemod.plan)."""

    trigger: Trigger
    reports: tuple[Rule, ...]
    rewrite: Callable[..., Any]
    plan: Callable[..., Any] | None = None
    module: str = ""

    def __call__(self, site, ctx):
        return self.rewrite(site, ctx)


def handles(trigger: Trigger, *, reports: tuple[Rule, ...], plan: Callable | None = None):
    """Decorator: the function rewrites the sites of `trigger`, reporting `reports`."""

    def register(function: Callable) -> Handler:
        return Handler(trigger, tuple(reports), function, plan, function.__module__)

    return register


# ------------------------------------------------------------------------------------ words
class TriggerWords:
    """What text must contain for any of `triggers` to apply: the pre-filter's needles and the
    partial parse's seed words, derived from the triggers alone."""

    def __init__(self, triggers):
        self.modern = tuple(t for t in triggers if isinstance(t, ModernCall))
        # The JAX-removals rules' rows: a test of their own (hcmigrate.removed_api_scan), as
        # their names share no word with host_callback's.
        self.removed_rows = tuple(
            row for t in triggers if isinstance(t, RemovedJaxApi) for row in t.rows
        )
        self.removed = RemovedApiScan(self.removed_rows)
        uses_legacy = any(isinstance(t, LEGACY_TRIGGERS) for t in triggers)
        sets = [(LEGACY_WORD,)] if uses_legacy else []
        sets += [t.words for t in self.modern]
        self.needle_sets: tuple[tuple[str, ...], ...] = _without_implied(sets)
        self.keywords = frozenset(t.keyword for t in self.modern if t.keyword)
        self.first_arguments = frozenset(a for t in self.modern for a in t.first_argument)
        self.callee_tails = frozenset(t.callee_tail for t in self.modern)
        # Words a site's statement contains besides the legacy names (partial parse seeds).
        self.seed_words = (
            frozenset([LEGACY_WORD] if uses_legacy else [])
            | frozenset(w for t in self.modern for w in t.words[1:] if w)
            | self.removed.words
        )

    def may_apply(self, text: str, with_changed_modules: bool = True) -> bool:
        """Could `text` hold a site of a trigger? (A superset test on words.) Without
        `with_changed_modules`: a site other than a call into a module whose behaviour
        changed (JAX110's note)."""
        if any(all(w in text for w in needles) for needles in self.needle_sets):
            return True
        if with_changed_modules:
            return self.removed.may_use(text)
        return self.removed.may_use_removed(text)


def _without_implied(sets: list[tuple[str, ...]]) -> tuple[tuple[str, ...], ...]:
    """The word sets, less those another one implies: a text that holds every word of
    `("update", "jax_host_callback_")` holds `("host_callback",)`, a cheaper test."""

    def implies(small: tuple[str, ...], big: tuple[str, ...]) -> bool:
        return all(any(word in other for other in big) for word in small)

    kept: list[tuple[str, ...]] = []
    for words in dict.fromkeys(sets):
        if any(implies(other, words) for other in kept):
            continue
        kept = [other for other in kept if not implies(words, other)] + [words]
    return tuple(kept)
