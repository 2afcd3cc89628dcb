"""Two parts of hcmigrate.rules.context.RuleContext, as mixins of
hcmigrate.codemod.context.ModuleContext (which holds the state they read: the module's
resolver, import names, statement edits, the site being rewritten and its record).

* NamesContext: how generated code spells what it imports (never a name the module binds to
  something else: hcmigrate.codemod.import_names), the compat runtime, module helpers and
  fresh names;
* StatementsContext: where a site stands, statements queued around it, and hoisting a
  callback before its statement or into a def made of its lambda (hcmigrate.codemod.hoisting).
"""

from __future__ import annotations

import libcst as cst

from hcmigrate.codemod.module_helpers import HELPERS, HelperDef, tree_map_of
from hcmigrate.codemod.scopes import BUILTIN
from hcmigrate.native_needs import SINCE
from hcmigrate.facts import COMPAT_MODULE, MODERN

COMPAT_PARENT, _COMPAT_LEAF = COMPAT_MODULE.rsplit(".", 1)


class NamesContext:
    def modern(self, key: str) -> str:
        modern = MODERN[key]
        local, needed = self.names.local_name(
            modern.import_module, modern.import_name, at=self._site_offset()
        )
        self._record.imports.append(needed)
        usual = modern.import_name or modern.import_module.split(".")[0]
        return local + modern.dotted[len(usual) :]

    def dotted(self, name: str) -> str:
        root, _, rest = name.partition(".")
        local, needed = self.names.local_name(root, at=self._site_offset())
        self._record.imports.append(needed)
        return f"{local}.{rest}" if rest else local

    def numpy(self) -> str:
        local, needed = self.names.local_name("numpy", alias="np", at=self._site_offset())
        self._record.imports.append(needed)
        return local

    def qualified(self, node: cst.CSTNode) -> set[str]:
        return self.resolver.qualified(node)

    def import_submodule(self, module: str) -> None:
        self._record.imports.append((module, None, None))

    def _site_offset(self) -> int | None:
        return self.resolver.index.start_offset(self._site) if self._site is not None else None

    def use_helper(self, key: str) -> str:
        self._record.helpers.append(key)  # (its imports: helper_imports, once it is kept)
        return self._helper(key).name

    def _helper(self, key: str) -> HelperDef:
        found = self.module_bindings.get(key)
        return found[1] if found is not None else HELPERS[key]

    def module_binding(self, key: str, name: str, statement) -> str | None:
        """A module-level name bound by `statement(name)` (source text: a guarded import),
        added once after the module's imports, like a helper, if the site is rewritten: `name`
        where the module binds it nowhere the site can see, else a fresh one; None where the
        site's own scope binds the name chosen at an earlier site."""
        offset = self._site_offset()
        if key not in self.module_bindings:
            free = offset is not None and all(
                b.kind == BUILTIN for b in self.resolver.scopes.bindings_at(offset, name)
            )
            free = free and name not in self.resolver.scopes.module.bindings
            chosen = name if free else self.fresh_name(name)
            source = statement(chosen)
            self.module_bindings[key] = (chosen, HelperDef(chosen, source, ()))
        chosen = self.module_bindings[key][0]
        if offset is not None and any(
            b.kind != BUILTIN and b.scope is not self.resolver.scopes.module
            for b in self.resolver.scopes.bindings_at(offset, chosen)
        ):
            return None
        return self.use_helper(key)

    def _helper_name(self, module: str, alias: str | None):
        return self.names.local_name(module, alias=alias)

    def helper_imports(self, keys) -> list:
        """The imports the module helpers `keys` need (module level: no site's scope matters)."""
        return [
            self._helper_name(module, alias)[1]
            for key in dict.fromkeys(keys)
            for _, module, alias in self._helper(key).imports
        ]

    def helper_definitions(self, keys) -> list[tuple[str, str]]:
        """(name, source) of the module helpers `keys`, spelled with the module's names of what
        they use."""
        definitions = []
        for key in dict.fromkeys(keys):
            helper = self._helper(key)
            names = {
                placeholder: self._helper_name(module, alias)[0]
                for placeholder, module, alias in helper.imports
            }
            names["tree_map"] = tree_map_of(
                names.get("jax", "jax"), self.declared_at_least(SINCE["jax.tree.map"])
            )
            definitions.append((helper.name, helper.text(names)))
        return definitions

    def fresh_name(self, base: str, *alternatives: str) -> str:
        if self._names is None:
            self._names = self.resolver.index.names
        for name in alternatives:  # (after `base`: the names that say more, before `base_1`)
            if base in self._names and name not in self._names:
                self._names.add(name)
                return name
        # (names only ever join the set: the search for `base` goes on where it last stopped,
        # instead of trying `base_1`, `base_2`, ... again at every site)
        i = self._next_suffix.get(base, 0)
        name = f"{base}_{i}" if i else base
        while name in self._names:
            i += 1
            name = f"{base}_{i}"
        self._next_suffix[base] = i + 1
        self._names.add(name)
        return name


class StatementsContext:
    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.resolver.parent(node)

    def assignment_target(self, node: cst.CSTNode) -> str | None:
        return self.resolver.assignment_target(node)

    def is_returned(self, node: cst.CSTNode) -> bool:
        return self.resolver.is_returned(node)

    def insert_before(self, node: cst.CSTNode, statement: cst.BaseSmallStatement) -> None:
        self.edits.insert_before(self.resolver.enclosing_statement(node), statement, self._record)
        self._record.queued.append(statement)

    def insert_after(self, node: cst.CSTNode, statement: cst.BaseSmallStatement) -> None:
        self.edits.insert_after(self.resolver.enclosing_statement(node), statement, self._record)
        self._record.queued.append(statement)

    def replace_statement(self, node: cst.CSTNode) -> None:
        self.edits.replace(self.resolver.enclosing_statement(node), self._record)

    def runs_before_its_statement(self, node: cst.CSTNode) -> bool:
        root = self.hoisting.statement_root(node)
        return root is not None and self.hoisting.runs_first(node, root)

    def liftable_lambda(self, node: cst.CSTNode) -> cst.Lambda | None:
        return self.hoisting.liftable_lambda(node)

    def run_first_in_lambda(
        self, lam: cst.Lambda, statement: cst.BaseSmallStatement, names: tuple[str, ...]
    ) -> None:
        self.lambda_defs.run_first(lam, statement, self._record, names)
        self._record.queued.append(statement)

    def lifted_def(self, original: cst.Lambda, updated: cst.Lambda) -> cst.Name | None:
        """The name of the def that replaces the lambda (queued before its statement), or
        None when no site asked for one."""
        return self.lambda_defs.replace(original, updated)
