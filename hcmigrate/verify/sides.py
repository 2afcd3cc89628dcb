"""`Sides`: the settings of the reference and candidate sides both verify modes share, and what
both modes derive from them: the candidate's and the reference's interpreters, the project's
[tool.hcmigrate] configuration, and the scratch folder a run works in."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from hcmigrate.verify.outcome import CANNOT_RUN, CannotRun, Outcome
from hcmigrate.verify.project import Project, find_project
from hcmigrate.verify.reference_env import resolve_reference
from hcmigrate.verify.workspace import scratch_folder


@dataclass
class Sides:
    """The settings both modes share: who runs what, where."""

    reference: str = "compat"
    reference_jax: str | None = None
    project_deps: bool = False
    candidate_python: str | None = None
    platform: str | None = "cpu"
    timeout: float = 300.0
    progress: object = None
    live: object = None  # callback for progress while tests run


def candidate_interpreter(sides: Sides) -> str:
    if not sides.candidate_python:
        return sys.executable
    path = os.path.abspath(sides.candidate_python)
    if not os.path.exists(path):
        raise CannotRun(f"--candidate-python {sides.candidate_python}: no such interpreter")
    return path


def reference_interpreter(sides: Sides, project: Project | None):
    """(python, install_compat, description) of the reference side."""
    requirements = None
    if sides.project_deps:
        if sides.reference != "legacy":
            raise CannotRun("--project-deps builds a legacy environment: use --reference legacy")
        if project is None or project.root is None:
            raise CannotRun("--project-deps: no pyproject.toml found for the project")
        requirements = project.dependencies
    if sides.reference_jax and sides.reference != "legacy":
        raise CannotRun(
            "--reference-jax picks the legacy environment's JAX: use --reference legacy"
        )
    return resolve_reference(
        sides.reference, sides.progress, jax_version=sides.reference_jax, requirements=requirements
    )


def in_scratch(out: Outcome, keep: bool, run, *args) -> Outcome:
    """run(out, *args, workdir) in a scratch folder (kept with --keep); a CannotRun becomes the
    outcome's exit status 2 with its reason."""
    with scratch_folder(keep) as workdir:
        try:
            run(out, *args, workdir)
        except CannotRun as e:
            out.exit_code, out.why = CANNOT_RUN, str(e)
        if keep:
            out.kept = str(workdir)
    return out


def load_project(original: Path) -> Project:
    try:
        return find_project(original)
    except ValueError as e:
        raise CannotRun(str(e)) from None


def codemod_options(project: Project):
    from hcmigrate.api import Options

    return Options(strategy=project.strategy, target_jax=project.target_jax)
