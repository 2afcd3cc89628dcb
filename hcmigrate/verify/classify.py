"""Why did the candidate fail? Separating the migration's doing from the rest.

Real projects that used host_callback also use other JAX APIs that current JAX removed
(`jax.tree_map`, `jax.random.PRNGKeyArray`, ...), or import packages the candidate's
environment lacks. Such a failure says nothing about the migrated host callbacks: the report
names it apart (exit status 3 when nothing else differs) with the API, the JAX version that
removed it and what replaces it. A candidate that still imports `jax.experimental.host_callback`
is the migration's business (an unfinished migration) and stays a difference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# name -> (the JAX version that removed it, what to use instead). Versions from JAX's change
# log; where it does not say, the range in which the name disappeared (checked by importing it
# under jax 0.4.30, 0.6.2 and 0.10.2).
REMOVED_JAX_APIS: dict[str, tuple[str, str]] = {
    **{
        f"jax.tree_{n}": ("0.6.0", f"jax.tree.{n} (JAX >= 0.4.25) or jax.tree_util.tree_{n}")
        for n in ("map", "flatten", "leaves", "structure", "transpose", "unflatten", "reduce")
    },
    "jax.tree_multimap": ("0.3.16", "jax.tree_util.tree_map"),
    "jax.random.PRNGKeyArray": ("a release before 0.4.30", "jax.Array"),
    "jax.random.KeyArray": ("a release before 0.4.30", "jax.Array"),
    "jax.random.shuffle": ("0.4.31", "jax.random.permutation(..., independent=True)"),
    "jax.experimental.maps": ("0.4.31", "jax.experimental.shard_map or jax.vmap"),
    "jax.xla_computation": ("0.4.34", "jax.jit(f).lower(*args).compiler_ir('hlo')"),
    "jax.sharding.XLACompatibleSharding": ("0.4.34", "jax.sharding.Sharding"),
    "jax.clear_backends": ("a release between 0.4.31 and 0.6.2", "jax.clear_caches"),
    "jax.numpy.round_": ("a release between 0.4.32 and 0.6.2", "jax.numpy.round"),
    "jax.core.Primitive": ("a release between 0.4.31 and 0.6.2", "jax.extend.core.Primitive"),
    "jax.core.ConcreteArray": ("a release between 0.4.31 and 0.6.2", "jax.core.get_aval"),
    "jax.experimental.array_api": ("a release between 0.4.32 and 0.6.2", "jax.numpy"),
    "jax.util": ("0.7.0", "your own helpers (jax.util was internal)"),
    "jax.lib.xla_bridge": ("a release between 0.6.2 and 0.10", "jax.extend.backend"),
}
HOST_CALLBACK = "jax.experimental.host_callback"

_ATTRIBUTE = re.compile(r"module '(?P<mod>[\w.]+)' has no attribute '(?P<name>\w+)'")
_IMPORT_NAME = re.compile(r"cannot import name '(?P<name>\w+)' from '(?P<mod>[\w.]+)'")
_NO_MODULE = re.compile(r"No module named '(?P<mod>[\w.]+)'")


@dataclass
class Failure:
    kind: str  # "removed-jax-api" | "missing-module" | "host-callback-left"
    api: str  # the dotted name (or module) that is missing
    removed_in: str | None = None
    use_instead: str | None = None

    def describe(self, candidate_jax: str | None = None) -> str:
        where = f"JAX {candidate_jax}" if candidate_jax else "current JAX"
        if self.kind == "host-callback-left":
            return (
                f"the candidate still uses {HOST_CALLBACK}, which {where} no longer has "
                "(removed in JAX 0.4.35): the migration is not finished there"
            )
        if self.kind == "missing-module":
            return (
                f"the candidate's environment cannot import `{self.api}` (a dependency the "
                "reference has): install it where the candidate runs (--candidate-python)"
            )
        text = f"`{self.api}` is not in {where}"
        if self.removed_in:
            text += f" (removed in JAX {self.removed_in})"
        if self.use_instead:
            text += f"; use {self.use_instead}"
        return text + ": not caused by the host_callback migration"

    @property
    def unrelated(self) -> bool:
        return self.kind != "host-callback-left"


def _known(name: str) -> tuple[str, tuple[str, str] | None]:
    """The table entry for a dotted name or one of its parents (a removed module)."""
    parts = name.split(".")
    for n in range(len(parts), 1, -1):
        key = ".".join(parts[:n])
        if key in REMOVED_JAX_APIS:
            return key, REMOVED_JAX_APIS[key]
    return name, None


def classify(message: str | None) -> Failure | None:
    """The failure a candidate error message shows, when it is one of the kinds above."""
    if not message:
        return None
    for pattern in (_ATTRIBUTE, _IMPORT_NAME):
        m = pattern.search(message)
        if m:
            name = f"{m.group('mod')}.{m.group('name')}"
            return _jax_failure(name) if name.split(".")[0] == "jax" else None
    m = _NO_MODULE.search(message)
    if m:
        module = m.group("mod")
        if module.split(".")[0] == "jax":
            return _jax_failure(module)
        if module.split(".")[0] in ("compat", "hcmigrate_compat"):
            return None  # the compat runtime missing is the migration's business
        return Failure("missing-module", module)
    return None


def _jax_failure(name: str) -> Failure:
    if name == HOST_CALLBACK or name.startswith(HOST_CALLBACK + "."):
        return Failure("host-callback-left", HOST_CALLBACK)
    key, entry = _known(name)
    if entry is None:
        return Failure("removed-jax-api", name)
    return Failure("removed-jax-api", key, *entry)
