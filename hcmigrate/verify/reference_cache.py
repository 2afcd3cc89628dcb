"""Record the reference once: a --pytest reference trace kept for the next run of the same
sources on the same reference.

The legacy side of a CI gate rarely changes (it is the code before the migration), so its
trace is cached under `$HCMIGRATE_CACHE_DIR/reference-traces/` (the folder CI caches anyway),
keyed by everything that decides what the reference does: the contents of every file of the
original folder, the tests and pytest arguments, the reference interpreter and its
description (JAX version, dependencies), the platform and JAX/XLA environment variables, and
the recorder's own code. Only a complete run is kept (no crash, no timeout, no restart).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from hcmigrate.verify.workspace import SKIP_DIRS

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


def reference_key(original: Path, settings: dict) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
    digest.update(
        json.dumps(
            sorted((k, v) for k, v in os.environ.items() if k.startswith(("JAX_", "XLA_")))
        ).encode()
    )
    for path in _RECORDER:
        digest.update(path.read_bytes())
    for folder, dirs, files in os.walk(original):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = Path(folder) / name
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
