"""The legacy programs of fixtures/realworld and fixtures/fidelity (read by
scripts/check_fidelity.py) each have a golden trace written by scripts/record_golden.py from
real jax 0.4.30, so none can go missing or be replaced by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hcmigrate.verify.golden import MARKER

REPO = Path(__file__).resolve().parent.parent
FOLDERS = ["fixtures/realworld", "fixtures/fidelity"]


def _programs(folder: Path) -> dict[str, Path]:
    """Every program the folder holds: `NAME.in.py`, or `NAME/main.py` for a package."""
    found = {p.name[: -len(".in.py")]: p for p in folder.glob("*.in.py")}
    found.update({p.parent.name: p for p in folder.glob("*/main.py")})
    return found


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_program_is_runnable_and_has_its_golden_trace(folder):
    programs = _programs(REPO / folder)
    assert len(programs) >= 20, f"{folder} lost its programs"
    for name, path in programs.items():
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first == MARKER, f"{path.relative_to(REPO)} does not start with {MARKER!r}"
    check = subprocess.run(
        [sys.executable, "scripts/record_golden.py", "--folder", folder, "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    waiting = [line for line in check.stdout.splitlines() if line.startswith("not recorded:")]
    recorded = {p.stem for p in (REPO / folder / "golden").glob("*.json")}
    # Only the programs the script names as waiting for the recorder fix lack a trace, and no
    # trace is left over from a program that is gone.
    assert set(programs) - recorded == {line.split()[2] for line in waiting}
    assert recorded <= set(programs)
    for name in recorded:
        data = json.loads((REPO / folder / "golden" / f"{name}.json").read_text(encoding="utf-8"))
        assert data["recorded_by"] == "scripts/record_golden.py"
        assert data["jax"] == "0.4.30"
        assert data["fixture"] == programs[name].relative_to(REPO).as_posix()
        assert data["exit_status"] == 0, f"{name} failed on legacy JAX"


# The programs the native rewrite keeps equivalent to their legacy golden trace
# (docs/migration-decisions.md has the others and why). A regression fails here.
EQUIVALENT = """
apax_barrier_after_io_callback apax_nvt_import_only brainpy_for_loop_pbar
brainpy_integrator_pbar brainpy_monitor_on_host brainpy_numpy_random_call
brainpy_offline_fit_pbar brainpy_online_fit_pbar diffrax_error_if hj_reachability_tqdm_wrapper
kfac_host_eigh netket_exact_sampler_typed netket_fock_host_rng netket_ode_host_callbacks
netket_spin_host_rng netket_states_to_numbers netket_version_switch praxis_decode_stream
c02_tap_return_values c03_order_across_modules c04_reads_state_written_by_tap
c08_x64_config_alias c08_x64_config_update c08_x64_from_environ c10_id_print_float64
c04_numpy_random_not_pure f_callbacks_as_parameters t_grad t_scan c10_id_print_containers
j01_tree_clip_round j02_core_primitive j03_random_stream c08_x64_environ_scalar_shape
c11_import_groups c10_id_print_kinds c10_id_print_io_chain c12_host_check_on_devices
j04_jaxpr_internals c08_x64_package_init c13_sharded_decode_loop
c14_host_scalars_and_buffers c15_version_guarded_branch c16_pmap_of_another_function
econpizza_model_context
""".split()


# The others, each for a reason docs/migration-decisions.md gives and its sites' levels say
# (none of them labels a site that crashes or differs `fixed`).
NOT_EQUIVALENT = {
    "c11_guarded_import": "different",  # manual: the guard's import fails on current JAX
    # manual, and it indexes jax.interpreters.batching.primitive_batchers, which current JAX
    # cannot: it fails there, before any tap
    "c07_patches_internals": "crashes",
    # Native first (issue 37): each of these has a site with no native spelling (a tap reading
    # `transforms` or its device, under a vmap the module shows, array flags, a legacy name
    # used as a value ...), left as it is, a manual finding: its legacy import fails on current
    # JAX, before any host call. `python -m compat` runs them as legacy did
    # (tests/test_compat_traces.py), and the compat strategy points them there.
    "brainpy_cond_progress_bar": "crashes",
    "brainpy_jit_error_unvmap": "crashes",
    "chex_value_assertion": "crashes",
    "jax_tqdm_decorators": "crashes",
    "saxml_stream_partial_tap": "crashes",
    "c01_host_sees_numpy": "crashes",
    "c05_tap_reads_transforms": "crashes",
    "c06_names_other_modules": "crashes",
    "f_tap_factories": "crashes",
    "saxml_stream_done": "crashes",
    "c05_device_index_signature": "crashes",
    "c09_callback_exception_handler": "crashes",
    "c10_id_print_layout": "crashes",
    "t_vmap": "crashes",
    "t_vmap_of_cond": "crashes",
    "c01_host_flips_writeable": "crashes",
    "c07_patches_jvp_rule": "crashes",
    "t_jit": "crashes",
    # native, printing legacy's text (text_exact): the callback also receives the shard's
    # index (jax.lax.axis_index), an argument the trace counts
    "t_pmap": "different",
}


def _check_fidelity_of(*args: str) -> dict:
    run = subprocess.run(
        [sys.executable, "scripts/check_fidelity.py", "--json", "--jobs", "2", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return json.loads(run.stdout)


# Programs whose printed digits current JAX's own arithmetic changes (XLA compiles the same
# float32 computation differently): the legacy program, run unmigrated on the compat runtime on
# the same JAX, prints the migrated program's text (`_assert_printed_as_unmigrated`).
ARITHMETIC_DIGITS = {
    # a float32 thermostat loop under jit: `temperature 123.12294` on 0.4.30, `123.122955` on
    # 0.6.2 and 0.10.2 (the codemod only removes an unused import)
    "apax_nvt_import_only",
    # an eager value_and_grad: `-2.5588` on 0.4.30 and 0.6.2, `-2.5587997` on 0.10.2
    "t_grad",
}


def _assert_all_equivalent(
    report: dict, not_equivalent: dict = NOT_EQUIVALENT, python: str = sys.executable
) -> None:
    verdicts = {p["name"]: p["verdict"] for p in report["programs"]}
    every_program = {name for folder in FOLDERS for name in _programs(REPO / folder)}
    assert sorted(verdicts) == sorted([*EQUIVALENT, *NOT_EQUIVALENT]) == sorted(every_program)
    assert {n: v for n, v in verdicts.items() if v != "equivalent"} == not_equivalent
    assert report["summary"]["fixed_sites_crashing_or_different"] == 0
    # What each equivalent program printed (its id_prints, its own prints) is legacy's text,
    # character for character.
    text_differences = {
        p["name"]: p["text_difference"]
        for p in report["programs"]
        if p["verdict"] == "equivalent" and not p["text_exact"]
    }
    assert set(text_differences) <= ARITHMETIC_DIGITS, text_differences
    for program in report["programs"]:
        if program["name"] in text_differences:
            _assert_printed_as_unmigrated(program, python)


def _assert_printed_as_unmigrated(program: dict, python: str) -> None:
    """The legacy program itself, unmigrated, on the compat runtime and the same JAX, prints
    what the migrated program printed: the difference from legacy's text is JAX's arithmetic,
    not the migration."""
    [path] = [
        p for folder in FOLDERS for n, p in _programs(REPO / folder).items() if n == program["name"]
    ]
    run = subprocess.run(
        [python, "-m", "compat", str(path)],
        cwd=path.parent,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout == program["text_printed"], program["text_difference"]


@pytest.fixture(scope="module")
def fidelity_reports() -> dict:
    """check_fidelity's report of every program on current JAX (`sys.executable`) and on the
    oldest supported one (jax 0.6.2, the cached environment the compat runtime's oldest-JAX
    tests use), by interpreter: each program is migrated once and that migration run on
    both."""
    from test_compat_oldest_jax import oldest_jax_python

    oldest = str(oldest_jax_python())
    pythons = ("--python", sys.executable, "--python", oldest)
    reports = _check_fidelity_of(*pythons, *EQUIVALENT, *NOT_EQUIVALENT)["by_python"]
    return {"current": reports[sys.executable], "oldest": reports[oldest], "oldest_python": oldest}


def test_migrated_programs_do_what_legacy_did(fidelity_reports):
    """Each program migrated by the CLI and run on current JAX makes the host calls, with the
    values, in the order of its golden trace (but those NOT_EQUIVALENT names), and in no
    program does a site labelled `fixed` crash or differ."""
    _assert_all_equivalent(fidelity_reports["current"])


def test_migrated_programs_do_what_legacy_did_on_the_oldest_supported_jax(fidelity_reports):
    """The same programs, migrated for any JAX the project supports, run on the oldest one."""
    # (jax 0.6.2 still has the legacy module: c11_guarded_import's guard lets its tap run; an
    # ordered io_callback under pmap fails there: t_pmap's device taps need jax 0.8, which
    # the migration of a project on jax 0.6 would not write: HCB102, manual)
    # (c06's module that publishes `id_tap` keeps its host_callback import, a manual finding:
    # jax 0.6.2 still has the module, so the program runs there as legacy did)
    runs_there = ("c11_guarded_import", "c06_names_other_modules")
    not_equivalent = {k: v for k, v in NOT_EQUIVALENT.items() if k not in runs_there}
    not_equivalent["t_pmap"] = "crashes"
    python = fidelity_reports["oldest_python"]
    _assert_all_equivalent(fidelity_reports["oldest"], not_equivalent, python)


def test_id_print_prints_legacy_text_for_every_argument_kind(fidelity_reports):
    """The c10 programs: every id_print becomes a jax.debug.callback (or, beside impure calls
    whose results are used, an io_callback) of the module's `_print_like_id_print`, and
    prints legacy's text exactly: a dict, tuple or list written out, held in a name or passed
    as a parameter, nested, named tuples, a container wider than 80 columns (broken over
    lines), 0-d float16/bfloat16/float32/float64/complex/int/bool values, keywords (computed
    at run time, bytes), under jit, scan and grad, outside jit, with numpy print options the
    program set."""
    programs = (
        "c10_id_print_containers",
        "c10_id_print_kinds",
        "c10_id_print_io_chain",
        "c10_id_print_float64",
    )
    report = [p for p in fidelity_reports["current"]["programs"] if p["name"] in programs]
    assert sorted(p["name"] for p in report) == sorted(programs)
    for program in report:
        prints = [s for s in program["sites"] if s["code"] == "HCB201"]
        assert prints, program["name"]
        assert {s["verdict"] for s in prints} == {"equivalent"}, (program["name"], prints)
        assert program["verdict"] == "equivalent", program["differences"]
        assert program["text_exact"], program["text_difference"]
