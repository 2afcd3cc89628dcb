"""The measured callback facts (docs/callback_facts.json, tabled in docs/callback-semantics.md)
still hold: the decisive probes are measured again on the current JAX and on the oldest
supported JAX (the cached jax 0.6.2 environment of hcmigrate.legacy_env) and must give exactly
the committed results, so a JAX upgrade cannot change the table under the codemod unnoticed.
When one fails, re-run `python scripts/measure_callback_facts.py`, review the diff of the doc
and of every rule that reads the changed fact.

The probes are those the codemod's choice of spelling rests on: ordered/unordered io_callback,
jax.debug.callback and pure_callback under vmap, grad, vmap-of-cond and on several devices;
program order across callback chains; return values; what the host function receives; purity.
"""

from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "measure_callback_facts.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("measure_callback_facts", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


facts = _load_script()

DECISIVE_CONTEXTS = (
    "vmap",
    "grad",
    "vmap_cond_pred_unbatched",
    "vmap_cond_arg_unbatched",
    "pmap",
    "jit_sharded",
)
DECISIVE_SPELLINGS = ("io_ord", "io_unord", "dbg_cb", "dbg_cb_ord", "pure_used")
DECISIVE_FOCUSED = (
    "argtypes/io_ord/none",
    "argtypes/io_ord/tree_np_array",
    "argtypes/dbg_cb/tree_np_asarray",
    "return/io_ord/True",
    "return/io_ord/empty_tuple",
    "return/dbg_cb/True",
    "result/io_ord_res/float64_array",
    "raise/io_ord",
    "order/one_function/io_ord+dbg_cb_ord+io_ord",
    "order/one_function/io_ord+io_ord+io_ord",
    "order/one_function/dbg_cb_ord+dbg_print_ord+dbg_cb_ord",
    "order/separate_functions/io_ord+dbg_print_ord+io_ord",
    "purity/random_no_args/pure_used",
    "purity/read_after_tap/pure_used",
    "purity/read_after_tap/io_ord_res",
    "device/io_dev1_res/jit_sharded",
)
# With one device, ordered jax.debug callbacks are accepted where 4 devices refuse them.
DECISIVE_ONE_DEVICE = ("grid/dbg_cb_ord/pmap", "grid/dbg_cb_ord/jit_sharded")
ROLES = ("current", "oldest")


def decisive_probes() -> list[str]:
    grid = [f"grid/{s}/{c}" for s in DECISIVE_SPELLINGS for c in DECISIVE_CONTEXTS]
    return ["meta", *grid, *DECISIVE_FOCUSED]


@pytest.fixture(scope="module")
def committed() -> dict:
    return facts.load_data()


@pytest.fixture(scope="module")
def remeasured() -> dict:
    """{(role, devices): {probe id: result}}, measured now, two interpreters in parallel."""
    pythons = {role: facts.interpreter(role) for role in ROLES}
    jobs = [(role, 4, decisive_probes()) for role in ROLES]
    jobs += [(role, 1, ["meta", *DECISIVE_ONE_DEVICE]) for role in ROLES]

    def run(job):
        role, devices, ids = job
        return (role, devices), facts.measure(pythons[role], ids, devices, jobs=1)

    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(run, jobs))


def _mismatches(committed: dict, measured: dict, role: str, devices: int) -> list[str]:
    run = committed["roles"][role][str(devices)]
    out = []
    for probe_id, result in measured.items():
        if probe_id == "meta":
            continue
        expected = run["probes"][probe_id]
        if result != expected:
            out.append(f"{probe_id}:\n  committed {expected}\n  measured  {result}")
    if out:
        was, now = run["meta"]["jax"], measured["meta"]["jax"]
        out.insert(0, f"{role} JAX ({devices} devices): committed on jax {was}, now jax {now}")
    return out


@pytest.mark.parametrize("devices", [4, 1])
@pytest.mark.parametrize("role", ROLES)
def test_decisive_facts_still_hold(role, devices, committed, remeasured):
    measured = remeasured[(role, devices)]
    assert measured["meta"]["device_count"] == devices
    problems = _mismatches(committed, measured, role, devices)
    assert not problems, "\n".join(problems)


def test_oldest_is_the_claimed_oldest_jax(committed, remeasured):
    assert remeasured[("oldest", 4)]["meta"]["jax"] == facts.OLDEST_JAX
    assert committed["roles"]["oldest"]["4"]["meta"]["jax"] == facts.OLDEST_JAX


def test_committed_data_covers_every_probe(committed):
    """Every spelling in every context, and every focused probe, for each interpreter and device
    count the script measures, and nothing the script no longer measures."""
    assert set(committed["roles"]) == set(facts.ROLES)
    for role in facts.ROLES:
        for devices in facts.DEVICE_COUNTS:
            run = committed["roles"][role][str(devices)]
            expected = [p for p in facts.probe_ids(role, devices) if p != "meta"]
            assert sorted(run["probes"]) == sorted(expected), (role, devices)
            assert run["meta"]["device_count"] == devices
            defects = [k for k, v in run["probes"].items() if v["status"] == "probe-defect"]
            assert not defects


def test_legacy_reference_is_the_real_host_callback(committed):
    meta = committed["roles"]["legacy"]["4"]["meta"]
    assert meta["jax"] == "0.4.30" and meta["legacy_host_callback"]


def test_doc_tables_are_generated_from_the_committed_data(committed):
    doc = facts.DOC.read_text(encoding="utf-8")
    assert facts.replace_generated(doc, committed) == doc, (
        "docs/callback-semantics.md is stale: python scripts/measure_callback_facts.py --render"
    )


def test_table_cells_show_failures_and_calls():
    """The cell rendering the doc relies on: call runs, transforms, failures with footnotes."""
    notes = facts.Notes()
    arg = "np.ndarray float32[2,3] read-only owndata"
    ok = {"status": "ok", "calls": [{"args": [arg], "transforms": ["batch"]}], "value_ok": True}
    assert facts.cell(ok, notes) == "✓ 1×[2,3] (batch)"
    calls = [{"args": ["jax.Array float32[3]"]}] * 2 + [{"args": ["jax.Array int32[]"]}]
    two = {"status": "ok", "calls": calls, "value_ok": False}
    assert facts.cell(two, notes) == "✓ 2×[3], 1×int32[] **wrong value**"
    failed = {"status": "error", "error": "ValueError: Cannot `vmap` ordered IO callback."}
    assert facts.cell(failed, notes) == "✗ [E1](#e1)"
    assert notes.render() == [
        '- <a id="e1"></a>**E1** `` ValueError: Cannot `vmap` ordered IO callback. ``'
    ]
    assert facts.cell({"status": "ok", "calls": []}, notes) == "✓ 0 calls"
