"""JAX113: `jax.sharding.PositionalSharding` (removed in JAX 0.7.0) in the forms code written for
jax 0.4 used, rewritten to the NamedSharding of the same placement (issue 36). The program's
output on real jax 0.4.30 with 4 forced CPU devices is its golden output; after `hcmigrate` it
prints the same on the current JAX, where the original cannot even be imported. A module that
uses the name in type checks and annotations only imports again; look-alikes (a class of the
project's own called PositionalSharding) are left alone."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hcmigrate import Options, migrate_source
from tests.cli_helpers import run

_FORMS = textwrap.dedent(
    """\
    import jax
    import jax.sharding as shd
    import numpy as np
    from jax.sharding import PositionalSharding

    sharding = PositionalSharding(jax.devices())


    def placed(x):
        return sorted((s.device.id, str(s.index)) for s in x.addressable_shards)


    def main():
        local = shd.PositionalSharding(jax.local_devices()[:4])
        arrays = [
            jax.device_put(np.arange(8.0), sharding),
            jax.device_put(np.ones((8, 6)), sharding.reshape(4, 1)),
            jax.device_put(np.ones((8, 6)), sharding.reshape((2, 2))),
            jax.device_put(np.ones((8, 8)), local.reshape(1, 4)),
            jax.device_put(np.arange(8.0), sharding.replicate()),
            jax.device_put(np.ones((8, 6)), sharding.reshape(4, 1).replicate()),
            jax.device_put(np.ones((4, 4)), PositionalSharding(jax.devices()).reshape(2, 2)),
            jax.device_put(np.ones(4), jax.sharding.PositionalSharding(jax.devices())),
            jax.jit(lambda v: v * 2, out_shardings=sharding.reshape(4, 1))(np.ones((4, 2))),
        ]
        for x in arrays:
            print(x.sharding.is_fully_replicated, placed(x))
    """
)

_CHECKS = textwrap.dedent(
    """\
    from __future__ import annotations

    from typing import Optional

    import jax
    from jax.sharding import NamedSharding, PositionalSharding


    def kind(s: Optional[PositionalSharding]) -> str:
        if isinstance(s, (PositionalSharding, type(None))):
            return "positional-or-none"
        return "named" if isinstance(s, NamedSharding) else "other"


    def main():
        mesh = jax.sharding.Mesh(jax.devices(), ("d",))
        print(kind(None), kind(NamedSharding(mesh, jax.sharding.PartitionSpec())), kind(1))
    """
)

_OWN = textwrap.dedent(
    """\
    class PositionalSharding:
        def __init__(self, devices):
            self.devices = list(devices)

        def reshape(self, *shape):
            return ("reshaped", shape, len(self.devices))

        def replicate(self):
            return ("replicated", len(self.devices))


    def main():
        s = PositionalSharding(range(4))
        print(s.reshape(4, 1), s.replicate())
    """
)

_MAIN = "from pkg import checks, forms, own\n\nforms.main()\nchecks.main()\nown.main()\n"


def _project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "forms.py").write_text(_FORMS)
    (root / "pkg" / "checks.py").write_text(_CHECKS)
    (root / "pkg" / "own.py").write_text(_OWN)
    (root / "main.py").write_text(_MAIN)
    return root


def _printed(python: str, root: Path) -> subprocess.CompletedProcess:
    env = {
        "JAX_PLATFORMS": "cpu",
        "XLA_FLAGS": "--xla_force_host_platform_device_count=4",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }
    return subprocess.run(
        [python, "main.py"], cwd=root, capture_output=True, text=True, env=env, timeout=300
    )


def test_positional_sharding_forms_place_shards_as_legacy_did(tmp_path, legacy_python):
    root = _project(tmp_path / "p")
    golden = _printed(str(legacy_python), root)
    assert golden.returncode == 0, golden.stderr
    assert golden.stdout.count("\n") == 11
    assert "cannot import name 'PositionalSharding'" in _printed(sys.executable, root).stderr

    result = run(["."], root)
    assert result.exit_code in (0, 1), result.output
    forms = (root / "pkg" / "forms.py").read_text()
    checks = (root / "pkg" / "checks.py").read_text()
    assert "PositionalSharding" not in forms  # (every use rewritten: the import went)
    assert "except ImportError:" in checks and "isinstance(s, (PositionalSharding," in checks
    assert (root / "pkg" / "own.py").read_text() == _OWN

    after = _printed(sys.executable, root)
    assert after.returncode == 0, after.stderr
    assert after.stdout == golden.stdout
    legacy_after = _printed(str(legacy_python), root)  # (and still on jax 0.4.30)
    assert legacy_after.stdout == golden.stdout, legacy_after.stderr
    assert run(["--check", "."], root).exit_code == 0  # idempotent


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            # devices of unknown rank, a shape computed at run time, `.shape` of a name
            "import jax\nfrom jax.sharding import PositionalSharding\n\n\ndef f(devices, n):\n"
            "    s = PositionalSharding(devices)\n    t = PositionalSharding(jax.devices())\n"
            "    return s, t.reshape(n, 1), t.shape\n",
            "2:26 JAX113 [manual] import of `jax.sharding.PositionalSharding` guarded: on JAX >= "
            "0.7.0 `PositionalSharding` is a class nothing is an instance of (type checks and "
            "annotations keep working); its uses on lines 6, 7 are left: "
            "NamedSharding(Mesh(devices, names), PartitionSpec(...))",
        ),
        (
            "import jax\n\nS = jax.sharding.PositionalSharding\n",
            "3:5 JAX113 [manual] `jax.sharding.PositionalSharding` was removed in JAX 0.7.0: "
            "NamedSharding(Mesh(devices, names), PartitionSpec(...))",
        ),
    ],
    ids=["left-uses", "as-a-value"],
)
def test_other_forms_are_reported_with_the_replacement(text, expected):
    result = migrate_source(text, Options())
    briefs = [d.brief() for d in result.diagnostics]
    assert len(briefs) == 1 and briefs[0].startswith(expected), briefs
    compile(result.code, "<migrated>", "exec")


def test_a_project_capped_below_the_removal_keeps_its_import(tmp_path):
    """A project whose jax requirement stops below 0.7.0 (`^0.4.25`, poetry's `<0.5`) installs
    only JAX that has PositionalSharding: its import is left as it is (no guard in the import
    block, no placeholder class), the use no form rewrites is said with the replacement for the
    day the pin is raised; the forms that are rewritten still are."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.poetry]\nname = "capped"\nversion = "0.1"\n\n'
        '[tool.poetry.dependencies]\npython = "^3.10"\njax = "^0.4.25"\n'
    )
    module = tmp_path / "capped" / "train.py"
    module.parent.mkdir()
    (module.parent / "__init__.py").write_text("")
    source = (
        "import jax\n"
        "from jax.experimental import mesh_utils\n"
        "from jax.sharding import PositionalSharding\n"
        "from tqdm import trange\n\n\n"
        "def shard(n):\n"
        "    return PositionalSharding(mesh_utils.create_device_mesh((n, 1)))\n"
    )
    module.write_text(source)
    result = run(["--no-cache", "."], tmp_path)
    assert module.read_text() == source, module.read_text()
    assert (
        "capped/train.py:3:26: JAX113 [manual] import of `jax.sharding.PositionalSharding` "
        "left: the project's jax requirement stops below 0.7.0, which removed it; its uses on "
        "line 8 need, once the pin allows JAX >= 0.7.0:"
    ) in result.output, result.output
    # the same module in a project that allows current JAX gets the guard
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "capped"\nversion = "0.1"\ndependencies = ["jax>=0.4.25"]\n'
    )
    run(["--no-cache", "."], tmp_path)
    assert "except ImportError:" in module.read_text()
