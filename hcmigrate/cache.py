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

CACHE_DIR_NAME = ".hcmigrate_cache"
ENV_VAR = "HCMIGRATE_RESULT_CACHE_DIR"
_FILE = "results.json"
MAX_ENTRIES = 20_000  # the least recently used go first
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This folder is a cache of hcmigrate results (https://bford.info/cachedir/).\n"

Outcome = dict  # {"new": str | None, "diagnostics": [[code, message, level, line, col, cell]], "error": None | [message, line, cell]}


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


def outcome_of(
    new_text: str | None,
    diagnostics: list[Diagnostic],
    error: tuple[str, int | None, int | None] | None = None,
) -> Outcome:
    return {
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


class ResultCache:
    def __init__(self, directory: Path, fingerprint: str, entries: dict[str, Outcome]):
        self.directory = directory
        self.fingerprint = fingerprint
        self._entries = entries
        self._used: dict[str, Outcome] = {}  # hits and new outcomes of this run
        self.hits = 0

    @classmethod
    def load(cls, directory: Path) -> "ResultCache":
        fingerprint = tool_fingerprint()
        entries: dict[str, Outcome] = {}
        try:
            stored = json.loads((directory / _FILE).read_text(encoding="utf-8"))
            if stored.get("tool") == fingerprint and isinstance(stored.get("entries"), dict):
                entries = stored["entries"]
        except (OSError, ValueError, AttributeError):
            pass  # none yet, unreadable or damaged: start afresh
        return cls(directory, fingerprint, entries)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> Outcome | None:
        outcome = self._entries.get(key)
        if outcome is not None:
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
                if not (self.directory / name).exists():
                    (self.directory / name).write_text(content, encoding="utf-8")
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


def cache_directory(root: Path, option: str | None) -> Path:
    """--cache-dir, else $HCMIGRATE_RESULT_CACHE_DIR, else `.hcmigrate_cache` in the project root."""
    chosen = option or os.environ.get(ENV_VAR)
    return Path(chosen).expanduser().absolute() if chosen else root / CACHE_DIR_NAME
