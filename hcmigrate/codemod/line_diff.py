"""Which lines of a module the rewrite kept, in time linear in the module's lines.

`difflib.SequenceMatcher` (without its junk heuristic, which would hide repeated lines) costs
the product of the two lengths when lines repeat, and a module with many sites repeats lines
(`return x`, blank lines, the same tap): 300 taps cost 15 s in it. A rewrite keeps most
lines as they were and in order, so the match is anchored as patience diff anchors it: the
common head and tail, then the lines found once on each side, in an order both sides share
(the longest increasing run); the gaps between anchors are matched the same way, and only a
gap with no such line goes to difflib (small: a rewritten statement and what it replaced).
"""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Sequence

Opcode = tuple[str, int, int, int, int]  # (tag, i1, i2, j1, j2), as difflib's get_opcodes


def opcodes(a: Sequence[str], b: Sequence[str]) -> list[Opcode]:
    """`difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()`'s form for `a` -> `b`."""
    blocks: list[tuple[int, int, int]] = []
    _match(a, b, 0, len(a), 0, len(b), blocks)
    result: list[Opcode] = []
    i = j = 0
    for ai, bj, size in [*_merged(blocks), (len(a), len(b), 0)]:
        tag = "replace" if i < ai and j < bj else "delete" if i < ai else "insert" if j < bj else ""
        if tag:
            result.append((tag, i, ai, j, bj))
        if size:
            result.append(("equal", ai, ai + size, bj, bj + size))
        i, j = ai + size, bj + size
    return result


def _match(a, b, alo: int, ahi: int, blo: int, bhi: int, out: list) -> None:
    """Append to `out` the matching blocks (i, j, size) of a[alo:ahi] and b[blo:bhi], in order."""
    stack = [(alo, ahi, blo, bhi)]
    # (an explicit stack of ranges still to match and blocks found: deep gaps cost no recursion)
    while stack:
        item = stack.pop()
        if len(item) == 3:
            out.append(item)
            continue
        alo, ahi, blo, bhi = item
        head = 0
        while alo + head < ahi and blo + head < bhi and a[alo + head] == b[blo + head]:
            head += 1
        tail = 0
        while (
            alo + head < ahi - tail
            and blo + head < bhi - tail
            and a[ahi - 1 - tail] == b[bhi - 1 - tail]
        ):
            tail += 1
        work: list = []
        if head:
            work.append((alo, blo, head))
        inner = (alo + head, ahi - tail, blo + head, bhi - tail)
        if inner[0] < inner[1] and inner[2] < inner[3]:
            anchors = _unique_anchors(a, b, *inner)
            if anchors:
                i, j = inner[0], inner[2]
                for ai, bj in anchors:
                    work.append((i, ai, j, bj))
                    work.append((ai, bj, 1))
                    i, j = ai + 1, bj + 1
                work.append((i, inner[1], j, inner[3]))
            else:  # (no line found once on each side: a small gap, as difflib matches it)
                matcher = difflib.SequenceMatcher(
                    None, a[inner[0] : inner[1]], b[inner[2] : inner[3]], autojunk=False
                )
                for ai, bj, size in matcher.get_matching_blocks():
                    if size:
                        work.append((inner[0] + ai, inner[2] + bj, size))
        if tail:
            work.append((ahi - tail, bhi - tail, tail))
        stack.extend(reversed(work))


def _unique_anchors(a, b, alo: int, ahi: int, blo: int, bhi: int) -> list[tuple[int, int]]:
    """Pairs (i, j) of lines that occur once in a[alo:ahi] and once in b[blo:bhi], the longest
    run of them in the same order on both sides."""
    seen_a: dict[str, int] = {}
    for i in range(alo, ahi):
        seen_a[a[i]] = -1 if a[i] in seen_a else i
    seen_b: dict[str, int] = {}
    for j in range(blo, bhi):
        line = b[j]
        if seen_a.get(line, -1) >= 0:
            seen_b[line] = -1 if line in seen_b else j
    pairs = sorted((seen_a[line], j) for line, j in seen_b.items() if j >= 0)
    return _longest_increasing(pairs)


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of `pairs` (sorted by their first item) whose second items
    increase (patience sorting, n log n)."""
    tops: list[int] = []  # the smallest last j of an increasing run of each length
    top_index: list[int] = []
    previous: list[int] = []
    for k, (_, j) in enumerate(pairs):
        length = bisect.bisect_left(tops, j)
        if length == len(tops):
            tops.append(j)
            top_index.append(k)
        else:
            tops[length] = j
            top_index[length] = k
        previous.append(top_index[length - 1] if length else -1)
    run = []
    k = top_index[-1] if top_index else -1
    while k >= 0:
        run.append(pairs[k])
        k = previous[k]
    return run[::-1]


def _merged(blocks: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Adjacent matching blocks joined into one."""
    merged: list[tuple[int, int, int]] = []
    for i, j, size in blocks:
        if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
            merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + size)
        else:
            merged.append((i, j, size))
    return merged


def source_line(text: str, code: str, line: int) -> int:
    """The line of `text` that line `line` of its rewrite `code` comes from (code added above
    it, such as a module helper, shifts the rewrite's lines)."""
    for tag, i1, i2, j1, j2 in opcodes(text.splitlines(), code.splitlines()):
        if j1 < line <= j2:
            return i1 + min(line - j1, max(i2 - i1, 1))
    return line
