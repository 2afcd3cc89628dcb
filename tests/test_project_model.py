"""The project model (hcmigrate.project_model): a tree whose modules take legacy names from each
other, or run each other's functions under transformations, migrates to a tree that imports and
runs, with the host calls legacy JAX made.

Each test writes a package, runs the real original under jax 0.4.30 (the legacy virtualenv),
migrates it with the real `hcmigrate` command, runs the result on current JAX, and compares.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from cli_helpers import run as run_hcmigrate

LEGACY = "jax.experimental.host_callback"

# Every shape of re-export, one package each; each `c.py` defines run(), which calls the names
# it took and prints what its taps saw.
REEXPORT_SHAPES = {
    # a star import of a module that re-exports a legacy name
    "star/a.py": f"from {LEGACY} import id_tap\n",
    "star/c.py": "from star.a import *\n\nfrom shared import jit_run\n\n\n"
    "def run():\n    jit_run(lambda x: id_tap(lambda v, t: print('star', v), x))\n",
    # a star import of a module that star-imports host_callback (on jax 0.4.30 that binds
    # none of its deprecated functions: JAX before 0.4.26 ran it; only the migrated tree runs)
    "legacystar/a.py": f"from {LEGACY} import *\n",
    "legacystar/c.py": "from legacystar.a import *\n\nfrom shared import jit_run\n\n\n"
    "def run():\n    jit_run(lambda x: id_tap(lambda v, t: print('legacystar', v), x))\n",
    # a sibling re-export: a.py takes id_print from b.py, c.py takes both from a.py
    "sibling/a.py": f"from {LEGACY} import id_tap\nfrom sibling.b import id_print\n",
    "sibling/b.py": f"from {LEGACY} import id_print\n",
    "sibling/c.py": "from shared import jit_run\nfrom sibling.a import id_print, id_tap\n\n\n"
    "def run():\n    jit_run(lambda x: id_print(id_tap(lambda v, t: print('sibling', v), x)))\n",
    # two siblings re-exporting from each other (a cycle), spelled relatively
    "cycle/a.py": f"from {LEGACY} import id_tap\n\nfrom .b import id_print\n",
    "cycle/b.py": f"from {LEGACY} import id_print\n\nfrom .a import id_tap\n",
    "cycle/c.py": "from shared import jit_run\n\nfrom .a import id_print\nfrom .b import id_tap\n\n\n"
    "def run():\n    jit_run(lambda x: id_print(id_tap(lambda v, t: print('cycle', v), x)))\n",
    # a module attribute: `from attr import a; a.id_tap(...)`
    "attr/a.py": f"from {LEGACY} import id_tap\n",
    "attr/c.py": "from attr import a\nfrom shared import jit_run\n\n\n"
    "def run():\n    jit_run(lambda x: a.id_tap(lambda v, t: print('attr', v), x))\n",
    # an alias of the legacy module reached through another module's import of its package
    "alias/utils/__init__.py": f"from {LEGACY.rsplit('.', 1)[0]} import host_callback as hostcb\n",
    "alias/a.py": "from alias import utils\n",
    "alias/c.py": "from alias.a import utils\nfrom shared import jit_run\n\n\n"
    "def run():\n    jit_run(lambda x: utils.hostcb.id_tap(lambda v, t: print('alias', v), x))\n",
}
SHARED = """\
import jax
import jax.numpy as jnp


def jit_run(f):
    print(jax.jit(f)(jnp.arange(3)).tolist())
    jax.effects_barrier()
"""
MAIN = """\
import importlib
import sys

for shape in sys.argv[1:]:
    importlib.import_module(shape + ".c").run()
"""
SHAPES = ["star", "legacystar", "sibling", "cycle", "attr", "alias"]


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for package in path.relative_to(root).parents:
            if str(package) != "." and not (root / package / "__init__.py").exists():
                (root / package / "__init__.py").write_text("")
        path.write_text(text)


def _run(python, tree: Path, *args: str, devices: int = 1) -> str:
    env = {
        **os.environ,
        "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}",
        "JAX_PLATFORMS": "cpu",
    }
    env.pop("PYTHONPATH", None)  # (the compat runtime is installed; the tree is the cwd)
    result = subprocess.run(
        [str(python), *args], cwd=tree, capture_output=True, text=True, timeout=300, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def _legacy_then_migrated(
    legacy_python: Path,
    tmp_path: Path,
    files: dict[str, str],
    *args: str,
    devices: int = 1,
    legacy_args: tuple[str, ...] | None = None,
    exit_code: int = 0,
):
    """(legacy output, hcmigrate's output, migrated output) of the package `files`, run with
    `args` (the original with `legacy_args`, when given); hcmigrate exits with `exit_code`."""
    original = tmp_path / "original"
    _write(original, files)
    migrated = tmp_path / "migrated"
    shutil.copytree(original, migrated)
    legacy = _run(legacy_python, original, *(legacy_args or args), devices=devices)
    result = run_hcmigrate(["."], migrated)
    assert result.exit_code == exit_code, result.output
    return legacy, result.output, _run(sys.executable, migrated, *args, devices=devices)


def test_every_shape_of_reexport_migrates_to_a_tree_that_runs_as_legacy_did(
    legacy_python: Path, tmp_path: Path
):
    files = {**REEXPORT_SHAPES, "shared.py": SHARED, "main.py": MAIN}
    ran_on_legacy = [shape for shape in SHAPES if shape != "legacystar"]
    legacy, report, migrated = _legacy_then_migrated(
        legacy_python, tmp_path, files, "main.py", *SHAPES, legacy_args=("main.py", *ran_on_legacy)
    )
    lines = legacy.splitlines(keepends=True)
    taps = [line.split()[0] for line in lines if line[0].isalpha()]
    assert taps == ran_on_legacy  # (each shape's tap ran: no comparison of empty outputs)
    # legacystar's host calls are star's (as JAX before 0.4.26 ran them)
    assert migrated == "".join([*lines[:2], lines[0].replace("star", "legacystar"), *lines[1:]])
    tree = tmp_path / "migrated"
    # The importers are rewritten natively; the exporters' legacy imports, which only the
    # run's modules took, go with them (never to the compat runtime: issue 37).
    for shape in SHAPES:
        assert "jax.debug.callback(" in (tree / shape / "c.py").read_text(), shape
    for exporter in (
        "star/a.py",
        "legacystar/a.py",
        "sibling/a.py",
        "sibling/b.py",
        "cycle/a.py",
        "attr/a.py",
    ):
        text = (tree / exporter).read_text()
        assert "host_callback" not in text and "hcmigrate_compat" not in text, exporter
    assert "HCB006" not in report


TAPS = f"""\
from {LEGACY.rsplit(".", 1)[0]} import host_callback as hcb

SEEN = []


def save(x, transforms):
    SEEN.append(float(x.sum()))


def step(x):
    x = hcb.id_tap(save, x)
    return x * 2
"""
SOLVER = '''\
"""Runs the step on every device."""

import jax
import jax.numpy as jnp

from lib.taps import SEEN, step


def run():
    out = jax.pmap(step)(jnp.arange(4.0).reshape(2, 2))
    jax.effects_barrier()
    print(out.tolist(), sorted(SEEN))


run()
import lib.single  # noqa: E402  (its own jitted tap, on one device)
'''
# A module that names pmap only in a docstring and an error message.
SINGLE = f'''\
"""One device only: never give `show` to :func:`jax.pmap`."""

import jax

from {LEGACY.rsplit(".", 1)[0]} import host_callback as hcb

ERROR = "use jax.pmap elsewhere"


def show(x):
    return hcb.id_tap(lambda v, t: print("show", v), x)


print(jax.jit(show)(2.0))
'''


BATCHED = f"""\
from {LEGACY.rsplit(".", 1)[0]} import host_callback as hcb


def show(x, transforms):
    print("show", x.tolist())


def step(x):
    return hcb.id_tap(show, x) * 2
"""
BATCHES = """\
import jax
import jax.numpy as jnp

from vlib import batched


def run(xs):
    return jax.vmap(lambda x: batched.step(x) + 1)(xs)


print(jax.jit(run)(jnp.arange(3.0)).tolist())
"""


def _model(modules: dict[str, str]):
    import ast

    from hcmigrate.project_model.model import ProjectModel
    from hcmigrate.project_model.module_facts import facts_of

    model = ProjectModel()
    for name, text in modules.items():
        is_package = name.endswith(".__init__")
        model.add(facts_of(ast.parse(text), name.removesuffix(".__init__"), is_package))
    return model


def test_the_model_resolves_names_through_chains_and_ends_cycles():
    model = _model(
        {
            "p.__init__": "from .a import tap\n",
            "p.a": f"from {LEGACY} import id_tap as tap\nfrom p.b import *\n",
            "p.b": "from .a import tap as again\nfrom .b import loop\n",
            "p.c": "import p\nfrom p import b\n\np.tap(f, 1)\nb.again(f, 2)\nb.loop(3)\n",
        }
    )
    legacy_tap = ("legacy", f"{LEGACY}.id_tap")
    assert model.resolve("p.c", "p.tap") == legacy_tap  # a package __init__, relative
    assert model.resolve("p.c", "b.again") == legacy_tap  # a module attribute, an alias
    assert model.resolve("p.a", "again") == legacy_tap  # through a star import
    assert model.resolve("p.c", "b.loop") is None  # a module importing its own name: nothing
    assert model.legacy_links() == {
        "p": {"tap": f"{LEGACY}.id_tap"},
        "p.a": {"tap": f"{LEGACY}.id_tap"},
        "p.b": {"again": f"{LEGACY}.id_tap"},
    }
    assert model.spelled_uses("p.c") == {
        "p.tap": f"{LEGACY}.id_tap",
        "p.b.again": f"{LEGACY}.id_tap",
    }


def test_the_model_follows_transformations_through_calls_across_modules():
    model = _model(
        {
            "lib.taps": "def save(x):\n    pass\n\n\ndef step(x):\n    save(x)\n    return x\n",
            "lib.loop": "from lib import taps\n\n\ndef body(c, x):\n    return taps.step(c), x\n",
            "lib.run": '"""Not for jax.pmap."""\n'
            "import functools\nimport jax\nfrom lib.loop import body\n\n\n"
            "@functools.partial(jax.jit, in_shardings=None)\n"
            "def go(xs):\n    return jax.lax.scan(body, 0.0, xs)\n\n\n"
            "mapped = jax.vmap(lambda x: body(x, x))\n",
        }
    )
    assert {(r.function, r.transform, r.where) for r in model.runs_under("lib.taps")} == {
        ("step", "sharded jit", "lib.run, line 8"),
        ("step", "scan", "lib.run, line 9"),
        ("step", "vmap", "lib.run, line 12"),
        ("save", "sharded jit", "lib.run, line 8"),
        ("save", "scan", "lib.run, line 9"),
        ("save", "vmap", "lib.run, line 12"),
    }
    # a docstring naming pmap is no use of it; code naming it is
    assert model.modules["lib.run"].multi_device_api is None
    assert _model({"m": "from jax import pmap\n"}).modules["m"].multi_device_api == "pmap"


DEVICE = f"""\
from {LEGACY.rsplit(".", 1)[0]} import host_callback as hcb


def remember(x, device):
    print("device", device.platform, x)
    return x


def register(x):
    return hcb.call(remember, x, result_shape=x, call_with_device=True)
"""
STEPS = f"""\
from {LEGACY.rsplit(".", 1)[0]} import host_callback as hcb


def log(x):
    return hcb.id_tap(lambda v, t: print("log", v), x)
"""
ALONE = f"""\
from {LEGACY.rsplit(".", 1)[0]} import host_callback as hcb


def alone(x):
    return hcb.id_tap(lambda v, t: print("alone", v), x)
"""
PROGRAM = """\
import jax

from chain import alone, device, steps


@jax.jit
def program(x):
    return steps.log(device.register(x) + 1)


print(program(1.0))
print(jax.jit(alone.alone)(2.0))
"""


PROGRAMS = """\
import chain.program
import lib.solver
import vlib.batches
"""


def test_transformations_and_runtimes_across_modules_run_as_legacy_did(
    legacy_python: Path, tmp_path: Path
):
    """Three packages, run on two CPU devices by jax 0.4.30 and, migrated, by current JAX:
    `lib.solver` pmaps a function of `lib.taps`, which names no pmap (its tap becomes an
    ordered io_callback: ordered jax.debug callbacks are refused on two devices, an ordered
    io_callback runs under pmap from jax 0.8, once per device as legacy), and `lib.single` names
    pmap only in a docstring and a string (its tap is native). Native first (issue 37):
    `vlib.batches` vmaps a function of `vlib.batched` (legacy tapped the batch once) and
    `chain.device`'s call reads its device: both are left for a human, manual findings (the
    run exits 1), and a tap another module shares a program with stays native (no module
    follows another onto the compat runtime); the programs that import only native code run
    as legacy did."""
    files = {
        "lib/taps.py": TAPS,
        "lib/solver.py": SOLVER,
        "lib/single.py": SINGLE,
        "vlib/batched.py": BATCHED,
        "vlib/batches.py": BATCHES,
        "chain/device.py": DEVICE,
        "chain/steps.py": STEPS,
        "chain/alone.py": ALONE,
        "chain/program.py": PROGRAM,
        "programs.py": PROGRAMS,
    }
    legacy, report, migrated = _legacy_then_migrated(
        legacy_python, tmp_path, files, "-c", "import lib.solver", devices=2, exit_code=1
    )
    assert migrated == legacy == "[[0.0, 2.0], [4.0, 6.0]] [1.0, 5.0]\nshow 2.0\n2.0\n"
    assert "hcmigrate_compat" not in "".join(
        path.read_text() for path in (tmp_path / "migrated").rglob("*.py")
    )
    # The tap module names no pmap: the model says where its function runs on two devices.
    assert (
        "lib/taps.py:11:9: HCB101 [fixed-with-behaviour-note] id_tap -> io_callback(..., "
        "ordered=True): an ordered io_callback runs on several devices (`step` runs under pmap "
        "(lib.solver, line 10))" in report
    )
    # A pmap named only in a docstring or a string changes nothing: the tap is native.
    assert "lib/single.py:11:12: HCB101 [fixed-with-behaviour-note] id_tap -> jax.debug" in report
    assert (
        "vlib/batched.py:9:12: HCB102 [manual] id_tap left as it is, no native spelling keeps "
        "legacy behaviour: the tap function runs under jax.vmap (vlib.batches, line 8)" in report
    )
    assert (
        "chain/device.py:10:12: HCB303 [manual] call left as it is, no native spelling keeps "
        "legacy behaviour: the callback uses the `device` argument" in report
    )
    assert "chain/steps.py:5:12: HCB101 [fixed-with-behaviour-note]" in report
    assert "chain/alone.py:5:12: HCB101 [fixed-with-behaviour-note]" in report


DECODE = f"""\
import jax
from {LEGACY.rsplit(".", 1)[0]} import host_callback as hcb


def show(x, transforms):
    print("step", type(x).__name__, x.shape, x.tolist())


def decode(tokens):
    def body(i, t):
        t = t + 1
        hcb.id_tap(show, t)
        return t

    out = jax.lax.fori_loop(0, 2, body, tokens)
    hcb.id_print(out.sum(), what="total")
    return out
"""
SERVE = """\
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from mesh import decode

rows = NamedSharding(Mesh(np.array(jax.devices()), ("rows",)), PartitionSpec("rows"))
run = jax.jit(decode.decode, in_shardings=rows, out_shardings=rows)
out = run(jnp.arange(8.0).reshape(4, 2))
jax.effects_barrier()
print(len(out.sharding.device_set), out.tolist())
"""


def test_a_module_another_runs_in_a_sharded_jit_gets_ordered_io_callbacks(
    legacy_python: Path, tmp_path: Path
):
    """`mesh.serve` runs `mesh.decode.decode` in a jit given shardings over 4 CPU devices;
    `mesh.decode` names no multi-device API. Its tap and print become ordered io_callbacks
    (an ordered jax.debug.callback is refused on 4 devices), which legacy's whole-array
    calls, in program order, on jax 0.4.30 and current JAX alike."""
    files = {"mesh/decode.py": DECODE, "mesh/serve.py": SERVE}
    legacy, report, migrated = _legacy_then_migrated(
        legacy_python, tmp_path, files, "-m", "mesh.serve", devices=4
    )
    assert (
        migrated
        == legacy
        == (
            "step ndarray (4, 2) [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]\n"
            "step ndarray (4, 2) [[2.0, 3.0], [4.0, 5.0], [6.0, 7.0], [8.0, 9.0]]\n"
            "what: total\n44.\n"
            "4 [[2.0, 3.0], [4.0, 5.0], [6.0, 7.0], [8.0, 9.0]]\n"
        )
    )
    assert (
        "mesh/decode.py:12:9: HCB101 [fixed-with-behaviour-note] id_tap -> io_callback(..., "
        "ordered=True): an ordered io_callback runs on several devices (`decode` runs under "
        "sharded jit (mesh.serve, line 9))" in report
    )
    assert "mesh/decode.py:16:5: HCB201 [fixed-with-behaviour-note] id_print -> io_callback(" in (
        report
    )
    assert "jax.debug" not in (tmp_path / "migrated" / "mesh" / "decode.py").read_text()


# Star imports passed on through modules: chains of any depth, a namespace package (no
# `__init__.py`) and a package folder reached through a symlinked alias. Each `c` module's
# run() calls the names the chain brought it. Keys ending in "/" are folders made without an
# `__init__.py`; "alias -> target" is a symlink.
STAR_CHAINS = {
    # three star hops, the middle one relative
    "deep/__init__.py": "",
    "deep/m0.py": f"from {LEGACY} import id_print, id_tap\n",
    "deep/m1.py": "from deep.m0 import *\n",
    "deep/m2.py": "from .m1 import *\n",
    "deep/c.py": "from deep.m2 import *\nfrom shared import jit_run\n\n\n"
    "def run():\n    jit_run(lambda x: id_print(id_tap(lambda v, t: print('deep', v), x)))\n",
    # a namespace package: its modules' names come from the imports, not from packages
    "ns/m0.py": f"from {LEGACY} import id_tap\n",
    "ns/m1.py": "from ns.m0 import *\n",
    "ns/c.py": "from ns.m1 import *\nfrom shared import jit_run\n\n\n"
    "def run():\n    jit_run(lambda x: id_tap(lambda v, t: print('ns', v), x))\n",
    # a folder reached by two paths: `alias` is a symlink to `real/linked`
    "real/__init__.py": "",
    "real/linked/__init__.py": "",
    "real/linked/m0.py": f"from {LEGACY} import id_tap\n",
    "real/linked/m1.py": "from alias.m0 import *\n",
    "real/linked/c.py": "from real.linked.m1 import *\nfrom shared import jit_run\n\n\n"
    "def run():\n    jit_run(lambda x: id_tap(lambda v, t: print('linked', v), x))\n",
}
STAR_MAIN = """\
import importlib
import sys

for module in sys.argv[1:]:
    importlib.import_module(module).run()
"""
STAR_RUNS = ["deep.c", "ns.c", "real.linked.c"]


def test_star_chains_of_any_depth_keep_every_exporter_importable(
    legacy_python: Path, tmp_path: Path
):
    for version, star in (("original", False), ("migrated", True)):
        root = tmp_path / version
        for rel, text in {**STAR_CHAINS, "shared.py": SHARED, "main.py": STAR_MAIN}.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        (root / "alias").symlink_to(root / "real" / "linked", target_is_directory=True)
        if star:  # (legacy star imports bind no deprecated name on 0.4.30: only migrated)
            (root / "deep/m0.py").write_text(f"from {LEGACY} import *\n")
    legacy = _run(legacy_python, tmp_path / "original", "main.py", *STAR_RUNS)
    assert [line.split()[0] for line in legacy.splitlines() if line[0].isalpha()] == [
        "deep",
        "ns",
        "linked",
    ]
    tree = tmp_path / "migrated"
    result = run_hcmigrate(["."], tree)
    assert result.exit_code == 0, result.output
    # (native first: every module that took a name from an exporter was rewritten, so the
    # exporter's legacy import goes, said so, never as "unused")
    assert "HCB006" not in result.output and "unused" not in result.output, result.output
    for exporter in ("deep/m0.py", "ns/m0.py", "real/linked/m0.py"):
        assert "host_callback" not in (tree / exporter).read_text(), exporter
        assert f"{exporter}:1:1: HCB001 [fixed]" in result.output
    assert _run(sys.executable, tree, "main.py", *STAR_RUNS) == legacy
    # idempotent: a second run finds nothing left to do
    again = run_hcmigrate(["."], tree)
    assert again.exit_code == 0 and "rewrote" not in again.output, again.output


def test_the_model_starts_only_from_modules_that_bind_the_legacy_api(tmp_path: Path):
    from hcmigrate.discover import Target
    from hcmigrate.prefilter import scan
    from hcmigrate.project_model.build import build_run_model

    files = {
        # host_callback in a string only (HCB009 reports it): no binding, no model
        "lib/strings.py": 'import importlib\n\nMOD = importlib.import_module("jax.experimental.'
        'host_callback")\n\n\ndef f(x):\n    return x\n',
        "lib/user.py": "import jax\n\nfrom lib import strings\n\njax.jit(strings.f)\n",
        # a real binding, and a program that jits its function (split import, relative)
        "app/taps.py": f"from {LEGACY.rsplit('.', 1)[0]} import host_callback as hcb\n\n\n"
        "def step(x):\n    return hcb.id_tap(print, x)\n",
        "app/prog.py": "import jax\n\nfrom .taps import (\n    step,\n)\n\njax.pmap(step)\n",
        "app/plain.py": "from app import taps\n",  # imports it, applies nothing
    }
    _write(tmp_path, files)
    paths = sorted(str(p) for p in tmp_path.rglob("*.py"))
    targets = [Target(p, False) for p in paths]
    run = build_run_model(scan(paths), targets)
    assert set(run.model.modules) == {"app.taps", "app.prog"}
    assert {name.rsplit(".", 1)[0] for name in run.model.followed} >= {"app"}
    assert not any(name.startswith("lib") for name in run.model.followed)
    [(_, view)] = [(i, v) for i, v in run.views.items()]
    assert [transform for _, transform, _ in view.runs_under] == ["pmap"]


def test_same_named_modules_in_namespace_packages_end_the_resolution(tmp_path: Path):
    """Bazel-style trees (no `__init__.py`) with two files of one name: `a/server/jax/m.py`
    aliases a class of `a/server/m.py` (`from a.server import m; X = m.X`), and both are the
    module `m` to the model. The alias resolves back to the aliasing module, a cycle the model
    ends (it used to recurse until RecursionError and crash the run); the tap is migrated."""
    files = {
        "a/server/m.py": "class X:\n    pass\n",
        "a/server/jax/m.py": f"import jax\nfrom {LEGACY.rsplit('.', 1)[0]} import "
        "host_callback as hcb\nfrom a.server import m\n\nX = m.X\n\n\n"
        "def f(x):\n    return hcb.id_tap(lambda a, t: print(a), x)\n",
    }
    for rel, text in files.items():  # (no __init__.py anywhere)
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    result = run_hcmigrate(["--no-cache", "."], tmp_path)
    assert result.exit_code == 0, result.output
    written = (tmp_path / "a/server/jax/m.py").read_text()
    assert "host_callback" not in written and "X = m.X" in written
    compile(written, "m.py", "exec")
