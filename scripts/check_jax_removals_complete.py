#!/usr/bin/env python3
"""Is the table of removed JAX APIs (hcmigrate/jax_removals.py) complete? (issue 36)

scripts/measure_jax_removals.py measures the rows the table has; this script looks for the
rows it lacks, from two sources, and prints what no row covers:

* wheels: the pure-Python `jax` wheel of every release from 0.4.16 to the newest (the same
  cached downloads as the measurement): the public modules of each (files under `jax/`, no
  part starting with `_`, tests and internal folders left out) and the public names of the
  modules host_callback-era code imports names from. A module a release up to the legacy pin
  (0.4.30) has and the newest release does not, or a name usable in such a release (present or
  deprecated) that the newest release has not (absent, or a stub that raises), is a removal.
* the changelog: JAX's CHANGELOG.md (`--changelog PATH`; read from a fetched jax-ml/jax
  repository), every bullet of every release that says a `jax...` name or module was removed
  (or deleted), also before 0.4.16 (host_callback came with jax 0.2: a project pinned to jax
  0.3 still imports `jax.experimental.loops`). Each is checked in the newest wheel: a name it
  still has (the bullet named something else, or it came back) is no removal.

A removal is covered when the table has its row, a row of a module above it, or it is in
`NOT_ROWS` here with the reason it is left out. Exit status 1 when something is not covered.

    python scripts/check_jax_removals_complete.py --changelog /path/to/jax/CHANGELOG.md
    python scripts/check_jax_removals_complete.py --json out.json   # also write the findings
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure_jax_removals import USABLE, Wheel, releases, version_key  # noqa: E402

LEGACY_PIN = "0.4.30"  # the JAX a host_callback project runs on last (hcmigrate.legacy_env)

# The modules whose public names host_callback-era code takes (`jnp.x`, `jax.x`, `lax.x`, ...).
NAME_MODULES = (
    "jax",
    "jax.numpy",
    "jax.lax",
    "jax.random",
    "jax.tree_util",
    "jax.nn",
    "jax.scipy.special",
    "jax.sharding",
    "jax.experimental",
    "jax.experimental.pjit",
    "jax.dtypes",
    "jax.core",
    "jax.interpreters.xla",
    "jax.interpreters.pxla",
    "jax.interpreters.ad",
    "jax.interpreters.batching",
    "jax.interpreters.mlir",
    "jax.lib",
    "jax.util",
)

# Folders of the wheel that are no public API (JAX's own tests, type stubs, bundled extras).
_PRIVATE_PARTS = re.compile(r"(^|\.)(_[^.]*|tests?|testing|.*_test)(\.|$)")

# Removals the table leaves out on purpose, and why (each checked to be a removal).
NOT_ROWS: dict[str, str] = {
    "jax.experimental.host_callback": "hcmigrate's own subject (the HCB rules)",
    "jax.experimental.export": "removed in 0.4.36 (use jax.export); not measurable in the "
    "legacy environment, where importing it needs absl-py, which that environment lacks",
    "jax.extend.core.primitives.pjit_p": "only in 0.6.2 (the pjit_p row's guarded import)",
}
# Prefixes of JAX internals (no public API: JAX's own modules' helpers) the table leaves to
# verify's "not in current JAX" report; the ones host_callback-era projects were seen to use
# are rows (JAX107, JAX111; the tracer and trace classes of jax.interpreters.batching and
# .partial_eval, JAX109).
NOT_ROW_PREFIXES = (
    "jax.core.",
    "jax.interpreters.",
    "jax.experimental.jax2tf.",
    "jax.experimental.pallas.",
    "jax.experimental.mosaic.",
    "jax.extend.mlir.",
    "jax.tools.",
    "jax.lib.",
)

_RELEASE = re.compile(r"^## (?:jax|JAX) (?:v)?(\d+\.\d+\.\d+(?:\.\d+)?)\b", re.I)
_NAMES = re.compile(r"(?:\{(?:func|mod|class|attr|data|meth)\}`~?|`)(jax(?:\.\w+)+)(?:\(\))?`")
_REMOVED = re.compile(r"\b(?:removed|deleted|no longer (?:exported|available))\b", re.I)
_NOT_REMOVED = re.compile(r"\b(?:will be removed|to be removed|is deprecated|are deprecated)\b")


def public_modules(wheel: Wheel) -> set[str]:
    found = set()
    for path in wheel.files:
        if not path.startswith("jax/") or not path.endswith(".py"):
            continue
        dotted = path[: -len(".py")].replace("/", ".")
        if dotted.endswith(".__init__"):
            dotted = dotted[: -len(".__init__")]
        if not _PRIVATE_PARTS.search(dotted.split(".", 1)[1] if "." in dotted else ""):
            found.add(dotted)
    return found


def public_names(wheel: Wheel, module: str) -> set[str]:
    """The names of `module` a user may take in this release (present or deprecated)."""
    info = wheel.module(module)
    if info is None:
        return set()
    names = {
        n
        for n, stmt in info.bound.items()
        if not n.startswith("_") and not isinstance(stmt, ast.Import)  # (modules it imports)
    }
    names |= {n for n, (_, removed) in info.deprecations.items() if not removed}
    return {n for n in names if wheel.attribute(module, n)[0] in USABLE}


def changelog_removals(path: Path) -> dict[str, str]:
    """`jax...` names a changelog bullet says were removed -> the release that says so."""
    found: dict[str, str] = {}
    release = None
    bullet: list[str] = []

    def flush():
        text = " ".join(bullet)
        if release and _REMOVED.search(text) and not _NOT_REMOVED.search(text):
            for name in _NAMES.findall(text):
                found.setdefault(name, release)

    for line in path.read_text().splitlines():
        m = _RELEASE.match(line)
        if m:
            flush()
            bullet, release = [], m.group(1)
            continue
        if re.match(r"^\s*[*-] ", line):
            flush()
            bullet = [line]
        elif line.strip():
            bullet.append(line.strip())
        else:
            flush()
            bullet = []
    flush()
    return found


def covered(name: str) -> str | None:
    """The row (or NOT_ROWS reason) that covers a removed name, or None."""
    from hcmigrate.jax_removals import BY_KEY, lookup

    if name in NOT_ROWS:
        return f"left out: {NOT_ROWS[name]}"
    if name.startswith(NOT_ROW_PREFIXES):
        return "left out: a JAX internal"
    row = lookup(name)
    if row is not None:
        return f"row {row.name} ({row.rule})"
    if any(key.startswith(name + ":") for key in BY_KEY):
        return "keyword rows"
    return None


def newest_status(newest: Wheel, name: str) -> str:
    return newest.dotted(name)[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changelog", type=Path, help="JAX's CHANGELOG.md")
    parser.add_argument("--json", type=Path, help="also write the findings here")
    args = parser.parse_args()

    versions = releases()
    newest = Wheel(versions[-1])
    legacy_era = [v for v in versions if version_key(v) <= version_key(LEGACY_PIN)]
    findings: dict[str, dict] = {}

    def note(name: str, source: str, last_seen: str) -> None:
        entry = findings.setdefault(name, {"sources": [], "last_seen": last_seen})
        entry["sources"].append(source)

    # wheels: modules
    newest_modules = public_modules(newest)
    seen: dict[str, str] = {}
    for version in legacy_era:
        for module in public_modules(Wheel(version)):
            seen[module] = version
    for module, version in sorted(seen.items()):
        if module not in newest_modules and newest_status(newest, module) not in USABLE:
            note(module, f"module in the {version} wheel, not in {newest.version}", version)
    # wheels: names of the modules code takes names from
    for module in NAME_MODULES:
        names: dict[str, str] = {}
        for version in legacy_era:
            for name in public_names(Wheel(version), module):
                names[name] = version
        for name, version in sorted(names.items()):
            dotted = f"{module}.{name}"
            if newest_status(newest, dotted) not in USABLE:
                note(
                    dotted, f"name in the {version} wheel, not usable in {newest.version}", version
                )
    # changelog
    if args.changelog:
        for name, release in sorted(changelog_removals(args.changelog).items()):
            if name.startswith("jax.Array."):
                continue  # (methods: the METHOD rows, measured on jax.Array's class)
            if newest_status(newest, name) in USABLE:
                continue  # (still there: the bullet meant something else)
            note(name, f"changelog {release}: removed", release)

    # a name under a removed module is that module's business
    modules = {n for n, e in findings.items() if any("module" in s for s in e["sources"])}
    missing, kept = [], []
    for name, entry in sorted(findings.items()):
        if any(name.startswith(m + ".") for m in modules):
            continue
        row = covered(name)
        (kept if row else missing).append((name, entry, row))
    for name, entry, row in kept:
        print(f"covered  {name}: {row}")
    for name, entry, _ in missing:
        print(f"MISSING  {name}: {'; '.join(entry['sources'])}")
    print(f"{len(kept)} covered, {len(missing)} not covered")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "newest": newest.version,
                    "missing": {n: e for n, e, _ in missing},
                    "covered": {n: r for n, _, r in kept},
                },
                indent=1,
                sort_keys=True,
            )
            + "\n"
        )
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
