"""The one table of legacy -> modern API facts that every rule reads.

Source: ../shared/design/host-callback-facts.md (verified against real JAX releases) and the
legacy jax 0.4.30 sources. Rules never spell a legacy or modern name themselves; they look
it up here, so a fact corrected here is corrected everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LEGACY_MODULE = "jax.experimental.host_callback"
# Where `--strategy compat` points.
COMPAT_MODULE = "hcmigrate_compat.host_callback"


@dataclass(frozen=True)
class LegacyFunction:
    """Signature of a legacy public function (jax 0.4.30), in call-binding order."""

    name: str
    positional: tuple[str, ...]
    keyword_only: tuple[str, ...] = ()
    # Spellings the seed tutorials use; read as the real parameter (see facts page).
    seed_aliases: dict[str, str] = field(default_factory=dict)
    accepts_extra_keywords: bool = False  # id_print prints **kwargs; id_tap rejects them


LEGACY_FUNCTIONS: dict[str, LegacyFunction] = {
    "id_tap": LegacyFunction(
        "id_tap",
        positional=("tap_func", "arg"),
        keyword_only=("result", "tap_with_device", "device_index", "callback_flavor"),
        seed_aliases={"tap_with_transform": "tap_with_transform"},
    ),
    "id_print": LegacyFunction(
        "id_print",
        positional=("arg",),
        keyword_only=(
            "result",
            "tap_with_device",
            "device_index",
            "output_stream",
            "threshold",
            "callback_flavor",
        ),
        accepts_extra_keywords=True,
    ),
    "call": LegacyFunction(
        "call",
        positional=("callback_func", "arg"),
        keyword_only=("result_shape", "call_with_device", "device_index", "callback_flavor"),
        seed_aliases={"result_shape_dtypes": "result_shape"},
    ),
    "barrier_wait": LegacyFunction("barrier_wait", positional=("logging_name",)),
    "stop_outfeed_receiver": LegacyFunction("stop_outfeed_receiver", positional=()),
}

# Exceptions: legacy barrier_wait raised CallbackException; modern callbacks surface errors
# raised on the host as jax.errors.JaxRuntimeError (a RuntimeError) at the call.
LEGACY_EXCEPTIONS = ("CallbackException", "TapFunctionException")
MODERN_EXCEPTION = "jax.errors.JaxRuntimeError"

LEGACY_ENUMS = ("CallbackFlavor",)

# Internals some projects reached into; no public modern equivalent.
LEGACY_INTERNALS = ("outside_call_p", "id_tap_dep_p", "id_p")
# The compat runtime has each of them, with legacy's parameters and rules.
COMPAT_INTERNALS = LEGACY_INTERNALS
# A module that reaches these patches the legacy implementation itself (batching or JVP rules
# of `outside_call_p`): no part of it can move to the native callbacks on its own (issue 14,
# point 7); all of it stays on the compat runtime, which `python -m compat` shows runs such a
# module as legacy did (issue 24, fixtures/fidelity/c07_patches_jvp_rule).
PATCHED_INTERNALS = ("outside_call_p",)

# Every public name of the legacy module (what `from ... host_callback import *` brings in).
LEGACY_PUBLIC_NAMES = frozenset(
    {
        "id_tap",
        "id_print",
        "call",
        "barrier_wait",
        "stop_outfeed_receiver",
        "CallbackException",
        "TapFunctionException",
        "CallbackFlavor",
    }
)

# Every spelling of `jax.config.update` (the object is reachable under these qualified names).
CONFIG_UPDATE_NAMES = (
    "jax.config.update",
    "jax.config.config.update",
    "jax._src.config.config.update",
)
# Config flags that only existed for host_callback; `jax.config.update` of them fails on
# modern JAX (unknown option), and they had no effect outside host_callback.
LEGACY_CONFIG_FLAGS = (
    "jax_host_callback_inline",
    "jax_host_callback_outfeed",
    "jax_host_callback_max_queue_byte_size",
    "jax_host_callback_legacy",
    "jax_host_callback_ad_transforms",
)


@dataclass(frozen=True)
class ModernName:
    """A modern callable and how generated code imports it."""

    dotted: str  # what generated code writes
    import_module: str  # `import X` or `from X import Y` target
    import_name: str | None = None


MODERN = {
    "io_callback": ModernName("io_callback", "jax.experimental", "io_callback"),
    "pure_callback": ModernName("jax.pure_callback", "jax"),
    "debug_callback": ModernName("jax.debug.callback", "jax"),
    "debug_print": ModernName("jax.debug.print", "jax"),
    "effects_barrier": ModernName("jax.effects_barrier", "jax"),
    "ShapeDtypeStruct": ModernName("jax.ShapeDtypeStruct", "jax"),
    "tree_map": ModernName("jax.tree.map", "jax"),
    "canonicalize_dtype": ModernName("jax.dtypes.canonicalize_dtype", "jax"),
}

# Legacy `call` took a numeric scalar as result_shape and used its canonicalised dtype:
# 1.0 -> float32[], 1 -> int32[], True -> bool[], 1j -> complex64[] without x64; float64,
# int64, complex128 with it, however it was switched on (measured: callback_facts.json
# "x64_scalar_result_shape"). The rewrite spells it `canonicalize_dtype(float)`, the
# dtype of the mode the program runs in (hcmigrate/codemod/result_shape.py), or "float64"
# where 64-bit mode is on whenever the code runs (hcmigrate/project_model/x64_mode.py).
# Dtype spellings that are already canonical without x64 (no canonicalize_dtype needed).
CANONICAL_DTYPE_NAMES = frozenset(
    {
        "float32",
        "float16",
        "bfloat16",
        "int32",
        "int16",
        "int8",
        "uint32",
        "uint16",
        "uint8",
        "bool_",
        "bool",
        "complex64",
    }
)

# `vmap_method=` exists from jax 0.4.35; `vectorized=` was removed in 0.6 (on 0.10 it is
# silently forwarded to the callback as a keyword argument).
VMAP_METHOD_SINCE = (0, 4, 35)
# The JAX the native rewrite writes for when the run raises the project's floor (the release
# that deprecated host_callback: everything below is there); the floor itself rises only to
# what the written code needs (NATIVE_SINCE).
NATIVE_OUTPUT_SINCE = (0, 4, 26)
# The oldest JAX the `hcmigrate-compat` distribution installs with
# (packaging/hcmigrate-compat/pyproject.toml; tests/test_compat_floor.py runs it there): a
# module the run points at hcmigrate_compat needs it, as a module written with jax.tree.map
# needs 0.4.25 (hcmigrate.native_needs), and the project's floor rises to it with the rest.
COMPAT_PACKAGE_JAX_FLOOR = (0, 4, 26)
# The oldest JAX release whose sources were read for NATIVE_SINCE (and JAX_RELEASE_REQUIRES).
OLDEST_MEASURED_JAX = (0, 3, 13)
# The first JAX release that has each name the native rewrite writes (measured on the
# releases' own sources, 0.3.13 to 0.4.35: scripts/measure_native_since.py; 0.3.13, the oldest
# measured, reads "0.3.13 or older": such a name raises no floor and is no HCB008 reason, a
# project floor below it is not known to lack it (jax 0.3.2 exports ShapeDtypeStruct)). The
# replacement spellings the JAX-removals rules write come from their table (hcmigrate.jax_removals, `replacement_since`): jax.tree.map, 0.4.25.
# What a written module needs is the newest of what it uses (hcmigrate.native_needs): HCB008
# and the raised floor (hcmigrate.projects.floors) read it. (Behaviour was measured on jax 0.4.30 and
# the current JAX; older releases were read for the names only.)
NATIVE_SINCE = {
    "jax.effects_barrier": (0, 3, 17),
    "jax.pure_callback": (0, 3, 17),
    "jax.debug.callback": (0, 3, 17),  # (ordered= from the first release with jax.debug)
    "jax.debug.print": (0, 3, 17),
    "jax.experimental.io_callback": (0, 4, 6),  # (ordered= from the first)
    "jax.ShapeDtypeStruct": (0, 3, 13),
    "jax.dtypes.canonicalize_dtype": (0, 3, 13),
    # (JAX104 writes it for jax.random.PRNGKeyArray / KeyArray and jnp.DeviceArray: the raised
    # floor counts it; and JAX105's `jax.extend.linear_util` for jax.linear_util, first read in
    # 0.4.16: 0.4.14 lacks it, 0.4.15 has no sdist to read)
    "jax.Array": (0, 3, 18),
    "jax.extend.linear_util": (0, 4, 16),
}
# The first JAX whose host_callback is a stub that raises NotImplementedError at each call
# (measured on jax 0.4.35 and 0.5.0 with the legacy program of docs/compat.md; 0.4.34 still
# runs it, as a thin io_callback layer): a branch kept for JAX below this runs where
# host_callback works (hcmigrate.codemod.version_guards).
HOST_CALLBACK_STUB_SINCE = (0, 4, 35)
# An io_callback in a `jax.custom_vjp` forward rule, run under `jax.grad`: "IO callbacks do not
# support JVP" up to jax 0.4.35, works from 0.4.36 (scripts/measure_io_callback_autodiff.py on
# 0.4.30, 0.4.35, 0.4.36, 0.5.0 and 0.10.2). Directly under grad it fails on every release
# (E6). So code that keeps host_callback for JAX below this (a version guard) is right to.
IO_CALLBACK_IN_CUSTOM_VJP_SINCE = (0, 4, 36)
# (callee, keyword) the rewrite writes that came later than the callee
NATIVE_KEYWORD_SINCE = {
    ("jax.pure_callback", "vmap_method"): VMAP_METHOD_SINCE,
    ("jax.experimental.io_callback", "vmap_method"): VMAP_METHOD_SINCE,
}
# What a JAX release itself requires: (its minimum jaxlib, `_minimum_jaxlib_version` in
# jax/version.py; the oldest Python, its Requires-Python) (measured by the same script); a
# project's jaxlib and Python floors rise with its JAX floor (hcmigrate.projects.floors).
JAX_RELEASE_REQUIRES = {
    (0, 3, 13): ((0, 3, 7), (3, 7)),
    (0, 3, 17): ((0, 3, 14), (3, 7)),
    (0, 3, 18): ((0, 3, 15), (3, 7)),
    (0, 3, 20): ((0, 3, 15), (3, 7)),
    (0, 3, 25): ((0, 3, 22), (3, 7)),
    (0, 4, 1): ((0, 3, 22), (3, 8)),
    (0, 4, 6): ((0, 4, 4), (3, 8)),
    (0, 4, 10): ((0, 4, 7), (3, 8)),
    (0, 4, 13): ((0, 4, 11), (3, 8)),
    (0, 4, 14): ((0, 4, 11), (3, 9)),
    (0, 4, 16): ((0, 4, 14), (3, 9)),
    (0, 4, 20): ((0, 4, 14), (3, 9)),
    (0, 4, 25): ((0, 4, 20), (3, 9)),
    (0, 4, 26): ((0, 4, 20), (3, 9)),
    (0, 4, 27): ((0, 4, 23), (3, 9)),
    (0, 4, 30): ((0, 4, 27), (3, 9)),
    (0, 4, 31): ((0, 4, 30), (3, 10)),
    (0, 4, 35): ((0, 4, 34), (3, 10)),
}


def release_requires(jax: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(jaxlib, Python) that JAX `jax` needs: the row of the oldest release measured from
    `jax` on (requirements only rise); None past the table."""
    later = [v for v in JAX_RELEASE_REQUIRES if v >= tuple(jax)]
    return JAX_RELEASE_REQUIRES[min(later)] if later else None


# The callbacks the native rewrite writes with `ordered=`: in a module migrated already they
# show the code needs NATIVE_OUTPUT_SINCE too (HCB008 on an already-migrated tree).
# (one tuple per last name: a trigger's callees share the last part of their name)
ORDERED_CALLBACK_NAMES = ("jax.debug.callback", "jax.experimental.io_callback")
ORDERED_PRINT_NAMES = ("jax.debug.print",)
# The codes of rules that write the modern API (the others remove, keep or point at compat).
MODERN_API_CODES = frozenset(
    {"HCB101", "HCB201", "HCB301", "HCB302", "HCB304", "HCB305", "HCB401", "HCB403", "HCB601"}
)
PURE_CALLBACK_NAMES = ("jax.pure_callback", "jax._src.callback.pure_callback")
VMAP_METHOD_FOR_VECTORIZED = {True: "legacy_vectorized", False: "sequential"}
DEFAULT_VMAP_METHOD = "sequential"

# Modules whose functions compute without side effects: a `call` to one of them may become
# a pure_callback (which the compiler may drop or repeat).
# numpy's global random state: every call changes it and reads it, so none of these is pure
# (as pure_callback they were hoisted out of loops and reordered before taps).
IMPURE_MODULE_PREFIXES = ("numpy.random.",)
# Host functions that take jax.Array arguments as they take numpy arrays and give the same
# answers: no numpy conversion is needed in front of them.
ARRAY_AGNOSTIC_PREFIXES = ("numpy.", "scipy.", "jax.numpy.", "jax.scipy.", "math.")
# ... but for these, which tell a jax.Array apart (measured on jax 0.10.2 / numpy 2 against
# numpy arrays, tests/test_numpy_args.py::test_numpy_random_takes_jax_arrays_as_they_come):
# a seed (`default_rng(x)`: "SeedSequence expects int or sequence of ints") and in-place
# shuffling (jax arrays are immutable). numpy.random's samplers (`zipf`, `f`, `normal`,
# `choice`, `permutation`, `seed`, ...) give the same draws for either.
NOT_ARRAY_AGNOSTIC = frozenset(
    f"numpy.random.{name}"
    for name in (
        "default_rng",
        "Generator",
        "SeedSequence",
        "RandomState",
        "BitGenerator",
        "MT19937",
        "PCG64",
        "PCG64DXSM",
        "Philox",
        "SFC64",
        "shuffle",
    )
) | frozenset(
    # numpy functions that write into an array argument or need numpy's own buffer (measured
    # by scripts/measure_host_boundary.py: each refuses a jax.Array, "argument 1 must be
    # numpy.ndarray", "has no attribute '__array_interface__'", ...; legacy's read-only
    # arrays refused the writes too, until the host function set the WRITEABLE flag)
    f"numpy.{name}"
    for name in (
        "copyto",
        "put",
        "putmask",
        "place",
        "fill_diagonal",
        "put_along_axis",
        "ctypeslib.as_ctypes",
    )
)
# Scalar conversions of a one-element array of one or more dimensions (`int(x)` of a
# float32[1]): numpy 1.26, legacy's numpy, gave the value (with a DeprecationWarning); numpy 2
# and jax.Array both raise TypeError ("only 0-dimensional arrays can be converted"), so a
# numpy copy does not help. `int(x.item())` gives legacy's value from either and is the same
# for a 0-d one (scripts/measure_host_boundary.py); the rewrite writes it in host functions.
SCALAR_CONVERSIONS = frozenset({"builtins.int", "builtins.float", "builtins.complex"})
# Builtins that give the same result for a jax.Array as for a numpy array (measured on jax
# 0.10.2 / numpy 2, 0-d and n-d, bool, int, uint, float16/32 and complex dtypes, by
# tests/test_numpy_args.py::test_what_the_agnostic_builtins_and_methods_give): the same value
# and type; int(), float() and complex() of an array of more than one element raise a
# TypeError from both, worded differently. Not str() nor print(): of a tuple of arrays they
# show the elements' repr, `Array(` where legacy showed `array(`. Not abs() nor round(): they
# give a jax.Array for a jax.Array, and round() of a numpy array raises.
ARRAY_AGNOSTIC_BUILTINS = frozenset(
    f"builtins.{name}" for name in ("int", "float", "bool", "complex", "len")
)
# Methods of an array that give the same Python value for either, called with no argument
# (measured with the builtins above): `x.item()`, `x.tolist()`.
ARRAY_AGNOSTIC_METHODS = frozenset({"item", "tolist"})
# Transformations an ordered io_callback cannot run under (docs/callback-semantics.md, E5-E9).
# In a module naming none of them, taps may join the ordered io_callback chain of its host
# calls, keeping one program order as legacy did.
IO_BREAKING_TRANSFORMS = (
    "vmap",
    "grad",
    "value_and_grad",
    "jvp",
    "vjp",
    "jacfwd",
    "jacrev",
    "hessian",
    "checkpoint",
    "remat",
    "linear_transpose",
)
# Legacy taps, prints and calls ran on every device of a pmap or a sharded computation;
# ordered jax.debug callbacks are refused on more than one device (docs/callback-semantics.md,
# E14/E15, D1). A module naming one of these runs code on several devices.
# Through one sharded program (sharded jit, shard_map): an ordered io_callback runs there from
# jax 0.4.26 on, once with the whole array in a sharded jit as legacy's tap
# ("Ordered callbacks on several devices, release by release").
SHARDED_PROGRAM_APIS = (
    "shard_map",
    "pjit",
    "NamedSharding",
    "PositionalSharding",
    "with_sharding_constraint",
)
# Once per device: an ordered io_callback is refused under pmap up to jax 0.7.2 (E15, D1);
# from jax 0.8.0 pmap is a shard_map and it runs there, once per device as legacy's tap
# (measured by scripts/measure_ordered_io_devices.py). xmap is gone since jax 0.4.31.
PER_DEVICE_APIS = ("pmap", "xmap")
# An ordered io_callback on several devices (a jit of arrays sharded over a mesh, shard_map) is
# refused up to jax 0.4.20 ("Ordered effects are not supported for more than 1 device" on
# 0.4.13; an AssertionError of pxla's get_gspmd_shardings_from_executable on 0.4.18 and 0.4.20)
# and runs from 0.4.21, once with the whole array in a sharded jit (measured with
# `scripts/measure_ordered_io_devices.py --probe io_ord CONTEXT` and 4 CPU devices on 0.4.13,
# 0.4.18, 0.4.20, 0.4.21, 0.4.23 and 0.4.25, each with its own jaxlib; from 0.4.26 on:
# docs/ordered_io_devices.json). Code written for several devices needs it (native_needs).
ORDERED_IO_SEVERAL_DEVICES_SINCE = (0, 4, 21)
ORDERED_IO_UNDER_PMAP_SINCE = (0, 8, 0)
MULTI_DEVICE_APIS = PER_DEVICE_APIS + SHARDED_PROGRAM_APIS

PURE_MODULE_PREFIXES = (
    "numpy.",
    "scipy.",
    "math.",
    "cmath.",
    "jax.numpy.",
    "jax.scipy.",
    "operator.",
)
PURE_BUILTINS = frozenset(
    {
        "abs",
        "all",
        "any",
        "bool",
        "complex",
        "dict",
        "divmod",
        "enumerate",
        "float",
        "frozenset",
        "int",
        "isinstance",
        "len",
        "list",
        "max",
        "min",
        "pow",
        "range",
        "reversed",
        "round",
        "set",
        "slice",
        "sorted",
        "str",
        "sum",
        "tuple",
        "zip",
        "map",
        "filter",
        "type",
        "getattr",
        "hasattr",
    }
)
# Array methods that return new values (never mutate); calls to them keep a function pure.
PURE_METHODS = frozenset(
    {
        "astype",
        "reshape",
        "transpose",
        "ravel",
        "flatten",
        "squeeze",
        "sum",
        "mean",
        "prod",
        "max",
        "min",
        "argmax",
        "argmin",
        "std",
        "var",
        "dot",
        "copy",
        "conj",
        "real",
        "imag",
        "cumsum",
        "cumprod",
        "round",
        "clip",
        "item",
        "tolist",
        "all",
        "any",
        "swapaxes",
        "view",
        "get",
        "keys",
        "values",
        "items",
        "__array__",
        "block_until_ready",
    }
)

# What id_print's value is when the code shows it is one array, not a tuple, list or dict
# (hcmigrate.rules.id_print: one array prints in one line of code, no layout helper):
# methods only arrays have, and functions of jax.numpy / jax.lax that return one array.
ONE_ARRAY_METHODS = frozenset(
    "sum mean max min prod std var cumsum cumprod argmax argmin astype reshape ravel flatten "
    "squeeze transpose dot round clip any all".split()
)
ONE_ARRAY_FUNCTIONS = frozenset(
    f"jax.numpy.{name}"
    for name in (
        "sum mean max min prod std var abs sqrt square exp log log1p tanh sin cos maximum "
        "minimum ones zeros ones_like zeros_like full arange linspace array asarray dot matmul "
        "einsum cumsum reshape concatenate stack argmax argmin mean norm all any isnan isfinite "
        "clip round floor ceil float16 bfloat16 float32 float64 int8 int16 int32 int64 uint8 "
        "uint32 bool_ complex64"
    ).split()
) | frozenset({"jax.numpy.linalg.norm", "jax.lax.psum", "jax.lax.pmean", "jax.lax.stop_gradient"})
