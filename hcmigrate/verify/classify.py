"""Why did the candidate fail? Separating the migration's doing from the rest.

Real projects that used host_callback also use other JAX APIs that current JAX removed
(`jax.tree_map`, `jnp.clip(a_max=...)`, `from jax.config import config`, ...), or import
packages the candidate's environment lacks. Such a failure says nothing about the migrated host
callbacks: the report names it apart (exit status 3 when nothing else differs) with the API, the
JAX version that removed it, what replaces it and the codemod rule that rewrites it. The removed
APIs are the rows of `hcmigrate.jax_removals`, the table the codemod's JAX-removals rules read
too. A candidate that still imports `jax.experimental.host_callback` is the migration's business
(an unfinished migration) and stays a difference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hcmigrate.jax_removals import REMOVED_APIS, Kind, RemovedApi, lookup, version

HOST_CALLBACK = "jax.experimental.host_callback"
# JAX's own distributions: a name gone from them is a removal (jaxlib.xla_extension, renamed
# jaxlib._jax in jaxlib 0.6.1: measured on the wheels' file lists), not a missing dependency
_JAX_PACKAGES = ("jax", "jaxlib")

# The messages current JAX (and Python) give when a removed API is used; each is matched to a
# row of the table (tests/test_jax_removals_facts.py checks that every row's measured failure
# on current JAX is).
_ATTRIBUTE = re.compile(r"module '(?P<mod>[\w.]+)' has no attribute '(?P<name>\w+)'")
_IMPORT_NAME = re.compile(r"cannot import name '(?P<name>\w+)' from '(?P<mod>[\w.]+)'")
_NO_MODULE = re.compile(r"No module named '(?P<mod>[\w.]+)'")
_KEYWORD = re.compile(r"(?P<func>\w+)\(\) got an unexpected keyword argument '(?P<keyword>\w+)'")
# JAX's own removal stubs: "jax.core.get_aval was deprecated in JAX v0.8.2 and removed ...",
# "arr.device_buffer has been deprecated. Use arr.addressable_data(0)"
_JAX_SAYS = re.compile(
    r"(?P<name>(?:jax|jnp|arr)(?:\.\w+)+)(?:\(\))? (?:was|is|has been) (?:deprecated|removed|deleted)"
)
_ARRAY_ATTRIBUTE = re.compile(
    r"'[\w.]*(?:ArrayImpl|Array|Tracer)' object has no attribute '(?P<name>\w+)'"
)
# A warning an installed package gives at its import (compare.py names the package), made an
# error by the project's `filterwarnings = error`: jaxopt 0.8.5's "JAXopt is no longer
# maintained" DeprecationWarning, which the reference's jaxopt 0.8.3 never gave
_PACKAGE_WARNS = re.compile(
    r"(?P<warning>\w*Warning: .*?) \(raised in the installed package `(?P<package>[\w.]+)`\)"
)
# `x.device()` where `x.device` became a property (the removed method)
_DEVICE_NOT_CALLABLE = "'Device' object is not callable"


@dataclass
class Failure:
    kind: str  # "removed-jax-api" | "missing-module" | "package-warns" | "host-callback-left"
    api: str  # the dotted name (or module) that is missing; `f(keyword=...)` for a keyword
    row: RemovedApi | None = None  # the table's row, when the API is in the table
    message: str | None = None  # the error line it was read from (classify_output)

    @property
    def removed_in(self) -> str | None:
        return self.row.removed_in if self.row else None

    @property
    def removed_when(self) -> str:
        """` (removed in JAX X)`, the way every message says it ("" when not known)."""
        return f" (removed in JAX {self.removed_in})" if self.removed_in else ""

    @property
    def rule(self) -> str:
        """The code of the codemod rule that rewrites or reports the API ("" when none)."""
        return self.row.rule if self.row else ""

    def describe(self, candidate_jax: str | None = None) -> str:
        where = f"JAX {candidate_jax}" if candidate_jax else "current JAX"
        if self.kind == "host-callback-left":
            return (
                f"the candidate still uses {HOST_CALLBACK}, which {where} no longer has "
                "(a stub that raises from JAX 0.4.35, then removed): the migration is not "
                "finished there"
            )
        if self.kind == "package-warns":
            return (
                f"the candidate's environment's `{self.api}` warns on import "
                f"(`{self.message[:120]}`), which the project's warning filters make an error; "
                "the reference's did not: a version of that package, not the migration (install "
                "the one the reference ran where the candidate runs, or filter the warning)"
            )
        if self.kind == "missing-module":
            return (
                f"the candidate's environment cannot import `{self.api}` (a dependency the "
                "reference has): install it where the candidate runs (--candidate-python)"
            )
        text = f"`{self.api}` is not in {where}"
        row = self.row
        if row is None:
            return text + ": not caused by the host_callback migration"
        text += f" (removed in JAX {row.removed_in})"
        if row.replacement is not None:
            use = f"{row.replacement}=" if row.kind is Kind.KEYWORD else row.replacement
            text += f"; use {use}"
            if row.replacement_since:
                text += f" (JAX >= {row.replacement_since})"
        if row.advice:
            text += f"; {row.advice}"
        text += ": not caused by the host_callback migration"
        if row.rule:
            # (the candidate still failing on it means this use was not rewritten here: a run
            # without the rule, or a spelling it could not follow; never claim it was fixed)
            if row.mechanical:
                text += (
                    f"; the candidate still uses it: hcmigrate's rule {row.rule} rewrites the "
                    "uses it can resolve and reports the rest, so fix this one by hand if its "
                    "run left it"
                )
            else:
                text += f"; hcmigrate's rule {row.rule} reports it (no mechanical rewrite)"
        return text

    @property
    def unrelated(self) -> bool:
        return self.kind != "host-callback-left"

    def record(self, where: str, candidate_jax: str | None, error: str | None) -> dict:
        """The entry of `--json`'s "unrelated" list."""
        return {
            "where": where,
            "failure": self.describe(candidate_jax),
            "api": self.api,
            "removed_in": self.removed_in,
            "rule": self.rule,
            "error": error,
        }


def classify(message: str | None) -> Failure | None:
    """The failure a candidate error message shows, when it is one of the kinds above."""
    if not message:
        return None
    for pattern in (_ATTRIBUTE, _IMPORT_NAME):
        m = pattern.search(message)
        if m:
            name = f"{m.group('mod')}.{m.group('name')}"
            return _jax_failure(name) if name.split(".")[0] in _JAX_PACKAGES else None
    m = _NO_MODULE.search(message)
    if m:
        module = m.group("mod")
        if module.split(".")[0] in _JAX_PACKAGES:
            return _jax_failure(module)
        if module.split(".")[0] in ("compat", "hcmigrate_compat"):
            return None  # the compat runtime missing is the migration's business
        return Failure("missing-module", module)
    m = _KEYWORD.search(message)
    if m:
        return _keyword_failure(m.group("func"), m.group("keyword"))
    m = _PACKAGE_WARNS.search(message)
    if m:
        return Failure("package-warns", m.group("package"), message=m.group("warning"))
    m = _JAX_SAYS.search(message)
    if m:
        name = re.sub(r"^jnp\.", "jax.numpy.", re.sub(r"^arr\.", "jax.Array.", m.group("name")))
        return _jax_failure(name)
    m = _ARRAY_ATTRIBUTE.search(message)
    if m:
        row = lookup(f"jax.Array.{m.group('name')}")
        return Failure("removed-jax-api", row.name, row) if row else None
    for row in REMOVED_APIS:  # (a call whose meaning changed: JAX names the release)
        if row.kind is Kind.CALL_BEHAVIOUR and (
            f" for {row.name.rsplit('.', 1)[1]}:" in message
            and f"Prior to JAX v{row.removed_in}" in message
        ):
            return Failure("removed-jax-api", f"{row.name}(...)", row)
    if _DEVICE_NOT_CALLABLE in message:
        row = lookup("jax.Array.device")
        return Failure("removed-jax-api", "jax.Array.device()", row) if row else None
    return None


def classify_output(text: str | None) -> Failure | None:
    """The first failure of the kinds above in a run's output (pytest's report of a conftest
    or test module that failed to import: `E   AttributeError: ...` lines)."""
    for line in (text or "").splitlines():
        line = line.strip()
        if line.startswith("E "):
            line = line[1:].strip()
        if re.match(r"\w*(Error|Exception)\b", line):
            failure = classify(line)
            if failure is not None:
                failure.message = line
                return failure
    return None


def _jax_failure(name: str) -> Failure:
    if name == HOST_CALLBACK or name.startswith(HOST_CALLBACK + "."):
        return Failure("host-callback-left", HOST_CALLBACK)
    row = lookup(name)
    if row is None:
        return Failure("removed-jax-api", name)
    return Failure("removed-jax-api", row.name, row)


def _keyword_failure(function: str, keyword: str) -> Failure | None:
    """A removed keyword argument: the row whose function has that name and keyword."""
    for row in REMOVED_APIS:
        if row.kind is Kind.KEYWORD and row.keyword == keyword:
            if row.name.rsplit(".", 1)[-1] == function:
                return Failure("removed-jax-api", f"{row.name}({keyword}=...)", row)
    return None


def removed_on_compat_reference(output: str, compat_reference: bool) -> str | None:
    """The advice for an original that failed on the compat reference (current JAX) because
    it uses an API current JAX removed: it can only run on the legacy reference. None when the
    reference is not the compat one or the failure is another."""
    if not compat_reference:
        return None
    failure = classify_output(output)
    if failure is None or failure.kind != "removed-jax-api":
        return None
    return (
        f"the original uses `{failure.api}`, which current JAX no longer has"
        f"{failure.removed_when}, so it "
        "cannot run on the compat reference (the compat runtime on current JAX): use "
        "--reference legacy (real jax 0.4.30)"
    )


def missing_on_reference(output: str, reference: str, compat_reference: bool) -> str | None:
    """One line for an original whose tests need a module the legacy reference environment
    (`reference`, as the report names it) lacks: which module, and the option that adds it.
    None when the reference is the compat one (the candidate's own interpreter) or the
    failure is another."""
    if compat_reference:
        return None
    failure = classify_output(output)
    if failure is None or failure.kind != "missing-module":
        return None
    return (
        f"the original's tests need the module `{failure.api}` ({failure.message}), which the "
        f"reference environment ({reference}) lacks and the project's runtime and test "
        "requirements do not name: name its package in a requirements file and add "
        "--project-deps-from FILE (with --reference legacy), or declare it in the project's "
        "test extra and use --project-deps"
    )


def missing_on_reference_jax(message: str | None, reference_jax: str | None) -> Failure | None:
    """Why the original could not run a test on the legacy reference's JAX (`reference_jax`),
    when that JAX is the reason: it no longer had an API the original uses (SGMCMCJax's tests
    call `jnp.alltrue`, gone in 0.4.16; a JAX name the table lacks counts too), or it warns
    about one it deprecated (`jnp.clip(a_max=...)`, 0.4.27) and the project's warning filters
    make that an error ("deprecated-jax-api"). Either way the test says nothing about the
    migration. None for any other failure."""
    if not message or not reference_jax:
        return None
    if _WARNING.match(message):
        return _deprecated_on(message, reference_jax)
    failure = classify(message)
    if failure is None or failure.kind != "removed-jax-api":
        return None
    if failure.row is not None and version(failure.row.removed_in) > version(reference_jax):
        return None
    failure.message = message
    return failure


_WARNING = re.compile(r"\s*(?:E\s+)?\w*Warning\b")


def _deprecated_on(message: str, reference_jax: str) -> Failure | None:
    """The table's row of a deprecation warning JAX `reference_jax` gave (deprecated by then,
    not yet removed), the row of a keyword the message quotes first."""
    spelled = message.replace("jnp.", "jax.numpy.")
    rows = [
        r
        for r in REMOVED_APIS
        if r.deprecated_in
        and version(r.deprecated_in) <= version(reference_jax) < version(r.removed_in)
        and re.search(rf"\b{re.escape(r.name)}\b", spelled)
    ]
    if not rows:
        return None
    # (keyword rows the message quotes, in its order: JAX names several at once, "Passing
    # arguments 'a', 'a_min' or 'a_max' to jax.numpy.clip is deprecated")
    quoted = sorted(
        (r for r in rows if r.keyword and f"'{r.keyword}'" in message),
        key=lambda r: message.index(f"'{r.keyword}'"),
    )
    row = (quoted or rows)[0]
    api = row.name
    if quoted:
        api += f"({'/'.join(r.keyword for r in quoted)}=...)"
    return Failure("deprecated-jax-api", api, row, message)
