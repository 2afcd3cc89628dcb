"""The numpy of a legacy reference environment with the project's own dependencies: the
legacy JAX environment's numpy (1.26.4 for jax 0.4.30) when the project's pins allow it,
else the newest numpy of legacy JAX's era that both allow; when none does, the pin that
conflicts, named in one line (never pip's resolver text)."""

from __future__ import annotations

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version

from hcmigrate.verify.outcome import CannotRun

# The numpy releases jax 0.4.30 runs with that have wheels for Python 3.11 (jax 0.4.30 asks
# numpy >= 1.23.2 there; numpy 2 came out two days before it and no legacy project ran on it),
# newest first.
LEGACY_ERA_NUMPY = (
    "1.26.4", "1.26.3", "1.26.2", "1.26.1", "1.26.0",
    "1.25.2", "1.25.1", "1.25.0",
    "1.24.4", "1.24.3", "1.24.2", "1.24.1", "1.24.0",
    "1.23.5", "1.23.4", "1.23.3", "1.23.2",
)  # fmt: skip


def numpy_for(
    declared: list[tuple[str, str]], held: str | None, jax_version: str
) -> tuple[str | None, str | None]:
    """(the numpy to hold the environment at where not `held`, a note saying why) for the
    project's requirements `declared` ((source, requirement) pairs); (None, None) when `held`
    (the JAX environment's numpy; None: pip's choice) already satisfies them."""
    pins = [(source, r) for source, r in declared if _is_numpy(r)]
    if held is None or not pins:
        return None, None
    specs = [Requirement(r).specifier for _, r in pins]
    if all(Version(held) in s for s in specs):
        return None, None
    for version in LEGACY_ERA_NUMPY:
        if all(Version(version) in s for s in specs):
            shown = ", ".join(r for _, r in pins)
            return version, (
                f"numpy {version} in the reference: the newest numpy of jax {jax_version}'s era "
                f"that the project's {shown} allows (the legacy environment has {held})"
            )
    source, requirement = next(
        (p for p, s in zip(pins, specs) if not any(Version(v) in s for v in LEGACY_ERA_NUMPY)),
        pins[0],
    )
    raise CannotRun(
        f"--project-deps: the project's pin {requirement} ({source}) conflicts with jax "
        f"{jax_version}, which runs with numpy {LEGACY_ERA_NUMPY[-1]} to {LEGACY_ERA_NUMPY[0]} "
        "here: relax the pin, or pass --reference PYTHON (an environment of your own with legacy JAX)"
    )


def _is_numpy(requirement: str) -> bool:
    try:
        parsed = Requirement(requirement)
    except InvalidRequirement:
        return False
    return parsed.name.lower() == "numpy" and (parsed.marker is None or parsed.marker.evaluate())
