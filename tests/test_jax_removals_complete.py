"""scripts/check_jax_removals_complete.py: the changelog reading and the coverage test it
finds the table's missing rows with (issue 36). (The wheel side reads ~40 downloaded wheels;
it is run by hand, docs/jax-removals.md records its findings.)"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

from check_jax_removals_complete import changelog_removals, covered  # noqa: E402


def test_removals_are_read_per_release_and_deprecations_are_not(tmp_path):
    log = tmp_path / "CHANGELOG.md"
    log.write_text(
        textwrap.dedent(
            """\
            ## JAX 0.7.0 (July 22, 2025)

            * Deprecations
              * `jax.foo_bar` is deprecated and will be removed in a future release.
            * Changes
              * {func}`jax.device_put_sharded` has been removed; use
                {func}`jax.device_put`.

            ## jax 0.3.16
            * Deprecations
              * {mod}`jax.experimental.loops` has been removed. See the issue.
              * {func}`jax.tree_util.tree_multimap` has been removed.
            """
        )
    )
    assert changelog_removals(log) == {
        "jax.device_put_sharded": "0.7.0",
        "jax.device_put": "0.7.0",  # (named in the bullet: the newest wheel then says it is there)
        "jax.experimental.loops": "0.3.16",
        "jax.tree_util.tree_multimap": "0.3.16",
    }


def test_the_removals_the_script_found_are_rows_now():
    for name in (
        "jax.experimental.loops",
        "jax.experimental.loops.Scope",  # (a name inside a removed module: the module's row)
        "jax.tree_util.tree_multimap",
        "jax.device_put_replicated",
        "jax.lax.outfeed",
        # (outside the jax wheels the script reads: from the jaxlib wheels' file lists)
        "jaxlib.xla_extension",
        "jaxlib.xla_extension.XlaRuntimeError",
    ):
        assert covered(name) is not None and covered(name).startswith("row "), name
    assert covered("jax.experimental.host_callback").startswith("left out")
    assert covered("jax.numpy.sum") is None
