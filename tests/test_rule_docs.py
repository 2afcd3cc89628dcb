"""What is derived from the rule records cannot go stale: README's rule table and the
pre-filter's trigger table are what scripts/rules_table.py writes from the registry."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rules_table():
    return load_script("rules_table")


def test_derived_files_are_up_to_date(rules_table):
    from hcmigrate.rules.registry import registry

    for path, text in rules_table.derived_files(registry()).items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(REPO)} is stale: run python scripts/rules_table.py --write"
        )


def test_the_prefilter_table_holds_every_trigger():
    from hcmigrate.rules.registry import registry
    from hcmigrate.rules.trigger_table import TRIGGERS

    assert set(TRIGGERS) == {handler.trigger for handler in registry().handlers}
