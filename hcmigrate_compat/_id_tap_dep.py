"""``id_tap_dep_p``: the legacy primitive that ties a value to a tap's output (identity on its
first operand; the second is a dependency only), which libraries reached into (chex's
dependency chain of value assertions).

JAX's own host_callback dropped it in 0.4.16, so on the JAX releases where
``hcmigrate_compat.host_callback`` is JAX's own module (0.4.26 to 0.4.33) that module lacks
it while the compat runtime (0.4.34 and later) has it: the one name this package adds to
JAX's module, so that a migrated library runs across its whole declared JAX range
(``hcmigrate_compat.__init__``). Defined once here, for both.
"""

from __future__ import annotations

try:
    from jax.extend.core import Primitive as _Primitive
except ImportError:  # pragma: no cover
    from jax.core import Primitive as _Primitive  # type: ignore[no-redef]

from jax.interpreters import ad as _ad, batching as _batching, mlir as _mlir

id_tap_dep_p = _Primitive("id_tap_dep")
id_tap_dep_p.multiple_results = False
id_tap_dep_p.def_impl(lambda r, _: r)
id_tap_dep_p.def_abstract_eval(lambda r_a, _: r_a)
_mlir.register_lowering(id_tap_dep_p, lambda ctx, r, _: [r])


def _id_tap_dep_jvp(primals, tangents):
    tangents_instantiated = tuple(
        _ad.instantiate_zeros(t) if type(t) is _ad.Zero else t for t in tangents
    )
    return (
        id_tap_dep_p.bind(primals[0], primals[1]),
        id_tap_dep_p.bind(tangents_instantiated[0], tangents_instantiated[1]),
    )


def _id_tap_dep_transpose(ct, arg_res, arg_tap):
    if _ad.is_undefined_primal(arg_res):
        ct_res = _ad.instantiate_zeros(ct) if type(ct) is _ad.Zero else ct
    else:
        ct_res = None
    if _ad.is_undefined_primal(arg_tap):
        aval = arg_tap.aval
        ct_tap = _ad.Zero(aval)
    else:
        ct_tap = None
    return ct_res, ct_tap


def _id_tap_dep_batch(args, dims):
    import jax.numpy as jnp

    r, t = args
    dr, dt = dims
    if dr is None and dt is not None:
        size = t.shape[dt]
        r = jnp.broadcast_to(r, (size,) + jnp.shape(r))
        dr = 0
    return id_tap_dep_p.bind(r, t), dr


_ad.primitive_jvps[id_tap_dep_p] = _id_tap_dep_jvp
_ad.primitive_transposes[id_tap_dep_p] = _id_tap_dep_transpose
_batching.primitive_batchers[id_tap_dep_p] = _id_tap_dep_batch
