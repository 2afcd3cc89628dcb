"""The legacy programs of fixtures/realworld and fixtures/fidelity (read by
scripts/check_fidelity.py) each have a golden trace written by scripts/record_golden.py from
real jax 0.4.30, so none can go missing or be replaced by hand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hcmigrate.verify.golden import MARKER

REPO = Path(__file__).resolve().parent.parent
FOLDERS = ["fixtures/realworld", "fixtures/fidelity"]


def _programs(folder: Path) -> dict[str, Path]:
    """Every program the folder holds: `NAME.in.py`, or `NAME/main.py` for a package."""
    found = {p.name[: -len(".in.py")]: p for p in folder.glob("*.in.py")}
    found.update({p.parent.name: p for p in folder.glob("*/main.py")})
    return found


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_program_is_runnable_and_has_its_golden_trace(folder):
    programs = _programs(REPO / folder)
    assert len(programs) >= 20, f"{folder} lost its programs"
    for name, path in programs.items():
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first == MARKER, f"{path.relative_to(REPO)} does not start with {MARKER!r}"
    check = subprocess.run(
        [sys.executable, "scripts/record_golden.py", "--folder", folder, "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    waiting = [line for line in check.stdout.splitlines() if line.startswith("not recorded:")]
    recorded = {p.stem for p in (REPO / folder / "golden").glob("*.json")}
    # Only the programs the script names as waiting for the recorder fix lack a trace, and no
    # trace is left over from a program that is gone.
    assert set(programs) - recorded == {line.split()[2] for line in waiting}
    assert recorded <= set(programs)
    for name in recorded:
        data = json.loads((REPO / folder / "golden" / f"{name}.json").read_text(encoding="utf-8"))
        assert data["recorded_by"] == "scripts/record_golden.py"
        assert data["jax"] == "0.4.30"
        assert data["fixture"] == programs[name].relative_to(REPO).as_posix()
        assert data["exit_status"] == 0, f"{name} failed on legacy JAX"
