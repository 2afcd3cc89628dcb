"""A module that runs on several devices (issue 27): where an ordered jax.debug callback is
refused, its taps, prints and calls for their effect become ordered io_callbacks when it runs
there through sharded programs (or pmap, for JAX 0.8 and later) and uses no transformation
they fail under; under pmap for older JAX, or in a module using vmap or grad, they have no
native spelling and are left as they are, manual findings (issue 37). The `several_devices` option
(`several-devices = true`) says so for code whose callers build the meshes.

What each spelling does on several devices is measured in docs/callback-semantics.md
("Ordered callbacks on several devices, release by release"); tests/test_project_model.py and
fixtures/fidelity/c13_sharded_decode_loop run such modules against jax 0.4.30.
"""

from __future__ import annotations

import pytest

from hcmigrate import Options, migrate_source

SITES = """\
def step(x):
    hcb.id_tap(send, x)
    hcb.id_print(x, what="x")
    hcb.call(lambda v: print("norm", v), x)
    return x * 2
"""
IMPORT = "import jax\nfrom jax.experimental import host_callback as hcb\n"

IO_CHAIN = ("HCB101", "HCB201", "HCB304")
DEBUG_CHAIN = ("HCB101", "HCB201", "HCB304")
LEFT = ("HCB102", "HCB202", "HCB303")  # (manual: left as they are)
OLD = {"target_jax": (0, 6, 2)}  # (an ordered io_callback runs under pmap from jax 0.8)

CASES = {
    # what the module names (code, not strings) -> (options, the codes of the three sites,
    # the spelling written)
    "named_sharding": ("from jax.sharding import NamedSharding\n", {}, IO_CHAIN, "io_callback("),
    "positional_sharding": ("P = jax.sharding.PositionalSharding\n", {}, IO_CHAIN, "io_callback("),
    "sharding_constraint": (
        "def place(x, s):\n    return jax.lax.with_sharding_constraint(x, s)\n",
        {},
        IO_CHAIN,
        "io_callback(",
    ),
    "pjit": ("from jax.experimental.pjit import pjit\n", {}, IO_CHAIN, "io_callback("),
    "shard_map": (
        "from jax.experimental.shard_map import shard_map\n",
        {},
        IO_CHAIN,
        "io_callback(",
    ),
    "jit_given_shardings": (
        "def compiled(s):\n    return jax.jit(step, in_shardings=s)\n",
        {},
        IO_CHAIN,
        "io_callback(",
    ),
    "pmap_before_jax_0_8": ("run = jax.pmap(lambda x: x)\n", OLD, LEFT, "hcb.id_tap("),
    "pmap_from_jax_0_8": ("run = jax.pmap(lambda x: x)\n", {}, IO_CHAIN, "io_callback("),
    "sharding_and_pmap_before_jax_0_8": (
        "from jax.sharding import NamedSharding\nrun = jax.pmap(lambda x: x)\n",
        OLD,
        LEFT,
        "hcb.id_tap(",
    ),
    "sharding_before_jax_0_8": (
        "from jax.sharding import NamedSharding\n",
        OLD,
        IO_CHAIN,
        "io_callback(",
    ),
    "sharding_and_vmap": (
        "from jax.sharding import NamedSharding\nrun = jax.vmap(lambda x: x)\n",
        {},
        LEFT,
        "hcb.id_tap(",
    ),
    "sharding_and_value_and_grad": (
        "from jax.sharding import NamedSharding\nloss = jax.value_and_grad(sum)\n",
        {},
        LEFT,
        "hcb.id_tap(",
    ),
    "sharding_and_checkpoint": (
        "from jax.sharding import NamedSharding\nsave = jax.checkpoint(sum)\n",
        {},
        LEFT,
        "hcb.id_tap(",
    ),
    "sharding_in_a_docstring_only": (
        '"""Callers shard with NamedSharding and pjit."""\n',
        {},
        DEBUG_CHAIN,
        "jax.debug.callback(",
    ),
    "one_device": ("", {}, DEBUG_CHAIN, "jax.debug.callback("),
    "setting": ("", {"several_devices": True}, IO_CHAIN, "io_callback("),
    "setting_and_vmap": (
        "run = jax.vmap(lambda x: x)\n",
        {"several_devices": True},
        LEFT,
        "hcb.id_tap(",
    ),
    "setting_and_grad": (
        "from jax import grad\n",
        {"several_devices": True},
        LEFT,
        "hcb.id_tap(",
    ),
    "setting_and_pmap_before_jax_0_8": (
        "run = jax.pmap(lambda x: x)\n",
        {"several_devices": True, **OLD},
        LEFT,
        "hcb.id_tap(",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_which_chain_a_module_on_several_devices_gets(case):
    names, options, codes, spelling = CASES[case]
    head = IMPORT + names if not names.startswith('"""') else names + IMPORT
    source = f"{head}\n\n{SITES}"
    result = migrate_source(source, Options(**options))
    compile(result.code, case, "exec")
    sites = [d for d in result.diagnostics if d.code.startswith("HCB") and d.code != "HCB001"]
    assert tuple(d.code for d in sites) == codes
    assert spelling in result.code
    if spelling == "io_callback(":
        assert result.code.count("ordered=True") == 3
        assert "jax.debug" not in result.code and "hcmigrate_compat" not in result.code
        for diagnostic in sites:
            assert "it fails under vmap" in diagnostic.message
    if spelling == "hcb.id_tap(":
        assert result.code == source and "hcmigrate_compat" not in result.code
        assert {d.level.value for d in sites} == {"manual"}
    if spelling == "jax.debug.callback(":
        assert "see several-devices" in sites[0].message
    assert migrate_source(result.code, Options(**options)).code == result.code


def test_a_pmap_module_for_jax_before_0_8_says_ordered_io_callbacks_are_refused_too():
    source = f"{IMPORT}run = jax.pmap(lambda x: x)\n\n\n{SITES}"
    tap = next(d for d in migrate_source(source, Options(**OLD)).diagnostics if d.code == "HCB102")
    assert (
        "the module uses pmap (several devices), where ordered jax.debug callbacks are refused, "
        "and ordered io_callbacks before jax 0.8; port it by hand" in tap.message
    )


def test_a_sharded_module_using_vmap_says_which_transformation_keeps_it_off_io_callbacks():
    source = f"{IMPORT}from jax.sharding import NamedSharding\nrun = jax.vmap(abs)\n\n\n{SITES}"
    tap = next(d for d in migrate_source(source).diagnostics if d.code == "HCB102")
    assert (
        "the module uses NamedSharding (several devices), where ordered jax.debug callbacks "
        "are refused, and it uses vmap, where ordered io_callbacks fail; port it by hand"
        in tap.message
    )


def test_a_run_whose_other_modules_use_meshes_hints_at_the_setting(tmp_path):
    """praxis: the decoding module names no mesh (its callers build it), so its taps become
    ordered jax.debug callbacks, which fail there; another module of the project uses pjit.
    The run says so once and points to `several-devices`; with the setting, no hint and
    ordered io_callbacks. A mesh named only in a comment or a string is no evidence."""
    from tests.cli_helpers import run

    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text("")
    (tmp_path / "lib" / "decode.py").write_text(IMPORT + "\n\n" + SITES)
    (tmp_path / "lib" / "layers.py").write_text(
        "# pjit is mentioned here only\nNOTE = 'NamedSharding'\n"
    )
    first = run(["--no-cache", "--diff", "."], cwd=tmp_path)
    assert "hint:" not in first.output, first.output
    (tmp_path / "lib" / "layers.py").write_text(
        "from jax.experimental.pjit import pjit\n\n\ndef shard(f):\n    return pjit(f)\n"
    )
    hinted = run(["--no-cache", "--diff", "."], cwd=tmp_path)
    hint = (
        "hint: lib/layers.py uses pjit: this project runs code on several devices, where the "
        "ordered jax.debug callbacks written in lib/decode.py fail; if their code runs there, "
        "migrate with `several-devices = true` in [tool.hcmigrate] (--several-devices)"
    )
    assert hint in hinted.output, hinted.output
    assert hinted.exit_code == first.exit_code  # (a hint, not a finding)
    setting = run(["--no-cache", "--diff", "--several-devices", "."], cwd=tmp_path)
    assert "hint:" not in setting.output and "io_callback(" in setting.output, setting.output
    # a mesh in another project of the same run says nothing of this one
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "serve.py").write_text((tmp_path / "lib" / "layers.py").read_text())
    (tmp_path / "lib" / "layers.py").write_text("")
    (tmp_path / "app").mkdir()
    (tmp_path / "lib").rename(tmp_path / "app" / "lib")
    apart = run(["--no-cache", "--diff", "app", "other"], cwd=tmp_path)
    assert "app/lib/decode.py" in apart.output and "hint:" not in apart.output, apart.output
