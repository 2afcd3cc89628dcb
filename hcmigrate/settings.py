"""What a run does: the command line's values, else `[tool.hcmigrate]` (hcmigrate.config), else
the defaults; the target JAX from the project's pins when nothing names one."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hcmigrate.options import DEFAULT_LINE_LENGTH, Options
from hcmigrate.config import (
    ini_line_length,
    load_config,
    parse_version,
    shown,
    strategy_for,
    yapf_style_file,
)
from hcmigrate.discover import Selector, check_patterns
from hcmigrate.errors import ConfigError
from hcmigrate.projects.import_style import read_import_style


DEFAULT_FILE_TIMEOUT = 300.0


@dataclass
class Settings:
    options: Options = field(default_factory=Options)
    root: Path = field(default_factory=Path.cwd)  # the project's root (where pyproject.toml is)
    exclude: list[str] = field(default_factory=list)
    include: list[str] | None = None
    force_exclude: bool = False
    respect_gitignore: bool = True
    # Each file's time budget in seconds: a file whose migration takes longer fails alone
    # (hcmigrate.workers). Generous: a real file takes well under a second.
    file_timeout: float = DEFAULT_FILE_TIMEOUT
    notes: list[str] = field(default_factory=list)  # where each setting came from (-v)
    # Files read for the settings that could not be (path, reason): reported, exit 2, while the
    # run goes on without them (a requirements file that is a FIFO).
    problems: list[tuple[str, str]] = field(default_factory=list)
    # A target JAX named by --target-jax or [tool.hcmigrate] (all files target it, no floor is
    # raised); otherwise each file's project decides from its pins (hcmigrate.projects.targets).
    target_given: bool = False
    # May the run raise a project's declared JAX floor where the native rewrite needs it?
    raise_jax_pin: bool = True
    line_length: int | None = None  # `line-length` of [tool.hcmigrate]: every project's
    # [tool.hcmigrate.per-file-strategy]: (gitignore-style pattern relative to `root`,
    # strategy), the last match wins; none when --strategy names one for every file
    per_file_strategy: tuple[tuple[str, str], ...] = ()
    # `id-print-helper`: the module (a .py file in a package folder) that holds the id_print
    # helper the modules of its top-level package share (hcmigrate.shared_helpers); None: the
    # package's `_id_print.py`
    id_print_helper: Path | None = None

    def strategy_of(self, path: str | Path) -> str:
        """The strategy of the file at `path`: its per-file-strategy pattern's, else the run's."""
        if not self.per_file_strategy:
            return self.options.strategy
        try:
            rel = Path(path).absolute().relative_to(self.root.absolute()).as_posix()
        except ValueError:
            return self.options.strategy
        return strategy_for(rel, self.options.strategy, self.per_file_strategy)

    def selector(self, force_exclude: bool | None = None) -> Selector:
        return Selector(
            self.root,
            self.exclude,
            self.include,
            self.force_exclude if force_exclude is None else force_exclude,
            self.respect_gitignore,
        )


def split_codes(values) -> list[str]:
    """Rule codes from repeated, comma-separated option values, upper-cased."""
    out = []
    for v in values:
        out += [c.strip().upper() for c in v.split(",") if c.strip()]
    return out


def check_codes(codes: list[str], source: str) -> None:
    """Raise ConfigError, naming `source` (`--select`, or the pyproject file and key), for a
    code that is no rule's code nor the prefix of one. The codes are those of the rule
    registry, whatever their family (HCB..., JAX...)."""
    if not codes:
        return  # the rule registry imports libcst: only load it when there is a code to check
    from hcmigrate.rules.registry import registry

    known = [rule.code for rule in registry().rules]
    for code in codes:
        if not any(k.startswith(code) for k in known):
            families = ", ".join(sorted({k.rstrip("0123456789") for k in known}))
            raise ConfigError(
                f"{source}: unknown rule code '{code}': no rule's code is or starts with it "
                f"(codes look like {known[0]}, or a prefix of them: {families}...; see "
                "hcmigrate --list-rules)"
            )


def resolve_settings(
    paths,
    *,
    stdin_filename: str | None = None,
    config_path: str | None = None,
    strategy: str | None = None,
    no_compat: bool | None = None,
    several_devices: bool | None = None,
    raise_jax_pin: bool | None = None,
    add_todos: bool | None = None,
    select=(),
    ignore=(),
    target_jax: str | None = None,
    exclude=(),
    include=(),
    force_exclude: bool = False,
    respect_gitignore: bool | None = None,
    file_timeout: float | None = None,
) -> Settings:
    """The settings of a run over `paths`; raises ConfigError."""
    start = Path(stdin_filename or (paths[0] if paths and paths[0] != "-" else ".")).absolute()
    cfg = load_config(
        start if start.exists() else start.parent, Path(config_path) if config_path else None
    )
    v = cfg.values
    notes = []
    problems: list[tuple[str, str]] = []
    if cfg.path:
        notes.append(f"config: {shown(cfg.path)}")
    root = cfg.root or Path.cwd()

    # (a --strategy on the command line is every file's: per-file-strategy only applies to a
    # run that names none)
    per_file_strategy = () if strategy else tuple(v.get("per-file-strategy", {}).items())
    strategy = strategy or v.get("strategy", "native")
    add_todos = v.get("add-todos", False) if add_todos is None else add_todos
    no_compat = v.get("no-compat", False) if no_compat is None else no_compat
    if several_devices is None:
        several_devices = v.get("several-devices", False)
    if no_compat and strategy == "compat":
        raise ConfigError(
            "--strategy compat points every use at the compat runtime: not with no-compat"
        )
    where = f"{shown(cfg.path)}: [tool.hcmigrate]" if cfg.path else ""
    codes = {}
    for key, given in (("select", select), ("ignore", ignore)):
        if given:
            codes[key] = split_codes(given)
            check_codes(codes[key], f"--{key}")
        else:
            codes[key] = [c.strip().upper() for c in v.get(key, [])]
            check_codes(codes[key], f"{where} {key}")
    select, ignore = codes["select"], codes["ignore"]

    target = None
    if target_jax:
        target = parse_version(target_jax)
        notes.append(f"target JAX {target_jax} (--target-jax)")
    elif "target-jax" in v:
        target = parse_version(v["target-jax"])
        notes.append(f"target JAX {v['target-jax']} ({shown(cfg.path)})")
    # (otherwise each project's own pins decide, per file: hcmigrate.projects.targets)
    if raise_jax_pin is None:
        raise_jax_pin = v.get("raise-jax-pin", True)

    exclude_patterns = list(exclude) if exclude else list(v.get("exclude", []))
    exclude_patterns += list(v.get("extend-exclude", []))
    include_patterns = (
        list(include) if include else (list(v["include"]) if "include" in v else None)
    )
    for patterns, source in (
        (exclude, "--exclude"),
        (include, "--include"),
        (v.get("exclude", []), f"{where} exclude"),
        (v.get("extend-exclude", []), f"{where} extend-exclude"),
        (v.get("include", []), f"{where} include"),
    ):
        check_patterns(patterns, source)
    if per_file_strategy:
        table = f"{shown(cfg.path)}: [tool.hcmigrate.per-file-strategy]"
        check_patterns([p for p, _ in per_file_strategy], table)
        if no_compat and any(s == "compat" for _, s in per_file_strategy):
            raise ConfigError(f"{table} names compat files: not with no-compat")
    id_print_helper = None
    if "id-print-helper" in v:
        id_print_helper = root / v["id-print-helper"]
        if (
            id_print_helper.suffix != ".py"
            or not id_print_helper.stem.isidentifier()
            or not (id_print_helper.parent / "__init__.py").is_file()
        ):
            raise ConfigError(
                f"{where} id-print-helper must name a .py module in a package folder (one "
                "with an __init__.py), relative to the pyproject.toml's folder: "
                f"{v['id-print-helper']!r}"
            )
    return Settings(
        id_print_helper=id_print_helper,
        options=Options(
            strategy=strategy,
            add_todos=add_todos,
            no_compat=no_compat,
            several_devices=several_devices,
            select=frozenset(select) if select else None,
            ignore=frozenset(ignore),
            target_jax=target,
            line_length=v.get("line-length")
            or cfg.formatter_line_length
            or ini_line_length(root)
            or DEFAULT_LINE_LENGTH,
            line_length_stated=bool(
                v.get("line-length") or cfg.formatter_line_length or ini_line_length(root)
            ),
            import_style=read_import_style(root),
            yapf_style=str(yapf) if (yapf := yapf_style_file(root)) else None,
        ),
        root=root,
        exclude=exclude_patterns,
        include=include_patterns,
        force_exclude=force_exclude or v.get("force-exclude", False),
        respect_gitignore=(
            v.get("respect-gitignore", True) if respect_gitignore is None else respect_gitignore
        ),
        file_timeout=float(file_timeout or v.get("file-timeout", DEFAULT_FILE_TIMEOUT)),
        notes=notes,
        problems=problems,
        target_given=target is not None,
        line_length=v.get("line-length"),
        raise_jax_pin=raise_jax_pin,
        per_file_strategy=per_file_strategy,
    )
