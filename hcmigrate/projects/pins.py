"""Pins in a project's own metadata that keep current JAX out (issue 25).

A migrated project still does not run on current JAX when its metadata cannot install it:
`jax>=0.4.1,<0.5` (an upper bound below the JAX this hcmigrate runs with), or a pin of one of
JAX's own dependencies below what that JAX requires (ott-jax 0.4.3 declares `numpy<1.25`;
jax 0.10 requires `numpy>=2.0`). hcmigrate never edits such a pin (the project chose it,
perhaps for another dependency): it names each one as a manual finding, where the project
declares it. The requirements are read as `verify --project-deps` reads them
(hcmigrate.verify.project_deps: `[project]`, poetry, setup.cfg, a literal setup.py list).
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

_UPPER_BOUNDS = ("<", "<=", "==", "===", "~=")


def current_jax_needs() -> dict[str, tuple[Version, str]]:
    """(the lowest version current JAX can run with, why) for jax, jaxlib and every unmarked
    requirement of the installed jax with a lower bound."""
    jax = Version(importlib.metadata.version("jax"))
    needs = {"jax": (jax, f"excludes JAX {jax}, the JAX this migration is for")}
    for text in importlib.metadata.requires("jax") or ():
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is not None:
            continue  # (an extra's requirement)
        lows = [Version(s.version) for s in req.specifier if s.operator in (">=", "==", "~=")]
        if lows:
            needs[canonicalize_name(req.name)] = (
                max(lows),
                f"excludes what JAX {jax} requires (`{text}`)",
            )
    return needs


def installed_requirements(root: Path) -> list[tuple[str, str, Requirement]]:
    """(source, text, parsed) of each requirement the project declares that an install
    without extras takes (its marker, if any, holds there)."""
    from hcmigrate.verify.project_deps import project_dependencies

    out = []
    for source, text in project_dependencies(root).declared:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            out.append((source, text, req))
    return out


def blocking_pins(root: Path) -> list[str]:
    """One line per declared requirement that keeps current JAX (or what it needs) out."""
    needs = current_jax_needs()
    lines = []
    for source, text, req in installed_requirements(root):
        need = needs.get(canonicalize_name(req.name))
        if need is None or admits_or_above(req, need[0]):
            continue
        lines.append(
            f"{source}: manual: `{text}` {need[1]}: raise this pin by hand (hcmigrate raises "
            "only the floors its rewritten code needs, never an upper bound or another "
            "package's pin)"
        )
    return lines


def admits_or_above(req: Requirement, lowest: Version) -> bool:
    """Does the requirement allow `lowest` or, lacking an upper bound at or below it, newer?"""
    if req.specifier.contains(lowest, prereleases=True):
        return True
    for spec in req.specifier:
        if spec.operator in _UPPER_BOUNDS:
            try:
                if Version(spec.version.rstrip(".*")) <= lowest:
                    return False
            except InvalidVersion:
                continue
    return True
