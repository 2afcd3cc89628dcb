"""`hcmigrate verify` sets apart a candidate that fails on a JAX API current JAX removed (the
rows of hcmigrate.jax_removals): "broken, not by the migration", exit status 3, naming the API,
the release that removed it and the rule that fixes it, whether the failure comes in a script,
in a test or at a conftest's import, with the reference's per-test results kept in `--json`.
Real jax 0.4.30 (the cached legacy environment) against the current JAX; each candidate is a
faithful host_callback migration that still uses the removed API."""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace
from pathlib import Path

from verify_helpers import hcmigrate_verify

from hcmigrate.jax_removals import BY_KEY
from hcmigrate.verify.classify import Failure, classify, classify_output

LEGACY_TAP = """\
    import jax
    import jax.numpy as jnp
    from jax.experimental import host_callback as hcb

    SEEN = []


    def doubled(x):
        return jax.jit(lambda v: hcb.id_tap(lambda a, t: SEEN.append(float(a)), v * 2.0))(x)
    """


def migrated_tap() -> str:
    """LEGACY_TAP migrated by the codemod (it uses no removed API besides host_callback)."""
    from hcmigrate.api import migrate_source

    return textwrap.indent(migrate_source(textwrap.dedent(LEGACY_TAP)).code, "    ")


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def test_a_script_using_a_removed_keyword_is_broken_not_by_the_migration(legacy_python, tmp_path):
    main = """

    print(doubled(jnp.float32(1.0)))
    print(jnp.clip(jnp.arange(4.0), a_max=2.0))
    """
    original = write(tmp_path / "orig", {"train.py": LEGACY_TAP + main})
    candidate = write(tmp_path / "cand", {"train.py": migrated_tap() + main})
    report = tmp_path / "report.json"
    res = hcmigrate_verify(
        original / "train.py",
        "--candidate",
        candidate / "train.py",
        "--reference",
        "legacy",
        "--json",
        report,
    )
    assert res.returncode == 3, res.stdout + res.stderr
    assert "CANDIDATE BROKEN (not by the migration)" in res.stdout
    assert (
        "`jax.numpy.clip(a_max=...)` is not in JAX 0.10.2 (removed in JAX 0.10.0); use max="
        in res.stdout
    ), res.stdout
    [entry] = json.loads(report.read_text())["unrelated"]
    row = BY_KEY["jax.numpy.clip:a_max"]
    assert (entry["api"], entry["removed_in"], entry["rule"]) == (
        "jax.numpy.clip(a_max=...)",
        "0.10.0",
        row.rule,
    )
    assert "unexpected keyword argument 'a_max'" in entry["error"]


TEST_DOUBLED = """\
    import jax
    import jax.numpy as jnp
    from lib import core


    def test_doubled():
        assert float(core.doubled(jnp.float32(2.0))) == 4.0


    def test_tree():
        core.doubled(jnp.float32(1.0))
        assert jax.tree_map(lambda v: v * 3, {"a": 1.0})["a"] == 3.0
    """


TEST_IMPORTING = """\
    import jax.numpy as jnp
    from jax import tree_leaves
    from lib import core


    def test_leaves():
        assert tree_leaves([core.doubled(jnp.float32(1.0))]) == [2.0]
    """


def test_a_removed_name_in_a_test_or_at_its_import_is_set_apart_per_test(legacy_python, tmp_path):
    tests = {"tests/test_core.py": TEST_DOUBLED, "tests/test_imports.py": TEST_IMPORTING}
    original = write(tmp_path / "orig", {"lib/__init__.py": "", "lib/core.py": LEGACY_TAP, **tests})
    candidate = write(
        tmp_path / "cand", {"lib/__init__.py": "", "lib/core.py": migrated_tap(), **tests}
    )
    report = tmp_path / "report.json"
    res = hcmigrate_verify(
        original, "--pytest", "tests", "--candidate", candidate, "--reference", "legacy",
        "--json", report,
    )  # fmt: skip
    assert res.returncode == 3, res.stdout + res.stderr
    assert "ok   tests/test_core.py::test_doubled" in res.stdout
    assert "NOTE tests/test_core.py::test_tree" in res.stdout
    assert "`jax.tree_map` is not in JAX 0.10.2 (removed in JAX 0.6.0); use jax.tree.map" in (
        res.stdout
    )
    assert "NOTE tests/test_imports.py::test_leaves" in res.stdout
    data = json.loads(report.read_text())
    by_test = {entry["where"]: entry for entry in data["unrelated"]}
    assert set(by_test) == {"tests/test_core.py::test_tree", "tests/test_imports.py::test_leaves"}
    tree_map = by_test["tests/test_core.py::test_tree"]
    assert (tree_map["api"], tree_map["rule"]) == ("jax.tree_map", BY_KEY["jax.tree_map"].rule)
    leaves = by_test["tests/test_imports.py::test_leaves"]
    assert leaves["api"] == "jax.tree_leaves"
    assert "ImportError: cannot import name 'tree_leaves' from 'jax'" in leaves["error"]


def test_a_conftest_importing_a_removed_name_keeps_the_reference_results(legacy_python, tmp_path):
    """numpyro's case: conftest.py imports `pjit_p`, so pytest cannot start on current JAX.
    Before, verify could not run (exit 2) and dropped the reference's per-test results."""
    conftest = "from jax.experimental.pjit import pjit_p  # noqa: F401\n"
    tests = """\
        import jax.numpy as jnp
        from lib import core


        def test_doubled():
            assert float(core.doubled(jnp.float32(2.0))) == 4.0
        """
    original = write(
        tmp_path / "orig",
        {
            "lib/__init__.py": "",
            "lib/core.py": LEGACY_TAP,
            "tests/conftest.py": conftest,
            "tests/test_core.py": tests,
        },
    )
    candidate = write(
        tmp_path / "cand",
        {
            "lib/__init__.py": "",
            "lib/core.py": migrated_tap(),
            "tests/conftest.py": conftest,
            "tests/test_core.py": tests,
        },
    )
    report = tmp_path / "report.json"
    res = hcmigrate_verify(
        original, "--pytest", "tests", "--candidate", candidate, "--reference", "legacy",
        "--json", report,
    )  # fmt: skip
    assert res.returncode == 3, res.stdout + res.stderr
    assert (
        "- [<conftest>] `jax.experimental.pjit.pjit_p` is not in JAX 0.10.2 (removed in JAX 0.7.0)"
        in res.stdout
    ), res.stdout
    data = json.loads(report.read_text())
    assert data["verdict"] == "candidate-broken"
    [test] = data["tests"]
    assert (test["nodeid"], test["reference_outcome"], test["reference_events"]) == (
        "tests/test_core.py::test_doubled",
        "passed",
        1,
    )
    assert test["category"] == "unrelated"
    [entry] = data["unrelated"]
    assert (
        entry["where"] == "<conftest>"
        and entry["rule"] == BY_KEY["jax.experimental.pjit.pjit_p"].rule
    )
    assert entry["error"].startswith("ImportError: cannot import name 'pjit_p'")


def test_the_rule_of_the_row_is_named_once_it_has_a_code():
    row = replace(BY_KEY["jax.numpy.clip:a_max"], rule="JAX999")
    failure = Failure("removed-jax-api", "jax.numpy.clip(a_max=...)", row)
    text = failure.describe("0.10.2")
    # (the candidate still failing on it means the run did not rewrite this use: the report
    # never says the rule fixed it)
    assert "not caused by the host_callback migration; the candidate still uses it: " in text
    assert "hcmigrate's rule JAX999 rewrites the uses it can resolve" in text
    assert "fix this one by hand" in text
    assert "rewrites it" not in text
    manual = replace(BY_KEY["jax.interpreters.pxla.xla_pmap_p"], rule="JAX998")
    assert (
        Failure("removed-jax-api", manual.name, manual)
        .describe()
        .endswith("hcmigrate's rule JAX998 reports it (no mechanical rewrite)")
    )


def test_pytest_s_report_of_a_conftest_that_failed_to_import_is_read():
    output = textwrap.dedent("""\
        ImportError while loading conftest '/p/tests/conftest.py'.
        tests/conftest.py:1: in <module>
            import jax.config
        E   ModuleNotFoundError: No module named 'jax.config'
        """)
    failure = classify_output(output)
    assert failure is not None and failure.row is BY_KEY["jax.config"]
    assert failure.message == "ModuleNotFoundError: No module named 'jax.config'"
    # an unrelated module missing from a line that is not an error is not read
    assert classify_output("collected 0 items\nNo module named 'jax.config' in the docs") is None
    assert (
        classify("TypeError: clip() got an unexpected keyword argument 'a'").row
        is BY_KEY["jax.numpy.clip:a"]
    )
    # jaxlib's own modules are JAX's: gone, not a dependency the environment lacks (GPJax's
    # `from jaxlib.xla_extension import PjitFunction` on jaxlib >= 0.6.1)
    gone = classify("ModuleNotFoundError: No module named 'jaxlib.xla_extension'")
    assert gone is not None and gone.kind == "removed-jax-api", gone
    assert "`jaxlib.xla_extension` is not in JAX 0.10.2" in gone.describe("0.10.2")
    # ... and the table's row: when it went, what to use, the rule that reports it
    assert gone.row is BY_KEY["jaxlib.xla_extension"]
    said = gone.describe("0.10.2")
    assert "(removed in JAX 0.6.1)" in said and "jax.errors.JaxRuntimeError" in said
    assert "hcmigrate's rule JAX109 reports it" in said
    name = classify("ImportError: cannot import name 'Device' from 'jaxlib.xla_extension'")
    assert name is not None and name.row is BY_KEY["jaxlib.xla_extension"]


def test_a_candidate_that_cannot_start_keeps_the_reference_results(legacy_python, tmp_path):
    """A conftest failing for a reason that is no removed JAX API: could not run (exit 2), the
    reference's per-test results still in `--json` (they were dropped)."""
    tests = """\
        import jax.numpy as jnp
        from lib import core


        def test_doubled():
            assert float(core.doubled(jnp.float32(2.0))) == 4.0
        """
    original = write(
        tmp_path / "orig",
        {"lib/__init__.py": "", "lib/core.py": LEGACY_TAP, "tests/test_core.py": tests},
    )
    candidate = write(
        tmp_path / "cand",
        {
            "lib/__init__.py": "",
            "lib/core.py": migrated_tap(),
            "tests/conftest.py": "raise RuntimeError('no database here')\n",
            "tests/test_core.py": tests,
        },
    )
    report = tmp_path / "report.json"
    res = hcmigrate_verify(
        original, "--pytest", "tests", "--candidate", candidate, "--reference", "legacy",
        "--json", report,
    )  # fmt: skip
    assert res.returncode == 2, res.stdout + res.stderr
    assert "no database here" in res.stdout
    data = json.loads(report.read_text())
    assert data["verdict"] == "could-not-run" and data["unrelated"] == []
    [test] = data["tests"]
    assert (test["nodeid"], test["reference_outcome"]) == (
        "tests/test_core.py::test_doubled",
        "passed",
    )
    assert test["reference_events"] == 1 and test["verdict"] == "not compared"
