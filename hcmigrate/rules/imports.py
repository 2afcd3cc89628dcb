"""Imports of the legacy module.

HCB001: with the native strategy, an import of host_callback that nothing uses any more is
removed (a guarded `try: import ... / except ImportError: hcb = None` goes as a whole).
HCB005/HCB007: an import other modules rely on, or a star import still used, is left as it is
(a manual finding: the native strategy writes no compat import), except `id_print`, which
becomes a native definition of the same name (its import goes). HCB006: a module that imports re-exported legacy names and in which no
rule found a site is reported. HCB701: with `--strategy compat`, every import (and full dotted use)
is pointed at `hcmigrate_compat.host_callback`, one line per import, nothing else changes.
"""

from __future__ import annotations

import libcst as cst

from hcmigrate.diagnostics import Level
from hcmigrate.codemod.legacy_names import spelled_member, spelled_module
from hcmigrate.facts import COMPAT_MODULE, LEGACY_FUNCTIONS, LEGACY_MODULE, LEGACY_PUBLIC_NAMES
from hcmigrate.rules.nodes import dotted_name
from hcmigrate.rules.context import ImportContext, ImportSite, ModuleSite, ReportContext
from hcmigrate.rules.nodes import parse
from hcmigrate.rules.spec import Example, CompatStrategy, LegacyImport, ModuleEnd, Rule, handles

UNUSED_IMPORT = Rule(
    code="HCB001",
    name="legacy-import",
    level=Level.FIXED,
    legacy="import jax.experimental.host_callback as hcb (nothing left uses it)",
    modern="(removed)",
    summary="The import fails on JAX >= 0.8; once its uses are rewritten (or if it had none) it is removed.",
    examples=(
        Example(
            title="an import nothing uses after the rewrite goes",
            before="""\
from jax.experimental import host_callback as hcb


def shutdown():
    hcb.barrier_wait()
""",
            after="""\
import jax


def shutdown():
    jax.effects_barrier()
""",
            diagnostics=(
                "1:1 HCB001 [fixed] import of host_callback removed: its uses were rewritten",
                "5:5 HCB401 [fixed-with-behaviour-note] barrier_wait() -> jax.effects_barrier(): after a callback failed on several devices (pmap) every later barrier raises that error again (legacy returned)",
            ),
        ),
    ),
)
REEXPORT_KEPT = Rule(
    code="HCB005",
    name="reexported-import-kept",
    level=Level.MANUAL,
    legacy='from jax.experimental.host_callback import id_tap  # and `__all__ = ["id_tap"]`',
    modern="id_print: a native `def` of the same name; others left as they are (a replacement by hand, or the compat strategy)",
    summary="A legacy name the module publishes (`__all__`, its namespace, a public rename) is not removed, so that importers outside the migrated tree are not broken silently: `id_print` becomes a native definition of the same name that prints legacy's text and returns its argument; another name is left as it is for a replacement under that name. A name only modules of the run take goes with their rewrite.",
    examples=(
        Example(
            title="`mypkg.taps` publishes `id_tap` in its `__all__`",
            before="""\
from jax.experimental.host_callback import id_tap

__all__ = ["id_tap"]
""",
            after="""\
from jax.experimental.host_callback import id_tap

__all__ = ["id_tap"]
""",
            diagnostics=(
                '1:1 HCB005 [manual] id_tap published by this module (its `__all__`): left as it is (it fails on JAX >= 0.8, and so does every module that imports this one): it needs a replacement under that name for the modules that import it from here, a definition of your own on native JAX (hcmigrate has none that keeps legacy\'s behaviour), or keep it on the compat runtime (`strategy = "compat"`)',
            ),
            options={
                "reexports": (("mypkg.taps.id_tap", "jax.experimental.host_callback.id_tap"),),
                "module_name": "mypkg.taps",
            },
        ),
        Example(
            title="a legacy function given a name of the module's own, which it never uses",
            before="""\
from jax.experimental.host_callback import id_print as jax_print
""",
            after="""\
import functools

import jax
import numpy as np


def _print_like_id_print(value, /, **header):
    \"\"\"Print as the removed `id_print` did: sorted `k: v` keywords, the value
    in numpy's text, `( a b )`, `[ a b ]`, `{ k=v }`, wrapped at 80.\"\"\"

    def text(v, column, indent):  # (`v`'s text from `column`, column after)
        if not isinstance(v, (tuple, list, dict)):
            shown = np.array2string(v) if isinstance(v, np.ndarray) else str(v)
            return shown, column + len(shown)
        is_dict = isinstance(v, dict)
        ends = "{}" if is_dict else "()" if isinstance(v, tuple) else "[]"
        pairs = sorted(v.items()) if is_dict else enumerate(v)
        items = [(f"{k}=" if is_dict else "", e) for k, e in pairs]
        flat = " ".join(key + text(e, -float("inf"), 0)[0] for key, e in items)
        if column + len(flat) + 4 <= 80:
            return f"{ends[0]} {flat} {ends[1]}", column + len(flat) + 4
        shown, column = ends[0] + " ", column + 2
        for n, (key, e) in enumerate(items):
            if n:
                shown, column = shown + "\\n" + " " * (indent + 2), indent + 2
            part, column = text(e, column + len(key), indent + 2)
            shown += key + part
        return shown + " " + ends[1], column + 2

    if header:
        print(" ".join(f"{k}: {v}" for k, v in sorted(header.items())))
    print(text(jax.tree_util.tree_map(np.asarray, value), 0, 0)[0])


def jax_print(arg, *, result=None, **kwargs):
    \"\"\"host_callback's `id_print`, gone from JAX: prints `arg` as it did (the
    keywords as a `k: v` header) and returns `arg`, or `result` where given.\"\"\"
    jax.debug.callback(
        functools.partial(_print_like_id_print, **kwargs), arg, ordered=True
    )
    return arg if result is None else result
""",
            diagnostics=(
                "1:1 HCB005 [fixed-with-behaviour-note] jax_print (legacy id_print, a name for other modules to import from here) -> a native definition of jax_print: it prints legacy's text through jax.debug.callback(_print_like_id_print, ..., ordered=True) and returns its argument (or `result=`): under vmap it runs once per element (legacy: once, with the whole batch); it fails on more than one device (pmap, sharded jit: see several-devices); legacy's `output_stream=`, `threshold=` and `tap_with_device=` are not kept (they print as header keywords)",
            ),
        ),
        Example(
            title="a module whose namespace code run with `exec` reads",
            before="""\
from jax.experimental.host_callback import id_tap


def run(code):
    exec(code, globals())
""",
            after="""\
from jax.experimental.host_callback import id_tap


def run(code):
    exec(code, globals())
""",
            diagnostics=(
                '1:1 HCB005 [manual] id_tap in the namespace this module hands out (`globals()`): left as it is (it fails on JAX >= 0.8, and so does every module that imports this one): it needs a replacement under that name for the modules that import it from here, a definition of your own on native JAX (hcmigrate has none that keeps legacy\'s behaviour), or keep it on the compat runtime (`strategy = "compat"`)',
            ),
        ),
    ),
)
REEXPORT_IMPORTER = Rule(
    code="HCB006",
    name="reexport-importer",
    level=Level.MANUAL,
    legacy="from mypkg.taps import id_tap  # mypkg.taps re-exports a legacy name",
    modern="(reported)",
    summary="The file imports legacy names through another module in a way the codemod could not follow; check its uses by hand.",
    examples=(
        Example(
            title="a module that takes `id_tap` from `mypkg.taps`, which re-exports it, and uses it out of the codemod's sight",
            before="""\
import mypkg.taps as taps

LOGGERS = {"tap": taps.id_tap}
""",
            after="""\
import mypkg.taps as taps

LOGGERS = {"tap": taps.id_tap}
""",
            diagnostics=(
                "1:1 HCB006 [manual] may use legacy host_callback names re-exported by module `mypkg.taps` (id_tap); hcmigrate rewrites that module, check this file's uses by hand",
            ),
            options={"reexporters_imported": (("mypkg.taps", ("id_tap",)),)},
        ),
    ),
)
STAR_IMPORT = Rule(
    code="HCB007",
    name="legacy-star-import",
    level=Level.MANUAL,
    legacy="from jax.experimental.host_callback import *  (a name from it still used)",
    modern="(left as it is while a name from it is used)",
    summary="Uses resolved through the star import are rewritten; if one is left, the star import is left as it is.",
    examples=(
        Example(
            title="a name of the star import is still used (a call left for a human)",
            before="""\
from jax.experimental.host_callback import *


def log(*args):
    return id_tap(*args)
""",
            after="""\
from jax.experimental.host_callback import *


def log(*args):
    return id_tap(*args)
""",
            diagnostics=(
                "1:1 HCB007 [manual] names of the star import are still used: left as it is",
                "5:12 HCB003 [manual] id_tap(...): `*` arguments cannot be bound statically; left alone",
            ),
        ),
    ),
)
COMPAT_IMPORT = Rule(
    code="HCB701",
    name="compat-strategy-import",
    level=Level.FIXED,
    legacy="from jax.experimental import host_callback as hcb",
    modern="from hcmigrate_compat import host_callback as hcb",
    summary="--strategy compat: point the import at the compat runtime (no behaviour change).",
    examples=(
        Example(
            before="""\
from jax.experimental import host_callback as hcb


def step(x):
    hcb.id_print(x)
    return x
""",
            after="""\
from hcmigrate_compat import host_callback as hcb


def step(x):
    hcb.id_print(x)
    return x
""",
            diagnostics=("1:1 HCB701 [fixed] import pointed at hcmigrate_compat.host_callback",),
            options={"strategy": "compat"},
        ),
    ),
)

_PARENT, _LEAF = LEGACY_MODULE.rsplit(".", 1)  # "jax.experimental", "host_callback"
_COMPAT_PARENT, _COMPAT_LEAF = COMPAT_MODULE.rsplit(".", 1)


def legacy_aliases(
    node: cst.Import | cst.ImportFrom, reexports: dict[str, str] | None = None
) -> list[tuple[cst.ImportAlias, str]]:
    """(alias, bound name) for every alias of `node` that imports the legacy module or a member
    (directly, or a name another module re-exports)."""
    found = []
    if isinstance(node, cst.Import):
        for alias in node.names:
            if dotted_name(alias.name) == LEGACY_MODULE:
                bound = alias.asname.name.value if alias.asname else LEGACY_MODULE
                found.append((alias, bound))
        return found
    if (not node.relative and node.module is None) or isinstance(node.names, cst.ImportStar):
        return found
    module = spelled_module(node)
    for alias in node.names:
        name = alias.name.value
        bound = alias.asname.name.value if alias.asname else name
        if (
            module == LEGACY_MODULE
            or (module == _PARENT and name == _LEAF)
            or spelled_member(module, name) in (reexports or {})
        ):
            found.append((alias, bound))
    return found


def _renames_a_function(node: cst.CSTNode, alias: cst.ImportAlias) -> bool:
    """`from jax.experimental.host_callback import id_print as jax_print`: a legacy function
    given a public name of the module's own (a module that never uses it offers it to others)."""
    return (
        isinstance(node, cst.ImportFrom)
        and alias.asname is not None
        and isinstance(alias.asname.name, cst.Name)
        and alias.asname.name.value != alias.evaluated_name
        and not alias.asname.name.value.startswith("_")
        and alias.evaluated_name in LEGACY_FUNCTIONS
    )


def import_to_compat(original: cst.Import | cst.ImportFrom, updated: cst.Import | cst.ImportFrom):
    """The same import pointed at hcmigrate_compat.host_callback (aliases kept; other names untouched)."""
    found = legacy_aliases(original)
    if isinstance(original, cst.Import):
        if len(found) == len(updated.names) and all(a.asname for a, _ in found):
            # `import jax.experimental.host_callback as hcb` -> `from hcmigrate_compat import host_callback as hcb`
            return cst.ImportFrom(
                module=parse(_COMPAT_PARENT),
                names=[
                    cst.ImportAlias(name=cst.Name(_COMPAT_LEAF), asname=a.asname) for a, _ in found
                ],
            )
        return updated.with_changes(
            names=[
                a.with_changes(name=parse(COMPAT_MODULE))
                if dotted_name(a.name) == LEGACY_MODULE
                else a
                for a in updated.names
            ]
        )
    module = dotted_name(original.module)
    if module == LEGACY_MODULE:
        return updated.with_changes(module=parse(COMPAT_MODULE))
    # from jax.experimental import host_callback [as X][, other]
    if len(found) == len(updated.names):
        return updated.with_changes(module=parse(_COMPAT_PARENT))
    legacy_ids = {id(a) for a, _ in found}
    others = _without(
        updated.names, [u for o, u in zip(original.names, updated.names) if id(o) in legacy_ids]
    )
    compat = cst.ImportFrom(
        module=parse(_COMPAT_PARENT),
        names=[a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a, _ in found],
    )
    return cst.FlattenSentinel([updated.with_changes(names=others), compat])


def _without(names, drop):
    kept = [a for a in names if not any(a is d for d in drop)]
    if kept:
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return kept


@handles(
    LegacyImport(),
    reports=(UNUSED_IMPORT, REEXPORT_KEPT, STAR_IMPORT),
)
def clean_up(site: ImportSite, ctx: ImportContext):
    """An import whose legacy names nothing uses any more goes; one other modules take legacy
    names from stays importable."""
    original, updated = site.original, site.updated
    if (
        isinstance(original, cst.ImportFrom)
        and isinstance(original.names, cst.ImportStar)
        and original.module is not None
        and not original.relative
        and dotted_name(original.module) == LEGACY_MODULE
    ):
        return _star(original, updated, ctx)
    unused = [
        (alias, bound)
        for alias, bound in legacy_aliases(original, ctx.reexports)
        if not ctx.still_used(original, bound)
    ]
    renamed = {
        bound
        for alias, bound in unused
        if _renames_a_function(original, alias) and not ctx.ever_used(original, bound)
    }
    # Names only modules of this run take from here go with the import: the run rewrote
    # their uses (a use it left for a human fails on current JAX either way). Names the
    # module publishes stay for a human: importers outside the tree may take them.
    exported = [
        bound
        for _, bound in unused
        if bound in ctx.published_here or "*" in ctx.published_here or bound in renamed
    ]
    handed_on = [  # (taken here by a module that hands it on: removing one link breaks it)
        bound for _, bound in unused if bound in ctx.exported_here and ctx.passed_on.get(bound)
    ]
    if handed_on and not exported and legacy_aliases(original):
        modules = sorted({m for bound in handed_on for m in ctx.passed_on[bound]})
        ctx.report(
            REEXPORT_KEPT,
            original,
            f"{', '.join(sorted(handed_on))} re-exported by {', '.join(modules)}: left as it is "
            "(it fails on JAX >= 0.8); remove it and the re-exports by hand once their importers "
            'are migrated, or keep it on the compat runtime (`strategy = "compat"`)',
        )
        return None
    if exported:
        # Other modules import these names from here: keep them importable, by a native
        # definition of the same name where one keeps legacy's behaviour (id_print).
        native = _native_id_print(original, exported, ctx)
        if native is not None:
            return native
        if legacy_aliases(original):
            if all(bound in ctx.published_here for bound in exported):
                how = "published by this module (its `__all__`)"
            elif "*" in ctx.published_here:
                how = "in the namespace this module hands out (`globals()`)"
            else:  # `from ...host_callback import id_print as jax_print`, unused here
                how = (
                    "renamed here and not used here: a name for other modules to import "
                    "(remove it by hand if none does)"
                )
            ctx.report(
                REEXPORT_KEPT,
                original,
                f"{', '.join(sorted(exported))} {how}: left as it is (it fails on JAX >= 0.8, "
                "and so does every module that imports this one): it needs a replacement "
                "under that name for the modules that import it from here, a definition of "
                "your own on native JAX (hcmigrate has none that keeps legacy's behaviour), "
                'or keep it on the compat runtime (`strategy = "compat"`)',
            )
            return None
        return None
    drop = [alias for alias, _ in unused]
    if not drop:
        return None
    names = ", ".join(a.evaluated_name for a in drop)
    if any(ctx.ever_used(original, bound) for _, bound in unused):
        # (its uses became modern calls, with their own imports: say what happened)
        message = f"import of {names} removed: its uses were rewritten"
    elif any(bound in ctx.exported_here for _, bound in unused):
        message = f"import of {names} removed: the modules of this run that took it from here were rewritten"
    else:
        message = f"unused import of {names} removed"
    ctx.report(UNUSED_IMPORT, original, message)
    keep = _without(
        updated.names,
        [u for o, u in zip(original.names, updated.names) if any(o is d for d in drop)],
    )
    if not keep:
        if (
            isinstance(original, cst.Import)
            and any(dotted_name(a.name) == LEGACY_MODULE and not a.asname for a in drop)
            and not ctx.imported_elsewhere(original, "jax")
        ):
            # `import jax.experimental.host_callback` also bound `jax`; keep that binding.
            return updated.with_changes(names=[cst.ImportAlias(name=cst.Name("jax"))])
        return cst.RemovalSentinel.REMOVE
    return updated.with_changes(names=keep)


# The native `id_print` written in place of an import of it that other modules take from
# here: `{name}` and `{printer}` filled in by the rule, `{jax}`/`{functools}` by the module's
# spellings (a module helper's template).
_ID_PRINT_DEFINITION = '''\
def {name}(arg, *, result=None, **kwargs):
    """host_callback's `id_print`, gone from JAX: prints `arg` as it did (the
    keywords as a `k: v` header) and returns `arg`, or `result` where given."""
    {{jax}}.debug.callback(
        {{functools}}.partial({printer}, **kwargs), arg, ordered=True
    )
    return arg if result is None else result
'''


def _native_id_print(original, exported: list[str], ctx: ImportContext):
    """`from jax.experimental.host_callback import id_print as jax_print`, a name other modules
    import from here: the import goes and a function of that name, on native JAX, prints as
    legacy did (the id_print rule's spelling) and returns its argument. None (the finding
    instead) for any other import: another legacy name, several names, one in a block, the
    compat strategy or several devices (where the print would be an io_callback)."""
    if (
        not isinstance(original, cst.ImportFrom)
        or isinstance(original.names, cst.ImportStar)
        or len(original.names) != 1
        or original.relative
        or original.module is None
        or spelled_module(original) != LEGACY_MODULE
        or ctx.options.strategy == "compat"
        or ctx.options.several_devices
        or not ctx.at_module_level(original)
    ):
        return None
    (alias,) = original.names
    name = alias.asname.name.value if alias.asname else alias.evaluated_name
    if alias.evaluated_name != "id_print" or exported != [name]:
        return None
    if ctx.suppressed(original, REEXPORT_KEPT.code):
        return None
    printer = ctx.use_module_helper("id_print")
    ctx.define_after_imports(
        f"native:{name}",
        name,
        _ID_PRINT_DEFINITION.format(name=name, printer=printer),
        (("jax", "jax", None), ("functools", "functools", None)),
    )
    ctx.report(
        REEXPORT_KEPT,
        original,
        f"{name} (legacy id_print, a name for other modules to import from here) -> a native "
        f"definition of {name}: it prints legacy's text through jax.debug.callback({printer}, "
        "..., ordered=True) and returns its argument (or `result=`): under vmap it runs once "
        "per element (legacy: once, with the whole batch); it fails on more than one device "
        "(pmap, sharded jit: see several-devices); legacy's `output_stream=`, `threshold=` "
        "and `tap_with_device=` are not kept (they print as header keywords)",
        level=Level.FIXED_WITH_NOTE,
    )
    return cst.RemovalSentinel.REMOVE


def _star(original: cst.ImportFrom, updated: cst.ImportFrom, ctx: ImportContext):
    if (
        ctx.star_names_still_used()
        or "*" in ctx.published_here
        or not ctx.published_here.isdisjoint(LEGACY_PUBLIC_NAMES)  # importers may take them
    ):
        how = "still used" if ctx.star_names_still_used() else "published by this module"
        ctx.report(STAR_IMPORT, original, f"names of the star import are {how}: left as it is")
        return None
    said = (
        "star import of host_callback removed: the modules of this run that took names from "
        "here were rewritten"
        if ctx.exported_here
        else "unused star import of host_callback removed"
    )
    ctx.report(UNUSED_IMPORT, original, said)
    return cst.RemovalSentinel.REMOVE


@handles(CompatStrategy(), reports=(COMPAT_IMPORT,))
def point_at_compat(site: ImportSite, ctx: ImportContext):
    """--strategy compat: imports (used ones: the clean-up removes the others) and spelled-out
    uses of the legacy module point at the compat runtime."""
    node = site.original
    if isinstance(node, cst.Attribute):  # `jax.experimental.host_callback.id_tap(...)`
        if LEGACY_MODULE in ctx.qualified(node) and not ctx.suppressed(node, COMPAT_IMPORT.code):
            ctx.import_module(COMPAT_MODULE)
            return parse(COMPAT_MODULE)
        return None
    if (
        not legacy_aliases(node)
        or not any(ctx.still_used(node, bound) for _, bound in legacy_aliases(node, ctx.reexports))
        or ctx.suppressed(node, COMPAT_IMPORT.code)
    ):
        return None
    ctx.report(COMPAT_IMPORT, node, f"import pointed at {COMPAT_MODULE}")
    return import_to_compat(node, site.updated)


@handles(ModuleEnd(), reports=(REEXPORT_IMPORTER,))
def report_reexport_importer(site: ModuleSite, ctx: ReportContext) -> None:
    """A module that imports names other modules of the tree re-export from the legacy API, and
    in which no rule found anything: its uses are out of the codemod's sight."""
    options = site.options
    passes_names_along = options.module_name is not None and any(
        key.startswith(options.module_name + ".") for key, _ in options.reexports
    )  # a link of a re-export chain (e.g. a package __init__): importers are migrated instead
    if site.diagnostics or passes_names_along:
        return
    for module, names in options.reexporters_imported:
        ctx.report(
            REEXPORT_IMPORTER,
            None,
            f"may use legacy host_callback names re-exported by module `{module}` "
            f"({', '.join(names)}); hcmigrate rewrites that module, check this file's uses by hand",
        )
