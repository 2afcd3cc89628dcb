"""`[tool.hcmigrate]` in the nearest pyproject.toml, and the target JAX version from dependency pins."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from hcmigrate.errors import ConfigError, FileError
from hcmigrate.files import read_regular

KNOWN_KEYS = {
    "strategy": str,
    "exclude": list,
    "extend-exclude": list,
    "include": list,
    "select": list,
    "ignore": list,
    "target-jax": str,
    "add-todos": bool,
    "no-compat": bool,
    "several-devices": bool,
    "raise-jax-pin": bool,
    "force-exclude": bool,
    "respect-gitignore": bool,
    "line-length": int,
    "file-timeout": float,
    # the file (relative to this pyproject.toml's folder) that holds the id_print helper the
    # modules of its package share (hcmigrate.shared_helpers)
    "id-print-helper": str,
    # `"glob" = "compat"`: the strategy of the files a gitignore-style pattern (relative to this
    # pyproject.toml's folder) matches, as Ruff's per-file-ignores (hcmigrate.settings)
    "per-file-strategy": dict,
}
STRATEGIES = ("native", "compat")
_EXPECTED = {
    str: "a string",
    list: "an array of strings",
    bool: "a boolean",
    int: "an integer",
    float: "a number of seconds",
    dict: 'a table of "pattern" = "strategy"',
}


def shown(path: Path) -> str:
    """`path` as messages show it: relative to the working folder when inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


@dataclass
class FileConfig:
    path: Path | None = None  # the pyproject.toml it came from
    values: dict = field(default_factory=dict)
    formatter_line_length: int | None = None  # [tool.ruff] or [tool.black] line-length

    @property
    def root(self) -> Path | None:
        return self.path.parent if self.path else None


def strategy_for(rel: str, default: str, per_file: tuple[tuple[str, str], ...]) -> str:
    """The strategy of the file at `rel` (a POSIX path relative to the pyproject.toml's
    folder): the last `[tool.hcmigrate.per-file-strategy]` pattern that matches it, else
    `default`."""
    if not per_file:
        return default
    import pathspec

    chosen = default
    for pattern, strategy in per_file:
        if pathspec.PathSpec.from_lines("gitignore", [pattern]).match_file(rel):
            chosen = strategy
    return chosen


def find_pyproject(start: Path) -> Path | None:
    start = start.resolve()
    if start.is_file():
        start = start.parent
    for d in (start, *start.parents):
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _load_toml(path: Path) -> dict:
    """The TOML file's table; ConfigError naming the file for anything that is not readable,
    UTF-8 TOML in a regular file (a FIFO or a device is refused, never read)."""
    try:
        data = read_regular(path, limit=MAX_CONFIG_BYTES)
    except FileError as exc:
        raise ConfigError(f"{shown(path)}: {exc.message}") from None
    try:
        return tomllib.loads(data.decode("utf-8-sig"))  # (a byte-order mark is allowed)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{shown(path)}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at line {line}); "
            "TOML files are UTF-8"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{shown(path)}: invalid TOML: {exc}") from None
    except (RecursionError, MemoryError):
        raise ConfigError(f"{shown(path)}: invalid TOML: nested too deeply") from None


MAX_CONFIG_BYTES = 4 * 1024 * 1024


def load_config(start: Path, explicit: Path | None = None) -> FileConfig:
    """Read `[tool.hcmigrate]` from `explicit` or the nearest pyproject.toml above `start`."""
    path = explicit or find_pyproject(start)
    if path is None:
        return FileConfig()
    data = _load_toml(path)
    _dependencies(data, path)  # (a [project] table of the wrong shape is no valid pyproject)
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{shown(path)}: `tool` must be a table ([tool]), not {_kind(tool)}")
    line_length = formatter_line_length(data)
    section = tool.get("hcmigrate")
    if section is None:
        return FileConfig(path, {}, line_length)
    if not isinstance(section, dict):
        raise ConfigError(f"{shown(path)}: [tool.hcmigrate] must be a table, not {_kind(section)}")
    values = {}
    for key, value in section.items():
        norm = key.replace("_", "-")
        if norm not in KNOWN_KEYS:
            known = ", ".join(sorted(KNOWN_KEYS))
            raise ConfigError(
                f"{shown(path)}: unknown key '{key}' in [tool.hcmigrate] (known keys: {known})"
            )
        want = KNOWN_KEYS[norm]
        if want is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, want) or (
            want is list and not all(isinstance(v, str) for v in value)
        ):
            raise ConfigError(
                f"{shown(path)}: [tool.hcmigrate] {key} must be {_EXPECTED[want]}, not "
                f"{_kind(value)}" + (" (write a list: [...])" if want is list else "")
            )
        values[norm] = value
    if "strategy" in values and values["strategy"] not in STRATEGIES:
        raise ConfigError(
            f"{shown(path)}: [tool.hcmigrate] strategy must be one of {', '.join(STRATEGIES)}"
        )
    for pattern, strategy in values.get("per-file-strategy", {}).items():
        if strategy not in STRATEGIES:
            raise ConfigError(
                f'{shown(path)}: [tool.hcmigrate.per-file-strategy] "{pattern}" must be one of '
                f"{', '.join(STRATEGIES)}, not {strategy!r}"
            )
    if "target-jax" in values:
        parse_version(values["target-jax"], where=f"{shown(path)}: [tool.hcmigrate] target-jax")
    if "file-timeout" in values and not values["file-timeout"] > 0:
        raise ConfigError(f"{shown(path)}: [tool.hcmigrate] file-timeout must be above 0 seconds")
    if "line-length" in values and not 20 <= values["line-length"] <= 400:
        raise ConfigError(f"{shown(path)}: [tool.hcmigrate] line-length must be from 20 to 400")
    return FileConfig(path, values, line_length)


def formatter_line_length(pyproject: dict) -> int | None:
    """The line length the project's formatter or linter is configured with in pyproject.toml:
    `[tool.ruff]`, `[tool.black]`, `[tool.yapf]` (column_limit), `[tool.pylint.format]`
    (max-line-length); a value that is not a sensible integer is ignored."""
    tool = pyproject.get("tool", {})
    pylint = tool.get("pylint", {})
    candidates = (
        (tool.get("ruff"), ("line-length", "line_length")),
        (tool.get("black"), ("line-length", "line_length")),
        (tool.get("yapf"), ("column_limit", "column-limit")),
        (pylint.get("format") if isinstance(pylint, dict) else None, ("max-line-length",)),
    )
    for section, keys in candidates:
        if not isinstance(section, dict):
            continue
        for key in keys:
            value = section.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and 20 <= value <= 400:
                return value
    return None


# Other files a project states its line length in: (file, section, key).
_LINE_LENGTH_FILES = (
    (".style.yapf", "style", "column_limit"),
    ("setup.cfg", "yapf", "column_limit"),
    ("setup.cfg", "flake8", "max-line-length"),
    (".flake8", "flake8", "max-line-length"),
    ("tox.ini", "flake8", "max-line-length"),
    (".pylintrc", "FORMAT", "max-line-length"),
    ("pylintrc", "FORMAT", "max-line-length"),
)


def ini_line_length(root: Path) -> int | None:
    """The line length a yapf, flake8 or pylint file in `root` states, if any."""
    import configparser

    for name, section, key in _LINE_LENGTH_FILES:
        path = root / name
        if not path.is_file():
            continue
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(read_regular(path, limit=MAX_CONFIG_BYTES).decode("utf-8"))
            value = parser.getint(section, key)
        except (configparser.Error, ValueError, OSError, UnicodeDecodeError, FileError):
            continue
        if 20 <= value <= 400:
            return value
    return None


def yapf_style_file(root: Path) -> Path | None:
    """The file in `root` that configures yapf, looked up as yapf looks its style up
    (`.style.yapf`, `pyproject.toml` `[tool.yapf]`, `setup.cfg` `[yapf]`), when the project
    formats with yapf: not where it also configures black (`[tool.black]`), whose layout then
    wins."""
    import configparser

    pyproject: dict = {}
    if (root / "pyproject.toml").is_file():
        try:
            text = read_regular(root / "pyproject.toml", limit=MAX_CONFIG_BYTES).decode("utf-8")
            pyproject = tomllib.loads(text)
        except Exception:  # (load_config reports a bad pyproject.toml)
            pyproject = {}
    tool = pyproject.get("tool") if isinstance(pyproject.get("tool"), dict) else {}
    if "black" in tool:
        return None
    if (root / ".style.yapf").is_file():
        return root / ".style.yapf"
    if isinstance(tool.get("yapf"), dict):
        return root / "pyproject.toml"
    if (root / "setup.cfg").is_file():
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(
                read_regular(root / "setup.cfg", limit=MAX_CONFIG_BYTES).decode("utf-8")
            )
        except (configparser.Error, OSError, UnicodeDecodeError, FileError):
            return None
        if parser.has_section("yapf"):
            return root / "setup.cfg"
    return None


def parse_version(text: str, where: str = "--target-jax") -> tuple[int, ...]:
    m = re.fullmatch(r"\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*", str(text))
    if not m:
        raise ConfigError(f"{where}: '{text}' is not a version like 0.4.35")
    return tuple(int(g) for g in m.groups() if g is not None)


_PIN = re.compile(
    r"^\s*jax\s*(?:\[[^\]]*\])?\s*(?P<spec>(?:[<>=!~]=?|===)\s*[\w.*]+(?:\s*,\s*(?:[<>=!~]=?|===)\s*[\w.*]+)*)",
    re.IGNORECASE,
)


def _lowest_allowed(spec: str) -> tuple[int, ...] | None:
    """The oldest JAX a requirement spec allows (what generated code must run on)."""
    low = None
    for clause in spec.split(","):
        m = re.match(r"\s*(===|==|>=|~=|>)\s*([\d.]+)", clause)
        if m:
            try:
                v = parse_version(m.group(2).rstrip("."))
            except ConfigError:
                continue
            if m.group(1) == ">":  # strictly above: the next patch release at least
                v = v + (0,) * (3 - len(v))
                v = v[:2] + (v[2] + 1,)
            low = v if low is None else max(low, v)
    return low


def _requirement_files(root: Path) -> list[Path]:
    """requirements*.txt, pip-compile's sources (requirements*.in), and the file a computed
    setup.py install_requires reads (chex's
    requirements/requirements.txt), the one the compat dependency is written to and the JAX
    floor raised in (hcmigrate.verify.project_deps.requirements_file_of)."""
    from hcmigrate.verify.project_deps import requirements_file_of

    files = sorted(root.glob("requirements*.txt")) + sorted(root.glob("requirements*.in"))
    try:
        setup_py = read_regular(root / "setup.py", limit=MAX_CONFIG_BYTES).decode("utf-8")
    except (FileError, OSError, UnicodeDecodeError):
        return files
    read = requirements_file_of(root, setup_py)
    return files + ([read] if read is not None and read not in files else [])


def pinned_jax(
    root: Path, problems: list[tuple[str, str]] | None = None
) -> tuple[tuple[int, ...], str] | None:
    """The lowest JAX version the project's dependency pins allow, and where it was found.

    Looks at pyproject.toml ([project] dependencies and optional-dependencies, poetry's
    dependencies), setup.cfg, a literal setup.py list requirements*.txt and requirements*.in in `root`. Returns None when nothing pins a lower bound. A pyproject.toml
    whose [project] values have the wrong shape raises ConfigError; a requirements file that
    cannot be read (a FIFO, a device, too large) is left out and added to `problems` as
    (path, reason)."""
    found: list[tuple[tuple[int, ...], str]] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = _load_toml(pyproject)
        except ConfigError:
            data = {}
        for dep in _dependencies(data, pyproject):
            m = _PIN.match(dep.split(";")[0])
            if m and (v := _lowest_allowed(m.group("spec"))):
                found.append((v, f"{pyproject.name}: {dep.strip()}"))
    for req in _requirement_files(root):
        try:
            lines = read_regular(req, limit=MAX_CONFIG_BYTES).decode(errors="replace").splitlines()
        except FileError as exc:
            if problems is not None:
                problems.append((shown(req), f"{exc.message} (looked at for the JAX pin)"))
            continue
        for line in lines:
            line = line.split("#")[0]
            m = _PIN.match(line.split(";")[0])
            if m and (v := _lowest_allowed(m.group("spec"))):
                found.append((v, f"{req.name}: {line.strip()}"))
    # poetry, setup.cfg and a literal setup.py list too (read as verify --project-deps reads
    # them; setup.py is never executed)
    from hcmigrate.verify.project_deps import project_dependencies

    for source, dep in project_dependencies(root).declared:
        if source.startswith("pyproject.toml [project]"):
            continue  # (read above)
        m = _PIN.match(dep.split(";")[0])
        if m and (v := _lowest_allowed(m.group("spec"))):
            found.append((v, f"{source}: {dep.strip()}"))
    if not found:
        return None
    return max(found, key=lambda item: item[0])


def _kind(value) -> str:
    """A TOML value's kind, in words (for messages)."""
    return {
        str: "a string",
        int: "an integer",
        float: "a float",
        bool: "a boolean",
        list: "an array",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def _dependencies(data: dict, path: Path) -> list[str]:
    """[project] dependencies and every optional-dependencies list; ConfigError for values of
    the wrong shape (the file is not a valid pyproject.toml then, PEP 621)."""
    where = shown(path)
    project = data.get("project", {})
    if not isinstance(project, dict):
        raise ConfigError(f"{where}: `project` must be a table ([project]), not {_kind(project)}")
    deps = project.get("dependencies", [])
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        raise ConfigError(
            f"{where}: [project] dependencies must be an array of strings, not {_kind(deps)}"
        )
    extras = project.get("optional-dependencies", {})
    if not isinstance(extras, dict):
        raise ConfigError(
            f"{where}: [project] optional-dependencies must be a table of arrays of strings "
            f"(extra = [...]), not {_kind(extras)}"
        )
    out = list(deps)
    for name, extra in extras.items():
        if not isinstance(extra, list) or not all(isinstance(d, str) for d in extra):
            raise ConfigError(
                f"{where}: [project.optional-dependencies] {name} must be an array of strings, "
                f"not {_kind(extra)}"
            )
        out += extra
    return out
