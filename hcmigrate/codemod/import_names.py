"""The local names generated code uses for what it imports, never a name the module binds to
something else.

Generated code says `jax.debug.callback`, `io_callback`, `np.array`, `functools.partial`. A
module may already use those names for other things: `import jax.numpy as np` (common in JAX
code), its own `def io_callback`, a parameter named `jax` in the function the site is in.
Adding `import numpy as np` there would change what the user's own code calls. So each name is
checked against the module's bindings (hcmigrate.codemod.scopes): the usual name when the
module binds it to nothing else, else another import of the same thing the module has
(`import numpy as onp` gives `onp`), else a fresh alias (`import numpy as onp`, `import jax as
jax_`).
"""

from __future__ import annotations

from typing import Callable

from hcmigrate.codemod.scopes import IMPORT, ScopeAnalysis

Needed = tuple[str, "str | None", "str | None"]  # (module, name or None, alias or None)

# The alias tried first when the usual name is taken (then `base_1`, ...).
_FRESH_BASE = {"numpy": "onp", "jax": "jax_", "functools": "functools_"}


class ImportNames:
    def __init__(self, scopes: ScopeAnalysis, fresh_name: Callable[[str], str]):
        self._scopes = scopes
        self._fresh_name = fresh_name
        self._chosen: dict[str, tuple[str, Needed]] = {}  # target -> (local name, import)
        self._imported_as: dict[str, str] | None = None  # target -> the first name importing it

    def local_name(
        self, module: str, name: str | None = None, alias: str | None = None, at: int | None = None
    ) -> tuple[str, Needed]:
        """The name generated code uses for `module` (or `module.name`), and the import that
        binds it; `alias`: the usual name (`np`); `at`: the offset of a site whose own scope
        must not shadow it either."""
        target = f"{module}.{name}" if name else module
        usual = alias or name or module.split(".")[0]
        bound = any(b.real == target for b in self._scopes.module.bindings.get(usual, ()))
        other = None if bound else self._other_import_of(target)
        if other is not None and self._means(other, target, at):  # (the module's own spelling)
            return other, _import_binding(module, name, other)
        if self._means(usual, target, at):
            return usual, (module, name, alias)
        chosen = self._chosen.get(target)
        if chosen is not None and self._means(chosen[0], target, at):
            return chosen
        other = self._other_import_of(target)
        if other is not None and self._means(other, target, at):
            local = other
        else:
            local = self._fresh_name(_FRESH_BASE.get(target, f"jax_{name}" if name else usual))
        needed = _import_binding(module, name, local)
        self._chosen[target] = (local, needed)
        return local, needed

    def _means(self, local: str, target: str, at: int | None) -> bool:
        """Does `local` stand for `target` (or for nothing) at module level and at `at`?"""
        bindings = list(self._scopes.module.bindings.get(local, ()))
        if at is not None:
            bindings += [b for b in self._scopes.bindings_at(at, local) if b not in bindings]
        return all(
            b.kind == IMPORT and b.real == target and b.scope is self._scopes.module
            for b in bindings
            if getattr(b, "kind", None) != "builtin"
        )

    def _other_import_of(self, target: str) -> str | None:
        """A module-level name another import binds to `target` (`import numpy as onp`)."""
        if self._imported_as is None:
            # one pass over the module's names for all the sites that ask (a module of 1,000
            # sites binds thousands of names: a pass per site made the cost quadratic)
            self._imported_as = {}
            for key, bindings in self._scopes.module.bindings.items():
                targets = {b.real for b in bindings}
                if "." not in key and len(targets) == 1 and all(b.kind == IMPORT for b in bindings):
                    self._imported_as.setdefault(targets.pop(), key)
        return self._imported_as.get(target)


def _import_binding(module: str, name: str | None, local: str) -> Needed:
    """The import that binds `local` to `module` (or `module.name`)."""
    if name:
        return (module, name, None if local == name else local)
    return (module, None, None if local == module else local)
