"""Result cache: a file whose text, options and hcmigrate are all unchanged is not migrated again.

Like black's and ruff's caches, for repeated runs (CI with a restored cache folder, pre-commit,
editor saves): `hcmigrate --check` over a tree whose candidate files did not change costs the
walk and the pre-filter only. What is kept per file is the migration's outcome (new text or
none, diagnostics, or a syntax error), keyed by a hash of

  * the file's text, the options it is migrated with (they include the cross-module re-exports
    of the run) and the re-exporting modules it imports;
  * the tool itself: hcmigrate's version and the size and time stamp of each of its modules
    (an edited install, as in development, is a new tool), Python's and libcst's versions.

The folder is `.hcmigrate_cache` in the project root (where the pyproject.toml is, else the
working directory), or `--cache-dir` / `HCMIGRATE_RESULT_CACHE_DIR`; `--no-cache` turns it off. It
ignores itself for git (a `.gitignore` of `*`) and is marked with a CACHEDIR.TAG. A cache that
cannot be read is started afresh and one that cannot be written is skipped: the cache never
changes a result and never fails a run.

The folder is input like any other (CI restores it from a cache another branch or fork may have
filled), so nothing in it is trusted:

  * only a regular file is read (a FIFO, a device or a folder in its place is refused without
    blocking, as source files are: hcmigrate.files.read_regular), and at most MAX_CACHE_BYTES;
  * every entry must have the right shape and be bound to the text it was found for (the hash
    of that text is stored in it and compared with the file's current text); a new text must
    compile (a notebook's must be JSON), as a fresh rewrite must;
  * the modes that write or show a rewrite (fix, --diff, --interactive) read nothing from the
    cache: they migrate every file the pre-filter lets through, so what they write is what the
    rules produce from the file's current bytes, and an entry saying "no change" or "syntax
    error" cannot keep a file from being migrated. They add what they find, for `--check`,
    which the cache spares every file.

A damaged, foreign or tampered cache is ignored (wholly, or the entry that fails a check), the
files are migrated afresh and the run says so in one warning (`problem`). A cache of another
hcmigrate (an upgrade, an edited install) is only out of date: it is started afresh silently.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import importlib.util
import tempfile
from dataclasses import asdict
from pathlib import Path

import hcmigrate
from hcmigrate.diagnostics import Diagnostic, Level
from hcmigrate.errors import FileError
from hcmigrate.files import read_regular

CACHE_DIR_NAME = ".hcmigrate_cache"
ENV_VAR = "HCMIGRATE_RESULT_CACHE_DIR"
_FILE = "results.json"
MAX_ENTRIES = 20_000  # the least recently used go first
MAX_CACHE_BYTES = 256 * 1024 * 1024  # a larger results.json is not read (not one of ours)
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This folder is a cache of hcmigrate results (https://bford.info/cachedir/).\n"

# {"input": hash of the text migrated, "new": str | None,
#  "diagnostics": [[code, message, level, line, col, cell]], "error": None | [message, line, cell]}
Outcome = dict


def tool_fingerprint() -> str:
    """What identifies this hcmigrate: version, its modules' sizes and time stamps, Python's
    and libcst's versions."""
    package = Path(hcmigrate.__file__).parent
    parts = [hcmigrate.__version__, sys.version, _version("libcst")]
    for module in sorted(package.rglob("*.py")):
        stat = module.stat()
        parts.append(f"{module.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=16).hexdigest()


def _version(package: str) -> str:
    """`package`'s version file, read without importing the package (libcst is slow to import)."""
    spec = importlib.util.find_spec(package)
    try:
        return (Path(spec.origin).parent / "_version.py").read_text(encoding="utf-8")
    except (AttributeError, TypeError, OSError):
        return "?"


def task_key(fingerprint: str, text: str, options, notebook: bool) -> str:
    """The cache key of migrating `text` with these options (hcmigrate.options.Options)."""
    described = json.dumps([fingerprint, asdict(options), notebook], sort_keys=True, default=sorted)
    digest = hashlib.blake2b(described.encode(), digest_size=16)
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def input_digest(text: str) -> str:
    """The hash an outcome is bound to: that of the text it was found for."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def outcome_of(
    new_text: str | None,
    diagnostics: list[Diagnostic],
    error: tuple[str, int | None, int | None] | None = None,
    *,
    source: str | None = None,
) -> Outcome:
    """An outcome; `source`: the text it was found for (an outcome kept in the cache is bound
    to it)."""
    return {
        "input": None if source is None else input_digest(source),
        "new": new_text,
        "diagnostics": [
            [d.code, d.message, d.level.value, d.line, d.col, d.cell] for d in diagnostics
        ],
        "error": list(error) if error else None,
    }


def diagnostics_of(outcome: Outcome) -> list[Diagnostic]:
    return [
        Diagnostic(code, message, Level(level), line, col, cell)
        for code, message, level, line, col, cell in outcome["diagnostics"]
    ]


def _is_int(value) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool))


def _text(value) -> bool:
    return isinstance(value, str) and value.isprintable()


def _bad_diagnostic(item) -> bool:
    if not isinstance(item, list) or len(item) != 6:
        return True
    code, message, level, line, col, cell = item
    return not (
        _text(code)
        and _text(message)
        and level in {lv.value for lv in Level}
        and all(map(_is_int, (line, col, cell)))
    )


def entry_problem(outcome, text: str, notebook: bool) -> str | None:
    """Why a cached outcome cannot be the outcome of migrating `text` (None: it can): it has
    the wrong shape, is bound to other text, or its new text is not what a rewrite may be
    (it must differ from the text and compile; a notebook's must be JSON)."""
    if not isinstance(outcome, dict) or set(outcome) != {"input", "new", "diagnostics", "error"}:
        return "an entry of the wrong shape"
    if outcome["input"] != input_digest(text):
        return "an entry that does not belong to the text it is stored for"
    new, diagnostics, error = outcome["new"], outcome["diagnostics"], outcome["error"]
    if not isinstance(diagnostics, list) or any(map(_bad_diagnostic, diagnostics)):
        return "an entry with malformed diagnostics"
    if error is not None:
        if not (
            isinstance(error, list)
            and len(error) == 3
            and _text(error[0])
            and all(map(_is_int, error[1:]))
            and new is None
        ):
            return "an entry with a malformed error"
        return None
    if new is None:
        return None
    if not isinstance(new, str) or new == text:
        return "an entry whose new text is not a change"
    try:
        if notebook:
            json.loads(new)
        else:
            compile(new, "<cached rewrite>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "an entry whose new text does not " + ("parse" if notebook else "compile")
    return None


class ResultCache:
    def __init__(self, directory: Path, fingerprint: str, entries: dict[str, Outcome]):
        self.directory = directory
        self.fingerprint = fingerprint
        self._entries = entries
        self._used: dict[str, Outcome] = {}  # hits and new outcomes of this run
        self.hits = 0
        # Why (part of) the cache was ignored: the run says so once (None: nothing ignored).
        self.problem: str | None = None

    @classmethod
    def load(cls, directory: Path) -> "ResultCache":
        fingerprint = tool_fingerprint()
        cache = cls(directory, fingerprint, {})
        path = directory / _FILE
        try:
            stored = json.loads(read_regular(path, limit=MAX_CACHE_BYTES).decode("utf-8"))
        except FileError as exc:
            if os.path.lexists(path):
                cache.problem = exc.message
            return cache  # (none yet)
        except (ValueError, RecursionError, MemoryError):
            cache.problem = "not valid JSON"
            return cache
        if not isinstance(stored, dict) or not isinstance(stored.get("entries"), dict):
            cache.problem = "not a results file of hcmigrate"
        elif stored.get("tool") == fingerprint:
            cache._entries = stored["entries"]
        return cache  # (another hcmigrate's results are only out of date: started afresh)

    def __len__(self) -> int:
        return len(self._entries)

    def warning(self) -> str | None:
        """The one line a run prints when (part of) the cache was ignored."""
        if self.problem is None:
            return None
        return (
            f"warning: result cache {self.directory / _FILE}: {self.problem}; ignored (the "
            "files are migrated afresh)"
        )

    def get(self, key: str, text: str, notebook: bool) -> Outcome | None:
        """The outcome stored for `key` (that of migrating `text`), once it has passed every
        check (entry_problem); None when there is none, or when it fails one (the cache's
        `problem` then says so)."""
        outcome = self._entries.get(key)
        if outcome is None:
            return None
        problem = entry_problem(outcome, text, notebook)
        if problem is not None:
            self.problem = self.problem or f"holds {problem}"
            del self._entries[key]  # (not kept: the fresh outcome takes its place)
            return None
        self._used[key] = outcome
        self.hits += 1
        return outcome

    def add(self, key: str, outcome: Outcome) -> None:
        self._used[key] = outcome

    def save(self) -> None:
        """Write the entries with what this run learnt (what it used last), atomically; on an OS
        error, nothing (a cache that cannot be written is no cache)."""
        if all(key in self._entries for key in self._used):
            return  # nothing learnt (hits do not rewrite the file)
        entries = {key: value for key, value in self._entries.items() if key not in self._used}
        entries.update(self._used)
        if len(entries) > MAX_ENTRIES:
            entries = dict(list(entries.items())[-MAX_ENTRIES:])
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            for name, content in (
                (".gitignore", "# Created by hcmigrate\n*\n"),
                ("CACHEDIR.TAG", _TAG),
            ):
                _create(self.directory / name, content)
            fd, tmp = tempfile.mkstemp(prefix=f".{_FILE}.", dir=self.directory)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump({"tool": self.fingerprint, "entries": entries}, fh)
                os.replace(tmp, self.directory / _FILE)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            return
        self._entries = entries


def _create(path: Path, content: str) -> None:
    """Write a new file `path`; nothing if there is anything by that name (never through a
    symlink someone left there)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileExistsError:
        return
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(content)


def cache_directory(root: Path, option: str | None) -> Path:
    """--cache-dir, else $HCMIGRATE_RESULT_CACHE_DIR, else `.hcmigrate_cache` in the project root."""
    chosen = option or os.environ.get(ENV_VAR)
    return Path(chosen).expanduser().absolute() if chosen else root / CACHE_DIR_NAME
