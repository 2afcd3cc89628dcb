"""The `hcmigrate` command line: parses options and prints; the work is hcmigrate.api's.

Exit codes: hcmigrate.exit_codes, one table for every mode; 128 + N when interrupted by signal
N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP). Everything for standard output goes through `_out`:
output that cannot be written (a full disk, a closed descriptor) is one error line and exit 2.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import click

from hcmigrate import __version__
from hcmigrate.cache import ResultCache, cache_directory
from hcmigrate.config import STRATEGIES
from hcmigrate.errors import ConfigError, FileError, HcmigrateError, OutputError
from hcmigrate.exit_codes import ExitCode, interrupted_exit_code, run_exit_code
from hcmigrate.files import printable
from hcmigrate.report import (
    OncePerRun,
    FORMATS,
    Summary,
    machine_report,
    progress_bar,
    rules_text,
    statistics_text,
)
from hcmigrate.results import CHANGED, FAILED, SKIPPED, UNCHANGED, FileResult
from hcmigrate.runner import default_jobs, run_as_program
from hcmigrate.settings import Settings, resolve_settings

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = ExitCode.OK, ExitCode.FINDINGS, ExitCode.ERROR
PROGRESS_MIN_FILES = 20


def _err(msg: str) -> None:
    click.echo(msg, err=True)


def _out(data: str | bytes, nl: bool = True) -> None:
    """Write to standard output (text, or the bytes of a file or patch); OutputError when it
    cannot be written."""
    if sys.stdout is None:
        raise OutputError("it is closed")
    try:
        click.echo(data, nl=nl)
    except OSError as exc:
        raise OutputError(exc.strerror or str(exc)) from None


def _output_failed(exc: OutputError) -> int:
    """The one line for output that could not be written; standard output is pointed at
    /dev/null, so that nothing fails again when Python flushes it on the way out."""
    _err(f"error: cannot write to standard output: {exc}; the run stopped")
    if sys.stdout is not None:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass
    return ExitCode.ERROR


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
    help="native: rewrite onto modern JAX (default). compat: point host_callback imports at hcmigrate_compat.host_callback (the compat runtime). The JAX1xx rules run under both.",
)
@click.option(
    "--no-compat/--compat",
    "no_compat",
    default=None,
    help="Never point code at the compat runtime (for a project that will not depend on "
    "hcmigrate-compat): sites only it keeps are left unchanged, manual.",
)
@click.option(
    "--several-devices/--no-several-devices",
    "several_devices",
    default=None,
    help="The code runs on several devices (sharded jit, meshes) set up by its callers: taps, "
    "prints and calls become ordered io_callbacks, which run there (compat under pmap, vmap, "
    "grad).",
)
@click.option(
    "--raise-jax-pin/--no-raise-jax-pin",
    "raise_jax_pin",
    default=None,
    help="Raise the project's declared `jax` floor (and `jaxlib`'s) where the rewritten code "
    "needs a newer JAX (default on); off: the floor is left and HCB008 reports it, manual.",
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
    "--file-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Each file's time budget: a file whose migration takes longer fails alone (default 300).",
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
    no_compat,
    several_devices,
    raise_jax_pin,
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
    file_timeout,
    jobs,
    quiet,
    verbose,
):
    """Migrate JAX code off jax.experimental.host_callback.

    Rewrites the .py files and .ipynb notebooks under PATH... in place. `-` reads standard input
    and writes standard output. `hcmigrate verify ...` runs the differential tester instead
    (a file named `verify` is passed as ./verify).
    """
    try:
        if list_rules:
            _out(rules_text())
            sys.exit(EXIT_OK)
        if not paths:
            raise click.UsageError("no PATH given (use `-` to read standard input)")
        if sum(map(bool, (diff, check, interactive))) > 1:
            raise click.UsageError("--diff, --check and --interactive cannot be combined")
        if "-" in paths and len(paths) > 1:
            raise click.UsageError("`-` (standard input) cannot be combined with other paths")
        mode = "diff" if diff else "check" if check else "review" if interactive else "fix"
        try:
            settings = resolve_settings(
                paths,
                stdin_filename=stdin_filename,
                config_path=config_path,
                strategy=strategy,
                no_compat=no_compat,
                several_devices=several_devices,
                raise_jax_pin=raise_jax_pin,
                add_todos=add_todos,
                select=select,
                ignore=ignore,
                target_jax=target_jax,
                exclude=exclude,
                include=include,
                force_exclude=force_exclude,
                respect_gitignore=respect_gitignore,
                file_timeout=file_timeout,
            )
        except ConfigError as exc:
            _err(f"error: {exc.message}")
            sys.exit(EXIT_ERROR)
        if verbose:
            for note in settings.notes:
                _err(note)
        if paths == ("-",):
            sys.exit(_run_stdin(settings, mode, stdin_filename, output_format, quiet))
        cache = None if no_cache else cache_directory(settings.root, cache_dir)
        sys.exit(
            _run_paths(
                settings, list(paths), mode, output_format, statistics, jobs, quiet, verbose, cache
            )
        )
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP (see main) before the files' run
        _err("interrupted")
        sys.exit(interrupted_exit_code(exc))
    except OutputError as exc:
        sys.exit(_output_failed(exc))


def _run_stdin(
    settings: Settings, mode: str, stdin_filename: str | None, output_format: str, quiet: bool
) -> int:
    from hcmigrate.project import migrate_stream, read_stream

    name = stdin_filename or "-"
    shown = printable(name)
    data = b""
    problems = [FileResult(printable(path), FAILED, error=why) for path, why in settings.problems]
    for res in problems:
        _err(f"error: {res.display}: {res.error}")
    try:
        if sys.stdin is None:
            raise FileError("standard input is closed; nothing to read")
        data = read_stream(sys.stdin.buffer)  # bytes: the file's own encoding is honoured
        stream = migrate_stream(data, name, settings, mode)
    except HcmigrateError as exc:
        _err(f"error: {exc.location(shown)}: {exc.message}")
        if mode == "fix" and data:
            _out(data, nl=False)  # (a pipe never loses its input)
        if output_format != "text":
            failed = FileResult(
                shown, FAILED, error=exc.message, error_line=exc.line, error_cell=exc.cell
            )
            summary = Summary()
            summary.add(failed)
            summary.failed += len(problems)
            _err(machine_report(output_format, problems + [failed], summary, False, mode))
        return EXIT_ERROR
    if stream.output is not None:
        _out(stream.output, nl=False)
    if stream.result is None:  # excluded
        return EXIT_ERROR if problems else EXIT_OK
    if stream.diff:
        _out(stream.diff, nl=False)
    summary = Summary()
    summary.add(stream.result)
    summary.failed += len(problems)
    if output_format == "text":
        if not quiet:
            for d in stream.result.diagnostics:
                _err(d.format(shown))
    else:
        _err(machine_report(output_format, problems + [stream.result], summary, False, mode))
    return _exit_code(mode, summary)


def _run_paths(
    settings: Settings,
    paths: list[str],
    mode: str,
    output_format: str,
    statistics: bool,
    jobs: int | None,
    quiet: bool,
    verbose: int,
    cache_dir: Path | None = None,
) -> int:
    from hcmigrate.api import migrate_files, plan_run, review_change

    t0 = time.perf_counter()
    jobs = jobs or default_jobs()
    cache = ResultCache.load(cache_dir) if cache_dir is not None else None
    plan = plan_run(paths, settings, mode, jobs, cache)
    results = plan.results
    if verbose:
        for note in plan.target_notes:  # (each project's JAX target, where it came from)
            _err(note)

    # Diff output streams to stdout; every other human-readable line goes to stdout unless --diff.
    text_out = output_format == "text"
    to_err = mode == "diff" or not text_out

    def say(msg: str) -> None:
        if to_err:
            _err(msg)
        else:
            _out(msg)

    # Paths that could not be looked at, and files read for the settings that could not be:
    # each an error (exit 2) of its own, while the run goes on.
    problems = [
        FileResult(printable(path), FAILED, error=reason)
        for path, reason in [*settings.problems, *plan.selection.errors]
    ]
    for res in problems:
        _err(f"error: {res.display}: {res.error}")
    if not quiet:
        for note in plan.notes:
            _err(note)
    if verbose:
        for path, reason in plan.selection.skipped:
            _err(f"skipped {printable(path)}: {reason}")
        for path in plan.removed:
            _err(f"removed {printable(path)}: a temporary file left by a run that was killed")

    show_progress = (
        not quiet
        and text_out
        and mode != "review"
        and len(plan.tasks) >= PROGRESS_MIN_FILES
        and sys.stderr.isatty()
    )
    progress = progress_bar(len(plan.tasks), show_progress)
    quit_review = False
    accept_all = False
    stream = migrate_files(plan, jobs, cache)
    # (the files the run creates: written by now in fix mode, before the modules using them)
    created = [new.result for new in plan.new_files if new.result is not None]
    if text_out:
        for res in created:
            _print_result(res, mode, quiet, verbose, say)
    once_per_run = OncePerRun()
    try:
        for (i, _task), res in zip(plan.tasks, stream):
            if progress is not None:
                progress.advance(progress.task_ids[0])
            if mode == "review" and res.status == CHANGED:
                if quit_review:
                    res.status = UNCHANGED
                else:
                    accept_all, quit_review = review_change(plan.targets[i].path, res, accept_all)
            results[i] = res = once_per_run.filter(res)
            if text_out and progress is None:
                _print_result(res, mode, quiet, verbose, say)
            elif text_out:
                progress.stop()
                _print_result(res, mode, quiet, verbose, say)
                progress.start()
    except KeyboardInterrupt as exc:
        if progress is not None:
            progress.stop()
        stream.close()  # stops the workers: each file is wholly written or untouched
        _err("interrupted; files already written are complete, the others are untouched")
        return interrupted_exit_code(exc)
    finally:
        stream.close()  # (stops the workers if the loop stopped early: output that failed)
        if progress is not None:
            progress.stop()
        if cache is not None:
            if cache.warning():
                _err(cache.warning())
            cache.save()  # (what an interrupted run found is as good as any)
    for res, note in once_per_run.held():  # (a note no file with something to migrate showed)
        if text_out and not quiet:
            say(note.format(res.display))
    final = [results[i] for i in sorted(results)] + created
    metadata = _project_metadata(settings, plan, final, mode, accept_all)
    if not quiet:
        for line in metadata.lines:
            say(line)
    for patch in metadata.patches:
        _out(patch, nl=False)
    if not quiet and text_out:
        from hcmigrate.several_devices_hint import several_devices_hint

        hint = several_devices_hint(
            plan.targets, final, settings.options.several_devices, plan.projects
        )
        if hint is not None:
            say(hint)
    summary = Summary()
    # (a dependency to declare or a pin to raise by hand is a manual finding; a metadata edit
    # not made, --check or --diff, is a change)
    summary.needs_human = bool(metadata.manual)
    summary.files_by_hand = metadata.manual
    summary.failed += metadata.failed
    summary.changed += metadata.pending
    summary.add_unchanged(plan.passed)
    for r in final:
        summary.add(r)
    summary.failed += len(problems)
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
                f"done in {time.perf_counter() - t0:.2f}s with {min(jobs, max(1, len(plan.tasks)))} worker(s); "
                f"{len(plan.tasks)} of {len(plan.targets)} files passed the pre-filter"
                + (
                    f", {cache.hits} of them finished from the cache"
                    if cache is not None and plan.tasks
                    else ""
                )
            )
    else:
        _out(machine_report(output_format, problems + final, summary, statistics, mode))
        if output_format == "github" and not quiet:
            _err(summary.text(mode))
    return _exit_code(mode, summary)


def _project_metadata(
    settings: Settings, plan, final: list[FileResult], mode: str, accept_all: bool = False
):
    """The metadata edits of the run's projects (hcmigrate.projects.metadata_plan), planned
    from the code as it is after the run and carried out in the run's mode, with what a human
    must do: a dependency or floor that cannot be edited, a Bazel target, a pin that keeps
    current JAX out (hcmigrate.projects.pins)."""
    from hcmigrate.facts import NATIVE_OUTPUT_SINCE
    from hcmigrate.projects.compat_dependency import bazel_targets_to_edit
    from hcmigrate.projects.metadata_apply import carry_out
    from hcmigrate.projects.metadata_plan import CodeFile, plan_metadata, shown_path
    from hcmigrate.projects.pins import blocking_pins
    from hcmigrate.projects.targets import jax_target

    result_of = plan.results  # (target index -> its result; `final` lists them in order)
    # The code as it is after the run: what the run wrote (or would write), the rest as it is
    # on disk (so a rerun completes what an interrupted run left).
    files = []
    for i, target in enumerate(plan.targets):
        res = result_of.get(i)
        applies = (
            res is not None and res.status == CHANGED and (res.written or mode in ("check", "diff"))
        )
        files.append(CodeFile(target.path, res.code_facts if applies else None))
    metadata = plan_metadata(
        files,
        plan.projects,
        raise_floor=not settings.target_given and settings.raise_jax_pin,
        several_devices=settings.options.several_devices,
    )
    outcome = carry_out(metadata, mode, accept_all=accept_all)
    extra = bazel_targets_to_edit(t.path for t in plan.targets)
    with_sites = {
        plan.projects.owner(plan.targets[i].path) for i, r in result_of.items() if r.diagnostics
    } - {None}
    for project in sorted(with_sites, key=lambda p: str(p.root)):
        extra += blocking_pins(project.metadata_root)
        kept = (
            None
            if settings.target_given
            else jax_target(
                project, strategy=settings.options.strategy, raise_jax_pin=settings.raise_jax_pin
            ).kept
        )
        said = any("HCB008 [manual]" in line for line in outcome.lines)
        if (
            kept
            and not said
            and any(
                d.level.needs_human and (d.code == "HCB008" or "`jax` requirement" in d.message)
                for i, r in result_of.items()
                if plan.projects.owner(plan.targets[i].path) == project
                for d in r.diagnostics
            )
        ):
            extra.append(
                f"{shown_path(kept[0])}: HCB008 [manual] the project's JAX floor is not raised "
                f"to {'.'.join(map(str, NATIVE_OUTPUT_SINCE))} for the native rewrite: {kept[1]}"
            )
    extra += _branches_the_raised_floor_excludes(metadata, plan, result_of)
    outcome.lines += extra
    outcome.manual += len(extra)
    return outcome


def _branches_the_raised_floor_excludes(metadata, plan, result_of) -> list[str]:
    """HCB014 for each branch kept for old JAX (left as it is: its module's HCB014 note,
    judged on the declared floor) that the floor this run raises its project to keeps out:
    its host_callback code never runs, and the number is the floor the run ends with."""
    import dataclasses

    from hcmigrate.diagnostics import Level
    from hcmigrate.rules.version_guard import branch_bound, excluded_by, never_runs_message

    raised = {p.project: p.raised_floor for p in metadata.projects if p.raised_floor}
    lines = []
    for i, res in sorted(result_of.items()):
        floor = raised.get(plan.projects.owner(plan.targets[i].path)) if raised else None
        for d in res.diagnostics if floor else ():
            kept = branch_bound(d.message) if d.code == "HCB014" else None
            if kept is not None and excluded_by(floor, *kept):
                shown = ("<= " if kept[1] else "< ") + ".".join(map(str, kept[0]))
                message = never_runs_message(shown, floor, "the project's floor this run raises")
                said = dataclasses.replace(d, message=message, level=Level.MANUAL)
                lines.append(said.format(res.display))
    return lines


def _exit_code(mode: str, summary: Summary) -> int:
    """The run's exit code, by the one table (hcmigrate.exit_codes)."""
    return run_exit_code(
        mode, failed=summary.failed, changed=summary.changed, needs_human=summary.needs_human
    )


def _print_result(res: FileResult, mode: str, quiet: bool, verbose: int, say) -> None:
    if res.status == FAILED:
        _err(f"error: {res.error_location}: {res.error}")
    if not quiet:
        for d in res.diagnostics:
            say(d.format(res.display))
    if res.status == CHANGED:
        if mode == "diff" and res.diff:
            _out(res.diff, nl=False)
        elif not quiet:
            verb = {"fix": "rewrote", "review": "rewrote"}.get(mode, "would rewrite")
            if res.created:
                verb = "created" if mode == "fix" else "would create"
            if mode == "review" and not res.written:
                return
            say(f"{verb} {res.display}")
    elif res.status == UNCHANGED and verbose and mode != "diff":
        say(f"unchanged {res.display}")


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, handled as Ctrl-C is: workers stopped, temporary files removed, every
    file wholly written or untouched; the exit code is 128 + the signal's number."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_interrupted(signum, frame):
    raise Interrupted(signum)


def stop_signals_interrupt() -> None:
    """Make SIGTERM and SIGHUP interrupt the program as Ctrl-C does, unless they are ignored
    (`nohup` ignores SIGHUP: that stays so)."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _raise_interrupted)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry: `hcmigrate verify ...` goes to the differential tester."""
    run_as_program()  # (a short-lived process: runner.load_codemod may freeze what it imports)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "verify":
        stop_signals_interrupt()  # (the sides' process groups are killed on the way out)
        try:
            from hcmigrate.verify.command import verify
        except ImportError as exc:
            _err(
                f"error: `hcmigrate verify` is not available: {exc} (to migrate a file named verify, pass ./verify)"
            )
            sys.exit(EXIT_ERROR)
        verify.main(args=argv[1:], prog_name="hcmigrate verify")
        return
    stop_signals_interrupt()
    cli.main(args=argv, prog_name="hcmigrate")


if __name__ == "__main__":  # pragma: no cover
    main()
