"""The removed-API rules (JAX1xx) rewrite reads only: a removed name set, deleted or used as a
target keeps its text (a manual finding where it is JAX's own module's), a user class's
attribute named like a removed method is the user's, and a rewrite that would not compile
where it stands is dropped alone, never the module's other sites. Each program is migrated by
the real command and run: the same output on current JAX as unmigrated on jax 0.4.30."""

from __future__ import annotations

import shutil

from tests.migrated_runs import current_python, migrate, run_script, write_tree

TARGETS = {
    "shim.py": """\
        import jax
        import jax.numpy as jnp
        from jax.experimental import host_callback as hcb

        if not hasattr(jax, "tree_map"):  # a shim for a JAX without it
            jax.tree_map = jax.tree_util.tree_map


        class Holder:
            def __init__(self, xs):
                self.device_buffer = list(xs)

            def total(self):
                return sum(self.device_buffer)


        def step(x):
            hcb.id_tap(lambda a, t: print("tap", a), x)
            return jax.tree_map(lambda v: v * 2, x)


        h = Holder([1, 2, 3])
        h.device_buffer += [4]
        (first, *h.device_buffer) = h.device_buffer
        for h.device_buffer in ([7], [8, 9]):
            pass
        print(first, h.device_buffer, h.total())
        out = jax.jit(step)(jnp.arange(3))
        hcb.barrier_wait()
        print(out)
        jax.tree_map = jax.tree_util.tree_map
        del jax.tree_map
        print(jax.tree.map(lambda v: v + 1, [1, 2]))
        """,
}

TARGETS_OUTPUT = "1 [8, 9] 17\ntap [0 1 2]\n[0 2 4]\n[2, 3]\n"


def test_targets_keep_their_text_and_the_file_is_migrated(tmp_path, legacy_python):
    legacy = write_tree(tmp_path / "legacy", TARGETS)
    tree = tmp_path / "tree"
    shutil.copytree(legacy, tree)
    res = migrate(tree)
    assert res.returncode == 1, res.stdout + res.stderr  # (manual findings left)
    err = (res.stdout + res.stderr).decode()
    written = (tree / "shim.py").read_text()
    assert "host_callback" not in written and "jax.debug.callback(" in written
    # the user's attribute and JAX's own module set or deleted keep their text
    assert written.count("self.device_buffer") == 2 and "h.device_buffer += [4]" in written
    assert "(first, *h.device_buffer) = h.device_buffer" in written
    assert "for h.device_buffer in" in written
    assert "    jax.tree_map = jax.tree_util.tree_map\n" in written
    assert "\njax.tree_map = jax.tree_util.tree_map\ndel jax.tree_map\n" in written
    assert (
        "return jax.tree_util.tree_map(lambda v: v * 2, x)" in written
    )  # (a read: rewritten; no floor stated)
    assert "shim.py:6:5: JAX101 [manual] `jax.tree_map` is assigned" in err, err
    assert "shim.py:31:1: JAX101 [manual] `jax.tree_map` is assigned" in err, err
    assert "shim.py:32:5: JAX101 [manual] `jax.tree_map` is deleted" in err, err
    assert "JAX108" not in err and "Python 2" not in err
    assert run_script(legacy_python, legacy, "shim.py") == TARGETS_OUTPUT
    assert run_script(current_python(), tree, "shim.py") == TARGETS_OUTPUT


PATTERN = {
    "kinds.py": """\
        import jax
        import jax.numpy as jnp
        from jax.experimental import host_callback as hcb


        def kind(v, x):
            match v:
                case 0.0:  # (the only case this program reaches)
                    return jax.tree_map(lambda a: a * 3, [v])
                case jnp.NINF:
                    return "minus infinity"
                case x.device_buffer:
                    return "the buffer"


        def show(x):
            hcb.id_print(x, what="x")
            return x


        print(kind(0.0, None))
        jax.jit(show)(jnp.float32(1.5))
        hcb.barrier_wait()
        """,
}


def test_a_rewrite_that_would_not_compile_is_dropped_alone(tmp_path, legacy_python):
    """`case jnp.NINF:` -> `case -jnp.inf:` does not compile (a pattern takes no unary minus
    of a name) and `case x.addressable_data(0):` would be a class pattern: both are left for a
    human, and the module's other sites, host_callback's included, are rewritten."""
    legacy = write_tree(tmp_path / "legacy", PATTERN)
    tree = tmp_path / "tree"
    shutil.copytree(legacy, tree)
    res = migrate(tree)
    assert res.returncode == 1, res.stdout + res.stderr
    err = (res.stdout + res.stderr).decode()
    written = (tree / "kinds.py").read_text()
    assert "case jnp.NINF:" in written and "case x.device_buffer:" in written
    assert (
        "host_callback" not in written
        and "return jax.tree_util.tree_map(lambda a: a * 3, [v])" in written
    )
    assert (
        "kinds.py:10:14: JAX106 [manual] `jnp.NINF` -> `-jnp.inf`: that rewrite does not "
        "compile here" in err
    ), err
    assert "kinds.py:12:14: JAX108 [manual]" in err and "a `case` pattern takes no call" in err
    assert "1 rewritten, 0 unchanged, 0 failed" in err
    expected = "[0.0]\nwhat: x\n1.5\n"
    assert run_script(legacy_python, legacy, "kinds.py") == expected
    assert run_script(current_python(), tree, "kinds.py") == expected


def test_a_barrier_stays_with_the_taps_left_on_host_callback():
    """chex: `barrier_wait()` in a module whose tap stays on host_callback (its device has no
    native spelling) stays too: legacy's barrier waits for that tap's outfeed on an
    accelerator, and raises its error, where jax.effects_barrier() does neither on jax 0.4.26
    to 0.4.34; the finding says why. Without such a tap the barrier is rewritten."""
    from hcmigrate import migrate_source

    source = (
        "from jax.experimental import host_callback as hcb\n\n\n"
        "def check(x):\n"
        "    hcb.id_tap(lambda a, t, device: print(device), x, tap_with_device=True)\n"
        "    return x\n\n\n"
        "def wait():\n    hcb.barrier_wait()\n"
    )
    result = migrate_source(source)
    assert result.code == source
    (barrier,) = [d for d in result.diagnostics if d.code == "HCB401"]
    assert barrier.level.value == "manual" and barrier.line == 10
    assert barrier.message.startswith(
        "barrier_wait() kept: the module's host_callback sites on line(s) 5 stay"
    )
    alone = source.replace("tap_with_device=True", "").replace(
        "t, device: print(device)", "t: print(a)"
    )
    assert "jax.effects_barrier()" in migrate_source(alone).code
