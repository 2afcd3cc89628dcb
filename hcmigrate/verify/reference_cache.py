"""Record the reference once: a --pytest reference trace kept for the next run of the same
sources on the same reference.

The legacy side of a CI gate rarely changes (it is the code before the migration), so its
trace is cached under `$HCMIGRATE_CACHE_DIR/reference-traces/` (the folder CI caches anyway),
keyed by everything that decides what the reference does: the contents of every file of the
original folder, the tests and pytest arguments, the reference interpreter and its
description (JAX version, dependencies), the platform, the environment variables known to change
what a run does (environment_key), and the recorder's own code. Only a complete run is kept
(no crash, no timeout, no restart, at least one host call); `--fresh-reference` always records
it again and replaces what was kept.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from hcmigrate.verify.workspace import project_files

_RECORDER = [
    Path(__file__).resolve().parent / name
    for name in (
        "_runner.py",
        "_pytest_plugin.py",
        "stream.py",
        "execute.py",
        "launch.py",
        "supervise.py",
        "reference_env.py",
        "pytest_env.py",
        "workspace.py",
    )
]


def cache_folder() -> Path:
    from hcmigrate.legacy_env import cache_dir

    return cache_dir() / "reference-traces"


# Environment variables known to change what a reference run does: JAX's and XLA's settings,
# the interpreter's, and the common switches projects read to quieten progress bars and logs.
# (Which variables a project's tests read is unknowable: `--fresh-reference` always records the
# reference again and replaces the stored trace.)
_KEYED_PREFIXES = ("JAX_", "XLA_", "TF_", "CUDA_", "PYTHON", "PYTEST_", "TQDM_")
_KEYED_NAMES = ("NO_COLOR", "COLUMNS", "OMP_NUM_THREADS")


def environment_key(env: dict) -> list:
    """The part of the environment given to the sides that the stored reference is keyed by."""
    return sorted(
        (k, v) for k, v in env.items() if k.startswith(_KEYED_PREFIXES) or k in _KEYED_NAMES
    )


def reference_key(original: Path, settings: dict) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
    for path in _RECORDER:
        digest.update(path.read_bytes())
    for path in project_files(original):
        if path.name.endswith((".pyc", ".pyo")):
            continue
        digest.update(str(path.relative_to(original)).encode() + b"\0")
        try:
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        except OSError:
            continue
    return digest.hexdigest()[:32]


def load(key: str) -> dict | None:
    path = cache_folder() / f"{key}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def store(key: str, trace: dict) -> None:
    if (
        not trace.get("complete")
        or not trace.get("events")  # (a run without host calls is refused: never reused)
        or trace.get("restarts")
        or any(t.get("outcome") in ("crashed", "timeout") for t in trace.get("tests", []))
    ):
        return
    folder = cache_folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{key}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(trace), encoding="utf-8")
        os.replace(tmp, folder / f"{key}.json")
    except OSError:
        pass  # a cache that cannot be written only costs time
