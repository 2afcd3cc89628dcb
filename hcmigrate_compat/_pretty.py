"""A tiny Wadler/Lindig pretty printer, identical in layout to the one legacy
``host_callback.id_print`` used (``jax._src.pretty_printer`` of JAX 0.4.30, width 80,
no colours, no annotations). Only ``text``, ``concat``, ``brk``, ``group``, ``nest`` and
``join`` are needed. Kept here so that the runtime does not depend on JAX internals.
"""

from __future__ import annotations

_TEXT, _CONCAT, _BREAK, _GROUP, _NEST = range(5)
_FLAT, _BREAK_MODE = 0, 1


class Doc:
    __slots__ = ("kind", "a", "b")

    def __init__(self, kind, a=None, b=None):
        self.kind = kind
        self.a = a
        self.b = b

    def __add__(self, other: "Doc") -> "Doc":
        return concat([self, other])

    def __str__(self) -> str:
        return _format(self, 80)


_NIL = Doc(_CONCAT, [])


def text(s: str) -> Doc:
    return Doc(_TEXT, s)


def concat(docs) -> Doc:
    docs = list(docs)
    if len(docs) == 1:
        return docs[0]
    return Doc(_CONCAT, docs)


def brk(s: str = " ") -> Doc:
    return Doc(_BREAK, s)


def group(doc: Doc) -> Doc:
    return Doc(_GROUP, doc)


def nest(n: int, doc: Doc) -> Doc:
    return Doc(_NEST, doc, n)


def join(sep: Doc, docs) -> Doc:
    docs = list(docs)
    if not docs:
        return _NIL
    xs = [docs[0]]
    for d in docs[1:]:
        xs.append(sep)
        xs.append(d)
    return concat(xs)


def _fits(width: int, agenda) -> bool:
    while width >= 0 and agenda:
        i, m, doc = agenda.pop()
        k = doc.kind
        if k == _TEXT:
            width -= len(doc.a)
        elif k == _CONCAT:
            agenda.extend((i, m, d) for d in reversed(doc.a))
        elif k == _BREAK:
            if m == _BREAK_MODE:
                return True
            width -= len(doc.a)
        elif k == _NEST:
            agenda.append((i + doc.b, m, doc.a))
        elif k == _GROUP:
            agenda.append((i, _FLAT, doc.a))
    return width >= 0


def _format(doc: Doc, width: int) -> str:
    lines = []
    agenda = [(0, _BREAK_MODE, doc)]
    k = 0
    line = ""
    while agenda:
        i, m, doc = agenda.pop()
        kind = doc.kind
        if kind == _TEXT:
            line += doc.a
            k += len(doc.a)
        elif kind == _CONCAT:
            agenda.extend((i, m, d) for d in reversed(doc.a))
        elif kind == _BREAK:
            if m == _BREAK_MODE:
                lines.append(line)
                line = " " * i
                k = i
            else:
                line += doc.a
                k += len(doc.a)
        elif kind == _NEST:
            agenda.append((i + doc.b, m, doc.a))
        elif kind == _GROUP:
            if _fits(width - k, [(i, _FLAT, doc.a)]):
                agenda.append((i, _FLAT, doc.a))
            else:
                agenda.append((i, _BREAK_MODE, doc.a))
    lines.append(line)
    return "\n".join(lines)
