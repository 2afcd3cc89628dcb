"""What a run says about each file: its status, its diagnostics, its error or its new text."""

from __future__ import annotations

from dataclasses import dataclass, field

from hcmigrate.diagnostics import Diagnostic

# Status of one file after a run.
UNCHANGED, CHANGED, FAILED, SKIPPED = "unchanged", "changed", "failed", "skipped"


@dataclass
class FileResult:
    display: str
    status: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: str | None = None
    error_line: int | None = None
    error_cell: int | None = None
    diff: bytes | None = None  # --diff: a patch of the file's bytes (git apply, patch -p1)
    original: str | None = None  # kept only when asked (interactive review)
    new: str | None = None
    written: bool = False
    notebook: bool = False
    cache_entry: tuple[str, dict] | None = None  # (key, outcome) for the result cache
    # what the written code asks of its project's metadata (the JAX it needs, whether it
    # imports the compat runtime: hcmigrate.projects.metadata_plan.CodeFacts); None: unchanged
    code_facts: object | None = None
    created: bool = False  # a new file (hcmigrate.shared_helpers), not a rewritten one

    @property
    def error_location(self) -> str:
        loc = self.display
        if self.error_cell is not None:
            loc += f":cell {self.error_cell}"
        if self.error_line is not None:
            loc += f":{self.error_line}"
        return loc
