"""The table of removed JAX APIs (hcmigrate.jax_removals) is what JAX does.

docs/jax_removals.json is written by scripts/measure_jax_removals.py: each row's probes run on
jax 0.4.30 (the cached legacy environment), the oldest supported JAX (0.6.2) and the current
JAX, and the row's API read from the `jax` wheel of every release from 0.4.16 on. Here: every
row agrees with that data (versions, replacements, evidence), the data agrees with itself (the
versions are what the per-release statuses say, the runs are what the versions predict), verify
recognises every measured failure as its row, and the probes are run again on the current JAX
and on jax 0.4.30 and must give the committed outcomes, so a JAX upgrade cannot change the
table unnoticed. When one fails, re-run `python scripts/measure_jax_removals.py --diff` and
review the diff of the table and of the rules that read the changed row.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hcmigrate import jax_removals
from hcmigrate.jax_removals import REMOVED_APIS, UNMEASURED, Kind
from hcmigrate.jax_removals_evidence import EVIDENCE
from hcmigrate.verify.classify import classify

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "measure_jax_removals.py"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


measure = _load("measure_jax_removals", SCRIPT)
LEGACY, OLDEST, CURRENT = "0.4.30", measure.OLDEST_JAX, None


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(measure.DATA.read_text(encoding="utf-8"))


def _uses(runs: dict) -> dict:
    """A row's probes of the API itself (not of its replacement)."""
    return {name: r for name, r in runs.items() if name != "replacement"}


def _before(a: str, b: str) -> bool:
    return measure.version_key(a) <= measure.version_key(b)


def test_every_row_is_measured_and_nothing_else(committed):
    assert {row.key for row in REMOVED_APIS} == set(committed["rows"])
    assert not [
        row.key for row in REMOVED_APIS if UNMEASURED in (row.removed_in, row.deprecated_in)
    ]
    assert committed["environments"]["legacy"]["jax"] == LEGACY
    assert committed["environments"]["oldest"]["jax"] == OLDEST


def test_the_probes_are_those_of_the_table(committed):
    """A row whose probes changed (a new replacement spelling, say) must be measured again."""
    probes = {p["id"]: p["code"] for p in measure.all_probes(REMOVED_APIS)}
    assert probes == committed["probes"]


def test_every_version_column_is_the_measured_one(committed):
    wrong = []
    for row in REMOVED_APIS:
        wheels = committed["rows"][row.key]["wheels"]
        for column in ("removed_in", "deprecated_in"):
            if getattr(row, column) != wheels[column]:
                wrong.append(f"{row.key}: {column} {getattr(row, column)} != {wheels[column]}")
        if "replacement" in wheels and row.replacement_since != wheels["replacement_since"]:
            wrong.append(
                f"{row.key}: replacement_since {row.replacement_since} != "
                f"{wheels['replacement_since']}"
            )
    assert not wrong, "\n".join(wrong)


def test_every_row_carries_its_evidence(committed):
    assert EVIDENCE == {key: r["evidence"] for key, r in committed["rows"].items()}
    for row in REMOVED_APIS:
        assert row.evidence == committed["rows"][row.key]["evidence"]
        assert row.evidence.startswith(("0.4.30 ", "normal(PRNGKey(0)"))


def test_the_wheel_evidence_is_self_consistent(committed):
    """Each row's per-release statuses cover every release read, in order, and give exactly
    the versions recorded (and so, by the test above, the table's)."""
    releases = committed["wheels_read"]
    assert releases == sorted(releases, key=measure.version_key)
    assert releases[0] == measure.FIRST_RELEASE
    assert committed["environments"]["current"]["jax"] in releases
    for key, data in committed["rows"].items():
        wheels = data["wheels"]
        for runs_name in ("api", "replacement"):
            if runs_name not in wheels:
                continue
            covered = []
            for first, last, status in wheels[runs_name]:
                assert status in ("present", "deprecated", "removed", "absent"), key
                covered += releases[releases.index(first) : releases.index(last) + 1]
            assert covered == releases, (key, runs_name)

        def statuses(runs):
            return {
                v: s
                for first, last, s in runs
                for v in releases
                if _before(first, v) and _before(v, last)
            }

        again = measure.measured_versions(
            statuses(wheels["api"]),
            statuses(wheels["replacement"]) if "replacement" in wheels else None,
        )
        for column in ("removed_in", "deprecated_in", "replacement_since"):
            assert again[column] == wheels[column], (key, column)
        assert wheels["monotonic"], f"{key}: the API came back after its removal"
        if "replacement" in wheels:
            assert not wheels["replacement_absent_after"], f"{key}: the replacement went away"


def test_the_runs_are_what_the_versions_predict(committed):
    """On each measured JAX, an API removed at or before that release fails and one not yet
    removed works: the runs and the wheels, measured apart, agree."""
    wrong = []
    for row in REMOVED_APIS:
        if row.kind is Kind.BEHAVIOUR:
            continue
        data = committed["rows"][row.key]
        for role, version in data["jax"].items():
            outcomes = {r["outcome"] for r in _uses(data["runs"][role]).values()}
            removed = _before(row.removed_in, version)
            if removed and outcomes != {"FAIL"}:
                wrong.append(f"{row.key} removed in {row.removed_in}: {outcomes} on {version}")
            if not removed and "FAIL" in outcomes:
                wrong.append(f"{row.key} removed in {row.removed_in}: FAIL on {version}")
            deprecated = row.deprecated_in is not None and _before(row.deprecated_in, version)
            if not removed and not deprecated and "WARN" in outcomes:
                wrong.append(f"{row.key} deprecated in {row.deprecated_in}: WARN on {version}")
    assert not wrong, "\n".join(wrong)


def test_a_mechanical_replacement_works_where_the_table_says(committed):
    """The replacement runs on the current and the oldest supported JAX, and on jax 0.4.30
    exactly when the table says it exists there."""
    wrong = []
    for row in REMOVED_APIS:
        runs = committed["rows"][row.key]["runs"]
        if "replacement" not in runs["current"]:
            assert not row.mechanical or row.kind is not Kind.KEYWORD, row.key
            continue
        works = {role: runs[role]["replacement"]["outcome"] != "FAIL" for role in runs}
        since = row.replacement_since
        expected = {
            "current": True,
            "oldest": since is None or _before(since, OLDEST),
            "legacy": since is None or _before(since, LEGACY),
        }
        if row.mechanical and works != expected:
            wrong.append(f"{row.key}: replacement {row.replacement!r} works {works}")
        if not row.mechanical and not works["current"]:
            wrong.append(f"{row.key}: replacement {row.replacement!r} fails on current JAX")
    assert not wrong, "\n".join(wrong)


def test_the_random_stream_changed_in_0_5_and_the_flag_restores_it(committed):
    data = committed["rows"]["jax.random"]
    draws = {role: data["runs"][role]["draw"]["value"] for role in data["runs"]}
    old_stream = {role: data["runs"][role]["draw_old_stream"]["value"] for role in data["runs"]}
    assert draws["current"] != draws["legacy"] and draws["oldest"] == draws["current"]
    assert old_stream == {role: draws["legacy"] for role in draws}
    assert jax_removals.BY_KEY["jax.random"].removed_in == "0.5.0"
    assert "jax_threefry_partitionable" in jax_removals.BY_KEY["jax.random"].advice


def test_verify_recognises_every_measured_failure_as_its_row(committed):
    """Every message the current JAX gives for a row's API is classified as that row (the
    classification verify reports as "broken, not by the migration")."""
    wrong = []
    for row in REMOVED_APIS:
        if row.kind is Kind.BEHAVIOUR:
            continue
        for name, result in _uses(committed["rows"][row.key]["runs"]["current"]).items():
            failure = classify(result["message"])
            # (a name of a module that is gone, `jax.util.safe_map`: the module's row)
            parent = failure is not None and failure.row is not None
            parent = parent and failure.row.kind is Kind.MODULE
            parent = parent and row.name.startswith(failure.row.name + ".")
            if failure is None or (failure.row is not row and not parent):
                found = failure.row.key if failure is not None and failure.row else failure
                wrong.append(f"{row.key}/{name}: {result['message']!r} -> {found}")
    assert not wrong, "\n".join(wrong)


def test_the_spellings_that_still_work_are_not_rows(committed):
    """`jax.config` the object (`jax.config.update`, `from jax import config`) is not the
    removed module; positional clip, jax.tree_util, pjit, ... still work."""
    for name, runs in committed["controls"].items():
        assert {r["outcome"] for r in runs.values()} <= {"OK", "WARN"}, (name, runs)
        assert name.removeprefix("control/") not in jax_removals.BY_KEY


@pytest.fixture(scope="module")
def remeasured(legacy_python) -> dict:
    """All probes, run now on the current JAX and on jax 0.4.30: one process each."""
    probes = measure.all_probes(REMOVED_APIS)
    pythons = {"current": sys.executable, "legacy": str(legacy_python)}
    with ThreadPoolExecutor(2) as pool:
        results = pool.map(lambda p: measure.measure_runs(p, probes), pythons.values())
        return dict(zip(pythons, results))


@pytest.mark.parametrize("role", ["current", "legacy"])
def test_the_committed_outcomes_still_hold(role, committed, remeasured):
    measured = remeasured[role]
    if role == "legacy":
        assert measured["meta"]["jax"] == LEGACY
    expected = {
        f"{key}/{name}": result
        for key, row in committed["rows"].items()
        for name, result in row["runs"][role].items()
    }
    expected.update({name: runs[role] for name, runs in committed["controls"].items()})
    expected.update({f"guard/{key}": g["runs"][role] for key, g in committed["guards"].items()})
    expected.update({f"homes/{key}": h["runs"][role] for key, h in committed["homes"].items()})
    changed = [
        f"{probe}:\n  committed {result}\n  measured  {measured[probe]}"
        for probe, result in expected.items()
        if measured[probe] != result
    ]
    was = committed["environments"][role]["jax"]
    assert not changed, f"committed on jax {was}, now {measured['meta']['jax']}:\n" + "\n".join(
        changed
    )


def test_every_guarded_import_binds_what_its_row_says(committed):
    """The guarded import JAX107/JAX111 write where no one spelling spans a project's range
    (from jax 0.4.16): it imports on jax 0.4.30, 0.6.2 and the current JAX, and binds the
    primitive `jax.jit` emits (pjit_p), pmap's primitive or None where JAX has none
    (xla_pmap_p: pmap traces to a `jit` equation there), or the removed spelling's own object
    where both exist; in every wheel, the new spelling imports from the release the row says,
    the old one before."""
    guarded = [row for row in REMOVED_APIS if row.guard]
    assert {row.key for row in guarded} == set(committed["guards"])
    for row in guarded:
        data = committed["guards"][row.key]
        assert committed["probes"][f"guard/{row.key}"] == measure.guard_probe(row)
        for role, result in data["runs"].items():
            version = committed["environments"][role]["jax"]
            present = not _before(row.removed_in, version)
            assert result["outcome"] != "FAIL", (row.key, role, result)
            if row.name == "jax.experimental.pjit.pjit_p":
                assert result["value"] is True, (role, result)
            elif row.guard == "none":
                expected = [True, "xla_pmap"] if present else [False, "jit"]
                assert result["value"] == expected, (row.key, role, result)
            else:
                assert result["value"] is (True if present else None), (row.key, role, result)
        for first, last, origin in data["wheels"]:
            if row.guard == "old":
                new = _before(row.replacement_since, first)
                assert origin.startswith("new: " if new else "old: "), (row.key, first, origin)
                assert new or not _before(row.replacement_since, last), (row.key, last)
            else:
                gone = _before(row.removed_in, first)
                assert (origin == "neither") is gone, (row.key, first, origin)


def test_the_public_homes_a_row_names_are_the_measured_ones(committed):
    """A removed module whose names have public homes (`jaxlib.xla_extension.Device` is
    `jax.Device`): its row's advice names each home, with the first release that has it where
    that is newer than the oldest wheel read; on each measured JAX that has the home, the name
    (read from the module, or from the module it was renamed to) is the home's object or a
    subclass of it, or gone from both; before the home's release it has none."""
    homed = [row for row in REMOVED_APIS if row.name in measure.HOMES]
    assert {row.key for row in homed} == set(committed["homes"])
    for row in homed:
        data = committed["homes"][row.key]
        assert committed["probes"][f"homes/{row.key}"] == measure.home_probe(row.name)
        seen = set()
        for name, home in measure.HOMES[row.name].items():
            since = data["names"][name]["since"]
            assert data["names"][name]["home"] == home
            assert f"{name} is {home}" in row.advice, (row.key, name)
            if since is not None:
                assert f"{home} (JAX >= {since}" in row.advice, (row.key, name, since)
            for role, result in data["runs"].items():
                assert result["outcome"] == "OK", (row.key, role, result)
                verdict = result["value"][name]
                version = committed["environments"][role]["jax"]
                if since is not None and not _before(since, version):
                    assert verdict == "no home", (row.key, name, role, verdict)
                    continue
                assert verdict.split(" ")[0] in ("same", "subclass", "gone"), (name, role, verdict)
                if verdict != "gone":
                    seen.add(name)
        assert seen == set(measure.HOMES[row.name]), (row.key, seen)


def test_a_jaxlib_row_is_read_from_the_jaxlib_each_release_runs_with(committed):
    """A row of a jaxlib module is read from the file list of the jaxlib each jax release
    runs with (never newer than the release: jax requires `jaxlib<=` its own version); the
    pairing is in the data where the two differ."""
    for row in REMOVED_APIS:
        wheels = committed["rows"][row.key]["wheels"]
        assert ("jaxlib_read" in wheels) == measure.is_jaxlib(row), row.key
        for jax_version, jaxlib in wheels.get("jaxlib_read", {}).items():
            assert _before(jaxlib, jax_version) and jaxlib != jax_version, (row.key, jax_version)
        if measure.is_jaxlib(row):
            assert row.kind is Kind.MODULE and "jaxlib wheels: " in row.evidence


def test_the_docs_page_has_the_table_as_the_module_has_it():
    table = _load("jax_removals_table", REPO / "scripts" / "jax_removals_table.py")
    text = table.PAGE.read_text(encoding="utf-8")
    assert table.BEGIN in text and table.END in text
    assert table.page(text) == text, "run: python scripts/jax_removals_table.py --write"
    for row in REMOVED_APIS:
        assert row.evidence in text
