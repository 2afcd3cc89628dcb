"""hcmigrate.codemod.scopes: name resolution on Python's ast (what the codemod asks of it)."""

from __future__ import annotations

import re
import textwrap

import libcst as cst
import pytest

from hcmigrate.api import migrate_source
from hcmigrate.codemod.scopes import BUILTIN, IMPORT, LOCAL, QualifiedName, ScopeAnalysis


def qualified(source: str, needle: str, nth: int = 0) -> set[QualifiedName]:
    """Qualified names of the `nth` occurrence of the dotted expression `needle` in `source`."""
    source = textwrap.dedent(source)
    scopes = ScopeAnalysis(source)
    matches = list(re.finditer(rf"(?<![\w.]){re.escape(needle)}\b", source))
    return scopes.qualified_names(matches[nth].start(), needle)


def names(found: set[QualifiedName]) -> set[str]:
    return {q.name for q in found}


def test_import_forms_and_aliases():
    src = """
        import jax.experimental.host_callback
        import jax.experimental.host_callback as hcb
        from jax.experimental import host_callback as h2
        from jax.experimental.host_callback import id_tap as tap
        jax.experimental.host_callback.id_tap
        hcb.id_tap
        h2.call
        tap
        """
    assert qualified(src, "jax.experimental.host_callback.id_tap", 0) == {
        QualifiedName("jax.experimental.host_callback.id_tap", IMPORT)
    }
    assert names(qualified(src, "hcb.id_tap")) == {"jax.experimental.host_callback.id_tap"}
    assert names(qualified(src, "h2.call")) == {"jax.experimental.host_callback.call"}
    assert names(qualified(src, "tap", 1)) == {"jax.experimental.host_callback.id_tap"}


def test_dotted_import_binds_only_its_own_path():
    src = """
        import jax.experimental.host_callback
        jax.numpy.sin
        """
    assert qualified(src, "jax.numpy.sin") == set()  # `jax` itself was bound by nothing here


def test_parameter_shadows_module_import():
    src = """
        from jax.experimental import host_callback
        def f(host_callback):
            return host_callback.id_tap
        host_callback.id_tap
        """
    assert names(qualified(src, "host_callback.id_tap", 0)) == {"f.<locals>.host_callback.id_tap"}
    assert names(qualified(src, "host_callback.id_tap", 1)) == {
        "jax.experimental.host_callback.id_tap"
    }


def test_guarded_import_gives_both_bindings():
    src = """
        try:
            import jax.experimental.host_callback as hcb
        except ImportError:
            hcb = None
        def f():
            hcb.id_tap
        """
    assert qualified(src, "hcb.id_tap") == {
        QualifiedName("jax.experimental.host_callback.id_tap", IMPORT),
        QualifiedName("hcb.id_tap", LOCAL),
    }


def test_class_scope_is_invisible_from_methods_but_not_from_its_body():
    src = """
        import numpy as hcb
        class C:
            from jax.experimental import host_callback as hcb
            x = hcb.id_tap
            def m(self):
                return hcb.id_tap
        """
    assert names(qualified(src, "hcb.id_tap", 0)) == {"jax.experimental.host_callback.id_tap"}
    assert names(qualified(src, "hcb.id_tap", 1)) == {"numpy.id_tap"}


def test_global_and_nonlocal_redirect():
    src = """
        from jax.experimental import host_callback as hcb
        def outer():
            hcb = 1
            def inner():
                nonlocal hcb
                return hcb
            def glob():
                global hcb
                return hcb.id_print
            return inner
        """
    assert names(qualified(src, "hcb", 3)) == {"outer.<locals>.hcb"}
    assert names(qualified(src, "hcb.id_print")) == {"jax.experimental.host_callback.id_print"}


def test_function_local_import_and_comprehension_scope():
    src = """
        def f(xs):
            from jax.experimental import host_callback as hcb
            return [hcb.id_tap for hcb in xs] + [hcb.call]
        """
    assert names(qualified(src, "hcb.id_tap")) == {"f.<locals>.<comprehension>.hcb.id_tap"}
    assert names(qualified(src, "hcb.call")) == {"jax.experimental.host_callback.call"}


def test_a_use_does_not_see_a_later_binding_in_its_own_scope():
    src = """
        from jax.experimental.host_callback import id_tap
        id_tap
        id_tap = None
        """
    assert names(qualified(src, "id_tap", 1)) == {"jax.experimental.host_callback.id_tap"}


def test_builtins_and_unbound_names():
    src = "print(undefined_name)\n"
    assert qualified(src, "print") == {QualifiedName("builtins.print", BUILTIN)}
    assert qualified(src, "undefined_name") == set()


def test_offsets_count_characters_not_bytes():
    src = 's = "héllo wörld"; import numpy as np; y = np.sin\n'
    assert names(qualified(src, "np.sin")) == {"numpy.sin"}


def test_uses_are_recorded_on_their_binding():
    src = textwrap.dedent("""
        from jax.experimental import host_callback as hcb
        def f(x):
            hcb.id_tap(print, x)
            return hcb
        """)
    scopes = ScopeAnalysis(src)
    [binding] = scopes.imports[src.index("from")]
    assert binding.key == "hcb"
    assert sorted(binding.accesses) == [src.index("hcb.id_tap"), src.rindex("hcb\n")]


@pytest.mark.parametrize("prefix", ["", "# é ü\n", "s = 'ünïcödé'; "])
def test_diagnostic_columns_after_non_ascii_text(prefix):
    src = f"from jax.experimental import host_callback as hcb\n{prefix}hcb.barrier_wait()\n"
    result = migrate_source(src)
    [diagnostic] = [d for d in result.diagnostics if d.code.startswith("HCB4")]
    line = src.splitlines()[diagnostic.line - 1]
    assert line[diagnostic.col - 1 :].startswith("hcb.barrier_wait")
    cst.parse_module(result.code)
