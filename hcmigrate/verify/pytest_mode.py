"""`verify_pytest(VerifyRequest)`: --pytest mode. Runs the package's tests on the reference (the original)
and on the candidate, each in one pytest process (or its xdist workers) with the recorder,
reusing a cached reference trace when the sources and settings are the same, and compares them
test by test; candidate failures the migration did not cause are set apart."""

from __future__ import annotations

from pathlib import Path

from hcmigrate.jax_removals import version
from hcmigrate.verify import drift, reference_cache
from hcmigrate.verify.classify import (
    Failure,
    classify,
    classify_output,
    missing_on_reference,
    missing_on_reference_jax,
    removed_on_compat_reference,
)
from hcmigrate.verify.compare import compare_pytest_traces
from hcmigrate.verify.era import ERA_END
from hcmigrate.verify.execute import RunResult, SidesInterrupted, interruption, run_sides
from hcmigrate.verify.launch import Side, subprocess_env
from hcmigrate.verify.outcome import (
    CANDIDATE_BROKEN,
    CANNOT_RUN,
    DIFFERENT,
    EQUIVALENT,
    CannotRun,
    Outcome,
    not_comparable,
    conclude,
)
from hcmigrate.verify.prng import old_jax, prng_note, second_opinion
from hcmigrate.verify.project import source_paths
from hcmigrate.verify.pytest_env import (
    names_testpaths,
    pytest_config,
    pytest_paths,
    share_workers,
    start_probe,
    uses_xdist,
)
from hcmigrate.verify.reference_env import project_compat_dir
from hcmigrate.verify.request import VerifyRequest
from hcmigrate.verify.sides import (
    candidate_interpreter,
    in_scratch,
    load_project,
    migrated_copy,
    reference_interpreter,
)
from hcmigrate.verify.sites import SiteMap
from hcmigrate.verify.traces import load_trace, merge_tests, normalise_paths, only_tests


def verify_pytest(req: VerifyRequest) -> Outcome:
    """--pytest: run the package's tests on the reference (original) and on the candidate, each
    in one pytest process (or its xdist workers) with the recorder, and compare them test by
    test. The candidate runs only the tests that made host calls in the reference, unless
    `all_tests`. `timeout` is per test."""
    out = Outcome(
        exit_code=CANNOT_RUN, original=str(req.original), mode="pytest", tests=req.pytest_tests
    )
    return in_scratch(out, req, _verify_pytest)


def _verify_pytest(req: VerifyRequest, out: Outcome, workdir: Path) -> None:
    _check_tests_path(req)
    project = load_project(req.original)
    xdist = uses_xdist(list(req.args))
    try:
        start_probe(candidate_interpreter(req), xdist)  # (answered while the copy migrates)
    except CannotRun:
        pass  # (said below, in its turn)
    cand_root = _candidate_root(req, out, workdir, project)
    args, key_args = _pytest_args(req, workdir)
    cand_side = _candidate_side(req, cand_root, xdist)
    ref_side, ref_trace = _reference(req, out, xdist)
    cache_key = None
    if ref_side is not None:
        # (--fresh-reference records the reference again and replaces the stored one: a stale
        # trace never outlives a fresh run)
        cache_key = _cache_key(req, out, ref_side, key_args)
        if not req.fresh_reference:
            ref_trace = _cached_reference(cache_key, out)
    session_failure = None  # (a removed JAX API that kept the candidate's pytest from starting)
    try:
        ref_trace, cand_trace, session_failure = _run(
            req, out, ref_side, cand_side, ref_trace, cache_key, args, workdir
        )
    except SidesInterrupted as stop:  # compare the tests that finished on both sides
        ref_trace, cand_trace = _finished_on_both(out, stop, ref_trace)
        if cand_trace is None:
            return
    original = req.original.resolve()
    normalise_paths(cand_trace, [(str(cand_side.script), str(original))])
    site_map = SiteMap.for_roots(original, cand_side.script)
    comparison = compare_pytest_traces(ref_trace, cand_trace, req.tolerance, sites=site_map)
    if (
        not comparison.equivalent
        and ref_side is not None
        and old_jax(ref_trace)
        and not out.interrupted
    ):
        ref_trace, comparison = _with_prng_opinion(
            req, out, ref_side, args, ref_trace, cand_trace, site_map, comparison, workdir
        )
    if (
        not comparison.equivalent
        and drift.may_drift(ref_side, ref_trace, cand_trace)
        and not out.interrupted
    ):
        comparison = drift.separate_drift(
            req, out, comparison, ref_trace, cand_trace, cand_side, site_map, args, workdir
        )
    conclude(out, ref_trace, cand_trace, req.keep_traces, comparison)
    _classify_pytest(out, cand_trace, session_failure)
    if out.exit_code == EQUIVALENT and not out.interrupted:
        _check_host_calls(ref_trace)
    if out.interrupted:
        out.exit_code = out.interrupted["exit_code"]


def _run(req, out, ref_side, cand_side, ref_trace, cache_key, args, workdir):
    """(the reference's trace, the candidate's, the failure that kept the candidate's pytest
    from starting: _candidate_trace) for the tests the candidate runs: both sides run at once
    (unless the reference's trace is recorded or cached), the candidate following."""
    cand = None
    if ref_side is not None and ref_trace is None:
        ref_trace, cand = _run_both(req, out, ref_side, cand_side, args, workdir)
        _remember(cache_key, ref_trace)
    selected = None if req.all_tests else _host_call_tests(ref_trace)
    ref_trace = _only_selected(out, ref_trace, selected, cand_side)
    if cand is None or (cand_side.follows and not _followed_selection(cand, selected)):
        # (a follower's choice differs from the finished reference's only when host calls
        # came after the tests that lacked them, e.g. at the end of the session: run the
        # candidate again on the selection, as without a follower)
        cand_side.follows = None
        [cand] = run_sides([cand_side], **_run_settings(req, args, workdir))
    out.reference_trace = ref_trace  # in --json whatever the candidate does
    return (ref_trace, *_candidate_trace(cand, out))


def _finished_on_both(out: Outcome, stop: SidesInterrupted, ref_trace: dict | None):
    """A run stopped by a signal: (the reference's trace, the candidate's), each narrowed to
    the tests that finished on both sides; the others are listed in `out.interrupted`.
    (None, None) when no test finished on both."""
    results = {r.side.label: r for r in stop.results}
    if "reference" in results:  # (else a recorded or cached reference: complete)
        ref_trace = results["reference"].trace
    cand = results.get("candidate")
    cand_trace = cand.trace if cand is not None else None
    if cand is not None:
        out.candidate_stderr = cand.stderr
    out.interrupted = interruption(stop)
    if ref_trace is None or cand_trace is None:
        out.exit_code = out.interrupted["exit_code"]
        out.why = (
            f"interrupted by {out.interrupted['signal']} before any test finished on both sides"
        )
        return None, None
    for trace in (ref_trace, cand_trace):
        trace.pop("not_run", None)
    ref_done = {t["nodeid"] for t in ref_trace.get("tests", [])}
    both = ref_done & {t["nodeid"] for t in cand_trace.get("tests", [])}
    selected = _host_call_tests(ref_trace)
    # (a test the reference finished without host calls needs no candidate run: it finished)
    finished = both | (ref_done - selected if selected is not None else set())
    started = [u["nodeid"] for u in ref_trace.get("unfinished", [])]
    known = list(dict.fromkeys([*ref_trace.get("collected", []), *started, *ref_done]))
    out.interrupted["unfinished"] = [t for t in known if t not in finished]
    out.interrupted["finished"] = len(finished)
    for trace in (ref_trace, cand_trace):
        trace.pop("unfinished", None)
    return only_tests(ref_trace, both), only_tests(cand_trace, both)


def _check_tests_path(req: VerifyRequest) -> None:
    original, tests = req.original, req.pytest_tests
    if not original.exists():
        raise CannotRun(f"{original}: no such file or folder")
    if not original.is_dir():
        raise CannotRun(
            f"--pytest needs ORIGINAL to be the package's folder (the tests path is relative "
            f"to it); {original} is a file"
        )
    if Path(tests).is_absolute() or ".." in Path(tests).parts:
        raise CannotRun(f"--pytest {tests}: give the tests as a path relative to {original}")
    test_path = _test_path(req)
    if not (original / test_path).exists():
        raise CannotRun(f"--pytest {tests}: no {test_path} in {original}")


def _test_path(req: VerifyRequest) -> str:
    return req.pytest_tests.split("::", 1)[0]


def _candidate_root(req: VerifyRequest, out: Outcome, workdir: Path, project) -> Path:
    """The candidate package folder (resolved): the one given, or ORIGINAL migrated."""
    if req.candidate is None:
        cand_root = migrated_copy(req, out, workdir, project)
        out.candidate = f"{req.original} migrated by the codemod ({cand_root})"
        if project.strategy != "native":
            out.notes.append(
                f"[tool.hcmigrate] strategy = {project.strategy!r} ({project.config_file})"
            )
        return cand_root.resolve()
    cand_root = Path(req.candidate)
    if not cand_root.is_dir():
        raise CannotRun(
            f"--candidate {req.candidate}: not a folder (--pytest compares two package folders)"
        )
    if not (cand_root / _test_path(req)).exists():
        raise CannotRun(f"--candidate {req.candidate}: no {_test_path(req)} in it")
    out.candidate = str(cand_root)
    return cand_root.resolve()


def _pytest_args(req: VerifyRequest, workdir: Path) -> tuple[list[str], list[str]]:
    """(pytest's arguments on both sides, those that name the reference's run in its cache).

    The same pytest configuration on both sides: the package's own file (copied with it), else
    an empty one (never a configuration found above the package, e.g. a repository's)."""
    config = pytest_config(req.original)
    own = config is not None
    if not own:
        (workdir / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        config = str(workdir / "pytest.ini")
    # `--pytest .` runs the tests the project's configuration names (its testpaths), as a plain
    # `pytest` in the project's folder does, whatever its layout (tests/, test/, src/pkg/tests).
    paths = (
        []
        if req.pytest_tests == "." and names_testpaths(req.original, config)
        else [req.pytest_tests]
    )
    args = [*paths, "-c", config, "-q", *req.args]
    return args, (args[len(paths) :] if own else args[len(paths) + 2 :])


def _candidate_side(req: VerifyRequest, cand_root: Path, xdist: bool) -> Side:
    python = candidate_interpreter(req)
    append, _ = pytest_paths(python, may_install=False, progress=req.progress, xdist=xdist)
    return Side(
        "candidate",
        python,
        cand_root,
        compat_dir=project_compat_dir(),
        description=f"jax on {python}",
        pytest=True,
        append_paths=append,
        cwd=str(cand_root),
        extra_paths=[str(p) for p in source_paths(cand_root)],
    )


def _reference(req: VerifyRequest, out: Outcome, xdist: bool):
    """(the reference side to run, None) or (None, the recorded trace --reference-trace names)."""
    if req.reference_trace is not None:
        trace = load_trace(req.reference_trace)
        if trace.get("mode") != "pytest":
            raise CannotRun(f"--reference-trace {req.reference_trace} is not a --pytest trace")
        out.reference = f"recorded trace {req.reference_trace} (jax {trace.get('jax')})"
        return None, trace
    python, install_compat, description = reference_interpreter(req, out.notes)
    append, note = pytest_paths(
        python, may_install=(req.reference == "legacy"), progress=req.progress, xdist=xdist
    )
    if note:
        out.notes.append(note)
    out.reference = description
    original = req.original.resolve()
    side = Side(
        "reference",
        python,
        original,
        install_compat=install_compat,
        compat_dir=project_compat_dir() if install_compat else None,
        description=description,
        pytest=True,
        append_paths=append,
        cwd=str(original),
        extra_paths=[str(p) for p in source_paths(original)],
    )
    return side, None


def _cache_key(req: VerifyRequest, out: Outcome, ref_side: Side, key_args: list[str]) -> str:
    return reference_cache.reference_key(
        req.original.resolve(),
        {
            "original": str(req.original.resolve()),  # the trace's paths are the original's
            "tests": req.pytest_tests,
            "args": key_args,
            "python": ref_side.python,
            "reference": out.reference,
            "platform": req.platform,
            "paths": ref_side.extra_paths,
            "environment": reference_cache.environment_key(subprocess_env(req.platform)),
        },
    )


def _cached_reference(key: str, out: Outcome) -> dict | None:
    cached = reference_cache.load(key)
    if cached is not None:
        out.notes.append(
            "reference: recorded by an earlier run (same sources, tests and reference; "
            "--fresh-reference runs it again)"
        )
    return cached


def _run_settings(req: VerifyRequest, args: list[str], workdir: Path) -> dict:
    return dict(
        script_args=args,
        entries=[],
        timeout=req.timeout,
        workdir=workdir,
        platform=req.platform,
        progress=req.live,
    )


def _run_both(req, out, ref_side, cand_side, args, workdir) -> tuple[dict, RunResult]:
    """Both sides at once: (the reference's trace, the candidate's run). Unless --all-tests,
    the candidate follows the reference test by test (Side.follows): it runs the tests that
    made host calls there as the reference finishes them, instead of starting once the whole
    reference has run. The two share the machine: pytest-xdist workers beyond half its CPUs
    each would only queue."""
    cand_side.follows = None if req.all_tests else ref_side.label
    shared, note = share_workers(args)
    if note:
        out.notes.append(note)
    settings = {**_run_settings(req, args, workdir), "script_args": shared}
    ref, cand = run_sides([ref_side, cand_side], **settings)
    _check_reference(ref, out)
    return ref.trace, cand


def _only_selected(out: Outcome, ref_trace: dict, selected, cand_side: Side) -> dict:
    """The reference's trace narrowed to the tests the candidate runs (`selected`; None: all)."""
    if selected is None:
        return ref_trace
    skipped = len(ref_trace.get("tests", [])) - len(selected)
    if skipped:
        out.notes.append(
            f"{skipped} test(s) made no host call in the reference: not run on the "
            "candidate (--all-tests runs them)"
        )
    cand_side.select = sorted(selected)
    return only_tests(ref_trace, selected)


def _candidate_trace(cand: RunResult, out: Outcome) -> tuple[dict, Failure | None]:
    """The candidate's trace, and the failure that kept its pytest from starting when that is
    a removed JAX API (a conftest importing one: not the migration's doing, compared as every
    test failing that way) or host_callback itself (an unfinished migration: every test
    differs); a candidate pytest that could not run otherwise cannot be compared."""
    if cand.trace is not None:
        cand.trace.pop("not_run", None)
    out.candidate_stderr = cand.stderr
    if cand.trace is None:
        raise CannotRun(cand.why_no_trace())
    error = cand.trace.get("error") or ""
    if cand.trace.get("exit_status") in (3, 4) or error.startswith(
        ("pytest could not", "recorder")
    ):
        # (a removed JAX API or a missing module: set apart; host_callback itself, e.g. in a
        # conftest: an unfinished migration, a difference in every test)
        session_failure = classify_output(cand.stdout + "\n" + cand.stderr)
        if session_failure is not None:
            return cand.trace, session_failure
        tail = "\n".join(
            (cand.stdout.strip().splitlines() + cand.stderr.strip().splitlines())[-15:]
        )
        raise CannotRun(f"pytest could not run on the candidate: {cand.trace.get('error')}\n{tail}")
    return cand.trace, None


def _with_prng_opinion(
    req, out, ref_side, args, ref_trace, cand_trace, site_map, comparison, workdir
):
    """(reference trace, comparison) after running the differing tests again on a reference
    older than JAX 0.5 with today's jax.random numbers (prng.py): kept for the tests it fixes."""
    differing = [
        t["nodeid"] for t in comparison.tests if not t["equivalent"] and t["nodeid"] != SESSION
    ]
    try:
        second = second_opinion(ref_side, req, args, [], workdir, select=differing, pytest=True)
    except SidesInterrupted as stop:  # (the plain comparison stands)
        out.interrupted = interruption(stop)
        out.interrupted["finished"] = len(comparison.tests)
        return ref_trace, comparison
    if second is None:
        return ref_trace, comparison
    merged = merge_tests(ref_trace, second, set(differing))
    again = compare_pytest_traces(merged, cand_trace, req.tolerance, sites=site_map)
    fixed = sum(
        1 for a, b in zip(comparison.tests, again.tests) if not a["equivalent"] and b["equivalent"]
    )
    if fixed and len(again.differences) <= len(comparison.differences):
        out.notes.append(
            f"{fixed} test(s) "
            + prng_note(ref_trace).replace("equivalent once", "are equivalent once")
        )
        return merged, again
    return ref_trace, comparison


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
        output = "\n".join([*(e["message"] for e in trace.get("collect_errors", [])), ref.stdout])
        advice = removed_on_compat_reference(
            output, ref.side.install_compat
        ) or missing_on_reference(output, out.reference, ref.side.install_compat)
        if advice:
            raise CannotRun(advice)
        tail = "\n".join((ref.stdout.strip().splitlines() + ref.stderr.strip().splitlines())[-15:])
        errors = "; ".join(
            f"{e['nodeid']}: {e['message']}" for e in trace.get("collect_errors", [])
        )
        raise CannotRun(
            f"pytest could not run the original's tests on the reference ({out.reference}): "
            f"{trace.get('error') or 'collection errors: ' + errors}\n{tail}"
        )


def _check_host_calls(ref_trace: dict) -> None:
    """An equivalent run in which no test made a host call on the reference compared no host
    call: not a pass."""
    if ref_trace.get("events"):
        return
    ran = len(ref_trace.get("tests", []))
    raise CannotRun(
        f"no test made a host call on the reference ({ran} test(s) ran, 0 host calls), so "
        "nothing was compared: check that the tests reach the host_callback code (the TESTS "
        "path and -k selection, skipped tests, a progress bar or log the project switches off "
        "through an environment variable of its own)"
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


def _classify_pytest(out: Outcome, cand: dict, session_failure: Failure | None = None) -> None:
    """Tests whose candidate failure is a removed JAX API or a missing module (and not the
    reference's own failure) are set apart from the host-callback verdict: failing in the
    test, at the import of its module (the hint names the collection error) or,
    `session_failure`, at the import of a conftest (no test ran; named once)."""
    comp = out.comparison
    cand_tests = {t["nodeid"]: t for t in cand.get("tests", [])}
    moved = _not_comparable(out)
    for t in comp.tests:
        if t["equivalent"] or t.get("category"):
            continue
        c = cand_tests.get(t["nodeid"])
        message = c.get("message") if c and c.get("outcome") in ("failed", "error") else None
        if c is None:
            message = next((d.get("hint") for d in t["differences"] if d.get("hint")), None)
        failure = session_failure if c is None and session_failure else classify(message)
        if failure is None or t["reference_outcome"] == t["candidate_outcome"]:
            continue
        kinds = {d["kind"] for d in t["differences"]}
        if not failure.unrelated or "event" in kinds:
            t["note"] = failure.describe(cand.get("jax"))
            continue
        t["category"] = "unrelated"
        t["failure"] = failure.describe(cand.get("jax"))
        moved.append(t["nodeid"])
        if failure is not session_failure:
            out.unrelated.append(failure.record(t["nodeid"], cand.get("jax"), message))
    if session_failure is not None and moved:
        out.unrelated.append(
            session_failure.record(
                "<conftest>", cand.get("jax"), session_failure.message or cand.get("error")
            )
        )
    if moved:
        comp.differences = [d for d in comp.differences if d.entry not in moved]
    if comp.differences:
        out.exit_code = DIFFERENT
    elif out.not_comparable:
        out.exit_code = CANNOT_RUN
        out.why = _why_not_comparable(out)
    elif out.unrelated:
        out.exit_code = CANDIDATE_BROKEN
    else:
        out.exit_code = EQUIVALENT


def _not_comparable(out: Outcome) -> list[str]:
    """The tests the original failed on the reference because the reference's JAX no longer
    had an API it uses, where the candidate ran otherwise: not compared (category
    "reference-cannot-run", listed in `out.not_comparable`); their node ids."""
    ref = out.reference_trace or {}
    ref_tests = {t["nodeid"]: t for t in ref.get("tests", [])}
    moved = []
    for t in out.comparison.tests:
        r = ref_tests.get(t["nodeid"])
        if t["equivalent"] or r is None or r.get("outcome") not in ("failed", "error"):
            continue
        if t["reference_outcome"] == t["candidate_outcome"]:
            continue
        failure = missing_on_reference_jax(r.get("message"), ref.get("jax"))
        if failure is None:
            continue
        t["category"] = "reference-cannot-run"
        t["failure"] = f"the reference cannot run the original: {_missing_there(failure, ref)}"
        out.not_comparable.append(
            not_comparable(t["nodeid"], failure.kind, failure.message, failure)
        )
        moved.append(t["nodeid"])
    return moved


def _missing_there(failure: Failure, ref: dict) -> str:
    if failure.kind == "deprecated-jax-api":
        return (
            f"JAX {ref.get('jax')} deprecates `{failure.api}` (since JAX "
            f"{failure.row.deprecated_in}) and the project's warning filters make that an error"
        )
    return f"`{failure.api}` is not in JAX {ref.get('jax')}{failure.removed_when}"


def _why_not_comparable(out: Outcome) -> str:
    unstable = [n["where"] for n in out.not_comparable if n["kind"] == "nondeterministic"]
    if len(unstable) == len(out.not_comparable):
        names = " and ".join(f"not {u.rsplit('::', 1)[-1].split('[')[0]}" for u in unstable[:6])
        return (
            f"{len(unstable)} test(s) make host calls that differ from one run of the original "
            f"to the next on the same JAX ({unstable[0]}: {out.not_comparable[0]['error']}), so "
            f"no comparison can judge the migration there ({_others_compared(out)}): seed what "
            f'they draw, or leave them out (-- -k "{names}")'
        )
    first = next(n for n in out.not_comparable if n["kind"] != "nondeterministic")
    if first["kind"] == "deprecated-jax-api":
        since, what = (
            first["deprecated_in"],
            "deprecates it, and the project's warning filters make that an error",
        )
        when = f" (deprecated in JAX {since})"
    else:
        since, what = first["removed_in"], "no longer has it"
        when = f" (removed in JAX {since})" if since else ""
    older = [v for v in sorted(ERA_END, key=version) if since and version(v) < version(since)]
    if older:
        remedy = f"--reference-jax {older[-1]} runs a legacy JAX before that"
    else:
        wanted = f"jax<{since}" if since else "a JAX that has it"
        remedy = (
            "no legacy JAX this tool installs has it: --reference PYTHON runs an environment "
            f"of your own with {wanted} (and jax.experimental.host_callback)"
        )
    # (a run may also hold tests set apart as nondeterministic: said after, not counted here)
    missing = len(out.not_comparable) - len(unstable)
    also = (
        f"; {len(unstable)} more test(s) differ from one run of the original to the next on "
        f"the same JAX ({unstable[0]}), not compared either"
        if unstable
        else ""
    )
    return (
        f"the reference cannot run the original: {missing} test(s) failed "
        f"there on `{first['api']}`{when}: the reference's JAX {what}, so they were not "
        f"compared ({_others_compared(out)}); {remedy}{also}"
    )


def _others_compared(out: Outcome) -> str:
    others = [t for t in out.comparison.tests if not t.get("category")]
    return f"the {len(others)} other test(s) above were" if others else "no other test was"
