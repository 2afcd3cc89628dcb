"""Large modules cost in proportion to their size (issue 38): memory measured with tracemalloc
(deterministic, unlike time on a shared machine), a module ten times larger must not take
anything like a hundred times the memory (what a cost growing with the square would take)."""

from __future__ import annotations

import tracemalloc

from hcmigrate import migrate_source
from hcmigrate.api import Options
from hcmigrate.codemod.scopes import ScopeAnalysis

HEAD = (
    "import jax\nimport jax.numpy as jnp\nfrom jax.experimental import host_callback as hcb\n\n\n"
    "def _log(value, transforms):\n    print('log', value)\n\n\n@jax.jit\ndef run(x):\n"
)


def _one_function(lines: int, every: int) -> str:
    """One jitted function of `lines` statements rebinding `x`, a tap every `every` lines."""
    body = [
        f"    x = hcb.id_tap(_log, x + {k})\n" if k % every == 0 else f"    x = jnp.sin(x) * {k}\n"
        for k in range(lines)
    ]
    return HEAD + "".join(body) + "    return x\n"


def _peak(work, *args) -> int:
    tracemalloc.start()
    try:
        work(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_name_rebound_on_every_line_costs_memory_in_proportion():
    small, large = _one_function(300, 1_000_000), _one_function(3000, 1_000_000)
    ScopeAnalysis(small)  # (first-use caches)
    ratio = _peak(ScopeAnalysis, large) / _peak(ScopeAnalysis, small)
    assert ratio < 15, ratio  # (each use listing every earlier binding: about 100)


def test_a_long_function_migrates_in_memory_proportional_to_its_size():
    small, large = _one_function(200, 20), _one_function(2000, 20)
    migrate_source(small, Options())  # (first-use caches)
    result = migrate_source(large, Options())
    assert result.code.count("jax.debug.callback(") == 100 and compile(result.code, "m", "exec")
    ratio = _peak(migrate_source, large, Options()) / _peak(migrate_source, small, Options())
    assert ratio < 15, ratio
