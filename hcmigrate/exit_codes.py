"""The exit codes of `hcmigrate`: one table, which every mode (rewrite, --check, --diff,
--interactive, standard input) follows. docs/cli.md ("Exit codes") shows the same table;
`hcmigrate verify` has its own (docs/verify.md)."""

from __future__ import annotations

import signal
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0  # nothing to do, or everything done
    # --check: a file would change; any mode: sites left for a human (`manual` findings;
    # a `note` never is one)
    FINDINGS = 1
    # usage or configuration error; a file that could not be processed (the others still
    # were); input or output that could not be read or written (standard output on a full
    # disk). It wins over FINDINGS: a failure never reads as "would change".
    ERROR = 2


def run_exit_code(mode: str, *, failed: int, changed: int, needs_human: bool) -> ExitCode:
    """The exit code of a run in `mode` ("fix", "check", "diff", "review") from its counts."""
    if failed:
        return ExitCode.ERROR
    if needs_human or (mode == "check" and changed):
        return ExitCode.FINDINGS
    return ExitCode.OK


def interrupted_exit_code(exc: BaseException) -> int:
    """128 + the signal that interrupted the run (130 for Ctrl-C, 143 SIGTERM, 129 SIGHUP)."""
    return 128 + getattr(exc, "signum", signal.SIGINT)
