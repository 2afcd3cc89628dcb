"""Diagnostics: what the codemod did or left alone at each site, Ruff-style (code, message, level)."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass


class Level(str, enum.Enum):
    """How safe a rewrite is, in the spirit of Ruff's fix-safety levels."""

    FIXED = "fixed"  # rewritten; nothing observable changes
    FIXED_WITH_NOTE = "fixed-with-behaviour-note"  # rewritten; a documented difference remains
    COMPAT_FALLBACK = "compat-fallback"  # pointed at the compat runtime (legacy semantics kept)
    MANUAL = "manual"  # left alone; a human must decide
    # information only: nothing was rewritten and nothing needs doing (a branch kept for old
    # JAX, the random stream's flag); never counted as fixed, never fails a run on its own
    NOTE = "note"

    @property
    def needs_human(self) -> bool:
        return self is Level.MANUAL


@dataclass(frozen=True)
class Diagnostic:
    code: str  # e.g. "HCB101"
    message: str
    level: Level
    line: int  # 1-based, in the file (or notebook cell) the text came from
    col: int  # 1-based
    cell: int | None = None  # notebook cell number (1-based) when the source is a notebook

    def location(self, filename: str) -> str:
        if self.cell is not None:
            return f"{filename}:cell {self.cell}:{self.line}:{self.col}"
        return f"{filename}:{self.line}:{self.col}"

    def brief(self) -> str:
        """`line:col CODE [level] message`, as rule examples and fixtures' `.diagnostics` files
        spell the diagnostics they expect."""
        return f"{self.line}:{self.col} {self.code} [{self.level.value}] {self.message}"

    def format(self, filename: str) -> str:
        return f"{self.location(filename)}: {self.code} [{self.level.value}] {self.message}"

    def to_json(self) -> dict:
        data = asdict(self)
        data["level"] = self.level.value
        return data
