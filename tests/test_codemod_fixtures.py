"""Every fixtures/NAME.in.py is migrated to exactly NAME.out.py with exactly the diagnostics of
NAME.diagnostics; the output parses, compiles, and a second run changes nothing (idempotence).
Discovered, not listed; scripts/regen_codemod_fixtures.py writes the expected files."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from hcmigrate import Options, migrate_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PAIRS = sorted(FIXTURES.glob("*.in.py"))


def _name(path: Path) -> str:
    return path.name[: -len(".in.py")]


def test_fixtures_are_discovered():
    # The patterns page's shapes (I1-I7, T1-T8, C1-C9, E1-E7) all have a fixture.
    names = " ".join(_name(p) for p in PAIRS)
    for tag in (
        [f"i{i}" for i in range(1, 8)]
        + [f"t{i}" for i in range(1, 9)]
        + [f"c{i}" for i in range(1, 10)]
    ):
        assert f"{tag}_" in names or f"_{tag[1:]}_" in names, f"no fixture for {tag.upper()}"
    for tag in ("e1", "e2", "e3", "e4", "e5", "e6", "e7"):
        assert tag in names, f"no fixture for {tag.upper()}"


@pytest.mark.parametrize("source", PAIRS, ids=_name)
def test_fixture_output_matches(source: Path):
    expected = source.with_name(_name(source) + ".out.py").read_text()
    result = migrate_source(source.read_text(), Options(), filename=source.name)
    assert result.code == expected
    diagnostics = source.with_name(_name(source) + ".diagnostics").read_text().splitlines()
    assert [d.brief() for d in result.diagnostics] == diagnostics
    cst.parse_module(result.code)
    compile(result.code, source.name, "exec")


@pytest.mark.parametrize("source", PAIRS, ids=_name)
def test_fixture_second_run_is_a_no_op(source: Path):
    once = migrate_source(source.read_text(), Options()).code
    twice = migrate_source(once, Options())
    assert twice.code == once
    # nothing is left to fix: only sites that need a human are reported again
    assert [d for d in twice.diagnostics if d.level.value != "manual"] == []


@pytest.mark.parametrize("source", PAIRS, ids=_name)
def test_compat_strategy_repoints_imports_and_is_idempotent(source: Path):
    text = source.read_text()
    result = migrate_source(text, Options(strategy="compat"))
    cst.parse_module(result.code)
    assert (
        "jax.experimental.host_callback" not in _code_only(result.code)
        or "mypkg" in text
        or "taps" in text
    )
    assert migrate_source(result.code, Options(strategy="compat")).code == result.code


def _code_only(code: str) -> str:
    """The module without docstrings and comments (E4/E5 mention the API in prose)."""
    module = cst.parse_module(code)

    class _Strip(cst.CSTTransformer):
        def leave_Comment(self, original, updated):
            return cst.RemovalSentinel.REMOVE

        def leave_SimpleString(self, original, updated):
            return updated.with_changes(value='""')

    return module.visit(_Strip()).code


def _comments(code: str) -> list[str]:
    import io
    import tokenize

    return [
        t.string
        for t in tokenize.generate_tokens(io.StringIO(code).readline)
        if t.type == tokenize.COMMENT
    ]


@pytest.mark.parametrize("source", PAIRS, ids=_name)
def test_no_comment_is_lost(source: Path):
    # Rewritten calls, removed statements and removed imports keep every user comment.
    before = _comments(source.read_text())
    after = _comments(migrate_source(source.read_text()).code)
    missing = [c for c in before if c not in after]
    assert missing == []


def test_comments_of_removed_statements_move_to_the_next_statement():
    text = (
        "# we debug with this\n"
        "from jax.experimental import host_callback as hcb  # used to debug\n\n\n"
        "def shutdown():\n"
        "    # stop the receiver first\n"
        "    hcb.stop_outfeed_receiver()  # really\n"
        "    return 1\n"
    )
    assert migrate_source(text).code == (
        "# we debug with this\n"
        "# used to debug\n\n\n"
        "def shutdown():\n"
        "    # stop the receiver first\n"
        "    # really\n"
        "    return 1\n"
    )


def test_compat_strategy_removes_unused_imports_and_repoints_used_ones():
    text = (FIXTURES / "e3_import_only.in.py").read_text()
    assert "host_callback" not in _code_only(migrate_source(text, Options(strategy="compat")).code)
    used = "from jax.experimental import host_callback as hcb\n\nhcb.id_print(1)\n"
    assert (
        migrate_source(used, Options(strategy="compat")).code
        == "from hcmigrate_compat import host_callback as hcb\n\nhcb.id_print(1)\n"
    )


def test_comments_inside_rewritten_calls_and_dropped_parameters_are_kept():
    """A comment on a kept parameter whose comma goes with the dropped `transforms`, and a
    comment inside `barrier_wait(...)`, stay in the code (issue 17)."""
    text = (
        "from jax.experimental import host_callback as hcb\n\n\n"
        "def tap(a,  # about a\n        transforms):\n    print(a)\n\n\n"
        "def f(x):\n    hcb.id_tap(tap, x)\n"
        "    hcb.barrier_wait(  # nothing to wait for\n    )\n"
        '    hcb.barrier_wait(logging_name="a",  # named\n    )\n'
        "    return x\n"
    )
    code = migrate_source(text).code
    for comment in ("# about a", "# nothing to wait for", "# named"):
        assert comment in code, code
    assert "transforms" not in code
    compile(code, "<migrated>", "exec")
