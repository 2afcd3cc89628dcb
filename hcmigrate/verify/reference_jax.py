"""Which legacy JAX the reference runs when `--reference-jax` does not say: 0.4.30, unless the
original uses an API that JAX removed by then (ott-jax 0.4.3's `jax.random.PRNGKeyArray`, gone
in 0.4.24; `from jax.config import config`, gone in 0.4.29). Then the original cannot run on
0.4.30 at all, and the reference is the newest legacy JAX this tool builds environments for
(those with an upload-date bound: hcmigrate.verify.era.ERA_END) that still has every such API.

The uses are read with the codemod's own word test of the removal table
(hcmigrate.removed_api_scan, rows of hcmigrate.jax_removals): a superset test, so a removed
name in a string may lower the reference; the note names the file and the API either way, and
`--reference-jax` overrides."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hcmigrate.errors import HcmigrateError
from hcmigrate.files import read_regular
from hcmigrate.jax_removals import REMOVED_APIS, Kind, RemovedApi, version
from hcmigrate.removed_api_scan import RemovedApiScan
from hcmigrate.verify.era import ERA_END
from hcmigrate.verify.workspace import SKIP_DIRS


@dataclass(frozen=True)
class RemovedUse:
    row: RemovedApi
    path: Path  # the first file that uses it


def removed_uses(original: Path, legacy: str) -> list[RemovedUse]:
    """The removal-table rows, removed in `legacy` or before, that the original's Python files
    use (one file each)."""
    rows = [
        r
        for r in REMOVED_APIS
        if r.kind not in (Kind.BEHAVIOUR, Kind.CALL_BEHAVIOUR)
        and version(r.removed_in) <= version(legacy)
    ]
    if not rows:
        return []
    scans = [(row, RemovedApiScan((row,))) for row in rows]
    any_row = RemovedApiScan(tuple(rows))
    found: dict[str, RemovedUse] = {}
    for path in _python_files(original):
        try:
            data = read_regular(path)
        except HcmigrateError:
            continue
        if not any_row.may_use_removed(data):
            continue
        for row, scan in scans:
            if row.name not in found and scan.may_use_removed(data):
                found[row.name] = RemovedUse(row, path)
    return sorted(found.values(), key=lambda u: (version(u.row.removed_in), u.row.name))


def choose_reference_jax(original: Path, legacy: str, notes: list[str]) -> str:
    """The legacy JAX the reference runs: `legacy` unless the original uses an API removed by
    then; then the newest version with an environment here that predates every such removal
    (a note says which API, where, and how to override). When none does, `legacy`: the
    reference's failure then names the API (hcmigrate.verify.classify)."""
    uses = removed_uses(original, legacy)
    if not uses:
        return legacy
    first = uses[0]
    older = [v for v in ERA_END if version(v) < version(first.row.removed_in)]
    shown = _shown(first.path, original)
    if not older:
        notes.append(
            f"the original uses `{first.row.name}` ({shown}), removed in JAX "
            f"{first.row.removed_in}, before every legacy JAX this tool installs "
            f"({', '.join(ERA_END)}): the reference may fail on it; --reference PYTHON runs an "
            "environment of your own"
        )
        return legacy
    chosen = max(older, key=version)
    notes.append(
        f"reference: jax {chosen}, not {legacy}: the original uses `{first.row.name}` ({shown}), "
        f"removed in JAX {first.row.removed_in} (--reference-jax VERSION chooses another)"
    )
    return chosen


def _python_files(original: Path):
    if original.is_file():
        yield original
        return
    for folder, dirs, files in os.walk(original):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(files):
            if name.endswith(".py"):
                yield Path(folder) / name


def _shown(path: Path, original: Path) -> str:
    try:
        return str(path.relative_to(original if original.is_dir() else original.parent))
    except ValueError:
        return str(path)
