"""Running the real `hcmigrate` command in-process (click's runner) from a given folder."""

from __future__ import annotations

import os

from click.testing import CliRunner

from hcmigrate.cli import cli


def run(args, cwd, input=None):
    """`hcmigrate -j1 ARGS` with `cwd` as the working directory; returns click's Result."""
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, ["-j1", *args], input=input, catch_exceptions=False)
    finally:
        os.chdir(old)
