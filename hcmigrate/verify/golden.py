"""Golden traces of the codemod's runnable fixtures (recorded from real legacy JAX).

A fixture `fixtures/NAME.in.py` is runnable when its first line is the marker below; its
golden trace `fixtures/golden/NAME.json` is written by scripts/record_golden.py and read by
tests/test_golden.py.
"""

from __future__ import annotations

from pathlib import Path

MARKER = "# hcmigrate-fixture: runnable"


def runnable_fixtures(folder: Path) -> list[Path]:
    """The runnable `*.in.py` fixtures in `folder`, sorted."""
    found = []
    for path in sorted(folder.glob("*.in.py")):
        with path.open(encoding="utf-8") as fh:
            if fh.readline().strip() == MARKER:
                found.append(path)
    return found


def printed_text(trace: dict) -> str:
    """Everything a traced program printed: its callbacks' output in event order, then the
    rest (compared with a golden trace's character for character)."""
    return "".join(ev.get("stdout", "") for ev in trace.get("events", [])) + trace.get("stdout", "")
