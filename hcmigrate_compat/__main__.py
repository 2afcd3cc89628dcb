"""``python -m hcmigrate_compat SCRIPT [ARGS]`` (or ``python -m compat ...``): run a legacy
host_callback program on current JAX.

Installs ``hcmigrate_compat.host_callback`` as ``jax.experimental.host_callback`` and runs
SCRIPT as ``__main__`` with ``sys.argv`` set as ``python SCRIPT ARGS`` would set it;
nothing of JAX is imported before the script's own code runs. ``... -m MODULE [ARGS]``
runs a module instead.
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys

USAGE = (
    "usage: python -m hcmigrate_compat SCRIPT [ARGS...] | python -m hcmigrate_compat -m MODULE "
    "[ARGS...]  (python -m compat ... is the same)"
)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    from hcmigrate_compat import _interrupt
    from hcmigrate_compat._install import install

    install()
    _interrupt.install()  # (Ctrl-C ends the run even while JAX waits on a host callback)
    if argv[0] == "-m":
        if len(argv) < 2:
            print(USAGE, file=sys.stderr)
            return 2
        sys.argv = [argv[1], *argv[2:]]
        try:
            spec = importlib.util.find_spec(argv[1])
        except (ImportError, ValueError):
            spec = None
        if spec is None:  # as `python -m missing` says it (status 1)
            print(f"{sys.executable}: No module named {argv[1]}", file=sys.stderr)
            return 1
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    script = argv[0]
    problem = _cannot_open(script)
    if problem is not None:  # one line, as `python missing.py` says it (status 2; 1 for a folder)
        print(f"{sys.executable}: {problem}", file=sys.stderr)
        return 1 if os.path.isdir(script) else 2
    sys.argv = [script, *argv[1:]]
    # Like `python script.py`: the script's folder comes first on sys.path.
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
    return 0


def _cannot_open(script: str) -> str | None:
    """Why Python could not run `script` (its own words), or None. A folder with a __main__.py
    is runpy's to run."""
    if os.path.isdir(script):
        if os.path.exists(os.path.join(script, "__main__.py")):
            return None
        return f"can't find '__main__' module in {os.path.abspath(script)!r}"
    try:
        with open(script, "rb"):
            pass
    except OSError as exc:
        return f"can't open file {os.path.abspath(script)!r}: [Errno {exc.errno}] {exc.strerror}"
    return None


if __name__ == "__main__":
    sys.exit(main())
