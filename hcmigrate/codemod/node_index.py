"""One cheap pass over a module: parents, names, calls, positions, and which local names can
be legacy.

The pass is libcst's own code generation (what printing the module costs) with hooks that
note, for every node, its parent and the token it starts at: a visitor walk costs more,
and libcst's ParentNodeProvider/PositionProvider far more. Positions (for diagnostics and
for linking libcst nodes to hcmigrate.codemod.scopes, which works on character offsets) are worked
out from the tokens only for the nodes asked about.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from contextlib import nullcontext
from itertools import accumulate
from typing import Callable

import libcst as cst
from libcst._nodes.internal import CodegenState

from hcmigrate.codemod.legacy_names import legacy_bindings
from hcmigrate.codemod.triggers import call_shape_matches
from hcmigrate.rules.nodes import dotted_name

_BLANK = " \t\r\n\f\\"
_NO_MODULE = cst.Module(body=[])


class _Printer(CodegenState):
    """libcst's code generation, minus the position recording it does for every node through a
    generator-based context manager (a no-op unless positions are asked for, yet a generator
    per node)."""

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        return _NO_POSITION


_NO_POSITION = nullcontext()


class _Recorder(_Printer):
    """Code generation that records each node's parent and first token.

    The hooks run once per node, so they are closures over local containers (no attribute
    look-ups)."""

    def __init__(self, module: cst.Module):
        super().__init__(
            default_indent=module.default_indent, default_newline=module.default_newline
        )
        stack: list[cst.CSTNode | None] = [None]
        parents: dict[int, cst.CSTNode | None] = {}
        starts: dict[int, int] = {}
        names: dict[int, cst.Name] = {}  # outside import statements, by first token
        import_names: list[cst.Name] = []
        calls: list[cst.Call] = []
        imports: list[cst.CSTNode] = []  # Import, ImportFrom and Try nodes
        tokens = self.tokens
        Name, Call, Import, ImportFrom, Try = (
            cst.Name,
            cst.Call,
            cst.Import,
            cst.ImportFrom,
            cst.Try,
        )
        import_kinds = (Import, ImportFrom)
        push, pop = stack.append, stack.pop
        in_import = [0]

        def before_codegen(node: cst.CSTNode) -> None:
            key = id(node)
            parents[key] = stack[-1]
            starts[key] = len(tokens)
            push(node)
            kind = type(node)
            if kind is Name:
                if in_import[0]:
                    import_names.append(node)
                else:
                    names[len(tokens)] = node
            elif kind is Call:
                calls.append(node)
            elif kind is Import or kind is ImportFrom:
                imports.append(node)
                in_import[0] += 1
            elif kind is Try:
                imports.append(node)

        def after_codegen(node: cst.CSTNode) -> None:
            if type(pop()) in import_kinds:
                in_import[0] -= 1

        self.before_codegen = before_codegen
        self.after_codegen = after_codegen
        self.parents, self.starts, self.names, self.import_names = (
            parents,
            starts,
            names,
            import_names,
        )
        self.calls, self.imports = calls, imports


class NodeIndex:
    def __init__(
        self,
        module: cst.Module,
        reexports: dict[str, str],
        unparsed_names: Callable[[], set[str]] | None = None,
    ):
        """`unparsed_names`: for a module with statements left unparsed
        (hcmigrate.codemod.partial_parse), what gives the names they hold (asked for only if needed)."""
        recorder = _Recorder(module)
        module._codegen(recorder)
        self.module = module
        self._tokens = recorder.tokens
        self.text = "".join(recorder.tokens)
        self._offsets: list[int] | None = None
        self._line_starts: list[int] | None = None
        self._starts = recorder.starts
        self.parents = recorder.parents
        self._names: set[str] | None = None
        self._unparsed_names = unparsed_names
        self._import_names = recorder.import_names
        self._name_by_token = recorder.names
        self.name_nodes = (
            recorder.names.values()
        )  # (names in import statements are never rewritten)
        self.import_nodes = recorder.imports
        self.calls: list[cst.Call] = recorder.calls
        found = legacy_bindings(recorder.imports, self.text, reexports)
        self.legacy_roots: set[str] = found.roots
        self.legacy_star = found.star  # `from jax.experimental.host_callback import *`
        self.star_names = found.star_names  # legacy names a re-exporter's star import binds
        self.guard_fallbacks: set[str] = found.guard_fallbacks  # `except ImportError: hcb = None`

    @property
    def names(self) -> set[str]:
        """Every name in the module (what a fresh name must avoid); worked out when first asked."""
        if self._names is None:
            self._names = {name.value for name in self._name_by_token.values()} | {
                name.value for name in self._import_names
            }
            if self._unparsed_names is not None:
                self._names |= self._unparsed_names()
        return self._names

    # ---------------------------------------------------------------- positions
    def is_original(self, node: cst.CSTNode) -> bool:
        return id(node) in self._starts

    def start_offset(self, node: cst.CSTNode) -> int | None:
        """Character offset of the node's first real token (its own parentheses, leading
        comments and whitespace skipped, as libcst's syntactic positions do)."""
        index = self._starts.get(id(node))
        if index is None:
            return None
        offsets = self._token_offsets()
        tokens = self._tokens
        while index < len(tokens) and _before_first_real_token(tokens[index]):
            index += 1
        return offsets[index]

    def _token_offsets(self) -> list[int]:
        if self._offsets is None:
            self._offsets = list(accumulate(map(len, self._tokens), initial=0))
        return self._offsets

    def print_module(self, module: cst.Module) -> tuple[str, str]:
        """(`module.code`, the part of it printed anew) for a rewrite of the surveyed module.

        Top-level statements the rewrite left as they were (the same objects) are copied from
        the source instead of printed again: in a long module that few rules touch, printing
        costs a good part of what parsing does. What is printed anew is the only part a
        self-check of the output needs to parse: each top-level statement starts at column 0
        with nothing open, so copied statements cannot change how the others parse. Modules
        whose grammar a `__future__` import changes (barry_as_FLUFL), or with no final line
        break, are printed (and checked) whole."""
        if not module.has_trailing_newline or "barry_as_FLUFL" in self.text:
            code = module.code
            return code, code
        state = _Printer(
            default_indent=module.default_indent, default_newline=module.default_newline
        )
        out = state.tokens
        fresh: list[str] = []
        for node in module.header:
            node._codegen(state)
        spans = self._top_level_spans()
        for statement in module.body:
            span = spans.get(id(statement))
            if span is not None:
                out.append(self.text[span[0] : span[1]])
            else:
                start = len(out)
                statement._codegen(state)
                fresh.append("".join(out[start:]))
        for node in module.footer:
            node._codegen(state)
        if not out:
            out.append(module.default_newline)
        return "".join(out), "".join(fresh)

    def _top_level_spans(self) -> dict[int, tuple[int, int]]:
        """(start, end) offsets in the source of each top-level statement: each ends where the
        next one, or the module's footer, starts."""
        offsets, starts, module = self._token_offsets(), self._starts, self.module
        bounds = [offsets[starts[id(statement)]] for statement in module.body]
        bounds.append(offsets[starts[id(module.footer[0])]] if module.footer else len(self.text))
        return {
            id(statement): (bounds[i], bounds[i + 1]) for i, statement in enumerate(module.body)
        }

    def start(self, node: cst.CSTNode) -> tuple[int, int] | None:
        """(line, column from 1) where an original node starts, else None."""
        start = self.start_offset(node)
        if start is None:
            return None
        line = self.line_at(start)
        return line, start - self._line_starts[line - 1] + 1

    def line_at(self, offset: int) -> int:
        """The line (from 1) of the source that holds `offset`. (Counting the line breaks
        before it, for every site, made a module's cost grow with the square of its sites.)"""
        if self._line_starts is None:
            text, starts, at = self.text, [0], self.text.find("\n")
            while at >= 0:
                starts.append(at + 1)
                at = text.find("\n", at + 1)
            self._line_starts = starts
        return bisect_right(self._line_starts, offset)

    def position(self, node: cst.CSTNode) -> tuple[int, int, int] | None:
        """(start line, start column from 1, end line) of an original node, else None."""
        start = self.start(node)
        if start is None:
            return None
        line, col = start
        raw_start = self._offsets[
            self._starts[id(node)]
        ]  # (parentheses and leading lines included)
        # End line: the node printed on its own has the same line breaks (only its indentation
        # differs). Printed on demand: recording every node's end costs more than it saves.
        code = _NO_MODULE.code_for_node(node).rstrip(_BLANK)
        return line, col, max(line, self.line_at(raw_start) + code.count("\n"))

    def name_at(self, offset: int) -> cst.Name | None:
        """The original Name node (outside imports) whose own token starts at `offset`."""
        offsets, tokens, by_token = self._token_offsets(), self._tokens, self._name_by_token
        first = index = bisect_left(offsets, offset)
        while index < len(tokens) and offsets[index] == offset:  # (empty tokens share an offset)
            name = by_token.get(index)
            if name is not None and not name.lpar:
                return name
            index += 1
        # A parenthesised name starts at its first "(": look back over parentheses and blanks.
        while first > 0 and _before_first_real_token(tokens[first - 1]):
            first -= 1
            name = by_token.get(first)
            if name is not None and name.lpar and self.start_offset(name) == offset:
                return name
        return None

    def worth_migrating(self, words) -> bool:
        """Could any rule apply? False for modules that only mention host_callback in passing
        (comments, other names) without importing it, and call nothing a modern-call trigger
        (`words`: hcmigrate.rules.spec.TriggerWords) matches: they are left alone without the
        costly analysis."""
        if self.legacy_roots or words.removed.may_use(self.text):
            return True
        for call in self.calls:
            tail = dotted_name(call.func) or ""
            if any(
                tail.endswith(trigger.callee_tail) and call_shape_matches(trigger, call)
                for trigger in words.modern
            ):
                return True
        return False


def _before_first_real_token(token: str) -> bool:
    """A node's own "(", a comment or a blank: what `start_offset` skips to reach its first
    real token."""
    return token == "(" or token.startswith("#") or not token.strip(_BLANK)


def root_name(node: cst.CSTNode) -> str | None:
    """`a` for `a`, `a.b.c`; None for anything else."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None
