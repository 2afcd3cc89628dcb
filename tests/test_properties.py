"""Hypothesis: generated call sites over every import form, alias, argument form and nesting
context. For each: no crash, the output parses, a second run is a no-op, and the code around the
site is byte-identical."""

from __future__ import annotations

import ast

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hcmigrate.api import MigrationError, Options, migrate_source

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# (import lines, how the module is spelled at the call, or None when names are imported directly)
IMPORTS = [
    ("from jax.experimental import host_callback", "host_callback"),
    ("from jax.experimental import host_callback as {alias}", "{alias}"),
    ("import jax.experimental.host_callback as {alias}", "{alias}"),
    ("import jax\nimport jax.experimental.host_callback", "jax.experimental.host_callback"),
    ("from jax.experimental.host_callback import {names}", None),
    (
        "try:\n    import jax.experimental.host_callback as {alias}\nexcept ImportError:\n    {alias} = None",
        "{alias}",
    ),
]
ALIASES = st.sampled_from(["hcb", "hc", "host_cb", "_hcb"])

ARGS = st.sampled_from(["x", "(x, y)", "None", "{'a': x}", "[x, 1]", "x + 1"])
TAPS = st.sampled_from(
    [
        "lambda a, transforms: print(a)",
        "lambda *args: None",
        "lambda a, _: None",
        "print_tap",
        "functools.partial(print_tap)",
        "dev_tap",
        "kw_dev_tap",
        "star_tap",
        "default_tap",
        "dev_used_tap",
        "lambda a, t, device=None: print(a)",
        "lambda a, t, *, device: print(device)",
    ]
)
TAP_FLAGS = st.sampled_from(
    [
        "",
        ", tap_with_device=True",
        ", device_index=1",
        ", device_index=0",
        ", tap_with_transform=False",
        ", tap_with_transform=True",
    ]
)
CALLBACKS = st.sampled_from(
    ["np.sin", "lambda v: v * 2", "host_fn", "np.linalg.norm", "dev_cb", "dev_used_cb"]
)
CALL_FLAGS = st.sampled_from(["", ", call_with_device=True", ", device_index=2"])
SHAPES = st.sampled_from(["jax.ShapeDtypeStruct((3,), jnp.float32)", "x", "1.0", "(x, x)", "None"])


@st.composite
def calls(draw, mod):
    fn = draw(st.sampled_from(["id_tap", "id_print", "call", "barrier_wait"]))
    callee = f"{mod}.{fn}" if mod else fn
    arg = draw(ARGS)
    if fn == "id_tap":
        extra = draw(st.sampled_from(["", ", result=y", ", result=(x, y)"])) + draw(TAP_FLAGS)
        return fn, f"{callee}({draw(TAPS)}, {arg}{extra})"
    if fn == "id_print":
        extra = draw(st.sampled_from(["", ", what='loss'", ", result=y", ", what='v', result=x"]))
        return fn, f"{callee}({arg}{extra})"
    if fn == "call":
        shape = draw(SHAPES)
        kw = draw(st.sampled_from(["result_shape", "result_shape_dtypes"]))
        return fn, f"{callee}({draw(CALLBACKS)}, {arg}, {kw}={shape}{draw(CALL_FLAGS)})"
    return fn, f"{callee}()"


CONTEXTS = [
    "def f(x, y):\n    {call}\n    return x\n",
    "def f(x, y):\n    return {call}\n",
    "def f(x, y):\n    z = {call}\n    return z\n",
    "def f(x, y):\n    return jax.lax.cond(x > 0, lambda _: {call}, lambda _: y, None)\n",
    "def f(x, y):\n    def inner(i, c):\n        {call}\n        return c\n    return jax.lax.fori_loop(0, 3, inner, x)\n",
    "def f(x, y):\n    return [{call}, 2]\n",
    "class C:\n    def m(self, x, y):\n        if x:\n            {call}\n        return (x, y)\n",
]

HEADER = '# -*- coding: utf-8 -*-\n"""Module docstring mentioning host_callback.id_tap(x)."""\nimport functools\nimport numpy as np\nimport jax\nimport jax.numpy as jnp\n'
UNRELATED = [
    "def untouched_a( x ,y ):   # odd spacing, kept\n    return (x+\n            y)\n",
    "VALUE = {  'k' : [1,2 ,3] }  # comment: hcb.id_tap(f, x) in a comment\n",
    "@functools.lru_cache( )\ndef cached(host_callback=None):   # a parameter named host_callback\n    return host_callback\n",
]


# Callbacks the calls use: the rewrite may legitimately adapt them (drop an unused `transforms`).
HELPERS = (
    "\n\ndef print_tap(a, transforms):\n    print(a)\n\n\ndef host_fn(v):\n    return v\n"
    "\n\ndef dev_tap(a, transforms, device):\n    print(a)\n"
    "\n\ndef kw_dev_tap(a, transforms, *, device=None):\n    print(a)\n"
    "\n\ndef star_tap(a, *rest, **kw):\n    print(a)\n"
    "\n\ndef default_tap(a, transforms=(), n=2):\n    print(a, n)\n"
    "\n\ndef dev_used_tap(a, transforms, device):\n    print(device)\n"
    "\n\ndef dev_cb(a, device):\n    return a\n"
    "\n\ndef dev_used_cb(a, device):\n    return a if device else a\n"
)


@st.composite
def programs(draw):
    imp, mod = draw(st.sampled_from(IMPORTS))
    alias = draw(ALIASES)
    fn, call = draw(calls(mod.format(alias=alias) if mod else None))
    context = draw(st.sampled_from(CONTEXTS))
    if "barrier_wait" in call and (
        "return {call}" in context
        or "lambda _: {call}" in context
        or "z = " in context
        or "[{call}" in context
    ):
        context = CONTEXTS[0]
    before = draw(st.lists(st.sampled_from(UNRELATED), max_size=2, unique=True))
    after = draw(st.lists(st.sampled_from(UNRELATED), max_size=2, unique=True))
    imports = imp.format(alias=alias, names=fn)
    body = context.replace("{call}", call)
    text = (
        HEADER
        + imports
        + "\n\n"
        + "\n".join(before)
        + "\n"
        + body
        + "\n"
        + "\n".join(after)
        + HELPERS
    )
    return text, before + after


def _check(text: str, kept: list[str], options: Options) -> None:
    ast.parse(text)  # the generator only makes valid Python
    try:
        out = migrate_source(text, options)
    except MigrationError as exc:  # pragma: no cover - a failure of the property
        raise AssertionError(f"valid input rejected: {exc.message}\n{text}")
    ast.parse(out.code)
    again = migrate_source(out.code, options)
    assert again.code == out.code, f"second run not a no-op:\n{out.code}\n---\n{again.code}"
    for block in kept:
        assert block in out.code, f"untouched code changed:\n{block}\n---\n{out.code}"
    assert out.code.startswith(
        '# -*- coding: utf-8 -*-\n"""Module docstring mentioning host_callback.id_tap(x)."""\n'
    )


@SETTINGS
@given(programs())
def test_native_strategy_properties(program):
    text, kept = program
    _check(text, kept, Options())


@SETTINGS
@given(programs())
def test_compat_strategy_properties(program):
    text, kept = program
    _check(text, kept, Options(strategy="compat"))


@SETTINGS
@given(programs(), st.sampled_from([(0, 4, 30), (0, 4, 35), None]), st.booleans())
def test_options_properties(program, target, todos):
    text, kept = program
    _check(text, kept, Options(target_jax=target, add_todos=todos))


@SETTINGS
@given(
    st.lists(st.sampled_from(UNRELATED), min_size=1, max_size=5),
    st.sampled_from(
        [
            "import mypkg.host_callback as hcb\nhcb.id_tap(f, x)\n",
            "from paxml import host_callback\nhost_callback.call(f, 1)\n",
            "def g(host_callback):\n    return host_callback.id_tap(f, 1)\n",
            "",
        ]
    ),
)
def test_code_without_the_legacy_api_is_byte_identical(blocks, other):
    text = "import jax\n" + other + "\n".join(blocks)
    out = migrate_source(text)
    assert out.code == text and not out.changed


# --- hostile files through the real program (issue 17) ---------------------------------------

import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import tokenize  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
GOOD = (
    "# a module comment\n"
    "from jax.experimental import host_callback as hcb  # the import\n\n\n"
    "def step(x):  # step\n"
    "    # before the tap\n"
    "    hcb.id_tap(lambda a, t: print(a), x)  # after the tap\n"
    "    y = hcb.id_print(x)  # printed\n"
    "    return y  # done\n"
)
HEAD = "from jax.experimental import host_callback as hcb\n"


def _nested(depth: int) -> str:
    return HEAD + "x = hcb.id_print(" + "[" * depth + "1" + "]" * depth + ")  # deep\n"


# File contents: (bytes or None for a special file kind, is it a notebook).
CONTENTS = st.one_of(
    st.sampled_from([10, 150, 199, 250, 5_000, 50_000]).map(lambda d: _nested(d).encode()),
    st.sampled_from([100, 1_000, 3_500]).map(
        lambda n: (HEAD + "x = hcb.id_print(a" + ".b" * n + ")  # attrs\n").encode()
    ),
    st.sampled_from([10, 5_000, 100_000]).map(
        lambda n: (HEAD + "x = hcb.id_print(" + "not " * n + "y)  # nots\n").encode()
    ),
    st.sampled_from(
        [
            GOOD.encode("utf-16"),  # (NUL bytes: binary)
            b"\xef\xbb\xbf" + GOOD.encode(),
            GOOD.replace("\n", "\r\n").encode(),
            ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + GOOD).encode("latin-1"),
            ("# caf\xe9\n" + GOOD).encode("latin-1"),  # (no cookie: not UTF-8)
            GOOD.replace("x)  # after", "x)\x0c  # after").encode(),
            (GOOD + "s = 'a\u2028b'  # separators\n").encode(),
            (GOOD + "z = 1\r").encode(),
            GOOD.rstrip("\n").encode(),
            GOOD.replace("def step", "def step(:").encode(),  # (a syntax error)
            b"",
            b"fifo",
            b"folder",
            b"symlink",
            b"notebook",
            b"broken-notebook",
        ]
    ),
)
NAMES = st.sampled_from(
    [
        "a.py",
        "with space.py",
        "-dash.py",
        "\u00fcml.py",
        "tab\t.py",
        "new\nline.py",
        'quo"te.py',
        "back\\slash.py",
        "x.ipynb",
    ]
).map(os.fsencode) | st.just(b"\xff\xfe bytes.py")
# The result cache the run is given (issue 28): none, a real one whose entries are then
# tampered with, or a results file that is not one.
CACHES = st.sampled_from([None, None, "tampered", "fifo", "folder", "garbage"])
TAMPERED = st.sampled_from(["def (:\n", "import os\nos.system('touch pwned')\n", 3, None])


def _notebook(code: str) -> bytes:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    nb = {"cells": [dict(cell, source=code.splitlines(True))], "metadata": {}, "nbformat": 4}
    return (json.dumps(nb, indent=1) + "\n").encode()


def _make(folder: Path, name: bytes, content: bytes) -> None:
    path = Path(os.fsdecode(os.fsencode(folder) + b"/" + name))
    if content == b"fifo":
        os.mkfifo(path)
    elif content == b"folder":
        path.mkdir()
    elif content == b"symlink":
        path.symlink_to(folder / "good.py")
    elif content == b"notebook":
        path.write_bytes(_notebook(GOOD))
    elif content == b"broken-notebook":
        path.write_bytes(b'{"cells": [')
    else:
        path.write_bytes(content)


def _comments(data: bytes) -> list[str]:
    try:
        return [
            tok.string
            for tok in tokenize.tokenize(io.BytesIO(data).readline)
            if tok.type == tokenize.COMMENT and "coding" not in tok.string
        ]
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        return []


def _source(data: bytes) -> str:
    from hcmigrate.files import decode_python

    return decode_python(data)[0]


def _hostile_cache(cache_dir: Path, kind: str | None, tampered, folder: Path) -> None:
    """Put a hostile results file of `kind` in `cache_dir`: a real cache of the folder (a
    --check run) whose entries' new text is then `tampered`, or something that is no cache."""
    results = cache_dir / "results.json"
    if kind == "tampered":
        subprocess.run(
            [sys.executable, "-m", "hcmigrate", "--check", "--cache-dir", str(cache_dir), "."],
            cwd=folder,
            capture_output=True,
            timeout=120,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
        )
        stored = json.loads(results.read_text())
        for entry in stored["entries"].values():
            entry["new"] = tampered
        results.write_text(json.dumps(stored))
    elif kind == "fifo":
        os.mkfifo(results)
    elif kind == "folder":
        results.mkdir()
    elif kind == "garbage":
        results.write_bytes(b'{"tool": [1, {"entries": \xff')


def _stop_a_worker(proc: subprocess.Popen) -> None:
    """SIGSTOP the first worker process `proc` starts (if it starts one before it ends)."""
    from cli_helpers import children

    while proc.poll() is None:
        workers = children(proc.pid)
        if workers:
            try:
                os.kill(workers[0], signal.SIGSTOP)
            except ProcessLookupError:
                pass
            return
        time.sleep(0.005)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    files=st.dictionaries(NAMES, CONTENTS, min_size=1, max_size=3),
    mode=st.sampled_from(["fix", "--check", "--diff"]),
    jobs=st.sampled_from(["1", "2"]),
    cache=CACHES,
    tampered=TAMPERED,
    stop_a_worker=st.sampled_from([False, False, False, False, True]),
)
def test_hostile_files_through_the_program(files, mode, jobs, cache, tampered, stop_a_worker):
    """Whatever the files, the result cache and a worker stopped (SIGSTOP) under way: no
    traceback, an exit code that means what docs/cli.md says, every file written compiles and
    keeps its comments and is never text from the cache, --check and --diff write nothing and
    --diff's patch applies."""
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as cache_dir:
        folder = Path(tmp)
        (folder / "good.py").write_text(GOOD)
        for name, content in files.items():
            _make(folder, name, content)
        before = {p: p.read_bytes() for p in folder.iterdir() if p.is_file() and not p.is_symlink()}
        args = [] if mode == "fix" else [mode]
        command = [sys.executable, "-m", "hcmigrate", "-j", jobs, *args, "."]
        command[3:3] = ["--no-cache"] if cache is None else ["--cache-dir", cache_dir]
        _hostile_cache(Path(cache_dir), cache, tampered, folder)
        proc = subprocess.Popen(
            command,
            cwd=folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
        )
        if stop_a_worker:
            _stop_a_worker(proc)
        stdout, stderr = proc.communicate(timeout=120)
        out, err = stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace")
        assert "Traceback" not in out + err, err
        assert proc.returncode in (0, 1, 2), err
        # 2: some file could not be processed, and each such file is named in an error.
        assert (proc.returncode == 2) == ("error: " in err), err
        # 1: a file would change (--check) or a site is left for a human (every mode).
        if proc.returncode != 2 and mode == "--check":
            assert (proc.returncode == 1) == ("would rewrite" in out or "[manual]" in out), out
        if proc.returncode != 2 and mode != "--check":
            assert (proc.returncode == 1) == ("[manual]" in out + err), out + err
        if mode == "fix":
            assert "hcb" not in (folder / "good.py").read_text() or proc.returncode == 2
        if mode == "--diff" and stdout:
            subprocess.run(["git", "apply", "--check", "-"], input=stdout, cwd=folder, check=True)
        for path, data in before.items():
            now = path.read_bytes()
            if mode != "fix" or path.suffix == ".ipynb":
                if mode != "fix":
                    assert now == data, path
                continue
            if now != data:
                text = _source(now)
                compile(text, str(path), "exec", dont_inherit=True)
                assert "os.system" not in text, path
                for comment in _comments(data):
                    assert comment in text, (path, comment)
        assert not list(folder.glob("*.hcmigrate-tmp")) and not list(
            folder.glob(".*.hcmigrate-tmp")
        )
