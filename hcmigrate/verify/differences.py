"""The result of comparing two traces: `Difference`, one place where the candidate behaves
otherwise than the reference (what was expected, what came, where in the sources, and a hint),
and `Comparison`, all of them with the per-entry or per-test summary a report is made from."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Difference:
    entry: str
    kind: str  # event | missing-event | extra-event | result | stdout | exit-status | entry
    message: str
    position: int | None = None
    callback: str | None = None
    expected: str | None = None
    got: str | None = None
    reference_source: str | None = None
    candidate_source: str | None = None
    hint: str | None = None

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class Comparison:
    differences: list[Difference] = field(default_factory=list)
    entries: list[dict] = field(default_factory=list)  # per-entry summary
    tests: list[dict] | None = None  # --pytest: per-test results

    @property
    def equivalent(self) -> bool:
        return not self.differences
