"""The `hcmigrate` command line: a thin layer over hcmigrate.api, hcmigrate.runner and friends.

Exit codes: 0 nothing to do / done; 1 changes needed (--check) or, when rewriting, findings
left for a human (`manual` diagnostics); 2 usage error, bad configuration, or a file that could
not be processed.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import click

from hcmigrate import __version__
from hcmigrate import files as fileio
from hcmigrate.api import Options
from hcmigrate.cache import ResultCache, cache_directory
from hcmigrate.config import STRATEGIES, load_config, parse_version, pinned_jax, shown
from hcmigrate.errors import ConfigError, HcmigrateError
from hcmigrate.report import (
    FORMATS,
    Summary,
    all_rules,
    github_report,
    json_report,
    sarif_report,
    statistics_text,
)
from hcmigrate.runner import (
    CHANGED,
    FAILED,
    SKIPPED,
    UNCHANGED,
    FileResult,
    Task,
    default_jobs,
    load_codemod,
    run_as_program,
    run_tasks,
)

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
PROGRESS_MIN_FILES = 20


def _split_codes(values: tuple[str, ...]) -> list[str]:
    out = []
    for v in values:
        out += [c.strip().upper() for c in v.split(",") if c.strip()]
    return out


def _check_codes(codes: list[str], option: str) -> None:
    if not codes:
        return  # the rule registry imports libcst (~0.1 s): only load it when there is a code to check
    known = [r.code for r in all_rules()]
    for code in codes:
        if not code.startswith("HCB") or not code[3:].isdigit() and code != "HCB":
            raise click.UsageError(
                f"{option}: '{code}' is not a rule code (codes look like HCB101, or a prefix like HCB1)"
            )
        if (
            known
            and code != "HCB"
            and not any(k.startswith(code) for k in known)
            and not code.startswith("HCB9")
        ):
            raise click.UsageError(
                f"{option}: unknown rule code '{code}' (see hcmigrate --list-rules)"
            )


def list_rules() -> str:
    rules = all_rules()
    if not rules:
        return "no rules registered"
    lines = []
    for r in rules:
        lines.append(f"{r.code}  {r.name}  [{r.level.value}]")
        lines.append(f"    {r.summary}")
        if getattr(r, "behaviour_note", ""):
            lines.append(f"    behaviour: {r.behaviour_note}")
    return "\n".join(lines)


class _Ctx:
    """Everything a run needs, resolved from the command line and the config file."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def _resolve(
    paths,
    stdin_filename,
    config_path,
    strategy,
    add_todos,
    select,
    ignore,
    target_jax,
    exclude,
    include,
    force_exclude,
    respect_gitignore,
    verbose,
):
    start = Path(stdin_filename or (paths[0] if paths and paths[0] != "-" else ".")).absolute()
    try:
        cfg = load_config(
            start if start.exists() else start.parent, Path(config_path) if config_path else None
        )
    except ConfigError as exc:
        raise _Fatal(f"error: {exc}")
    v = cfg.values
    notes = []
    if cfg.path:
        notes.append(f"config: {shown(cfg.path)}")
    root = cfg.root or Path.cwd()

    strategy = strategy or v.get("strategy", "native")
    add_todos = v.get("add-todos", False) if add_todos is None else add_todos
    select = _split_codes(select) if select else [c.upper() for c in v.get("select", [])]
    ignore = _split_codes(ignore) if ignore else [c.upper() for c in v.get("ignore", [])]
    try:
        _check_codes(select, "--select")
        _check_codes(ignore, "--ignore")
    except click.UsageError as exc:
        raise _Fatal(f"error: {exc.message}")

    target = None
    try:
        if target_jax:
            target = parse_version(target_jax)
            notes.append(f"target JAX {target_jax} (--target-jax)")
        elif "target-jax" in v:
            target = parse_version(v["target-jax"])
            notes.append(f"target JAX {v['target-jax']} ({shown(cfg.path)})")
        else:
            pinned = pinned_jax(root)
            if pinned:
                target = pinned[0]
                notes.append(f"target JAX {'.'.join(map(str, target))} (from {pinned[1]})")
    except ConfigError as exc:
        raise _Fatal(f"error: {exc}")

    exclude_patterns = list(exclude) if exclude else list(v.get("exclude", []))
    exclude_patterns += list(v.get("extend-exclude", []))
    include_patterns = (
        list(include) if include else (list(v["include"]) if "include" in v else None)
    )
    force_exclude = force_exclude or v.get("force-exclude", False)
    respect_gitignore = (
        v.get("respect-gitignore", True) if respect_gitignore is None else respect_gitignore
    )
    options = Options(
        strategy=strategy,
        add_todos=add_todos,
        select=frozenset(select) if select else None,
        ignore=frozenset(ignore),
        target_jax=target,
    )
    return _Ctx(
        options=options,
        root=root,
        exclude=exclude_patterns,
        include=include_patterns,
        force_exclude=force_exclude,
        respect_gitignore=respect_gitignore,
        notes=notes,
    )


class _Fatal(Exception):
    pass


def _err(msg: str) -> None:
    click.echo(msg, err=True)


# ---------------------------------------------------------------------------------------------
@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.argument("paths", nargs=-1, type=str)
@click.option(
    "--diff", "diff", is_flag=True, help="Print a unified diff of the changes; write nothing."
)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if any file would change.")
@click.option(
    "--interactive", is_flag=True, help="Show each change as a diff hunk and ask y/n/all/quit."
)
@click.option(
    "--strategy",
    type=click.Choice(STRATEGIES),
    default=None,
    help="native: rewrite onto modern JAX (default). compat: point imports at compat.host_callback.",
)
@click.option(
    "--add-todos/--no-add-todos",
    default=None,
    help="Add a `# TODO(hcmigrate): HCBxxx` comment at sites left for a human.",
)
@click.option(
    "--select",
    multiple=True,
    metavar="CODES",
    help="Only apply these rule codes (comma-separated; prefixes allowed).",
)
@click.option(
    "--ignore",
    multiple=True,
    metavar="CODES",
    help="Do not apply these rule codes (comma-separated; prefixes allowed).",
)
@click.option(
    "--list-rules",
    is_flag=True,
    help="Print every rule with its level and behaviour note, then exit.",
)
@click.option(
    "--target-jax",
    metavar="X.Y.Z",
    default=None,
    help="Oldest JAX the generated code must run on (default: the project's pins, else newest).",
)
@click.option("--output-format", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("--statistics", is_flag=True, help="Print how many sites each rule matched.")
@click.option(
    "--exclude",
    multiple=True,
    metavar="GLOB",
    help="Skip files/folders matching this gitignore-style glob (repeatable).",
)
@click.option(
    "--include",
    multiple=True,
    metavar="GLOB",
    help="Which files to pick up when walking folders (default *.py, *.ipynb).",
)
@click.option(
    "--force-exclude",
    is_flag=True,
    help="Apply --exclude and .gitignore to explicitly named files too.",
)
@click.option(
    "--respect-gitignore/--no-respect-gitignore",
    default=None,
    help="Honour .gitignore in a git work tree (default on).",
)
@click.option(
    "--stdin-filename",
    metavar="PATH",
    default=None,
    help="The name of the file read from `-` (for messages and config).",
)
@click.option(
    "--config",
    "config_path",
    metavar="PYPROJECT",
    default=None,
    type=click.Path(dir_okay=False),
    help="Read [tool.hcmigrate] from this file instead of the nearest pyproject.toml.",
)
@click.option(
    "--no-cache",
    is_flag=True,
    help="Migrate every candidate file again instead of reusing cached results.",
)
@click.option(
    "--cache-dir",
    metavar="DIR",
    default=None,
    type=click.Path(file_okay=False),
    help="Where results are cached (default: .hcmigrate_cache in the project root; env HCMIGRATE_RESULT_CACHE_DIR).",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: all cores).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print only errors.")
@click.option(
    "-v", "--verbose", count=True, help="Also list unchanged and skipped files, config and timing."
)
@click.version_option(__version__, "--version", prog_name="hcmigrate")
def cli(
    paths,
    diff,
    check,
    interactive,
    strategy,
    add_todos,
    select,
    ignore,
    list_rules,
    target_jax,
    output_format,
    statistics,
    exclude,
    include,
    force_exclude,
    respect_gitignore,
    stdin_filename,
    config_path,
    no_cache,
    cache_dir,
    jobs,
    quiet,
    verbose,
):
    """Migrate JAX code off jax.experimental.host_callback.

    Rewrites the .py files and .ipynb notebooks under PATH... in place. `-` reads standard input
    and writes standard output. `hcmigrate verify ...` runs the differential tester instead
    (a file named `verify` is passed as ./verify).
    """
    if list_rules:
        click.echo(globals()["list_rules"]())
        sys.exit(EXIT_OK)
    if not paths:
        raise click.UsageError("no PATH given (use `-` to read standard input)")
    if sum(map(bool, (diff, check, interactive))) > 1:
        raise click.UsageError("--diff, --check and --interactive cannot be combined")
    if "-" in paths and len(paths) > 1:
        raise click.UsageError("`-` (standard input) cannot be combined with other paths")
    mode = "diff" if diff else "check" if check else "review" if interactive else "fix"
    try:
        ctx = _resolve(
            paths,
            stdin_filename,
            config_path,
            strategy,
            add_todos,
            select,
            ignore,
            target_jax,
            exclude,
            include,
            force_exclude,
            respect_gitignore,
            verbose,
        )
    except _Fatal as exc:
        _err(str(exc))
        sys.exit(EXIT_ERROR)
    if verbose:
        for note in ctx.notes:
            _err(note)
    if paths == ("-",):
        sys.exit(_run_stdin(ctx, mode, stdin_filename, output_format, quiet))
    cache = None if no_cache else cache_directory(ctx.root, cache_dir)
    sys.exit(
        _run_paths(ctx, list(paths), mode, output_format, statistics, jobs, quiet, verbose, cache)
    )


def _run_stdin(ctx, mode: str, stdin_filename: str | None, output_format: str, quiet: bool) -> int:
    from hcmigrate.runner import migrate_text

    name = stdin_filename or "-"
    notebook = name.endswith(".ipynb")
    data = sys.stdin.buffer.read()  # bytes: the file's own encoding is honoured
    out = sys.stdout.buffer
    if stdin_filename and ctx.force_exclude:
        from hcmigrate.discover import Selector

        sel = Selector(ctx.root, ctx.exclude, ctx.include, True, ctx.respect_gitignore).select(
            [stdin_filename]
        )
        if not sel.targets and sel.skipped:
            if mode == "fix":
                out.write(data)
            return EXIT_OK
    try:
        text, encoding, bom = fileio.decode_utf8(data) if notebook else fileio.decode_python(data)
        new, diagnostics = migrate_text(text, ctx.options, name, notebook)
    except HcmigrateError as exc:
        _err(f"error: {exc.location(name)}: {exc.message}")
        if mode == "fix":
            out.write(data)
        return EXIT_ERROR
    result = FileResult(name, CHANGED if new != text else UNCHANGED, diagnostics, notebook=notebook)
    if mode == "fix" or mode == "review":
        payload = new.encode(encoding)
        out.write((b"\xef\xbb\xbf" if bom else b"") + payload)
        out.flush()
    elif mode == "diff" and new != text:
        from hcmigrate.runner import unified_diff

        click.echo(unified_diff(text, new, name), nl=False)
    summary = Summary()
    summary.add(result)
    if output_format == "text":
        if not quiet:
            for d in diagnostics:
                _err(d.format(name))
    else:
        _err(_machine_report(output_format, [result], summary, False, mode))
    return _exit_code(mode, summary)


def _machine_report(fmt: str, results, summary, statistics: bool, mode: str) -> str:
    if fmt == "json":
        return json_report(results, summary, statistics)
    if fmt == "sarif":
        return sarif_report(results, summary)
    return github_report(results, mode)


def _progress(total: int, enabled: bool):
    if not enabled:
        return None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn("hcmigrate"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    progress.start()
    progress.add_task("files", total=total)
    return progress


def _run_paths(
    ctx,
    paths: list[str],
    mode: str,
    output_format: str,
    statistics: bool,
    jobs: int | None,
    quiet: bool,
    verbose: int,
    cache_dir: Path | None = None,
) -> int:
    from hcmigrate.discover import Selector
    from hcmigrate.prefilter import imported_names, module_name, scan

    t0 = time.perf_counter()
    jobs = jobs or default_jobs()
    cache = ResultCache.load(cache_dir) if cache_dir is not None else None
    selector = Selector(
        ctx.root, ctx.exclude, ctx.include, ctx.force_exclude, ctx.respect_gitignore
    )
    sel = selector.select(paths)
    targets = sel.targets
    # The codemod's import overlaps the scan, unless cached results may make it needless.
    scanned = scan(
        [t.display for t in targets],
        notebook_flags=[t.notebook for t in targets],
        jobs=jobs,
        on_first_candidate=None if cache is not None and len(cache) else load_codemod,
    )
    # Legacy names that modules of the tree import from other modules of the tree: the codemod
    # resolves them in the importers, and keeps them importable in the exporting module.
    reexport_table: tuple[tuple[str, str], ...] = ()
    if scanned.reexports and scanned.reexport_hits:  # some module takes legacy names from another
        taken: set[str] = set()
        for i in scanned.candidates:
            if not targets[i].notebook:
                path = targets[i].path
                try:
                    text = path.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                taken |= imported_names(
                    text, module_name(path), is_package=path.name == "__init__.py"
                )
        reexport_table = tuple(
            sorted(
                (f"{r.module}.{name}", target)
                for r in scanned.reexports
                for name, target in r.targets
                if target
                and (
                    f"{r.module}.{name}" in taken
                    or any(t.startswith(f"{r.module}.{name}.") for t in taken)
                )
            )
        )
    exports = {r.module: r.names for r in scanned.reexports}
    reexport_of = {
        i: tuple((m, tuple(sorted(exports[m]))) for m in mods if m in exports)
        for i, mods in scanned.reexport_hits.items()
    }
    task_mode = mode
    # Results of the files that need one (generated files, candidates), by index: the many files
    # the pre-filter passed are only counted, never given a FileResult (a whole-tree run would
    # otherwise build one object per file for nothing).
    results: dict[int, FileResult] = {}
    tasks: list[tuple[int, Task]] = []
    for i in sorted(scanned.generated | scanned.candidates):
        t = targets[i]
        if i in scanned.generated:
            results[i] = FileResult(
                t.display,
                SKIPPED,
                error="generated file (" + "@gen" + "erated marker)",
                notebook=t.notebook,
            )
        else:
            options = ctx.options
            if reexport_table:
                options = dataclasses.replace(
                    options, reexports=reexport_table, module_name=module_name(t.display)
                )
            if i in reexport_of:
                options = dataclasses.replace(options, reexporters_imported=reexport_of[i])
            tasks.append(
                (
                    i,
                    Task(t.display, t.display, t.notebook, task_mode, options),
                )
            )
    passed = len(targets) - len(results) - len(tasks)

    # Diff output streams to stdout; every other human-readable line goes to stdout unless --diff.
    text_out = output_format == "text"
    to_err = mode == "diff" or not text_out

    def say(msg: str) -> None:
        click.echo(msg, err=to_err)

    for path, reason in sel.errors:
        _err(f"error: {path}: {reason}")
    if verbose:
        for path, reason in sel.skipped:
            _err(f"skipped {path}: {reason}")

    show_progress = (
        not quiet
        and text_out
        and mode != "review"
        and len(tasks) >= PROGRESS_MIN_FILES
        and sys.stderr.isatty()
    )
    progress = _progress(len(tasks), show_progress)
    quit_review = False
    accept_all = False
    stream = run_tasks([t for _, t in tasks], jobs, cache)
    try:
        for (i, _task), res in zip(tasks, stream):
            if progress is not None:
                progress.advance(progress.task_ids[0])
            if mode == "review" and res.status == CHANGED:
                if quit_review:
                    res.status = UNCHANGED
                else:
                    accept_all, quit_review = _review_one(targets[i], res, accept_all)
            results[i] = res
            if text_out and progress is None:
                _print_result(res, mode, quiet, verbose, say)
            elif text_out:
                progress.stop()
                _print_result(res, mode, quiet, verbose, say)
                progress.start()
    except KeyboardInterrupt:
        if progress is not None:
            progress.stop()
        stream.close()  # cancels what has not started; running writes complete
        _err("interrupted; files already written are complete, the others are untouched")
        return 130
    finally:
        if progress is not None:
            progress.stop()
        if cache is not None:
            cache.save()  # (what an interrupted run found is as good as any)
    final = [results[i] for i in sorted(results)]
    summary = Summary()
    summary.add_unchanged(passed)
    for r in final:
        summary.add(r)
    summary.failed += len(sel.errors)
    if text_out:
        if verbose:
            for r in final:
                if r.status == SKIPPED:
                    say(f"skipped {r.display}: {r.error}")
        if statistics:
            say(statistics_text(summary))
        if not quiet:
            say(summary.text(mode))
        if verbose:
            _err(
                f"done in {time.perf_counter() - t0:.2f}s with {min(jobs, max(1, len(tasks)))} worker(s); "
                f"{len(tasks)} of {len(targets)} files passed the pre-filter"
                + (
                    f", {cache.hits} of them finished from the cache"
                    if cache is not None and tasks
                    else ""
                )
            )
    else:
        click.echo(_machine_report(output_format, final, summary, statistics, mode))
        if output_format == "github" and not quiet:
            _err(summary.text(mode))
    return _exit_code(mode, summary)


def _exit_code(mode: str, summary: Summary) -> int:
    """2: a file could not be processed. --check: 1 when anything would change (sites left for
    a human are listed but, like black --check, only what would change fails the check).
    Rewriting: 1 when sites are left for a human."""
    if summary.failed:
        return EXIT_ERROR
    if mode == "check":
        return EXIT_FINDINGS if summary.changed else EXIT_OK
    return EXIT_FINDINGS if summary.needs_human else EXIT_OK


def _print_result(res: FileResult, mode: str, quiet: bool, verbose: int, say) -> None:
    if res.status == FAILED:
        _err(f"error: {res.error_location}: {res.error}")
    if not quiet:
        for d in res.diagnostics:
            say(d.format(res.display))
    if res.status == CHANGED:
        if mode == "diff" and res.diff:
            click.echo(res.diff, nl=False)
        elif not quiet:
            verb = {"fix": "rewrote", "review": "rewrote"}.get(mode, "would rewrite")
            if mode == "review" and not res.written:
                return
            say(f"{verb} {res.display}")
    elif res.status == UNCHANGED and verbose and mode != "diff":
        say(f"unchanged {res.display}")


def _review_one(target, res: FileResult, accept_all: bool) -> tuple[bool, bool]:
    """Ask about each hunk of one changed file, write what was accepted. Returns (all, quit)."""
    from hcmigrate.interactive import click_ask, click_echo, review
    from hcmigrate.runner import unified_diff
    from hcmigrate.syntax import compile_error

    old, new = res.original, res.new
    if res.notebook:  # JSON hunks could break the notebook: ask once for the whole file
        if accept_all:
            answer = "a"
        else:
            click_echo(unified_diff(old, new, res.display))
            answer = click_ask(
                f"Apply these changes to {res.display}? [y]es / [n]o / [a]ll remaining / [q]uit"
            )
        if answer == "q":
            res.status = UNCHANGED
            return accept_all, True
        accept_all = accept_all or answer == "a"
        chosen, quit_ = (new if answer in ("y", "a") else old), False
    else:
        chosen, accept_all, quit_ = review(old, new, res.display, click_ask, click_echo, accept_all)
    if chosen == old:
        res.status = UNCHANGED
        return accept_all, quit_
    if not res.notebook and compile_error(chosen) is not None:
        res.status, res.error = FAILED, "the chosen changes together do not parse; file not written"
        return accept_all, quit_
    if not res.notebook:
        from hcmigrate.interactive import undefined_names

        missing = undefined_names(chosen) - undefined_names(old)
        if missing:
            res.status = FAILED
            res.error = (
                f"the chosen changes leave {', '.join(sorted(missing))} undefined (a rewrite and "
                "its import go together); file not written"
            )
            return accept_all, quit_
    try:
        src = fileio.read_source(target.path, notebook=res.notebook)
        if src.text != old:
            raise fileio.FileError(
                "file changed on disk during the review; not written (run again)"
            )
        fileio.write_atomic(src, chosen)
        res.written = True
    except fileio.FileError as exc:
        res.status, res.error = FAILED, exc.message
    except OSError as exc:
        res.status, res.error = FAILED, f"not written: {exc.strerror or exc}"
    return accept_all, quit_


def main(argv: list[str] | None = None) -> None:
    """Console-script entry: `hcmigrate verify ...` goes to the differential tester."""
    run_as_program()  # (a short-lived process: runner.load_codemod may freeze what it imports)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "verify":
        try:
            from hcmigrate.verify.command import verify
        except ImportError as exc:
            _err(
                f"error: `hcmigrate verify` is not available: {exc} (to migrate a file named verify, pass ./verify)"
            )
            sys.exit(EXIT_ERROR)
        verify.main(args=argv[1:], prog_name="hcmigrate verify")
        return
    cli.main(args=argv, prog_name="hcmigrate")


if __name__ == "__main__":  # pragma: no cover
    main()
