"""JAX102: keywords removed from JAX functions: `jnp.clip(x, a_min=..., a_max=...)` /
`jnp.clip(a=...)` (JAX 0.10), `jnp.reshape(x, newshape=...)`.

Where the project allows a JAX older than the new keyword (`min=`/`max=`, 0.4.27; `shape=`,
0.4.28), the arguments are passed by position instead, which every release accepts. The rows of
hcmigrate.jax_removals say which keywords, their replacements and their places.
"""

from __future__ import annotations

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.jax_removals import version
from hcmigrate.rules.context import RemovedApiSite, RuleContext
from hcmigrate.rules.removed_api_rewrite import code_of, register
from hcmigrate.rules.spec import Example, RemovedJaxApi, Rule, handles

CLIP = register(
    Rule(
        code="JAX102",
        name="removed-keywords",
        level=Level.FIXED,
        legacy="jnp.clip(x, a_min=0.0, a_max=1.0)",
        modern="jnp.clip(x, min=0.0, max=1.0)",
        summary="Removed keywords: `jnp.clip`'s `a_min`, `a_max` -> `min`, `max`, `a=` (the "
        "array, positional-only now) -> positional; `jnp.reshape`'s `newshape` -> `shape`; where "
        "the project allows a JAX without the new keyword, or states no floor (the example), all "
        "of them -> positional arguments.",
        examples=(
            Example(
                before="""\
import jax.numpy as jnp
import numpy as np

y = jnp.clip(jnp.arange(5), a_min=1, a_max=3)
z = np.clip(np.arange(5), a_min=1, a_max=3)
""",
                after="""\
import jax.numpy as jnp
import numpy as np

y = jnp.clip(jnp.arange(5), 1, 3)
z = np.clip(np.arange(5), a_min=1, a_max=3)
""",
                diagnostics=(
                    "4:5 JAX102 [fixed] `jnp.clip(jnp.arange(5), a_min=1, a_max=3)` -> `jnp.clip(jnp.arange(5), 1, 3)`",
                ),
            ),
            Example(
                title="the project allows jax 0.4.26",
                before="""\
import jax.numpy as jnp

y = jnp.clip(jnp.arange(5), a_min=1, a_max=3)
""",
                after="""\
import jax.numpy as jnp

y = jnp.clip(jnp.arange(5), 1, 3)
""",
                diagnostics=(
                    "3:5 JAX102 [fixed] `jnp.clip(jnp.arange(5), a_min=1, a_max=3)` -> `jnp.clip(jnp.arange(5), 1, 3)`",
                ),
                options={"target_jax": (0, 4, 26)},
            ),
            Example(
                title="`jnp.reshape(newshape=...)`",
                before="""\
import jax.numpy as jnp

y = jnp.reshape(jnp.arange(6), newshape=(2, 3))
""",
                after="""\
import jax.numpy as jnp

y = jnp.reshape(jnp.arange(6), (2, 3))
""",
                diagnostics=(
                    "3:5 JAX102 [fixed] `jnp.reshape(jnp.arange(6), newshape=(2, 3))` -> `jnp.reshape(jnp.arange(6), (2, 3))`",
                ),
            ),
        ),
    )
)


@handles(RemovedJaxApi(CLIP.code), reports=(CLIP,))
def rewrite(site: RemovedApiSite, ctx: RuleContext) -> cst.Call | None:
    call: cst.Call = site.updated
    via = site.via  # (hcmigrate.codemod.removed_aliases.Alias: the callee is a binding)
    if via is not None and not via.certain:
        ctx.report(
            CLIP,
            site.original,
            f"`{code_of(site.original)}`: `{via.spelled}` may be `{site.row.name}` (bound or "
            f"passed at line {via.line}), whose keyword `{site.row.keyword}` was removed in JAX "
            f"{site.row.removed_in}, but may be something else (another binding, or another "
            f"caller's function): {site.row.advice}",
            level=Level.MANUAL,
        )
        return None
    rows = {row.keyword: row for row in site.row_group}
    removed = [a for a in call.args if a.keyword is not None and a.keyword.value in rows]
    if all(
        rows[a.keyword.value].replacement is not None  # (`a=`: no keyword replaces it)
        # (by position where the declared floor predates the keyword: every release has it)
        and ctx.declared_at_least(version(rows[a.keyword.value].replacement_since))
        for a in removed
    ):
        renamed = {
            id(a): a.with_changes(keyword=cst.Name(rows[a.keyword.value].replacement))
            for a in removed
        }
        new = call.with_changes(args=[renamed.get(id(a), a) for a in call.args])
    elif site.partial:  # (`partial(f, kw=...)`: f's first arguments come at the call)
        ctx.report(
            CLIP,
            site.original,
            f"`{code_of(site.original)}`: {site.row.advice}, but the project allows a JAX "
            "without the new keyword and `functools.partial` cannot bind it by position; "
            "write the call by hand",
            level=Level.MANUAL,
        )
        return None
    else:
        new = _positional(call, rows)
        if new is None:
            ctx.report(
                CLIP,
                site.original,
                f"`{code_of(site.original)}`: {site.row.advice}, but an argument before these "
                "is missing; write the call by hand",
                level=Level.MANUAL,
            )
            return None
    bound = ""
    if via is not None:
        where = f"`{via.exported}`" if via.exported else f"line {via.line}"
        bound = f" (`{via.spelled}` is `{site.row.name}`: {where})"
    ctx.report(CLIP, site.original, f"`{code_of(site.original)}` -> `{code_of(new)}`{bound}")
    return new


def _positional(call: cst.Call, rows) -> cst.Call | None:
    """The call with the removed keywords passed by position (None: a gap before one)."""
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if len(positional) != sum(1 for a in call.args if a.keyword is None):
        return None  # (*args)
    by_position = {
        rows[a.keyword.value].position: a
        for a in call.args
        if a.keyword is not None and a.keyword.value in rows
    }
    defaults = {row.position: row.default for row in rows.values() if row.default is not None}
    args = list(positional)
    while by_position:
        if len(args) in by_position:
            arg = by_position.pop(len(args))
            args.append(arg.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT))
        elif len(args) in defaults:  # (`clip(x, a_max=1)`: `clip(x, None, 1)`)
            args.append(cst.Arg(cst.parse_expression(defaults[len(args)])))
        else:
            return None
    others = [a for a in call.args if a.keyword is not None and a.keyword.value not in rows]
    ordered = args + others
    # The call's own commas in order (a filled-in default takes the one before it, less its
    # comment), the last argument's trailing comma kept.
    between = [a.comma for a in call.args[:-1]] or [cst.Comma(whitespace_after=_SPACE)]
    between += [_uncommented(between[-1])] * (len(ordered) - 1 - len(between))
    commas = between[: len(ordered) - 1] + [call.args[-1].comma]
    return call.with_changes(args=[a.with_changes(comma=c) for a, c in zip(ordered, commas)])


_SPACE = cst.SimpleWhitespace(" ")


def _uncommented(comma: cst.Comma) -> cst.Comma:
    """The comma without the comment that may follow it on its line."""
    after = comma.whitespace_after
    if isinstance(after, cst.ParenthesizedWhitespace):
        return comma.with_changes(
            whitespace_after=after.with_changes(first_line=cst.TrailingWhitespace())
        )
    return comma
