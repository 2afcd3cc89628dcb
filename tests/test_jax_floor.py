"""The project's JAX floor raised where the native rewrite needs it (hcmigrate.projects.floors, issue
27): real metadata files in a project's tree, migrated with the real command."""

from __future__ import annotations

import pytest

from cli_helpers import run

MODULE = """\
import jax
from jax.experimental import host_callback as hcb


def step(x):
    hcb.barrier_wait()
    hcb.id_tap(lambda v, _: jax.numpy.sum(v), x)
    return jax.numpy.trapz(x)
"""
# (the barrier and the tap are rewritten for the raised floor; so is jax.numpy.trapz, whose
# replacement, jax.numpy.trapezoid, needs JAX 0.4.26 and has no older spelling: the floor
# rises to 0.4.26. jax.tree_map would not raise it: jax.tree_util.tree_map runs on every JAX)
MIGRATED = """\
import jax


def step(x):
    jax.effects_barrier()
    jax.debug.callback(lambda v: jax.numpy.sum(v), x, ordered=True)
    return jax.numpy.trapezoid(x)
"""

RAISED = [
    pytest.param(
        "pyproject.toml",
        '[project]\nname = "p"\ndependencies = [\n    "jax[cpu]>=0.4.1,<0.5",  # the CPU wheel\n'
        '    "jaxlib >= 0.4.1",\n    "numpy",\n]\n\n[tool.ruff]\nline-length = 100\n',
        '[project]\nname = "p"\ndependencies = [\n    "jax[cpu]>=0.4.26,<0.5",  # the CPU wheel\n'
        '    "jaxlib >= 0.4.20",\n    "numpy",\n]\n\n[tool.ruff]\nline-length = 100\n',
        [
            "pyproject.toml:4:6: HCB008 [fixed] raised the project's JAX floor "
            "`jax[cpu]>=0.4.1,<0.5` -> `jax[cpu]>=0.4.26,<0.5`: step.py:7 uses jax.numpy.trapezoid (JAX >= 0.4.26)",
            "pyproject.toml:5:6: HCB008 [fixed] raised the project's JAX floor "
            "`jaxlib >= 0.4.1` -> `jaxlib >= 0.4.20`: step.py:7 uses jax.numpy.trapezoid (JAX >= 0.4.26) "
            "(which imports with jaxlib >= 0.4.20)",
        ],
        id="pyproject-extras-upper-bound-jaxlib",
    ),
    pytest.param(
        "pyproject.toml",
        '[tool.poetry]\r\nname = "p"\r\n\r\n[tool.poetry.dependencies]\r\npython = "^3.9"\r\n'
        'jax = "^0.4.1"\r\noptax = "^0.1"\r\n',
        '[tool.poetry]\r\nname = "p"\r\n\r\n[tool.poetry.dependencies]\r\npython = "^3.9"\r\n'
        'jax = "^0.4.26"\r\noptax = "^0.1"\r\n',
        [
            "pyproject.toml:6:8: HCB008 [fixed] raised the project's JAX floor "
            '`jax = "^0.4.1"` -> `jax = "^0.4.26"`: step.py:7 uses jax.numpy.trapezoid (JAX >= 0.4.26)'
        ],
        id="poetry-caret-crlf",
    ),
    pytest.param(
        "setup.cfg",
        "[metadata]\nname = p\n\n[options]\ninstall_requires =\n    numpy\n"
        "    jax>=0.4.13  # tree_util\n\n"
        "[options.extras_require]\ncuda = jax[cuda12]>=0.4.13\n",
        "[metadata]\nname = p\n\n[options]\ninstall_requires =\n    numpy\n"
        "    jax>=0.4.26  # tree_util\n\n"
        "[options.extras_require]\ncuda = jax[cuda12]>=0.4.26\n",
        [
            "setup.cfg:7:5: HCB008 [fixed] raised the project's JAX floor `jax>=0.4.13` -> "
            "`jax>=0.4.26`: step.py:7 uses jax.numpy.trapezoid (JAX >= 0.4.26)",
            "setup.cfg:10:8: HCB008 [fixed] raised the project's JAX floor `jax[cuda12]>=0.4.13` "
            "-> `jax[cuda12]>=0.4.26`: step.py:7 uses jax.numpy.trapezoid (JAX >= 0.4.26)",
        ],
        id="setup-cfg",
    ),
    pytest.param(
        "setup.py",
        "from setuptools import setup\n\nsetup(\n    name='p',\n"
        "    install_requires=['numpy', 'jax>0.4.1'],\n)\n",
        "from setuptools import setup\n\nsetup(\n    name='p',\n"
        "    install_requires=['numpy', 'jax>=0.4.26'],\n)\n",
        [
            "setup.py:5:33: HCB008 [fixed] raised the project's JAX floor `jax>0.4.1` -> "
            "`jax>=0.4.26`: step.py:7 uses jax.numpy.trapezoid (JAX >= 0.4.26)"
        ],
        id="setup-py-literal",
    ),
    pytest.param(
        "requirements.txt",
        "numpy\njax~=0.4.14 ; python_version >= '3.9'\n",
        "numpy\njax~=0.4.26 ; python_version >= '3.9'\n",
        [
            "requirements.txt:2:1: HCB008 [fixed] raised the project's JAX floor "
            "`jax~=0.4.14 ; python_version >= '3.9'` -> `jax~=0.4.26 ; python_version >= "
            "'3.9'`: step.py:7 uses jax.numpy.trapezoid (JAX >= 0.4.26)"
        ],
        id="requirements-compatible-release",
    ),
    pytest.param(
        "pyproject.toml",
        '[tool.poetry]\nname = "p"\n\n[tool.poetry.dependencies]\npython = "^3.8"\n'
        'jax = ">=0.4.1"\n',
        '[tool.poetry]\nname = "p"\n\n[tool.poetry.dependencies]\npython = "^3.9"\n'
        'jax = ">=0.4.26"\n',
        [
            "pyproject.toml:5:11: HCB008 [fixed] raised the project's Python floor "
            '`python = "^3.8"` -> `python = "^3.9"`: step.py:7 uses jax.numpy.trapezoid (JAX >= 0.4.26) '
            "(which requires Python >= 3.9)",
            "pyproject.toml:6:8: HCB008 [fixed] raised the project's JAX floor "
            '`jax = ">=0.4.1"` -> `jax = ">=0.4.26"`: step.py:7 uses jax.numpy.trapezoid (JAX >= 0.4.26)',
        ],
        id="poetry-python-caret",
    ),
    pytest.param(
        "pyproject.toml",
        '[project]\nname = "p"\nrequires-python = ">=3.7"\ndependencies = ["jax>=0.4.1"]\n',
        '[project]\nname = "p"\nrequires-python = ">=3.9"\ndependencies = ["jax>=0.4.26"]\n',
        [
            "pyproject.toml:3:20: HCB008 [fixed] raised the project's Python floor "
            '`requires-python = ">=3.7"` -> `requires-python = ">=3.9"`: step.py:7 uses '
            "jax.numpy.trapezoid (JAX >= 0.4.26) "
            "(which requires Python >= 3.9)",
            "pyproject.toml:4:18: HCB008 [fixed] raised the project's JAX floor `jax>=0.4.1` -> "
            "`jax>=0.4.26`: step.py:7 uses jax.numpy.trapezoid (JAX >= 0.4.26)",
        ],
        id="requires-python",
    ),
    pytest.param(
        "setup.py",
        "from setuptools import setup\n\nsetup(\n    name='p',\n    python_requires=\"~=3.8\",\n"
        "    install_requires=['jax>=0.4.1'],\n)\n",
        "from setuptools import setup\n\nsetup(\n    name='p',\n    python_requires=\"~=3.9\",\n"
        "    install_requires=['jax>=0.4.26'],\n)\n",
        [
            "setup.py:5:22: HCB008 [fixed] raised the project's Python floor "
            '`python_requires = "~=3.8"` -> `python_requires = "~=3.9"`: step.py:7 uses '
            "jax.numpy.trapezoid (JAX >= 0.4.26) "
            "(which requires Python >= 3.9)",
            "setup.py:6:24: HCB008 [fixed] raised the project's JAX floor `jax>=0.4.1` -> "
            "`jax>=0.4.26`: step.py:7 uses jax.numpy.trapezoid (JAX >= 0.4.26)",
        ],
        id="setup-py-python-requires-compatible",
    ),
    pytest.param(
        "setup.cfg",
        "[options]\npython_requires = >=3.8\ninstall_requires =\n    jax>=0.4.1\n",
        "[options]\npython_requires = >=3.9\ninstall_requires =\n    jax>=0.4.26\n",
        [
            "setup.cfg:2:19: HCB008 [fixed] raised the project's Python floor "
            "`python_requires = >=3.8` -> `python_requires = >=3.9`: step.py:7 uses jax.numpy.trapezoid (JAX >= 0.4.26) "
            "(which requires Python >= 3.9)",
            "setup.cfg:4:5: HCB008 [fixed] raised the project's JAX floor `jax>=0.4.1` -> "
            "`jax>=0.4.26`: step.py:7 uses jax.numpy.trapezoid (JAX >= 0.4.26)",
        ],
        id="setup-cfg-python-requires",
    ),
]


def _project(tmp_path, name: str, text: str):
    (tmp_path / name).write_bytes(text.encode())
    (tmp_path / "step.py").write_text(MODULE)
    return tmp_path


def _floor_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if " floor " in line]


@pytest.mark.parametrize("name, before, after, lines", RAISED)
def test_the_floor_is_raised_where_the_project_declares_it(tmp_path, name, before, after, lines):
    _project(tmp_path, name, before)
    res = run(["--no-cache", "."], tmp_path)
    # (an upper bound below current JAX, `<0.5` or poetry's `^0.4`, is a manual finding of its
    # own: hcmigrate.projects.pins)
    assert res.exit_code == (1 if "excludes JAX" in res.output else 0), res.output
    assert ("excludes JAX" in res.output) == ("<0.5" in after or "^0.4" in after)
    assert (tmp_path / name).read_bytes() == after.encode()
    assert (tmp_path / "step.py").read_text() == MIGRATED
    assert _floor_lines(res.output) == lines
    assert "HCB008 [manual]" not in res.output
    again = run(["--no-cache", "."], tmp_path)  # (idempotent: nothing left to raise)
    assert (tmp_path / name).read_bytes() == after.encode()
    assert "HCB008" not in again.output and again.exit_code == 0


def test_diff_shows_the_edit_and_check_refuses_it(tmp_path):
    before = '[project]\nname = "p"\ndependencies = ["jax>=0.4.13"]\n'
    _project(tmp_path, "pyproject.toml", before)
    res = run(["--no-cache", "--diff", "."], tmp_path)
    assert res.exit_code == 0
    assert (
        '--- a/pyproject.toml\n+++ b/pyproject.toml\n@@ -1,3 +1,3 @@\n [project]\n name = "p"\n'
        '-dependencies = ["jax>=0.4.13"]\n+dependencies = ["jax>=0.4.26"]\n'
    ) in res.stdout
    assert "+    return jax.numpy.trapezoid(" in res.stdout
    res = run(["--no-cache", "--check", "."], tmp_path)
    assert res.exit_code == 1
    assert _floor_lines(res.output) == [
        "pyproject.toml:3:18: HCB008 [fixed] would raise the project's JAX floor `jax>=0.4.13` "
        "-> `jax>=0.4.26`: step.py:7 uses jax.numpy.trapezoid (JAX >= 0.4.26)"
    ]
    assert (tmp_path / "pyproject.toml").read_text() == before
    assert (tmp_path / "step.py").read_text() == MODULE


LEFT_MANUAL = [
    pytest.param(
        "requirements.txt",
        "jax==0.3.13\n",
        [],
        "requirements.txt: HCB008 [manual] the project's JAX floor is not raised to 0.3.17, which step.py:5 uses "
        "jax.effects_barrier (JAX >= 0.3.17): `==0.3.13` is "
        "an exact pin",
        id="exact-pin",
    ),
    pytest.param(
        "requirements.txt",
        "jax>=0.3.13,<0.4.20\n",
        [],
        "requirements.txt: HCB008 [manual] the project's JAX floor is not raised to 0.4.26 "
        "for the native rewrite: `>=0.3.13,<0.4.20` does not allow 0.4.26 (an upper bound below it)",
        id="upper-bound-below",
    ),
    pytest.param(
        "pyproject.toml",
        '[project]\nname = "p"\ndependencies = ["jax>=0.3.13"]\n',
        ["--no-raise-jax-pin"],
        None,
        id="opt-out-flag",
    ),
    pytest.param(
        "pyproject.toml",
        '[project]\nname = "p"\ndependencies = ["jax>=0.3.13"]\n\n'
        "[tool.hcmigrate]\nraise-jax-pin = false\n",
        [],
        None,
        id="opt-out-config",
    ),
    pytest.param(
        "pyproject.toml",
        '[project]\nname = "p"\ndependencies = ["jax>=0.3.13", "jaxlib==0.3.7"]\n',
        [],
        "pyproject.toml: HCB008 [manual] the project's JAX floor is not raised to 0.3.17, which step.py:5 uses "
        "jax.effects_barrier (JAX >= 0.3.17): `==0.3.7` is an "
        "exact pin",
        id="jaxlib-pinned-below-what-jax-imports-with",
    ),
    pytest.param(
        "pyproject.toml",
        '[project]\nname = "p"\nrequires-python = ">=3.7,<3.9"\ndependencies = ["jax>=0.3.13"]\n',
        [],
        "pyproject.toml: HCB008 [manual] the project's JAX floor is not raised to 0.4.26 "
        "for the native rewrite: `>=3.7,<3.9` does not allow 3.9 (an upper bound below it)",
        id="python-floor-capped-below-what-jax-requires",
    ),
]


@pytest.mark.parametrize("name, text, args, reason", LEFT_MANUAL)
def test_a_floor_that_cannot_be_raised_alone_stays_manual(tmp_path, name, text, args, reason):
    """Nothing is edited; the code is written for the declared floor (jax.numpy.trapz, whose
    replacement is newer than it, stays and is reported), HCB008
    asks a human to raise it (exit 1: jax.effects_barrier needs 0.3.17), and says why the run did
    not."""
    _project(tmp_path, name, text)
    res = run(["--no-cache", *args, "."], tmp_path)
    assert res.exit_code == 1
    # (a cap that allows what the written code needs, 0.3.17, gets the floor raised to it: the
    # code's own floor; the native target, 0.4.26, is out of reach)
    capped = "for the native rewrite" in (reason or "")
    assert (tmp_path / name).read_text() == (text.replace("0.3.13", "0.3.17") if capped else text)
    # (the module asks for the raise where the run does not make it; never beside the raise)
    assert (
        "step.py:6:1: HCB008 [manual] the rewritten code needs JAX >= 0.3.17 (jax.effects_barrier, jax.debug.callback); "
        "the target JAX is 0.3.13" in res.output
    ) != capped, res.output
    assert ("HCB008 [fixed] raised the project's JAX floor" in res.output) == capped
    assert "jax.numpy.trapz(x)" in (tmp_path / "step.py").read_text()
    assert "JAX106 [manual] `jax.numpy.trapz` is gone from JAX" in res.output, res.output
    assert [line for line in _floor_lines(res.output) if "[manual]" in line] == (
        [reason] if reason else []
    )
    again = run(["--no-cache", *args, "."], tmp_path)  # (the same answer on the migrated tree)
    assert again.exit_code == 1
    assert (
        "step.py:5:1: HCB008 [manual] the rewritten code needs JAX >= 0.3.17" in again.output
    ) != capped


def test_a_target_named_by_hand_keeps_the_floor(tmp_path):
    """--target-jax says which JAX the code must run on: the declared floor is not raised."""
    _project(tmp_path, "requirements.txt", "jax>=0.3.13\n")
    res = run(["--no-cache", "--target-jax", "0.3.13", "."], tmp_path)
    assert (tmp_path / "requirements.txt").read_text() == "jax>=0.3.13\n"
    assert "HCB008 [manual]" in res.output and res.exit_code == 1


def test_a_run_without_host_callback_keeps_the_floor(tmp_path):
    """Only a removed-API rewrite (JAX101): written for the declared floor, which stays."""
    (tmp_path / "requirements.txt").write_text("jax>=0.4.13\n")
    (tmp_path / "tree.py").write_text("import jax\n\ny = jax.tree_map(abs, [1])\n")
    res = run(["--no-cache", "."], tmp_path)
    assert res.exit_code == 0, res.output
    assert (tmp_path / "requirements.txt").read_text() == "jax>=0.4.13\n"
    assert (
        tmp_path / "tree.py"
    ).read_text() == "import jax\n\ny = jax.tree_util.tree_map(abs, [1])\n"


def test_interactive_raises_the_floor_only_with_an_accepted_change(tmp_path):
    before = "jax>=0.4.13\n"
    _project(tmp_path, "requirements.txt", before)
    run(["--no-cache", "--interactive", "."], tmp_path, input="n\n" * 20)
    assert (tmp_path / "requirements.txt").read_text() == before
    assert (tmp_path / "step.py").read_text() == MODULE
    res = run(["--no-cache", "--interactive", "."], tmp_path, input="a\n")
    assert (tmp_path / "step.py").read_text() == MIGRATED
    assert (tmp_path / "requirements.txt").read_text() == "jax>=0.4.26\n"
    assert _floor_lines(res.output) == [
        "requirements.txt:1:1: HCB008 [fixed] raised the project's JAX floor `jax>=0.4.13` -> "
        "`jax>=0.4.26`: step.py:7 uses jax.numpy.trapezoid (JAX >= 0.4.26)"
    ]


KEPT_WITH_A_REASON = [
    pytest.param(
        {
            # (one constant two requirements read, each raised to its own floor)
            "setup.py": "from setuptools import setup\n\n_V = '0.3.13'\n\nsetup(\n"
            "    name='p',\n    install_requires=[f'jax>={_V}', f'jaxlib>={_V}', 'numpy'],\n)\n"
        },
        "setup.py: HCB008 [manual] the project's JAX floor is not raised to 0.3.17, which step.py:5 uses "
        "jax.effects_barrier (JAX >= 0.3.17): setup.py computes "
        "`jaxlib>=0.3.13` (raise it where it is computed)",
        id="setup-py-computed-pin",
    ),
    pytest.param(
        {
            "requirements.in": "jax>=0.3.13\n",
            "requirements.txt": "#\n# This file is autogenerated by pip-compile with Python 3.10\n"
            "# by the following command:\n#\n#    pip-compile requirements.in\n#\n"
            "jax==0.3.13\n    # via -r requirements.in\n",
        },
        "requirements.txt: HCB008 [manual] the project's JAX floor is not raised to 0.3.17, which step.py:5 uses "
        "jax.effects_barrier (JAX >= 0.3.17): "
        "requirements.txt is pip-compile's output (a lock) and pins `jax==0.3.13`: raise the "
        "floor in requirements.in and compile it again",
        id="pip-compile-lock-pins-below",
    ),
]


@pytest.mark.parametrize("files, reason", KEPT_WITH_A_REASON)
def test_a_floor_the_run_must_not_edit_is_named_with_its_reason(tmp_path, files, reason):
    """A pin setup.py computes, a lock pip-compile wrote: no file is edited, HCB008 stays
    manual and the run says why (the same reader as --project-deps reads setup.py)."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "step.py").write_text(MODULE)
    res = run(["--no-cache", "."], tmp_path)
    assert res.exit_code == 1
    assert {name: (tmp_path / name).read_text() for name in files} == files
    assert (
        "HCB008 [manual] the rewritten code needs JAX >= 0.3.17 (jax.effects_barrier, jax.debug.callback)"
        in res.output
    )
    assert _floor_lines(res.output) == [reason]


def test_code_that_runs_on_the_declared_floor_gets_no_hcb008(tmp_path):
    """(apax@1782291) barrier_wait -> jax.effects_barrier (0.3.17) and jax.tree_map ->
    jax.tree.map (0.4.25) run on the declared 0.4.25: no HCB008, nothing raised, and the
    second run, on the migrated tree, answers as the first."""
    pyproject = '[tool.poetry]\nname = "p"\n\n[tool.poetry.dependencies]\njax = ">=0.4.25"\n'
    (tmp_path / "pyproject.toml").write_text(pyproject)
    (tmp_path / "sim.py").write_text(
        "import jax\nfrom jax.experimental.host_callback import barrier_wait\n\n\n"
        "def run(x):\n    y = jax.tree_map(abs, x)\n    barrier_wait()\n    return y\n"
    )
    first = run(["--no-cache", "."], tmp_path)
    assert "HCB008" not in first.output and first.exit_code == 0, first.output
    assert (tmp_path / "pyproject.toml").read_text() == pyproject
    assert "jax.effects_barrier()" in (tmp_path / "sim.py").read_text()
    assert "jax.tree.map(abs, x)" in (tmp_path / "sim.py").read_text()
    second = run(["--no-cache", "."], tmp_path)
    assert "HCB008" not in second.output and second.exit_code == 0, second.output


def test_modern_names_behind_the_codes_own_version_switch_need_nothing(tmp_path):
    """(netket@fae7c32 utils/deprecation.py) `from jax import pure_callback` inside `if
    module_version("jax") >= (0, 3, 17):` (the else branch keeps host_callback's `call`) and
    `jax.tree.map` in a `try:` with an ImportError/AttributeError fallback run on any JAX the
    project declares: no HCB008, nothing raised, exit 0. The same names unguarded still
    raise the floor."""
    pyproject = '[project]\nname = "p"\ndependencies = ["jax>=0.3.5"]\n'
    (tmp_path / "pyproject.toml").write_text(pyproject)
    guarded = (
        "import jax\nfrom importlib.metadata import version\n\n\n"
        "def module_version(name):\n    return tuple(map(int, version(name).split('.')[:3]))\n\n\n"
        "def pure_callback(callback, shapes, *args):\n"
        '    if module_version("jax") >= (0, 3, 17):\n'
        "        from jax import pure_callback\n\n"
        "        return pure_callback(callback, shapes, *args)\n"
        "    else:\n"
        "        from jax.experimental.host_callback import call\n\n"
        "        return call(callback, *args, result_shape=shapes)\n\n\n"
        "try:\n    tree_map = jax.tree.map\nexcept AttributeError:\n"
        "    tree_map = jax.tree_util.tree_map\n"
    )
    (tmp_path / "deprecation.py").write_text(guarded)
    first = run(["--no-cache", "."], tmp_path)
    assert "HCB008" not in first.output, first.output
    assert (tmp_path / "pyproject.toml").read_text() == pyproject
    (tmp_path / "step.py").write_text(MODULE)  # rewritten with jax.numpy.trapezoid, unguarded
    second = run(["--no-cache", "."], tmp_path)
    assert (
        "HCB008 [fixed]" in second.output
        and "jax>=0.4.26" in (tmp_path / "pyproject.toml").read_text()
    ), second.output


def test_every_rule_that_writes_the_modern_api_counts_for_the_floor():
    """The floor is raised (and HCB008 checked) for the files whose sites a rule writing the
    modern API rewrote (facts.MODERN_API_CODES): a rule left out of it (HCB305 was) leaves
    a floor below what its code needs, silently."""
    from hcmigrate.facts import MODERN_API_CODES
    from hcmigrate.rules.registry import registry

    writes_jax = {
        rule.code
        for rule in registry().rules
        if rule.code.startswith("HCB")
        and ("jax." in rule.modern or "io_callback" in rule.modern)
        and "compat" not in rule.modern
    }
    assert writes_jax == MODERN_API_CODES


def test_a_host_check_alone_raises_the_floor_to_what_it_needs(tmp_path):
    """(diffrax) A module whose only rewrite is a host check (HCB305, jax.debug.callback: JAX
    0.3.17) in a project declaring `jax>=0.3.4`: the floor is raised to 0.3.17."""
    (tmp_path / "setup.py").write_text(
        'from setuptools import setup\n\nsetup(name="d", install_requires=["jax>=0.3.4"])\n'
    )
    (tmp_path / "errors.py").write_text(
        "import jax\nfrom jax.experimental import host_callback as hcb\n\n\n"
        "def error_if(pred, msgs, index):\n"
        "    def raises(i):\n        raise RuntimeError(msgs[i.item()])\n\n"
        "    jax.lax.cond(pred, lambda: hcb.call(raises, index), lambda: None)\n"
    )
    res = run(["--no-cache", "."], tmp_path)
    assert "HCB305" in res.output
    assert '"jax>=0.3.17"' in (tmp_path / "setup.py").read_text(), res.output


def test_a_module_pointed_at_compat_raises_the_floor_to_the_compat_packages(tmp_path):
    """(chex) A module the run points at the compat runtime (the strategy the user chose) now
    imports hcmigrate_compat, which installs
    with jax >= 0.4.26 and Python >= 3.9 only: the floors rise to those with the dependency
    (pip on an older Python would otherwise find no distribution, not a clear floor), and a
    second run changes nothing."""
    pyproject = (
        '[project]\nname = "p"\nrequires-python = ">=3.8"\ndependencies = ["jax>=0.4.1", "numpy"]\n'
    )
    (tmp_path / "pyproject.toml").write_text(pyproject)
    (tmp_path / "serve.py").write_text(
        "from jax.experimental import host_callback as hcb\n\n\n"
        "def step(x):\n    return hcb.id_tap(print, x, device_index=1)\n"
    )
    res = run(["--no-cache", "--strategy", "compat", "."], tmp_path)
    assert "HCB701 [fixed]" in res.output, res.output
    assert (tmp_path / "pyproject.toml").read_text() == (
        '[project]\nname = "p"\nrequires-python = ">=3.9"\n'
        'dependencies = ["jax>=0.4.26", "numpy", "hcmigrate-compat"]\n'
    ), res.output
    assert "serve.py:1 uses hcmigrate_compat (JAX >= 0.4.26)" in res.output
    again = run(["--no-cache", "--strategy", "compat", "."], tmp_path)
    assert again.exit_code == 0 and "HCB008" not in again.output, again.output


def test_a_floor_setup_py_computes_from_a_constant_is_raised_there(tmp_path):
    """numpyro: `install_requires=[f"jax{_jax_version_constraints}", ...]` beside
    `_jax_version_constraints = ">=0.4.14"`: the constant's literal is raised (its quotes kept),
    and the run says so at the constant's line; a second run changes nothing."""
    _project(
        tmp_path,
        "setup.py",
        "from setuptools import setup\n\n"
        '_jax_version_constraints = ">=0.3.13"\n\n'
        "setup(\n"
        '    name="p",\n'
        '    install_requires=[f"jax{_jax_version_constraints}", "numpy"],\n'
        ")\n",
    )
    res = run(["--no-cache", "."], tmp_path)
    written = (tmp_path / "setup.py").read_text()
    assert '_jax_version_constraints = ">=0.4.26"\n' in written, res.output
    assert (
        "setup.py:3:28: HCB008 [fixed] raised the project's JAX floor `jax>=0.3.13` -> "
        "`jax>=0.4.26`"
    ) in res.output, res.output
    again = run(["--no-cache", "."], tmp_path)
    assert (tmp_path / "setup.py").read_text() == written and "raised" not in again.output


def test_a_project_capped_below_what_the_rewrite_writes_keeps_its_module(tmp_path):
    """netket's older trees cap `jax<0.4`: the modern callbacks run on no JAX that project
    installs, so its host_callback module is left as it is, each site a manual finding naming
    the cap, and the project's metadata is not touched. The same module in a project that
    allows a newer JAX is rewritten."""
    from tests.cli_helpers import run

    source = (
        "import numpy as np\n"
        "from jax.experimental import host_callback as hcb\n\n\n"
        "def norm(x):\n"
        "    return hcb.call(np.linalg.norm, x, result_shape=x[0])\n"
    )
    pyproject = '[project]\nname = "capped"\nversion = "0.1"\ndependencies = ["jax<0.4"]\n'
    (tmp_path / "pyproject.toml").write_text(pyproject)
    module = tmp_path / "capped" / "ops.py"
    module.parent.mkdir()
    module.write_text(source)
    result = run(["--no-cache", "."], tmp_path)
    assert module.read_text() == source, module.read_text()
    assert (tmp_path / "pyproject.toml").read_text() == pyproject
    assert "HCB001" not in result.output, result.output  # (the import follows its uses)
    assert ("capped/ops.py:6:12: HCB301 [manual] call -> jax.pure_callback") in result.output, (
        result.output
    )
    assert (
        "left as it is: the rewrite writes `jax.pure_callback(vmap_method=)` (JAX >= 0.4.35), which "
        "the project's jax requirement (jax<0.4) never allows; raise that cap, then run again "
        "(or choose the compat runtime)"
    ) in result.output, result.output
    # a cap set when host_callback broke (0.4.30) is what the migration lifts: rewritten,
    # the cap reported
    (tmp_path / "pyproject.toml").write_text(pyproject.replace("jax<0.4", "jax<=0.4.30"))
    result = run(["--no-cache", "."], tmp_path)
    assert "host_callback" not in module.read_text(), module.read_text()
    assert "`jax<=0.4.30` excludes JAX" in result.output, result.output


def test_an_exact_pin_in_a_test_requirements_file_does_not_keep_the_install_floor(tmp_path):
    """kfac-jax: setup.py reads install_requires from requirements.txt (`jax>=0.3.13`) and its
    tests extra from requirements_tests.txt, which pins the oldest versions (`jax==0.3.13`).
    The install floor rises to what the code needs; the test pin, which cannot rise alone,
    is a manual finding of its own."""
    _project(
        tmp_path,
        "setup.py",
        "import os\nfrom setuptools import setup\n\n"
        "HERE = os.path.dirname(os.path.abspath(__file__))\n\n\n"
        "def _requirements(path):\n"
        "    with open(path) as f:\n"
        "        return [line.strip() for line in f if line.strip()]\n\n\n"
        "setup(\n"
        '    name="p",\n'
        '    install_requires=_requirements(os.path.join(HERE, "requirements.txt")),\n'
        '    extras_require={"tests": _requirements(os.path.join(HERE, "requirements_tests.txt"))},\n'
        ")\n",
    )
    (tmp_path / "requirements.txt").write_text("numpy>=1.19\njax>=0.3.13\n")
    pins = "pytest\njax==0.3.13\njaxlib==0.3.10\n"
    (tmp_path / "requirements_tests.txt").write_text(pins)
    res = run(["--no-cache", "."], tmp_path)
    assert (tmp_path / "requirements.txt").read_text() == "numpy>=1.19\njax>=0.4.26\n", res.output
    assert (tmp_path / "requirements_tests.txt").read_text() == pins
    assert (
        "requirements_tests.txt: HCB008 [manual] not raised to 0.4.26 (which step.py:7 uses "
        "jax.numpy.trapezoid (JAX >= 0.4.26)) with the project's floor: `==0.3.13` is an exact pin"
    ) in res.output, res.output


def test_a_floor_raised_in_an_extra_is_not_also_said_to_be_missing(tmp_path):
    """pyPESTO declares jax only in an extra (`[options.extras_require] jax = jax>=0.3.13`): the
    run raises that floor and says so; it does not also note that the project does not
    declare jax."""
    _project(
        tmp_path,
        "setup.cfg",
        "[metadata]\nname = p\n\n[options]\ninstall_requires =\n    numpy\n\n"
        "[options.extras_require]\njax =\n    jax>=0.3.13\n",
    )
    res = run(["--no-cache", "."], tmp_path)
    assert "jax>=0.4.26" in (tmp_path / "setup.cfg").read_text(), res.output
    assert "raised the project's JAX floor" in res.output, res.output
    assert "does not declare jax" not in res.output, res.output


def test_a_moved_module_newer_than_the_floor_is_imported_guarded(tmp_path):
    """(netket@fae7c32) `jax.linear_util` moved to `jax.extend.linear_util`, first in JAX
    0.4.16, on a `jax>=0.3.16` floor whose host_callback code needs nothing newer (its `call`
    is the legacy branch of a version switch): each import of the module tries the new home
    and falls back to the old one, which every JAX below 0.4.16 has, so neither the JAX floor
    (to 0.4.16) nor the Python floor (3.7 -> 3.9, what JAX 0.4.16 requires) is raised. A use
    past the code's own version check (`if module_version("jax") < (0, 3, 17): raise`) needs
    nothing of the floor either, and the kept branch for JAX < 0.3.17 runs on the declared
    floor (not "excluded by the project's floor (0.4.26)", the release the rewrite writes
    for)."""
    pyproject = (
        '[project]\nname = "p"\nrequires-python = ">=3.7"\n'
        'dependencies = ["jax>=0.3.16", "jaxlib>=0.3.15"]\n'
    )
    (tmp_path / "pyproject.toml").write_text(pyproject)
    (tmp_path / "scan.py").write_text(
        "import jax\nfrom jax import linear_util as lu\nimport jax.linear_util as lu2\n"
        "from jax.linear_util import wrap_init\n\n\n"
        "def wrapped(fun):\n    return lu.wrap_init(fun), lu2.wrap_init(fun), wrap_init(fun)\n"
    )
    (tmp_path / "switch.py").write_text(
        "import jax\nfrom importlib.metadata import version\n\n\n"
        "def module_version(name):\n    return tuple(map(int, version(name).split('.')[:3]))\n\n\n"
        "def pure_callback(callback, shapes, *args):\n"
        '    if module_version("jax") >= (0, 3, 17):\n'
        "        return jax.pure_callback(callback, shapes, *args)\n"
        "    else:\n"
        "        from jax.experimental.host_callback import call\n\n"
        "        return call(callback, *args, result_shape=shapes)\n\n\n"
        "def numbers(f, x):\n"
        '    if module_version("jax") < (0, 3, 17):\n'
        '        raise RuntimeError("needs jax >= 0.3.17")\n'
        "    return jax.pure_callback(f, x, x)\n"
    )
    first = run(["--no-cache", "."], tmp_path)
    assert (tmp_path / "pyproject.toml").read_text() == pyproject, first.output
    assert "HCB008" not in first.output and first.exit_code == 0, first.output
    assert (tmp_path / "scan.py").read_text() == (
        "import jax\n\n"
        "try:\n    from jax.extend import linear_util as lu\n"
        "except ImportError:\n    from jax import linear_util as lu\n\n"
        "try:\n    import jax.extend.linear_util as lu2\n"
        "except ImportError:\n    import jax.linear_util as lu2\n\n"
        "try:\n    from jax.extend.linear_util import wrap_init\n"
        "except ImportError:\n    from jax.linear_util import wrap_init\n\n\n"
        "def wrapped(fun):\n    return lu.wrap_init(fun), lu2.wrap_init(fun), wrap_init(fun)\n"
    ), first.output
    assert "HCB014 [note] left as it is: this branch runs only on JAX < 0.3.17" in first.output
    again = run(["--no-cache", "."], tmp_path)
    assert "rewrote" not in again.output and again.exit_code == 0, again.output
    # (a floor at the replacement's first release moves the import as before)
    (tmp_path / "pyproject.toml").write_text(pyproject.replace("0.3.16", "0.4.16"))
    (tmp_path / "scan.py").write_text("from jax import linear_util as lu\n")
    run(["--no-cache", "."], tmp_path)
    assert (tmp_path / "scan.py").read_text() == "from jax.extend import linear_util as lu\n"


def test_an_ordered_io_callback_for_several_devices_needs_what_runs_there(tmp_path):
    """(praxis with `several-devices = true`) A tap the project runs on several devices becomes
    an ordered io_callback; io_callback exists from JAX 0.4.6, but on several devices an
    ordered one is refused up to 0.4.20 and runs from 0.4.21 (measured): the floor rises to
    0.4.21, said with the reason. Without the setting the tap is an ordered jax.debug.callback,
    which the 0.4.6 floor has: nothing raised."""
    (tmp_path / ".git").mkdir()
    pyproject = '[project]\nname = "p"\ndependencies = ["jax>=0.4.6"]\n'
    (tmp_path / "step.py").write_text(
        "import jax\nfrom jax.experimental import host_callback as hcb\n\n\n"
        "def step(x):\n    hcb.id_tap(lambda v, _: print(v), x)\n    return x\n"
    )
    (tmp_path / "pyproject.toml").write_text(pyproject)
    (tmp_path / "plain").mkdir()
    for name in ("step.py", "pyproject.toml"):
        (tmp_path / "plain" / name).write_text((tmp_path / name).read_text())
    res = run(["--no-cache", "plain"], tmp_path)
    assert "jax.debug.callback" in (tmp_path / "plain/step.py").read_text(), res.output
    assert (tmp_path / "plain/pyproject.toml").read_text() == pyproject, res.output
    (tmp_path / "pyproject.toml").write_text(
        pyproject + "\n[tool.hcmigrate]\nseveral-devices = true\n"
    )
    res = run(["--no-cache", "step.py"], tmp_path)
    assert "ordered=True" in (tmp_path / "step.py").read_text(), res.output
    assert "io_callback" in (tmp_path / "step.py").read_text(), res.output
    assert '"jax>=0.4.21"' in (tmp_path / "pyproject.toml").read_text(), res.output
    assert (
        "step.py:7 uses jax.experimental.io_callback(ordered=True) on several devices "
        "(JAX >= 0.4.21)" in res.output
    )
    again = run(["--no-cache", "step.py"], tmp_path)
    assert "HCB008" not in again.output and again.exit_code == 0, again.output


def _committed(root, files: dict[str, str]) -> None:
    import subprocess

    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "before"]):
        subprocess.run(
            ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root, check=True
        )


def test_only_what_the_run_writes_raises_the_floor(tmp_path):
    """A project capped below the native target (`jax>=0.3.2,<0.4`, netket's older trees):
    the floor rises to what the rewrite writes (jax.debug.callback, 0.3.17), not to the
    project's own uses (jax.Array, 0.3.18, in the rewritten module), and names first seen in
    the oldest release measured (jax.ShapeDtypeStruct, jax.dtypes.canonicalize_dtype: "0.3.13
    or older"; jax 0.3.2 has ShapeDtypeStruct) need nothing; no module asks for the raise the
    run makes; a second run says and changes nothing."""
    files = {
        "pyproject.toml": '[project]\nname = "p"\ndependencies = ["jax>=0.3.2,<0.4"]\n',
        "p/__init__.py": "",
        "p/tap.py": "import jax\nfrom jax.experimental import host_callback as hcb\n\n\n"
        "def step(x: jax.Array):\n    hcb.id_tap(lambda v, _: print(v), x)\n"
        "    return jax.ShapeDtypeStruct(x.shape, x.dtype)\n",
        "p/shapes.py": "import jax\n\n\ndef shape_of(x):\n    return jax.ShapeDtypeStruct"
        "(x.shape, jax.dtypes.canonicalize_dtype(x.dtype))\n",
    }
    _committed(tmp_path, files)
    res = run(["--no-cache", "."], tmp_path)
    assert "jax.debug.callback" in (tmp_path / "p/tap.py").read_text(), res.output
    assert _floor_lines(res.output) == [
        "pyproject.toml:3:18: HCB008 [fixed] raised the project's JAX floor `jax>=0.3.2,<0.4` "
        "-> `jax>=0.3.17,<0.4`: p/tap.py:6 uses jax.debug.callback (JAX >= 0.3.17)"
    ], res.output
    assert "HCB008 [manual]" not in res.output, res.output
    raised = (tmp_path / "pyproject.toml").read_text()
    again = run(["--no-cache", "."], tmp_path)
    assert "HCB008" not in again.output, again.output
    assert (tmp_path / "pyproject.toml").read_text() == raised
