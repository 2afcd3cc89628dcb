#!/usr/bin/env python3
"""Measure every row of the table of removed JAX APIs (hcmigrate.jax_removals) on real JAX.

Two measurements, written to docs/jax_removals.json:

* runs: each row's probes (a tiny program using the API: attribute access, `from X import Y`,
  the module import, the keyword call, the array method; and the row's replacement spelling)
  executed in three interpreters: `legacy` (the cached jax 0.4.30 environment), `oldest` (the
  cached jax 0.6.2 environment, the oldest JAX the project supports) and `current` (this
  Python's JAX). Each probe is OK (works silently), WARN (works with a DeprecationWarning: its
  text) or FAIL (the exception: type and first line). All probes of one interpreter run in one
  child process.
* wheels: the pure-Python `jax` wheels of every release from 0.4.16 to the newest (`pip
  download --no-deps`, cached in ~/.cache/hcmigrate/jax-wheels), read without installing them:
  each module's top-level names (imports, definitions, `del`), its `_deprecations` dict (JAX's
  mechanism for deprecated and removed names: a `(message, None)` entry raises with the
  message), function signatures (keyword rows), methods of `ArrayImpl` (array-method rows),
  module files (module rows) and the `jax_threefry_partitionable` default (the random-stream
  row). Every release is read, so `removed_in` is the first release without the API, exactly.
  A row of a `jaxlib` module (`jaxlib.xla_extension`) is read from the file list of the jaxlib
  wheel each jax release runs with (the newest jaxlib on the index not newer than it: jax pins
  `jaxlib<=` its own version), read through HTTP range requests (the zip's central directory
  only, no 80 MB download) and cached in ~/.cache/hcmigrate/jaxlib-wheels.
* homes: for a removed module whose names have public homes (`jaxlib.xla_extension.Device` is
  `jax.Device`), a probe in the three interpreters (each name is its home, or a subclass of it,
  where the module still imports) and each home's status in every `jax` wheel.
* guards: for each row with a `guard`, the guarded import the codemod writes for a project
  whose JAX range starts before the replacement (hcmigrate.rules.removed_api_rewrite
  .guarded_import), run in the three interpreters with a check of what it binds: the
  primitive `jax.jit` emits (pjit_p), the equation `jax.pmap` traces to (xla_pmap_p), or the
  removed spelling's own object (the names that moved to jax.extend.core); and, in every
  wheel, where each spelling of the guarded import comes from (the module that defines it).

    python scripts/measure_jax_removals.py            # measure all, write docs/jax_removals.json
    python scripts/measure_jax_removals.py --diff     # also print where the table disagrees
    python scripts/measure_jax_removals.py --probe    # (inside a measured interpreter) run the
                                                      #   probes given on stdin as JSON

tests/test_jax_removals_facts.py checks the table against the JSON and re-runs the probes.
The probe side (`--probe`) imports only the standard library and jax there.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import io
import subprocess
import sys
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property, lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "docs" / "jax_removals.json"
EVIDENCE = REPO / "hcmigrate" / "jax_removals_evidence.py"
FIRST_RELEASE = "0.4.16"  # the oldest JAX a host_callback-era project the table covers pins
OLDEST_JAX = "0.6.2"  # the oldest JAX the project supports (pyproject: jax>=0.6)
ROLES = ("legacy", "oldest", "current")
PROBE_TIMEOUT = 300

# ----------------------------------------------------------------------------------------------
# Probe side: runs inside the measured interpreter (standard library and jax only).
# ----------------------------------------------------------------------------------------------


def run_probes(probes: list[dict]) -> dict:
    """{probe id: {"outcome": OK | WARN | FAIL, "message": ..., ["value": ...]}}."""
    import importlib
    import warnings

    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    results = {
        "meta": {
            "jax": jax.__version__,
            "jaxlib": importlib.import_module("jaxlib").__version__,
            "numpy": importlib.import_module("numpy").__version__,
        }
    }
    for probe in probes:
        namespace: dict = {"resolve": _resolve}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                exec(compile(probe["code"], f"<probe {probe['id']}>", "exec"), namespace)
            except Exception as e:  # the probe's point: what the API raises
                result = {"outcome": "FAIL", "message": _first_line(f"{type(e).__name__}: {e}")}
            else:
                deprecations = [
                    w for w in caught if issubclass(w.category, (DeprecationWarning, FutureWarning))
                ]
                if deprecations:
                    result = {
                        "outcome": "WARN",
                        "message": _first_line(str(deprecations[0].message)),
                    }
                else:
                    result = {"outcome": "OK", "message": ""}
                if "value" in namespace:
                    result["value"] = namespace["value"]
        results[probe["id"]] = result
    return results


def _first_line(text: str) -> str:
    # file paths (" (/site-packages/jax/...)" in ImportError) differ between environments
    line = text.strip().splitlines()[0] if text.strip() else ""
    return re.sub(r" \((/|[A-Za-z]:\\)[^)]*\)$", "", line)


def _resolve(dotted: str):
    """The object a dotted name names: the longest importable module, then attributes."""
    import importlib

    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:n]))
        except ModuleNotFoundError:
            continue
        for part in parts[n:]:
            obj = getattr(obj, part)
        return obj
    raise ModuleNotFoundError(f"No module named {parts[0]!r}")


# ----------------------------------------------------------------------------------------------
# Probes: derived from the table's rows (driver side).
# ----------------------------------------------------------------------------------------------

ARRAY = "import jax.numpy as jnp\nx = jnp.arange(4.0)\n"
# How each keyword row's function is called with the removed keyword, and with its replacement.
KEYWORD_CALLS = {
    ("jax.numpy.clip", "a_min"): "jnp.clip(x, a_min=1.0)",
    ("jax.numpy.clip", "a_max"): "jnp.clip(x, a_max=2.0)",
    ("jax.numpy.clip", "a"): "jnp.clip(a=x, max=2.0)",
    ("jax.numpy.reshape", "newshape"): "jnp.reshape(x, newshape=(-1,))",
}
KEYWORD_REPLACEMENT_CALLS = {
    ("jax.numpy.clip", None): "jnp.clip(x, None, 2.0)",  # no keyword: positional
    ("jax.numpy.clip", "min"): "jnp.clip(x, min=1.0)",
    ("jax.numpy.clip", "max"): "jnp.clip(x, max=2.0)",
    ("jax.numpy.clip", "x"): "jnp.clip(x=x, max=2.0)",
    ("jax.numpy.reshape", "shape"): "jnp.reshape(x, shape=(-1,))",
}
# Rows whose use is a call (a deprecation may warn only when called; an attribute may remain as
# something that is no longer callable).
CALLS = {
    "jax.Array.device": "x.device()",
    "jax.xla_computation": "jax.xla_computation(lambda a: a + 1)(1.0)",
    "jax.numpy.round_": "jnp.round_(x)",
    "jax.numpy.trapz": "jnp.trapz(x)",
    "jax.numpy.in1d": "jnp.in1d(x, x)",
    "jax.numpy.row_stack": "jnp.row_stack([x, x])",
    "jax.numpy.msort": "jnp.msort(x)",
    "jax.random.shuffle": "jax.random.shuffle(jax.random.PRNGKey(0), x)",
    "jax.core.get_aval": "jax.core.get_aval(x)",
}
# Calls whose meaning changed (CALL_BEHAVIOUR rows): the call in the form that changed, and
# the source text that says so in each wheel (found: deprecated; the raise: removed).
CHANGED_CALLS = {
    "jax.numpy.linalg.solve": "import jax.numpy as jnp\n"
    "jnp.linalg.solve(jnp.eye(2) + jnp.zeros((3, 2, 2)), jnp.ones((3, 2)))",
}
CHANGED_CALL_SOURCES = {
    "jax.numpy.linalg.solve": (
        "jax/_src/numpy/linalg.py",
        "batched 1D solves with b.ndim > 1 are deprecated",
        "Invalid shapes for solve",
    ),
}

# The random-stream row: the same draw with the default stream and with the flag that restores
# the stream of jax < 0.5.0.
RANDOM_DRAW = (
    "import jax\nvalue = [float(v) for v in jax.random.normal(jax.random.PRNGKey(0), (3,))]\n"
    "value += [int(v) for v in jax.random.split(jax.random.PRNGKey(0))[0]]\n"
)
RANDOM_OLD_STREAM = (
    "import jax\njax.config.update('jax_threefry_partitionable', False)\n"
    "try:\n" + "".join("    " + line + "\n" for line in RANDOM_DRAW.splitlines()[1:]) + "finally:\n"
    "    jax.config.update('jax_threefry_partitionable', _default)\n"
)
# Spellings that still work and must not be mistaken for the removed ones (`jax.config` the
# object versus the removed module, positional clip, the tree_util spellings, ...).
CONTROLS = {
    "jax.config.update": "import jax\njax.config.update('jax_enable_x64', False)",
    "from jax import config": "from jax import config\nconfig.update('jax_enable_x64', False)",
    "jnp.clip positional": ARRAY + "jnp.clip(x, 1.0, 2.0)",
    "jax.tree_util.tree_map": "import jax.tree_util\njax.tree_util.tree_map(lambda v: v, [1])",
    "jax.experimental.pjit.pjit": "from jax.experimental.pjit import pjit",
    "jax.example_libraries.optimizers": "import jax.example_libraries.optimizers",
    "jax.extend.linear_util": "import jax.extend.linear_util",
    "jax.core.ShapedArray": "import jax.core\njax.core.ShapedArray",
    "jax.Array.devices": ARRAY + "x.devices()",
}


# What each guarded import is checked for (`value`), by the name it binds, `{bound}`.
GUARD_CHECKS = {
    "jax.experimental.pjit.pjit_p": "import jax\nvalue = jax.make_jaxpr(lambda x: "
    "jax.jit(lambda y: y + 1)(x))(1.0).jaxpr.eqns[0].primitive is {bound}",
    "jax.interpreters.pxla.xla_pmap_p": "import jax\neqn = jax.make_jaxpr(jax.pmap(lambda x: "
    "x + 1))(jax.numpy.ones((1,))).eqns[0]\nvalue = [{bound} is not None and eqn.primitive is "
    "{bound}, str(eqn.primitive)]",
}
# the rows whose guard falls back to the removed spelling: the same object where both exist
GUARD_SAME_OBJECT = (
    "try:\n    old = resolve({old!r})\nexcept Exception:\n    old = None\n"
    "value = None if old is None else {bound} is old"
)

# Removed modules whose public names have homes elsewhere: the name as imported from the
# module -> its home (the advice of the row names each; tests/test_jax_removals_facts.py checks
# that the advice names them with the release the wheels give). RENAMED: the module's new
# (private) name, compared with where the old one is gone.
HOMES = {
    "jaxlib.xla_extension": {
        "Device": "jax.Device",
        "ArrayImpl": "jax.Array",
        "XlaRuntimeError": "jax.errors.JaxRuntimeError",
    },
}
RENAMED = {"jaxlib.xla_extension": "jaxlib._jax"}
# What each name is on one JAX, beside the module it was read from: "same" (the home's object),
# "subclass" (of the home), "other", "gone" (neither module has the name), "no home" (the home
# is not there).
HOME_PROBE = """\
import importlib
value = {{}}
for name, home in {homes!r}.items():
    try:
        new = resolve(home)
    except Exception:
        value[name] = "no home"
        continue
    for module in {modules!r}:
        try:
            old = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
        if old is new:
            verdict = "same"
        elif isinstance(old, type) and isinstance(new, type) and issubclass(old, new):
            verdict = "subclass"
        else:
            verdict = "other"
        value[name] = f"{{verdict}} ({{module}})"
        break
    else:
        value[name] = "gone"
"""


def home_probe(module: str) -> str:
    modules = [module] + ([RENAMED[module]] if module in RENAMED else [])
    return HOME_PROBE.format(homes=HOMES[module], modules=modules)


def guard_probe(row) -> str:
    """The guarded import of the row's name, as the codemod writes it for a project whose
    range starts before the replacement, and its check."""
    import libcst as cst

    from hcmigrate.rules.removed_api_rewrite import code_of, guarded_import

    module, name = _split(row.name)
    newest = row.replacement if row.guard == "old" else None
    statement = guarded_import(row, module, cst.ImportAlias(name=cst.Name(name)), newest)
    check = GUARD_CHECKS.get(row.name, GUARD_SAME_OBJECT)
    return code_of(statement) + check.format(bound=name, old=row.name)


def _split(dotted: str) -> tuple[str, str]:
    parent, _, name = dotted.rpartition(".")
    return parent, name


def row_probes(row) -> dict[str, str]:
    """{probe name: source} for one row: its uses, and its replacement."""
    from hcmigrate.jax_removals import Kind

    kind = row.kind
    probes: dict[str, str] = {}
    if kind is Kind.ATTRIBUTE:
        parent, name = _split(row.name)
        probes["access"] = f"import {parent}\n{row.name}"
        probes["from"] = f"from {parent} import {name}"
        if row.name in CALLS:
            probes["call"] = ARRAY + "import jax\n" + CALLS[row.name]
    elif kind is Kind.MODULE:
        probes["import"] = f"import {row.name}"
    elif kind is Kind.KEYWORD:
        probes["call"] = ARRAY + KEYWORD_CALLS[(row.name, row.keyword)]
    elif kind is Kind.METHOD:
        method = _split(row.name)[1]
        probes["use"] = ARRAY + CALLS.get(row.name, f"x.{method}")
    elif kind is Kind.CALL_BEHAVIOUR:
        probes["call"] = CHANGED_CALLS[row.name]
    elif kind is Kind.BEHAVIOUR:
        probes["draw"] = RANDOM_DRAW
        probes["draw_old_stream"] = (
            "import jax\n_default = jax.config.jax_threefry_partitionable\n" + RANDOM_OLD_STREAM
        )
    replacement = replacement_probe(row)
    if replacement is not None:
        probes["replacement"] = replacement
    return probes


def replacement_probe(row) -> str | None:
    from hcmigrate.jax_removals import Kind

    spelling = row.replacement
    if row.kind is Kind.KEYWORD and row.mechanical:
        return ARRAY + KEYWORD_REPLACEMENT_CALLS[(row.name, spelling)]
    if spelling is None:
        return None
    if row.kind is Kind.METHOD and re.match(r"\w", spelling):
        return ARRAY + f"x.{spelling}"
    target = replacement_target(row)
    if target is not None:
        return f"resolve({target!r})"
    # an expression: evaluated with an array `x`, a function `f` and its arguments `args`
    return ARRAY + f"import jax\nf = lambda a: a + 1\nargs = (1.0,)\n{spelling}"


def replacement_target(row) -> str | None:
    """The dotted name the replacement spelling rests on, where it is one ("-jax.numpy.inf"
    rests on jax.numpy.inf; "jax.typeof" is itself), for reading it from the wheels; for a
    method row, `jax.Array.<method>`; None for a literal or an expression."""
    from hcmigrate.jax_removals import Kind

    spelling = row.replacement
    if spelling is None:
        return None
    if row.kind is Kind.METHOD:
        m = re.fullmatch(r"(\w+)(\(.*\))?", spelling)
        return f"jax.Array.{m.group(1)}" if m else None
    m = re.fullmatch(r"-?((?:jax)(?:\.\w+)*)", spelling)
    return m.group(1) if m else None


def all_probes(rows) -> list[dict]:
    probes = [
        {"id": f"{row.key}/{name}", "code": code}
        for row in rows
        for name, code in row_probes(row).items()
    ]
    probes += [{"id": f"control/{name}", "code": code} for name, code in CONTROLS.items()]
    probes += [{"id": f"guard/{row.key}", "code": guard_probe(row)} for row in rows if row.guard]
    probes += [
        {"id": f"homes/{row.key}", "code": home_probe(row.name)}
        for row in rows
        if row.name in HOMES
    ]
    return probes


def measure_runs(python: str, probes: list[dict]) -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONWARNINGS="ignore")
    env.pop("PYTHONPATH", None)  # the measured interpreter imports only jax
    done = subprocess.run(
        [python, str(Path(__file__).resolve()), "--probe"],
        input=json.dumps(probes),
        capture_output=True,
        text=True,
        env=env,
        timeout=PROBE_TIMEOUT,
        cwd=os.path.expanduser("~"),
    )
    if done.returncode != 0:
        raise RuntimeError(f"probes failed in {python}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def interpreter(role: str) -> str:
    if role == "current":
        return sys.executable
    from hcmigrate.legacy_env import jax_env_python, legacy_python

    if role == "oldest":
        return os.environ.get("HCMIGRATE_OLDEST_JAX_PYTHON") or str(
            jax_env_python(OLDEST_JAX, "compat")
        )
    return str(legacy_python())


# ----------------------------------------------------------------------------------------------
# Wheels: read each release's sources.
# ----------------------------------------------------------------------------------------------

USABLE = ("present", "deprecated")  # the API works (a deprecation only warns)


def version_key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", v))


def wheel_dir() -> Path:
    from hcmigrate.legacy_env import cache_dir

    return cache_dir() / "jax-wheels"


def releases() -> list[str]:
    """Every jax release from FIRST_RELEASE on, as the package index lists them."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", "jax", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    )
    line = next(x for x in done.stdout.splitlines() if x.startswith("Available versions:"))
    found = [v.strip() for v in line.split(":", 1)[1].split(",")]
    return sorted(
        (v for v in found if version_key(v) >= version_key(FIRST_RELEASE)), key=version_key
    )


def wheel_path(version: str) -> Path:
    folder = wheel_dir()
    path = folder / f"jax-{version}-py3-none-any.whl"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--only-binary",
                ":all:",
                "--disable-pip-version-check",
                f"jax=={version}",
                "-d",
                str(folder),
            ],
            check=True,
        )
    return path


# ----------------------------------------------------------------------------------------------
# jaxlib: the file lists of its wheels (binary, ~80 MB each: only the zip's directory is read).
# ----------------------------------------------------------------------------------------------

JAXLIB_INDEX = "https://pypi.org/simple/jaxlib/"  # PEP 691 JSON: every file with its URL
_EXTENSION = re.compile(r"\.(?:[\w-]+\.)?(?:so|pyd)$")  # xla_extension.so, _jax.cpython-311-….so


def is_jaxlib(row) -> bool:
    return row.name.split(".")[0] == "jaxlib"


@lru_cache(maxsize=1)
def jaxlib_index() -> dict[str, str]:
    """{jaxlib version: the URL of one of its wheels} (a manylinux x86_64 one, for Python 3.11
    where there is one: the module files are the same in every wheel of a release)."""
    request = urllib.request.Request(
        JAXLIB_INDEX, headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        files = json.load(response)["files"]
    found: dict[str, tuple[int, str]] = {}
    for f in files:
        m = re.match(r"jaxlib-([\d.]+)-(.*)\.whl$", f["filename"])
        if not m or f.get("yanked"):
            continue
        tags = m.group(2)
        rank = ("cp311" in tags) * 2 + ("manylinux" in tags and "x86_64" in tags)
        if rank > found.get(m.group(1), (-1, ""))[0]:
            found[m.group(1)] = (rank, f["url"])
    return {v: url for v, (_, url) in found.items()}


def jaxlib_for(jax_version: str) -> str:
    """The jaxlib jax `jax_version` runs with: the newest on the index not newer than it (jax
    requires `jaxlib<=` its own version; 0.4.37 and 0.5.2 were jax-only releases; jaxlib
    0.4.14-0.4.17 are not on the index, so jax 0.4.16-0.4.17 read 0.4.13)."""
    older = [v for v in jaxlib_index() if version_key(v) <= version_key(jax_version)]
    return max(older, key=version_key)


class _Ranges(io.RawIOBase):
    """A remote file read by HTTP range requests (zipfile reads the end, then the directory)."""

    def __init__(self, url: str):
        self.url, self.pos = url, 0
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=60) as r:
            self.size = int(r.headers["Content-Length"])

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = (0, self.pos, self.size)[whence] + offset
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        headers = {"Range": f"bytes={self.pos}-{end - 1}"}
        with urllib.request.urlopen(
            urllib.request.Request(self.url, headers=headers), timeout=120
        ) as r:
            if r.status != 206:
                raise RuntimeError(f"{self.url}: no range requests (HTTP {r.status})")
            data = r.read()
        self.pos += len(data)
        return data


def jaxlib_files(version: str) -> set[str]:
    """The file names of jaxlib `version`'s wheel (cached: the wheel's name, then one a line)."""
    folder = wheel_dir().parent / "jaxlib-wheels"
    cached = folder / f"jaxlib-{version}.files"
    if not cached.exists():
        url = jaxlib_index()[version]
        names = zipfile.ZipFile(_Ranges(url)).namelist()
        folder.mkdir(parents=True, exist_ok=True)
        cached.write_text("\n".join([url.rsplit("/", 1)[1].split("#")[0], *names]) + "\n")
    return set(cached.read_text().splitlines()[1:])


def jaxlib_module(version: str, dotted: str) -> tuple[str, str]:
    """Is the module `dotted` in jaxlib `version`'s wheel (a .py, a package, or an extension
    module)? "present" or "absent", and the file."""
    base = dotted.replace(".", "/")
    for name in sorted(jaxlib_files(version)):
        rest = name[len(base) :] if name.startswith(base) else None
        if rest in (".py", "/__init__.py") or (rest is not None and _EXTENSION.fullmatch(rest)):
            return "present", name
    return "absent", ""


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _string(node: ast.expr | None) -> str:
    """A string constant, an implicit/explicit concatenation of them, or the source."""
    if node is None:
        return ""
    try:
        value = ast.literal_eval(node)
        return value if isinstance(value, str) else ast.unparse(node)
    except ValueError:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return _string(node.left) + _string(node.right)
        if isinstance(node, ast.JoinedStr):
            return "".join(v.value if isinstance(v, ast.Constant) else "{...}" for v in node.values)
        return ast.unparse(node)


def _warning_text(body: list[ast.stmt]) -> str | None:
    """The message of a deprecation warning a function body (or module) issues on every
    call, if any: only statements at its top level count (a warning under an `if` is for some
    arguments only, e.g. jax.core.get_aval in 0.6.x)."""
    for stmt in body:
        node = stmt.value if isinstance(stmt, ast.Expr) else None
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if not name.endswith("warn"):
            continue
        texts = [_string(a) for a in node.args if not isinstance(a, ast.Name)]
        cats = [ast.unparse(a) for a in [*node.args, *(k.value for k in node.keywords)]]
        if any("Deprecation" in c or "FutureWarning" in c for c in cats) or (
            isinstance(func, ast.Attribute) and "deprecation" in ast.unparse(func.value)
        ):
            return next((t for t in texts if "deprecat" in t.lower()), texts[0] if texts else "")
    return None


def _raises_only(body: list[ast.stmt]) -> str | None:
    """The message of an exception a function body raises unconditionally (a removal stub)."""
    for stmt in body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # the docstring
        if isinstance(stmt, ast.Raise) and isinstance(stmt.exc, ast.Call):
            return _string(stmt.exc.args[0]) if stmt.exc.args else ast.unparse(stmt.exc)
        return None
    return None


class ModuleInfo:
    """What one module of a wheel binds at run time, read from its source."""

    def __init__(self, dotted: str, tree: ast.Module, package: bool):
        self.dotted = dotted
        self.package = package  # an __init__.py: relative imports start from itself
        self.bound: dict[str, ast.stmt] = {}  # name -> the statement that binds it
        self.imported_from: dict[str, tuple[str, str]] = {}  # name -> (module, original name)
        self.deprecations: dict[str, tuple[str, bool]] = {}  # name -> (message, removed)
        self.stars: list[str] = []
        self.raises: str | None = None  # a top-level raise: importing the module fails
        self.warns: str | None = None  # a top-level deprecation warning: importing warns
        self.strings: dict[str, str] = {}  # module-level string constants (messages)
        self._walk(tree.body)

    def _bind(self, name: str, stmt: ast.stmt) -> None:
        self.bound[name] = stmt
        self.imported_from.pop(name, None)

    def _walk(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.If):
                # `if TYPE_CHECKING:` binds nothing at run time; `if
                # deprecations.is_accelerated(...): raise` is off unless JAX's developers
                # accelerate the removal
                off = _is_type_checking(stmt.test) or "is_accelerated" in ast.unparse(stmt.test)
                self._walk(stmt.orelse if off else stmt.body + stmt.orelse)
            elif isinstance(stmt, ast.Try):
                self._walk(stmt.body + [s for h in stmt.handlers for s in h.body] + stmt.orelse)
                self._walk(stmt.finalbody)
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    self._bind(alias.asname or alias.name.split(".")[0], stmt)
            elif isinstance(stmt, ast.ImportFrom):
                module = self._absolute(stmt)
                for alias in stmt.names:
                    if alias.name == "*":
                        self.stars.append(module)
                        continue
                    self._bind(alias.asname or alias.name, stmt)
                    self.imported_from[alias.asname or alias.name] = (module, alias.name)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._bind(stmt.name, stmt)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if isinstance(stmt, ast.Assign) and isinstance(targets[0], ast.Name):
                    self.strings[targets[0].id] = _string(stmt.value)
                for target in targets:
                    for node in ast.walk(target):
                        if isinstance(node, ast.Name):
                            self._bind(node.id, stmt)
                if (
                    isinstance(stmt, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "_deprecations" for t in targets)
                    and isinstance(stmt.value, ast.Dict)
                ):
                    self._read_deprecations(stmt.value)
            elif isinstance(stmt, ast.Delete):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        self.bound.pop(target.id, None)
                        self.imported_from.pop(target.id, None)
            elif isinstance(stmt, ast.Raise):
                exc = stmt.exc
                self.raises = (
                    self._text(exc.args[0]) if isinstance(exc, ast.Call) and exc.args else "raises"
                )
            elif isinstance(stmt, ast.Expr) and self.warns is None:
                warns = _warning_text([stmt])
                if warns is not None:
                    call = stmt.value
                    self.warns = (
                        self._text(call.args[0])
                        if isinstance(call, ast.Call) and call.args
                        else warns
                    )

    def _text(self, node: ast.expr) -> str:
        if isinstance(node, ast.Name) and node.id in self.strings:
            return self.strings[node.id]
        return _string(node)

    def _absolute(self, stmt: ast.ImportFrom) -> str:
        if not stmt.level:
            return stmt.module or ""
        base = self.dotted.split(".")
        base = base[: len(base) - stmt.level + (1 if self.package else 0)]
        return ".".join(base + ([stmt.module] if stmt.module else []))

    def _read_deprecations(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values):
            if not isinstance(key, ast.Constant) or not isinstance(value, ast.Tuple):
                continue
            message = _string(value.elts[0])
            obj = value.elts[1] if len(value.elts) > 1 else None
            removed = isinstance(obj, ast.Constant) and obj.value is None
            self.deprecations[key.value] = (message, removed)


class Wheel:
    """One release's `jax` package, read from its wheel."""

    def __init__(self, version: str):
        self.version = version
        self.zip = zipfile.ZipFile(wheel_path(version))
        self.files = set(self.zip.namelist())
        self._modules: dict[str, ModuleInfo | None] = {}

    def module_file(self, dotted: str) -> str | None:
        base = dotted.replace(".", "/")
        for path in (f"{base}.py", f"{base}/__init__.py"):
            if path in self.files:
                return path
        return None

    def module(self, dotted: str) -> ModuleInfo | None:
        if dotted not in self._modules:
            path = self.module_file(dotted)
            info = None
            if path is not None:
                source = self.zip.read(path).decode("utf-8")
                info = ModuleInfo(dotted, ast.parse(source), path.endswith("__init__.py"))
            self._modules[dotted] = info
        return self._modules[dotted]

    @cached_property
    def config_source(self) -> str:
        return self.zip.read("jax/_src/config.py").decode("utf-8")

    # -- what a name is in this release ------------------------------------------------------

    def attribute(self, module: str, name: str, depth: int = 0) -> tuple[str, str, ast.stmt | None]:
        """(status, message, defining statement) of `module.name`: present / deprecated /
        removed (a stub that raises with a message) / absent."""
        info = self.module(module)
        if info is None or depth > 6:
            return "absent", "", None
        if name in info.bound:
            if name in info.imported_from:
                source, original = info.imported_from[name]
                if self.module_file(f"{source}.{original}"):
                    return self._module_status(f"{source}.{original}")
                if self.module(source) is not None:
                    status, message, stmt = self.attribute(source, original, depth + 1)
                    if status != "absent":
                        return ("present" if status == "removed" else status), message, stmt
                return "present", "", None  # from outside the wheel (jaxlib, numpy)
            stmt = info.bound[name]
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                warns = _warning_text(stmt.body)
                if warns is not None:
                    return "deprecated", warns, stmt
                raises = _raises_only(stmt.body)
                if raises is not None:
                    return "removed", raises, stmt
            return "present", "", stmt
        if name in info.deprecations:
            message, removed = info.deprecations[name]
            return ("removed" if removed else "deprecated"), message, None
        if self.module_file(f"{module}.{name}"):
            return "absent", "a submodule, not imported by its package", None
        for star in info.stars:
            status, message, stmt = self.attribute(star, name, depth + 1)
            if status != "absent" and not name.startswith("_"):
                return status, message, stmt
        return "absent", "", None

    def origin(self, dotted: str, depth: int = 0) -> str:
        """Where the object `dotted` names is defined (its imports followed): `module.name`,
        or `module.name (deprecated alias)` for one JAX's `_deprecations` hands out."""
        module, name = _split(dotted)
        info = self.module(module)
        if info is None or depth > 6:
            return dotted
        if name in info.imported_from:
            source, original = info.imported_from[name]
            if self.module(source) is not None:
                return self.origin(f"{source}.{original}", depth + 1)
            return f"{source}.{original}"
        if name not in info.bound and name in info.deprecations:
            return f"{dotted} (deprecated alias)"
        for star in [] if name in info.bound else info.stars:
            if self.attribute(star, name)[0] != "absent":
                return self.origin(f"{star}.{name}", depth + 1)
        return dotted

    def _module_status(self, dotted: str) -> tuple[str, str, None]:
        info = self.module(dotted)
        if info is None:
            return "absent", "", None
        if info.raises:
            return "removed", info.raises, None
        if info.warns is not None:
            return "deprecated", info.warns, None
        return "present", "", None

    def dotted(self, dotted: str) -> tuple[str, str]:
        """Status and message of a dotted name: a module, or attributes of the longest module
        prefix that is a file of the wheel."""
        if self.module_file(dotted):
            status, message, _ = self._module_status(dotted)
            return status, message
        parts = dotted.split(".")
        for n in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:n])
            if self.module_file(module):
                rest = parts[n:]
                status, message, _ = self.attribute(module, rest[0])
                if len(rest) > 1 and status in USABLE:
                    info = self.module(module)
                    source = info.imported_from.get(rest[0]) if info else None
                    inner = ".".join(source) if source else f"{module}.{rest[0]}"
                    if self.module_file(inner):
                        return self.dotted(".".join([inner, *rest[1:]]))
                    return "absent", f"{module}.{rest[0]} is not a module"
                return status, message
        return "absent", ""

    def function(self, dotted: str) -> ast.FunctionDef | None:
        parent, name = _split(dotted)
        _, _, stmt = self.attribute(parent, name)
        return stmt if isinstance(stmt, ast.FunctionDef) else None

    def keyword(self, dotted: str, keyword: str) -> tuple[str, str]:
        """Is `keyword` a keyword argument of the function `dotted`?"""
        func = self.function(dotted)
        if func is None:
            return "absent", f"no function {dotted}"
        args = func.args
        named = [*args.args, *args.kwonlyargs]
        defaults = dict(
            zip([a.arg for a in args.args][len(args.args) - len(args.defaults) :], args.defaults)
        )
        defaults.update(
            {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
        )
        if keyword not in [a.arg for a in named]:
            return "absent", "signature " + ast.unparse(args)
        default = defaults.get(keyword)
        message = self._keyword_warning(func, keyword)
        if (default is not None and "Deprecated" in ast.unparse(default)) or message is not None:
            return "deprecated", message or ""
        return "present", ""

    def _keyword_warning(self, func: ast.FunctionDef, keyword: str) -> str | None:
        for node in ast.walk(func):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if "deprecat" in node.value.lower() and f"'{keyword}'" in node.value:
                    return node.value
            if isinstance(node, (ast.JoinedStr, ast.BinOp)):
                text = _string(node)
                if "deprecat" in text.lower() and f"'{keyword}'" in text:
                    return text
        return None

    @cached_property
    def array_impl(self) -> dict[str, ast.FunctionDef]:
        tree = ast.parse(self.zip.read("jax/_src/array.py").decode("utf-8"))
        cls = next(
            n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "ArrayImpl"
        )
        return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}

    def method(self, name: str, called: bool) -> tuple[str, str]:
        """A method (`called`) or attribute of jax.Array values (the class ArrayImpl)."""
        func = self.array_impl.get(name)
        if func is None:
            return "absent", ""
        is_property = any(
            ast.unparse(d) in ("property", "functools.cached_property") for d in func.decorator_list
        )
        if called and is_property:
            return "absent", "a property now, not a method"
        raises = _raises_only(func.body)
        if raises is not None:
            return "removed", raises
        warns = _warning_text(func.body)
        return ("deprecated", warns) if warns is not None else ("present", "")

    def threefry_partitionable_default(self) -> str:
        m = re.search(
            r"name=['\"]jax_threefry_partitionable['\"],\s*default=(\w+)", self.config_source
        )
        return m.group(1) if m else "no flag"


def wheel_status(wheel: Wheel, row) -> tuple[str, str]:
    """The row's API in one release: present / deprecated / removed / absent, and JAX's
    message where it has one."""
    from hcmigrate.jax_removals import Kind

    if is_jaxlib(row):
        if row.kind is not Kind.MODULE:
            raise ValueError(f"{row.key}: only whole jaxlib modules are read (file lists)")
        status, _ = jaxlib_module(jaxlib_for(wheel.version), row.name)
        return status, ""
    if row.kind is Kind.KEYWORD:
        return wheel.keyword(row.name, row.keyword)
    if row.kind is Kind.METHOD:
        return wheel.method(_split(row.name)[1], called=row.name in CALLS)
    if row.kind is Kind.CALL_BEHAVIOUR:
        path, warning, error = CHANGED_CALL_SOURCES[row.name]
        source = wheel.zip.read(path).decode("utf-8") if path in wheel.files else ""
        if error in source:
            message = re.search(r'"(Invalid shapes for solve[^"]*)"', source)
            return "removed", message.group(1) if message else error
        if warning in source:
            return "deprecated", warning
        return "present", ""
    if row.kind is Kind.BEHAVIOUR:
        default = wheel.threefry_partitionable_default()
        # the old stream is what the row is about: it is "present" while it is the default
        return (
            "present" if default == "False" else "absent"
        ), f"jax_threefry_partitionable default {default}"
    if row.kind is Kind.MODULE and not wheel.module_file(row.name):
        return "absent", ""
    return wheel.dotted(row.name)


def replacement_status(wheel: Wheel, row) -> tuple[str, str] | None:
    from hcmigrate.jax_removals import Kind

    if row.replacement is None:
        return None
    if row.kind is Kind.KEYWORD:
        return wheel.keyword(row.name, row.replacement)
    target = replacement_target(row)
    if target is None:
        return None
    if row.kind is Kind.METHOD:
        return wheel.method(_split(target)[1], called=row.replacement.endswith(")"))
    return wheel.dotted(target)


def runs_of(statuses: dict[str, str]) -> list[list[str]]:
    """[[first, last, status], ...]: the releases grouped into runs of one status."""
    out: list[list[str]] = []
    for version, status in statuses.items():
        if out and out[-1][2] == status:
            out[-1][1] = version
        else:
            out.append([version, version, status])
    return out


def first_where(statuses: dict[str, str], wanted) -> str | None:
    return next((v for v, s in statuses.items() if wanted(s)), None)


def measured_versions(api: dict[str, str], replacement: dict[str, str] | None) -> dict:
    """The version columns the wheels give. removed_in: the first release where the API no
    longer works (the oldest read when it never did); deprecated_in: the first that warns;
    replacement_since: the first that has the replacement (None: every release read)."""
    versions = list(api)
    # (an API added after the oldest release read, e.g. jax.experimental.array_api in 0.4.21,
    # is removed where it stops working after it appeared)
    appeared = first_where(api, lambda s: s in USABLE) or versions[0]
    removed = next(
        (v for v, s in api.items() if version_key(v) >= version_key(appeared) and s not in USABLE),
        None,
    )
    back = removed is not None and any(
        s in USABLE for v, s in api.items() if version_key(v) > version_key(removed)
    )
    out = {
        "removed_in": removed,
        "deprecated_in": first_where(api, lambda s: s == "deprecated"),
        "replacement_since": None,
        "monotonic": not back,
    }
    if replacement is not None:
        since = first_where(replacement, lambda s: s in USABLE)
        out["replacement_since"] = None if since == versions[0] else since
        out["replacement_never"] = since is None
        out["replacement_absent_after"] = [
            v
            for v, s in replacement.items()
            if since and version_key(v) > version_key(since) and s not in USABLE
        ]
    return out


def describe_runs(runs: list[list[str]]) -> str:
    return ", ".join(f"{s} {a}" + (f"–{b}" if a != b else "") for a, b, s in runs)


def evidence(row_data: dict) -> str:
    """One line per row for the table's `evidence`: the runs, the wheels and JAX's words."""
    runs = row_data["runs"]
    if row_data["kind"] == "behaviour":
        return random_evidence(row_data)

    def outcome(role: str) -> str:
        use = [r for name, r in runs[role].items() if name != "replacement"]
        worst = max(use, key=lambda r: ("OK", "WARN", "FAIL").index(r["outcome"]))
        return f"{row_data['jax'][role]} {worst['outcome']}"

    parts = [", ".join(outcome(role) for role in ROLES)]
    wheels = "jaxlib wheels" if "jaxlib_read" in row_data["wheels"] else "wheels"
    parts.append(f"{wheels}: " + describe_runs(row_data["wheels"]["api"]))
    message = row_data["wheels"].get("message")
    if message:
        short = message if len(message) <= 120 else message[:120].rsplit(" ", 1)[0] + " …"
        parts.append(f'"{short}"')
    return "; ".join(parts)


def random_evidence(row_data: dict) -> str:
    runs, jax = row_data["runs"], row_data["jax"]

    def draw(role: str, probe: str = "draw") -> str:
        return "[" + ", ".join(f"{v:.4f}" for v in runs[role][probe]["value"][:3]) + "]"

    same = all(
        runs[role]["draw_old_stream"]["value"] == runs["legacy"]["draw"]["value"] for role in ROLES
    )
    defaults = ", ".join(
        f"{'False' if s == 'present' else 'True'} {a}" + (f"–{b}" if a != b else "")
        for a, b, s in row_data["wheels"]["api"]
    )
    return (
        "normal(PRNGKey(0), (3,)): "
        + ", ".join(f"{jax[role]} {draw(role)}" for role in ROLES)
        + f"; with jax_threefry_partitionable=False: {jax['current']} "
        + draw("current", "draw_old_stream")
        + (" on every version (the old stream)" if same else " (differs)")
        + f"; wheels: jax_threefry_partitionable default {defaults}"
    )


def guard_origins(row, versions: list[str]) -> list[list[str]]:
    """[[first, last, origin], ...]: in each release, which spelling of the guarded import
    imports ("new", "old", "neither") and the module that defines the object it binds."""
    origins: dict[str, str] = {}
    for version in versions:
        wheel = Wheel(version)
        spellings = [("new", row.replacement)] if row.guard == "old" else []
        spellings.append(("old", row.name))
        origin = "neither"
        for label, dotted in spellings:
            if wheel.dotted(dotted)[0] in USABLE:
                origin = f"{label}: {wheel.origin(dotted)}"
                break
        origins[version] = origin
    return runs_of(origins)


def measure_wheels(rows, versions: list[str]) -> dict[str, dict]:
    wheels = [Wheel(v) for v in versions]
    out = {}
    for row in rows:
        api: dict[str, str] = {}
        messages: dict[str, str] = {}
        replacement: dict[str, str] | None = (
            None if replacement_status(wheels[0], row) is None else {}
        )
        for wheel in wheels:
            status, message = wheel_status(wheel, row)
            api[wheel.version] = status
            if message:
                messages[wheel.version] = message
            if replacement is not None:
                replacement[wheel.version] = replacement_status(wheel, row)[0]
        versions_ = measured_versions(api, replacement)
        entry = {"api": runs_of(api), **versions_}
        # JAX's own words where the status changed (deprecated, removed), newest last
        said = [
            messages[v]
            for v, s in api.items()
            if v in messages and s in ("deprecated", "removed") and "default" not in messages[v]
        ]
        if said:
            entry["message"] = said[-1]
            entry["first_message"] = said[0]
        if replacement is not None:
            entry["replacement"] = runs_of(replacement)
        if is_jaxlib(row):  # (the jaxlib read for each jax release, where not its namesake)
            entry["jaxlib_read"] = {v: jaxlib_for(v) for v in versions if jaxlib_for(v) != v}
        out[row.key] = entry
    return out


def measure_homes(module: str, versions: list[str]) -> dict:
    """Each home of `module`'s names in every wheel: its runs, and the first release that has
    it (None: every release read)."""
    out = {}
    for name, home in HOMES[module].items():
        statuses = {v: Wheel(v).dotted(home)[0] for v in versions}
        since = first_where(statuses, lambda s: s in USABLE)
        out[name] = {
            "home": home,
            "wheels": runs_of(statuses),
            "since": None if since == versions[0] else since,
        }
    return out


# ----------------------------------------------------------------------------------------------
# The whole measurement.
# ----------------------------------------------------------------------------------------------


def measure(rows, pythons: dict[str, str], versions: list[str]) -> dict:
    probes = all_probes(rows)
    with ThreadPoolExecutor(len(pythons)) as pool:
        measured = dict(zip(pythons, pool.map(lambda p: measure_runs(p, probes), pythons.values())))
    wheels = measure_wheels(rows, versions)
    data = {
        "about": "Written by scripts/measure_jax_removals.py; checked by "
        "tests/test_jax_removals_facts.py. Do not edit.",
        "environments": {role: measured[role]["meta"] for role in pythons},
        "wheels_read": versions,
        "probes": {p["id"]: p["code"] for p in probes},
        "controls": {
            p["id"]: {role: measured[role][p["id"]] for role in pythons}
            for p in probes
            if p["id"].startswith("control/")
        },
        "guards": {
            row.key: {
                "runs": {role: measured[role][f"guard/{row.key}"] for role in pythons},
                "wheels": guard_origins(row, versions),
            }
            for row in rows
            if row.guard
        },
        "homes": {
            row.key: {
                "runs": {role: measured[role][f"homes/{row.key}"] for role in pythons},
                "names": measure_homes(row.name, versions),
            }
            for row in rows
            if row.name in HOMES
        },
        "rows": {},
    }
    for row in rows:
        names = row_probes(row)
        entry = {
            "kind": row.kind.value,
            "jax": {role: measured[role]["meta"]["jax"] for role in pythons},
            "runs": {
                role: {name: measured[role][f"{row.key}/{name}"] for name in names}
                for role in pythons
            },
            "wheels": wheels[row.key],
        }
        entry["evidence"] = evidence(entry)
        data["rows"][row.key] = entry
    return data


TABLE_COLUMNS = ("removed_in", "deprecated_in", "replacement_since")


def table_diff(rows, data: dict) -> list[str]:
    """Where a row of the table disagrees with the measurement."""
    out = []
    for row in rows:
        measured = data["rows"][row.key]["wheels"]
        for column in TABLE_COLUMNS:
            if column == "replacement_since" and "replacement" not in measured:
                continue
            if getattr(row, column) != measured[column]:
                out.append(f"{row.key}: {column} {getattr(row, column)!r} -> {measured[column]!r}")
        if row.evidence != data["rows"][row.key]["evidence"]:
            out.append(f"{row.key}: evidence {data['rows'][row.key]['evidence']!r}")
    return out


def evidence_module(data: dict) -> str:
    """hcmigrate/jax_removals_evidence.py: each row's evidence, for the table's rows."""
    lines = [
        '"""What the measurement saw for each row of hcmigrate.jax_removals: the probes\' outcomes',
        "on jax 0.4.30, the oldest supported JAX and the current JAX, the status of the API in",
        "every release's wheel, and JAX's own words. Rows read it into their `evidence`.",
        "",
        "Written by `python scripts/measure_jax_removals.py` from docs/jax_removals.json; do not",
        'edit (tests/test_jax_removals_facts.py checks it)."""',
        "",
        "EVIDENCE = {",
        *(f"    {key!r}: {row['evidence']!r}," for key, row in data["rows"].items()),
        "}",
    ]
    return "\n".join(lines) + "\n"


def write(data: dict) -> None:
    DATA.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    EVIDENCE.write_text(evidence_module(data), encoding="utf-8")
    subprocess.run([sys.executable, "-m", "ruff", "format", "-q", str(EVIDENCE)], check=False)
    print(f"wrote {DATA.relative_to(REPO)} and {EVIDENCE.relative_to(REPO)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--diff", action="store_true", help="print where the table disagrees")
    args = parser.parse_args(argv)
    if args.probe:
        print(json.dumps(run_probes(json.load(sys.stdin))))
        return 0
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from hcmigrate.jax_removals import REMOVED_APIS

    pythons = {role: interpreter(role) for role in ROLES}
    data = measure(REMOVED_APIS, pythons, releases())
    write(data)
    if args.diff:
        print("\n".join(table_diff(REMOVED_APIS, data)) or "the table agrees")
    return 0


if __name__ == "__main__":
    sys.exit(main())
