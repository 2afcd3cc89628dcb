"""The reference side's interpreter: `resolve_reference` turns --reference compat|legacy|PATH
into the interpreter to run, whether it needs the compat runtime installed, and the
description a report shows; `project_compat_dir` finds the compat package shipped next to
hcmigrate."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from hcmigrate import env_lock
from hcmigrate.verify.launch import subprocess_env
from hcmigrate.verify.outcome import CannotRun


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
    numpy: str | None = None,
) -> tuple[str, bool, str]:
    """(python, install_compat, description) for --reference compat|legacy|PATH.

    `legacy` is the cached JAX `jax_version` environment (0.4.30 by default); with
    `requirements` (the project's own dependencies), the cached environment that also has
    them (and `numpy`, where the project's pins exclude the legacy environment's). A PATH
    may be relative to the working folder."""
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
            env_dir,
            legacy_python,
            project_env_python,
        )

        version = jax_version or LEGACY_JAX_VERSION
        try:
            if requirements or numpy:  # (numpy alone: the project pins only numpy)
                python = project_env_python(requirements or [], version, progress, numpy=numpy)
            else:
                python = legacy_python(progress, version)
        except LegacyEnvError as e:
            raise CannotRun(f"--reference legacy: {e}") from None
        # no other process may rebuild or change them while this run uses them (released
        # when the run ends: sides.in_scratch)
        env_lock.using(env_dir(version, "legacy"), progress)
        env_lock.using(python.parent.parent, progress)
        installed = [*(requirements or []), *([f"numpy=={numpy}"] if numpy else [])]
        deps = f", with {', '.join(installed)}" if installed else ""
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
