"""The module helper HCB201 writes (`_print_like_id_print`, hcmigrate.codemod.module_helpers)
prints what legacy id_print printed: for a few hundred generated values (0-d and n-d arrays of
every dtype, tuples, named tuples, lists and dicts nested, some wider than 80 columns), its
text is compared, character for character, with what real jax 0.4.30's printer
(`host_callback._print_tap_func`, given what `id_print` gave it) prints for the same values."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess

import jax
import numpy as np

from hcmigrate.codemod.module_helpers import HELPERS

# The same values on both sides: built from Python's random with a fixed seed.
VALUES = """
import collections
import random

import ml_dtypes
import numpy as np

Pair = collections.namedtuple("Pair", "first second")
DTYPES = ["float32", "float64", "float16", ml_dtypes.bfloat16, "int32", "int64", "bool",
          "complex64", "uint8"]
NUMBERS = [0.0, 1.0, 2.0, 2.5, -1.25, 3.762, 1e-7, 123456.789, 1 / 3, 1e12, -0.0]


def generated(count, seed=24):
    rng = random.Random(seed)

    def leaf():
        shape = tuple(rng.randint(1, 14) for _ in range(rng.choice([0, 0, 0, 1, 1, 2])))
        dtype = np.dtype(rng.choice(DTYPES))
        if dtype.kind in "iub":
            data = [rng.randint(0, 200) for _ in range(int(np.prod(shape)))]
        else:
            data = [rng.choice(NUMBERS) for _ in range(int(np.prod(shape)))]
        with np.errstate(over="ignore"):  # (123456.789 is inf in float16)
            return np.array(data, dtype=np.float64).reshape(shape).astype(dtype)

    def tree(depth):
        if depth > 2 or rng.random() < 0.45:
            return leaf()
        items = [tree(depth + 1) for _ in range(rng.randint(0, 4))]
        kind = rng.choice(["tuple", "list", "dict", "named"])
        if kind == "dict":
            return {f"{rng.choice('abz')}{i}": item for i, item in enumerate(items)}
        if kind == "named" and len(items) == 2:
            return Pair(*items)
        return list(items) if kind == "list" else tuple(items)

    header = [{}, {"what": "x"}, {"step": 3, "label": "wide"}, {"where": b"b"}]
    return [(tree(0), rng.choice(header)) for _ in range(count)]
"""

LEGACY = (
    VALUES
    + """
import contextlib, io, json, sys
from jax.experimental.host_callback import _print_tap_func

texts = []
for value, header in generated(int(sys.argv[1])):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _print_tap_func(value, (), threshold=None, **header)  # what id_print gives it
    texts.append(out.getvalue())
print(json.dumps(texts))
"""
)


def test_helper_prints_legacy_id_print_text_for_generated_values(legacy_python):
    count = 300
    run = subprocess.run(
        [str(legacy_python), "-c", LEGACY, str(count)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    legacy = json.loads(run.stdout.splitlines()[-1])

    space: dict = {}
    exec(VALUES, space)
    helper: dict = {"jax": jax, "np": np}
    exec(HELPERS["id_print"].text({"jax": "jax", "np": "np", "tree_map": "jax.tree.map"}), helper)
    printed = []
    for value, header in space["generated"](count):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            helper["_print_like_id_print"](value, **header)
        printed.append(out.getvalue())

    assert len(legacy) == count
    assert any("\n  " in text for text in legacy)  # some containers were broken over lines
    different = [(i, a, b) for i, (a, b) in enumerate(zip(legacy, printed)) if a != b]
    assert different == [], different[:3]


def test_the_module_helpers_fit_any_projects_line_limit():
    """Every helper the codemod writes is within 79 columns in a module indented by 4 (so in a
    project checked at 79 or 80, pycodestyle's and google's limits), and the printer stays
    short: 26 lines (issue 27: 31 lines for one call site was out of proportion)."""
    names = {"np": "np", "jax": "jax", "tree_map": "jax.tree.map"}
    texts = {key: helper.text(names) for key, helper in HELPERS.items()}
    too_long = [(k, line) for k, t in texts.items() for line in t.splitlines() if len(line) > 79]
    assert too_long == []
    assert len(texts["id_print"].splitlines()) <= 26
