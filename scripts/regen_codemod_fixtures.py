"""Write fixtures/NAME.out.py and NAME.diagnostics from NAME.in.py with the current codemod.

Expected outputs of the codemod are reviewed by a human after regeneration (git diff); the
runtime behaviour of runnable fixtures is checked against golden traces recorded from real
legacy JAX (scripts/record_golden.py), never written by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hcmigrate import Options, migrate_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def main(names: list[str]) -> int:
    for source in sorted(FIXTURES.glob("*.in.py")):
        name = source.name[: -len(".in.py")]
        if names and name not in names:
            continue
        result = migrate_source(source.read_text(), Options(), filename=source.name)
        (FIXTURES / f"{name}.out.py").write_text(result.code)
        (FIXTURES / f"{name}.diagnostics").write_text(
            "".join(d.brief() + "\n" for d in result.diagnostics)
        )
        print(f"{name}: {len(result.diagnostics)} diagnostics")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
