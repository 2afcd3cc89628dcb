"""Hostile input through the real `hcmigrate` program (a subprocess, real files; issue 17): special
files are named and never read, every file-level failure is that file's error (exit 2) while the
run goes on, file names that are not UTF-8, configuration of the wrong shape, machine-readable output on
failures. (`--diff` output: tests/test_diff_patch.py.)"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_helpers import children, default_signals, program
from hcmigrate.api import migrate_source
from hcmigrate.files import MAX_FILE_BYTES

REPO = Path(__file__).resolve().parent.parent
LEGACY = "from jax.experimental import host_callback as hcb\n\n\ndef f(x):\n    hcb.id_tap(lambda a, t: print(a), x)  # kept\n    return x\n"
HEAD = "from jax.experimental import host_callback as hcb\nx = hcb.id_print(1)\n"


hcmigrate = program


def err(proc) -> str:
    return proc.stderr.decode("utf-8", "replace")


@pytest.fixture
def good(tmp_path):
    p = tmp_path / "good.py"
    p.write_text(LEGACY)
    return p


def assert_good_rewritten(good):
    assert good.read_text() == migrate_source(LEGACY).code


# --- only regular files are opened ----------------------------------------------------------


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_special_files_are_named_never_read_and_the_run_goes_on(tmp_path, good, jobs):
    os.mkfifo(tmp_path / "fifo.py")
    os.mkfifo(tmp_path / "fifo.ipynb")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock.py"))
    big = tmp_path / "big.py"
    with open(big, "wb") as fh:  # (sparse: no disk space)
        fh.write(HEAD.encode())
        fh.truncate(MAX_FILE_BYTES + 1)
    try:
        res = hcmigrate("-j", jobs, ".", "/dev/zero", "/dev/urandom", cwd=tmp_path, timeout=60)
    finally:
        server.close()
    assert res.returncode == 2
    out = err(res)
    assert "error: fifo.py: not a regular file (a FIFO); not read" in out
    assert "error: fifo.ipynb: not a regular file (a FIFO); not read" in out
    assert "error: sock.py: not a regular file (" in out
    assert "error: /dev/zero: not a regular file (a character device); not read" in out
    assert "error: /dev/urandom: not a regular file (a character device); not read" in out
    assert (
        "error: big.py: file too large (33,554,433 bytes; the limit is 32 MiB); not processed"
        in out
    )
    assert_good_rewritten(good)
    assert stat.S_ISFIFO(os.stat(tmp_path / "fifo.py").st_mode)


def test_fifo_requirements_and_gitignore_are_named_and_the_run_goes_on(tmp_path, good):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    os.mkfifo(tmp_path / "requirements.txt")
    os.mkfifo(tmp_path / ".gitignore")
    res = hcmigrate("-j1", ".", cwd=tmp_path, timeout=60)
    assert res.returncode == 2
    out = err(res)
    assert "error: requirements.txt: not a regular file (a FIFO); not read (looked at for" in out
    assert ".gitignore: not a regular file (a FIFO); not read (git ignore rules not applied)" in out
    assert_good_rewritten(good)


def test_fifo_config_is_refused_at_once(tmp_path, good):
    os.mkfifo(tmp_path / "cfg.toml")
    res = hcmigrate("--config", "cfg.toml", ".", cwd=tmp_path, timeout=60)
    assert res.returncode == 2
    assert "error: cfg.toml: not a regular file (a FIFO); not read" in err(res)
    assert good.read_text() == LEGACY  # (no run with a configuration that could not be read)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_standard_input_that_never_ends_is_refused(tmp_path, fmt):
    with open("/dev/zero", "rb") as zero:
        proc = subprocess.run(
            [sys.executable, "-m", "hcmigrate", "--output-format", fmt, "-"],
            stdin=zero,
            capture_output=True,
            timeout=60,
            cwd=tmp_path,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
        )
    assert proc.returncode == 2
    assert "file too large" in err(proc) and "(standard input)" in err(proc)
    assert proc.stdout == b""
    if fmt == "json":
        report = json.loads(proc.stderr.decode().split("\n", 1)[1])
        assert report["files"][0]["status"] == "failed"
        assert report["summary"]["files_failed"] == 1


# --- every file-level failure is that file's error ------------------------------------------

HOSTILE = {
    "terms.py": HEAD + "y = " + " + ".join(["1"] * 5000) + "\n",
    "nots.py": HEAD + "y = " + "not " * 100_000 + "x\n",
    "brackets.py": HEAD + "y = " + "[" * 50_000 + "]" * 50_000 + "\n",
    "parens.py": HEAD + "y = " + "(" * 50_000 + ")" * 50_000 + "\n",
}


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("mode", [[], ["--check"]])
def test_parser_limits_are_errors_of_their_file(tmp_path, good, jobs, mode):
    for name, text in HOSTILE.items():
        (tmp_path / name).write_text(text)
    res = hcmigrate(*mode, "-j", jobs, ".", cwd=tmp_path)
    assert res.returncode == 2  # (in --check too: 1 would read as "would change")
    out = err(res)
    assert "error: terms.py: cannot parse: nesting too deep (RecursionError)" in out
    assert "error: nots.py: cannot parse: too complex for the parser (MemoryError)" in out
    assert "error: brackets.py:3: syntax error: too many nested parentheses" in out
    assert "error: parens.py:3: syntax error: too many nested parentheses" in out
    for name, text in HOSTILE.items():
        assert (tmp_path / name).read_text() == text
    if mode:
        assert "would rewrite good.py" in res.stdout.decode()
    else:
        assert_good_rewritten(good)


# Code that Python's parser accepts but that overflows the stack of libcst's native parser
# (a segfault) when the stack is small: only the worker process migrating it dies.
DEEP = "from jax.experimental import host_callback as hcb\nx = hcb.id_print(a" + ".b" * 1500 + ")\n"
SMALL_STACK = ["prlimit", f"--stack={1024 * 1024}"]


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs prlimit (util-linux)")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_parser_crash_costs_only_its_file(tmp_path, good, jobs):
    (tmp_path / "deep.py").write_text(DEEP)
    (tmp_path / "other.py").write_text(LEGACY.replace("# kept", "# other"))
    res = hcmigrate("-j", jobs, ".", cwd=tmp_path, prefix=SMALL_STACK)
    assert res.returncode == 2
    out = err(res)
    assert "error: deep.py: the process migrating this file died (killed by SIGSEGV)" in out
    assert (tmp_path / "deep.py").read_text() == DEEP
    assert_good_rewritten(good)
    assert "# other" in (tmp_path / "other.py").read_text()
    assert "hcb" not in (tmp_path / "other.py").read_text()
    # Standard input: the error, and the input passed through unchanged.
    res = hcmigrate("-", cwd=tmp_path, input=DEEP.encode(), prefix=SMALL_STACK)
    assert res.returncode == 2
    assert "error: -: the process migrating it died (killed by SIGSEGV)" in err(res)
    assert res.stdout == DEEP.encode()


# A valid file whose migration takes many seconds (about 25 s on one free core): it outlasts a
# small time budget that an ordinary file (good.py) keeps well within, and its worker is still
# on it when the test stops that worker.
# (a migration's cost is linear in its sites, about 1 s per 1,000 taps here: this file takes
# far longer than the 5 s budgets below on any machine)
SLOW = HEAD + "".join(
    f"\n\ndef f{i}(x):\n    hcb.id_tap(lambda a, t: print(a), x)\n    return x\n"
    for i in range(12000)
)


def test_a_file_over_its_time_budget_fails_alone(tmp_path, good):
    (tmp_path / "a_slow.py").write_text(SLOW)
    res = hcmigrate("--no-cache", "-j2", "--file-timeout", "5", ".", cwd=tmp_path)
    assert res.returncode == 2
    assert (
        "error: a_slow.py: migrating this file took longer than its time budget (5 s); "
        "stopped, file left unchanged"
    ) in err(res)
    assert (tmp_path / "a_slow.py").read_text() == SLOW
    assert_good_rewritten(good)
    assert not list(tmp_path.glob(".*.hcmigrate-tmp"))
    # The same budget from [tool.hcmigrate], for standard input (passed through unchanged).
    (tmp_path / "pyproject.toml").write_text("[tool.hcmigrate]\nfile-timeout = 5\n")
    res = hcmigrate("-", cwd=tmp_path, input=SLOW.encode())
    assert res.returncode == 2 and res.stdout == SLOW.encode()
    assert "error: -: migrating this file took longer than its time budget (5 s)" in err(res)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_stopped_worker_costs_only_its_file(tmp_path, good):
    (tmp_path / "a_slow.py").write_text(SLOW)
    start = time.monotonic()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hcmigrate",
            "--check",
            "--no-cache",
            "-j1",
            "--file-timeout",
            "3000",
            ".",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    while not (workers := children(proc.pid)):  # (the worker starts on a_slow.py: seconds)
        # (a timeout far above the normal case: workers start slowly on a loaded machine)
        assert proc.poll() is None and time.monotonic() - start < 600
        time.sleep(0.01)
    os.kill(workers[0], signal.SIGSTOP)
    # (the file's time budget is 3000 s: ending within the timeout, with the message below,
    # shows the stopped worker was seen stopped, not waited out)
    out, errors = proc.communicate(timeout=600)
    assert proc.returncode == 2 and b"Traceback" not in out + errors
    assert (
        b"error: a_slow.py: the process migrating this file was stopped (SIGSTOP) and made no "
        b"progress; it was ended and the file left unchanged"
    ) in errors
    assert b"would rewrite good.py" in out


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_run_suspended_and_resumed_is_not_over_its_budget(tmp_path, good):
    """Ctrl-Z then `fg` (the whole process group stopped, then continued): the time it was
    stopped counts against no file's budget."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "hcmigrate", "--no-cache", "-j1", "--file-timeout", "5", "."],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    while not children(proc.pid):  # (the worker is forked as good.py's migration starts)
        assert proc.poll() is None
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGSTOP)
    time.sleep(6)
    os.killpg(proc.pid, signal.SIGCONT)
    out, errors = proc.communicate(timeout=60)
    assert proc.returncode == 0, errors
    assert_good_rewritten(good)


def test_file_names_that_are_not_utf8(tmp_path):
    name = os.fsdecode(b"caf\xe9 \xff.py")
    (tmp_path / name).write_text(LEGACY)
    res = hcmigrate("--check", "-j1", ".", cwd=tmp_path)
    assert res.returncode == 1
    assert "would rewrite caf\\xe9 \\xff.py" in res.stdout.decode()
    res = hcmigrate("--check", "--output-format", "json", ".", cwd=tmp_path)
    assert json.loads(res.stdout)["files"][0]["path"] == "caf\\xe9 \\xff.py"
    res = hcmigrate("--diff", "-j1", ".", cwd=tmp_path)
    assert res.returncode == 0
    assert res.stdout.startswith(b"--- a/caf\xe9 \xff.py\t\n+++ b/caf\xe9 \xff.py\t\n")
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(tmp_path / name, copy / name)
    subprocess.run(["patch", "-p1", "-s"], input=res.stdout, cwd=copy, check=True)
    res = hcmigrate("-j2", ".", name, cwd=tmp_path)
    assert res.returncode == 0
    assert (tmp_path / name).read_text() == migrate_source(LEGACY).code
    assert (copy / name).read_bytes() == (tmp_path / name).read_bytes()


@pytest.mark.parametrize(
    "pyproject, message",
    [
        (b"tool = 'x'\n", "pyproject.toml: `tool` must be a table ([tool]), not a string"),
        (b"[tool]\nhcmigrate = 3\n", "pyproject.toml: [tool.hcmigrate] must be a table, not an"),
        (
            b"[tool.hcmigrate]\nexclude = ['!']\n",
            "pyproject.toml: [tool.hcmigrate] exclude: invalid pattern '!'",
        ),
        (
            b"[tool.hcmigrate]\nextend-exclude = ['\\']\n",
            "pyproject.toml: [tool.hcmigrate] extend-exclude: invalid pattern",
        ),
        (
            b"[tool.hcmigrate]\ninclude = ['[z-a]']\n",
            "pyproject.toml: [tool.hcmigrate] include: invalid pattern '[z-a]'",
        ),
        (
            b"[project]\noptional-dependencies = ['jax>=0.4.30']\n",
            "pyproject.toml: [project] optional-dependencies must be a table of arrays",
        ),
        (
            b"[project.optional-dependencies]\ngpu = 'jax'\n",
            "pyproject.toml: [project.optional-dependencies] gpu must be an array of strings",
        ),
        (b"[project]\ndependencies = 'jax'\n", "pyproject.toml: [project] dependencies must be"),
        (b"project = 1\n", "pyproject.toml: `project` must be a table ([project]), not an"),
        (
            b"[tool.hcmigrate]\n# caf\xe9\n",
            "pyproject.toml: not valid UTF-8 (byte 0xe9 at line 2); TOML files are UTF-8",
        ),
    ],
)
def test_configuration_of_the_wrong_shape(tmp_path, good, pyproject, message):
    (tmp_path / "pyproject.toml").write_bytes(pyproject)
    res = hcmigrate("--check", ".", cwd=tmp_path)
    assert res.returncode == 2
    assert f"error: {message}" in err(res)
    res = hcmigrate("--check", "--config", "pyproject.toml", "-", cwd=tmp_path, input=b"x = 1\n")
    assert res.returncode == 2 and message in err(res)


@pytest.mark.parametrize(
    "option, message",
    [
        (["--exclude", "!"], "error: --exclude: invalid pattern '!'"),
        (["--include", "[z-a]"], "error: --include: invalid pattern '[z-a]'"),
    ],
)
def test_bad_patterns_on_the_command_line(tmp_path, good, option, message):
    res = hcmigrate(*option, ".", cwd=tmp_path)
    assert res.returncode == 2 and message in err(res)
    assert good.read_text() == LEGACY


def test_an_invalid_gitignore_line_is_skipped_as_git_does(tmp_path, good):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("!\n[z-a]\nvendored/\n")
    (tmp_path / "vendored").mkdir()
    (tmp_path / "vendored" / "v.py").write_text(LEGACY)
    res = hcmigrate("-j1", ".", cwd=tmp_path)
    assert res.returncode == 0, err(res)
    assert_good_rewritten(good)
    assert (tmp_path / "vendored" / "v.py").read_text() == LEGACY


# --- machine-readable output is complete ----------------------------------------------------


def test_json_and_sarif_name_missing_paths(tmp_path, good):
    res = hcmigrate("--check", "--output-format", "json", "nope.py", "good.py", cwd=tmp_path)
    assert res.returncode == 2
    report = json.loads(res.stdout)
    assert report["files"][0] == {
        "path": "nope.py",
        "status": "failed",
        "error": "no such file or directory",
        "error_location": "nope.py",
        "diagnostics": [],
    }
    assert report["files"][1]["path"] == "good.py"
    assert report["summary"]["files_failed"] == 1
    res = hcmigrate("--check", "--output-format", "sarif", "nope.py", cwd=tmp_path)
    invocation = json.loads(res.stdout)["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert invocation["toolExecutionNotifications"][0]["message"]["text"] == (
        "nope.py: no such file or directory"
    )


@pytest.mark.parametrize("data", [b"def f(:\n", b"\xff\xfe not utf-8\n"])
def test_json_and_sarif_report_standard_input_failures(tmp_path, data):
    res = hcmigrate(
        "--output-format", "json", "--stdin-filename", "x.py", "-", cwd=tmp_path, input=data
    )
    assert res.returncode == 2
    assert res.stdout == data  # (a pipe never loses its input)
    report = json.loads(res.stderr.decode().split("\n", 1)[1])
    assert report["files"][0]["path"] == "x.py" and report["files"][0]["status"] == "failed"
    assert report["summary"]["files_failed"] == 1
    res = hcmigrate("--check", "--output-format", "sarif", "-", cwd=tmp_path, input=data)
    sarif = json.loads(res.stderr.decode().split("\n", 1)[1])
    assert sarif["runs"][0]["invocations"][0]["executionSuccessful"] is False
    assert sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]


# --- every failure of output and input: one line, the documented exit code (issue 28) -------

# (`*` arguments cannot be bound statically: HCB003 leaves the call, and its import, alone)
MANUAL_ONLY = (
    "from jax.experimental import host_callback as hcb\n\n\ndef tap(args):\n    hcb.id_tap(*args)\n"
)


def _one_error_line(stderr: bytes) -> str:
    [line] = [line for line in stderr.decode().splitlines() if line.startswith("error:")]
    return line


@pytest.mark.parametrize("args", [["--check", "good.py"], ["--diff", "good.py"], ["-"]])
def test_standard_output_on_a_full_disk(tmp_path, good, args):
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "hcmigrate", *args],
            cwd=tmp_path,
            stdin=open(good, "rb"),
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=60,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
        )
    assert b"Traceback" not in proc.stderr and b"Exception ignored" not in proc.stderr
    assert proc.returncode == 2, proc.stderr  # (not 1: that would read as "would change")
    assert _one_error_line(proc.stderr) == (
        "error: cannot write to standard output: No space left on device; the run stopped"
    )
    assert good.read_text() == LEGACY


def test_closed_standard_input_and_output(tmp_path, good):
    def shell(line: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["sh", "-c", f"exec {sys.executable} -m hcmigrate {line}"],
            cwd=tmp_path,
            capture_output=True,
            timeout=60,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
        )

    closed_in = shell("- <&-")
    assert closed_in.returncode == 2 and b"Traceback" not in closed_in.stderr
    assert (
        _one_error_line(closed_in.stderr) == "error: -: standard input is closed; nothing to read"
    )
    closed_out = shell("--diff good.py >&-")
    assert closed_out.returncode == 2 and b"Traceback" not in closed_out.stderr
    assert _one_error_line(closed_out.stderr) == (
        "error: cannot write to standard output: it is closed; the run stopped"
    )


@pytest.mark.parametrize("module", ["compat", "hcmigrate_compat"])
def test_compat_runner_on_a_missing_script_speaks_as_python(tmp_path, module):
    ours = program("missing.py", cwd=tmp_path, module=module)
    python = subprocess.run(
        [sys.executable, "missing.py"], cwd=tmp_path, capture_output=True, timeout=60
    )
    assert ours.returncode == python.returncode == 2
    assert ours.stderr == python.stderr and b"can't open file" in ours.stderr
    assert ours.stderr.count(b"\n") == 1
    ours = program("-m", "no_such_module_here", cwd=tmp_path, module=module)
    python = subprocess.run(
        [sys.executable, "-m", "no_such_module_here"], cwd=tmp_path, capture_output=True
    )
    assert ours.returncode == python.returncode == 1 and ours.stderr == python.stderr
    (tmp_path / "folder").mkdir()  # (no __main__.py)
    ours = program("folder", cwd=tmp_path, module=module)
    python = subprocess.run([sys.executable, "folder"], cwd=tmp_path, capture_output=True)
    assert ours.returncode == python.returncode == 1 and ours.stderr == python.stderr


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_at_the_interactive_prompt(tmp_path, good, sig, code):
    proc = subprocess.Popen(
        [sys.executable, "-m", "hcmigrate", "--interactive", "good.py"],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        preexec_fn=default_signals,
    )
    shown = b""
    while b"Apply this change?" not in shown:  # (the prompt: it waits for an answer)
        chunk = os.read(proc.stdout.fileno(), 4096)
        assert chunk, "no prompt"
        shown += chunk
    os.kill(proc.pid, sig)
    _, errors = proc.communicate(timeout=60)
    assert proc.returncode == code, errors
    assert b"Traceback" not in errors and b"Aborted" not in errors
    assert good.read_text() == LEGACY


@pytest.mark.parametrize(
    "args, stdin", [([], None), (["--check"], None), (["--diff"], None), (["-"], MANUAL_ONLY)]
)
def test_manual_findings_exit_1_in_every_mode(tmp_path, args, stdin):
    """One exit-code table for every mode (docs/cli.md): a site left for a human is exit 1,
    in --check too (it exited 0 there, 1 in a plain run)."""
    (tmp_path / "internals.py").write_text(MANUAL_ONLY)
    paths = [] if stdin else ["internals.py"]
    res = hcmigrate(*args, *paths, cwd=tmp_path, input=stdin and stdin.encode())
    assert res.returncode == 1, err(res)
    assert "HCB003 [manual]" in err(res) + res.stdout.decode()
    assert (tmp_path / "internals.py").read_text() == MANUAL_ONLY
