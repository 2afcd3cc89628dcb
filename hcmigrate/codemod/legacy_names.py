"""Which expressions refer to the legacy module, from the qualified names hcmigrate.codemod.scopes gives.

Text never decides: `hcb.id_tap` is legacy only when the scope analysis (hcmigrate.codemod.scopes)
says the name `hcb` was bound by an import of `jax.experimental.host_callback` (any import
form, any alias, in any scope; queried for names hcmigrate.codemod.node_index found bound by such an import). A parameter or local named `host_callback` (E2) or another module
called `host_callback` (E1) resolves to something else and is never touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from hcmigrate.facts import LEGACY_MODULE, LEGACY_PUBLIC_NAMES
from hcmigrate.rules.nodes import dotted_name
from hcmigrate.codemod.scopes import LOCAL, QualifiedName
from hcmigrate.codemod.walk import descendants

_PREFIX = LEGACY_MODULE + "."


@dataclass(frozen=True)
class LegacyRef:
    """A reference to the legacy module (`member is None`) or to one of its members."""

    member: str | None
    ambiguous_with: tuple[str, ...] = ()  # other things the same name may mean

    @property
    def is_ambiguous(self) -> bool:
        return bool(self.ambiguous_with)


def legacy_member(qualified: str) -> str | None | bool:
    """'jax.experimental.host_callback.id_tap' -> 'id_tap'; the module itself -> None;
    anything else -> False."""
    if qualified == LEGACY_MODULE:
        return None
    if qualified.startswith(_PREFIX):
        rest = qualified[len(_PREFIX) :]
        # `hcb.CallbackFlavor.PURE` is an attribute OF a member: the member node inside it is
        # the legacy reference, so the outer node must not be replaced whole.
        return rest if "." not in rest else False
    return False


def through_reexports(qualified: str, reexports: dict[str, str]) -> str:
    """'mypkg.taps.id_tap' -> 'jax.experimental.host_callback.id_tap' when mypkg.taps re-exports it."""
    if not reexports:
        return qualified
    parts = qualified.split(".")
    for cut in range(len(parts), 0, -1):
        target = reexports.get(".".join(parts[:cut]))
        if target:
            return ".".join([target, *parts[cut:]])
    return qualified


def classify(
    names: set[QualifiedName],
    fallback_locals: set[str] = frozenset(),
    reexports: dict[str, str] | None = None,
) -> LegacyRef | None:
    """Decide what a node's qualified names say about the legacy API.

    `fallback_locals` are local names (e.g. `hcb` in `except ImportError: hcb = None`) that
    only mark the module as unavailable (I7 guarded import); they do not make a reference
    ambiguous.
    """
    legacy: set[str | None] = set()
    other: list[str] = []
    for qn in names:
        member = legacy_member(through_reexports(qn.name, reexports or {}))
        if member is False:
            if qn.source == LOCAL and qn.name.split(".", 1)[0] in fallback_locals:
                continue
            other.append(qn.name)
        else:
            legacy.add(member)
    if not legacy:
        return None
    if len(legacy) > 1:
        other.extend(sorted(f"{LEGACY_MODULE}.{m}" if m else LEGACY_MODULE for m in legacy))
    (member,) = sorted(legacy, key=lambda m: m or "")[:1]
    return LegacyRef(member=member, ambiguous_with=tuple(sorted(other)))


@dataclass
class LegacyBindings:
    """The local names a module's imports bind to the legacy API."""

    roots: set[str]  # names an import of the legacy module (or of a re-exporter) binds
    star: bool  # `from jax.experimental.host_callback import *`
    guard_fallbacks: set[str]  # I7: `except ImportError: hcb = None`
    # names a star import of a module that re-exports them binds: {"id_tap": legacy name}
    star_names: dict[str, str] = field(default_factory=dict)


def legacy_bindings(imports, text: str, reexports: dict[str, str]) -> LegacyBindings:
    """What the module's Import, ImportFrom and Try nodes (`imports`) bind to the legacy API."""
    found = LegacyBindings(set(), False, set())
    if LEGACY_MODULE in text:
        found.roots.add(LEGACY_MODULE.split(".", 1)[0])  # I5: `jax.experimental.host_callback.f`
    for node in imports:
        if isinstance(node, cst.Import):
            for alias in node.names:
                name = dotted_name(alias.name) or ""
                if name == LEGACY_MODULE or reexported_module(name, reexports):
                    found.roots.add(alias.asname.name.value if alias.asname else name.split(".")[0])
        elif isinstance(node, cst.ImportFrom):
            _import_from(node, reexports, found)
        else:
            found.guard_fallbacks |= import_guard_fallbacks(node)
    return found


def spelled_module(node: cst.ImportFrom) -> str:
    """The module of `from M import ...` as the scope analysis spells it (`.b` relative)."""
    return "." * len(node.relative) + (dotted_name(node.module) or "" if node.module else "")


def spelled_member(module: str, name: str) -> str:
    return f"{module}{name}" if module.endswith(".") or not module else f"{module}.{name}"


def _import_from(node: cst.ImportFrom, reexports: dict[str, str], found: LegacyBindings) -> None:
    if not node.relative and node.module is None:
        return
    module = spelled_module(node)
    if isinstance(node.names, cst.ImportStar):
        if module == LEGACY_MODULE:
            found.star = True
            found.roots |= LEGACY_PUBLIC_NAMES
            return
        # A module of the run that re-exports legacy names (hcmigrate.project_model).
        prefix = spelled_member(module, "")
        for key, target in reexports.items():
            name = key[len(prefix) :] if key.startswith(prefix) else ""
            if name and "." not in name:
                found.star_names[name] = target
                found.roots.add(name)
        return
    for alias in node.names:
        name = alias.name.value
        full = spelled_member(module, name)
        if (
            module == LEGACY_MODULE
            or full == LEGACY_MODULE
            or full in reexports
            or reexported_module(full, reexports)
        ):
            found.roots.add(alias.asname.name.value if alias.asname else name)


def import_guard_fallbacks(node: cst.Try) -> set[str]:
    """Names assigned `None` in an except handler of `node` when its body imports the legacy
    module (pattern I7): `try: import ...host_callback as hcb / except ImportError: hcb = None`."""
    names: set[str] = set()
    if not _mentions_legacy(node.body):
        return names
    for handler in node.handlers:
        for stmt in handler.body.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if (
                        isinstance(small, cst.Assign)
                        and isinstance(small.value, cst.Name)
                        and small.value.value == "None"
                    ):
                        names.update(
                            t.target.value for t in small.targets if isinstance(t.target, cst.Name)
                        )
    return names


def _mentions_legacy(block: cst.BaseSuite) -> bool:
    parent, leaf = LEGACY_MODULE.rsplit(".", 1)
    for node in descendants(block):
        if type(node) is cst.Import:
            if any(dotted_name(a.name) == LEGACY_MODULE for a in node.names):
                return True
        elif type(node) is cst.ImportFrom:
            module = dotted_name(node.module) if node.module else None
            if module == LEGACY_MODULE:
                return True
            if (
                module == parent
                and not isinstance(node.names, cst.ImportStar)
                and any(a.name.value == leaf for a in node.names)
            ):
                return True
    return False


def dunder_all(module: cst.Module) -> frozenset[str]:
    """The string names listed in a module-level `__all__ = [...]` / `(...)`."""
    names: set[str] = set()
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if (
                isinstance(small, (cst.Assign, cst.AugAssign))
                and isinstance(small.value, (cst.List, cst.Tuple))
                and any(
                    isinstance(t, cst.Name) and t.value == "__all__"
                    for t in (
                        [a.target for a in small.targets]
                        if isinstance(small, cst.Assign)
                        else [small.target]
                    )
                )
            ):
                for element in small.value.elements:
                    if isinstance(element.value, cst.SimpleString):
                        names.add(element.value.evaluated_value)
    return frozenset(names)


def reexported_module(module: str, reexports) -> bool:
    """Is `module` a module (or package) some of whose names re-export legacy ones? `reexports`:
    the dotted names of the re-exported names (hcmigrate.options.Options.reexports' keys)."""
    return any(key.startswith(module + ".") for key in reexports)
