"""Why a legacy call has no native spelling that keeps legacy behaviour, whatever its function.

Native first, compat by choice: under the default strategy such a site is left as it is, a
manual finding that names the reason and the two ways forward (a hand port, or the compat
runtime chosen for the project: `strategy = "compat"`, or the original run with
`python -m compat`). The codemod writes no `hcmigrate_compat` import unless the compat strategy
was chosen: a library does not merge a dependency on a migration tool's runtime (issue 37).
"""

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


def several_devices_reason(ctx, site: CallSite) -> str | None:
    """Why a tap, print or call for its effect has no native spelling on several devices:
    ordered jax.debug callbacks are refused there, and an ordered io_callback under pmap
    before jax 0.8 or in a module using vmap or grad (None: the site does not run on several
    devices as far as the run sees (a pmap of the module that cannot run its code does not
    count), or its calls are ordered io_callbacks there: devices_join_io_chain)."""
    why = ctx.several_devices(site.original)
    blocker = ctx.io_chain_blocker(site.original) if why is not None else None
    if blocker is None:
        return None
    if blocker == why:
        io = "ordered io_callbacks before jax 0.8" if "pmap" in why else "ordered io_callbacks"
        return f"{why} (several devices), where ordered jax.debug callbacks are refused, and {io}"
    return (
        f"{why} (several devices), where ordered jax.debug callbacks are refused, and {blocker}, "
        "where ordered io_callbacks fail"
    )


# The two ways forward for a site with no native spelling (README, "What goes to compat").
WAYS_FORWARD = (
    "port it by hand, or keep legacy semantics on the compat runtime "
    '(`strategy = "compat"` in [tool.hcmigrate], or `python -m compat` on the original)'
)


# Where the module indexes JAX's batching table, which current JAX cannot (a proxy): the compat
# runtime does not make it run either (measured on jax 0.10.2), so it is no way forward.
BATCHERS_TABLE = "primitive_batchers"


def no_native_spelling(what: str, reason: str, ctx=None) -> str:
    """The manual finding's message for a site left as it is (`what`: `id_tap`, ...); `ctx`:
    the module's, where it may index `primitive_batchers` (then a hand port is the only way)."""
    if ctx is not None and ctx.patched_internal() and ctx.module_names(BATCHERS_TABLE):
        return (
            f"{what} left as it is, no native spelling keeps legacy behaviour: {reason}; "
            f"`{BATCHERS_TABLE}[...]` cannot be indexed on current JAX, with the compat "
            "runtime or without: port it by hand"
        )
    return (
        f"{what} left as it is, no native spelling keeps legacy behaviour: {reason}; {WAYS_FORWARD}"
    )


def patches_internals(ctx) -> str | None:
    """Why no call of the module can move to the native callbacks: it patches legacy internals
    (the rules of `outside_call_p`), which the native callbacks do not have (None: it does not).
    `python -m compat` runs a module patching a JVP rule as legacy did
    (fixtures/fidelity/c07_patches_jvp_rule); one indexing `primitive_batchers` fails on
    current JAX whatever the runtime (hcmigrate.rules.references)."""
    name = ctx.patched_internal()
    if name is None:
        return None
    return f"this module patches host_callback internals (`{name}`), which the native callbacks do not have"


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


def io_chain_note(ctx, site: CallSite) -> str:
    """What a tap, print or call on the module's ordered io_callback chain does differently
    from legacy; on several devices, why it is there."""
    why = ctx.several_devices(site.original)
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
