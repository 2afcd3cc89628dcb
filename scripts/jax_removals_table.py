"""Write the table of removed JAX APIs (hcmigrate.jax_removals) into docs/jax-removals.md.

    python scripts/jax_removals_table.py            # print the table
    python scripts/jax_removals_table.py --write    # rewrite it in docs/jax-removals.md

Only the part between the markers is written; the rest of the page is prose kept by hand.
tests/test_jax_removals_facts.py fails when the page's table is not what this writes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "jax-removals.md"
BEGIN = "<!-- BEGIN GENERATED TABLE: scripts/jax_removals_table.py -->"
END = "<!-- END GENERATED TABLE -->"
_TABLE = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.S)


def code(text: str) -> str:
    """`text` as inline code (with double backticks when it holds one)."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def api(row) -> str:
    from hcmigrate.jax_removals import Kind

    if row.kind is Kind.KEYWORD:
        return code(f"{row.name}({row.keyword}=...)")
    if row.kind is Kind.METHOD:
        return code(row.name.replace("jax.Array.", "x."))
    if row.kind is Kind.BEHAVIOUR:
        return f"{code(row.name)} values"
    if row.kind is Kind.CALL_BEHAVIOUR:
        return f"{code(row.name + '(...)')} results"
    return code(row.name)


def replacement(row) -> str:
    from hcmigrate.jax_removals import Kind

    if row.replacement is None:
        return "positional" if row.kind is Kind.KEYWORD and row.mechanical else "—"
    if row.kind is Kind.KEYWORD:
        return code(f"{row.replacement}=")
    if row.kind is Kind.METHOD and re.match(r"\w", row.replacement):
        return code(f"x.{row.replacement}")
    return code(row.replacement)


def table() -> str:
    from hcmigrate.jax_removals import REMOVED_APIS

    rows = [
        "| API | kind | deprecated in | removed in | use instead | since | mechanical | rule "
        "| notes | evidence |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in REMOVED_APIS:
        cells = [
            api(row),
            row.kind.value,
            row.deprecated_in or "—",
            row.removed_in,
            replacement(row),
            row.replacement_since or ("—" if replacement(row) == "—" else "any"),
            "yes" if row.mechanical else "no",
            row.rule or "—",
            row.advice,
            row.evidence,
        ]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"


def page(text: str) -> str:
    """The page's text with the table as the module has it."""
    return _TABLE.sub(lambda m: f"{BEGIN}\n{table()}{END}", text)


def main(argv: list[str]) -> int:
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    if "--write" not in argv:
        print(table(), end="")
        return 0
    text = PAGE.read_text(encoding="utf-8")
    if page(text) != text:
        PAGE.write_text(page(text), encoding="utf-8")
        print(f"wrote {PAGE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
