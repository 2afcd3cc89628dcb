"""The codemod: a libcst transformer that rewrites host_callback uses with the rules in `rules/`.

Flow for one module:
0. survey (hcmigrate.codemod.node_index, one code-generation pass): parents, positions, names, calls,
   and the local names an import of the legacy module bound — modules where no rule can
   apply stop here;
1. scopes (hcmigrate.codemod.scopes, on Python's ast): what every name refers to, and its uses;
2. plan (read-only): find every legacy call, decide how each host function is adapted, which
   module-local `def`s lose their transforms/device parameters, and whether ordered
   io_callbacks appear (id_print then joins their chain);
3. rewrite (this transformer, walking only down to the nodes a rule may change): each legacy
   call goes to its rule; other legacy references go to `rules.references`; rules report
   through `report()`, the single gate that applies --select/--ignore and `# noqa` /
   `# hcmigrate: ignore` suppressions;
4. imports: legacy imports with no use left are removed (the uses the scope analysis found,
   minus those the rewrite replaced) and the imports the new code needs are added once at the
   top (hcmigrate.codemod.add_imports).

Usable through libcst's runner: `python -m libcst.tool codemod codemod.MigrateHostCallbackCommand PATH`
(hcmigrate.codemod.libcst_command, imported only when asked for: libcst.codemod costs ~170 ms to import).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import libcst as cst

from hcmigrate.codemod.add_imports import add_imports
from hcmigrate.api import MigrationResult, Options
from hcmigrate.errors import MigrationError
from hcmigrate.syntax import compile_error
from hcmigrate.codemod.comments import KeepCommentsOfRemovedLines
from hcmigrate.codemod.host_functions import (
    Adaptation,
    PurityChecker,
    adapt,
    drop_params,
    names_used,
)
from hcmigrate.diagnostics import Diagnostic, Level
from hcmigrate.rules.nodes import parse
from hcmigrate.facts import (
    COMPAT_ALIAS,
    COMPAT_MODULE,
    LEGACY_FUNCTIONS,
    LEGACY_MODULE,
    LEGACY_PUBLIC_NAMES,
    MODERN,
)
from hcmigrate.codemod.partial_parse import identifiers, parse_needed
from hcmigrate.codemod.legacy_names import (
    LegacyRef,
    classify,
    dotted_name,
    dunder_all,
    reexported_module,
)
from hcmigrate.codemod.scopes import ScopeAnalysis
from hcmigrate.codemod.node_index import NodeIndex, root_name
from hcmigrate.codemod.walk import Transformer
from hcmigrate.codemod.result_shape import ShapeConverter
from hcmigrate.rules import CALL_RULES, config_flags, references, vectorized
from hcmigrate.rules.base import (
    CallSite,
    Rule,
    UnbindableCall,
    bind_argument_nodes,
    bind_arguments,
    literal_value,
)
from hcmigrate.rules.imports import PointImportsAtCompat, RemoveUnusedLegacyImports, legacy_aliases
from hcmigrate.rules.references import UNBINDABLE

# Text that any file touching the API must contain (the module name, or a modernisable
# `vectorized=`). Cross-module re-exports are handled by the file-level pre-filter.
HINTS = ("host_callback", "vectorized")
_SUPPRESS_ALL = re.compile(r"#\s*hcmigrate:\s*ignore\b")
_NOQA = re.compile(
    r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE
)
_COMPAT_PARENT, _COMPAT_LEAF = COMPAT_MODULE.rsplit(".", 1)
_STAR_IMPORT = re.compile(r"import[\s\\(]*\*")
TODO_PREFIX = "# TODO(hcmigrate): "


def might_use_host_callback(text: str, reexports=()) -> bool:
    """False only when `text` cannot touch the legacy API (directly, or through a module of
    `reexports` that re-exports legacy names)."""
    return any(hint in text for hint in HINTS) or any(
        name.rsplit(".", 1)[0] in text for name, _ in reexports
    )


class _SiteSkipped(Exception):
    """Raised by report() when the site's rule is deselected or suppressed on its line."""


_REMOVE_STATEMENT = object()


@dataclass
class _Plan:
    adaptations: dict  # id(original Call) -> Adaptation
    def_drops: dict  # id(FunctionDef) -> tuple of parameter names to drop
    io_family: bool
    defs: dict = field(default_factory=dict)  # id(FunctionDef) -> FunctionDef


class HostCallbackMigration(KeepCommentsOfRemovedLines, Transformer):
    # No libcst metadata: parents and positions come from hcmigrate.codemod.node_index (one code
    # generation pass) and names are resolved by hcmigrate.codemod.scopes on Python's ast; libcst's
    # ScopeProvider, PositionProvider and ParentNodeProvider cost ~15x a parse per file.
    REMOVE_STATEMENT = _REMOVE_STATEMENT

    def __init__(
        self,
        options: Options | None = None,
        strategy: str | None = None,
        survey: NodeIndex | None = None,  # already taken over the very module to transform
        scopes: ScopeAnalysis | None = None,  # of the same module
    ) -> None:
        # A plain CSTTransformer (hcmigrate.codemod.walk.Transformer: without per-field hooks), not
        # libcst's matcher-decoratable one: the matcher machinery costs a dispatch per node and
        # field that this codemod never uses.
        Transformer.__init__(self)
        options = options or Options()
        if strategy is not None:
            options = Options(**{**options.__dict__, "strategy": strategy})
        self.options = options
        self._given_survey = survey
        self._given_scopes = scopes
        self.diagnostics: list[Diagnostic] = []
        self._lines: list[str] = []
        self._has_suppressions = True  # (until migrate_module has looked at the text)
        self._pending_imports: list[tuple] = []
        self._needed_imports: list[tuple] = []
        self._replaced: set[int] = set()  # ids of original nodes the rewrite replaced or removed
        self._star_refs: dict[int, cst.Name] = {}  # names resolved through a legacy star import
        self._callee_ids: set[int] = set()
        self._removed_calls: set[int] = set()
        self._todos: dict[int, list[str]] = {}
        self._after_statement: dict[int, list[cst.BaseSmallStatement]] = {}
        self._before_statement: dict[int, list[cst.BaseSmallStatement]] = {}
        self._dropped_statements: set[int] = set()
        self._names: set[str] | None = None  # (from the survey, when a fresh name is first needed)
        self._fallback_locals: set[str] = set()
        self._plan = _Plan({}, {}, False)
        self._reexports = dict(options.reexports)
        self._dunder_all: frozenset[str] = frozenset()
        self._current: cst.CSTNode | None = None
        self._rebuilt: dict[
            int, cst.CSTNode
        ] = {}  # id(node of the rewritten tree) -> original node
        self._hot: set[int] = set()

    # ------------------------------------------------------------------ module level
    def migrate_module(self, tree: cst.Module) -> cst.Module:
        survey = self._given_survey
        if survey is None:
            survey = NodeIndex(tree, self._reexports)
        self._survey = survey
        self._lines = survey.text.splitlines()
        if not might_use_host_callback(survey.text, self.options.reexports):
            return tree
        self._has_suppressions = bool(
            _SUPPRESS_ALL.search(survey.text) or _NOQA.search(survey.text)
        )
        self._scopes = self._given_scopes or ScopeAnalysis(survey.text)
        self._fallback_locals = survey.guard_fallbacks
        self._dunder_all = dunder_all(tree)
        if self.options.strategy == "compat":
            return self._point_at_compat(tree)
        self._plan = self._make_plan()
        self._hot = self._nodes_to_visit()
        self.descend = lambda node: id(node) in self._hot
        rewritten = tree.visit(self)
        return add_imports(rewritten.visit(self._cleanup()), self._needed_imports)

    def _nodes_to_visit(self) -> set[int]:
        """The rewrite only walks down to nodes a rule may change: names an import of the
        legacy module can bind (outside imports, which this pass leaves to the clean-up),
        calls of `...update` / `...pure_callback`, the defs whose signatures change.
        Everything else is left as it is, unvisited (walking a whole module costs as much as
        parsing it)."""
        roots = self._survey.legacy_roots
        return self._with_ancestors(
            [
                *(name for name in self._survey.name_nodes if name.value in roots),
                *(
                    call
                    for call in self._survey.calls
                    if (dotted_name(call.func) or "").endswith(("update", "pure_callback"))
                ),
                *(self._plan.defs[key] for key in self._plan.def_drops),
            ]
        )

    def _with_ancestors(self, nodes) -> set[int]:
        """Ids of `nodes` (original ones) and of every node above them, up to the module."""
        found: set[int] = set()
        for node in nodes:
            while node is not None and id(node) not in found:
                found.add(id(node))
                node = self._parent(node)
        return found

    def _cleanup(self) -> RemoveUnusedLegacyImports:
        cleanup = RemoveUnusedLegacyImports(
            self._report_plain,
            self._import_still_used,
            self._name_still_read,
            self._reexports,
            self._exported_here(),
            star_still_used=lambda: any(not self._gone(n) for n in self._star_refs.values()),
            imported_elsewhere=self._imported_elsewhere,
        )
        # Over the rewritten module, only down to import and try statements: through original
        # nodes on the way to one, or nodes the rewrite rebuilt from such a node.
        imports = self._with_ancestors(self._survey.import_nodes)
        is_original, rebuilt = self._survey.is_original, self._rebuilt

        def descend(node: cst.CSTNode) -> bool:
            original = node if is_original(node) else rebuilt.get(id(node))
            return original is not None and id(original) in imports

        cleanup.descend = descend
        return cleanup

    # Whether a name is still used after the rewrite, from the first scope analysis: a use
    # is gone when it lies inside a node the rewrite replaced or removed.
    def _gone(self, node: cst.CSTNode) -> bool:
        while node is not None:
            if id(node) in self._replaced:
                return True
            node = self._parent(node)
        return False

    def _still_used(self, bindings) -> bool:
        return any(self._use_left(offset) for binding in bindings for offset in binding.accesses)

    def _use_left(self, offset: int) -> bool:
        name = self._survey.name_at(offset)
        return name is None or not self._gone(name)

    def _import_still_used(self, import_node: cst.CSTNode, bound: str) -> bool:
        offset = self._survey.start_offset(import_node)
        if offset is None:
            return True
        return self._still_used(b for b in self._scopes.imports.get(offset, ()) if b.key == bound)

    def _imported_elsewhere(self, import_node: cst.CSTNode, module: str) -> bool:
        """Does another import in the same scope bind `module` as such (`import jax`)?"""
        offset = self._survey.start_offset(import_node)
        if offset is None:
            return False
        return any(
            b.real == module and b.statement != offset
            for b in self._scopes.bindings_at_statement(offset, module)
        )

    def _name_still_read(self, anchor: cst.CSTNode, name: str) -> bool:
        """Is `name`, as bound in the scope of `anchor`, still read anywhere (any scope)?"""
        offset = self._survey.start_offset(anchor)
        return offset is None or self._still_used(self._scopes.bindings_at(offset, name))

    def _point_at_compat(self, tree: cst.Module) -> cst.Module:
        transformer = PointImportsAtCompat(
            self._report_plain,
            self._suppressed,
            lambda node: any(
                self._import_still_used(node, bound)
                for _, bound in legacy_aliases(node, self._reexports)
            ),
            self._qualified,
        )
        result = tree.visit(transformer)
        cleanup = self._cleanup()
        cleanup.descend = None  # PointImportsAtCompat rebuilt the tree without noting what from
        result = result.visit(cleanup)
        return add_imports(
            result, [(COMPAT_MODULE, None, None)] if transformer.needs_dotted_import else []
        )

    def _exported_here(self) -> frozenset[str]:
        """Names of this module that other modules import: listed in `__all__`, or imported
        from it by another module of the migrated tree."""
        names = set(self._dunder_all)
        prefix = f"{self.options.module_name}." if self.options.module_name else None
        if prefix is not None:
            names |= {
                k[len(prefix) :]
                for k in self._reexports
                if k.startswith(prefix) and "." not in k[len(prefix) :]
            }
        return frozenset(names)

    # ------------------------------------------------------------------ resolution
    def _qualified_names(self, node: cst.CSTNode) -> set:
        while isinstance(node, (cst.Call, cst.Subscript)):
            node = node.func if isinstance(node, cst.Call) else node.value
        full = dotted_name(node)
        if full is None:
            return set()
        while isinstance(node, cst.Attribute):
            node = node.value
        offset = self._survey.start_offset(node)
        return set() if offset is None else self._scopes.qualified_names(offset, full)

    def _qualified(self, node: cst.CSTNode) -> set[str]:
        return {q.name for q in self._qualified_names(node)}

    def _legacy_ref(self, node: cst.CSTNode) -> LegacyRef | None:
        if root_name(node) not in self._survey.legacy_roots:
            return None  # cannot be bound to the legacy module: skip the scope query
        names = self._qualified_names(node)
        if not names:
            if (
                self._survey.legacy_star
                and isinstance(node, cst.Name)
                and node.value in LEGACY_PUBLIC_NAMES
            ):
                # bound by nothing but `from jax.experimental.host_callback import *`
                self._star_refs[id(node)] = node
                return LegacyRef(member=node.value)
            return None
        return classify(names, self._fallback_locals, self._reexports)

    def _parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._survey.parents.get(id(node))

    def _function_def(self, name: cst.Name) -> cst.FunctionDef | None:
        offset = self._survey.start_offset(name)
        bindings = self._scopes.bindings_at(offset, name.value) if offset is not None else []
        if len(bindings) != 1 or not bindings[0].is_def:
            return None
        node = self._parent(self._survey.name_at(bindings[0].offset))
        return node if isinstance(node, cst.FunctionDef) else None

    def _value_used(self, call: cst.Call) -> bool:
        return not isinstance(self._parent(call), cst.Expr)

    # ------------------------------------------------------------------ planning
    def _legacy_calls(self) -> list[tuple[cst.Call, str]]:
        found: list[tuple[cst.Call, str]] = []
        for node in self._survey.calls:
            ref = self._legacy_ref(node.func)
            if ref is not None and not ref.is_ambiguous and ref.member in LEGACY_FUNCTIONS:
                found.append((node, ref.member))
        return found

    def _make_plan(self) -> _Plan:
        adaptations: dict[int, Adaptation] = {}
        per_def: dict[int, list] = {}
        defs: dict[int, cst.FunctionDef] = {}
        io_family = False
        for call, member in self._legacy_calls():
            if member not in ("id_tap", "call"):
                continue
            if self._suppressed(call, "HCB101" if member == "id_tap" else "HCB302"):
                continue  # left as is: it joins no ordered chain
            try:
                args, _ = bind_arguments(member, call)
            except UnbindableCall:
                continue
            device_flag = "tap_with_device" if member == "id_tap" else "call_with_device"
            passes_transforms = (
                member == "id_tap"
                and literal_value(args.get("tap_with_transform", cst.Name("True"))) is not False
            )
            passes_device = literal_value(args.get(device_flag, cst.Name("False"))) is True
            func = args.get("tap_func" if member == "id_tap" else "callback_func")
            adaptation = self._adaptation_of(func, passes_transforms, passes_device)
            if isinstance(func, cst.Name) and adaptation.mode == "edit":
                fdef = self._function_def(func)
                defs[id(fdef)] = fdef
                per_def.setdefault(id(fdef), []).append(
                    (call, func, adaptation, passes_transforms, passes_device)
                )
            adaptations[id(call)] = adaptation
            native = (
                adaptation.mode != "compat" and self._compat_reason_for(args, device_flag) is None
            )
            if native and (member == "id_tap" or self._call_becomes_io(call, args)):
                io_family = True
        def_drops: dict[int, tuple[str, ...]] = {}
        for key, uses in per_def.items():
            fdef = defs[key]
            offset = self._survey.start_offset(fdef.name)
            references = {
                access
                for binding in self._scopes.bindings_at(offset, fdef.name.value)
                for access in binding.accesses
            }
            tap_nodes = {self._survey.start_offset(func) for _, func, _, _, _ in uses}
            drops = {a.drop for _, _, a, _, _ in uses}
            if references <= tap_nodes and len(drops) == 1:
                def_drops[key] = drops.pop()
            else:  # the def is used elsewhere too: keep its signature, wrap at each site
                for call, _, _, passes_transforms, passes_device in uses:
                    adaptations[id(call)] = Adaptation("wrap", reason="is used elsewhere too")
        return _Plan(adaptations, def_drops, io_family, defs)

    def _adaptation_of(self, func, passes_transforms: bool, passes_device: bool) -> Adaptation:
        if not passes_transforms and not passes_device:
            return Adaptation("as_is")
        if isinstance(func, cst.Lambda):
            return adapt(
                func.params,
                func.body,
                passes_transforms=passes_transforms,
                passes_device=passes_device,
            )
        if isinstance(func, cst.Name):
            fdef = self._function_def(func)
            if fdef is not None and not fdef.decorators:
                return adapt(
                    fdef.params,
                    fdef.body,
                    passes_transforms=passes_transforms,
                    passes_device=passes_device,
                )
        if passes_device:
            return Adaptation(
                "compat", reason="may use the `device` argument (it is not defined in this module)"
            )
        return Adaptation("wrap", reason="is not defined in this module")

    def _call_becomes_io(self, call: cst.Call, args: dict) -> bool:
        shape = args.get("result_shape")
        empty = (
            shape is None
            or literal_value(shape) is None
            or (isinstance(shape, cst.Tuple) and not shape.elements)
        )
        return empty or not self._value_used(call) or not self.is_pure(args["callback_func"])

    # ------------------------------------------------------------------ services for rules
    @property
    def io_family(self) -> bool:
        return self._plan.io_family

    @property
    def shapes(self) -> ShapeConverter:
        return ShapeConverter(self.name, self._qualified, x64_possible="x64" in self._survey.text)

    def is_pure(self, func: cst.BaseExpression) -> bool:
        return PurityChecker(self._qualified, lambda n: self._function_def(n)).function(func)

    def target_at_least(self, version: tuple[int, ...]) -> bool:
        return self.options.target_jax is None or tuple(self.options.target_jax) >= version

    def name(self, key: str) -> str:
        """Spelling of a modern API object; its import is added if the site is rewritten."""
        modern = MODERN[key]
        self._pending_imports.append((modern.import_module, modern.import_name, None))
        return modern.dotted

    def name_of_dotted(self, dotted: str) -> str:
        self._pending_imports.append((dotted.split(".", 1)[0], None, None))
        return dotted

    def compat(self, member: str | None) -> cst.BaseExpression:
        self._pending_imports.append((_COMPAT_PARENT, _COMPAT_LEAF, COMPAT_ALIAS))
        return parse(f"{COMPAT_ALIAS}.{member}" if member else COMPAT_ALIAS)

    def fresh_name(self, base: str) -> str:
        if self._names is None:
            self._names = self._survey.names
        name, i = base, 1
        while name in self._names:
            name, i = f"{base}_{i}", i + 1
        self._names.add(name)
        return name

    def assignment_target(self, call: cst.Call) -> str | None:
        """`name` when `call` is the whole value of a plain `name = call` statement line."""
        assign = self._parent(call)
        if (
            not isinstance(assign, cst.Assign)
            or len(assign.targets) != 1
            or not isinstance(assign.targets[0].target, cst.Name)
        ):
            return None
        line = self._parent(assign)
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return None
        return assign.targets[0].target.value

    def is_returned(self, call: cst.Call) -> bool:
        """`call` is the whole value of a `return` statement line of its own."""
        ret = self._parent(call)
        line = self._parent(ret) if isinstance(ret, cst.Return) else None
        return isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1

    def run_after_statement(self, call: cst.Call, effect: cst.BaseExpression) -> None:
        statement = self._enclosing_statement(call)
        self._after_statement.setdefault(id(statement), []).append(cst.Expr(effect))

    def drop_statement(self, call: cst.Call) -> None:
        """The statement holding `call` is replaced by what run_before_statement queued."""
        self._dropped_statements.add(id(self._enclosing_statement(call)))

    def run_before_statement(self, call: cst.Call, small: cst.BaseSmallStatement) -> None:
        statement = self._enclosing_statement(call)
        self._before_statement.setdefault(id(statement), []).append(small)

    def adaptation(self, site: CallSite) -> Adaptation:
        return self._plan.adaptations.get(id(site.original), Adaptation("as_is"))

    def compat_reason(self, site: CallSite, device_flag: str) -> str | None:
        return self._compat_reason_for(site.args, device_flag)

    @staticmethod
    def _compat_reason_for(args: dict, device_flag: str) -> str | None:
        if "callback_flavor" in args:
            return "callback_flavor= selects a legacy implementation"
        if "device_index" in args and literal_value(args["device_index"]) != 0:
            return "device_index= picks which device's host runs the callback"
        if device_flag in args and literal_value(args[device_flag]) not in (True, False):
            return f"{device_flag}= is computed at run time"
        return None

    def adapted_function(
        self, site: CallSite, adaptation: Adaptation, pass_transforms: bool
    ) -> cst.BaseExpression:
        key = "tap_func" if site.legacy_name == "id_tap" else "callback_func"
        func = site.args[key]
        if adaptation.mode == "edit" and isinstance(func, cst.Lambda):
            return func.with_changes(params=drop_params(func.params, adaptation.drop))
        if adaptation.mode == "wrap":
            device_flag = "tap_with_device" if site.legacy_name == "id_tap" else "call_with_device"
            param = "arg" if "arg" not in names_used(func) else self.fresh_name("arg")
            extra = ", ()" if pass_transforms else ""
            extra += (
                ", device=None"
                if literal_value(site.args.get(device_flag, cst.Name("False"))) is True
                else ""
            )
            code = cst.Module(body=[]).code_for_node(func)
            if not isinstance(func, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
                code = f"({code})"
            return parse(f"lambda {param}: {code}({param}{extra})")
        return func

    def report(
        self, rule: Rule, node: cst.CSTNode, message: str, level: Level | None = None
    ) -> None:
        """Record a diagnostic for a site; the single gate for selection and suppression."""
        if not self._selected(rule.code) or self._suppressed(node, rule.code):
            raise _SiteSkipped
        self._add_diagnostic(rule, node, message, level or rule.level)

    def _report_plain(
        self, rule: Rule, node: cst.CSTNode, message: str, level: Level | None
    ) -> None:
        if self._selected(rule.code):
            self._add_diagnostic(rule, node, message, level or rule.level)

    def _add_diagnostic(self, rule: Rule, node: cst.CSTNode, message: str, level: Level) -> None:
        position = self._survey.start(node)
        if position is None and self._current is not None:
            position = self._survey.start(self._current)
        line, col = position or (1, 1)
        self.diagnostics.append(Diagnostic(rule.code, message, level, line, col))
        if level is Level.MANUAL and self.options.add_todos:
            statement = self._enclosing_statement(node)
            if statement is not None:
                self._todos.setdefault(id(statement), []).append(f"{rule.code} {message}")

    def _selected(self, code: str) -> bool:
        def hit(codes) -> bool:
            return any(code.startswith(c) for c in codes)

        if self.options.ignore and hit(self.options.ignore):
            return False
        return self.options.select is None or hit(self.options.select)

    def _suppressed(self, node: cst.CSTNode, code: str) -> bool:
        if not self._has_suppressions:
            return False  # (the common case: no node's end line to work out)
        position = self._survey.position(node)
        if position is None:
            return False
        for text in self._lines[position[0] - 1 : position[2]]:
            if _SUPPRESS_ALL.search(text):
                return True
            noqa = _NOQA.search(text)
            if noqa and (
                noqa.group("codes") is None
                or code in re.split(r"[\s,]+", noqa.group("codes").upper())
            ):
                return True
        return False

    def _enclosing_statement(self, node: cst.CSTNode) -> cst.CSTNode | None:
        while node is not None and not isinstance(
            node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)
        ):
            node = self._parent(node)
        return node

    # ------------------------------------------------------------------ the rewrite
    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        ref = self._legacy_ref(node.func)
        if ref is not None and ref.member in CALL_RULES and not ref.is_ambiguous:
            self._callee_ids.add(id(node.func))

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        # A legacy reference is handled whole at leave_Attribute; its parts are not visited.
        return id(node) not in self._callee_ids and self._legacy_ref(node) is None

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if id(original_node.func) in self._callee_ids:
            member = self._legacy_ref(original_node.func).member
            return self._run_site(
                original_node,
                lambda: self._rewrite_legacy_call(member, original_node, updated_node),
                updated_node,
            )
        tail = dotted_name(original_node.func) or ""
        names = (
            self._qualified(original_node.func)
            if tail.endswith(("update", "pure_callback"))
            else set()
        )
        if names:
            flag = config_flags.matches(original_node, names)
            if flag is not None:
                used = self._value_used(original_node)
                return self._run_site(
                    original_node,
                    lambda: config_flags.rewrite(original_node, flag, used, self),
                    updated_node,
                )
            if names & set(vectorized.PURE_CALLBACK):
                return self._run_site(
                    original_node,
                    lambda: vectorized.rewrite(updated_node, names, self),
                    updated_node,
                )
        return updated_node

    def _rewrite_legacy_call(self, member: str, original: cst.Call, updated: cst.Call):
        try:
            args, extra = bind_arguments(member, updated)
        except UnbindableCall as why:
            self.report(UNBINDABLE, original, f"{member}(...): {why}; left alone", Level.MANUAL)
            return None
        original_args, _ = bind_arguments(member, original)
        arg_nodes, extra_nodes = bind_argument_nodes(member, updated)
        arg_nodes = {**extra_nodes, **arg_nodes}
        site = CallSite(
            member,
            original,
            updated,
            args,
            extra,
            self._value_used(original),
            original_args,
            arg_nodes,
        )
        return CALL_RULES[member](site, self)

    def _run_site(self, original: cst.CSTNode, rewrite, unchanged: cst.BaseExpression):
        """Run one site's rewrite; commit its imports only if it was not skipped."""
        self._pending_imports = []
        self._current = original
        try:
            result = rewrite()
        except _SiteSkipped:
            return unchanged
        self._needed_imports.extend(self._pending_imports)
        if result is _REMOVE_STATEMENT:
            self._removed_calls.add(id(original))
            self._replaced.add(id(original))
            return unchanged
        if result is not None and result is not unchanged:
            self._replaced.add(id(original))
        return unchanged if result is None else result

    def _rewrite_reference(
        self, original: cst.BaseExpression, updated: cst.BaseExpression
    ) -> cst.BaseExpression:
        if id(original) in self._callee_ids:
            return updated
        ref = self._legacy_ref(original)
        if ref is None:
            return updated
        return self._run_site(
            original, lambda: references.rewrite_reference(original, ref, self), updated
        )

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        return self._rewrite_reference(original_node, updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        parent = self._parent(original_node)
        if _is_binding_or_label(original_node, parent):
            return updated_node
        return self._rewrite_reference(original_node, updated_node)

    def leave_Expr(self, original_node: cst.Expr, updated_node: cst.Expr):
        if id(original_node.value) in self._removed_calls:
            return cst.RemovalSentinel.REMOVE
        return updated_node

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef):
        drop = self._plan.def_drops.get(id(original_node))
        if drop:
            updated_node = updated_node.with_changes(params=drop_params(updated_node.params, drop))
        return self._with_todos(original_node, updated_node)

    def on_leave(self, original_node, updated_node):
        result = self._leave_statement(original_node, super().on_leave(original_node, updated_node))
        # What the rewrite rebuilt is noted: the clean-up finds the imports through it.
        for node in result.nodes if isinstance(result, cst.FlattenSentinel) else (result,):
            if node is not original_node and isinstance(node, cst.CSTNode):
                self._rebuilt[id(node)] = original_node
        return result

    def _leave_statement(self, original_node, result):
        """Queued TODO comments and lines before/after a statement, or its replacement."""
        if id(original_node) not in self._hot:  # not walked: nothing queued for it
            return result
        if isinstance(
            result, (cst.SimpleStatementLine, cst.BaseCompoundStatement)
        ) and not isinstance(result, cst.FunctionDef):
            result = self._with_todos(original_node, result)
        before = self._before_statement.get(id(original_node), [])
        after = self._after_statement.get(id(original_node), [])
        if (before or after) and isinstance(result, cst.SimpleStatementLine):
            if id(original_node) in self._dropped_statements:
                # the queued lines replace the statement; its comments go with them
                lines = [
                    result.with_changes(body=[s])
                    if i == len(before) - 1
                    else cst.SimpleStatementLine(body=[s])
                    for i, s in enumerate(before)
                ]
                lines[0] = lines[0].with_changes(leading_lines=result.leading_lines)
            elif before:  # the comments above the statement stay above the first new line
                first = cst.SimpleStatementLine(
                    body=[before[0]], leading_lines=result.leading_lines
                )
                lines = [
                    first,
                    *(cst.SimpleStatementLine(body=[s]) for s in before[1:]),
                    result.with_changes(leading_lines=[]),
                ]
            else:
                lines = [result]
            return cst.FlattenSentinel(
                [*lines, *(cst.SimpleStatementLine(body=[s]) for s in after)]
            )
        return result

    def _with_todos(self, original, updated):
        messages = self._todos.get(id(original))
        if not messages or not hasattr(updated, "leading_lines"):
            return updated
        existing = {
            line.comment.value for line in updated.leading_lines if line.comment is not None
        }
        new = [
            cst.EmptyLine(comment=cst.Comment(TODO_PREFIX + m))
            for m in dict.fromkeys(messages)
            if TODO_PREFIX + m not in existing
        ]
        return updated.with_changes(leading_lines=[*updated.leading_lines, *new])


def _is_binding_or_label(name: cst.Name, parent: cst.CSTNode | None) -> bool:
    """A Name that is not a use of a value: an attribute label, a keyword, a parameter, a
    def/class name, an import alias."""
    if isinstance(parent, cst.Attribute):
        return parent.attr is name
    if isinstance(parent, cst.Arg):
        return parent.keyword is name
    if isinstance(
        parent,
        (cst.Param, cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.AsName, cst.NameItem),
    ):
        return True
    if isinstance(
        parent,
        (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr),
    ):
        return parent.target is name  # (re)binding the name, not using it
    return False


Context = HostCallbackMigration  # what rules receive


def migrate(
    text: str, options: Options, *, filename: str = "<string>", top_level_await: bool = False
) -> MigrationResult:
    """Migrate one module's source text (see hcmigrate.api.migrate_source)."""
    may_use = might_use_host_callback(text, options.reexports)
    parsed = _parse_partially(text, options, filename) if may_use else None
    if parsed is None:
        module = _parse_whole(
            text, filename
        )  # (a file that cannot use the API still gets its syntax checked)
        if not may_use:
            return MigrationResult(text, text, [])
        survey, scopes = NodeIndex(module, dict(options.reexports)), None
    else:
        module, survey, scopes = parsed
    if survey.text != text:  # (libcst drops a blank line before a trailing indented comment)
        line = (
            text.count(
                "\n",
                0,
                next(
                    (i for i, (a, b) in enumerate(zip(text, survey.text)) if a != b),
                    len(survey.text),
                ),
            )
            + 1
        )
        raise MigrationError(
            f"cannot parse this file back byte for byte: libcst prints line {line} differently (a libcst limitation); "
            "file left unchanged",
            line,
            1,
        )
    if not survey.worth_migrating():
        return MigrationResult(
            text, text, []
        )  # e.g. "host_callback" only in a comment or another name
    if scopes is None:
        try:
            scopes = ScopeAnalysis(text)
        except (SyntaxError, ValueError) as error:  # libcst accepts a few things CPython does not
            raise MigrationError(
                f"syntax error: {getattr(error, 'msg', error)}",
                getattr(error, "lineno", 1) or 1,
                getattr(error, "offset", 1) or 1,
            ) from None
    command = HostCallbackMigration(options, survey=survey, scopes=scopes)
    try:
        new_module = command.migrate_module(module)
    except (RecursionError, MemoryError):
        raise
    except Exception as error:  # a bug of ours must never cost the user their file
        raise MigrationError(
            f"internal error ({type(error).__name__}: {error}); file left unchanged — please report it"
        ) from error
    code, _ = survey.print_module(new_module)
    diagnostics = sorted(command.diagnostics, key=lambda d: (d.line, d.col, d.code))
    if code != text:  # never hand back code that does not compile
        error = compile_error(code, filename, top_level_await=top_level_await)
        if error is not None:
            own = compile_error(text, filename, top_level_await=top_level_await)
            if own is not None:  # the file itself does not compile: its own error is reported
                raise MigrationError(
                    f"syntax error: {own.msg}", own.lineno or 1, own.offset or 1
                ) from None
            raise MigrationError(
                f"internal error: the rewrite would not compile ({error.msg}); file left unchanged",
                error.lineno or 1,
                error.offset or 1,
            ) from None
    return MigrationResult(text, code, diagnostics, compile_checked=True)


def _parse_whole(text: str, filename: str) -> cst.Module:
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        # CPython locates syntax errors more precisely than libcst's parser; prefer its words.
        precise = compile_error(text, filename)
        if precise is not None:
            raise MigrationError(
                f"syntax error: {precise.msg}", precise.lineno or 1, precise.offset or 1
            ) from None
        raise MigrationError(
            f"cannot parse: {error.message}", error.raw_line, error.raw_column + 1
        ) from None


def _parse_partially(
    text: str, options: Options, filename: str
) -> tuple[cst.Module, NodeIndex, ScopeAnalysis] | None:
    """Module, survey and scopes with libcst parsing only the top-level statements the codemod
    needs (hcmigrate.codemod.partial_parse), or the whole module when that does not apply; None when
    CPython rejects the text (the whole-module path then reports the error as it always has)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    scopes = ScopeAnalysis(text, tree)
    reexports = dict(options.reexports)
    seeds = _legacy_words(text, scopes, reexports)
    partial = parse_needed(text, tree, scopes.line_starts, seeds)
    if partial is not None:
        survey = NodeIndex(
            partial.module, reexports, unparsed_names=lambda: identifiers(partial.verbatim)
        )
        # What the regions were picked by must hold: the module prints back to the very text,
        # and every name the survey found the legacy API bound to was looked for.
        if survey.text == text and survey.legacy_roots <= seeds:
            return partial.module, survey, scopes
    module = _parse_whole(text, filename)
    return module, NodeIndex(module, reexports), scopes


def _legacy_words(text: str, scopes: ScopeAnalysis, reexports: dict[str, str]) -> set[str]:
    """The words a statement the codemod may rewrite contains: the module name, `vectorized`,
    and every name an import of the legacy module, or of a module that re-exports it, binds."""
    words = {"host_callback", "vectorized"}
    for bindings in scopes.imports.values():
        for binding in bindings:
            real = binding.real or ""
            if "host_callback" in real or real in reexports or reexported_module(real, reexports):
                words.add(binding.key.split(".", 1)[0])
    if LEGACY_MODULE in text:
        words.add(LEGACY_MODULE.split(".", 1)[0])  # `jax.experimental.host_callback.id_tap(...)`
    if _STAR_IMPORT.search(text):
        words |= LEGACY_PUBLIC_NAMES  # `from jax.experimental.host_callback import *`
    return words
