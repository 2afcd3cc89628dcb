"""`hcmigrate verify` on real files with real legacy JAX: known-bad migrations exit 1 with a
precise message, known-good ones exit 0, and the bundled example verifies."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from verify_helpers import hcmigrate_verify

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "fixtures" / "verify"
EXAMPLE = REPO / "examples" / "mcmc_progress.py"


def _pairs(kind: str) -> list[str]:
    return sorted(p.name[: -len(f".{kind}.py")] for p in CASES.glob(f"*.{kind}.py"))


def _expectations(path: Path) -> list[str]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# expect: "):
            out.append(line[len("# expect: ") :])
    return out


def test_every_case_has_an_original():
    names = _pairs("bad") + _pairs("good")
    assert names
    for name in names:
        assert (CASES / f"{name}.original.py").exists(), name
    # the list of mistakes that must be caught
    assert {
        "dropped_pure_callback",
        "id_print_value",
        "result_dtype",
        "result_shape",
        "taps_reordered",
        "args_packed",
        "vmap_progress",
    } <= set(_pairs("bad"))


@pytest.mark.parametrize("name", _pairs("bad"))
def test_known_bad_migration_is_caught(name, legacy_python, tmp_path):
    bad = CASES / f"{name}.bad.py"
    report_json = tmp_path / "report.json"
    res = hcmigrate_verify(
        CASES / f"{name}.original.py",
        "--candidate",
        bad,
        "--reference",
        "legacy",
        "--json",
        report_json,
    )
    assert res.returncode == 1, res.stdout + res.stderr
    expectations = _expectations(bad)
    assert expectations, f"{bad.name} has no `# expect:` line"
    for pattern in expectations:
        assert re.search(pattern, res.stdout), f"{pattern!r} not in report:\n{res.stdout}"
    data = json.loads(report_json.read_text())
    assert data["verdict"] == "different" and data["exit_code"] == 1
    assert data["differences"] and data["sides"]["reference"]["jax"] == "0.4.30"


@pytest.mark.parametrize("name", _pairs("good"))
def test_known_good_migration_passes(name, legacy_python):
    res = hcmigrate_verify(
        CASES / f"{name}.original.py",
        "--candidate",
        CASES / f"{name}.good.py",
        "--reference",
        "legacy",
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "EQUIVALENT" in res.stdout


def test_example_verifies_against_real_legacy_jax(legacy_python):
    """The README flow: the codemod migrates a temporary copy, verify compares with jax 0.4.30."""
    res = hcmigrate_verify(EXAMPLE, "--reference", "legacy")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "reference: legacy jax 0.4.30" in res.stdout
    assert re.search(r"EQUIVALENT: [1-9]\d* host call", res.stdout)


def test_example_flips_when_a_callback_is_dropped(legacy_python, tmp_path):
    from hcmigrate.api import migrate_source

    migrated = migrate_source(EXAMPLE.read_text(encoding="utf-8")).code
    lines = migrated.splitlines()
    # Drop the progress-bar callback: the cond branch (a def the codemod made of the lambda)
    # just returns the counter.
    idx = [
        i
        for i, line in enumerate(lines)
        if "_update_progress" in line and "jax.debug.callback(" in line
    ]
    assert len(idx) == 1, migrated
    indent = lines[idx[0]][: len(lines[idx[0]]) - len(lines[idx[0]].lstrip())]
    lines[idx[0]] = f"{indent}pass"
    candidate = tmp_path / "mcmc_progress.py"
    candidate.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = hcmigrate_verify(EXAMPLE, "--candidate", candidate, "--reference", "legacy")
    assert res.returncode == 1, res.stdout + res.stderr
    assert re.search(
        r"event #0 `_update_progress` via id_tap \(ordered\) is missing in the candidate",
        res.stdout,
    ), res.stdout
    assert "examples/mcmc_progress.py:" in res.stdout  # the reference source line is named


def test_default_reference_is_compat_and_migrates_a_copy():
    res = hcmigrate_verify(EXAMPLE)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "reference: compat runtime" in res.stdout
    assert "migrated by the codemod" in res.stdout
    assert EXAMPLE.read_text(encoding="utf-8").count("hcb.id_tap") == 1  # the original is untouched
