"""The run's metadata edits, planned per project like code edits (issue 34).

After the code is migrated, each project of the run is looked at with its code as it is after
the run (the text written, or that would be written; the file on disk otherwise), so a rerun
after an interrupted run completes what is missing, and `--check` reports it:

- its `jax` floor rises to the highest release that the APIs written into its distribution code
  need (hcmigrate.native_needs: by this run, or, in a file it leaves, since the last commit;
  the project's own uses raise nothing), justified by that line; docs, examples, notebooks and
  tests never raise it (what they need is said in a note). A cap on jax (an upper bound, a
  `-c` constraints file, uv's `constraint-dependencies`) that excludes the floor needed is a
  manual finding, and nothing is raised;
- where its distribution code imports `hcmigrate_compat`, the project declares it
  (hcmigrate.projects.compat_dependency);
- a project whose metadata cannot all be edited (a symlink, a file that cannot be written, a
  metadata file that is not UTF-8) is refused with one line naming the file and why, and none
  of its metadata is edited (two floors that disagree are worse than none).

The same plan feeds the write (fix), the patch (--diff), the report (--check: each pending edit
counts as a change) and --interactive (a hunk each, asked as code is).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from hcmigrate.errors import HcmigrateError
from hcmigrate.projects.ownership import Project, ProjectIndex
from hcmigrate.projects.roles import CODE, role_of

_dotted = ".".join


def shown_path(path: Path) -> str:
    """A metadata file as messages name it: relative to the working folder, `../` included."""
    try:
        return os.path.relpath(Path(path).absolute(), Path.cwd())
    except ValueError:  # (another drive)
        return str(path)


@dataclass
class MetadataEdit:
    """One metadata file's new text and what is said of it."""

    path: Path
    new_text: str
    # what is said of it, written (True) or not: `lines[i](written)`
    lines: list = field(default_factory=list)


@dataclass
class ProjectMetadata:
    """What the run does to one project's metadata."""

    project: Project
    edits: dict[Path, MetadataEdit] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)  # manual: left for a human
    notes: list[str] = field(default_factory=list)  # said, nothing to do
    refused: str | None = None  # one line: why none of its metadata is edited
    raised_floor: tuple[int, ...] | None = None  # the JAX floor the run raises it to, if any


@dataclass
class MetadataPlan:
    projects: list[ProjectMetadata] = field(default_factory=list)

    @property
    def edits(self) -> list[MetadataEdit]:
        return [e for p in self.projects if p.refused is None for e in p.edits.values()]

    @property
    def findings(self) -> list[str]:
        out = []
        for p in self.projects:
            out += ([p.refused] if p.refused else []) + p.findings
        return out


@dataclass(frozen=True)
class CodeFacts:
    """What a module's code asks of its project's metadata."""

    need: tuple[int, ...] = (0,)  # the newest JAX its constructs need (hcmigrate.native_needs)
    use: tuple[str, int] | None = None  # (name, line) of the first construct that needs it
    imports_compat: bool = False  # it imports hcmigrate_compat

    @property
    def says_anything(self) -> bool:
        return self.use is not None or self.imports_compat


_IMPORTS_COMPAT = re.compile(r"^[ \t]*(?:from|import)[ \t]+hcmigrate_compat\b", re.MULTILINE)


def code_facts(
    text: str, notebook: bool = False, several_devices: bool = False, original: str | None = None
) -> CodeFacts:
    """The facts of one module's (or notebook's) text; of what the run wrote into it where
    `original` is the text it rewrote (the project's own uses raise no floor:
    native_needs.written_needs). A notebook's cells (magics do not parse) only say whether
    they import the compat runtime. `several_devices`: the run's several-devices setting
    (native_needs.needs_of)."""
    imports_compat = bool(_IMPORTS_COMPAT.search(text))
    if notebook:
        return CodeFacts(imports_compat=imports_compat)
    from hcmigrate.native_needs import needs_of, written_needs

    needs = (
        needs_of(text, several_devices)
        if original is None
        else written_needs(original, text, several_devices)
    )
    if not needs.uses:
        return CodeFacts(imports_compat=imports_compat)
    name, line, since = needs.above((0,))[0]
    return CodeFacts(since, (name, line), imports_compat)


@dataclass
class CodeFile:
    """A file of the run as it is after the run: the facts of the text written (or that would
    be), or None where the file is as it is on disk."""

    path: Path
    facts: CodeFacts | None = None


# Names of constructs too common in any code to pick files by (`tree.map`, not `map`).
_COMMON_NAMES = frozenset(
    {"print", "map", "callback", "flatten", "leaves", "structure", "transpose", "unflatten"}
    | {"backend", "typeof"}
)


def _needs_prefilter() -> re.Pattern:
    """What code_facts reads, as bytes a file on disk must contain to be read at all: each
    construct's last name where it is distinctive (`io_callback`, `effects_barrier`), else its
    last two (`debug.print`, `tree.map`, `jax.Array`: a bare `print` or `map` is in every
    file). The files the run wrote are read whatever they contain (their CodeFacts)."""
    from hcmigrate.native_needs import SINCE

    words = {"hcmigrate_compat"}
    for name in SINCE:
        parts = name.split(".")
        generic = parts[-1] in _COMMON_NAMES or parts[-1][:1].isupper() and "_" not in parts[-1]
        words.add(".".join(parts[-2:]) if generic else parts[-1])
    return re.compile(rb"\b(?:" + b"|".join(re.escape(w.encode()) for w in sorted(words)) + rb")\b")


def plan_metadata(
    files: list[CodeFile],
    index: ProjectIndex,
    *,
    raise_floor: bool = True,
    several_devices: bool = False,
) -> MetadataPlan:
    """The metadata edits of the run whose files (as they are after it) are `files`
    (`several_devices`: the run's setting, for the files it did not write)."""
    by_project: dict[Project, list[CodeFile]] = {}
    for f in files:
        owner = index.owner(f.path)
        if owner is not None:
            by_project.setdefault(owner, []).append(f)
    plan = MetadataPlan()
    prefilter = _needs_prefilter() if by_project else None
    committed = _Committed()
    for project, owned in by_project.items():
        done = _plan_project(project, owned, prefilter, raise_floor, committed, several_devices)
        if not any(f.facts is not None for f in owned):
            # (the run wrote none of this project's code: a floor its metadata cannot say is
            # told, not left as the run's manual work; its edits are still made, which
            # completes a run interrupted before them. A compat runtime the code imports and
            # the metadata does not declare stays a finding until it is declared.)
            floors = [line for line in done.findings if "HCB008 [manual] " in line]
            done.notes += [line.replace("HCB008 [manual] ", "note: ") for line in floors]
            done.findings = [line for line in done.findings if line not in floors]
        if done.edits or done.findings or done.notes or done.refused:
            plan.projects.append(done)
    return plan


def _facts(
    f: CodeFile, prefilter: re.Pattern, committed: _Committed, several_devices: bool
) -> CodeFacts | None:
    """The facts of a file as it is after the run: what the run wrote into it (its CodeFacts),
    else, for a file it leaves, what was written into it since the last commit (a rerun
    completes what an interrupted run left; the project's own code raises no floor), or, out
    of a git work tree, what it uses."""
    if f.facts is not None:
        return f.facts
    try:
        data = f.path.read_bytes()
    except OSError:
        return None
    if not prefilter.search(data):
        return None
    text = data.decode("utf-8", "replace")
    return code_facts(
        text,
        f.path.suffix == ".ipynb",
        several_devices,
        original=committed.original(f.path),
    )


class _Committed:
    """The text each file had at the last commit of its git work tree (HEAD): a file the run
    leaves was written by an earlier run only where it changed since (hcmigrate writes no
    commit). Out of a git work tree (or without git, or a commit), nothing is known."""

    def __init__(self) -> None:
        self._trees: dict[Path, tuple[Path, frozenset[str], frozenset[str]] | None] = {}

    def original(self, path: Path) -> str | None:
        """`path`'s text at HEAD (its text now where it is unchanged), or None: unknown (not
        tracked, or no git work tree)."""
        path = Path(path).absolute()
        tree = self._tree(path.parent)
        if tree is None:
            return None
        top, tracked, changed = tree
        try:
            relative = path.resolve().relative_to(top).as_posix()
        except ValueError:
            return None
        if relative not in tracked:
            return None
        if relative not in changed:
            try:
                return path.read_text("utf-8", "replace")
            except OSError:
                return None
        shown = _git(top, "show", f"HEAD:{relative}")
        return None if shown is None else shown.decode("utf-8", "replace")

    def _tree(self, folder: Path):
        if folder in self._trees:
            return self._trees[folder]
        found = None
        top = _git(folder, "rev-parse", "--show-toplevel")
        if top is not None:
            root = Path(top.decode("utf-8", "replace").strip()).resolve()
            if root in self._trees:
                found = self._trees[root]
            else:
                tracked = _git(root, "ls-files", "-z")
                changed = _git(root, "diff", "--name-only", "-z", "HEAD", "--")
                if tracked is not None and changed is not None:
                    found = (root, _names(tracked), _names(changed))
                self._trees[root] = found
        self._trees[folder] = found
        return found


def _names(output: bytes) -> frozenset[str]:
    return frozenset(n.decode("utf-8", "surrogateescape") for n in output.split(b"\0") if n)


def _git(folder: Path, *args: str) -> bytes | None:
    """git's output in `folder`, or None where it fails (no work tree, no commit, no git)."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            timeout=120,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _plan_project(
    project: Project,
    files: list[CodeFile],
    prefilter: re.Pattern,
    raise_floor: bool,
    committed: _Committed,
    several_devices: bool = False,
) -> ProjectMetadata:
    from hcmigrate.projects.compat_dependency import declare_compat
    from hcmigrate.projects.constraints import jax_caps
    from hcmigrate.projects.floors import FloorRaise, Kept, plan_raise
    from hcmigrate.projects.requirements import declared_jax_floor, unread_jax_declarations

    out = ProjectMetadata(project)
    need: tuple[int, ...] = (0,)
    why = None  # (path, line, name) of the first use that needs `need`
    other_needs = []  # (role, path, line, name, since): docs and tests
    imports_compat = False
    for f in files:
        facts = _facts(f, prefilter, committed, several_devices)
        if facts is None or not facts.says_anything:
            continue
        role = role_of(project, f.path)
        if role == CODE:
            imports_compat = imports_compat or facts.imports_compat
            if facts.use is not None and facts.need > need:
                need, why = facts.need, (f.path, facts.use[1], facts.use[0])
        elif facts.use is not None:
            other_needs.append((role, f.path, facts.use[1], facts.use[0], facts.need))
    overlay: dict[Path, str] = {}
    raised_jax = False
    if why is not None and raise_floor:
        need_text = _dotted(map(str, need))
        justification = f"{shown_path(why[0])}:{why[1]} uses {why[2]} (JAX >= {need_text})"
        raised = plan_raise(project.metadata_root, need)
        declared = declared_jax_floor(project.metadata_root)
        if declared is None or declared[0] < need:
            for path, form in unread_jax_declarations(project.metadata_root):
                out.findings.append(
                    f"{shown_path(path)}: HCB008 [manual] declares its requirements in a form "
                    f"hcmigrate does not read, {form}: if jax is there, raise it to >= "
                    f"{need_text} by hand ({justification})"
                )
        caps = [c for c in jax_caps(project.metadata_root) if not c.allows(need_text)]
        if raised is not None and caps:
            for cap in caps:
                out.findings.append(
                    f"{shown_path(cap.path)}: HCB008 [manual] `{cap.text}` caps jax below "
                    f"{need_text}, which {justification}: the project's JAX floor is not raised"
                )
        elif isinstance(raised, Kept):
            out.findings.append(
                f"{shown_path(raised.path)}: HCB008 [manual] the project's JAX floor is not "
                f"raised to {need_text}, which {justification}: {raised.reason}"
            )
        elif isinstance(raised, FloorRaise):
            raised_jax = any(c.name == "jax" for c in raised.changes)
            for path, reason in raised.left:
                out.findings.append(
                    f"{shown_path(path)}: HCB008 [manual] not raised to {need_text} (which "
                    f"{justification}) with the project's floor: {reason}; raise it by hand, "
                    "with what that JAX requires, where this file's environment should run the "
                    "migrated code"
                )
            for path, text in raised.texts.items():
                overlay[path] = text
                out.edits[path] = MetadataEdit(path, text)
            for change in raised.changes:
                out.edits[change.path].lines.append(
                    lambda written, c=change, r=raised: (
                        f"{shown_path(c.path)}:{c.line}:{c.col}: HCB008 [fixed] "
                        f"{r.said(c, written, justification)}"
                    )
                )
    declared = declared_jax_floor(project.metadata_root)
    # (a floor the run raised where the project declares jax, an extra's included, is said)
    if declared is None and why is not None and not out.findings and not raised_jax:
        need_text = _dotted(map(str, need))
        listed = (
            "lists jax without a floor"
            if _lists_jax(project.metadata_root)
            else "does not declare jax (an optional dependency, or its users' choice)"
        )
        out.notes.append(
            f"{shown_path(why[0])}:{why[1]}: note: uses {why[2]}, which needs JAX >= "
            f"{need_text}; the project {listed}: say `jax>={need_text}` where it names jax"
        )
    floor = max(need, declared[0]) if declared else None
    for role, path, line, name, since in other_needs:
        if floor is not None and since > floor:
            out.notes.append(
                f"{shown_path(path)}:{line}: note: uses {name}, which needs JAX "
                f">= {_dotted(map(str, since))}, above the project's JAX floor; {role} do not "
                "ship: the floor is not raised for them"
            )
    if imports_compat:
        declaration = declare_compat(project.metadata_root, overlay)
        if declaration is not None and declaration.problem is not None:
            out.findings.append(declaration.message(False))
        elif declaration is not None:
            for d in [declaration, *declaration.also]:
                out.edits.setdefault(d.path, MetadataEdit(d.path, d.new_text)).new_text = d.new_text
            out.edits[declaration.path].lines.append(
                lambda written, d=declaration: d.message(written)
            )
    out.refused = _refusal(project, out)
    if raised_jax and out.refused is None:
        out.raised_floor = need
    for lock, command in _LOCKS:
        edited = project.metadata_root / "pyproject.toml" in out.edits
        if edited and out.refused is None and (project.metadata_root / lock).is_file():
            out.notes.append(
                f"{shown_path(project.metadata_root / lock)}: note: pyproject.toml's requirements "
                f"changed: run `{command}` to bring the lock up to date"
            )
    return out


# Lock files beside a pyproject whose requirements an edit changes, and what updates each.
_LOCKS = (
    ("poetry.lock", "poetry lock --no-update"),
    ("uv.lock", "uv lock"),
    ("pdm.lock", "pdm lock --update-reuse"),
)


def _lists_jax(root: Path) -> bool:
    """Does the project list jax among its requirements (with or without a floor)?"""
    from hcmigrate.verify.project_deps import project_dependencies

    try:
        declared = project_dependencies(root).declared
    except Exception:  # (a metadata file this reader cannot read: said elsewhere)
        return False
    return any(re.match(r"\s*jax\b(?![-_.\w])", text) for _, text in declared)


def _refusal(project: Project, out: ProjectMetadata) -> str | None:
    """Why none of the project's metadata can be edited (the first problem), or None."""
    from hcmigrate.files import check_writable, read_source
    from hcmigrate.projects.requirements import metadata_files

    if not out.edits:
        return None
    for path in sorted(set(metadata_files(project.metadata_root)) | set(out.edits)):
        if not path.exists() and not path.is_symlink():
            continue
        try:
            if path.is_symlink():
                target = path.resolve()
                where = "inside" if project.contains(target) else "outside"
                raise _Refused(
                    f"is a symlink (to {os.readlink(path)}, {where} the project): hcmigrate "
                    "does not write through it"
                )
            read_source(path)
            if path in out.edits:
                check_writable(path)
                _check_not_immutable(path)
        except (_Refused, HcmigrateError) as exc:
            message = exc.args[0] if isinstance(exc, _Refused) else exc.message
            return (
                f"{shown_path(path)}: manual: {message}; none of this project's metadata is "
                "edited (edit it by hand as the lines above say)"
            )
    return None


class _Refused(Exception):
    pass


def _check_not_immutable(path: Path) -> None:
    """An immutable file (chattr +i) is writable by mode for root, yet cannot be replaced:
    opening it to append (writing nothing) tells."""
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise _Refused(f"cannot be written ({exc.strerror or exc})") from None
