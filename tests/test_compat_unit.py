"""Direct tests of compat.host_callback semantics (fast path in-process; the public-only
path by re-running this module in a subprocess with HCMIGRATE_COMPAT_PUBLIC_ONLY=1)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from compat import host_callback as hcb
from compat import _runtime

REPO = Path(__file__).resolve().parent.parent
PUBLIC = os.environ.get("HCMIGRATE_COMPAT_PUBLIC_ONLY", "") not in ("", "0")


def python(*args, cwd=None, **env) -> subprocess.CompletedProcess:
    """Run this interpreter on ``args`` with the repository importable; returns on success."""
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path, PYTHONWARNINGS="ignore", **env)
    p = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-3000:]
    return p


def recorder():
    calls = []

    def tap(arg, transforms, **kw):
        calls.append((arg, transforms, kw))

    return calls, tap


def test_path_selection_matches_environment():
    assert hcb.using_fast_path() is (not PUBLIC)
    assert hcb.fast_path_available()


def test_tap_receives_numpy_pytree_and_transforms():
    calls, tap = recorder()
    x = jnp.arange(3.0)
    out = jax.jit(lambda v: hcb.id_tap(tap, {"a": v, "b": (v[0], None)}))(x)
    assert isinstance(out["a"], jax.Array)
    ((arg, transforms, kw),) = calls
    assert transforms == () and kw == {}
    assert isinstance(arg["a"], np.ndarray) and arg["a"].tolist() == [0, 1, 2]
    assert arg["b"][1] is None and isinstance(arg["b"][0], np.ndarray)


def test_tapped_arrays_are_owned_copies():
    kept = []
    f = jax.jit(lambda v: hcb.id_tap(lambda a, t: kept.append(a), v))
    f(jnp.ones(4))
    f(jnp.zeros(4))
    assert kept[0].tolist() == [1] * 4 and kept[1].tolist() == [0] * 4


def test_result_is_returned_and_not_sent():
    calls, tap = recorder()
    r = jax.jit(lambda v: hcb.id_tap(tap, v, result=v * 10))(jnp.float32(2))
    assert float(r) == 20.0 and calls[0][0].tolist() == 2.0


def test_vmap_one_call_with_batch_dims_and_nested_innermost_first():
    calls, tap = recorder()
    xs = jnp.ones((2, 3))
    jax.vmap(lambda x, c: hcb.id_tap(tap, (x, c)), in_axes=(0, None))(xs, 1.0)
    jax.vmap(jax.vmap(lambda x: hcb.id_tap(tap, x)), in_axes=1)(xs)
    assert len(calls) == 2
    assert calls[0][1] == (("batch", {"batch_dims": (0, None)}),)
    assert calls[0][0][0].shape == (2, 3)
    assert calls[1][1] == (("batch", {"batch_dims": (0,)}), ("batch", {"batch_dims": (1,)}))


def test_grad_taps_primal_once_and_transpose_taps_cotangent():
    calls, tap = recorder()
    g = jax.grad(lambda x: jnp.sin(hcb.id_tap(tap, x * 2)))(jnp.float32(0))
    assert float(g) == 2.0
    assert len(calls) == 1 and calls[0][1] == () and calls[0][0].tolist() == 0.0
    calls.clear()
    ct = jax.linear_transpose(lambda x: hcb.id_tap(tap, x) * 3.0, jnp.float32(1))(jnp.float32(2))
    assert float(ct[0]) == 6.0
    assert calls[0][1] == (("transpose", {}),) and calls[0][0].tolist() == 6.0


def test_program_order_and_unused_results_kept():
    order = []

    @jax.jit
    def f(x):
        for i in range(5):
            hcb.id_tap(lambda a, t, i=i: order.append(i), x + i)
        hcb.call(lambda a: order.append("call"), x)
        return x

    f(jnp.float32(0))
    assert order == [0, 1, 2, 3, 4, "call"]


def test_tap_in_fori_loop_with_cond_progress_bar():
    seen = []

    @jax.jit
    def run():
        def body(i, acc):
            i = jax.lax.cond(
                i % 3 == 0,
                lambda _: hcb.id_tap(lambda a, t: seen.append(int(a)), i, result=i),
                lambda _: i,
                None,
            )
            return acc + i

        return jax.lax.fori_loop(0, 10, body, 0)

    assert int(run()) == 45 and seen == [0, 3, 6, 9]


def test_tap_with_device_and_call_with_device():
    got = []
    jax.jit(lambda v: hcb.id_tap(lambda a, t, device: got.append(device), v, tap_with_device=True))(
        1.0
    )
    r = hcb.call(
        lambda a, device: (got.append(device), a + 1)[1],
        jnp.float32(1),
        result_shape=1.0,
        call_with_device=True,
    )
    assert float(r) == 2.0
    assert all(isinstance(d, jax.Device) for d in got) and got[0] == jax.devices()[0]


def test_device_index_nonzero_on_cpu_fails_like_legacy():
    with jax.default_device(jax.devices("cpu")[0]):  # (the default device may be a GPU)
        with pytest.raises(ValueError, match="device_index feature on CPU"):
            jax.jit(lambda v: hcb.id_tap(lambda a, t: None, v, device_index=1))(1.0)


def test_device_index_nonzero_on_cpu_runs_with_outfeed_like_legacy():
    """Legacy ran such a tap when JAX_HOST_CALLBACK_OUTFEED=1 selected outfeed (saxml's
    servables marked their streams done this way)."""
    script = (
        "import jax\n"
        "from compat import host_callback as hcb\n"
        "seen = []\n"
        "tap = lambda a, t, device: seen.append((float(a), type(device).__name__))\n"
        "f = jax.jit(lambda v: hcb.id_tap(tap, v * 2, device_index=1, tap_with_device=True))\n"
        "out = f(1.5)\n"
        "hcb.barrier_wait()\n"
        "print(float(out), seen)\n"
    )
    run = python(
        "-c",
        script,
        XLA_FLAGS="--xla_force_host_platform_device_count=2",
        JAX_HOST_CALLBACK_OUTFEED="1",
        JAX_PLATFORMS="cpu",  # (on a machine with a GPU too)
    )
    assert run.stdout.strip() == "3.0 [(3.0, 'Device')]"


@pytest.mark.parametrize(
    "result_shape,ret,expected_dtype,expected_shape",
    [
        (jax.ShapeDtypeStruct((2,), jnp.float32), np.ones(2), np.float32, (2,)),
        (np.zeros(2, np.float64), np.ones(2), np.float32, (2,)),
        (1.0, 3.0, np.float32, ()),
        (1, 3, np.int32, ()),
        (True, False, np.bool_, ()),
        (jnp.zeros((2, 2), jnp.int8), np.ones((2, 2), np.int8), np.int8, (2, 2)),
    ],
)
def test_call_result_shape_forms(result_shape, ret, expected_dtype, expected_shape):
    out = jax.jit(lambda v: hcb.call(lambda a: ret, v, result_shape=result_shape))(jnp.float32(0))
    assert out.dtype == expected_dtype and out.shape == expected_shape


def test_call_pytree_none_and_empty_results():
    out = hcb.call(lambda a: (a, {"k": np.int32(1)}), jnp.float32(2), result_shape=(1.0, {"k": 1}))
    assert float(out[0]) == 2.0 and int(out[1]["k"]) == 1
    assert hcb.call(lambda a: None, 1.0) is None
    assert hcb.call(lambda a: None, 1.0, result_shape=None) is None
    assert hcb.call(lambda a: (), 1.0, result_shape=()) == ()


@pytest.mark.parametrize(
    "ret,match",
    [
        (lambda a: (a, a), "should have returned a result with pytree"),
        (lambda a: np.ones(3, np.float32), "abstract values"),
        (lambda a: np.int32(1), "abstract values"),
    ],
)
def test_call_wrong_result_raises_clearly(ret, match):
    with pytest.raises(Exception, match=match):
        jax.block_until_ready(jax.jit(lambda v: hcb.call(ret, v, result_shape=v))(jnp.float32(1)))


def test_call_bad_result_shape_and_under_grad_vmap():
    with pytest.raises(ValueError, match="result_shape should be a pytree"):
        hcb.call(lambda a: a, 1.0, result_shape="abc")
    with pytest.raises(NotImplementedError, match="JVP rule is implemented only for id_tap"):
        jax.grad(lambda v: hcb.call(lambda a: a, v, result_shape=v))(1.0)
    with pytest.raises(NotImplementedError, match="batching rules are implemented only for id_tap"):
        jax.vmap(lambda v: hcb.call(lambda a: a, v, result_shape=v))(jnp.ones(2))


def test_id_tap_kwargs_type_error_and_seed_spellings():
    with pytest.raises(TypeError, match="Support for \\*\\*kwargs in ``id_tap`` has been removed"):
        hcb.id_tap(lambda a, t: None, 1.0, what="x")
    got = []
    hcb.id_tap(lambda a, t: got.append(("with", t)), 1.0, tap_with_transform=True)
    hcb.id_tap(lambda a: got.append(("without", a.tolist())), 2.0, tap_with_transform=False)
    assert got == [("with", ()), ("without", 2.0)]
    out = hcb.call(
        lambda a: a * 2, jnp.float32(2), result_shape_dtypes=jax.ShapeDtypeStruct((), jnp.float32)
    )
    assert float(out) == 4.0
    with pytest.raises(TypeError):
        hcb.call(lambda a: a, 1.0, result_shape=1.0, result_shape_dtypes=1.0)


def test_id_print_output_stream_kwargs_and_tuples():
    buf = io.StringIO()
    r = hcb.id_print((jnp.float32(1), jnp.int32(2)), what="t", output_stream=buf)
    assert buf.getvalue() == "what: t\n( 1. 2 )\n"
    assert float(r[0]) == 1.0
    buf = io.StringIO()
    jax.vmap(lambda v: hcb.id_print(v, output_stream=buf))(jnp.arange(2.0))
    assert buf.getvalue() == "transforms: [('batch', {'batch_dims': (0,)})]\n[0. 1.]\n"


def test_errors_reach_user_and_barrier_wait():
    def bad(a, t):
        raise ValueError("boom-unit")

    with pytest.raises(Exception, match="boom-unit"):
        jax.block_until_ready(jax.jit(lambda v: hcb.id_tap(bad, v))(1.0))
    hcb.barrier_wait()  # the error was delivered at the call: nothing pending (legacy CPU)
    assert hcb.TapFunctionException is hcb.CallbackException
    assert [f.value for f in hcb.CallbackFlavor] == [1, 2, 3]


def test_remat_reruns_the_tap_like_legacy_or_is_refused_on_the_public_path():
    calls, tap = recorder()
    f = jax.checkpoint(lambda x: jnp.sin(hcb.id_tap(tap, x * 2)))
    if PUBLIC:  # io_callback's effect is refused by JAX's remat partial eval (documented)
        assert not _runtime.remat_supported()
        with pytest.raises(NotImplementedError, match="checkpoint"):
            jax.grad(f)(1.0)
        return
    assert _runtime.remat_supported()
    g = jax.grad(f)(jnp.float32(0.5))
    assert float(g) == pytest.approx(2 * np.cos(1.0))
    # forward pass, then again when the residuals are rematerialised
    assert [(float(a), t) for a, t, _ in calls] == [(1.0, ()), (1.0, ())]
    calls.clear()
    saved = jax.checkpoint(
        lambda x: jnp.sin(hcb.id_tap(tap, x * 2)),
        policy=jax.checkpoint_policies.everything_saveable,
    )
    jax.jit(jax.grad(saved))(jnp.float32(0.5))
    assert len(calls) == 1  # a saving policy keeps the tap's output: it runs once


def test_pmap_fallback_effect_only_inside_pmap():
    # outside pmap the effect is always the ordered one
    jaxpr = jax.make_jaxpr(lambda v: hcb.id_tap(lambda a, t: None, v))(1.0)
    assert _runtime.ORDERED_EFFECT in jaxpr.effects
    jaxpr = jax.make_jaxpr(jax.vmap(lambda v: hcb.id_tap(lambda a, t: None, v), axis_name="i"))(
        jnp.ones(2)
    )
    assert _runtime.ORDERED_EFFECT in jaxpr.effects
    assert _runtime._PMAP.in_pmap() is False
    if tuple(jax.__version_info__[:2]) >= (0, 8):
        assert not _runtime._pmap_refuses_ordered_effects()


def test_id_tap_dep_p_and_id_p():
    assert float(hcb.id_tap_dep_p.bind(jnp.float32(3), jnp.float32(4))) == 3.0
    g = jax.grad(lambda x: hcb.id_tap_dep_p.bind(x * 2, x))(1.0)
    assert float(g) == 2.0
    assert [float(v) for v in jax.jit(lambda a, b: hcb.id_p.bind(a, b))(1.0, 2.0)] == [1.0, 2.0]


def test_install_and_uninstall():
    import compat

    compat.install()
    try:
        import jax.experimental.host_callback as m

        from jax.experimental import host_callback as m2

        assert m is hcb and m2 is hcb
        assert sys.modules["jax.experimental.host_callback"] is hcb
    finally:
        compat.uninstall()
    assert sys.modules.get("jax.experimental.host_callback") is not hcb


def test_python_dash_m_compat_runs_script_with_argv(tmp_path):
    script = tmp_path / "legacy.py"
    script.write_text(
        textwrap.dedent("""
        import sys
        from jax.experimental import host_callback as hcb
        import jax.numpy as jnp
        print("argv", sys.argv[1:], __name__, sys.argv[0].endswith("legacy.py"))
        hcb.id_print(jnp.array([1.0, 5.0]) * 2, what="doubled")
    """)
    )
    p = python("-m", "compat", str(script), "a", "--b", cwd=tmp_path)
    assert p.stdout == "argv ['a', '--b'] __main__ True\nwhat: doubled\n[ 2. 10.]\n"


def test_compat_imports_only_jax_numpy_stdlib():
    code = (
        "import sys, compat, hcmigrate_compat, compat.__main__, hcmigrate_compat.__main__\n"
        "print('jax' in sys.modules)\n"
        "import compat.host_callback\n"
        "print([m for m in sys.modules if m.split('.')[0] in ('libcst', 'click', 'hcmigrate')])"
    )
    assert python("-c", code).stdout.split() == ["False", "[]"]


def test_compat_is_hcmigrate_compat_one_runtime_per_process():
    code = (
        "import sys, compat, compat.host_callback as a, compat._runtime as r\n"
        "from compat import host_callback as b, _host\n"
        "import hcmigrate_compat, hcmigrate_compat.host_callback as c, hcmigrate_compat._runtime\n"
        "import hcmigrate_compat._host\n"
        "print(compat is hcmigrate_compat, a is b is c, r is hcmigrate_compat._runtime,\n"
        "      _host is hcmigrate_compat._host, compat.install is hcmigrate_compat.install)\n"
        "modules = {id(m): m for m in list(sys.modules.values())}.values()  # distinct objects\n"
        "files = [getattr(m, '__file__', None) for m in modules]\n"
        "runtime = [f for f in files if f and 'hcmigrate_compat' in f]\n"
        "print(len(runtime) == len(set(runtime)))  # no module of it loaded twice\n"
    )
    assert python("-c", code).stdout.split() == ["True"] * 6


# Runs on 4 forced CPU devices (CI has no accelerator); prints one JSON object.
MULTI_DEVICE_PROGRAM = r"""
import json, sys
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
try:
    from jax import shard_map
except ImportError:  # JAX < 0.7
    from jax.experimental.shard_map import shard_map
from compat import host_callback as hcb

jax.config.update("jax_enable_checks", True)  # as JAX's own test suite runs
out = {}
got = []
n = jax.device_count()
xs = jnp.arange(n * 2.0).reshape(n, 2)
tap_dev = lambda name: (lambda a, t, device: got.append((name, device.id, a.tolist())))
tap = lambda name: (lambda a, t: got.append((name, None, a.tolist())))

def collect(key, thunk):
    got.clear()
    try:
        out[key] = np.asarray(jax.block_until_ready(thunk())).tolist()
    except Exception as e:
        out[key] = "error: " + type(e).__name__ + ": " + str(e)
    hcb.barrier_wait()
    out[key + " calls"] = sorted(got, key=str)

collect("pmap", lambda: jax.pmap(lambda v: hcb.id_tap(tap_dev("p"), v, tap_with_device=True))(xs))
collect("pmap call", lambda: jax.pmap(lambda v: hcb.call(
    lambda a, device: a + device.id, v, result_shape=v, call_with_device=True))(xs))
collect("jit of pmap", lambda: jax.jit(jax.pmap(lambda v: hcb.id_tap(tap_dev("in"), v, tap_with_device=True)))(xs))
mesh = Mesh(np.array(jax.devices()), ("d",))
sm = lambda f: jax.jit(shard_map(f, mesh=mesh, in_specs=P("d"), out_specs=P("d")))
sharded = jax.device_put(xs, NamedSharding(mesh, P("d")))
collect("shard_map", lambda: sm(lambda v: hcb.id_tap(tap("s"), v * 2))(sharded))
collect("shard_map device", lambda: sm(lambda v: hcb.id_tap(tap_dev("s"), v * 2, tap_with_device=True))(sharded))
collect("shard_map call", lambda: sm(lambda v: hcb.call(lambda a: a + 1, v, result_shape=v))(sharded))
collect("sharded jit", lambda: jax.jit(lambda v: hcb.id_tap(tap_dev("j"), v, tap_with_device=True))(sharded))
collect("outer taps of jit of pmap", lambda: jax.jit(
    lambda v: hcb.id_tap(tap_dev("outer"), jax.pmap(lambda w: w * 2)(v), tap_with_device=True))(xs))

def flaky(a, t):
    if flaky.on:
        raise ValueError("flaky")
flaky.on = True
step = jax.pmap(lambda v: hcb.id_tap(flaky, v) + 1)
collect("failing pmap", lambda: step(xs))
flaky.on = False
collect("same pmap after the failure", lambda: step(xs))
collect("new pmap after the failure", lambda: jax.pmap(lambda v: hcb.call(lambda a: a * 2, v, result_shape=v))(xs))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def on_four_devices():
    p = python(
        "-c",
        MULTI_DEVICE_PROGRAM,
        XLA_FLAGS="--xla_force_host_platform_device_count=4",
        JAX_PLATFORMS="cpu",
    )
    return json.loads(p.stdout.splitlines()[-1])


ROWS = [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]]


def test_pmap_each_device_gets_its_shard_and_device(on_four_devices):
    got = on_four_devices
    assert got["pmap"] == ROWS
    assert got["pmap call"] == [[0.0, 1.0], [3.0, 4.0], [6.0, 7.0], [9.0, 10.0]] or PUBLIC
    if PUBLIC:  # the public-only path cannot tell pmap's devices apart (documented)
        assert sorted(a for _, _, a in got["pmap calls"]) == ROWS
        return
    assert got["pmap calls"] == [["p", i, row] for i, row in enumerate(ROWS)]
    assert got["jit of pmap calls"] == [["in", i, row] for i, row in enumerate(ROWS)]


def test_shard_map_calls_once_per_device_with_its_shard(on_four_devices):
    # Legacy refused taps in shard_map ("NotImplementedError: outfeed rewrite shard_map");
    # compat runs them like pmap: once per device, with the device's shard.
    got = on_four_devices
    doubled = [[2 * v for v in row] for row in ROWS]
    assert got["shard_map"] == doubled
    assert sorted(a for _, _, a in got["shard_map calls"]) == [[row] for row in doubled]
    assert got["shard_map call"] == [[v + 1 for v in row] for row in ROWS]
    if not PUBLIC:
        assert got["shard_map device calls"] == [["s", i, [row]] for i, row in enumerate(doubled)]


def test_sharded_jit_calls_once_with_the_whole_array(on_four_devices):
    got = on_four_devices
    assert got["sharded jit"] == ROWS
    assert got["sharded jit calls"] == [["j", 0, ROWS]]


def test_jit_of_pmap_outer_code_taps_like_the_jax_version_runs_it(on_four_devices):
    # Documented difference: legacy ran code around a pmap inside jit once per device; JAX
    # >= 0.8 builds pmap on shard_map and runs that code once, as one global computation.
    calls = on_four_devices["outer taps of jit of pmap calls"]
    if jax.__version_info__[:2] >= (0, 8):
        assert calls == [["outer", 0, [[2 * v for v in row] for row in ROWS]]]
    elif not PUBLIC:
        assert [c[1] for c in calls] == [0, 1, 2, 3]


def test_a_failing_tap_under_pmap_leaves_later_pmaps_working(on_four_devices):
    # Legacy 0.4.30 failed every later multi-device computation with the first error; JAX's
    # runtime tokens did the same to compat (issue 17). compat drops the failed tokens.
    got = on_four_devices
    assert got["failing pmap"].startswith("error: ") and "ValueError: flaky" in got["failing pmap"]
    assert got["same pmap after the failure"] == [[v + 1 for v in row] for row in ROWS]
    assert got["new pmap after the failure"] == [[2 * v for v in row] for row in ROWS]


# What the public-only path refuses (JAX's own rules for io_callback's effect), each listed
# in docs/compat.md; the fast path runs all of them as legacy did.
def _tap(v):
    return hcb.id_tap(lambda a, t: None, v)


@jax.custom_jvp
def _custom_jvp_tap(x):
    return _tap(x) * 2


_custom_jvp_tap.defjvp(lambda p, t: (_custom_jvp_tap(p[0]), t[0] * 2))


@jax.custom_vjp
def _custom_vjp_tap(x):
    return _tap(x) * 3


_custom_vjp_tap.defvjp(lambda x: (_custom_vjp_tap(x), None), lambda r, g: (g * 3,))

PUBLIC_PATH_REFUSALS = {
    "checkpoint + grad": (
        lambda: jax.grad(jax.checkpoint(lambda x: jnp.sin(_tap(x))))(1.0),
        ("partial-eval of `checkpoint`", "AD of `checkpoint`"),  # (JAX <= 0.10, 0.11)
    ),
    "vmap of cond": (
        lambda: jax.vmap(lambda x: jax.lax.cond(x > 1, _tap, lambda v: v, x))(jnp.arange(3.0)),
        "vmap-of-cond",
    ),
    "vmap of while, tap in the body": (
        lambda: jax.vmap(lambda x: jax.lax.while_loop(lambda v: v < 2, lambda v: _tap(v + 1), x))(
            jnp.arange(3.0)
        ),
        "Ordered IO effects not supported in vmap",
    ),
    "vmap of while, tap in the condition": (
        lambda: jax.vmap(lambda x: jax.lax.while_loop(lambda v: _tap(v) < 2, lambda v: v + 1, x))(
            jnp.arange(3.0)
        ),
        "Ordered IO effects not supported in vmap",
    ),
    "custom_jvp with jax_enable_checks": (
        lambda: jax.jit(jax.grad(_custom_jvp_tap))(1.0),
        "Effects not supported in `custom_jvp`",
    ),
    "custom_vjp with jax_enable_checks": (
        lambda: jax.jit(_custom_vjp_tap)(1.0),
        "Effects not supported in `custom_vjp`",
    ),
}


@pytest.mark.parametrize("case", sorted(PUBLIC_PATH_REFUSALS))
def test_public_path_refusals_are_the_documented_ones(case):
    thunk, message = PUBLIC_PATH_REFUSALS[case]
    with jax.enable_checks(True):
        if PUBLIC:
            messages = message if isinstance(message, tuple) else (message,)
            with pytest.raises(Exception, match="|".join(map(re.escape, messages))):
                jax.block_until_ready(thunk())
        else:
            jax.block_until_ready(thunk())
    assert f"* {case}" in (REPO / "docs" / "compat.md").read_text()


def test_install_imports_nothing_until_the_program_imports_jax():
    code = (
        "import sys, compat; compat.install(); print('jax' in sys.modules, compat.installed())\n"
        "import jax.experimental.host_callback as m; from jax.experimental import host_callback\n"
        "import compat.host_callback as h; print(m is h, host_callback is h)\n"
        "compat.uninstall(); print(compat.installed(), "
        "sys.modules.get('jax.experimental.host_callback') is h)"
    )
    assert python("-c", code).stdout.split() == ["False", "True", "True", "True", "False", "False"]


@pytest.mark.skipif(PUBLIC, reason="this is the driver of the public-only run")
def test_public_only_path_passes_this_module():
    python(
        "-m",
        "pytest",
        "-q",
        "-x",
        "-p",
        "no:cacheprovider",
        __file__,
        cwd=REPO,
        HCMIGRATE_COMPAT_PUBLIC_ONLY="1",
    )
