"""Native first, compat by choice (issue 37): a library-shaped project (a pyproject with a name,
a package, tests) migrated with the default strategy gets no `hcmigrate_compat` import and no
new dependency; each site with a native spelling that keeps legacy behaviour gets it, and the
migrated programs print on current JAX (two CPU devices where they pmap) exactly what they
printed on jax 0.4.30; a site with none is a manual finding naming the reason and the ways
forward. Only `--strategy compat` writes compat imports.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.cli_helpers import run

PYPROJECT = """\
[project]
name = "mylib"
version = "0.1"
dependencies = ["jax>=0.8", "numpy"]

[tool.black]
line-length = 100

[tool.isort]
profile = "black"
line_length = 100
"""

FILES = {
    "pyproject.toml": PYPROJECT,
    "mylib/__init__.py": '"""Small helpers around jax."""\n',
    # taps that read their device under pmap: once per step (`device.id == 0`), per device
    "mylib/progress.py": """\
import functools

import jax
import jax.numpy as jnp
from jax.experimental import host_callback as hcb

SEEN = {}


def _log_step(loss, transforms, device):
    if device.id == 0:
        print("step loss", loss)


def _remember(x, transforms, *, device=None):
    SEEN[device.id] = x.tolist()


def _train_step(x):
    loss = jnp.sum(x * x)
    hcb.id_tap(_log_step, loss, tap_with_device=True)
    return x - 0.1 * x


train_step = jax.pmap(_train_step, axis_name="batch")


@functools.partial(jax.pmap, axis_name="shard")
def scale(x):
    hcb.id_tap(_remember, x * 3, tap_with_device=True)
    return x * 3
""",
    # a tap that hands `transforms` to a helper ignoring it
    "mylib/info.py": """\
from jax.experimental import host_callback as hcb

INFO = []


def _update_info(ival, _):
    INFO.append(int(ival))


def _tap_info(ival, transforms):
    _update_info(ival, transforms)


def count(i):
    return hcb.id_tap(_tap_info, i)
""",
    # prints of single arrays (one line each) and of a tuple (the layout helper)
    "mylib/stats.py": """\
import jax.numpy as jnp
from jax.experimental import host_callback as hcb


def summarize(x):
    total = jnp.sum(x)
    hcb.id_print(total, what="total")
    hcb.id_print(x * 0.5, what="half", step=2)
    hcb.id_print((x.min(), x.max()), what="range")
    return total
""",
    # a tap that really reads `transforms`: no native spelling
    "mylib/batches.py": """\
from jax.experimental import host_callback as hcb


def _show(x, transforms):
    print(transforms, x)


def show(x):
    return hcb.id_tap(_show, x)
""",
    # patches the legacy primitive's batching rule: no runtime makes it run on current JAX
    "mylib/batching.py": """\
from jax.experimental import host_callback as hcb
from jax.interpreters import batching


def _batch_rule(args, dims, **params):
    return hcb.outside_call_p.bind(*args, **params), dims


batching.primitive_batchers[hcb.outside_call_p] = _batch_rule


def tap(x):
    return hcb.id_tap(print, x)
""",
    "tests/test_stats.py": """\
from mylib import stats


def test_summarize():
    assert float(stats.summarize([1.0, 2.0])) == 3.0
""",
}
DEMO = """\
import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from mylib import info, progress, stats  # noqa: E402

x = jnp.arange(6.0).reshape(2, 3)
for _ in range(3):
    x = progress.train_step(x)
print(progress.scale(jnp.ones((2, 2))))
print(jax.jit(lambda i: info.count(i) + 1)(4))
print(jax.jit(stats.summarize)(jnp.array([1.5, 2.25, 3.0])))
jax.effects_barrier()
print(sorted(progress.SEEN.items()), info.INFO)
"""
NATIVE = ("mylib/progress.py", "mylib/info.py", "mylib/stats.py")


def _project(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _demo(python, root: Path) -> str:
    (root / "demo.py").write_text(DEMO)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [str(python), "demo.py"], cwd=root, capture_output=True, text=True, timeout=300, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (root / "demo.py").unlink()
    return result.stdout


def _checkers(root: Path, path: str) -> list[int]:
    """black's and isort's exit codes on `path` with the project's own settings."""
    return [
        subprocess.run(
            [sys.executable, "-m", tool, "--check", "--quiet", path],
            cwd=root,
            capture_output=True,
            timeout=120,
        ).returncode
        for tool in ("black", "isort")
    ]


def test_a_library_gets_native_code_and_no_compat_dependency(legacy_python, tmp_path):
    original = _project(tmp_path / "original")
    legacy = _demo(legacy_python, original)
    assert legacy.startswith("step loss 5.0\nstep loss 4.0499997\nstep loss 3.2805\n"), legacy
    migrated = tmp_path / "migrated"
    shutil.copytree(original, migrated)
    checked_before = {rel: _checkers(migrated, rel) for rel in NATIVE}
    assert checked_before == {rel: [0, 0] for rel in NATIVE}  # (the project passed its CI)

    result = run(["--no-cache", "."], migrated)
    assert result.exit_code == 1, result.output  # (the two modules left for a human)

    texts = {p: p.read_text() for p in migrated.rglob("*") if p.is_file()}
    assert not any("hcmigrate_compat" in text for text in texts.values())
    assert (migrated / "pyproject.toml").read_text() == PYPROJECT  # no dependency, no floor
    assert "hcmigrate-compat" not in result.output
    for rel in NATIVE:
        assert "host_callback" not in (migrated / rel).read_text(), rel
        assert _checkers(migrated, rel) == [0, 0], (rel, (migrated / rel).read_text())
    # the device taps get the shard's index; the pass-through tap is called with ()
    progress = (migrated / "mylib/progress.py").read_text()
    assert 'jax.lax.axis_index("batch")' in progress and 'jax.lax.axis_index("shard")' in progress
    assert "def _log_step(loss, transforms, device):" in progress
    assert "_tap_info(jax.tree.map(np.array, arg), ())" in (migrated / "mylib/info.py").read_text()
    # one line per single value; the layout helper only for the tuple
    stats = (migrated / "mylib/stats.py").read_text()
    assert stats.count("np.array2string(np.asarray(v))") == 2
    assert stats.count("def _print_like_id_print") == 1 and stats.count("_print_like_id_print") == 2

    # the same text on current JAX (two CPU devices) as on jax 0.4.30
    assert _demo(sys.executable, migrated) == legacy

    # the sites with no native spelling: left as they were, each naming the ways forward
    for rel in ("mylib/batches.py", "mylib/batching.py"):
        assert (migrated / rel).read_text() == FILES[rel], rel
    lines = result.output.splitlines()
    (reads,) = [line for line in lines if line.startswith("mylib/batches.py:9:12: HCB102 [manual]")]
    assert "the tap function reads `transforms`" in reads
    assert "port it by hand" in reads and 'strategy = "compat"' in reads
    patched = [line for line in lines if line.startswith("mylib/batching.py")]
    assert patched and all("[manual]" in line for line in patched), patched
    assert all("port" in line and "strategy" not in line for line in patched), patched
    assert "HCB102" in "".join(patched) and "HCB502" in "".join(patched)
    # a second run changes nothing
    again = run(["--no-cache", "."], migrated)
    assert {p: p.read_text() for p in migrated.rglob("*") if p.is_file()} == texts
    assert again.exit_code == 1


def test_only_the_compat_strategy_writes_compat_imports(tmp_path):
    project = _project(tmp_path)
    result = run(["--no-cache", "--strategy", "compat", "mylib/batches.py"], project)
    assert result.exit_code == 0, result.output
    assert (
        "from hcmigrate_compat import host_callback as hcb\n"
        in (project / "mylib/batches.py").read_text()
    )


def test_one_jax_numpy_array_as_result_shape_needs_no_helper():
    """(issue 37) `result_shape=jnp.ones((n,))` is one array of a canonical dtype: it is given
    to pure_callback as it is, with no `_shape_dtype_structs` helper, and the call runs."""
    from hcmigrate import migrate_source

    source = (
        "import jax.numpy as jnp\nimport numpy as np\n"
        "from jax.experimental import host_callback as hcb\n\n\n"
        "def f(x, n):\n    return hcb.call(np.sin, x, result_shape=jnp.ones((n,)))\n"
    )
    code = migrate_source(source).code
    assert "_shape_dtype_structs" not in code
    assert "jax.pure_callback(np.sin, jnp.ones((n,)), x, " in code
    namespace: dict = {}
    exec(compile(code, "f.py", "exec"), namespace)  # noqa: S102
    import jax
    import jax.numpy as jnp

    out = jax.jit(namespace["f"], static_argnums=1)(jnp.arange(3.0), 3)
    assert [round(float(v), 5) for v in out] == [0.0, 0.84147, 0.9093]


def test_per_file_strategy_chooses_compat_for_the_files_it_names(tmp_path):
    """`[tool.hcmigrate.per-file-strategy]` (as Ruff's per-file-ignores): the file whose taps
    have no native spelling runs on the compat runtime, by the user's choice, and every other
    file is rewritten natively; the dependency is declared because the code now imports the
    runtime. `--strategy` on the command line is every file's."""
    project = _project(tmp_path)
    pyproject = project / "pyproject.toml"
    pyproject.write_text(
        PYPROJECT + '\n[tool.hcmigrate.per-file-strategy]\n"mylib/batches.py" = "compat"\n'
    )
    result = run(["--no-cache", "."], project)
    compat_import = "from hcmigrate_compat import host_callback as hcb\n"
    assert compat_import in (project / "mylib/batches.py").read_text(), result.output
    for rel in (*NATIVE, "mylib/batching.py"):
        assert "hcmigrate_compat" not in (project / rel).read_text(), rel
    assert "hcmigrate-compat" in pyproject.read_text()
    assert "mylib/batches.py" not in "".join(
        line for line in result.output.splitlines() if "[manual]" in line
    )
    # the command line's strategy wins over the table
    again = _project(tmp_path / "again")
    (again / "pyproject.toml").write_text(pyproject.read_text())
    native = run(["--no-cache", "--strategy", "native", "mylib/batches.py"], again)
    assert "hcmigrate_compat" not in (again / "mylib/batches.py").read_text(), native.output
    # a strategy that is none is named with the file and the pattern
    (again / "pyproject.toml").write_text(
        PYPROJECT + '\n[tool.hcmigrate.per-file-strategy]\n"mylib/*.py" = "fast"\n'
    )
    bad = run(["--no-cache", "."], again)
    assert bad.exit_code == 2
    assert (
        'pyproject.toml: [tool.hcmigrate.per-file-strategy] "mylib/*.py" must be one of '
        "native, compat, not 'fast'"
    ) in bad.output


def test_verify_migrates_its_copy_with_the_per_file_strategy(tmp_path):
    """`hcmigrate verify` migrates its copy of the project as `hcmigrate .` does: the files
    the per-file-strategy table names point at the compat runtime, the others are native."""
    from hcmigrate.verify.project import find_project
    from hcmigrate.verify.workspace import migrate_copy

    project = _project(tmp_path / "proj")
    (project / "pyproject.toml").write_text(
        PYPROJECT + '\n[tool.hcmigrate.per-file-strategy]\n"mylib/batches.py" = "compat"\n'
    )
    found = find_project(project)
    (tmp_path / "work").mkdir()
    copy, _ = migrate_copy(project, tmp_path / "work", per_file_strategy=found.per_file_strategy)
    assert "from hcmigrate_compat import" in (copy / "mylib/batches.py").read_text()
    assert "hcmigrate_compat" not in (copy / "mylib/info.py").read_text()
    assert "jax.debug.callback" in (copy / "mylib/info.py").read_text()


def test_a_tap_that_only_deletes_transforms_does_not_read_it():
    """chex's `_host_failure_handler(arg, transforms, *, device=None)` begins with `del
    transforms`: no read. Without a device it is rewritten natively, called with `()` for
    the parameter it keeps (its `del` needs it); with the device it reads, the manual
    finding names the device, not `transforms`."""
    from hcmigrate import Options, migrate_source

    tap = (
        "from jax.experimental import host_callback as hcb\n\nERRORS = []\n\n\n"
        "def _handler(arg, transforms):\n    del transforms\n    ERRORS.append(arg)\n\n\n"
        "def failed(x):\n    return hcb.id_tap(_handler, arg=(1, x), result=x)\n"
    )
    result = migrate_source(tap, Options())
    assert "_handler(jax.tree_util.tree_map(np.array, arg), ())" in result.code, result.code
    assert "def _handler(arg, transforms):\n    del transforms\n" in result.code
    with_device = (
        tap.replace("transforms):", "transforms, *, device=None):")
        .replace("ERRORS.append(arg)", "ERRORS.append((arg, device))")
        .replace("result=x)", "result=x, tap_with_device=True)")
    )
    [finding] = [
        d for d in migrate_source(with_device, Options()).diagnostics if d.code == "HCB102"
    ]
    assert "the tap function uses the `device` argument" in finding.message, finding.message


def test_transforms_handed_to_a_nested_helper_that_ignores_it_is_no_read():
    """cola's factories define the tap and the helper it hands `transforms` to inside one
    function; the helper never reads it, so the tap is rewritten natively (as at module level),
    not left manual as "reads `transforms`"."""
    from hcmigrate import Options, migrate_source

    text = (
        "from jax.experimental import host_callback as hcb\n\n\n"
        "def make():\n"
        "    def update(arg, transform):\n        print('update', arg)\n\n"
        "    def close(arg, transform):\n        update(arg, transform)\n\n"
        "    def run(x):\n        return hcb.id_tap(close, x)\n\n"
        "    return run\n"
    )
    result = migrate_source(text, Options())
    assert [d.code for d in result.diagnostics if d.code.startswith("HCB1")] == ["HCB101"]
    assert "close(jax.tree_util.tree_map(np.array, arg), ())" in result.code, result.code
    # (a nested helper that reads it keeps the finding)
    reading = text.replace("print('update', arg)", "print('update', arg, transform)")
    codes = [d.code for d in migrate_source(reading, Options()).diagnostics]
    assert "HCB102" in codes, codes
