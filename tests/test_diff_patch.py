"""`--diff` output is a patch that `git apply` and `patch -p1` accept, for every file hcmigrate
rewrites (issue 17): a form feed, U+2028, a lone CR, a BOM, a PEP 263 encoding, CRLF, no final
newline; checked with the real tools against what a rewrite writes."""

from __future__ import annotations

import codecs
import shutil
import subprocess

from cli_helpers import program


hcmigrate = program

BODY = "def f(x):\n    hcb.id_tap(lambda a, t: print(a), x)\n    return x\n"
HCB = "from jax.experimental import host_callback as hcb\n"
AWKWARD = {
    "formfeed.py": (HCB + "\x0c\n# page\x0cbreak\n" + BODY).encode(),
    "separators.py": (HCB + "s = 'a\u2028b'  # U+2028\n# U+2029 \u2029 and \x85\n" + BODY).encode(),
    "lone_cr.py": (HCB + "y = 1\rz = 2\n" + BODY).encode(),
    "lone_cr_import.py": (HCB.rstrip("\n") + "\r" + BODY).encode(),
    "bom.py": codecs.BOM_UTF8 + (HCB + "# \u00fcber\n" + BODY).encode(),
    "latin1.py": ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + HCB + BODY).encode("latin-1"),
    "crlf.py": (HCB + BODY).replace("\n", "\r\n").encode(),
    "no_newline.py": (HCB + BODY.rstrip("\n")).encode(),
}


def test_diff_is_a_patch_git_apply_and_patch_accept(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name, data in AWKWARD.items():
        (src / name).write_bytes(data)
    res = hcmigrate("--diff", "-j2", ".", cwd=src)
    assert res.returncode == 0, res.stderr.decode(errors="replace")
    patch = res.stdout
    for name in AWKWARD:
        assert f"--- a/{name}\n".encode() in patch
    subprocess.run(["git", "init", "-q", "."], cwd=src, check=True)
    subprocess.run(["git", "apply", "--check", "-"], input=patch, cwd=src, check=True)
    subprocess.run(["patch", "-p1", "--dry-run", "-s"], input=patch, cwd=src, check=True)
    # Applied, each gives exactly what a rewrite writes.
    by_git, by_patch = tmp_path / "git", tmp_path / "patch"
    shutil.copytree(src, by_git)
    shutil.copytree(src, by_patch)
    subprocess.run(["git", "apply", "-"], input=patch, cwd=by_git, check=True)
    subprocess.run(["patch", "-p1", "-s"], input=patch, cwd=by_patch, check=True)
    assert hcmigrate("-j1", ".", cwd=src).returncode == 0
    for name, data in AWKWARD.items():
        rewritten = (src / name).read_bytes()
        assert rewritten != data
        assert (by_git / name).read_bytes() == rewritten, name
        assert (by_patch / name).read_bytes() == rewritten, name


def test_diff_of_standard_input_keeps_its_bytes(tmp_path):
    data = AWKWARD["latin1.py"]
    (tmp_path / "l.py").write_bytes(data)
    res = hcmigrate("--diff", "--stdin-filename", "l.py", "-", cwd=tmp_path, input=data)
    assert res.returncode == 0
    subprocess.run(["patch", "-p1", "-s"], input=res.stdout, cwd=tmp_path, check=True)
    fixed = hcmigrate("-", cwd=tmp_path, input=data).stdout
    assert (tmp_path / "l.py").read_bytes() == fixed and b"caf\xe9" in fixed


ODD_NAMES = [
    "tab\t.py",
    "new\nline.py",
    'quote".py',
    "with space.py",
    "\u00fcn\u00ef.py",
    "back\\slash.py",
]


def test_a_patch_of_files_with_odd_names_applies_whole(tmp_path):
    """Names with a tab, a newline, a quote or a backslash are C-quoted as git quotes them
    (a raw newline split the header and `git apply` rejected the whole patch; issue 28)."""
    src = tmp_path / "src"
    src.mkdir()
    data = (HCB + BODY).encode()
    for name in ODD_NAMES:
        (src / name).write_bytes(data)
    res = hcmigrate("--diff", "-j2", ".", cwd=src)
    assert res.returncode == 0, res.stderr.decode(errors="replace")
    patch = res.stdout
    assert b'--- "a/new\\nline.py"\n' in patch and b'--- "a/tab\\t.py"\n' in patch
    assert b'+++ "b/quote\\".py"\n' in patch and b'--- "a/back\\\\slash.py"\n' in patch
    assert (
        "--- a/with space.py\t\n".encode() in patch and "--- a/\u00fcn\u00ef.py\n".encode() in patch
    )
    by_git, by_patch = tmp_path / "git", tmp_path / "patch"
    shutil.copytree(src, by_git)
    shutil.copytree(src, by_patch)
    subprocess.run(["git", "init", "-q", "."], cwd=by_git, check=True)
    subprocess.run(["git", "apply", "-"], input=patch, cwd=by_git, check=True)
    subprocess.run(["patch", "-p1", "-s"], input=patch, cwd=by_patch, check=True)
    assert hcmigrate("-j1", ".", cwd=src).returncode == 0
    for name in ODD_NAMES:
        rewritten = (src / name).read_bytes()
        assert rewritten != data
        assert (by_git / name).read_bytes() == rewritten, name
        assert (by_patch / name).read_bytes() == rewritten, name
