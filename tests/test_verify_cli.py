"""`hcmigrate verify` exit status 2 (could not run), timeouts, --reference-trace, runner details."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from verify_helpers import hcmigrate_verify

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "fixtures" / "golden"
CODEMOD = REPO / "fixtures"


def test_no_scratch_folder_is_left_behind(tmp_path):
    """Each run's scratch folder (migrated copy, traces) is removed: after a passing run, a
    timed-out run and a run that cannot start, the temp dir is empty again."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    ok = hcmigrate_verify(CODEMOD / "t1_progress_bar.in.py", env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "migrated" in ok.stdout and "EQUIVALENT" in ok.stdout
    slow = tmp_path / "slow.py"
    slow.write_text("import time\ntime.sleep(120)\n")
    timed_out = hcmigrate_verify(
        CODEMOD / "t1_progress_bar.in.py",
        "--candidate",
        slow,
        "--reference-trace",
        GOLDEN / "t1_progress_bar.json",
        "--timeout",
        "5",
        env=env,
    )
    assert timed_out.returncode == 2 and "timed out after" in timed_out.stdout
    missing = hcmigrate_verify(tmp_path / "nope.py", env=env)
    assert missing.returncode == 2
    assert sorted(p.name for p in scratch.iterdir()) == []


def test_missing_original_exits_2(tmp_path):
    res = hcmigrate_verify(tmp_path / "nope.py", "--candidate", tmp_path / "nope.py")
    assert res.returncode == 2
    assert "COULD NOT RUN" in res.stdout and "no such file" in res.stdout


@pytest.mark.parametrize("kind", ["device", "fifo", "fifo-candidate"])
def test_what_is_not_a_file_or_folder_is_refused_unread(tmp_path, kind):
    """`hcmigrate verify /dev/zero` copied the device until the disk was full (issue 28)."""
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    script = tmp_path / "s.py"
    script.write_text("print(1)\n")
    args = {
        "device": ["/dev/zero"],
        "fifo": [fifo],
        "fifo-candidate": [script, "--candidate", fifo],
    }[kind]
    res = hcmigrate_verify(*args, timeout=60)
    assert res.returncode == 2, res.stdout + res.stderr
    [line] = [line for line in res.stdout.splitlines() if line.startswith("COULD NOT RUN")]
    what = "a character device" if kind == "device" else "a FIFO"
    assert line.endswith(f": not a regular file or folder ({what}); not read"), line
    assert "--candidate" in line or kind != "fifo-candidate"


def test_the_copy_of_an_original_is_bounded_and_regular_files_only(tmp_path):
    from hcmigrate.verify.outcome import CannotRun
    from hcmigrate.verify.workspace import MAX_COPY_BYTES, migrate_copy

    project = tmp_path / "proj"
    project.mkdir()
    (project / "main.py").write_text("print(1)\n")
    (project / "zero.py").symlink_to("/dev/zero")
    os.mkfifo(project / "pipe.py")
    work = tmp_path / "work"
    copy, _ = migrate_copy(project, work)
    assert sorted(p.name for p in copy.iterdir()) == ["main.py"]
    with open(project / "data.bin", "wb") as fh:  # (sparse: no disk space)
        fh.truncate(MAX_COPY_BYTES + 1)
    with pytest.raises(CannotRun, match="more than 1024 MiB"):
        migrate_copy(project, tmp_path / "work2")


def test_bad_reference_interpreter_exits_2(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print(1)\n")
    res = hcmigrate_verify(script, "--candidate", script, "--reference", tmp_path / "no-python")
    assert res.returncode == 2
    assert "no such interpreter" in res.stdout


def test_timeout_kills_the_candidate_and_exits_2(tmp_path):
    golden = GOLDEN / "t1_progress_bar.json"
    slow = tmp_path / "slow.py"
    slow.write_text(
        textwrap.dedent("""\
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        print(child.pid, flush=True)
        time.sleep(120)
        """)
    )
    res = hcmigrate_verify(
        CODEMOD / "t1_progress_bar.in.py",
        "--candidate",
        slow,
        "--reference-trace",
        golden,
        "--timeout",
        "8",
    )
    assert res.returncode == 2, res.stdout + res.stderr
    assert "timed out after" in res.stdout and "process group killed" in res.stdout


def test_reference_failure_exits_2(tmp_path):
    original = tmp_path / "broken.py"
    original.write_text("raise SystemExit('boom')\n")
    res = hcmigrate_verify(original, "--candidate", original, "--reference", "legacy")
    assert res.returncode == 2
    assert "the original failed on the reference" in res.stdout


def test_reference_trace_and_json_report(tmp_path):
    out_json = tmp_path / "r.json"
    res = hcmigrate_verify(
        CODEMOD / "t1_progress_bar.in.py",
        "--candidate",
        CODEMOD / "t1_progress_bar.out.py",
        "--reference-trace",
        GOLDEN / "t1_progress_bar.json",
        "--json",
        out_json,
        "--json-events",
    )
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads(out_json.read_text())
    assert data["verdict"] == "equivalent" and data["differences"] == []
    cand = data["traces"]["candidate"]
    assert cand["exit_status"] == 0 and cand["events"]
    ev = cand["events"][0]
    assert {"api", "class", "ordered", "callback", "site", "args", "entry"} <= set(ev)


def test_main_without_guard_is_called_once_and_its_value_recorded(tmp_path):
    script = tmp_path / "noguard.py"
    script.write_text(
        textwrap.dedent("""\
        import jax.numpy as jnp
        def main():
            return jnp.arange(3) * 2, "label"
        """)
    )
    res = hcmigrate_verify(
        script, "--candidate", script, "--reference", "legacy", "--keep-traces", tmp_path / "t"
    )
    assert res.returncode == 0, res.stdout + res.stderr
    ref = json.loads((tmp_path / "t" / "reference.json").read_text())
    assert [e["name"] for e in ref["entries"]] == ["main"]
    assert ref["entries"][0]["result"]["items"][0]["data"] == [0, 2, 4]


def test_sigterm_stops_verify_and_both_sides(tmp_path):
    """SIGTERM to `hcmigrate verify` ends it as Ctrl-C does: both sides' process groups are
    killed (none is left running), and the exit code is 143."""
    script = tmp_path / "slow_sides.py"
    marker = f"hcm-slow-{os.getpid()}"
    script.write_text(f"import time\nMARK = {marker!r}\ntime.sleep(120)\n")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hcmigrate",
            "verify",
            str(script),
            "--candidate",
            str(script),
            "--reference",
            "compat",
            "--timeout",
            "300",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )

    def sides() -> list[int]:
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != proc.pid:
                try:
                    cmdline = (entry / "cmdline").read_bytes()
                except OSError:
                    continue
                if str(script).encode() in cmdline or marker.encode() in cmdline:
                    found.append(int(entry.name))
        return found

    deadline = time.monotonic() + 600  # (a timeout far above the normal case, not a budget)
    while len(sides()) < 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sides(), "the sides never started"
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 143
    deadline = time.monotonic() + 120
    while sides() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sides() == []


LEAVES_PROCESSES = """\
import os, subprocess, sys, time
PIDS = {pids!r}
# a child in a session of its own (outside the side's process group)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
# a daemon: double fork, the grandchild in a new session, its parent gone
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(PIDS + ".daemon." + str(os.getpid()), "w"):
            pass
        time.sleep(300)
    os._exit(0)
with open(PIDS + ".child." + str(child.pid), "w"):
    pass
while len([n for n in os.listdir(os.path.dirname(PIDS)) if n.startswith(os.path.basename(PIDS) + ".")]) < 2:
    time.sleep(0.05)
{ending}
"""


def _left_pids(pids: Path) -> list[int]:
    return [int(f.name.rsplit(".", 1)[1]) for f in pids.parent.glob(pids.name + ".*")]


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


@pytest.mark.parametrize("ending", ["time.sleep(300)", "pass"], ids=["timed-out", "finished"])
def test_processes_a_side_leaves_outside_its_group_are_killed(tmp_path, ending):
    """A side's children that left its process group (a new session; a double-forked daemon)
    do not outlive verify: killed at the time limit, and when the side ends on its own."""
    found = {}
    for side in ("ref", "cand"):
        pids = tmp_path / side / "pid"
        pids.parent.mkdir()
        script = tmp_path / f"{side}.py"
        script.write_text(LEAVES_PROCESSES.format(pids=str(pids), ending=ending))
        found[side] = (script, pids)
    res = hcmigrate_verify(
        found["ref"][0], "--candidate", found["cand"][0], "--reference", "compat", "--timeout", "20"
    )
    if ending == "pass":
        assert res.returncode in (0, 1), res.stdout + res.stderr
    else:
        assert res.returncode == 2 and "timed out" in res.stdout + res.stderr
    left = [pid for _, pids in found.values() for pid in _left_pids(pids)]
    assert len(left) == 4  # each side started both
    deadline = time.monotonic() + 120
    while any(_alive(pid) for pid in left) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [pid for pid in left if _alive(pid)] == []


def test_a_platform_run_lists_the_cpu_too():
    """Host callbacks need a CPU device: `--platform cuda` runs with JAX_PLATFORMS=cuda,cpu
    (an accelerator-only run fails every callback: "failed to find a local CPU device")."""
    from hcmigrate.verify.launch import subprocess_env, with_cpu

    assert with_cpu("cuda") == "cuda,cpu"
    assert with_cpu("tpu, cpu") == "tpu,cpu"
    assert with_cpu("cpu") == "cpu"
    assert subprocess_env("cuda")["JAX_PLATFORMS"] == "cuda,cpu"


def test_a_value_whose_getattr_raises_keyerror_is_recorded_without_breaking_the_program(
    legacy_python,
):
    """A result shape (and result) whose `__getattr__` raises KeyError, not AttributeError,
    for a name it lacks (EvoX's `State`): `hasattr` does not catch that, and the recorder's
    look for `.shape` failed the program on both sides, so a test that went from pass to fail
    read "ok". The recorder never raises into the program: both sides run, the calls compare."""
    res = hcmigrate_verify(
        REPO / "fixtures" / "verify" / "getattr_raises_keyerror.py", "--reference", "legacy"
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "EQUIVALENT: 2 host call(s)" in res.stdout, res.stdout
    assert "KeyError" not in res.stdout + res.stderr
