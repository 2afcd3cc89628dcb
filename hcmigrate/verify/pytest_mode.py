"""`verify_pytest()`: --pytest mode. Runs the package's tests on the reference (the original)
and on the candidate, each in one pytest process (or its xdist workers) with the recorder,
reusing a cached reference trace when the sources and settings are the same, and compares them
test by test; candidate failures the migration did not cause are set apart."""

from __future__ import annotations

from pathlib import Path

from hcmigrate.verify import reference_cache
from hcmigrate.verify.classify import classify
from hcmigrate.verify.compare import compare_pytest_traces
from hcmigrate.verify.execute import RunResult, run_sides
from hcmigrate.verify.launch import Side
from hcmigrate.verify.outcome import (
    CANDIDATE_BROKEN,
    CANNOT_RUN,
    DIFFERENT,
    EQUIVALENT,
    CannotRun,
    Outcome,
    conclude,
)
from hcmigrate.verify.prng import old_jax, prng_note, second_opinion
from hcmigrate.verify.project import source_paths
from hcmigrate.verify.pytest_env import (
    pytest_config,
    pytest_paths,
    share_workers,
    start_probe,
    uses_xdist,
)
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
from hcmigrate.verify.traces import load_trace, merge_tests, normalise_paths, only_tests
from hcmigrate.verify.values import Tolerance
from hcmigrate.verify.workspace import migrate_copy


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
    return in_scratch(
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
    project = load_project(original)
    xdist = uses_xdist(list(pytest_args or []))
    try:
        start_probe(candidate_interpreter(sides), xdist)  # (answered while the copy migrates)
    except CannotRun:
        pass  # (said below, in its turn)
    if candidate is None:
        cand_root, notes = migrate_copy(original.resolve(), workdir, codemod_options(project))
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
    cand_python = candidate_interpreter(sides)
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
        ref_trace = load_trace(reference_trace)
        if ref_trace.get("mode") != "pytest":
            raise CannotRun(f"--reference-trace {reference_trace} is not a --pytest trace")
        out.reference = f"recorded trace {reference_trace} (jax {ref_trace.get('jax')})"
    else:
        python, install_compat, description = reference_interpreter(sides, project)
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
    if must_run:
        # Both sides at once. Unless --all-tests, the candidate follows the reference test by
        # test (Side.follows): it runs the tests that made host calls there as the reference
        # finishes them, instead of starting once the whole reference has run. The two share
        # the machine: pytest-xdist workers beyond half its CPUs each would only queue.
        cand_side.follows = None if all_tests else ref_side.label
        shared, note = share_workers(args)
        if note:
            out.notes.append(note)
        ref, cand = run_sides([ref_side, cand_side], **{**run, "script_args": shared})
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
        ref_trace = only_tests(ref_trace, selected)
        cand_side.select = sorted(selected)
    if not must_run or (cand_side.follows and not _followed_selection(cand, selected)):
        # (a follower's choice differs from the finished reference's only when host calls
        # came after the tests that lacked them, e.g. at the end of the session: run the
        # candidate again on the selection, as without a follower)
        cand_side.follows = None
        [cand] = run_sides([cand_side], **run)
    if cand.trace is not None:
        cand.trace.pop("not_run", None)
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
    normalise_paths(cand_trace, [(str(cand_root), str(original.resolve()))])
    site_map = SiteMap.for_roots(original.resolve(), cand_root)
    tol = tolerance or Tolerance()
    comparison = compare_pytest_traces(ref_trace, cand_trace, tol, sites=site_map)
    if not comparison.equivalent and ref_side is not None and old_jax(ref_trace):
        differing = [
            t["nodeid"]
            for t in comparison.tests
            if not t["equivalent"] and t["nodeid"] != "<session>"
        ]
        second = second_opinion(ref_side, sides, args, [], workdir, select=differing, pytest=True)
        if second is not None:
            merged = merge_tests(ref_trace, second, set(differing))
            again = compare_pytest_traces(merged, cand_trace, tol, sites=site_map)
            fixed = sum(
                1
                for a, b in zip(comparison.tests, again.tests)
                if not a["equivalent"] and b["equivalent"]
            )
            if fixed and len(again.differences) <= len(comparison.differences):
                out.notes.append(
                    f"{fixed} test(s) "
                    + prng_note(ref_trace).replace("equivalent once", "are equivalent once")
                )
                ref_trace, comparison = merged, again
    conclude(out, ref_trace, cand_trace, keep_traces, comparison)
    _classify_pytest(out, cand_trace)


def _followed_selection(cand: RunResult, selected: set[str] | None) -> bool:
    """Did a candidate that followed the reference run the tests the finished reference
    selects (all of them when `selected` is None), and no other? A candidate that could not
    run at all is taken as it is."""
    trace = cand.trace
    if trace is None or (not trace.get("complete") and not trace.get("tests")):
        return True
    left_out = set(trace.get("not_run", []))
    collected = set(trace.get("collected", [])) | left_out
    ran = {t["nodeid"] for t in trace.get("tests", []) if t["nodeid"] in collected}
    if selected is None:
        return not left_out
    return ran <= selected and not (left_out & selected)


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
