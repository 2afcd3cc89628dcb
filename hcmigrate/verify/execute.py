"""Run the reference and the candidate, each in its own subprocess, and collect their traces."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from hcmigrate.verify.stream import Watch, read_trace, stream_files

RUNNER = Path(__file__).resolve().parent / "_runner.py"
SKIP_DIRS = {
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    ".venv",
    "venv",
    "env",
    ".tox",
    ".nox",
    "build",
    "dist",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    "node_modules",
    ".ipynb_checkpoints",
}


class CannotRun(Exception):
    """Verification could not run (exit status 2); the message says why."""


@dataclass
class Side:
    """How one side is run."""

    label: str  # "reference" | "candidate"
    python: str
    script: Path
    install_compat: bool = False
    compat_dir: str | None = None
    extra_paths: list[str] = field(default_factory=list)
    description: str = ""
    pytest: bool = False  # script is the root folder; script_args are pytest arguments
    append_paths: list[str] = field(
        default_factory=list
    )  # sys.path entries added last (shared pytest)
    cwd: str | None = None
    env: dict = field(default_factory=dict)  # extra environment (e.g. JAX_* configuration)
    select: list[str] | None = None  # --pytest: run only these test ids
    no_file: bool = False  # run without __file__ (a notebook's cells)


@dataclass
class RunResult:
    side: Side
    trace: dict | None
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    def why_no_trace(self) -> str:
        if self.timed_out:
            return f"the {self.side.label} run timed out after {self.seconds:.0f} s (process group killed)"
        tail = "\n".join(self.stderr.strip().splitlines()[-15:])
        return f"the {self.side.label} run exited with status {self.returncode} without writing a trace:\n{tail}"


WORKER_DIR = Path(__file__).resolve().parent / "_worker"
WORKER_PLUGIN = "_hcmigrate_verify_worker"


def _command(side: Side, trace_path: Path, script_args: list[str], entries: list[str]) -> list:
    cmd = [side.python, str(RUNNER), "--trace", str(trace_path), "--side", side.label]
    for e in entries:
        cmd += ["--entry", e]
    if side.install_compat:
        cmd.append("--install-compat")
    if side.compat_dir:
        cmd += ["--compat-dir", side.compat_dir]
    for p in side.extra_paths:
        cmd += ["--path", p]
    for p in side.append_paths:
        cmd += ["--append-path", p]
    if side.pytest:
        cmd.append("--pytest")
    if side.no_file:
        cmd.append("--no-file")
    return [*cmd, str(side.script), "--", *script_args]


def _side_env(side: Side, base: dict, trace_path: Path, select_file: Path | None) -> dict:
    env = {**base, **side.env}
    if side.pytest:
        # pytest-xdist workers record too: they load the worker plugin by name, from a folder
        # holding nothing else; the package's own paths go on PYTHONPATH so workers see them.
        paths = [*side.extra_paths, str(WORKER_DIR)]
        if env.get("PYTHONPATH"):
            paths.append(env["PYTHONPATH"])
        env["PYTHONPATH"] = os.pathsep.join(paths)
        plugins = [p for p in env.get("PYTEST_PLUGINS", "").split(",") if p.strip()]
        env["PYTEST_PLUGINS"] = ",".join([*plugins, WORKER_PLUGIN])
        env["HCMIGRATE_VERIFY_TRACE"] = str(trace_path)
        env["HCMIGRATE_VERIFY_OPTIONS"] = json.dumps(
            {
                "side": side.label,
                "compat_dir": side.compat_dir,
                "install_compat": side.install_compat,
            }
        )
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # never write into the original's folder
        if select_file is not None:
            env["HCMIGRATE_VERIFY_SELECT"] = str(select_file)
        else:
            env.pop("HCMIGRATE_VERIFY_SELECT", None)
    return env


def _kill_group(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def subprocess_env(platform: str | None = "cpu") -> dict:
    env = dict(os.environ)
    if platform:
        env["JAX_PLATFORMS"] = platform
    env.setdefault("PYTHONHASHSEED", "0")
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("PYTHONSTARTUP", None)
    for name in (
        "HCMIGRATE_VERIFY_TRACE",
        "HCMIGRATE_VERIFY_SELECT",
        "HCMIGRATE_VERIFY_OPTIONS",
        "HCMIGRATE_VERIFY_PARENT",
    ):
        env.pop(name, None)  # a verify run inside a verified test suite starts afresh
    for name in [n for n in env if n.startswith("PYTEST_XDIST") or n == "PYTEST_CURRENT_TEST"]:
        # (verify run from a test of an xdist worker: its sides are not that worker's)
        env.pop(name)
    return env


@dataclass
class _Running:
    side: Side
    index: int
    trace_path: Path
    proc: subprocess.Popen
    out: Path
    err: Path
    watch: Watch
    started: float
    timed_out: bool = False
    timed_out_tests: dict = field(default_factory=dict)  # nodeid -> seconds
    died: dict = field(default_factory=dict)  # nodeid -> exit status of the process running it
    last_activity: float = 0.0
    restarts: int = 0


MAX_RESTARTS = 5  # a --pytest side that dies in a test goes on with the tests left, this often


def run_sides(
    sides: list[Side],
    *,
    script_args: list[str],
    entries: list[str],
    timeout: float,
    workdir: Path,
    cwd: str | None = None,
    platform: str | None = "cpu",
    progress: Callable[[dict], None] | None = None,
) -> list[RunResult]:
    """Run the sides concurrently (each in its own process group) and read their traces.

    Script mode: `timeout` limits each whole run. `--pytest`: it limits each test (a test still
    running after it is killed, with its process, and reported as timed out) and any stretch
    without progress (collection, start-up); when a side's process dies in a test, it starts
    again on the tests not run yet, so every other test still gets its verdict."""
    base_env = subprocess_env(platform)
    running: list[_Running] = []
    try:
        for i, side in enumerate(sides):
            running.append(_start(side, i, workdir, base_env, script_args, entries, cwd))
        _wait(running, timeout, workdir, base_env, script_args, entries, cwd, progress)
        return [_result(r) for r in running]
    finally:  # Ctrl-C or any error: no stray process groups
        for r in running:
            _kill_group(r.proc)


def _start(side, index, workdir, base_env, script_args, entries, cwd, *, select=None, attempt=0):
    trace_path = workdir / f"{side.label}-{index}.jsonl"
    if attempt == 0:
        for old in stream_files(trace_path):
            old.unlink()
    select_file = None
    chosen = select if select is not None else side.select
    args = list(script_args)
    if chosen is not None:
        select_file = workdir / f"{side.label}-{index}-select-{attempt}.txt"
        select_file.write_text("".join(t + "\n" for t in chosen), encoding="utf-8")
        args = _narrow_to_files(args, chosen)
    out = workdir / f"{side.label}-{index}-{attempt}.stdout"
    err = workdir / f"{side.label}-{index}-{attempt}.stderr"
    with open(out, "w") as fo, open(err, "w") as fe:
        proc = subprocess.Popen(
            _command(side, trace_path, args, entries),
            stdout=fo,
            stderr=fe,
            stdin=subprocess.DEVNULL,
            cwd=side.cwd or cwd,
            env=_side_env(side, base_env, trace_path, select_file),
            start_new_session=True,  # own process group: killed as a whole on timeout / Ctrl-C
        )
    now = time.monotonic()
    return _Running(
        side, index, trace_path, proc, out, err, Watch(trace_path), now, last_activity=now
    )


def _narrow_to_files(pytest_args: list[str], nodeids: list[str]) -> list[str]:
    """Collect only the files the chosen tests are in: the first argument (the TESTS path
    verify was given) becomes those files, when it is a folder or file containing them."""
    if not pytest_args or not nodeids:
        return pytest_args
    files = sorted({t.split("::", 1)[0] for t in nodeids})
    first = pytest_args[0].split("::", 1)[0].rstrip("/")
    if all(f == first or f.startswith(first + "/") for f in files):
        return [*files, *pytest_args[1:]]
    return pytest_args


def _wait(running, timeout, workdir, base_env, script_args, entries, cwd, progress) -> None:
    while True:
        alive = 0
        now = time.monotonic()
        for r in running:
            if r.side.pytest:
                before = (len(r.watch.finished), len(r.watch.running), len(r.watch.collected))
                r.watch.poll()
                if (len(r.watch.finished), len(r.watch.running), len(r.watch.collected)) != before:
                    r.last_activity = now
            if r.proc.poll() is None:
                alive += 1
                if r.side.pytest:
                    _enforce_test_timeout(r, timeout, now)
                elif now - r.started > timeout:
                    r.timed_out = True
                    _kill_group(r.proc)
                continue
            if r.side.pytest and _restart_needed(r):
                remaining = [
                    t for t in _collected_order(r) if t not in r.watch.finished and t not in r.died
                ]
                if remaining and r.restarts < MAX_RESTARTS:
                    r.restarts += 1
                    fresh = _start(
                        r.side,
                        r.index,
                        workdir,
                        base_env,
                        script_args,
                        entries,
                        cwd,
                        select=remaining,
                        attempt=r.restarts,
                    )
                    r.proc, r.out, r.err, r.last_activity = (
                        fresh.proc,
                        fresh.out,
                        fresh.err,
                        time.monotonic(),
                    )
                    alive += 1
        if progress is not None:
            for r in running:
                if r.side.pytest:
                    progress(
                        {
                            "side": r.side.label,
                            "finished": len(r.watch.finished),
                            "total": len(r.watch.collected),
                            "running": sorted(r.watch.running),
                            "seconds": now - r.started,
                        }
                    )
        if not alive:
            return
        time.sleep(0.2)


def _collected_order(r: _Running) -> list[str]:
    trace = read_trace(r.trace_path) or {}
    return trace.get("collected", [])


def _restart_needed(r: _Running) -> bool:
    """The side's main process died (killed, crashed) while tests were running."""
    trace = read_trace(r.trace_path)
    if trace is None:
        return False
    unfinished = [u["nodeid"] for u in trace.get("unfinished", [])]
    new = [t for t in unfinished if t not in r.died]
    if not new or _ended_last_attempt(r.trace_path):
        return False
    for nodeid in new:
        r.died[nodeid] = r.proc.returncode
    return True


def _ended_last_attempt(base: Path) -> bool:
    """Did the main process's last run end normally (an `end` after its last `start`)?"""
    last = None
    try:
        lines = base.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return False
    for line in lines:
        try:
            kind = json.loads(line).get("t")
        except ValueError:
            continue
        if kind in ("start", "end"):
            last = kind
    return last == "end"


def _enforce_test_timeout(r: _Running, timeout: float, now: float) -> None:
    wall = time.time()
    for nodeid, (pid, since) in list(r.watch.running.items()):
        if since is not None and wall - since > timeout and nodeid not in r.timed_out_tests:
            r.timed_out_tests[nodeid] = round(wall - since)
            if pid is not None and pid != r.proc.pid:
                try:  # a pytest-xdist worker: xdist replaces it and goes on
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            else:
                _kill_group(r.proc)
    if not r.watch.running and now - r.last_activity > timeout:
        r.timed_out = True  # no test running and nothing happening: start-up or collection hangs
        _kill_group(r.proc)


def _result(r: _Running) -> RunResult:
    trace = read_trace(r.trace_path)
    seconds = time.monotonic() - r.started
    if trace is not None and not r.side.pytest and not trace.get("complete"):
        trace = None  # a script that did not finish has no verdict
    if trace is not None and r.side.pytest:
        _note_unfinished(trace, r)
        if not trace.get("complete") and not trace.get("tests") and not r.timed_out:
            trace = None
    return RunResult(
        r.side,
        trace,
        r.proc.returncode,
        _read(r.out),
        _read(r.err),
        seconds,
        r.timed_out and (trace is None or not trace.get("tests")),
    )


def _note_unfinished(trace: dict, r: _Running) -> None:
    """Tests a killed or crashed process was running become results of their own."""
    for u in trace.pop("unfinished", []):
        nodeid = u["nodeid"]
        if nodeid in r.timed_out_tests:
            outcome = "timeout"
            message = f"timed out after {r.timed_out_tests[nodeid]} s (its process was killed)"
        else:
            outcome = "crashed"
            status = r.died.get(nodeid, r.proc.returncode)
            message = f"the {r.side.label} process running it died" + (
                f" (exit status {status})" if status is not None else ""
            )
        trace.setdefault("tests", []).append(
            {"nodeid": nodeid, "outcome": outcome, "message": message, "phases": {}, "stdout": ""}
        )
    trace["restarts"] = r.restarts


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


# ---------------------------------------------------------------------------------------
# Reference interpreters


def project_compat_dir() -> str | None:
    """The compat package shipped next to hcmigrate (None when not there)."""
    d = Path(__file__).resolve().parent.parent.parent / "compat"
    return str(d) if (d / "__init__.py").is_file() else None


def resolve_reference(
    reference: str,
    progress=None,
    *,
    jax_version: str | None = None,
    requirements: list[str] | None = None,
) -> tuple[str, bool, str]:
    """(python, install_compat, description) for --reference compat|legacy|PATH.

    `legacy` is the cached JAX `jax_version` environment (0.4.30 by default); with
    `requirements` (the project's own dependencies), the cached environment that also has
    them. A PATH may be relative to the working folder."""
    if reference == "compat":
        compat_dir = project_compat_dir()
        code = "import compat, sys; compat.install; import compat.host_callback"
        if compat_dir:
            code = (
                "import importlib.util, sys; s = importlib.util.spec_from_file_location('compat', "
                f"{str(Path(compat_dir) / '__init__.py')!r}, submodule_search_locations=[{compat_dir!r}]); "
                "m = importlib.util.module_from_spec(s); sys.modules['compat'] = m; s.loader.exec_module(m); "
                + code
            )
        probe = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env()
        )
        if probe.returncode != 0:
            tail = "\n".join(probe.stderr.strip().splitlines()[-3:])
            raise CannotRun(
                f"--reference compat: the compat runtime is not importable in {sys.executable}:\n{tail}\n"
                "(use --reference legacy to run the original on real jax 0.4.30)"
            )
        return sys.executable, True, f"compat runtime on {sys.executable}"
    if reference == "legacy":
        from hcmigrate.legacy_env import (
            LEGACY_JAX_VERSION,
            LegacyEnvError,
            legacy_python,
            project_env_python,
        )

        version = jax_version or LEGACY_JAX_VERSION
        try:
            if requirements:
                python = project_env_python(requirements, version, progress)
            else:
                python = legacy_python(progress, version)
        except LegacyEnvError as e:
            raise CannotRun(f"--reference legacy: {e}") from None
        deps = f", with {', '.join(requirements)}" if requirements else ""
        return str(python), False, f"legacy jax {version}{deps} ({python})"
    path = os.path.abspath(shutil.which(reference) or reference)  # never resolve: a venv's
    # python is a symlink whose own folder says which environment it is
    if not os.path.exists(path):
        raise CannotRun(
            f"--reference {reference}: no such interpreter (expected compat, legacy or a path to python)"
        )
    probe = subprocess.run(
        [path, "-c", "import jax, numpy, sys; sys.stdout.write(jax.__version__)"],
        capture_output=True,
        text=True,
        env=subprocess_env(),
    )
    if probe.returncode != 0:
        raise CannotRun(
            f"--reference {reference}: cannot import jax and numpy there:\n{probe.stderr.strip()[-500:]}"
        )
    return path, False, f"jax {probe.stdout.strip()} ({path})"


# ---------------------------------------------------------------------------------------
# pytest on each side (--pytest)


def _xdist_version() -> str | None:
    """pytest-xdist's version in this interpreter (None when not installed)."""
    try:
        from importlib.metadata import version

        return version("pytest-xdist")
    except Exception:
        return None


def uses_xdist(pytest_args: list[str]) -> bool:
    """Do these pytest arguments ask for pytest-xdist workers (`-n N`, `--numprocesses`, ...)?"""
    return any(
        a in ("-n", "--numprocesses", "--dist", "-d") or a.startswith(("-n", "--numprocesses="))
        for a in pytest_args
    )


def _probe_pytest(python: str, xdist: bool = False) -> str | None:
    """The pytest version importable by `python` (with pytest-xdist if asked), or None."""
    check = "import xdist; " if xdist else ""
    probe = subprocess.run(
        [python, "-c", f"import sys, pytest; {check}sys.stdout.write(pytest.__version__)"],
        capture_output=True,
        text=True,
        env=subprocess_env(),
    )
    return probe.stdout.strip() if probe.returncode == 0 and probe.stdout.strip() else None


def _current_pytest_version() -> str:
    try:
        from importlib.metadata import version

        return version("pytest")
    except Exception:
        raise CannotRun(
            f"--pytest: pytest is not installed in {sys.executable} (pip install pytest)"
        ) from None


def pytest_paths(
    python: str, *, may_install: bool, progress=None, xdist: bool = False
) -> tuple[list[str], str | None]:
    """Make pytest available to `python` for --pytest; returns (sys.path entries to append, note).

    1. pytest already importable there: nothing to do.
    2. `may_install` (the cached legacy venv, which hcmigrate owns): `pip install pytest==V`
       into it once, V being this interpreter's pytest version (both sides run the same pytest),
       with a progress message.
    3. pip failed (offline) or the interpreter is not ours: when it runs the same Python
       version as this one, share this interpreter's pytest (pure Python) through a cached
       folder holding only pytest and its dependencies, appended to sys.path.
    Otherwise: cannot run, with what to install.
    """
    xdist = xdist and _xdist_version() is not None
    if _probe_pytest(python, xdist):
        return [], None
    wanted = _current_pytest_version()
    say = progress or (lambda message: print(message, file=sys.stderr, flush=True))
    pip_error = ""
    if may_install:
        say(
            f"hcmigrate: installing pytest=={wanted} into the reference environment for --pytest ({python}; one time)"
        )
        install = subprocess.run(
            [
                python,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                f"pytest=={wanted}",
                *([f"pytest-xdist=={_xdist_version()}"] if xdist else []),
            ],
            capture_output=True,
            text=True,
            env=subprocess_env(),
        )
        if install.returncode == 0 and _probe_pytest(python, xdist):
            say("hcmigrate: pytest installed in the reference environment")
            return [], f"installed pytest {wanted} into {python}"
        pip_error = "\n".join(install.stderr.strip().splitlines()[-3:])
    version = subprocess.run(
        [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        env=subprocess_env(),
    ).stdout.strip()
    ours = "%d.%d" % sys.version_info[:2]
    if version == ours:
        shared = shared_pytest_dir()
        if pip_error:
            say(
                f"hcmigrate: pip could not install pytest ({pip_error.splitlines()[-1] if pip_error else ''}); "
                f"sharing pytest {wanted} from {sys.executable} instead"
            )
        probe = subprocess.run(
            [python, "-c", f"import sys; sys.path.append({shared!r}); import pytest"],
            capture_output=True,
            text=True,
            env=subprocess_env(),
        )
        if probe.returncode == 0:
            return [shared], f"pytest {wanted} shared from {sys.executable} ({shared})"
    raise CannotRun(
        f"--pytest: pytest is not importable by the reference interpreter {python} and could not be "
        f"provided ({'pip: ' + pip_error if pip_error else 'Python ' + (version or '?') + ' there, ' + ours + ' here'}); "
        f"install it there: {python} -m pip install pytest=={wanted}"
    )


def _pytest_distributions() -> list:
    """pytest and its (recursive) runtime dependencies in this interpreter, as distributions."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        from packaging.requirements import Requirement
    except ImportError:  # pragma: no cover - pytest depends on packaging
        Requirement = None
    seen: dict[str, object] = {}
    todo = ["pytest"]
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue
        seen[name] = dist
        for req in dist.requires or []:
            if Requirement is None:
                continue
            r = Requirement(req)
            if r.marker is None or r.marker.evaluate({"extra": ""}):
                todo.append(r.name)
    return list(seen.values())


def shared_pytest_dir(base: Path | None = None) -> str:
    """A cached folder with copies of this interpreter's pytest and its dependencies (top-level
    modules/packages only: no site-packages, so no other package can leak into the reference)."""
    from hcmigrate.legacy_env import cache_dir

    dists = _pytest_distributions()
    version = next((d.version for d in dists if d.metadata["Name"].lower() == "pytest"), "0")
    target = (
        base or cache_dir()
    ) / f"shared-pytest-{version}-py{sys.version_info.major}{sys.version_info.minor}"
    if (target / ".complete").exists():
        return str(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".shared-pytest-", dir=str(target.parent)))
    try:
        for dist in dists:
            tops = set()
            for f in dist.files or []:
                parts = Path(str(f)).parts
                if (
                    not parts
                    or parts[0] == ".."
                    or parts[0].endswith((".dist-info", ".egg-info"))
                    or parts[0] == "__pycache__"
                ):
                    continue
                tops.add(parts[0])
            for top in sorted(tops):
                src = Path(dist.locate_file(top))
                if src.is_dir():
                    shutil.copytree(
                        src,
                        tmp / top,
                        dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"),
                    )
                elif src.is_file() and src.suffix == ".py":
                    shutil.copy2(src, tmp / top)
        (tmp / ".complete").write_text(version, encoding="utf-8")
        try:
            os.replace(tmp, target)
        except OSError:  # another process made it first
            if not (target / ".complete").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return str(target)


PYTEST_CONFIG_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def pytest_config(root: Path) -> str | None:
    """The package's own pytest configuration file (name relative to root), if it has one."""
    markers = {
        "pytest.ini": None,
        ".pytest.ini": None,
        "pyproject.toml": "[tool.pytest",
        "tox.ini": "[pytest]",
        "setup.cfg": "[tool:pytest]",
    }
    for name in PYTEST_CONFIG_FILES:
        p = root / name
        if p.is_file():
            marker = markers[name]
            if marker is None or marker in p.read_text(encoding="utf-8", errors="replace"):
                return name
    return None


# ---------------------------------------------------------------------------------------
# Originals, entry points and candidates


def find_entry(folder: Path, entry_file: str | None = None) -> Path:
    if entry_file:
        p = folder / entry_file
        if not p.is_file():
            raise CannotRun(f"entry file {entry_file} not found in {folder}")
        return p
    for name in ("__main__.py", "main.py"):
        if (folder / name).is_file():
            return folder / name
    guarded = [
        p
        for p in sorted(folder.glob("*.py"))
        if "__name__" in (t := p.read_text(encoding="utf-8", errors="replace")) and "__main__" in t
    ]
    if len(guarded) == 1:
        return guarded[0]
    if not guarded:
        raise CannotRun(
            f'{folder}: no entry point (no __main__.py, main.py or file with `if __name__ == "__main__":`); '
            "pass --entry-file"
        )
    raise CannotRun(
        f"{folder}: several possible entry points ({', '.join(p.name for p in guarded)}); pass --entry-file"
    )


def _copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(
        src,
        dst,
        ignore=lambda d, names: [n for n in names if n in SKIP_DIRS or n.endswith(".egg-info")],
    )


def migrate_copy(original: Path, workdir: Path, options=None) -> tuple[Path, list[str]]:
    """Migrate a temporary copy with the codemod (`options`: the project's [tool.hcmigrate],
    e.g. strategy = "compat"); .py files and notebooks. Returns (copy, notes)."""
    try:
        from hcmigrate.api import MigrationError, Options, migrate_source
        from hcmigrate.notebook import NotebookError, migrate_notebook
    except ImportError as e:  # pragma: no cover - only while the codemod is missing
        raise CannotRun(f"the codemod is not available ({e}); pass --candidate MIGRATED") from None
    options = options or Options()
    dest = workdir / "candidate"
    if original.is_dir():
        _copy_tree(original, dest / original.name)
        root = dest / original.name
        files = sorted([*root.rglob("*.py"), *root.rglob("*.ipynb")])
    else:
        root = dest
        root.mkdir(parents=True, exist_ok=True)
        shutil.copy2(original, root / original.name)
        files = [root / original.name]
    notes = []
    for f in files:
        text = f.read_text(encoding="utf-8")
        shown = f.relative_to(root.parent) if original.is_dir() else f.name
        try:
            if f.suffix == ".ipynb":
                result = migrate_notebook(text, options, filename=str(f))
            else:
                result = migrate_source(text, options, filename=str(f))
        except NotebookError as e:
            raise CannotRun(f"the codemod could not migrate {shown}: {e.message}") from None
        except MigrationError as e:
            raise CannotRun(
                f"the codemod could not migrate {shown}: {e.message} (line {e.line})"
            ) from None
        if result.changed:
            f.write_text(result.code, encoding="utf-8")
            notes.append(f"migrated {shown}")
        for d in result.diagnostics:
            if d.level.needs_human:
                notes.append(f"codemod left for a human: {d.format(str(shown))}")
    return (root if original.is_dir() else root / original.name), notes


@contextlib.contextmanager
def scratch_folder(keep: bool = False) -> Iterator[Path]:
    """A private scratch folder for one verify run (traces, migrated copy), removed afterwards
    whatever happens (unless `keep`, for --keep: the report's candidate paths stay valid):
    every caller goes through here so no run leaves a folder in the temp dir."""
    path = Path(tempfile.mkdtemp(prefix="hcmigrate-verify-"))
    try:
        yield path
    finally:
        if not keep:
            shutil.rmtree(path, ignore_errors=True)
