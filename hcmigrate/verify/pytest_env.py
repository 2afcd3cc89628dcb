"""pytest on each side (--pytest): making pytest (and pytest-xdist when asked) importable by a
side's interpreter, by installing it into the cached legacy environment or by sharing this
interpreter's copy through a cached folder, and finding the package's own pytest
configuration file."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from hcmigrate import env_lock
from hcmigrate.verify.launch import subprocess_env
from hcmigrate.verify.outcome import CannotRun


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


_WORKERS = ("-n", "--numprocesses")


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def share_workers(pytest_args: list[str], sides: int = 2) -> tuple[list[str], str | None]:
    """The pytest arguments for each of `sides` suites run at the same time: a pytest-xdist
    worker count (`-n N`, `-nN`, `--numprocesses[=]N`, `auto`, `logical`) above this machine's
    CPUs shared out is lowered to that share (at least one worker), so the sides together
    start no more workers than there are CPUs. Returns the arguments and a note when changed."""
    cpus = available_cpus()
    share = max(1, cpus // sides)
    out = list(pytest_args)
    note = None
    i = 0
    while i < len(out):
        arg, at = out[i], None
        if arg in _WORKERS and i + 1 < len(out):
            at, value = i + 1, out[i + 1]
        elif arg.startswith("--numprocesses="):
            at, value = i, arg.split("=", 1)[1]
        elif arg.startswith("-n") and not arg.startswith("--") and len(arg) > 2:
            at, value = i, arg[2:]
        if at is not None:
            if value in ("auto", "logical"):
                wanted = cpus
            else:
                wanted = int(value) if value.isdigit() else 0
            if wanted > share:
                out[at] = out[at].removesuffix(value) + str(share)
                note = (
                    f"pytest-xdist: {arg if at == i else arg + ' ' + value} shared between the "
                    f"reference and the candidate running at the same time: {share} worker(s) "
                    f"each ({cpus} CPU(s))"
                )
            i = at
        i += 1
    return out, note


_PROBES: dict[tuple[str, bool], subprocess.Popen] = {}


def start_probe(python: str, xdist: bool = False) -> None:
    """Start asking `python` for its pytest (see _probe_pytest) while other work goes on."""
    xdist = xdist and _xdist_version() is not None
    if (python, xdist) not in _PROBES:
        check = "import xdist; " if xdist else ""
        _PROBES[python, xdist] = subprocess.Popen(
            [python, "-c", f"import sys, pytest; {check}sys.stdout.write(pytest.__version__)"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            text=True,
            env=subprocess_env(),
        )


def _probe_pytest(python: str, xdist: bool = False) -> str | None:
    """The pytest version importable by `python` (with pytest-xdist if asked), or None."""
    start_probe(python, xdist)
    probe = _PROBES.pop((python, xdist))
    out, _ = probe.communicate()
    return out.strip() if probe.returncode == 0 and out.strip() else None


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
        with env_lock.changing(Path(python).parent.parent, say):
            if _probe_pytest(python, xdist):  # installed while this process waited
                return [], None
            pip_error = _install_pytest(python, wanted, xdist, say)
        if not pip_error:
            return [], f"installed pytest {wanted} into {python}"
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


def _install_pytest(python: str, wanted: str, xdist: bool, say) -> str:
    """`pip install pytest==wanted` (and this interpreter's pytest-xdist) into `python`'s
    environment; returns pip's last lines of error ('' when it worked)."""
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
        return ""
    return (
        "\n".join(install.stderr.strip().splitlines()[-3:]) or f"exit status {install.returncode}"
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


def names_testpaths(root: Path, config: str) -> bool:
    """Does the package's pytest configuration file (`config`, relative to root) set
    `testpaths`, where a plain `pytest` run in its folder looks for tests?"""
    try:
        text = (root / config).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return re.search(r"(?m)^\s*testpaths\s*=", text) is not None


def warnings_are_errors(root: Path) -> bool:
    """Does the package's pytest configuration make warnings errors (`filterwarnings` naming
    `error`, alone or for a category)? Then a JAX that deprecates an API its code uses fails
    its own suite (blackjax 1.1.0's)."""
    config = pytest_config(root) if root.is_dir() else None
    if config is None:
        return False
    try:
        text = (root / config).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    # (the option's value: the rest of its line and the indented lines after it, an ini
    # file's continuation lines or a TOML array's items)
    found = re.search(r"(?m)^\s*filterwarnings\s*=(?P<value>.*(?:\n[ \t]+.*)*)", text)
    return found is not None and (
        re.search(r"""(?m)(?:^|[\s"'\[,=])error(?:::[\w.]*)?\s*(?:$|["',\]])""", found["value"])
        is not None
    )
