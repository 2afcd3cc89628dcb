"""The engine's promises to rules (hcmigrate.codemod.context): a site's diagnostics, imports and
statement edits stay only while what its rewrite produced is still part of the module."""

from __future__ import annotations

from hcmigrate import migrate_source
from hcmigrate.rules.barrier import BARRIER_NOTE

HEADER = "from jax.experimental import host_callback as hcb\n\n"


def _migrated(body: str) -> tuple[str, list[str]]:
    result = migrate_source(HEADER + body)
    return result.code, [d.format("m.py") for d in result.diagnostics]


def test_a_rewrite_dropped_by_an_enclosing_one_leaves_no_import_and_no_diagnostic():
    # barrier_wait's rewrite drops its argument, and with it the legacy reference inside.
    code, diagnostics = _migrated("hcb.barrier_wait(logging_name=str(hcb.CallbackFlavor.PURE))\n")
    assert code == "import jax\n\njax.effects_barrier()\n"
    assert diagnostics == [
        "m.py:1:1: HCB001 [fixed] import of host_callback removed: its uses were rewritten",
        "m.py:3:1: HCB401 [fixed-with-behaviour-note] barrier_wait() -> jax.effects_barrier(): "
        + BARRIER_NOTE,
    ]


def test_a_dropped_inner_legacy_call_is_not_reported():
    code, diagnostics = _migrated("x = hcb.barrier_wait(hcb.id_print(3))\n")
    assert code == "import jax\n\nx = jax.effects_barrier()\n"
    assert [d.split()[1] for d in diagnostics] == ["HCB001", "HCB401"]


def test_an_inner_site_the_enclosing_rewrite_keeps_is_reported_and_keeps_its_import():
    # The value id_print returns is kept (printed and returned): so is the legacy reference
    # left for a human, and with it the legacy import (never one of the compat runtime).
    code, diagnostics = _migrated("def f(x):\n    return hcb.id_print(hcb.CallbackFlavor.PURE)\n")
    assert "from jax.experimental import host_callback as hcb" in code
    assert "hcmigrate_compat" not in code
    assert code.count("hcb.CallbackFlavor.PURE") == 2
    assert [d.split()[1] for d in diagnostics] == ["HCB201", "HCB502"]


def test_an_inner_rewrite_kept_through_a_rebuilt_expression_is_reported():
    # A tap not defined in the module is wrapped in a lambda built from its text: the inner
    # rewrite survives as new nodes of the same shape.
    code, diagnostics = _migrated(
        "def f(x):\n    hcb.id_tap(make_tap(hcb.CallbackFlavor.PURE), x)\n"
    )
    assert "lambda arg: make_tap(hcb.CallbackFlavor.PURE)(\n" in code
    assert "jax.tree_util.tree_map(np.array, arg), ()" in code  # (no floor stated)
    assert "from jax.experimental import host_callback as hcb" in code
    assert [d.split()[1] for d in diagnostics] == ["HCB101", "HCB502"]


GUARD = "try:\n    import jax.experimental.host_callback as hcb\nexcept ImportError:\n    hcb = None\n\n"


def test_a_guard_name_still_tested_is_left_for_a_human_and_keeps_its_import():
    for test in ("hcb is not None", "hcb", "not hcb", "None != hcb"):
        result = migrate_source(GUARD + f"if {test}:\n    hcb.barrier_wait()\n")
        assert [d.code for d in result.diagnostics] == ["HCB004", "HCB401"], test
        assert f"if {test}:\n    jax.effects_barrier()" in result.code
        assert "except ImportError:\n    hcb = None" in result.code


def test_a_guard_name_used_as_a_value_is_left_with_its_guard():
    result = migrate_source(GUARD + "register(hcb)\n")
    assert [(d.code, d.level.value) for d in result.diagnostics] == [("HCB502", "manual")]
    assert result.code == GUARD + "register(hcb)\n"


VMAP_BODY = '''\
def step(x):
    """Batched by callers, e.g. jax.vmap(step) in their code."""
    return hcb.id_print(x)
'''


def _print_codes(body: str) -> list[str]:
    codes = [d.split()[1] for d in _migrated("import functools\nimport jax\n" + body)[1]]
    return [code for code in codes if code != "HCB001"]


def test_a_print_is_left_for_a_human_only_under_a_vmap_the_module_shows():
    """Legacy printed a batch once; jax.debug.print prints each element. The codemod leaves
    the print (a manual finding) where this module visibly vmaps the function, and only there
    (a vmap named in a docstring or comment is no vmap)."""
    assert _print_codes(VMAP_BODY) == ["HCB201"]
    assert _print_codes(VMAP_BODY + "# jax.vmap(step)\n") == ["HCB201"]
    assert _print_codes(VMAP_BODY + "batched = jax.vmap(step, in_axes=0)\n") == ["HCB202"]
    decorated = "@functools.partial(jax.vmap, in_axes=0)\n" + VMAP_BODY
    assert _print_codes(decorated) == ["HCB202"]
    in_lambda = "rows = lambda xs: jax.vmap(lambda r: hcb.id_print(r))(xs)\n"
    assert _print_codes(in_lambda) == ["HCB202"]
    # through the module's own calls: `step` prints, `batched` calls it, and is vmapped
    caller = (
        VMAP_BODY + "\n\ndef batched(x):\n    return step(x) + 1\n\n\nrun = jax.vmap(batched)\n"
    )
    assert _print_codes(caller) == ["HCB202"]


ONE_RUNTIME = """\
import numpy as np

STATE = []


def register(x, device):
    STATE.append(device)
    return x


def record(x):
    STATE.append(x)
    return np.float32(len(STATE))


def step(x):
    x = hcb.call(register, x, result_shape=x, call_with_device=True)
    hcb.id_tap(lambda v, t: STATE.append(v), x)
    n = hcb.call(record, x, result_shape=np.float32(0))
    hcb.call(record, x)
    return x + n
"""


def test_a_call_with_no_native_spelling_is_left_and_the_others_are_native():
    """Native first (issue 37): a `call` that reads its device is left as it is, a manual
    finding naming the two ways forward; the module's tap and other calls are rewritten
    natively, and nothing imports the compat runtime."""
    code, diagnostics = _migrated(ONE_RUNTIME)
    assert "hcmigrate_compat" not in code
    assert code.count("hcb.call(") == 1 and "hcb.id_tap(" not in code
    assert code.count("io_callback(") == 3  # (the tap joins the chain of the calls' results)
    assert [d.split()[1] for d in diagnostics] == ["HCB303", "HCB101", "HCB302", "HCB304"]
    left = diagnostics[0]
    assert "[manual] call left as it is" in left and "uses the `device` argument" in left
    assert 'strategy = "compat"' in left and "port it by hand" in left


def test_an_attribute_named_like_a_star_imported_function_is_not_legacy():
    """`cfg.id_tap(x)` is the attribute of `cfg`: a star import binds no attribute names."""
    text = "from jax.experimental.host_callback import *\n\n\ndef f(cfg, x):\n"
    result = migrate_source(text + "    cfg.id_tap(x)\n    return id_tap(print, x)\n")
    assert "    cfg.id_tap(x)\n" in result.code and "host_callback" not in result.code
    assert [d.code for d in result.diagnostics] == ["HCB001", "HCB101"]


def test_a_helper_is_defined_above_the_module_level_code_that_calls_it(tmp_path):
    """A script that taps and prints at module level, right after its imports (a notebook
    cell, a script's last lines): the helpers its calls use are defined above them, and the
    migrated script runs on current JAX, printing what legacy printed."""
    import subprocess
    import sys

    source = (
        "import os\n"
        "from jax.experimental import host_callback as hcb\n"
        "os.environ.setdefault('JAX_PLATFORMS', 'cpu')\n"
        "import jax\n"
        "if os.environ.get('X'):\n"
        "    hcb.id_print(jax.numpy.float32(2.0), what='guarded')\n"
        "hcb.id_print((jax.numpy.float32(2.0), 1), what='two')\n"
        "hcb.id_tap(lambda a, t: print(type(a).__name__), jax.numpy.ones(2))\n"
        "hcb.barrier_wait()\n"
    )
    script = tmp_path / "script.py"
    script.write_text(migrate_source(source).code)
    run = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "X": "1"},
    )
    assert run.returncode == 0, script.read_text() + run.stderr[-2000:]
    assert "def _print_like_id_print" in script.read_text()  # (the tuple's layout needs it)
    assert run.stdout == "what: guarded\n2.\nwhat: two\n( 2. 1 )\nndarray\n"


def test_lambdas_that_tap_one_function_become_defs_named_by_what_they_tap():
    """(jax-tqdm's progress bar) Three `lambda _: id_tap(_update, v, result=i)` in a row: the
    first def is `tap_update`, the next is named by what it taps (`tap_update_remainder`), and
    a name taken both ways gets a number."""
    code = migrate_source(
        "import jax\nfrom jax.experimental import host_callback as hcb\n\n\n"
        "def step(i, rate, remainder):\n"
        "    def _update(arg, transforms):\n        print(arg)\n\n"
        "    jax.lax.cond(i > 0, lambda _: hcb.id_tap(_update, rate, result=i), lambda _: i, None)\n"
        "    jax.lax.cond(i > 1, lambda _: hcb.id_tap(_update, remainder, result=i), lambda _: i, None)\n"
        "    jax.lax.cond(i > 2, lambda _: hcb.id_tap(_update, remainder, result=i), lambda _: i, None)\n"
        "    return i\n"
    ).code
    defs = [line.strip() for line in code.splitlines() if line.strip().startswith("def tap_")]
    assert defs == [
        "def tap_update(_):",
        "def tap_update_remainder(_):",
        "def tap_update_1(_):",
    ], code
    compile(code, "step.py", "exec")
