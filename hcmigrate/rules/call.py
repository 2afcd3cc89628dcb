"""HCB301/HCB302/HCB303: `call(f, arg, result_shape=S)`.

-> `jax.pure_callback(f, SDS, arg, vmap_method="sequential")` when `f` is visibly free of
side effects and the result is used; otherwise `io_callback(f, SDS, arg, ordered=True)`.
Never a pure_callback whose result is unused: the compiler drops it.
"""

from __future__ import annotations

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.facts import DEFAULT_VMAP_METHOD, VMAP_METHOD_SINCE
from hcmigrate.rules.compat_reasons import (
    io_chain_note,
    SEVERAL_DEVICES_NOTE,
    compat_reason,
    no_native_spelling,
    patches_internals,
    several_devices_reason,
)
from hcmigrate.rules.context import CallSite, RuleContext
from hcmigrate.rules.nodes import arg, literal_value, parse, string
from hcmigrate.rules.spec import Example, LegacyCall, Rule, handles

# What pure_callback does differently from legacy `call` for a pure host function (the
# values are the same; docs/callback-semantics.md, `duplicate_call`, `random_no_args`).
PURE_NOTE = (
    "the compiler may merge identical calls or move a call out of a loop (fewer host calls "
    "than legacy, same values)"
)
PURE = Rule(
    code="HCB301",
    name="call-to-pure-callback",
    level=Level.FIXED_WITH_NOTE,
    legacy="call(f, arg, result_shape=S)  # f visibly pure, result used",
    modern='jax.pure_callback(f, SDS(S), arg, vmap_method="sequential")',
    summary="A pure host computation becomes pure_callback; result_shape becomes ShapeDtypeStruct leaves.",
    behaviour_note=(
        "Under vmap it now runs per element (legacy call failed under vmap); the compiler may "
        "merge identical calls, move a call out of a loop whose values it does not depend on, "
        "or drop it when its result is unused, so only used results get it."
    ),
    examples=(
        Example(
            title="a numpy function whose result is used; the scalar `result_shape` becomes a float32[] leaf",
            before="""\
import numpy as np
from jax.experimental import host_callback as hcb


def norm(x):
    return hcb.call(np.linalg.norm, x, result_shape=1.0)
""",
            after="""\
import jax
import numpy as np


def norm(x):
    return jax.pure_callback(
        np.linalg.norm,
        jax.ShapeDtypeStruct((), jax.dtypes.canonicalize_dtype(float)),
        x,
        vmap_method="sequential",
    )
""",
            diagnostics=(
                "2:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "6:12 HCB301 [fixed-with-behaviour-note] call -> jax.pure_callback: the compiler may merge identical calls or move a call out of a loop (fewer host calls than legacy, same values)",
            ),
        ),
        Example(
            title="a module that turns 64-bit mode on above the call: the dtype is written as the user wrote it, and `1.0` is float64 as legacy made it there",
            before="""\
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import host_callback as hcb

jax.config.update("jax_enable_x64", True)


def norm(x):
    return hcb.call(np.linalg.norm, x, result_shape=1.0)


def doubled(x):
    return hcb.call(np.double, x, result_shape=jax.ShapeDtypeStruct(x.shape, jnp.float64))
""",
            after="""\
import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


def norm(x):
    return jax.pure_callback(
        np.linalg.norm, jax.ShapeDtypeStruct((), "float64"), x, vmap_method="sequential"
    )


def doubled(x):
    return jax.pure_callback(
        np.double,
        jax.ShapeDtypeStruct(x.shape, jnp.float64),
        x,
        vmap_method="sequential",
    )
""",
            diagnostics=(
                "4:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "10:12 HCB301 [fixed-with-behaviour-note] call -> jax.pure_callback (result_shape's dtypes as written: 64-bit mode is turned on at line 6 of this module, before this code runs): the compiler may merge identical calls or move a call out of a loop (fewer host calls than legacy, same values)",
                "14:12 HCB301 [fixed-with-behaviour-note] call -> jax.pure_callback (result_shape's dtypes as written: 64-bit mode is turned on at line 6 of this module, before this code runs): the compiler may merge identical calls or move a call out of a loop (fewer host calls than legacy, same values)",
            ),
        ),
        Example(
            title="a package whose `__init__.py` turns 64-bit mode on before it imports its modules (the run finds it; `x64_on_import` is what it passes on)",
            before="""\
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import host_callback as hcb


def doubled(x):
    return hcb.call(np.double, x, result_shape=jax.ShapeDtypeStruct(x.shape, jnp.float64))
""",
            after="""\
import jax
import jax.numpy as jnp
import numpy as np


def doubled(x):
    return jax.pure_callback(
        np.double,
        jax.ShapeDtypeStruct(x.shape, jnp.float64),
        x,
        vmap_method="sequential",
    )
""",
            diagnostics=(
                "4:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "8:12 HCB301 [fixed-with-behaviour-note] call -> jax.pure_callback (result_shape's dtypes as written: 64-bit mode is turned on at line 3 of physics/__init__.py, before this code runs): the compiler may merge identical calls or move a call out of a loop (fewer host calls than legacy, same values)",
            ),
            options={"x64_on_import": "line 3 of physics/__init__.py"},
        ),
    ),
)
IO = Rule(
    code="HCB302",
    name="call-to-io-callback",
    level=Level.FIXED_WITH_NOTE,
    legacy="call(f, arg, result_shape=S)  # side effects, result used",
    modern="io_callback(f, SDS(S), arg, ordered=True)",
    summary="A host call with side effects whose result is used becomes an ordered io_callback.",
    behaviour_note="Like legacy call, it fails under vmap and grad; it also fails inside a lax.cond under vmap.",
    examples=(
        Example(
            title="a callback with side effects",
            before="""\
import jax
import numpy as np
from jax.experimental import host_callback as hcb


def save(x):
    np.save("x.npy", x)
    return x


def step(x):
    return hcb.call(save, x, result_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))
""",
            after="""\
import jax
import numpy as np
from jax.experimental import io_callback


def save(x):
    np.save("x.npy", x)
    return x


def step(x):
    return io_callback(
        lambda arg: save(jax.tree_util.tree_map(np.array, arg)),
        jax.ShapeDtypeStruct(x.shape, jax.dtypes.canonicalize_dtype(x.dtype)),
        x,
        ordered=True,
    )
""",
            diagnostics=(
                "3:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "12:12 HCB302 [fixed-with-behaviour-note] call -> io_callback(..., ordered=True): the callback may have side effects; it fails inside a lax.cond or while_loop under vmap even when its own operands are not batched, and under pmap on jax 0.6 (legacy call ran there)",
            ),
        ),
    ),
)
# A result_shape of ShapeDtypeStructs the code built, kept as it is (hcmigrate.codemod.result_shape).
DTYPES_AS_GIVEN_NOTE = "result_shape's dtypes used as given: a 64-bit one raises without x64, where legacy made it 32-bit"
# 64-bit mode is on whenever the code runs (hcmigrate.project_model.x64_mode): the dtypes legacy
# canonicalised are written as they are (canonicalisation is the identity there).
X64_NOTE = (
    "result_shape's dtypes as written: 64-bit mode is turned on at {where}, before this code runs"
)
# What an ordered io_callback does differently from legacy `call` (docs/callback-semantics.md).
IO_NOTE = (
    "it fails inside a lax.cond or while_loop under vmap even when its own operands are not "
    "batched, and under pmap on jax 0.6 (legacy call ran there)"
)
APART_NOTE = ", and it is ordered apart from this module's jax.debug callbacks"
EFFECT = Rule(
    code="HCB304",
    name="call-for-effect-to-debug-callback",
    level=Level.FIXED_WITH_NOTE,
    legacy="call(f, arg)  # no result_shape, or its result unused",
    modern="jax.debug.callback(lambda x: f(jax.tree.map(np.array, x)), arg, ordered=True)",
    summary="A host call made for its effect joins the ordered chain of the module's taps and prints.",
    behaviour_note=(
        "Runs wherever legacy call ran on one device (and also under vmap, per element, and "
        "grad, where legacy call failed); fails on more than one device (pmap, sharded jit), "
        "where legacy call ran (on several devices through sharded jit, or under the "
        "`several-devices` setting, it is an ordered io_callback); ordered apart from "
        "io_callbacks of the same module."
    ),
    examples=(
        Example(
            title="a host function that reports and returns nothing; legacy gave it numpy arrays, and so does the rewrite",
            before="""\
from jax.experimental import host_callback as hcb


def check(x):
    if (x < 0).any():
        print("negative input:", repr(x))


def step(x):
    hcb.call(check, x)
    return x * 2
""",
            after="""\
import jax
import numpy as np


def check(x):
    if (x < 0).any():
        print("negative input:", repr(x))


def step(x):
    jax.debug.callback(
        lambda arg: check(jax.tree_util.tree_map(np.array, arg)), x, ordered=True
    )
    return x * 2
""",
            diagnostics=(
                "1:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "10:5 HCB304 [fixed-with-behaviour-note] call -> jax.debug.callback(..., ordered=True): it returns no result; it fails on more than one device (pmap, sharded jit: see several-devices), where legacy call ran",
            ),
        ),
    ),
)
# A host check (no result; its only effect is the error it raises) needs no order: ordered
# jax.debug callbacks are refused on several devices, where legacy call ran, and an
# unordered one runs there and under vmap, and its error reaches the caller (measured on
# jax 0.10.2: jit, lax.cond, pmap on 2 devices, vmap with an unbatched predicate).
CHECK_NOTE = (
    "the host function only raises errors, so it needs no order and runs on several devices "
    "(pmap, sharded jit) as legacy call did; a host call after it in the program may run "
    "before it raises, and after it raised under pmap every later jax.effects_barrier() raises "
    "that error again"
)
CHECK = Rule(
    code="HCB305",
    name="call-check-to-debug-callback",
    level=Level.FIXED_WITH_NOTE,
    legacy="call(check, arg)  # no result; check only raises",
    modern="jax.debug.callback(check, arg)",
    summary="A host check that returns nothing and only raises becomes an unordered jax.debug.callback.",
    behaviour_note=(
        "Runs wherever legacy call ran, on one device or several (and also under vmap, per "
        "element, where legacy call failed); keeps no order with the module's other host calls; "
        "after it raised under pmap every later jax.effects_barrier() raises that error again."
    ),
    examples=(
        Example(
            title="an error check inside lax.cond, as libraries write them; it stays usable under pmap",
            before="""\
import jax
from jax.experimental import host_callback as hcb


def error_if(pred, index, messages):
    def raise_error(i):
        raise RuntimeError(messages[i.item()])

    jax.lax.cond(pred, lambda: hcb.call(raise_error, index), lambda: None)
""",
            after="""\
import jax


def error_if(pred, index, messages):
    def raise_error(i):
        raise RuntimeError(messages[i.item()])

    jax.lax.cond(pred, lambda: jax.debug.callback(raise_error, index), lambda: None)
""",
            diagnostics=(
                "2:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "9:32 HCB305 [fixed-with-behaviour-note] call -> jax.debug.callback (unordered): the host function only raises errors, so it needs no order and runs on several devices (pmap, sharded jit) as legacy call did; a host call after it in the program may run before it raises, and after it raised under pmap every later jax.effects_barrier() raises that error again",
            ),
        ),
    ),
)
NO_NATIVE = Rule(
    code="HCB303",
    name="call-no-native-spelling",
    level=Level.MANUAL,
    legacy="call(f, arg, call_with_device=True) using the device; device_index != 0; callback_flavor=",
    modern="(left as it is: a hand port, or the compat strategy)",
    summary="No native spelling keeps legacy behaviour: the site is left for a hand port or "
    'the compat runtime chosen for the project (`strategy = "compat"`).',
    examples=(
        Example(
            title="a call on another device's host",
            before="""\
import numpy as np
from jax.experimental import host_callback as hcb


def norm(x):
    return hcb.call(np.linalg.norm, x, result_shape=1.0, device_index=1)
""",
            after="""\
import numpy as np
from jax.experimental import host_callback as hcb


def norm(x):
    return hcb.call(np.linalg.norm, x, result_shape=1.0, device_index=1)
""",
            diagnostics=(
                '6:12 HCB303 [manual] call left as it is, no native spelling keeps legacy behaviour: device_index= picks which device\'s host runs the callback; port it by hand, or keep legacy semantics on the compat runtime (`strategy = "compat"` in [tool.hcmigrate], or `python -m compat` on the original)',
            ),
        ),
    ),
)


def plan(site: CallSite, planner) -> None:
    """The callback is adapted before the rewrite; a call that becomes an ordered io_callback
    (impure, result used) starts the module's ordered io chain."""
    if planner.suppressed(site.original, IO):
        return  # left as is: it joins no ordered chain
    func = site.args.get("callback_func")
    reason = patches_internals(planner) or compat_reason(site, "call_with_device")
    if reason is not None:
        planner.left_as_is(site, reason)
        return
    for_effect = not _result_used(site) and not _is_check(site, planner)
    on_devices = several_devices_reason(planner, site) if for_effect else None
    if on_devices is not None:
        planner.left_as_is(site, on_devices)
        return
    adaptation = planner.adapt(
        site,
        func,
        passes_transforms=False,
        passes_device=site.literal("call_with_device", False) is True,
    )
    native = adaptation.mode != "compat" and compat_reason(site, "call_with_device") is None
    if native and _result_used(site) and planner.is_pure(func):
        return  # a pure_callback: on no ordered chain
    if native and _result_used(site):
        planner.joins_ordered_io(site)
    if native and for_effect:
        planner.on_ordered_chain(site)  # (an ordered io_callback on several devices)


def _no_result(site: CallSite) -> bool:
    shape = site.args.get("result_shape")
    return (
        shape is None
        or literal_value(shape) is None
        or (isinstance(shape, cst.Tuple) and not shape.elements)
    )


def _result_used(site: CallSite) -> bool:
    return site.value_used and not _no_result(site)


def _is_check(site: CallSite, checker) -> bool:
    """A call with no result whose host function only raises errors (CHECK)."""
    func = site.original_args.get("callback_func")
    return _no_result(site) and func is not None and checker.only_checks(func)


@handles(LegacyCall("call"), reports=(PURE, IO, EFFECT, CHECK, NO_NATIVE), plan=plan)
def rewrite(site: CallSite, ctx: RuleContext) -> cst.BaseExpression | None:
    reason = patches_internals(ctx) or compat_reason(site, "call_with_device")
    is_check = _is_check(site, ctx)
    if reason is None and not _result_used(site) and not is_check:
        reason = several_devices_reason(ctx, site)
    adaptation = ctx.adaptation(site)
    if reason is None and adaptation.mode == "compat":
        reason = f"the callback {adaptation.reason}"
    if reason is not None:
        ctx.report(NO_NATIVE, site.original, no_native_spelling("call", reason, ctx))
        return None

    original_func = site.original_args.get("callback_func")
    adapted = ctx.adapted_function(site, adaptation, pass_transforms=False)
    value = site.args.get("arg", cst.Name("None"))
    if not is_check and _no_result(site) and ctx.taps_join_ordered_io:
        func = ctx.tap_with_numpy_args(adapted, original_func, site.original_args.get("arg"))
    else:  # (asked only where written: the helper it uses is added to the module)
        func = ctx.with_numpy_args(adapted, original_func, site.original_args.get("arg"))
    if is_check:
        ctx.report(CHECK, site.original, f"call -> jax.debug.callback (unordered): {CHECK_NOTE}")
        return site.call_like(
            parse(ctx.modern("debug_callback")), (arg(func), "callback_func"), (arg(value), "arg")
        )
    if not _result_used(site) and ctx.taps_join_ordered_io:
        why = "it returns no result" if _no_result(site) else "its result is unused"
        ctx.report(
            EFFECT,
            site.original,
            f"call -> io_callback(..., ordered=True): {why}; {io_chain_note(ctx, site)}",
            level=Level.FIXED_WITH_NOTE,
        )
        if _no_result(site):
            shape_expr = cst.Name("None")
        else:  # (the host function's result is still checked against result_shape, as legacy did)
            shape_expr = ctx.shapes.convert(site.original_args.get("result_shape")).expr
        return site.call_like(
            parse(ctx.modern("io_callback")),
            (arg(func), "callback_func"),
            (arg(shape_expr), "result_shape"),
            (arg(value), "arg"),
            (arg(cst.Name("True"), "ordered"), None),
        )
    if not _result_used(site):
        # What it returns is unused (legacy: None, or a value the code drops): a call for
        # its effect, on the same ordered chain as the module's taps and prints.
        why = "it returns no result" if _no_result(site) else "its result is unused"
        note = f"; {SEVERAL_DEVICES_NOTE}, where legacy call ran"
        if ctx.module_has_ordered_io:
            note += "; ordered apart from this module's io_callbacks"
        ctx.report(
            EFFECT, site.original, f"call -> jax.debug.callback(..., ordered=True): {why}{note}"
        )
        return site.call_like(
            parse(ctx.modern("debug_callback")),
            (arg(func), "callback_func"),
            (arg(value), "arg"),
            (arg(cst.Name("True"), "ordered"), None),
        )
    shapes = ctx.shapes.convert(site.original_args.get("result_shape"))
    shape_expr = shapes.expr if shapes.expr is not None else cst.Name("None")
    note = " (result_shape converted at trace time)" if shapes.general else ""
    if shapes.dtypes_as_given:
        note += f" ({DTYPES_AS_GIVEN_NOTE})"
    if shapes.x64_as_written:
        note += f" ({X64_NOTE.format(where=shapes.x64_as_written)})"
    if ctx.is_pure(original_func):
        extra = []
        if ctx.target_at_least(VMAP_METHOD_SINCE):
            extra.append(arg(string(DEFAULT_VMAP_METHOD), "vmap_method"))
        ctx.report(PURE, site.original, f"call -> jax.pure_callback{note}: {PURE_NOTE}")
        return site.call_like(
            parse(ctx.modern("pure_callback")),
            (arg(func), "callback_func"),
            (arg(shape_expr), "result_shape"),
            (arg(value), "arg"),
            *[(e, None) for e in extra],
        )
    ctx.report(
        IO,
        site.original,
        "call -> io_callback(..., ordered=True): the callback may have side effects; "
        f"{IO_NOTE}{APART_NOTE if ctx.taps_apart_from_ordered_io else ''}{note}",
        level=Level.FIXED_WITH_NOTE,
    )
    return site.call_like(
        parse(ctx.modern("io_callback")),
        (arg(func), "callback_func"),
        (arg(shape_expr), "result_shape"),
        (arg(value), "arg"),
        (arg(cst.Name("True"), "ordered"), None),
    )
