"""Statements the rules add around the statement that holds a site, TODO comments, and the
comments a rewrite moved out of a call it split.

Edits are keyed by the original statement and applied when the rewrite leaves it (all sites
inside it are done by then). Each edit belongs to the site that asked for it: an edit of a site
whose rewrite an enclosing rewrite dropped (see hcmigrate.codemod.context) is not applied.
"""

from __future__ import annotations

import libcst as cst

TODO_PREFIX = "# TODO(hcmigrate): "


class StatementEdits:
    def __init__(self):
        # id(original statement) -> [(owner, small statement or TODO text)]; owner: a site
        # record (hcmigrate.codemod.context.SiteRecord), None for edits no site owns
        self._before: dict[int, list] = {}
        self._after: dict[int, list] = {}
        self._replaced: dict[int, list] = {}
        self._todos: dict[int, list] = {}
        self._comments: dict[int, list] = {}  # comments of a rewritten call its output lost

    def insert_before(self, statement: cst.CSTNode, small, owner=None) -> None:
        self._before.setdefault(id(statement), []).append((owner, small))

    def insert_after(self, statement: cst.CSTNode, small, owner=None) -> None:
        self._after.setdefault(id(statement), []).append((owner, small))

    def replace(self, statement: cst.CSTNode, owner=None) -> None:
        """The statement is replaced by what insert_before queued."""
        self._replaced.setdefault(id(statement), []).append((owner, True))

    def add_todo(self, statement: cst.CSTNode, text: str, owner=None) -> None:
        self._todos.setdefault(id(statement), []).append((owner, text))

    def keep_comments(self, statement: cst.CSTNode, comments: list[cst.Comment], owner) -> None:
        """Comments of a site that its rewrite does not hold (`return (  # c0 ...  id_print(x)
        # c1 ...)` split into the print and `return x`) go above the statement, in order."""
        self._comments.setdefault(id(statement), []).extend((owner, c) for c in comments)

    @staticmethod
    def _live(entries) -> list:
        return [item for owner, item in entries if owner is None or not owner.retracted]

    def apply(self, original: cst.CSTNode, result):
        """The statement with the TODO comments and the statements queued around it (or what
        replaces it); anything else unchanged."""
        if isinstance(
            result, (cst.SimpleStatementLine, cst.BaseCompoundStatement)
        ) and not isinstance(result, cst.FunctionDef):
            result = self.with_todos(original, result)
        key = id(original)
        before = self._live(self._before.get(key, ()))
        after = self._live(self._after.get(key, ()))
        if not (before or after) or not isinstance(result, cst.SimpleStatementLine):
            return result
        if self._live(self._replaced.get(key, ())):
            # the queued lines replace the statement; its comments go with them
            lines = [
                _replacing(result, s) if i == len(before) - 1 else _line(s)
                for i, s in enumerate(before)
            ]
            lines[0] = lines[0].with_changes(leading_lines=result.leading_lines)
        elif before:  # the comments above the statement stay above the first new line
            lines = [_line(s) for s in before]
            first = lines[0]
            blank = list(first.leading_lines)  # (a def's blank line above it)
            if result.leading_lines and result.leading_lines[0].comment is None:
                blank = []  # (already a blank line above the statement)
            lines[0] = first.with_changes(leading_lines=[*blank, *result.leading_lines])
            # (a def is followed by a blank line, as formatters lay it out)
            after_def = (
                [cst.EmptyLine(indent=False)] if isinstance(lines[-1], cst.FunctionDef) else []
            )
            lines.append(result.with_changes(leading_lines=after_def))
        else:
            lines = [result]
        return cst.FlattenSentinel(_apart_from_defs([*lines, *(_line(s) for s in after)]))

    def with_todos(self, original: cst.CSTNode, updated):
        """The statement with the comments kept from its sites, then the TODOs, above it."""
        messages = self._live(self._todos.get(id(original), ()))
        kept = self._live(self._comments.get(id(original), ()))
        if not (messages or kept) or not hasattr(updated, "leading_lines"):
            return updated
        existing = {
            line.comment.value for line in updated.leading_lines if line.comment is not None
        }
        new = [
            cst.EmptyLine(comment=cst.Comment(TODO_PREFIX + m))
            for m in dict.fromkeys(messages)
            if TODO_PREFIX + m not in existing
        ]
        kept_lines = [cst.EmptyLine(comment=comment) for comment in kept]
        return updated.with_changes(leading_lines=[*updated.leading_lines, *kept_lines, *new])


def _apart_from_defs(lines: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """A blank line after each def the lines hold, as formatters lay them out."""
    for i in range(1, len(lines)):
        previous, line = lines[i - 1], lines[i]
        blank = line.leading_lines and line.leading_lines[0].comment is None
        if isinstance(previous, cst.FunctionDef) and not blank:
            lines[i] = line.with_changes(
                leading_lines=[cst.EmptyLine(indent=False), *line.leading_lines]
            )
    return lines


def _line(statement) -> cst.BaseStatement:
    """A queued statement as a line of its own (a small statement gets a statement line)."""
    if isinstance(statement, cst.BaseStatement):
        return statement
    return cst.SimpleStatementLine(body=[statement])


def _replacing(result: cst.SimpleStatementLine, statement) -> cst.BaseStatement:
    """The last statement that replaces `result`, keeping its end-of-line comment (a compound
    statement, a guarded import, keeps it on the first line of its body)."""
    if not isinstance(statement, cst.BaseStatement):
        return result.with_changes(body=[statement])
    comment = result.trailing_whitespace
    if comment.comment is None or not isinstance(statement, cst.Try):
        return statement
    first, *rest = statement.body.body
    if isinstance(first, cst.SimpleStatementLine):
        first = first.with_changes(trailing_whitespace=comment)
    return statement.with_changes(body=statement.body.with_changes(body=[first, *rest]))
