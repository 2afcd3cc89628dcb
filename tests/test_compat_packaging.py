"""hcmigrate-compat: the compat runtime as a distribution of its own, for libraries.

Builds the wheel from this repository (conftest.py's ``wheel``: packaging/hcmigrate-compat,
from a copy of the two folders so that the checkout is left as it was), checks that it holds the package
``hcmigrate_compat`` alone and depends on jax and numpy alone, that pip resolving it into an
empty environment pulls jax and numpy and nothing but their own dependencies, and installs
it into a fresh environment that has JAX (the cached oldest supported JAX) and nothing of
hcmigrate, where a legacy program runs with ``from hcmigrate_compat import host_callback``.
Only the package registries pip is configured with are needed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from test_compat_oldest_jax import oldest_jax_python

REPO = Path(__file__).resolve().parent.parent


def pip(*args, python=None, cwd=None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    if python is not None:
        cmd += ["--python", str(python)]
    p = subprocess.run([*cmd, *args], capture_output=True, text=True, cwd=cwd)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p


def empty_venv(path: Path, *site_dirs: Path, base: Path | None = None) -> Path:
    """A venv (of ``base``, default the running Python) without pip and without the system
    site-packages; ``site_dirs`` are added to its path through a .pth file. Returns its
    interpreter."""
    python_exe = str(base or sys.executable)
    subprocess.run([python_exe, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if site_dirs:
        (Path(site) / "shared_jax.pth").write_text("".join(f"{d}\n" for d in site_dirs))
    return python


def _metadata(whl: Path) -> str:
    with zipfile.ZipFile(whl) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        return z.read(name).decode()


def test_wheel_holds_the_runtime_alone_and_needs_jax_and_numpy_alone(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    top = {n.split("/")[0] for n in names}
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert top == {"hcmigrate_compat", f"hcmigrate_compat-{version}.dist-info"}
    modules = sorted(p.name for p in (REPO / "hcmigrate_compat").glob("*.py"))
    assert sorted(n.split("/")[1] for n in names if n.startswith("hcmigrate_compat/")) == modules
    requires = [
        Requirement(line.split(":", 1)[1])
        for line in _metadata(wheel).splitlines()
        if line.startswith("Requires-Dist:")
    ]
    assert sorted(canonicalize_name(r.name) for r in requires) == ["jax", "numpy"]
    assert f"Version: {version}\n" in _metadata(wheel)


def test_pip_pulls_jax_and_numpy_and_only_their_dependencies(wheel, tmp_path):
    python = empty_venv(tmp_path / "empty")
    report = tmp_path / "report.json"
    pip(
        "install",
        "--dry-run",
        "--ignore-installed",
        "--report",
        str(report),
        str(wheel),
        python=python,
    )
    items = {
        canonicalize_name(i["metadata"]["name"]): i["metadata"]
        for i in json.loads(report.read_text())["install"]
    }
    needed, todo = set(), ["jax", "numpy"]
    while todo:  # what jax and numpy need, as resolved
        name = todo.pop()
        if name in needed:
            continue
        needed.add(name)
        for line in items[name].get("requires_dist", []):
            r = Requirement(line)
            if r.marker is None or r.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(r.name))
    assert set(items) == {"hcmigrate-compat"} | needed
    assert not {"hcmigrate", "libcst", "click", "rich"} & set(items)


LEGACY_PROGRAM = """
import sys
import jax, jax.numpy as jnp
from hcmigrate_compat import host_callback as hcb
import hcmigrate_compat
got = []
f = jax.jit(jax.vmap(lambda v: hcb.id_tap(lambda a, t: got.append((a.tolist(), t)), v * 2)))
print(f(jnp.arange(3.0)).tolist(), got)
print(hcb.call(lambda a: a + 1, jnp.float32(1), result_shape=jnp.float32(0)))
hcb.id_print(jnp.arange(2), what="printed")
print(hcmigrate_compat.__file__.startswith(sys.prefix))
for name in ("compat", "hcmigrate", "libcst"):
    try:
        __import__(name)
        print(name, "importable")
    except ImportError:
        pass
"""
# What LEGACY_PROGRAM printed on real jax 0.4.30 (with hcmigrate_compat's `True` line).
LEGACY_PROGRAM_OUTPUT = [
    "[0.0, 2.0, 4.0] [([0.0, 2.0, 4.0], (('batch', {'batch_dims': (0,)}),))]",
    "2.0",
    "what: printed",
    "[0 1]",
    "True",
]


def site_packages_of(python: Path) -> Path:
    """The folder of ``python``'s environment that holds jax."""
    return Path(
        subprocess.run(
            [str(python), "-c", "import jax, os; print(os.path.dirname(jax.__path__[0]))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )


def installed_only_env() -> dict:
    """The environment of a program that sees only what its interpreter has installed."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "XLA_FLAGS")}
    env.update(JAX_PLATFORMS="cpu", PYTHONWARNINGS="ignore")
    return env


def test_installed_wheel_runs_a_legacy_program_with_only_jax_and_numpy(wheel, tmp_path):
    python = empty_venv(tmp_path / "lib-env", site_packages_of(oldest_jax_python()))
    installed = pip("install", str(wheel), python=python).stdout
    assert re.search(r"^Successfully installed hcmigrate-compat-\S+$", installed, re.M), installed
    env = installed_only_env()
    run = subprocess.run(
        [str(python), "-c", LEGACY_PROGRAM], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines() == LEGACY_PROGRAM_OUTPUT
    script = tmp_path / "unmodified.py"
    script.write_text(
        textwrap.dedent("""
        import os
        os.environ["JAX_ENABLE_X64"] = "1"
        import jax.numpy as jnp
        from jax.experimental import host_callback as hcb
        hcb.id_print(jnp.int64(5_000_000_000) * 3, what="x64")
        """)
    )
    run = subprocess.run(
        [str(python), "-m", "hcmigrate_compat", str(script)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout == "what: x64\n15000000000\n"
