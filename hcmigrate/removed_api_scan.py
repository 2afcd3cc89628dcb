"""Could a file's text use a removed JAX API? The JAX-removals rules' word test, without libcst.

The host_callback rules' files all spell `host_callback`; a removed JAX name has no such word
(`jnp.round_`, `core.Primitive`, `jax.jax.lax`), and the words alone (`Primitive`, `clip`,
`round_`) fill JAX's own source and every numerical library. So the test reads the file's
imports of JAX the way Python binds them (`import jax.numpy as jnp` binds `jnp` to
`jax.numpy`; `from jax import core` binds `core` to `jax.core`) and looks for a removed name
after a name bound to its module (`jnp.round_`, `core.Primitive`, `jax.tree_map`), or
imported itself (`from jax import tree_map`, `from jax.config import config`), or as a bare
word after a star import of its module (`from jax.numpy import *`, then `round_(x)`). A use
through an alias made by assignment (`np2 = jnp`) is not seen; a use in a comment or string
passes (the codemod then finds nothing): a superset of the files with a rewritable use,
at the cost of a few regular-expression searches on the files that import JAX.

A module whose behaviour changed with no name removed (`jax.random`: JAX110's note) is
looked for the same way, as the rule sees a use: a call of an attribute of it through a name
bound to it or to its parent (`jax.random.normal(`, `jr.split(`, `random.uniform(` after
`from jax import random`).

The rows come from the rules' triggers (hcmigrate.rules.spec.RemovedJaxApi), so the
pre-filter (which must not import the rules) and the codemod test the same names.
"""

from __future__ import annotations

import re
from functools import lru_cache

from hcmigrate.jax_removals import Kind, RemovedApi, module_names

ROOT = "jax"
# JAX's distributions: the table's rows are names of either (`jaxlib.xla_extension`)
PACKAGES = (ROOT, "jaxlib")


def is_jax(real: str) -> bool:
    """Is the dotted name `real` one of JAX's (`jax`, `jax.numpy.clip`, `jaxlib.xla_extension`)?"""
    return real.split(".", 1)[0] in PACKAGES


# `import jax`, `import jax.numpy as jnp, numpy as np`, `from jax import (numpy as jnp, lax)`,
# `from jax.config import config`: what follows the keyword, to the end of the (continued)
# line or through a parenthesised list.
_IMPORT = re.compile(
    rb"(?m)^[ \t]*(?:from[ \t]+(\.*[\w.]+)[ \t]+)?import[ \t]+(\([^)]*\)|[^\n\\]*(?:\\\r?\n[^\n\\]*)*)"
)
_ALIAS = re.compile(rb"([\w.]+)(?:\s+as\s+(\w+))?")
_IMPORTORSKIP = re.compile(
    rb"""(?m)^(\w+)[ \t]*=[ \t]*(?:pytest\.)?importorskip\([ \t]*["']([\w.]+)["']"""
)
_MODULE_ALIAS = re.compile(rb"(?m)^(\w+)[ \t]*=[ \t]*([A-Za-z_][\w.]*)[ \t]*(?:#[^\n]*)?$")
_STAR_IMPORT = re.compile(rb"(?m)^[ \t]*from[ \t]+(jax(?:[ \t]*\.[ \t]*\w+)*)[ \t]+import[ \t]+\*")


def import_bindings(data: bytes) -> list[tuple[str, str, bool]]:
    """(the module or name an import statement takes from JAX, the local name it binds, is it
    a `from` import), for every import statement of the text that names JAX."""
    found: list[tuple[str, str, bool]] = []
    root = ROOT.encode()
    for module, names in _IMPORT.findall(data):
        if module and not module.startswith(root):
            continue
        for name, alias in _ALIAS.findall(names.split(b"#", 1)[0]):
            if not module and not name.startswith(root):
                continue
            real = f"{module.decode()}.{name.decode()}" if module else name.decode()
            if not module and not alias:  # `import jax.numpy` binds `jax`
                top = name.split(b".", 1)[0].decode()
                found.append((top, top, False))
                real_bound = real
            else:
                real_bound = (alias or name).decode()
            found.append((real, real_bound, bool(module)))
    # `jnp = jax.numpy` at the module's top level: the name stands for the module it is given
    # (hcmigrate.codemod.scopes follows the same assignments)
    bound = {b: r for r, b, _ in found}
    for name, value in _IMPORTORSKIP.findall(data):  # (`jax = pytest.importorskip("jax")`)
        if is_jax(value.decode()):
            found.append((value.decode(), name.decode(), False))
            bound[name.decode()] = value.decode()
    modules = module_names()
    for name, value in _MODULE_ALIAS.findall(data):
        root, _, rest = value.decode().partition(".")
        real = (f"{bound[root]}.{rest}" if rest else bound[root]) if root in bound else None
        if real in modules:  # (a module: `clip = jnp.clip` is hcmigrate.codemod.removed_aliases')
            found.append((real, name.decode(), False))
    return found


class RemovedApiScan:
    """The word test of a set of rows (every row of hcmigrate.jax_removals some rule handles)."""

    def __init__(self, rows: tuple[RemovedApi, ...]):
        self.rows = tuple(r for r in rows if r.kind is not Kind.BEHAVIOUR)
        # A module whose behaviour changed (`jax.random`): a file that calls into it is a
        # candidate too (JAX110's note), found by its calls, not by the module's name alone.
        self.behaviour = tuple(r for r in rows if r.kind is Kind.BEHAVIOUR)
        self.changed_modules = frozenset(r.name for r in self.behaviour)
        self.names = frozenset(r.name for r in self.rows if r.kind is not Kind.METHOD)
        # Names that a use spells as an attribute (`jax.tree_map`): not modules that live on as
        # an attribute of their parent (`jax.config.update` is fine; `import jax.config` is not).
        self.attributes = frozenset(
            r.name for r in self.rows if r.kind is not Kind.METHOD and not only_imported(r)
        )
        self.modules = frozenset(r.name for r in self.rows if r.kind is Kind.MODULE)
        # functions that lost a keyword (a call through another name of the function:
        # hcmigrate.codemod.removed_aliases)
        self.keyword_functions = frozenset(r.name for r in self.rows if r.kind is Kind.KEYWORD)
        methods = [
            re.escape(method_name(r).encode()) + (rb"\s*\(\s*\)" if is_call(r) else rb"\b")
            for r in self.rows
            if r.kind is Kind.METHOD
        ]
        self._methods = re.compile(rb"\.\s*(?:" + b"|".join(methods) + rb")") if methods else None

    def __bool__(self) -> bool:
        return bool(self.rows or self.behaviour)

    @property
    def words(self) -> frozenset[str]:
        """What a statement holding a site contains (the partial parse's seeds): a removed
        name as an attribute (`.tree_map`: a name a `from` import binds is no site, its import
        is); a function that lost a keyword (`clip`, also called by a bare name) or that is
        rewritten where called (`safe_map`, called by a bare name after its import); a method
        (`.device_buffer`, `.device()`); a call into a module whose behaviour changed
        (`random.`). Not the modules that live on as attributes (`jax.config`: only imports)."""
        words = set()
        for row in self.rows:
            last = row.name.rsplit(".", 1)[1]
            if row.kind in (Kind.KEYWORD, Kind.CALL_BEHAVIOUR) or row.call_form or row.applied_form:
                # (`safe_map(...)`, `xla_computation(f)(x)`: by a bare name too)
                words.add(last)
            elif row.kind is Kind.METHOD:
                words.add("." + last + ("()" if is_call(row) else ""))
            elif row.kind is Kind.MODULE and not only_imported(row):
                # (a module is used as `jax.ad.JVPTracer`: the dot after keeps `.ad` from
                # matching every `.add(` of a module)
                words.add("." + last + ".")
            elif not only_imported(row):
                words.add("." + last)
        words.update(row.name.rsplit(".", 1)[1] + "." for row in self.behaviour)
        return frozenset(words)

    def rests_under(self, module: str) -> tuple[str, ...]:
        """The rows' names below `module`, relative to it ("jax.numpy" -> "round_", ...)."""
        return _rests(self.attributes, module)

    def star_names(self, module: str) -> tuple[str, ...]:
        """The rows' names a star import of `module` may bind (`from jax.numpy import *`:
        "round_", "clip", ...; `from jax import *`: "tree_map", "jax", ...)."""
        return tuple(r for r in self.rests_under(module) if "." not in r)

    def is_removed(self, real: str, from_import: bool = False) -> bool:
        """Is `real` (what an import takes) a removed name, or inside a removed module?
        (`from jax import config` takes the attribute, which lives on.)"""
        if real in self.names:
            return not (from_import and real not in self.attributes)
        return any(real.startswith(m + ".") for m in self.modules)

    def may_use(self, data: bytes | str) -> bool:
        """Could the text use one of the rows, or call into a module whose behaviour changed?
        (A superset test, see the module docstring.)"""
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        if ROOT.encode() not in data:
            return False
        return self.may_use_removed(data) or self.may_call_changed(data)

    def may_call_changed(self, data: bytes) -> bool:
        """Could the text call into a module whose behaviour changed (`jax.random.normal(`)?"""
        if not self.changed_modules:
            return False
        for real, bound, _ in import_bindings(data):
            for module in self.changed_modules:
                if module == real or module.startswith(real + "."):
                    pattern = _calls_pattern(bound, module[len(real) + 1 :])
                    if pattern.search(data):
                        return True
        return False

    def may_use_removed(self, data: bytes | str) -> bool:
        """Could the text use one of the removed names?"""
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        if not self.rows or ROOT.encode() not in data:
            return False
        if self._methods is not None and self._methods.search(data):
            return True
        for real, bound, from_import in import_bindings(data):
            if self.is_removed(real, from_import):
                return True
            pattern = _uses_pattern(bound, self.rests_under(real))
            if pattern is not None and pattern.search(data):
                return True
        for module in _STAR_IMPORT.findall(data):
            pattern = _bare_pattern(self.star_names(re.sub(rb"\s", b"", module).decode()))
            if pattern is not None and pattern.search(data):
                return True
        return False


def only_imported(row: RemovedApi) -> bool:
    """A removed module whose name lives on as an attribute of its parent (`jax.config`, now
    the config object): only an import of it is a use."""
    return row.kind is Kind.MODULE and row.replacement == row.name.rsplit(".", 1)[0]


def method_name(row: RemovedApi) -> str:
    """A METHOD row's attribute name ("jax.Array.device_buffer" -> "device_buffer")."""
    return row.name.rsplit(".", 1)[1]


def is_call(row: RemovedApi) -> bool:
    """A METHOD row removed as a method whose name lives on as something else (`x.device()`,
    now a property `x.device`): only the call is a use (its replacement is a call too)."""
    return bool(row.replacement) and row.replacement.endswith("()")


@lru_cache(maxsize=None)
def _rests(names: frozenset[str], module: str) -> tuple[str, ...]:
    prefix = module + "."
    return tuple(sorted(n[len(prefix) :] for n in names if n.startswith(prefix)))


@lru_cache(maxsize=4096)
def _calls_pattern(bound: str, rest: str) -> re.Pattern[bytes]:
    """A call of an attribute of `bound.rest` (`rest` "": of `bound` itself)."""
    parts = [bound, *rest.split(".")] if rest else [bound]
    dotted = rb"\s*\.\s*".join(re.escape(p.encode()) for p in parts)
    return re.compile(rb"(?<![\w.])" + dotted + rb"\s*\.\s*\w+\s*\(")


@lru_cache(maxsize=256)
def _bare_pattern(names: tuple[str, ...]) -> re.Pattern[bytes] | None:
    """Any of `names` as a word of its own (not an attribute)."""
    if not names:
        return None
    return re.compile(rb"(?<![\w.])(?:" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b")


@lru_cache(maxsize=4096)
def _uses_pattern(bound: str, rests: tuple[str, ...]) -> re.Pattern[bytes] | None:
    """`bound.rest` for any of `rests`, blanks allowed around the dots."""
    if not rests:
        return None
    dotted = [rb"\s*\.\s*".join(re.escape(p.encode()) for p in r.split(".")) for r in rests]
    return re.compile(
        rb"(?<![\w.])" + re.escape(bound.encode()) + rb"\s*\.\s*(?:" + b"|".join(dotted) + rb")\b"
    )
