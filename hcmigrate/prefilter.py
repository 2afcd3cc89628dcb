"""Two-phase text pre-filter: which files could touch jax.experimental.host_callback at all.

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
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from functools import partial
from typing import Callable, Iterator

from hcmigrate.rules.spec import LEGACY_WORD, TriggerWords
from hcmigrate.rules.trigger_table import TRIGGERS

# What a file must contain for a rule to apply, from the rules' own triggers (the table is
# generated from them: this module must not import the rules, which import libcst): every use
# of the legacy module spells `host_callback`; a modern-call rule's file holds all the words of
# its trigger (`pure_callback` and `vectorized`: either alone is common).
WORDS = TriggerWords(TRIGGERS)
NEEDLE = LEGACY_WORD.encode()
NEEDLE_SETS = tuple(tuple(word.encode() for word in words) for words in WORDS.needle_sets)
GENERATED_MARKER = b"@gen" + b"erated"
LEGACY = "jax.experimental.host_callback"


# Import statements (a parenthesised name list may span lines): a module can only take a
# re-exported name from a module whose name appears in one of its imports.
_GAP = rb"(?:[ \t]|\\\r?\n)"  # a blank, or a backslash that continues the line
_REST = rb"[^\\\n]*(?:\\(?:\r\n|[\s\S])[^\\\n]*)*"  # to the end of the (continued) line
_IMPORT_STATEMENT = re.compile(
    rb"^[ \t]*(?:from"
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


def _import_words(data: bytes) -> set[bytes]:
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
    """A superset of `_import_words(data)` at about a quarter of its cost."""
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


def uses_api(data: bytes) -> bool:
    """Second, exact look at a phase-1 hit: does the code (not a comment or docstring) name
    host_callback, or pass `vectorized=` to a call? Unparsable files stay candidates (their
    error is reported by the per-file step)."""
    tree = _parse(data)
    return tree is None or _tree_uses_api(tree)


def _tree_uses_api(tree: ast.Module) -> bool:
    # Most hits import the module at the top: found without walking the whole tree.
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) and (
            _names_api(node) or any(_names_api(alias) for alias in node.names)
        ):
            return True
    return any(_names_api(node) for node in ast.walk(tree))


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


@dataclass(frozen=True)
class ReExport:
    module: str  # dotted module name of the re-exporting file (best effort from the path)
    names: frozenset[str]  # names it binds at module level that are (or hold) legacy objects
    targets: tuple[tuple[str, str], ...] = ()  # (name, legacy qualified name it stands for)

    @property
    def stem(self) -> str:
        return self.module.rsplit(".", 1)[-1]


def module_name(path: str | Path) -> str:
    """Dotted module name from the file's place among packages (folders with __init__.py)."""
    path = Path(path).resolve()
    parts = [] if path.stem == "__init__" else [path.stem]
    d = path.parent
    while (d / "__init__.py").exists() and d != d.parent:
        parts.append(d.name)
        d = d.parent
    return ".".join(reversed(parts)) or path.stem


def legacy_bindings(
    text: str, extra_modules: dict[str, frozenset[str]] | None = None
) -> frozenset[str]:
    """Names bound at module level (not inside functions) that refer to the legacy module or its
    members, directly or via a re-exporting module in `extra_modules` (name -> legacy names)."""
    return frozenset(
        legacy_binding_targets(
            text, {m: {n: "" for n in ns} for m, ns in (extra_modules or {}).items()}
        )
    )


def legacy_binding_targets(
    text: str, extra_modules: dict[str, dict[str, str]] | None = None
) -> dict[str, str]:
    """As legacy_bindings, with what each name stands for: `{"hcb": "jax.experimental.host_callback",
    "tap": "jax.experimental.host_callback.id_tap"}` (targets through `extra_modules`, a map of
    module -> {name: target}, come from the module that re-exports them)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    return _binding_targets(tree, extra_modules or {})


def _binding_targets(tree: ast.Module, extra_modules: dict[str, dict[str, str]]) -> dict[str, str]:
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
                            if (last == stem or mod.endswith(key)) and (
                                a.name in exported or a.name == "*"
                            ):
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
                    target = names[root.id] + dotted[len(root.id) :] if names[root.id] else ""
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


_READ_CHUNK = 1 << 18  # nearly every source file in one read; bigger ones in a few


def read_bytes(path: str | Path) -> bytes | None:
    """The file's bytes, or None when it cannot be read (the per-file step reports why).
    Plain os.open/os.read: about 3x cheaper per file than open()'s buffered file object."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, _READ_CHUNK):
            chunks.append(chunk)
    except OSError:  # e.g. a folder given a .py name
        return None
    finally:
        os.close(fd)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


# Phase 1 outcome of one file.
_PASS, _CANDIDATE, _GENERATED = 0, 1, 2


def _phase1(path: str | Path, notebook: bool) -> tuple[int, dict[str, str]]:
    """(outcome, legacy names the module binds at module level, when it is a candidate)."""
    data = read_bytes(path)
    if data is None:
        return _CANDIDATE, {}  # unreadable: the per-file step reports the error
    if GENERATED_MARKER in data:
        return _GENERATED, {}
    if notebook:
        if direct_candidate(data):
            return _CANDIDATE, {}
        try:  # a notebook that is not valid JSON must still be reported
            json.loads(data)
        except ValueError:
            return _CANDIDATE, {}
        return _PASS, {}
    if not direct_candidate(data):
        return _PASS, {}
    if not _may_use_api(data) and _is_plain_text(
        data
    ):  # (other files go on: their error is reported)
        return _PASS, {}
    tree = _parse(data)
    if tree is not None and not _tree_uses_api(tree):
        return _PASS, {}
    if NEEDLE not in data or b"import" not in data:
        return _CANDIDATE, {}
    if tree is None:  # not UTF-8 (a coding cookie) or does not parse: the lenient reading
        return _CANDIDATE, legacy_binding_targets(data.decode("utf-8", "replace"))
    return _CANDIDATE, _binding_targets(tree, {})


class _Probe:
    """What phase 2 looks for in one round: the modules that newly re-export legacy names.
    (Workers are forked after it is built: they inherit it, it is never pickled.)"""

    def __init__(
        self,
        exports: dict[str, dict[str, str]],
        known: dict[str, dict[str, str]],
        candidates: frozenset[int],
        generated: frozenset[int],
    ):
        self.known = known  # every re-exporter so far (for new candidates' own bindings)
        self.candidates = candidates  # already candidates: their bindings are known
        self.generated = generated  # skipped files, not looked at again
        self.by_stem: dict[bytes, list[str]] = {}
        for mod in exports:
            self.by_stem.setdefault(mod.rsplit(".", 1)[-1].encode(), []).append(mod)
        self.stem_set = set(self.by_stem)
        self.stems_re = re.compile(
            rb"\b(?:" + b"|".join(re.escape(st) for st in sorted(self.by_stem)) + rb")\b"
        )
        self.names_re = {
            mod: re.compile(
                rb"\b(?:" + b"|".join(re.escape(n.encode()) for n in sorted(ns)) + rb")\b"
            )
            for mod, ns in exports.items()
        }

    def hits(self, path: str | Path, data: bytes) -> list[str]:
        """Modules of this round whose stem the file imports and whose names it mentions."""
        # A cheap superset of the import-statement words rules out almost every file before
        # the exact (slow) look; `bytes in` per module would cost a pass over the file each.
        if self.stem_set.isdisjoint(_import_words_superset(data)):
            return []
        if self.stem_set.isdisjoint(_import_words(data)):  # imports none of them
            return []
        found = []
        own = None
        for stem in sorted(set(self.stems_re.findall(data))):
            for mod in self.by_stem[stem]:
                if not self.names_re[mod].search(data):
                    continue
                own = module_name(path) if own is None else own
                if own != mod:
                    found.append(mod)
        return found


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


# Below this many files, worker processes cost more than they save.
PARALLEL_MIN_FILES = 2000
# Files per unit of work: small enough that interleaved units balance the workers (files differ
# a lot in size), large enough that the messages (the few non-trivial results) cost nothing.
_SLICE = 128


def _can_fork(jobs: int, n_files: int) -> bool:
    """Whether to spread a scan of `n_files` over `jobs` forked processes.

    Only with fork: a worker starts at once and inherits what it works on (the path list, the
    phase-2 probe), so nothing is pickled on the way in. Not when this process has imported JAX
    (tests, notebooks): forking a multithreaded JAX process can deadlock, and a forkserver or
    spawn start would cost more than it saves.
    """
    if jobs <= 1 or n_files < PARALLEL_MIN_FILES or "jax" in sys.modules:
        return False
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def _in_workers(work: Callable[[int, int], list], n: int, jobs: int) -> Iterator:
    """Run `work(start, stop)` over slices of range(n) in `jobs` forked processes (slice k in
    worker k % jobs) and yield the items of the slices' results in order.

    Plain processes and pipes, no multiprocessing.Pool: a pool feeds its workers from a thread
    of this process, which stalls behind the GIL while this process imports the codemod
    (see `scan`'s on_first_candidate); here each worker knows its slices from the start.
    """
    import multiprocessing

    context = multiprocessing.get_context("fork")
    slices = [(start, min(start + _SLICE, n)) for start in range(0, n, _SLICE)]
    sys.stdout.flush()  # a forked child flushes its copy of the buffers when it exits
    sys.stderr.flush()
    workers, pipes = [], []
    try:
        for k in range(jobs):
            receive, send = context.Pipe(duplex=False)
            worker = context.Process(
                target=_work_slices, args=(work, slices[k::jobs], send), daemon=True
            )
            worker.start()
            send.close()
            workers.append(worker)
            pipes.append(receive)
        for k in range(len(slices)):
            ok, result = pipes[k % jobs].recv()
            if not ok:
                raise result
            yield from result
    finally:
        for worker in workers:
            worker.kill()  # all done (or given up on): nothing left to wait for
            worker.join()
        for pipe in pipes:
            pipe.close()


def _work_slices(work: Callable[[int, int], list], slices: list[tuple[int, int]], send) -> None:
    """A worker: send (True, result) per slice, in order, or (False, error) and stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process decides what Ctrl-C does
    try:
        for start, stop in slices:
            send.send((True, work(start, stop)))
    except Exception as exc:  # a bug: raised again in the main process
        send.send((False, exc))
    send.close()


def _phase1_range(
    paths: list, flags: list[bool], start: int, stop: int
) -> list[tuple[int, int, dict[str, str]]]:
    """(index, outcome, bindings) of the files in [start, stop) that are not plain passes."""
    out = []
    for i in range(start, stop):
        outcome, bound = _phase1(paths[i], flags[i])
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
            found, bound = _phase2(probe, i, paths[i])
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
    parallel = _can_fork(jobs, n)

    def phase1():
        work = partial(_phase1_range, paths, flags)
        return _in_workers(work, n, jobs) if parallel else work(0, n)

    def phase2(probe: _Probe):
        work = partial(_phase2_range, paths, probe)
        return _in_workers(work, n, jobs) if parallel else work(0, n)

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
            if bound:
                pending[i] = bound
    # Phase 2: follow re-exports until a fixpoint.
    known: dict[str, dict[str, str]] = {}
    while pending:
        new_exports: dict[str, dict[str, str]] = {}
        for i, bound in pending.items():
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
        probe = _Probe(
            new_exports, dict(known), frozenset(res.candidates), frozenset(res.generated)
        )
        pending = {}
        for i, found, bound in phase2(probe):
            res.reexport_hits.setdefault(i, []).extend(found)
            if i not in res.candidates:
                res.candidates.add(i)
                if bound:
                    pending[i] = bound
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
                anchor = (
                    ".".join(parts[: max(0, len(parts) - node.level)]) if own_module else package
                )
                base = f"{anchor}.{base}".strip(".") if base else anchor
            for alias in node.names:
                found.add(f"{base}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound_modules[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.Attribute):
            chain = []
            root = node
            while isinstance(root, ast.Attribute):
                chain.append(root.attr)
                root = root.value
            if isinstance(root, ast.Name) and root.id in bound_modules:
                found.add(".".join([bound_modules[root.id], *reversed(chain)]))
    return found
