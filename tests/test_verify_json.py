"""`--json` is a summary (per entry or test: host calls on each side, verdict, first
difference) however many host calls ran; every host call only with `--json-events`. The
recorder leaves no file open behind it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from verify_helpers import REPO, hcmigrate_verify

MANY_TAPS = """
import jax
import jax.numpy as jnp
from jax.experimental import host_callback as hcb


def log(x, transforms):
    pass


def main():
    return jax.lax.fori_loop(0, 2000, lambda i, v: hcb.id_tap(log, v + i), jnp.float32(0))


if __name__ == "__main__":
    main()
"""


def test_json_is_a_summary_unless_every_event_is_asked_for(tmp_path):
    script = tmp_path / "many_taps.py"
    script.write_text(textwrap.dedent(MANY_TAPS).lstrip())
    small, traces = tmp_path / "small.json", tmp_path / "traces"
    res = hcmigrate_verify(script, "--json", small, "--keep-traces", traces)
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads(small.read_text())
    assert "traces" not in data
    assert data["sides"]["reference"]["host_calls"] == data["sides"]["candidate"]["host_calls"]
    assert data["sides"]["reference"]["host_calls"] == 2000
    [entry] = [e for e in data["entries"] if e["entry"] == "main"]
    assert entry["reference_events"] == entry["candidate_events"] == 2000
    assert entry["verdict"] == "equivalent" and entry["first_difference"] is None
    assert small.stat().st_size < 5_000, small.stat().st_size
    # what --json-events adds (tests/test_verify_cli.py reads it): both traces, every call
    recorded = json.loads((traces / "reference.json").read_text())
    assert len(recorded["events"]) == 2000
    assert (traces / "reference.json").stat().st_size > 100 * small.stat().st_size


def test_json_events_needs_json():
    res = hcmigrate_verify(REPO / "examples" / "mcmc_progress.py", "--json-events")
    assert res.returncode == 2 and "--json-events needs --json FILE" in res.stderr


def test_the_recorder_leaves_no_file_open(tmp_path):
    """Run as Python's development mode shows it: a ResourceWarning for the trace stream."""
    (tmp_path / "pkg" / "tests").mkdir(parents=True)
    (tmp_path / "pkg" / "tests" / "test_ok.py").write_text("def test_ok():\n    pass\n")
    trace = tmp_path / "reference-0.jsonl"
    res = subprocess.run(
        [
            sys.executable,
            "-X",
            "dev",
            "-W",
            "error::ResourceWarning",
            str(REPO / "hcmigrate" / "verify" / "_runner.py"),
            "--trace",
            str(trace),
            "--side",
            "reference",
            "--pytest",
            str(tmp_path / "pkg"),
            "tests",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "ResourceWarning" not in res.stderr, res.stderr
    assert '"t": "end"' in trace.read_text()
