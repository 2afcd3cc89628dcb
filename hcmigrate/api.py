"""The library API: everything the command line does.

One text: `migrate_source(text, Options())` gives the new code and the diagnostics.

A run over files and folders, as `hcmigrate PATH...` does it:

    settings = resolve_settings(["src"], select=["HCB1"])    # command-line values and config
    plan = plan_run(["src"], settings, mode="fix", jobs=2)   # files, pre-filter, re-exports
    for result in migrate_files(plan, jobs=2):               # in file order; "fix" writes
        print(result.display, result.status, result.diagnostics)

`migrate_stream` does it for bytes read from standard input, `review_change` asks about and
writes one change hunk by hunk (--interactive), `write_atomic` replaces a file safely. These are
imported when first used (they pull in the file walking, the pre-filter and the runner).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from hcmigrate.diagnostics import Diagnostic
from hcmigrate.errors import MigrationError
from hcmigrate.import_style import ImportStyle

# The run-level part of the API, by the module that implements it (imported on first use).
_RUN_API = {
    "Settings": "hcmigrate.settings",
    "resolve_settings": "hcmigrate.settings",
    "plan_run": "hcmigrate.project",
    "migrate_files": "hcmigrate.project",
    "migrate_stream": "hcmigrate.project",
    "review_change": "hcmigrate.review",
    "read_source": "hcmigrate.files",
    "write_atomic": "hcmigrate.files",
}
__all__ = ["MigrationError", "MigrationResult", "Options", "Strategy", "migrate_source", *_RUN_API]

Strategy = Literal["native", "compat"]
DEFAULT_LINE_LENGTH = 88  # black's and ruff's default


@dataclass(frozen=True)
class Options:
    strategy: Strategy = "native"
    add_todos: bool = False  # add `# TODO(hcmigrate): HCBxxx ...` at sites left for a human
    select: frozenset[str] | None = None  # rule codes (or prefixes) to apply; None = all
    ignore: frozenset[str] = frozenset()  # rule codes (or prefixes) to skip
    target_jax: tuple[int, ...] | None = None  # None = newest JAX
    # The lines the codemod writes are wrapped to this length (the project's `[tool.ruff]` or
    # `[tool.black]` line-length; see hcmigrate.codemod.layout).
    line_length: int = DEFAULT_LINE_LENGTH
    # How the project sorts imports (its isort or ruff settings; hcmigrate.import_style): where
    # an added import goes.
    import_style: ImportStyle = ImportStyle()
    # True: never point code at the compat runtime (a project that will not depend on
    # hcmigrate-compat): a site only the compat runtime keeps is left as it is, manual.
    no_compat: bool = False
    # False: the rewrite is not laid out (hcmigrate.codemod.layout). The runner lays out files
    # only where the text is shown or written, not for `--check`: layout never decides what
    # changes, and it is most of a changed file's migration time.
    lay_out: bool = True
    # Cross-module facts from the file-level scan: ("mypkg.taps.id_tap",
    # "jax.experimental.host_callback.id_tap") for every name another module re-exports, and
    # the dotted name of the module being migrated (its re-exported legacy imports are kept
    # working for importers by pointing them at the compat runtime instead of removing them).
    reexports: tuple[tuple[str, str], ...] = ()
    module_name: str | None = None
    # Modules of the tree this module imports that re-export legacy names, with those names
    # (("mypkg.taps", ("id_tap",)),): a module that uses them in ways the codemod cannot
    # follow is reported (HCB006).
    reexporters_imported: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass
class MigrationResult:
    original: str
    code: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # True when the codemod's self-check has already compiled `code` with CPython: the runner
    # compiles any other result before writing it (a result built elsewhere is not trusted).
    compile_checked: bool = False

    @property
    def changed(self) -> bool:
        return self.code != self.original

    @property
    def needs_human(self) -> bool:
        return any(d.level.needs_human for d in self.diagnostics)


def migrate_source(
    text: str,
    options: Options | None = None,
    *,
    filename: str = "<string>",
    top_level_await: bool = False,
) -> MigrationResult:
    """Migrate Python source text. Raises MigrationError for text that cannot be parsed, or
    whose rewrite would not compile. `top_level_await`: the text may use `await` outside
    functions (notebook cells)."""
    from hcmigrate.codemod.pipeline import migrate

    return migrate(text, options or Options(), filename=filename, top_level_await=top_level_await)


def __getattr__(name: str):
    if name in _RUN_API:
        import importlib

        return getattr(importlib.import_module(_RUN_API[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
