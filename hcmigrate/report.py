"""Reports: text, json, sarif, github annotations; --statistics; the closing summary."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from hcmigrate.diagnostics import Level
from hcmigrate.results import CHANGED, FAILED, SKIPPED, UNCHANGED, FileResult

FORMATS = ("text", "json", "sarif", "github")
LEVEL_ORDER = [Level.FIXED, Level.FIXED_WITH_NOTE, Level.COMPAT_FALLBACK, Level.MANUAL]
# (`note` sites are information, not sites migrated: the summary counts them on their own)
JSON_LEVELS = [*LEVEL_ORDER, Level.NOTE]


def all_rules() -> list:
    """Every registered rule (hcmigrate.rules.registry), sorted by code."""
    from hcmigrate.rules.registry import registry

    return list(registry().rules)


def rules_text() -> str:
    """--list-rules: every rule with its level, summary and behaviour note."""
    lines = []
    for r in all_rules():
        lines.append(f"{r.code}  {r.name}  [{r.level.value}]")
        lines.append(f"    {r.summary}")
        if r.behaviour_note:
            lines.append(f"    behaviour: {r.behaviour_note}")
    return "\n".join(lines)


# Notes about the project rather than a site: said once a run (hcmigrate.rules.random_stream).
ONCE_PER_RUN = frozenset({"JAX110"})


class OncePerRun:
    """Keeps each ONCE_PER_RUN note to one file of the run, as results arrive: the first file
    with something else to migrate shows it; the others, and files with nothing else, lose it
    (`held`: the first such file and note, for the end of a run where no file showed it)."""

    def __init__(self) -> None:
        self._shown: set[str] = set()
        self._held: dict[str, tuple[FileResult, object]] = {}

    def filter(self, r: FileResult) -> FileResult:
        notes = [d for d in r.diagnostics if d.code in ONCE_PER_RUN]
        if not notes:
            return r
        others = [d for d in r.diagnostics if d.code not in ONCE_PER_RUN]
        kept = []
        for d in notes:
            if d.code in self._shown:
                continue
            if others:
                self._shown.add(d.code)
                kept.append(d)
            else:
                self._held.setdefault(d.code, (r, d))
        r.diagnostics = sorted([*others, *kept], key=lambda d: (d.line, d.col, d.code))
        return r

    def held(self) -> list[tuple[FileResult, object]]:
        """The notes no file showed, each given back to the first file that had it."""
        found = []
        for code, (r, d) in sorted(self._held.items()):
            if code not in self._shown:
                r.diagnostics = sorted([*r.diagnostics, d], key=lambda d: (d.line, d.col, d.code))
                found.append((r, d))
        return found


@dataclass
class Summary:
    scanned: int = 0
    changed: int = 0
    unchanged: int = 0
    failed: int = 0
    skipped: int = 0
    sites: Counter = field(default_factory=Counter)  # Level -> count
    per_rule: Counter = field(default_factory=Counter)  # code -> count
    needs_human: bool = False
    # lines on the project's files left for a human (a dependency to declare, a pin to raise,
    # a BUILD file): not sites, but they make the run exit as manual sites do
    files_by_hand: int = 0

    def add_unchanged(self, n: int) -> None:
        """Count `n` files that need no result of their own (the pre-filter passed them)."""
        self.scanned += n
        self.unchanged += n

    def add(self, r: FileResult) -> None:
        if r.created:  # (a module the run creates, said on its own line: not one it scanned)
            self.failed += r.status == FAILED
            return
        self.scanned += 1
        if r.status == CHANGED:
            self.changed += 1
        elif r.status == UNCHANGED:
            self.unchanged += 1
        elif r.status == FAILED:
            self.failed += 1
        elif r.status == SKIPPED:
            self.skipped += 1
        for d in r.diagnostics:
            self.sites[d.level] += 1
            self.per_rule[d.code] += 1
            if d.level.needs_human:
                self.needs_human = True

    def to_json(self) -> dict:
        return {
            "files_scanned": self.scanned,
            "files_changed": self.changed,
            "files_unchanged": self.unchanged,
            "files_failed": self.failed,
            "files_skipped": self.skipped,
            "sites": {lvl.value: self.sites.get(lvl, 0) for lvl in JSON_LEVELS},
        }

    def text(self, mode: str) -> str:
        verb = {"fix": "rewritten", "review": "rewritten"}.get(mode, "would be rewritten")
        files = (
            f"{self.scanned} file{'s' if self.scanned != 1 else ''} scanned, {self.changed} {verb}, "
            f"{self.unchanged} unchanged, {self.failed} failed"
        )
        if self.skipped:
            files += f", {self.skipped} skipped"
        sites = ", ".join(f"{self.sites.get(lvl, 0)} {lvl.value}" for lvl in LEVEL_ORDER)
        notes = self.sites.get(Level.NOTE, 0)
        if notes:
            sites += f"; {notes} note{'s' if notes != 1 else ''}"
        by_hand = (
            f"; {self.files_by_hand} by hand in the project's files" if self.files_by_hand else ""
        )
        return f"{files}; sites: {sites}{by_hand}"


def statistics_rows(summary: Summary) -> list[tuple[int, str, str, str]]:
    rules = {r.code: r for r in all_rules()}
    rows = []
    for code, n in sorted(summary.per_rule.items(), key=lambda kv: (-kv[1], kv[0])):
        rule = rules.get(code)
        rows.append(
            (n, code, getattr(rule, "name", ""), getattr(getattr(rule, "level", None), "value", ""))
        )
    return rows


def statistics_text(summary: Summary) -> str:
    rows = statistics_rows(summary)
    if not rows:
        return "no sites found"
    width = max(len(str(r[0])) for r in rows)
    return "\n".join(
        f"{n:>{width}}  {code}  {name}  [{level}]".rstrip() for n, code, name, level in rows
    )


# ---------------------------------------------------------------------------------------------
def json_report(results: list[FileResult], summary: Summary, statistics: bool) -> str:
    out = {
        "files": [
            {
                "path": r.display,
                "status": r.status,
                **({"created": True} if r.created else {}),  # (a module the run creates)
                **({"error": r.error, "error_location": r.error_location} if r.error else {}),
                "diagnostics": [
                    {**d.to_json(), "path": r.display, "location": d.location(r.display)}
                    for d in r.diagnostics
                ],
            }
            for r in results
            if r.status != UNCHANGED or r.diagnostics
        ],
        "summary": summary.to_json(),
    }
    if statistics:
        out["statistics"] = [
            {"count": n, "code": c, "name": name, "level": lvl}
            for n, c, name, lvl in statistics_rows(summary)
        ]
    return json.dumps(out, indent=2)


_SARIF_LEVEL = {
    Level.FIXED: "note",
    Level.FIXED_WITH_NOTE: "warning",
    Level.COMPAT_FALLBACK: "warning",
    Level.MANUAL: "error",
    Level.NOTE: "note",
}


def sarif_report(results: list[FileResult], summary: Summary) -> str:
    from hcmigrate import __version__

    rules = all_rules()
    codes = {r.code for r in rules}
    extra = sorted({d.code for r in results for d in r.diagnostics} - codes)
    driver_rules = [
        {
            "id": r.code,
            "name": r.name,
            "shortDescription": {"text": r.summary},
            "fullDescription": {"text": r.behaviour_note or r.summary},
            "properties": {"level": r.level.value},
        }
        for r in rules
    ] + [{"id": c, "shortDescription": {"text": c}} for c in extra]
    sarif_results = []
    for r in results:
        for d in r.diagnostics:
            msg = d.message if d.cell is None else f"cell {d.cell}: {d.message}"
            sarif_results.append(
                {
                    "ruleId": d.code,
                    "level": _SARIF_LEVEL[d.level],
                    "message": {"text": f"[{d.level.value}] {msg}"},
                    "locations": [
                        {
                            "physicalLocation": {
                                "artifactLocation": {"uri": r.display.replace("\\", "/")},
                                "region": {"startLine": d.line, "startColumn": d.col},
                            }
                        }
                    ],
                    "properties": {
                        "hcmigrateLevel": d.level.value,
                        **({"cell": d.cell} if d.cell else {}),
                    },
                }
            )
    notifications = [
        {
            "level": "error",
            "message": {"text": f"{r.error_location}: {r.error}"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": r.display}}}],
        }
        for r in results
        if r.status == FAILED
    ]
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "hcmigrate",
                        "version": __version__,
                        "informationUri": "https://github.com/hcmigrate/hcmigrate",
                        "rules": driver_rules,
                    }
                },
                "results": sarif_results,
                "invocations": [
                    {
                        "executionSuccessful": summary.failed == 0,
                        "toolExecutionNotifications": notifications,
                    }
                ],
            }
        ],
    }
    return json.dumps(doc, indent=2)


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


_GH_LEVEL = {
    Level.FIXED: "notice",
    Level.FIXED_WITH_NOTE: "warning",
    Level.COMPAT_FALLBACK: "warning",
    Level.MANUAL: "error",
    Level.NOTE: "notice",
}


def github_report(results: list[FileResult], mode: str) -> str:
    lines = []
    for r in results:
        f = _gh_escape(r.display, True)
        for d in r.diagnostics:
            msg = d.message if d.cell is None else f"cell {d.cell}: {d.message}"
            lines.append(
                f"::{_GH_LEVEL[d.level]} file={f},line={d.line},col={d.col},"
                f"title={_gh_escape(d.code + ' ' + d.level.value, True)}::{_gh_escape(msg)}"
            )
        if r.status == FAILED:
            line = f",line={r.error_line}" if r.error_line else ""
            lines.append(
                f"::error file={f}{line},title=hcmigrate::{_gh_escape(r.error or 'failed')}"
            )
        elif r.status == CHANGED and mode in ("check", "diff") and r.created:
            # (no annotation on a file that is not there: its modules' annotations say the run)
            continue
        elif r.status == CHANGED and mode in ("check", "diff"):
            lines.append(
                f"::error file={f},title=hcmigrate::would be rewritten by hcmigrate (run `hcmigrate {_gh_escape(r.display)}`)"
            )
    return "\n".join(lines)


def machine_report(fmt: str, results, summary, statistics: bool, mode: str) -> str:
    """The report in a machine-readable format (json, sarif, github)."""
    if fmt == "json":
        return json_report(results, summary, statistics)
    if fmt == "sarif":
        return sarif_report(results, summary)
    return github_report(results, mode)


def progress_bar(total: int, enabled: bool):
    """A progress bar on standard error (rich), started; None when not `enabled`."""
    if not enabled:
        return None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn("hcmigrate"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    progress.start()
    progress.add_task("files", total=total)
    return progress
