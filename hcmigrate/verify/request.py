"""`VerifyRequest`: everything one `hcmigrate verify` run was asked to do, built once (by the
CLI in command.py, or by `hcmigrate.verify.verify()`) and passed down unchanged to both modes,
as `Options` is for the codemod. A new setting is one field here (and its click option)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from hcmigrate.verify.values import Tolerance


@dataclass(frozen=True)
class VerifyRequest:
    original: Path
    # What runs where.
    candidate: Path | None = None  # None: a copy of `original` migrated by the codemod
    reference: str = "compat"  # compat | legacy | a Python interpreter's path
    reference_trace: Path | None = None  # compare against this recorded trace instead
    original_ref: str | None = None  # take the original from this git revision
    reference_jax: str | None = None  # --reference legacy: its JAX version
    # The day the original was committed (ISO, from git; None: not known): the legacy JAX it
    # ran with is the newest released by then (hcmigrate.verify.reference_jax)
    original_date: str | None = None
    project_deps: bool = False  # --reference legacy: with the project's dependencies
    project_deps_from: tuple[Path, ...] = ()  # requirement files chosen for them
    project_deps_dev: bool = False  # and poetry's dev group
    candidate_python: str | None = None  # None: the interpreter running hcmigrate
    platform: str | None = "cpu"  # JAX_PLATFORMS for both sides; None keeps the environment's
    timeout: float = 300.0  # a script's run; with --pytest, each test's
    args: tuple[str, ...] = ()  # after `--`: the script's arguments, or pytest's
    # Script mode.
    entries: tuple[str, ...] = ()  # top-level functions whose results are recorded
    entry_file: str | None = None  # a folder ORIGINAL's script
    # --pytest mode.
    pytest_tests: str | None = None  # TESTS, relative to ORIGINAL
    all_tests: bool = False  # run every test on the candidate, not only those with host calls
    fresh_reference: bool = False  # never reuse a cached reference trace
    # Comparing.
    tolerance: Tolerance = field(default_factory=Tolerance)
    # What is kept and reported.
    keep: bool = False  # keep the scratch folder
    keep_traces: Path | None = None
    json_path: Path | None = None  # '-': stdout
    json_events: bool = False  # --json with both traces (every host call)
    quiet: bool = False
    # Where messages go while it runs (not settings: left out of comparisons).
    progress: Callable[[str], None] | None = field(default=None, compare=False)
    live: Callable[[dict], None] | None = field(default=None, compare=False)

    @property
    def pytest(self) -> bool:
        return self.pytest_tests is not None
