#!/usr/bin/env python3
"""Measure what each host-callback spelling does in each JAX context, on real JAX releases.

Every probe is a tiny program run in its own child process of the measured interpreter: one
spelling (a legacy `host_callback` call on jax 0.4.30, or a modern callback) inside one context
(jit, vmap, grad, a loop, pmap, ...), or one of the focused probes (what the host function
receives, whether its return value matters, ordering between callback kinds, purity in loops,
when the call has run, device pinning). A probe records whether it worked (or the exception's
type and first line), every call of the host function (argument types, dtypes, shapes, numpy
flags, legacy transforms), whether the computed value equals the same program with the callback
replaced by plain jnp code, and what was printed.

    python scripts/measure_callback_facts.py               # all three interpreters, write
                                                           #   docs/callback_facts.json and
                                                           #   the tables in docs/callback-semantics.md
    python scripts/measure_callback_facts.py --role oldest # re-measure one, keep the others
    python scripts/measure_callback_facts.py --render      # only regenerate the tables
    python scripts/measure_callback_facts.py --check       # exit 1 if the tables are stale

Interpreters (roles): `current` is this Python's JAX, `oldest` the cached jax 0.6.2 environment,
`legacy` the cached jax 0.4.30 reference with the real host_callback (both from
hcmigrate.legacy_env, created on first use). `--python ROLE=PATH` points a role elsewhere.
Children are forked from a server that has imported jax but not started a backend (`--isolation
exec` starts a fresh interpreter per probe instead; both give the same data). CPU devices are
forced with XLA_FLAGS=--xla_force_host_platform_device_count=N before jax is imported; the whole
grid runs with 4 devices and again with 1, so the data says where the device count matters.

This file is also the probe server: `--serve` (stdin: probe ids, stdout: one JSON line each)
and `--probe ID OUT` run inside the measured interpreter and import only the standard library,
numpy and jax there.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "docs" / "callback_facts.json"
DOC = REPO / "docs" / "callback-semantics.md"
BEGIN = "<!-- BEGIN GENERATED TABLES: scripts/measure_callback_facts.py -->"
END = "<!-- END GENERATED TABLES -->"

OLDEST_JAX = "0.6.2"  # the oldest JAX the project supports (pyproject: jax>=0.6)
ROLES = ("current", "oldest", "legacy")
DEVICE_COUNTS = (4, 1)
PROBE_TIMEOUT = 90.0
ORDER_REPEATS = 5

# ----------------------------------------------------------------------------------------------
# Probe side: runs inside the measured interpreter.
# ----------------------------------------------------------------------------------------------

jax = jnp = lax = np = io_callback = hcb = None  # bound by _load_jax() in the probe server


def _load_jax() -> None:
    global jax, jnp, lax, np, io_callback, hcb
    import warnings

    warnings.simplefilter("ignore")
    import jax as jax_
    import jax.numpy as jnp_
    import numpy as np_
    from jax import lax as lax_
    from jax.experimental import io_callback as io_callback_

    jax, jnp, lax, np, io_callback = jax_, jnp_, lax_, np_, io_callback_
    try:
        from jax.experimental import host_callback as hcb_
    except ImportError:
        hcb_ = None
    # The legacy module exists (as a stub) until 0.7; only the real one has id_tap working.
    hcb = hcb_ if hcb_ is not None and hasattr(hcb_, "outside_call_p") else None


class Unavailable(Exception):
    """The context or spelling does not exist in this JAX release."""


class Recorder:
    """The host functions of one probe, and what they saw."""

    def __init__(self):
        self.calls = []
        self.lock = threading.Lock()

    def record(self, args, transforms=None, device=None, reprs=False):
        leaves = [leaf for arg in args for leaf in _leaves(arg)]
        entry = {"args": [describe(leaf) for leaf in leaves]}
        if reprs:
            entry["reprs"] = [repr(leaf).split("(")[0] for leaf in leaves]
        if transforms is not None:
            entry["transforms"] = [name for name, _ in transforms]
        if device is not None:
            entry["device"] = int(device.id)
        with self.lock:
            self.calls.append(entry)

    # Modern host functions: f(*args).
    def tap(self):
        def f(*args):
            self.record(args)

        return f

    def double(self):
        def f(*args):
            self.record(args)
            return np.asarray(args[0]) * 2

        return f

    # Legacy host functions: tap(arg, transforms[, device=]) and call(arg).
    def legacy_tap(self):
        def f(arg, transforms, device=None):
            self.record((arg,), transforms, device)

        return f

    def legacy_double(self):
        def f(arg):
            self.record((arg,))
            return np.asarray(arg) * 2

        return f


def _leaves(arg):
    if isinstance(arg, (tuple, list)):
        return [leaf for item in arg for leaf in _leaves(item)]
    if isinstance(arg, dict):
        return [leaf for key in sorted(arg) for leaf in _leaves(arg[key])]
    return [arg]


def type_name(value) -> str:
    if jax is not None and isinstance(value, jax.Array):
        return "jax.Array"
    kind = type(value)
    if kind.__module__ == "numpy":
        return "np." + kind.__name__
    return kind.__name__


def describe(leaf) -> str:
    """`TYPE DTYPE[SHAPE]`, and for numpy arrays whether writeable and whether it owns its data:
    `np.ndarray float32[3] read-only owndata`."""
    text = type_name(leaf)
    if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
        text += f" {leaf.dtype}[{','.join(map(str, leaf.shape))}]"
    if isinstance(leaf, np.ndarray):
        text += " writeable" if leaf.flags.writeable else " read-only"
        text += " owndata" if leaf.flags.owndata else " view"
    return text


# Spellings: emit(x, rec) puts one callback on the array x inside traced code and returns what
# flows on; `ref` is the same computation in plain jnp, to check the values that come out.

SPELLINGS = {}


def spelling(name, code, kind, ref="x", prints=False):
    def register(emit):
        SPELLINGS[name] = {"emit": emit, "code": code, "kind": kind, "ref": ref, "prints": prints}
        return emit

    return register


REFS = {"x": lambda x: x, "2x": lambda x: x * 2, "x+1": lambda x: x + 1}


def _shape_of(x):
    return jax.ShapeDtypeStruct(x.shape, x.dtype)


@spelling("io_ord", "io_callback(f, None, x, ordered=True)", "modern")
def _io_ord(x, rec):
    io_callback(rec.tap(), None, x, ordered=True)
    return x


@spelling("io_unord", "io_callback(f, None, x, ordered=False)", "modern")
def _io_unord(x, rec):
    io_callback(rec.tap(), None, x, ordered=False)
    return x


@spelling("io_ord_res", "y = io_callback(f, shape, x, ordered=True)", "modern", ref="2x")
def _io_ord_res(x, rec):
    return io_callback(rec.double(), _shape_of(x), x, ordered=True)


@spelling("io_unord_res", "y = io_callback(f, shape, x, ordered=False)", "modern", ref="2x")
def _io_unord_res(x, rec):
    return io_callback(rec.double(), _shape_of(x), x, ordered=False)


@spelling("dbg_cb", "jax.debug.callback(f, x)", "modern")
def _dbg_cb(x, rec):
    jax.debug.callback(rec.tap(), x)
    return x


@spelling("dbg_cb_ord", "jax.debug.callback(f, x, ordered=True)", "modern")
def _dbg_cb_ord(x, rec):
    jax.debug.callback(rec.tap(), x, ordered=True)
    return x


@spelling("dbg_print", 'jax.debug.print("{}", x)', "modern", prints=True)
def _dbg_print(x, rec):
    jax.debug.print("<P>{}</P>", x)
    return x


@spelling("dbg_print_ord", 'jax.debug.print("{}", x, ordered=True)', "modern", prints=True)
def _dbg_print_ord(x, rec):
    jax.debug.print("<P>{}</P>", x, ordered=True)
    return x


@spelling(
    "pure_used",
    'y = jax.pure_callback(f, shape, x, vmap_method="sequential")',
    "modern",
    ref="2x",
)
def _pure_used(x, rec):
    return jax.pure_callback(rec.double(), _shape_of(x), x, vmap_method="sequential")


@spelling(
    "pure_unused",
    'jax.pure_callback(f, shape, x, vmap_method="sequential")  # result dropped',
    "modern",
)
def _pure_unused(x, rec):
    jax.pure_callback(rec.double(), _shape_of(x), x, vmap_method="sequential")
    return x


@spelling(
    "io_dev0_ord",
    "io_callback(f, None, x, ordered=True, sharding=SingleDeviceSharding(devices()[0]))",
    "modern",
)
def _io_dev0_ord(x, rec):
    sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    io_callback(rec.tap(), None, x, ordered=True, sharding=sharding)
    return x


@spelling(
    "io_dev0_res",
    "y = io_callback(f, shape, x, sharding=SingleDeviceSharding(devices()[0]))",
    "modern",
    ref="2x",
)
def _io_dev0_res(x, rec):
    sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    return io_callback(rec.double(), _shape_of(x), x, sharding=sharding)


@spelling("id_tap_stmt", "hcb.id_tap(f, x)  # result dropped", "legacy")
def _id_tap_stmt(x, rec):
    hcb.id_tap(rec.legacy_tap(), x)
    return x


@spelling("id_tap", "y = hcb.id_tap(f, x)", "legacy")
def _id_tap(x, rec):
    return hcb.id_tap(rec.legacy_tap(), x)


@spelling("id_tap_result", "y = hcb.id_tap(f, x, result=x + 1)", "legacy", ref="x+1")
def _id_tap_result(x, rec):
    return hcb.id_tap(rec.legacy_tap(), x, result=x + 1)


@spelling("id_print", "y = hcb.id_print(x)", "legacy", prints=True)
def _id_print(x, rec):
    return hcb.id_print(x, tag="P")


@spelling("call", "y = hcb.call(f, x, result_shape=x)", "legacy", ref="2x")
def _call(x, rec):
    return hcb.call(rec.legacy_double(), x, result_shape=_shape_of(x))


# Contexts: run(emit) -> output, where emit is a function of one array. Inputs are small
# float32 arrays with no zeros (a callback that silently returns zeros shows as a wrong value).

CONTEXTS = {}


def context(name, code, devices=False):
    def register(run):
        CONTEXTS[name] = {"run": run, "code": code, "multi_device": devices}
        return run

    return register


def _data(*shape):
    size = int(np.prod(shape))
    return np.arange(1, size + 1, dtype=np.float32).reshape(shape)


def _ident(x):
    return x


@context("eager", "emit(x)")
def _eager(emit):
    return emit(jnp.asarray(_data(3)))


@context("jit", "jit(emit)(x)")
def _jit(emit):
    return jax.jit(emit)(_data(3))


@context("jit_result_unused", "jit(lambda x: (emit(x), x)[1])(x)  # emit's value dropped")
def _jit_result_unused(emit):
    def f(x):
        emit(x)
        return x

    return jax.jit(f)(_data(3))


@context("vmap", "jit(vmap(emit))(xs)  # xs: [2,3]")
def _vmap(emit):
    return jax.jit(jax.vmap(emit))(_data(2, 3))


@context("vmap_arg_unbatched", "jit(vmap(lambda c, b: emit(c) + b, in_axes=(None, 0)))(x, bs)")
def _vmap_arg_unbatched(emit):
    f = jax.vmap(lambda c, b: emit(c) + b, in_axes=(None, 0))
    return jax.jit(f)(_data(3), _data(2, 3))


@context("vmap_nested", "jit(vmap(vmap(emit)))(xs)  # xs: [2,2,3]")
def _vmap_nested(emit):
    return jax.jit(jax.vmap(jax.vmap(emit)))(_data(2, 2, 3))


@context("jvp", "jit(lambda x, t: jvp(emit, (x,), (t,)))(x, t)")
def _jvp(emit):
    return jax.jit(lambda x, t: jax.jvp(emit, (x,), (t,)))(_data(3), _data(3))


@context("grad", "jit(grad(lambda x: sum(emit(x) * x)))(x)")
def _grad(emit):
    return jax.jit(jax.grad(lambda x: jnp.sum(emit(x) * x)))(_data(3))


@context("linear_transpose", "jit(lambda ct: linear_transpose(lambda x: emit(2 * x), x)(ct))")
def _linear_transpose(emit):
    x = _data(3)
    return jax.jit(lambda ct: jax.linear_transpose(lambda v: emit(2.0 * v), x)(ct))(x)


@context("vjp_linear", "jit(lambda x, ct: vjp(lambda x: emit(2 * x), x)[1](ct))  # both passes")
def _vjp_linear(emit):
    return jax.jit(lambda x, ct: jax.vjp(lambda v: emit(2.0 * v), x)[1](ct))(_data(3), _data(3))


@context("checkpoint_grad", "jit(grad(lambda x: sum(checkpoint(lambda x: emit(sin(x)))(x) * x)))")
def _checkpoint_grad(emit):
    inner = jax.checkpoint(lambda v: emit(jnp.sin(v)))
    return jax.jit(jax.grad(lambda x: jnp.sum(inner(x) * x)))(_data(3))


@context("custom_jvp_rule", "grad of a custom_jvp whose jvp rule calls emit(primal)")
def _custom_jvp_rule(emit):
    @jax.custom_jvp
    def g(x):
        return jnp.sin(x)

    @g.defjvp
    def g_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        e = emit(x)
        return jnp.sin(e), jnp.cos(e) * t

    return jax.jit(jax.grad(lambda x: jnp.sum(g(x))))(_data(3))


def _custom_vjp_grad(fwd_emit, bwd_emit):
    """grad of sin(x) as a custom_vjp, with fwd_emit on the primal in the fwd rule and
    bwd_emit on the cotangent in the bwd rule."""

    @jax.custom_vjp
    def g(x):
        return jnp.sin(x)

    def fwd(x):
        e = fwd_emit(x)
        return jnp.sin(e), e

    def bwd(e, ct):
        return (jnp.cos(e) * bwd_emit(ct),)

    g.defvjp(fwd, bwd)
    return jax.jit(jax.grad(lambda x: jnp.sum(g(x))))(_data(3))


@context("custom_vjp_fwd", "grad of a custom_vjp whose fwd rule calls emit(primal)")
def _custom_vjp_fwd(emit):
    return _custom_vjp_grad(emit, _ident)


@context("custom_vjp_bwd", "grad of a custom_vjp whose bwd rule calls emit(cotangent)")
def _custom_vjp_bwd(emit):
    return _custom_vjp_grad(_ident, emit)


@context("scan", "jit: scan(lambda c, _: (emit(c), None), x, length=3)")
def _scan(emit):
    return jax.jit(lambda x: lax.scan(lambda c, _: (emit(c), None), x, None, length=3)[0])(_data(3))


@context("fori_loop", "jit: fori_loop(0, 3, lambda i, c: emit(c), x)")
def _fori_loop(emit):
    return jax.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: emit(c), x))(_data(3))


def _while_body(emit):
    return lambda c: (c[0] + 1, emit(c[1]))


@context("while_body", "jit: while_loop(i < 3, (i + 1, emit(c)), (0, x))")
def _while_body_ctx(emit):
    return jax.jit(lambda x: lax.while_loop(lambda c: c[0] < 3, _while_body(emit), (0, x)))(
        _data(3)
    )


@context("while_cond", "jit: while_loop(cond=lambda c: (c.i < 3) & (sum(emit(c.x)) > -1e9))")
def _while_cond(emit):
    def cond(c):
        return (c[0] < 3) & (jnp.sum(emit(c[1])) > -1e9)

    return jax.jit(lambda x: lax.while_loop(cond, lambda c: (c[0] + 1, c[1]), (0, x)))(_data(3))


@context("cond", "jit: cond(x[0] > 0, emit, identity, x)  # predicate true")
def _cond(emit):
    return jax.jit(lambda x: lax.cond(x[0] > 0, emit, _ident, x))(_data(3))


@context("vmap_cond_pred_batched", "jit(vmap(lambda p, x: cond(p, emit, identity, x)))")
def _vmap_cond_pred_batched(emit):
    f = jax.vmap(lambda p, x: lax.cond(p, emit, _ident, x))
    return jax.jit(f)(np.array([True, False]), _data(2, 3))


@context(
    "vmap_cond_pred_unbatched",
    "jit(vmap(lambda p, x: cond(p, emit, identity, x), in_axes=(None, 0)))",
)
def _vmap_cond_pred_unbatched(emit):
    f = jax.vmap(lambda p, x: lax.cond(p, emit, _ident, x), in_axes=(None, 0))
    return jax.jit(f)(True, _data(2, 3))


@context(
    "vmap_cond_arg_unbatched",
    "jit(vmap(lambda p, c, b: cond(p, lambda c, b: (emit(c), b + 1), ..., c, b),"
    " in_axes=(None, None, 0)))  # only b is batched",
)
def _vmap_cond_arg_unbatched(emit):
    def f(p, c, b):
        return lax.cond(p, lambda c, b: (emit(c), b + 1), lambda c, b: (c, b), c, b)

    return jax.jit(jax.vmap(f, in_axes=(None, None, 0)))(True, _data(3), _data(2, 3))


@context("vmap_scan", "jit(vmap(lambda x: scan(lambda c, _: (emit(c), None), x, length=2)))")
def _vmap_scan(emit):
    f = jax.vmap(lambda x: lax.scan(lambda c, _: (emit(c), None), x, None, length=2)[0])
    return jax.jit(f)(_data(2, 3))


@context("vmap_while", "jit(vmap(while_loop(i < 2, (i + 1, emit(c)), (0, x))))  # same trip count")
def _vmap_while(emit):
    f = jax.vmap(lambda x: lax.while_loop(lambda c: c[0] < 2, _while_body(emit), (0, x))[1])
    return jax.jit(f)(_data(2, 3))


@context(
    "vmap_while_pred_batched",
    "jit(vmap(while_loop(i < n, (i + 1, emit(c)), (0, x))))  # n batched: [1, 2]",
)
def _vmap_while_pred_batched(emit):
    def f(n, x):
        return lax.while_loop(lambda c: c[0] < n, _while_body(emit), (0, x))[1]

    return jax.jit(jax.vmap(f))(np.array([1, 2], np.int32), _data(2, 3))


def _mesh():
    return jax.sharding.Mesh(np.array(jax.devices()), ("d",))


@context("pmap", "pmap(emit)(xs)  # xs: [n_devices, 3]", devices=True)
def _pmap(emit):
    return jax.pmap(emit)(_data(jax.device_count(), 3))


@context(
    "jit_sharded",
    "jit(emit)(device_put(xs, NamedSharding(mesh, P('d'))))  # xs: [n_devices, 3]",
    devices=True,
)
def _jit_sharded(emit):
    sharding = jax.sharding.NamedSharding(_mesh(), jax.sharding.PartitionSpec("d"))
    return jax.jit(emit)(jax.device_put(_data(jax.device_count(), 3), sharding))


@context(
    "jit_positional",
    "jit(emit)(device_put(xs, PositionalSharding(devices()).reshape(n, 1)))",
    devices=True,
)
def _jit_positional(emit):
    positional = getattr(jax.sharding, "PositionalSharding", None)
    if positional is None:
        raise Unavailable("jax.sharding.PositionalSharding")
    sharding = positional(jax.devices()).reshape(jax.device_count(), 1)
    return jax.jit(emit)(jax.device_put(_data(jax.device_count(), 3), sharding))


def _shard_map(f, mesh, in_specs, out_specs):
    if hasattr(jax, "shard_map"):
        return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs)
    from jax.experimental.shard_map import shard_map

    return shard_map(f, mesh, in_specs, out_specs)


@context(
    "shard_map",
    "jit(shard_map(emit, mesh=mesh, in_specs=P('d'), out_specs=P('d')))  # defaults",
    devices=True,
)
def _shard_map_ctx(emit):
    spec = jax.sharding.PartitionSpec("d")
    return jax.jit(_shard_map(emit, _mesh(), spec, spec))(_data(jax.device_count(), 3))


@context("pmap_of_vmap", "pmap(vmap(emit))(xs)  # xs: [n_devices, 2, 3]", devices=True)
def _pmap_of_vmap(emit):
    return jax.pmap(jax.vmap(emit))(_data(jax.device_count(), 2, 3))


@context("vmap_of_pmap", "vmap(pmap(emit))(xs)  # xs: [2, n_devices, 3]", devices=True)
def _vmap_of_pmap(emit):
    return jax.vmap(jax.pmap(emit))(_data(2, jax.device_count(), 3))


# Running one probe (in the child process).


def error_text(exc: BaseException) -> str:
    """`Type: first line`; for an error raised inside the host function and passed back through
    XLA (its message is a traceback), also the traceback's last line."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[0] if lines else ""
    if len(lines) > 1 and "Traceback (most recent call last)" in text:
        text = text.replace("Traceback (most recent call last):", "…") + " " + lines[-1]
    text = re.sub(r"0x[0-9a-fA-F]+", "0x…", text)
    text = re.sub(r"/[^\s:'\"]*/(site-packages|dist-packages)/", "…/", text)
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__}: {text}"


def _same(a, b) -> bool:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(
        np.shape(u) == np.shape(v) and np.allclose(np.asarray(u), np.asarray(v))
        for u, v in zip(la, lb)
    )


def _printed_calls(text: str, kind: str) -> list:
    """The calls of jax.debug.print / hcb.id_print, read back from what they printed."""
    if kind == "modern":
        chunks = re.findall(r"<P>(.*?)</P>", text, flags=re.S)
        heads = [None] * len(chunks)
    else:  # legacy id_print: a header line "[transforms: ...] tag: P", then the value
        parts = re.split(r"^(.*tag: P\b.*)$", text, flags=re.M)
        heads, chunks = parts[1::2], parts[2::2]
    calls = []
    for head, chunk in zip(heads, chunks):
        entry = {"args": [f"printed {_printed_shape(chunk)}"]}
        if head is not None:
            # "transforms: [('batch', {'batch_dims': (0,)})]" or "transforms: ['transpose']"
            entry["transforms"] = re.findall(r"(?:[(\[]|, )'(\w+)'", head)
        calls.append(entry)
    return calls


def _printed_shape(chunk: str):
    text = chunk.strip()
    literal = re.sub(r"(?<=[\d.\]])\s+(?=[-\d\[])", ",", text)
    try:
        shape = np.shape(ast.literal_eval(literal))
    except (ValueError, SyntaxError):
        return repr(text)
    return "[" + ",".join(map(str, shape)) + "]"


def _barrier():
    jax.effects_barrier()
    if hcb is not None:
        hcb.barrier_wait()


def _run(body) -> dict:
    """Run body() -> output; the probe's status, error and output."""
    result = {"status": "ok"}
    out = None
    try:
        out = body()
        jax.block_until_ready(out)
    except Unavailable as exc:
        return {"status": "n/a", "error": f"not in this release: {exc}"}
    except Exception as exc:  # the fact being measured
        result = {"status": "error", "error": error_text(exc)}
    try:
        _barrier()
    except Exception as exc:
        if result["status"] == "ok":
            result = {"status": "error", "error": error_text(exc)}
    result["output"] = out
    return result


def probe_grid(spelling_name: str, context_name: str, capture) -> dict:
    sp, ctx = SPELLINGS[spelling_name], CONTEXTS[context_name]
    if sp["kind"] == "legacy" and hcb is None:
        return {"status": "n/a", "error": "not in this release: legacy host_callback"}
    rec = Recorder()
    result = _run(lambda: ctx["run"](lambda x: sp["emit"](x, rec)))
    out = result.pop("output", None)
    calls = rec.calls
    if sp["prints"]:
        calls = _printed_calls(capture(), sp["kind"])
    result["calls"] = calls
    if result["status"] == "ok":
        result["value_ok"] = _same(out, ctx["run"](REFS[sp["ref"]]))
    return result


# Focused probes: one question each, answered for every spelling it concerns. A probe id is
# `family/spelling[/variant]`; `kind` says which interpreters run it.

FOCUSED: dict[str, dict] = {}


def focused(probe_id: str, kind: str, run) -> None:
    FOCUSED[probe_id] = {"kind": kind, "run": run}


def _legacy_outfeed() -> None:
    """Legacy host_callback through outfeed, the mechanism it used on GPU and TPU (on CPU it
    called the host inline by default)."""
    jax.config.update("jax_host_callback_outfeed", True)


def _variants(kind: str):
    """(suffix, set-up) pairs: legacy probes run inline (CPU default) and through outfeed."""
    if kind == "legacy":
        return (("", None), ("/outfeed", _legacy_outfeed))
    return (("", None),)


def _register(family: str, name: str, kind: str, make_run) -> None:
    for suffix, setup in _variants(kind):
        focused(f"{family}/{name}{suffix}", kind, _with_setup(setup, make_run))


def _with_setup(setup, run):
    def go(capture):
        if setup is not None:
            setup()
        return run(capture)

    return go


def _scalar():
    return jax.ShapeDtypeStruct((), jnp.float32)


def _zero(f):
    """A host function that calls f and returns a float32 zero (for result-returning kinds)."""
    return lambda *a: (f(*a), np.zeros((), np.float32))[1]


# What the host function receives: a float32[3], an int32 0-d, a bool[2], a float32 0-d and a
# None, passed as one pytree (legacy: one `arg`) or as *args (modern), in jit.
ARG_CALLS = {
    "io_ord": ("modern", lambda f, args: io_callback(f, None, *args, ordered=True)),
    "io_unord_res": ("modern", lambda f, args: io_callback(_zero(f), _scalar(), *args)),
    "dbg_cb": ("modern", lambda f, args: jax.debug.callback(f, *args)),
    "pure_used": (
        "modern",
        lambda f, args: jax.pure_callback(_zero(f), _scalar(), *args, vmap_method="sequential"),
    ),
    "id_tap": ("legacy", lambda f, args: hcb.id_tap(lambda arg, transforms: f(*arg), args)),
    "call": (
        "legacy",
        lambda f, args: hcb.call(lambda arg: _zero(f)(*arg), args, result_shape=_scalar()),
    ),
}
WRAPS = {  # how a migrated call site may wrap the user's host function
    "none": lambda f: f,
    "tree_np_array": lambda f: lambda *a: f(*jax.tree.map(np.array, a)),
    "tree_np_asarray": lambda f: lambda *a: f(*jax.tree.map(np.asarray, a)),
}
ARG_TREE_TEXT = "(float32[3], int32[], bool[2], float32[], None)"


def _arg_types(call, wrap):
    rec = Recorder()

    def host(*args):
        rec.record(args, reprs=True)

    def program(a, b, c, d):
        return a, call(WRAPS[wrap](host), (a, b, c, d, None))

    args = (_data(3), np.int32(7), np.array([True, False]), np.float32(2.5))
    result = _run(lambda: jax.jit(program)(*args))
    result.pop("output", None)
    result["calls"] = rec.calls
    return result


for _name, (_kind, _call) in ARG_CALLS.items():
    for _wrap in ("none",) if _kind == "legacy" else tuple(WRAPS):
        _register(
            "argtypes", f"{_name}/{_wrap}", _kind, lambda c, f=_call, w=_wrap: _arg_types(f, w)
        )


# Whether the host function may switch its argument's WRITEABLE flag on (code handing the array
# to a C library did `x.flags.writeable = True`): an array that owns its data may, a read-only
# view of a buffer may not. `tree_np_array_readonly` is the helper the codemod writes.
WRITEABLE_WRAPS = {
    **WRAPS,
    "tree_np_array_readonly": lambda f: lambda *a: f(*jax.tree.map(_read_only_copy, a)),
}


def _read_only_copy(leaf):
    array = np.array(leaf)
    array.flags.writeable = False
    return array


def _flip_writeable(call, wrap):
    seen = []

    def host(*args):
        x = args[0]
        before = describe(x)
        try:
            x.flags.writeable = True
            seen.append(f"{before}: flag set, now {describe(x)}")
        except Exception as exc:
            seen.append(f"{before}: {error_text(exc)}")

    result = _run(lambda: jax.jit(lambda x: (x, call(WRITEABLE_WRAPS[wrap](host), (x,))))(_data(3)))
    result.pop("output", None)
    result["seen"] = seen  # (what the host function wrote, not calls_text's call records)
    return result


for _name, (_kind, _call) in ARG_CALLS.items():
    for _wrap in ("none",) if _kind == "legacy" else tuple(WRITEABLE_WRAPS):
        _register(
            "writeable",
            f"{_name}/{_wrap}",
            _kind,
            lambda c, f=_call, w=_wrap: _flip_writeable(f, w),
        )


# What a scalar result_shape (`1.0`) means in 64-bit mode (switched on in the program), and
# what the modern spellings of it return there.
X64_SHAPES = {
    "call": ("legacy", lambda f, x: hcb.call(f, x, result_shape=1.0)),
    "pure_float32": (
        "modern",
        lambda f, x: jax.pure_callback(
            f, jax.ShapeDtypeStruct((), "float32"), x, vmap_method="sequential"
        ),
    ),
    "pure_canonical_float": (
        "modern",
        lambda f, x: jax.pure_callback(
            f,
            jax.ShapeDtypeStruct((), jax.dtypes.canonicalize_dtype(float)),
            x,
            vmap_method="sequential",
        ),
    ),
}


def _x64_scalar_shape(call):
    jax.config.update("jax_enable_x64", True)
    result = _run(lambda: jax.jit(lambda x: call(lambda v: np.float64(v.sum()), x))(_data(3)))
    out = result.pop("output", None)
    if result["status"] == "ok":
        result["out_dtype"] = str(np.asarray(out).dtype)
    return result


for _name, (_kind, _call) in X64_SHAPES.items():
    focused(f"x64_scalar_result_shape/{_name}", _kind, lambda c, f=_call: _x64_scalar_shape(f))


# The text id_print and jax.debug.print write for 0-d floats and a tuple held in a variable.
def _print_text(emit, capture):
    def program(a, b, c):
        pair = (c, jnp.int32(4))
        emit("scalar", a)
        emit("whole", b)
        emit("pair", pair)
        return a

    result = _run(
        lambda: jax.jit(program)(jnp.float32(3.762), jnp.float32(2.0), jnp.array([1.0, 2.5]))
    )
    result.pop("output", None)
    result["printed"] = capture()
    return result


PRINT_TEXT_CALLS = {
    "id_print": ("legacy", lambda what, x: hcb.id_print(x, what=what)),
    "dbg_print_ord": (
        "modern",
        lambda what, x: jax.debug.print("what: " + what + "\n{}", x, ordered=True),
    ),
}
for _name, (_kind, _call) in PRINT_TEXT_CALLS.items():
    focused(f"print_text/{_name}", _kind, lambda c, f=_call: _print_text(f, c))


# Whether the host function's return value matters (result None / no result).
RETURNS = {
    "None": lambda: None,
    "True": lambda: True,
    "empty_tuple": lambda: (),
    "zero_int": lambda: 0,
    "array": lambda: np.zeros(3, np.float32),
}
# The callbacks without a result, as call(host function, x); a legacy tap's host function is
# called without its transforms.
TAP_CALLS = {
    "io_ord": ("modern", lambda f, x: io_callback(f, None, x, ordered=True)),
    "io_unord": ("modern", lambda f, x: io_callback(f, None, x)),
    "dbg_cb": ("modern", lambda f, x: jax.debug.callback(f, x)),
    "dbg_cb_ord": ("modern", lambda f, x: jax.debug.callback(f, x, ordered=True)),
    "id_tap": ("legacy", lambda f, x: hcb.id_tap(lambda arg, transforms: f(arg), x)),
}


def _return_value(call, returns):
    rec = Recorder()

    def host(*args):
        rec.record(args)
        return RETURNS[returns]()

    def program(x):
        call(host, x)
        return x

    result = _run(lambda: jax.jit(program)(_data(3)))
    result.pop("output", None)
    result["calls"] = rec.calls
    return result


for _name, (_kind, _call) in TAP_CALLS.items():
    for _ret in RETURNS:
        focused(f"return/{_name}/{_ret}", _kind, lambda c, f=_call, r=_ret: _return_value(f, r))

# What a result-returning host function may return for a float32[3] (or float32[]) result.
RESULT_KINDS = {  # name: (result shape, what the host returns)
    "float32_array": ((3,), lambda x: np.asarray(x) * 2),
    "float64_array": ((3,), lambda x: np.asarray(x, np.float64) * 2),
    "list": ((3,), lambda x: [float(v) * 2 for v in np.asarray(x)]),
    "python_float": ((), lambda x: float(np.asarray(x)[0]) * 2),
    "np_float64_scalar": ((), lambda x: np.float64(np.asarray(x)[0]) * 2),
}
RESULT_CALLS = {
    "io_ord_res": ("modern", lambda f, s, x: io_callback(f, s, x, ordered=True)),
    "pure_used": (
        "modern",
        lambda f, s, x: jax.pure_callback(f, s, x, vmap_method="sequential"),
    ),
    "call": ("legacy", lambda f, s, x: hcb.call(f, x, result_shape=s)),
}


def _result_value(call, kind):
    rec = Recorder()
    shape, make = RESULT_KINDS[kind]

    def host(x):
        rec.record((x,))
        return make(x)

    spec = jax.ShapeDtypeStruct(shape, jnp.float32)
    result = _run(lambda: jax.jit(lambda x: call(host, spec, x))(_data(3)))
    out = result.pop("output", None)
    result["calls"] = rec.calls
    if result["status"] == "ok":
        result["value_ok"] = bool(np.allclose(np.asarray(out), np.asarray(make(_data(3)))))
        result["out_dtype"] = str(np.asarray(out).dtype)
    return result


for _name, (_kind, _call) in RESULT_CALLS.items():
    for _res in RESULT_KINDS:
        focused(f"result/{_name}/{_res}", _kind, lambda c, f=_call, k=_res: _result_value(f, k))

# Where an exception raised by the host function arrives.
RAISE_CALLS = {
    **TAP_CALLS,
    "pure_used": (
        "modern",
        lambda f, x: jax.pure_callback(_zero(f), _scalar(), x, vmap_method="sequential"),
    ),
    "call": ("legacy", lambda f, x: hcb.call(_zero(f), x, result_shape=_scalar())),
}


def _raises(call):
    def host(*args):
        raise ValueError("raised by the host function")

    out = {"status": "ok", "at_call": None, "at_barrier": None}
    try:
        jax.block_until_ready(jax.jit(lambda x: (x, call(host, x)))(_data(3)))
    except Exception as exc:
        out["at_call"] = error_text(exc)
        out["at_call_is_RuntimeError"] = isinstance(exc, RuntimeError)
        jax_runtime_error = getattr(jax.errors, "JaxRuntimeError", None)
        out["at_call_is_jax_errors_JaxRuntimeError"] = jax_runtime_error is not None and (
            isinstance(exc, jax_runtime_error)
        )
    try:
        _barrier()
    except Exception as exc:
        out["at_barrier"] = error_text(exc)
    return out


for _name, (_kind, _call) in RAISE_CALLS.items():
    _register("raise", _name, _kind, lambda c, f=_call: _raises(f))


# Ordering. Every host function writes its tag and loop index to stdout, so the sequence is read
# back from there, jax.debug.print's and id_print's own output included.


def _say(tag):
    def f(i, *rest):
        sys.stdout.write(f"{tag}{int(np.asarray(i))}\n")

    return f


class _TaggedStream:
    """id_print's output_stream: writes `TAG<value>` lines so the order can be read back."""

    def __init__(self, tag):
        self.tag = tag

    def write(self, text):
        if text.strip():
            sys.stdout.write(f"{self.tag}{text.strip()}\n")


ORDER_STEPS = {
    "io_ord": lambda tag, i: io_callback(_say(tag), None, i, ordered=True),
    "io_unord": lambda tag, i: io_callback(_say(tag), None, i),
    "dbg_cb_ord": lambda tag, i: jax.debug.callback(_say(tag), i, ordered=True),
    "dbg_cb": lambda tag, i: jax.debug.callback(_say(tag), i),
    "dbg_print_ord": lambda tag, i: jax.debug.print(tag + "{}", i, ordered=True),
    "dbg_print": lambda tag, i: jax.debug.print(tag + "{}", i),
    "id_tap": lambda tag, i: hcb.id_tap(lambda a, t: _say(tag)(a), i),
    "id_print": lambda tag, i: hcb.id_print(i, output_stream=_TaggedStream(tag)),
}
ORDER_PROGRAMS = {  # name: (kind, steps A, B, C)
    "io_ord+dbg_cb_ord+io_ord": ("modern", "io_ord", "dbg_cb_ord", "io_ord"),
    "io_ord+dbg_print_ord+io_ord": ("modern", "io_ord", "dbg_print_ord", "io_ord"),
    "dbg_print_ord+io_ord+dbg_print_ord": ("modern", "dbg_print_ord", "io_ord", "dbg_print_ord"),
    "io_ord+dbg_cb+io_ord": ("modern", "io_ord", "dbg_cb", "io_ord"),
    "io_ord+io_ord+io_ord": ("modern", "io_ord", "io_ord", "io_ord"),
    "dbg_cb_ord+dbg_print_ord+dbg_cb_ord": ("modern", "dbg_cb_ord", "dbg_print_ord", "dbg_cb_ord"),
    "io_unord+io_unord+io_unord": ("modern", "io_unord", "io_unord", "io_unord"),
    "dbg_cb+dbg_cb+dbg_cb": ("modern", "dbg_cb", "dbg_cb", "dbg_cb"),
    "dbg_print+dbg_print+dbg_print": ("modern", "dbg_print", "dbg_print", "dbg_print"),
    "id_tap+id_print+id_tap": ("legacy", "id_tap", "id_print", "id_tap"),
    "id_print+id_tap+id_print": ("legacy", "id_print", "id_tap", "id_print"),
}


def _late(i):
    """i, but only after a chain of matrix products: A's argument is ready last, so a
    scheduler that follows only data and each effect chain's own token may run B before A."""
    m = jnp.full((128, 128), 1e-3, jnp.float32)
    for _ in range(8):
        m = jnp.tanh(m @ m + i.astype(jnp.float32))
    return i + (jnp.sum(m) * 0).astype(i.dtype)


def _order_one_function(steps, capture):
    """A(late i), B(i), C(i) in program order inside one jitted fori_loop of 3 iterations."""

    def body(i, c):
        ORDER_STEPS[steps[0]]("A", _late(i))
        ORDER_STEPS[steps[1]]("B", i)
        ORDER_STEPS[steps[2]]("C", i)
        return c + 1

    f = jax.jit(lambda x: lax.fori_loop(0, 3, body, x))
    return _repeat(lambda: f(np.int32(0)), capture)


def _order_separate_functions(steps, capture):
    """A (on late i), B and C each in its own jitted function; the three called in turn 3
    times without waiting in between."""

    def jitted(tag, step, late):
        def g(i):
            ORDER_STEPS[step](tag, _late(i) if late else i)
            return i + 1

        return jax.jit(g)

    functions = [jitted(tag, step, tag == "A") for tag, step in zip("ABC", steps)]

    def program():
        return [g(np.int32(i)) for i in range(3) for g in functions]

    return _repeat(program, capture)


def _repeat(program, capture):
    expected = [f"{tag}{i}" for i in range(3) for tag in "ABC"]
    sequences = []
    for _ in range(ORDER_REPEATS):
        start = len(capture())
        result = _run(program)
        if result["status"] != "ok":
            result.pop("output", None)
            return result
        lines = capture()[start:].split()
        sequences.append([line for line in lines if line[:1] in "ABC"])
    distinct = sorted({" ".join(s) for s in sequences})
    return {
        "status": "ok",
        "in_program_order": all(s == expected for s in sequences),
        "sequences": distinct,
        "repeats": ORDER_REPEATS,
    }


for _name, (_kind, *_steps) in ORDER_PROGRAMS.items():
    _register(
        "order", f"one_function/{_name}", _kind, lambda c, s=_steps: _order_one_function(s, c)
    )
    _register(
        "order",
        f"separate_functions/{_name}",
        _kind,
        lambda c, s=_steps: _order_separate_functions(s, c),
    )

# Purity: numpy.random in a fori_loop, the same call twice, a callback reading what a tap stored.
PURE_CALLS = {
    "pure_used": (
        "modern",
        lambda f, s, *a: jax.pure_callback(f, s, *a, vmap_method="sequential"),
    ),
    "io_unord_res": ("modern", lambda f, s, *a: io_callback(f, s, *a)),
    "io_ord_res": ("modern", lambda f, s, *a: io_callback(f, s, *a, ordered=True)),
    "call": ("legacy", lambda f, s, *a: hcb.call(lambda arg: f(*arg), a, result_shape=s)),
}


def _random_in_loop(call, with_index):
    rec = Recorder()
    rng = np.random.default_rng(0)

    def host(*args):
        rec.record(args)
        return np.float32(rng.random())

    def body(i, c):
        v = call(host, _scalar(), i) if with_index else call(host, _scalar())
        return c.at[i].set(v)

    loop = jax.jit(lambda c: lax.fori_loop(0, 3, body, c))
    result = _run(lambda: loop(np.zeros(3, np.float32)))
    out = result.pop("output", None)
    result["calls"] = len(rec.calls)
    if result["status"] == "ok":
        result["distinct_values"] = len(set(np.asarray(out).tolist()))
    return result


def _duplicate_call(call):
    rec = Recorder()

    def host(*args):
        rec.record(args)
        return np.float32(len(rec.calls))

    twice = jax.jit(lambda x: call(host, _scalar(), x) + call(host, _scalar(), x))
    result = _run(lambda: twice(np.float32(1.0)))
    result.pop("output", None)
    result["calls"] = len(rec.calls)
    return result


def _read_after_tap(tap, call):
    """fori_loop of 3: an ordered tap stores i on the host, then a callback returns what is
    stored."""
    state = {"v": -1.0}
    events = []

    def store(i, *rest):
        events.append(f"tap{int(np.asarray(i))}")
        state["v"] = float(np.asarray(i))

    def read(*args):
        events.append("read")
        return np.float32(state["v"])

    def body(i, c):
        tap(store, i)
        return c.at[i].set(call(read, _scalar(), c[0]))

    loop = jax.jit(lambda c: lax.fori_loop(0, 3, body, c))
    result = _run(lambda: loop(np.zeros(3, np.float32)))
    out = result.pop("output", None)
    result["events"] = events
    if result["status"] == "ok":
        result["values_read"] = np.asarray(out).tolist()
    return result


TAPS = {
    "modern": lambda f, i: io_callback(f, None, i, ordered=True),
    "legacy": lambda f, i: hcb.id_tap(lambda a, t: f(a), i),
}
for _name, (_kind, _call) in PURE_CALLS.items():
    focused(f"purity/random_no_args/{_name}", _kind, lambda c, f=_call: _random_in_loop(f, False))
    focused(f"purity/random_loop_index/{_name}", _kind, lambda c, f=_call: _random_in_loop(f, True))
    focused(f"purity/duplicate_call/{_name}", _kind, lambda c, f=_call: _duplicate_call(f))
    focused(
        f"purity/read_after_tap/{_name}",
        _kind,
        lambda c, f=_call, t=TAPS[_kind]: _read_after_tap(t, f),
    )

# When the host function has run: as the jitted call returns, after block_until_ready, after
# effects_barrier (legacy: barrier_wait).


def _sync(call):
    done = []

    def host(x):
        time.sleep(0.3)
        done.append(1)

    f = jax.jit(lambda x: (call(host, x), x + 1)[1])
    try:
        jax.block_until_ready(f(_data(3)))  # compile and run once
        _barrier()
        done.clear()
        out = f(_data(3))
        seen = {"after_return": len(done)}
        jax.block_until_ready(out)
        seen["after_block_until_ready"] = len(done)
        _barrier()
        seen["after_barrier"] = len(done)
    except Exception as exc:
        return {"status": "error", "error": error_text(exc)}
    return {"status": "ok", **seen}


for _name, (_kind, _call) in TAP_CALLS.items():
    _register("sync", _name, _kind, lambda c, f=_call: _sync(f))

# Devices: which device's host function runs, and pinning a callback to device 1.


def _dev1():
    return jax.sharding.SingleDeviceSharding(jax.devices()[1])


DEVICE_CALLS = {  # name: (kind, emit(rec, x), ref)
    "io_dev1_ord": (
        "modern",
        lambda rec, x: (io_callback(rec.tap(), None, x, ordered=True, sharding=_dev1()), x)[1],
        "x",
    ),
    "io_dev1_res": (
        "modern",
        lambda rec, x: io_callback(rec.double(), _shape_of(x), x, sharding=_dev1()),
        "2x",
    ),
    "id_tap_with_device": (
        "legacy",
        lambda rec, x: hcb.id_tap(rec.legacy_tap(), x, tap_with_device=True),
        "x",
    ),
    "id_tap_device_index1": (
        "legacy",
        lambda rec, x: hcb.id_tap(rec.legacy_tap(), x, tap_with_device=True, device_index=1),
        "x",
    ),
    "call_device_index1": (
        "legacy",
        lambda rec, x: hcb.call(rec.legacy_double(), x, result_shape=_shape_of(x), device_index=1),
        "2x",
    ),
}
DEVICE_CONTEXTS = ("jit", "pmap", "jit_sharded", "shard_map")


def _device_probe(emit, ref, context_name):
    rec = Recorder()
    run = CONTEXTS[context_name]["run"]
    result = _run(lambda: run(lambda x: emit(rec, x)))
    out = result.pop("output", None)
    # Devices call the host concurrently, in no fixed order.
    result["calls"] = sorted(rec.calls, key=lambda c: c.get("device", -1))
    if result["status"] == "ok":
        result["value_ok"] = _same(out, run(REFS[ref]))
        result["output_all_zero"] = not any(np.any(np.asarray(v)) for v in jax.tree.leaves(out))
    return result


for _name, (_kind, _emit, _ref) in DEVICE_CALLS.items():
    for _ctx in DEVICE_CONTEXTS:
        _register(
            "device",
            f"{_name}/{_ctx}",
            _kind,
            lambda c, e=_emit, r=_ref, x=_ctx: _device_probe(e, r, x),
        )


def _meta(capture):
    import jaxlib

    return {
        "status": "ok",
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": np.__version__,
        "python": "%d.%d" % sys.version_info[:2],
        "device_count": jax.device_count(),
        "platform": jax.devices()[0].platform,
        "legacy_host_callback": hcb is not None,
    }


def all_probe_ids(kind: str) -> list[str]:
    """Every probe of one interpreter kind ('modern' or 'legacy'), in a fixed order."""
    grid = [f"grid/{s}/{c}" for s, sp in SPELLINGS.items() if sp["kind"] == kind for c in CONTEXTS]
    return ["meta", *grid, *(name for name, p in FOCUSED.items() if p["kind"] == kind)]


def run_probe(probe_id: str, capture) -> dict:
    if probe_id == "meta":
        return _meta(capture)
    if probe_id.startswith("grid/"):
        _, spelling_name, context_name = probe_id.split("/")
        return probe_grid(spelling_name, context_name, capture)
    return FOCUSED[probe_id]["run"](capture)


def child_main(probe_id: str, out_path: str, log_path: str) -> None:
    """Run one probe in this (fresh or forked) process; write its JSON to out_path. Its stdout
    and stderr (and so what callbacks print) go to log_path."""
    log = open(log_path, "w+b")
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), line_buffering=True)
    sys.stderr = sys.stdout

    def capture() -> str:
        sys.stdout.flush()
        log.seek(0)
        return log.read().decode("utf-8", "replace")

    try:
        result = run_probe(probe_id, capture)
    except Exception as exc:  # a defect of the probe itself, not a measured fact
        result = {"status": "probe-defect", "error": error_text(exc)}
        result["traceback"] = traceback.format_exc()[-3000:]
    Path(out_path).write_text(json.dumps(result, sort_keys=True, default=repr))


def serve(isolation: str) -> None:
    """Read probe ids from stdin; run each in its own child; write {"id", "result"} lines."""
    if isolation == "fork":
        _load_jax()  # imports only: each child starts its own backend
    for line in sys.stdin:
        probe_id = line.strip()
        if not probe_id:
            continue
        fd, out_path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        log_path = out_path + ".log"
        try:
            ended = _run_child(probe_id, out_path, log_path, isolation)
            text = Path(out_path).read_text()
            if text:
                result = json.loads(text)
            else:
                result = {"status": "crash", "error": f"{ended}; {_last_words(log_path)}"}
        finally:
            for path in (out_path, log_path):
                if os.path.exists(path):
                    os.unlink(path)
        sys.stdout.write(json.dumps({"id": probe_id, "result": result}) + "\n")
        sys.stdout.flush()


def _last_words(log_path: str) -> str:
    """The last line a crashed probe wrote, without the timestamp XLA puts in front."""
    try:
        lines = Path(log_path).read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no output"
    last = lines[-1] if lines else "no output"
    return re.sub(r"^\d{4}-\d\d-\d\d [\d:.]+: ", "", last)[:300]


def _run_child(probe_id: str, out_path: str, log_path: str, isolation: str) -> str:
    """Run the probe in a forked or a freshly started process; how that process ended."""
    if isolation == "exec":
        proc = subprocess.Popen(
            [sys.executable, __file__, "--probe", probe_id, out_path, log_path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            return _exit_text(proc.wait(timeout=PROBE_TIMEOUT))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return f"hangs (killed after {PROBE_TIMEOUT:.0f} s)"
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            child_main(probe_id, out_path, log_path)
            code = 0
        finally:
            os._exit(code)
    deadline = time.monotonic() + PROBE_TIMEOUT
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return _exit_text(os.waitstatus_to_exitcode(status))
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return f"hangs (killed after {PROBE_TIMEOUT:.0f} s)"
        time.sleep(0.01)


def _exit_text(code: int) -> str:
    if code < 0:
        return f"process killed by signal {signal.Signals(-code).name}"
    return f"process exited with status {code}"


# ----------------------------------------------------------------------------------------------
# Driver side: runs on the current interpreter.
# ----------------------------------------------------------------------------------------------


def interpreter(role: str, overrides: dict[str, str] | None = None) -> str:
    """The Python of a role: this one (current), or a cached environment (oldest, legacy)."""
    if overrides and role in overrides:
        return overrides[role]
    if role == "current":
        return sys.executable
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from hcmigrate.legacy_env import jax_env_python, legacy_python

    if role == "oldest":
        explicit = os.environ.get("HCMIGRATE_OLDEST_JAX_PYTHON")
        return explicit or str(jax_env_python(OLDEST_JAX, "compat"))
    return str(legacy_python())


def role_kind(role: str) -> str:
    return "legacy" if role == "legacy" else "modern"


def probe_ids(role: str, devices: int) -> list[str]:
    """The probes of one role and device count: everything with 4 devices; with 1 device the
    grid again (the focused probes need no second device, or need one)."""
    ids = all_probe_ids(role_kind(role))
    if devices == max(DEVICE_COUNTS):
        return ids
    return [i for i in ids if i == "meta" or i.startswith("grid/")]


def probe_env(devices: int) -> dict[str, str]:
    env = dict(os.environ)
    flags = [f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f]
    env["XLA_FLAGS"] = " ".join([*flags, f"--xla_force_host_platform_device_count={devices}"])
    env["JAX_PLATFORMS"] = "cpu"
    for name in ("JAX_ENABLE_X64", "JAX_HOST_CALLBACK_OUTFEED", "JAX_HOST_CALLBACK_INLINE"):
        env.pop(name, None)
    env["PYTHONWARNINGS"] = "ignore"
    return env


def measure(
    python: str, ids: list[str], devices: int, jobs: int = 2, isolation: str = "fork"
) -> dict[str, dict]:
    """Run probes on one interpreter with `devices` CPU devices, `jobs` servers in parallel;
    {probe id: result} in the order of `ids`."""
    pending = list(reversed(ids))
    lock = threading.Lock()
    results: dict[str, dict] = {}
    failures: list[str] = []

    def worker():
        server = subprocess.Popen(
            [python, __file__, "--serve", "--isolation", isolation],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=probe_env(devices),
        )
        try:
            while True:
                with lock:
                    if not pending or failures:
                        return
                    probe_id = pending.pop()
                server.stdin.write(probe_id + "\n")
                server.stdin.flush()
                line = server.stdout.readline()
                if not line:
                    with lock:
                        failures.append(f"{python}: server died at {probe_id}")
                    return
                reply = json.loads(line)
                with lock:
                    results[reply["id"]] = reply["result"]
        finally:
            server.stdin.close()
            stderr = server.stderr.read()
            if server.wait() != 0:
                failures.append(f"{python} --serve failed:\n{stderr[-3000:]}")

    threads = [threading.Thread(target=worker) for _ in range(max(1, min(jobs, len(ids))))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise RuntimeError("\n".join(failures))
    defects = [(i, r) for i, r in results.items() if r.get("status") == "probe-defect"]
    if defects:
        probe_id, result = defects[0]
        raise RuntimeError(f"{len(defects)} probe defects; {probe_id}:\n{result['traceback']}")
    return {i: results[i] for i in ids}


def measure_role(role: str, python: str, jobs: int = 2, isolation: str = "fork") -> dict:
    """{device count: {"meta": ..., "probes": {id: result}}} for one role."""
    runs = {}
    for devices in DEVICE_COUNTS:
        results = measure(python, probe_ids(role, devices), devices, jobs, isolation)
        runs[str(devices)] = {"meta": results.pop("meta"), "probes": results}
    return runs


def merge_probes(
    data: dict, role: str, python: str, prefix: str, jobs: int = 2, isolation: str = "fork"
) -> None:
    """Measure the probes of `role` whose id starts with `prefix` (a new family, without
    measuring the whole grid again) into `data`, beside the role's other results."""
    for devices in DEVICE_COUNTS:
        ids = [i for i in probe_ids(role, devices) if i.startswith(prefix)]
        if ids:
            runs = data["roles"][role][str(devices)]["probes"]
            runs.update(measure(python, ids, devices, jobs, isolation))


def load_data(path: Path = DATA) -> dict:
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    return {"roles": {}}


def write_data(data: dict, path: Path = DATA) -> None:
    data["generated_by"] = "scripts/measure_callback_facts.py"
    data["spellings"] = {n: {"code": s["code"], "kind": s["kind"]} for n, s in SPELLINGS.items()}
    data["contexts"] = {n: c["code"] for n, c in CONTEXTS.items()}
    path.write_text(_json_text(data) + "\n", encoding="utf-8")


def _json_text(value, depth: int = 0) -> str:
    """Indented JSON with each probe result (depth 5: roles/ROLE/DEVICES/probes/ID) on one
    line, so a changed fact is a one-line diff."""
    if not isinstance(value, dict) or not value or depth >= 5:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    pad = " " * (depth + 1)
    items = [
        f"{pad}{json.dumps(key, ensure_ascii=False)}: {_json_text(value[key], depth + 1)}"
        for key in sorted(value)
    ]
    return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"


# ----------------------------------------------------------------------------------------------
# Rendering the tables (driver side).
# ----------------------------------------------------------------------------------------------


class Notes:
    """Numbered footnotes for exception messages, in order of first use."""

    def __init__(self):
        self.numbers: dict[str, int] = {}

    def ref(self, text: str) -> str:
        if text not in self.numbers:
            self.numbers[text] = len(self.numbers) + 1
        return f"[E{self.numbers[text]}](#e{self.numbers[text]})"

    def render(self) -> list[str]:
        return [f'- <a id="e{n}"></a>**E{n}** `` {text} ``' for text, n in self.numbers.items()]


LEAF = re.compile(r"^(?P<type>\S+)(?: (?P<dtype>\w*)(?P<shape>\[[\d,]*\]))?(?P<flags>.*)$")


def _arg_text(leaf: str) -> str:
    """A leaf's shape, with its dtype unless float32: `[3]`, `int32[]`."""
    match = LEAF.match(leaf)
    if match is None or match["shape"] is None:
        return leaf
    return ("" if match["dtype"] in ("float32", "") else match["dtype"]) + match["shape"]


def calls_text(calls: list) -> str:
    """`2×[3]`: the calls in order as count × argument shape, run-length encoded."""
    if not calls:
        return "0 calls"
    runs: list[list] = []
    for call in calls:
        text = "+".join(_arg_text(a) for a in call["args"]) or "()"
        if call.get("transforms"):
            text += " (" + ",".join(call["transforms"]) + ")"
        if runs and runs[-1][0] == text:
            runs[-1][1] += 1
        else:
            runs.append([text, 1])
    return ", ".join(f"{n}×{text}" for text, n in runs)


def cell(result: dict | None, notes: Notes) -> str:
    """One probe as a table cell: ✓ with its calls, or ✗ with a footnote."""
    if result is None:
        return "–"
    if result["status"] == "n/a":
        return "n/a"
    calls = result.get("calls")
    if result["status"] != "ok":
        label = "✗" if result["status"] == "error" else result["status"]
        ran = f" after {calls_text(calls)}" if calls else ""
        return f"{label} {notes.ref(result['error'])}{ran}"
    text = "✓"
    if isinstance(calls, list):
        text += " " + calls_text(calls)
    if result.get("value_ok") is False:
        text += " **wrong value**"
    if result.get("output_all_zero"):
        text += " (all zeros)"
    return text


MODERN_GROUPS = (
    (
        "io_callback",
        ["io_ord", "io_unord", "io_ord_res", "io_unord_res", "io_dev0_ord", "io_dev0_res"],
    ),
    (
        "jax.debug.callback, jax.debug.print, jax.pure_callback",
        ["dbg_cb", "dbg_cb_ord", "dbg_print", "dbg_print_ord", "pure_used", "pure_unused"],
    ),
)
LEGACY_GROUPS = (("host_callback", ["id_tap_stmt", "id_tap", "id_tap_result", "id_print", "call"]),)
RENDER_ORDER = ("legacy", "current", "oldest")
ROLE_TITLES = {
    "legacy": "Legacy reference: the real host_callback",
    "current": "Current JAX",
    "oldest": "Oldest supported JAX",
}


def _version(runs: dict) -> str:
    return runs[str(max(DEVICE_COUNTS))]["meta"]["jax"]


def grid_section(role: str, runs: dict, notes: Notes) -> list[str]:
    top = str(max(DEVICE_COUNTS))
    meta, probes = runs[top]["meta"], runs[top]["probes"]
    out = [
        f"### {ROLE_TITLES[role]} (jax {meta['jax']})",
        "",
        f"jax {meta['jax']}, jaxlib {meta['jaxlib']}, numpy {meta['numpy']}, "
        f"Python {meta['python']}, {meta['device_count']} CPU devices.",
        "",
    ]
    for title, spellings in LEGACY_GROUPS if role == "legacy" else MODERN_GROUPS:
        out += [f"#### {title} on jax {meta['jax']}", ""]
        out.append("| context | " + " | ".join(f"`{s}`" for s in spellings) + " |")
        out.append("|---" * (len(spellings) + 1) + "|")
        for ctx in CONTEXTS:
            cells = [cell(probes.get(f"grid/{s}/{ctx}"), notes) for s in spellings]
            out.append(f"| {ctx} | " + " | ".join(cells) + " |")
        out.append("")
    return out


def _changed_cells(left: dict, right: dict, notes: Notes) -> list[tuple[str, str, str]]:
    rows = []
    for key in sorted(left):
        if key in right and cell(left[key], notes) != cell(right[key], notes):
            rows.append((key, cell(left[key], notes), cell(right[key], notes)))
    return rows


def _outcome(result: dict) -> tuple:
    return result["status"], result.get("error"), result.get("value_ok")


def device_count_section(roles: dict, notes: Notes) -> list[str]:
    few, many = str(min(DEVICE_COUNTS)), str(max(DEVICE_COUNTS))
    out = [
        f"### Where the device count matters ({many} devices vs {few})",
        "",
        "Every grid probe ran again with 1 CPU device. Where a probe works with both, the host"
        " calls scale with the devices as expected (pmap: one call per device; sharded jit: one"
        " call with the whole array; shard_map: one per shard); listed here are the probes whose"
        " outcome (works, fails and why, right value) changes.",
        "",
    ]
    rows = []
    for role in RENDER_ORDER:
        if role in roles and few in roles[role]:
            runs = roles[role]
            for key, result in sorted(runs[many]["probes"].items()):
                other = runs[few]["probes"].get(key)
                if other is not None and _outcome(result) != _outcome(other):
                    rows.append(
                        (f"jax {_version(runs)}", key, cell(result, notes), cell(other, notes))
                    )
    if not rows:
        return out + ["No probe differs.", ""]
    out += [f"| jax | probe | {many} devices | {few} device |", "|---|---|---|---|"]
    out += [f"| {v} | `{k}` | {a} | {b} |" for v, k, a, b in rows]
    return out + [""]


def version_section(roles: dict, notes: Notes) -> list[str]:
    if "current" not in roles or "oldest" not in roles:
        return []
    old, new = roles["oldest"], roles["current"]
    out = [f"### Differences between jax {_version(old)} and jax {_version(new)}", ""]
    rows, missing = [], set()
    for devices in map(str, DEVICE_COUNTS):
        if devices in old and devices in new:
            changed = _changed_cells(old[devices]["probes"], new[devices]["probes"], notes)
            for key, a, b in changed:
                if "n/a" in (a, b):
                    only = _version(old) if b == "n/a" else _version(new)
                    missing.add(f"{key.split('/')[-1]} (only in jax {only})")
                else:
                    rows.append((devices, key, a, b))
    if missing:
        out += [f"Not in both releases: {', '.join(sorted(missing))}.", ""]
    if not rows:
        return out + ["No other probe differs.", ""]
    out += [
        f"| devices | probe | jax {_version(old)} | jax {_version(new)} |",
        "|---|---|---|---|",
    ]
    out += [f"| {d} | `{k}` | {a} | {b} |" for d, k, a, b in rows]
    return out + [""]


ARG_TREE_LEAVES = ["float32[3]", "int32[]", "bool[2]", "float32[]", None]


def _leaf_kind(leaf: str) -> str:
    """A leaf's type and numpy flags, without dtype and shape."""
    match = LEAF.match(leaf)
    return (match["type"] + match["flags"]) if match else leaf


def _argtypes_cell(result: dict, notes: Notes) -> str:
    calls = result.get("calls") or []
    if result["status"] != "ok" or len(calls) != 1:
        return cell(result, notes)
    leaves = calls[0]["args"]
    shapes = [m["dtype"] + m["shape"] if m["shape"] else None for m in map(LEAF.match, leaves)]
    kinds = sorted({_leaf_kind(leaf) for leaf in leaves if leaf != "NoneType"})
    text = " and ".join(kinds)
    text += ", dtypes and shapes kept" if shapes == ARG_TREE_LEAVES else f": {leaves}"
    reprs = sorted(set(calls[0]["reprs"]) - {"None"})
    return text + "; None passed as None; repr " + ", ".join(f"`{r}(`" for r in reprs)


def types_section(roles: dict) -> list[str]:
    """Which argument types the host functions saw across the whole grid, per spelling."""
    top = str(max(DEVICE_COUNTS))
    out = ["### Argument types the host functions saw in the grid", ""]
    out += ["| jax | spelling | leaf types seen in all contexts |", "|---|---|---|"]
    for role in RENDER_ORDER:
        if role not in roles:
            continue
        probes = roles[role][top]["probes"]
        for name, sp in SPELLINGS.items():
            if sp["kind"] != role_kind(role):
                continue
            kinds = set()
            for ctx in CONTEXTS:
                for call in probes.get(f"grid/{name}/{ctx}", {}).get("calls") or []:
                    kinds.update(_leaf_kind(leaf) for leaf in call["args"])
            seen = ", ".join(sorted(kinds)) or "(no call)"
            out.append(f"| {_version(roles[role])} | `{name}` | {seen} |")
    return out + [""]


def _plain_cell(result: dict, notes: Notes) -> str:
    return cell(result, notes)


def _result_cell(result: dict, notes: Notes) -> str:
    text = cell(result, notes)
    if result["status"] == "ok":
        text += f", result {result['out_dtype']}"
    return text


def _raise_cell(result: dict, notes: Notes) -> str:
    if result["status"] != "ok":
        return cell(result, notes)
    at_call = notes.ref(result["at_call"]) if result["at_call"] else "nothing"
    if result.get("at_call_is_jax_errors_JaxRuntimeError"):
        at_call += " (a `jax.errors.JaxRuntimeError`)"
    elif result.get("at_call_is_RuntimeError"):
        at_call += " (a RuntimeError)"
    at_barrier = notes.ref(result["at_barrier"]) if result["at_barrier"] else "nothing"
    return f"at the call: {at_call}; at the barrier: {at_barrier}"


def _seen_cell(result: dict, notes: Notes) -> str:
    """What the host function saw, as it wrote it (`calls`: strings), or the failure."""
    if result["status"] != "ok":
        return cell(result, notes)
    return "✓ " + "; ".join(notes.ref(c) if len(c) > 60 else c for c in result["seen"])


def _dtype_cell(result: dict, notes: Notes) -> str:
    text = cell(result, notes)
    return text + f", result {result['out_dtype']}" if result["status"] == "ok" else text


def _printed_cell(result: dict, notes: Notes) -> str:
    if result["status"] != "ok":
        return cell(result, notes)
    return "`" + result["printed"].strip().replace("\n", "⏎ ") + "`"


def _order_cell(result: dict, notes: Notes) -> str:
    if result["status"] != "ok":
        return cell(result, notes)
    seen = " / ".join(f"`{s}`" for s in result["sequences"])
    kept = "kept" if result["in_program_order"] else "**not kept**"
    return f"{kept}: {seen}"


def _purity_cell(result: dict, notes: Notes) -> str:
    if result["status"] != "ok":
        return cell(result, notes)
    if "events" in result:
        return f"`{' '.join(result['events'])}`, read {result['values_read']}"
    text = f"{result['calls']} call{'s' if result['calls'] != 1 else ''}"
    if "distinct_values" in result:
        text += f", {result['distinct_values']} distinct value"
        text += "s" if result["distinct_values"] != 1 else ""
    return text


def _sync_cell(result: dict, notes: Notes) -> str:
    if result["status"] != "ok":
        return cell(result, notes)
    return (
        f"{result['after_return']} / {result['after_block_until_ready']} / "
        f"{result['after_barrier']}"
    )


def _device_cell(result: dict, notes: Notes) -> str:
    text = cell(result, notes)
    devices = [c["device"] for c in result.get("calls") or [] if "device" in c]
    if devices:
        text += f"; devices {devices}"
    return text


FOCUSED_SECTIONS = (  # family, title, explanation, cell
    (
        "argtypes",
        "What the host function receives",
        f"One call in jit with the pytree {ARG_TREE_TEXT}; `/tree_np_array` and `/tree_np_asarray`"
        " wrap the host function as `lambda *a: f(*jax.tree.map(np.array, a))` (np.asarray).",
        _argtypes_cell,
    ),
    (
        "return",
        "Whether the host function's return value matters",
        "A callback without result (`io_callback(f, None, x)`, `jax.debug.callback`, `id_tap`)"
        " whose host function returns the named value, in jit.",
        _plain_cell,
    ),
    (
        "result",
        "What a host function with a result may return",
        "Result shape float32[3] (`python_float`, `np_float64_scalar`: float32[]); the host"
        " returns the named kind.",
        _result_cell,
    ),
    (
        "raise",
        "Where an exception raised in the host function arrives",
        "In jit; 'at the call' is the jitted call and block_until_ready, 'at the barrier' is"
        " `jax.effects_barrier()` and, on legacy, `barrier_wait()`.",
        _raise_cell,
    ),
    (
        "writeable",
        "Whether the host function may make its argument writeable",
        "In jit, the host function runs `x.flags.writeable = True` on its float32[3] argument;"
        " the wraps as above, and `/tree_np_array_readonly`: `np.array` with the flag switched"
        " off (the compat runtime's arrays).",
        _seen_cell,
    ),
    (
        "x64_scalar_result_shape",
        "A scalar result shape in 64-bit mode",
        '`jax.config.update("jax_enable_x64", True)`, then in jit a host function returning'
        " `np.float64(v.sum())`: legacy `call(f, x, result_shape=1.0)`, and pure_callback with"
        ' `ShapeDtypeStruct((), "float32")` or `ShapeDtypeStruct((), canonicalize_dtype(float))`.',
        _dtype_cell,
    ),
    (
        "print_text",
        "What id_print and jax.debug.print write for 0-d floats and a tuple in a variable",
        "In jit: a float32 3.762, a float32 2.0, then `pair = (array([1., 2.5]), int32 4)`,"
        ' each printed with `what=` (legacy) or `"what: ...\\n{}"` (jax.debug.print).',
        _printed_cell,
    ),
    (
        "order",
        "Program order between callbacks",
        "A(i) on a value computed late, then B(i), then C(i): `one_function` in one jitted"
        " fori_loop of 3 steps; `separate_functions`: A, B and C each in its own jitted function,"
        " the three called in turn;"
        f" {ORDER_REPEATS} repeats each, every distinct sequence shown.",
        _order_cell,
    ),
    (
        "purity",
        "Purity: numpy.random in a loop, duplicate calls, reading host state a tap wrote",
        "`random_no_args`: a host function of no arguments returning `rng.random()` in a jitted"
        " fori_loop of 3 steps; `random_loop_index`: the same taking the loop index;"
        " `duplicate_call`: `f(x) + f(x)`; `read_after_tap`: each step an ordered tap stores i,"
        " then the callback returns what is stored (right: read [0, 1, 2]).",
        _purity_cell,
    ),
    (
        "sync",
        "When the host function has run",
        "Host calls done (of 1; the host function sleeps 0.3 s) when the jitted call returns /"
        " after block_until_ready / after the barrier.",
        _sync_cell,
    ),
    (
        "device",
        "Devices: pinning to device 1, and which device calls the host",
        "Legacy: `tap_with_device=True` (devices: the `device` argument's id per call),"
        " `device_index=1`; modern: `sharding=SingleDeviceSharding(jax.devices()[1])`.",
        _device_cell,
    ),
)


def focused_section(roles: dict, family, title, explanation, cell_of, notes: Notes) -> list[str]:
    top = str(max(DEVICE_COUNTS))
    present = [r for r in RENDER_ORDER if r in roles]
    keys: list[str] = []
    for role in present:
        for key in roles[role][top]["probes"]:
            if key.startswith(family + "/") and key not in keys:
                keys.append(key)
    header = " | ".join(f"jax {_version(roles[r])}" for r in present)
    out = [f"### {title}", "", explanation, "", f"| probe | {header} |"]
    out.append("|---" * (len(present) + 1) + "|")
    for key in sorted(keys):
        cells = []
        for role in present:
            result = roles[role][top]["probes"].get(key)
            cells.append("–" if result is None else cell_of(result, notes))
        out.append(f"| `{key[len(family) + 1 :]}` | " + " | ".join(cells) + " |")
    return out + [""]


LEGEND = """\
Generated by `scripts/measure_callback_facts.py` from `docs/callback_facts.json`: do not edit
by hand. Grid cells: ✓ it works, then the host calls in order as `count×argument shape` (float32
unless named; `(batch)`, `(transpose)`: the legacy `transforms` the tap received); **wrong
value** when the output differs from the same program with the callback replaced by jnp code;
✗ it fails, with the exception in the footnotes (`after ...`: calls made before it failed);
n/a: the API does not exist in that release. The spellings and contexts are listed below the
tables."""


def render(data: dict) -> str:
    notes = Notes()
    roles = data["roles"]
    out = [BEGIN, "", LEGEND, ""]
    for role in RENDER_ORDER:
        if role in roles:
            out += grid_section(role, roles[role], notes)
    out += device_count_section(roles, notes)
    out += version_section(roles, notes)
    out += types_section(roles)
    for family, title, explanation, cell_of in FOCUSED_SECTIONS:
        out += focused_section(roles, family, title, explanation, cell_of, notes)
    out += ["### Spellings", "", "| name | code |", "|---|---|"]
    out += [f"| `{n}` | `{s['code']}` |" for n, s in SPELLINGS.items()]
    out += ["", "### Contexts", "", "| name | program |", "|---|---|"]
    out += [f"| {n} | `{c['code']}` |" for n, c in CONTEXTS.items()]
    out += ["", "### Footnotes: exceptions", "", *notes.render(), "", END]
    return "\n".join(out)


def replace_generated(text: str, data: dict) -> str:
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + render(data) + text[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--role", action="append", choices=ROLES, help="measure only these")
    parser.add_argument("--python", action="append", default=[], metavar="ROLE=PATH")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--isolation", choices=("fork", "exec"), default="fork")
    parser.add_argument(
        "--only",
        metavar="PREFIX",
        help="measure only the probes whose id starts with PREFIX, kept with the others' data",
    )
    parser.add_argument("--render", action="store_true", help="only regenerate the doc tables")
    parser.add_argument("--check", action="store_true", help="exit 1 if the doc tables are stale")
    parser.add_argument("--data", type=Path, default=DATA, help="the JSON to read and write")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--probe", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.isolation)
        return 0
    if args.probe:
        _load_jax()
        child_main(*args.probe)
        return 0
    data = load_data(args.data)
    if args.check:
        text = DOC.read_text(encoding="utf-8")
        stale = replace_generated(text, data) != text
        print(f"{DOC.relative_to(REPO)}: {'stale' if stale else 'up to date'}")
        return 1 if stale else 0
    if not args.render:
        overrides = dict(p.split("=", 1) for p in args.python)
        for role in args.role or ROLES:
            python = interpreter(role, overrides)
            started = time.monotonic()
            if args.only:
                merge_probes(data, role, python, args.only, args.jobs, args.isolation)
            else:
                data["roles"][role] = measure_role(role, python, args.jobs, args.isolation)
            print(f"{role}: {python} measured in {time.monotonic() - started:.0f} s", flush=True)
        write_data(data, args.data)
        data = load_data(args.data)  # render exactly what --check and the tests will read
    text = DOC.read_text(encoding="utf-8")
    new = replace_generated(text, data)
    if new != text:
        DOC.write_text(new, encoding="utf-8")
    print(f"{DOC.relative_to(REPO)}: {'updated' if new != text else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
