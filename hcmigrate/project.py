"""A run over files and folders: which files, which options each one gets (its view of the
project model, hcmigrate.project_model), their migration in the order of the file list, and standard input.

What the command line does, as a library (hcmigrate.api re-exports it); the CLI only parses
options and prints.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterator

from hcmigrate import files as fileio
from hcmigrate.cache import ResultCache, diagnostics_of
from hcmigrate.discover import Selection, Target
from hcmigrate.local_jax import LocalJax
from hcmigrate.options import Options
from hcmigrate.projects.ownership import ProjectIndex
from hcmigrate.results import CHANGED, SKIPPED, UNCHANGED, FileResult
from hcmigrate.settings import Settings


@dataclass
class RunPlan:
    """The files of a run and what will be done with each."""

    selection: Selection  # every file found, and the paths skipped or in error
    tasks: list  # (index into selection.targets, hcmigrate.runner.Task), the candidates
    results: dict[int, FileResult]  # results known without migrating (generated files)
    passed: int  # files the pre-filter passed: unchanged, and given no result of their own
    removed: list[str] = dataclasses.field(default_factory=list)  # stale temp files removed
    file_timeout: float | None = None  # each file's time budget, in seconds (Settings)
    # The projects of the run (hcmigrate.projects): the metadata edits read them after the run.
    projects: ProjectIndex = dataclasses.field(default_factory=ProjectIndex)
    # What the run says once (hcmigrate.local_jax: modules a local `jax` shadows JAX for).
    notes: list[str] = dataclasses.field(default_factory=list)
    target_notes: list[str] = dataclasses.field(default_factory=list)  # each project's JAX (-v)
    # Modules the run creates: the id_print helper its package's modules share
    # (hcmigrate.shared_helpers.NewFile; each one's result once planned or written)
    new_files: list = dataclasses.field(default_factory=list)

    @property
    def targets(self) -> list[Target]:
        return self.selection.targets


def plan_run(
    paths: list[str], settings: Settings, mode: str, jobs: int, cache: ResultCache | None = None
) -> RunPlan:
    """Select the files under `paths`, pre-filter them (hcmigrate.prefilter), build the project
    model (hcmigrate.project_model: the legacy names modules take from each other, the
    transformations they apply to each other's functions) and each candidate's options.
    `mode`: "fix", "check", "diff" or "review"."""
    from hcmigrate.prefilter import scan
    from hcmigrate.project_model.bindings import module_name
    from hcmigrate.project_model.build import build_run_model
    from hcmigrate.project_model.x64_mode import PackageSwitches
    from hcmigrate.removed_exports import add_callers as add_removed_callers
    from hcmigrate.removed_exports import find as find_removed_exports
    from hcmigrate.runner import Task, load_codemod
    from hcmigrate.shared_helpers import share_helpers

    selection = settings.selector().select(paths)
    targets = selection.targets
    # Temporary files that a killed run left behind (their writer is dead) go when files are
    # written again.
    removed = fileio.remove_stale_temp_files(selection.temp_files) if mode == "fix" else []
    # The codemod's import overlaps the scan, unless cached results may make it needless.
    scanned = scan(
        [t.display for t in targets],
        notebook_flags=[t.notebook for t in targets],
        jobs=jobs,
        on_first_candidate=None if cache is not None and len(cache) else load_codemod,
    )
    # (modules calling a JAX function through another module's name for it: issue 36)
    removed_exports, callers = find_removed_exports(scanned, targets)
    add_removed_callers(scanned, callers)
    model = build_run_model(scanned, targets)
    # Each file's project (hcmigrate.projects) decides the JAX its code targets (its declared
    # floor, or the floor the native rewrite needs where the run raises it) and its style.
    index = ProjectIndex()
    run_options = settings.options
    # Only the files that need one (generated files, candidates) get a result: the many files
    # the pre-filter passed are only counted (a whole-tree run would otherwise build one object
    # per file for nothing).
    results: dict[int, FileResult] = {}
    options_of: dict[int, Options] = {}
    notes: list[str] = []  # where each project's JAX target came from (-v)
    problems: list[tuple[str, str]] = []  # metadata files that could not be read
    x64_switches = PackageSwitches()
    local_jax, shadowed = LocalJax(), {}
    for i in sorted(scanned.generated | scanned.candidates):
        target = targets[i]
        if i in scanned.generated:
            results[i] = FileResult(
                fileio.printable(target.display),
                SKIPPED,
                error="generated file (" + "@gen" + "erated marker)",
                notebook=target.notebook,
            )
            continue
        shadow = local_jax.shadowing(target.display)
        if shadow is not None:  # (its `import jax` is the project's own module)
            results[i] = FileResult(
                fileio.printable(target.display),
                SKIPPED,
                error=f"`import jax` here is the local {shadow}, not JAX: left as it is",
                notebook=target.notebook,
            )
            shadowed.setdefault(shadow, []).append(fileio.printable(target.display))
            continue
        # (the module's own package is isort's first-party section for the imports it gets)
        options = dataclasses.replace(
            run_options,
            module_name=module_name(target.display),
            strategy=settings.strategy_of(target.display),
        )
        owner = index.owner(target.display)
        if owner is not None:
            # (where the floor can be raised, every module targets the raised one: the run
            # raises the floor to what the code then needs, hcmigrate.projects.metadata_plan,
            # so no module asks a human for what the run does)
            options = _with_project_options(options, owner, settings, notes, problems)
        view = model.views.get(i)
        if view is not None:
            options = dataclasses.replace(
                options, reexports=view.reexports, runs_under=view.runs_under
            )
        if removed_exports:
            options = dataclasses.replace(options, removed_exports=removed_exports)
        if i in model.importers:
            options = dataclasses.replace(options, reexporters_imported=model.importers[i])
        if not target.notebook:
            x64 = x64_switches.enabled_by(target.display)
            if x64 is not None:
                options = dataclasses.replace(options, x64_on_import=x64)
        options_of[i] = options
    # (modules of one package that print containers share one id_print helper)
    new_files = share_helpers(
        targets,
        options_of,
        mode,
        jobs,
        settings.file_timeout,
        scanned.unparsed,
        settings.id_print_helper,
    )
    tasks = [
        (
            i,
            Task(
                targets[i].display,
                fileio.printable(targets[i].display),
                targets[i].notebook,
                mode,
                options,
                precheck=i in scanned.unparsed,
            ),
        )
        for i, options in options_of.items()
    ]
    passed = len(targets) - len(results) - len(tasks)
    selection.errors.extend(p for p in problems if p not in selection.errors)
    said = [
        f"note: {shadow} is a local module named like JAX, found before the installed JAX on "
        f"the import path of {len(names)} module(s) ({', '.join(names[:3])}"
        f"{', ...' if len(names) > 3 else ''}): nothing in them is rewritten as JAX"
        for shadow, names in shadowed.items()
    ]
    return RunPlan(
        selection,
        tasks,
        results,
        passed,
        removed,
        settings.file_timeout,
        index,
        said,
        notes,
        new_files,
    )


def _with_project_options(
    options: Options, owner, settings: Settings, notes: list[str], problems: list
) -> Options:
    """`options` for a file of the project `owner`: its JAX target and its style."""
    from hcmigrate.projects.style import project_style
    from hcmigrate.projects.targets import jax_requirements, jax_target

    style = project_style(owner)
    options = dataclasses.replace(
        options,
        jax_requirements=jax_requirements(owner),
        line_length=settings.line_length or style.line_length or options.line_length,
        line_length_stated=bool(settings.line_length or style.line_length),
        import_style=style.import_style,
        numpy_alias=style.numpy_alias,
        yapf_style=style.yapf_style,
    )
    if settings.target_given:
        return options
    target = jax_target(
        owner, strategy=settings.options.strategy, raise_jax_pin=settings.raise_jax_pin
    )
    for note in [target.note] if target.note and target.note not in notes else []:
        notes.append(note)
    problems.extend(p for p in target.problems if p not in problems)
    options = dataclasses.replace(options, floor_raisable_to=target.raisable_to)
    if target.raise_to is not None:
        return dataclasses.replace(
            options, target_jax=target.raise_to, declared_jax=target.declared
        )
    return dataclasses.replace(options, target_jax=target.declared)


def migrate_files(
    plan: RunPlan, jobs: int, cache: ResultCache | None = None
) -> Iterator[FileResult]:
    """One result per task of `plan`, in order (worker processes when it pays; in fix mode
    each file is written, atomically). In fix mode the files the run creates
    (`plan.new_files`) are written first, when this is called."""
    from hcmigrate.runner import run_tasks
    from hcmigrate.shared_helpers import write_new_files

    if plan.new_files and any(task.mode == "fix" for _, task in plan.tasks):
        plan.tasks = write_new_files(plan.new_files, plan.tasks)
    return run_tasks([task for _, task in plan.tasks], jobs, cache, plan.file_timeout)


@dataclass
class StreamResult:
    """Standard input migrated: what to write to standard output, and the file's result."""

    output: bytes | None  # None: nothing to write (--check, --diff)
    result: FileResult | None  # None: the file is excluded
    diff: bytes | None = None


def read_stream(stream) -> bytes:
    """All of a binary stream (standard input), at most hcmigrate.files.MAX_FILE_BYTES; a
    FileError for more (`hcmigrate - < /dev/zero` must not read until memory runs out)."""
    limit = fileio.MAX_FILE_BYTES
    try:
        data = stream.read(limit + 1)
    except OSError as exc:
        raise fileio.FileError(f"cannot read standard input: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise fileio.FileError(fileio.too_large(len(data), limit) + " (standard input)")
    return data


def migrate_stream(data: bytes, name: str, settings: Settings, mode: str) -> StreamResult:
    """Migrate a file's bytes read from standard input (`name`: what the file is called, for
    messages, notebooks and --force-exclude). Raises HcmigrateError for a file left unchanged.
    The migration runs in a worker process where one can be forked safely (a crash of the
    parser is then the file's error), and Python's parser judges the text first."""
    from hcmigrate.errors import MigrationError
    from hcmigrate.runner import Task, laid_out, patch_diff, run_isolated

    if name != "-" and settings.force_exclude:
        selection = settings.selector(force_exclude=True).select([name])
        if not selection.targets and selection.skipped:
            return StreamResult(data if mode == "fix" else None, None)
    notebook = name.endswith(".ipynb")
    text, encoding, bom = fileio.decode_utf8(data) if notebook else fileio.decode_python(data)
    shown = fileio.printable(name)
    options = settings.options
    if name != "-":
        options = dataclasses.replace(options, strategy=settings.strategy_of(name))
    owner = ProjectIndex().owner(name) if name != "-" else None
    if owner is not None:
        options = _with_project_options(options, owner, settings, [], [])
    task = Task("-", shown, notebook, mode, options, precheck=True)
    outcome = run_isolated(task, text, settings.file_timeout)
    if outcome["error"] is not None:
        message, line, cell = outcome["error"]
        raise MigrationError(message, line, None, cell)
    new = text if outcome["new"] is None else laid_out(task, text, outcome["new"])
    diagnostics = diagnostics_of(outcome)
    result = FileResult(
        shown, CHANGED if new != text else UNCHANGED, diagnostics, notebook=notebook
    )
    try:
        encoded = (b"\xef\xbb\xbf" if bom else b"") + new.encode(encoding)
    except UnicodeEncodeError as exc:
        raise fileio.FileError(
            f"the rewrite has a character ({exc.object[exc.start]!r}) that the input's "
            f"encoding ({encoding}) cannot hold"
        ) from None
    if mode in ("fix", "review"):
        return StreamResult(encoded, result)
    diff = patch_diff(data, encoded, name) if mode == "diff" and new != text else None
    return StreamResult(None, result, diff)
