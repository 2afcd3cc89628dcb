"""Run many ``python -m MODULE ARGS`` commands as children forked by one interpreter that
imported their heavy modules once.

The test suite starts hundreds of short programs whose imports (JAX: about a second of CPU;
hcmigrate's codemod with libcst: as much) cost more than their work. This process imports the
``preload`` modules (nothing that reads a run's own settings: callers choose them so) and then
forks one child per run. Each child is its own process as ``python -m MODULE ARGS`` would be:
its own environment, folder, stdin (empty), stdout and stderr files, exit status, and all that
happens after the imports (an XLA backend created after the fork reads the child's
``XLA_FLAGS``). Used by fixtures/compat_runtime/runner.py (compat trace scenarios, preloading
``jax``) and scripts/check_fidelity.py (the ``hcmigrate`` command, preloading the codemod).

    run_forked(python, runs, preload=[...])     # from Python: CompletedProcess for each run
    python forked_runs.py < request.json > statuses.json

request: ``{"preload": [MODULE...], "not_preloaded": [MODULE...], "jobs": N, "runs": [{"cwd",
"env", "module", "args", "stdout", "stderr", "timeout"}...]}`` (``not_preloaded``: modules the
runs must import themselves; the request fails if preloading imported one). Answer: the list
of exit statuses (negative: killed by that signal, as subprocess says; a run past its timeout
is killed).
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import runpy
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path


def run_forked(
    python: str,
    runs: list[dict],
    *,
    preload: list[str],
    not_preloaded: list[str] = (),
    env: dict,
    jobs: int = 2,
) -> list[subprocess.CompletedProcess]:
    """Each run (``{"cwd", "env", "module", "args", "timeout"}``) as ``python -m MODULE ARGS``
    in ``cwd`` with ``env``, forked by one ``python`` that started with ``env`` and imported
    ``preload``: what ``subprocess.run(..., capture_output=True, text=True)`` would give."""
    with tempfile.TemporaryDirectory() as tmp:
        request = {"preload": list(preload), "not_preloaded": list(not_preloaded), "jobs": jobs}
        request["runs"] = [
            {
                **run,
                "stdout": os.path.join(tmp, f"{i}.out"),
                "stderr": os.path.join(tmp, f"{i}.err"),
            }
            for i, run in enumerate(runs)
        ]
        server = subprocess.run(
            [python, os.path.abspath(__file__)],
            input=json.dumps(request),
            env=env,
            capture_output=True,
            text=True,
            timeout=sum(run["timeout"] for run in runs) + 300,
        )
        if server.returncode != 0:
            raise RuntimeError(f"forked_runs.py failed:\n{server.stderr[-3000:]}")
        done = []
        for run, status in zip(request["runs"], json.loads(server.stdout)):
            out, err = (
                Path(run[key]).read_text(encoding="utf-8", errors="replace")
                for key in ("stdout", "stderr")
            )
            done.append(
                subprocess.CompletedProcess(["-m", run["module"], *run["args"]], status, out, err)
            )
        return done


def _child(run: dict) -> int:
    """Be ``python -m MODULE ARGS`` (in a forked child); its exit status."""
    os.chdir(run["cwd"])
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    for fd, path in ((1, run["stdout"]), (2, run["stderr"])):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
    os.environ.clear()
    os.environ.update(run["env"])
    sys.argv = ["-m", *run["args"]]  # (runpy puts the module's file first)
    sys.path[0] = run["cwd"]  # `python -m` puts the current folder first
    status = 0
    try:
        runpy.run_module(run["module"], run_name="__main__", alter_sys=True)
    except SystemExit as exc:  # as the interpreter reads sys.exit()'s argument
        if exc.code is None:
            status = 0
        elif isinstance(exc.code, int):
            status = exc.code
        else:
            print(exc.code, file=sys.stderr)
            status = 1
    except BaseException:
        traceback.print_exc()
        status = 1
    # What the interpreter does on its way out: wait for threads, run atexit, flush.
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    return status


def _start(run: dict) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            status = _child(run)
        finally:
            os._exit(status & 0xFF)
    return pid


def main() -> int:
    request = json.load(sys.stdin)
    for module in request["preload"]:
        importlib.import_module(module)
    preloaded = sorted(set(request.get("not_preloaded", [])) & set(sys.modules))
    if preloaded:
        print(f"forked_runs: preloading imported {preloaded}", file=sys.stderr)
        return 2
    runs = request["runs"]
    statuses: list[int | None] = [None] * len(runs)
    running: dict[int, tuple[int, float]] = {}  # pid -> (index, deadline)
    pending = list(range(len(runs)))
    while pending or running:
        while pending and len(running) < request["jobs"]:
            i = pending.pop(0)
            running[_start(runs[i])] = (i, time.monotonic() + runs[i]["timeout"])
        pid, wait_status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            for late, (_, deadline) in running.items():
                if time.monotonic() > deadline:
                    os.kill(late, signal.SIGKILL)
            time.sleep(0.02)
            continue
        i, _ = running.pop(pid)
        statuses[i] = os.waitstatus_to_exitcode(wait_status)
    json.dump(statuses, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
