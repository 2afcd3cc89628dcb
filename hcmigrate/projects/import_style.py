"""How the project sorts its imports: isort's and ruff's isort settings, read from the files a
project keeps them in, so that an import the codemod adds lands where the project's own import
checker wants it (custom sections such as `known_jax`, `force-sort-within-sections`,
`known-first-party`, google's and black's profiles).

Read from the project root: `pyproject.toml` (`[tool.isort]`, `[tool.ruff.lint.isort]`,
`[tool.ruff.isort]`), `.isort.cfg` (`[settings]`/`[isort]`), `setup.cfg` and `tox.ini`
(`[isort]`/`[tool:isort]`), the first that configures isort, as isort itself looks them up;
ruff's settings (`ruff.toml`, else pyproject's) where the project configures ruff's `I` rules
instead; isort's `src_paths` and ruff's `src` name first-party folders. The project's top-level
packages and modules (in the root and its `src/`, as isort's and ruff's `src` paths) are first
party.
"""

from __future__ import annotations

import configparser
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from hcmigrate.files import read_regular

FUTURE, STDLIB, THIRDPARTY, FIRSTPARTY, LOCALFOLDER = (
    "FUTURE",
    "STDLIB",
    "THIRDPARTY",
    "FIRSTPARTY",
    "LOCALFOLDER",
)
DEFAULT_SECTIONS = (FUTURE, STDLIB, THIRDPARTY, FIRSTPARTY, LOCALFOLDER)
_PROFILES = {  # (force_sort_within_sections, force_single_line) of isort's profiles
    "google": (True, True),
    "open_stack": (True, False),
}


@dataclass(frozen=True)
class ImportStyle:
    sections: tuple[str, ...] = DEFAULT_SECTIONS
    # (module prefix, section) for the project's `known_*` lists and extra standard library
    known: tuple[tuple[str, str], ...] = ()
    first_party: tuple[str, ...] = ()  # top-level names of the project's own code
    default_section: str = THIRDPARTY
    force_sort_within_sections: bool = False  # `import x` and `from x import` interleaved
    force_single_line: bool = False  # one name per `from x import` statement
    # blank lines between an import block and the code after it (-1: isort's default, one, or
    # two before a `def`/`class`; diffrax sets 2)
    lines_after_imports: int = -1
    source: str = ""  # where it was read, for -v

    def with_first_party(self, names) -> ImportStyle:
        merged = tuple(sorted({*self.first_party, *names}))
        return ImportStyle(**{**self.__dict__, "first_party": merged})


def read_import_style(root: Path) -> ImportStyle:
    """The import style of the project whose root is `root` (isort's defaults when it states
    none), with the project's own top-level packages and modules as first party."""
    style = _configured(root) or ImportStyle()
    return style.with_first_party(_own_top_level_names(root))


def _configured(root: Path) -> ImportStyle | None:
    pyproject = root / "pyproject.toml"
    tool: dict = {}
    if pyproject.is_file():
        try:
            tool = tomllib.loads(read_regular(pyproject).decode("utf-8")).get("tool", {})
        except Exception:  # (hcmigrate.config reports a bad pyproject.toml)
            tool = {}
    if isinstance(tool.get("isort"), dict):
        style = _from_isort(tool["isort"], "pyproject.toml [tool.isort]")
        return style.with_first_party(_names_in(root, _names(tool["isort"].get("src_paths"))))
    for name, sections in (
        (".isort.cfg", ("settings", "isort")),
        ("setup.cfg", ("isort", "tool:isort")),
        ("tox.ini", ("isort", "tool:isort")),
    ):
        values = _ini_section(root / name, sections)
        if values is not None:
            style = _from_isort(values, f"{name} [isort]")
            return style.with_first_party(_names_in(root, _names(values.get("src_paths"))))
    ruff = ruff_toml(root) or tool.get("ruff")
    if isinstance(ruff, dict):
        lint = ruff.get("lint") if isinstance(ruff.get("lint"), dict) else {}
        settings = lint.get("isort", ruff.get("isort"))
        src = _names_in(root, _names(ruff.get("src")))  # (ruff's `src`: first party)
        if isinstance(settings, dict):
            style = _from_ruff(settings, ruff, "pyproject.toml [tool.ruff.lint.isort]")
            return style.with_first_party(src)
        if isinstance(ruff.get("src"), list):
            return ImportStyle(first_party=src)
    return None


def ruff_toml(root: Path) -> dict | None:
    """The settings of ruff's own file in `root` (`.ruff.toml`, `ruff.toml`: ruff reads them
    before pyproject's `[tool.ruff]`), None where there is none or it does not parse."""
    for name in (".ruff.toml", "ruff.toml"):
        path = root / name
        if path.is_file():
            try:
                return tomllib.loads(read_regular(path).decode("utf-8-sig"))
            except Exception:  # (an unreadable file states nothing)
                return None
    return None


def _ini_section(path: Path, sections: tuple[str, ...]) -> dict | None:
    if not path.is_file():
        return None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(read_regular(path).decode("utf-8"))
    except Exception:  # (an unreadable file states no style)
        return None
    for section in sections:
        if parser.has_section(section):
            return dict(parser.items(section))
    return None


def _names(value) -> list[str]:
    """A list setting, from TOML (a list) or an ini file (comma- or line-separated)."""
    if isinstance(value, str):
        return [v for v in re.split(r"[,\s]+", value) if v]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return []


def _flag(value) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "1"))


def _from_isort(values: dict, source: str) -> ImportStyle:
    """isort's settings (keys with `_` or `-`)."""
    values = {k.replace("-", "_").lower(): v for k, v in values.items()}
    force_sort, single_line = _PROFILES.get(str(values.get("profile", "")).strip('"'), (False,) * 2)
    sections = tuple(s.upper() for s in _names(values.get("sections"))) or DEFAULT_SECTIONS
    known = [(m, STDLIB) for m in _names(values.get("extra_standard_library"))]
    for key, value in values.items():
        if key.startswith("known_") and key != "known_standard_library":
            section = key[len("known_") :].upper().replace("FIRST_PARTY", FIRSTPARTY)
            section = section.replace("THIRD_PARTY", THIRDPARTY).replace(
                "LOCAL_FOLDER", LOCALFOLDER
            )
            known += [(m, section) for m in _names(value)]
    first_party = tuple(m for m, s in known if s == FIRSTPARTY)
    return ImportStyle(
        sections=sections,
        known=tuple(known),
        first_party=first_party,
        default_section=str(values.get("default_section", THIRDPARTY)).upper(),
        force_sort_within_sections=_flag(values.get("force_sort_within_sections", force_sort)),
        force_single_line=_flag(values.get("force_single_line", single_line)),
        lines_after_imports=_count(values.get("lines_after_imports")),
        source=source,
    )


def _count(value) -> int:
    try:
        return int(str(value).strip().strip('"'))
    except ValueError:
        return -1


_RUFF_SECTIONS = {
    "future": FUTURE,
    "standard-library": STDLIB,
    "third-party": THIRDPARTY,
    "first-party": FIRSTPARTY,
    "local-folder": LOCALFOLDER,
}


def _from_ruff(values: dict, ruff: dict, source: str) -> ImportStyle:
    """ruff's `[tool.ruff.lint.isort]` (custom sections in its `sections` table)."""
    order = _names(values.get("section-order")) or list(_RUFF_SECTIONS)
    sections = tuple(_RUFF_SECTIONS.get(s, s.upper()) for s in order)
    known = [(m, STDLIB) for m in _names(values.get("extra-standard-library"))]
    for key, section in (
        ("known-first-party", FIRSTPARTY),
        ("known-third-party", THIRDPARTY),
        ("known-local-folder", LOCALFOLDER),
    ):
        known += [(m, section) for m in _names(values.get(key))]
    custom = values.get("sections")
    if isinstance(custom, dict):
        for name, modules in custom.items():
            known += [(m, name.upper()) for m in _names(modules)]
    return ImportStyle(
        sections=sections,
        known=tuple(known),
        first_party=tuple(m for m, s in known if s == FIRSTPARTY),
        force_sort_within_sections=_flag(values.get("force-sort-within-sections")),
        force_single_line=_flag(values.get("force-single-line")),
        lines_after_imports=_count(values.get("lines-after-imports")),
        source=source,
    )


def _own_top_level_names(root: Path) -> tuple[str, ...]:
    return _names_in(root, [".", "src"])


def _names_in(root: Path, folders) -> tuple[str, ...]:
    """Top-level packages and modules in `folders` of `root` (isort's and ruff's `src`)."""
    found = set()
    for folder in folders:
        base = root / str(folder)
        try:
            entries = list(base.iterdir()) if base.is_dir() else []
        except OSError:
            continue
        for entry in entries:
            if entry.suffix == ".py" and entry.stem.isidentifier() and entry.stem != "setup":
                found.add(entry.stem)
            elif entry.is_dir() and (entry / "__init__.py").is_file() and entry.name.isidentifier():
                found.add(entry.name)
    return tuple(sorted(found))
