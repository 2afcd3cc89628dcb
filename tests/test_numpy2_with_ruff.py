"""numpy 2 removals (`np.NaN`, `np.product`, ...) are Ruff's NPY201, not hcmigrate's (issue 36
item 4): measured here, a program using the removed names prints on numpy 2 after
`ruff check --select NPY201 --fix` what it printed on numpy 1.26 (legacy's, with jax 0.4.30);
the names Ruff only reports (`np.in1d`, `np.asfarray`; `np.trapz` is an unsafe fix) are left
for a hand edit. The README says what a user runs."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

REMOVED_NAMES = """\
import numpy as np

x = np.array([1.0, np.NaN, 3.0, np.Inf])
print(np.product([2, 3]), np.cumproduct([1, 2, 3]).tolist())
print(np.isnan(x).tolist(), np.isinf(x).tolist(), np.float_(1.5), np.round_(2.567, 1))
print(np.alltrue([True, True]), np.sometrue([False, True]))
print(np.row_stack([[1], [2]]).tolist(), np.PINF, np.NINF, np.infty)
print(np.complex_(1j), np.unicode_("a"), np.string_("b"))
"""

ONLY_REPORTED = """\
import numpy as np

print(np.in1d([1, 2], [2]), np.asfarray([1, 2]), np.trapz([1.0, 2.0]))
"""


def _ruff(*args: str) -> subprocess.CompletedProcess:
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    return subprocess.run(
        [ruff, "check", "--isolated", "--select", "NPY201", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _printed(python, path) -> str:
    run = subprocess.run(
        [str(python), "-W", "ignore", str(path)], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


def test_ruff_npy201_fixes_the_removed_names_with_legacys_values(legacy_python, tmp_path):
    program = tmp_path / "removed_names.py"
    program.write_text(REMOVED_NAMES)
    legacy = _printed(legacy_python, program)
    broken = subprocess.run([sys.executable, str(program)], capture_output=True, text=True)
    assert broken.returncode != 0 and "AttributeError" in broken.stderr  # (numpy 2)
    fixed = _ruff("--fix", str(program))
    assert fixed.returncode == 0, fixed.stdout
    assert "np.NaN" not in program.read_text()
    assert _printed(sys.executable, program) == legacy


def test_what_ruff_npy201_only_reports(tmp_path):
    program = tmp_path / "only_reported.py"
    program.write_text(ONLY_REPORTED)
    fixed = _ruff("--fix", str(program))
    assert fixed.returncode == 1
    assert program.read_text() == ONLY_REPORTED
    for name in ("np.in1d", "np.asfarray", "np.trapz"):
        assert f"`{name}` will be removed" in fixed.stdout
