"""Print the README's rule table from the rule registry (tests check the README matches)."""

from __future__ import annotations

from hcmigrate.rules.registry import registry


def table() -> str:
    rows = [
        "| code | name | level | legacy form | modern form | what changes at run time |",
        "|---|---|---|---|---|---|",
    ]
    for rule in registry().rules:
        cells = [
            rule.code,
            rule.name,
            rule.level.value,
            f"`{rule.legacy}`",
            f"`{rule.modern}`",
            rule.behaviour_note or rule.summary,
        ]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(table(), end="")
