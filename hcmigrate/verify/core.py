"""`verify()`: run ORIGINAL on a legacy reference and the candidate on current JAX, compare."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from hcmigrate.verify.compare import Comparison, Tolerance, compare_pytest_traces, compare_traces
from hcmigrate.verify.execute import (
    CannotRun,
    RunResult,
    Side,
    find_entry,
    migrate_copy,
    scratch_folder,
    project_compat_dir,
    pytest_config,
    pytest_paths,
    resolve_reference,
    run_sides,
)

EQUIVALENT, DIFFERENT, CANNOT_RUN = 0, 1, 2


@dataclass
class Outcome:
    exit_code: int
    original: str
    candidate: str | None = None
    reference: str = ""
    comparison: Comparison | None = None
    why: str | None = None  # for exit 2
    notes: list[str] = field(default_factory=list)
    reference_trace: dict | None = None
    candidate_trace: dict | None = None
    candidate_stderr: str = ""
    mode: str = "script"  # or "pytest"
    tests: str | None = None  # --pytest TESTS

    @property
    def verdict(self) -> str:
        return {EQUIVALENT: "equivalent", DIFFERENT: "different"}.get(
            self.exit_code, "could-not-run"
        )


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
) -> Outcome:
    original = Path(original)
    out = Outcome(exit_code=CANNOT_RUN, original=str(original))
    with scratch_folder() as workdir:
        try:
            if not original.exists():
                raise CannotRun(f"{original}: no such file or folder")
            # What runs on each side.
            if candidate is None:
                cand_root = _migrated_copy(original, workdir, out)
            else:
                cand_root = Path(candidate)
                if not cand_root.exists():
                    raise CannotRun(f"--candidate {candidate}: no such file or folder")
                if original.is_dir() != cand_root.is_dir():
                    raise CannotRun(
                        "ORIGINAL and --candidate must both be files or both be folders"
                    )
            if original.is_dir():
                orig_script = find_entry(original, entry_file)
                cand_script = cand_root / orig_script.relative_to(original)
                if not cand_script.is_file():
                    raise CannotRun(
                        f"the candidate folder has no {orig_script.relative_to(original)}"
                    )
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
            cand_side = Side(
                "candidate",
                sys.executable,
                cand_script.resolve(),
                extra_paths=cand_paths,
                compat_dir=project_compat_dir(),
                description=f"jax on {sys.executable}",
            )
            sides = [cand_side]
            if reference_trace is not None:
                ref_trace = json.loads(Path(reference_trace).read_text(encoding="utf-8"))
                out.reference = f"recorded trace {reference_trace} (jax {ref_trace.get('jax')})"
            else:
                python, install_compat, description = resolve_reference(reference, progress)
                out.reference = description
                sides.insert(
                    0,
                    Side(
                        "reference",
                        python,
                        orig_script.resolve(),
                        install_compat=install_compat,
                        compat_dir=project_compat_dir() if install_compat else None,
                        description=description,
                    ),
                )
            results = run_sides(
                sides,
                script_args=list(script_args or []),
                entries=list(entries or []),
                timeout=timeout,
                workdir=workdir,
                platform=platform,
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
            _conclude(out, ref_trace, cand.trace, keep_traces, compare_traces, tolerance)
        except CannotRun as e:
            out.exit_code, out.why = CANNOT_RUN, str(e)
    return out


def verify_pytest(
    original: str | Path,
    tests: str,
    *,
    candidate: str | Path | None = None,
    reference: str = "compat",
    tolerance: Tolerance | None = None,
    timeout: float = 300.0,
    pytest_args: list[str] | None = None,
    reference_trace: str | Path | None = None,
    keep_traces: str | Path | None = None,
    platform: str | None = "cpu",
    progress=None,
) -> Outcome:
    """--pytest: run the package's tests on the reference (original) and on the candidate, each
    in one pytest process with the recorder, and compare them test by test."""
    original = Path(original)
    out = Outcome(exit_code=CANNOT_RUN, original=str(original), mode="pytest", tests=tests)
    with scratch_folder() as workdir:
        try:
            if not original.exists():
                raise CannotRun(f"{original}: no such file or folder")
            if not original.is_dir():
                raise CannotRun(
                    f"--pytest needs ORIGINAL to be the package's folder (the tests path is relative to it); "
                    f"{original} is a file"
                )
            if Path(tests).is_absolute() or ".." in Path(tests).parts:
                raise CannotRun(
                    f"--pytest {tests}: give the tests as a path relative to {original}"
                )
            test_path = tests.split("::", 1)[0]
            if not (original / test_path).exists():
                raise CannotRun(f"--pytest {tests}: no {test_path} in {original}")
            if candidate is None:
                cand_root = _migrated_copy(original, workdir, out)
                out.candidate = f"{original} migrated by the codemod ({cand_root})"
            else:
                cand_root = Path(candidate)
                if not cand_root.is_dir():
                    raise CannotRun(
                        f"--candidate {candidate}: not a folder (--pytest compares two package folders)"
                    )
                if not (cand_root / test_path).exists():
                    raise CannotRun(f"--candidate {candidate}: no {test_path} in it")
                out.candidate = str(cand_root)
            # The same pytest configuration on both sides: the package's own file (copied with it),
            # else an empty one (never a configuration found above the package, e.g. a repository's).
            config = pytest_config(original)
            if config is None:
                (workdir / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
                config = str(workdir / "pytest.ini")
            args = [tests, "-c", config, "-q", *(pytest_args or [])]
            cand_append, _ = pytest_paths(sys.executable, may_install=False, progress=progress)
            cand_side = Side(
                "candidate",
                sys.executable,
                cand_root.resolve(),
                compat_dir=project_compat_dir(),
                description=f"jax on {sys.executable}",
                pytest=True,
                append_paths=cand_append,
                cwd=str(cand_root.resolve()),
            )
            sides = [cand_side]
            if reference_trace is not None:
                ref_trace = json.loads(Path(reference_trace).read_text(encoding="utf-8"))
                if ref_trace.get("mode") != "pytest":
                    raise CannotRun(f"--reference-trace {reference_trace} is not a --pytest trace")
                out.reference = f"recorded trace {reference_trace} (jax {ref_trace.get('jax')})"
            else:
                python, install_compat, description = resolve_reference(reference, progress)
                ref_append, note = pytest_paths(
                    python, may_install=(reference == "legacy"), progress=progress
                )
                if note:
                    out.notes.append(note)
                out.reference = description
                sides.insert(
                    0,
                    Side(
                        "reference",
                        python,
                        original.resolve(),
                        install_compat=install_compat,
                        compat_dir=project_compat_dir() if install_compat else None,
                        description=description,
                        pytest=True,
                        append_paths=ref_append,
                        cwd=str(original.resolve()),
                    ),
                )
            results = run_sides(
                sides,
                script_args=args,
                entries=[],
                timeout=timeout,
                workdir=workdir,
                platform=platform,
            )
            cand, ref = _sides_of(results, out)
            if reference_trace is None:
                ref_trace = ref.trace
                if ref_trace.get("exit_status") not in (0, 1) or ref_trace.get("collect_errors"):
                    tail = "\n".join(
                        (ref.stdout.strip().splitlines() + ref.stderr.strip().splitlines())[-15:]
                    )
                    errors = "; ".join(
                        f"{e['nodeid']}: {e['message']}"
                        for e in ref_trace.get("collect_errors", [])
                    )
                    raise CannotRun(
                        f"pytest could not run the original's tests on the reference ({out.reference}): "
                        f"{ref_trace.get('error') or 'collection errors: ' + errors}\n{tail}"
                    )
            if cand.trace is None:
                raise CannotRun(cand.why_no_trace())
            if cand.trace.get("exit_status") in (3, 4) or (
                cand.trace.get("error") or ""
            ).startswith(("pytest could not", "recorder")):
                tail = "\n".join(
                    (cand.stdout.strip().splitlines() + cand.stderr.strip().splitlines())[-15:]
                )
                raise CannotRun(
                    f"pytest could not run on the candidate: {cand.trace.get('error')}\n{tail}"
                )
            _conclude(out, ref_trace, cand.trace, keep_traces, compare_pytest_traces, tolerance)
        except CannotRun as e:
            out.exit_code, out.why = CANNOT_RUN, str(e)
    return out


def _conclude(out, reference: dict, candidate: dict, keep_traces, compare, tolerance) -> None:
    """Record both traces (and keep them on disk if asked), compare them, set the exit code."""
    out.reference_trace, out.candidate_trace = reference, candidate
    if keep_traces:
        _keep_traces(Path(keep_traces), reference, candidate)
    out.comparison = compare(reference, candidate, tolerance or Tolerance())
    out.exit_code = EQUIVALENT if out.comparison.equivalent else DIFFERENT


def _keep_traces(folder: Path, reference: dict, candidate: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, trace in (("reference", reference), ("candidate", candidate)):
        (folder / f"{name}.json").write_text(json.dumps(clean(trace), indent=1), encoding="utf-8")


def clean(obj):
    """A JSON-able copy of a trace (drops cached numpy arrays)."""
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items() if k != "_np"}
    if isinstance(obj, list):
        return [clean(v) for v in obj]
    return obj


# ---------------------------------------------------------------------------------------
# Reports


def text_report(out: Outcome, *, verbose: bool = False) -> str:
    lines = [
        f"hcmigrate verify {out.original}"
        + (f" --pytest {out.tests}" if out.mode == "pytest" else "")
    ]
    if out.reference:
        lines.append(f"  reference: {out.reference}")
    if out.candidate:
        cj = (out.candidate_trace or {}).get("jax")
        lines.append(f"  candidate: {out.candidate}" + (f" (jax {cj})" if cj else ""))
    for note in out.notes:
        lines.append(f"  note: {note}")
    if out.exit_code == CANNOT_RUN:
        lines.append(f"COULD NOT RUN: {out.why}")
        return "\n".join(lines)
    comp = out.comparison
    assert comp is not None
    if comp.tests is not None:
        return "\n".join(lines + _pytest_report_lines(out))
    for s in comp.entries:
        if s["entry"] == "<script>" and not s["reference_events"] and not s["candidate_events"]:
            continue
        mark = "ok  " if s["equivalent"] else "DIFF"
        lines.append(
            f"  {mark} entry {s['entry']}: {s['reference_events']} host call(s) in the reference, "
            f"{s['candidate_events']} in the candidate"
        )
    if comp.equivalent:
        ref = out.reference_trace or {}
        n_ev = len(ref.get("events", []))
        n_entries = len(ref.get("entries", []))
        lines.append(
            f"EQUIVALENT: {n_ev} host call(s), {n_entries} entry result(s), stdout and exit status match"
        )
        return "\n".join(lines)
    lines.append(f"DIFFERENT: {len(comp.differences)} difference(s)")
    lines += _difference_lines(comp.differences)
    if out.candidate_trace and out.candidate_trace.get("exit_status"):
        tail = [line for line in out.candidate_stderr.strip().splitlines() if line.strip()][-6:]
        if tail:
            lines.append("  candidate stderr (last lines):")
            lines += [f"    {line}" for line in tail]
    return "\n".join(lines)


def _difference_lines(differences) -> list[str]:
    lines = []
    for d in differences:
        lines.append(f"- [{d.entry}] {d.message}")
        if d.expected is not None:
            lines.append(f"    expected (reference): {d.expected}")
        if d.got is not None:
            lines.append(f"    got (candidate):      {d.got}")
        if d.reference_source:
            lines.append(f"    reference source: {d.reference_source}")
        if d.candidate_source:
            lines.append(f"    candidate source: {d.candidate_source}")
        if d.hint:
            lines.append(f"    hint: {d.hint}")
    return lines


def _pytest_report_lines(out: Outcome) -> list[str]:
    comp = out.comparison
    lines = []
    for t in comp.tests:
        mark = "ok  " if t["equivalent"] else "DIFF"
        ro, co = t["reference_outcome"], t["candidate_outcome"]
        if ro == co:
            outcome = ro if ro != "-" else "outside tests"
        else:
            outcome = f"{ro or 'not run'} in the reference, {co or 'not run'} in the candidate"
        if t["reference_events"] == t["candidate_events"]:
            calls = f"{t['reference_events']} host call(s)"
        else:
            calls = f"{t['reference_events']} host call(s) in the reference, {t['candidate_events']} in the candidate"
        lines.append(f"  {mark} {t['nodeid']}: {outcome}, {calls}")
    tests = [t for t in comp.tests if t["reference_outcome"] != "-"]
    if comp.equivalent:
        counts: dict[str, int] = {}
        for t in tests:
            counts[t["reference_outcome"]] = counts.get(t["reference_outcome"], 0) + 1
        n_ev = sum(t["reference_events"] for t in comp.tests)
        summary = ", ".join(f"{n} {k}" for k, n in counts.items())
        lines.append(
            f"EQUIVALENT: {len(tests)} test(s) ({summary}): same outcomes, {n_ev} host call(s) match"
        )
        return lines
    bad = [t for t in comp.tests if not t["equivalent"]]
    lines.append(
        f"DIFFERENT: {len(bad)} of {len(comp.tests)} test(s) differ, {len(comp.differences)} difference(s)"
    )
    lines += _difference_lines(comp.differences)
    return lines


def json_report(out: Outcome, *, include_traces: bool = True) -> dict:
    data = {
        "verdict": out.verdict,
        "exit_code": out.exit_code,
        "original": out.original,
        "candidate": out.candidate,
        "reference": out.reference,
        "why": out.why,
        "notes": out.notes,
        "differences": [d.to_dict() for d in out.comparison.differences] if out.comparison else [],
        "entries": out.comparison.entries if out.comparison else [],
    }
    if out.mode == "pytest":
        data["mode"] = "pytest"
        data["pytest_tests"] = out.tests
        data["tests"] = out.comparison.tests if out.comparison else []
    if include_traces:
        data["traces"] = {
            "reference": clean(out.reference_trace),
            "candidate": clean(out.candidate_trace),
        }
    return data


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


def _migrated_copy(original: Path, workdir: Path, out: Outcome) -> Path:
    """Migrate a copy of `original` in `workdir` with the codemod; what it did goes to the notes."""
    cand_root, notes = migrate_copy(original.resolve(), workdir)
    out.notes += notes or ["the codemod changed nothing"]
    return cand_root
