"""What a verify run concludes: `Outcome` (the verdict, both traces, the comparison, notes),
the exit statuses, and `CannotRun`, the error that ends a run with exit status 2.

Exit statuses (docs/verify.md): 0 equivalent, 1 the migrated host callbacks behave
differently, 2 could not run, 3 the candidate fails on current JAX for a reason the migration
did not cause (a removed JAX API, a missing dependency) and nothing else differs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hcmigrate.verify.traces import write_traces

if TYPE_CHECKING:
    from hcmigrate.verify.differences import Comparison


EQUIVALENT, DIFFERENT, CANNOT_RUN, CANDIDATE_BROKEN = 0, 1, 2, 3


class CannotRun(Exception):
    """Verification could not run (exit status 2); the message says why."""


@dataclass
class Outcome:
    exit_code: int
    original: str
    candidate: str | None = None
    reference: str = ""
    comparison: Comparison | None = None
    why: str | None = None  # for exit 2
    notes: list[str] = field(default_factory=list)
    reference_trace: dict | None = None
    candidate_trace: dict | None = None
    candidate_stderr: str = ""
    mode: str = "script"  # or "pytest"
    tests: str | None = None  # --pytest TESTS
    unrelated: list[dict] = field(default_factory=list)  # candidate failures not the migration's
    # --pytest: tests the original failed on the reference on an API the reference's JAX lacks
    # (not compared; exit 2 when nothing else differs)
    not_comparable: list[dict] = field(default_factory=list)
    kept: str | None = None  # --keep: where the migrated copy is
    # Stopped by a signal: {"signal": "SIGTERM", "exit_code": 143, "unfinished": [...]}; what
    # finished on both sides is compared, the exit status is 128 + the signal's number.
    interrupted: dict | None = None

    @property
    def verdict(self) -> str:
        if self.interrupted:
            return "interrupted"
        return {
            EQUIVALENT: "equivalent",
            DIFFERENT: "different",
            CANDIDATE_BROKEN: "candidate-broken",
        }.get(self.exit_code, "could-not-run")


def not_comparable(where: str, kind: str, error: str | None, failure=None) -> dict:
    """An entry of `Outcome.not_comparable` (`--json` "not_comparable"): a test set apart
    because the reference's JAX cannot run the original (`failure`, its classify.Failure:
    "removed-jax-api", "deprecated-jax-api") or because the original differs from itself
    ("nondeterministic")."""
    row = failure.row if failure is not None else None
    return {
        "where": where,
        "kind": kind,
        "api": failure.api if failure is not None else None,
        "removed_in": row.removed_in if row is not None else None,
        "deprecated_in": row.deprecated_in if row is not None else None,
        "error": error,
    }


def conclude(out, reference: dict, candidate: dict, keep_traces, comparison: Comparison) -> None:
    """Record both traces (and keep them on disk if asked) and the comparison's verdict."""
    out.reference_trace, out.candidate_trace = reference, candidate
    if keep_traces:
        write_traces(Path(keep_traces), reference, candidate)
    out.comparison = comparison
    out.exit_code = EQUIVALENT if comparison.equivalent else DIFFERENT
