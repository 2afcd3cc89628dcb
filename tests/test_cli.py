"""The command line, driven end to end on real files in temporary folders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hcmigrate.api import Options, migrate_source
from hcmigrate.cli import cli, main

REPO = Path(__file__).resolve().parent.parent

LEGACY = """\
from jax.experimental import host_callback as hcb


def step(x):
    hcb.id_tap(lambda a, transforms: print(a), x)
    return x * 2
"""
# A private name of the legacy implementation: no modern counterpart, left for a human.
MANUAL = """\
from jax.experimental import host_callback as hcb

start = hcb._initialize_outfeed_receiver
"""
PLAIN = "import jax\n\n\ndef g(x):\n    return x + 1\n"


def run(args, input=None, cwd=None):
    """Invoke the CLI in-process (fast); returns click's Result with .exit_code/.stdout/.stderr."""
    runner = CliRunner()
    if cwd is not None:
        old = os.getcwd()
        os.chdir(cwd)
    try:
        return runner.invoke(cli, list(args), input=input, catch_exceptions=False)
    finally:
        if cwd is not None:
            os.chdir(old)


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "legacy.py").write_text(LEGACY)
    (tmp_path / "pkg" / "plain.py").write_text(PLAIN)
    return tmp_path


def expected(text: str, **opts) -> str:
    """What the CLI writes: the library's rewrite, laid out as the run lays out written lines."""
    from hcmigrate.codemod.layout import format_written_lines

    options = Options(**opts)
    return format_written_lines(text, migrate_source(text, options).code, options.line_length)


def test_samples_behave_as_the_tests_assume():
    assert migrate_source(LEGACY).changed
    assert not migrate_source(LEGACY).needs_human
    assert migrate_source(MANUAL).needs_human
    assert not migrate_source(PLAIN).changed


def test_fix_rewrites_in_place_and_reports(tree):
    res = run(["-j1", "pkg"], cwd=tree)
    assert res.exit_code == 0, res.output
    assert (tree / "pkg" / "legacy.py").read_text() == expected(LEGACY)
    assert (tree / "pkg" / "plain.py").read_text() == PLAIN
    assert "rewrote pkg/legacy.py" in res.stdout
    assert "pkg/legacy.py:5:" in res.stdout and "HCB101" in res.stdout
    assert "2 files scanned, 1 rewritten, 1 unchanged, 0 failed" in res.stdout


def test_check_writes_nothing_and_exits_1(tree):
    res = run(["--check", "-j1", "."], cwd=tree)
    assert res.exit_code == 1
    assert "would rewrite pkg/legacy.py" in res.stdout
    assert (tree / "pkg" / "legacy.py").read_text() == LEGACY
    run(["-j1", "."], cwd=tree)
    res = run(["--check", "-j1", "."], cwd=tree)
    assert res.exit_code == 0, res.output
    assert "0 would be rewritten" in res.stdout


def test_diff_is_a_clean_patch_and_writes_nothing(tree):
    res = run(["--diff", "-j1", "pkg"], cwd=tree)
    assert res.exit_code == 0
    assert res.stdout.startswith("--- a/pkg/legacy.py\n+++ b/pkg/legacy.py\n")
    assert "-    hcb.id_tap(" in res.stdout
    assert "HCB101" not in res.stdout and "HCB101" in res.stderr  # diagnostics go to stderr
    assert (tree / "pkg" / "legacy.py").read_text() == LEGACY
    # The patch applies and gives exactly what a fix run writes.
    subprocess.run(["patch", "-p1", "-s"], input=res.stdout, text=True, cwd=tree, check=True)
    assert (tree / "pkg" / "legacy.py").read_text() == expected(LEGACY)


def test_manual_findings_exit_1(tmp_path):
    (tmp_path / "m.py").write_text(MANUAL)
    res = run(["-j1", "m.py"], cwd=tmp_path)
    assert res.exit_code == 1
    assert "[manual]" in res.stdout and "HCB501" in res.stdout


def test_failed_file_is_named_others_still_processed(tree):
    (tree / "pkg" / "broken.py").write_text("from jax.experimental import host_callback\ndef f(:\n")
    res = run(["-j1", "pkg"], cwd=tree)
    assert res.exit_code == 2
    assert "error: pkg/broken.py:2" in res.stderr
    assert (tree / "pkg" / "legacy.py").read_text() == expected(LEGACY)
    assert "1 failed" in res.stdout


def test_missing_path_and_usage_errors_exit_2(tmp_path):
    res = run(["nope.py"], cwd=tmp_path)
    assert res.exit_code == 2 and "nope.py: no such file or directory" in res.stderr
    assert run([], cwd=tmp_path).exit_code == 2
    assert run(["--check", "--diff", "."], cwd=tmp_path).exit_code == 2
    assert run(["--strategy", "bogus", "."], cwd=tmp_path).exit_code == 2
    res = run(["--select", "XYZ1", "."], cwd=tmp_path)
    assert res.exit_code == 2 and "XYZ1" in res.stderr


def test_stdin_to_stdout(tmp_path):
    res = run(["-"], input=LEGACY, cwd=tmp_path)  # (no project: the default line length)
    assert res.exit_code == 0
    assert res.stdout == expected(LEGACY)
    assert "-:5:" in res.stderr
    res = run(["--stdin-filename", "src/mod.py", "-"], input=LEGACY)
    assert "src/mod.py:5:" in res.stderr
    res = run(["--check", "-"], input=LEGACY)
    assert res.exit_code == 1 and res.stdout == ""
    res = run(["--diff", "-"], input=LEGACY)
    assert res.exit_code == 0 and res.stdout.startswith("--- a/-\n")
    res = run(["-"], input="def f(:\n")
    assert res.exit_code == 2 and "error: -:1" in res.stderr
    assert res.stdout == "def f(:\n"  # a pipe never loses the input


def test_strategy_compat_and_options_reach_the_library(tree):
    res = run(["--strategy", "compat", "-j1", "pkg/legacy.py"], cwd=tree)
    assert res.exit_code == 0, res.output
    out = (tree / "pkg" / "legacy.py").read_text()
    assert out == expected(LEGACY, strategy="compat")
    assert "compat" in out and "HCB701" in res.stdout


def test_select_and_ignore(tree):
    res = run(["--ignore", "HCB101", "--diff", "-j1", "pkg"], cwd=tree)
    assert res.stdout == "" or "jax.debug.callback" not in res.stdout
    res2 = run(["--select", "HCB1", "--diff", "-j1", "pkg"], cwd=tree)
    assert "jax.debug.callback" in res2.stdout


def test_target_jax_option(tmp_path):
    src = "import jax\njax.pure_callback(f, s, x, vectorized=True)\n"
    (tmp_path / "v.py").write_text(src)
    new = run(["--diff", "--target-jax", "0.10.2", "v.py"], cwd=tmp_path).stdout
    old = run(["--diff", "--target-jax", "0.4.30", "v.py"], cwd=tmp_path).stdout
    assert "legacy_vectorized" in new
    assert "legacy_vectorized" not in old
    assert run(["--target-jax", "latest", "v.py"], cwd=tmp_path).exit_code == 2


def test_list_rules_prints_every_rule():
    from hcmigrate.rules.registry import registry

    res = run(["--list-rules"])
    assert res.exit_code == 0
    for rule in registry().rules:
        assert f"{rule.code}  {rule.name}  [{rule.level.value}]" in res.stdout
        if rule.behaviour_note:
            assert rule.behaviour_note in res.stdout


def test_json_output(tree):
    (tree / "pkg" / "broken.py").write_text("import jax.experimental.host_callback\nprint 'x'\n")
    res = run(["--output-format", "json", "--check", "--statistics", "-j1", "pkg"], cwd=tree)
    assert res.exit_code == 2
    data = json.loads(res.stdout)
    by_path = {f["path"]: f for f in data["files"]}
    assert by_path["pkg/legacy.py"]["status"] == "changed"
    assert by_path["pkg/broken.py"]["status"] == "failed"
    assert "Python 2" in by_path["pkg/broken.py"]["error"]
    d = {x["code"]: x for x in by_path["pkg/legacy.py"]["diagnostics"]}["HCB101"]
    assert (
        d["level"] == "fixed-with-behaviour-note"
        and d["line"] == 5
        and d["location"] == "pkg/legacy.py:5:5"
    )
    assert data["summary"]["files_scanned"] == 3 and data["summary"]["files_failed"] == 1
    assert data["summary"]["sites"]["fixed-with-behaviour-note"] >= 1
    assert any(s["code"] == "HCB101" for s in data["statistics"])


def test_sarif_output(tree):
    (tree / "pkg" / "m.py").write_text(MANUAL)
    res = run(["--output-format", "sarif", "--check", "-j1", "pkg"], cwd=tree)
    doc = json.loads(res.stdout)
    assert doc["version"] == "2.1.0"
    run0 = doc["runs"][0]
    assert {r["id"] for r in run0["tool"]["driver"]["rules"]} >= {"HCB101", "HCB501"}
    results = {r["ruleId"]: r for r in run0["results"]}
    assert results["HCB501"]["level"] == "error"
    loc = results["HCB101"]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "pkg/legacy.py" and loc["region"]["startLine"] == 5


def test_github_annotations(tree):
    res = run(["--output-format", "github", "--check", "-j1", "pkg"], cwd=tree)
    lines = res.stdout.splitlines()
    assert any(
        line.startswith("::warning file=pkg/legacy.py,line=5,col=") and "HCB101" in line
        for line in lines
    )
    assert (
        "::error file=pkg/legacy.py,title=hcmigrate::would be rewritten by hcmigrate" in res.stdout
    )


def test_statistics_and_summary(tree):
    (tree / "pkg" / "m.py").write_text(MANUAL)
    res = run(["--statistics", "--check", "-j1", "pkg"], cwd=tree)
    assert "HCB101  id-tap-to-debug-callback  [fixed-with-behaviour-note]" in res.stdout
    assert "HCB501  internals  [manual]" in res.stdout
    assert "3 files scanned, 1 would be rewritten, 2 unchanged, 0 failed" in res.stdout
    assert "sites: 1 fixed, 1 fixed-with-behaviour-note, 0 compat-fallback, 1 manual" in res.stdout


# A branch kept for old JAX (HCB014) and a random draw (JAX110): nothing to rewrite, nothing
# to do: `note`s. A `jnp.linalg.solve` (JAX115) may raise on current JAX: `manual`.
NOTES_ONLY = """\
import jax

if jax.__version__ < "0.4.26":
    from jax.experimental import host_callback as hcb

    def log(x):
        hcb.id_tap(lambda v, _: print(v), x)

key = jax.random.PRNGKey(0)
x = jax.random.normal(key, (3,))
"""
SOLVE = "import jax.numpy as jnp\n\nx = jnp.linalg.solve(a, b)\n"


@pytest.mark.parametrize("mode", [[], ["--check"], ["--diff"]])
def test_notes_are_never_fixes_nor_findings(tmp_path, mode):
    """A run that rewrites nothing and finds nothing to do exits 0 in every mode, counts no
    site as fixed and names its notes apart, in text, JSON, SARIF and GitHub output."""
    (tmp_path / "n.py").write_text(NOTES_ONLY)
    res = run([*mode, "-j1", "n.py"], cwd=tmp_path)
    assert res.exit_code == 0, res.output
    assert "n.py:3:1: HCB014 [note] left as it is" in res.output
    assert "n.py:9:7: JAX110 [note] the project draws random numbers" in res.output
    assert (
        "0 unchanged" not in res.output
        and "1 unchanged, 0 failed; sites: 0 fixed, 0 fixed-with-behaviour-note, "
        "0 compat-fallback, 0 manual; 2 notes"
        in res.output
    )
    assert (tmp_path / "n.py").read_text() == NOTES_ONLY
    data = json.loads(run([*mode, "-j1", "--output-format", "json", "n.py"], cwd=tmp_path).stdout)
    assert data["summary"]["sites"] == {
        "fixed": 0,
        "fixed-with-behaviour-note": 0,
        "compat-fallback": 0,
        "manual": 0,
        "note": 2,
    }
    assert {d["level"] for d in data["files"][0]["diagnostics"]} == {"note"}
    sarif = json.loads(run([*mode, "-j1", "--output-format", "sarif", "n.py"], cwd=tmp_path).stdout)
    assert {r["level"] for r in sarif["runs"][0]["results"]} == {"note"}
    github = run([*mode, "-j1", "--output-format", "github", "n.py"], cwd=tmp_path).stdout
    assert github.startswith("::notice file=n.py,line=3,col=1,title=HCB014 note::"), github


def test_a_changed_call_left_as_it_is_is_manual_not_fixed(tmp_path):
    """JAX115: nothing rewritten, and the call may raise on current JAX: a human checks it."""
    (tmp_path / "s.py").write_text(SOLVE)
    res = run(["--check", "-j1", "s.py"], cwd=tmp_path)
    assert res.exit_code == 1, res.output
    assert "s.py:3:5: JAX115 [manual] `jnp.linalg.solve(a, b)`: left as it is" in res.stdout
    assert "sites: 0 fixed, 0 fixed-with-behaviour-note, 0 compat-fallback, 1 manual" in (
        res.output
    )


def test_quiet_and_verbose(tree):
    res = run(["-q", "--check", "-j1", "pkg"], cwd=tree)
    assert res.exit_code == 1 and res.stdout == ""
    res = run(["-v", "--check", "-j1", "pkg"], cwd=tree)
    assert "files passed the pre-filter" in res.stderr


def test_jobs_give_results_in_stable_order(tmp_path):
    for i in range(12):
        (tmp_path / f"m{i:02d}.py").write_text(LEGACY.replace("x * 2", f"x * {i}"))
    outs = [run(["--check", "-j", j, "."], cwd=tmp_path).stdout for j in ("1", "2", "4")]
    assert outs[0] == outs[1] == outs[2]
    order = [line.split()[-1] for line in outs[0].splitlines() if line.startswith("would rewrite")]
    assert order == sorted(order) and len(order) == 12


def test_interactive_review(tmp_path):
    src = (
        LEGACY
        + "\n\ndef other(y):\n    hcb.id_tap(lambda a, transforms: print(a), y)\n    return y\n"
    )
    f = tmp_path / "i.py"
    f.write_text(src)
    full = expected(src)
    # Refuse everything: file untouched.
    res = run(["--interactive", "-j1", "i.py"], cwd=tmp_path, input="n\n" * 20)
    assert f.read_text() == src and "Apply this change?" in res.stdout
    # Quit at once: untouched.
    res = run(["--interactive", "-j1", "i.py"], cwd=tmp_path, input="q\n")
    assert f.read_text() == src
    # All: the whole rewrite.
    res = run(["--interactive", "-j1", "i.py"], cwd=tmp_path, input="a\n")
    assert res.exit_code == 0, res.output
    assert f.read_text() == full


def test_interactive_partial_answers_write_a_mix(tmp_path):
    src = "import jax\njax.pure_callback(f, s, x, vectorized=True)\n\n\n\n\n\njax.pure_callback(g, s, y, vectorized=True)\n"
    f = tmp_path / "p.py"
    f.write_text(src)
    run(["--interactive", "-j1", "p.py"], cwd=tmp_path, input="y\nn\n")
    lines = f.read_text().splitlines()
    assert "legacy_vectorized" in lines[1] and "vectorized=True" in lines[-1]


def test_python_dash_m_and_console_script(tmp_path):
    (tmp_path / "a.py").write_text(LEGACY)
    for cmd in ([sys.executable, "-m", "hcmigrate"], ["hcmigrate"]):
        p = subprocess.run([*cmd, "--check", "a.py"], cwd=tmp_path, capture_output=True, text=True)
        assert p.returncode == 1, p.stderr
        assert "would rewrite a.py" in p.stdout


def test_verify_dispatch_and_a_file_named_verify(tmp_path, monkeypatch, capsys):
    import types

    import click

    called = {}

    @click.command("verify")
    @click.argument("args", nargs=-1)
    def fake_verify(args):
        called["args"] = args

    mod = types.ModuleType("hcmigrate.verify.command")
    mod.verify = fake_verify
    monkeypatch.setitem(sys.modules, "hcmigrate.verify.command", mod)
    with pytest.raises(SystemExit) as exc:
        main(["verify", "x.py", "y.py"])
    assert exc.value.code == 0 and called["args"] == ("x.py", "y.py")
    # A file literally named verify is migrated when passed as ./verify.
    (tmp_path / "verify").write_text(LEGACY)
    monkeypatch.chdir(tmp_path)
    called.clear()
    with pytest.raises(SystemExit) as exc:
        main(["--check", "-j1", "./verify"])
    assert exc.value.code == 1
    assert "would rewrite verify" in capsys.readouterr().out
    assert called == {}  # the fake verify was not called this time


def test_pre_commit_hooks_file():
    import yaml

    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"hcmigrate", "hcmigrate-check"}
    for h in hooks.values():
        assert h["entry"].startswith("hcmigrate") and h["language"] == "python"
        assert set(h["types_or"]) == {"python", "jupyter"}
    assert "--check" in hooks["hcmigrate-check"]["args"]


def test_pre_commit_hook_entries_run(tmp_path):
    """Run each hook's entry+args the way pre-commit does: entry args... filenames."""
    import shlex

    import yaml

    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    (tmp_path / "a.py").write_text(LEGACY)
    chk = hooks["hcmigrate-check"]
    p = subprocess.run(
        [*shlex.split(chk["entry"]), *chk.get("args", []), "a.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 1 and (tmp_path / "a.py").read_text() == LEGACY
    fix = hooks["hcmigrate"]
    p = subprocess.run(
        [*shlex.split(fix["entry"]), *fix.get("args", []), "a.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    # (libcst's tool writes the codemod's program, wrapped or not as its settings say)
    import ast

    written = ast.dump(ast.parse((tmp_path / "a.py").read_text()))
    assert written == ast.dump(ast.parse(expected(LEGACY)))


@pytest.mark.parametrize("how", ["external", "config"])
def test_libcst_tool_runs_the_codemod(tmp_path, how):
    (tmp_path / "a.py").write_text(LEGACY)
    if how == "external":
        cmd = [
            sys.executable,
            "-m",
            "libcst.tool",
            "codemod",
            "-x",
            "hcmigrate.codemod.MigrateHostCallbackCommand",
        ]
        cwd = tmp_path
        target = "a.py"
    else:  # from the repository, whose .libcst.codemod.yaml lists the hcmigrate package
        cmd = [sys.executable, "-m", "libcst.tool", "codemod", "codemod.MigrateHostCallbackCommand"]
        cwd = REPO
        target = str(tmp_path / "a.py")
    p = subprocess.run(
        [*cmd, "--no-format", "--hide-progress", target], cwd=cwd, capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr
    # (libcst's tool writes the codemod's program, wrapped or not as its settings say)
    import ast

    written = ast.dump(ast.parse((tmp_path / "a.py").read_text()))
    assert written == ast.dump(ast.parse(expected(LEGACY)))


_FREEZE_PROBE = """
import gc, sys
from click.testing import CliRunner
from hcmigrate.cli import cli, main
how, folder, cache = sys.argv[1:]
args = ["-j1", "--check", "-q", *(["--cache-dir", cache] if cache else ["--no-cache"]), folder]
if how == "runner":
    CliRunner().invoke(cli, args)
else:
    try:
        main(args)
    except SystemExit:
        pass
print(gc.get_freeze_count())
"""


def _frozen_after(how: str, folder: Path, cache: str = "") -> bool:
    out = subprocess.run(
        [sys.executable, "-c", _FREEZE_PROBE, how, str(folder), cache],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.split()[-1]) > 0


LEGACY_FILE = "import jax.experimental.host_callback as hcb\nhcb.barrier_wait()\n"


@pytest.mark.parametrize("how, frozen", [("program", True), ("runner", False)])
def test_only_the_program_itself_freezes_the_garbage_collector(tmp_path, how, frozen):
    """The hcmigrate program freezes what the codemod's import created (a short-lived process:
    later collections skip it); the same command run inside another process must not, or that
    process would never collect what was alive then."""
    (tmp_path / "m.py").write_text(LEGACY_FILE)
    assert _frozen_after(how, tmp_path) is frozen


def test_the_program_also_freezes_when_a_warm_cache_leaves_files_to_migrate(tmp_path):
    """With cached results the codemod is imported only for the files the cache misses (not
    during the scan); that import freezes too."""
    tree, cache = tmp_path / "tree", str(tmp_path / "cache")
    tree.mkdir()
    (tree / "a.py").write_text(LEGACY_FILE)
    _frozen_after("program", tree, cache)  # fills the cache
    (tree / "b.py").write_text(LEGACY_FILE.replace("barrier_wait()", "barrier_wait()  # b"))
    assert _frozen_after("program", tree, cache)


def test_dynamic_uses_of_host_callback_are_reported_not_passed(tmp_path):
    """import_module / exec / getattr through a string: no rule can follow them, so each is
    a manual finding (HCB009) instead of a silently clean file; a docstring is not a use."""
    (tmp_path / "dyn.py").write_text(
        '"""Formerly used jax.experimental.host_callback."""\n'
        "import importlib\n\n"
        'hcb = importlib.import_module("jax.experimental.host_callback")\n'
        'exec("from jax.experimental import host_callback")\n'
    )
    res = run(["--check", "dyn.py"], cwd=tmp_path)
    assert res.output.count("HCB009 [manual]") == 2
    assert "dyn.py:4:1: HCB009" in res.output and "dyn.py:5:1: HCB009" in res.output
