"""The id_print helper written once per package (issue 37), not once per module.

A module whose id_print prints a container gets `_print_like_id_print` (legacy's layout,
hcmigrate.codemod.module_helpers). Where two or more modules of one package (a folder with an
`__init__.py`; grouped by their top-level package) need it in one run, the run writes it once,
in a new module of the top-level package, `<pkg>/_id_print.py`, and each of them imports it
(Options.shared_helpers: relatively where the module imports its own package so). A single
module keeps it inline, as do scripts outside packages and notebooks, and so does every module
of a package where a file of that name exists that is not ours. A helper module that an
earlier run wrote is imported by any module that needs it (a second run creates nothing).

Which modules need it is asked of the migration itself before the per-file rewrites
(plan_run): the package's modules that name `id_print` are migrated once as they are (a probe,
in worker processes as the run's files are), and those whose rewrite would define the helper
are its users. The file is then part of the run like the files it rewrites: created before
them (fix; should that fail, they keep the helper inline), shown as a new file's patch
(--diff) or reported as a change (--check). The interactive review keeps helpers inline.
"""

from __future__ import annotations

import ast
import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from hcmigrate import files as fileio
from hcmigrate.results import CHANGED, FAILED, FileResult
from hcmigrate.runner import Task, adds_definition, map_in_workers, new_file_patch

KEY = "id_print"  # (the helper's key in hcmigrate.codemod.module_helpers.HELPERS)
HELPER_NAME = "_print_like_id_print"
FILE_NAME = "_id_print.py"


@dataclass
class NewFile:
    """A module the run creates for a helper its package's modules share."""

    path: Path
    display: str
    text: str
    users: list[int]  # indices into the run's targets of the modules that import it
    result: FileResult | None = None  # (--check, --diff: known when planned; fix: once written)


def share_helpers(
    targets, options_of: dict, mode: str, jobs: int, budget, unparsed=(), named=None
) -> list:
    """The helper modules the run creates (NewFile), with `options_of` (target index ->
    Options) changed in place for the modules that import the helper instead of defining it.
    `named`: the file `id-print-helper` of [tool.hcmigrate] names (hcmigrate.settings), the
    helper's place for the modules of its top-level package."""
    if mode == "review":
        return []
    groups: dict[Path, list[int]] = {}
    for i in options_of:
        target = targets[i]
        top = None if target.notebook else top_package(target.display)
        if top is not None and _names_id_print(target.display):
            groups.setdefault(top, []).append(i)
    probed = [
        (i, top)
        for top, members in groups.items()
        if (ours(place(top, named)) if os.path.lexists(place(top, named)) else len(members) > 1)
        for i in members
    ]
    probes = [
        (
            Task(
                targets[i].display,
                targets[i].display,
                False,
                "check",
                options_of[i],
                precheck=i in unparsed,
            ),
            HELPER_NAME,
        )
        for i, _ in probed
    ]
    if not probes:
        return []
    answers = map_in_workers(adds_definition, probes, jobs, budget, False)
    users_of: dict[Path, list[int]] = {}
    for (i, top), uses in zip(probed, answers):
        if uses:
            users_of.setdefault(top, []).append(i)
    created = []
    for top, users in users_of.items():
        helper = place(top, named)
        exists = os.path.lexists(helper)
        if not exists and len(users) < 2:
            continue  # (no new file for one use)
        for i in users:
            spellings = import_names(Path(targets[i].display), helper, top)
            options_of[i] = dataclasses.replace(options_of[i], shared_helpers=((KEY, *spellings),))
        if not exists:
            created.append(
                _new_file(helper, [targets[i].display for i in users], options_of, users, mode)
            )
    return created


def _new_file(
    helper: Path, displays: list[str], options_of: dict, users: list[int], mode: str
) -> NewFile:
    from hcmigrate.codemod.context import at_least
    from hcmigrate.codemod.layout import format_written_lines
    from hcmigrate.codemod.module_helpers import helper_module_text, indent_unit, tree_map_of
    from hcmigrate.native_needs import SINCE

    first = options_of[users[0]]
    has_jax_tree = all(
        (declared := options_of[i].declared_jax or options_of[i].target_jax) is not None
        and at_least(declared, SINCE["jax.tree.map"])
        for i in users
    )
    names = {"jax": "jax", "np": first.numpy_alias, "tree_map": tree_map_of("jax", has_jax_tree)}
    try:
        indent = indent_unit(fileio.read_source(Path(displays[0])).text)
    except (fileio.FileError, OSError):
        indent = "    "
    text = helper_module_text(KEY, names, indent)
    if first.lay_out:
        text = format_written_lines(
            "", text, first.line_length, yapf_style=first.yapf_style, line_length_stated=True
        )
    display = os.path.relpath(helper) if not Path(displays[0]).is_absolute() else str(helper)
    new = NewFile(helper, fileio.printable(display), text, users)
    if mode in ("check", "diff"):
        new.result = FileResult(new.display, CHANGED, created=True)
        if mode == "diff":
            new.result.diff = new_file_patch(text.encode(), display)
    return new


def write_new_files(new_files: list[NewFile], tasks: list) -> list:
    """Fix mode: create each new file before the modules that import it; where one cannot be
    created, its users keep the helper inline. Returns `tasks` ((target index, Task) pairs)
    with those users' options put back."""
    inline: set[int] = set()
    for new in new_files:
        try:
            init = new.path.parent / "__init__.py"
            fileio.create_atomic(new.path, new.text.encode(), like=init)
        except (fileio.FileError, OSError) as exc:
            why = "a file of that name appeared" if isinstance(exc, FileExistsError) else None
            why = why or getattr(exc, "message", None) or getattr(exc, "strerror", None) or str(exc)
            new.result = FileResult(
                new.display,
                FAILED,
                error=f"not written: {why}; its modules keep the helper inline",
                created=True,
            )
            inline.update(new.users)
            continue
        new.result = FileResult(new.display, CHANGED, written=True, created=True)
    return [(i, _inline(task) if i in inline else task) for i, task in tasks]


def _inline(task):
    options = dataclasses.replace(task.options, shared_helpers=())
    return dataclasses.replace(task, options=options)


def place(top: Path, named: Path | None) -> Path:
    """Where the helper of the modules of the top-level package `top` is: the file
    `id-print-helper` names where it is in that package, else `<top>/_id_print.py`."""
    if named is not None and top_package(str(named)) == top:
        return named.parent.resolve() / named.name
    return top / FILE_NAME


def import_names(module: Path, helper: Path, top: Path) -> tuple[str, str]:
    """How the module at `module` names the helper module at `helper` (both in the top-level
    package `top`): absolutely (`pkg.utils.printing`) and relatively (`..utils.printing`;
    absolutely too where a folder's name is no identifier)."""
    own = module.resolve().parent.relative_to(top).parts
    there = helper.parent.relative_to(top).parts
    common = 0
    while common < min(len(own), len(there)) and own[common] == there[common]:
        common += 1
    relative = "." * (1 + len(own) - common) + ".".join([*there[common:], helper.stem])
    parts = [top.name, *there, helper.stem]
    absolute = ".".join(parts) if all(p.isidentifier() for p in parts) else relative
    return absolute, relative


def top_package(path: str) -> Path | None:
    """The top-level package folder (resolved) of the module at `path`; None outside packages."""
    folder = Path(path).resolve().parent
    if not (folder / "__init__.py").is_file():
        return None
    while (folder.parent / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return folder


def ours(path: Path) -> bool:
    """Is the file at `path` a helper module a run wrote (a regular file defining the helper at
    its top level)?"""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        tree = ast.parse(fileio.read_source(path).text)
    except (fileio.FileError, OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(isinstance(s, ast.FunctionDef) and s.name == HELPER_NAME for s in tree.body)


def _names_id_print(path: str) -> bool:
    try:
        return b"id_print" in fileio.read_regular(path)
    except (fileio.FileError, OSError):
        return False
