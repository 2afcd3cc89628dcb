"""Atomic writes: mode bits kept, temp files cleaned up, and a run killed mid-way leaves every
file either wholly old or wholly new."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_helpers import children, default_signals
from hcmigrate import files as fileio
from hcmigrate.api import migrate_source

LEGACY = "from jax.experimental import host_callback as hcb\n\n\ndef f{n}(x):\n    hcb.id_tap(lambda a, t: print(a), x)\n    return x * {n}\n"


def test_write_atomic_keeps_mode_and_leaves_no_temp(tmp_path):
    p = tmp_path / "tool.py"
    p.write_text("old\n")
    p.chmod(0o751)
    src = fileio.read_source(p)
    fileio.write_atomic(src, "new\n")
    assert p.read_text() == "new\n"
    assert stat.S_IMODE(p.stat().st_mode) == 0o751
    assert sorted(x.name for x in tmp_path.iterdir()) == ["tool.py"]


def test_write_atomic_refuses_when_the_file_changed(tmp_path):
    p = tmp_path / "a.py"
    p.write_text("old\n")
    src = fileio.read_source(p)
    p.write_text("edited\n")
    with pytest.raises(fileio.FileError, match="changed on disk"):
        fileio.write_atomic(src, "new\n")
    assert p.read_text() == "edited\n"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a.py"]


def test_write_atomic_refuses_symlinks(tmp_path):
    real = tmp_path / "real.py"
    real.write_text("old\n")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    src = fileio.read_source(link)
    with pytest.raises(fileio.FileError, match="symlink"):
        fileio.write_atomic(src, "new\n")
    assert real.read_text() == "old\n" and link.is_symlink()


def _make_tree(root: Path, n_files: int) -> dict[Path, tuple[bytes, bytes]]:
    """n_files legacy modules in nested folders -> {path: (old bytes, new bytes)}."""
    expected = {}
    cache: dict[str, str] = {}
    for i in range(n_files):
        d = root / f"pkg{i % 7}" / f"sub{i % 5}"
        d.mkdir(parents=True, exist_ok=True)
        head = LEGACY.format(n=i % 4)
        if head not in cache:
            cache[head] = migrate_source(head).code
        # Files of different sizes (a data literal after the code), so writes take different times.
        pad = f"PAD = '{'x' * (i * 997 % 200_000)}'\n"
        p = d / f"m{i:04d}.py"
        p.write_text(head + pad)
        expected[p] = ((head + pad).encode(), (cache[head] + pad).encode())
    return expected


def _wait_until_writing(proc, expected) -> None:
    """Wait until the run is well under way (some files rewritten); a hang fails after a
    timeout far above the normal case (a loaded machine starts workers slowly)."""
    deadline = time.monotonic() + 600
    sample = list(expected)[::4]
    while time.monotonic() < deadline:
        if sum(p.read_bytes() == expected[p][1] for p in sample) >= 3:
            return
        time.sleep(0.02)
    proc.kill()
    pytest.fail("the run did not start writing within 600 s")


def _state(expected):
    old = new = 0
    for p, (before, after) in expected.items():
        data = p.read_bytes()
        if data == before:
            old += 1
        elif data == after:
            new += 1
        else:
            raise AssertionError(f"{p} is neither wholly old nor wholly new ({len(data)} bytes)")
    return old, new


@pytest.mark.parametrize("sig, jobs", [(signal.SIGKILL, "2"), (signal.SIGINT, "2")])
def test_killed_run_leaves_every_file_wholly_old_or_new(tmp_path, sig, jobs):
    expected = _make_tree(tmp_path, 120)
    proc = subprocess.Popen(
        [sys.executable, "-m", "hcmigrate", "-q", "-j", jobs, str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=default_signals,
    )
    # Wait until the run is well under way (some files rewritten), then kill it.
    _wait_until_writing(proc, expected)
    os.killpg(proc.pid, sig)  # the whole process group: workers too
    proc.wait(timeout=30)
    time.sleep(0.2)
    old, new = _state(expected)
    assert new > 0 and old > 0, (old, new)  # killed mid-way, and nothing is half written
    if sig == signal.SIGINT:
        assert proc.returncode == 130
        assert b"interrupted" in proc.stderr.read()
        assert not list(tmp_path.rglob("*.hcmigrate-tmp"))
    # Temp files left by SIGKILL are never picked up as sources; a second run finishes the job.
    res = subprocess.run(
        [sys.executable, "-m", "hcmigrate", "-q", str(tmp_path)], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    assert _state(expected) == (0, len(expected))


# --- ownership, group and hard links (issue 17) ---------------------------------------------

REPO = Path(__file__).resolve().parent.parent
ONE = LEGACY.format(n=3)


def _hcmigrate(*args, cwd, prefix=()):
    """The real program (this checkout's code) in a subprocess."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [*prefix, sys.executable, "-m", "hcmigrate", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")


@needs_root
@pytest.mark.parametrize(
    "prefix",
    [
        (),
        # Root without the right to give files away (CAP_CHOWN), as any other user is: the
        # file is overwritten in place, which keeps its owner.
        ("setpriv", "--inh-caps=-chown", "--bounding-set=-chown"),
    ],
    ids=["root", "no-chown"],
)
def test_owner_group_mode_and_hard_links_are_kept(tmp_path, prefix):
    if prefix and shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux)")
    owned = tmp_path / "owned.py"
    owned.write_text(ONE)
    os.chown(owned, 1234, 2345)
    owned.chmod(0o640)
    linked = tmp_path / "linked.py"
    linked.write_text(ONE)
    other_name = tmp_path / "sub" / "same_file.txt"
    other_name.parent.mkdir()
    os.link(linked, other_name)
    inode = linked.stat().st_ino
    res = _hcmigrate("-q", "-j2", "owned.py", "linked.py", cwd=tmp_path, prefix=prefix)
    assert res.returncode == 0, res.stderr
    new = migrate_source(ONE).code
    st = owned.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (1234, 2345, 0o640)
    assert owned.read_text() == new
    assert linked.stat().st_ino == inode and linked.stat().st_nlink == 2
    assert linked.read_text() == new and other_name.read_text() == new
    assert sorted(p.name for p in tmp_path.iterdir()) == ["linked.py", "owned.py", "sub"]


def test_in_place_write_still_refuses_a_file_changed_meanwhile(tmp_path):
    a = tmp_path / "a.py"
    a.write_text("old\n")
    os.link(a, tmp_path / "b.py")
    src = fileio.read_source(a)
    a.write_text("edited\n")
    with pytest.raises(fileio.FileError, match="changed on disk"):
        fileio.write_atomic(src, "new\n")
    assert (tmp_path / "b.py").read_text() == "edited\n"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a.py", "b.py"]


# --- SIGTERM and SIGHUP are Ctrl-C (issue 17) ------------------------------------------------


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_stop_the_workers_and_remove_temp_files(tmp_path, sig, code):
    expected = _make_tree(tmp_path, 120)
    proc = subprocess.Popen(
        [sys.executable, "-m", "hcmigrate", "-q", "--no-cache", "-j", "2", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        preexec_fn=default_signals,
    )
    _wait_until_writing(proc, expected)
    workers = children(proc.pid)
    assert workers, "no worker processes"
    os.kill(proc.pid, sig)  # the main process only, as `kill PID` does
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == code, stderr
    assert b"interrupted" in stderr and b"Traceback" not in stderr
    time.sleep(0.2)
    assert not [pid for pid in workers if _running(pid)], "workers left running"
    assert not list(tmp_path.rglob("*.hcmigrate-tmp"))
    old, new = _state(expected)
    assert old > 0 and new > 0, (old, new)
    res = _hcmigrate("-q", str(tmp_path), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert _state(expected) == (0, len(expected))
    assert not list(tmp_path.rglob("*.hcmigrate-tmp"))


def _dead_pid() -> int:
    pid = 4_000_000
    while Path(f"/proc/{pid}").exists():
        pid -= 1
    return pid


def test_a_rewrite_removes_temp_files_that_a_killed_run_left(tmp_path):
    (tmp_path / "m.py").write_text(ONE)
    dead = tmp_path / f".m.py.{_dead_pid()}.k3j_x9zq{fileio.TEMP_SUFFIX}"
    alive = tmp_path / f".m.py.{os.getpid()}.a8d7f6e5{fileio.TEMP_SUFFIX}"  # (a run under way)
    other = tmp_path / "notes.hcmigrate-tmp.txt"
    for p in (dead, alive, other):
        p.write_text("partial")
    res = _hcmigrate("--check", ".", cwd=tmp_path)  # (--check writes nothing, removes nothing)
    assert res.returncode == 1 and dead.exists()
    res = _hcmigrate("-v", ".", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert f"removed {dead.name}: a temporary file left by a run that was killed" in res.stderr
    assert not dead.exists() and alive.exists() and other.exists()
    assert (tmp_path / "m.py").read_text() == migrate_source(ONE).code
