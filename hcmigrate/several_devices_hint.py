"""A hint for what no rule can see from a module: its code may run on several devices.

An ordered `jax.debug.callback` (HCB101/HCB201) is refused when its computation runs on more
than one device; the codemod writes one only in modules that name no multi-device API and run
under none that the run sees. A library whose callers build the mesh in another project
(praxis's decoding, run under pjit by saxml) looks like that, and its run would exit 0 with code
that fails on a mesh. When other modules of the same project (the folder above the module's
top package) name a multi-device API (the project does run code on several devices), the run
says so once, after the files, and points to the
`several-devices` setting; it changes no file and no exit code (a hint, not a finding).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from hcmigrate.facts import MULTI_DEVICE_APIS
from hcmigrate.prefilter import read_bytes
from hcmigrate.project_model.module_facts import facts_of
from hcmigrate.rules.compat_reasons import SEVERAL_DEVICES_NOTE


def _package_root(path: Path) -> Path:
    """The folder of the top package holding `path` (its folders with an `__init__.py`), or
    its own folder: the project whose other modules may build the meshes it runs on. (Only
    these are read again: a run over a large tree reads no more than the package.)"""
    folder = path.resolve().parent
    while (folder / "__init__.py").is_file() and (folder.parent / "__init__.py").is_file():
        folder = folder.parent
    return folder.parent if (folder / "__init__.py").is_file() else folder


_NAMES = re.compile(rb"\b(?:" + b"|".join(a.encode() for a in MULTI_DEVICE_APIS) + rb")\b")


def _project_root(path: Path, projects) -> Path:
    """The project that owns `path` (hcmigrate.projects), or, where none does, its package."""
    owner = projects.owner(path) if projects is not None else None
    return owner.root if owner is not None else _package_root(path)


def several_devices_hint(targets, final, several_devices: bool, projects=None) -> str | None:
    """The hint line, or None: the project says it runs on several devices already, no module
    got ordered jax.debug callbacks, or no other module of the run names a multi-device API in
    its code (not a comment or a string: the module's facts, hcmigrate.project_model)."""
    if several_devices:
        return None
    ordered = sorted(
        r.display for r in final if any(SEVERAL_DEVICES_NOTE in d.message for d in r.diagnostics)
    )
    if not ordered:
        return None
    skip = set(ordered)
    roots = {_project_root(Path(display), projects) for display in ordered}
    for target in targets:
        if target.notebook or target.display in skip:
            continue
        if not any(root in Path(target.display).resolve().parents for root in roots):
            continue  # (another project or package of the run: it says nothing of these)
        data = read_bytes(target.path)
        if data is None or not _NAMES.search(data):
            continue  # (the cheap test first: most modules name none)
        try:
            api = facts_of(ast.parse(data), "", False).multi_device_api
        except (SyntaxError, ValueError, RecursionError):
            continue
        if api is None:
            continue
        where = ordered[0] + (f" and {len(ordered) - 1} more" if len(ordered) > 1 else "")
        return (
            f"hint: {target.display} uses {api}: this project runs code on several devices, "
            f"where the ordered jax.debug callbacks written in {where} fail; if their code runs "
            "there, migrate with `several-devices = true` in [tool.hcmigrate] (--several-devices)"
        )
    return None
