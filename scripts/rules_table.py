"""Write what is derived from the rule records: README's rule table, the rule reference
(docs/rules.md, with every rule's examples) and the pre-filter's trigger table
(hcmigrate/rules/trigger_table.py, which must not import the rules: they import libcst).

    python scripts/rules_table.py            # print the README table
    python scripts/rules_table.py --write    # rewrite the derived files

tests/test_rule_docs.py fails when a derived file is not what this writes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from hcmigrate.rules.registry import Registry, registry

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
RULES_PAGE = REPO / "docs" / "rules.md"
TRIGGER_TABLE = REPO / "hcmigrate" / "rules" / "trigger_table.py"
_README_TABLE = re.compile(r"(<!-- rules-table:start -->\n)(.*)(<!-- rules-table:end -->)", re.S)


def code(text: str) -> str:
    """`text` as inline code (with double backticks when it holds one)."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def readme_table(rules: Registry) -> str:
    rows = [
        "| code | name | level | legacy form | modern form | what changes at run time |",
        "|---|---|---|---|---|---|",
    ]
    for rule in rules.rules:
        cells = [
            rule.code,
            rule.name,
            rule.level.value,
            code(rule.legacy),
            code(rule.modern),
            rule.behaviour_note or rule.summary,
        ]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"


def readme(rules: Registry, text: str) -> str:
    """README.md's text with the rule table of `rules`."""
    return _README_TABLE.sub(lambda m: m.group(1) + readme_table(rules) + m.group(3), text)


def rules_page(rules: Registry) -> str:
    out = [
        "# Rules",
        "",
        "Every rule of the codemod, with the examples it carries (each one is run by the test",
        "suite: `before` migrates to exactly `after`, with exactly those diagnostics). Written",
        "from the rule records by `python scripts/rules_table.py --write`; do not edit.",
        "",
        "Levels: `fixed` (rewritten, nothing observable changes), `fixed-with-behaviour-note`",
        "(rewritten, a documented difference remains), `compat-fallback` (pointed at the compat",
        "runtime, legacy semantics kept), `manual` (left for a human), `note` (information only:",
        "nothing rewritten and nothing to do; never counted as fixed, never fails a run).",
        "`--select`/`--ignore` take codes or prefixes; `# noqa: HCBxxx` and `# hcmigrate: ignore`",
        "keep a line as it is.",
        "",
        *(
            f"- [{r.code} {r.name}](#{r.code.lower()}-{r.name}) ({r.level.value})"
            for r in rules.rules
        ),
    ]
    for rule in rules.rules:
        out += ["", f"## {rule.code} {rule.name}", "", rule.summary, ""]
        out.append(f"- Level: `{rule.level.value}`")
        out.append(f"- Legacy form: {code(rule.legacy)}")
        out.append(f"- Modern form: {code(rule.modern)}")
        if rule.behaviour_note:
            out.append(f"- What changes at run time: {rule.behaviour_note}")
        for example in rule.examples:
            title = f": {example.title}" if example.title else ""
            options = ", ".join(f"{k}={v!r}" for k, v in example.options.items())
            out += ["", f"### Example{title}", ""]
            if options:
                out += [f"With `Options({options})`:", ""]
            out += ["```python", example.before.rstrip("\n"), "```", "", "becomes", ""]
            out += ["```python", example.after.rstrip("\n") or "# (empty)", "```", ""]
            out += ["```text", *example.diagnostics, "```"]
    return "\n".join(out) + "\n"


def trigger_table(rules: Registry) -> str:
    triggers = sorted({repr(handler.trigger) for handler in rules.handlers})
    kinds = sorted({t.split("(", 1)[0] for t in triggers})
    lines = [
        '"""The trigger of every rewrite of every rule, for the pre-filter (hcmigrate.prefilter),',
        "which runs before libcst is imported and so cannot import the rules.",
        "",
        "Written by `python scripts/rules_table.py --write` from the rule modules; do not edit.",
        '"""',
        "",
        f"from hcmigrate.rules.spec import {', '.join(kinds)}",
        "",
        "TRIGGERS = (",
        *(f"    {t}," for t in triggers),
        ")",
    ]
    return "\n".join(lines) + "\n"


def derived_files(rules: Registry) -> dict[Path, str]:
    """Each derived file and the text it must have."""
    return {
        README: readme(rules, README.read_text(encoding="utf-8")),
        RULES_PAGE: rules_page(rules),
        TRIGGER_TABLE: trigger_table(rules),
    }


def main(argv: list[str]) -> int:
    rules = registry()
    if "--write" not in argv:
        print(readme_table(rules), end="")
        return 0
    for path, text in derived_files(rules).items():
        if (path.read_text(encoding="utf-8") if path.exists() else None) != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
