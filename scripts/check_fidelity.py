#!/usr/bin/env python3
"""Check the codemod on legacy programs: does the migrated program do what legacy did, and
does the rewrite read as if written by hand?

For every runnable program in fixtures/realworld and fixtures/fidelity (`NAME.in.py`, or a
folder `NAME/` whose `main.py` is the entry), this script
1. copies it to a temporary folder and migrates the copy with the `hcmigrate` command (as a
   user would: folders in one run, so modules see each other's re-exports);
2. runs the migrated program on current JAX with the verify recorder and compares its trace
   with the golden trace recorded from real jax 0.4.30 (`FOLDER/golden/NAME.json`, written
   by scripts/record_golden.py --folder FOLDER);
3. attributes host calls to the codemod's sites (by the legacy call's source lines) and gives
   each site a verdict next to its diagnostic level; a `[fixed]` site in a program that is
   not equivalent is flagged;
4. measures the layout of the rewrite (issue 15): tuple-index idioms `(..., x)[1]`, walrus
   temporaries, inline generic shape conversions, lines over 88 characters the codemod
   wrote, new import-order findings, and whether `ruff format` leaves the migrated file
   alone when it leaves the input alone.

    python scripts/check_fidelity.py                 # table of every program and site
    python scripts/check_fidelity.py --json          # the same as JSON (for tests and docs)
    python scripts/check_fidelity.py t_vmap c01_host_sees_numpy --keep /tmp/migrated
    python scripts/check_fidelity.py --json --python A --python B   # one report per interpreter

With several `--python`, each program is migrated once and its migration run on each
interpreter; the JSON is then `{"by_python": {PYTHON: report, ...}}`.

Exit status 0 whatever the verdicts (this is a measurement); 2 when a program cannot be
migrated or run at all for a reason outside the program (no golden trace, no ruff).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(SCRIPTS))

from forked_runs import run_forked  # noqa: E402
from record_golden import (  # noqa: E402
    PROGRAM_MAIN,
    WAITING_FOR_RECORDER,
    fixture_name,
    runnable_programs,
)

from hcmigrate.verify.compare import compare_traces  # noqa: E402
from hcmigrate.verify.event_match import event_reason  # noqa: E402
from hcmigrate.verify.execute import run_sides  # noqa: E402
from hcmigrate.verify.golden import printed_text  # noqa: E402
from hcmigrate.verify.launch import Side  # noqa: E402
from hcmigrate.verify.reference_env import project_compat_dir  # noqa: E402
from hcmigrate.verify.values import Tolerance  # noqa: E402
from hcmigrate.verify.workspace import scratch_folder  # noqa: E402

FOLDERS = (REPO / "fixtures" / "realworld", REPO / "fixtures" / "fidelity")
LINE_LIMIT = 88  # issue 15: the project's configured limit, else 88
EQUIVALENT, DIFFERENT, CRASHES, NO_GOLDEN, NOT_MIGRATED = (
    "equivalent",
    "different",
    "crashes",
    "no golden trace",
    "not migrated",
)
NO_CALLS = "no host calls"


@dataclass
class Site:
    file: str  # relative to the program's root
    line: int
    end_line: int
    code: str
    level: str
    message: str
    reference_calls: int = 0
    candidate_calls: int = 0
    verdict: str = NO_CALLS
    flagged: bool = False  # `fixed` although the program (or the site) is not equivalent


@dataclass
class Layout:
    tuple_index: int = 0
    walrus: int = 0
    inline_shape_conversions: int = 0
    long_lines: int = 0
    new_import_findings: int = 0
    format_unstable: int = 0  # files ruff format leaves alone before but not after
    format_checked: int = 0  # files whose input ruff format leaves alone


@dataclass
class Result:
    name: str
    folder: str
    verdict: str
    differences: list[str] = field(default_factory=list)
    text_exact: bool | None = None
    text_difference: str = ""  # the first lines that differ (legacy's, then the migrated one's)
    text_printed: str = ""  # what the migrated program printed, where that is not legacy's text
    sites: list[Site] = field(default_factory=list)
    layout: Layout = field(default_factory=Layout)
    note: str = ""


# ---------------------------------------------------------------------------------------
# Migration


# What `python -m hcmigrate` imports before it reads its arguments: imported once by the
# interpreter that forks the runs (scripts/forked_runs.py), not once per program.
MIGRATION_PRELOAD = ["hcmigrate.cli", "hcmigrate.codemod.pipeline"]


def migrate_all(roots: list[Path], jobs: int) -> list[tuple[list[dict], str]]:
    """Migrate the program under each of `roots` in place with the hcmigrate command (a run
    each, in its folder: `python -m hcmigrate ... ROOT`); for each, its per-file diagnostics
    and the command's error text (empty when it ran)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    command = ["--output-format", "json", "--no-cache", "-j", "1"]
    runs = [
        {"cwd": str(root), "env": env, "module": "hcmigrate", "args": [*command, str(root)]}
        | {"timeout": 600}
        for root in roots
    ]
    done = run_forked(sys.executable, runs, preload=MIGRATION_PRELOAD, env=env, jobs=jobs)
    migrations = []
    for proc in done:
        try:
            report = json.loads(proc.stdout)
        except ValueError:
            migrations.append(([], (proc.stderr or proc.stdout).strip()[-2000:]))
            continue
        migrations.append((report.get("files", []), ""))
    return migrations


def call_span(tree: ast.AST, line: int, col: int) -> int:
    """Last line of the outermost node that starts at (line, col): the whole rewritten call."""
    end = line
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) == line and getattr(node, "col_offset", None) == col - 1:
            end = max(end, node.end_lineno or line)
    return end


def _statements(lines: list[str]) -> dict[int, tuple[int, int, str]]:
    """For each 1-based line, the simple statement holding it: (first line, last line, text
    with whitespace collapsed)."""
    try:
        tree = ast.parse("\n".join(lines) + "\n")
    except SyntaxError:
        return {}
    found: dict[int, tuple[int, int, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not hasattr(node, "body"):
            first, last = node.lineno, node.end_lineno or node.lineno
            text = " ".join(" ".join(lines[first - 1 : last]).split())
            for line in range(first, last + 1):
                found.setdefault(line, (first, last, text))
    return found


WORD = re.compile(r"\w+")


def _blocks(original: list[str], migrated: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes, with a run of equal lines that only close brackets (or are blank)
    between two changes merged into one change (a reformatted call's `)` is not an anchor)."""
    matcher = difflib.SequenceMatcher(None, original, migrated, autojunk=False)
    merged: list[list] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if merged and merged[-1][0] != "equal" and tag != "equal":
            merged[-1][2], merged[-1][4] = i2, j2
            continue
        if (
            tag != "equal"
            and len(merged) >= 2
            and merged[-1][0] == "equal"
            and merged[-2][0] != "equal"
            and all(
                line.strip() in ("", ")", "]", "}", "),", "],")
                for line in original[merged[-1][1] : merged[-1][2]]
            )
        ):
            merged.pop()
            merged[-1][0], merged[-1][2], merged[-1][4] = "replace", i2, j2
            continue
        merged.append([tag, i1, i2, j1, j2])
    return [tuple(block) for block in merged]


def line_map(original: list[str], migrated: list[str]) -> list[set[int]]:
    """For each migrated line (0-based), the original lines (1-based) it comes from: itself
    where unchanged or rewritten line for line; in a block rewritten into a different number
    of lines, the lines of the old block's statement most like the statement holding it (an
    inserted line: the line it precedes)."""
    mapping: list[set[int]] = [set() for _ in migrated]
    old_statements, new_statements = _statements(original), _statements(migrated)
    for tag, i1, i2, j1, j2 in _blocks(original, migrated):
        candidates = {old_statements[i] for i in range(i1 + 1, i2 + 1) if i in old_statements}
        # a block rewritten statement for statement (each call in another spelling, as many
        # statements as before): the n-th new statement comes from the n-th old one, however
        # few words the two spellings share
        rewritten = sorted(
            {new_statements[j] for j in range(j1 + 1, j2 + 1) if j in new_statements}
        )
        in_turn = (
            dict(zip(rewritten, sorted(candidates))) if len(rewritten) == len(candidates) else {}
        )
        for j in range(j1, j2):
            if tag == "equal" or i2 - i1 == j2 - j1:
                mapping[j] = {i1 + (j - j1) + 1}
            elif i1 == i2:
                mapping[j] = {i1 + 1}
            elif new_statements.get(j + 1) in in_turn:
                first, last, _ = in_turn[new_statements[j + 1]]
                mapping[j] = set(range(first, last + 1))
            elif candidates and j + 1 in new_statements:
                text = new_statements[j + 1][2]
                words = set(WORD.findall(text))
                first, last, _ = max(
                    candidates,
                    key=lambda c: (
                        len(words & set(WORD.findall(c[2])))
                        / max(1, len(words | set(WORD.findall(c[2]))))
                    ),
                )
                mapping[j] = set(range(first, last + 1))
            else:
                best = max(
                    range(i1, i2),
                    key=lambda i: difflib.SequenceMatcher(
                        None, original[i].strip(), migrated[j].strip()
                    ).ratio(),
                )
                mapping[j] = {best + 1}
    return mapping


def written_lines(original: list[str], migrated: list[str]) -> list[int]:
    """0-based indices of migrated lines the codemod wrote (not copied from the input)."""
    matcher = difflib.SequenceMatcher(None, original, migrated, autojunk=False)
    return [
        j
        for tag, _, _, j1, j2 in matcher.get_opcodes()
        if tag in ("replace", "insert")
        for j in range(j1, j2)
    ]


# ---------------------------------------------------------------------------------------
# Layout (issue 15)


def _is_shape_conversion(node: ast.AST) -> bool:
    """`jax.tree.map(lambda leaf: jax.ShapeDtypeStruct(...), x)` or `tree_map(...)`."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = ast.unparse(node.func)
    if not (func.endswith("tree.map") or func.endswith("tree_map")):
        return False
    first = node.args[0]
    return isinstance(first, ast.Lambda) and "ShapeDtypeStruct" in ast.unparse(first.body)


def idiom_counts(text: str) -> tuple[int, int, int]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return 0, 0, 0
    tuple_index = walrus = shapes = 0
    for helper in [n for n in tree.body if isinstance(n, ast.FunctionDef)]:
        if helper.name == "_shape_dtype_structs":  # (the codemod's one named helper)
            tree.body.remove(helper)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Tuple)
            and isinstance(node.slice, ast.Constant)
        ):
            tuple_index += 1
        elif isinstance(node, ast.NamedExpr):
            walrus += 1
        elif _is_shape_conversion(node):
            shapes += 1
    return tuple_index, walrus, shapes


def ruff(*args: str, text: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        # (hcmigrate_compat is installed with hcmigrate: third party, also where a copy of it
        # lies next to the program)
        [
            "ruff",
            *args,
            "--isolated",
            "--line-length",
            str(LINE_LIMIT),
            "--config",
            'lint.isort.known-third-party = ["hcmigrate_compat"]',
            "-",
        ],
        input=text,
        capture_output=True,
        text=True,
    )


def formatted(text: str) -> bool:
    return ruff("format", "--diff", text=text).returncode == 0


def import_findings(text: str) -> int:
    proc = ruff("check", "--select", "I", "--output-format", "json", "--exit-zero", text=text)
    try:
        return len(json.loads(proc.stdout or "[]"))
    except ValueError:
        return 0


def measure_layout(layout: Layout, original: str, migrated: str) -> None:
    if original == migrated:
        return
    before, after = idiom_counts(original), idiom_counts(migrated)
    layout.tuple_index += max(0, after[0] - before[0])
    layout.walrus += max(0, after[1] - before[1])
    layout.inline_shape_conversions += max(0, after[2] - before[2])
    old, new = original.splitlines(), migrated.splitlines()
    layout.long_lines += sum(1 for j in written_lines(old, new) if len(new[j]) > LINE_LIMIT)
    layout.new_import_findings += max(0, import_findings(migrated) - import_findings(original))
    if formatted(original):
        layout.format_checked += 1
        if not formatted(migrated):
            layout.format_unstable += 1


# ---------------------------------------------------------------------------------------
# Running and comparing


def first_difference(legacy: str, migrated: str) -> str:
    """The first printed lines that differ, as a short diff ("" when the texts are equal)."""
    diff = difflib.unified_diff(legacy.splitlines(), migrated.splitlines(), "legacy", "migrated")
    return "\n".join(list(diff)[2:8])


def _relative(path: str, roots: list[str]) -> str | None:
    for root in roots:
        if path.startswith(root):
            return path[len(root) :].lstrip("/")
    return None


def crash_lines(stderr: str, root: str) -> list[tuple[str, int]]:
    """(file relative to the program root, line) of each traceback frame in the program."""
    out = []
    for path, line in re.findall(r'File "([^"]+)", line (\d+)', stderr):
        rel = _relative(path, [root])
        if rel is not None:
            out.append((rel, int(line)))
    return out


CANDIDATE_PLATFORM = ["cpu"]  # --platform: JAX_PLATFORMS of the migrated program's run


def run_candidate(script: Path, python: str) -> tuple[dict | None, str]:
    """Run the migrated `script` with `python` (its interpreter and JAX)."""
    side = Side("candidate", python, script, compat_dir=project_compat_dir())
    with scratch_folder() as workdir:
        [res] = run_sides(
            [side],
            script_args=[],
            entries=[],
            timeout=300,
            workdir=workdir,
            platform=CANDIDATE_PLATFORM[0],
        )
    return res.trace, res.stderr if res.trace else res.why_no_trace()


@dataclass
class Copy:
    """A program copied into a scratch folder, to be migrated there."""

    path: Path  # the program's entry in fixtures (NAME.in.py or NAME/main.py)
    root: Path  # the folder holding the copy
    script: Path  # the copy's entry


def copy_program(path: Path, tmp: Path) -> Copy:
    """Copy the program into the new folder `tmp` (into `tmp/program` for a one-file program,
    `tmp/NAME` for a package)."""
    tmp.mkdir()
    if path.name == PROGRAM_MAIN:
        root = tmp / fixture_name(path)
        shutil.copytree(path.parent, root, ignore=shutil.ignore_patterns("__pycache__"))
        return Copy(path, root, root / PROGRAM_MAIN)
    root = tmp / "program"
    root.mkdir()
    shutil.copy2(path, root / path.name)
    return Copy(path, root, root / path.name)


def golden_path(path: Path) -> Path:
    folder = path.parent.parent if path.name == PROGRAM_MAIN else path.parent
    return folder / "golden" / f"{fixture_name(path)}.json"


def check_program(
    path: Path,
    copy: Copy | None,
    migration: tuple[list[dict], str],
    keep: Path | None,
    pythons: list[str],
) -> list[Result]:
    """The program's result on each interpreter of `pythons`: its `copy`, migrated once
    (`migration`: migrate_all's answer), run on each. No copy: the program has no golden trace."""
    folder = path.parent.parent if path.name == PROGRAM_MAIN else path.parent
    name = fixture_name(path)

    def new_result() -> Result:
        result = Result(name=name, folder=folder.relative_to(REPO).as_posix(), verdict=NO_GOLDEN)
        if name in WAITING_FOR_RECORDER:
            result.note = f"golden waits for the recorder fix: {WAITING_FOR_RECORDER[name]}"
        return result

    if copy is None:
        return [new_result() for _ in pythons]
    golden = json.loads(golden_path(path).read_text(encoding="utf-8"))
    root, script = copy.root, copy.script
    original_root = path.parent
    files, error = migration
    if error:
        results = [new_result() for _ in pythons]
        for result in results:
            result.verdict, result.note = NOT_MIGRATED, error
        return results
    if keep is not None:
        shutil.copytree(root, keep / name, dirs_exist_ok=True)
    originals = {}
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        src = original_root / rel
        if src.exists():
            originals[rel] = (src.read_text(encoding="utf-8"), f.read_text(encoding="utf-8"))
    layout = Layout()
    for before, after in originals.values():
        measure_layout(layout, before, after)
    golden_root = str(folder.relative_to(REPO) / (name if path.name == PROGRAM_MAIN else ""))
    results = []
    for python in pythons:
        result = new_result()
        result.layout = Layout(**asdict(layout))
        result.sites = _sites(files, root, originals)
        trace, stderr = run_candidate(script, python)
        _judge_run(result, golden, trace, stderr, originals, golden_root, str(root))
        results.append(result)
    return results


def _judge_run(result, golden, trace, stderr, originals, golden_root, cand_root) -> None:
    """The verdicts of one run of the migrated program (`trace`, None when it crashed)."""
    crashed = trace is None or (trace.get("exit_status") != 0 and golden.get("exit_status") == 0)
    if trace is None:
        result.verdict, result.differences = CRASHES, [stderr.strip()[-500:]]
    else:
        comparison = compare_traces(golden, trace, Tolerance())
        result.differences = [d.message for d in comparison.differences]
        # the printed text, character for character (id_print's text and the program's own)
        result.text_exact = printed_text(golden) == printed_text(trace)
        result.text_difference = first_difference(printed_text(golden), printed_text(trace))
        result.text_printed = "" if result.text_exact else printed_text(trace)
        result.verdict = EQUIVALENT if comparison.equivalent else CRASHES if crashed else DIFFERENT
        if crashed:
            result.note = stderr.strip()[-1500:]
    _judge_sites(
        result,
        golden,
        trace,
        originals,
        crash_lines(stderr, cand_root) if crashed else [],
        golden_root,
        cand_root,
    )


def _sites(files: list[dict], root: Path, originals: dict) -> list[Site]:
    sites = []
    for entry in files:
        rel = Path(entry["path"]).resolve().relative_to(root.resolve()).as_posix()
        source = originals.get(rel, ("", ""))[0]
        try:
            tree = ast.parse(source)
        except SyntaxError:
            tree = ast.parse("")
        for d in entry.get("diagnostics", []):
            sites.append(
                Site(
                    file=rel,
                    line=d["line"],
                    end_line=call_span(tree, d["line"], d["col"]),
                    code=d["code"],
                    level=d["level"],
                    message=d["message"],
                )
            )
    return sites


def _judge_sites(result, golden, trace, originals, crash_at, golden_root, cand_root) -> None:
    maps = {rel: line_map(a.splitlines(), b.splitlines()) for rel, (a, b) in originals.items()}

    def ref_site(ev):
        site = ev.get("site") or {}
        rel = _relative(site.get("file", ""), [golden_root.rstrip("/") + "/"])
        return rel, {site.get("line")}

    def cand_site(ev):
        site = ev.get("site") or {}
        rel = _relative(site.get("file", ""), [cand_root.rstrip("/") + "/"])
        lines = maps.get(rel, [])
        line = site.get("line", 0)
        return rel, (lines[line - 1] if 0 < line <= len(lines) else set())

    crash_original = set()
    for rel, line in crash_at[-1:]:
        lines = maps.get(rel, [])
        if 0 < line <= len(lines):
            crash_original |= {(rel, n) for n in lines[line - 1]}

    events = (trace or {}).get("events", [])
    for site in result.sites:
        span = set(range(site.line, site.end_line + 1))

        def at_site(where):
            rel, lines = where
            return rel == site.file and bool(lines & span)

        ref = [e for e in golden.get("events", []) if at_site(ref_site(e))]
        cand = [e for e in events if at_site(cand_site(e))]
        site.reference_calls, site.candidate_calls = len(ref), len(cand)
        crashed_here = any(e.get("raised") for e in cand) and not any(e.get("raised") for e in ref)
        # The program died in its traceback's innermost frame at this site, or right after
        # this site's host call (the runtime rejected what the callback returned).
        crashed_here |= any((site.file, n) in crash_original for n in span)
        crashed_here |= bool(crash_at) and bool(cand) and cand[-1] is events[-1]
        if crashed_here:
            site.verdict = CRASHES
        elif len(ref) != len(cand) or any(
            event_reason(e, g, Tolerance()) for e, g in zip(ref, cand)
        ):
            site.verdict = DIFFERENT
        elif ref:
            site.verdict = EQUIVALENT
        site.flagged = site.level == "fixed" and (
            result.verdict != EQUIVALENT or site.verdict in (CRASHES, DIFFERENT)
        )


# ---------------------------------------------------------------------------------------
# Report


def summary(results: list[Result]) -> dict:
    sites = [s for r in results for s in r.sites]
    layout = Layout()
    for r in results:
        for k, v in asdict(r.layout).items():
            setattr(layout, k, getattr(layout, k) + v)
    return {
        "programs": len(results),
        "verdicts": dict(Counter(r.verdict for r in results)),
        "text_exact": sum(1 for r in results if r.text_exact),
        "sites": len(sites),
        "levels": dict(Counter(s.level for s in sites)),
        "fixed_sites_in_programs_not_equivalent": sum(
            1 for r in results for s in r.sites if s.level == "fixed" and r.verdict != EQUIVALENT
        ),
        "fixed_sites_crashing_or_different": sum(
            1 for s in sites if s.level == "fixed" and s.verdict in (CRASHES, DIFFERENT)
        ),
        "layout": asdict(layout),
    }


def print_table(results: list[Result], totals: dict) -> None:
    head = f"{'program':40} {'verdict':15} {'text':5} {'sites':>5} {'fixed!':>6}  layout"
    print(head)
    print("-" * len(head))
    for r in results:
        lay = r.layout
        layout = (
            f"idx={lay.tuple_index} walrus={lay.walrus} shapes={lay.inline_shape_conversions} "
            f"long={lay.long_lines} imports={lay.new_import_findings} "
            f"format={'unstable' if lay.format_unstable else 'ok' if lay.format_checked else 'n/a'}"
        )
        text = "-" if r.text_exact is None else "same" if r.text_exact else "diff"
        flagged = sum(1 for s in r.sites if s.flagged)
        print(
            f"{r.folder.rsplit('/', 1)[-1][:4]}/{r.name:35} {r.verdict:15} {text:5} "
            f"{len(r.sites):>5} {flagged:>6}  {layout}"
        )
        if r.note:
            print(f"    note: {r.note.splitlines()[-1][:150]}")
        if r.differences:
            print(f"    first difference: {r.differences[0].splitlines()[0][:150]}")
        for s in r.sites:
            mark = "!" if s.flagged else " "
            print(
                f"   {mark} {s.file}:{s.line} {s.code} [{s.level}] {s.verdict} "
                f"(legacy calls {s.reference_calls}, migrated {s.candidate_calls}): {s.message[:70]}"
            )
    print()
    print(json.dumps(totals, indent=1))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="program names (default: all)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="copy each migrated program into this folder")
    parser.add_argument(
        "--python",
        action="append",
        help="run the migrated programs with this interpreter (e.g. the oldest supported JAX's);"
        " repeat it for a report per interpreter",
    )
    parser.add_argument(
        "--platform",
        default="cpu",
        help="JAX_PLATFORMS for the migrated programs (e.g. cuda; the golden traces are CPU's)",
    )
    ns = parser.parse_args(argv)
    CANDIDATE_PLATFORM[0] = ns.platform
    if shutil.which("ruff") is None:
        print("check_fidelity: ruff is not installed (pip install ruff)", file=sys.stderr)
        return 2
    programs = [p for folder in FOLDERS for p in runnable_programs(folder)]
    if ns.names:
        programs = [p for p in programs if fixture_name(p) in set(ns.names)]
    if ns.keep:
        ns.keep.mkdir(parents=True, exist_ok=True)
    pythons = ns.python or [sys.executable]
    jobs = max(1, ns.jobs)
    with scratch_folder() as tmp:
        copies = [
            copy_program(p, tmp / str(i)) if golden_path(p).exists() else None
            for i, p in enumerate(programs)
        ]
        roots = [c.root for c in copies if c is not None]
        migrated = dict(zip(roots, migrate_all(roots, jobs)))
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            per_program = list(
                pool.map(
                    lambda p, c: check_program(p, c, c and migrated[c.root], ns.keep, pythons),
                    programs,
                    copies,
                )
            )
    reports = {}
    for i, python in enumerate(pythons):
        results = [program_results[i] for program_results in per_program]
        reports[python] = {"programs": [asdict(r) for r in results], "summary": summary(results)}
        if not ns.json:
            if len(pythons) > 1:
                print(f"\n== {python}")
            print_table(results, reports[python]["summary"])
    if ns.json:
        print(
            json.dumps(
                reports[pythons[0]] if len(pythons) == 1 else {"by_python": reports}, indent=1
            )
        )
    unusable = [
        r for results in per_program for r in results if r.verdict in (NO_GOLDEN, NOT_MIGRATED)
    ]
    return 2 if any(r.name not in WAITING_FOR_RECORDER for r in unusable) else 0


if __name__ == "__main__":
    sys.exit(main())
