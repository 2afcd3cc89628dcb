"""The library API: everything the command line does.

One text: `migrate_source(text, Options())` gives the new code and the diagnostics.

A run over files and folders, as `hcmigrate PATH...` does it:

    settings = resolve_settings(["src"], select=["HCB1"])    # command-line values and config
    plan = plan_run(["src"], settings, mode="fix", jobs=2)   # files, pre-filter, re-exports
    for result in migrate_files(plan, jobs=2):               # in file order; "fix" writes
        print(result.display, result.status, result.diagnostics)

A file the run creates (the id_print helper that modules of one package share:
hcmigrate.shared_helpers) is in `plan.new_files`; in "fix" mode `migrate_files` writes it
before the modules, and each one's `result` says what became of it.

`migrate_stream` does it for bytes read from standard input, `review_change` asks about and
writes one change hunk by hunk (--interactive), `write_atomic` replaces a file safely. These are
imported when first used (they pull in the file walking, the pre-filter and the runner).
"""

from __future__ import annotations

from hcmigrate.errors import MigrationError
from hcmigrate.options import DEFAULT_LINE_LENGTH, MigrationResult, Options, Strategy

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
    "ExitCode": "hcmigrate.exit_codes",
    "run_exit_code": "hcmigrate.exit_codes",
}
__all__ = [
    "DEFAULT_LINE_LENGTH",
    "MigrationError",
    "MigrationResult",
    "Options",
    "Strategy",
    "migrate_source",
    *_RUN_API,
]


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
