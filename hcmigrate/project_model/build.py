"""Building the project model of a run, and each module's view of it.

The model holds every candidate of the pre-filter, the modules of the same tree they import
(followed until none is new), and the modules that apply a transformation (pmap, vmap, ...)
and import one of those: a library module's function may be run on several devices by a module
that never names host_callback.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from hcmigrate.errors import FileError
from hcmigrate.files import read_regular
from hcmigrate.project_model.bindings import module_name
from hcmigrate.project_model.model import ProjectModel
from hcmigrate.project_model.module_facts import facts_of
from hcmigrate.syntax import non_docstring_strings

_WORDS = re.compile(r"\w+")
# Words a module that applies a transformation worth following must contain (a jitted
# program: the host calls of the modules it runs share one chain).
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
    index_of: dict[str, int] = {}
    texts: dict[int, str] = {}

    def add(path: Path, index: int | None = None) -> bool:
        name = module_name(path)
        if name in model.modules:
            return False
        read = _read_tree(path)
        if read is None:
            return False
        tree, text = read
        model.add(facts_of(tree, name, path.name == "__init__.py"))
        depth = name.count(".") + (1 if path.name == "__init__.py" else 0)
        root = path.resolve().parent
        for _ in range(depth):
            root = root.parent
        roots.add(root)
        if index is not None:
            index_of[name] = index
            texts[index] = text
        return True

    for i in sorted(scanned.candidates):
        if not targets[i].notebook:
            add(Path(targets[i].path), i)
    if model.modules:
        _follow_imports(model, roots, add)
        probe = frozenset(n.rpartition(".")[2].encode() for n in model.modules)
        for i, target in enumerate(targets):
            if i in scanned.candidates or i in scanned.generated or target.notebook:
                continue
            if _applies_transformation_to(Path(target.path), probe):
                add(Path(target.path))
        _follow_imports(model, roots, add)

    links = model.legacy_links()
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
    importers = _unfollowed_importers(scanned, texts, {key for key, _ in table})
    return RunModel(model, views, {i: name for name, i in index_of.items()}, importers)


def _follow_imports(model: ProjectModel, roots: set[Path], add) -> None:
    """Add the modules of the tree that the model's modules import, until none is new."""
    done: set[str] = set()
    while True:
        wanted = set()
        for facts in list(model.modules.values()):
            if facts.name in done:
                continue
            done.add(facts.name)
            for binding in facts.bindings.values():
                if binding[0] == "module":
                    wanted.add(binding[1])
                elif binding[0] == "from":
                    wanted |= {binding[1], f"{binding[1]}.{binding[2]}"}
            wanted |= {star for star, _ in facts.stars}
        added = False
        for name in sorted(wanted - set(model.modules)):
            for path in _module_paths(name, roots):
                if path.is_file():
                    added |= add(path)
                    break
        if not added:
            return


def _module_paths(name: str, roots: set[Path]):
    if not name or name.startswith("jax.") or name in ("jax", "numpy", "functools"):
        return
    parts = name.split(".")
    for root in sorted(roots):
        yield root.joinpath(*parts[:-1], parts[-1] + ".py")
        yield root.joinpath(*parts, "__init__.py")


def _applies_transformation_to(path: Path, stems: frozenset[bytes]) -> bool:
    """Does the file name a transformation and import a module named like one of `stems`?"""
    from hcmigrate.prefilter import import_words, read_bytes

    data = read_bytes(path)
    return (
        data is not None
        and any(stem in data for stem in stems)  # (cheapest first: most files fail here)
        and _TRANSFORM_WORDS.search(data) is not None
        and not stems.isdisjoint(import_words(data))
    )


def _unfollowed_importers(scanned, texts: dict[int, str], kept: set[str]):
    """For each file that imports a module re-exporting legacy names (pre-filter phase 2), the
    names of those modules it may use that the model found no link for (HCB006 reports them)."""
    exports = {r.module: r.names for r in scanned.reexports}
    importers = {}
    for i, mods in scanned.reexport_hits.items():
        text = texts.get(i)
        try:
            used = None if text is None else _names_in_code(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            used = None
        importers[i] = tuple(
            (m, tuple(sorted(names)))
            for m in mods
            if m in exports
            and (names := {n for n in exports[m] if f"{m}.{n}" not in kept})
            and (used is None or not used.isdisjoint(names))
        )
    return importers


def _names_in_code(text: str) -> set[str]:
    """The identifiers a module's code uses, and the words of its strings that are not
    docstrings (code run with `exec`). A name mentioned only in a docstring or a comment is
    no use of it. Raises what `ast.parse` raises."""
    tree = ast.parse(text)
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


def follow_compat_together(run: RunModel, options_of, targets) -> dict[int, str]:
    """One runtime per chain across modules: where candidates' host calls may run in one traced
    program (ProjectModel.chain_groups) and one of them keeps a call on the compat runtime,
    the others follow it there (target index -> why). Each such module's plan is worked out
    first (hcmigrate.codemod.pipeline.keeps_compat); `options_of(i)`: its options."""
    groups = run.model.chain_groups(set(run.names.values()))
    if not groups:
        return {}
    from hcmigrate.codemod.pipeline import keeps_compat
    from hcmigrate.errors import HcmigrateError

    index_of = {name: i for i, name in run.names.items()}
    follows: dict[int, str] = {}

    def _keeps(name: str) -> bool:
        read = _read_tree(Path(targets[index_of[name]].path))
        try:
            return read is not None and keeps_compat(read[1], options_of(index_of[name]))
        except (HcmigrateError, RecursionError, MemoryError):
            return False  # (the per-file step reports it)

    for group, where in groups:
        keeper = next((name for name in sorted(group) if _keeps(name)), None)
        if keeper is None:
            continue
        # (a module that keeps calls there of its own accord says so; the others follow)
        for name in sorted(group - {keeper}):
            follows[index_of[name]] = (
                f"module `{keeper}` keeps calls there, and their host calls may run in one "
                f"program ({where} reaches both); one runtime keeps their program order"
            )
    return follows
