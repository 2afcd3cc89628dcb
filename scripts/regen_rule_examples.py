#!/usr/bin/env python3
"""Rewrite the `after` and `diagnostics` of every rule's examples (hcmigrate/rules/*.py) from
what the codemod now produces for their `before`, as scripts/regen_codemod_fixtures.py does for
the fixture pairs. Review the diff before committing: an example is a promise to the user.

    python scripts/regen_rule_examples.py          # rewrite the rule modules
    python scripts/regen_rule_examples.py --check  # exit 1 when an example is out of date
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import libcst as cst

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from hcmigrate import Options, migrate_source  # noqa: E402


def _string(text: str) -> cst.SimpleString:
    """`text` as a triple-quoted literal starting with a line continuation, as the examples
    are written."""
    escaped = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return cst.SimpleString(f'"""\\\n{escaped}"""')


def _tuple(lines: list[str]) -> cst.Tuple:
    elements = [
        cst.Element(
            cst.SimpleString(repr(line) if '"' in line else f'"{line}"'),
            comma=cst.Comma(),
        )
        for line in lines
    ]
    return cst.Tuple(elements)


class UpdateExamples(cst.CSTTransformer):
    def __init__(self):
        self.changed = 0

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if not (isinstance(updated.func, cst.Name) and updated.func.value == "Example"):
            return updated
        args = {a.keyword.value: a for a in updated.args if a.keyword is not None}
        before = cst.Module(body=[]).code_for_node(args["before"].value)
        options = {}
        if "options" in args:
            options = eval(cst.Module(body=[]).code_for_node(args["options"].value))  # noqa: S307
        result = migrate_source(eval(before), Options(**options))  # noqa: S307
        diagnostics = [d.brief() for d in result.diagnostics]
        old_after = eval(cst.Module(body=[]).code_for_node(args["after"].value))  # noqa: S307
        old_diags = list(eval(cst.Module(body=[]).code_for_node(args["diagnostics"].value)))  # noqa: S307
        if old_after == result.code and old_diags == diagnostics:
            return updated
        self.changed += 1
        new_args = []
        for a in updated.args:
            key = a.keyword.value if a.keyword is not None else None
            if key == "after" and old_after != result.code:
                a = a.with_changes(value=_string(result.code))
            elif key == "diagnostics" and old_diags != diagnostics:
                a = a.with_changes(value=_tuple(diagnostics))
            new_args.append(a)
        return updated.with_changes(args=new_args)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    stale = 0
    for path in sorted((REPO / "hcmigrate" / "rules").glob("*.py")):
        text = path.read_text()
        if "Example(" not in text:
            continue
        transformer = UpdateExamples()
        new = cst.parse_module(text).visit(transformer)
        if transformer.changed:
            stale += transformer.changed
            print(f"{path.relative_to(REPO)}: {transformer.changed} example(s) updated")
            if not args.check:
                path.write_text(new.code)
                # (the new tuples print on one line: the project's formatter lays them out)
                subprocess.run(
                    [sys.executable, "-m", "ruff", "format", "-q", str(path)], check=False
                )
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
