"""Cached virtualenvs with a pinned JAX: the legacy reference (jax==jaxlib==0.4.30) and others.

Golden traces, the compat runtime's proof and `hcmigrate verify --reference legacy` all run
"what the old code did" in the legacy interpreter; the compat runtime's oldest-JAX test uses
the same machinery for jax 0.6.2. Each environment is created on first use through pip (only
the package registries pip is configured with are needed) and reused afterwards; the cache
folder is `$HCMIGRATE_CACHE_DIR` or `$XDG_CACHE_HOME/hcmigrate` (default `~/.cache/hcmigrate`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path
from typing import Callable

from hcmigrate import env_lock

LEGACY_JAX_VERSION = "0.4.30"
# scipy, tqdm: fixtures and user code call numpy/scipy and drive tqdm bars on the host, as the
# surveyed projects do. Each is also the name it is imported by (is_ready imports them).
EXTRA_REQUIREMENTS = ("numpy", "scipy", "tqdm")
# The numpy a JAX of host_callback's era ran with: jax 0.4.30 came out two days after numpy
# 2.0, and the projects that still used host_callback ran numpy 1.26 (jax's own metadata only
# asks for numpy >= 1.23.2 on Python 3.11, so pip alone would pick today's numpy 2.x, an
# environment that never existed). JAX releases after 0.4.30 get pip's choice.
LEGACY_NUMPY_VERSION = "1.26.4"
LAST_JAX_OF_NUMPY_1 = (0, 4, 30)


# jax.scipy of JAX 0.4.13 and 0.4.23 wraps scipy.linalg.tril, which scipy 1.13 removed:
# `import jax.scipy.linalg` fails beside today's scipy (measured; 0.4.25 and 0.4.30 import it)
OLD_JAX_SCIPY = ((0, 4, 25), "scipy<1.13")


def _version(jax_version: str) -> tuple[int, ...] | None:
    try:
        return tuple(int(part) for part in jax_version.split(".")[:3])
    except ValueError:
        return None


def numpy_pin(jax_version: str) -> str | None:
    """The numpy version the JAX `jax_version` environment is held at (None: pip's choice)."""
    version = _version(jax_version)
    return LEGACY_NUMPY_VERSION if version is not None and version <= LAST_JAX_OF_NUMPY_1 else None


def requirements_of(jax_version: str) -> tuple[str, ...]:
    """What pip installs into the JAX `jax_version` environment."""
    pin = numpy_pin(jax_version)
    version = _version(jax_version)
    old_scipy = version is not None and version < OLD_JAX_SCIPY[0]
    extras = tuple(
        f"{name}=={pin}"
        if name == "numpy" and pin
        else (OLD_JAX_SCIPY[1] if name == "scipy" and old_scipy else name)
        for name in EXTRA_REQUIREMENTS
    )
    return (f"jax=={jax_version}", f"jaxlib=={jax_version}", *extras)


class LegacyEnvError(RuntimeError):
    """The reference environment could not be created."""


def cache_dir() -> Path:
    explicit = os.environ.get("HCMIGRATE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hcmigrate"


def python_tag(base_python: Path | None = None) -> str:
    """`py311` for the running interpreter, or for `base_python` (asked, it may be another)."""
    if base_python is None:
        return f"py{sys.version_info.major}{sys.version_info.minor}"
    version = subprocess.run(
        [str(base_python), "-c", "import sys; print(*sys.version_info[:2], sep='')"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return f"py{version}"


def env_dir(
    jax_version: str = LEGACY_JAX_VERSION, kind: str = "legacy", base_python: Path | None = None
) -> Path:
    """The environment's folder, named after what decides its contents (an environment made
    before numpy was pinned, `legacy-jax-0.4.30-py311`, is never reused), the Python it is
    built on included (the running one unless `base_python` is given)."""
    pin = numpy_pin(jax_version)
    numpy = f"-numpy-{pin}" if pin else ""
    return cache_dir() / f"{kind}-jax-{jax_version}{numpy}-{python_tag(base_python)}"


def _python_in(env: Path) -> Path:
    return env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def is_ready(python: Path, jax_version: str, numpy: str | None = None) -> bool:
    """The interpreter exists, imports jax and jaxlib of exactly `jax_version` and every extra
    requirement (an environment cached before an extra was added is made again).

    Importing them takes a second or two; once it did, a marker in the environment (newer than
    any install into its site-packages, naming the extras) says so for later calls. `numpy`:
    the numpy it must have, where not the JAX version's own pin (a project's)."""
    if not python.exists():
        return False
    env = python.parent.parent
    held = f"-numpy-{numpy}" if numpy else ""
    marker = (
        env / f".hcmigrate-ready-jax-{jax_version}-jax.scipy-{'-'.join(EXTRA_REQUIREMENTS)}{held}"
    )
    site = [p for p in (env / "lib").glob("python*/site-packages")]
    if marker.exists() and all(p.stat().st_mtime <= marker.stat().st_mtime for p in site):
        return True
    probe = subprocess.run(
        [
            str(python),
            "-c",
            # (jax.scipy too: an old JAX beside a scipy that removed what it wraps fails there)
            f"import jax, jaxlib, jax.scipy.linalg, sys, {', '.join(EXTRA_REQUIREMENTS)}; "
            "sys.stdout.write(' '.join([jax.__version__, jaxlib.__version__, numpy.__version__]))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    pin = numpy or numpy_pin(jax_version)
    versions = probe.stdout.split()
    ready = (
        probe.returncode == 0
        and versions[:2] == [jax_version, jax_version]
        and (pin is None or versions[2:] == [pin])
    )
    if ready:
        try:
            marker.touch()
        except OSError:
            pass
    return ready


def _move_into_place(tmp: Path, env: Path) -> None:
    """Rename a finished environment to its final folder. A venv's scripts (bin/pip,
    bin/activate, ...) and pyvenv.cfg name the folder they were built in: they are rewritten to
    name the final one, so they never point at the temporary folder, which is gone."""
    shutil.rmtree(env, ignore_errors=True)
    os.replace(tmp, env)
    repair_paths(env, str(tmp))


def repair_paths(env: Path, built_in: str | None = None) -> None:
    """Rewrite scripts that still name the folder the environment was built in (also repairs
    environments made before this was done: their bin/pip names `<env>.tmp-<pid>`)."""
    bindir = env / ("Scripts" if os.name == "nt" else "bin")
    if built_in is None:
        try:
            first = (bindir / "pip").read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
        except OSError:
            return
        m = re.search(re.escape(str(env)) + r"\.tmp-\d+", first)
        if m is None:
            return
        built_in = m.group(0)
    for path in [*bindir.iterdir(), env / "pyvenv.cfg"]:
        if not path.is_file() or path.is_symlink():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # a binary
        if built_in in text:
            path.write_text(text.replace(built_in, str(env)), encoding="utf-8")


def jax_env_python(
    jax_version: str,
    kind: str,
    progress: Callable[[str], None] | None = None,
    base_python: Path | None = None,
) -> Path:
    """The cached interpreter with jax==jaxlib==`jax_version`, created on first use (a venv of
    the running Python, or of the interpreter `base_python`: another Python version).

    Built under the environment's exclusive lock (`hcmigrate.env_lock`: one process builds,
    the others wait for it, and none while a verify run uses the environment), in a private
    temporary folder moved into place when complete, so an interrupted creation never leaves a
    half-made environment behind; pip is retried, since registries can be flaky.
    """
    env = env_dir(jax_version, kind, base_python)
    python = _python_in(env)
    if is_ready(python, jax_version):
        repair_paths(env)
        return python
    say = progress or (lambda message: print(message, file=sys.stderr, flush=True))
    with env_lock.changing(env, say):
        if is_ready(python, jax_version):  # another process made it while this one waited
            return python
        _build_jax_env(env, jax_version, say, base_python)
    return python


def _create_venv(path: Path, base_python: Path | None) -> None:
    if base_python is None:
        venv.EnvBuilder(with_pip=True, clear=True).create(path)
    else:
        subprocess.run([str(base_python), "-m", "venv", "--clear", str(path)], check=True)


def _build_jax_env(
    env: Path, jax_version: str, say: Callable[[str], None], base_python: Path | None = None
) -> None:
    requirements = requirements_of(jax_version)
    say(
        f"hcmigrate: creating the JAX {jax_version} environment in {env} (one time, about a minute)"
    )
    tmp = env.with_name(f"{env.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    _create_venv(tmp, base_python)
    install = None
    for attempt in range(3):
        install = subprocess.run(
            [
                str(_python_in(tmp)),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--retries",
                "5",
                "--timeout",
                "60",
                *requirements,
            ],
            capture_output=True,
            text=True,
        )
        if install.returncode == 0:
            break
        time.sleep(2 * (attempt + 1))
    if install.returncode != 0 or not is_ready(_python_in(tmp), jax_version):
        shutil.rmtree(tmp, ignore_errors=True)
        raise LegacyEnvError(
            f"could not install {' '.join(requirements)} into {env}:\n{install.stderr[-3000:]}"
        )
    _move_into_place(tmp, env)
    say(f"hcmigrate: JAX {jax_version} environment ready")


def legacy_python(
    progress: Callable[[str], None] | None = None, jax_version: str = LEGACY_JAX_VERSION
) -> Path:
    """The legacy reference interpreter (real jax 0.4.30 unless told), created on first use."""
    return jax_env_python(jax_version, "legacy", progress)


def _site_packages(python: Path) -> str:
    return subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def project_env_python(
    requirements: list[str],
    jax_version: str = LEGACY_JAX_VERSION,
    progress: Callable[[str], None] | None = None,
    numpy: str | None = None,
) -> Path:
    """A cached interpreter with legacy JAX and a project's own dependencies.

    It is a venv layered on the JAX `jax_version` environment (a `.pth` file puts that one's
    site-packages after its own), so only the project's dependencies are installed, with pip,
    jax and jaxlib held at `jax_version`, and numpy at the JAX environment's or at `numpy` (one
    the project's pins allow; installed into this venv, ahead of the JAX environment's). One
    per (JAX version, numpy, requirement list)."""
    base = legacy_python(progress, jax_version)
    key = hashlib.sha256(
        json.dumps([jax_version, numpy or numpy_pin(jax_version), sorted(requirements)]).encode()
    ).hexdigest()[:12]
    env = env_dir(jax_version, "project").with_name(f"{env_dir(jax_version, 'project').name}-{key}")
    python = _python_in(env)
    ready = env / ".hcmigrate-requirements.json"
    if ready.is_file() and is_ready(python, jax_version, numpy):
        repair_paths(env)
        return python
    say = progress or (lambda message: print(message, file=sys.stderr, flush=True))
    with env_lock.changing(env, say):
        if ready.is_file() and is_ready(python, jax_version, numpy):  # made while this waited
            return python
        _build_project_env(env, base, requirements, jax_version, say, numpy)
    return python


def _build_project_env(
    env: Path,
    base: Path,
    requirements: list[str],
    jax_version: str,
    say: Callable[[str], None],
    numpy: str | None = None,
) -> None:
    ready = env / ".hcmigrate-requirements.json"
    say(
        f"hcmigrate: creating the reference environment with the project's dependencies "
        f"({', '.join(requirements) or 'none'}; JAX {jax_version}) in {env} (one time)"
    )
    tmp = env.with_name(f"{env.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(tmp)
    tmp_python = _python_in(tmp)
    (Path(_site_packages(tmp_python)) / "_hcmigrate_legacy_jax.pth").write_text(
        _site_packages(base) + "\n", encoding="utf-8"
    )
    constraints = tmp / "constraints.txt"
    # jax, jaxlib and numpy stay as the JAX environment has them
    held = [r for r in requirements_of(jax_version) if "==" in r]
    if numpy:
        held = [r for r in held if not r.startswith("numpy==")] + [f"numpy=={numpy}"]
        requirements = [*requirements, f"numpy=={numpy}"]
    constraints.write_text("".join(f"{r}\n" for r in held), encoding="utf-8")

    def pip_install(wanted: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run(
            [
                str(tmp_python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-c",
                str(constraints),
                *wanted,
            ],
            capture_output=True,
            text=True,
        )

    install = pip_install(requirements)
    for _ in range(5):  # (pip names one such pin a run)
        refused = _refused_for_python(install.stderr) if install.returncode != 0 else set()
        if not refused:
            break
        # (a pin uv chose ignoring its release's Requires-Python upper bound, as uv does:
        # jax-sgmc's unconditional `dataclasses` backport came out `dataclasses==0.8`, for
        # Python 3.6 only; pip picks a release this Python may install instead)
        requirements = [r.split("==", 1)[0] if r in refused else r for r in requirements]
        say(
            f"hcmigrate: {', '.join(sorted(refused))}: no release for this Python "
            "(Requires-Python); pip chooses one that is"
        )
        install = pip_install(requirements)
    if install.returncode != 0 or not is_ready(tmp_python, jax_version, numpy):
        shutil.rmtree(tmp, ignore_errors=True)
        raise LegacyEnvError(
            f"could not install the project's dependencies ({' '.join(requirements)}) with "
            f"jax=={jax_version}:\n{install.stderr[-3000:]}"
        )
    (tmp / ready.name).write_text(json.dumps(requirements), encoding="utf-8")
    _move_into_place(tmp, env)
    say("hcmigrate: reference environment ready")


_NO_DISTRIBUTION = re.compile(r"No matching distribution found for (\S+==\S+)")


def _refused_for_python(stderr: str) -> set[str]:
    """The exact pins pip found no release of because their releases require another Python
    (pip says both: "require a different python version", "No matching distribution found for
    NAME==VERSION")."""
    if "require a different python version" not in stderr:
        return set()
    return set(_NO_DISTRIBUTION.findall(stderr))


if __name__ == "__main__":  # `python -m hcmigrate.legacy_env` prints the interpreter path
    print(legacy_python())
