"""Lowering of a batched ``while_loop`` whose condition contains an outside call.

Under ``vmap`` a while loop whose predicate depends on the batch keeps iterating while any
element's predicate holds, and each element keeps the value of its last iteration for
which its own predicate held: the body runs on the whole batch and a per-element select
keeps the old carry where the predicate is false. This is what legacy host_callback did
(its taps saw the whole batch at every iteration, the results were the per-element ones).

JAX lowers a while loop with an ordered effect in its condition separately (the condition
runs once per iteration, carried as a value), and that lowering leaves out the
per-element select: every element would be updated while any predicate holds (``vmap`` of
``max(x, 2)`` written as a while loop gives ``x + n`` instead). JAX never reaches that
lowering with its own ordered IO effect (its batching rule refuses it), but compat's
effects are allowed under ``vmap``. So this module puts a lowering in front of JAX's for
``while_p``: only for a batched predicate whose condition carries one of compat's effects
it lowers the loop as

    pred = cond(carry)
    while any(pred):
        new = body(carry)
        new_pred = cond(new)
        carry = select(pred, new, carry)           # per element
        pred = pred & new_pred

which is what legacy's loop did (it moved the condition's taps to the end of the body and
carried the predicate): the condition runs once per iteration and its taps see the body's
output for the whole batch, finished elements included. Every other while loop goes to
JAX's own lowering unchanged. Internals (``while_p``, the lowering registry) are
version-guarded: without them nothing is installed and JAX's lowering stays.
"""

from __future__ import annotations

import functools

import numpy as np
from jax import lax
from jax.extend.core import jaxpr_as_fun
from jax.interpreters import mlir


def _select_batched(pred, new, old):
    """``new`` where the (batch-prefix) predicate holds, else ``old``."""
    pred = lax.broadcast_in_dim(pred, old.shape, tuple(range(pred.ndim)))
    return lax.select(pred, new, old)


def _batched_while(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts = args[:cond_nconsts]
    body_consts = args[cond_nconsts : cond_nconsts + body_nconsts]
    init = tuple(args[cond_nconsts + body_nconsts :])
    cond = jaxpr_as_fun(cond_jaxpr)
    body = jaxpr_as_fun(body_jaxpr)

    def loop_cond(state):
        pred, _ = state
        # lax.reduce, not lax.reduce_or: JAX 0.4.3x has no reduce_or
        return lax.reduce(pred, np.bool_(False), lax.bitwise_or, tuple(range(pred.ndim)))

    def loop_body(state):
        pred, carry = state
        new = body(*body_consts, *carry)
        new_pred = cond(*cond_consts, *new)[0]
        carry = tuple(_select_batched(pred, n, c) for n, c in zip(new, carry))
        return lax.bitwise_and(pred, new_pred), carry

    pred = cond(*cond_consts, *init)[0]
    _, out = lax.while_loop(loop_cond, loop_body, (pred, init))
    return list(out)


def install(own_effects) -> bool:
    """Put the lowering in front of JAX's for ``while_p``; True when installed."""
    try:
        from jax._src.lax.control_flow import loops

        while_p = loops.while_p
        entry = mlir._lowerings[while_p]
        jax_lowering = getattr(entry, "rule", entry)  # JAX >= 0.8 keeps rule entries
        jax_lowering = getattr(jax_lowering, "jax_lowering", jax_lowering)  # installed twice
    except Exception:  # pragma: no cover - internals moved: JAX's lowering stays
        return False
    own_effects = tuple(own_effects)

    def lowering(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
        params = dict(
            cond_jaxpr=cond_jaxpr,
            body_jaxpr=body_jaxpr,
            cond_nconsts=cond_nconsts,
            body_nconsts=body_nconsts,
        )
        batched = bool(cond_jaxpr.out_avals[0].shape)
        if batched and any(e in cond_jaxpr.effects for e in own_effects):
            fun = functools.partial(_batched_while, **params)
            return mlir.lower_fun(fun, multiple_results=True)(ctx, *args)
        return jax_lowering(ctx, *args, **params)

    lowering.jax_lowering = jax_lowering  # what it defers to (for tests and re-installs)
    mlir.register_lowering(while_p, lowering)
    return True
