"""The README cannot go stale: its rule table is the registry's, its test command is .ci/run's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_rule_table_matches_registry():
    readme = (REPO / "README.md").read_text()
    table = re.search(r"<!-- rules-table:start -->\n(.*)<!-- rules-table:end -->", readme, re.S).group(1)
    generated = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "rules_table.py")], capture_output=True, text=True, check=True
    ).stdout
    assert table == generated


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_second():
    readme = (REPO / "README.md").read_text()
    setup = readme.split("## Set-up: two commands", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", setup, re.S)
    assert len(commands) == 2
    ci = (REPO / ".ci" / "run").read_text()
    assert commands[1] in ci
