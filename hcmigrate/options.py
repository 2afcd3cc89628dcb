"""What one migration is given and gives: `Options` and `MigrationResult` (hcmigrate.api
re-exports both). A leaf module: the engine (hcmigrate.codemod) and the rules read it without
importing the API, which imports the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from hcmigrate.diagnostics import Diagnostic
from hcmigrate.projects.import_style import ImportStyle

Strategy = Literal["native", "compat"]
DEFAULT_LINE_LENGTH = 88  # black's and ruff's default


@dataclass(frozen=True)
class Options:
    strategy: Strategy = "native"
    add_todos: bool = False  # add `# TODO(hcmigrate): HCBxxx ...` at sites left for a human
    select: frozenset[str] | None = None  # rule codes (or prefixes) to apply; None = all
    ignore: frozenset[str] = frozenset()  # rule codes (or prefixes) to skip
    target_jax: tuple[int, ...] | None = None  # None = newest JAX
    # The floor the project declares when the run raises it to `target_jax`
    # (hcmigrate.project): a replacement with a spelling that works from that floor on is
    # written that way (`jax.tree_util.tree_map`, clip bounds by position), so that only what
    # the host_callback rewrite needs raises the floor. None: as `target_jax`.
    declared_jax: tuple[int, ...] | None = None
    # The highest JAX to which the run raises the project's floor where the written code needs
    # it (hcmigrate.projects.targets.JaxTarget.raisable_to): a module that needs no more is no
    # HCB008 of its own, the project's metadata line says the raise. None: not raised.
    floor_raisable_to: tuple[int, ...] | None = None
    # The project's own `jax` requirements and constraints (PEP 508 texts, caps included:
    # `jax>=0.4.25,<0.5`): an API removed in a release none of them admits is not removed for
    # this project, and its import is left as it is (hcmigrate.projects.targets.jax_requirements)
    jax_requirements: tuple[str, ...] = ()
    # The lines the codemod writes are wrapped to this length (the project's `[tool.ruff]` or
    # `[tool.black]` line-length; see hcmigrate.codemod.layout).
    line_length: int = DEFAULT_LINE_LENGTH
    # Does the project state it (else a file whose own lines go past it is held to its own
    # longest line: hcmigrate.codemod.layout)?
    line_length_stated: bool = False
    # How the project sorts imports (its isort or ruff settings; hcmigrate.projects.import_style): where
    # an added import goes.
    import_style: ImportStyle = ImportStyle()
    # The name the project's modules import numpy as (`onp`; hcmigrate.projects.style): the
    # name written code gives numpy where the module does not import it yet.
    numpy_alias: str = "np"
    # The file that configures yapf, in a project formatted with yapf (hcmigrate.config): the
    # statements the codemod writes are laid out by yapf with that style, never by black.
    yapf_style: str | None = None
    # True: never point code at the compat runtime. The native strategy writes no compat import
    # (a site with no native spelling is left as it is, manual: issue 37), so only the
    # settings read it (it refuses the compat strategy).
    no_compat: bool = False
    # True: the project's code runs on several devices (sharded jit, meshes) set up by its
    # callers, which no rule can see ([tool.hcmigrate] several-devices): every module is
    # treated as one that names a multi-device API (hcmigrate.codemod.resolution).
    several_devices: bool = False
    # False: the rewrite is not laid out (hcmigrate.codemod.layout). The runner lays out files
    # only where the text is shown or written, not for `--check`: layout never decides what
    # changes, and it is most of a changed file's migration time.
    lay_out: bool = True
    # Cross-module facts from the project model (hcmigrate.project_model): ("mypkg.taps.id_tap",
    # "jax.experimental.host_callback.id_tap") for every name another module re-exports, and
    # the dotted name of the module being migrated (its re-exported legacy imports are kept
    # working for importers by pointing them at the compat runtime instead of removing them).
    reexports: tuple[tuple[str, str], ...] = ()
    module_name: str | None = None
    # Modules of the tree this module imports that re-export legacy names, with those names
    # (("mypkg.taps", ("id_tap",)),): a module that uses them in ways the codemod cannot
    # follow is reported (HCB006).
    reexporters_imported: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Functions of this module that other modules of the run apply a transformation to
    # (directly or through the calls the code shows): (function, transformation, where), e.g.
    # ("step", "pmap", "p.solver, line 12") (hcmigrate.project_model).
    runs_under: tuple[tuple[str, str, str], ...] = ()
    # Where a package above this module turns 64-bit mode on when it is imported, before any
    # module of the package runs ("line 19 of pkg/__init__.py"; hcmigrate.project_model.x64_mode):
    # result_shape's dtypes are then written as the user wrote them.
    x64_on_import: str | None = None
    # Sites of the removed-JAX-API rules whose rewrite would not compile where they stand
    # (`case x.device_buffer:` -> a call in a pattern): (code, line, col, why), left as they
    # are with a manual finding while the module's other sites are rewritten
    # (hcmigrate.codemod.pipeline sets it when it retries).
    dropped_sites: frozenset[tuple[str, int, int, str]] = frozenset()
    # Names other modules of the run bind to a JAX function that lost a keyword
    # (("pkg.backend.clip", "jax.numpy.clip"),): calls through them are JAX102's sites
    # (hcmigrate.removed_exports).
    removed_exports: tuple[tuple[str, str], ...] = ()
    # Module helpers the run writes once for the package (hcmigrate.shared_helpers): (key in
    # hcmigrate.codemod.module_helpers.HELPERS, the module to import it from, that module
    # relative to this one), e.g. ("id_print", "pkg._id_print", ".._id_print"). The module
    # imports the helper (relatively where it imports its own package so) instead of
    # defining it.
    shared_helpers: tuple[tuple[str, str, str], ...] = ()


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
