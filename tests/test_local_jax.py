"""A module of the project named like JAX (`jax.py`, a `jax/` package) on the import path a
module would see shadows JAX there: nothing in that module is rewritten as JAX, and the run
says so once. Look-alikes that shadow nothing (a `jax.py` in another folder, a `jax/` folder
without `__init__.py`) leave the rules as they are. Each program runs after the migration as
it ran unmigrated on jax 0.4.30."""

from __future__ import annotations

import shutil

from tests.migrated_runs import current_python, migrate, run_script, write_tree

LOCAL_JAX = """\
    \"\"\"The project's own helpers, named like JAX.\"\"\"


    def tree_map(f, xs):
        return ["local"] + [f(x) for x in xs]
    """

USES_JAX = """\
    import jax

    print(jax.tree_map(lambda v: v + 1, [1, 2]))
    """

REAL_JAX = """\
    import jax
    import jax.numpy as jnp
    from jax.experimental import host_callback as hcb


    def step(x):
        hcb.id_print(x, what="{name}")
        return jax.tree_map(lambda v: v * 2, x)


    print(jax.jit(step)(jnp.arange(2)))
    hcb.barrier_wait()
    """

TREE = {
    "pyproject.toml": "[project]\nname = 'demo'\nversion = '0'\n",
    # a script beside a local jax.py, and one beside a local jax/ package
    "tools/jax.py": LOCAL_JAX,
    "tools/bump.py": USES_JAX,
    "tools2/jax/__init__.py": LOCAL_JAX,
    "tools2/bump.py": USES_JAX,
    # look-alikes: a package whose import root holds no jax; a jax/ namespace folder
    "pkg/__init__.py": "",
    "pkg/model.py": REAL_JAX.replace("{name}", "model"),
    "data/jax/README.txt": "samples\n",
    "data/show.py": REAL_JAX.replace("{name}", "show"),
}


def test_a_local_jax_shadows_jax_for_the_modules_that_see_it(tmp_path, legacy_python):
    legacy = write_tree(tmp_path / "legacy", TREE)
    tree = tmp_path / "tree"
    shutil.copytree(legacy, tree)
    res = migrate(tree)
    out = (res.stdout + res.stderr).decode()
    assert res.returncode == 0, out
    for shadow, script in (("tools/jax.py", "tools/bump.py"), ("tools2/jax", "tools2/bump.py")):
        assert (tree / script).read_text() == (legacy / script).read_text(), out
        assert out.count(f"note: {shadow} is a local module named like JAX") == 1, out
        assert f"({script}): nothing in them is rewritten as JAX" in out, out
    for script in ("pkg/model.py", "data/show.py"):
        written = (tree / script).read_text()
        assert "host_callback" not in written and "jax.tree_util.tree_map(" in written, written
    for args, expected in (
        (["tools/bump.py"], "['local', 2, 3]\n"),
        (["tools2/bump.py"], "['local', 2, 3]\n"),
        (["-m", "pkg.model"], "what: model\n[0 1]\n[0 2]\n"),
        (["data/show.py"], "what: show\n[0 1]\n[0 2]\n"),
    ):
        assert run_script(legacy_python, legacy, *args) == expected
        assert run_script(current_python(), tree, *args) == expected
