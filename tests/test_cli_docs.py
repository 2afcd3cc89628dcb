"""docs/cli.md and the README's tour cannot go stale: write the files they show, run their
commands in order, compare.

Blocks ```<lang> file=PATH hold files; ```console blocks hold `$ command` lines, each followed by
its exact output (stdout and stderr together). HCMIGRATE_UPDATE_DOCS=1 rewrites the outputs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = {"docs/cli.md": 25, "README.md": 5}  # page -> at least this many commands
FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```\n", re.M | re.S)
VOLATILE = [
    (re.compile(r"done in \d+\.\d+s with \d+ worker\(s\)"), "done in <t>s with <n> worker(s)")
]


def normalise(text: str) -> str:
    for pattern, repl in VOLATILE:
        text = pattern.sub(repl, text)
    return text


def parse_console(body: str) -> list[tuple[str, str]]:
    steps: list[tuple[str, list[str]]] = []
    for line in body.splitlines(keepends=True):
        if line.startswith("$ "):
            steps.append((line[2:].rstrip("\n"), []))
        else:
            steps[-1][1].append(line)
    return [(cmd, "".join(out)) for cmd, out in steps]


def run_command(cmd: str, cwd: Path) -> str:
    env = dict(
        os.environ,
        PYTHONUNBUFFERED="1",
        COLUMNS="100",
        NO_COLOR="1",
        TERM="dumb",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_CONFIG_NOSYSTEM="1",
    )
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    p = subprocess.run(
        ["bash", "-c", cmd],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
    )
    return p.stdout


@pytest.mark.parametrize("page", sorted(DOCS))
def test_documented_commands_match_their_outputs(tmp_path, page):
    doc = REPO / page
    text = doc.read_text()
    work = tmp_path / "work"
    original = tmp_path / "original"
    work.mkdir()
    update = os.environ.get("HCMIGRATE_UPDATE_DOCS") == "1"
    pieces: list[str] = []
    pos = 0
    mismatches = []
    n_commands = 0
    for m in FENCE.finditer(text):
        info, body = m.group("info"), m.group("body")
        pieces.append(text[pos : m.start()])
        pos = m.end()
        file_match = re.search(r"\bfile=(\S+)", info)
        if file_match:
            for root in (work, original):
                p = root / file_match.group(1)
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(body)
            pieces.append(m.group(0))
            continue
        if info.strip() != "console":
            pieces.append(m.group(0))
            continue
        new_body = []
        for cmd, expected in parse_console(body):
            n_commands += 1
            got = run_command(cmd, work)
            new_body.append(f"$ {cmd}\n{got}")
            if normalise(got) != normalise(expected):
                mismatches.append(f"$ {cmd}\n--- documented\n{expected}--- actual\n{got}")
        pieces.append("```console\n" + "".join(new_body) + "```\n")
    pieces.append(text[pos:])
    assert n_commands >= DOCS[page]
    if update:
        doc.write_text("".join(pieces))
        return
    assert not mismatches, (
        f"{page} is stale (HCMIGRATE_UPDATE_DOCS=1 refreshes it):\n\n" + "\n\n".join(mismatches)
    )
