"""Which host function a recorded host call is: the user function it finally reached.

A migration may reach the legacy callback through a wrapper of its own: a lambda
(`lambda arg: tap(arg, ())`, `lambda arg: make_tap("scan")(arg, ())`), a helper function, a
`functools.partial` or a bound method. Such a wrapper's own identity says nothing; what counts
is the user function the host's data ends up in. The recorder notes, per host call, the user
functions the callback entered (`reached`) and those that received the host's very objects
(`receivers`); `functools.partial` and bound methods are unwrapped when the callback is
described (`callback.name`).

The recorder also follows the host's data from the callback through the wrappers that hand
it on (the codemod's numpy-arguments helpers, lambdas) to the user function the call finally
reached (`host`): a named function, or a lambda that passes the data to no other user function
(`lambda arg, _: SEEN.append(int(arg[0]))`, passed through a parameter and reached through the
codemod's `lambda arg: on_step(arg, ())`).

Two calls are of the same host function when the functions that received their data overlap
(or, for a callback that passes no data on, the functions they reached), or when they finally
reached the same function: equal qualified names, and for lambdas the same names referred to.
Traces without that information (recorded before it existed) fall back on names: equal
qualified names, or a lambda that refers to the other side's function by name; a trace without
`host` counts its callback as the function reached.
"""

from __future__ import annotations


# numpy's public subpackages: a function is named `numpy.<subpackage>.<name>` whatever module
# of it defines the function.
NUMPY_SUBPACKAGES = frozenset({"linalg", "fft", "random", "ma", "polynomial", "emath", "char"})


def strip_main(name: str) -> str:
    """A function's name as both sides can compare it: without `__main__.`, and numpy's by its
    public name. numpy moves its functions between private modules from release to release
    (`numpy.core.fromnumeric.cumsum` in 1.26, `numpy.cumsum` in 2.x; `numpy.linalg.linalg.norm`,
    `numpy.linalg._linalg.norm`), and the legacy reference runs numpy 1.26 where the candidate
    runs today's numpy."""
    if name.startswith("__main__."):
        return name.split(".", 1)[1]
    parts = name.split(".")
    if parts[0] == "numpy" and len(parts) > 2:
        head = parts[:2] if parts[1] in NUMPY_SUBPACKAGES else parts[:1]
        return ".".join(head + parts[-1:])
    return name


def callback_key(ev: dict) -> str:
    """The callback's own name (qualified), or the API for prints."""
    cb = ev.get("callback")
    if ev["class"] == "print" or not cb:
        return ev["api"].replace("compat.", "")
    return cb["name"]


def display_name(ev: dict) -> str:
    """How a report names an event's host function: the function its data reached when the
    callback itself is a lambda (`trace.<locals>._tap`, not `step.<locals>.<lambda>`)."""
    cb = ev.get("callback")
    if ev["class"] != "print" and cb and cb.get("lambda"):
        host = ev.get("host")
        if host and not host.get("lambda"):
            # where the data was followed to, not the last function that got some of it (a
            # host function handing part of its argument to a helper: cola's update_info
            # calling errorfn(arg) was named `error`)
            return strip_main(host["name"])
        if ev.get("receivers"):
            return strip_main(ev["receivers"][-1])
        if ev.get("host"):
            return strip_main(ev["host"]["name"])
    return strip_main(callback_key(ev))


def _named(functions) -> set[str]:
    return {strip_main(f) for f in functions if "<lambda>" not in f}


def host_functions(ev: dict) -> set[str]:
    """The user functions a host call landed in (empty when the trace cannot tell)."""
    cb = ev.get("callback")
    if ev["class"] == "print" or not cb:
        return set()
    static = set() if cb.get("lambda") else {strip_main(cb["name"])}
    if ev.get("receivers"):
        return static | _named(ev["receivers"])
    return static | _named(ev.get("reached", ()))


def callbacks_compatible(a: dict | None, b: dict | None) -> bool:
    """By name only: equal qualified names, or a lambda referring to the other's function
    (or two lambdas referring to the same names)."""
    if not a or not b:
        return True
    if not a["lambda"] and not b["lambda"]:
        return strip_main(a["name"]) == strip_main(b["name"])
    if a["lambda"] and b["lambda"]:
        ra, rb = set(a.get("refs", ())), set(b.get("refs", ()))
        return ra <= rb or rb <= ra
    lam, named = (a, b) if a["lambda"] else (b, a)
    return named["simple"] in set(lam.get("refs", ()))


def _function_key(f: dict) -> tuple:
    """A function as both sides can name it: its qualified name, and for a lambda (many share
    one qualified name) the names it refers to."""
    return strip_main(f["name"]), tuple(f.get("refs", ())) if f.get("lambda") else None


def final_function(ev: dict) -> dict | None:
    """The user function a host call finally reached (`host`); for a call whose trace does not
    tell (recorded before `host` existed, or a callback that reached no user code: a numpy or
    builtin function), the callback itself."""
    return ev.get("host") or ev.get("callback")


def same_host_function(e: dict, g: dict) -> bool:
    """Do two non-print events reach the same user function?"""
    fe, fg = host_functions(e), host_functions(g)
    if fe and fg:
        same = bool(fe & fg)
    else:
        same = callbacks_compatible(e.get("callback"), g.get("callback"))
    if same:
        return True
    a, b = final_function(e), final_function(g)
    return bool(a and b) and _function_key(a) == _function_key(b)
