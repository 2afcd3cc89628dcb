"""What one module's code says, read from Python's ast (never from comments, docstrings or other
strings): the names it binds at module level and how, the modules it star-imports, the dotted
names its code uses, its functions and what they call, and where it applies a JAX transformation
to a function.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from hcmigrate.facts import MULTI_DEVICE_APIS, PATCHED_INTERNALS, PER_DEVICE_APIS

# A binding: ("module", dotted module) for `import X [as Y]`; ("from", module, name, spelled)
# for `from module import name` (`spelled`: the module as written, `.b` for a relative import);
# ("alias", dotted expression) for `NAME = a.b.c` at module level.
Binding = tuple


# The transformations the model follows, by the last part of their name; "sharded jit" is a
# jit given shardings.
TRANSFORMS = {
    "jit": "jit",
    "vmap": "vmap",
    "grad": "grad",
    "value_and_grad": "grad",
    "jacfwd": "grad",
    "jacrev": "grad",
    "scan": "scan",
    "while_loop": "while_loop",
    "fori_loop": "while_loop",
    "cond": "cond",
    "switch": "cond",
    "pmap": "pmap",
    "shard_map": "shard_map",
    "pjit": "pjit",
    "xmap": "xmap",
}
SEVERAL_DEVICES = frozenset({"pmap", "shard_map", "pjit", "xmap", "sharded jit"})
PER_DEVICE = frozenset(PER_DEVICE_APIS)  # (the others run one sharded program)
_SHARDING_KEYWORDS = {"in_shardings", "out_shardings", "in_axis_resources", "out_axis_resources"}


@dataclass
class Application:
    transform: str  # a value of TRANSFORMS, or "sharded jit"
    line: int
    functions: set[str]  # dotted names of the functions it runs (given, or called in a lambda)


@dataclass
class ModuleFacts:
    name: str
    is_package: bool
    bindings: dict[str, Binding] = field(default_factory=dict)
    stars: list[tuple[str, str]] = field(default_factory=list)  # star-imported (absolute, spelled)
    uses: set[str] = field(default_factory=set)  # dotted names the code reads (not imports)
    defs: dict[str, set[str]] = field(default_factory=dict)  # function -> dotted names it calls
    applications: list[Application] = field(default_factory=list)
    imported: set[str] = field(default_factory=set)  # last parts of the names imports name
    multi_device_api: str | None = None  # the first multi-device API the code names
    patched_internal: str | None = None  # the legacy internal the code names (outside_call_p)

    @property
    def names_in_code(self) -> set[str]:
        """The last part of every dotted name the code reads or imports (`pmap` for
        `jax.pmap`): the words a check for an API may look for, never in strings."""
        return {use.rpartition(".")[2] for use in self.uses} | self.imported

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition(".")[0]

    def absolute(self, module: str | None, level: int) -> str:
        """The absolute name of `from <level dots><module> import ...` written here."""
        if not level:
            return module or ""
        parts = self.package.split(".") if self.package else []
        parts = parts[: len(parts) - (level - 1)] if level > 1 else parts
        return ".".join([*parts, *([module] if module else [])])


def dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def facts_of(tree: ast.Module, name: str, is_package: bool) -> ModuleFacts:
    facts = ModuleFacts(name, is_package)
    _bind(facts, tree.body)
    _walk(facts, tree)
    return facts


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _walk(facts: ModuleFacts, tree: ast.Module) -> None:
    """One pass over the module: the dotted names its code reads (each chain once, from its
    outermost node), what each module-level function and method calls, the transformations
    applied, the APIs named."""
    # (node, the function whose calls it is part of: a module-level def or `Class.method`)
    stack: list[tuple[ast.AST, set[str] | None]] = [(node, None) for node in tree.body]
    while stack:
        node, calls = stack.pop()
        if isinstance(node, (ast.Name, ast.Attribute)):
            found = dotted(node)
            if found is not None:
                if not isinstance(node.ctx, ast.Store):
                    _use(facts, found)
                continue  # (the chain's inner nodes are parts of this name)
        elif isinstance(node, ast.alias):
            last = node.name.rpartition(".")[2]
            facts.imported.add(last)
            _multi_device(facts, last)
            continue
        elif isinstance(node, ast.Call):
            application = _application(node)
            if application is not None:
                facts.applications.append(application)
            if calls is not None:
                # (a function passed as an argument may be called by the callee)
                calls.update(n for part in (node.func, *node.args) if (n := dotted(part)))
        elif isinstance(node, _DEFS):
            for decorator in node.decorator_list:
                application = _decorator_application(decorator, node)
                if application is not None:
                    facts.applications.append(application)
            if calls is None:
                calls = facts.defs.setdefault(node.name, set())
        elif isinstance(node, ast.ClassDef) and calls is None:
            for item in node.body:
                if isinstance(item, _DEFS):
                    method = facts.defs.setdefault(f"{node.name}.{item.name}", set())
                    stack.append((item, method))
                else:
                    stack.append((item, None))
            stack.extend((child, None) for child in (*node.bases, *node.decorator_list))
            continue
        stack.extend((child, calls) for child in ast.iter_child_nodes(node))


def _use(facts: ModuleFacts, found: str) -> None:
    facts.uses.add(found)
    last = found.rpartition(".")[2]
    _multi_device(facts, last)
    if facts.patched_internal is None and last in PATCHED_INTERNALS:
        facts.patched_internal = last


def _multi_device(facts: ModuleFacts, last: str) -> None:
    if facts.multi_device_api is None and last in MULTI_DEVICE_APIS:
        facts.multi_device_api = last


def _bind(facts: ModuleFacts, body: list[ast.stmt]) -> None:
    for node in body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    facts.bindings[alias.asname] = ("module", alias.name)
                else:
                    root = alias.name.split(".")[0]
                    facts.bindings[root] = ("module", root)
        elif isinstance(node, ast.ImportFrom):
            module = facts.absolute(node.module, node.level)
            spelled = "." * node.level + (node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    facts.stars.append((module, spelled))
                else:
                    facts.bindings[alias.asname or alias.name] = (
                        "from",
                        module,
                        alias.name,
                        spelled,
                    )
        elif isinstance(node, ast.Assign) and isinstance(node.value, (ast.Name, ast.Attribute)):
            value = dotted(node.value)
            for target in node.targets:
                if isinstance(target, ast.Name) and value is not None:
                    facts.bindings[target.id] = ("alias", value)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            facts.bindings.pop(node.name, None)  # (a def after an import rebinds the name)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for part in ("body", "orelse", "finalbody"):
                _bind(facts, getattr(node, part, []))
            for handler in getattr(node, "handlers", []):
                _bind(facts, handler.body)


def _called(function: ast.AST) -> set[str]:
    """The dotted names `function` calls or hands on (a function passed as an argument may
    be called by the callee)."""
    found = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            for part in (node.func, *node.args):
                name = dotted(part)
                if name is not None:
                    found.add(name)
    return found


def _transform(func: ast.AST) -> str | None:
    name = dotted(func)
    if name is None:
        return None
    return TRANSFORMS.get(name.rpartition(".")[2])


def _application(call: ast.Call) -> Application | None:
    """`jax.pmap(f)`, `lax.scan(body, ...)`, `jax.jit(f, in_shardings=...)`,
    `functools.partial(jax.pmap, ...)(f)`, `jax.vmap(lambda x: f(x))`."""
    func = call.func
    if isinstance(func, ast.Call) and dotted(func.func) in ("partial", "functools.partial"):
        if func.args:
            inner = _transform(func.args[0])
            if inner is None:
                return None
            keywords = {k.arg for k in [*func.keywords, *call.keywords]}
            return _make(inner, call, call.args, keywords)
        return None
    kind = _transform(func)
    if kind is None:
        return None
    return _make(kind, call, call.args, {k.arg for k in call.keywords})


def _make(kind: str, node: ast.AST, args, keywords) -> Application:
    if kind == "jit" and keywords & _SHARDING_KEYWORDS:
        kind = "sharded jit"
    functions: set[str] = set()
    for argument in args:
        if isinstance(argument, ast.Lambda):
            functions |= _called(argument)
        else:
            name = dotted(argument)
            if name is not None:
                functions.add(name)
    return Application(kind, node.lineno, functions)


def _decorator_application(decorator: ast.AST, function: ast.AST) -> Application | None:
    """`@jax.pmap`, `@partial(jax.pmap, axis_name="i")`, `@jax.jit(...)` on a def."""
    target = ast.Name(function.name)
    if isinstance(decorator, ast.Call):
        if dotted(decorator.func) in ("partial", "functools.partial") and decorator.args:
            kind = _transform(decorator.args[0])
            keywords = {k.arg for k in decorator.keywords}
        else:
            kind = _transform(decorator.func)
            keywords = {k.arg for k in decorator.keywords}
    else:
        kind, keywords = _transform(decorator), set()
    if kind is None:
        return None
    application = _make(kind, decorator, [target], keywords)
    application.line = function.lineno
    return application


def spelled_name(module: str, name: str) -> str:
    """`module.name` as the codemod's scope analysis spells an imported name
    (hcmigrate.codemod.scopes: `.b` and `id_tap` give `.b.id_tap`, `..` gives `..id_tap`)."""
    return f"{module}{name}" if module.endswith(".") or not module else f"{module}.{name}"
