"""`hcmigrate verify`: the click command (registered by hcmigrate/cli.py)."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import click

from hcmigrate.verify.request import VerifyRequest
from hcmigrate.verify.values import DEFAULT_ATOL, DEFAULT_RTOL, Tolerance


class LiveProgress:
    """One line on the terminal, rewritten as tests finish: `reference 37/120 tests, candidate
    5/12 tests, running tests/test_a.py::test_b (+1)`. A side that has run all its tests leaves
    the line while the other goes on (the two sides run at the same time)."""

    def __init__(self):
        self.shown = ""
        self.sides: dict[str, dict] = {}

    def __call__(self, state: dict) -> None:
        self.sides[state["side"]] = state
        shown = [
            s
            for s in self.sides.values()
            if not (s["total"] and s["finished"] >= s["total"] and not s["running"])
        ] or [state]
        line = "hcmigrate verify: " + ", ".join(
            f"{s['side']} {s['finished']}/{s['total'] or '?'} tests" for s in shown
        )
        running = next((s["running"] for s in shown if s["running"]), [])
        if running:
            line += f", running {running[0]}" + (
                f" (+{len(running) - 1})" if len(running) > 1 else ""
            )
        seconds = max(s["seconds"] for s in shown)
        line = f"{line} [{seconds:.0f} s]"[:150]
        if line != self.shown:
            click.echo("\r" + line.ljust(len(self.shown)), err=True, nl=False)
            self.shown = line

    def close(self) -> None:
        if self.shown:
            click.echo("\r" + " " * len(self.shown) + "\r", err=True, nl=False)


@click.command("verify", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("original", type=click.Path(path_type=Path))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--candidate",
    type=click.Path(path_type=Path),
    default=None,
    help="The migrated program (file or folder). Default: migrate a temporary copy of ORIGINAL with the codemod.",
)
@click.option(
    "--reference",
    default="compat",
    show_default=True,
    help="What runs ORIGINAL: 'compat' (current JAX + compat runtime), 'legacy' (cached venv with "
    "jax==jaxlib==0.4.30, created on first use) or a path to a Python interpreter with legacy JAX.",
)
@click.option(
    "--original-ref",
    default=None,
    metavar="REF",
    help="Take ORIGINAL from this git revision (e.g. origin/main, the code before a migration "
    "pull request); the working tree's ORIGINAL is the candidate. Default in CI (CI=true, in a "
    "git work tree): the merge base with the default branch.",
)
@click.option(
    "--reference-trace",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Use a trace recorded earlier (e.g. fixtures/golden/NAME.json) instead of running the reference.",
)
@click.option(
    "--rtol",
    type=float,
    default=DEFAULT_RTOL,
    show_default=True,
    help="Relative tolerance for numbers.",
)
@click.option(
    "--atol",
    type=float,
    default=DEFAULT_ATOL,
    show_default=True,
    help="Absolute tolerance for numbers.",
)
@click.option(
    "--timeout",
    type=float,
    default=300.0,
    show_default=True,
    help="Seconds a script may run; with --pytest, seconds per test (a test still running then is "
    "killed and reported, the others go on).",
)
@click.option(
    "--reference-jax",
    default=None,
    metavar="VERSION",
    help="With --reference legacy: the JAX version of the reference environment (default: the "
    "one the original ran with, 0.4.13 to 0.4.30, from its commit day and the APIs it uses).",
)
@click.option(
    "--project-deps",
    is_flag=True,
    help="With --reference legacy: create (or reuse) the reference environment with the project's "
    "own dependencies ([project], poetry, setup.cfg, setup.py; requirement files with "
    "--project-deps-from), legacy JAX pinned.",
)
@click.option(
    "--project-deps-from",
    "project_deps_from",
    multiple=True,
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="With --reference legacy: also install this requirement file's dependencies into the "
    "reference environment (implies --project-deps). Repeatable.",
)
@click.option(
    "--project-deps-dev",
    is_flag=True,
    help="With --project-deps: the project's `dev` extra and poetry's dev group too.",
)
@click.option(
    "--candidate-python",
    default=None,
    metavar="PYTHON",
    help="The interpreter that runs the candidate (default: the one running hcmigrate).",
)
@click.option(
    "--keep",
    is_flag=True,
    help="Keep the migrated copy and the traces (their folder is printed), so the report's "
    "candidate paths can be opened.",
)
@click.option(
    "--fresh-reference",
    is_flag=True,
    help="With --pytest: run the reference again even when an earlier run recorded it for the "
    "same sources, tests and reference (it is cached under ~/.cache/hcmigrate/reference-traces).",
)
@click.option(
    "--all-tests",
    is_flag=True,
    help="With --pytest: run every test on the candidate, not only those that made host calls "
    "in the reference.",
)
@click.option(
    "--entry",
    "entries",
    multiple=True,
    help="Top-level function(s) whose return value is recorded (default: main). Repeatable.",
)
@click.option(
    "--entry-file",
    default=None,
    help="For a folder ORIGINAL: the script to run (default: __main__.py, main.py or the one file with a __main__ guard).",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the report as JSON to this file ('-' for stdout): the verdict and, per "
    "test or entry, its host calls on each side and its first difference.",
)
@click.option(
    "--json-events",
    is_flag=True,
    help="With --json: also write both traces, every host call (large for a big suite).",
)
@click.option(
    "--keep-traces",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write reference.json and candidate.json traces into this folder.",
)
@click.option(
    "--platform",
    default="cpu",
    show_default=True,
    help=(
        "JAX_PLATFORMS for both runs, e.g. cuda; cpu is added after the others (host callbacks "
        "need a CPU device); '' keeps the environment's."
    ),
)
@click.option(
    "--pytest",
    "pytest_tests",
    default=None,
    metavar="TESTS",
    help="ORIGINAL is a package folder: run pytest on TESTS (a path relative to it) on both sides and "
    "compare each test's outcome and host calls. Arguments after `--` go to pytest.",
)
@click.option("-q", "--quiet", is_flag=True, help="Only print the verdict line (and differences).")
def verify(
    original,
    script_args,
    candidate,
    reference,
    original_ref,
    reference_trace,
    rtol,
    atol,
    timeout,
    entries,
    entry_file,
    json_path,
    json_events,
    keep_traces,
    platform,
    pytest_tests,
    quiet,
    reference_jax,
    project_deps,
    project_deps_from,
    project_deps_dev,
    candidate_python,
    keep,
    all_tests,
    fresh_reference,
):
    """Run ORIGINAL (legacy host_callback code) on a legacy reference and the migrated program on
    current JAX, each in its own subprocess, and compare every host callback (which function,
    arguments, result, order), each entry point's return value, stdout and the exit status.

    ORIGINAL is a script or a folder with an entry point; arguments after `--` are passed to the
    script on both sides. With `--pytest TESTS`, ORIGINAL is a package folder and each test's
    outcome and host calls are compared. Exit status: 0 equivalent, 1 different, 2 could not
    run, 3 the candidate fails on current JAX for a reason the migration did not cause.
    """
    from hcmigrate.verify.core import run
    from hcmigrate.verify.outcome import CANNOT_RUN

    if pytest_tests is not None and (entries or entry_file):
        click.echo(
            "hcmigrate verify: --entry/--entry-file do not apply with --pytest (each test is an entry)",
            err=True,
        )
        sys.exit(CANNOT_RUN)
    if json_events and json_path is None:
        click.echo("hcmigrate verify: --json-events needs --json FILE", err=True)
        sys.exit(CANNOT_RUN)
    live = LiveProgress() if sys.stderr.isatty() and pytest_tests is not None else None
    request = VerifyRequest(
        original=original,
        candidate=candidate,
        reference=reference,
        original_ref=original_ref,
        reference_trace=reference_trace,
        reference_jax=reference_jax,
        project_deps=project_deps,
        project_deps_from=tuple(project_deps_from),
        project_deps_dev=project_deps_dev,
        candidate_python=candidate_python,
        platform=platform or None,
        timeout=timeout,
        args=tuple(script_args),
        entries=tuple(entries),
        entry_file=entry_file,
        pytest_tests=pytest_tests,
        all_tests=all_tests,
        fresh_reference=fresh_reference,
        tolerance=Tolerance(rtol=rtol, atol=atol),
        keep=keep,
        keep_traces=keep_traces,
        json_path=json_path,
        json_events=json_events,
        quiet=quiet,
        progress=lambda message: click.echo(message, err=True),
        live=live,
    )
    try:
        outcome = run(request)
    except KeyboardInterrupt as exc:  # (before or after the sides ran: nothing to report)
        click.echo("hcmigrate verify: interrupted", err=True)
        # 128 + the signal (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), as the codemod exits
        sys.exit(128 + getattr(exc, "signum", signal.SIGINT))
    except Exception as e:  # never a traceback: exit 1 means "different"
        click.echo(f"hcmigrate verify: could not run: {type(e).__name__}: {e}", err=True)
        sys.exit(CANNOT_RUN)
    finally:
        if live is not None:
            live.close()
    sys.exit(write_report(request, outcome))


def write_report(request: VerifyRequest, outcome) -> int:
    """The report on stdout (and --json); returns the exit status."""
    from hcmigrate.verify.outcome import CANNOT_RUN
    from hcmigrate.verify.report import json_report, text_report

    json_path = request.json_path
    report = text_report(outcome)
    if request.quiet and outcome.exit_code == 0:
        report = report.splitlines()[-1]
    click.echo(
        report,
        err=outcome.exit_code == CANNOT_RUN and json_path is not None and str(json_path) == "-",
    )
    if json_path is not None:
        data = json.dumps(json_report(outcome, events=request.json_events), indent=1, default=repr)
        if str(json_path) == "-":
            click.echo(data)
        else:
            Path(json_path).write_text(data + "\n", encoding="utf-8")
    return outcome.exit_code
