"""Legacy names re-exported across modules: importers are migrated, exporters stay importable.

A real package on disk, migrated through the real CLI, then run on current JAX.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from hcmigrate.cli import cli


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_reexport_chain_is_migrated_and_runs(tmp_path: Path):
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
    assert result.exit_code == 0, result.output
    # the importers were rewritten natively ...
    util = (tmp_path / "mypkg/util.py").read_text()
    assert "lambda a: print('util', jax.tree.map(np.array, a)), x, ordered=True" in util
    assert "mypkg" not in util
    assert (
        "jax.debug.callback(lambda a: print('main', jax.tree.map(np.array, a)), 3, ordered=True)"
        in (tmp_path / "main.py").read_text()
    )
    # ... and the exporter still exports the name, now from the compat runtime
    assert (
        tmp_path / "mypkg/taps.py"
    ).read_text() == "from hcmigrate_compat.host_callback import id_tap\n"
    run = subprocess.run(
        [sys.executable, "main.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["util", "2.0", "2.0", "main", "3"]


def test_names_in_dunder_all_stay_importable():
    from hcmigrate import migrate_source

    text = "from jax.experimental.host_callback import id_tap, id_print\n__all__ = ['id_tap']\n"
    code = migrate_source(text).code
    assert (
        code
        == "from hcmigrate_compat.host_callback import id_tap, id_print\n__all__ = ['id_tap']\n"
    )


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
