"""JAX113: `jax.sharding.PositionalSharding` (removed in JAX 0.7.0) -> `NamedSharding(Mesh(...),
PartitionSpec(...))`, which every JAX the table covers has.

The forms hcmigrate.codemod.removed_sharding finds are rewritten to the NamedSharding of the
same placement (each shard on the same device: scripts/measure_positional_sharding.py on 4
forced CPU devices, jax 0.4.30):

- `PositionalSharding(D)` (D one-dimensional) -> `NamedSharding(Mesh(D, ("d",)),
  PartitionSpec("d"))`, also where a name is bound to it (then passed on as it is);
- `.reshape(n, m)` of one -> `NamedSharding(Mesh(<its devices>.reshape(n, m), ("d0", "d1")),
  PartitionSpec("d0", "d1"))`;
- `.replicate()` of one -> `NamedSharding(<its mesh>, PartitionSpec())`.

An import of the name goes where every use is rewritten; else it is guarded, so that the
module still imports on JAX >= 0.7.0 (`except ImportError:` binds a class nothing is an instance
of: type checks and annotations keep working), and the uses left are reported with the
replacement to write.
"""

from __future__ import annotations

import libcst as cst

from hcmigrate.codemod.removed_sharding import NAME, REPLICATE, RESHAPE
from hcmigrate.diagnostics import Level
from hcmigrate.projects.targets import never_reaches
from hcmigrate.rules.context import REMOVE_STATEMENT, RemovedApiSite, RuleContext
from hcmigrate.rules.nodes import dotted_name, parse
from hcmigrate.rules.removed_api_rewrite import code_of, register, rewrite_import
from hcmigrate.rules.spec import Example, RemovedJaxApi, Rule, handles

POSITIONAL_SHARDING = register(
    Rule(
        code="JAX113",
        name="positional-sharding",
        level=Level.FIXED,
        legacy="PositionalSharding(jax.devices()).reshape(4, 1)",
        modern='NamedSharding(Mesh(np.array(jax.devices()).reshape(4, 1), ("d0", "d1")), '
        'PartitionSpec("d0", "d1"))',
        summary="`PositionalSharding(devices)`, its `.reshape(n, m)` and `.replicate()` -> the "
        "NamedSharding of the same placement; an import used otherwise is guarded (the module "
        "imports on JAX >= 0.7.0), the other uses are reported with the replacement.",
        examples=(
            Example(
                before="""\
import jax
import numpy as np
from jax.sharding import PositionalSharding

sharding = PositionalSharding(jax.devices())
x = jax.device_put(np.zeros((8, 2)), sharding.reshape(4, 1))
y = jax.device_put(np.zeros(8), sharding.replicate())
z = jax.device_put(np.zeros(8), sharding)
""",
                after="""\
import jax
import numpy as np

sharding = jax.sharding.NamedSharding(
    jax.sharding.Mesh(jax.devices(), ("d",)), jax.sharding.PartitionSpec("d")
)
x = jax.device_put(
    np.zeros((8, 2)),
    jax.sharding.NamedSharding(
        jax.sharding.Mesh(sharding.mesh.devices.reshape(4, 1), ("d0", "d1")),
        jax.sharding.PartitionSpec("d0", "d1"),
    ),
)
y = jax.device_put(
    np.zeros(8), jax.sharding.NamedSharding(sharding.mesh, jax.sharding.PartitionSpec())
)
z = jax.device_put(np.zeros(8), sharding)
""",
                diagnostics=(
                    "3:26 JAX113 [fixed] import of `jax.sharding.PositionalSharding` removed: every use is rewritten to a NamedSharding",
                    '5:12 JAX113 [fixed] `PositionalSharding(jax.devices())` -> `jax.sharding.NamedSharding(jax.sharding.Mesh(jax.devices(), ("d",)), jax.sharding.PartitionSpec("d"))`',
                    '6:38 JAX113 [fixed] `sharding.reshape(4, 1)` -> `jax.sharding.NamedSharding(jax.sharding.Mesh(sharding.mesh.devices.reshape(4, 1), ("d0", "d1")), jax.sharding.PartitionSpec("d0", "d1"))`',
                    "7:33 JAX113 [fixed] `sharding.replicate()` -> `jax.sharding.NamedSharding(sharding.mesh, jax.sharding.PartitionSpec())`",
                ),
            ),
            Example(
                title="used in a type check only",
                before="""\
from jax.sharding import PositionalSharding


def describe(s):
    return "positional" if isinstance(s, PositionalSharding) else "other"
""",
                after="""\
try:
    from jax.sharding import PositionalSharding
except ImportError:  # removed in JAX 0.7.0: nothing is one there
    class PositionalSharding:
        pass


def describe(s):
    return "positional" if isinstance(s, PositionalSharding) else "other"
""",
                diagnostics=(
                    "1:26 JAX113 [fixed-with-behaviour-note] import of `jax.sharding.PositionalSharding` guarded: on JAX >= 0.7.0 `PositionalSharding` is a class nothing is an instance of (type checks and annotations keep working)",
                ),
            ),
        ),
    )
)

_GUARD = """\
try:
    from jax.sharding import {name}{asname}
except ImportError:  # removed in JAX 0.7.0: nothing is one there
    class {bound}:
        pass
"""


@handles(RemovedJaxApi(POSITIONAL_SHARDING.code), reports=(POSITIONAL_SHARDING,))
def rewrite(site: RemovedApiSite, ctx: RuleContext):
    if isinstance(site.original, cst.ImportFrom):
        return _import(site, ctx)
    if isinstance(site.original, cst.Import):
        return rewrite_import(site, ctx)  # (`import jax.sharding.PositionalSharding`: reported)
    if isinstance(site.original, cst.Call) and site.qualified.startswith(NAME):
        return _call(site, ctx)
    return _manual(site, ctx, site.original)


def _manual(site: RemovedApiSite, ctx: RuleContext, node: cst.CSTNode) -> None:
    ctx.report(
        POSITIONAL_SHARDING,
        node,
        f"`{NAME}` was removed in JAX {site.row.removed_in}: {site.row.advice}",
        level=Level.MANUAL,
    )
    return None


def _names(ctx: RuleContext) -> tuple[str, str, str]:
    return tuple(
        ctx.dotted(f"jax.sharding.{n}") for n in ("NamedSharding", "Mesh", "PartitionSpec")
    )


def _named(ctx: RuleContext, mesh: str, spec: tuple[str, ...]) -> str:
    named, _, partition = _names(ctx)
    axes = ", ".join(f'"{a}"' for a in spec)
    return f"{named}({mesh}, {partition}({axes}))"


def _call(site: RemovedApiSite, ctx: RuleContext):
    form = site.qualified.rsplit(".", 1)[1]
    if not site.via:  # (the receiver of a reshape/replicate: rewritten with that call)
        return None
    call: cst.Call = site.updated
    _, mesh, _ = _names(ctx)
    if form not in (RESHAPE, REPLICATE):  # the construct
        devices = code_of(call.args[0].value)
        new = _named(ctx, f'{mesh}({devices}, ("d",))', ("d",))
    else:
        # the sharding at the bottom of the chain (`s`, `PositionalSharding(D)`), as written
        base = site.original.func.value
        while (
            isinstance(base, cst.Call)
            and isinstance(base.func, cst.Attribute)
            and base.func.attr.value in (RESHAPE, REPLICATE)
        ):
            base = base.func.value
        if isinstance(base, cst.Call):  # PositionalSharding(D)
            devices = code_of(base.args[0].value)
            flat = f"{ctx.dotted('numpy.array')}({devices})"
            mesh_of = f'{mesh}({flat}.reshape(-1), ("d",))'
        else:  # a name bound to one (a NamedSharding now)
            flat = f"{code_of(base)}.mesh.devices"
            mesh_of = f"{code_of(base)}.mesh"
        if form == RESHAPE:
            shape = _shape_code(call)
            axes = tuple(f"d{i}" for i in range(shape.count(",") + 1))
            names = "(" + ", ".join(f'"{a}"' for a in axes) + ("," if len(axes) == 1 else "") + ")"
            new = _named(ctx, f"{mesh}({flat}.reshape({shape}), {names})", axes)
        else:
            new = _named(ctx, mesh_of, ())
    node = parse(new)
    ctx.report(
        POSITIONAL_SHARDING, site.original, f"`{code_of(site.original)}` -> `{code_of(node)}`"
    )
    return node


def _shape_code(call: cst.Call) -> str:
    args = call.args
    if len(args) == 1 and isinstance(args[0].value, (cst.Tuple, cst.List)):
        values = [e.value for e in args[0].value.elements]
    else:
        values = [a.value for a in args]
    return ", ".join(code_of(v) for v in values)


def _import(site: RemovedApiSite, ctx: RuleContext):
    """`from jax.sharding import PositionalSharding[, ...]`: the name goes where every use is
    rewritten, else a guarded import binds it."""
    node: cst.ImportFrom = site.updated
    uses = site.via or {}
    ours = [(a, row, real) for a, row, real in site.aliases if row.name == NAME and real == NAME]
    if len(ours) != len(site.aliases):
        return rewrite_import(site, ctx)  # (other removed names: their rules' import rewrite)
    guards = []
    # (a project whose jax requirement stops below the removal keeps the real class: no guard;
    # the uses left are said, for the day the pin is raised)
    capped = never_reaches(ctx.options.jax_requirements, site.row.removed_in)
    left_alone: list[cst.ImportAlias] = []
    for alias, _, _ in ours:
        every, left = uses.get(id(alias), (False, ()))
        bound = _bound(alias)
        if capped and not every:
            left_alone.append(alias)
            if left:
                ctx.report(
                    POSITIONAL_SHARDING,
                    alias,
                    f"import of `{NAME}` left: the project's jax requirement stops below "
                    f"{site.row.removed_in}, which removed it; its uses on {_lines(left)} "
                    f"need, once the pin allows JAX >= {site.row.removed_in}: "
                    f"{site.row.advice}",
                    level=Level.MANUAL,
                )
            continue
        if every:
            ctx.report(
                POSITIONAL_SHARDING,
                alias,
                f"import of `{NAME}` removed: every use is rewritten to a NamedSharding",
            )
            continue
        asname = f" as {bound}" if bound != "PositionalSharding" else ""
        guard = cst.parse_statement(
            _GUARD.format(name="PositionalSharding", asname=asname, bound=bound)
        )
        guards.append(guard)
        message = (
            f"import of `{NAME}` guarded: on JAX >= 0.7.0 `{bound}` is a class nothing is an "
            "instance of (type checks and annotations keep working)"
        )
        if left:
            message += f"; its uses on {_lines(left)} are left: {site.row.advice}"
        ctx.report(
            POSITIONAL_SHARDING,
            alias,
            message,
            level=Level.MANUAL if left else Level.FIXED_WITH_NOTE,
        )
    # (the names that go; the aliases of site.updated are the original's: no rule rewrites
    # inside an import)
    gone = [a for a, _, _ in ours if not any(a is b for b in left_alone)]
    kept = [
        a
        for a in node.names
        if not any(code_of(a.name) == code_of(o.name) and _bound(a) == _bound(o) for o in gone)
    ]
    if left_alone and not guards and len(kept) == len(node.names):
        return node  # (nothing to do in this import)
    if not kept and not guards:
        return REMOVE_STATEMENT
    if not kept:
        for guard in guards:
            ctx.insert_before(site.original, guard)
        ctx.replace_statement(site.original)
        return node
    for guard in guards:
        ctx.insert_after(site.original, guard)
    last = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return node.with_changes(names=[*kept[:-1], last])


def _lines(numbers) -> str:
    """`line 7` or `lines 7, 9`."""
    return f"line{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers))}"


def _bound(alias: cst.ImportAlias) -> str:
    return alias.asname.name.value if alias.asname else dotted_name(alias.name) or ""
