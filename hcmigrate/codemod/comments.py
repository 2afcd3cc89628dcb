"""Never lose a comment when a whole statement line is removed.

Removing `hcb.stop_outfeed_receiver()` or an unused `import ... host_callback` must not take
the comments above it or after it along. A transformer that mixes this in moves them to
the next statement of the same block (or to the block's footer when none follows).
"""

from __future__ import annotations

import re
from collections import Counter

import libcst as cst

from hcmigrate.codemod.partial_parse import VerbatimStatement
from hcmigrate.codemod.walk import descendants

_LINT_PRAGMA = re.compile(r"#\s*(noqa|type:\s*ignore|pragma:|pylint:|isort:\s*skip)")


def comment_lines(line: cst.SimpleStatementLine) -> list[cst.EmptyLine]:
    kept = [empty for empty in line.leading_lines if empty.comment is not None]
    trailing = line.trailing_whitespace.comment
    if trailing is not None and not _LINT_PRAGMA.match(trailing.value):
        # (a `# noqa: E402` or `# type: ignore` spoke of the removed line only)
        kept.append(cst.EmptyLine(comment=trailing))
    return kept


def comments_in(node: cst.CSTNode) -> list[cst.Comment]:
    """The comments inside `node`, in source order."""
    return [n for n in descendants(node) if type(n) is cst.Comment]


def comments_lost(before: cst.CSTNode, after: list[cst.CSTNode]) -> list[cst.Comment]:
    """The comments of `before` that none of the nodes `after` holds (each text counted as
    often as it occurs), in order; lint pragmas spoke of their line and are not kept."""
    own = comments_in(before)
    if not own:  # (most sites: no walk of what replaced them)
        return []
    left = Counter(c.value for node in after for c in comments_in(node))
    lost = []
    for comment in own:
        if left[comment.value] > 0:
            left[comment.value] -= 1
        elif not _LINT_PRAGMA.match(comment.value):
            lost.append(comment)
    return lost


class KeepCommentsOfRemovedLines:
    """Mixin for CSTTransformers (put it before the transformer class in the bases). A transformer
    that overrides on_visit/on_leave must call super() in them."""

    # Optional predicate: subtrees it rejects hold nothing to change and are not walked.
    descend = None

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.descend is not None and not self.descend(node):
            return False
        self.track_block_enter(node)
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):
        if self.descend is not None and not self.descend(original_node):
            # not walked, but a statement still takes the comments of a removed line above it
            return self.attach_orphan_comments(original_node, updated_node)
        result = self.attach_orphan_comments(
            original_node, super().on_leave(original_node, updated_node)
        )
        self.track_block_exit(original_node)
        return result

    def leave_SimpleStatementLine(self, original_node, updated_node):
        return self.keep_comments_of_removed(original_node, updated_node)

    def leave_IndentedBlock(self, original_node, updated_node):
        return _no_blank_line_first(
            original_node, self.flush_orphan_comments(original_node, updated_node)
        )

    def leave_Module(self, original_node, updated_node):
        return self.flush_orphan_comments(original_node, updated_node)

    def _orphans(self) -> dict[int, list[cst.EmptyLine]]:
        if not hasattr(self, "_orphan_comments"):
            self._orphan_comments = {}
            self._blocks = []
        return self._orphan_comments

    def track_block_enter(self, node: cst.CSTNode) -> None:
        self._orphans()
        if isinstance(node, (cst.Module, cst.IndentedBlock)):
            self._blocks.append(node)

    def track_block_exit(self, node: cst.CSTNode) -> None:
        if isinstance(node, (cst.Module, cst.IndentedBlock)):
            self._blocks.pop()

    def _current_block(self) -> int:
        """The innermost block being visited: the parent block of a statement being left."""
        self._orphans()
        return id(self._blocks[-1]) if self._blocks else 0

    def keep_comments_of_removed(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ):
        """Call from leave_SimpleStatementLine: if every small statement is gone, stash comments."""
        if updated.body:
            return updated
        lines = comment_lines(original)
        blank = _leading_blank_lines(original)
        if lines or blank:
            stash = self._orphans().setdefault(self._current_block(), [])
            if not stash:  # (the blank lines that set the removed line apart stay)
                stash.extend(cst.EmptyLine(indent=False) for _ in range(blank))
            stash.extend(lines)
        return cst.RemovalSentinel.REMOVE

    def attach_orphan_comments(self, original: cst.CSTNode, updated):
        """Call from on_leave of every statement: prepend comments stashed in its block."""
        if not self._orphans() or not isinstance(
            updated, (cst.SimpleStatementLine, cst.BaseCompoundStatement)
        ):
            return updated  # (nothing stashed: the common case, checked first as it is cheapest)
        lines = self._orphans().pop(self._current_block(), None)
        if not lines:
            return updated
        own = list(updated.leading_lines)
        if isinstance(updated, VerbatimStatement) and not own:
            return _into_verbatim(updated, lines)
        if any(line.comment is not None for line in lines):
            return updated.with_changes(leading_lines=[*lines, *own])
        # only blank lines: as many as the removed line or this one had, not both
        extra = max(0, len(lines) - _leading_blank_lines(updated))
        return updated.with_changes(leading_lines=[*lines[:extra], *own])

    def flush_orphan_comments(self, original: cst.CSTNode, updated):
        """Call from leave_IndentedBlock / leave_Module: comments with no statement after them."""
        lines = self._orphans().pop(id(original), None)
        lines = [line for line in lines or () if line.comment is not None]
        if not lines:
            return updated
        return updated.with_changes(footer=[*lines, *updated.footer])


def _no_blank_line_first(original: cst.IndentedBlock, updated: cst.IndentedBlock):
    """A block whose first statement was removed does not start with the blank lines that
    stood between it and the next one."""
    if not updated.body or not original.body or updated.body[0] is original.body[0]:
        return updated
    first = updated.body[0]
    lines = list(getattr(first, "leading_lines", ()))
    if not lines or lines[0].comment is not None or _starts_blank(original.body[0]):
        return updated
    while lines and lines[0].comment is None:
        lines.pop(0)
    return updated.with_changes(body=[first.with_changes(leading_lines=lines), *updated.body[1:]])


def _leading_blank_lines(statement: cst.CSTNode) -> int:
    return _leading_blank_lines_of(getattr(statement, "leading_lines", ()))


def _leading_blank_lines_of(lines) -> int:
    count = 0
    for line in lines:
        if line.comment is not None:
            break
        count += 1
    return count


def _starts_blank(statement: cst.CSTNode) -> bool:
    lines = getattr(statement, "leading_lines", ())
    return bool(lines) and lines[0].comment is None


def _into_verbatim(statement: VerbatimStatement, lines: list[cst.EmptyLine]) -> VerbatimStatement:
    """A top-level statement kept as text, with `lines` from a removed line above it: blank
    lines only where its text does not start with as many."""
    if any(line.comment is not None for line in lines):
        return statement.with_changes(leading_lines=lines)
    text = statement.text
    body = text.lstrip("\r\n")
    prefix = text[: len(text) - len(body)]
    blank = prefix.count("\n") or prefix.count("\r")
    return statement.with_changes(leading_lines=lines[: max(0, len(lines) - blank)])
