"""HCB014: host_callback code in a branch kept for old JAX is left as it is.

`if jax.__version__ < "0.4.26": hcb.id_tap(...) else: io_callback(...)`, or the `else:` of a
`>=` test: the branch runs only on the JAX the project keeps it for, where host_callback is
there; rewriting it would change what that JAX runs (`grad` of an io_callback, which jax
0.4.30 refuses) and add imports every JAX loads. The codemod leaves the branch, imports
included (hcmigrate.codemod.version_guards), and says so: a `note` (nothing rewritten,
nothing to do) where every JAX below the bound has host_callback, `manual` where the bound
lets in releases whose host_callback is a stub (jax 0.4.35 on) or where the project's floor
(`--target-jax`, its `jax` requirement) means the branch never runs. The floor is the one the
project declares: where the run raises it (to what the written code of the whole project
needs, known after every module), the project layer says that the raised floor excludes a
branch (hcmigrate.cli, with branch_bound).
"""

from __future__ import annotations

import re

from hcmigrate.diagnostics import Level
from hcmigrate.facts import HOST_CALLBACK_STUB_SINCE
from hcmigrate.rules.context import ModuleSite, ReportContext
from hcmigrate.rules.spec import Example, ModuleEnd, Rule, handles

LEGACY_BRANCH = Rule(
    code="HCB014",
    name="legacy-jax-branch",
    level=Level.NOTE,
    legacy='if jax.__version__ < "0.4.26": hcb.id_tap(...)\nelse: io_callback(...)',
    modern="(left as it is)",
    summary="A branch that runs only below a JAX version keeps its host_callback code for that "
    "JAX; reported where the bound or the project's floor makes it fail or never run.",
    examples=(
        Example(
            title="the legacy branch of a version guard",
            before="""\
import jax
from jax.experimental import io_callback

if jax.__version__ < "0.4.26":
    from jax.experimental import host_callback as hcb

    def log(x):
        hcb.id_tap(lambda v, _: print(v), x)
else:

    def log(x):
        io_callback(print, None, x, ordered=True)
""",
            after="""\
import jax
from jax.experimental import io_callback

if jax.__version__ < "0.4.26":
    from jax.experimental import host_callback as hcb

    def log(x):
        hcb.id_tap(lambda v, _: print(v), x)
else:

    def log(x):
        io_callback(print, None, x, ordered=True)
""",
            diagnostics=(
                "4:1 HCB014 [note] left as it is: this branch runs only on JAX < 0.4.26, "
                "which has host_callback",
            ),
        ),
    ),
)


@handles(ModuleEnd(), reports=(LEGACY_BRANCH,))
def report_kept_branches(site: ModuleSite, ctx: ReportContext) -> None:
    # (the declared floor: a target raised to what the rewrite writes for is not yet the
    # project's floor, which rises only to what the written code needs)
    target = site.options.declared_jax or site.options.target_jax
    for branch, _ in site.kept_branches:
        line = branch.test_line  # (the guard)
        below = f"JAX {branch.shown_bound}"
        never = target is not None and excluded_by(target, branch.bound, branch.inclusive)
        stub = branch.bound > HOST_CALLBACK_STUB_SINCE or (
            branch.bound == HOST_CALLBACK_STUB_SINCE and branch.inclusive
        )
        if never:
            message = never_runs_message(branch.shown_bound, target, "the project's floor")
            ctx.report(LEGACY_BRANCH, None, message, level=Level.MANUAL, line=line)
        elif stub:
            stub_from = ".".join(map(str, HOST_CALLBACK_STUB_SINCE))
            message = (
                f"left as it is: this branch runs on {below}, and from jax {stub_from} "
                "host_callback is a stub that raises NotImplementedError: the branch fails "
                f"on jax {stub_from} up to the bound; raise the project's `jax` floor to the "
                "bound, or exclude those releases from its requirement"
            )
            ctx.report(LEGACY_BRANCH, None, message, level=Level.MANUAL, line=line)
        else:
            ctx.report(
                LEGACY_BRANCH,
                None,
                f"left as it is: this branch runs only on {below}, which has host_callback",
                line=line,
            )


_KEPT_FOR = re.compile(
    r"left as it is: this branch runs only on JAX (<=?) (\d+(?:\.\d+)*), which has"
)


def branch_bound(message: str) -> tuple[tuple[int, ...], bool] | None:
    """(bound, inclusive) of the branch an HCB014 note keeps for old JAX, else None."""
    match = _KEPT_FOR.match(message)
    if match is None:
        return None
    return tuple(int(p) for p in match.group(2).split(".")), match.group(1) == "<="


def excluded_by(floor: tuple[int, ...], bound: tuple[int, ...], inclusive: bool) -> bool:
    """Does a project floor `floor` keep out every JAX the branch runs on?"""
    return tuple(floor) > bound if inclusive else tuple(floor) >= bound


def never_runs_message(shown_bound: str, floor: tuple[int, ...], whose: str) -> str:
    return (
        f"this branch runs only on JAX {shown_bound}, which {whose} ("
        f"{'.'.join(map(str, floor))}) excludes: its host_callback code never runs; remove "
        "the branch"
    )
