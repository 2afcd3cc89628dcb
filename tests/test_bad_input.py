"""Bad input through the CLI: each gets a clear message naming the path and the documented exit
code, and the other files in the same run are still processed."""

from __future__ import annotations

import codecs
import os
import subprocess
import sys

import pytest

from hcmigrate.api import Options, migrate_source
from cli_helpers import run

LEGACY = "from jax.experimental import host_callback as hcb\n\n\ndef f(x):\n    hcb.id_tap(lambda a, t: print(a), x)\n    return x\n"


@pytest.fixture
def good(tmp_path):
    p = tmp_path / "good.py"
    p.write_text(LEGACY)
    return p


def assert_good_processed(good):
    assert good.read_text() == migrate_source(LEGACY).code


@pytest.mark.parametrize(
    "name, data, message",
    [
        (
            "syntax.py",
            b"import jax.experimental.host_callback as hcb\ndef f(:\n    pass\n",
            "syntax.py:2: syntax error: invalid syntax",
        ),
        (
            "py2.py",
            b"import jax.experimental.host_callback as hcb\nprint 'hello'\n",
            "py2.py:2: syntax error: Missing parentheses in call to 'print'. Did you mean print(...)? (this looks like Python 2 code",
        ),
        (
            "latin.py",
            "# host_callback caf\xe9\n".encode("latin-1"),
            "latin.py:1: not valid UTF-8 (byte 0xe9 at line 1) and no PEP 263 coding cookie",
        ),
        (
            "binary.py",
            b"\x7fELF\x00\x00host_callback\x00",
            "binary.py: binary file (contains NUL bytes)",
        ),
        (
            "cookie.py",
            b"# -*- coding: klingon -*-\nimport jax.experimental.host_callback\n",
            "cookie.py: bad coding cookie",
        ),
    ],
)
def test_unprocessable_files(tmp_path, good, name, data, message):
    (tmp_path / name).write_bytes(data)
    res = run(["."], tmp_path)
    assert res.exit_code == 2
    assert f"error: {message}" in res.stderr
    assert (tmp_path / name).read_bytes() == data
    assert_good_processed(good)


def test_coding_cookie_roundtrip(tmp_path):
    src = "# -*- coding: latin-1 -*-\n# caf\xe9\n" + LEGACY
    p = tmp_path / "l1.py"
    p.write_bytes(src.encode("latin-1"))
    res = run(["l1.py"], tmp_path)
    assert res.exit_code == 0, res.output
    assert p.read_bytes() == migrate_source(src).code.encode("latin-1")


def test_bom_kept(tmp_path):
    p = tmp_path / "bom.py"
    p.write_bytes(codecs.BOM_UTF8 + ("# \u00fcber\n" + LEGACY).encode())
    assert run(["bom.py"], tmp_path).exit_code == 0
    data = p.read_bytes()
    assert data.startswith(codecs.BOM_UTF8)
    assert data[3:].decode() == migrate_source("# \u00fcber\n" + LEGACY).code


@pytest.mark.parametrize("newline", ["\r\n", "mixed"])
def test_line_endings_kept(tmp_path, newline):
    lines = LEGACY.splitlines(keepends=True)
    if newline == "\r\n":
        src = LEGACY.replace("\n", "\r\n")
    else:
        src = "".join(
            line.replace("\n", "\r\n") if i % 3 == 0 else line for i, line in enumerate(lines)
        )
    p = tmp_path / "nl.py"
    p.write_bytes(src.encode())
    assert run(["nl.py"], tmp_path).exit_code == 0
    out = p.read_bytes().decode()
    assert out == migrate_source(src).code
    assert "host_callback" not in out
    if newline == "\r\n":
        assert "\n" not in out.replace("\r\n", "")  # every line still CRLF
    else:
        # Lines the rewrite did not touch keep their own endings.
        ending = {
            ln.rstrip("\r\n"): ln[len(ln.rstrip("\r\n")) :] for ln in src.splitlines(keepends=True)
        }
        kept = [
            ln
            for ln in out.splitlines(keepends=True)
            if ln.rstrip("\r\n") in ("def f(x):", "    return x")
        ]
        assert len(kept) == 2
        assert {ln[len(ln.rstrip("\r\n")) :] for ln in kept} == {"\n", "\r\n"}
        for ln in kept:
            assert ln[len(ln.rstrip("\r\n")) :] == ending[ln.rstrip("\r\n")]


def test_tabs_empty_and_large_files(tmp_path):
    (tmp_path / "tabs.py").write_text(LEGACY.replace("    ", "\t"))
    (tmp_path / "empty.py").write_bytes(b"")
    # 5 MB: a module with embedded data (one huge literal) that uses host_callback, and 5 MB of
    # ordinary code that does not (the pre-filter's path).
    big = LEGACY + "BLOB = b'" + "\\x00\\xff" * (5_000_000 // 8) + "'\n"
    assert len(big) >= 5_000_000
    other = "".join(f"def g{i}(x):\n    return x + {i}\n\n" for i in range(5_000_000 // 36))
    (tmp_path / "other.py").write_text(other)
    (tmp_path / "big.py").write_text(big)
    res = run(["."], tmp_path)
    assert res.exit_code == 0, res.output
    assert (tmp_path / "tabs.py").read_text() == migrate_source(LEGACY.replace("    ", "\t")).code
    assert (tmp_path / "empty.py").read_bytes() == b""
    assert "host_callback import" not in (tmp_path / "big.py").read_text()[:200]
    assert (tmp_path / "big.py").read_text() == migrate_source(big).code
    assert (tmp_path / "other.py").read_text() == other


class _Result:
    def __init__(self, proc):
        self.exit_code, self.stdout, self.stderr = proc.returncode, proc.stdout, proc.stderr


def run_unprivileged(args, cwd):
    """The real CLI in a subprocess that file permissions apply to. Root ignores permission
    bits through two capabilities; they are dropped (setpriv) so root sees what a user sees."""
    cmd = [sys.executable, "-m", "hcmigrate", "-j1", *args]
    if os.geteuid() == 0:
        caps = "-dac_override,-dac_read_search"
        cmd = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", *cmd]
    return _Result(subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120))


def test_unreadable_and_read_only_files(tmp_path, good):
    secret = tmp_path / "secret.py"
    secret.write_text(LEGACY)
    secret.chmod(0o000)
    ro = tmp_path / "ro.py"
    ro.write_text(LEGACY)
    ro.chmod(0o444)
    try:
        res = run_unprivileged(["."], tmp_path)
        assert res.exit_code == 2, res.stdout + res.stderr
        assert "error: secret.py: permission denied (file is not readable)" in res.stderr
        assert "error: ro.py: not written: read-only file" in res.stderr
        assert ro.read_text() == LEGACY and oct(ro.stat().st_mode & 0o777) == "0o444"
        assert_good_processed(good)
        # --check reads read-only files fine.
        res = run_unprivileged(["--check", "ro.py"], tmp_path)
        assert res.exit_code == 1
    finally:
        secret.chmod(0o644)
        ro.chmod(0o644)


def test_file_changing_during_the_run_is_not_overwritten(tmp_path, good, monkeypatch):
    import hcmigrate.runner as runner

    victim = tmp_path / "victim.py"
    victim.write_text(LEGACY)
    real = runner.migrate_source

    def migrate_and_meanwhile_edit(text, options=None, *, filename="<string>"):
        result = real(text, options, filename=filename)
        if filename.endswith("victim.py"):
            victim.write_text(LEGACY + "# edited by the user meanwhile\n")
        return result

    monkeypatch.setattr(runner, "migrate_source", migrate_and_meanwhile_edit)
    res = run(["."], tmp_path)
    assert res.exit_code == 2
    assert (
        "error: victim.py: not written: file changed on disk while it was being migrated"
        in res.stderr
    )
    assert victim.read_text() == LEGACY + "# edited by the user meanwhile\n"
    assert_good_processed(good)
    assert not list(tmp_path.glob(".*hcmigrate-tmp"))


def test_rewrite_that_would_not_compile_is_never_written(tmp_path, good, monkeypatch):
    # A result that parses but does not compile (the runner's own check is a real compile()).
    import hcmigrate.runner as runner
    from hcmigrate.api import MigrationResult

    target = tmp_path / "t.py"
    target.write_text(LEGACY)
    real = runner.migrate_source

    def broken(text, options=None, *, filename="<string>"):
        if filename.endswith("t.py"):
            return MigrationResult(text, text + "return 1\n", [])
        return real(text, options, filename=filename)

    monkeypatch.setattr(runner, "migrate_source", broken)
    res = run(["."], tmp_path)
    assert res.exit_code == 2
    assert "error: t.py: the rewrite would not compile (line " in res.stderr
    assert "'return' outside function" in res.stderr
    assert target.read_text() == LEGACY
    assert_good_processed(good)


def test_options_are_passed_per_file(tmp_path):
    # Sanity for the helpers above: the library and the CLI agree on defaults.
    (tmp_path / "a.py").write_text(LEGACY)
    run(["a.py"], tmp_path)
    assert (tmp_path / "a.py").read_text() == migrate_source(LEGACY, Options()).code
