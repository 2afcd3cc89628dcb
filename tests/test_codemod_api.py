"""The library API: options, diagnostics and errors, on real source text."""

from __future__ import annotations

import pytest

from hcmigrate import Level, MigrationError, Options, migrate_source

TAP = """\
from jax.experimental import host_callback as hcb


def f(x):
    hcb.id_tap(lambda a, t: print(a), x)
    return hcb.call(np.sin, x, result_shape=x)
"""


def test_untouched_text_is_returned_byte_identical():
    text = "import jax\r\n\r\nx = 1  # host_callback is mentioned only here\r\n"
    result = migrate_source(text)
    assert result.code == text and not result.changed and result.diagnostics == []


def test_syntax_error_names_the_line():
    with pytest.raises(MigrationError) as info:
        migrate_source("from jax.experimental import host_callback\n\ndef f(:\n    pass\n")
    assert info.value.line == 3


def test_select_and_ignore_by_code():
    only_taps = migrate_source(TAP, Options(select=frozenset({"HCB101"}), target_jax=(0, 10, 2)))
    assert (
        "jax.debug.callback(lambda a: print(jax.tree.map(np.array, a))" in only_taps.code
        and "hcb.call(" in only_taps.code
    )
    assert {d.code for d in only_taps.diagnostics} == {"HCB101"}
    no_taps = migrate_source(TAP, Options(ignore=frozenset({"HCB1"})))
    assert "hcb.id_tap(" in no_taps.code and "hcb.call(" not in no_taps.code


def test_target_jax_before_vmap_method_keeps_default_vmap():
    code = "import numpy as np\n" + TAP.replace("hcb.id_tap(lambda a, t: print(a), x)\n    ", "")
    new = migrate_source(code, Options(target_jax=(0, 4, 30))).code
    assert "jax.pure_callback(np.sin" in new and "vmap_method" not in new
    assert 'vmap_method="sequential"' in migrate_source(code).code


def test_add_todos_marks_manual_sites_once():
    text = "from jax.experimental import host_callback as hcb\n\n\ndef f(x, t):\n    return hcb._initialize_outfeed_receiver(x, t)\n"
    once = migrate_source(text, Options(add_todos=True))
    assert "# TODO(hcmigrate): HCB501" in once.code
    assert [d.level for d in once.diagnostics] == [Level.MANUAL]
    assert once.needs_human
    twice = migrate_source(once.code, Options(add_todos=True))
    assert twice.code == once.code
    assert migrate_source(text).code == text  # without --add-todos nothing is written


def test_returned_id_print_value_is_never_none():
    text = "from jax.experimental import host_callback as hcb\n\ndef f(w):\n    return hcb.id_print(w * 2)\n"
    code = migrate_source(text).code
    namespace: dict = {}
    exec(code, namespace)
    import jax.numpy as jnp

    assert float(namespace["f"](jnp.float32(3.0))) == 6.0


def test_unused_pure_looking_call_becomes_an_ordered_debug_callback():
    text = "import numpy as np\nfrom jax.experimental import host_callback as hcb\n\ndef f(x):\n    hcb.call(np.sin, x, result_shape=x)\n    return x\n"
    code = migrate_source(text).code
    assert "jax.debug.callback(np.sin" in code and "pure_callback" not in code


def test_copied_statements_print_as_libcst_prints_them():
    # The output copies the top-level statements no rule touched from the source and prints
    # only the others: the result must be what printing the whole rewritten module gives.
    import libcst as cst

    from hcmigrate.codemod.node_index import NodeIndex
    from hcmigrate.codemod.pipeline import migrate_module
    from hcmigrate.codemod.scopes import ScopeAnalysis

    text = (
        "import numpy as np  # kept\n\n\nclass A:\n  def g(self):\n    return 1\n\n"
        + TAP
        + "\n# footer comment\n"
    )
    module = cst.parse_module(text)
    index = NodeIndex(module, {})
    rewritten, _ = migrate_module(module, Options(), index, ScopeAnalysis(text))
    code, printed_anew = index.print_module(rewritten)
    assert code == rewritten.code != text
    assert "class A" not in printed_anew and "jax.debug.callback" in printed_anew


def test_rewrite_that_would_not_compile_is_refused_with_the_module_line(monkeypatch):
    # The self-check parses only the statements printed anew; its error names the line of the
    # whole module.
    from hcmigrate.codemod.node_index import NodeIndex

    good = migrate_source(TAP).code
    real = NodeIndex.print_module

    def broken(self, module):
        code, printed_anew = real(self, module)
        return code + "def broken(:\n", printed_anew + "def broken(:\n"

    monkeypatch.setattr(NodeIndex, "print_module", broken)
    with pytest.raises(MigrationError) as info:
        migrate_source(TAP)
    assert "would not compile" in info.value.message
    # (reported at the module's own line that the broken code follows: its last line)
    assert good != TAP and info.value.line == len(TAP.splitlines())


def test_a_tap_in_a_class_body_comprehension_compiles_and_runs():
    """`ast.parse` accepts an assignment expression in a class-body comprehension; compile()
    does not: the value is kept there without one, and the code does what legacy did."""
    import jax

    text = (
        "from jax.experimental import host_callback as hcb\n\n"
        "seen = []\n\n\ndef tap(a, transforms):\n    seen.append(int(a))\n\n\n"
        "def g():\n    return 7\n\n\n"
        "class C:\n    xs = [hcb.id_tap(tap, g()) for _ in range(3)]\n"
    )
    code = migrate_source(text).code
    assert ":=" not in code
    namespace: dict = {}
    exec(compile(code, "<migrated>", "exec"), namespace)
    jax.effects_barrier()
    assert namespace["C"].xs == [7, 7, 7] and namespace["seen"] == [7, 7, 7]


def test_a_file_that_does_not_compile_is_reported_as_its_own_syntax_error():
    text = "from jax.experimental import host_callback as hcb\n\nhcb.barrier_wait()\nreturn 1\n"
    with pytest.raises(MigrationError) as info:
        migrate_source(text)
    assert info.value.message == "syntax error: 'return' outside function"
    assert info.value.line == 4
