"""A host function handed numpy copies of its arguments, written inline at the site.

Legacy gave host functions numpy arrays; modern callbacks give `jax.Array`, which a host
function may tell apart (`isinstance`, `.flags`, in-place writes, repr). `jax.tree.map(np.array,
arg)` gives each leaf as a writeable numpy array owning its data: legacy's arrays on GPU/TPU,
its CPU ones but for the read-only flag (docs/callback-semantics.md, "What the host function
receives"). The conversion is folded into the host function where it is a lambda that uses its
parameter once (`lambda a: show(a, ())` -> `lambda a: show(jax.tree.map(np.array, a), ())`), or
distinct parts of it (`a[0]`, `a[1]`: each part converted where it is read);
anything else is called by a one-parameter lambda (`show` -> `lambda x: show(jax.tree.map(
np.array, x))`). One expression per site, no module helper (issue 27).
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from hcmigrate.codemod.walk import Transformer, descendants, not_a_read
from hcmigrate.rules.nodes import constant_index

# nodes whose body may run several times, or later, or in a scope of its own
_NESTED_SCOPES = (
    cst.Lambda,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
    cst.GeneratorExp,
)


# (follows "the tap function" / "the callback": why such a site keeps the compat runtime)
LEGACY_ARRAYS = (
    "reads its arrays' `flags` (read-only on CPU under legacy and the compat runtime; "
    "writeable copies in a native rewrite)"
)


def reads_array_flags(body: cst.CSTNode) -> bool:
    """Does the code read numpy array flags (`print(x.flags.writeable)`, `if x.flags[...]`)?
    Only there do legacy's arrays, read-only on CPU, and the writeable copies a native rewrite
    hands over differ (but for a write legacy refused on CPU and allowed on GPU/TPU). Setting
    them is no read: `x.flags.writeable = True` before handing the buffer to C code worked on
    legacy's arrays, which owned their data, as on an owned copy (`np.array(x)`), and
    `x.setflags(...)` sets what it says on either."""
    set_flags = set()
    for n in descendants(body):
        if type(n) is cst.AssignTarget or type(n) is cst.AugAssign:
            target = n.target
            if type(target) in (cst.Attribute, cst.Subscript):
                flags = target.value
                if type(flags) is cst.Attribute and flags.attr.value == "flags":
                    set_flags.add(id(flags))
        elif type(n) is cst.Attribute and n.attr.value == "flags" and id(n) not in set_flags:
            return True
    return False


def called_with_numpy(
    func: cst.BaseExpression,
    copies: Callable[[cst.BaseExpression], cst.BaseExpression],
    parameter: Callable[[], str],
) -> cst.BaseExpression:
    """`func` (a host function called as `f(arg)`) called with `copies(arg)` instead of `arg`.
    `parameter()`: the name of a new lambda's parameter, asked only if one is made."""
    reads = _reads(func) if isinstance(func, cst.Lambda) else None
    if reads:
        return func.visit(_Replace({id(read): copies(read) for read in reads}))
    name = parameter()
    return cst.Lambda(
        params=cst.Parameters([cst.Param(cst.Name(name))]),
        body=cst.Call(callee(func), [cst.Arg(copies(cst.Name(name)))]),
    )


class _Replace(Transformer):
    """Replaces nodes (by identity) in one pass: `deep_replace` one at a time would rebuild
    the nodes around the first, and lose the others' identity."""

    def __init__(self, replacements: dict[int, cst.CSTNode]):
        super().__init__()
        self._replacements = replacements

    def on_leave(self, original_node, updated_node):
        return self._replacements.get(id(original_node), updated_node)


def without_result(func: cst.BaseExpression, parameter: Callable[[], str]) -> cst.BaseExpression:
    """`func` returning None (an io_callback with no result must get none; legacy ignored what
    a tap returned): `lambda a: (body, None)[1]`, where no def can stand before the site."""
    if not isinstance(func, cst.Lambda):
        name = parameter()
        func = cst.Lambda(
            params=cst.Parameters([cst.Param(cst.Name(name))]),
            body=cst.Call(callee(func), [cst.Arg(cst.Name(name))]),
        )
    body = func.body.with_changes(lpar=[], rpar=[]) if _parenthesized(func.body) else func.body
    return func.with_changes(
        body=cst.Subscript(
            cst.Tuple([cst.Element(body), cst.Element(cst.Name("None"))]),
            [cst.SubscriptElement(cst.Index(cst.Integer("1")))],
        )
    )


def callee(func: cst.BaseExpression) -> cst.BaseExpression:
    """`func` as the callee of a call: in parentheses unless it binds tighter than one."""
    if isinstance(func, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or _parenthesized(func):
        return func
    return func.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _parenthesized(node: cst.BaseExpression) -> bool:
    return bool(getattr(node, "lpar", ()))


def _reads(func: cst.Lambda) -> list[cst.BaseExpression] | None:
    """Where the lambda's body reads its first parameter, each place running at most once per
    call (not in a nested lambda or comprehension): its one read, or reads of distinct parts
    (`a[0]`, `a[1]`, `a['key']`: a copy of each part is that part of a copy of the whole);
    None where neither."""
    positional = [*func.params.posonly_params, *func.params.params]
    if not positional or any(p.default is None for p in positional[1:]):
        return None
    name = positional[0].name.value
    not_reads = set()  # (`obj.name`, `f(name=...)`: Names that are no read of a variable)
    nested = set()
    parts = {}  # id of a read -> `name[constant]` around it
    uses = []
    for node in descendants(func.body):
        if (name_only := not_a_read(node)) is not None:
            not_reads.add(id(name_only))
        elif isinstance(node, cst.NamedExpr):
            return None  # (`(name := ...)` rebinds it: a call cannot stand there)
        elif isinstance(node, _NESTED_SCOPES):
            nested.update(id(n) for n in descendants(node) if type(n) is cst.Name)
        elif isinstance(node, cst.Subscript) and constant_index(node) is not None:
            parts[id(node.value)] = node
        elif type(node) is cst.Name and node.value == name and id(node) not in not_reads:
            uses.append(node)
    if not uses or any(id(use) in nested for use in uses):
        return None
    if len(uses) == 1:
        return uses
    reads = [parts.get(id(use)) for use in uses]
    if None in reads or len({constant_index(r) for r in reads}) != len(reads):
        return None
    return reads
