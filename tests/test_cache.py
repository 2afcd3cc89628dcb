"""The result cache (hcmigrate.cache) through the real CLI: a second run takes the outcome of
unchanged files from it and reports exactly what a fresh run reports; anything that could
change an outcome (the file's text, the options) misses; a damaged or unwritable cache never
fails a run."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from cli_helpers import program, run
from hcmigrate.api import Options
from hcmigrate.cache import CACHE_DIR_NAME, task_key

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NAMES = [
    "t1_progress_bar",
    "c1_shape_dtype_struct",
    "i2_aliased_module",
    "pure_callback_vectorized",
]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'proj'\n")
    for name in NAMES:
        shutil.copy(FIXTURES / f"{name}.in.py", root / "pkg" / f"{name}.py")
    (root / "pkg" / "broken.py").write_text(
        "import jax.experimental.host_callback as hcb\ndef f(:\n"
    )
    return root


@pytest.fixture
def default_cache(monkeypatch):
    monkeypatch.delenv(
        "HCMIGRATE_RESULT_CACHE_DIR"
    )  # (the suite gives each test its own otherwise)


def _from_cache(result) -> int:
    """How many results `-v`'s timing line says came from the cache."""
    [line] = [line for line in result.output.splitlines() if line.startswith("done in")]
    assert "finished from the cache" in line, line
    return int(line.split(", ")[-1].split(" of them")[0])


def _without_timing(output: str) -> str:
    return "\n".join(line for line in output.splitlines() if not line.startswith("done in"))


def test_second_run_reuses_results_and_reports_exactly_the_same(tree, default_cache):
    for args in (["--check"], ["--diff"], ["--check", "--output-format", "json"]):
        first = run([*args, "-v", "pkg"], tree)
        second = run([*args, "-v", "pkg"], tree)
        fresh = run([*args, "-v", "--no-cache", "pkg"], tree)
        if args == ["--check"]:  # (machine formats print no timing line)
            assert _from_cache(second) == len(NAMES) + 1  # (the syntax error is an outcome too)
        if args == ["--diff"]:  # (a mode that shows a rewrite reads nothing from the cache)
            assert _from_cache(second) == 0
        assert first.exit_code == second.exit_code == fresh.exit_code == 2
        assert (
            _without_timing(second.output)
            == _without_timing(first.output)
            == _without_timing(fresh.output)
        )
    cache = tree / CACHE_DIR_NAME
    assert (cache / ".gitignore").read_text().strip().endswith("*") and (
        cache / "CACHEDIR.TAG"
    ).exists()


def test_a_rewrite_after_a_cached_check_writes_what_a_fresh_rewrite_writes(
    tree, tmp_path, default_cache
):
    twin = tmp_path / "twin"
    shutil.copytree(tree, twin)
    run(["--check", "pkg"], tree)  # fills tree's cache
    fixed = run(["-v", "pkg"], tree)
    assert _from_cache(fixed) == 0  # (a writing mode reads no entry)
    run(["--no-cache", "pkg"], twin)
    for name in NAMES:
        written = (tree / "pkg" / f"{name}.py").read_text()
        assert (
            written
            == (twin / "pkg" / f"{name}.py").read_text()
            != (FIXTURES / f"{name}.in.py").read_text()
        )


def test_a_changed_file_or_other_options_are_migrated_again(tree, default_cache):
    run(["--check", "pkg"], tree)
    target = tree / "pkg" / "t1_progress_bar.py"
    target.write_text(target.read_text() + "\nX = 1\n")
    again = run(["--check", "-v", "pkg"], tree)
    assert _from_cache(again) == len(NAMES)  # all but the edited file
    selected = run(["--check", "-v", "--select", "HCB6", "pkg"], tree)
    assert _from_cache(selected) == 0
    assert "HCB601" in selected.output and "HCB101" not in selected.output


def test_no_cache_neither_reads_nor_creates_it(tree, default_cache):
    result = run(["--check", "-v", "--no-cache", "pkg"], tree)
    assert "from the cache" not in result.output and not (tree / CACHE_DIR_NAME).exists()


def test_cache_dir_option_and_environment_variable(tree, tmp_path, monkeypatch):
    chosen = tmp_path / "elsewhere"
    run(["--check", "--cache-dir", str(chosen), "pkg"], tree)
    assert (chosen / "results.json").exists() and not (tree / CACHE_DIR_NAME).exists()
    monkeypatch.setenv("HCMIGRATE_RESULT_CACHE_DIR", str(chosen))
    assert _from_cache(run(["--check", "-v", "pkg"], tree)) == len(NAMES) + 1


def test_a_damaged_cache_is_started_afresh(tree, default_cache):
    run(["--check", "pkg"], tree)
    results = tree / CACHE_DIR_NAME / "results.json"
    results.write_text('{"tool": "x", "entries": {"trunc')
    damaged = run(["--check", "-v", "pkg"], tree)
    assert _from_cache(damaged) == 0 and damaged.exit_code == 2
    assert json.loads(results.read_text())["entries"]  # rewritten whole
    assert _from_cache(run(["--check", "-v", "pkg"], tree)) == len(NAMES) + 1


def test_an_unwritable_cache_does_not_fail_the_run(tree, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    result = run(["--check", "-v", "--cache-dir", str(blocked / "cache"), "pkg"], tree)
    fresh = run(["--check", "-v", "--no-cache", "pkg"], tree)
    assert result.exit_code == fresh.exit_code == 2 and _from_cache(result) == 0
    assert blocked.read_text() == "not a folder"


def test_keys_depend_on_text_options_and_reexports():
    base = task_key("tool", "x = 1\n", Options(), False)
    assert base == task_key("tool", "x = 1\n", Options(), False)
    assert (
        len(
            {
                base,
                task_key("tool2", "x = 1\n", Options(), False),
                task_key("tool", "x = 2\n", Options(), False),
                task_key("tool", "x = 1\n", Options(strategy="compat"), False),
                task_key("tool", "x = 1\n", Options(ignore=frozenset({"HCB101"})), False),
                task_key(
                    "tool",
                    "x = 1\n",
                    Options(reexports=(("m.hcb", "jax.experimental.host_callback"),)),
                    False,
                ),
                task_key(
                    "tool", "x = 1\n", Options(reexporters_imported=(("m", ("hcb",)),)), False
                ),
                task_key("tool", "x = 1\n", Options(), True),
            }
        )
        == 8
    )


# --- the cache is input like any other (issue 28) ---------------------------------------------

TARGET = "pkg/t1_progress_bar.py"


def _tamper(tree: Path, change) -> None:
    """Apply `change(entry)` to every entry of the cache (filled by a --check run)."""
    results = tree / CACHE_DIR_NAME / "results.json"
    stored = json.loads(results.read_text())
    for entry in stored["entries"].values():
        change(entry)
    results.write_text(json.dumps(stored))


def _warnings(result) -> list[str]:
    return [line for line in result.output.splitlines() if line.startswith("warning:")]


@pytest.mark.parametrize(
    "tampering",
    [
        {"new": "def (:\n"},
        {"new": "import os; os.system('touch pwned')\n"},
        {"new": None, "diagnostics": []},  # "no change"
        {"new": None, "error": ["fake syntax error", 1, 0]},
    ],
    ids=["does-not-compile", "compiles", "says-unchanged", "says-syntax-error"],
)
def test_a_tampered_cache_never_decides_what_is_written(tree, tmp_path, default_cache, tampering):
    twin = tmp_path / "twin"
    shutil.copytree(tree, twin)
    run(["--check", "pkg"], tree)
    _tamper(tree, lambda entry: entry["new"] is not None and entry.update(tampering))
    fixed = run(["-v", "pkg"], tree)
    run(["--no-cache", "pkg"], twin)
    for name in NAMES:
        written = (tree / "pkg" / f"{name}.py").read_text()
        assert (
            written
            == (twin / "pkg" / f"{name}.py").read_text()
            != (FIXTURES / f"{name}.in.py").read_text()
        )
        assert "os.system" not in written
    # A writing run reads no entry, so it has nothing to warn about; it is --check that reads.
    assert not _warnings(fixed) and _from_cache(fixed) == 0
    assert fixed.exit_code == 2  # (pkg/broken.py, as in a fresh run)


@pytest.mark.parametrize(
    "change, why",
    [
        (lambda e: e.update(new="def (:\n"), "new text does not compile"),
        (lambda e: e.update(input="0" * 32), "does not belong to the text"),
        (lambda e: e.update(diagnostics="HCB101"), "malformed diagnostics"),
        (lambda e: e.update(diagnostics=[["HCB101", "\x1b[2Jfake", "fixed", 1, 1, None]]), "mal"),
        (lambda e: e.update(error=[1, 2]), "malformed error"),
        (lambda e: e.pop("new"), "wrong shape"),
    ],
)
def test_a_damaged_entry_is_ignored_with_one_warning(tree, default_cache, change, why):
    fresh = run(["--check", "-v", "pkg"], tree)
    _tamper(tree, lambda entry: entry["error"] is None and change(entry))
    checked = run(["--check", "-v", "pkg"], tree)
    [warning] = _warnings(checked)
    assert why in warning and "results.json" in warning and "ignored" in warning
    assert checked.exit_code == fresh.exit_code and _from_cache(checked) == 1
    assert _without_timing(checked.output).replace(warning + "\n", "") == _without_timing(
        fresh.output
    )
    # The fresh outcomes replaced the damaged ones: the next run is quiet again.
    assert not _warnings(run(["--check", "pkg"], tree))


@pytest.mark.parametrize("kind", ["fifo", "folder", "device", "not-json", "a-list"])
def test_a_results_file_that_is_not_one_never_hangs_the_run(tree, default_cache, kind):
    results = tree / CACHE_DIR_NAME / "results.json"
    results.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(results)
    elif kind == "folder":
        results.mkdir()
    elif kind == "device":
        results.symlink_to("/dev/zero")
    else:
        results.write_text("{" if kind == "not-json" else "[]")
    proc = program("--check", "-j1", "pkg", cwd=tree, timeout=60)
    [warning] = [line for line in proc.stderr.decode().splitlines() if "warning" in line]
    assert warning.startswith("warning: result cache ") and "ignored" in warning, warning
    assert proc.returncode == 2 and b"would rewrite pkg/t1_progress_bar.py" in proc.stdout
