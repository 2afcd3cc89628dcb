"""The run's metadata plan carried out in the run's mode (issue 34): written (fix), asked hunk
by hunk (--interactive), shown as a patch (--diff) or reported (--check), from the one plan
(hcmigrate.projects.metadata_plan), so what is shown is what is done."""

from __future__ import annotations

from dataclasses import dataclass, field

from hcmigrate.errors import HcmigrateError
from hcmigrate.projects.metadata_plan import MetadataPlan, shown_path


@dataclass
class MetadataOutcome:
    lines: list[str] = field(default_factory=list)  # to say, in order
    patches: list[bytes] = field(default_factory=list)  # --diff: one per edited file
    pending: int = 0  # edits not made (--check, --diff): each counts as a change
    written: int = 0
    failed: int = 0  # edits that could not be written
    manual: int = 0  # lines left for a human


def carry_out(
    plan: MetadataPlan, mode: str, *, accept_all: bool = False, ask=None, echo=None
) -> MetadataOutcome:
    """Do what `plan` says in `mode` ("fix", "review", "diff", "check"); `accept_all`: the
    review's answer so far ('all' accepts the metadata edits too)."""
    from hcmigrate.files import read_source, write_atomic
    from hcmigrate.runner import patch_diff

    out = MetadataOutcome()
    for project in plan.projects:
        out.lines += project.notes
        for edit in project.edits.values():
            if project.refused is not None or mode in ("check", "diff"):
                out.lines += [say(False) for say in edit.lines]
                if project.refused is None:
                    out.pending += 1
                    if mode == "diff":
                        source = read_source(edit.path)
                        out.patches.append(
                            patch_diff(
                                source.raw, source.encode(edit.new_text), shown_path(edit.path)
                            )
                        )
                continue
            try:
                source = read_source(edit.path)
                chosen = edit.new_text
                if mode == "review":
                    from hcmigrate.review import click_ask, click_echo, review

                    chosen, accept_all, _ = review(
                        source.text,
                        edit.new_text,
                        shown_path(edit.path),
                        ask or click_ask,
                        echo or click_echo,
                        accept_all,
                    )
                if chosen == source.text:
                    continue
                write_atomic(source, chosen)
            except HcmigrateError as exc:
                out.lines.append(f"error: {shown_path(edit.path)}: not written: {exc.message}")
                out.failed += 1
                continue
            except OSError as exc:
                out.lines.append(
                    f"error: {shown_path(edit.path)}: not written: {exc.strerror or exc}"
                )
                out.failed += 1
                continue
            out.written += 1
            out.lines += [say(chosen == edit.new_text) for say in edit.lines]
        manual = ([project.refused] if project.refused else []) + project.findings
        out.lines += manual
        out.manual += len(manual)
    return out
