"""`run(VerifyRequest)`: one verify run. Script (and notebook) mode is here (--pytest is
pytest_mode.py): ORIGINAL runs on a legacy reference and the candidate (given, or ORIGINAL
migrated by the codemod) on current JAX, each as one script, and their traces are compared;
`Outcome` (hcmigrate.verify.outcome) holds the verdict and exit status.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hcmigrate.verify.classify import classify, removed_on_compat_reference
from hcmigrate.verify.compare import compare_traces
from hcmigrate.verify.execute import RunResult, SidesInterrupted, interruption, run_sides
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
from hcmigrate.verify.request import VerifyRequest
from hcmigrate.verify import original_ref
from hcmigrate.verify.sides import (
    candidate_interpreter,
    in_scratch,
    load_project,
    migrated_copy,
    reference_interpreter,
)
from hcmigrate.verify.sites import SiteMap
from hcmigrate.verify.traces import load_trace, normalise_paths
from hcmigrate.verify.workspace import check_input, find_entry


def verify(original: str | Path, **settings) -> Outcome:
    """`hcmigrate verify ORIGINAL` from Python: `settings` are VerifyRequest's fields."""
    return run(VerifyRequest(original=Path(original), **settings))


def run(req: VerifyRequest) -> Outcome:
    """One verify run, in the mode the request asks for, on the original it names (or takes
    from git: hcmigrate.verify.original_ref)."""
    try:
        req, source = original_ref.from_git(req)
        original_ref.refuse_without_legacy_use(req, source)
    except CannotRun as e:
        mode = "pytest" if req.pytest else "script"
        return Outcome(CANNOT_RUN, str(req.original), why=str(e), mode=mode, tests=req.pytest_tests)
    if req.pytest:
        from hcmigrate.verify.pytest_mode import verify_pytest

        out = verify_pytest(req)
    else:
        out = in_scratch(
            Outcome(exit_code=CANNOT_RUN, original=str(req.original)), req, _verify_script
        )
    if source is not None:
        out.notes.insert(0, source.note)
    return out


@dataclass
class ScriptPlan:
    """What each side runs: the original's and the candidate's scripts (as the report names
    them) and the files actually run (a notebook's cells written out as one script)."""

    orig_script: Path
    cand_script: Path
    run_orig: Path
    run_cand: Path
    cand_paths: list[str]  # sys.path entries the candidate gets
    cwd: str | None = None
    cells: dict = field(default_factory=dict)  # notebook: side label -> its cell map

    @property
    def notebook(self) -> bool:
        return bool(self.cells)


def _verify_script(req: VerifyRequest, out: Outcome, workdir: Path) -> None:
    check_input(req.original)
    project = load_project(req.original)
    cand_root = _candidate_root(req, out, workdir, project)
    plan = _plan(req, cand_root, workdir)
    out.candidate = (
        str(plan.cand_script)
        if req.candidate is not None
        else f"{req.original} migrated by the codemod ({plan.cand_script})"
    )
    cand_side = _candidate_side(req, plan)
    ref_side, ref_trace = _reference(req, out, plan)
    try:
        results = run_sides(
            [s for s in (ref_side, cand_side) if s is not None],
            script_args=list(req.args),
            entries=list(req.entries),
            timeout=req.timeout,
            workdir=workdir,
            platform=req.platform,
        )
    except SidesInterrupted as stop:  # a script has no part that finished on its own
        out.interrupted = interruption(stop)
        out.exit_code = out.interrupted["exit_code"]
        out.why = (
            f"interrupted by {out.interrupted['signal']} before the script finished on both sides"
        )
        return
    cand, ref = _sides_of(results, out)
    if ref is not None:
        ref_trace = _reference_trace(ref, out)
    if cand.trace is None:
        raise CannotRun(cand.why_no_trace())
    cand_trace = cand.trace
    site_map = _site_map(plan, ref_trace, cand_trace)
    comparison = compare_traces(ref_trace, cand_trace, req.tolerance, sites=site_map)
    if not comparison.equivalent and ref_side is not None and old_jax(ref_trace):
        ref_trace, comparison = _with_prng_opinion(
            req, out, ref_side, plan, ref_trace, cand_trace, site_map, comparison, workdir
        )
    conclude(out, ref_trace, cand_trace, req.keep_traces, comparison)
    _classify_script(out, cand_trace, ref_trace)
    if out.interrupted:
        out.exit_code = out.interrupted["exit_code"]


def _candidate_root(req: VerifyRequest, out: Outcome, workdir: Path, project) -> Path:
    """The candidate file or folder: the one given, or ORIGINAL migrated by the codemod."""
    if req.candidate is None:
        return migrated_copy(req, out, workdir, project)
    cand_root = Path(req.candidate)
    check_input(cand_root, "--candidate ")
    if req.original.is_dir() != cand_root.is_dir():
        raise CannotRun("ORIGINAL and --candidate must both be files or both be folders")
    return cand_root


def _plan(req: VerifyRequest, cand_root: Path, workdir: Path) -> ScriptPlan:
    original = req.original
    if original.is_dir():
        orig_script = find_entry(original, req.entry_file)
        cand_script = cand_root / orig_script.relative_to(original)
        if not cand_script.is_file():
            raise CannotRun(f"the candidate folder has no {orig_script.relative_to(original)}")
        cand_paths: list[str] = []
    else:
        orig_script, cand_script = original, Path(cand_root)
        # Sibling modules of a single-file original stay importable from the candidate copy.
        cand_paths = [str(original.resolve().parent)] if req.candidate is None else []
    if original.suffix != ".ipynb":
        return ScriptPlan(
            orig_script, cand_script, orig_script.resolve(), cand_script.resolve(), cand_paths
        )
    # The cells run as one script, in the notebook's folder, without __file__.
    try:
        cells = {
            "reference": notebook_script(orig_script, workdir / "reference-cells.py"),
            "candidate": notebook_script(cand_script, workdir / "candidate-cells.py"),
        }
    except NotebookProblem as e:
        raise CannotRun(str(e)) from None
    return ScriptPlan(
        orig_script,
        cand_script,
        Path(cells["reference"].script),
        Path(cells["candidate"].script),
        [],
        cwd=str(original.resolve().parent),
        cells=cells,
    )


def _candidate_side(req: VerifyRequest, plan: ScriptPlan) -> Side:
    python = candidate_interpreter(req)
    return Side(
        "candidate",
        python,
        plan.run_cand,
        extra_paths=plan.cand_paths,
        compat_dir=project_compat_dir(),
        description=f"jax on {python}",
        no_file=plan.notebook,
        cwd=plan.cwd,
    )


def _reference(req: VerifyRequest, out: Outcome, plan: ScriptPlan):
    """(the reference side to run, None) or (None, the recorded trace --reference-trace names)."""
    if req.reference_trace is not None:
        trace = load_trace(req.reference_trace)
        out.reference = f"recorded trace {req.reference_trace} (jax {trace.get('jax')})"
        return None, trace
    python, install_compat, description = reference_interpreter(req, out.notes)
    out.reference = description
    side = Side(
        "reference",
        python,
        plan.run_orig,
        install_compat=install_compat,
        compat_dir=project_compat_dir() if install_compat else None,
        description=description,
        no_file=plan.notebook,
        cwd=plan.cwd,
    )
    return side, None


def _reference_trace(ref: RunResult, out: Outcome) -> dict:
    """The reference run's trace; an original that fails on the reference cannot be compared."""
    trace = ref.trace
    if trace.get("exit_status") != 0:
        advice = removed_on_compat_reference(
            f"{trace.get('error') or ''}\n{ref.stderr}", ref.side.install_compat
        )
        if advice:
            raise CannotRun(advice)
        tail = "\n".join(ref.stderr.strip().splitlines()[-12:])
        raise CannotRun(
            f"the original failed on the reference ({out.reference}), exit status "
            f"{trace.get('exit_status')}: {trace.get('error') or ''}\n{tail}"
        )
    return trace


def _site_map(plan: ScriptPlan, ref_trace: dict, cand_trace: dict) -> SiteMap:
    """Both traces read in the original's terms (cells, paths), and the map from the
    candidate's call sites to the original's."""
    if plan.notebook:
        relabel(ref_trace, plan.cells["reference"])
        relabel(cand_trace, plan.cells["candidate"])
        site_map = SiteMap()
        site_map.add(plan.cells["candidate"].script, plan.cells["reference"].script)
    else:
        site_map = SiteMap.for_roots(plan.orig_script.resolve(), plan.cand_script.resolve())
    orig, cand = plan.orig_script.resolve(), plan.cand_script.resolve()
    normalise_paths(cand_trace, [(str(cand), str(orig)), (str(cand.parent), str(orig.parent))])
    return site_map


def _with_prng_opinion(
    req, out, ref_side, plan, ref_trace, cand_trace, site_map, comparison, workdir
):
    """(reference trace, comparison) after asking a reference older than JAX 0.5 again with
    today's jax.random numbers (prng.py): kept when fewer differences remain."""
    try:
        second = second_opinion(ref_side, req, req.args, req.entries, workdir)
    except SidesInterrupted as stop:  # (the plain comparison stands)
        out.interrupted = interruption(stop)
        return ref_trace, comparison
    if second is None:
        return ref_trace, comparison
    if plan.notebook:
        relabel(second, plan.cells["reference"])
    again = compare_traces(second, cand_trace, req.tolerance, sites=site_map)
    if again.equivalent:
        out.notes.append(prng_note(ref_trace))
        return second, again
    if len(again.differences) < len(comparison.differences):
        # what still differs is not jax.random's doing: report only that
        out.notes.append(
            "compared with the reference drawing jax.random numbers as JAX >= 0.5 does: "
            f"the plain JAX {ref_trace.get('jax')} run also differs in "
            f"{len(comparison.differences) - len(again.differences)} place(s) that "
            "vanish then"
        )
        return second, again
    return ref_trace, comparison


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
    out.unrelated.append(failure.record("<script>", cand.get("jax"), cand.get("error")))
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
