"""Measure, in real `jax` releases, the first one that has each construct the native rewrite
writes (hcmigrate.facts.NATIVE_SINCE), and what each such release itself requires (its
minimum jaxlib, its Requires-Python: hcmigrate.facts.JAX_RELEASE_REQUIRES).

Reads the releases' sources without installing them: `pip download jax==V --no-deps` (a wheel
from 0.4.16 on, an sdist before), cached in ~/.cache/hcmigrate/jax-wheels. Prints one line per
construct and per release; the facts table is copied from what it prints.

    python scripts/measure_native_since.py
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

RELEASES = ["0.3.13", "0.3.17", "0.3.18", "0.3.20", "0.3.25", "0.4.1", "0.4.6", "0.4.10"]
RELEASES += ["0.4.13", "0.4.14", "0.4.16"]  # (0.4.15 has no sdist to read)
RELEASES += [f"0.4.{n}" for n in range(20, 36)]
# (construct, file of the release, pattern that is there once the construct is)
PROBES = [
    ("jax.effects_barrier", "jax/__init__.py", r"\beffects_barrier\b"),
    ("jax.pure_callback", "jax/__init__.py", r"\bpure_callback\b"),
    ("jax.debug.callback (ordered=)", "jax/_src/debugging.py", r"def debug_callback\([^)]*ordered"),
    ("jax.debug.print (ordered=)", "jax/_src/debugging.py", r"def debug_print\([^)]*ordered"),
    ("jax.debug (public module)", "jax/debug.py", r"\bcallback\b"),
    ("jax.experimental.io_callback", "jax/experimental/__init__.py", r"\bio_callback\b"),
    ("io_callback (ordered=)", "jax/_src/callback.py", r"def io_callback\([^)]*ordered"),
    ("jax.ShapeDtypeStruct", "jax/__init__.py", r"\bShapeDtypeStruct\b"),
    ("jax.dtypes.canonicalize_dtype", "jax/dtypes.py", r"\bcanonicalize_dtype\b"),
    ("jax.tree (jax.tree.map)", "jax/tree.py", r"\bmap\b"),
    ("pure_callback (vmap_method=)", "jax/_src/callback.py", r"vmap_method"),
    # (JAX104 writes it for jax.random.PRNGKeyArray/KeyArray: the floor counts it, issue 34)
    ("jax.Array", "jax/__init__.py", r"from jax\._src\.basearray import Array as Array"),
    # (JAX105 writes `from jax.extend import linear_util` for the removed jax.linear_util)
    ("jax.extend.linear_util", "jax/extend/linear_util.py", r"\bwrap_init\b"),
]


def archive(version: str) -> Path:
    from hcmigrate.legacy_env import cache_dir

    folder = cache_dir() / "jax-wheels"
    found = [*folder.glob(f"jax-{version}-py3-none-any.whl"), *folder.glob(f"jax-{version}.tar.gz")]
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", f"jax=={version}", "--no-deps", "-q"]
            + ["-d", str(folder), "--disable-pip-version-check"],
            check=True,
        )
        found = [*folder.glob(f"jax-{version}-*.whl"), *folder.glob(f"jax-{version}.tar.gz")]
    return found[0]


def read(path: Path, version: str, name: str) -> str:
    try:
        if path.suffix == ".whl":
            with zipfile.ZipFile(path) as z:
                return z.read(name).decode("utf-8")
        with tarfile.open(path) as t:
            member = t.extractfile(f"jax-{version}/{name}")
            return member.read().decode("utf-8") if member else ""
    except KeyError:
        return ""


def requires(path: Path, version: str) -> tuple[str, str]:
    """(minimum jaxlib, Requires-Python) of one release."""
    jaxlib = re.search(
        r'_minimum_jaxlib_version = "([^"]+)"', read(path, version, "jax/version.py")
    )
    if path.suffix == ".whl":
        meta = read(path, version, f"jax-{version}.dist-info/METADATA")
        python = re.search(r"^Requires-Python: (.+)$", meta, re.M)
    else:
        python = re.search(r"python_requires='([^']+)'", read(path, version, "setup.py"))
    return (jaxlib.group(1) if jaxlib else "?", python.group(1) if python else "?")


def main() -> None:
    paths = {v: archive(v) for v in RELEASES}
    for construct, name, pattern in PROBES:
        first = next(
            (v for v in RELEASES if re.search(pattern, read(paths[v], v, name), re.S)), None
        )
        print(f"{construct}: first in {first} (of {RELEASES[0]}..{RELEASES[-1]} measured)")
    for v in RELEASES:
        jaxlib, python = requires(paths[v], v)
        print(f"jax {v}: jaxlib >= {jaxlib}, Python {python}")


if __name__ == "__main__":
    main()
