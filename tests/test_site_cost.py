"""A module's cost grows with its number of sites, not with its square (issue 24, point 6).

bench/bench_sites.py measures 100 vs 1,000 taps for docs/performance.md; here a smaller pair
keeps the suite fast, with a bound loose enough for a shared machine and far below what the
quadratic parts cost (30 -> 300 taps took 86x the time before them)."""

from __future__ import annotations

import difflib
import importlib.util
import random
import statistics
import time

from conftest import REPO

from hcmigrate import migrate_source
from hcmigrate.api import Options
from hcmigrate.codemod.line_diff import opcodes


def _bench():
    spec = importlib.util.spec_from_file_location("bench_sites", REPO / "bench" / "bench_sites.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ten_times_the_sites_cost_about_ten_times_the_time():
    bench = _bench()
    small, large = bench.module_with_sites(30), bench.module_with_sites(300)
    migrate_source(small, Options())
    times = {30: [], 300: []}
    for _ in range(3):  # (in turns: the machine's load changes for both)
        times[30].append(bench.cpu_seconds(small, Options()))
        times[300].append(bench.cpu_seconds(large, Options()))
    ratio = statistics.median(times[300]) / statistics.median(times[30])
    assert ratio < 20, f"300 taps took {ratio:.1f}x the time of 30"


def _check_opcodes(a: list[str], b: list[str]) -> list:
    """The opcodes of a -> b, checked to describe a -> b as difflib's do."""
    ops = opcodes(a, b)
    i = j = 0
    for tag, i1, i2, j1, j2 in ops:
        assert (i1, j1) == (i, j)
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
        else:
            assert (
                tag == {(1, 1): "replace", (1, 0): "delete", (0, 1): "insert"}[(i2 > i1, j2 > j1)]
            )
        i, j = i2, j2
    assert (i, j) == (len(a), len(b))
    return ops


def test_line_diff_describes_every_edit_as_difflib_does():
    rng = random.Random(24)
    same = 0
    for _ in range(500):
        a = [rng.choice("abcdef") for _ in range(rng.randint(0, 12))]
        b = list(a)
        for _ in range(rng.randint(0, 4)):
            at = rng.randint(0, len(b))
            if b and rng.random() < 0.5:
                del b[min(at, len(b) - 1)]
            else:
                b.insert(at, rng.choice("xyab"))
        ours = _check_opcodes(a, b)
        same += ours == difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    assert same > 400  # (short gaps without a unique line are difflib's own answer)


def test_line_diff_finds_exactly_the_rewritten_lines_of_a_long_repetitive_module():
    bench = _bench()
    source = bench.module_with_sites(1000).splitlines()
    code = list(source)
    rewritten = sorted(random.Random(6).sample(range(len(code)), 50))
    for line in rewritten:
        code[line] = code[line] + "  # rewritten"
    start = time.process_time()
    ops = _check_opcodes(source, code)
    assert time.process_time() - start < 2  # (difflib took minutes on this)
    written = {j for tag, _, _, j1, j2 in ops if tag != "equal" for j in range(j1, j2)}
    assert written == set(rewritten)
