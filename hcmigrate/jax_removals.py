"""The one table of removed JAX APIs that host_callback-era projects meet (issue 25).

Beside `hcmigrate.facts` (the host_callback facts), this table is read by two readers: the
JAX-removals rule family of the codemod (which rewrites or reports each row) and
`hcmigrate verify` (which classifies a candidate's failure on a removed API as "broken, not
by the migration" and names the rule that fixes it). One table, two readers.

Every version column is measured, never written from memory: `scripts/measure_jax_removals.py`
runs each row's probe on real JAX releases (jax 0.4.30 in the legacy environment, the current
JAX) and reads the pure-Python `jax` wheels of the releases in between (their sources and
deprecation messages); it writes `docs/jax_removals.json`, and `tests/test_jax_removals_facts.py`
checks that every row below agrees with it. Seeded from ../shared/design/jax-removals-facts.md.

Versions are strings as JAX spells them ("0.4.26"). `removed_in` is the first release that no
longer has the API (for an API already absent from the oldest wheel measured, that wheel's
version with `evidence` saying so); `replacement_since` is the first release that has the
replacement spelling (None: every release the table covers).
"""

from __future__ import annotations

import functools

import enum
from dataclasses import dataclass, replace

from hcmigrate.jax_removals_evidence import EVIDENCE


class Kind(enum.Enum):
    ATTRIBUTE = "attribute"  # a dotted name, used as `jax.tree_map` or `from jax import tree_map`
    KEYWORD = "keyword"  # a keyword argument a function no longer accepts
    MODULE = "module"  # a module that no longer imports
    METHOD = "method"  # an attribute of jax.Array values (`x.device_buffer`)
    BEHAVIOUR = "behaviour"  # no name removed, but results changed
    # no name removed, but a function's calls with some arguments changed meaning (`removed_in`:
    # the release that changed them; every call is a site, the shapes are not visible)
    CALL_BEHAVIOUR = "call-behaviour"


@dataclass(frozen=True)
class RemovedApi:
    name: str  # dotted, as JAX spells it; for KEYWORD the function, for METHOD `jax.Array.<m>`
    kind: Kind
    removed_in: str
    # the spelling to use instead; None: nothing mechanical (for a KEYWORD row that is
    # `mechanical`: pass the value positionally, no keyword names it)
    replacement: str | None
    replacement_since: str | None = None
    deprecated_in: str | None = None
    keyword: str | None = None  # KEYWORD rows: the removed keyword
    mechanical: bool = True  # the codemod can rewrite every use without reading intent
    # A spelling that works on every release the table covers, where `replacement` is newer
    # than some (a dotted name; KEYWORD rows: None, see `position`).
    portable: str | None = None
    position: int | None = None  # KEYWORD rows: the parameter's place, for a positional call
    # KEYWORD rows: the parameter's default in every release covered (Python source), passed by
    # position where a later parameter is passed by position and this one was left out.
    default: str | None = None
    # Where no one spelling spans the project's JAX range, an import of the name (`from M
    # import n`) becomes a guarded import that tries `replacement` (where the range allows it;
    # else the name as imported) and on ImportError falls back: "old" to the removed spelling
    # (the same object on every release that has it: measured), "none" to `n = None` (the
    # API is gone with no successor). None: no guarded import.
    guard: str | None = None
    # ATTRIBUTE rows of functions rewritten where called: the call's new form, `{args}` its
    # arguments as written (`list(map({args}))`); other uses are manual findings
    call_form: str | None = None
    # ATTRIBUTE rows of functions that return a function, rewritten where that is called at
    # once (`jax.xla_computation(f)(x)`): the new form, `{function}` the one argument of the
    # first call, `{args}` the arguments of the second, as written; other uses stay the rule's
    # findings
    applied_form: str | None = None
    rule: str = ""  # the code of the rule that rewrites or reports it
    advice: str = ""  # what to do, where the rewrite is not mechanical; caveats otherwise
    evidence: str = ""  # what the measurement saw (messages, wheels)

    @property
    def key(self) -> str:
        """Unique id of the row: the name, and the keyword for KEYWORD rows."""
        return f"{self.name}:{self.keyword}" if self.keyword else self.name


# the first release with jax.extend.core.primitives.jit_p (measured: the wheels)
_JIT_P_SINCE = "0.7.0"


def _tree(n: str, deprecated_in: str) -> RemovedApi:
    return RemovedApi(
        f"jax.tree_{n}",
        Kind.ATTRIBUTE,
        removed_in="0.6.0",
        deprecated_in=deprecated_in,
        replacement=f"jax.tree.{n}",
        replacement_since="0.4.25",
        portable=f"jax.tree_util.tree_{n}",
        rule="JAX101",
        advice=f"jax.tree_util.tree_{n} works on every version",
    )


def _clip(
    keyword: str, replacement: str | None, position: int, default: str | None = None
) -> RemovedApi:
    return RemovedApi(
        "jax.numpy.clip",
        Kind.KEYWORD,
        keyword=keyword,
        removed_in="0.10.0",
        deprecated_in="0.4.27",
        replacement=replacement,
        replacement_since="0.4.27" if replacement else None,
        position=position,
        default=default,
        rule="JAX102",
        advice="positional jnp.clip(x, lo, hi) works on every version"
        if replacement
        else "pass the array positionally: jnp.clip(x, ...) works on every version",
    )


def _core_moved(n: str) -> RemovedApi:
    return RemovedApi(
        f"jax.core.{n}",
        Kind.ATTRIBUTE,
        removed_in="0.6.0",
        deprecated_in="0.4.38",
        replacement=f"jax.extend.core.{n}",
        replacement_since="0.4.27",
        guard="old",
        rule="JAX107",
    )


def _manual(
    name: str,
    removed_in: str,
    advice: str,
    kind: Kind = Kind.ATTRIBUTE,
    deprecated_in: str | None = None,
    rule: str = "JAX109",
) -> RemovedApi:
    return RemovedApi(
        name,
        kind,
        removed_in=removed_in,
        deprecated_in=deprecated_in,
        replacement=None,
        mechanical=False,
        advice=advice,
        rule=rule,
    )


# Submodules that `import jax` loads (so `jax.tree.map` works after it alone); a rewrite
# into any other (`jax.extend.core`) imports it. Checked by tests/test_removed_apis.py on the
# current JAX and jax 0.4.30.
IMPORTED_WITH_JAX = (
    "jax.numpy",
    "jax.tree",
    "jax.tree_util",
    "jax.random",
    "jax.lax",
    "jax.sharding",
    "jax.core",
    "jax.dtypes",
    # (`jax.ad.JVPTracer` -> `jax.interpreters.ad.JVPTracer`: no import to add, which in a
    # module that imports jax only inside a function would make jax a hard dependency)
    "jax.interpreters",
    "jax.interpreters.ad",
)

# Filled in by the measurement where the reference page gives no version: a row whose version
# is still this fails tests/test_jax_removals_facts.py.
UNMEASURED = "unmeasured"

REMOVED_APIS: tuple[RemovedApi, ...] = (
    _tree("map", deprecated_in="0.4.26"),
    *(
        _tree(n, deprecated_in="0.4.16")
        for n in ("flatten", "leaves", "unflatten", "structure", "transpose")
    ),
    # (the bounds default to None from 0.4.16 (`clip(a, a_min=None, a_max=None, out=None)`)
    # through 0.10.2 (`clip(arr=None, /, min=None, max=None)`): read in the wheels)
    _clip("a_min", "min", 1, default="None"),
    _clip("a_max", "max", 2, default="None"),
    _clip("a", None, 0),  # (the array is positional-only from 0.4.27: `clip(x, /, min, max)`)
    # (`reshape(a, newshape, order="C")` up to 0.4.27; `shape` from 0.4.28, second everywhere)
    RemovedApi(
        "jax.numpy.reshape",
        Kind.KEYWORD,
        keyword="newshape",
        removed_in="0.6.0",
        deprecated_in="0.4.28",
        replacement="shape",
        replacement_since="0.4.28",
        position=1,
        rule="JAX102",
        advice="positional jnp.reshape(x, shape) works on every version",
    ),
    RemovedApi("jax.jax", Kind.ATTRIBUTE, removed_in="0.10.1", replacement="jax", rule="JAX103"),
    RemovedApi(
        "jax.sharding.PositionalSharding",
        Kind.ATTRIBUTE,
        removed_in="0.7.0",
        deprecated_in="0.6.0",
        replacement="jax.sharding.NamedSharding",
        mechanical=False,
        rule="JAX113",
        advice="NamedSharding(Mesh(devices, names), PartitionSpec(...)); .replicate() is "
        "NamedSharding(mesh, PartitionSpec()); .replicate(axis) is the same NamedSharding with "
        "None at that axis of the PartitionSpec (keepdims=False: a mesh without that axis)",
    ),
    RemovedApi(
        "jax.numpy.round_",
        Kind.ATTRIBUTE,
        removed_in="0.4.38",
        deprecated_in="0.4.33",
        replacement="jax.numpy.round",
        rule="JAX106",
    ),
    RemovedApi(
        "jax.xla_computation",
        Kind.ATTRIBUTE,
        removed_in="0.4.34",
        deprecated_in="0.4.30",
        replacement="jax.jit(f).lower(*args).compiler_ir('hlo')",
        # (measured on jax 0.4.30: the same XlaComputation type and methods; the HLO module is
        # named jit_f instead of xla_computation_f and its result is no longer a 1-tuple:
        # tests/test_removed_xla_computation.py)
        applied_form='jax.jit({function}).lower({args}).compiler_ir("hlo")',
        mechanical=False,
        rule="JAX114",
        advice="jax.xla_computation(f)(*args) is jax.jit(f).lower(*args).compiler_ir('hlo')",
    ),
    *(
        _core_moved(n)
        for n in (
            "Primitive",
            "Jaxpr",
            "ClosedJaxpr",
            "JaxprEqn",
            "Literal",
            "Var",
            "jaxpr_as_fun",
            "Token",
        )
    ),
    RemovedApi(
        "jax.core.get_aval",
        Kind.ATTRIBUTE,
        removed_in="0.10.0",
        deprecated_in="0.8.2",
        replacement="jax.typeof",
        replacement_since="0.5.3",
        rule="JAX107",
        advice="for a concrete value jax 0.4 gave a ConcreteArray (with `.val`); jax.typeof "
        "gives its ShapedArray",
    ),
    RemovedApi(
        "jax.core.raise_to_shaped",
        Kind.ATTRIBUTE,
        removed_in="0.6.0",
        deprecated_in="0.4.38",
        replacement=None,
        mechanical=False,
        rule="JAX107",
        advice="raise_to_shaped(x) is x",
    ),
    _manual(
        "jax.core.ConcreteArray",
        "0.4.36",
        "use jax.core.ShapedArray, or concrete values outside tracing",
        rule="JAX107",
    ),
    RemovedApi(
        "jax.core.call_p",
        Kind.ATTRIBUTE,
        removed_in="0.7.0",
        deprecated_in="0.4.38",
        replacement="jax.extend.core.primitives.call_p",
        replacement_since="0.4.27",
        guard="old",
        rule="JAX107",
    ),
    RemovedApi(
        "jax.core.closed_call_p",
        Kind.ATTRIBUTE,
        removed_in="0.7.0",
        deprecated_in="0.4.38",
        replacement="jax.extend.core.primitives.closed_call_p",
        replacement_since="0.4.27",
        guard="old",
        rule="JAX107",
    ),
    *(
        _manual(
            f"jax.core.{n}",
            removed_in,
            "JAX internal with no public home: rewrite the code that needs it",
            deprecated_in=deprecated_in,
            rule="JAX107",
        )
        for n, removed_in, deprecated_in in (
            ("axis_frame", "0.7.0", "0.4.38"),
            ("typecheck", "0.7.0", "0.4.38"),
            ("canonicalize_shape", "0.4.31", "0.4.24"),
            ("full_lower", "0.6.0", "0.4.38"),
            ("concrete_aval", "0.6.0", "0.4.38"),
            ("raise_as_much_as_possible", "0.4.36", None),
        )
    ),
    RemovedApi(
        "jax.random.PRNGKeyArray",
        Kind.ATTRIBUTE,
        removed_in="0.4.24",
        deprecated_in="0.4.16",
        replacement="jax.Array",
        rule="JAX104",
    ),
    RemovedApi(
        "jax.random.KeyArray",
        Kind.ATTRIBUTE,
        removed_in="0.4.24",
        deprecated_in="0.4.16",
        replacement="jax.Array",
        rule="JAX104",
    ),
    RemovedApi(
        "jax.config",
        Kind.MODULE,
        removed_in="0.4.29",
        deprecated_in="0.4.25",
        replacement="jax",
        rule="JAX105",
        advice="`from jax.config import config` is `from jax import config`",
    ),
    RemovedApi(
        "jax.linear_util",
        Kind.MODULE,
        removed_in="0.4.24",
        replacement="jax.extend.linear_util",
        rule="JAX105",
    ),
    RemovedApi(
        "jax.experimental.optimizers",
        Kind.MODULE,
        removed_in="0.4.16",
        replacement="jax.example_libraries.optimizers",
        rule="JAX105",
    ),
    RemovedApi(
        "jax.experimental.stax",
        Kind.MODULE,
        removed_in="0.4.16",
        replacement="jax.example_libraries.stax",
        rule="JAX105",
    ),
    RemovedApi(
        "jax.ad",
        Kind.MODULE,
        removed_in="0.4.16",
        replacement="jax.interpreters.ad",
        rule="JAX105",
        advice="jax.ad.JVPTracer is jax.interpreters.ad.JVPTracer",
    ),
    RemovedApi(
        "jax.abstract_arrays",
        Kind.MODULE,
        removed_in="0.4.17",
        replacement="jax.core",
        rule="JAX105",
        advice="jax.abstract_arrays.ShapedArray is jax.core.ShapedArray",
    ),
    *(
        RemovedApi(
            f"jax.numpy.{old}",
            Kind.ATTRIBUTE,
            removed_in="0.4.24",
            deprecated_in="0.4.16",
            replacement=new,
            rule="JAX106",
        )
        for old, new in (("NINF", "-jax.numpy.inf"), ("NZERO", "-0.0"), ("PZERO", "0.0"))
    ),
    *(
        RemovedApi(
            f"jax.numpy.{old}",
            Kind.ATTRIBUTE,
            removed_in="0.4.16",
            replacement=new,
            rule="JAX106",
        )
        for old, new in (
            ("PINF", "jax.numpy.inf"),
            ("Inf", "jax.numpy.inf"),
            ("Infinity", "jax.numpy.inf"),
            ("NaN", "jax.numpy.nan"),
            ("infty", "jax.numpy.inf"),
        )
    ),
    *(
        RemovedApi(
            f"jax.numpy.{old}",
            Kind.ATTRIBUTE,
            removed_in="0.4.16",
            replacement=f"jax.numpy.{new}",
            rule="JAX106",
        )
        for old, new in (
            ("product", "prod"),
            ("alltrue", "all"),
            ("sometrue", "any"),
            ("cumproduct", "cumprod"),
        )
    ),
    RemovedApi(
        "jax.numpy.DeviceArray",
        Kind.ATTRIBUTE,
        removed_in="0.4.16",
        replacement="jax.Array",
        rule="JAX104",
    ),
    *(
        RemovedApi(
            f"jax.numpy.{old}",
            Kind.ATTRIBUTE,
            removed_in="0.4.24",
            deprecated_in="0.4.16",
            replacement=new,
            replacement_since=since,
            # (in1d flattened its result; isin keeps the element's shape)
            mechanical=old != "in1d",
            rule="JAX106",
            advice="jnp.isin(element, test_elements).ravel() (in1d gave a flat result)"
            if old == "in1d"
            else "",
        )
        for old, new, since in (
            ("trapz", "jax.numpy.trapezoid", "0.4.26"),
            ("in1d", "jax.numpy.isin", None),
            ("row_stack", "jax.numpy.vstack", None),
        )
    ),
    RemovedApi(
        "jax.numpy.msort",
        Kind.ATTRIBUTE,
        removed_in="0.4.16",
        replacement=None,
        mechanical=False,
        rule="JAX106",
        advice="jnp.sort(x, axis=0)",
    ),
    RemovedApi(
        "jax.Array.device_buffer",
        Kind.METHOD,
        removed_in="0.4.27",
        deprecated_in="0.4.22",
        replacement="addressable_data(0)",
        rule="JAX108",
    ),
    RemovedApi(
        "jax.Array.device_buffers",
        Kind.METHOD,
        removed_in="0.4.27",
        deprecated_in="0.4.22",
        replacement="[s.data for s in x.addressable_shards]",
        mechanical=False,
        rule="JAX108",
        advice="[s.data for s in x.addressable_shards] (a list of single-device arrays)",
    ),
    RemovedApi(
        "jax.Array.device",
        Kind.METHOD,
        removed_in="0.4.27",
        deprecated_in="0.4.21",
        replacement="devices()",
        mechanical=False,
        rule="JAX108",
        advice="x.devices() is a set of devices on every version; the x.device property exists from 0.4.31",
    ),
    RemovedApi(
        "jax.experimental.pjit.pjit_p",
        Kind.ATTRIBUTE,
        removed_in="0.7.0",
        # the same primitive, renamed `jit`, in its public home; no release has both spellings
        # (0.6.2 alone has jax.extend.core.primitives.pjit_p): where the project's range starts
        # before 0.7.0, an import of it becomes a guarded import of both (measured: the
        # primitive `jax.jit` emits is the one the guarded import binds, on 0.4.30, 0.6.2 and
        # the current JAX)
        replacement="jax.extend.core.primitives.jit_p",
        replacement_since=_JIT_P_SINCE,
        guard="old",
        rule="JAX111",
        advice=f"JAX internal: the jit primitive is jax.extend.core.primitives.jit_p from JAX "
        f"{_JIT_P_SINCE} (before, only this name): import it guarded "
        "(`try: from jax.extend.core.primitives import jit_p as pjit_p` / `except "
        "ImportError: from jax.experimental.pjit import pjit_p`)",
    ),
    RemovedApi(
        "jax.interpreters.pxla.xla_pmap_p",
        Kind.ATTRIBUTE,
        removed_in="0.10.0",
        deprecated_in="0.8.2",
        replacement=None,
        mechanical=False,
        guard="none",
        rule="JAX111",
        advice="JAX internal with no successor: jax.pmap now traces to a `jit` equation "
        "holding a `shard_map` one, no primitive of its own; import it guarded (`except "
        "ImportError: xla_pmap_p = None`) or stop matching on it",
    ),
    # JAX internals of the transformations (PennyLane 0.26's math/utils.py tests
    # `isinstance(x, batching.BatchTracer)`): the tracer and trace classes moved into
    # jax._src with no public home; `jax.core.Tracer` is the public "is a tracer" test
    _manual(
        "jax.interpreters.batching.BatchTracer",
        "0.9.0",
        "JAX internal with no public home: code tests `isinstance(x, BatchTracer)` to detect "
        "tracing under jax.vmap, which no public API tells; `isinstance(x, jax.core.Tracer)` "
        "tells whether x is traced at all (any transformation)",
        deprecated_in="0.7.1",
    ),
    _manual(
        "jax.interpreters.batching.BatchTrace",
        "0.9.0",
        "JAX internal with no public home: rewrite the code that needs it (jax.vmap, or "
        "jax.custom_batching.custom_vmap for a custom batching rule)",
        deprecated_in="0.7.1",
    ),
    *(
        _manual(
            f"jax.interpreters.partial_eval.{n}",
            "0.9.0",
            "JAX internal with no public home: rewrite the code that needs it (jax.make_jaxpr "
            "traces a function to a jaxpr; `isinstance(x, jax.core.Tracer)` tells whether x "
            "is traced)",
            deprecated_in="0.7.2",
        )
        for n in ("JaxprTrace", "DynamicJaxprTrace")
    ),
    RemovedApi(
        "jax.random.shuffle",
        Kind.ATTRIBUTE,
        removed_in="0.4.31",
        deprecated_in="0.4.16",
        replacement=None,
        mechanical=False,
        rule="JAX109",
        advice="jax.random.permutation(key, x, independent=True)",
    ),
    _manual(
        "jax.experimental.maps",
        "0.4.31",
        "jax.experimental.shard_map or jax.vmap",
        Kind.MODULE,
        deprecated_in="0.4.26",
    ),
    RemovedApi(
        "jax.sharding.XLACompatibleSharding",
        Kind.ATTRIBUTE,
        removed_in="0.4.34",
        deprecated_in="0.4.29",
        replacement="jax.sharding.Sharding",
        rule="JAX104",
    ),
    RemovedApi(
        "jax.clear_backends",
        Kind.ATTRIBUTE,
        removed_in="0.4.36",
        deprecated_in="0.4.26",
        replacement=None,
        mechanical=False,
        rule="JAX109",
        advice="jax.clear_caches() clears compiled code; backends are no longer cleared",
    ),
    _manual(
        "jax.experimental.array_api",
        "0.5.0",
        "jax.numpy implements the array API",
        Kind.MODULE,
        deprecated_in="0.4.33",
    ),
    RemovedApi(
        "jax.util",
        Kind.MODULE,
        removed_in="0.8.0",
        replacement=None,
        mechanical=False,
        rule="JAX112",
        advice="jax.util was internal: safe_map(f, *xs) is list(map(f, *xs)) and safe_zip(*xs) "
        "is list(zip(*xs)) where the lengths agree (they raised ValueError where not); copy "
        "any other helper you need",
    ),
    *(
        RemovedApi(
            f"jax.util.{name}",
            Kind.ATTRIBUTE,
            removed_in="0.7.0",
            deprecated_in="0.6.0",
            replacement=None,
            call_form=f"list({builtin}({{args}}))",
            rule="JAX112",
            advice=f"{name}(...) is list({builtin}(...)) where the lengths agree (it raised "
            "ValueError where not)",
        )
        for name, builtin in (("safe_map", "map"), ("safe_zip", "zip"))
    ),
    RemovedApi(
        "jax.lib.xla_bridge",
        Kind.MODULE,
        removed_in="0.9.0",
        replacement="jax.extend.backend",
        replacement_since="0.4.26",
        mechanical=False,
        rule="JAX109",
        advice="jax.extend.backend has get_backend and clear_backends' successors; other names are gone",
    ),
    # Found missing by scripts/check_jax_removals_complete.py (wheels 0.4.16-0.10.2 and JAX's
    # changelog; issue 36): whole modules and public names host_callback-era code imports.
    *(
        _manual(name, "0.4.16", advice, Kind.MODULE)
        for name, advice in (
            ("jax.experimental.loops", "write the loop with jax.lax.fori_loop / jax.lax.scan"),
            ("jax.experimental.callback", "no successor: use jax.experimental.io_callback"),
            ("jax.experimental.optix", "use the optax package (optax.adam, ...)"),
            ("jax.api", "its names are jax's own: jax.jit, jax.grad, ..."),
            ("jax.jaxpr_util", "JAX internal with no public home"),
        )
    ),
    *(
        _manual(name, removed_in, advice, Kind.MODULE)
        for name, removed_in, advice in (
            ("jax.extend.ffi", "0.8.0", "use jax.ffi (the same API)"),
            ("jax.prng", "0.4.24", "JAX internal: jax.random.key_impl / jax.extend.random"),
        )
    ),
    # jaxlib's extension module, renamed jaxlib._jax in jaxlib 0.6.1 (read from the jaxlib
    # wheels' file lists; `removed_in` is the jax release whose jaxlib lacks it). Its names
    # host_callback-era code imports have public homes (measured: the homes probe and wheels
    # of scripts/measure_jax_removals.py; `DeviceArray`, older still, is in no wheel read).
    _manual(
        "jaxlib.xla_extension",
        "0.6.1",
        "JAX internal, renamed jaxlib._jax: Device is jax.Device, ArrayImpl is jax.Array "
        "(and the older DeviceArray), XlaRuntimeError is jax.errors.JaxRuntimeError (JAX >= 0.4.34; for "
        "older JAX keep the old import in an `except ImportError:`)",
        Kind.MODULE,
    ),
    RemovedApi(
        "jax.tree_util.tree_multimap",
        Kind.ATTRIBUTE,
        removed_in="0.4.16",
        replacement="jax.tree_util.tree_map",
        rule="JAX101",
    ),
    *(
        _manual(name, removed_in, advice, deprecated_in=deprecated_in)
        for name, removed_in, advice, *deprecated in (
            ("jax.ops.index_update", "0.4.16", "x.at[idx].set(y)"),
            ("jax.ops.index_add", "0.4.16", "x.at[idx].add(y)"),
            ("jax.partial", "0.4.16", "functools.partial"),
            ("jax.mask", "0.4.16", "no successor: jax.vmap over padded arrays"),
            ("jax.shapecheck", "0.4.16", "no successor: jax.eval_shape"),
            ("jax.soft_pmap", "0.4.16", "jax.vmap, or jax.jit with a sharding"),
            ("jax.lax.tie_in", "0.4.29", "tie_in(x, y) is y", "0.4.24"),
            (
                "jax.device_put_replicated",
                "0.10.0",
                "jax.device_put(x, NamedSharding(mesh, PartitionSpec())) with a mesh of the "
                "devices (a replicated array; for pmap's leading axis, jnp.stack([x] * n))",
                "0.8.1",
            ),
            (
                "jax.device_put_sharded",
                "0.10.0",
                "jax.device_put(jnp.stack(xs), NamedSharding(mesh, PartitionSpec('d'))) with "
                "`mesh = Mesh(devices, ('d',))`",
                "0.8.1",
            ),
            (
                "jax.lax.infeed",
                "0.7.0",
                "no successor: pass the data as an argument, or jax.experimental.io_callback",
            ),
            ("jax.lax.outfeed", "0.7.0", "no successor: jax.experimental.io_callback"),
        )
        for deprecated_in in [deprecated[0] if deprecated else None]
    ),
    RemovedApi(
        "jax.numpy.linalg.solve",
        Kind.CALL_BEHAVIOUR,
        removed_in="0.5.0",
        deprecated_in="0.4.25",
        replacement=None,
        mechanical=False,
        rule="JAX115",
        advice="where `b` has one dimension fewer than `a` and more than one (a batch of "
        "vectors: a (k, n, n), b (k, n)), jax < 0.5.0 solved each vector; from 0.5.0 that "
        "raises `Invalid shapes for solve` (and a b of (n, n) against a (k, n, n) now solves "
        "matrices where it raised); `jnp.linalg.solve(a, b[..., None])[..., 0]` solves the "
        "vectors on every version",
    ),
    RemovedApi(
        "jax.random",
        Kind.BEHAVIOUR,
        removed_in="0.5.0",
        replacement=None,
        mechanical=False,
        rule="JAX110",
        advice='jax.config.update("jax_threefry_partitionable", False) right after `import jax` '
        "restores the random numbers of jax < 0.5.0 (the default of jax_threefry_partitionable "
        "became True)",
    ),
)

# each row's `evidence` is what scripts/measure_jax_removals.py saw (a generated module)
REMOVED_APIS = tuple(
    replace(row, evidence=EVIDENCE.get(row.key, row.evidence)) for row in REMOVED_APIS
)

BY_KEY: dict[str, RemovedApi] = {row.key: row for row in REMOVED_APIS}


@functools.cache
def module_names() -> frozenset[str]:
    """Every JAX module the table's rows live in (and their parent packages): what a name
    bound to a module by assignment may stand for (hcmigrate.codemod.scopes)."""
    found = set()
    for row in REMOVED_APIS:
        parts = row.name.split(".")
        for n in range(1, len(parts)):
            found.add(".".join(parts[:n]))
    return frozenset(n for n in found if n.split(".")[-1].islower() or n == "jax")


def lookup(dotted: str) -> RemovedApi | None:
    """The row for a dotted name or the nearest removed parent module (not keyword rows)."""
    parts = dotted.split(".")
    for n in range(len(parts), 1, -1):
        row = BY_KEY.get(".".join(parts[:n]))
        if row is not None and row.kind not in (Kind.BEHAVIOUR, Kind.CALL_BEHAVIOUR):
            return row
    return None


def rows_of(rule: str) -> tuple[RemovedApi, ...]:
    """The rows the rule `rule` (a code, "JAX101") rewrites or reports."""
    return tuple(row for row in REMOVED_APIS if row.rule == rule)


def version(text: str) -> tuple[int, ...]:
    """ "0.4.25" -> (0, 4, 25)."""
    return tuple(int(part) for part in text.split("."))


def replacement_first(row: RemovedApi) -> tuple[int, ...] | None:
    """The first JAX release with the row's replacement: its measured `replacement_since`, or,
    for a replacement the oldest wheel the table reads already has (`replacement_since` None),
    the first release facts.NATIVE_SINCE read in older ones (jax.extend.linear_util: 0.4.16);
    None: every release has it."""
    from hcmigrate.facts import NATIVE_SINCE

    if row.replacement_since:
        return version(row.replacement_since)
    return NATIVE_SINCE.get(row.replacement or "")


def guard_of(row: RemovedApi) -> str | None:
    """How an import of the row's name is guarded where its replacement is newer than the
    project's floor (`RemovedApi.guard`). A moved module (`jax.linear_util`, now
    `jax.extend.linear_util`) falls back to its old home: every release before the
    replacement has it, and from there on the guard takes the replacement."""
    if row.guard is not None:
        return row.guard
    if row.kind is Kind.MODULE and row.mechanical and row.replacement:
        return "old"
    return None
