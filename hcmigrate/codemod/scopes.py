"""Name resolution for the codemod, computed on Python's own `ast` (C-fast to build).

libcst's ScopeProvider answered "what does this name refer to?" but cost several parses per
file; this module answers the same questions for the codemod at a fraction of the cost, with
the same model: scopes (module, class, function, lambda, comprehension), every binding of a
name in a scope is a candidate (Python binds at run time, so `try: import X as h / except:
h = None` gives two), class scopes are invisible from nested scopes, `global`/`nonlocal`
redirect, builtins last. Like libcst, an access made before a binding in the same scope
does not see it, and `import a.b.c` binds the dotted name `a.b.c`: a use `a.b.c.f` refers to
it while `a.x` refers to whatever bound `a` itself.

Everything is keyed by character offsets into the source text, which is what links it to
libcst's nodes (hcmigrate.codemod.node_index knows where each libcst node starts).
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass

IMPORT, LOCAL, BUILTIN = "import", "local", "builtin"


@dataclass(frozen=True)
class QualifiedName:
    name: str  # "jax.experimental.host_callback.id_tap", "f.<locals>.x", "builtins.print"
    source: str  # IMPORT, LOCAL or BUILTIN


@dataclass(eq=False)
class Binding:
    key: str  # the bound name; dotted for `import a.b.c`
    kind: str  # IMPORT, LOCAL ("def" and "class" are locals that remember their node)
    scope: "Scope"
    offset: int  # where the name is bound (order within the scope; the def's name for defs)
    real: str | None = (
        None  # imports: what the name stands for ("numpy", "jax.experimental.host_callback")
    )
    statement: int | None = None  # imports: offset of the import statement
    from_import: bool = False  # bound by `from M import name` (not `import M.name as x`)
    is_def: bool = False

    @property
    def accesses(self) -> list[int]:
        """Offsets of the root names of the uses that may see this binding."""
        return [at for at, limit in self.scope.uses.get(self.key, ()) if self.offset < limit]

    def qualified(self, full_name: str) -> QualifiedName | None:
        if self.kind == IMPORT:
            if full_name == self.key:
                return QualifiedName(self.real, IMPORT)
            if full_name.startswith(self.key + "."):
                return QualifiedName(self.real + full_name[len(self.key) :], IMPORT)
            return None
        prefix = self.scope.prefix
        return QualifiedName(f"{prefix}.{full_name}" if prefix else full_name, LOCAL)


_ALL = float("inf")


def _seen(bindings: list, limit: float) -> list:
    """The bindings a use sees: those bound before `limit` (every one, for _ALL)."""
    return bindings if limit == _ALL else [b for b in bindings if b.offset < limit]


class _Builtin:
    kind = BUILTIN
    scope = None
    offset = -1
    accesses: tuple[int, ...] = ()  # uses of builtins are not recorded
    is_def = False

    def __init__(self, key: str):
        self.key = key

    def qualified(self, full_name: str) -> QualifiedName:
        return QualifiedName(f"builtins.{self.key}", BUILTIN)


class Scope:
    __slots__ = ("kind", "parent", "prefix", "bindings", "overrides", "uses")

    def __init__(self, kind: str, parent: "Scope | None", prefix: str):
        self.kind = kind  # "module", "class", "function", "lambda", "comprehension"
        self.parent = parent
        self.prefix = prefix
        self.bindings: dict[str, list[Binding]] = {}
        self.overrides: dict[str, str] = {}  # name -> "global" / "nonlocal"
        # name -> (offset of a use, the bindings of the name here that it may see: those bound
        # before that offset). Kept as a limit, not a list per use: a name bound thousands
        # of times in one function (`x = f(x)` line after line) would cost the square.
        self.uses: dict[str, list[tuple[int, float]]] = {}

    def bind(self, binding: Binding) -> None:
        self.bindings.setdefault(binding.key, []).append(binding)

    def _visible_parent(self) -> "Scope | None":
        parent = self.parent
        while parent is not None and parent.kind == "class":
            parent = parent.parent
        return parent

    def _redirect(self, key: str) -> "Scope | None":
        how = self.overrides.get(key.split(".", 1)[0])
        if how == "global":
            scope = self
            while scope.parent is not None:
                scope = scope.parent
            return scope
        if how == "nonlocal":
            return self._visible_parent()
        return None

    def resolve(self, key: str) -> list:
        """Every binding `key` may refer to from this scope (empty: not bound anywhere)."""
        scope = self
        while scope is not None:
            target = scope._redirect(key)
            if target is not None and target is not scope:
                scope = target
                continue
            found = scope.bindings.get(key)
            if found:
                return found
            if scope.parent is None:
                return [_Builtin(key)] if "." not in key and hasattr(builtins, key) else []
            scope = scope._visible_parent()
        return []


@dataclass
class _Access:
    scope: Scope
    offset: int  # the root name
    names: tuple[str, ...]  # dotted prefixes of the enclosing attribute chain, longest first


_DEF_NAME = re.compile(r"(?:async[\s\\]+)?(?:def|class)[\s\\]+")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class ScopeAnalysis:
    """Scopes, bindings and uses of one module's source text."""

    def __init__(self, text: str, tree: ast.Module | None = None):
        self.text = text
        self.line_starts = [
            0,
            *(m.end() for m in _LINE_BREAK.finditer(text)),
        ]  # offset of each line
        self.module = Scope("module", None, "")
        self.scope_at: dict[int, Scope] = {}  # offset of a name (use or binding) -> its scope
        self.imports: dict[int, list[Binding]] = {}  # import statement offset -> its bindings
        # the modules of `from M import *` (".m" for a relative one), in the order written: a
        # name nothing binds statically may be bound by one of them
        self.star_imports: list[str] = []
        # use offset -> (name it uses, its bindings in one scope, the offset they are bound
        # before: the bindings the use may see, `_seen`)
        self._referents: dict[int, tuple[str, list, float]] = {}
        self.tree = tree or ast.parse(text)  # (also read by the layout and module-end rules)
        _Walk(self).body(self.tree.body, self.module)
        # `jnp = jax.numpy`: bindings that stand for a JAX module as an import would
        self.module_aliases: list[Binding] = []
        self._module_aliases()

    def _module_aliases(self) -> None:
        """`jnp = jax.numpy` at module level, the name's one binding in the module: the name
        stands for the module as `import jax.numpy as jnp` would make it (issue 36: removed
        names reached through a module bound by assignment). Only JAX modules the removal
        table names (and their parents): a function bound so (`clip = jnp.clip`) is followed
        by hcmigrate.codemod.removed_aliases, which tells certain calls from possible ones."""
        from hcmigrate.jax_removals import module_names

        modules = module_names()
        for statement in self.tree.body:
            if not (
                type(statement) is ast.Assign
                and len(statement.targets) == 1
                and type(statement.targets[0]) is ast.Name
            ):
                continue
            bindings = self.module.bindings.get(statement.targets[0].id, [])
            if len(bindings) != 1:
                continue
            # (`jax = pytest.importorskip("jax")`: the module itself; `jnp = jax.numpy`)
            module = self._importorskip(statement.value) or self._import_named(statement.value)
            if module in modules:
                bindings[0].kind, bindings[0].real = IMPORT, module
                self.module_aliases.append(bindings[0])

    def _import_named(self, value: ast.AST) -> str | None:
        """What the dotted name `value` stands for through one import (None: not that)."""
        dotted = _dotted(value)
        if dotted is None:
            return None
        root = value
        while type(root) is ast.Attribute:
            root = root.value
        names = self.qualified_names(self.offset(root), dotted)
        if len(names) != 1:
            return None
        (name,) = names
        return name.name if name.source == IMPORT else None

    def _importorskip(self, value: ast.AST) -> str | None:
        """The module `pytest.importorskip("m")` returns, where `value` is that call."""
        if not (
            type(value) is ast.Call
            and value.args
            and type(value.args[0]) is ast.Constant
            and isinstance(value.args[0].value, str)
        ):
            return None
        if self._import_named(value.func) == "pytest.importorskip":
            return value.args[0].value
        return None

    # ---------------------------------------------------------------- offsets
    def offset(self, node: ast.AST) -> int:
        """Character offset of an ast node's start (ast counts UTF-8 bytes within a line)."""
        start = self.line_starts[node.lineno - 1]
        col = node.col_offset
        line = self.text[start : start + col]
        if not line.isascii() or len(line) < col:
            end = (
                self.line_starts[node.lineno]
                if node.lineno < len(self.line_starts)
                else len(self.text)
            )
            col = len(self.text[start:end].encode("utf-8")[:col].decode("utf-8", "replace"))
        return start + col

    # ---------------------------------------------------------------- questions
    def qualified_names(self, root_offset: int, full_name: str) -> set[QualifiedName]:
        """What `full_name` (a dotted expression whose root name starts at `root_offset`) is."""
        scope = self.scope_at.get(root_offset)
        if scope is None:
            return set()
        used = self._referents.get(root_offset)
        if used is not None and used[0] == full_name:
            bindings = _seen(used[1], used[2])
        else:
            bindings = []
            prefix = full_name
            while prefix:
                bindings = scope.resolve(prefix)
                if bindings:
                    break
                cut = prefix.rfind(".")
                prefix = prefix[:cut] if cut != -1 else ""
        names = set()
        for binding in bindings:
            qualified = binding.qualified(full_name)
            if qualified is not None:
                names.add(qualified)
        return names

    def bindings_at_statement(self, statement: int, key: str) -> list:
        """The bindings of `key` in the scope of the import statement at offset `statement`."""
        found = self.imports.get(statement)
        return found[0].scope.bindings.get(key, []) if found else []

    def bindings_at(self, offset: int, key: str) -> list:
        """Every binding `key` may refer to from the scope of the name at `offset`."""
        scope = self.scope_at.get(offset)
        return scope.resolve(key) if scope is not None else []


def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` of a Name/Attribute chain, else None."""
    parts = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


class _Walk:
    """One walk of a module's ast that fills a ScopeAnalysis: scopes and bindings as it goes,
    then what each use refers to."""

    def __init__(self, analysis: ScopeAnalysis):
        self.analysis = analysis
        self.offset = analysis.offset
        self.scope_at = analysis.scope_at
        self.imports = analysis.imports
        self.star_imports = analysis.star_imports
        self._referents = analysis._referents
        self._accesses: list[_Access] = []

    def _name_offset(self, node: ast.AST) -> int:
        """Offset of the name in `def name` / `class name`."""
        start = self.offset(node)
        match = _DEF_NAME.match(self.analysis.text, start)
        return match.end() if match else start

    def body(self, body: list, scope: Scope) -> None:
        self._walk_body(body, scope)
        self._resolve_accesses()

    def _bind(self, scope: Scope, key: str, offset: int, **extra) -> Binding:
        binding = Binding(key, extra.pop("kind", LOCAL), scope, offset, **extra)
        scope.bind(binding)
        self.scope_at.setdefault(offset, scope)
        return binding

    def _walk_body(self, body: list, scope: Scope) -> None:
        for node in body:
            self._walk(node, scope)

    def _walk_all(self, nodes, scope: Scope) -> None:
        for node in nodes:
            if node is not None:
                self._walk(node, scope)

    def _walk(self, node: ast.AST, scope: Scope) -> None:
        kind = type(node)
        if kind is ast.Name:
            offset = self.offset(node)
            self.scope_at[offset] = scope
            if isinstance(node.ctx, ast.Store):
                self._bind(scope, node.id, offset)
            elif isinstance(node.ctx, ast.Load):
                self._accesses.append(_Access(scope, offset, (node.id,)))
            return
        if kind is ast.Attribute:
            parts = [node.attr]
            root = node.value
            while type(root) is ast.Attribute:
                parts.append(root.attr)
                root = root.value
            if type(root) is ast.Name and isinstance(root.ctx, ast.Load):
                parts.append(root.id)
                parts.reverse()
                names = tuple(".".join(parts[:i]) for i in range(len(parts), 0, -1))
                offset = self.offset(root)
                self.scope_at[offset] = scope
                self._accesses.append(_Access(scope, offset, names))
                return
            self._walk(root, scope)
            return
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
            self._function(node, scope)
            return
        if kind is ast.ClassDef:
            self._walk_all(node.decorator_list, scope)
            self._walk_all(node.bases, scope)
            self._walk_all((k.value for k in node.keywords), scope)
            name_at = self._name_offset(node)
            self._bind(scope, node.name, name_at, is_def=True)
            inner = Scope(
                "class", scope, f"{scope.prefix}.{node.name}" if scope.prefix else node.name
            )
            self._walk_body(node.body, inner)
            return
        if kind in (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp):
            self._comprehension(node, scope)
            return
        if kind is ast.Import or kind is ast.ImportFrom:
            self._import(node, scope)
            return
        if kind is ast.Global or kind is ast.Nonlocal:
            for name in node.names:
                scope.overrides[name] = "global" if kind is ast.Global else "nonlocal"
            return
        if kind is ast.NamedExpr:
            target = scope
            while target.kind == "comprehension":
                target = target.parent
            self._bind(target, node.target.id, self.offset(node.target))
            self._walk(node.value, scope)
            return
        if kind is ast.ExceptHandler:
            if node.name:
                self._bind(scope, node.name, self.offset(node))
        elif kind in (ast.MatchAs, ast.MatchStar) and node.name:
            self._bind(scope, node.name, self.offset(node))
        elif kind is ast.MatchMapping and node.rest:
            self._bind(scope, node.rest, self.offset(node))
        for child in ast.iter_child_nodes(node):
            self._walk(child, scope)

    def _function(self, node, scope: Scope) -> None:
        args = node.args
        self._walk_all(args.defaults, scope)
        self._walk_all(args.kw_defaults, scope)
        if type(node) is ast.Lambda:
            inner = Scope(
                "lambda",
                scope,
                f"{scope.prefix}.<lambda>.<locals>" if scope.prefix else "<lambda>.<locals>",
            )
        else:
            self._walk_all(node.decorator_list, scope)
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            self._walk_all((a.annotation for a in every if a is not None), scope)
            self._walk_all([node.returns], scope)
            name_at = self._name_offset(node)
            self._bind(scope, node.name, name_at, is_def=True)
            qual = f"{scope.prefix}.{node.name}" if scope.prefix else node.name
            inner = Scope("function", scope, f"{qual}.<locals>")
        for arg in (*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg):
            if arg is not None:
                self._bind(inner, arg.arg, self.offset(arg))
        if type(node) is ast.Lambda:
            self._walk(node.body, inner)
        else:
            self._walk_body(node.body, inner)

    def _comprehension(self, node, scope: Scope) -> None:
        generators = node.generators
        self._walk(generators[0].iter, scope)  # evaluated in the enclosing scope
        inner = Scope(
            "comprehension",
            scope,
            f"{scope.prefix}.<comprehension>" if scope.prefix else "<comprehension>",
        )
        for i, gen in enumerate(generators):
            if i:
                self._walk(gen.iter, inner)
            self._walk(gen.target, inner)
            self._walk_all(gen.ifs, inner)
        if type(node) is ast.DictComp:
            self._walk(node.key, inner)
            self._walk(node.value, inner)
        else:
            self._walk(node.elt, inner)

    def _import(self, node, scope: Scope) -> None:
        statement = self.offset(node)
        found = self.imports.setdefault(statement, [])
        if type(node) is ast.Import:
            for alias in node.names:
                key = alias.asname or alias.name
                found.append(
                    self._bind(
                        scope,
                        key,
                        self.offset(alias),
                        kind=IMPORT,
                        real=alias.name,
                        statement=statement,
                    )
                )
            return
        module = "." * node.level + (node.module or "")
        for alias in node.names:
            if alias.name == "*":
                self.star_imports.append(module)  # binds nothing that can be seen statically
                continue
            real = (
                f"{module}{alias.name}"
                if module.endswith(".") or not module
                else f"{module}.{alias.name}"
            )
            key = alias.asname or alias.name
            found.append(
                self._bind(
                    scope,
                    key,
                    self.offset(alias),
                    kind=IMPORT,
                    real=real,
                    statement=statement,
                    from_import=True,
                )
            )

    def _resolve_accesses(self) -> None:
        firsts: dict[int, int] = {}  # id of a scope's binding list -> its first offset
        for access in self._accesses:
            scope = access.scope
            # The use is of the longest dotted prefix bound in its scope (`a.b.c` after `import a.b.c`).
            key, candidates = access.names[-1], []
            for name in access.names:
                found = scope.resolve(name)
                if found:
                    key, candidates = name, found
                    break
            # A use does not see a binding made later in its own scope (unless nothing earlier);
            # a comprehension binds its targets before its element runs, written before them.
            # (The bindings of one list share a scope.)
            limit = _ALL
            if candidates and candidates[0].scope is scope and scope.kind != "comprehension":
                limit = access.offset
                first = firsts.get(id(candidates))
                if first is None:
                    first = firsts[id(candidates)] = min(b.offset for b in candidates)
                if first >= limit and scope.parent is not None:
                    candidates, limit = (scope._visible_parent() or scope.parent).resolve(key), _ALL
            if candidates and candidates[0].kind != BUILTIN:
                candidates[0].scope.uses.setdefault(key, []).append((access.offset, limit))
            self._referents[access.offset] = (key, candidates, limit)
        self._accesses = []
