"""The README cannot go stale: its test command is .ci/run's, its first command works (its rule
table: tests/test_rule_docs.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_second():
    readme = (REPO / "README.md").read_text()
    setup = readme.split("## Set-up: two commands", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", setup, re.S)
    assert len(commands) == 2
    ci = (REPO / ".ci" / "run").read_text()
    assert commands[1] in ci


def test_readme_first_command_migrates_and_verifies_the_bundled_example(tmp_path):
    """The newcomer's first command, minus its `pip install .` (this environment has it)."""
    readme = (REPO / "README.md").read_text()
    setup = readme.split("## Set-up: two commands", 1)[1].split("\n## ", 1)[0]
    first = re.findall(r"```bash\n(.*?)\n```", setup, re.S)[0]
    install, rest = first.split(" && ", 1)
    assert install == "python3 -m pip install ."
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    run = subprocess.run(
        ["bash", "-c", rest], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "rewrote hcm-demo/mcmc_progress.py" in run.stdout + run.stderr
    assert "EQUIVALENT" in run.stdout
    migrated = (tmp_path / "hcm-demo" / "mcmc_progress.py").read_text()
    assert "host_callback" not in migrated.split('"""', 2)[-1] and "jax.debug.callback" in migrated
    # the bundled example itself is left as the legacy original
    assert (tmp_path / "examples" / "mcmc_progress.py").read_text() == (
        REPO / "examples" / "mcmc_progress.py"
    ).read_text()


def test_readme_migration_diff_is_what_the_codemod_writes():
    """The diff under "What a migration looks like" is whole: its `-` and context lines are the
    input, its `+` and context lines exactly what the codemod writes for it."""
    from hcmigrate import migrate_source

    readme = (REPO / "README.md").read_text()
    section = readme.split("## What a migration looks like", 1)[1].split("\n## ", 1)[0]
    diff = re.findall(r"```diff\n(.*?)\n```", section, re.S)[0].splitlines()
    before = "".join(line[1:] + "\n" for line in diff if not line.startswith("+"))
    after = "".join(line[1:] + "\n" for line in diff if not line.startswith("-"))
    assert migrate_source(before).code == after
