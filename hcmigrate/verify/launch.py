"""Starting one side's subprocess: `Side` (how a side is run: interpreter, script or test
folder, paths, environment), the `_runner.py` command line and environment it runs with
(pytest-xdist workers included), `subprocess_env` (the environment every verify subprocess
starts from), and killing a side's process group."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from hcmigrate.verify.leftovers import (
    SIDE_TAGS_ENV,
    descendants,
    kill_all,
    kill_leftovers,
    new_side_tag,
)
from hcmigrate.verify.stream import Watch, stream_files


RUNNER = Path(__file__).resolve().parent / "_runner.py"


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
    # --pytest: the label of a side run at the same time whose trace this one follows: a test
    # runs here once that side has run it, and only if it made host calls there (FOLLOW_ENV)
    follows: str | None = None


WORKER_DIR = Path(__file__).resolve().parent / "_worker"
WORKER_PLUGIN = "_hcmigrate_verify_worker"
FOLLOW_ENV = "HCMIGRATE_VERIFY_FOLLOW"  # (read by _pytest_plugin.py)


def stream_base(workdir: Path, side: Side, index: int) -> Path:
    """The stream a side's main process writes (its xdist workers' streams sit next to it)."""
    return workdir / f"{side.label}-{index}.jsonl"


def done_path(trace: Path) -> Path:
    """Written once a side has ended for good (no restart to come): its stream is complete."""
    return trace.with_suffix(".done")


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


def _side_env(
    side: Side, base: dict, trace_path: Path, select_file: Path | None, follow: dict | None
) -> dict:
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
        # No bytecode is written (nothing goes into the original's folder), and none of our own
        # folder is read instead of the environment's: with a PYTHONPYCACHEPREFIX every installed
        # module would be compiled afresh, and its compile-time warnings (jaxopt 0.8.3's invalid
        # escape sequences) fail the import under `filterwarnings = error`, where a plain run
        # reads the bytecode pip wrote. A prefix the environment sets is the user's and kept.
        if not env.get("PYTHONPYCACHEPREFIX"):
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        if select_file is not None:
            env["HCMIGRATE_VERIFY_SELECT"] = str(select_file)
        else:
            env.pop("HCMIGRATE_VERIFY_SELECT", None)
        if follow is not None:
            env[FOLLOW_ENV] = json.dumps(follow)
    return env


def pycache_dir() -> str:
    """Where the pytest sides' bytecode goes (in hcmigrate's cache folder)."""
    from hcmigrate.legacy_env import cache_dir

    return str(cache_dir() / "pycache")


def forget_bytecode(folder: Path) -> None:
    """Remove the cached bytecode of a folder that is going away (a run's scratch folder)."""
    prefix = os.environ.get("PYTHONPYCACHEPREFIX") or pycache_dir()
    mirror = Path(prefix) / Path(os.path.realpath(folder)).relative_to("/")
    shutil.rmtree(mirror, ignore_errors=True)


def kill_group(proc: subprocess.Popen) -> None:
    """Kill a side's process group and every process below it that left the group."""
    if proc.poll() is not None:
        return
    below = descendants(proc.pid)  # (before the side dies and they are re-parented)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    kill_all(below)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def kill_side(r: Running) -> None:
    """Kill a side's process group, and every process it started that is still alive wherever
    it went (leftovers.py): at its time limit, on Ctrl-C / SIGTERM and when the run ends."""
    kill_group(r.proc)
    kill_leftovers(set(r.tags))


def with_cpu(platforms: str) -> str:
    """JAX_PLATFORMS for a run on `platforms`, with the CPU listed after them: host callbacks
    place their operands on a CPU device, and fail on an accelerator-only run ("failed to find
    a local CPU device"). The first platform listed stays the default one."""
    names = [p.strip() for p in platforms.split(",") if p.strip()]
    return ",".join(names if "cpu" in names else [*names, "cpu"])


# verify's own switches: read by verify, never by the programs it runs. `CI` picks the original
# (the merge base, original_ref.py); a project's code reading it too (a progress bar switched off
# under CI) would run without its host calls and make the gate compare nothing.
VERIFY_SWITCHES = ("CI",)


def subprocess_env(platform: str | None = "cpu") -> dict:
    """The environment every verify subprocess starts from: the user's, with verify's own
    switches and variables taken out, and the same on both sides."""
    env = dict(os.environ)
    for name in VERIFY_SWITCHES:
        env.pop(name, None)
    if platform:
        env["JAX_PLATFORMS"] = with_cpu(platform)
    env.setdefault("PYTHONHASHSEED", "0")
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("PYTHONSTARTUP", None)
    for name in (
        "HCMIGRATE_VERIFY_TRACE",
        "HCMIGRATE_VERIFY_SELECT",
        "HCMIGRATE_VERIFY_OPTIONS",
        "HCMIGRATE_VERIFY_PARENT",
        FOLLOW_ENV,
    ):
        env.pop(name, None)  # a verify run inside a verified test suite starts afresh
    for name in [n for n in env if n.startswith("PYTEST_XDIST") or n == "PYTEST_CURRENT_TEST"]:
        # (verify run from a test of an xdist worker: its sides are not that worker's)
        env.pop(name)
    return env


@dataclass
class Running:
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
    follow: dict | None = None  # the followed side's stream and its `done` file (Side.follows)
    leader: Running | None = None  # the side followed
    tags: list[str] = field(default_factory=list)  # each attempt's SIDE_TAGS_ENV tag


def start_side(
    side,
    index,
    workdir,
    base_env,
    script_args,
    entries,
    cwd,
    *,
    select=None,
    attempt=0,
    follow=None,
):
    trace = stream_base(workdir, side, index)
    if attempt == 0:
        for old in stream_files(trace):
            old.unlink()
        done_path(trace).unlink(missing_ok=True)
    select_file = None
    chosen = select if select is not None else side.select
    args = list(script_args)
    if chosen is not None:
        select_file = workdir / f"{side.label}-{index}-select-{attempt}.txt"
        select_file.write_text("".join(t + "\n" for t in chosen), encoding="utf-8")
        args = _narrow_to_files(args, chosen)
    env = _side_env(side, base_env, trace, select_file, follow)
    tag, env[SIDE_TAGS_ENV] = new_side_tag(env)
    out = workdir / f"{side.label}-{index}-{attempt}.stdout"
    err = workdir / f"{side.label}-{index}-{attempt}.stderr"
    with open(out, "w") as fo, open(err, "w") as fe:
        proc = subprocess.Popen(
            _command(side, trace, args, entries),
            stdout=fo,
            stderr=fe,
            stdin=subprocess.DEVNULL,
            cwd=side.cwd or cwd,
            env=env,
            start_new_session=True,  # own process group: killed as a whole on timeout / Ctrl-C
        )
    now = time.monotonic()
    return Running(
        side,
        index,
        trace,
        proc,
        out,
        err,
        Watch(trace),
        now,
        last_activity=now,
        follow=follow,
        tags=[tag],
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
