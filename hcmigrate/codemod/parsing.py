"""Parsing a module for the codemod: libcst for the statements a rule may read or change (all of
them, or only those hcmigrate.codemod.partial_parse picks), Python's ast for the scopes."""

from __future__ import annotations

import ast
import re

import libcst as cst

from hcmigrate.options import Options
from hcmigrate.codemod.legacy_names import reexported_module
from hcmigrate.codemod.node_index import NodeIndex
from hcmigrate.codemod.partial_parse import identifiers, parse_needed
from hcmigrate.codemod.removed_aliases import value_aliases
from hcmigrate.codemod.removed_sharding import ShardingUses
from hcmigrate.codemod.removed_apis import calls_into
from hcmigrate.codemod.scopes import ScopeAnalysis
from hcmigrate.errors import MigrationError
from hcmigrate.facts import LEGACY_MODULE, LEGACY_PUBLIC_NAMES
from hcmigrate.rules.spec import LEGACY_WORD, TriggerWords
from hcmigrate.syntax import compile_error

_STAR_IMPORT = re.compile(r"import[\s\\(]*\*")


def might_use_host_callback(text: str, options: Options, words: TriggerWords) -> bool:
    """False only when `text` cannot hold a site of any rule (directly, or through a module of
    `options.reexports` that re-exports legacy names)."""
    return (
        words.may_apply(text)
        or might_use_reexports(text, options)
        or might_call_removed_exports(text, options)
    )


def might_call_removed_exports(text: str, options: Options) -> bool:
    """Could `text` call a JAX function that lost a keyword through a name another module of
    the run binds it to (hcmigrate.removed_exports)?"""
    return bool(options.removed_exports) and any(
        name.rsplit(".", 1)[1] in text for name, _ in options.removed_exports
    )


def might_use_reexports(text: str, options: Options) -> bool:
    """Could `text` use a legacy name another module of the run re-exports?"""
    return any(name.rsplit(".", 1)[-1] in text for name, _ in options.reexports)


def parse_whole(text: str, filename: str) -> cst.Module:
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        # CPython locates syntax errors more precisely than libcst's parser; prefer its words.
        precise = compile_error(text, filename)
        if precise is not None:
            raise MigrationError(
                f"syntax error: {precise.msg}", precise.lineno or 1, precise.offset or 1
            ) from None
        raise MigrationError(
            f"cannot parse: {error.message}", error.raw_line, error.raw_column + 1
        ) from None


def parse_partially(
    text: str, options: Options, filename: str, words: TriggerWords
) -> tuple[cst.Module, NodeIndex, ScopeAnalysis] | None:
    """Module, node index and scopes with libcst parsing only the top-level statements the
    codemod needs (hcmigrate.codemod.partial_parse), or the whole module when that does not
    apply; None when CPython rejects the text (the whole-module parse then reports the error)."""
    if might_call_removed_exports(text, options):
        return None  # (the calls through them are not found by words: the whole module)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    scopes = ScopeAnalysis(text, tree)
    reexports = dict(options.reexports)
    seeds = seed_words(text, scopes, reexports, words)
    sites = None
    if not words.may_apply(text, with_changed_modules=False) and not might_use_reexports(
        text, options
    ):  # only JAX110's note can apply: its sites, found from the scopes, are all libcst reads
        sites = calls_into(scopes, words.removed.changed_modules)
    partial = parse_needed(text, tree, scopes.line_starts, seeds, sites)
    if partial is not None:
        index = NodeIndex(
            partial.module, reexports, unparsed_names=lambda: identifiers(partial.verbatim)
        )
        # What the regions were picked by must hold: the module prints back to the very text,
        # and every name the index found the legacy API bound to was looked for.
        if index.text == text and index.legacy_roots <= seeds:
            return partial.module, index, scopes
    module = parse_whole(text, filename)
    return module, NodeIndex(module, reexports), scopes


def seed_words(
    text: str, scopes: ScopeAnalysis, reexports: dict[str, str], words: TriggerWords
) -> set[str]:
    """The words a statement the codemod may rewrite contains: the triggers' words, and every
    name an import of the legacy module, or of a module that re-exports it, binds."""
    seeds = set(words.seed_words)
    for bindings in scopes.imports.values():
        for binding in bindings:
            real = binding.real or ""
            if LEGACY_WORD in real or real in reexports or reexported_module(real, reexports):
                seeds.add(binding.key.split(".", 1)[0])
    if LEGACY_MODULE in text:
        seeds.add(LEGACY_MODULE.split(".", 1)[0])  # `jax.experimental.host_callback.id_tap(...)`
    if _STAR_IMPORT.search(text):
        seeds |= LEGACY_PUBLIC_NAMES  # `from jax.experimental.host_callback import *`
    for module in scopes.star_imports:  # `from jax.numpy import *`, then `round_(x)`
        seeds.update(words.removed.star_names(module))
    if words.removed.may_use_removed(text):  # `clip = jnp.clip`, then `clip(x, a_min=0)`
        seeds.update(value_aliases(scopes, words.removed.keyword_functions).names)
        # (`c(x, a_min=0)`, `xc(f)(x)`, `PS(jax.devices())`: a removed name imported as `c`)
        functions = words.removed.keyword_functions
        seeds.update(
            binding.key
            for bindings in scopes.imports.values()
            for binding in bindings
            if binding.real in functions or binding.real in words.removed.names
        )
        if "PositionalSharding" in text:  # (`s = PositionalSharding(...)`, then `s.reshape`)
            seeds.update(ShardingUses(scopes).names)
    return seeds


def printed_back_error(text: str, printed: str) -> MigrationError:
    """The error for a module libcst does not print back byte for byte."""
    at = next((i for i, (a, b) in enumerate(zip(text, printed)) if a != b), len(printed))
    line = text.count("\n", 0, at) + 1
    return MigrationError(
        f"cannot parse this file back byte for byte: libcst prints line {line} differently "
        "(a libcst limitation); file left unchanged",
        line,
        1,
    )
