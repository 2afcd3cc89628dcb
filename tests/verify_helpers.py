"""Running the real `hcmigrate verify` command in a subprocess, as a user or CI runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def hcmigrate_verify(*args, cwd=REPO, timeout=600, env=None) -> subprocess.CompletedProcess:
    """`python -m hcmigrate verify ARGS` from `cwd`; stdout and stderr captured as text. The
    hcmigrate run is this checkout's, whatever `cwd` (PYTHONPATH)."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])]
    )
    return subprocess.run(
        [sys.executable, "-m", "hcmigrate", "verify", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env=env,
    )
