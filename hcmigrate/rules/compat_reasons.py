"""Why a legacy call keeps legacy semantics only on the compat runtime, whatever its function."""

from __future__ import annotations

from hcmigrate.facts import ORDERED_IO_UNDER_PMAP_SINCE
from hcmigrate.rules.context import CallSite
from hcmigrate.rules.nodes import literal_value


def compat_reason(site: CallSite, device_flag: str) -> str | None:
    """What in the call's arguments has no modern spelling (None: nothing), `device_flag` being
    the function's "pass the device" parameter (`tap_with_device`, `call_with_device`)."""
    args = site.args
    if "callback_flavor" in args:
        return "callback_flavor= selects a legacy implementation"
    if "device_index" in args and literal_value(args["device_index"]) != 0:
        return "device_index= picks which device's host runs the callback"
    if device_flag in args and literal_value(args[device_flag]) not in (True, False):
        return f"{device_flag}= is computed at run time"
    return None


def several_devices_reason(ctx) -> str | None:
    """Why a tap, print or call for its effect keeps the compat runtime on several devices:
    ordered jax.debug callbacks are refused there, and an ordered io_callback under pmap
    before jax 0.8 or in a module using vmap or grad (None: the module does not run on several
    devices as far
    as the run sees, or its calls are ordered io_callbacks there: devices_join_io_chain)."""
    why = ctx.several_devices()
    blocker = ctx.io_chain_blocker() if why is not None else None
    if blocker is None:
        return None
    if blocker == why:
        io = "ordered io_callbacks before jax 0.8" if "pmap" in why else "ordered io_callbacks"
        return f"{why} (several devices), where ordered jax.debug callbacks are refused, and {io}"
    return (
        f"{why} (several devices), where ordered jax.debug callbacks are refused, and {blocker}, "
        "where ordered io_callbacks fail"
    )


# Why a tap or print of a module that keeps other legacy calls on the compat runtime stays
# there too (hcmigrate.codemod.plan: the two runtimes' ordered calls are two chains).
FOLLOWS_COMPAT = (
    "other calls of this module stay there, and one runtime keeps their program order (ordered "
    "jax.debug callbacks are a chain apart, which a GPU runs out of order)"
)


def patches_internals(ctx) -> str | None:
    """Why every call of the module stays on the compat runtime: the module patches legacy
    internals (the rules of `outside_call_p`), which only the compat runtime has (None: it
    does not). `python -m compat` runs such a module as legacy did (a patched JVP rule
    included; fixtures/fidelity/c07_patches_jvp_rule)."""
    name = ctx.patched_internal()
    if name is None:
        return None
    return f"this module patches host_callback internals (`{name}`), which only the compat runtime keeps"


# Ordered jax.debug callbacks and prints are refused on several devices, where legacy taps,
# prints and calls ran (docs/callback-semantics.md, E14/E15); a module that names no
# multi-device API may still be run on several devices by its caller.
# A project whose callers run it there says so (`several-devices`, docs/cli.md "Code that runs
# on several devices"): its taps become ordered io_callbacks.
SEVERAL_DEVICES_NOTE = "it fails on more than one device (pmap, sharded jit: see several-devices)"


def tap_note(ctx) -> str:
    """What a tap or print on the ordered jax.debug chain does differently from legacy."""
    note = (
        "under vmap it runs once per element (legacy: once, with the whole batch); "
        + SEVERAL_DEVICES_NOTE
    )
    if ctx.module_has_ordered_io:
        note += "; ordered apart from this module's io_callbacks"
    return note


# Taps on the module's ordered io_callback chain (hcmigrate.rules.context.taps_join_ordered_io).
IO_CHAIN_NOTE = (
    "on the ordered io_callback chain of this module's host calls, in program order; it fails "
    "under vmap and grad, which this module does not use"
)


def io_chain_note(ctx) -> str:
    """What a tap, print or call on the module's ordered io_callback chain does differently
    from legacy; on several devices, why it is there."""
    why = ctx.several_devices()
    if why is None:
        return IO_CHAIN_NOTE
    if not ctx.target_at_least(ORDERED_IO_UNDER_PMAP_SINCE):
        return (
            f"an ordered io_callback runs on several devices ({why}) in a sharded jit, once "
            "with the whole array as legacy, in program order; it fails under vmap, grad and "
            "pmap, which this module does not use"
        )
    return (
        f"an ordered io_callback runs on several devices ({why}) as legacy's did (in a sharded "
        "jit once with the whole array, under pmap once per device from jax 0.8), in program "
        "order; it fails under vmap and grad, which this module does not use"
    )
