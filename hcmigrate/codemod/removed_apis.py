"""Which nodes of a module use a removed JAX API (hcmigrate.jax_removals), for the dispatch.

As for legacy names (hcmigrate.codemod.legacy_names), text never decides: `jnp.round_` is a
use of `jax.numpy.round_` only when the scope analysis says `jnp` was bound by an import of
`jax.numpy` (`import jax.numpy as jnp`, `from jax import numpy as jnp`, in any scope); numpy's
`np.clip`, a local function `tree_map`, a parameter `core` are something else. A name that a
`from` import binds (`from jax import tree_map as tmap`) is no site of its own: the import is
(its rewrite keeps every use of the name). Methods have no import: a removed method is a use
only where its name is JAX's alone (`x.device_buffer`) or, for a name other libraries use too
(`x.device()`), where the receiver is visibly a JAX array (the value of a call into `jax`).

A star import (`from jax.numpy import *`) binds nothing the scope analysis can see: a bare
name (`round_`, `clip`, `tree_map`, `jax`) is taken for the star-imported module's only where
nothing else can bind it: no binding in any enclosing scope, not a builtin, and that star
import the module's only one (another, `from numpy import *`, may bind the same name: then
the name is left alone). Where the code ran on its legacy JAX, such a name was that module's.

An import that is already guarded is no site: one in an `except ImportError:` handler is the
fallback for the older JAX it was written for (`try: import jax.extend.linear_util as lu` /
`except ImportError: import jax.linear_util as lu`: the fallback runs only where the newer
import fails), and one in a `try:` whose handler binds the same names (`except ImportError:
xla_pmap_p = None`) is the guard the JAX111 rewrite writes (so a second run changes nothing).
"""

from __future__ import annotations

import ast
import re

import libcst as cst

from hcmigrate.codemod.add_imports import catches_import_error
from hcmigrate.codemod.removed_aliases import Alias, ValueAliases, value_aliases
from hcmigrate.codemod.removed_sharding import CONSTRUCT, REPLICATE, RESHAPE, ShardingUses
from hcmigrate.codemod.scopes import BUILTIN, IMPORT, LOCAL
from hcmigrate.jax_removals import Kind, RemovedApi
from hcmigrate.removed_api_scan import (
    RemovedApiScan,
    is_call,
    is_jax,
    method_name,
    only_imported,
)
from hcmigrate.rules.nodes import dotted_name


def calls_into(scopes, modules: frozenset[str]) -> list[int]:
    """Offsets of the calls of an attribute of one of `modules` (`jax.random.normal(...)`),
    read from the scope analysis (hcmigrate.codemod.scopes.ScopeAnalysis) alone: the sites of
    a module's behaviour note, as `RemovedApis.use` finds them, before libcst parses anything."""
    found = []
    for node in ast.walk(scopes.tree):
        if type(node) is not ast.Call or type(node.func) is not ast.Attribute:
            continue
        parts, root = [], node.func
        while type(root) is ast.Attribute:
            parts.append(root.attr)
            root = root.value
        if type(root) is not ast.Name:
            continue
        dotted = ".".join([root.id, *reversed(parts)])
        names = scopes.qualified_names(scopes.offset(root), dotted)
        if len(names) == 1:
            (name,) = names
            if name.source == IMPORT and name.name.rpartition(".")[0] in modules:
                found.append(scopes.offset(node))
    return found


class RemovedApis:
    def __init__(
        self,
        resolver,
        scan: RemovedApiScan,
        exports: dict[str, str] | None = None,
        module_name: str | None = None,
    ):
        self._resolver = resolver  # hcmigrate.codemod.resolution.Resolver
        self.scan = scan
        # names other modules of the run bind to a function that lost a keyword
        # (hcmigrate.options.Options.removed_exports)
        self._exports = exports or {}
        self._module_name = module_name or ""  # (relative imports of them)
        self._by_name = {r.name: r for r in scan.rows if r.kind in (Kind.ATTRIBUTE, Kind.MODULE)}
        self._keywords: dict[str, list[RemovedApi]] = {}
        for row in scan.rows:
            if row.kind is Kind.KEYWORD:
                self._keywords.setdefault(row.name, []).append(row)
        # functions rewritten where called (`jax.util.safe_map(f, xs)` -> `list(map(f, xs))`)
        self._call_forms = {r.name: r for r in scan.rows if r.call_form}
        # functions whose result is rewritten where called at once (`jax.xla_computation(f)(x)`)
        self._applied_forms = {r.name: r for r in scan.rows if r.applied_form}
        self._removed_keywords = frozenset(
            row.keyword for rows in self._keywords.values() for row in rows
        )
        # functions whose calls changed meaning for some arguments (`jnp.linalg.solve`)
        self._changed_calls = {r.name: r for r in scan.rows if r.kind is Kind.CALL_BEHAVIOUR}
        self._keyword_tails = tuple(
            {
                name.rsplit(".", 1)[1]
                for name in [*self._keywords, *self._call_forms, *self._changed_calls]
            }
        )
        self._methods = {method_name(r): r for r in scan.rows if r.kind is Kind.METHOD}
        self._owned: frozenset[str] | None = None  # (_own_attributes)
        self._behaviour = {r.name: r for r in scan.behaviour}
        stars = resolver.scopes.star_imports
        # the module of the one star import that may bind a removed name (see the docstring)
        self._star = stars[0] if len(stars) == 1 and is_jax(stars[0]) else None
        self._star_names = frozenset(scan.star_names(self._star)) if self._star else frozenset()
        # A module the scan finds no removed name in (one with host_callback only) is walked
        # for calls into the modules whose behaviour changed alone (`jax.random.normal`).
        self.may_use = scan.may_use_removed(resolver.index.text) or bool(self._exports)
        self.roots = self._jax_roots()
        # the functions that lost a keyword, bound to other names (`clip = jnp.clip`, ...)
        self.aliases: ValueAliases | None = (
            value_aliases(resolver.scopes, scan.keyword_functions) if self.may_use else None
        )
        # PositionalSharding's forms with a NamedSharding spelling (JAX113)
        self.sharding: ShardingUses | None = (
            ShardingUses(resolver.scopes)
            if self.may_use and "PositionalSharding" in resolver.index.text
            else None
        )

    def _jax_roots(self) -> set[str]:
        """The local names imports of JAX bind (`jax`, `jnp`, `core`, `tree_map`); in a module
        with no removed name, those that can reach a module whose behaviour changed."""
        text = self._resolver.index.text
        behaviour = [m for m in self._behaviour if m.rsplit(".", 1)[1] in text]
        if not self.may_use and not behaviour:
            return set()
        roots = set()
        exporters = {name.rsplit(".", 1)[0] for name in self._exports}
        for bindings in self._resolver.scopes.imports.values():
            for binding in bindings:
                real = binding.real or ""
                absolute = self._absolute(real) if exporters else real
                if absolute in self._exports or any(
                    e == absolute or e.startswith(absolute + ".") or absolute.startswith(e + ".")
                    for e in exporters
                ):  # (`from pkg import backend as xnp`: `xnp.clip(...)`)
                    roots.add(binding.key.split(".", 1)[0])
                elif self.may_use and is_jax(real):
                    roots.add(binding.key.split(".", 1)[0])
                elif any(m == real or m.startswith(real + ".") for m in behaviour):
                    roots.add(binding.key.split(".", 1)[0])
        for binding in self._resolver.scopes.module_aliases:  # (`jnp = jax.numpy`)
            if self.may_use or any(m.startswith(binding.real + ".") for m in behaviour):
                roots.add(binding.key)
        return roots

    # ---------------------------------------------------------------- which nodes to walk
    def hot_nodes(self) -> list[cst.CSTNode]:
        """The nodes the rewrite must walk down to: names bound to JAX, removed methods'
        names, imports of removed names."""
        index = self._resolver.index
        if not self.may_use:
            return [name for name in index.name_nodes if name.value in self.roots]
        methods = self._methods
        aliased = self.aliases.names if self.aliases is not None else ()
        nodes: list[cst.CSTNode] = [
            name
            for name in index.name_nodes
            if name.value in self.roots
            or name.value in methods
            or name.value in self._star_names
            or name.value in aliased
            or (self.sharding is not None and name.value in self.sharding.names)
        ]
        nodes += [node for node in index.import_nodes if self.import_rows(node)]
        return nodes

    # ---------------------------------------------------------------- uses
    def _qualified(self, node: cst.CSTNode) -> str | None:
        """The one name `node` refers to through imports (None: none, a local, or several),
        a star import included."""
        names = self._resolver.qualified_names(node)
        if not names:
            return self._through_star(node)
        if len(names) != 1:
            return None
        (name,) = names
        return name.name if name.source == IMPORT else None

    def star_of(self, node: cst.CSTNode) -> str:
        """The module of the star import that binds `node`'s root name ("": none does)."""
        return self._star or "" if self._through_star(node) else ""

    def _through_star(self, node: cst.CSTNode) -> str | None:
        """`round_(x)` after `from jax.numpy import *`: "jax.numpy.round_", where the root
        name is one of the rows' names the module's only star import may bind and nothing
        else binds it (the scope analysis found no binding, not even a builtin)."""
        while isinstance(node, cst.Call):
            node = node.func
        full = dotted_name(node)
        if self._star is None or full is None or full.split(".", 1)[0] not in self._star_names:
            return None
        if self._resolver.qualified_names(node):
            return None  # (bound by an import, a definition, an assignment, or a builtin)
        root = node
        while isinstance(root, cst.Attribute):
            root = root.value
        parent = self._resolver.parent(root)
        if isinstance(parent, cst.Attribute) and parent.attr is root:
            return None  # (`x.clip`: an attribute, not a name)
        return f"{self._star}.{full}"

    def use(self, node: cst.CSTNode) -> tuple[RemovedApi, str] | None:
        """(row, what the node refers to) for an attribute that is a removed name
        (`jax.tree_map`), a call into a module whose behaviour changed (`jax.random.normal`
        called), or a removed method (`x.device_buffer`)."""
        if isinstance(node, cst.Name) and not self.star_of(node):
            return None  # (a bare name bound by a `from` import: the import is the site)
        if isinstance(node, cst.Attribute) and node.attr.value in self._methods:
            if self.target_of(node):
                return None  # (`self.device_buffer = ...`: a value's own attribute, set)
            found = self._method(node)
            if found is not None:
                return found
        if dotted_name(node) is None:
            return None
        qualified = self._qualified(node)
        if qualified is None:
            return None
        if self.sharding is not None and self._called(node):
            parent = self._resolver.parent(node)
            if self.sharding_call(parent) is not None:
                return None  # (the call is the site)
        if qualified in self._applied_forms and self._called(node):
            outer = self._resolver.parent(self._resolver.parent(node))
            if isinstance(outer, cst.Call) and self.applied_call(outer) is not None:
                return None  # (the outer call is the site)
        row = self._by_name.get(qualified)
        if row is not None and row.call_form and self.call_form_site(node):
            return None  # (the call is the site)
        if row is not None and not only_imported(row):
            return row, qualified
        parent, _, _ = qualified.rpartition(".")
        row = self._behaviour.get(parent)
        if row is not None and self._called(node):
            return row, qualified
        return None

    def _called(self, node: cst.CSTNode) -> bool:
        parent = self._resolver.parent(node)
        return isinstance(parent, cst.Call) and parent.func is node

    def target_of(self, node: cst.CSTNode) -> str:
        """What binds `node` where it is no read ("" where it is one): the target of an
        assignment (`jax.tree_map = ...`, `a, x.device_buffer = ...`), an augmented or
        annotated assignment, `del`, a `for` or `with ... as` target. A rename there would
        set or delete another name (`del jax.tree.map` deletes JAX's own function), and a
        call (`x.addressable_data(0)`) cannot be assigned to."""
        parent = self._resolver.parent
        child, above = node, parent(node)
        while isinstance(above, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
            child, above = above, parent(above)
        if isinstance(above, cst.AssignTarget) and above.target is child:
            return "assigned"
        if isinstance(above, cst.AugAssign) and above.target is child:
            return "assigned (augmented assignment)"
        if isinstance(above, cst.AnnAssign) and above.target is child:
            return "assigned"
        if isinstance(above, cst.Del):
            return "deleted"
        if isinstance(above, (cst.For, cst.CompFor)) and above.target is child:
            return "the target of a `for`"
        if isinstance(above, cst.AsName) and above.name is child:
            return "the target of a `with ... as`"
        return ""

    def _own_attributes(self) -> frozenset[str]:
        """The removed methods' names the module gives values of its own: an attribute it
        assigns or deletes (`self.device_buffer = ...`), a name a class body binds."""
        if self._owned is None:
            names = set()
            for node in ast.walk(self._resolver.scopes.tree):
                if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
                    names.add(node.attr)
                elif isinstance(node, ast.ClassDef):
                    for statement in node.body:
                        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                            names.add(statement.name)
                        for target in getattr(
                            statement, "targets", [getattr(statement, "target", None)]
                        ):
                            if isinstance(target, ast.Name):
                                names.add(target.id)
            self._owned = frozenset(names & set(self._methods))
        return self._owned

    def _method(self, node: cst.Attribute) -> tuple[RemovedApi, str] | None:
        row = self._methods[node.attr.value]
        receiver = node.value
        if dotted_name(receiver) is not None and self._qualified(receiver) is not None:
            return None  # an attribute of an imported module or class, not of a value
        if node.attr.value in self._own_attributes() and not self._is_jax_array(receiver):
            return None  # (the module's own values have an attribute of that name)
        if is_call(row):
            parent = self._resolver.parent(node)
            if not (self._called(node) and not parent.args and self._is_jax_array(receiver)):
                return None
        return row, row.name

    def _is_jax_array(self, node: cst.BaseExpression) -> bool:
        """Is `node` visibly a JAX array: a call into `jax`, or a name assigned one?"""
        if isinstance(node, cst.Name):
            value = self._resolver.visible_value(node)
            if value is None:  # (its assignment may be in a statement left unparsed)
                return self._assigned_from_jax(node)
            return self._is_jax_array(value)
        if isinstance(node, cst.Call):
            callee = self._qualified(node.func)
            return callee is not None and is_jax(callee)
        return False

    def _assigned_from_jax(self, name: cst.Name) -> bool:
        """Is the one binding of `name` an assignment `name = <call into jax>`? (Read from the
        scope analysis' ast, which holds the statements the partial parse left out.)"""
        scopes = self._resolver.scopes
        offset = self._resolver.index.start_offset(name)
        bindings = scopes.bindings_at(offset, name.value) if offset is not None else []
        if len(bindings) != 1 or bindings[0].kind != LOCAL or bindings[0].is_def:
            return False
        at = bindings[0].offset
        for node in ast.walk(scopes.tree):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and scopes.offset(node.targets[0]) == at
            ):
                func = node.value.func if isinstance(node.value, ast.Call) else None
                dotted = ast.unparse(func) if func is not None else ""
                if not re.fullmatch(r"[\w.]+", dotted):
                    return False
                names = scopes.qualified_names(scopes.offset(func), dotted)
                return bool(names) and all(n.source == IMPORT and is_jax(n.name) for n in names)
        return False

    def call_form_site(self, func: cst.CSTNode) -> bool:
        """Is `func` called, with no keyword (`safe_map` has none), where the builtins its
        call form names are the builtins (no binding of `list` or `map` shadows them)?"""
        call = self._resolver.parent(func)
        if not (isinstance(call, cst.Call) and call.func is func):
            return False
        if any(a.keyword is not None for a in call.args):
            return False
        root = func
        while isinstance(root, cst.Attribute):
            root = root.value
        offset = self._resolver.index.start_offset(root)
        if offset is None:
            return False
        row = self._by_name.get(self._qualified(func) or "")
        names = re.findall(r"(\w+)\(", row.call_form) if row is not None else []
        scopes = self._resolver.scopes
        return all(
            all(b.kind == BUILTIN for b in scopes.bindings_at(offset, name)) for name in names
        )

    def keyword_call(self, call: cst.Call) -> RemovedApi | None:
        """The first removed keyword row a call of a JAX function passes (`jnp.clip(a_min=)`),
        or the row of a function rewritten where called."""
        if not self._keyword_tails or not (dotted_name(call.func) or "").endswith(
            self._keyword_tails
        ):
            return None
        qualified = self._qualified(call.func) or ""
        row = self._call_forms.get(qualified)
        if row is not None:
            return row if self.call_form_site(call.func) else None
        row = self._changed_calls.get(qualified)
        if row is not None:  # (its note: JAX115)
            return row
        return self._passed_keyword(qualified, call)

    def partial_keyword_call(self, call: cst.Call) -> RemovedApi | None:
        """The first removed keyword row that `functools.partial(F, ..., keyword=...)` binds
        for F, a JAX function named by its first argument (`partial(jnp.reshape,
        newshape=s)`)."""
        if not self._keywords or not call.args:
            return None
        first = call.args[0]
        if first.keyword is not None or first.star or dotted_name(first.value) is None:
            return None
        if dotted_name(call.func) is None or self._qualified(call.func) != "functools.partial":
            return None
        return self._passed_keyword(self._qualified(first.value) or "", call)

    def _passed_keyword(self, qualified: str, call: cst.Call) -> RemovedApi | None:
        """The first removed keyword row of the function `qualified` that `call` passes."""
        passed = {a.keyword.value for a in call.args if a.keyword is not None}
        return next((r for r in self._keywords.get(qualified, ()) if r.keyword in passed), None)

    def aliased_keyword_call(self, call: cst.Call) -> tuple[RemovedApi, Alias | None] | None:
        """(the first removed keyword row, how the callee reaches the function) for a call
        passing a removed keyword to a function bound to another name: imported under it
        (`from jax.numpy import clip as c`: alias None, the import says it all) or bound by
        the module (hcmigrate.codemod.removed_aliases)."""
        passed = {a.keyword.value for a in call.args if a.keyword is not None}
        if not passed & self._removed_keywords:
            return None
        qualified = self._qualified(call.func) if dotted_name(call.func) is not None else None
        alias = None
        if qualified is not None and qualified not in self._keywords:
            exported = self._exported(qualified)
            if exported is not None:
                alias = Alias(exported, dotted_name(call.func), 0, True, qualified)
                qualified = exported
        if qualified not in self._keywords:
            if self.aliases is None:
                return None
            offset_of = self._resolver.index.start_offset
            alias = self.aliases.alias(call.func, offset_of, self._exported)
            if alias is None:
                return None
            qualified = alias.qualified
        row = self._passed_keyword(qualified, call)
        return (row, alias) if row is not None else None

    def applied_call(self, call: cst.Call) -> RemovedApi | None:
        """The row of `F(function)(...)` where F is a function rewritten where its result is
        called at once (`jax.xla_computation(f)(x, y)`), given one positional argument."""
        inner = call.func
        if not self._applied_forms or not isinstance(inner, cst.Call):
            return None
        if dotted_name(inner.func) is None:
            return None
        if len(inner.args) != 1 or inner.args[0].keyword is not None or inner.args[0].star:
            return None
        return self._applied_forms.get(self._qualified(inner.func) or "")

    def applied_uses_left(self, node: cst.ImportFrom, alias: cst.ImportAlias) -> bool:
        """Does the name this alias of a `from` import binds have a use other than the
        function of an `applied_call` (then the import stays)? Read on the scope analysis'
        ast, which holds the statements the partial parse left out."""
        bound = alias.asname.name.value if alias.asname else dotted_name(alias.name)
        start = self._resolver.index.start_offset(node)
        scopes = self._resolver.scopes
        binding = next(
            (
                b
                for bindings in scopes.imports.values()
                for b in bindings
                if b.key == bound and b.statement == start
            ),
            None,
        )
        if binding is None or not binding.accesses:
            return True
        applied: set[int] = set()
        for outer in ast.walk(scopes.tree):
            inner = outer.func if isinstance(outer, ast.Call) else None
            if (
                isinstance(inner, ast.Call)
                and isinstance(inner.func, ast.Name)
                and inner.func.id == bound
                and len(inner.args) == 1
                and not isinstance(inner.args[0], ast.Starred)
                and not inner.keywords
            ):
                applied.add(scopes.offset(inner.func))
        return not set(binding.accesses) <= applied

    def sharding_call(self, call: cst.Call) -> str | None:
        """CONSTRUCT, RESHAPE or REPLICATE, for a call of PositionalSharding rewritten as a
        NamedSharding (hcmigrate.codemod.removed_sharding); None for any other call."""
        if self.sharding is None or not self.sharding.calls:
            return None
        func = call.func
        form = CONSTRUCT
        if isinstance(func, cst.Attribute) and func.attr.value in (RESHAPE, REPLICATE):
            form = func.attr.value
        start = self._resolver.index.start_offset(call)
        return form if (start, form) in self.sharding.calls else None

    def sharding_alone(self, call: cst.Call, form: str) -> bool:
        """Is `call` rewritten on its own (not only as the receiver of a reshape/replicate
        rewritten whole)?"""
        start = self._resolver.index.start_offset(call)
        if self.sharding is None:
            return False
        if form == CONSTRUCT:
            return start in self.sharding.constructs_alone
        return (start, form) not in self.sharding.receivers

    def sharding_uses_left(self, node: cst.ImportFrom, alias: cst.ImportAlias):
        """(is every use of the name this alias of a `from` import binds rewritten by a
        sharding call site, the lines of the uses left other than type checks and
        annotations): hcmigrate.codemod.removed_sharding.ShardingUses.uses_left."""
        if self.sharding is None:
            return False, ()
        bound = alias.asname.name.value if alias.asname else dotted_name(alias.name)
        start = self._resolver.index.start_offset(node)
        for bindings in self._resolver.scopes.imports.values():
            for binding in bindings:
                if binding.key == bound and binding.statement == start:
                    return self.sharding.uses_left(binding)
        return False, ()

    def _exported(self, qualified: str) -> str | None:
        """The function another module of the run binds `qualified` to ("pkg.backend.clip",
        or ".backend.clip" from a relative import) -> "jax.numpy.clip"."""
        if not self._exports:
            return None
        return self._exports.get(self._absolute(qualified))

    def _absolute(self, name: str) -> str:
        """A name a relative import binds (".backend.clip") as the run's module names spell
        it, from the module's own name ("pkg.model" -> "pkg.backend.clip")."""
        if not name.startswith("."):
            return name
        package = self._module_name.split(".")
        level = len(name) - len(name.lstrip("."))
        return ".".join([*package[: len(package) - level], name.lstrip(".")])

    # ---------------------------------------------------------------- imports
    def import_rows(self, node: cst.CSTNode) -> list[tuple[cst.ImportAlias, RemovedApi, str]]:
        """(alias, row, what it imports) for each name an import statement takes from a
        removed name or module (none for an import already guarded: the module docstring)."""
        if isinstance(node, (cst.Import, cst.ImportFrom)) and self._guarded(node):
            return []
        if isinstance(node, cst.Import):
            found = []
            for alias in node.names:
                real = dotted_name(alias.name) or ""
                row = self.row_of_import(real)
                if row is not None:
                    found.append((alias, row, real))
            return found
        if (
            not isinstance(node, cst.ImportFrom)
            or node.relative
            or node.module is None
            or isinstance(node.names, cst.ImportStar)
        ):
            return []
        module = dotted_name(node.module) or ""
        if not is_jax(module):
            return []
        found = []
        for alias in node.names:
            real = f"{module}.{dotted_name(alias.name)}"
            row = self.row_of_import(real)
            if row is not None and not (only_imported(row) and real == row.name):
                found.append((alias, row, real))
        return found

    def _guarded(self, node: cst.Import | cst.ImportFrom) -> bool:
        line = self._resolver.parent(node)
        block = self._resolver.parent(line)
        owner = self._resolver.parent(block)
        if isinstance(owner, cst.ExceptHandler):
            return catches_import_error(owner)
        if not isinstance(owner, cst.Try) or owner.body is not block:
            return False
        bound = _bound_names(node)
        return any(
            catches_import_error(handler) and bound <= _bound_in(handler.body)
            for handler in owner.handlers
        )

    def row_of_import(self, real: str) -> RemovedApi | None:
        """The row of a removed name, or of the removed module `real` is (or is inside)."""
        parts = real.split(".")
        for cut in range(len(parts), 1, -1):
            row = self._by_name.get(".".join(parts[:cut]))
            if row is not None and (cut == len(parts) or row.kind is Kind.MODULE):
                return row
        return None


def _bound_names(node: cst.Import | cst.ImportFrom) -> set[str]:
    if isinstance(node.names, cst.ImportStar):
        return {"*"}
    return {
        alias.asname.name.value
        if alias.asname and isinstance(alias.asname.name, cst.Name)
        else (dotted_name(alias.name) or "").split(".")[0]
        for alias in node.names
    }


def _bound_in(block: cst.BaseSuite) -> set[str]:
    """The names the simple statements of a block bind by import or plain assignment, and its
    classes."""
    bound: set[str] = set()
    for line in getattr(block, "body", ()):
        if isinstance(line, cst.ClassDef):  # (JAX113's guard: a class nothing is one of)
            bound.add(line.name.value)
        for small in getattr(line, "body", ()) if isinstance(line, cst.SimpleStatementLine) else ():
            if isinstance(small, (cst.Import, cst.ImportFrom)):
                bound |= _bound_names(small)
            elif isinstance(small, cst.Assign):
                bound |= {t.target.value for t in small.targets if isinstance(t.target, cst.Name)}
    return bound
