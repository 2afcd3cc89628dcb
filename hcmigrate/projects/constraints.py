"""What caps a project's jax besides its own requirements (issue 34): pip constraints files
named from its requirements files (`-c constraints.txt`, `--constraint FILE`), uv's
`[tool.uv] constraint-dependencies` and `override-dependencies`, and pdm's
`[tool.pdm.resolution] overrides`. A floor raised past such a cap could not be installed: the
run names the cap instead (hcmigrate.projects.metadata_plan)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from hcmigrate.projects.ownership import REQUIREMENT_PATTERNS, read_metadata

_CONSTRAINT_LINE = re.compile(r"^\s*(?:-c|--constraint)(?:\s+|=)(?P<file>\S+)")


@dataclass(frozen=True)
class Cap:
    path: Path  # the file that says it
    text: str  # as written, e.g. `jax<0.4.20`
    specifier: str

    def allows(self, version: str) -> bool:
        try:
            return SpecifierSet(self.specifier).contains(version, prereleases=True)
        except InvalidSpecifier:
            return True


def _jax_caps_in(requirements: list[str], path: Path) -> list[Cap]:
    out = []
    for text in requirements:
        try:
            req = Requirement(text.split("#", 1)[0].strip())
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) in ("jax", "jaxlib") and str(req.specifier):
            out.append(Cap(path, text.strip(), str(req.specifier)))
    return out


def jax_caps(root: Path) -> list[Cap]:
    """Every constraint on jax or jaxlib outside the project's requirement lists."""
    caps: list[Cap] = []
    seen: set[Path] = set()
    for pattern in REQUIREMENT_PATTERNS:
        for req_file in sorted(root.glob(pattern)):
            text = read_metadata(req_file) or ""
            for line in text.splitlines():
                m = _CONSTRAINT_LINE.match(line)
                if m is None:
                    continue
                constraints = (req_file.parent / m.group("file")).resolve()
                if constraints in seen:
                    continue
                seen.add(constraints)
                body = read_metadata(constraints) or ""
                caps += _jax_caps_in(
                    [ln for ln in body.splitlines() if ln.strip() and not ln.startswith("-")],
                    constraints,
                )
    text = read_metadata(root / "pyproject.toml")
    if text is not None:
        try:
            tool = tomllib.loads(text).get("tool") or {}
        except tomllib.TOMLDecodeError:
            tool = {}
        uv = tool.get("uv") if isinstance(tool.get("uv"), dict) else {}
        for key in ("constraint-dependencies", "override-dependencies"):
            values = uv.get(key)
            if isinstance(values, list):
                caps += _jax_caps_in(
                    [v for v in values if isinstance(v, str)], root / "pyproject.toml"
                )
        pdm = tool.get("pdm") if isinstance(tool.get("pdm"), dict) else {}
        overrides = (
            (pdm.get("resolution") or {}).get("overrides")
            if isinstance(pdm.get("resolution"), dict)
            else None
        )
        if isinstance(overrides, dict):
            caps += _jax_caps_in(
                [f"{k}{v}" for k, v in overrides.items() if isinstance(v, str)],
                root / "pyproject.toml",
            )
    return caps
