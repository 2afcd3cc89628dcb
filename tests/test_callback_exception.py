"""`except hcb.CallbackException` around a jitted step whose tap raises: no rewrite keeps the
branch on every platform (docs/callback-exception.md, measured by
scripts/measure_callback_exception.py), so HCB403 says what changes, and where a later handler
of the same `try` catches the RuntimeError legacy raised on CPU, it is a manual finding. The
programs are migrated by the real command and run on jax 0.4.30 and current JAX: the branch
each one takes is the one the finding names."""

from __future__ import annotations

import shutil

from tests.migrated_runs import current_python, migrate, run_script, write_tree

PROGRAM = {
    "train.py": """\
        import jax
        import jax.numpy as jnp
        from jax.experimental import host_callback as hcb


        def check(x, transforms):
            raise ValueError("bad batch")


        def step(x):
            return hcb.id_tap(check, x) * 2


        try:
            jax.jit(step)(jnp.arange(3)).block_until_ready()
            hcb.barrier_wait()
        except hcb.CallbackException:
            print("the CallbackException branch")
        except RuntimeError:
            print("the RuntimeError branch")

        try:
            try:
                jax.jit(step)(jnp.arange(2)).block_until_ready()
                hcb.barrier_wait()
            except hcb.CallbackException:
                print("the CallbackException branch, alone")
        except RuntimeError:
            print("an outer RuntimeError handler")
        """,
}


def test_the_handler_says_which_branch_changes(tmp_path, legacy_python):
    legacy = write_tree(tmp_path / "legacy", PROGRAM)
    tree = tmp_path / "tree"
    shutil.copytree(legacy, tree)
    res = migrate(tree)
    out = (res.stdout + res.stderr).decode()
    assert res.returncode == 1, out  # (a manual finding)
    assert (
        "train.py:17:8: HCB403 [manual] CallbackException -> jax.errors.JaxRuntimeError: the "
        "branch changes: on CPU legacy raised a tap's error at the call as a RuntimeError, "
        "which `except RuntimeError` below caught; now this handler catches it"
    ) in out, out
    assert (
        "train.py:26:12: HCB403 [fixed-with-behaviour-note] CallbackException -> "
        "jax.errors.JaxRuntimeError: now raised at the jitted call, on CPU too, where legacy "
        "raised a RuntimeError this handler did not catch"
    ) in out, out
    # on jax 0.4.30 (CPU: legacy's inline path) the CallbackException handlers never ran
    assert run_script(legacy_python, legacy, "train.py") == (
        "the RuntimeError branch\nan outer RuntimeError handler\n"
    )
    # now the rewritten handlers run, as the findings say
    assert run_script(current_python(), tree, "train.py") == (
        "the CallbackException branch\nthe CallbackException branch, alone\n"
    )
