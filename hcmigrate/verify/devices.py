"""Which device a host call ran for, the same on every runtime, and a trace's host calls split
per device.

Under `pmap` (or any multi-device computation) each device runs its own copy of the program:
the calls of one device come in program order, but how the devices' calls interleave is up to
the runtime, in legacy JAX too. Verify therefore compares each device's calls in order and
leaves the interleaving free. A device is known where the callback receives it
(`tap_with_device=True`, `call_with_device=True`); legacy JAX 0.4.30 names a CPU device
`TFRT_CPU_0` and current JAX `cpu:0`, and a device's repr is `CpuDevice(id=0)`: all read as
`cpu:0` (its platform and id)."""

from __future__ import annotations

import re

# str() of a device in legacy JAX (`TFRT_CPU_1`) and repr() on every version (`CpuDevice(id=1)`,
# `StreamExecutorGpuDevice(id=0)`, `CudaDevice(id=0)`, `TpuDevice(id=0, ...)`).
_LEGACY_CPU = re.compile(r"\bTFRT_CPU_(\d+)\b")
_DEVICE_REPR = re.compile(r"\b(?:StreamExecutor)?(Cpu|Gpu|Cuda|Rocm|Tpu)Device\(id=(\d+)[^)]*\)")
_PLATFORM = {"Cpu": "cpu", "Gpu": "gpu", "Cuda": "gpu", "Rocm": "gpu", "Tpu": "tpu"}


def device_text(text: str) -> str:
    """`text` with every device written as `platform:id` (`TFRT_CPU_1`, `CpuDevice(id=1)`: `cpu:1`;
    `cuda:0`: `gpu:0`)."""
    text = _LEGACY_CPU.sub(r"cpu:\1", text)
    text = _DEVICE_REPR.sub(lambda m: f"{_PLATFORM[m.group(1)]}:{m.group(2)}", text)
    return re.sub(r"\b(?:cuda|rocm):(\d+)\b", r"gpu:\1", text)


def device_of(event: dict) -> str | None:
    """The device an event's host call ran for (`cpu:1`), None where the callback got none."""
    device = event.get("device")
    return device_text(device) if device else None


def per_device(E: list[dict], G: list[dict]) -> list[tuple[str | None, list[dict], list[dict]]]:
    """[(device, reference events, candidate events)], each in program order: one group per
    device when both sides know the devices of their calls, else one group of all events
    (device None). Calls without a device (an unordered callback beside per-device taps) form a
    group of their own."""
    if not (any(device_of(e) for e in E) and any(device_of(g) for g in G)):
        return [(None, E, G)]
    groups: dict[str | None, tuple[list[dict], list[dict]]] = {}
    for side, events in ((0, E), (1, G)):
        for ev in events:
            groups.setdefault(device_of(ev), ([], []))[side].append(ev)
    return [(device, *groups[device]) for device in sorted(groups, key=_device_order)]


def _device_order(device: str | None) -> tuple:
    """No device first, then by platform and id as a number (cpu:2 before cpu:10)."""
    if device is None:
        return ()
    platform, _, index = device.rpartition(":")
    return (platform, int(index) if index.isdigit() else -1, device)
