"""`hcmigrate verify` as a CI gate on a project as it is: the docs' "Set up CI for your
project" walkthrough run as written on its package (a src/ layout, tqdm from PyPI, a pytest
suite), one command per side and no environment variable set; relative interpreter paths;
[tool.hcmigrate] honoured; --keep; the cached legacy environment's scripts. Real pip, real
venvs, real legacy JAX."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from cli_helpers import site_packages
from verify_helpers import hcmigrate_verify

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "verify.md"
PROJECT = REPO / "fixtures" / "verify" / "ci_project"
PKG = REPO / "fixtures" / "verify" / "pytest_pkg"


def walkthrough_commands() -> list[str]:
    section = DOC.read_text(encoding="utf-8").split("## Set up CI for your project", 1)[1]
    section = section.split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", section, re.S)


@pytest.fixture(scope="session")
def ci_python(tmp_path_factory) -> Path:
    """A CI runner's Python: a fresh venv that sees the packages of the interpreter running
    these tests (jax, and hcmigrate as CI installs it) but not the project or its dependencies.

    Not `system_site_packages`: that shows the base interpreter's packages, which are not this
    one's when the suite runs inside a virtualenv. A `.pth` file adds this interpreter's
    site folders (with their own `.pth` files, e.g. an editable install's) after the venv's."""
    env = tmp_path_factory.mktemp("ci") / "venv"
    venv.EnvBuilder(with_pip=True).create(env)
    python = env / "bin" / "python"
    purelib = site_packages(python)
    ours = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    (Path(purelib) / "_this_interpreters_packages.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in ours), encoding="utf-8"
    )
    return python


def test_the_ci_interpreter_sees_the_hcmigrate_under_test(ci_python, tmp_path):
    import hcmigrate

    seen = subprocess.run(
        [ci_python, "-c", "import hcmigrate; print(hcmigrate.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert seen.stdout.strip() == hcmigrate.__file__, seen.stdout + seen.stderr


def test_the_walkthrough_runs_as_written(ci_python, legacy_python, tmp_path):
    commands = walkthrough_commands()
    assert len(commands) == 2, commands  # one command per side
    for command in commands:
        assert not re.search(r"(^|\s)(export\s+)?[A-Z_]+=", command), command  # no env set by hand
    project = tmp_path / "ci_project"
    shutil.copytree(PROJECT, project)
    env = {**os.environ, "PATH": f"{ci_python.parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("VIRTUAL_ENV", None)
    install = subprocess.run(
        ["bash", "-c", commands[0]], cwd=project, env=env, capture_output=True, text=True
    )
    assert install.returncode == 0, install.stdout + install.stderr
    run = subprocess.run(
        ["bash", "-c", commands[1]], cwd=project, env=env, capture_output=True, text=True
    )
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    assert re.search(r"reference: legacy jax 0\.4\.30, with tqdm==4\.66\.4 ", out), out
    # (uv, a dependency of hcmigrate, resolves them as of jax 0.4.30's release)
    assert (
        "note: project dependencies resolved as of 2024-06-19, the release of jax 0.4.30 (uv "
        "--exclude-newer): tqdm==4.66.4\n"
    ) in out
    assert "note: migrated ci_project/src/stepwise/progress.py" in out
    assert (
        "note: project dependencies from: pyproject.toml [project] dependencies, "
        "pyproject.toml [project] extra 'test'\n"
    ) in out
    assert (
        "ok   tests/test_integrate.py::test_every_step_ticks_the_bar: passed, 4 host call(s)" in out
    )
    assert "EQUIVALENT: 5 test(s) (5 passed)" in out


def test_a_dependency_the_reference_lacks_is_named(legacy_python, tmp_path):
    """Without --project-deps the reference is the plain legacy environment: a dependency it
    lacks is named, with exit status 2 (could not run)."""
    project = tmp_path / "ci_project"
    shutil.copytree(PROJECT, project)
    progress = project / "src" / "stepwise" / "progress.py"
    progress.write_text(
        progress.read_text().replace("from tqdm.auto import tqdm", "import tqdm_absent_here")
    )
    res = hcmigrate_verify(project, "--pytest", "tests", "--reference", "legacy")
    assert res.returncode == 2, res.stdout + res.stderr
    assert "No module named 'tqdm_absent_here'" in res.stdout


def test_relative_reference_interpreter(legacy_python, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    relative = os.path.relpath(legacy_python, work)
    assert relative.startswith("..")
    res = hcmigrate_verify(PKG, "--pytest", "tests", "--reference", relative, cwd=work)
    assert res.returncode == 0, res.stdout + res.stderr
    missing = hcmigrate_verify(
        PKG, "--pytest", "tests", "--reference", "../nope/bin/python", cwd=work
    )
    assert missing.returncode == 2 and "no such interpreter" in missing.stdout
    assert "Traceback" not in missing.stdout + missing.stderr


def test_tool_hcmigrate_strategy_compat_is_honoured(legacy_python, tmp_path):
    project = tmp_path / "proj"
    shutil.copytree(PKG, project)
    (project / "pyproject.toml").write_text('[tool.hcmigrate]\nstrategy = "compat"\n')
    res = hcmigrate_verify(project, "--pytest", "tests", "--reference", "legacy", "--keep")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "[tool.hcmigrate] strategy = 'compat'" in res.stdout
    kept = Path(re.search(r"kept: (\S+)", res.stdout).group(1))
    try:
        migrated = (kept / "candidate" / "proj" / "simlib" / "dynamics.py").read_text()
        assert "compat" in migrated and "io_callback" not in migrated
    finally:
        shutil.rmtree(kept)


def test_keep_keeps_the_migrated_copy(tmp_path):
    script = REPO / "examples" / "mcmc_progress.py"
    res = hcmigrate_verify(script, "--keep")
    kept = Path(re.search(r"kept: (\S+)", res.stdout).group(1))
    try:
        assert res.returncode == 0, res.stdout + res.stderr
        candidate = re.search(r"migrated by the codemod \((\S+)\)", res.stdout).group(1)
        assert Path(candidate).is_file() and Path(candidate).is_relative_to(kept)
    finally:
        shutil.rmtree(kept)


def test_cached_legacy_environment_scripts_name_their_own_folder(legacy_python):
    env = legacy_python.parent.parent
    pip = (env / "bin" / "pip").read_text().splitlines()[0]
    # pip names the interpreter it was installed with: python3 when the environment was built
    # by a base interpreter, python3.11 when by a virtualenv's (venv names a copy after the base
    # executable); either is one of the environment's own
    assert re.fullmatch(rf"#!{re.escape(str(env))}/bin/python(3(\.\d+)?)?", pip), pip
    assert os.access(pip[2:], os.X_OK), pip
    assert f'VIRTUAL_ENV="{env}"' in (env / "bin" / "activate").read_text()
    ran = subprocess.run([str(env / "bin" / "pip"), "--version"], capture_output=True, text=True)
    assert ran.returncode == 0 and str(env) in ran.stdout


def test_repair_paths_rewrites_a_moved_environment(tmp_path):
    from hcmigrate.legacy_env import repair_paths

    built = tmp_path / "legacy-jax-0.4.30-py311.tmp-123"
    env = tmp_path / "legacy-jax-0.4.30-py311"
    venv.EnvBuilder(with_pip=False).create(built)
    (built / "bin" / "pip").write_text(f"#!{built}/bin/python3\nimport pip\n")
    built.rename(env)
    repair_paths(env)
    assert (env / "bin" / "pip").read_text().splitlines()[0] == f"#!{env}/bin/python3"
    assert str(built) not in (env / "bin" / "activate").read_text()


def test_candidate_interpreter_and_reference_jax_options(ci_python, legacy_python, tmp_path):
    report = tmp_path / "report.json"
    res = hcmigrate_verify(
        PKG,
        "--pytest",
        "tests",
        "--reference",
        "legacy",
        "--reference-jax",
        "0.4.30",
        "--candidate-python",
        ci_python,
        "--json",
        report,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads(report.read_text())
    assert data["sides"]["candidate"]["python"] == str(ci_python)
    assert data["sides"]["reference"]["jax"] == "0.4.30"
    wrong = hcmigrate_verify(PKG, "--pytest", "tests", "--reference-jax", "0.4.30")
    assert wrong.returncode == 2 and "use --reference legacy" in wrong.stdout
    missing = hcmigrate_verify(PKG, "--pytest", "tests", "--candidate-python", tmp_path / "nope")
    assert missing.returncode == 2 and "--candidate-python" in missing.stdout


def ci_job_commands(doc: Path) -> list[str]:
    """The hcmigrate steps (`- run: ...`) of the GitHub Actions job in `doc`."""
    job = re.search(r"```yaml\n(verify-host-callback-migration:.*?)```", doc.read_text(), re.S)
    runs = re.findall(r"^\s*- run: (.*)$", job.group(1), re.M)
    runs = [re.sub(r"\s+#.*$", "", run) for run in runs]
    return [run for run in runs if run.startswith(("hcmigrate ", "python -m hcmigrate "))]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture
def migration_pull_request(tmp_path) -> Path:
    """A git repository as a migration pull request leaves it: `main` holds the legacy
    project (ci_project), the checked-out branch its migration by the codemod."""
    repo = tmp_path / "ci_project"
    shutil.copytree(PROJECT, repo)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "legacy")
    _git(repo, "checkout", "-q", "-b", "migrate-off-host-callback")
    # the pull request raises the pin to a JAX the migrated code runs on (HCB008 otherwise)
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('"jax>=0.4.20"', '"jax>=0.4.26"'))
    migrated = subprocess.run(
        [sys.executable, "-m", "hcmigrate", "src", "tests"], cwd=repo, capture_output=True
    )
    assert migrated.returncode == 0, migrated.stdout
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "migrate")
    return repo


def _run_job(commands: list[str], repo: Path) -> list[subprocess.CompletedProcess]:
    """The job's steps as a CI service runs them: `CI=true`, this interpreter first on PATH."""
    env = {**os.environ, "CI": "true"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return [
        subprocess.run(["bash", "-c", c], cwd=repo, env=env, capture_output=True, text=True)
        for c in commands
    ]


def test_the_ci_job_verifies_the_migration_pull_request_against_its_base(
    migration_pull_request, legacy_python
):
    repo = migration_pull_request
    commands = ci_job_commands(DOC)
    assert commands == ci_job_commands(REPO / "README.md")  # one job, documented twice
    assert commands[-1].startswith("python -m hcmigrate verify . --pytest . ")
    base = _git(repo, "rev-parse", "main")
    check, run = _run_job(commands, repo)
    assert check.returncode == 0, check.stdout + check.stderr
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    assert f"note: original: . at {base[:12]} (CI: the merge base with main)" in out, out
    assert "migrated by the codemod" not in out  # the candidate is the pull request's code
    assert "EQUIVALENT: 5 test(s) (5 passed)" in out, out
    assert json.loads((repo / "verify.json").read_text())["verdict"] == "equivalent"


def test_the_ci_job_refuses_a_base_with_no_legacy_use(migration_pull_request):
    """Once the migration is merged, the base has nothing left to verify: exit 2, one line,
    not a green comparison of the migrated code with itself."""
    repo = migration_pull_request
    _git(repo, "checkout", "-q", "main")
    _git(repo, "merge", "-q", "--ff-only", "migrate-off-host-callback")
    _git(repo, "checkout", "-q", "-b", "later-change")
    (repo / "NOTES.md").write_text("a later change\n")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", "NOTES.md")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "later")
    check, run = _run_job(ci_job_commands(DOC), repo)
    assert check.returncode == 0, check.stdout + check.stderr
    assert run.returncode == 2, run.stdout + run.stderr
    refusal = [line for line in run.stdout.splitlines() if line.startswith("COULD NOT RUN")]
    assert refusal == [
        f"COULD NOT RUN: . at {_git(repo, 'rev-parse', 'main')[:12]}: the original does not use jax.experimental.host_callback, so "
        "there is nothing to verify (an already-migrated tree compares with itself); take the "
        "original from the code before the migration: --original-ref REF"
    ], run.stdout
    assert "EQUIVALENT" not in run.stdout and "Traceback" not in run.stderr
