"""Host calls under pmap are compared device by device: each device's calls in program order,
the interleaving of devices free (it changes run to run, in legacy JAX too), the device named
the same on every JAX version; a difference on one device is still reported, naming it."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest

from hcmigrate.verify.compare import compare_traces
from hcmigrate.verify.devices import device_text

from verify_helpers import hcmigrate_verify

CASES = Path(__file__).resolve().parent.parent / "fixtures" / "verify"


def _interleaved(trace: dict, seed: int) -> dict:
    """The trace with its host calls interleaved across devices at random, each device's calls
    kept in their order (what another run may do)."""
    out = copy.deepcopy(trace)
    per_device: dict[str, list[dict]] = {}
    for ev in out["events"]:
        per_device.setdefault(ev["device"], []).append(ev)
    rng = random.Random(seed)
    order = [d for d, evs in per_device.items() for _ in evs]
    rng.shuffle(order)
    out["events"] = [per_device[d].pop(0) for d in order]
    return out


@pytest.fixture(scope="module")
def recorded(legacy_python, tmp_path_factory):
    """One real run of the faithful migration on jax 0.4.30: (report, reference, candidate)."""
    traces = tmp_path_factory.mktemp("traces")
    res = hcmigrate_verify(
        CASES / "pmap_device_taps.original.py",
        "--candidate",
        CASES / "pmap_device_taps.good.py",
        "--reference",
        "legacy",
        "--keep-traces",
        traces,
    )
    ref = json.loads((traces / "reference.json").read_text())
    return res, ref, json.loads((traces / "candidate.json").read_text())


def test_faithful_multi_device_migration_is_equivalent_whatever_the_interleaving(recorded):
    res, ref, cand = recorded
    assert res.returncode == 0, res.stdout + res.stderr
    # legacy JAX 0.4.30 names the device TFRT_CPU_1, current JAX cpu:1
    assert {ev["device"] for ev in ref["events"]} == {"TFRT_CPU_0", "TFRT_CPU_1"}
    assert {ev["device"] for ev in cand["events"]} == {"cpu:0", "cpu:1"}
    seen = set()
    for seed in range(20):
        shuffled = _interleaved(cand, seed)
        seen.add(tuple(ev["device"] for ev in shuffled["events"]))
        comparison = compare_traces(_interleaved(ref, seed + 100), shuffled)
        assert comparison.equivalent, [d.message for d in comparison.differences]
    assert len(seen) > 10  # the interleavings really differed


def test_a_difference_on_one_device_is_reported_with_its_device(recorded):
    _, ref, cand = recorded
    cand = copy.deepcopy(cand)
    a, b = [ev for ev in cand["events"] if ev["device"] == "cpu:1"][2:4]
    a["args"], b["args"] = b["args"], a["args"]  # device 1's third and fourth calls swapped
    comparison = compare_traces(ref, _interleaved(cand, 0))
    [diff] = comparison.differences
    assert diff.message == (
        "on device cpu:1: event #2 `log_step` via id_tap (ordered): arguments differ: "
        "value 103.0 vs 106.0 at argument 1 (candidate pmap_device_taps.good.py:17)"
    ), diff.message


def test_devices_are_named_alike_across_jax_versions():
    assert device_text("device TFRT_CPU_1 step") == "device cpu:1 step"
    assert device_text("CpuDevice(id=3)") == "cpu:3"
    assert device_text("cuda:0 and StreamExecutorGpuDevice(id=1)") == "gpu:0 and gpu:1"
    assert device_text("TFRT_CPU_10") != device_text("cpu:1")
