"""``python -m hcmigrate_compat SCRIPT [ARGS]`` (or ``python -m compat ...``): run a legacy
host_callback program on current JAX.

Installs ``hcmigrate_compat.host_callback`` as ``jax.experimental.host_callback`` and runs
SCRIPT as ``__main__`` with ``sys.argv`` set as ``python SCRIPT ARGS`` would set it;
nothing of JAX is imported before the script's own code runs. ``... -m MODULE [ARGS]``
runs a module instead.
"""

from __future__ import annotations

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
    from hcmigrate_compat._install import install

    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            print(USAGE, file=sys.stderr)
            return 2
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    script = argv[0]
    sys.argv = [script, *argv[1:]]
    # Like `python script.py`: the script's folder comes first on sys.path.
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
