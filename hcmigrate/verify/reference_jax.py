"""Which legacy JAX the reference runs when `--reference-jax` does not say: the JAX the original
ran with. Two facts decide, each with a note:

- The day the original was committed (`VerifyRequest.original_date`, from git): the newest
  of the dated references (hcmigrate.verify.era.DATED_REFERENCES: 0.4.23, 0.4.25, 0.4.30)
  released by then. A suite written before JAX 0.4.26 ran with no
  host_callback deprecation warning, and before 0.4.27 with no `jnp.clip(a_max=...)` one: under
  `filterwarnings = error` (blackjax 1.1.0) a newer JAX fails the original's own tests. A commit
  older than every such JAX takes the oldest of them; no date (not a git work tree): 0.4.30.
- The APIs JAX removed by then that the original uses (ott-jax 0.4.3's
  `jax.random.PRNGKeyArray`, gone in 0.4.24): the original cannot run on a JAX without them, so
  the reference is the newest legacy JAX this tool installs (ERA_END, 0.4.13 included: SGMCMCJax's
  `jnp.alltrue`, gone in 0.4.16) that still has them. Uses in code that only runs where they
  exist are not counted: the fallback of `try: ... except ImportError/AttributeError:` and the
  branches of a test of `hasattr(...)` or of a version (numpyro's `jax.linear_util` fallback,
  ott's `jnp.DeviceArray` behind `hasattr(jax, "Array")`); nor a use no JAX here has (it names
  itself in a note: removed before the oldest).

The uses are read with the codemod's word test of the removal table
(hcmigrate.removed_api_scan, rows of hcmigrate.jax_removals) on the module's text with those
guarded lines blanked."""

from __future__ import annotations

import ast
import datetime
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

from hcmigrate.errors import HcmigrateError
from hcmigrate.files import read_regular
from hcmigrate.jax_removals import REMOVED_APIS, Kind, RemovedApi, version
from hcmigrate.removed_api_scan import RemovedApiScan
from hcmigrate.verify.era import DATED_REFERENCES, ERA_END
from hcmigrate.verify.pytest_env import warnings_are_errors
from hcmigrate.verify.workspace import project_files

_FALLBACK_ERRORS = {"ImportError", "ModuleNotFoundError", "AttributeError"}


@dataclass(frozen=True)
class RemovedUse:
    row: RemovedApi
    path: Path  # the first file that uses it
    # not removed yet but deprecated by then, in a project whose warning filters make that an
    # error: the original's suite failed on such a JAX as on one without the API
    deprecated: bool = False

    @property
    def bound(self) -> str:
        """The JAX release the original cannot run on (nor on any after it)."""
        return self.row.deprecated_in if self.deprecated else self.row.removed_in

    @property
    def why(self) -> str:
        if self.deprecated:
            return (
                f"deprecated in JAX {self.row.deprecated_in}, which the project's warning "
                "filters make an error"
            )
        return f"removed in JAX {self.row.removed_in}"


def released(jax_version: str) -> datetime.date:
    """The day the legacy JAX reached PyPI (ERA_END is the day after)."""
    return datetime.date.fromisoformat(ERA_END[jax_version]) - datetime.timedelta(days=1)


def removed_uses(original: Path, legacy: str, deprecations: bool = False) -> list[RemovedUse]:
    """The removal-table rows, removed in `legacy` or before (or, with `deprecations`,
    deprecated by then), that the original's Python files use outside guarded fallbacks (one
    file each), the oldest bound first."""
    rows = [
        r
        for r in REMOVED_APIS
        if r.kind not in (Kind.BEHAVIOUR, Kind.CALL_BEHAVIOUR)
        and (
            version(r.removed_in) <= version(legacy)
            or (deprecations and r.deprecated_in and version(r.deprecated_in) <= version(legacy))
        )
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
        data = _without_guarded_lines(_without_prose(data))
        for row, scan in scans:
            if row.name not in found and scan.may_use_removed(data):
                found[row.name] = RemovedUse(
                    row, path, deprecated=version(row.removed_in) > version(legacy)
                )
    return sorted(found.values(), key=lambda u: (version(u.bound), u.row.name))


def choose_reference_jax(
    original: Path, legacy: str, notes: list[str], date: str | None = None
) -> str:
    """The legacy JAX the reference runs (see the module docstring); notes say why when it is
    not `legacy`."""
    installable = sorted(ERA_END, key=version)
    dated = sorted(DATED_REFERENCES, key=version)
    chosen = legacy
    if date is not None:
        day = datetime.date.fromisoformat(date)
        by_then = [v for v in dated if released(v) <= day]
        if not by_then:
            chosen = dated[0]
            notes.append(
                f"reference: jax {chosen}, the oldest legacy JAX this tool picks by date: the "
                f"original was committed on {date}, before its release (--reference-jax VERSION chooses "
                "another)"
            )
        elif version(by_then[-1]) < version(chosen):
            chosen = by_then[-1]
            notes.append(
                f"reference: jax {chosen}, the newest legacy JAX released by {date}, when the "
                "original was committed (--reference-jax VERSION chooses another)"
            )
    for use in removed_uses(original, chosen, deprecations=warnings_are_errors(original)):
        shown = _shown(use.path, original)
        older = [v for v in installable if version(v) < version(use.bound)]
        if not older:
            notes.append(
                f"the original uses `{use.row.name}` ({shown}), {use.why}, before every legacy "
                f"JAX this tool installs ({', '.join(installable)}): the reference may fail on "
                "it; --reference PYTHON runs an environment of your own"
            )
            continue
        chosen = older[-1]
        notes.append(
            f"reference: jax {chosen}: the original uses `{use.row.name}` ({shown}), "
            f"{use.why} (--reference-jax VERSION chooses another)"
        )
        break
    return chosen


def _without_guarded_lines(data: bytes) -> bytes:
    """The module's text with the lines that run only where an API exists blanked: except
    ImportError/AttributeError handlers, and both branches of an `if` (statement or
    expression) that tests `hasattr` or a version. (Unparsable text: as it is.)"""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return data
    blank: set[int] = set()

    def lines_of(body) -> None:
        for node in body:
            blank.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))

    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                if _catches_fallback(handler.type):
                    lines_of(handler.body)
        elif isinstance(node, ast.If) and _tests_what_exists(node.test):
            lines_of(node.body)
            lines_of(node.orelse)
        elif isinstance(node, ast.IfExp) and _tests_what_exists(node.test):
            lines_of([node.body, node.orelse])  # (`a if hasattr(jax, "Array") else b`)
        for block in (getattr(node, f, None) for f in ("body", "orelse", "finalbody")):
            if not isinstance(block, list):
                continue
            for i, statement in enumerate(block):
                # (`if hasattr(jax, "Array"): return ...` then the old spelling: ott's)
                if (
                    isinstance(statement, ast.If)
                    and _tests_what_exists(statement.test)
                    and statement.body
                    and isinstance(statement.body[-1], (ast.Return, ast.Raise))
                ):
                    lines_of(block[i + 1 :])
    if not blank:
        return data
    out = data.split(b"\n")
    for number in blank:
        if 0 < number <= len(out):
            out[number - 1] = b""
    return b"\n".join(out)


def _without_prose(data: bytes) -> bytes:
    """The module's text with its comments and docstrings blanked (a docstring becomes `0`, so
    the text still parses): they may still name an API the code no longer calls (cola 0.0.6's
    `# device = A.device_buffer.device()` took its reference down to 0.4.25, where its
    `array.device` property is a bound method). (Text Python cannot tokenize or parse: as it
    is.)"""
    text = data.decode("utf-8", "surrogateescape")
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        tree = ast.parse(data)
    except (tokenize.TokenError, SyntaxError, ValueError, RecursionError, MemoryError):
        return data
    lines = data.split(b"\n")
    text_lines = text.split("\n")
    for token in tokens:
        if token.type == tokenize.COMMENT:
            row, column = token.start
            cut = len(text_lines[row - 1][:column].encode("utf-8", "surrogateescape"))
            lines[row - 1] = lines[row - 1][:cut]
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            continue
        doc = body[0]  # (ast offsets are in UTF-8 bytes)
        first, last = doc.lineno - 1, (doc.end_lineno or doc.lineno) - 1
        start, stop = doc.col_offset, doc.end_col_offset or len(lines[last])
        if first == last:
            line = lines[first]
            lines[first] = line[:start] + b"0" + b" " * (stop - start - 1) + line[stop:]
            continue
        lines[first] = lines[first][:start] + b"0"
        for number in range(first + 1, last):
            lines[number] = b""
        lines[last] = b" " * stop + lines[last][stop:]
    return b"\n".join(lines)


def _catches_fallback(kind: ast.expr | None) -> bool:
    names = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return any(
        (isinstance(n, ast.Name) and n.id in _FALLBACK_ERRORS)
        or (isinstance(n, ast.Attribute) and n.attr in _FALLBACK_ERRORS)
        for n in names
    )


def _tests_what_exists(test: ast.expr) -> bool:
    for node in ast.walk(test):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "hasattr":
                return True
        name = (
            node.id
            if isinstance(node, ast.Name)
            else node.attr
            if isinstance(node, ast.Attribute)
            else ""
        )
        if "version" in name.lower():
            return True
    return False


def _python_files(original: Path):
    if original.is_file():
        yield original
        return
    yield from project_files(original, (".py",))


def _shown(path: Path, original: Path) -> str:
    try:
        return str(path.relative_to(original if original.is_dir() else original.parent))
    except ValueError:
        return str(path)
