"""Legacy names re-exported across modules: importers are migrated, exporters stay importable.

A real package on disk, migrated through the real CLI, then run on current JAX.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from hcmigrate.cli import cli


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_reexport_chain_migrates_its_importers_and_leaves_the_chain_for_a_human(tmp_path: Path):
    """`mypkg.taps` imports id_tap, `mypkg/__init__.py` hands it on: the importers are rewritten
    natively; the exporter's import is left, a manual finding naming the module that hands it
    on (removing one link alone breaks the package), never pointed at the compat runtime."""
    _write(tmp_path, "mypkg/__init__.py", "from .taps import id_tap\n")
    _write(tmp_path, "mypkg/taps.py", "from jax.experimental.host_callback import id_tap\n")
    _write(
        tmp_path,
        "mypkg/util.py",
        "from mypkg import id_tap\n\n\ndef f(x):\n    return id_tap(lambda a, t: print('util', a), x)\n",
    )
    _write(
        tmp_path,
        "main.py",
        "import jax\nimport mypkg\nfrom mypkg.util import f\n\n"
        "print(jax.jit(f)(2.0))\nmypkg.id_tap(lambda a, t: print('main', a), 3)\n",
    )
    result = CliRunner().invoke(cli, ["-j", "1", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    # the importers were rewritten natively ...
    util = (tmp_path / "mypkg/util.py").read_text()
    # (no project: no floor stated, so the spelling every JAX has)
    assert "lambda a: print('util', jax.tree_util.tree_map(np.array, a))" in util
    assert "mypkg" not in util
    assert (
        "lambda a: print('main', jax.tree_util.tree_map(np.array, a))"
        in (tmp_path / "main.py").read_text()
    )
    # ... and the chain is left for a human
    assert (tmp_path / "mypkg/taps.py").read_text() == (
        "from jax.experimental.host_callback import id_tap\n"
    )
    assert "taps.py:1:1: HCB005 [manual] id_tap re-exported by mypkg: left as it is" in (
        result.output
    )
    assert "hcmigrate_compat" not in result.output


def test_names_in_dunder_all_are_left_for_a_human():
    from hcmigrate import migrate_source

    text = "from jax.experimental.host_callback import id_tap, id_print\n__all__ = ['id_tap']\n"
    result = migrate_source(text)
    assert result.code == text
    assert [(d.code, d.level.value) for d in result.diagnostics] == [("HCB005", "manual")]


def test_a_module_using_reexported_names_out_of_sight_is_reported_by_the_library_too():
    from hcmigrate import Options, migrate_source

    text = "import other.exporter as ex\n\nex.tap(print, 1)\n"
    options = Options(reexporters_imported=(("other.exporter", ("hcb", "tap")),))
    result = migrate_source(text, options)
    assert result.code == text
    assert [d.format("m.py") for d in result.diagnostics] == [
        "m.py:1:1: HCB006 [manual] may use legacy host_callback names re-exported by module "
        "`other.exporter` (hcb, tap); hcmigrate rewrites that module, check this file's uses by hand"
    ]
    # like every rule, it can be deselected
    ignored = migrate_source(text, Options(**{**options.__dict__, "ignore": frozenset({"HCB006"})}))
    assert ignored.diagnostics == []


_SUBMODULE_IMPORTER = """\
import numpy as np

import jax
import jax.experimental.host_callback


class Projector:
    def __call__(self, x):
        return jax.experimental.host_callback.call(
            np.sin, x, result_shape=jax.ShapeDtypeStruct(x.shape, x.dtype)
        )
"""


def test_an_importer_taking_other_names_of_a_module_whose_legacy_import_binds_jax_is_not_reported(
    tmp_path: Path,
):
    """`import jax.experimental.host_callback` binds `jax` in the exporter. An importer that has
    its own `import jax` and takes only `Projector` (`from pkg.ops import Projector`, in a
    `try` too, or `from .ops import Projector`) cannot reach the exporter's `jax`: no HCB006.
    One that takes the module itself (`import pkg.ops as ops`, `from . import ops`) or the name
    (`from pkg.ops import jax`) still may, and is reported."""
    _write(tmp_path, "pkg/__init__.py", "")
    _write(tmp_path, "pkg/ops.py", _SUBMODULE_IMPORTER)
    _write(
        tmp_path,
        "pkg/user.py",
        "import jax\n\ntry:\n    from pkg.ops import Projector\nexcept ImportError:\n"
        "    Projector = None\n\n\ndef run(x):\n    return jax.jit(Projector())(x)\n",
    )
    _write(
        tmp_path,
        "pkg/relative.py",
        "import jax\n\nfrom .ops import Projector\n\nprint(jax.jit(Projector())(1.0))\n",
    )
    _write(tmp_path, "pkg/whole.py", "import pkg.ops as ops\n\nprint(ops.jax.numpy.ones(2))\n")
    _write(tmp_path, "pkg/sibling.py", "from . import ops\n\nprint(ops.jax.numpy.ones(2))\n")
    _write(tmp_path, "pkg/name.py", "from pkg.ops import jax\n\nprint(jax.numpy.ones(2))\n")
    result = CliRunner().invoke(cli, ["-j", "1", "--diff", str(tmp_path)], catch_exceptions=False)
    reported = sorted(
        line.split(":", 1)[0].rsplit("/", 1)[-1]
        for line in result.output.splitlines()
        if " HCB006 " in line
    )
    assert reported == ["name.py", "sibling.py", "whole.py"], result.output


def test_a_published_id_print_becomes_a_native_definition_of_the_same_name(tmp_path: Path):
    """econpizza: `tools.py` renames id_print to `jax_print` for model files the run does not
    see (`from econpizza.tools import percentile, jax_print`, in YAML). The import goes and a
    native `jax_print` takes its place: the module imports on current JAX, and the name prints
    legacy's text and returns its argument, under jit too (issue 37)."""
    import subprocess
    import sys

    _write(tmp_path, "econ/__init__.py", "")
    _write(
        tmp_path,
        "econ/tools.py",
        '"""Tools."""\n\nimport jax.numpy as jnp\n'
        "from jax.experimental.host_callback import id_print as jax_print\n\n\n"
        "def percentile(x):\n    return jnp.sort(x)\n",
    )
    result = CliRunner().invoke(cli, ["-j", "1", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "tools.py:4:1: HCB005 [fixed-with-behaviour-note] jax_print (legacy id_print" in (
        result.output
    )
    tools = (tmp_path / "econ/tools.py").read_text()
    assert (
        "import id_print" not in tools and "def jax_print(arg, *, result=None, **kwargs):" in tools
    )
    model = (
        "import jax\nimport jax.numpy as jnp\nfrom econ.tools import percentile, jax_print\n\n"
        "y = jax.jit(lambda x: jax_print(x * 2, what='y') + 1)(jnp.arange(3.0))\n"
        "print(jax_print(jnp.float32(2.0), result=7))\nprint(y)\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", model], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    # (legacy jax 0.4.30 printed the same: `what: y`, numpy's text, the value returned)
    assert ran.stdout == "what: y\n[0. 2. 4.]\n2.\n7\n[1. 3. 5.]\n", ran.stdout


def test_a_published_id_tap_is_left_saying_a_replacement_is_needed():
    """No native definition keeps id_tap's behaviour everywhere: the finding asks for a
    replacement under that name, not for its removal (importers would break)."""
    from hcmigrate import migrate_source

    text = "from jax.experimental.host_callback import id_tap as log_tap\n"
    result = migrate_source(text)
    assert result.code == text
    (finding,) = result.diagnostics
    assert finding.level.value == "manual"
    assert "it needs a replacement under that name" in finding.message
    assert "remove it once" not in finding.message
