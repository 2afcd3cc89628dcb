"""The engine: pre-filter, migrate each candidate file (in worker processes), write safely.

Results come back in the order of the file list whatever the scheduling. A worker never lets an
exception escape: every problem becomes a `failed` result naming the reason, and the other files
go on; a worker that dies (a crash in libcst's native parser) costs only the file it was on
(hcmigrate.workers). In fix mode the worker writes its own file (atomically, see
hcmigrate.files).

Importing this module is cheap (the CLI imports it on every run): the codemod (libcst) and
multiprocessing are imported when a file is migrated, once in the parent before workers fork.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from hcmigrate import files as fileio
from hcmigrate.api import migrate_source
from hcmigrate.options import Options
from hcmigrate.projects.metadata_plan import code_facts
from hcmigrate.cache import Outcome, ResultCache, diagnostics_of, outcome_of, task_key
from hcmigrate.diagnostics import Diagnostic
from hcmigrate.errors import HcmigrateError, MigrationError
from hcmigrate.results import CHANGED, FAILED, UNCHANGED, FileResult
from hcmigrate.syntax import (
    TOO_COMPLEX,
    TOO_DEEP,
    compile_error,
    describe,
    python_parses,
)


@dataclass(frozen=True)
class Task:
    path: str
    display: str
    notebook: bool
    mode: str  # "fix" | "check" | "diff" | "review"
    options: Options
    cache_tool: str | None = None  # hcmigrate.cache's tool fingerprint, when results are cached
    # Python's own parser did not accept the file in the pre-filter (or did not see it): it is
    # asked first, so that text too deep for it never reaches libcst's native parser.
    precheck: bool = False


def unified_diff(old: str, new: str, name: str) -> str:
    """A unified diff of two texts, for reading (--interactive shows notebooks this way)."""
    import difflib

    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{name}", f"b/{name}"
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def patch_lines(data: bytes) -> list[bytes]:
    """`data` cut into lines as git and patch cut it: after each LF only (a form feed, a lone
    CR, U+2028 are characters of a line)."""
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


_C_ESCAPES = {7: b"\\a", 8: b"\\b", 9: b"\\t", 10: b"\\n", 11: b"\\v", 12: b"\\f", 13: b"\\r"}
_C_ESCAPES.update({ord('"'): b'\\"', ord("\\"): b"\\\\"})


def git_quoted(name: bytes) -> bytes:
    """A file name as git writes it in a patch header: as it is, unless it has a control
    character, a double quote or a backslash; then C-quoted in double quotes (`"a/new\\nline.py"`),
    which `git apply` and `patch` read back. Bytes from 0x80 stay as they are, as with git's
    `core.quotePath=false` (a UTF-8 name stays readable)."""
    if not any(c < 0x20 or c == 0x7F or c in b'"\\' for c in name):
        return name
    out = bytearray(b'"')
    for c in name:
        if c in _C_ESCAPES:
            out += _C_ESCAPES[c]
        elif c < 0x20 or c == 0x7F:
            out += b"\\%03o" % c
        else:
            out.append(c)
    return bytes(out + b'"')


def patch_diff(old: bytes | None, new: bytes, name: str) -> bytes:
    """A unified diff of a file's bytes that `git apply` and `patch -p1` apply: lines are the
    file's own bytes (its encoding, BOM and line endings), cut at LF only; `name` is written as
    the file system spells it, quoted as git quotes it (git_quoted). `old` None: the patch
    creates the file (`--- /dev/null`)."""
    import difflib

    raw = os.fsencode(name)
    # A name with a blank ends at a tab, as git and diff write it (patch reads a name to a tab).
    end = b"\t" if b" " in raw else b""
    lines = difflib.diff_bytes(
        difflib.unified_diff,
        [] if old is None else patch_lines(old),
        patch_lines(new),
        b"/dev/null" if old is None else git_quoted(b"a/" + raw) + end,
        git_quoted(b"b/" + raw) + end,
        lineterm=b"\n",
    )
    out = []
    for line in lines:
        out.append(line if line.endswith(b"\n") else line + b"\n\\ No newline at end of file\n")
    return b"".join(out)


def process(task: Task) -> FileResult:
    try:
        return _process(task)
    except Exception as exc:  # a bug or an OS surprise: report the file, keep going
        return FileResult(
            task.display,
            FAILED,
            error=f"internal error: {type(exc).__name__}: {exc}",
            notebook=task.notebook,
        )


def _process(task: Task, cache: ResultCache | None = None) -> FileResult | None:
    """The file's result; with a cache, only from it (None when the file's outcome is not in it)."""
    res = FileResult(task.display, UNCHANGED, notebook=task.notebook)
    try:
        src = fileio.read_source(Path(task.path), notebook=task.notebook)
    except fileio.FileError as exc:
        if cache is not None:
            return None
        res.status, res.error, res.error_line = FAILED, exc.message, exc.line
        return res
    options = _migration_options(task)
    key = task_key(task.cache_tool, src.text, options, task.notebook) if task.cache_tool else None
    if cache is not None:
        # (only --check reads the cache: run_tasks)
        outcome = cache.get(key, src.text, task.notebook)
        if outcome is None:
            return None
    else:
        outcome = _outcome(task, src.text)
        if key is not None:
            res.cache_entry = (key, outcome)
    return _finish(task, src, outcome, res)


def _outcome(task: Task, text: str) -> Outcome:
    """What migrating the file's text gives: its new text (None: unchanged) and diagnostics, or
    the error that leaves it unchanged."""
    try:
        new_text, diagnostics = migrate_text(
            text, _migration_options(task), task.display, task.notebook, precheck=task.precheck
        )
    except HcmigrateError as exc:
        return outcome_of(None, [], (exc.message, exc.line, exc.cell), source=text)
    return outcome_of(None if new_text == text else new_text, diagnostics, source=text)


def _migration_options(task: Task) -> Options:
    """A Python file is migrated (and cached) without layout, which only the modes that show
    or write the text need (`laid_out`); a notebook's cells are laid out as they migrate."""
    return task.options if task.notebook else dataclasses.replace(task.options, lay_out=False)


def laid_out(task: Task, text: str, new_text: str) -> str:
    """The rewrite laid out as the project's formatter would, if it still compiles so (it
    does: black keeps the program; the check is the safety net's)."""
    if task.notebook or not task.options.lay_out:
        return new_text
    from hcmigrate.codemod.layout import format_written_lines

    formatted = format_written_lines(
        text,
        new_text,
        task.options.line_length,
        yapf_style=task.options.yapf_style,
        line_length_stated=task.options.line_length_stated,
    )
    if formatted != new_text and compile_error(formatted, task.display) is not None:
        return new_text
    return formatted


def _finish(task: Task, src: fileio.SourceFile, outcome: Outcome, res: FileResult) -> FileResult:
    """The file's result from its outcome, in the task's mode (a diff, a review, or the write)."""
    if outcome["error"] is not None:
        res.status = FAILED
        res.error, res.error_line, res.error_cell = outcome["error"]
        return res
    res.diagnostics = diagnostics_of(outcome)
    new_text = outcome["new"]
    if new_text is None:
        return res
    res.status = CHANGED
    # (its project's metadata reads it: what the run wrote into it)
    res.code_facts = code_facts(
        new_text, task.notebook, task.options.several_devices, original=src.text
    )
    if task.mode != "check":
        new_text = laid_out(task, src.text, new_text)
    try:
        if task.mode == "diff":
            res.diff = patch_diff(src.raw, src.encode(new_text), task.path)
        elif task.mode == "review":
            res.original, res.new = src.text, new_text
        elif task.mode == "fix":
            fileio.write_atomic(src, new_text)
            res.written = True
    except fileio.FileError as exc:
        res.status, res.error = FAILED, f"not written: {exc.message}"
    except OSError as exc:
        res.status, res.error = FAILED, f"not written: {exc.strerror or exc}"
    except UnicodeEncodeError as exc:
        res.status = FAILED
        res.error = (
            f"not written: the rewrite has a character ({exc.object[exc.start]!r}) that the "
            f"file's encoding ({src.encoding}) cannot hold"
        )
    return res


def migrate_text(
    text: str, options: Options, display: str, notebook: bool, *, precheck: bool = False
) -> tuple[str, list[Diagnostic]]:
    """Migrate one file's text; raise an HcmigrateError for anything that leaves it unchanged.
    `precheck`: let Python's own parser judge the text first (see python_parses)."""
    try:
        if notebook:
            from hcmigrate.notebook import migrate_notebook

            nres = migrate_notebook(text, options, filename=display)
            return nres.code, list(nres.diagnostics)
        if precheck:
            python_parses(text)
        try:
            result = migrate_source(text, options, filename=display)
        except MigrationError as exc:
            message, line, col = describe(text, exc.message, exc.line, exc.col)
            raise MigrationError(message, line, col) from None
    except RecursionError:
        raise MigrationError(TOO_DEEP, line=None, col=None) from None
    except MemoryError:
        raise MigrationError(TOO_COMPLEX, line=None, col=None) from None
    if result.changed and not result.compile_checked:
        error = compile_error(result.code, display)
        if error is not None and compile_error(text, display) is None:
            raise MigrationError(
                f"the rewrite would not compile (line {error.lineno}: {error.msg}); file left "
                "unchanged (please report)",
                line=None,
                col=None,
            )
    return result.code, list(result.diagnostics)


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


def run_tasks(
    tasks: list[Task], jobs: int, cache: ResultCache | None = None, budget: float | None = None
) -> Iterator[FileResult]:
    """Yield one FileResult per task, in task order. Uses worker processes when it pays. With a
    cache, under --check the files whose outcome it holds are finished here (read, but not migrated: no
    codemod import, no worker), the others go to workers and what they find is added to it.
    `budget`: each file's time budget in seconds (None: none), see hcmigrate.workers."""
    if cache is None:
        yield from _run(tasks, jobs, budget)
        return
    tasks = [dataclasses.replace(task, cache_tool=cache.fingerprint) for task in tasks]
    cached: dict[int, FileResult] = {}
    for index, task in enumerate(tasks):
        if task.mode != "check":
            # A mode that writes or shows a rewrite reads nothing from the cache: an entry that
            # says "no change" or "syntax error" for a file that needs a rewrite (a cache filled
            # elsewhere, or tampered with) must not keep it from being migrated. What it finds
            # is still added, for the next --check.
            continue
        try:
            found = _process(task, cache)
        except Exception:  # (the worker will report it)
            found = None
        if found is not None:
            cached[index] = found
    stream = _run([task for index, task in enumerate(tasks) if index not in cached], jobs, budget)
    try:
        for index in range(len(tasks)):
            res = cached.pop(index, None)
            if res is None:
                res = next(stream)
                if res.cache_entry is not None:
                    cache.add(*res.cache_entry)
            yield res
    finally:
        stream.close()


def _run(tasks: list[Task], jobs: int, budget: float | None = None) -> Iterator[FileResult]:
    """The tasks' results in order, each file migrated in a worker process (hcmigrate.workers):
    a file that crashes its worker (libcst's native parser on deeply nested code), outlasts its
    time budget or whose worker is stopped gets an error and the run goes on. Only where no
    worker can be forked safely (this process has imported JAX, see _start_context) and one
    process is asked for do the files run in this process (without a time budget)."""
    if not tasks:
        return
    context = _start_context()
    if context.get_start_method() != "fork" and (jobs <= 1 or len(tasks) <= 1):
        for t in tasks:
            yield process(t)
        return
    from hcmigrate.workers import run_in_workers

    def overran(task: Task, stopped: bool) -> FileResult:
        return FileResult(
            task.display, FAILED, error=overrun_message(stopped, budget), notebook=task.notebook
        )

    yield from run_in_workers(
        process, tasks, jobs, context, _died, budget=budget, on_overrun=overran
    )


def overrun_message(stopped: bool, budget: float | None) -> str:
    """Why a file whose worker was ended by the watchdog (hcmigrate.workers) is unchanged."""
    if stopped:
        return (
            "the process migrating this file was stopped (SIGSTOP) and made no progress; it "
            "was ended and the file left unchanged"
        )
    return (
        f"migrating this file took longer than its time budget ({budget:g} s); stopped, file "
        "left unchanged (a larger budget: --file-timeout, or file-timeout in [tool.hcmigrate])"
    )


def _died(task: Task, how: str) -> FileResult:
    """The result of a file whose worker process died on it."""
    return FileResult(
        task.display,
        FAILED,
        error=f"the process migrating this file died ({how}); file left unchanged. "
        + WORKER_DEATH_HINT,
        notebook=task.notebook,
    )


WORKER_DEATH_HINT = (
    "Most likely libcst's parser overflowed its stack on deeply nested code (a larger stack, "
    "`ulimit -s`, may help), or the system ran out of memory."
)


def run_isolated(task: Task, text: str, budget: float | None = None) -> Outcome:
    """What migrating `text` gives (as _outcome), worked out in a worker process where one can
    be forked safely: a crash in the parser, or a migration that outlasts `budget` seconds, is
    an error of the file, not of the program."""
    context = _start_context()
    if context.get_start_method() != "fork":
        return _outcome(task, text)
    from hcmigrate.workers import run_in_workers

    def died(item, how: str) -> Outcome:
        message = f"the process migrating it died ({how}). {WORKER_DEATH_HINT}"
        return outcome_of(None, [], (message, None, None))

    def overran(item, stopped: bool) -> Outcome:
        return outcome_of(None, [], (overrun_message(stopped, budget), None, None))

    (outcome,) = run_in_workers(
        _outcome_of_pair, [(task, text)], 1, context, died, budget=budget, on_overrun=overran
    )
    return outcome


def map_in_workers(fn, items: list, jobs: int, budget: float | None, failed) -> list:
    """`fn(item)` for each item, worked out as the run's files are migrated: in worker
    processes where they can be forked safely (an item whose worker dies or outlasts `budget`
    gives `failed`), else in this process. `fn`: a module-level function."""
    context = _start_context()
    if context.get_start_method() != "fork" and jobs <= 1:
        return [fn(item) for item in items]
    from hcmigrate.workers import run_in_workers

    return list(
        run_in_workers(
            fn,
            items,
            jobs,
            context,
            lambda item, how: failed,
            budget=budget,
            on_overrun=lambda item, stopped: failed,
        )
    )


def adds_definition(item: tuple[Task, str]) -> bool:
    """Would migrating the task's file define the top-level function named `item[1]`, which
    it does not define yet (hcmigrate.shared_helpers asks it of a module before the run)?
    False where the file cannot be read or migrated."""
    task, name = item
    try:
        text = fileio.read_source(Path(task.path)).text
        new = _outcome(task, text)["new"]
    except Exception:  # (the run reports it, when it migrates the file)
        return False
    defines = re.compile(rf"^def {re.escape(name)}\(", re.M)
    return new is not None and defines.search(new) is not None and not defines.search(text)


def new_file_patch(new: bytes, name: str) -> bytes:
    """A patch that creates the file `name` with the bytes `new` (`--- /dev/null`), which
    `git apply` and `patch -p1` apply as patch_diff's patches are."""
    return patch_diff(None, new, name)


def _outcome_of_pair(item: tuple[Task, str]) -> Outcome:
    return _outcome(*item)


# Set by the hcmigrate program (hcmigrate.cli.main), a short-lived process; see load_codemod.
_freeze_after_import = False


def run_as_program() -> None:
    """This process is the hcmigrate program itself: load_codemod may freeze what it imports."""
    global _freeze_after_import
    _freeze_after_import = True


def load_codemod() -> None:
    """Import the codemod (libcst is slow to import) into this process, once: workers forked
    later inherit it. The CLI calls this as soon as the pre-filter meets a first candidate, so
    that the import overlaps the rest of the scan (which worker processes do on a large tree);
    otherwise it runs before the first migration. Importing in each worker instead would keep
    the import on the critical path and make every worker pay for it.

    In the hcmigrate program (`run_as_program`), everything alive after the import (libcst's and
    hcmigrate's modules, classes and functions) is moved out of the collector's reach with
    gc.freeze(), as Python's documentation advises before forking. The collections that
    libcst's many nodes set off would otherwise walk all of it again and again, and in forked
    workers each walk would also copy the memory pages it touches. Not in a process that runs
    hcmigrate inside it (a library user, click's test runner): what is frozen is never
    collected. (Measurements: docs/performance.md.)"""
    if "hcmigrate.codemod.pipeline" not in sys.modules:
        import hcmigrate.codemod.pipeline  # noqa: F401

        if _freeze_after_import:
            gc.freeze()


def _start_context():
    """fork when it is safe (the workers inherit the imported codemod: no start-up cost);
    forkserver with the codemod preloaded when this process has imported JAX (tests, notebooks,
    the verify command), because forking a multithreaded JAX process can deadlock."""
    import multiprocessing

    load_codemod()

    methods = multiprocessing.get_all_start_methods()
    if "jax" not in sys.modules and "fork" in methods:
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(
            ["hcmigrate.codemod.pipeline", "hcmigrate.runner", "hcmigrate.workers"]
        )
        return context
    return multiprocessing.get_context("spawn")
