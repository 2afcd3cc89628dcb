"""What both verify modes derive from their `VerifyRequest`: the candidate's and the
reference's interpreters, the project's [tool.hcmigrate] configuration, the codemod's migrated
copy, and the scratch folder a run works in."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hcmigrate import env_lock
from hcmigrate.verify.era import as_of_era
from hcmigrate.verify.numpy_choice import numpy_for
from hcmigrate.verify.outcome import CANNOT_RUN, CannotRun, Outcome
from hcmigrate.verify.project import Project, find_project
from hcmigrate.verify.project_deps import dependency_root, project_dependencies
from hcmigrate.verify.reference_env import resolve_reference
from hcmigrate.verify.reference_jax import choose_reference_jax
from hcmigrate.verify.request import VerifyRequest
from hcmigrate.verify.workspace import migrate_copy, scratch_folder


def candidate_interpreter(req: VerifyRequest) -> str:
    if not req.candidate_python:
        return sys.executable
    path = os.path.abspath(req.candidate_python)
    if not os.path.exists(path):
        raise CannotRun(f"--candidate-python {req.candidate_python}: no such interpreter")
    return path


def reference_interpreter(req: VerifyRequest, notes: list[str]):
    """(python, install_compat, description) of the reference side; what it says about the
    project's dependencies goes to `notes`."""
    if req.reference_jax and req.reference != "legacy":
        raise CannotRun(
            "--reference-jax picks the legacy environment's JAX: use --reference legacy"
        )
    jax_version = req.reference_jax
    if req.reference == "legacy" and jax_version is None:
        from hcmigrate.legacy_env import LEGACY_JAX_VERSION

        jax_version = choose_reference_jax(
            req.original, LEGACY_JAX_VERSION, notes, date=req.original_date
        )
    requirements = numpy = None
    if req.project_deps or req.project_deps_from:
        requirements, numpy = project_requirements(req, notes, jax_version)
    return resolve_reference(
        req.reference,
        req.progress,
        jax_version=jax_version,
        requirements=requirements,
        numpy=numpy,
    )


def project_requirements(
    req: VerifyRequest, notes: list[str], jax_version: str | None = None
) -> tuple[list[str], str | None]:
    """--project-deps: the project's dependencies and the numpy the reference must hold where
    the project's pins exclude the legacy environment's (numpy_choice.py); notes saying where
    they came from."""
    option = "--project-deps" if req.project_deps else "--project-deps-from"
    if req.reference != "legacy":
        raise CannotRun(f"{option} builds a legacy environment: use --reference legacy")
    root = dependency_root(req.original)
    if root is None:
        raise CannotRun(
            f"{option}: no pyproject.toml, setup.cfg or setup.py in or above {req.original}"
        )
    for path in req.project_deps_from:
        if not path.is_file():
            raise CannotRun(f"--project-deps-from {path}: no such file")
    deps = project_dependencies(root, req.project_deps_from, dev=req.project_deps_dev)
    notes.extend(deps.notes())
    from hcmigrate.legacy_env import LEGACY_JAX_VERSION, numpy_pin

    jax_version = jax_version or LEGACY_JAX_VERSION
    numpy, note = numpy_for(deps.declared, numpy_pin(jax_version), jax_version)
    if note:
        notes.append(note)
    return as_of_era(deps.requirements, jax_version, numpy or numpy_pin(jax_version), notes), numpy


def in_scratch(out: Outcome, req: VerifyRequest, run) -> Outcome:
    """run(req, out, workdir) in a scratch folder (kept with --keep); a CannotRun becomes the
    outcome's exit status 2 with its reason. The cached environments the run used are free to
    change again when it ends (hcmigrate.env_lock)."""
    with scratch_folder(req.keep) as workdir:
        try:
            run(req, out, workdir)
        except CannotRun as e:
            out.exit_code, out.why = CANNOT_RUN, str(e)
        finally:
            env_lock.release_all()
        if req.keep:
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


def migrated_copy(req: VerifyRequest, out: Outcome, workdir: Path, project: Project) -> Path:
    """ORIGINAL migrated by the codemod in the scratch folder, as the project configures it;
    what the codemod did goes into the outcome's notes."""
    root, notes = migrate_copy(
        req.original.resolve(), workdir, codemod_options(project), project.per_file_strategy
    )
    out.notes += notes or ["the codemod changed nothing"]
    return root
