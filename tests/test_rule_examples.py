"""Every rule carries its examples, and they run: each example's `before` migrates to exactly
its `after`, with exactly its diagnostics, and the result is stable. Every registered code is
produced by at least one example whose diagnostics are compared (a rule's own, or a fixture
pair's NAME.diagnostics)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hcmigrate import Options, migrate_source
from hcmigrate.rules.registry import registry

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
EXAMPLES = [
    pytest.param(example, id=f"{rule.code}-{i}")
    for rule in registry().rules
    for i, example in enumerate(rule.examples)
]


@pytest.mark.parametrize("example", EXAMPLES)
def test_example(example):
    options = Options(**example.options)
    result = migrate_source(example.before, options)
    assert result.code == example.after
    assert [d.brief() for d in result.diagnostics] == list(example.diagnostics)
    again = migrate_source(result.code, options)
    assert again.code == result.code
    compile(result.code, "<example>", "exec")


def test_every_registered_code_is_produced_by_a_compared_example():
    produced = {
        line.split()[1]
        for rule in registry().rules
        for e in rule.examples
        for line in e.diagnostics
    }
    for expected in FIXTURES.glob("*.diagnostics"):
        produced |= {line.split()[1] for line in expected.read_text().splitlines()}
    missing = [rule.code for rule in registry().rules if rule.code not in produced]
    assert missing == []


def test_every_rule_has_an_example_of_its_own():
    assert [rule.code for rule in registry().rules if not rule.examples] == []
