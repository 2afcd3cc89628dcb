"""Library API under the CLI: migrate one source text, get code and diagnostics back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from hcmigrate.diagnostics import Diagnostic
from hcmigrate.errors import MigrationError

__all__ = ["MigrationError", "MigrationResult", "Options", "Strategy", "migrate_source"]

Strategy = Literal["native", "compat"]


@dataclass(frozen=True)
class Options:
    strategy: Strategy = "native"
    add_todos: bool = False  # add `# TODO(hcmigrate): HCBxxx ...` at sites left for a human
    select: frozenset[str] | None = None  # rule codes (or prefixes) to apply; None = all
    ignore: frozenset[str] = frozenset()  # rule codes (or prefixes) to skip
    target_jax: tuple[int, ...] | None = None  # None = newest JAX
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
