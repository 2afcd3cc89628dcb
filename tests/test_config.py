"""[tool.hcmigrate] in a real pyproject.toml, CLI precedence, target JAX from dependency pins."""

from __future__ import annotations


import pytest

from hcmigrate.api import Options, migrate_source
from hcmigrate.config import ConfigError, _lowest_allowed, load_config, pinned_jax
from cli_helpers import run

LEGACY = "from jax.experimental import host_callback as hcb\n\n\ndef f(x):\n    hcb.id_tap(lambda a, t: print(a), x)\n    return x\n"
VECTORIZED = "import jax\njax.pure_callback(f, s, x, vectorized=True)\n"


def project(tmp_path, section: str, extra: str = ""):
    (tmp_path / "pyproject.toml").write_text(
        f'[project]\nname = "demo"\n{extra}\n[tool.hcmigrate]\n{section}\n'
    )
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "src" / "a.py").write_text(LEGACY)
    return tmp_path


def test_strategy_from_config_and_cli_wins(tmp_path):
    project(tmp_path, 'strategy = "compat"')
    res = run(["--diff", "src"], tmp_path)
    assert "+" in res.stdout and "compat" in res.stdout
    assert res.stdout.count("\n+") >= 1 and "jax.debug.callback" not in res.stdout
    res = run(["--diff", "--strategy", "native", "src"], tmp_path)
    assert "jax.debug.callback" in res.stdout


def test_several_devices_from_config_and_cli_wins(tmp_path):
    """`several-devices = true`: the project's taps are ordered io_callbacks (its callers run it
    on meshes, which no rule sees); `--no-several-devices` on the command line wins."""
    project(tmp_path, "several-devices = true")
    res = run(["--diff", "src"], tmp_path)
    assert "io_callback(" in res.stdout and "jax.debug.callback" not in res.stdout
    assert "(the several-devices setting)" in res.stderr
    res = run(["--diff", "--no-several-devices", "src"], tmp_path)
    assert "jax.debug.callback" in res.stdout and "io_callback(" not in res.stdout
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    res = run(["--diff", "--several-devices", "src"], tmp_path)
    assert "io_callback(" in res.stdout


def test_exclude_from_config(tmp_path):
    project(tmp_path, 'exclude = ["src/legacy_*"]')
    (tmp_path / "src" / "legacy_x.py").write_text(LEGACY)
    res = run(["--check", "."], tmp_path)
    assert "would rewrite src/a.py" in res.stdout and "legacy_x" not in res.stdout
    res = run(["--check", "--exclude", "nothing", "."], tmp_path)  # CLI replaces the config's list
    assert "would rewrite src/legacy_x.py" in res.stdout


def test_select_ignore_and_add_todos_from_config(tmp_path):
    project(tmp_path, 'ignore = ["HCB101"]\nadd-todos = true')
    (tmp_path / "src" / "m.py").write_text(
        "from jax.experimental import host_callback as hcb\n\n\ndef tap(args):\n"
        "    hcb.id_tap(*args)\n"
    )
    res = run(["--diff", "src"], tmp_path)
    assert "jax.debug.callback" not in res.stdout
    assert "TODO(hcmigrate): HCB003" in res.stdout
    res = run(["--diff", "--no-add-todos", "--ignore", "HCB0", "src"], tmp_path)
    assert "TODO(hcmigrate)" not in res.stdout and "jax.debug.callback" in res.stdout


def test_nearest_pyproject_wins(tmp_path):
    project(tmp_path, 'strategy = "compat"')
    inner = tmp_path / "sub"
    inner.mkdir()
    (inner / "pyproject.toml").write_text('[tool.hcmigrate]\nstrategy = "native"\n')
    (inner / "b.py").write_text(LEGACY)
    res = run(["--diff", "b.py"], inner)
    assert "jax.debug.callback" in res.stdout
    res = run(["--diff", "--config", str(tmp_path / "pyproject.toml"), "b.py"], inner)
    assert "jax.debug.callback" not in res.stdout and "compat" in res.stdout


def test_unknown_key_is_an_error_naming_it(tmp_path):
    project(tmp_path, 'strategy = "native"\nexlude = ["x"]')
    res = run(["--check", "src"], tmp_path)
    assert res.exit_code == 2
    assert "unknown key 'exlude' in [tool.hcmigrate]" in res.stderr
    assert (tmp_path / "src" / "a.py").read_text() == LEGACY


@pytest.mark.parametrize(
    "bad, msg",
    [
        ('strategy = "fast"', "strategy must be one of"),
        ("exclude = 3", "exclude must be an array of strings, not an integer"),
        ('target-jax = "new"', "is not a version"),
        ('add-todos = "yes"', "add-todos must be a boolean, not a string"),
        ('several-devices = "mesh"', "several-devices must be a boolean, not a string"),
        ("file-timeout = 0", "file-timeout must be above 0 seconds"),
        ('file-timeout = "5"', "file-timeout must be a number of seconds, not a string"),
    ],
)
def test_bad_values(tmp_path, bad, msg):
    project(tmp_path, bad)
    res = run(["--check", "src"], tmp_path)
    assert res.exit_code == 2 and msg in res.stderr


@pytest.mark.parametrize(
    "section, option, message",
    [
        (
            'select = ["HCB999"]',
            None,
            "error: pyproject.toml: [tool.hcmigrate] select: unknown rule code 'HCB999'",
        ),
        (
            'ignore = ["HCB1", "XYZ"]',
            None,
            "error: pyproject.toml: [tool.hcmigrate] ignore: unknown rule code 'XYZ'",
        ),
        ("", ["--select", "HCB1,HCB8"], "error: --select: unknown rule code 'HCB8'"),
        ("", ["--ignore", "HCB999"], "error: --ignore: unknown rule code 'HCB999'"),
    ],
)
def test_unknown_rule_codes_are_errors_naming_the_key_and_where(tmp_path, section, option, message):
    """A code matching no rule selected nothing and `--check` passed (issue 28)."""
    project(tmp_path, section)
    res = run(["--check", *(option or []), "src"], tmp_path)
    assert res.exit_code == 2 and message in res.stderr, res.stderr
    assert "no rule's code is or starts with it" in res.stderr


def test_every_registered_code_and_prefix_is_accepted(tmp_path):
    """Valid codes come from the rule registry, whatever the rule family."""
    from hcmigrate.rules.registry import registry

    codes = [rule.code for rule in registry().rules]
    prefixes = sorted({code[:-1] for code in codes} | {code.rstrip("0123456789") for code in codes})
    project(tmp_path, f"ignore = {codes + prefixes!r}".replace("'", '"'))
    res = run(["--check", "src"], tmp_path)
    assert res.exit_code == 0, res.stderr


@pytest.mark.parametrize("key", ["select", "ignore", "exclude", "extend-exclude", "include"])
def test_a_string_where_a_list_is_expected_is_an_error_naming_the_key(tmp_path, key):
    project(tmp_path, f'{key} = "HCB"')
    res = run(["--check", "src"], tmp_path)
    assert res.exit_code == 2
    assert (
        f"error: pyproject.toml: [tool.hcmigrate] {key} must be an array of strings, not a string"
    ) in res.stderr


def test_invalid_toml(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.hcmigrate\n")
    (tmp_path / "a.py").write_text(LEGACY)
    res = run(["--check", "a.py"], tmp_path)
    assert res.exit_code == 2 and "invalid TOML" in res.stderr


def test_target_jax_from_config_and_pins(tmp_path):
    (tmp_path / "v.py").write_text(VECTORIZED)
    new = migrate_source(VECTORIZED, Options(target_jax=None)).code
    old = migrate_source(VECTORIZED, Options(target_jax=(0, 4, 30))).code
    assert new != old
    # A pin in pyproject's dependencies.
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "d"\ndependencies = ["jax>=0.4.30,<0.5", "numpy"]\n'
    )
    res = run(["v.py"], tmp_path)
    assert (tmp_path / "v.py").read_text() == old
    (tmp_path / "v.py").write_text(VECTORIZED)
    res = run(["-v", "--target-jax", "0.10.0", "v.py"], tmp_path)  # the option wins
    assert (tmp_path / "v.py").read_text() == new
    assert "target JAX 0.10.0 (--target-jax)" in res.stderr
    # [tool.hcmigrate] target-jax beats the pins.
    (tmp_path / "v.py").write_text(VECTORIZED)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "d"\ndependencies = ["jax>=0.4.30"]\n[tool.hcmigrate]\ntarget-jax = "0.6.0"\n'
    )
    run(["v.py"], tmp_path)
    assert (tmp_path / "v.py").read_text() == new


def test_a_pin_older_than_the_rewritten_code_needs_is_reported(tmp_path):
    """`jax>=0.1.67` lets pip install a JAX the rewrite's code fails on: with the floor left as
    it is (--no-raise-jax-pin), HCB008 says to raise the pin, naming what needs the most (exit
    1: a human must act): jax.debug.callback, 0.3.17 (the numpy helper maps with
    jax.tree_util.tree_map below 0.4.25: it never raises the need); a pin at what the code
    needs says nothing."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "d"\ndependencies = ["jax>=0.1.67"]\n'
    )
    (tmp_path / "a.py").write_text(LEGACY)
    res = run(["--check", "--no-raise-jax-pin", "a.py"], tmp_path)
    assert res.exit_code == 1
    assert (
        "a.py:5:1: HCB008 [manual] the rewritten code needs JAX >= 0.3.17 (jax.debug.callback); "
        "the target JAX is 0.1.67"
    ) in res.output
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "d"\ndependencies = ["jax>=0.3.17"]\n'
    )
    assert "HCB008" not in run(["--check", "a.py"], tmp_path).output


def test_a_pin_too_old_is_reported_on_a_tree_migrated_already(tmp_path):
    """The migration's branch has no host_callback left, so no module is rewritten; `--check`
    still says what its code needs (io_callback: 0.4.6), once, with the use that needs it, as
    the floor it would raise (an interrupted run's metadata, completed by the next)."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "d"\ndependencies = ["jax>=0.4.1"]\n'
    )
    (tmp_path / "a.py").write_text(
        "import jax\n"
        "from jax.experimental import io_callback\n\n\n"
        "def step(x):\n"
        '    jax.debug.print("{}", x, ordered=True)\n'
        "    jax.debug.callback(print, x, ordered=False)\n"
        "    return io_callback(abs, x, x, ordered=True)\n"
    )
    res = run(["--check", "a.py"], tmp_path)
    assert res.exit_code == 1  # no module would change, but the project's floor would
    found = [line for line in res.output.splitlines() if "HCB008" in line]
    # (one voice: the floor the run can raise is raised, no module asks a human for it)
    assert found == [
        "pyproject.toml:3:18: HCB008 [fixed] would raise the project's JAX floor `jax>=0.4.1` "
        "-> `jax>=0.4.6`: a.py:8 uses jax.experimental.io_callback (JAX >= 0.4.6)",
    ], res.output
    # (the code as it is decides: a run completes the metadata the migration left behind)
    run(["a.py"], tmp_path)
    assert (tmp_path / "pyproject.toml").read_text() == (
        '[project]\nname = "d"\ndependencies = ["jax>=0.4.6"]\n'
    )
    assert "HCB008" not in run(["--check", "a.py"], tmp_path).output


def test_target_jax_from_requirements_txt(tmp_path):
    (tmp_path / "v.py").write_text(VECTORIZED)
    (tmp_path / "requirements-dev.txt").write_text("numpy\njax[cuda12]==0.4.26  # pinned\n")
    res = run(["-v", "--diff", "v.py"], tmp_path)
    assert "target JAX 0.4.26 (from requirements-dev.txt: jax[cuda12]==0.4.26)" in res.stderr
    assert "legacy_vectorized" not in res.stdout


def test_pin_parsing(tmp_path):
    assert _lowest_allowed(">=0.4.30,<0.5") == (0, 4, 30)
    assert _lowest_allowed("==0.4.35") == (0, 4, 35)
    assert _lowest_allowed("~=0.4.20") == (0, 4, 20)
    assert _lowest_allowed(">0.4.30") == (0, 4, 31)
    assert _lowest_allowed("<0.5") is None
    assert pinned_jax(tmp_path) is None
    (tmp_path / "requirements.txt").write_text("jaxlib==0.4.1\njaxtyping>=0.2\n")
    assert pinned_jax(tmp_path) is None  # jaxlib / jaxtyping are not jax


def test_load_config_without_section(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    cfg = load_config(tmp_path)
    assert cfg.path == tmp_path / "pyproject.toml" and cfg.values == {}
    (tmp_path / "pyproject.toml").write_text('[tool.hcmigrate]\nselect = ["HCB1"]\n')
    assert load_config(tmp_path).values == {"select": ["HCB1"]}
    (tmp_path / "pyproject.toml").write_text("[tool.hcmigrate]\nbogus = 1\n")
    with pytest.raises(ConfigError, match="bogus"):
        load_config(tmp_path)


@pytest.mark.parametrize(
    "files",
    [
        {"pyproject.toml": '[project]\nname = "d"\n[tool.ruff]\nline-length = 60\n'},
        {"pyproject.toml": '[project]\nname = "d"\n[tool.black]\nline-length = 60\n'},
        {"pyproject.toml": '[project]\nname = "d"\n[tool.yapf]\ncolumn_limit = 60\n'},
        {"pyproject.toml": '[project]\nname = "d"\n[tool.hcmigrate]\nline-length = 60\n'},
        {".style.yapf": "[style]\nbased_on_style = google\ncolumn_limit = 60\n"},
        {"setup.cfg": "[flake8]\nmax-line-length = 60\n"},
        {".pylintrc": "[FORMAT]\nmax-line-length=60\n"},
    ],
)
def test_written_lines_keep_the_projects_line_length(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "a.py").write_text(LEGACY)
    run(["a.py"], tmp_path)
    site = (tmp_path / "a.py").read_text().split("def f(x):")[1]  # (the rewritten site)
    assert "jax.debug.callback" in site
    assert max(len(line) for line in site.splitlines()) <= 60
    (tmp_path / "a.py").write_text(LEGACY)
    for name in files:
        (tmp_path / name).unlink()
    run(["a.py"], tmp_path)  # the default, 88: the same call fits on one line
    site = (tmp_path / "a.py").read_text().split("def f(x):")[1]
    assert max(len(line) for line in site.splitlines()) > 60


@pytest.mark.parametrize(
    "name, text",
    [
        (
            "pyproject.toml",
            '[tool.poetry]\nname = "pz"\n\n[tool.poetry.dependencies]\njax = "^0.4.1"\n',
        ),
        ("setup.cfg", "[options]\ninstall_requires =\n    jax>=0.4.1\n"),
        ("setup.py", 'from setuptools import setup\n\nsetup(install_requires=["jax>=0.4.1"])\n'),
    ],
)
def test_the_jax_pin_is_read_from_poetry_setup_cfg_and_setup_py(tmp_path, name, text):
    """The oldest JAX a project declares picks spellings that exist there (jax.tree_util
    before 0.4.25), wherever the project declares it (issue 25: apax, jax-tqdm use poetry)."""
    (tmp_path / name).write_text(text)
    (tmp_path / "m.py").write_text("import jax\n\n\ndef f(t):\n    return jax.tree_map(abs, t)\n")
    res = run(["--diff", "m.py"], tmp_path)
    assert "+    return jax.tree_util.tree_map(abs, t)" in res.stdout, res.output


_COMPUTED_PIN = """\
from setuptools import setup

_JAX_VERSION = "0.4.16"
_JAX_CONSTRAINTS = ">=0.4.16"

setup(name="p", install_requires=[EXPRESSION, "numpy"])
"""


@pytest.mark.parametrize(
    "expression",
    [
        'f"jax>={_JAX_VERSION}"',
        'f"jax{_JAX_CONSTRAINTS}"',  # numpyro 0.15.0's shape
        '"jax>=" + _JAX_VERSION',
        '"jax>={}".format(_JAX_VERSION)',
        '"jax>=%s" % _JAX_VERSION',
    ],
)
def test_a_jax_pin_computed_from_a_constant_of_setup_py_is_read(tmp_path, expression):
    """`install_requires=[f"jax>={_JAX_VERSION}"]` with `_JAX_VERSION = "0.4.16"` a literal of
    the same file: the pin is read (setup.py is never run), so the rewrite picks spellings
    that exist in jax 0.4.16."""
    setup = _COMPUTED_PIN.replace("EXPRESSION", expression)
    (tmp_path / "setup.py").write_text(setup)
    (tmp_path / "m.py").write_text("import jax\n\n\ndef f(t):\n    return jax.tree_map(abs, t)\n")
    res = run(["--diff", "m.py"], tmp_path)
    assert "+    return jax.tree_util.tree_map(abs, t)" in res.stdout, res.output


def test_a_computed_pin_whose_constant_is_rebound_is_not_read(tmp_path):
    """A name bound twice (here: a loop rebinds it) is no constant: nothing is read, the
    target is the current JAX."""
    setup = _COMPUTED_PIN.replace("EXPRESSION", 'f"jax>={_JAX_VERSION}"').replace(
        '_JAX_CONSTRAINTS = ">=0.4.16"', 'for _JAX_VERSION in ["0.6.0"]:\n    pass'
    )
    (tmp_path / "setup.py").write_text(setup)
    (tmp_path / "m.py").write_text("import jax\n\n\ndef f(t):\n    return jax.tree_map(abs, t)\n")
    res = run(["--diff", "m.py"], tmp_path)
    # (the pin is not read: no floor stated, so the spelling every JAX has)
    assert "+    return jax.tree_util.tree_map(abs, t)" in res.stdout, res.output
