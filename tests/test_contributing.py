"""docs/contributing.md's promise: adding a rule for a new legacy keyword is one rule module and
its examples. The page's worked example, registered from a folder outside the package, is
dispatched (before the general rule of its function), its examples run, and the derived files
(README's table, docs/rules.md, the pre-filter's triggers) pick it up."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import hcmigrate.rules as rules_package
from hcmigrate import migrate_source
from hcmigrate.rules import registry as registry_module
from test_rule_docs import load_script

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "contributing.md"


def _worked_example() -> tuple[str, str]:
    found = re.search(r"```python file=hcmigrate/rules/(\w+)\.py\n(.*?)```", PAGE.read_text(), re.S)
    return found.group(1), found.group(2)


@pytest.fixture
def with_worked_example(tmp_path):
    name, code = _worked_example()
    (tmp_path / f"{name}.py").write_text(code)
    shipped = {rule.code for rule in registry_module.registry().rules}
    rules_package.__path__.append(str(tmp_path))
    registry_module.registry.cache_clear()
    try:
        yield registry_module.registry(), shipped
    finally:
        rules_package.__path__.remove(str(tmp_path))
        sys.modules.pop(f"hcmigrate.rules.{name}", None)
        registry_module.registry.cache_clear()


def test_the_worked_example_is_one_module_that_the_codemod_then_applies(with_worked_example):
    registry, shipped = with_worked_example
    (rule,) = [r for r in registry.rules if r.code not in shipped]
    assert rule.examples
    for example in rule.examples:
        result = migrate_source(example.before)
        assert result.code == example.after
        assert [d.brief() for d in result.diagnostics] == list(example.diagnostics)
    # A keyword trigger is narrower: the call without the keyword still goes to HCB401.
    plain = migrate_source(
        "from jax.experimental import host_callback as hcb\nhcb.barrier_wait()\n"
    )
    assert [d.code for d in plain.diagnostics] == ["HCB001", "HCB401"]
    # The derived files pick it up when they are written again.
    derived = load_script("rules_table").derived_files(registry)
    texts = {path.name: text for path, text in derived.items()}
    assert f"| {rule.code} | {rule.name} |" in texts["README.md"]
    assert f"## {rule.code} {rule.name}" in texts["rules.md"]
    assert (
        "LegacyCall(function='barrier_wait', keyword='logging_name')" in texts["trigger_table.py"]
    )


def test_the_worked_example_is_not_shipped():
    name, _ = _worked_example()
    assert not (REPO / "hcmigrate" / "rules" / f"{name}.py").exists()
