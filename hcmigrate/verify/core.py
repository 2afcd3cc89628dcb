"""`verify()`: script (and notebook) mode. Runs ORIGINAL on a legacy reference and the
candidate (given, or ORIGINAL migrated by the codemod) on current JAX, each as one script, and
compares their traces; `Outcome` (hcmigrate.verify.outcome) holds the verdict and exit status.
"""

from __future__ import annotations

from pathlib import Path

from hcmigrate.verify.classify import classify
from hcmigrate.verify.compare import compare_traces
from hcmigrate.verify.execute import RunResult, run_sides
from hcmigrate.verify.launch import Side
from hcmigrate.verify.notebooks import NotebookProblem, notebook_script, relabel
from hcmigrate.verify.outcome import (
    CANDIDATE_BROKEN,
    CANNOT_RUN,
    DIFFERENT,
    CannotRun,
    Outcome,
    conclude,
)
from hcmigrate.verify.prng import old_jax, prng_note, second_opinion
from hcmigrate.verify.reference_env import project_compat_dir
from hcmigrate.verify.sides import (
    Sides,
    candidate_interpreter,
    codemod_options,
    in_scratch,
    load_project,
    reference_interpreter,
)
from hcmigrate.verify.sites import SiteMap
from hcmigrate.verify.traces import load_trace, normalise_paths
from hcmigrate.verify.values import Tolerance
from hcmigrate.verify.workspace import find_entry, migrate_copy


def verify(
    original: str | Path,
    *,
    candidate: str | Path | None = None,
    reference: str = "compat",
    tolerance: Tolerance | None = None,
    timeout: float = 300.0,
    entries: list[str] | None = None,
    entry_file: str | None = None,
    script_args: list[str] | None = None,
    reference_trace: str | Path | None = None,
    keep_traces: str | Path | None = None,
    platform: str | None = "cpu",
    progress=None,
    reference_jax: str | None = None,
    project_deps: bool = False,
    candidate_python: str | None = None,
    keep: bool = False,
) -> Outcome:
    original = Path(original)
    out = Outcome(exit_code=CANNOT_RUN, original=str(original))
    sides = Sides(
        reference, reference_jax, project_deps, candidate_python, platform, timeout, progress
    )
    return in_scratch(
        out,
        keep,
        _verify_script,
        original,
        candidate,
        sides,
        tolerance,
        entries,
        entry_file,
        script_args,
        reference_trace,
        keep_traces,
    )


def _verify_script(
    out,
    original,
    candidate,
    sides,
    tolerance,
    entries,
    entry_file,
    script_args,
    reference_trace,
    keep_traces,
    workdir,
) -> None:
    if not original.exists():
        raise CannotRun(f"{original}: no such file or folder")
    project = load_project(original)
    notebook = original.suffix == ".ipynb"
    if candidate is None:
        cand_root, notes = migrate_copy(original.resolve(), workdir, codemod_options(project))
        out.notes += notes or ["the codemod changed nothing"]
    else:
        cand_root = Path(candidate)
        if not cand_root.exists():
            raise CannotRun(f"--candidate {candidate}: no such file or folder")
        if original.is_dir() != cand_root.is_dir():
            raise CannotRun("ORIGINAL and --candidate must both be files or both be folders")
    if original.is_dir():
        orig_script = find_entry(original, entry_file)
        cand_script = cand_root / orig_script.relative_to(original)
        if not cand_script.is_file():
            raise CannotRun(f"the candidate folder has no {orig_script.relative_to(original)}")
        cand_paths: list[str] = []
    else:
        orig_script, cand_script = original, Path(cand_root)
        # Sibling modules of a single-file original stay importable from the candidate copy.
        cand_paths = [str(original.resolve().parent)] if candidate is None else []
    out.candidate = (
        str(cand_script)
        if candidate is not None
        else f"{original} migrated by the codemod ({cand_script})"
    )
    maps = {}
    cwd = None
    if notebook:  # the cells run as one script, in the notebook's folder, without __file__
        try:
            maps["reference"] = notebook_script(orig_script, workdir / "reference-cells.py")
            maps["candidate"] = notebook_script(cand_script, workdir / "candidate-cells.py")
        except NotebookProblem as e:
            raise CannotRun(str(e)) from None
        cwd = str(original.resolve().parent)
        run_orig, run_cand = Path(maps["reference"].script), Path(maps["candidate"].script)
        cand_paths = []
    else:
        run_orig, run_cand = orig_script.resolve(), cand_script.resolve()
    cand_python = candidate_interpreter(sides)
    cand_side = Side(
        "candidate",
        cand_python,
        run_cand,
        extra_paths=cand_paths,
        compat_dir=project_compat_dir(),
        description=f"jax on {cand_python}",
        no_file=notebook,
        cwd=cwd,
    )
    side_list = [cand_side]
    ref_side = None
    if reference_trace is not None:
        ref_trace = load_trace(reference_trace)
        out.reference = f"recorded trace {reference_trace} (jax {ref_trace.get('jax')})"
    else:
        python, install_compat, description = reference_interpreter(sides, project)
        out.reference = description
        ref_side = Side(
            "reference",
            python,
            run_orig,
            install_compat=install_compat,
            compat_dir=project_compat_dir() if install_compat else None,
            description=description,
            no_file=notebook,
            cwd=cwd,
        )
        side_list.insert(0, ref_side)
    results = run_sides(
        side_list,
        script_args=list(script_args or []),
        entries=list(entries or []),
        timeout=sides.timeout,
        workdir=workdir,
        platform=sides.platform,
    )
    cand, ref = _sides_of(results, out)
    if reference_trace is None:
        ref_trace = ref.trace
        if ref_trace.get("exit_status") != 0:
            tail = "\n".join(ref.stderr.strip().splitlines()[-12:])
            raise CannotRun(
                f"the original failed on the reference ({out.reference}), exit status "
                f"{ref_trace.get('exit_status')}: {ref_trace.get('error') or ''}\n{tail}"
            )
    if cand.trace is None:
        raise CannotRun(cand.why_no_trace())
    cand_trace = cand.trace
    if notebook:
        relabel(ref_trace, maps["reference"])
        relabel(cand_trace, maps["candidate"])
        site_map = SiteMap()
        site_map.add(maps["candidate"].script, maps["reference"].script)
    else:
        site_map = SiteMap.for_roots(orig_script.resolve(), cand_script.resolve())
    replace = [
        (str(cand_script.resolve()), str(orig_script.resolve())),
        (str(cand_script.resolve().parent), str(orig_script.resolve().parent)),
    ]
    normalise_paths(cand_trace, replace)
    comparison = compare_traces(ref_trace, cand_trace, tolerance or Tolerance(), sites=site_map)
    if not comparison.equivalent and ref_side is not None and old_jax(ref_trace):
        second = second_opinion(ref_side, sides, script_args, entries, workdir)
        if second is not None:
            if notebook:
                relabel(second, maps["reference"])
            again = compare_traces(second, cand_trace, tolerance or Tolerance(), sites=site_map)
            if again.equivalent:
                out.notes.append(prng_note(ref_trace))
                ref_trace, comparison = second, again
            elif len(again.differences) < len(comparison.differences):
                # what still differs is not jax.random's doing: report only that
                out.notes.append(
                    "compared with the reference drawing jax.random numbers as JAX >= 0.5 does: "
                    f"the plain JAX {ref_trace.get('jax')} run also differs in "
                    f"{len(comparison.differences) - len(again.differences)} place(s) that "
                    "vanish then"
                )
                ref_trace, comparison = second, again
    conclude(out, ref_trace, cand_trace, keep_traces, comparison)
    _classify_script(out, cand_trace, ref_trace)


def _classify_script(out: Outcome, cand: dict, ref: dict) -> None:
    """A candidate that stopped on a removed JAX API or a missing module, where the reference
    ran, is not a host-callback verdict, unless a host call it did make differs."""
    if out.exit_code != DIFFERENT or not cand.get("exit_status") or ref.get("exit_status"):
        return
    failure = classify(cand.get("error"))
    if failure is None:
        return
    kinds = {d.kind for d in out.comparison.differences}
    if not failure.unrelated:
        out.notes.append(failure.describe(cand.get("jax")))
        return
    if "event" in kinds:  # a call made on both sides went wrong before the failure
        out.notes.append(failure.describe(cand.get("jax")))
        return
    out.unrelated.append(
        {
            "where": "<script>",
            "failure": failure.describe(cand.get("jax")),
            "error": cand.get("error"),
        }
    )
    out.exit_code = CANDIDATE_BROKEN


def _sides_of(results: list[RunResult], out: Outcome) -> tuple[RunResult, RunResult | None]:
    """The candidate's and (when it ran) the reference's run; a reference run that left no
    trace cannot be compared."""
    by_label: dict[str, RunResult] = {r.side.label: r for r in results}
    cand = by_label["candidate"]
    out.candidate_stderr = cand.stderr
    ref = by_label.get("reference")
    if ref is not None and ref.trace is None:
        raise CannotRun(ref.why_no_trace())
    return cand, ref
