"""The facts the codemod's choice for modules on several devices rests on
(docs/ordered_io_devices.json, tabled in docs/callback-semantics.md "Ordered callbacks on
several devices, release by release") still hold on the current JAX: the decisive probes are
measured again and must give the committed results, and the table is the data's. When one
fails, re-run `python scripts/measure_ordered_io_devices.py` and review what reads the fact
(hcmigrate.codemod.resolution.Resolver.devices_join_io_chain).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import jax
import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "measure_ordered_io_devices.py"
spec = importlib.util.spec_from_file_location("measure_ordered_io_devices", SCRIPT)
measure = importlib.util.module_from_spec(spec)
spec.loader.exec_module(measure)

DECISIVE = (
    "io_ord/jit_mesh",  # an ordered io_callback runs in a sharded jit, once, whole array
    "io_ord/shard_map",
    "io_ord/jit_mesh_vmap",  # ... and fails under vmap there
    "dbg_cb_ord/jit_mesh",  # an ordered jax.debug.callback is refused on 4 devices
)


@pytest.mark.parametrize("probe", DECISIVE)
def test_the_decisive_probes_give_the_committed_results(probe):
    committed = json.loads(measure.DATA.read_text())[jax.__version__][probe]
    spelling, context = probe.split("/")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--probe", spelling, context],
        capture_output=True,
        text=True,
        env=measure.child_env(),
        timeout=120,
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == committed


def test_the_docs_table_is_the_datas():
    text = measure.DOC.read_text()
    table = text[text.index(measure.BEGIN) : text.index(measure.END) + len(measure.END)]
    assert table == measure.render(json.loads(measure.DATA.read_text()))
