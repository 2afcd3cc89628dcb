"""Messages that say what is wrong: grammar of a newer Python than the one hcmigrate runs on
names the version it needs, a committed merge-conflict marker is named with its line; the run
exits 2 (a file could not be processed) and the project's other files are migrated and run."""

from __future__ import annotations

import shutil
import sys

import pytest

from tests.migrated_runs import current_python, migrate, run_script, write_tree

GOOD = """\
    import jax
    import jax.numpy as jnp
    from jax.experimental import host_callback as hcb


    def step(x):
        hcb.id_print(x * 2, where="step")
        return x + 1


    print(jax.jit(step)(jnp.int32(20)))
    hcb.barrier_wait()
    """

TREE = {
    "good.py": GOOD,
    "generic.py": """\
        from jax.experimental import host_callback as hcb


        def first[T](xs: list[T]) -> T:
            hcb.id_tap(lambda a, t: print(a), xs[0])
            return xs[0]
        """,
    "aliases.py": """\
        from jax.experimental import host_callback as hcb

        type Pair = tuple[float, float]
        hcb.id_print(1.0)
        """,
    "merged.py": """\
        from jax.experimental import host_callback as hcb

        def f(x):
        <<<<<<< HEAD
            hcb.id_print(x)
        =======
            hcb.id_tap(lambda a, t: print(a), x)
        >>>>>>> feature
            return x
        """,
    "merged_clean_side.py": """\
        from jax.experimental import host_callback as hcb

        x = 1
        =======
        hcb.id_print(x)
        """,
}


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the 3.12 grammar parses here")
def test_newer_grammar_and_conflict_markers_are_named(tmp_path, legacy_python):
    legacy = write_tree(tmp_path / "legacy", {"good.py": GOOD})
    tree = write_tree(tmp_path / "tree", TREE)
    before = {p.name: p.read_text() for p in tree.iterdir()}
    res = migrate(tree)
    out = (res.stdout + res.stderr).decode()
    assert res.returncode == 2, out
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert (
        "generic.py:4: syntax error: expected '(' (type parameters (`def f[T]`) need Python "
        f"3.12, and hcmigrate runs on Python {running} here: run hcmigrate under Python >= 3.12)"
    ) in out, out
    assert "aliases.py:3: syntax error: invalid syntax (`type` aliases need Python 3.12" in out
    assert (
        "merged.py:4: unresolved merge-conflict marker `<<<<<<<` on line 4: a merge was left "
        "unfinished; resolve the conflict first"
    ) in out, out
    assert "merged_clean_side.py:4: unresolved merge-conflict marker `=======` on line 4" in out
    assert "Python 2" not in out and "1 rewritten, 0 unchanged, 4 failed" in out, out
    for name, text in before.items():  # (the files that failed are left as they were)
        if name != "good.py":
            assert (tree / name).read_text() == text
    shutil.rmtree(tree / "__pycache__", ignore_errors=True)
    expected = "where: step\n40\n21\n"
    assert run_script(legacy_python, legacy, "good.py") == expected
    assert run_script(current_python(), tree, "good.py") == expected
