"""Cached environments shared by concurrent hcmigrate processes (hcmigrate/env_lock.py): one
process changes an environment at a time, and none while another runs from it. Real
processes, real venvs, real pip."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pip

from cli_helpers import site_packages

LOCKED_CHANGE = """
import sys
from pathlib import Path

import pip
from hcmigrate import env_lock
with env_lock.changing(Path(sys.argv[1])):
    print("changing", flush=True)
"""

RUN_USING = """
import sys
from pathlib import Path

import pip
from hcmigrate import env_lock
env_lock.using(Path(sys.argv[1]))
print("using", flush=True)
sys.stdin.readline()
env_lock.release_all()
sys.stdin.readline()
"""

INSTALL_PYTEST = """
import sys
from hcmigrate.verify.pytest_env import pytest_paths
print(pytest_paths(sys.argv[1], may_install=True))
"""


def _python(*code_and_args, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", *map(str, code_and_args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def test_two_processes_install_pytest_into_one_environment_once(tmp_path):
    """Two verify runs starting together on an environment without pytest: one installs it,
    the other waits and uses it (before the lock both ran pip into the same folder)."""
    env = tmp_path / "legacy-env"
    venv.EnvBuilder(with_pip=False).create(env)
    python = env / "bin" / "python"
    # this interpreter's pip, copied (seconds faster than ensurepip)
    purelib = site_packages(python)
    shutil.copytree(Path(pip.__file__).parent, Path(purelib) / "pip")
    runs = [_python(INSTALL_PYTEST, python) for _ in range(2)]
    results = [run.communicate(timeout=300) for run in runs]
    for run, (out, err) in zip(runs, results):
        assert run.returncode == 0, out + err
    errs = "".join(err for _, err in results)
    assert errs.count("hcmigrate: installing pytest==") == 1, errs
    assert f"hcmigrate: waiting for other hcmigrate processes using {env}" in errs, errs
    assert "([], None)" in [out.strip() for out, _ in results]  # found it installed
    assert subprocess.run([python, "-c", "import pytest"]).returncode == 0


def test_a_change_waits_for_the_run_using_the_environment(tmp_path):
    env = tmp_path / "legacy-env"
    user = _python(RUN_USING, env)
    assert user.stdout.readline() == "using\n"
    changer = _python(LOCKED_CHANGE, env)
    try:
        waiting = changer.stderr.readline()  # said just before it blocks
        assert waiting == f"hcmigrate: waiting for other hcmigrate processes using {env}\n"
        assert changer.poll() is None
        user.stdin.write("\n")  # the run ends: the change goes ahead
        user.stdin.flush()
        assert changer.stdout.readline() == "changing\n"
        assert changer.wait(timeout=30) == 0
    finally:
        user.communicate("\n\n", timeout=30)
        changer.kill()
    # a lock file beside the environment's folder, never inside it
    assert (tmp_path / "legacy-env.lock").is_file() and not env.exists()


def test_runs_using_an_environment_do_not_wait_for_each_other(tmp_path):
    env = tmp_path / "legacy-env"
    first = _python(RUN_USING, env)
    second = _python(RUN_USING, env)
    try:
        assert first.stdout.readline() == "using\n"
        assert second.stdout.readline() == "using\n"
    finally:
        for run in (first, second):
            out, err = run.communicate("\n\n", timeout=30)
            assert run.returncode == 0 and err == "", err
    assert Path(tmp_path / "legacy-env.lock").is_file()
