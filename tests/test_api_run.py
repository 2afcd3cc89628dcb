"""hcmigrate.api does what the command line does: settings from the command line's values and
the project's config, file selection, the pre-filter and cross-module re-exports, per-file
options, migration in file order, review and atomic writes, standard input. The CLI is these
calls and its printing (compared here on a real tree)."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import run

from hcmigrate import api


def _tree(root: Path) -> Path:
    for rel, text in {
        "mypkg/__init__.py": "",
        "mypkg/taps.py": "from jax.experimental.host_callback import id_tap\n",
        "mypkg/use.py": "from mypkg.taps import id_tap\n\ndef f(x):\n    return id_tap(print, x)\n",
        "plain.py": "x = 1\n",
        "cfg.py": "import jax\njax.config.update('jax_host_callback_inline', True)\n",
        "gen.py": "# @" + "generated\nimport jax.experimental.host_callback\n",
    }.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "pyproject.toml").write_text('[tool.hcmigrate]\nexclude = ["plain.py"]\n')
    return root


def test_a_check_run_through_the_library_reports_what_the_cli_reports(tmp_path):
    _tree(tmp_path)
    settings = api.resolve_settings([str(tmp_path)])
    assert settings.exclude == ["plain.py"] and settings.root == tmp_path
    plan = api.plan_run([str(tmp_path)], settings, mode="check", jobs=1)
    results = list(api.migrate_files(plan, jobs=1))
    lines = [d.format(r.display) for r in results for d in r.diagnostics]
    use = plan.tasks[[t.display for _, t in plan.tasks].index(str(tmp_path / "mypkg/use.py"))][1]
    assert use.options.reexports and use.options.module_name == "mypkg.use"
    assert {r.status for r in plan.results.values()} == {"skipped"}  # the generated file
    cli = run(["--check", "."], tmp_path)
    assert sorted(line.replace(f"{tmp_path}/", "") for line in lines) == sorted(
        line for line in cli.stdout.splitlines() if " HCB" in line
    )
    assert all(r.status == "changed" for r in results) and len(results) == 3


def test_fix_mode_writes_each_file_and_review_writes_what_was_accepted(tmp_path):
    _tree(tmp_path)
    settings = api.resolve_settings([str(tmp_path / "mypkg")])
    plan = api.plan_run([str(tmp_path / "mypkg")], settings, mode="review", jobs=1)
    shown: list[str] = []
    for (i, _), res in zip(plan.tasks, api.migrate_files(plan, jobs=1)):
        api.review_change(plan.targets[i].path, res, False, ask=lambda _: "a", echo=shown.append)
        assert res.written
    assert "jax.debug.callback" in (tmp_path / "mypkg/use.py").read_text() and shown
    plan = api.plan_run([str(tmp_path / "cfg.py")], settings, mode="fix", jobs=1)
    assert [r.written for r in api.migrate_files(plan, jobs=1)] == [True]
    assert (tmp_path / "cfg.py").read_text() == "import jax\n"


def test_standard_input_through_the_library():
    data = b"from jax.experimental import host_callback as hcb\nhcb.barrier_wait()\n"
    stream = api.migrate_stream(data, "-", api.Settings(), mode="fix")
    assert (
        stream.output == b"import jax\n\njax.effects_barrier()\n"
    )  # (isort: a blank line after imports)
    assert [d.code for d in stream.result.diagnostics] == ["HCB001", "HCB401"]
    diff = api.migrate_stream(data, "x.py", api.Settings(), mode="diff")
    assert diff.output is None and diff.diff.startswith(b"--- a/x.py")
