"""The project model: the modules of a run and what crosses between them.

Built once per run (hcmigrate.project_model.build) from the facts of every module the run sees
(hcmigrate.project_model.module_facts). It answers, for the whole tree:
- what a dotted name used in a module stands for, through imports, aliases, star imports,
  module attributes and re-export chains of any depth (cycles end the search: nothing known);
- which links of such chains other modules rely on (a name the exporter must keep);
- under which transformations each function runs, applied in one module to a function of
  another and followed through the calls the code shows.
Each module is then migrated with its `ModuleView` (hcmigrate.options.Options), not the tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from hcmigrate.facts import LEGACY_MODULE, LEGACY_PUBLIC_NAMES
from hcmigrate.project_model.module_facts import ModuleFacts, spelled_name

# A value a name may have: ("legacy", qualified legacy name), ("module", dotted module),
# ("def", module, function) or None (not known).
Value = tuple | None


@dataclass(frozen=True)
class RunsUnder:
    """A function of a module that runs under a transformation (applied where `where` says,
    to it or to a function that calls it)."""

    function: str
    transform: str
    where: str  # "p.solver, line 12"


@dataclass
class ProjectModel:
    modules: dict[str, ModuleFacts] = field(default_factory=dict)  # the run's own modules
    # Reads another module of the tree when a question needs it (None: not in the tree), so
    # the model holds what the run's modules reach, not every module they import.
    loader: Callable[[str], ModuleFacts | None] | None = None
    # The module name of the tree's file that an imported name stands for, when they differ
    # (a namespace package's `p.m`, whose file is module `m` by its packages; a folder
    # reached through a symlinked alias): None when no file of the tree is that module.
    locator: Callable[[str], str | None] | None = None
    _loaded: dict[str, ModuleFacts | None] = field(default_factory=dict)
    _located: dict[str, str | None] = field(default_factory=dict)
    # The modules a followed call may lead into and be read for (the run's modules, and the
    # modules of the tree that import one of them): a function of another module cannot call
    # theirs, since it does not import them.
    followed: set[str] = field(default_factory=set)
    _following: bool = False
    _transformations: dict | None = None

    def add(self, facts: ModuleFacts) -> None:
        self.modules[facts.name] = facts

    def module(self, name: str) -> ModuleFacts | None:
        """The facts of module `name`, read when first asked (None: not in the tree). While
        calls are followed, only the modules of `followed` are read."""
        facts = self.modules.get(name)
        if facts is not None or not name:
            return facts
        name = self._canonical(name)
        if name is None or name in self.modules:
            return self.modules.get(name) if name else None
        if self._following and name not in self.followed and name not in self._loaded:
            return None
        if self.loader is not None:
            if name not in self._loaded:
                self._loaded[name] = self.loader(name)
            return self._loaded[name]
        return None

    def _canonical(self, name: str) -> str | None:
        if self.locator is None or name in self._loaded:
            return name
        if name not in self._located:
            self._located[name] = self.locator(name)
        return self._located[name]

    # ------------------------------------------------------------ names
    def resolve(self, module: str, name: str, trail: list | None = None) -> Value:
        """What the dotted `name`, used in `module`, stands for. `trail` collects the
        (module, name) links crossed in other modules."""
        root, *rest = name.split(".")
        value = self._lookup(module, root, trail, set(), own=module)
        for attr in rest:
            value = self._attribute(value, attr, trail, own=module)
            if value is None:
                return None
        return value

    def _lookup(self, module: str, name: str, trail, seen: set, own: str) -> Value:
        facts = self.module(module)
        if facts is None:
            return None
        module = facts.name  # (the module's own name, however it was imported)
        if (module, name) in seen:
            return None  # a cycle: nothing binds it
        seen.add((module, name))
        binding = facts.bindings.get(name)
        value: Value = None
        if binding is None:
            if name in facts.defs:
                return ("def", module, name)
            for star, _ in facts.stars:
                value = self._star_member(star, name, trail, seen, own)
                if value is not None:
                    break
        elif binding[0] == "module":
            value = self._module(binding[1])
        elif binding[0] == "from":
            value = self._from(binding[1], binding[2], trail, seen, own)
        elif binding[0] == "alias":
            root, *rest = binding[1].split(".")
            value = self._lookup(module, root, trail, seen, own)
            for attr in rest:
                value = self._attribute(value, attr, trail, own, seen)
        if value is not None and trail is not None and module != own:
            trail.append((module, name, value))
        return value

    def _module(self, dotted: str) -> Value:
        if dotted == LEGACY_MODULE or dotted.startswith(LEGACY_MODULE + "."):
            return ("legacy", dotted)
        return ("module", dotted)

    def _from(self, module: str, name: str, trail, seen, own) -> Value:
        full = f"{module}.{name}"
        if full == LEGACY_MODULE or module == LEGACY_MODULE or module.startswith(LEGACY_MODULE):
            return ("legacy", full)
        if self.module(full) is not None:
            return ("module", full)
        return self._lookup(module, name, trail, seen, own)

    def _star_member(self, module: str, name: str, trail, seen, own) -> Value:
        if module == LEGACY_MODULE:
            return ("legacy", f"{module}.{name}") if name in LEGACY_PUBLIC_NAMES else None
        if name.startswith("_"):
            return None
        return self._lookup(module, name, trail, seen, own)

    def _attribute(self, value: Value, attr: str, trail, own, seen: set | None = None) -> Value:
        """`value`.`attr`; `seen`: the (module, name) pairs this resolution crossed already
        (an alias through a module that resolves to the aliasing module itself, as two
        same-named files in namespace packages do, would otherwise loop)."""
        if value is None:
            return None
        if value[0] == "legacy":
            return ("legacy", f"{value[1]}.{attr}")
        if value[0] == "module":
            full = f"{value[1]}.{attr}"
            if LEGACY_MODULE.startswith(full) or self.module(full) is not None:
                return self._module(full)
            return self._lookup(value[1], attr, trail, set() if seen is None else seen, own)
        return None

    def legacy_links(
        self, importers: set[str] | None = None, words: set[str] | None = None
    ) -> dict[str, dict[str, str]]:
        """For each module, the legacy names other modules reach through it ({"p.a":
        {"id_tap": "jax...host_callback.id_tap"}}): the links an exporter must keep. The uses
        of `importers` (default: the run's modules) are followed; with `words`, only those
        with a part among them (a name some module binds to the legacy API: the rest cannot
        reach it), or whose root was imported under such a name."""
        links: dict[str, dict[str, str]] = {}
        for module in sorted(self.modules if importers is None else importers):
            facts = self.modules[module]
            for use in facts.uses:
                if words is not None and not self._may_reach(facts, use, words):
                    continue
                trail: list = []
                value = self.resolve(module, use, trail)
                if value is None or value[0] != "legacy":
                    continue
                for link_module, name, link_value in trail:
                    if link_value[0] == "legacy":
                        links.setdefault(link_module, {})[name] = link_value[1]
        return links

    @staticmethod
    def _may_reach(facts: ModuleFacts, use: str, words: set[str]) -> bool:
        parts = use.split(".")
        if not words.isdisjoint(parts):
            return True
        binding = facts.bindings.get(parts[0])
        return binding is not None and binding[0] == "from" and binding[2] in words

    def spelled_uses(self, module: str) -> dict[str, str]:
        """The legacy names `module` reaches through other modules, as the codemod spells
        them there (the qualified name of the import and its attributes, relative imports as
        written): {"p.a.id_tap": legacy, ".b.id_print": legacy, "toolkit.utils.hostcb.id_tap":
        legacy}. Names it binds from the legacy module itself are not among them."""
        facts = self.modules[module]
        found: dict[str, str] = {}
        for use in sorted(facts.uses):
            root, _, rest = use.partition(".")
            binding = facts.bindings.get(root)
            trail: list = []
            value = self.resolve(module, use, trail)
            if value is None or value[0] != "legacy" or not trail:
                continue
            if binding is None:  # through a star import: the module the name comes from
                for star, spelled_star in facts.stars:
                    if star != LEGACY_MODULE and self.resolve(star, root) is not None:
                        found[spelled_name(spelled_star, use)] = value[1]
                        break
                continue
            if binding[0] == "module":
                spelled = binding[1]
            elif binding[0] == "from":
                spelled = spelled_name(binding[3], binding[2])
            else:
                continue
            found[f"{spelled}.{rest}" if rest else spelled] = value[1]
        return found

    # ------------------------------------------------------------ transformations
    def function(self, module: str, name: str) -> tuple[str, str] | None:
        """(module, function) of the def `name` used in `module` stands for."""
        value = self.resolve(module, name)
        if value is not None and value[0] == "def":
            return value[1], value[2]
        if value is None and name.partition(".")[0] in (self.module(module) or _EMPTY).defs:
            return module, name  # `Class.method`
        return None

    def transformations(self) -> dict[tuple[str, str], list[RunsUnder]]:
        self._following = self.loader is not None
        try:
            return self._transformations_followed()
        finally:
            self._following = False

    def _transformations_followed(self) -> dict[tuple[str, str], list[RunsUnder]]:
        """(module, function) -> the transformations it runs under, applied anywhere in the
        model and followed through calls (a function called by one that runs under pmap runs
        under pmap)."""
        found: dict[tuple[str, str], list[RunsUnder]] = {}
        work: list[tuple[tuple[str, str], RunsUnder]] = []
        for module, facts in self.modules.items():
            for application in facts.applications:
                where = f"{module}, line {application.line}"
                for name in application.functions:
                    target = self.function(module, name)
                    if target is not None:
                        work.append((target, RunsUnder(target[1], application.transform, where)))
        work.reverse()  # (breadth first: a function a transformation is applied to comes first)
        while work:
            target, runs = work.pop()
            known = found.setdefault(target, [])
            if any(r.transform == runs.transform for r in known):
                continue
            known.append(runs)
            module, function = target
            for called in sorted(self.module(module).defs.get(function, ())):
                callee = self.function(module, called)
                if callee is not None:
                    work.insert(0, (callee, RunsUnder(callee[1], runs.transform, runs.where)))
        return found

    def runs_under(self, module: str) -> tuple[RunsUnder, ...]:
        """The functions of `module` that run under a transformation, applied in any module
        of the model (this one included) or reached from one through calls."""
        if self._transformations is None:
            self._transformations = self.transformations()
        return tuple(
            runs
            for (owner, _), all_runs in self._transformations.items()
            if owner == module
            for runs in all_runs
        )

    # ------------------------------------------------------------ chains shared


_EMPTY = ModuleFacts("", False)
