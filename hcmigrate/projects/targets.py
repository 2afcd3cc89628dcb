"""The JAX a project's rewritten code targets (issue 34): its declared floor, or the floor the
native rewrite needs where the run can raise the declared one (hcmigrate.projects.floors);
decided per project, before migrating, from that project's own metadata."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hcmigrate.projects.ownership import Project


@dataclass(frozen=True)
class JaxTarget:
    declared: tuple[int, ...] | None = None  # the lowest JAX its pins allow (None: no pin)
    raise_to: tuple[int, ...] | None = None  # the floor the rewrite targets when raised
    kept: tuple[Path, str] | None = None  # why the floor cannot be raised alone
    note: str | None = None  # where the target came from (-v)
    problems: list = field(default_factory=list)  # (path, reason): files that could not be read
    # the highest JAX a written construct needs to which the run raises the project's floor
    # where its code needs it (hcmigrate.projects.metadata_plan), caps and pins allowing
    raisable_to: tuple[int, ...] | None = None


def jax_target(project: Project, *, strategy: str, raise_jax_pin: bool) -> JaxTarget:
    return project.fact(
        "jax_target",
        lambda p: _jax_target(p.metadata_root, strategy=strategy, raise_jax_pin=raise_jax_pin),
    )


def _jax_target(root: Path, *, strategy: str, raise_jax_pin: bool) -> JaxTarget:
    from hcmigrate.config import pinned_jax
    from hcmigrate.errors import ConfigError
    from hcmigrate.facts import NATIVE_OUTPUT_SINCE
    from hcmigrate.projects.constraints import jax_caps
    from hcmigrate.projects.floors import FloorRaise, Kept, plan_raise

    problems: list = []
    try:
        pinned = pinned_jax(root, problems)
    except ConfigError as exc:  # (the message names the file)
        where, _, why = exc.message.partition(": ")
        return JaxTarget(problems=[(where, why or exc.message)])
    if not pinned:
        return JaxTarget(problems=problems)
    declared = pinned[0]
    note = f"target JAX {'.'.join(map(str, declared))} (from {pinned[1]})"
    raise_to = kept = None
    if raise_jax_pin and strategy == "native" and declared < NATIVE_OUTPUT_SINCE:
        need = ".".join(map(str, NATIVE_OUTPUT_SINCE))
        caps = [c for c in jax_caps(root) if not c.allows(need)]
        raised = plan_raise(root)
        if raised is not None and caps:
            kept = (caps[0].path, f"`{caps[0].text}` in {caps[0].path.name} caps jax below {need}")
        elif isinstance(raised, FloorRaise):
            raise_to = NATIVE_OUTPUT_SINCE
        elif isinstance(raised, Kept):
            kept = (raised.path, raised.reason)
    raisable_to = None
    if raise_jax_pin and strategy == "native":
        raisable_to = _raisable_to(root, declared)
    return JaxTarget(declared, raise_to, kept, note, problems, raisable_to=raisable_to)


def _raisable_to(root: Path, declared: tuple[int, ...]) -> tuple[int, ...] | None:
    """The highest release a construct the run writes needs (native_needs.SINCE) to which the
    project's `jax` floor, now `declared`, can be raised: no cap excludes it and every
    declaration can be raised to it (hcmigrate.projects.floors.plan_raise); None: none."""
    from hcmigrate.facts import COMPAT_PACKAGE_JAX_FLOOR, NATIVE_KEYWORD_SINCE
    from hcmigrate.native_needs import SINCE
    from hcmigrate.projects.constraints import jax_caps
    from hcmigrate.projects.floors import FloorRaise, plan_raise

    releases = {*SINCE.values(), *NATIVE_KEYWORD_SINCE.values(), COMPAT_PACKAGE_JAX_FLOOR}
    caps = jax_caps(root)
    for release in sorted((r for r in releases if r > tuple(declared)), reverse=True):
        text = ".".join(map(str, release))
        if all(c.allows(text) for c in caps) and isinstance(plan_raise(root, release), FloorRaise):
            return release
    return None


def jax_requirements(project: Project) -> tuple[str, ...]:
    """The project's declared `jax` requirements and the constraints that cap it (texts)."""
    return project.fact("jax_requirements", lambda p: _jax_requirements(p.metadata_root))


def _jax_requirements(root: Path) -> tuple[str, ...]:
    from packaging.utils import canonicalize_name

    from hcmigrate.projects.constraints import jax_caps
    from hcmigrate.projects.pins import installed_requirements

    texts = [
        t for _, t, req in installed_requirements(root) if canonicalize_name(req.name) == "jax"
    ]
    texts += [c.text for c in jax_caps(root) if c.text.strip().lower().startswith("jax")]
    return tuple(texts)


def never_reaches(requirements: tuple[str, ...], release: str) -> bool:
    """Does one of the project's `jax` requirements keep out `release` and every later one?"""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import Version

    from hcmigrate.projects.pins import admits_or_above

    for text in requirements:
        try:
            if not admits_or_above(Requirement(text), Version(release)):
                return True
        except InvalidRequirement:
            continue
    return False
