"""The project's dependencies resolved as they could have been installed beside the legacy JAX
(`--project-deps`): with an upload-date bound, the day after that JAX's release, so the
reference gets pyarrow 16 rather than today's pyarrow that needs numpy 2 (an environment that
never existed). uv's `uv pip compile --exclude-newer DATE` does it (pip 23 has no such
option): hcmigrate depends on uv, whose wheel carries its binary; without it (an install
that left it out: then uv on PATH), or for a JAX with no date here, pip picks the newest
releases that fit the pins, and a note says so."""

from __future__ import annotations

import datetime
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from hcmigrate.verify.launch import subprocess_env

# The day after each legacy JAX's jaxlib reached PyPI (measured: `uv pip compile` finds
# jaxlib==0.4.30 with --exclude-newer 2024-06-19 and not with 2024-06-17; jaxlib==0.4.25 with
# 2024-02-26 and not 2024-02-25; jaxlib==0.4.23 with 2023-12-15 and not 2023-12-13). These are
# the legacy JAX versions the reference may run: hcmigrate.verify.reference_jax picks one by the
# original's commit day and the removed APIs it uses (0.4.25: the last whose host_callback does
# not warn; 0.4.23: the last with `jax.random.PRNGKeyArray`).
# 0.4.13 (released 2023-06-22, JAX's changelog; this index dates its jaxlib upload 2025, so it is
# not measured that way): the newest JAX before 0.4.16's removals (`jnp.alltrue`,
# `jnp.DeviceArray`, ...) with jaxlib wheels for Python 3.11 (0.4.14 to 0.4.17 have none),
# taken only for an original that uses one of those (DATED_REFERENCES below).
ERA_END = {
    "0.4.13": "2023-06-23",
    "0.4.23": "2023-12-15",
    "0.4.25": "2024-02-26",
    "0.4.30": "2024-06-19",
}
# The references the commit day picks from: the date rule keeps the original clear of warnings
# newer JAX added (0.4.26's host_callback deprecation, 0.4.27's jnp.clip keywords), which every
# one of these predates; an older JAX would only risk APIs the original's code relies on.
DATED_REFERENCES = ("0.4.23", "0.4.25", "0.4.30")
HELD = {"jax", "jaxlib", "numpy"}  # (held at the legacy environment's, by constraints)


def _tomorrow() -> str:
    return (datetime.date.today() + datetime.timedelta(days=1)).isoformat()


def uv_binary() -> str | None:
    """The uv executable: the one hcmigrate's uv dependency installed, else one on PATH."""
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def as_of_era(
    requirements: list[str], jax_version: str, numpy: str | None, notes: list[str]
) -> list[str]:
    """`requirements` pinned to what resolves as of legacy JAX's release (every package the
    project's requirements bring, jax, jaxlib and numpy left to the legacy environment), or
    as they are (pip's newest), with a note saying which."""
    if not requirements:
        return requirements
    date = ERA_END.get(jax_version)
    uv = uv_binary()
    if date is None or uv is None:
        why = f"no release date recorded for jax {jax_version}" if date is None else "no uv"
        notes.append(
            f"project dependencies: pip's newest releases that fit the pins ({why} for an "
            "upload-date bound, uv's --exclude-newer)"
        )
        return requirements
    held = [f"jax=={jax_version}", f"jaxlib=={jax_version}"] + (
        [f"numpy=={numpy}"] if numpy else []
    )
    with tempfile.TemporaryDirectory(prefix="hcmigrate-era-") as folder:
        # (held packages as constraints: they bound the resolution without being added to it)
        constraints = Path(folder) / "constraints.txt"
        constraints.write_text("".join(f"{r}\n" for r in held), encoding="utf-8")
        done = subprocess.run(
            [
                uv,
                "pip",
                "compile",
                "-",
                "--constraint",
                str(constraints),
                "--exclude-newer",
                date,
                # (the held packages are pinned by the constraints, whatever day their release
                # came: numpy 1.26.4 came after jax 0.4.23's day, and is held there too)
                *(
                    arg
                    for name in sorted(HELD)
                    for arg in ("--exclude-newer-package", f"{name}={_tomorrow()}")
                ),
                "--python-version",
                f"{sys.version_info.major}.{sys.version_info.minor}",
                "--no-header",
                "--no-annotate",
                "--quiet",
            ],
            input="".join(f"{r}\n" for r in requirements),
            capture_output=True,
            text=True,
            env=subprocess_env(),
            timeout=300,
        )
    if done.returncode != 0:
        first = next((ln for ln in done.stderr.splitlines() if ln.strip()), "")
        notes.append(
            f"project dependencies: nothing resolves as of {date} (uv: {first.strip()}); pip's "
            "newest releases that fit the pins"
        )
        return requirements
    pinned = []
    for line in done.stdout.splitlines():
        line = line.split("#", 1)[0].strip()
        name = re.split(r"[=<>!~\[; ]", line, maxsplit=1)[0].lower().replace("_", "-")
        if line and name not in HELD:
            pinned.append(line)
    notes.append(
        f"project dependencies resolved as of {date}, the release of jax {jax_version} (uv "
        f"--exclude-newer): {', '.join(pinned)}"
    )
    return pinned
