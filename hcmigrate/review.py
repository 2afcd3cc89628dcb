"""--interactive: show each change as a diff hunk, ask y (apply) / n (skip) / a (all) / q (quit),
and write what was chosen, if it still makes a module.

Each change is asked about in the terminal (`click_ask`) by the CLI; `review_change` takes the
asking and showing as functions, so a library caller can decide some other way.
"""

from __future__ import annotations

import ast
import builtins
import difflib
from typing import Callable

import click

from hcmigrate import files as fileio
from hcmigrate.errors import HcmigrateError, OutputError
from hcmigrate.results import FAILED, UNCHANGED, FileResult
from hcmigrate.syntax import compile_error

CONTEXT = 3


def render_hunk(old_lines: list[str], new_lines: list[str], op, name: str) -> str:
    _, i1, i2, j1, j2 = op
    lo, hi = max(0, i1 - CONTEXT), min(len(old_lines), i2 + CONTEXT)
    out = [f"@@ {name}:{i1 + 1} @@\n"]
    out += [" " + line for line in old_lines[lo:i1]]
    out += ["-" + line for line in old_lines[i1:i2]]
    out += ["+" + line for line in new_lines[j1:j2]]
    out += [" " + line for line in old_lines[i2:hi]]
    return "".join(line if line.endswith("\n") else line + "\n" for line in out)


def review(
    old: str,
    new: str,
    name: str,
    ask: Callable[[str], str],
    echo: Callable[[str], None],
    accept_all: bool = False,
) -> tuple[str, bool, bool]:
    """Ask about every hunk. Returns (text to write, accept_all from now on, quit)."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    out: list[str] = []
    quit_ = False
    for op in ops:
        tag, i1, i2, j1, j2 = op
        if tag == "equal":
            out += a[i1:i2]
            continue
        if quit_:
            out += a[i1:i2]
            continue
        if accept_all:
            out += b[j1:j2]
            continue
        echo(render_hunk(a, b, op, name))
        answer = (
            ask("Apply this change? [y]es / [n]o / [a]ll remaining / [q]uit").strip().lower()[:1]
        )
        if answer == "a":
            accept_all = True
            out += b[j1:j2]
        elif answer == "y":
            out += b[j1:j2]
        elif answer == "q":
            quit_ = True
            out += a[i1:i2]
        else:
            out += a[i1:i2]
    return "".join(out), accept_all, quit_


def click_ask(prompt: str) -> str:
    """The answer typed at the terminal. Ctrl-C, SIGTERM or SIGHUP at the prompt interrupt the
    run as anywhere else (click would turn them into its own abort, exit 1); the end of the
    input is "q": no answer can come any more."""
    try:
        return click.prompt(
            prompt,
            type=click.Choice(["y", "n", "a", "q"], case_sensitive=False),
            show_choices=False,
        )
    except click.Abort as exc:
        if isinstance(exc.__context__, KeyboardInterrupt):
            raise exc.__context__ from None
        return "q"


def click_echo(text: str) -> None:
    try:
        click.echo(text, nl=False)
    except OSError as exc:
        raise OutputError(exc.strerror or str(exc)) from None


def undefined_names(code: str) -> set[str]:
    """Names read somewhere in `code` but bound nowhere in it (nor builtins): a coarse check that
    a partial selection of hunks did not drop an import still needed, or keep a use whose import
    was not added."""
    tree = ast.parse(code)
    loaded, bound = set(), set(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                bound.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, ast.alias):
            pass
        elif (
            hasattr(ast, "MatchAs") and isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name
        ):
            bound.add(node.name)
    return loaded - bound


def review_change(
    path, res: FileResult, accept_all: bool, ask=None, echo=None
) -> tuple[bool, bool]:
    """Ask about each hunk of one changed file (`res` from a run in review mode), write what was
    accepted. Returns (accept all from now on, quit). A notebook is asked about as a whole (its
    JSON hunks could break it); a choice that does not compile, or leaves a name undefined (a
    rewrite without its import), is not written."""
    from hcmigrate.runner import unified_diff

    ask, echo = ask or click_ask, echo or click_echo
    old, new = res.original, res.new
    if res.notebook:
        if accept_all:
            answer = "a"
        else:
            echo(unified_diff(old, new, res.display))
            answer = ask(
                f"Apply these changes to {res.display}? [y]es / [n]o / [a]ll remaining / [q]uit"
            )
        if answer == "q":
            res.status = UNCHANGED
            return accept_all, True
        accept_all = accept_all or answer == "a"
        chosen, quit_ = (new if answer in ("y", "a") else old), False
    else:
        chosen, accept_all, quit_ = review(old, new, res.display, ask, echo, accept_all)
    if chosen == old:
        res.status = UNCHANGED
        return accept_all, quit_
    if not res.notebook and compile_error(chosen) is not None:
        res.status, res.error = (
            FAILED,
            "the chosen changes together do not compile; file not written",
        )
        return accept_all, quit_
    if not res.notebook:
        missing = undefined_names(chosen) - undefined_names(old)
        if missing:
            res.status = FAILED
            res.error = (
                f"the chosen changes leave {', '.join(sorted(missing))} undefined (a rewrite and "
                "its import go together); file not written"
            )
            return accept_all, quit_
    try:
        src = fileio.read_source(path, notebook=res.notebook)
        if src.text != old:
            raise fileio.FileError(
                "file changed on disk during the review; not written (run again)"
            )
        fileio.write_atomic(src, chosen)
        res.written = True
    except HcmigrateError as exc:
        res.status, res.error = FAILED, exc.message
    except OSError as exc:
        res.status, res.error = FAILED, f"not written: {exc.strerror or exc}"
    return accept_all, quit_
