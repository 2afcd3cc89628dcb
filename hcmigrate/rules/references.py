"""Legacy names used other than in a call we can rewrite.

HCB403 `CallbackException`/`TapFunctionException` -> `jax.errors.JaxRuntimeError`.
HCB502 a legacy function, `CallbackFlavor`, a private primitive (`outside_call_p`,
       `id_tap_dep_p`, `id_p`) or the module itself used as a value
       (`functools.partial(hcb.id_tap, cb, device_index=i)`): no native spelling, left as it
       is for a hand port or the compat runtime chosen for the project (which has them all).
HCB501 a name that is not part of the legacy public API: reported.
HCB002 a name that may mean several things; HCB003 a call whose arguments cannot be bound.
"""

from __future__ import annotations

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.facts import (
    COMPAT_INTERNALS,
    LEGACY_ENUMS,
    LEGACY_EXCEPTIONS,
    LEGACY_FUNCTIONS,
    MODERN_EXCEPTION,
)
from hcmigrate.rules.compat_reasons import BATCHERS_TABLE, no_native_spelling
from hcmigrate.rules.context import ReferenceSite, RuleContext, UnbindableSite
from hcmigrate.rules.nodes import parse
from hcmigrate.rules.spec import Example, LegacyReference, Rule, UnbindableCall, handles

AMBIGUOUS = Rule(
    code="HCB002",
    name="ambiguous-name",
    level=Level.MANUAL,
    legacy="a name bound to host_callback on one path and to something else on another",
    modern="(left alone)",
    summary="The tool does not guess: the site is reported for a human.",
    examples=(
        Example(
            title="a name that is host_callback on one path and another module on the other is left alone",
            before="""\
try:
    from jax.experimental import host_callback as hcb
except ImportError:
    import my_taps as hcb

hcb.id_tap(show, x)
""",
            after="""\
try:
    from jax.experimental import host_callback as hcb
except ImportError:
    import my_taps as hcb

hcb.id_tap(show, x)
""",
            diagnostics=("6:1 HCB002 [manual] may mean my_taps.id_tap; left alone",),
        ),
    ),
)
UNBINDABLE = Rule(
    code="HCB003",
    name="unbindable-arguments",
    level=Level.MANUAL,
    legacy="id_tap(*args, **kwargs) and other calls whose arguments cannot be bound statically",
    modern="(left alone)",
    summary="Arguments cannot be matched to the legacy signature without running the code.",
    examples=(
        Example(
            title="arguments that cannot be matched to the legacy signature",
            before="""\
from jax.experimental import host_callback as hcb


def log(*args):
    return hcb.id_tap(*args)
""",
            after="""\
from jax.experimental import host_callback as hcb


def log(*args):
    return hcb.id_tap(*args)
""",
            diagnostics=(
                "5:12 HCB003 [manual] id_tap(...): `*` arguments cannot be bound statically; left alone",
            ),
        ),
    ),
)
EXCEPTION = Rule(
    code="HCB403",
    name="callback-exception",
    level=Level.FIXED_WITH_NOTE,
    legacy="except hcb.CallbackException",
    modern=f"except {MODERN_EXCEPTION}",
    summary="Errors raised in host callbacks now surface as jax.errors.JaxRuntimeError at the call.",
    behaviour_note="Which branch runs changes (measured on jax 0.4.30, "
    "docs/callback-exception.md): on CPU legacy raised a tap's error at the call as a "
    "RuntimeError this handler did not catch, and now it catches it from a jitted call; "
    "through outfeed (GPU/TPU) legacy raised CallbackException from barrier_wait, and now the "
    "error comes from the jitted call, or from an eager tap as the host function's own "
    "exception, which this handler does not catch.",
    examples=(
        Example(
            before="""\
from jax.experimental import host_callback as hcb

try:
    run(data)
    hcb.barrier_wait()
except hcb.CallbackException as error:
    print("a tap failed:", error)
""",
            after="""\
import jax

try:
    run(data)
    jax.effects_barrier()
except jax.errors.JaxRuntimeError as error:
    print("a tap failed:", error)
""",
            diagnostics=(
                "1:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "5:5 HCB401 [fixed-with-behaviour-note] barrier_wait() -> jax.effects_barrier(): after a callback failed on several devices (pmap) every later barrier raises that error again (legacy returned)",
                "6:8 HCB403 [fixed-with-behaviour-note] CallbackException -> jax.errors.JaxRuntimeError: now raised at the jitted call, on CPU too, where legacy raised a RuntimeError this handler did not catch (it ran only through outfeed, from barrier_wait)",
            ),
        ),
    ),
)
INTERNAL = Rule(
    code="HCB501",
    name="internals",
    level=Level.MANUAL,
    legacy="hcb._callback_handler_data",
    modern="(left alone)",
    summary="Names that are not part of the legacy public API have no modern counterpart.",
    examples=(
        Example(
            before="""\
from jax.experimental import host_callback as hcb

HANDLERS = hcb._callback_handler_data
""",
            after="""\
from jax.experimental import host_callback as hcb

HANDLERS = hcb._callback_handler_data
""",
            diagnostics=(
                "3:12 HCB501 [manual] `_callback_handler_data` is not part of the legacy public API; port this by hand",
            ),
        ),
    ),
)
COMPAT_REFERENCE = Rule(
    code="HCB502",
    name="legacy-reference-no-native-spelling",
    level=Level.MANUAL,
    legacy="hcb.id_tap used as a value (functools.partial(hcb.id_tap, ...)), hcb.CallbackFlavor, hcb.id_tap_dep_p, the module as a value",
    modern="(left as it is: a hand port, or the compat strategy)",
    summary="Uses that are not plain calls have no native spelling: left for a hand port or "
    'the compat runtime chosen for the project (`strategy = "compat"`).',
    examples=(
        Example(
            title="a legacy function passed around as a value",
            before="""\
import functools

from jax.experimental import host_callback as hcb

tap_to = functools.partial(hcb.id_tap, device_index=1)
""",
            after="""\
import functools

from jax.experimental import host_callback as hcb

tap_to = functools.partial(hcb.id_tap, device_index=1)
""",
            diagnostics=(
                '5:28 HCB502 [manual] id_tap used as a value left as it is, no native spelling keeps legacy behaviour: only a call can be rewritten; port it by hand, or keep legacy semantics on the compat runtime (`strategy = "compat"` in [tool.hcmigrate], or `python -m compat` on the original)',
            ),
        ),
        Example(
            title="a module that patches the internals: none of its sites has a native spelling",
            before="""\
from jax.experimental import host_callback as hcb
from jax.interpreters import ad

RULE = ad.primitive_jvps[hcb.outside_call_p]


def f(x):
    return hcb.id_tap(print, x)
""",
            after="""\
from jax.experimental import host_callback as hcb
from jax.interpreters import ad

RULE = ad.primitive_jvps[hcb.outside_call_p]


def f(x):
    return hcb.id_tap(print, x)
""",
            diagnostics=(
                '4:26 HCB502 [manual] `outside_call_p`, a private primitive of the legacy implementation, left as it is, no native spelling keeps legacy behaviour: the native callbacks have no such primitive; port it by hand, or keep legacy semantics on the compat runtime (`strategy = "compat"` in [tool.hcmigrate], or `python -m compat` on the original)',
                '8:12 HCB102 [manual] id_tap left as it is, no native spelling keeps legacy behaviour: this module patches host_callback internals (`outside_call_p`), which the native callbacks do not have; port it by hand, or keep legacy semantics on the compat runtime (`strategy = "compat"` in [tool.hcmigrate], or `python -m compat` on the original)',
            ),
        ),
    ),
)


@handles(UnbindableCall(), reports=(UNBINDABLE,))
def report_unbindable(site: UnbindableSite, ctx: RuleContext) -> None:
    ctx.report(
        UNBINDABLE, site.original, f"{site.function}(...): {site.why}; left alone", Level.MANUAL
    )


@handles(LegacyReference(), reports=(AMBIGUOUS, EXCEPTION, INTERNAL, COMPAT_REFERENCE))
def rewrite_reference(site: ReferenceSite, ctx: RuleContext) -> cst.BaseExpression | None:
    """A legacy name in a position other than a rewritten call's callee."""
    node, ref = site.original, site.ref
    if ref.is_ambiguous:
        ctx.report(AMBIGUOUS, node, f"may mean {', '.join(ref.ambiguous_with)}; left alone")
        return None
    member = ref.member
    if member in LEGACY_EXCEPTIONS and _handler_that_never_ran(node, ctx):
        # Legacy raised it only from barrier_wait (with outfeed); a tap's error reached
        # this `try` as the runtime's error, which the modern exception would now catch here.
        ctx.report(
            COMPAT_REFERENCE,
            node,
            f"`except {member}` never ran: legacy raised it only from barrier_wait, which this "
            "try does not call; left as it is: delete the handler by hand",
        )
        return None
    if member in LEGACY_EXCEPTIONS:
        later = _later_handler_of_runtime_errors(node, ctx)
        if later is not None:  # (legacy on CPU ran that one; this one runs now)
            later = f"`except {later}`" if later else "a bare `except:`"
            ctx.report(
                EXCEPTION,
                node,
                f"{member} -> {MODERN_EXCEPTION}: the branch changes: on CPU legacy raised a "
                f"tap's error at the call as a RuntimeError, which {later} below "
                "caught; now this handler catches it (it ran on legacy only through outfeed, "
                "GPU/TPU): choose the branch by hand",
                Level.MANUAL,
            )
        else:
            ctx.report(
                EXCEPTION,
                node,
                f"{member} -> {MODERN_EXCEPTION}: now raised at the jitted call, on CPU too, "
                "where legacy raised a RuntimeError this handler did not catch (it ran only "
                "through outfeed, from barrier_wait)",
            )
        return parse(ctx.dotted(MODERN_EXCEPTION))
    if member in COMPAT_INTERNALS:
        what = f"`{member}`, a private primitive of the legacy implementation,"
        if ctx.module_names(BATCHERS_TABLE):
            # (measured on jax 0.10.2: the public table is a proxy that cannot be read or
            # written by primitive; the module fails there whatever runtime it taps on, so the
            # compat runtime is no way forward)
            ctx.report(
                COMPAT_REFERENCE,
                node,
                f"{what} left as it is: `{BATCHERS_TABLE}[...]` cannot be indexed on current "
                "JAX, with the compat runtime or without: port the batching rule by hand",
            )
        else:  # (the compat runtime has it, with legacy's rules: fixtures/fidelity/c07)
            ctx.report(
                COMPAT_REFERENCE,
                node,
                no_native_spelling(what, "the native callbacks have no such primitive"),
            )
        return None
    if member is None or member in LEGACY_FUNCTIONS or member in LEGACY_ENUMS:
        what = "the host_callback module" if member is None else member
        ctx.report(
            COMPAT_REFERENCE,
            node,
            no_native_spelling(f"{what} used as a value", "only a call can be rewritten"),
        )
        return None
    ctx.report(
        INTERNAL, node, f"`{member}` is not part of the legacy public API; port this by hand"
    )
    return None


# What a later `except` of the same `try` catches a legacy CPU tap error with (an
# XlaRuntimeError, a RuntimeError; measured: scripts/measure_callback_exception.py).
_CATCHES_RUNTIME_ERRORS = frozenset(
    {"RuntimeError", "Exception", "BaseException", "XlaRuntimeError", "JaxRuntimeError"}
)


def _later_handler_of_runtime_errors(node: cst.CSTNode, ctx: RuleContext) -> str | None:
    """The type (its spelling; "" for a bare `except:`) of a later handler of the `try` whose
    `except` catches `node` that catches a RuntimeError; None: none does."""
    child, parent = node, ctx.parent(node)
    while isinstance(parent, (cst.Tuple, cst.Element)):
        child, parent = parent, ctx.parent(parent)
    if not isinstance(parent, cst.ExceptHandler) or parent.type is not child:
        return None
    try_statement = ctx.parent(parent)
    if not isinstance(try_statement, cst.Try):
        return None
    handlers = list(try_statement.handlers)
    for handler in handlers[handlers.index(parent) + 1 :]:
        if handler.type is None:
            return ""
        if isinstance(handler.type, cst.Tuple):
            types = [element.value for element in handler.type.elements]
        else:
            types = [handler.type]
        for kind in types:
            spelled = cst.Module(body=[]).code_for_node(kind)
            if spelled.rsplit(".", 1)[-1] in _CATCHES_RUNTIME_ERRORS:
                return spelled
    return None


def _handler_that_never_ran(node: cst.CSTNode, ctx: RuleContext) -> bool:
    """Is `node` a type an `except` clause catches, in a `try` whose body calls no
    barrier_wait (the only place legacy raised its exceptions from)?"""
    child, parent = node, ctx.parent(node)
    while isinstance(parent, (cst.Tuple, cst.Element)):
        child, parent = parent, ctx.parent(parent)
    if not isinstance(parent, cst.ExceptHandler) or parent.type is not child:
        return False
    try_statement = ctx.parent(parent)
    if not isinstance(try_statement, cst.Try):
        return False
    body = cst.Module(body=[]).code_for_node(try_statement.body)
    return "barrier_wait" not in body and "effects_barrier" not in body
