"""Two-phase text pre-filter: which files could touch jax.experimental.host_callback at all.

Phase 1 (bytes only, costs about what reading costs): a file is a candidate when it contains
``host_callback`` (or both ``pure_callback`` and ``vectorized``, for the clean-up rule). Any direct use of the legacy API must spell the module name somewhere.

Phase 2 (cross-module re-exports): a candidate module may bind legacy names at module level
(``from jax.experimental import host_callback as hcb``, ``from jax.experimental.host_callback
import id_tap``, or re-export names it got from another re-exporter). Other files that mention
that module (by its last dotted component, or its package for ``__init__.py``) *and* one of
those names as a word become candidates too. Repeated until nothing new is found, so chains of
re-exports are followed. Files that fail the filter are never parsed.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

NEEDLE = b"host_callback"
# The codemod also modernises `pure_callback(..., vectorized=True)` (hcmigrate.codemod.HINTS
# lists "vectorized"); `vectorized` alone is common (numpy, scipy), so that rule's files must
# contain both words.
NEEDLES = (NEEDLE, b"vectorized")
MODERN = (b"pure_callback", b"vectorized")
GENERATED_MARKER = b"@gen" + b"erated"
LEGACY = "jax.experimental.host_callback"


# Import statements (a parenthesised name list may span lines): a module can only take a
# re-exported name from a module whose name appears in one of its imports.
_IMPORT_STATEMENT = re.compile(
    rb"^[ \t]*(?:from[ \t]+[.\w]+[ \t]+import[ \t]*(?:\([^)]*\)|[^\n]*)|import[ \t][^\n]*)", re.M
)
_WORD = re.compile(rb"\w+")


def _import_words(data: bytes) -> set[bytes]:
    """Every identifier in the file's import statements (module path parts and names)."""
    words: set[bytes] = set()
    for statement in _IMPORT_STATEMENT.findall(data):
        words.update(_WORD.findall(statement))
    return words


def direct_candidate(data: bytes) -> bool:
    return NEEDLE in data or all(n in data for n in MODERN)


def uses_api(data: bytes) -> bool:
    """Second, exact look at a phase-1 hit: does the code (not a comment or docstring) name
    host_callback, or pass `vectorized=` to a call? Unparsable files stay candidates (their
    error is reported by the per-file step)."""
    try:
        data.decode("utf-8")  # other encodings / bad bytes: let the per-file step judge
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    for node in ast.walk(tree):
        # A bare name `host_callback` is legacy only when an import bound it (seen below) or a
        # re-export did (phase 2): a parameter or local of that name (E2) is not a candidate.
        if isinstance(node, ast.Attribute) and node.attr == "host_callback":
            return True
        if isinstance(node, ast.alias) and "host_callback" in node.name:
            return True
        if isinstance(node, ast.ImportFrom) and node.module and "host_callback" in node.module:
            return True
        if isinstance(node, ast.keyword) and node.arg == "vectorized":
            return True
    return False


@dataclass(frozen=True)
class ReExport:
    module: str  # dotted module name of the re-exporting file (best effort from the path)
    names: frozenset[str]  # names it binds at module level that are (or hold) legacy objects
    targets: tuple[tuple[str, str], ...] = ()  # (name, legacy qualified name it stands for)

    @property
    def stem(self) -> str:
        return self.module.rsplit(".", 1)[-1]


def module_name(path: Path) -> str:
    """Dotted module name from the file's place among packages (folders with __init__.py)."""
    path = path.resolve()
    parts = [] if path.stem == "__init__" else [path.stem]
    d = path.parent
    while (d / "__init__.py").exists() and d != d.parent:
        parts.append(d.name)
        d = d.parent
    return ".".join(reversed(parts)) or path.stem


def legacy_bindings(text: str, extra_modules: dict[str, frozenset[str]] | None = None) -> frozenset[str]:
    """Names bound at module level (not inside functions) that refer to the legacy module or its
    members, directly or via a re-exporting module in `extra_modules` (name -> legacy names)."""
    return frozenset(legacy_binding_targets(text, {m: {n: "" for n in ns} for m, ns in (extra_modules or {}).items()}))


def legacy_binding_targets(text: str, extra_modules: dict[str, dict[str, str]] | None = None) -> dict[str, str]:
    """As legacy_bindings, with what each name stands for: `{"hcb": "jax.experimental.host_callback",
    "tap": "jax.experimental.host_callback.id_tap"}` (targets through `extra_modules`, a map of
    module -> {name: target}, come from the module that re-exports them)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    extra_modules = extra_modules or {}
    names: dict[str, str] = {}

    def visit(body):
        for node in body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == LEGACY or a.name.startswith(LEGACY + "."):
                        if a.asname:
                            names[a.asname] = a.name
                        else:
                            names[a.name.split(".")[0]] = a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                for a in node.names:
                    full = f"{mod}.{a.name}"
                    if mod == LEGACY or full == LEGACY or mod.startswith(LEGACY + "."):
                        names[a.asname or a.name] = full
                    else:
                        last = mod.rsplit(".", 1)[-1] if mod else ""
                        for key, exported in extra_modules.items():
                            stem = key.rsplit(".", 1)[-1]
                            if (last == stem or mod.endswith(key)) and (a.name in exported or a.name == "*"):
                                if a.name == "*":
                                    names.update(exported)
                                else:
                                    names[a.asname or a.name] = exported[a.name]
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for h in getattr(node, "handlers", []):
                    visit(h.body)
                visit(getattr(node, "finalbody", []))
            elif isinstance(node, ast.Assign) and isinstance(node.value, (ast.Name, ast.Attribute)):
                # `tap = hcb.id_tap` / `hcb2 = hcb`
                root = node.value
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in names:
                    dotted = ast.unparse(node.value)
                    target = names[root.id] + dotted[len(root.id):] if names[root.id] else ""
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            names[t.id] = target

    visit(tree.body)
    return names


@dataclass
class ScanResult:
    candidates: set[int] = field(default_factory=set)  # indices into the scanned list
    generated: set[int] = field(default_factory=set)
    reexports: list[ReExport] = field(default_factory=list)
    reexport_hits: dict[int, list[str]] = field(default_factory=dict)  # index -> modules it uses


def _read(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None  # reported later by the per-file step


def scan(paths: list[Path], *, notebook_flags: list[bool] | None = None) -> ScanResult:
    """Run both phases over `paths`. Unreadable files count as candidates (errors surface later)."""
    res = ScanResult()
    texts: dict[int, str] = {}
    for i, p in enumerate(paths):
        data = _read(p)
        if data is None:
            res.candidates.add(i)
            continue
        if GENERATED_MARKER in data:
            res.generated.add(i)
            continue
        if notebook_flags and notebook_flags[i] and not direct_candidate(data):
            try:  # a notebook that is not valid JSON must still be reported
                json.loads(data)
            except ValueError:
                res.candidates.add(i)
            continue
        if direct_candidate(data) and (bool(notebook_flags and notebook_flags[i]) or uses_api(data)):
            res.candidates.add(i)
            if NEEDLE in data and not (notebook_flags and notebook_flags[i]) and (b"import" in data):
                texts[i] = data.decode("utf-8", "replace")
    # Phase 2: follow re-exports until a fixpoint.
    known: dict[str, dict[str, str]] = {}
    frontier = texts
    while frontier:
        new_exports: dict[str, dict[str, str]] = {}
        for i, text in frontier.items():
            bound = legacy_binding_targets(text, known)
            if bound:
                mod = module_name(paths[i])
                merged = {**known.get(mod, {}), **bound}
                if merged != known.get(mod):
                    new_exports[mod] = merged
        if not new_exports:
            break
        known.update(new_exports)
        for mod, names in new_exports.items():
            res.reexports = [r for r in res.reexports if r.module != mod]
            res.reexports.append(ReExport(mod, frozenset(names), tuple(sorted(names.items()))))
        frontier = {}
        names_re = {mod: re.compile(rb"\b(?:" + b"|".join(re.escape(n.encode()) for n in sorted(names)) + rb")\b")
                    for mod, names in new_exports.items()}
        by_stem: dict[bytes, list[str]] = {}
        for mod in new_exports:
            by_stem.setdefault(mod.rsplit(".", 1)[-1].encode(), []).append(mod)
        stems_re = re.compile(rb"\b(?:" + b"|".join(re.escape(st) for st in sorted(by_stem)) + rb")\b")
        stem_set = set(by_stem)
        for i, p in enumerate(paths):
            if i in res.generated:
                continue
            data = _read(p)
            if data is None or not (stem_set & _import_words(data)):  # imports none of them
                continue
            for stem in set(stems_re.findall(data)):
                for mod in by_stem[stem]:
                    if not names_re[mod].search(data) or module_name(p) == mod:
                        continue
                    res.reexport_hits.setdefault(i, []).append(mod)
                    if i not in res.candidates:
                        res.candidates.add(i)
                        frontier[i] = data.decode("utf-8", "replace")
    return res


def imported_names(text: str, own_module: str, is_package: bool = False) -> set[str]:
    """Qualified names a module takes from other modules: `from M import N` gives "M.N"
    (relative imports resolved against `own_module`, a package's `__init__` when
    `is_package`), `import M` then `M.N` gives "M.N"."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    found: set[str] = set()
    bound_modules: dict[str, str] = {}
    package = own_module.rsplit(".", 1)[0] if "." in own_module else ""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = own_module.split(".") + (["__init__"] if is_package else [])
                anchor = ".".join(parts[: max(0, len(parts) - node.level)]) if own_module else package
                base = f"{anchor}.{base}".strip(".") if base else anchor
            for alias in node.names:
                found.add(f"{base}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound_modules[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.Attribute):
            chain = []
            root = node
            while isinstance(root, ast.Attribute):
                chain.append(root.attr)
                root = root.value
            if isinstance(root, ast.Name) and root.id in bound_modules:
                found.add(".".join([bound_modules[root.id], *reversed(chain)]))
    return found
