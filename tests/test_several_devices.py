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
    "pmap_before_jax_0_8": ("run = jax.pmap(lambda x: step(x))\n", OLD, LEFT, "hcb.id_tap("),
    "pmap_from_jax_0_8": ("run = jax.pmap(lambda x: step(x))\n", {}, IO_CHAIN, "io_callback("),
    "sharding_and_pmap_before_jax_0_8": (
        "from jax.sharding import NamedSharding\nrun = jax.pmap(lambda x: step(x))\n",
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
    # (a pmap that cannot run `step` leaves it on one device: issue 37, econpizza)
    "pmap_of_another_function_before_jax_0_8": (
        "run = jax.pmap(lambda x: x)\n",
        OLD,
        DEBUG_CHAIN,
        "jax.debug.callback(",
    ),
    "pmap_of_another_function": (
        "run = jax.pmap(lambda x: -x)\n",
        {},
        DEBUG_CHAIN,
        "jax.debug.callback(",
    ),
    "setting_and_pmap_of_another_function_before_jax_0_8": (
        "run = jax.pmap(lambda x: x)\n",
        {"several_devices": True, **OLD},
        IO_CHAIN,
        "io_callback(",
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
        "run = jax.pmap(lambda x: step(x))\n",
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
    source = f"{IMPORT}run = jax.pmap(lambda x: step(x))\n\n\n{SITES}"
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


# Issue 37 (econpizza's stacking.py): a module's pmap counts for a site only where it may run
# the function around it. Each module prints in `g`; before jax 0.8 a print under pmap has no
# native spelling (manual, HCB202), one on a single device is jax.debug.callback (HCB201).
REACH = "import functools\n\nimport jax\nfrom jax.experimental import host_callback as hcb\n\n\n"
G = "def g(x):\n    hcb.id_print(x)\n    return x\n\n\n"
PMAP_REACH = {
    # not reached: native, as in a module without the pmap
    "another_function": (G + "def f(x):\n    return x * 2\n\n\nrun = jax.pmap(f)\n", "HCB201"),
    "a_decorated_other_function": (G + "@jax.pmap\ndef f(x):\n    return -x\n", "HCB201"),
    "only_imported": ("from jax import pmap\n\n\n" + G, "HCB201"),
    "econpizza": (
        """\
def solve(model, x0, parallel):
    func = model["func"]
    pfunc = jax.pmap(lambda a, b: func(a, b, x0), in_axes=1) if parallel else func

    def stacked(x):
        out = pfunc(x, x)
        hcb.id_print(jax.numpy.abs(out).max())
        return out.flatten()

    return root(stacked, x0, jac=jax.jacfwd(stacked))
""",
        "HCB201",
    ),
    # reached: as before
    "called_by_it": (G + "def f(x):\n    return g(x) * 2\n\n\nrun = jax.pmap(f)\n", "HCB202"),
    "called_through_another": (
        G + "def h(x):\n    return g(x)\n\n\ndef f(x):\n    return h(x)\n\n\nrun = jax.pmap(f)\n",
        "HCB202",
    ),
    "handed_to_scan": (
        G + "def f(c, xs):\n    return jax.lax.scan(lambda c, x: (g(c), x), c, xs)\n\n\n"
        "run = jax.pmap(f)\n",
        "HCB202",
    ),
    "handed_on_by_name": (
        G + "def f(xs):\n    return jax.lax.map(g, xs)\n\n\nrun = jax.pmap(f)\n",
        "HCB202",
    ),
    "in_a_lambda": (G + "run = jax.pmap(lambda x: g(x) + 1)\n", "HCB202"),
    "decorated": (G + "@jax.pmap\ndef f(x):\n    return g(x)\n", "HCB202"),
    "decorated_with_partial": (
        G + '@functools.partial(jax.pmap, axis_name="i")\ndef f(x):\n    return g(x)\n',
        "HCB202",
    ),
    "partial_applied": (
        G + 'def f(x):\n    return g(x)\n\n\nrun = functools.partial(jax.pmap, axis_name="i")(f)\n',
        "HCB202",
    ),
    "a_method": (
        "class Model:\n    def g(self, x):\n        hcb.id_print(x)\n        return x\n\n"
        "    def step(self, x):\n        return self.g(x)\n\n"
        "    def run(self, x):\n        return jax.pmap(self.step)(x)\n",
        "HCB202",
    ),
    "the_pmapped_lambda_itself": ("run = jax.pmap(lambda x: hcb.id_print(x))\n", "HCB202"),
    "handed_in_a_dict": (
        G + 'def solve(model):\n    func = model["func"]\n    return jax.pmap(lambda x: func(x))\n'
        '\n\nrun = solve({"func": g})\n',
        "HCB202",
    ),
    "held_by_an_instance": (
        G + "class Runner:\n    def __init__(self, fn):\n        self.fn = fn\n\n"
        "    def step(self, x):\n        return self.fn(x)\n\n"
        "    def run(self, x):\n        return jax.pmap(self.step)(x)\n\n\n"
        "RUNNER = Runner(g)\n",
        "HCB202",
    ),
    # undecided: the module as a whole, as before
    "through_getattr": (
        G + 'def f(x):\n    return getattr(OPS, "g")(x)\n\n\nrun = jax.pmap(f)\n',
        "HCB202",
    ),
    "a_parameter": (G + "def run(fn, x):\n    return jax.pmap(fn)(x)\n", "HCB202"),
    "a_pmap_bound_to_a_name": (
        G + 'pmapped = functools.partial(jax.pmap, axis_name="i")\nrun = pmapped(lambda x: x)\n',
        "HCB202",
    ),
    "held_in_a_container": (
        G + 'TABLE = {"g": g}\n\n\ndef f(x):\n    return TABLE["g"](x)\n\n\nrun = jax.pmap(f)\n',
        "HCB202",
    ),
    "handed_to_a_factory": (
        G + "def wrap(fn):\n    return lambda x: fn(x)\n\n\nstep = wrap(g)\n\n\n"
        "def f(x):\n    return step(x)\n\n\nrun = jax.pmap(f)\n",
        "HCB202",
    ),
}


@pytest.mark.parametrize("case", PMAP_REACH)
def test_a_pmap_counts_for_the_sites_of_the_functions_it_may_run(case):
    body, code = PMAP_REACH[case]
    source = REACH + body
    result = migrate_source(source, Options(**OLD))
    compile(result.code, case, "exec")
    sites = [d for d in result.diagnostics if d.code.startswith("HCB2")]
    assert [d.code for d in sites] == [code]
    if code == "HCB202":
        assert result.code == source
        assert "the module uses pmap (several devices)" in sites[0].message
    else:
        assert "jax.debug.callback(" in result.code and "several devices" not in sites[0].message
    # (from jax 0.8 an ordered io_callback runs under pmap: one reached joins that chain)
    current = migrate_source(source)
    spelling = "io_callback(" if code == "HCB202" else "jax.debug.callback("
    assert spelling in current.code and "hcb." not in current.code


@pytest.mark.parametrize("function, code", [("g", "HCB202"), ("f", "HCB201")])
def test_a_pmap_another_module_applies_counts_for_the_function_it_runs(function, code):
    source = REACH + G + "def f(x):\n    return x\n"
    options = Options(runs_under=((function, "pmap", "p.train, line 3"),), **OLD)
    sites = [d for d in migrate_source(source, options).diagnostics if d.code.startswith("HCB2")]
    assert [d.code for d in sites] == [code]
