"""Host functions given to legacy calls: how to adapt them, and whether they are pure.

Legacy called `tap(arg, transforms)` (`, device=dev` with tap_with_device) and
`callback(arg)` (`, device=dev` with call_with_device). Modern callbacks call `f(arg)`.
An unused `transforms`/`device` parameter of a lambda or module-local function is dropped;
anything else is wrapped (`lambda arg: tap(arg, ())`) or, when the device is really used,
sent to the compat runtime.
"""

from __future__ import annotations

import ast
import builtins
import functools
from dataclasses import dataclass, field
from typing import Literal

import libcst as cst

from hcmigrate.facts import (
    ARRAY_AGNOSTIC_BUILTINS,
    ARRAY_AGNOSTIC_METHODS,
    ARRAY_AGNOSTIC_PREFIXES,
    IMPURE_MODULE_PREFIXES,
    NOT_ARRAY_AGNOSTIC,
    PURE_BUILTINS,
    PURE_METHODS,
    PURE_MODULE_PREFIXES,
    SCALAR_CONVERSIONS,
)
from hcmigrate.codemod.walk import descendants, names_used, not_a_read
from hcmigrate.rules.nodes import constant_index, literal_value, parse


Mode = Literal["as_is", "edit", "wrap", "compat"]
_IMPURE_NODES = (cst.Yield, cst.Await, cst.NamedExpr)  # a generator, a coroutine, an assignment


@dataclass
class Adaptation:
    mode: Mode
    drop: tuple[str, ...] = ()  # parameters to remove (mode == "edit")
    transforms_used: bool = False  # the function reads `transforms` (it now always gets ())
    reason: str = ""  # (follows "the tap function" / "the callback")


def adapt(
    params: cst.Parameters, body: cst.CSTNode, *, passes_transforms: bool, passes_device: bool
) -> Adaptation:
    """How to make a function with `params` callable as `f(arg)`."""
    used = names_used(body)
    positional = list(params.posonly_params) + list(params.params)
    star = params.star_arg if isinstance(params.star_arg, cst.Param) else None
    drop: list[str] = []

    rest = positional[1:]
    if not positional and star is None:
        return Adaptation("wrap", reason="takes no argument")
    if not positional:
        # `lambda *args: ...`: modern passes (arg,) instead of (arg, transforms)
        if star.name.value in used and passes_transforms:
            return Adaptation("compat", transforms_used=True, reason="reads its *args")
    deleted_only = False  # (`del transforms`: the parameter stays, called with ())
    if passes_transforms:
        if rest:
            transforms = rest.pop(0)
            name = transforms.name.value
            if name in used and not (deleted_only := _only_deleted(body, name)):
                return Adaptation("compat", transforms_used=True, reason="reads `transforms`")
            if not deleted_only:
                drop.append(name)
        elif star is not None and star.name.value in used:
            return Adaptation("compat", transforms_used=True, reason="reads its *args")
    device_param = None
    if passes_device:
        for p in rest + list(params.kwonly_params):
            if p.name.value == "device":
                device_param = p
        if device_param is not None:
            if device_param.name.value in used:
                return Adaptation("compat", reason="uses the `device` argument")
            drop.append("device")
            rest = [p for p in rest if p is not device_param]
        elif isinstance(params.star_kwarg, cst.Param):
            if params.star_kwarg.name.value in used:
                return Adaptation("compat", reason="may read `device` from **kwargs")
        else:
            return Adaptation("wrap", reason="has no `device` parameter")
    if any(p.default is None for p in rest):
        return Adaptation("wrap", reason="takes more required arguments than the tap value")
    if deleted_only:
        return Adaptation("wrap", reason="deletes `transforms` (`del`), so it keeps that parameter")
    if not drop:
        return Adaptation("as_is")
    return Adaptation("edit", drop=tuple(drop))


def _only_deleted(body: cst.CSTNode, name: str) -> bool:
    """Is every use of `name` in `body` a `del name` (chex's `del transforms`), no read?"""
    deleted = 0
    for node in descendants(body):
        if isinstance(node, cst.Del):
            target = node.target
            targets = (
                [e.value for e in target.elements] if isinstance(target, cst.Tuple) else [target]
            )
            deleted += sum(isinstance(t, cst.Name) and t.value == name for t in targets)
    total = sum(1 for n in descendants(body) if type(n) is cst.Name and n.value == name)
    return 0 < deleted == total


def drop_params(params: cst.Parameters, drop: tuple[str, ...]) -> cst.Parameters:
    def keep(ps):
        return [p for p in ps if p.name.value not in drop]

    kwonly = keep(params.kwonly_params)
    star_arg = params.star_arg
    if not kwonly and isinstance(star_arg, cst.ParamStar):
        star_arg = (
            cst.MaybeSentinel.DEFAULT
        )  # a bare `*` with no keyword-only parameter left is invalid
    new = params.with_changes(
        posonly_params=keep(params.posonly_params),
        params=keep(params.params),
        kwonly_params=kwonly,
        star_arg=star_arg,
    )
    # Re-flow commas so no dangling separator stays behind.
    groups = [
        ("posonly_params", new.posonly_params),
        ("params", new.params),
        ("kwonly_params", new.kwonly_params),
    ]
    for attr, group in groups:
        if group:
            last = group[-1]
            if not _has_more_after(new, attr):
                kept = last.with_changes(comma=cst.MaybeSentinel.DEFAULT)
                after = last.comma.whitespace_after if isinstance(last.comma, cst.Comma) else None
                if isinstance(after, cst.ParenthesizedWhitespace) and (
                    after.first_line.comment is not None
                    or any(line.comment is not None for line in after.empty_lines)
                ):
                    # `def tap(a,  # about a` loses its comma, never its comment
                    kept = kept.with_changes(whitespace_after_param=after)
                group = [*group[:-1], kept]
                new = new.with_changes(**{attr: group})
    return new


def _has_more_after(params: cst.Parameters, attr: str) -> bool:
    order = ["posonly_params", "params", "star_arg", "kwonly_params", "star_kwarg"]
    for later in order[order.index(attr) + 1 :]:
        value = getattr(params, later)
        if isinstance(value, (list, tuple)) and value:
            return True
        if isinstance(value, (cst.Param, cst.ParamStar)):
            return True
    return False


# --- purity -------------------------------------------------------------------------------


@dataclass
class PurityChecker:
    """Is a host function *visibly* free of side effects? (Then `call` may become
    pure_callback, which the compiler may drop or repeat.) Conservative: unknown means no."""

    qualified_names: callable  # node -> set[str]
    resolve_function: callable  # Name node -> FunctionDef | None
    mutable_state: frozenset[str] = frozenset()  # module-level names something changes
    # also accept `raise`/`assert` of values computed purely (a host check: its only effect is
    # the error it may raise, which no other host call's order can change)
    allow_raise: bool = False
    _seen: set = field(default_factory=set)

    def function(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Lambda):
            return not self._reads_state(node.body) and self.expression(
                node.body, local=names_used(node.params)
            )
        names = self.qualified_names(node)
        if names and all(self._pure_qualified(n) for n in names):
            return True
        if isinstance(node, cst.Name):
            fdef = self.resolve_function(node)
            if fdef is not None and id(fdef) not in self._seen:
                self._seen.add(id(fdef))
                return (
                    not fdef.decorators
                    and not self._reads_state(fdef.body)
                    and self.statements(fdef.body.body, local=names_used(fdef.params))
                )
        if isinstance(node, cst.Call) and self._is_partial(node.func):
            return (
                bool(node.args)
                and self.function(node.args[0].value)
                and all(self.expression(a.value, set()) for a in node.args[1:])
            )
        return False

    def _reads_state(self, body: cst.CSTNode) -> bool:
        """Does the body read module state that something changes (a tap may have just
        written it: legacy ran the tap first, a pure_callback may run before it)?"""
        return bool(self.mutable_state & names_used(body))

    def _is_partial(self, func: cst.BaseExpression) -> bool:
        return "functools.partial" in self.qualified_names(func)

    @staticmethod
    def _pure_qualified(name: str) -> bool:
        if name.startswith(IMPURE_MODULE_PREFIXES):
            return False
        return (
            name.startswith(PURE_MODULE_PREFIXES)
            or (name.startswith("builtins.") and name[9:] in PURE_BUILTINS)
            or name in PURE_BUILTINS
        )

    def statements(self, body, local: set[str]) -> bool:
        local = set(local)
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign):
                        for t in small.targets:
                            if not self._local_target(t.target):
                                return False
                            local |= names_used(t.target)
                        if not self.expression(small.value, local):
                            return False
                    elif isinstance(small, cst.AnnAssign):
                        if not self._local_target(small.target) or (
                            small.value and not self.expression(small.value, local)
                        ):
                            return False
                        local |= names_used(small.target)
                    elif isinstance(small, cst.AugAssign):
                        if not isinstance(small.target, cst.Name) or not self.expression(
                            small.value, local
                        ):
                            return False
                    elif isinstance(small, cst.Return):
                        if small.value is not None and not self.expression(small.value, local):
                            return False
                    elif isinstance(small, cst.Expr) and isinstance(
                        small.value, (cst.SimpleString, cst.ConcatenatedString)
                    ):
                        continue  # docstring
                    elif isinstance(small, cst.Pass):
                        continue
                    elif self.allow_raise and isinstance(small, cst.Raise):
                        if not all(
                            e is None or self._raised(e, local) for e in (small.exc, small.cause)
                        ):
                            return False
                    elif self.allow_raise and isinstance(small, cst.Assert):
                        if not all(
                            e is None or self.expression(e, local) for e in (small.test, small.msg)
                        ):
                            return False
                    else:
                        return False
            elif isinstance(stmt, cst.If):
                if not self.expression(stmt.test, local) or not self.statements(
                    stmt.body.body, local
                ):
                    return False
                if stmt.orelse is not None:
                    orelse = stmt.orelse
                    if isinstance(orelse, cst.If):
                        if not self.statements([orelse], local):
                            return False
                    elif not self.statements(orelse.body.body, local):
                        return False
            elif isinstance(stmt, cst.For):
                local |= names_used(stmt.target)
                if (
                    not self.expression(stmt.iter, local)
                    or not self.statements(stmt.body.body, local)
                    or stmt.orelse
                ):
                    return False
            else:
                return False
        return True

    def _raised(self, exc: cst.BaseExpression, local: set[str]) -> bool:
        """`RuntimeError(msgs[i.item()])`: a builtin exception made of pure values."""
        if isinstance(exc, cst.Call) and isinstance(exc.func, cst.Name):
            kind = getattr(builtins, exc.func.value, None)
            if (
                isinstance(kind, type)
                and issubclass(kind, BaseException)
                and self.qualified_names(exc.func) <= {f"builtins.{exc.func.value}"}
            ):
                return all(self.expression(a.value, local) for a in exc.args)
        return isinstance(exc, cst.Name) and exc.value in local

    @staticmethod
    def _local_target(target: cst.BaseExpression) -> bool:
        if isinstance(target, cst.Name):
            return True
        if isinstance(target, (cst.Tuple, cst.List)):
            return all(isinstance(e.value, cst.Name) for e in target.elements)
        return False

    def expression(self, node: cst.CSTNode, local: set[str]) -> bool:
        """No yield, await or `:=` in `node`, and every function it calls is pure (the first
        impure one decides: any False makes the whole check False)."""
        for n in descendants(node):
            kind = type(n)
            if kind is cst.Call:
                func = n.func
                if type(func) is cst.Attribute and func.attr.value in PURE_METHODS:
                    if not self.qualified_names(func):
                        continue  # method call on a local value, e.g. x.astype(...)
                    if type(func.value) is cst.Name and func.value.value in local:
                        continue
                if not self.function(func):
                    return False
            elif kind in _IMPURE_NODES:
                return False
        return True


# --- what the host function receives -------------------------------------------------------


def converts_its_arguments(
    params: cst.Parameters, body: cst.CSTNode, is_array_agnostic: callable
) -> bool:
    """Does the function use its parameters only as direct arguments of functions that take
    jax.Array as they take numpy arrays (`lambda v: np.tanh(v)`, an item of one too:
    `lambda d: np.random.f(d['num'], d['den'])`, a leaf of the tree or a part of the array,
    handed on as it comes), or through methods that give the same Python value for either
    (`v.item()`, `v.tolist()`)? Then it cannot tell which one it got, and needs no
    conversion."""
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    if isinstance(params.star_arg, cst.Param):
        names.add(params.star_arg.name.value)
    converted: set[int] = set()
    not_reads: set[int] = set()  # (`f(a=...)`'s keyword, `obj.a`'s attribute: names, not reads)
    uses = []
    for node in descendants(body):
        if (name_only := not_a_read(node)) is not None:
            not_reads.add(id(name_only))
        if isinstance(node, cst.Call) and is_array_agnostic(node.func):
            converted.update(
                id(v)
                for a in node.args
                if not _writes_into(a) and (v := _handed_on(a.value)) is not None
            )
        elif (
            isinstance(node, cst.Call)
            and not node.args
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in ARRAY_AGNOSTIC_METHODS
            and isinstance(node.func.value, cst.Name)
        ):
            converted.add(id(node.func.value))
        elif isinstance(node, cst.Name) and node.value in names and id(node) not in not_reads:
            uses.append(node)
    return all(id(use) in converted for use in uses)


def scalar_conversions(
    params: cst.Parameters, body: cst.CSTNode, qualified: callable
) -> list[cst.Call]:
    """`int(v)`, `float(v["loss"])`, `complex(v[0])` in a host function, of its argument or
    a constant part of it (facts.SCALAR_CONVERSIONS: legacy's numpy 1.26 took a one-element
    array of any shape there, numpy 2 and jax.Array take only 0-d ones). None where the
    function rebinds its argument's name (what it converts may then be no array)."""
    positional = [*params.posonly_params, *params.params]
    if not positional:
        return []
    name = positional[0].name.value
    targets = (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.CompFor)
    found = []
    for node in descendants(body):
        if isinstance(node, targets) and name in names_used(node.target):
            return []
        if isinstance(node, (cst.AsName, cst.Param)) and name in names_used(node):
            return []  # (`with ... as v`, `except E as v`, a nested function's parameter `v`)
        if (
            isinstance(node, cst.Call)
            and len(node.args) == 1
            and node.args[0].keyword is None
            and not node.args[0].star
            and (value := _handed_on(node.args[0].value)) is not None
            and value.value == name
            and qualified(node.func) <= SCALAR_CONVERSIONS
            and qualified(node.func)
        ):
            found.append(node)
    return found


def with_item(conversion: cst.Call) -> cst.Call:
    """`int(v)` -> `int(v.item())` (see scalar_conversions)."""
    (arg,) = conversion.args
    item = cst.Call(cst.Attribute(arg.value, cst.Name("item")))
    return conversion.with_changes(args=[arg.with_changes(value=item)])


def _writes_into(arg: cst.Arg) -> bool:
    """`out=x` of a numpy function: it writes into `x`, which a jax.Array refuses ("return
    arrays must be of ArrayType")."""
    return arg.keyword is not None and arg.keyword.value == "out"


def _handed_on(value: cst.BaseExpression) -> cst.Name | None:
    """The name an argument hands on as it is: `v`, or `v` of `v['key']` / `v[0]` (a
    constant index)."""
    if isinstance(value, cst.Name):
        return value
    if (
        isinstance(value, cst.Subscript)
        and isinstance(value.value, cst.Name)
        and constant_index(value) is not None
    ):
        return value.value
    return None


_MUTATING_METHODS = frozenset(
    {"append", "extend", "update", "add", "pop", "clear", "insert", "remove", "setdefault"}
)


@functools.lru_cache(maxsize=8)
def mutable_module_state(text: str) -> frozenset[str]:
    """Module-level names that some code of the module changes: declared `global` in a
    function, or changed in place (`NAME[k] = v`, `NAME.attr = v`, `NAME.append(v)`, ...)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return frozenset()
    module_names = set()
    for statement in tree.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else []
        if isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
            targets = [statement.target]
        module_names |= {t.id for t in targets if isinstance(t, ast.Name)}
    changed = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            changed.update(node.names)
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name):
                changed.add(node.value.id)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MUTATING_METHODS
            and isinstance(node.func.value, ast.Name)
        ):
            changed.add(node.func.value.id)
    return frozenset(module_names & changed)


def adapted_function(
    site, adaptation: Adaptation, pass_transforms: bool, fresh_name
) -> cst.BaseExpression:
    """The site's host function made callable as `f(arg)` (hcmigrate.rules.context.RuleContext
    .adapted_function): a lambda loses the parameters its adaptation drops; a wrapped function
    is called by a lambda with what legacy passed it (`()` for transforms, `device=None`)."""
    key = "tap_func" if site.function == "id_tap" else "callback_func"
    func = site.args[key]
    if adaptation.mode == "edit" and isinstance(func, cst.Lambda):
        return func.with_changes(params=drop_params(func.params, adaptation.drop))
    if adaptation.mode == "wrap":
        device_flag = "tap_with_device" if site.function == "id_tap" else "call_with_device"
        param = "arg" if "arg" not in names_used(func) else fresh_name("arg")
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


def array_agnostic(resolver, func: cst.BaseExpression) -> bool:
    """A numpy/scipy/math function or one of facts.ARRAY_AGNOSTIC_BUILTINS: jax.Array and
    numpy arrays give it the same result."""
    names = resolver.qualified(func)
    return bool(names) and all(
        (name.startswith(ARRAY_AGNOSTIC_PREFIXES) and name not in NOT_ARRAY_AGNOSTIC)
        or name in ARRAY_AGNOSTIC_BUILTINS
        for name in names
    )


def takes_arrays_as_they_come(resolver, func: cst.BaseExpression) -> bool:
    """A numpy/scipy function, or a function that only hands its arguments to one: it needs no
    numpy copies of its arguments."""
    agnostic = functools.partial(array_agnostic, resolver)
    if agnostic(func):
        return True
    if isinstance(func, cst.Lambda):
        return converts_its_arguments(func.params, func.body, agnostic)
    if isinstance(func, cst.Name):
        fdef = resolver.function_def(func)
        if fdef is not None and not fdef.decorators:
            # (one answer per def, kept by the module's resolver: a module may tap with the
            # same function thousands of times)
            known = resolver.__dict__.setdefault("_converts_its_arguments", {})
            if fdef not in known:
                known[fdef] = converts_its_arguments(fdef.params, fdef.body, agnostic)
            return known[fdef]
    return False


def has_no_leaves(arg: cst.BaseExpression | None) -> bool:
    """Is the argument a literal tree without leaves (`None`, `()`, `[]`, `{}`, nested)? The
    host function then gets no array at all, numpy or not."""
    if isinstance(arg, cst.Name):
        return arg.value == "None"
    if isinstance(arg, (cst.Tuple, cst.List)):
        return all(isinstance(e, cst.Element) and has_no_leaves(e.value) for e in arg.elements)
    if isinstance(arg, cst.Dict):
        return all(isinstance(e, cst.DictElement) and has_no_leaves(e.value) for e in arg.elements)
    return False


def returns_nothing(resolver, func: cst.BaseExpression) -> bool:
    """Does the host function visibly return None: a module function without decorators
    whose `return`s give no value (and that does not yield), or a lambda that calls one, or
    `print`?"""
    if isinstance(func, cst.Lambda):
        return isinstance(func.body, cst.Call) and returns_nothing(resolver, func.body.func)
    if resolver.qualified(func) == {"builtins.print"}:
        return True
    fdef = resolver.function_def(func) if isinstance(func, cst.Name) else None
    if fdef is None or fdef.decorators:
        return False
    nested = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
    for node in _own_nodes(fdef.body, nested):
        if isinstance(node, (cst.Yield, cst.Await)) or (
            isinstance(node, cst.Return) and node.value is not None
        ):
            return False
    return True


def _own_nodes(node: cst.CSTNode, nested):
    """The nodes under `node`, not those of functions or classes defined inside it."""
    for child in node.children:
        yield child
        if not isinstance(child, nested):
            yield from _own_nodes(child, nested)
