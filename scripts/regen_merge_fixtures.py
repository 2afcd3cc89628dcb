"""Write fixtures/merge/CASE/after/ and report.txt from before/ with the current codemod.

Read every changed file afterwards (git diff) as a reviewer of that project would: the
expected outputs are promises (tests/test_merge_corpus.py holds the codemod to them).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.merge_helpers import cases, migrate_case  # noqa: E402


def main(names: list[str]) -> int:
    for case in cases():
        if names and case.name not in names:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            changed, report = migrate_case(case, Path(tmp) / "project")
        shutil.rmtree(case / "after", ignore_errors=True)
        for path, data in changed.items():
            (case / "after" / path).parent.mkdir(parents=True, exist_ok=True)
            (case / "after" / path).write_bytes(data)
        (case / "report.txt").write_text(report)
        print(f"{case.name}: {len(changed)} changed, {report.count(chr(10))} diagnostics")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
