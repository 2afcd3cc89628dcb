"""Which diagnostics a module may report: --select/--ignore and suppression comments."""

from __future__ import annotations

import re

import libcst as cst

from hcmigrate.options import Options
from hcmigrate.codemod.node_index import NodeIndex
from hcmigrate.diagnostics import Diagnostic, Level
from hcmigrate.rules.spec import Rule

_SUPPRESS_ALL = re.compile(r"#\s*hcmigrate:\s*ignore\b")
_NOQA = re.compile(
    r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE
)


class SiteSkipped(Exception):
    """Raised by a report for a site its rule may not touch (deselected, or suppressed)."""


def selected(options: Options, code: str) -> bool:
    """Does --select/--ignore let rule `code` report?"""

    def hit(codes) -> bool:
        return any(code.startswith(c) for c in codes)

    if options.ignore and hit(options.ignore):
        return False
    return options.select is None or hit(options.select)


class Reporter:
    def __init__(self, index: NodeIndex, options: Options):
        self._index = index
        self.options = options
        self._has_suppressions = bool(_SUPPRESS_ALL.search(index.text) or _NOQA.search(index.text))
        self._lines = index.text.splitlines() if self._has_suppressions else []

    def selected(self, code: str) -> bool:
        return selected(self.options, code)

    def suppressed(self, node: cst.CSTNode, code: str) -> bool:
        """Does a `# hcmigrate: ignore` or `# noqa[: code]` comment on the node's lines keep
        rule `code` off it?"""
        if not self._has_suppressions:
            return False  # (the common case: no node's end line to work out)
        position = self._index.position(node)
        if position is None:
            return False
        for text in self._lines[position[0] - 1 : position[2]]:
            if _SUPPRESS_ALL.search(text):
                return True
            noqa = _NOQA.search(text)
            if noqa and (
                noqa.group("codes") is None
                or code in re.split(r"[\s,]+", noqa.group("codes").upper())
            ):
                return True
        return False

    def check(self, rule: Rule, node: cst.CSTNode) -> None:
        """Raise SiteSkipped when `rule` may not touch `node`."""
        if not self.selected(rule.code) or self.suppressed(node, rule.code):
            raise SiteSkipped
        if self.options.dropped_sites and self._dropped(rule, node):
            raise SiteSkipped

    def _dropped(self, rule: Rule, node: cst.CSTNode) -> bool:
        """Is `node` a site whose rewrite would not compile (Options.dropped_sites)?"""
        start = self._index.start(node)
        return start is not None and any(
            (code, line, col) == (rule.code, *start)
            for code, line, col, _ in self.options.dropped_sites
        )

    def diagnostic(
        self,
        rule: Rule,
        node: cst.CSTNode | None,
        message: str,
        level: Level | None,
        site: cst.CSTNode | None = None,
    ) -> Diagnostic:
        """The diagnostic at `node` (a node the rule built has no position: the site's then)."""
        position = self._index.start(node) if node is not None else None
        if position is None and site is not None:
            position = self._index.start(site)
        line, col = position or (1, 1)
        return Diagnostic(rule.code, message, level or rule.level, line, col)
