"""The compat runtime on the OLDEST JAX the project claims (jax==jaxlib==0.6.2).

Creates (once, cached next to the legacy reference environment of
``hcmigrate.legacy_env``: ``$HCMIGRATE_CACHE_DIR`` or ``~/.cache/hcmigrate``) a virtualenv
with jax==jaxlib==0.6.2 through pip -- only the package registries pip is configured with
are needed -- and runs every compat trace scenario there (fast and public-only path),
requiring the traces recorded under real legacy jax 0.4.30. Always runs: if the
environment cannot be created the test fails, it is not skipped.

``HCMIGRATE_OLDEST_JAX_PYTHON=/path/to/python`` uses an existing interpreter instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import venv
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hcmigrate.legacy_env import cache_dir

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "fixtures" / "compat"))
import runner  # noqa: E402

OLDEST_JAX = "0.6.2"  # keep in step with pyproject (jax>=0.6) and docs/compat.md
REQUIREMENTS = (f"jax=={OLDEST_JAX}", f"jaxlib=={OLDEST_JAX}", "numpy", "scipy")


def _python_in(env: Path) -> Path:
    return env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _is_ready(python: Path) -> bool:
    if not python.exists():
        return False
    probe = subprocess.run(
        [str(python), "-c", "import jax, jaxlib, numpy, sys; sys.stdout.write(jax.__version__ + ' ' + jaxlib.__version__)"],
        capture_output=True, text=True, timeout=120,
    )
    return probe.returncode == 0 and probe.stdout.split() == [OLDEST_JAX, OLDEST_JAX]


def oldest_jax_python() -> Path:
    """The cached interpreter with the oldest supported JAX, created on first use.

    Built in a private temporary folder and moved into place when complete, so an
    interrupted or concurrent creation never leaves a half-made environment behind.
    """
    explicit = os.environ.get("HCMIGRATE_OLDEST_JAX_PYTHON")
    if explicit:
        return Path(explicit)
    env = cache_dir() / f"compat-jax-{OLDEST_JAX}-py{sys.version_info.major}{sys.version_info.minor}"
    python = _python_in(env)
    if _is_ready(python):
        return python
    env.parent.mkdir(parents=True, exist_ok=True)
    tmp = env.with_name(f"{env.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(tmp)
    last = None
    for attempt in range(3):  # registries can be flaky: retry the install
        last = subprocess.run(
            [str(_python_in(tmp)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "--retries", "5", "--timeout", "60", *REQUIREMENTS],
            capture_output=True, text=True,
        )
        if last.returncode == 0:
            break
        time.sleep(2 * (attempt + 1))
    if last.returncode != 0 or not _is_ready(_python_in(tmp)):
        shutil.rmtree(tmp, ignore_errors=True)
        raise RuntimeError(f"could not install {' '.join(REQUIREMENTS)}:\n{last.stderr[-3000:]}")
    if _is_ready(python):  # another process finished first
        shutil.rmtree(tmp, ignore_errors=True)
        return python
    shutil.rmtree(env, ignore_errors=True)
    os.replace(tmp, env)
    return python


CASES = [(n, "fast") for n in runner.scenario_names()] + [
    (n, "public") for n in runner.scenario_names() if n not in runner.FAST_PATH_ONLY
]


@pytest.fixture(scope="module")
def oldest_traces():
    python = str(oldest_jax_python())

    def go(case):
        name, path = case
        extra = {"HCMIGRATE_COMPAT_PUBLIC_ONLY": "1" if path == "public" else "0"}
        return case, runner.run_scenario(python, name, use_compat=True, extra_env=extra)

    with ThreadPoolExecutor(max(2, min(4, os.cpu_count() or 2))) as pool:
        return python, dict(pool.map(go, CASES))


def test_oldest_jax_environment_is_the_claimed_version(oldest_traces):
    python, _ = oldest_traces
    assert _is_ready(Path(python))
    pyproject = (REPO / "pyproject.toml").read_text()
    assert '"jax>=0.6"' in pyproject  # the claim this test checks; update both together


def test_every_scenario_matches_legacy_on_oldest_jax(oldest_traces):
    _, traces = oldest_traces
    mismatched = []
    for name, path in CASES:
        expected = json.loads((runner.TRACES / f"{name}.json").read_text())
        expected.pop("recorded_with")
        got = traces[(name, path)]
        if got["returncode"] != 0 or runner.comparable(got) != expected:
            mismatched.append(f"{name} [{path}] rc={got['returncode']}\n{got['stderr_tail'][-1500:]}")
    assert not mismatched, "\n\n".join(mismatched)
