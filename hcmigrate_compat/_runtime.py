"""The ``outside_call`` primitive behind ``hcmigrate_compat.host_callback``.

One JAX primitive carries both ``id_tap`` (``identity=True``) and ``call``
(``identity=False``), like legacy host_callback did. Its rules reproduce the legacy ones:

* batching: appends ``("batch", batch_dims)`` to ``transforms`` and binds again with the
  whole batch (one host call per batch, per vmap level; innermost level first);
* JVP: taps the primals only, tangents pass through (``call`` refuses, as legacy did);
* transpose: taps the cotangents with ``("transpose",)`` appended;
* effects: an ordered effect, so the calls keep program order and are never removed by
  dead-code elimination (inside a classic pmap on JAX 0.6/0.7, a twin primitive with an
  unordered effect; each equation keeps the effect of the primitive it was bound with).

Lowering has two implementations:

* fast (default): emits the host callback with
  ``jax.interpreters.mlir.emit_python_callback`` and hands the NumPy buffers to a host
  function built for the call (``_host``), registered in place of JAX's checking wrapper;
  a callback that takes the device gets it from the lowering's axis context. It touches
  JAX internals (axis contexts, the stablehlo dialect, ``dispatch``) and is therefore
  probed at import and version-guarded;
* public: lowers through ``jax.experimental.io_callback(ordered=True)`` with
  ``jax.interpreters.mlir.lower_fun``. Selected when ``HCMIGRATE_COMPAT_PUBLIC_ONLY=1`` or
  when the fast path's internals are unavailable. Under ``pmap``/``shard_map`` it cannot tell
  devices apart: the device passed is ``jax.local_devices()[device_index]``.
"""

from __future__ import annotations

import functools
import os
import types

import jax
import numpy as np
from jax.experimental import io_callback
from jax.interpreters import ad, batching, mlir

from . import _host, _tokens
from ._host import Failure, ResultAval  # noqa: F401  (re-exported)

try:  # jax >= 0.4.36
    from jax.extend.core import Primitive
except ImportError:  # pragma: no cover - very old jax
    from jax.core import Primitive  # type: ignore[no-redef]


_ENV_PUBLIC_ONLY = "HCMIGRATE_COMPAT_PUBLIC_ONLY"


def _env_public_only() -> bool:
    return os.environ.get(_ENV_PUBLIC_ONLY, "").strip().lower() not in ("", "0", "false", "no")


# --------------------------------------------------------------------------- effects
def _effect_of(fun):
    effects = list(jax.make_jaxpr(fun)().effects)
    if len(effects) != 1:  # pragma: no cover - would mean JAX changed its callbacks
        raise RuntimeError(f"compat: unexpected callback effects {effects}")
    return effects[0]


# The effects of ``io_callback(ordered=True)`` / ``io_callback(ordered=False)``, found
# through public API. The public lowering (which lowers through io_callback itself) must
# declare them. The ordered one is lowerable, allowed in control flow, shardable (pmap over
# several devices works), keeps program order and is never dead-code eliminated; but JAX
# refuses it in ``jax.checkpoint`` partial evaluation and in vmap-of-cond.
IO_EFFECT = _effect_of(lambda: io_callback(lambda: None, None, ordered=True))
IO_UNORDERED_EFFECT = _effect_of(lambda: io_callback(lambda: None, None, ordered=False))


def _own_effects():
    """The fast path's own effect types (JAX internals, probed; None when unavailable).

    Registered like the effect of ``io_callback(ordered=True)`` (lowerable, control flow,
    ordered, shardable) and additionally allowed in ``jax.checkpoint``/``remat`` and custom
    derivatives, like ``jax.debug.callback``'s: that is what legacy host_callback allowed
    (its primitive had no effect at all and was recomputed under remat). The unordered
    twin is used only inside ``pmap`` on JAX versions whose pmap refuses ordered effects.
    """
    try:
        from jax._src import effects as effects_lib

        class OutsideCallEffect(effects_lib.Effect):
            __str__ = __repr__ = lambda self: "OutsideCall"

        class OutsideCallUnorderedEffect(effects_lib.Effect):
            __str__ = __repr__ = lambda self: "OutsideCallUnordered"

        for kind in (OutsideCallEffect, OutsideCallUnorderedEffect):
            for name in (
                "lowerable_effects",
                "control_flow_allowed_effects",
                "remat_allowed_effects",
                "custom_derivatives_allowed_effects",
            ):
                getattr(effects_lib, name).add_type(kind)
        effects_lib.ordered_effects.add_type(OutsideCallEffect)
        effects_lib.shardable_ordered_effects.add_type(OutsideCallEffect)
        return OutsideCallEffect(), OutsideCallUnorderedEffect()
    except Exception:  # pragma: no cover - depends on the JAX version
        return None


JAX_VERSION = tuple(getattr(jax, "__version_info__", (0, 0, 0)))[:2]


# --------------------------------------------------------------------------- pmap on JAX < 0.8
def _pmap_refuses_ordered_effects() -> bool:
    """JAX 0.6.x/0.7.x: the classic ``pmap`` raises "Ordered effects not supported in pmap"
    (unless ``jax_pmap_shmap_merge`` is on); from 0.8 pmap is built on shard_map and accepts
    them."""
    if JAX_VERSION >= (0, 8):
        return False
    try:
        return not bool(jax.config.jax_pmap_shmap_merge)
    except AttributeError:  # pragma: no cover - no such flag: classic pmap
        return True


class _PmapProbe:
    """Tells whether the current trace is (inside) the body of a classic ``pmap``.

    Version-guarded use of internals: looks for pmap's tracing functions on the Python stack
    (only when some named axis is bound, which pmap always does). Without the internals it
    answers "not in pmap" (taps then stay ordered and pmap refuses them, as before).
    """

    def __init__(self):
        self.codes = frozenset()
        self.get_axis_env = None
        if not _pmap_refuses_ordered_effects():
            return
        codes = set()
        try:
            from jax._src import core as core_internal
            from jax._src.interpreters import partial_eval as pe
            from jax._src.interpreters import pxla

            for obj in (
                getattr(pxla, "stage_parallel_callable", None),
                getattr(getattr(pe, "DynamicJaxprTrace", None), "process_map", None),
                getattr(getattr(pe, "JaxprTrace", None), "process_map", None),
            ):
                code = getattr(obj, "__code__", None)
                if code is not None:
                    codes.add(code)
            self.get_axis_env = getattr(core_internal, "get_axis_env", None)
        except Exception:  # pragma: no cover - internals moved
            codes = set()
        self.codes = frozenset(codes)

    def in_pmap(self) -> bool:
        if not self.codes or not _pmap_refuses_ordered_effects():
            return False
        if self.get_axis_env is not None:
            try:
                if not self.get_axis_env().axis_sizes:
                    return False
            except Exception:  # pragma: no cover
                pass
        import sys

        f = sys._getframe(1)
        codes = self.codes
        while f is not None:
            if f.f_code in codes:
                return True
            f = f.f_back
        return False


_PMAP = _PmapProbe()


# --------------------------------------------------------------------------- fast-path internals
class _Internals:
    """JAX internals used by the fast lowering; ``ok`` is False when any is missing."""

    def __init__(self):
        self.ok = False
        self.error = None
        self.apply_primitive = None
        try:
            import inspect

            from jax.extend.mlir.dialects import stablehlo as hlo  # public in >= 0.4.36

            emit = getattr(mlir, "emit_python_callback", None)
            if emit is None:  # pragma: no cover
                from jax._src.callback import emit_python_callback as emit
            from jax._src import sharding_impls

            try:
                from jax._src.callback import _callback_op_sharding as op_sharding
            except ImportError:  # pragma: no cover - older layout
                op_sharding = None
            try:
                from jax._src import dispatch

                requires_devices = getattr(dispatch, "prim_requires_devices_during_lowering", None)
            except ImportError:  # pragma: no cover
                requires_devices = None
            try:
                from jax._src.dispatch import apply_primitive
            except ImportError:  # pragma: no cover
                apply_primitive = None
            self.hlo = hlo
            self.emit = emit
            self.apply_primitive = apply_primitive
            self.emit_has_returns_token = "returns_token" in inspect.signature(emit).parameters
            self.sharding_impls = sharding_impls
            self.op_sharding = op_sharding
            # (axis_context, sharding, avals_out) from JAX 0.5; (axis_context, sharding) before
            self.op_sharding_takes_avals = (
                op_sharding is not None and len(inspect.signature(op_sharding).parameters) >= 3
            )
            self.requires_devices = requires_devices
            self.u32 = jax.core.ShapedArray((), np.dtype(np.uint32))
            self.ok = True
        except Exception as e:  # pragma: no cover - depends on the JAX version
            self.error = e


_INTERNALS = _Internals()
TOKEN_RECOVERY = _tokens.install()
PUBLIC_ONLY = _env_public_only() or not _INTERNALS.ok
_OWN = None if PUBLIC_ONLY else _own_effects()
if _OWN is not None:
    ORDERED_EFFECT, UNORDERED_EFFECT = _OWN
else:  # public path (or no internals): io_callback's own effects
    ORDERED_EFFECT, UNORDERED_EFFECT = IO_EFFECT, IO_UNORDERED_EFFECT


def remat_supported() -> bool:
    """True when taps under ``jax.checkpoint`` + differentiation are re-run like legacy."""
    return _OWN is not None and _REMAT_RULE_INSTALLED


def fast_path_available() -> bool:
    return _INTERNALS.ok


def using_fast_path() -> bool:
    """True when this process lowers through the fast internal path (decided at import)."""
    return not PUBLIC_ONLY


# --------------------------------------------------------------------------- helpers
def canonicalize_dtype(dtype) -> np.dtype:
    return np.dtype(jax.dtypes.canonicalize_dtype(np.dtype(dtype)))


def _make_host(params, **how):
    """The host function of a call with these primitive params (see ``_host.make_host``)."""
    return _host.make_host(
        params["callback"],
        params["identity"],
        params["arg_treedef"],
        params.get("transforms", ()),
        params.get("result_treedef"),
        params.get("flat_results_aval", ()),
        canonicalize=canonicalize_dtype,
        **how,
    )


def _add_transform(params: dict, name: str, *transform_params) -> dict:
    new_transform = (name, *transform_params)
    return dict(params, transforms=(params.get("transforms", ()) + (new_transform,)))


# --------------------------------------------------------------------------- the primitives
def _abstract_eval(*avals, effect, identity, flat_results_aval=(), **params):
    if identity:
        return list(avals), {effect}
    return [jax.core.ShapedArray(a.shape, a.dtype) for a in flat_results_aval], {effect}


def _impl(prim, *args, **params):
    """Eager execution: compile the single primitive (as legacy did with apply_primitive)."""
    if jax.config.jax_disable_jit:
        host = _make_host(params, device=_local_device(params["device_index"]))
        res = host(*[np.asarray(a) for a in args])
        return list(args) if params["identity"] else [jax.numpy.asarray(r) for r in res]
    if _INTERNALS.apply_primitive is not None and _hashable(params):
        return _INTERNALS.apply_primitive(prim, *args, **params)
    # unhashable callback (or no JAX internals): compile without caching
    return jax.jit(functools.partial(_bind_flat, prim, params))(*args)


def _hashable(params) -> bool:
    try:
        hash(tuple(params.values()))
        return True
    except TypeError:
        return False


def _bind_flat(prim, params, *args):
    return prim.bind(*args, **params)


def _jvp_rule(prim, primals, tangents, **params):
    if not params["identity"]:
        raise NotImplementedError("JVP rule is implemented only for id_tap, not for call.")
    out_primals = prim.bind(*primals, **params)
    return list(out_primals), list(tangents)


def _transpose_rule(prim, cts, *args, **params):
    if not params["identity"]:
        raise NotImplementedError(
            "differentiation rules are implemented only for id_tap, not for call."
        )
    cts_instantiated = []
    for ct, arg in zip(cts, args):
        if type(ct) is ad.Zero:
            ct = ad.instantiate_zeros(ct)
        cts_instantiated.append(ct)
    res = prim.bind(*cts_instantiated, **_add_transform(params, "transpose"))
    return [r if ad.is_undefined_primal(a) else None for r, a in zip(res, args)]


def _batching_rule(prim, batched_args, batch_dims, **params):
    if not params["identity"]:
        raise NotImplementedError("batching rules are implemented only for id_tap, not for call.")
    res = prim.bind(*batched_args, **_add_transform(params, "batch", tuple(batch_dims)))
    return list(res), list(batch_dims)


def _make_primitive(effect):
    """An ``outside_call`` primitive whose equations carry ``effect``.

    The effect is a property of the primitive, never of the context an equation is checked
    in: re-inferring an equation's effects (``jax_enable_checks``, jaxpr checks inside
    ``pmap``) always gives back the effect it was bound with.
    """
    prim = Primitive("outside_call")
    prim.multiple_results = True
    prim.def_effectful_abstract_eval(functools.partial(_abstract_eval, effect=effect))
    prim.def_impl(functools.partial(_impl, prim))
    ad.primitive_jvps[prim] = functools.partial(_jvp_rule, prim)
    ad.primitive_transposes[prim] = functools.partial(_transpose_rule, prim)
    batching.primitive_batchers[prim] = functools.partial(_batching_rule, prim)
    return prim


# The primitive of every call, with the ordered effect.
outside_call_p = _make_primitive(ORDERED_EFFECT)
# Its twin with the unordered effect, bound only in the body of a classic pmap on the JAX
# versions whose pmap refuses ordered effects (0.6.x/0.7.x); prints the same in jaxprs.
outside_call_unordered_p = _make_primitive(UNORDERED_EFFECT)
OUTSIDE_CALL_PRIMITIVES = (outside_call_p, outside_call_unordered_p)


def primitive_to_bind():
    """The primitive a call bound now uses (decided once, when the call is traced)."""
    return outside_call_unordered_p if _PMAP.in_pmap() else outside_call_p


# --------------------------------------------------------------------------- remat
def _install_remat_rule() -> bool:
    """Partial-eval rule for ``jax.checkpoint``: recompute the call like legacy did.

    JAX's default keeps effectful equations in the forward pass only (their outputs become
    residuals). Legacy host_callback's primitive had no effect, so under remat it followed
    the checkpoint policy: with the default policy (nothing saveable) the tap runs in the
    forward pass and again when the residuals are rematerialised; a policy that saves it
    (``everything_saveable``) runs it once. Uses ``pe.partial_eval_jaxpr_custom_rules``
    (internal; version-guarded: without it taps under remat+grad are refused by JAX).
    """
    if PUBLIC_ONLY or _OWN is None:
        return False
    try:
        from jax._src.interpreters import partial_eval as pe

        rules = pe.partial_eval_jaxpr_custom_rules
        ensure_enum = pe.ensure_enum
        saveable_type = pe.SaveableType
        recompute_type = pe.RecomputeType
    except Exception:  # pragma: no cover - depends on the JAX version
        return False

    def rule(saveable, unks_in, inst_in, eqn):
        n_out = len(eqn.outvars)

        def residuals():
            return [
                v
                for v, inst in zip(eqn.invars, inst_in)
                if not inst and not isinstance(v, jax.core.Literal)
            ]

        if any(unks_in):
            return None, eqn, [True] * n_out, [True] * n_out, residuals()
        policy = ensure_enum(saveable(eqn.primitive, *[v.aval for v in eqn.invars], **eqn.params))
        if isinstance(policy, saveable_type) or not isinstance(policy, recompute_type):
            # saved (offloading is treated as saving): run once, outputs are residuals
            return eqn, None, [False] * n_out, [False] * n_out, []
        # recompute: run now and again when the residuals are rematerialised
        return eqn, eqn, [False] * n_out, [True] * n_out, residuals()

    for prim in OUTSIDE_CALL_PRIMITIVES:
        rules[prim] = rule
    return True


_REMAT_RULE_INSTALLED = _install_remat_rule()


# --------------------------------------------------------------------------- lowering
_CPU_DEVICE_INDEX_MSG = "The device_index feature on CPU works only when using outfeed."


def _local_device(device_index: int):
    """The local device `device_index` names, or a ValueError saying there is none."""
    devices = jax.local_devices()
    if not 0 <= device_index < len(devices):
        raise ValueError(
            f"device_index={device_index}, but this process has {len(devices)} local "
            f"device(s): {devices}"
        )
    return devices[device_index]


def _refuse_device_index_on_cpu(ctx, device_index: int) -> None:
    """Legacy refused `device_index != 0` on CPU unless outfeed carried the calls
    (JAX_HOST_CALLBACK_OUTFEED=1); with outfeed the call ran, passed that device."""
    if device_index == 0 or "cpu" not in ctx.module_context.platforms:
        return
    outfeed = os.environ.get("JAX_HOST_CALLBACK_OUTFEED", "").strip().lower()
    if outfeed in ("", "0", "false", "no"):
        raise ValueError(_CPU_DEVICE_INDEX_MSG)


class _DeviceSource:
    """How a lowered call learns the device it runs on, from the lowering's axis context.

    * jit (``ShardingContext``): the call runs once, with the whole array, on the first
      device of the computation (the maximal sharding JAX gives callbacks, as legacy did
      under pjit); the device is known when lowering, no operand is needed. XLA refuses
      ``partition_id`` in programs it partitions, so none is emitted there.
    * shard_map, and pmap on JAX >= 0.8 (``SPMDAxisContext``, all axes manual): once per
      device with its shard; ``partition_id`` indexes the mesh's devices.
    * classic pmap (``ReplicaAxisContext``, JAX < 0.8): once per device; ``replica_id``
      indexes the local devices, as legacy's lowering did.

    ``operand`` is None, ``"partition"`` or ``"replica"``; ``device(id)`` maps the
    operand's value (ignored when there is none) to a ``jax.Device``.
    """

    __slots__ = ("operand", "_devices", "_local")

    def __init__(self, axis_context):
        si = _INTERNALS.sharding_impls
        self.operand = "replica"
        self._devices = None
        self._local = None
        try:
            if isinstance(axis_context, si.SPMDAxisContext):
                self.operand = "partition"
                self._devices = tuple(axis_context.mesh.devices.flat)
            elif isinstance(axis_context, si.ShardingContext):
                self.operand = None
                if axis_context.device_assignment:
                    self._devices = (axis_context.device_assignment[0],)
        except Exception:  # pragma: no cover - internals moved: legacy's replica rule
            self.operand = "replica"

    def device(self, index: int = 0):
        devices = self._devices
        if devices is not None and index < len(devices):
            return devices[index]
        if self._local is None:
            self._local = jax.local_devices()
        return self._local[index] if index < len(self._local) else self._local[0]

    def operand_value(self):
        """The MLIR value to pass to the callback (None when the device is static)."""
        if self.operand == "partition":
            return _INTERNALS.hlo.PartitionIdOp().result
        if self.operand == "replica":
            return _INTERNALS.hlo.ReplicaIdOp().result
        return None


def _wants_device(callback) -> bool:
    """Whether the host function takes ``device=`` (unknown callables are given it)."""
    return getattr(callback, "call_with_device", True)


def _block_tokens(ctx) -> dict:
    """Per-module ``{mlir block: last token}`` (kept on the module context, dies with it)."""
    mc = ctx.module_context
    tokens = getattr(mc, "_compat_block_tokens", None)
    if tokens is None:
        tokens = {}
        setattr(mc, "_compat_block_tokens", tokens)
    return tokens


def _local_token(ctx):
    """Token chaining the unordered calls of one straight-line block in program order.

    Inside a classic pmap (JAX 0.6.x/0.7.x) the calls cannot carry JAX's ordered-effect
    tokens; chaining them by a token within each MLIR block keeps legacy program order
    there (across blocks, e.g. into a loop body, the structure of the program orders them).
    Returns None (no chaining) when the internals needed are unavailable.
    """
    try:
        from jax._src.lib.mlir import ir

        token = _block_tokens(ctx).get(ir.InsertionPoint.current.block)
        if token is None:
            token = _INTERNALS.hlo.create_token()
        return token
    except Exception:  # pragma: no cover - internals moved
        return None


def _set_local_token(ctx, token):
    try:
        from jax._src.lib.mlir import ir

        _block_tokens(ctx)[ir.InsertionPoint.current.block] = token
    except Exception:  # pragma: no cover
        pass


def _register_direct(module_context, emitted, host) -> bool:
    """Let the runtime call ``host`` itself instead of JAX's wrapper ``emitted``.

    ``emit_python_callback`` registers a wrapper that checks and converts the callback's
    results, and adds a frame for the token; ``host`` does those checks itself and takes
    the token, so replacing the registered function saves that work on every call. The
    registered list is JAX's (internal): when ``emitted`` is not in it, JAX's wrapper stays.
    Before JAX 0.6 the list holds the backend's compiled handles of the wrappers (the runtime
    takes nothing else), not Python functions: JAX's wrapper stays there too.
    """
    callbacks = getattr(module_context, "host_callbacks", None)
    if not isinstance(callbacks, list) or not isinstance(emitted, types.FunctionType):
        return False  # internals moved, or a compiled handle (JAX < 0.6)
    for i in range(len(callbacks) - 1, -1, -1):
        if callbacks[i] is emitted:
            callbacks[i] = host
            return True
    return False  # pragma: no cover


def _annotate_token_like_results(sharding, out_token) -> None:
    """Give the token of a callback with results the results' device (JAX 0.6/0.7, Shardy).

    There ``emit_python_callback`` annotates that token as replicated, which XLA refuses
    for side-effecting instructions ("side-effect HLO cannot have a replicated sharding"):
    ``call`` (and ``io_callback`` with results) under a jit over sharded inputs failed to
    compile. JAX 0.8 annotates it with the results' device, as done here.
    """
    si = _INTERNALS.sharding_impls
    try:
        token_sharding = si.SdyArray(
            mesh_shape=(),
            dim_shardings=[],
            logical_device_ids=sharding.shardings[0].logical_device_ids,
        )
        fixed = si.SdyArrayList([token_sharding, *sharding.shardings])
        from jax._src.interpreters import mlir as mlir_internal

        mlir_internal.set_sharding(out_token.owner, fixed)  # (op, sharding) before JAX 0.8
    except Exception:  # pragma: no cover - internals moved: JAX's annotation stays
        pass


def _fast_lowering(ctx, *args, device_index, **params):
    I = _INTERNALS
    _refuse_device_index_on_cpu(ctx, device_index)
    params = dict(params, device_index=device_index)
    identity, flat_results_aval = params["identity"], params.get("flat_results_aval", ())
    # Only a callback that asks for the device gets it: any other call lowers to the host
    # callback and its arrays alone.
    source = _DeviceSource(ctx.module_context.axis_context)
    wants_device = _wants_device(params["callback"])
    device_operand = source.operand_value() if wants_device else None
    if device_operand is not None:
        operands, in_avals = [device_operand, *args], [I.u32, *ctx.avals_in]
        how = dict(device_operand=True, device_of=source.device)
    else:
        operands, in_avals = list(args), list(ctx.avals_in)
        how = dict(device=source.device() if wants_device else None)
    out_avals = (
        [] if identity else [jax.core.ShapedArray(a.shape, a.dtype) for a in flat_results_aval]
    )
    sub_ctx = ctx.replace(avals_in=in_avals, avals_out=out_avals)
    sharding = None
    if I.op_sharding is not None:
        avals = (out_avals,) if I.op_sharding_takes_avals else ()
        sharding = I.op_sharding(ctx.module_context.axis_context, None, *avals)
    ordered = ORDERED_EFFECT in ctx.tokens_in.effects()
    if ordered:
        token = ctx.tokens_in.get(ORDERED_EFFECT)
    else:  # unordered effect (classic pmap on JAX < 0.8): a token chain local to the block
        token = _local_token(ctx)
    kwargs = dict(has_side_effect=True, sharding=sharding)
    if I.emit_has_returns_token:
        kwargs["returns_token"] = token is not None
    host = _make_host(params, **how)
    results, out_token, emitted = I.emit(
        sub_ctx, host, token, operands, in_avals, out_avals, **kwargs
    )
    _register_direct(
        ctx.module_context, emitted, _make_host(params, with_token=token is not None, **how)
    )
    if (
        out_avals
        and out_token is not None
        and JAX_VERSION < (0, 8)
        and type(sharding).__name__ == "SdyArrayList"
    ):
        _annotate_token_like_results(sharding, out_token)
    if ordered:
        ctx.set_tokens_out(ctx.tokens_in.update_tokens(mlir.TokenSet({ORDERED_EFFECT: out_token})))
    elif out_token is not None:
        _set_local_token(ctx, out_token)
    return list(args) if identity else list(results)


def _public_lowering(ctx, *args, device_index, **params):
    _refuse_device_index_on_cpu(ctx, device_index)
    params = dict(params, device_index=device_index)
    identity, flat_results_aval = params["identity"], params.get("flat_results_aval", ())
    host = _make_host(params, device=_local_device(device_index))

    def io_host(*arrays):
        res = host(*[np.asarray(a) for a in arrays])
        return None if identity else res

    result_shape = (
        None
        if identity
        else tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in flat_results_aval)
    )
    ordered = ORDERED_EFFECT in ctx.tokens_in.effects()

    def fun(*xs):
        out = io_callback(io_host, result_shape, *xs, ordered=ordered)
        return list(xs) if identity else list(out)

    return mlir.lower_fun(fun, multiple_results=True)(ctx, *args)


def _register(rule):
    import inspect

    kwargs = {}
    if "cacheable" in inspect.signature(mlir.register_lowering).parameters:
        kwargs["cacheable"] = False  # each lowering embeds its own host callback
    for prim in OUTSIDE_CALL_PRIMITIVES:
        mlir.register_lowering(prim, rule, **kwargs)


if not PUBLIC_ONLY:
    _register(_fast_lowering)
    if _OWN is not None:
        from . import _batched_while

        BATCHED_WHILE_FIXED = _batched_while.install(_OWN)
    if _INTERNALS.requires_devices is not None:
        try:
            _INTERNALS.requires_devices.update(OUTSIDE_CALL_PRIMITIVES)
        except Exception:  # pragma: no cover
            pass
else:  # pragma: no cover - depends on the JAX version
    _register(_public_lowering)
if PUBLIC_ONLY or _OWN is None:
    BATCHED_WHILE_FIXED = False  # io_callback's effect: JAX refuses vmap of such loops
