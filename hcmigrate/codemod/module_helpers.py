"""Small named functions a migrated module gets once, where no expression would fit at the
site (`_print_like_id_print`: legacy id_print's text; `_shape_dtype_structs`).

A rule asks for a helper by key (`RuleContext.use_helper`); the helper's definition is added
once, after the module's top-level imports, with the imports it needs. A module that already
defines a top-level function of that name keeps its own (so a second run adds nothing).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import libcst as cst

from hcmigrate.codemod.add_imports import insertion_point
from hcmigrate.codemod.partial_parse import VerbatimStatement
from hcmigrate.codemod.walk import descendants


@dataclass(frozen=True)
class HelperDef:
    name: str
    # the definition, black-formatted, ending with a newline; `{jax}`, `{np}` stand for the
    # module's spellings of those (hcmigrate.codemod.import_names), `{tree_map}`
    # for `jax.tree.map` or, below the JAX that has it, `jax.tree_util.tree_map` (tree_map_of)
    source: str
    # (placeholder, module, usual alias)
    imports: tuple[tuple[str, str, str | None], ...]

    def text(self, names: dict[str, str]) -> str:
        return self.source.format(**names)


def tree_map_of(jax: str, has_jax_tree: bool) -> str:
    """How a helper maps over a tree: `jax.tree.map` (from JAX 0.4.25: native_needs.SINCE), else
    `jax.tree_util.tree_map`, which every release has: a helper never raises the floor."""
    return f"{jax}.tree.map" if has_jax_tree else f"{jax}.tree_util.tree_map"


HELPERS: dict[str, HelperDef] = {
    # Legacy id_print printed each array with numpy's array2string (a 0-d float32 `2.`, `3.762`)
    # and containers in its own layout, broken over lines at 80 columns (jax 0.4.30's
    # pretty printer: a container that does not fit puts each element on a line of its own);
    # jax.debug.print formats a 0-d array as Python formats the float (`2.0`,
    # `3.76200008392334`) and a container it cannot see by repr() (callback_facts.json
    # "print_text/"): no format of it prints legacy's text.
    "id_print": HelperDef(
        name="_print_like_id_print",
        source='''\
def _print_like_id_print(value, /, **header):
    """Print as the removed `id_print` did: sorted `k: v` keywords, the value
    in numpy's text, `( a b )`, `[ a b ]`, `{{ k=v }}`, wrapped at 80."""

    def text(v, column, indent):  # (`v`'s text from `column`, column after)
        if not isinstance(v, (tuple, list, dict)):
            shown = {np}.array2string(v) if isinstance(v, {np}.ndarray) else str(v)
            return shown, column + len(shown)
        is_dict = isinstance(v, dict)
        ends = "{{}}" if is_dict else "()" if isinstance(v, tuple) else "[]"
        pairs = sorted(v.items()) if is_dict else enumerate(v)
        items = [(f"{{k}}=" if is_dict else "", e) for k, e in pairs]
        flat = " ".join(key + text(e, -float("inf"), 0)[0] for key, e in items)
        if column + len(flat) + 4 <= 80:
            return f"{{ends[0]}} {{flat}} {{ends[1]}}", column + len(flat) + 4
        shown, column = ends[0] + " ", column + 2
        for n, (key, e) in enumerate(items):
            if n:
                shown, column = shown + "\\n" + " " * (indent + 2), indent + 2
            part, column = text(e, column + len(key), indent + 2)
            shown += key + part
        return shown + " " + ends[1], column + 2

    if header:
        print(" ".join(f"{{k}}: {{v}}" for k, v in sorted(header.items())))
    print(text({tree_map}({np}.asarray, value), 0, 0)[0])
''',
        imports=(("jax", "jax", None), ("np", "numpy", "np")),
    ),
    # Legacy `call` took any tree of arrays, ShapeDtypeStructs and Python scalars as
    # result_shape and canonicalised its dtypes; modern callbacks need canonical dtypes
    # (float64 is refused without x64) and shape/dtype leaves (a bare float has neither).
    "shape_dtype_structs": HelperDef(
        name="_shape_dtype_structs",
        source='''\
def _shape_dtype_structs(result_shape):
    """`result_shape` leaves as ShapeDtypeStructs with canonical dtypes."""
    return {tree_map}(
        lambda leaf: {jax}.ShapeDtypeStruct(
            getattr(leaf, "shape", ()),
            {jax}.dtypes.canonicalize_dtype(getattr(leaf, "dtype", type(leaf))),
        ),
        result_shape,
    )
''',
        imports=(("jax", "jax", None),),
    ),
}


def shared_imports(
    module: cst.Module, keys, shared: tuple[tuple[str, str, str], ...]
) -> dict[str, tuple[str, str, None]]:
    """The imports (by helper key) of the helpers `keys` that the run writes once for the
    package (Options.shared_helpers), from the module named relatively where the module
    already imports relatively (`from ._id_print import ...`), else absolutely. A module that
    defines a top-level function of the helper's name keeps its own."""
    present = defined_functions(module)
    relative = any(
        isinstance(small, cst.ImportFrom) and small.relative
        for statement in module.body
        if isinstance(statement, cst.SimpleStatementLine)
        for small in statement.body
    )
    imports = {}
    for key, absolute, relative_name in shared:
        name = HELPERS[key].name
        if key in keys and name not in present:
            imports[key] = (relative_name if relative else absolute, name, None)
    return imports


def helper_module_text(key: str, names: dict[str, str], indent: str = "    ") -> str:
    """A module of its own holding the helper `key`, as the run writes it once for a package
    whose modules share it (hcmigrate.shared_helpers): a docstring, the imports, the def.
    `names`: the spellings of its placeholders (`{np}` the project's numpy alias)."""
    helper = HELPERS[key]
    lines = [
        f"import {module}" + (f" as {names[placeholder]}" if names[placeholder] != module else "")
        for placeholder, module, _ in helper.imports
    ]
    definition = helper.text(names)
    if indent != "    ":
        definition = cst.Module(body=[_definition(definition, indent)]).code
    return (
        f'"""{SHARED_DOCSTRINGS[key]}"""\n\n'
        + "\n".join(sorted(lines, key=str.lower))
        + "\n\n\n"
        + definition
    )


# The docstring of the module the run writes for a helper its package's modules share.
SHARED_DOCSTRINGS = {
    "id_print": (
        "Legacy `id_print`'s text for the modules of this package that print containers\n"
        "(written by hcmigrate, which moved them off jax.experimental.host_callback).\n"
    ),
}


def defined_functions(module: cst.Module) -> set[str]:
    return {s.name.value for s in module.body if isinstance(s, cst.FunctionDef)}


def indent_unit(text: str) -> str:
    """The indentation the module's first indented block uses (four spaces if none)."""
    match = _FIRST_BLOCK.search(text)
    return match.group(1) if match else "    "


_FIRST_BLOCK = re.compile(r"^[^\s#].*:[ \t]*(?:#.*)?\n(?:[ \t]*(?:#.*)?\n)*([ \t]+)\S", re.M)


class _Reindent(cst.CSTTransformer):
    def __init__(self, unit: str):
        self.unit = unit

    def leave_IndentedBlock(self, original, updated):
        return updated.with_changes(indent=self.unit)


# A guarded import the rules write (hcmigrate.rules.removed_api_rewrite._guarded_use), one name:
# `try: from jax.extend.core import Var / except ImportError: from jax.core import Var`.
_GUARDED_IMPORT = re.compile(
    r"try:\n(?P<indent>[ \t]+)from (?P<new>[\w.]+) import (?P<names>[\w ,]+)\n"
    r"except ImportError:\n(?P=indent)from (?P<old>[\w.]+) import (?P=names)\n\Z"
)


def _isort_key(name: str) -> str:
    """isort's order of the names of one import (order_by_type, case-insensitive): constants,
    classes, then the rest."""
    bare = name.split(" as ")[0].strip()
    kind = "A" if bare.isupper() and len(bare) > 1 else "B" if bare[:1].isupper() else "C"
    return kind + bare.lower()


def merged_guarded_imports(helpers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """`helpers` ((name, source) pairs) with the guarded imports from one pair of modules
    joined into one `try:`/`except ImportError:` that binds all their names, where the first
    of them stood (kfac's tag_graph_matcher.py: six blocks of five lines became one)."""
    out: list[tuple[str, str]] = []
    groups: dict[tuple[str, str, str], tuple[int, list[str]]] = {}
    for name, source in helpers:
        found = _GUARDED_IMPORT.match(source)
        if found is None:
            out.append((name, source))
            continue
        key = (found["new"], found["old"], found["indent"])
        names = [n.strip() for n in found["names"].split(",")]
        if key in groups:
            groups[key][1].extend(names)
            continue
        groups[key] = (len(out), names)
        out.append((name, source))
    for (new, old, indent), (at, names) in groups.items():
        if len(names) > 1:
            joined = ", ".join(sorted(dict.fromkeys(names), key=_isort_key))
            out[at] = (
                out[at][0],
                f"try:\n{indent}from {new} import {joined}\n"
                f"except ImportError:\n{indent}from {old} import {joined}\n",
            )
    return out


def _bindings_of(text: str, name: str) -> int:
    """How many times the module `text` binds `name`, anywhere (assignments, parameters,
    imports, definitions, `global`/`nonlocal`, `except ... as`)."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):  # (a notebook's top-level await: say it is bound again)
        return 2
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            count += node.id == name
        elif isinstance(node, ast.arg):
            count += node.arg == name
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            count += node.name == name
        elif isinstance(node, ast.alias):
            count += (node.asname or node.name.split(".")[0]) == name
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            count += name in node.names
        elif isinstance(node, ast.ExceptHandler):
            count += node.name == name
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)):
            count += node.name == name
    return count


class _Renamed(cst.CSTTransformer):
    def __init__(self, names: dict[str, str]):
        self._names = names

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self._names.get(updated_node.value)
        return updated_node if new is None else updated_node.with_changes(value=new)


def aliases_bound_by_guarded_imports(
    module: cst.Module, guarded: dict[str, str], text: str
) -> tuple[cst.Module, dict[str, str]]:
    """kfac: `Var = jax.core.Var` became `Var = Var_1` beside a guarded import binding
    `Var_1`. Where the module binds `Var` nowhere else, the guarded import binds `Var` itself
    and the alias goes (its comment lines stay, above the next statement). `guarded`: the
    name each guarded import binds -> the name it imports (`Var_1` -> `Var`); `text`: the
    module before the rewrite. The module, and the names so replaced (`Var_1` -> `Var`)."""
    body = list(module.body)
    renames: dict[str, str] = {}
    for i, statement in enumerate(body):
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            continue
        assign = statement.body[0]
        if (
            not isinstance(assign, cst.Assign)
            or len(assign.targets) != 1
            or not isinstance(assign.targets[0].target, cst.Name)
            or not isinstance(assign.value, cst.Name)
            or statement.trailing_whitespace.comment is not None
        ):
            continue
        target, value = assign.targets[0].target.value, assign.value.value
        if guarded.get(value) != target or value in renames or _bindings_of(text, target) != 1:
            continue
        renames[value] = target
        body[i] = None
        following = next((j for j in range(i + 1, len(body)) if body[j] is not None), None)
        if following is not None and any(line.comment for line in statement.leading_lines):
            body[following] = body[following].with_changes(
                leading_lines=[*statement.leading_lines, *body[following].leading_lines]
            )
    if not renames:
        return module, {}
    kept = module.with_changes(body=[s for s in body if s is not None])
    return kept.visit(_Renamed(renames)), renames


def add_helpers(
    module: cst.Module, helpers: list[tuple[str, str]], indent: str = "    "
) -> cst.Module:
    """`module` with the definitions `helpers` ((name, source) pairs) of the helpers it does
    not define yet, indented with `indent` as the module's own blocks are."""
    present = defined_functions(module)
    missing = {name: source for name, source in dict(helpers).items() if name not in present}
    if not missing:
        return module
    body = list(module.body)
    at = insertion_point(body, past_blocks=True)
    # module-level code among the imports that calls a helper (a script's print right after
    # them; `insertion_point` reads `jax.debug.callback(...)` as a setting) runs before any
    # definition below it: the definitions go above the first such statement
    at = next((i for i, s in enumerate(body[:at]) if _names_any(s, set(missing))), at)
    definitions = []
    for source in missing.values():
        statement = _definition(source, indent)
        # (a guarded import joins the imports above it; a def has two blank lines around it)
        defs = (cst.FunctionDef, cst.ClassDef)
        apart = (
            isinstance(statement, defs) or bool(definitions) and isinstance(definitions[-1], defs)
        )
        leading = [cst.EmptyLine(), cst.EmptyLine()] if (at > 0 or definitions) and apart else []
        definitions.append(statement.with_changes(leading_lines=leading))
    following = body[at:]
    if following:
        following[0] = _two_blank_lines_above(following[0])
    return module.with_changes(body=[*body[:at], *definitions, *following])


def _names_any(statement: cst.BaseStatement, names: set[str]) -> bool:
    if isinstance(statement, VerbatimStatement):  # (left as it was: the codemod wrote nothing)
        return False
    # (a walk of our own: libcst.matchers costs half a second to import, at every run)
    return any(type(n) is cst.Name and n.value in names for n in descendants(statement))


@functools.lru_cache(maxsize=32)
def _definition(source: str, indent: str) -> cst.BaseStatement:
    """The helper's def, parsed once per spelling (libcst nodes are immutable: modules share it)."""
    return cst.parse_module(source).body[0].visit(_Reindent(indent))


def _two_blank_lines_above(statement: cst.BaseStatement) -> cst.BaseStatement:
    """The statement after a new definition, with two blank lines above it (and its comments)."""
    if isinstance(statement, VerbatimStatement):
        # (a statement the partial parse kept as text carries its blank lines in its text)
        text = statement.text  # (its blank lines end with "\r\n" in a CRLF file)
        blank = text[: len(text) - len(text.lstrip("\r\n"))].count("\n")
        missing = max(0, 2 - blank - len(statement.leading_lines))
        return statement.with_changes(
            leading_lines=[*[cst.EmptyLine()] * missing, *statement.leading_lines]
        )
    lines = list(statement.leading_lines)
    if len(lines) >= 2 and lines[0].comment is None and lines[1].comment is None:
        return statement  # (unchanged, so it is copied from the source as it is)
    while lines and lines[0].comment is None:
        lines.pop(0)
    return statement.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine(), *lines])


def space_new_guarded_imports(
    module: cst.Module, original: cst.Module, lines_after_imports: int = -1
) -> cst.Module:
    """A guarded import the run wrote at module level (`try: from jax.extend.core import
    Literal` / `except ImportError: ...`, JAX107/JAX111) stands apart from the statements
    around it as isort and ruff's I001 lay out a `try` after an import block: after imports,
    by the project's `lines_after_imports` (diffrax's 2; else one blank line); before a `def`
    or `class`, two (black's); else one. The module's own statements keep their spacing."""
    own = {original.code_for_node(s) for s in original.body if isinstance(s, cst.Try)}
    body = list(module.body)
    new = [
        i
        for i, s in enumerate(body)
        if isinstance(s, cst.Try) and _imports_only(s) and module.code_for_node(s) not in own
    ]
    for i in new:
        for j in (i, i + 1):
            if not 0 < j < len(body):
                continue
            wanted = 1
            if j == i and _is_import(body[j - 1]) and lines_after_imports > 0:
                wanted = lines_after_imports
            elif j == i + 1 and isinstance(body[j], (cst.FunctionDef, cst.ClassDef)):
                wanted = 2
            blank = _blank_lines_above(body[j])
            if blank < wanted:
                body[j] = body[j].with_changes(
                    leading_lines=[*[cst.EmptyLine()] * (wanted - blank), *body[j].leading_lines]
                )
    return module.with_changes(body=body) if new else module


def _is_import(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def _blank_lines_above(statement: cst.BaseStatement) -> int:
    """The blank lines right above `statement` (before any comment line)."""
    if isinstance(statement, VerbatimStatement) and not statement.leading_lines:
        # (a statement the partial parse kept as text carries its blank lines in its text)
        return statement.text.count("\n", 0, len(statement.text) - len(statement.text.lstrip()))
    count = 0
    for line in statement.leading_lines:
        if line.comment is not None:
            break
        count += 1
    return count


def _imports_only(statement: cst.Try) -> bool:
    """`try:` imports `except ImportError:` imports or `name = None`: a guarded import."""
    blocks = [statement.body.body, *(h.body.body for h in statement.handlers)]
    return all(
        isinstance(line, cst.SimpleStatementLine)
        and all(isinstance(small, (cst.Import, cst.ImportFrom, cst.Assign)) for small in line.body)
        for block in blocks
        for line in block
    )
