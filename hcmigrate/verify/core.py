"""`verify()`: run ORIGINAL on a legacy reference and the candidate on current JAX, compare.

Exit statuses (docs/verify.md): 0 equivalent, 1 the migrated host callbacks behave
differently, 2 could not run, 3 the candidate fails on current JAX for a reason the migration
did not cause (a removed JAX API, a missing dependency) and nothing else differs.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from hcmigrate.verify import reference_cache
from hcmigrate.verify.classify import classify
from hcmigrate.verify.compare import Comparison, Tolerance, compare_pytest_traces, compare_traces
from hcmigrate.verify.execute import (
    CannotRun,
    RunResult,
    Side,
    find_entry,
    migrate_copy,
    project_compat_dir,
    pytest_config,
    pytest_paths,
    resolve_reference,
    run_sides,
    scratch_folder,
    uses_xdist,
)
from hcmigrate.verify.notebooks import NotebookProblem, notebook_script, relabel
from hcmigrate.verify.project import Project, find_project, source_paths
from hcmigrate.verify.sites import SiteMap

EQUIVALENT, DIFFERENT, CANNOT_RUN, CANDIDATE_BROKEN = 0, 1, 2, 3
# JAX 0.5 made jax_threefry_partitionable the default: jax.random draws other numbers for the
# same key. A reference older than that gets a second opinion with the new default for what
# differs (never for the first run: a plain legacy run is the reference).
PRNG_SETTING = {"JAX_THREEFRY_PARTITIONABLE": "1"}


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
    unrelated: list[dict] = field(default_factory=list)  # candidate failures not the migration's
    kept: str | None = None  # --keep: where the migrated copy is

    @property
    def verdict(self) -> str:
        return {
            EQUIVALENT: "equivalent",
            DIFFERENT: "different",
            CANDIDATE_BROKEN: "candidate-broken",
        }.get(self.exit_code, "could-not-run")


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


def _candidate_python(sides: Sides) -> str:
    if not sides.candidate_python:
        return sys.executable
    path = os.path.abspath(sides.candidate_python)
    if not os.path.exists(path):
        raise CannotRun(f"--candidate-python {sides.candidate_python}: no such interpreter")
    return path


def _reference(sides: Sides, project: Project | None):
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


def _in_scratch(out: Outcome, keep: bool, run, *args) -> Outcome:
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


def _project(original: Path) -> Project:
    try:
        return find_project(original)
    except ValueError as e:
        raise CannotRun(str(e)) from None


def _options(project: Project):
    from hcmigrate.api import Options

    return Options(strategy=project.strategy, target_jax=project.target_jax)


def _old_jax(trace: dict | None) -> bool:
    version = (trace or {}).get("jax") or ""
    try:
        return tuple(int(p) for p in version.split(".")[:2]) < (0, 5)
    except ValueError:
        return False


def _normalise_paths(trace: dict | None, replace: list[tuple[str, str]]) -> None:
    """The candidate runs from another folder than the original: its paths, in what it printed
    and in its string values, read as the original's (the one documented normalisation)."""
    if not trace or not replace:
        return
    pairs = sorted({(a, b) for a, b in replace if a and a != b}, key=lambda ab: -len(ab[0]))

    def fix(text):
        for a, b in pairs:
            text = text.replace(a, b)
        return text

    def walk_value(v):
        if isinstance(v, dict):
            if v.get("k") == "str":
                v["v"] = fix(v["v"])
            for item in v.get("items", []) if v.get("k") != "dict" else []:
                walk_value(item)
            if v.get("k") == "dict":
                for _, item in v["items"]:
                    walk_value(item)

    for key in ("stdout", "error"):
        if isinstance(trace.get(key), str):
            trace[key] = fix(trace[key])
    for ev in trace.get("events", []):
        ev["stdout"] = fix(ev.get("stdout") or "")
        for a in ev.get("args", []):
            walk_value(a)
        if "result" in ev:
            walk_value(ev["result"])
    for entry in trace.get("entries", []):
        if "result" in entry:
            walk_value(entry["result"])
    for t in trace.get("tests", []):
        t["stdout"] = fix(t.get("stdout") or "")
        if t.get("message"):
            t["message"] = fix(t["message"])


# ---------------------------------------------------------------------------------------
# Script (and notebook) mode


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
    return _in_scratch(
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
    project = _project(original)
    notebook = original.suffix == ".ipynb"
    if candidate is None:
        cand_root, notes = migrate_copy(original.resolve(), workdir, _options(project))
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
    cand_python = _candidate_python(sides)
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
        ref_trace = _load_trace(reference_trace)
        out.reference = f"recorded trace {reference_trace} (jax {ref_trace.get('jax')})"
    else:
        python, install_compat, description = _reference(sides, project)
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
    _normalise_paths(cand_trace, replace)
    comparison = compare_traces(ref_trace, cand_trace, tolerance or Tolerance(), sites=site_map)
    if not comparison.equivalent and ref_side is not None and _old_jax(ref_trace):
        second = _second_opinion(ref_side, sides, script_args, entries, workdir)
        if second is not None:
            if notebook:
                relabel(second, maps["reference"])
            again = compare_traces(second, cand_trace, tolerance or Tolerance(), sites=site_map)
            if again.equivalent:
                out.notes.append(_prng_note(ref_trace))
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
    _conclude(out, ref_trace, cand_trace, keep_traces, comparison)
    _classify_script(out, cand_trace, ref_trace)


def _prng_note(ref_trace) -> str:
    return (
        f"equivalent once the reference (JAX {ref_trace.get('jax')}) draws jax.random numbers as "
        "JAX >= 0.5 does (jax_threefry_partitionable=True); a plain legacy run differs only there"
    )


def _second_opinion(ref_side, sides, args, entries, workdir, select=None, pytest=False):
    """The reference run again with today's PRNG default."""
    side = Side(**{**ref_side.__dict__, "env": {**ref_side.env, **PRNG_SETTING}})
    side.label = "reference-prng"
    if select is not None:
        side.select = select
    [result] = run_sides(
        [side],
        script_args=list(args or []),
        entries=list(entries or []),
        timeout=sides.timeout,
        workdir=workdir,
        platform=sides.platform,
    )
    trace = result.trace
    if trace is None or (not pytest and trace.get("exit_status") != 0):
        return None
    return trace


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


def _load_trace(path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------
# --pytest mode


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
    reference_jax: str | None = None,
    project_deps: bool = False,
    candidate_python: str | None = None,
    keep: bool = False,
    all_tests: bool = False,
    live=None,
    fresh_reference: bool = False,
) -> Outcome:
    """--pytest: run the package's tests on the reference (original) and on the candidate, each
    in one pytest process (or its xdist workers) with the recorder, and compare them test by
    test. The candidate runs only the tests that made host calls in the reference, unless
    `all_tests`. `timeout` is per test."""
    original = Path(original)
    out = Outcome(exit_code=CANNOT_RUN, original=str(original), mode="pytest", tests=tests)
    sides = Sides(
        reference, reference_jax, project_deps, candidate_python, platform, timeout, progress, live
    )
    return _in_scratch(
        out,
        keep,
        _verify_pytest,
        original,
        tests,
        candidate,
        sides,
        tolerance,
        pytest_args,
        reference_trace,
        keep_traces,
        all_tests,
        fresh_reference,
    )


def _verify_pytest(
    out,
    original,
    tests,
    candidate,
    sides,
    tolerance,
    pytest_args,
    reference_trace,
    keep_traces,
    all_tests,
    fresh_reference,
    workdir,
) -> None:
    if not original.exists():
        raise CannotRun(f"{original}: no such file or folder")
    if not original.is_dir():
        raise CannotRun(
            f"--pytest needs ORIGINAL to be the package's folder (the tests path is relative "
            f"to it); {original} is a file"
        )
    if Path(tests).is_absolute() or ".." in Path(tests).parts:
        raise CannotRun(f"--pytest {tests}: give the tests as a path relative to {original}")
    test_path = tests.split("::", 1)[0]
    if not (original / test_path).exists():
        raise CannotRun(f"--pytest {tests}: no {test_path} in {original}")
    project = _project(original)
    if candidate is None:
        cand_root, notes = migrate_copy(original.resolve(), workdir, _options(project))
        out.notes += notes or ["the codemod changed nothing"]
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
    if project.strategy != "native" and candidate is None:
        out.notes.append(
            f"[tool.hcmigrate] strategy = {project.strategy!r} ({project.config_file})"
        )
    # The same pytest configuration on both sides: the package's own file (copied with it),
    # else an empty one (never a configuration found above the package, e.g. a repository's).
    config = pytest_config(original)
    if config is None:
        (workdir / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        config = str(workdir / "pytest.ini")
    args = [tests, "-c", config, "-q", *(pytest_args or [])]
    cand_python = _candidate_python(sides)
    xdist = uses_xdist(list(pytest_args or []))
    cand_append, _ = pytest_paths(
        cand_python, may_install=False, progress=sides.progress, xdist=xdist
    )
    cand_root = cand_root.resolve()
    cand_side = Side(
        "candidate",
        cand_python,
        cand_root,
        compat_dir=project_compat_dir(),
        description=f"jax on {cand_python}",
        pytest=True,
        append_paths=cand_append,
        cwd=str(cand_root),
        extra_paths=[str(p) for p in source_paths(cand_root)],
    )
    ref_side = None
    if reference_trace is not None:
        ref_trace = _load_trace(reference_trace)
        if ref_trace.get("mode") != "pytest":
            raise CannotRun(f"--reference-trace {reference_trace} is not a --pytest trace")
        out.reference = f"recorded trace {reference_trace} (jax {ref_trace.get('jax')})"
    else:
        python, install_compat, description = _reference(sides, project)
        ref_append, note = pytest_paths(
            python, may_install=(sides.reference == "legacy"), progress=sides.progress, xdist=xdist
        )
        if note:
            out.notes.append(note)
        out.reference = description
        ref_side = Side(
            "reference",
            python,
            original.resolve(),
            install_compat=install_compat,
            compat_dir=project_compat_dir() if install_compat else None,
            description=description,
            pytest=True,
            append_paths=ref_append,
            cwd=str(original.resolve()),
            extra_paths=[str(p) for p in source_paths(original.resolve())],
        )
    cache_key, ref_side_ran = None, None
    if ref_side is not None and not fresh_reference:
        cache_key = reference_cache.reference_key(
            original.resolve(),
            {
                "original": str(original.resolve()),  # the trace's paths are the original's
                "tests": tests,
                "args": args[1:] if config != str(workdir / "pytest.ini") else args[3:],
                "python": ref_side.python,
                "reference": out.reference,
                "platform": sides.platform,
                "paths": ref_side.extra_paths,
            },
        )
        cached = reference_cache.load(cache_key)
        if cached is not None:
            ref_trace, ref_side_ran = cached, False
            out.notes.append(
                "reference: recorded by an earlier run (same sources, tests and reference; "
                "--fresh-reference runs it again)"
            )
    run = dict(
        script_args=args,
        entries=[],
        timeout=sides.timeout,
        workdir=workdir,
        platform=sides.platform,
        progress=sides.live,
    )
    must_run = ref_side is not None and ref_side_ran is not False
    if must_run and all_tests:
        ref, cand = run_sides([ref_side, cand_side], **run)
        _check_reference(ref, out)
        ref_trace = ref.trace
        _remember(cache_key, ref_trace)
    else:
        if must_run:
            [ref] = run_sides([ref_side], **run)
            _check_reference(ref, out)
            ref_trace = ref.trace
            _remember(cache_key, ref_trace)
        selected = None if all_tests else _host_call_tests(ref_trace)
        if selected is not None:
            skipped = len(ref_trace.get("tests", [])) - len(selected)
            if skipped:
                out.notes.append(
                    f"{skipped} test(s) made no host call in the reference: not run on the "
                    "candidate (--all-tests runs them)"
                )
            ref_trace = _only_tests(ref_trace, selected)
            cand_side.select = sorted(selected)
        [cand] = run_sides([cand_side], **run)
    out.candidate_stderr = cand.stderr
    if cand.trace is None:
        raise CannotRun(cand.why_no_trace())
    if cand.trace.get("exit_status") in (3, 4) or (cand.trace.get("error") or "").startswith(
        ("pytest could not", "recorder")
    ):
        tail = "\n".join(
            (cand.stdout.strip().splitlines() + cand.stderr.strip().splitlines())[-15:]
        )
        raise CannotRun(f"pytest could not run on the candidate: {cand.trace.get('error')}\n{tail}")
    cand_trace = cand.trace
    _normalise_paths(cand_trace, [(str(cand_root), str(original.resolve()))])
    site_map = SiteMap.for_roots(original.resolve(), cand_root)
    tol = tolerance or Tolerance()
    comparison = compare_pytest_traces(ref_trace, cand_trace, tol, sites=site_map)
    if not comparison.equivalent and ref_side is not None and _old_jax(ref_trace):
        differing = [
            t["nodeid"]
            for t in comparison.tests
            if not t["equivalent"] and t["nodeid"] != "<session>"
        ]
        second = _second_opinion(ref_side, sides, args, [], workdir, select=differing, pytest=True)
        if second is not None:
            merged = _merge_tests(ref_trace, second, set(differing))
            again = compare_pytest_traces(merged, cand_trace, tol, sites=site_map)
            fixed = sum(
                1
                for a, b in zip(comparison.tests, again.tests)
                if not a["equivalent"] and b["equivalent"]
            )
            if fixed and len(again.differences) <= len(comparison.differences):
                out.notes.append(
                    f"{fixed} test(s) "
                    + _prng_note(ref_trace).replace("equivalent once", "are equivalent once")
                )
                ref_trace, comparison = merged, again
    _conclude(out, ref_trace, cand_trace, keep_traces, comparison)
    _classify_pytest(out, cand_trace)


def _remember(key: str | None, trace: dict) -> None:
    if key is not None:
        reference_cache.store(key, trace)


def _check_reference(ref: RunResult, out: Outcome) -> None:
    trace = ref.trace
    if trace is None:
        raise CannotRun(ref.why_no_trace())
    status = trace.get("exit_status")
    ran = bool(trace.get("tests"))
    if (status not in (0, 1) and not (status is None and ran)) or trace.get("collect_errors"):
        tail = "\n".join((ref.stdout.strip().splitlines() + ref.stderr.strip().splitlines())[-15:])
        errors = "; ".join(
            f"{e['nodeid']}: {e['message']}" for e in trace.get("collect_errors", [])
        )
        raise CannotRun(
            f"pytest could not run the original's tests on the reference ({out.reference}): "
            f"{trace.get('error') or 'collection errors: ' + errors}\n{tail}"
        )


SESSION = "<session>"


def _host_call_tests(ref: dict) -> set[str] | None:
    """The tests that made or registered host calls in the reference; None (run them all) when
    host calls were made outside tests (at import), which any subset might not repeat."""
    entries = {e.get("entry") for e in ref.get("events", []) + ref.get("registrations", [])}
    if SESSION in entries or not entries:
        return None
    names = {t["nodeid"] for t in ref.get("tests", [])}
    return {e for e in entries if e in names}


def _only_tests(trace: dict, keep: set[str]) -> dict:
    out = dict(trace)
    out["tests"] = [t for t in trace.get("tests", []) if t["nodeid"] in keep]
    out["events"] = [e for e in trace.get("events", []) if e.get("entry") in keep]
    return out


def _merge_tests(first: dict, second: dict, nodeids: set[str]) -> dict:
    """`first` with the results of `nodeids` taken from `second` (registration ids shifted)."""
    out = dict(first)
    shift = len(first.get("registrations", []))
    out["registrations"] = list(first.get("registrations", [])) + [
        dict(r, id=r["id"] + shift) for r in second.get("registrations", [])
    ]
    second_tests = {t["nodeid"]: t for t in second.get("tests", [])}
    out["tests"] = [
        second_tests.get(t["nodeid"], t) if t["nodeid"] in nodeids else t
        for t in first.get("tests", [])
    ]
    out["events"] = [e for e in first.get("events", []) if e.get("entry") not in nodeids] + [
        dict(e, reg=e["reg"] + shift) if "reg" in e else e
        for e in second.get("events", [])
        if e.get("entry") in nodeids
    ]
    return out


def _classify_pytest(out: Outcome, cand: dict) -> None:
    """Tests whose candidate failure is a removed JAX API or a missing module (and not the
    reference's own failure) are set apart from the host-callback verdict."""
    comp = out.comparison
    cand_tests = {t["nodeid"]: t for t in cand.get("tests", [])}
    moved = []
    for t in comp.tests:
        if t["equivalent"]:
            continue
        c = cand_tests.get(t["nodeid"])
        message = c.get("message") if c and c.get("outcome") in ("failed", "error") else None
        if c is None:
            message = next((d.get("hint") for d in t["differences"] if d.get("hint")), None)
        failure = classify(message)
        if failure is None or t["reference_outcome"] == t["candidate_outcome"]:
            continue
        kinds = {d["kind"] for d in t["differences"]}
        if not failure.unrelated or "event" in kinds:
            t["note"] = failure.describe(cand.get("jax"))
            continue
        t["category"] = "unrelated"
        t["failure"] = failure.describe(cand.get("jax"))
        moved.append(t["nodeid"])
        out.unrelated.append({"where": t["nodeid"], "failure": t["failure"], "error": message})
    if moved:
        comp.differences = [d for d in comp.differences if d.entry not in moved]
    if comp.differences:
        out.exit_code = DIFFERENT
    elif out.unrelated:
        out.exit_code = CANDIDATE_BROKEN
    else:
        out.exit_code = EQUIVALENT


def _conclude(out, reference: dict, candidate: dict, keep_traces, comparison: Comparison) -> None:
    """Record both traces (and keep them on disk if asked) and the comparison's verdict."""
    out.reference_trace, out.candidate_trace = reference, candidate
    if keep_traces:
        _keep_traces(Path(keep_traces), reference, candidate)
    out.comparison = comparison
    out.exit_code = EQUIVALENT if comparison.equivalent else DIFFERENT


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
    if out.kept:
        lines.append(f"  kept: {out.kept} (the migrated copy and the traces; --keep)")
    if out.exit_code == CANNOT_RUN:
        lines.append(f"COULD NOT RUN: {out.why}")
        return "\n".join(lines)
    comp = out.comparison
    assert comp is not None
    if comp.tests is not None:
        return "\n".join(lines + _pytest_report_lines(out) + _unrelated_lines(out))
    if out.exit_code == CANDIDATE_BROKEN:
        return "\n".join(lines + _unrelated_lines(out))
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


def _unrelated_lines(out: Outcome) -> list[str]:
    """Candidate failures the migration did not cause, and the verdict line when they are all
    that differs."""
    if not out.unrelated:
        return []
    lines = []
    if out.exit_code == CANDIDATE_BROKEN:
        lines.append(
            f"CANDIDATE BROKEN (not by the migration): {len(out.unrelated)} failure(s) on current "
            "JAX for other reasons; the host calls that ran match"
        )
    else:
        lines.append(f"also {len(out.unrelated)} candidate failure(s) not caused by the migration:")
    for u in out.unrelated:
        lines.append(f"- [{u['where']}] {u['failure']}")
        if u.get("error"):
            lines.append(f"    error: {u['error'].strip().splitlines()[0][:200]}")
    return lines


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
        mark = (
            "ok  " if t["equivalent"] else ("NOTE" if t.get("category") == "unrelated" else "DIFF")
        )
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
    if out.exit_code == CANDIDATE_BROKEN:
        return lines
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
    bad = [t for t in comp.tests if not t["equivalent"] and t.get("category") != "unrelated"]
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
        "unrelated": out.unrelated,
        "kept": out.kept,
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
