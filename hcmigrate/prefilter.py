"""Two-phase text pre-filter: which files could touch jax.experimental.host_callback at all
(or a removed JAX API, or call into `jax.random`: the JAX1xx rules' own test,
hcmigrate.removed_api_scan, on the files the host_callback test passes over).

Phase 1 (bytes only, costs about what reading costs): a file is a candidate when it contains
``host_callback`` (or both ``pure_callback`` and ``vectorized``, for the clean-up rule). Any direct
use of the legacy API must spell the module name somewhere. The few hits are parsed once (``ast``)
to drop files that only mention it in comments or docstrings, and to note the legacy names the
module binds at module level.

Phase 2 (cross-module re-exports): a candidate module may bind legacy names at module level
(``from jax.experimental import host_callback as hcb``, ``from jax.experimental.host_callback
import id_tap``, or re-export names it got from another re-exporter). Other files that mention
that module (by its last dotted component, or its package for ``__init__.py``) *and* one of
those names as a word become candidates too. Repeated until nothing new is found, so chains of
re-exports are followed. Files that fail the filter are never parsed.

Cost: every file is read once per phase (a phase-2 round) and no file's bytes are kept, so memory
stays flat as the tree grows. Phase 2 first collects a cheap superset of each file's import words,
so the exact (slow) look at import statements only runs on the few files that may import a
re-exporting module. With several jobs and a large tree both phases are spread over forked
worker processes (see `_in_workers`).
"""

from __future__ import annotations

import ast
import json
import os
import re
from stat import S_ISREG
from dataclasses import dataclass, field
from pathlib import Path
from functools import partial
from typing import Callable

from hcmigrate.facts import LEGACY_PUBLIC_NAMES
from hcmigrate.files import MAX_FILE_BYTES
from hcmigrate.project_model.bindings import (
    ReExport,
    binding_targets,
    legacy_binding_targets,
    module_name,
)
from hcmigrate.rules.spec import LEGACY_WORD, TriggerWords
from hcmigrate.rules.trigger_table import TRIGGERS
from hcmigrate.scan_workers import can_fork, in_workers
from hcmigrate.syntax import non_docstring_strings

# What a file must contain for a rule to apply, from the rules' own triggers (the table is
# generated from them: this module must not import the rules, which import libcst): every use
# of the legacy module spells `host_callback`; a modern-call rule's file holds all the words of
# its trigger (`pure_callback` and `vectorized`: either alone is common).
WORDS = TriggerWords(TRIGGERS)
NEEDLE = LEGACY_WORD.encode()
NEEDLE_SETS = tuple(tuple(word.encode() for word in words) for words in WORDS.needle_sets)
GENERATED_MARKER = b"@gen" + b"erated"


# Import statements (a parenthesised name list may span lines): a module can only take a
# re-exported name from a module whose name appears in one of its imports.
_GAP = rb"(?:[ \t]|\\\r?\n)"  # a blank, or a backslash that continues the line
_REST = rb"[^\\\n]*(?:\\(?:\r\n|[\s\S])[^\\\n]*)*"  # to the end of the (continued) line
_IMPORT_STATEMENT = re.compile(
    # at a line's start, or at the start of a string or of an escaped line in one (code kept
    # in strings and run with `exec` imports too)
    rb"(?:^[ \t]*|(?<=[\"'])|(?<=\\n))(?:from"
    + _GAP
    + rb"+[.\w]+"
    + _GAP
    + rb"+import"
    + _GAP
    + rb"*(?:\([^)]*\)|"
    + _REST
    + rb")"
    rb"|import" + _GAP + _REST + rb")",
    re.M,
)
_WORD = re.compile(rb"\w+")


def import_statements(data: bytes) -> list[bytes]:
    """The file's import statements (and the imports of code kept in its strings)."""
    return _IMPORT_STATEMENT.findall(data)


def import_words(data: bytes) -> set[bytes]:
    """Every identifier in the file's import statements (module path parts and names)."""
    words: set[bytes] = set()
    for statement in _IMPORT_STATEMENT.findall(data):
        words.update(_WORD.findall(statement))
    return words


# What follows each `from` (the module) and each `import` (to the end of the line, or through a
# parenthesised name list and the rest of its line), wherever they stand: every word of an
# import statement is among these words. Each match consumes only its keyword (the rest is a
# lookahead), so no match can swallow the keyword of the next statement, and both patterns
# start with a literal, which the regex engine finds about as fast as `bytes.find` (the exact
# pattern above tries every line start).
_FROM_MODULE = re.compile(rb"from(?=" + _GAP + rb"+([.\w]+))")
_AFTER_IMPORT = re.compile(rb"import(?=" + _GAP + rb"*(\([^)]*\)" + _REST + rb"|" + _REST + rb"))")
_NON_WORD_TO_SPACE = bytes(
    c if chr(c).isascii() and (chr(c).isalnum() or c == ord("_")) else 32 for c in range(256)
)


def _import_words_superset(data: bytes) -> set[bytes]:
    """A superset of `import_words(data)` at a fraction of its cost."""
    text = b" ".join(_FROM_MODULE.findall(data)) + b" " + b" ".join(_AFTER_IMPORT.findall(data))
    return {b"from", b"import", *text.translate(_NON_WORD_TO_SPACE).split()}


def _shared_part(needle_sets) -> bytes:
    """The longest text every needle set has a word containing (at least 4 characters)."""
    first, *others = needle_sets
    parts = sorted(
        {w[i:j] for w in first for i in range(len(w)) for j in range(i + 4, len(w) + 1)},
        key=len,
        reverse=True,
    )
    return next((p for p in parts if all(any(p in w for w in o) for o in others)), b"")


def _words_pattern(words, before: bytes, after: bytes) -> re.Pattern[bytes] | None:
    if not words:
        return None
    return re.compile(before + b"|".join(re.escape(w.encode()) for w in sorted(words)) + after)


_SHARED = _shared_part(NEEDLE_SETS)


def direct_candidate(data: bytes) -> bool:
    # One scan for a part every needle set shares ("_callback") rules out almost every file.
    return _SHARED in data and any(all(n in data for n in needles) for needles in NEEDLE_SETS)


# What `_tree_uses_api` looks for, as text: `host_callback` after a dot (an attribute, a dotted
# module name; blanks, line continuations and comments may stand between them) or as a word
# of an import statement; a trigger's keyword as a keyword argument (`vectorized=`), a
# trigger's first argument as a string literal (`"jax_host_callback_inline"`).
_DOTTED_NEEDLE = re.compile(rb"\.(?:\s|\\|#[^\n]*)*host_callback\b")
_KEYWORD = _words_pattern(WORDS.keywords, rb"\b(?:", rb")(?:\s|\\)*=(?!=)")
_STRING = _words_pattern(WORDS.first_arguments, rb"[\"'](?:", rb")[\"']")


def _may_use_api(data: bytes) -> bool:
    """A cheap test that every file `_tree_uses_api` accepts passes: False for files that
    mention the needles only in other names (`host_callbacks`, a parameter `host_callback`),
    which are common in big libraries (jax itself) and costly to parse."""
    if NEEDLE in data and (
        _DOTTED_NEEDLE.search(data) or b"host_callback" in _import_words_superset(data)
    ):
        return True
    return any(pattern.search(data) for pattern in (_KEYWORD, _STRING) if pattern is not None)


def _is_plain_text(data: bytes) -> bool:
    """UTF-8 without NUL bytes: a file the per-file step would not reject for its bytes."""
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _parse(data: bytes) -> ast.Module | None:
    """The file's AST, or None when it is not UTF-8 or does not parse."""
    try:
        data.decode("utf-8")  # other encodings / bad bytes: let the per-file step judge
        return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _tree_uses_api(tree: ast.Module) -> bool:
    return _api_use(tree) != _NO_USE


# What a module's code does with the API (_api_use): nothing; only a trigger's keyword, a
# string naming host_callback (HCB009), a modern call; or it names the legacy module (an
# import, an attribute): only those start the project model (hcmigrate.project_model.build).
_NO_USE, _TRIGGER_ONLY, _NAMES_LEGACY = 0, 1, 2


def _api_use(tree: ast.Module) -> int:
    # Most hits import the module at the top: found without walking the whole tree.
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) and (
            _names_api(node) or any(_names_api(alias) for alias in node.names)
        ):
            return _NAMES_LEGACY
    found = _NO_USE
    for node in ast.walk(tree):
        if _names_api(node):
            if isinstance(node, (ast.Attribute, ast.alias, ast.ImportFrom)):
                return _NAMES_LEGACY
            found = _TRIGGER_ONLY
    return found if found or not _string_names_api(tree) else _TRIGGER_ONLY


_LEGACY_WORD = re.compile(r"\bhost_callback\b")


def _string_names_api(tree: ast.Module) -> bool:
    """A string that is not a docstring names host_callback (`import_module(...)`, code for
    `exec`): the codemod reports it (HCB009)."""
    return any(_LEGACY_WORD.search(node.value) for node in non_docstring_strings(tree))


def _names_api(node: ast.AST) -> bool:
    # A bare name `host_callback` is legacy only when an import bound it (seen here) or a
    # re-export did (phase 2): a parameter or local of that name (E2) is not a candidate.
    if isinstance(node, ast.Attribute):
        return node.attr == "host_callback"
    if isinstance(node, ast.alias):
        return "host_callback" in node.name
    if isinstance(node, ast.ImportFrom):
        return bool(node.module) and "host_callback" in node.module
    if isinstance(node, ast.keyword):
        return node.arg in WORDS.keywords
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value in WORDS.first_arguments
    return False


@dataclass
class ScanResult:
    candidates: set[int] = field(default_factory=set)  # indices into the scanned list
    generated: set[int] = field(default_factory=set)
    reexports: list[ReExport] = field(default_factory=list)
    reexport_hits: dict[int, list[str]] = field(default_factory=dict)  # index -> modules it uses
    # Candidates Python's own parser did not accept (or did not see: not UTF-8, or an error);
    # their text is checked by it again before libcst parses it (hcmigrate.runner).
    unparsed: set[int] = field(default_factory=set)
    # Candidates only the JAX1xx rules' test selected (no host_callback word, no re-exported
    # legacy name): the project model, which answers host_callback's questions, does not
    # start from them (it reads one only if it imports a module that does).
    removed_only: set[int] = field(default_factory=set)
    # Candidates whose code names the legacy module (an import, an attribute) or takes a name
    # a re-exporter binds: the project model starts from these (a module that only mentions
    # host_callback in a string, or holds a modern call's trigger, does not start it).
    legacy: set[int] = field(default_factory=set)


_READ_CHUNK = 1 << 18  # nearly every source file in one read; bigger ones in a few


def read_bytes(path: str | Path) -> bytes | None:
    """The file's bytes, or None when it cannot be read or is no regular file of a sane size
    (a FIFO, a device, a file over hcmigrate.files.MAX_FILE_BYTES: the per-file step reports
    why). Plain os.open/os.read: cheaper per file than open()'s buffered file object; opened
    non-blocking, so that a FIFO never blocks the scan."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            return None
        chunks = []
        while chunk := os.read(fd, _READ_CHUNK):
            chunks.append(chunk)
    except OSError:  # e.g. a folder given a .py name
        return None
    finally:
        os.close(fd)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


# Phase 1 outcome of one file (_UNPARSED: a candidate that Python's parser did not accept;
# _REMOVED: a candidate of the JAX1xx rules alone, not parsed yet).
_PASS, _CANDIDATE, _GENERATED, _UNPARSED, _REMOVED, _LEGACY = 0, 1, 2, 3, 4, 5


def _phase1(path: str | Path, notebook: bool) -> tuple[int, dict[str, str]]:
    """(outcome, legacy names the module binds at module level, when it is a candidate)."""
    data = read_bytes(path)
    if data is None:
        return _UNPARSED, {}  # unreadable: the per-file step reports the error
    if GENERATED_MARKER in data:
        return _GENERATED, {}
    if notebook:
        if direct_candidate(data) or WORDS.removed.may_use(data):
            return _CANDIDATE, {}
        try:  # a notebook that is not valid JSON must still be reported
            json.loads(data)
        except ValueError:
            return _CANDIDATE, {}
        return _PASS, {}
    if not direct_candidate(data):
        return _removed_api_outcome(data), {}
    if not _may_use_api(data) and _is_plain_text(
        data
    ):  # (other files go on: their error is reported)
        return _removed_api_outcome(data), {}
    tree = _parse(data)
    use = _NO_USE if tree is None else _api_use(tree)
    if tree is not None and use == _NO_USE:
        return _removed_api_outcome(data), {}
    outcome = _UNPARSED if tree is None else _LEGACY if use == _NAMES_LEGACY else _CANDIDATE
    if NEEDLE not in data or b"import" not in data:
        return outcome, {}
    if tree is None:  # not UTF-8 (a coding cookie) or does not parse: the lenient reading
        return outcome, legacy_binding_targets(data.decode("utf-8", "replace"))
    return outcome, binding_targets(tree, {})


def _removed_api_outcome(data: bytes) -> int:
    """A file that may use a removed JAX API or call into `jax.random` (JAX110)
    (hcmigrate.removed_api_scan: a few regular expressions over the imports of JAX, no parse)
    is a candidate of the JAX1xx rules alone; any other is passed over."""
    return _REMOVED if WORDS.removed.may_use(data) else _PASS


class _Probe:
    """What phase 2 looks for in one round: the modules that newly re-export legacy names.
    (Workers are forked after it is built: they inherit it, it is never pickled.)"""

    def __init__(
        self,
        exports: dict[str, dict[str, str]],
        known: dict[str, dict[str, str]],
        candidates: frozenset[int],
        generated: frozenset[int],
        folders: dict[str, str] | None = None,
    ):
        self.known = known  # every re-exporter so far (for new candidates' own bindings)
        self.folders = folders or {}  # re-exporter -> the real folder of its file
        self.candidates = candidates  # already candidates: their bindings are known
        self.generated = generated  # skipped files, not looked at again
        self.by_stem: dict[bytes, list[str]] = {}
        for mod in exports:
            # (surrogateescape: a module named after a file whose name is not UTF-8)
            stem = mod.rsplit(".", 1)[-1].encode("utf-8", "surrogateescape")
            self.by_stem.setdefault(stem, []).append(mod)
        self.stem_set = set(self.by_stem)
        self.stems_re = re.compile(
            rb"\b(?:" + b"|".join(re.escape(st) for st in sorted(self.by_stem)) + rb")\b"
        )
        self.names_re = {
            mod: re.compile(
                rb"\b(?:"
                + b"|".join(re.escape(n.encode("utf-8", "surrogateescape")) for n in _named(ns))
                + rb")\b"
            )
            for mod, ns in exports.items()
        }

    def _is_module(self, path: str | Path, spec: str, mod: str) -> bool:
        """Does `from SPEC import *`, written in the file at `path`, import re-exporter `mod`
        (of the same last part)? Resolved against the file's own package when relative; an
        absolute name that is `mod` or ends like it (a namespace package's module is named
        by the import); or `mod`'s file in the file's own folder (reached through an alias)."""
        if spec.startswith("."):
            level = len(spec) - len(spec.lstrip("."))
            package = module_name(path).split(".")[:-1]
            package = package[: len(package) - (level - 1)] if level > 1 else package
            spec = ".".join([*package, spec.lstrip(".")])
        if spec == mod or spec.endswith("." + mod) or mod.endswith("." + spec):
            return True
        folder = self.folders.get(mod)
        return folder is not None and os.path.dirname(os.path.realpath(path)) == folder

    def hits(self, path: str | Path, data: bytes) -> list[str]:
        """Modules of this round whose stem the file imports and whose names it mentions."""
        # A cheap superset of the import-statement words rules out almost every file before
        # the exact (slow) look; `bytes in` per module would cost a pass over the file each.
        if self.stem_set.isdisjoint(_import_words_superset(data)):
            return []
        if self.stem_set.isdisjoint(import_words(data)):  # imports none of them
            return []
        found = []
        own = None
        starred = _star_imported(data)
        for stem in sorted(set(self.stems_re.findall(data))):
            for mod in self.by_stem[stem]:
                # (a star import takes every name without spelling one: the file passes them
                # on to its own star importers, chains of any depth)
                if not self.names_re[mod].search(data) and not any(
                    self._is_module(path, spec, mod) for spec in starred.get(stem, ())
                ):
                    continue
                own = module_name(path) if own is None else own
                if own != mod:
                    found.append(mod)
        return found


_STAR_IMPORT = re.compile(rb"from" + _GAP + rb"+([.\w]+)" + _GAP + rb"+import" + _GAP + rb"*\*")


def _star_imported(data: bytes) -> dict[bytes, list[str]]:
    """The modules the file star-imports, as written, by their last part (`from a.b import
    *`: {b"b": ["a.b"]})."""
    found: dict[bytes, list[str]] = {}
    if b"*" in data:
        for spec in _STAR_IMPORT.findall(data):
            found.setdefault(spec.rpartition(b".")[2], []).append(
                spec.decode("utf-8", "surrogateescape")
            )
    return found


def _named(names) -> list[str]:
    """The names a module binds, a legacy star import standing for every public legacy name."""
    return sorted(name for n in names for name in (LEGACY_PUBLIC_NAMES if n == "*" else (n,)))


def _phase2(probe: _Probe, index: int, path: str | Path) -> tuple[list[str], dict[str, str]]:
    """(re-exporting modules the file uses, its own module-level legacy names if it becomes a
    candidate through them)."""
    data = read_bytes(path)
    if data is None:
        return [], {}
    found = probe.hits(path, data)
    if not found or index in probe.candidates:
        return found, {}
    return found, legacy_binding_targets(data.decode("utf-8", "replace"), probe.known)


def _phase1_range(
    paths: list, flags: list[bool], start: int, stop: int
) -> list[tuple[int, int, dict[str, str]]]:
    """(index, outcome, bindings) of the files in [start, stop) that are not plain passes."""
    out = []
    for i in range(start, stop):
        try:
            outcome, bound = _phase1(paths[i], flags[i])
        except Exception:  # (RecursionError, MemoryError...): the per-file step reports it
            outcome, bound = _UNPARSED, {}
        if outcome != _PASS:
            out.append((i, outcome, bound))
    return out


def _phase2_range(
    paths: list, probe: _Probe, start: int, stop: int
) -> list[tuple[int, list[str], dict[str, str]]]:
    """(index, modules used, bindings) of the files in [start, stop) that use a re-exporter."""
    out = []
    for i in range(start, stop):
        if i not in probe.generated:
            try:
                found, bound = _phase2(probe, i, paths[i])
            except Exception:  # (as in phase 1: the per-file step reports what is wrong)
                continue
            if found:
                out.append((i, found, bound))
    return out


def scan(
    paths: list[str | Path],
    *,
    notebook_flags: list[bool] | None = None,
    jobs: int = 1,
    on_first_candidate: Callable[[], None] | None = None,
) -> ScanResult:
    """Run both phases over `paths`. Unreadable files count as candidates (errors surface later).
    `jobs` > 1: spread the reading over that many worker processes when the tree is large.
    `on_first_candidate` runs (in this process) as soon as phase 1 meets a candidate, while the
    workers go on: the CLI imports the codemod there, which a tree without candidates never needs."""
    flags = notebook_flags or [False] * len(paths)
    n = len(paths)
    parallel = can_fork(jobs, n)

    def phase1():
        work = partial(_phase1_range, paths, flags)
        return in_workers(work, n, jobs) if parallel else work(0, n)

    def phase2(probe: _Probe):
        work = partial(_phase2_range, paths, probe)
        return in_workers(work, n, jobs) if parallel else work(0, n)

    return _scan(paths, phase1, phase2, on_first_candidate)


def _scan(paths: list[str | Path], phase1, phase2, on_first_candidate) -> ScanResult:
    res = ScanResult()
    # Module-level legacy bindings of the candidates found in the last round, in file order.
    pending: dict[int, dict[str, str]] = {}
    for i, outcome, bound in phase1():
        if outcome == _GENERATED:
            res.generated.add(i)
        else:
            if not res.candidates and on_first_candidate is not None:
                on_first_candidate()
            res.candidates.add(i)
            if outcome == _LEGACY:
                res.legacy.add(i)
            if outcome == _UNPARSED or outcome == _REMOVED:
                res.unparsed.add(i)
            if outcome == _REMOVED:
                res.removed_only.add(i)
            if bound:
                pending[i] = bound
    # Phase 2: follow re-exports until a fixpoint.
    known: dict[str, dict[str, str]] = {}
    folders: dict[str, str] = {}
    while pending:
        new_exports: dict[str, dict[str, str]] = {}
        for i, bound in pending.items():
            mod = module_name(paths[i])
            folders.setdefault(mod, os.path.dirname(os.path.realpath(paths[i])))
            merged = {**known.get(mod, {}), **bound}
            if merged != known.get(mod):
                new_exports[mod] = merged
        if not new_exports:
            break
        known.update(new_exports)
        for mod, names in new_exports.items():
            res.reexports = [r for r in res.reexports if r.module != mod]
            res.reexports.append(ReExport(mod, frozenset(names), tuple(sorted(names.items()))))
        probe = _Probe(
            new_exports,
            dict(known),
            frozenset(res.candidates),
            frozenset(res.generated),
            dict(folders),
        )
        pending = {}
        for i, found, bound in phase2(probe):
            res.reexport_hits.setdefault(i, []).extend(found)
            res.removed_only.discard(i)
            res.legacy.add(i)
            if i not in res.candidates:
                res.candidates.add(i)
                res.unparsed.add(i)  # (phase 1 did not parse it)
                if bound:
                    pending[i] = bound
    return res
