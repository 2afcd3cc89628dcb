"""Building the project model of a run, and each module's view of it.

The model holds every candidate of the pre-filter whose code binds the legacy API (names the
legacy module, or takes a name a re-exporter binds: hcmigrate.prefilter.ScanResult.legacy; a
module that only mentions host_callback in a string does not start it) and the modules that
apply a transformation (jit, pmap, vmap, ...) and import one of them (a library module's
function may be run on several devices by a module that never names host_callback); those
importers are found from one read of the other files (`_ImportIndex`), and each is parsed
once. The other modules of the same tree are read when a question reaches them (an import
chain, a call followed), by the name the importing code uses: a namespace package's module or a
folder reached through a symlink is the file found there, among the run's files once real
paths are resolved (`_Locator`).
"""

from __future__ import annotations

import ast
import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from hcmigrate.errors import FileError
from hcmigrate.facts import LEGACY_MODULE, LEGACY_PUBLIC_NAMES
from hcmigrate.files import read_regular
from hcmigrate.project_model.bindings import module_name
from hcmigrate.project_model.model import ProjectModel
from hcmigrate.project_model.module_facts import ModuleFacts, facts_of
from hcmigrate.syntax import non_docstring_strings

_WORDS = re.compile(r"\w+")
_BYTE_WORDS = re.compile(rb"\w+")
# Words a program that runs other modules' functions under a transformation must contain (a
# jitted program: the host calls of the modules it runs share one chain).
_TRANSFORM_WORDS = re.compile(rb"\b(?:jit|pmap|shard_map|pjit|xmap|vmap|in_shardings)\b")


@dataclass(frozen=True)
class ModuleView:
    """What one module's migration needs from the model (hcmigrate.options.Options)."""

    reexports: tuple[tuple[str, str], ...]  # spelled qualified name -> legacy name
    runs_under: tuple[tuple[str, str, str], ...]  # (function, transformation, where)


@dataclass
class RunModel:
    model: ProjectModel
    views: dict[int, ModuleView]  # target index -> its view
    names: dict[int, str]  # target index -> its module name (candidates)
    importers: dict[int, tuple[tuple[str, tuple[str, ...]], ...]]  # index -> (module, names)


def _read_tree(path: Path) -> tuple[ast.Module, str] | None:
    try:
        text = read_regular(path).decode("utf-8-sig")
        return ast.parse(text), text
    except (FileError, OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return None  # (the per-file step reports what is wrong with a candidate)
    except MemoryError:
        return None


def build_run_model(scanned, targets) -> RunModel:
    """The model of a run from its pre-filter scan (hcmigrate.prefilter.ScanResult) over
    `targets` (hcmigrate.discover.Target)."""
    model = ProjectModel()
    roots: set[Path] = set()
    outer: set[Path] = set()
    index_of: dict[str, int] = {}
    texts: dict[int, str] = {}

    def read(path: Path):
        name = module_name(path)
        tree_text = _read_tree(path)
        if tree_text is None:
            return name, None, None
        try:
            facts = facts_of(tree_text[0], name, path.name == "__init__.py")
        except Exception:  # (RecursionError...): the per-file step reports what is wrong
            return name, None, None
        return name, facts, tree_text[1]

    def note_root(path: Path, name: str) -> None:
        depth = name.count(".") + (1 if path.name == "__init__.py" else 0)
        root = path.resolve().parent
        for _ in range(depth):
            root = root.parent
        roots.add(root)
        # (and every folder above the module, after those: a namespace package's modules are
        # imported by names longer than their packages give, a symlinked alias by another)
        for folder in (path.absolute().parent, path.resolve().parent):
            outer.update((folder, *folder.parents))

    seeds = scanned.legacy  # (see hcmigrate.prefilter.ScanResult)
    for i in sorted(seeds):
        if not targets[i].notebook:
            path = Path(targets[i].path)
            name, facts, text = read(path)
            if facts is not None and name not in model.modules:
                model.add(facts)
                note_root(path, name)
                index_of[name] = i
                texts[i] = text
    if model.modules:
        # The modules that import one of them (directly, or through a module that does, two
        # steps at most) join the run's modules when they apply a transformation or pass one
        # on: a program that jits or pmaps a candidate's function. Any other module of the tree
        # is read when a question reaches it (model.loader).
        others = [
            i
            for i, target in enumerate(targets)
            if i not in seeds and i not in scanned.generated and not target.notebook
        ]
        index = _ImportIndex(targets, others)  # (one byte scan of the other files)
        wanted, seen = set(model.modules), set()
        model.followed = set(model.modules)
        for step in range(2):
            links = set()
            for i in index.may_import(wanted):
                if i in seen:
                    continue
                path = Path(targets[i].path)
                try:
                    found = _imports_one_of(path, wanted, transforms_only=step > 0)
                except Exception:  # (RecursionError, MemoryError...): not a module to read
                    continue
                if found is None:
                    continue
                seen.add(i)
                links.add(module_name(path))
                tree, text, transforms = found
                if transforms:  # a program: it joins the run's modules
                    try:
                        facts = facts_of(tree, module_name(path), path.name == "__init__.py")
                    except Exception:  # (RecursionError...): the per-file step reports it
                        continue
                    if facts.applications:
                        model.add(facts)
            model.followed |= links
            wanted = links - set(model.modules)
            if not wanted:
                break

        # (and their packages, whose __init__ may pass a name on)
        model.followed |= {
            name.rsplit(".", n)[0]
            for name in list(model.followed)
            for n in range(1, name.count(".") + 1)
        }

        located = _Locator(targets, roots, outer)

        def load(name: str) -> ModuleFacts | None:
            path = located.paths.get(name)
            if path is None:
                return None
            found, facts, _ = read(path)
            return facts if found == name else None

        model.loader = load
        model.locator = located

    words = LEGACY_PUBLIC_NAMES | {LEGACY_MODULE.rpartition(".")[2]}
    words |= {name for r in scanned.reexports for name in r.names}
    links = model.legacy_links(set(index_of), words)
    table = tuple(
        sorted(
            (f"{module}.{name}", target)
            for module, names in links.items()
            for name, target in names.items()
        )
    )
    views = {}
    for name, i in index_of.items():
        own = dict(table)
        own.update(model.spelled_uses(name))
        runs = tuple((r.function, r.transform, r.where) for r in model.runs_under(name))
        views[i] = ModuleView(tuple(sorted(own.items())), runs)
    importers = _unfollowed_importers(scanned, texts, {key for key, _ in table}, targets)
    return RunModel(model, views, {i: name for name, i in index_of.items()}, importers)


class _Locator:
    """Which module of the tree an imported dotted name stands for: a file at that name's place
    under a folder above one of the run's modules (where Python would find it when that folder
    is on its path), that is one of the run's files once symlinks are resolved; its module
    name, from its real place among packages. `paths`: module name -> the file."""

    def __init__(self, targets, roots: set[Path], outer: set[Path]):
        self.targets = targets
        # (the run's package roots first, then the folders above its modules, nearest first)
        self.roots = [
            *sorted(roots),
            *sorted(outer - roots, key=lambda r: (-len(r.parts), str(r))),
        ]
        self.paths: dict[str, Path] = {}
        self._real: set[str] | None = None

    def __call__(self, name: str) -> str | None:
        if not name or name.startswith("jax.") or name in ("jax", "numpy", "functools"):
            return None
        parts = name.split(".")
        for root in self.roots:
            for path in (
                root.joinpath(*parts[:-1], parts[-1] + ".py"),
                root.joinpath(*parts, "__init__.py"),
            ):
                if path.is_file() and (real := os.path.realpath(path)) in self._tree():
                    found = module_name(real)
                    self.paths.setdefault(found, Path(real))
                    return found
        return None

    def _tree(self) -> set[str]:
        if self._real is None:  # (once per run, when a name first needs it)
            self._real = {os.path.realpath(t.display) for t in self.targets if not t.notebook}
        return self._real


@functools.lru_cache(maxsize=8)
def _stems_of(modules: frozenset[str]) -> tuple[tuple[bytes, bytes], ...]:
    return tuple(
        (_encoded(parts[-1]), _encoded(parts[-2]) if len(parts) > 1 else b"")
        for parts in (m.split(".") for m in sorted(modules))
    )


def _encoded(name: str) -> bytes:
    # (surrogateescape: a module named after a file whose name is not UTF-8)
    return name.encode("utf-8", "surrogateescape")


def _stems(modules) -> tuple[tuple[bytes, bytes], ...]:
    """(last part, the part before it) of each module name."""
    return _stems_of(frozenset(modules))


def _may_import(statements: list[bytes], stems) -> bool:
    """Can one of these import statements import a module of `stems` by its name: the
    statement names its last part, and its package's last part too or is relative?"""
    for statement in statements:
        words = set(_BYTE_WORDS.findall(statement))
        relative = statement.lstrip().startswith(b"from") and b"." in statement.split()[1][:1]
        for stem, parent in stems:
            if stem in words and (relative or not parent or parent in words):
                return True
    return False


def _imports_one_of(path: Path, modules: set[str], transforms_only: bool):
    """(its ast, its text, does it name a transformation) when the file imports one of
    `modules` (by its own name, not a package above it), else None; with `transforms_only`,
    only a file that names a transformation. Its one parse (the model's facts reuse it)."""
    from hcmigrate.prefilter import import_statements, read_bytes

    data = read_bytes(path)
    if data is None:
        return None
    transforms = bool(_TRANSFORM_WORDS.search(data))
    if transforms_only and not transforms:
        return None
    if not _may_import(import_statements(data), _stems(modules)):
        return None
    try:
        text = data.decode("utf-8-sig")
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    own = ModuleFacts(module_name(path), path.name == "__init__.py")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported = {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = own.absolute(node.module, node.level)
            imported = {base} | {f"{base}.{alias.name}" for alias in node.names}
        else:
            continue
        if not imported.isdisjoint(modules):
            return tree, text, transforms
    return None


class _ImportIndex:
    """Which of the tree's other files may import a module, from one read of each: the words
    of its import statements (a superset: hcmigrate.prefilter's cheap reading) that are the
    names of the tree's folders and modules, and whether it imports relatively."""

    def __init__(self, targets, indices: list[int]):
        from hcmigrate.prefilter import _FROM_MODULE, _import_words_superset, read_bytes

        parts: set[bytes] = set()  # (the names a module of the tree can be imported by)
        for target in targets:
            path = Path(target.display)
            parts.add(_encoded(path.stem))
            parts.update(_encoded(part) for part in path.parent.parts)
        self.words: dict[int, frozenset[bytes]] = {}
        self.relative: set[int] = set()
        for i in indices:
            data = read_bytes(targets[i].display)
            if data is None or b"import" not in data:
                continue
            words = parts.intersection(_import_words_superset(data))
            if words:
                self.words[i] = frozenset(words)
            if b"." in data and any(m[:1] == b"." for m in _FROM_MODULE.findall(data)):
                self.relative.add(i)

    def may_import(self, modules: set[str]) -> list[int]:
        """The files whose import words hold a module's last part, and its package's last
        part too or a relative import (those `_imports_one_of` then reads exactly)."""
        stems = _stems(modules)
        return [
            i
            for i, words in self.words.items()
            if any(
                stem in words and (not parent or parent in words or i in self.relative)
                for stem, parent in stems
            )
        ]


def _unfollowed_importers(scanned, texts: dict[int, str], kept: set[str], targets):
    """For each file that imports a module re-exporting legacy names (pre-filter phase 2), the
    names of those modules it may use that the model found no link for (HCB006 reports them)."""
    exports = {r.module: r.names for r in scanned.reexports}
    importers = {}
    for i, mods in scanned.reexport_hits.items():
        text = texts.get(i)
        try:
            tree = None if text is None else ast.parse(text)
            used = None if tree is None else _names_in_code(tree)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = used = None
        package = _package_of(targets[i])
        importers[i] = tuple(
            (m, tuple(sorted(names)))
            for m in mods
            if m in exports
            and (names := {n for n in exports[m] if f"{m}.{n}" not in kept})
            and (used is None or not used.isdisjoint(names))
            and (
                tree is None
                or (taken := _names_taken_from(tree, m, package)) is None
                or taken & names
            )
        )
    return importers


def _package_of(target) -> str | None:
    """The package a file's relative imports start from (None: a notebook, or a top-level
    module, which has none)."""
    if target.notebook:
        return None
    path = Path(target.path)
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return package or None


def _names_taken_from(tree: ast.Module, module: str, package: str | None) -> set[str] | None:
    """The names a module's code can take from `module` when it reaches it only through
    `from module import a, b` (those names, relative imports resolved from `package`); None
    where it may reach any of its names: it imports the module object (`import module`, `from
    package import module`), star-imports it, imports relatively from an unknown package, or
    binds a package above it and spells an attribute named like the module
    (`package.module.name`). An importer that uses `jax` of its own, and takes only a class
    from a module whose `import jax.experimental.host_callback` also binds `jax`, takes no
    legacy name from it."""
    last = module.rpartition(".")[2]
    chained = any(isinstance(n, ast.Attribute) and n.attr == last for n in ast.walk(tree))
    taken: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                if node.level - 1 >= len(parts):
                    return None
                base = ".".join(parts[: len(parts) - (node.level - 1)])
                source = f"{base}.{source}" if source else base
            if source == module:
                if any(a.name == "*" for a in node.names):
                    return None
                taken.update(a.name for a in node.names)
            elif module.startswith(source + "."):
                for a in node.names:
                    full = f"{source}.{a.name}"
                    if a.name == "*" or full == module:
                        return None
                    if module.startswith(full + ".") and chained:
                        return None
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name == module or a.name.startswith(module + "."):
                    return None
                if module.startswith(a.name + ".") and chained:
                    return None
    return taken


def _names_in_code(tree: ast.Module) -> set[str]:
    """The identifiers a module's code uses, and the words of its strings that are not
    docstrings (code run with `exec`). A name mentioned only in a docstring or a comment is
    no use of it."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.add(node.asname or node.name.split(".")[0])
            found.add(node.name.rsplit(".", 1)[-1])
    for node in non_docstring_strings(tree):
        found.update(_WORDS.findall(node.value))
    return found
