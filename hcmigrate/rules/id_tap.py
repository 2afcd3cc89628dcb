"""HCB101/HCB102: `id_tap` -> `jax.debug.callback(tap, arg, ordered=True)` (or compat).

jax.debug.callback runs in every single-device context legacy taps ran in (jit, vmap, grad,
cond, vmap of cond, scan), ignores what the tap returns and is never removed; an ordered
io_callback fails under vmap, grad and vmap of cond (docs/callback-semantics.md), but runs on
several devices, where an ordered jax.debug.callback is refused: a module on several devices
that uses neither gets ordered io_callbacks. A tap that reads `transforms` or its device, or a
module on several devices using vmap or grad (or pmap, before jax 0.8), has no native spelling
that keeps legacy behaviour: it is left as it is, a manual finding naming the two ways forward
(hcmigrate.rules.compat_reasons).
"""

from __future__ import annotations

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.rules.compat_reasons import (
    patches_internals,
    io_chain_note,
    compat_reason,
    no_native_spelling,
    several_devices_reason,
    tap_note,
)
from hcmigrate.rules.context import CallSite, RuleContext
from hcmigrate.rules.nodes import arg, parse
from hcmigrate.rules.spec import Example, LegacyCall, Rule, handles
from hcmigrate.rules.values import with_legacy_value

NATIVE = Rule(
    code="HCB101",
    name="id-tap-to-debug-callback",
    level=Level.FIXED_WITH_NOTE,
    legacy="id_tap(tap, arg, result=r)",
    modern="jax.debug.callback(lambda x: tap1(jax.tree.map(np.array, x)), arg, ordered=True)  # value: r (or arg)",
    summary="Tap through an ordered jax.debug.callback with numpy arguments; an unused transforms parameter goes.",
    behaviour_note=(
        "Under a vmap this module does not show the tap runs once per element (legacy: once, "
        "with the whole batch and `transforms`); it fails on more than one device (a module "
        "run on several devices through sharded jit, or under the `several-devices` setting, "
        "gets an ordered io_callback, which fails under vmap and grad); ordered apart from "
        "ordered io_callbacks, this module's (the message says so) or another's in the same "
        "computation."
    ),
    examples=(
        Example(
            title="a tap defined in the module loses its `transforms` parameter; the value flows by name",
            before="""\
from jax.experimental import host_callback as hcb


def show(x, transforms):
    print(x)


def step(x):
    x = hcb.id_tap(show, x)
    return x * 2
""",
            after="""\
import jax
import numpy as np


def show(x):
    print(x)


def step(x):
    jax.debug.callback(
        lambda arg: show(jax.tree_util.tree_map(np.array, arg)), x, ordered=True
    )
    return x * 2
""",
            diagnostics=(
                "1:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "9:9 HCB101 [fixed-with-behaviour-note] id_tap -> jax.debug.callback(..., ordered=True): under vmap it runs once per element (legacy: once, with the whole batch); it fails on more than one device (pmap, sharded jit: see several-devices)",
            ),
        ),
        Example(
            title="inside an expression the new code still evaluates to the tapped value",
            before="""\
from jax.experimental import host_callback as hcb


def step(i):
    return jax.lax.cond(i > 0, lambda v: hcb.id_tap(show, v), lambda v: v, i)
""",
            after="""\
import jax
import numpy as np


def step(i):
    def tap_show(v):
        jax.debug.callback(
            lambda arg: show(jax.tree_util.tree_map(np.array, arg), ()), v, ordered=True
        )
        return v

    return jax.lax.cond(i > 0, tap_show, lambda v: v, i)
""",
            diagnostics=(
                "1:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "5:42 HCB101 [fixed-with-behaviour-note] id_tap -> jax.debug.callback(..., ordered=True): under vmap it runs once per element (legacy: once, with the whole batch); it fails on more than one device (pmap, sharded jit: see several-devices)",
            ),
        ),
        Example(
            title="a module that runs on several devices through sharded jit: an ordered io_callback",
            before="""\
import jax
from jax.experimental import host_callback as hcb
from jax.sharding import NamedSharding, PartitionSpec


def shard_rows(mesh, x):
    return jax.device_put(x, NamedSharding(mesh, PartitionSpec("rows")))


def step(x):
    hcb.id_tap(send, x)
    return x * 2
""",
            after="""\
import jax
import numpy as np
from jax.experimental import io_callback
from jax.sharding import NamedSharding, PartitionSpec


def shard_rows(mesh, x):
    return jax.device_put(x, NamedSharding(mesh, PartitionSpec("rows")))


def step(x):
    def tap_send(arg):
        send(jax.tree_util.tree_map(np.array, arg), ())

    io_callback(tap_send, None, x, ordered=True)
    return x * 2
""",
            diagnostics=(
                "2:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "11:5 HCB101 [fixed-with-behaviour-note] id_tap -> io_callback(..., ordered=True): an ordered io_callback runs on several devices (the module uses NamedSharding) as legacy's did (in a sharded jit once with the whole array, under pmap once per device from jax 0.8), in program order; it fails under vmap and grad, which this module does not use",
            ),
        ),
        Example(
            title="callers run the project on meshes (`several-devices = true`): an ordered io_callback",
            before="""\
from jax.experimental import host_callback as hcb


def decode_step(tokens):
    hcb.id_tap(send, tokens)
    return tokens
""",
            after="""\
import jax
import numpy as np
from jax.experimental import io_callback


def decode_step(tokens):
    def tap_send(arg):
        send(jax.tree_util.tree_map(np.array, arg), ())

    io_callback(tap_send, None, tokens, ordered=True)
    return tokens
""",
            diagnostics=(
                "1:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "5:5 HCB101 [fixed-with-behaviour-note] id_tap -> io_callback(..., ordered=True): an ordered io_callback runs on several devices (the several-devices setting) as legacy's did (in a sharded jit once with the whole array, under pmap once per device from jax 0.8), in program order; it fails under vmap and grad, which this module does not use",
            ),
            options={"several_devices": True},
        ),
        Example(
            title="a module under pmap, for JAX 0.8 and later: an ordered io_callback, once per device",
            before="""\
import jax
from jax.experimental import host_callback as hcb


@jax.pmap
def step(x):
    return hcb.id_tap(send, x)
""",
            after="""\
import jax
import numpy as np
from jax.experimental import io_callback


@jax.pmap
def step(x):
    def tap_send(arg):
        send(jax.tree.map(np.array, arg), ())

    io_callback(tap_send, None, x, ordered=True)
    return x
""",
            diagnostics=(
                "2:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "7:12 HCB101 [fixed-with-behaviour-note] id_tap -> io_callback(..., ordered=True): an ordered io_callback runs on several devices (the module uses pmap) as legacy's did (in a sharded jit once with the whole array, under pmap once per device from jax 0.8), in program order; it fails under vmap and grad, which this module does not use",
            ),
            options={"target_jax": (0, 8, 0)},
        ),
    ),
)
NO_NATIVE = Rule(
    code="HCB102",
    name="id-tap-no-native-spelling",
    level=Level.MANUAL,
    legacy=(
        "id_tap(tap, arg, tap_with_device=True) using the device; device_index != 0; "
        "callback_flavor=; a tap reading `transforms`; under a jax.vmap the module shows; a "
        "module on several devices where ordered callbacks fail"
    ),
    modern="(left as it is: a hand port, or the compat strategy)",
    summary="No native spelling keeps legacy behaviour: the site is left as it is, for a hand "
    'port or the compat runtime chosen for the project (`strategy = "compat"`).',
    examples=(
        Example(
            title="a tap that uses its `device` argument",
            before="""\
from jax.experimental import host_callback as hcb


def show(x, transforms, device):
    print(device, x)


def step(x):
    hcb.id_tap(show, x, tap_with_device=True)
    return x
""",
            after="""\
from jax.experimental import host_callback as hcb


def show(x, transforms, device):
    print(device, x)


def step(x):
    hcb.id_tap(show, x, tap_with_device=True)
    return x
""",
            diagnostics=(
                '9:5 HCB102 [manual] id_tap left as it is, no native spelling keeps legacy behaviour: the tap function uses the `device` argument; port it by hand, or keep legacy semantics on the compat runtime (`strategy = "compat"` in [tool.hcmigrate], or `python -m compat` on the original)',
            ),
        ),
        Example(
            title="a tap that reads `transforms` is left as it is",
            before="""\
from jax.experimental import host_callback as hcb


def show(x, transforms):
    print(transforms, x)


def step(x):
    return hcb.id_tap(show, x)
""",
            after="""\
from jax.experimental import host_callback as hcb


def show(x, transforms):
    print(transforms, x)


def step(x):
    return hcb.id_tap(show, x)
""",
            diagnostics=(
                '9:12 HCB102 [manual] id_tap left as it is, no native spelling keeps legacy behaviour: the tap function reads `transforms`; port it by hand, or keep legacy semantics on the compat runtime (`strategy = "compat"` in [tool.hcmigrate], or `python -m compat` on the original)',
            ),
        ),
        Example(
            title="a tap left as it is leaves the module's other taps native",
            before="""\
from jax.experimental import host_callback as hcb


def show(x, transforms):
    print(transforms, x)


def count(x, transforms):
    COUNTS.append(x)


def step(x):
    hcb.id_tap(count, x)
    return hcb.id_tap(show, x)
""",
            after="""\
import jax
import numpy as np
from jax.experimental import host_callback as hcb


def show(x, transforms):
    print(transforms, x)


def count(x):
    COUNTS.append(x)


def step(x):
    jax.debug.callback(
        lambda arg: count(jax.tree_util.tree_map(np.array, arg)), x, ordered=True
    )
    return hcb.id_tap(show, x)
""",
            diagnostics=(
                "13:5 HCB101 [fixed-with-behaviour-note] id_tap -> jax.debug.callback(..., ordered=True): under vmap it runs once per element (legacy: once, with the whole batch); it fails on more than one device (pmap, sharded jit: see several-devices)",
                '14:12 HCB102 [manual] id_tap left as it is, no native spelling keeps legacy behaviour: the tap function reads `transforms`; port it by hand, or keep legacy semantics on the compat runtime (`strategy = "compat"` in [tool.hcmigrate], or `python -m compat` on the original)',
            ),
        ),
        Example(
            title="a module under pmap, for JAX before 0.8 (ordered callbacks are refused there)",
            before="""\
import jax
from jax.experimental import host_callback as hcb


def show(x, transforms):
    print(x)


@jax.pmap
def step(x):
    return hcb.id_tap(show, x)
""",
            after="""\
import jax
from jax.experimental import host_callback as hcb


def show(x, transforms):
    print(x)


@jax.pmap
def step(x):
    return hcb.id_tap(show, x)
""",
            diagnostics=(
                '11:12 HCB102 [manual] id_tap left as it is, no native spelling keeps legacy behaviour: the module uses pmap (several devices), where ordered jax.debug callbacks are refused, and ordered io_callbacks before jax 0.8; port it by hand, or keep legacy semantics on the compat runtime (`strategy = "compat"` in [tool.hcmigrate], or `python -m compat` on the original)',
            ),
            options={"target_jax": (0, 6, 2)},
        ),
        Example(
            title="a tap in a function this module runs under jax.vmap (legacy tapped the batch)",
            before="""\
import jax
from jax.experimental import host_callback as hcb


def show(x, transforms):
    print(x.shape)


def step(x):
    return hcb.id_tap(show, x) * 2


def batched(xs):
    return jax.vmap(step)(xs)
""",
            after="""\
import jax
from jax.experimental import host_callback as hcb


def show(x, transforms):
    print(x.shape)


def step(x):
    return hcb.id_tap(show, x) * 2


def batched(xs):
    return jax.vmap(step)(xs)
""",
            diagnostics=(
                '10:12 HCB102 [manual] id_tap left as it is, no native spelling keeps legacy behaviour: the tap function runs under jax.vmap (line 14), where legacy called it once with the whole batch and `transforms` (jax.debug.callback would call it per element); port it by hand, or keep legacy semantics on the compat runtime (`strategy = "compat"` in [tool.hcmigrate], or `python -m compat` on the original)',
            ),
        ),
        Example(
            title="id_tap used as a value is left as it is; the module's other taps are native",
            before="""\
import functools

from jax.experimental import host_callback as hcb

report_loss = functools.partial(hcb.id_tap, lambda x, t: print("loss", x))


def step(x):
    hcb.id_tap(lambda x, t: print("step", x), x)
    return report_loss(x * 2)
""",
            after="""\
import functools

import jax
import numpy as np
from jax.experimental import host_callback as hcb

report_loss = functools.partial(hcb.id_tap, lambda x, t: print("loss", x))


def step(x):
    jax.debug.callback(
        lambda x: print("step", jax.tree_util.tree_map(np.array, x)), x, ordered=True
    )
    return report_loss(x * 2)
""",
            diagnostics=(
                '5:33 HCB502 [manual] id_tap used as a value left as it is, no native spelling keeps legacy behaviour: only a call can be rewritten; port it by hand, or keep legacy semantics on the compat runtime (`strategy = "compat"` in [tool.hcmigrate], or `python -m compat` on the original)',
                "9:5 HCB101 [fixed-with-behaviour-note] id_tap -> jax.debug.callback(..., ordered=True): under vmap it runs once per element (legacy: once, with the whole batch); it fails on more than one device (pmap, sharded jit: see several-devices)",
            ),
        ),
        Example(
            title="callers run the project on meshes, and the module uses vmap: left as it is",
            before="""\
import jax
from jax.experimental import host_callback as hcb


def score(x):
    hcb.id_tap(send, x)
    return x.sum()


batched_score = jax.vmap(score)
""",
            after="""\
import jax
from jax.experimental import host_callback as hcb


def score(x):
    hcb.id_tap(send, x)
    return x.sum()


batched_score = jax.vmap(score)
""",
            diagnostics=(
                '6:5 HCB102 [manual] id_tap left as it is, no native spelling keeps legacy behaviour: the several-devices setting (several devices), where ordered jax.debug callbacks are refused, and it uses vmap, where ordered io_callbacks fail; port it by hand, or keep legacy semantics on the compat runtime (`strategy = "compat"` in [tool.hcmigrate], or `python -m compat` on the original)',
            ),
            options={"several_devices": True},
        ),
    ),
)


def plan(site: CallSite, planner) -> None:
    """The tap function is adapted before the rewrite (its def may lose parameters)."""
    if planner.suppressed(site.original, NATIVE):
        return
    reason = patches_internals(planner) or compat_reason(site, "tap_with_device")
    if reason is not None:
        planner.left_as_is(site, reason)
        return
    on_devices = several_devices_reason(planner, site)
    if on_devices is not None:
        planner.left_as_is(site, on_devices)
        return
    if planner.left_under_vmap(
        site,
        "legacy called it once with the whole batch and `transforms` (jax.debug.callback would "
        "call it per element)",
    ):
        return
    passes_device = site.literal("tap_with_device", False) is True
    adaptation = planner.adapt(
        site,
        site.args.get("tap_func"),
        passes_transforms=site.literal("tap_with_transform", True) is not False,
        passes_device=passes_device,
    )
    if (
        passes_device
        and adaptation.mode == "compat"
        and not adaptation.transforms_used
        and "device" in adaptation.reason
    ):
        planner.device_of_shard(site)  # (under a pmap with an axis name: the shard's device)
    planner.on_ordered_chain(site)


@handles(LegacyCall("id_tap"), reports=(NATIVE, NO_NATIVE), plan=plan)
def rewrite(site: CallSite, ctx: RuleContext) -> cst.BaseExpression | None:
    reason = (
        patches_internals(ctx)
        or compat_reason(site, "tap_with_device")
        or several_devices_reason(ctx, site)
    )
    adaptation = ctx.adaptation(site)
    if reason is None and adaptation.mode == "compat":
        reason = f"the tap function {adaptation.reason}"
    if reason is not None:
        ctx.report(NO_NATIVE, site.original, no_native_spelling("id_tap", reason, ctx))
        return None

    axis = ctx.device_axis(site)
    if axis is not None:
        return _with_device_of_shard(site, ctx, axis)
    adapted = ctx.adapted_function(
        site, adaptation, pass_transforms=site.literal("tap_with_transform", True) is not False
    )
    if ctx.taps_join_ordered_io:
        tap = ctx.tap_with_numpy_args(
            adapted, site.original_args.get("tap_func"), site.original_args.get("arg")
        )
        io_callback = parse(ctx.modern("io_callback"))
        ctx.report(
            NATIVE,
            site.original,
            f"id_tap -> io_callback(..., ordered=True): {io_chain_note(ctx, site)}",
            level=Level.FIXED_WITH_NOTE,
        )
        return with_legacy_value(
            site,
            ctx,
            lambda value: site.call_like(
                io_callback,
                (arg(tap), "tap_func"),
                (arg(cst.Name("None")), None),
                (arg(value), "arg"),
                (arg(cst.Name("True"), "ordered"), "result"),
            ),
        )
    tap = ctx.with_numpy_args(
        adapted, site.original_args.get("tap_func"), site.original_args.get("arg")
    )
    callback = parse(ctx.modern("debug_callback"))
    ctx.report(
        NATIVE,
        site.original,
        f"id_tap -> jax.debug.callback(..., ordered=True): {tap_note(ctx)}",
        level=Level.FIXED_WITH_NOTE,
    )
    return with_legacy_value(
        site,
        ctx,
        lambda value: site.call_like(
            callback,
            (arg(tap), "tap_func"),
            (arg(value), "arg"),
            (arg(cst.Name("True"), "ordered"), "result"),
        ),
    )


def _with_device_of_shard(site: CallSite, ctx: RuleContext, axis: str) -> cst.BaseExpression:
    """A tap reading its `device` under `jax.pmap(..., axis_name=axis)`: an ordered io_callback
    given the shard's index, `lambda x, shard: tap(x, (), device=jax.local_devices()[shard])`:
    legacy called the tap on each device with that device, the pmap's i-th for shard i."""
    func = site.args["tap_func"]
    original = site.original_args.get("tap_func")
    value, shard = ctx.fresh_name("arg"), ctx.fresh_name("shard")
    transforms = ", ()" if site.literal("tap_with_transform", True) is not False else ""
    devices = ctx.dotted("jax.local_devices")
    called = cst.Module(body=[]).code_for_node(func)
    if not isinstance(func, (cst.Name, cst.Attribute)):
        called = f"({called})"
    tap = ctx.with_numpy_args(
        parse(f"lambda {value}: {called}({value}{transforms}, device={devices}()[{shard}])"),
        original,
        site.original_args.get("arg"),
    )
    if isinstance(tap, cst.Lambda):
        tap = tap.with_changes(
            params=tap.params.with_changes(params=[*tap.params.params, cst.Param(cst.Name(shard))])
        )
    if not ctx.returns_nothing(original) and isinstance(tap, cst.Lambda):
        # (an io_callback without a result must get None: `(tap(...), None)[1]`)
        body = tap.body.with_changes(lpar=[], rpar=[])
        tap = tap.with_changes(body=parse(f"({cst.Module(body=[]).code_for_node(body)}, None)[1]"))
    ctx.report(
        NATIVE,
        site.original,
        f"id_tap(tap_with_device=True) -> io_callback(..., jax.lax.axis_index({axis!r}), "
        f"ordered=True), the device of shard i being jax.local_devices()[i] as legacy's: "
        f"{io_chain_note(ctx, site)}; `str(device)` is `cpu:0` where jax 0.4.30 wrote `TFRT_CPU_0`",
        level=Level.FIXED_WITH_NOTE,
    )
    index = parse(f"{ctx.dotted('jax.lax.axis_index')}({axis!r})")
    io_callback = parse(ctx.modern("io_callback"))
    return with_legacy_value(
        site,
        ctx,
        lambda value: site.call_like(
            io_callback,
            (arg(tap), "tap_func"),
            (arg(cst.Name("None")), None),
            (arg(value), "arg"),
            (arg(index), None),
            (arg(cst.Name("True"), "ordered"), "result"),
        ),
    )
