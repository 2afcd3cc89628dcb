"""The JAX-removals rule family (JAX1xx, issue 25): one table (hcmigrate.jax_removals) read by
the rules and the pre-filter; rules listed, selectable and on by default; uses resolved
through imports (look-alikes left alone); the facts the rewrites rely on checked on real JAX.

Each rule's own behaviour is in its examples (tests/test_rule_examples.py), the shapes real
code has in fixtures/jr*.in.py (tests/test_codemod_fixtures.py), and what migrated programs
print against real jax 0.4.30 in fixtures/fidelity/j*.in.py (tests/test_fidelity_goldens.py).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hcmigrate import Options, migrate_source

# A project that states a current JAX floor: the newest spellings (`jax.tree.map`, `min=`)
NEWEST = Options(target_jax=(0, 10, 2))
from hcmigrate.jax_removals import IMPORTED_WITH_JAX, REMOVED_APIS
from hcmigrate.prefilter import scan
from hcmigrate.removed_api_scan import RemovedApiScan
from hcmigrate.rules.registry import registry
from hcmigrate.rules.spec import RemovedJaxApi
from tests.cli_helpers import run

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


def _codes(text: str, **options) -> list[str]:
    return [d.code for d in migrate_source(text, Options(**options)).diagnostics]


# ------------------------------------------------------------------------------ the table
def test_every_row_is_handled_by_a_registered_rule():
    rules = registry()
    for row in REMOVED_APIS:
        assert row.rule in rules.by_code, f"{row.key}: rule {row.rule!r} is not registered"
        assert row.rule in rules.removed, f"{row.key}: no handler for {row.rule}"
    for code, handlers in rules.removed.items():
        assert all(isinstance(h.trigger, RemovedJaxApi) for h in handlers)
        assert handlers[0].trigger.rows, f"{code} handles no row"


_LOADED = """
import sys, jax
print(sorted(m for m in {modules!r} if m not in sys.modules), "jax.extend" in sys.modules)
"""


@pytest.mark.parametrize("side", ["current", "legacy"])
def test_import_jax_loads_the_submodules_the_rewrites_rely_on(side, legacy_python):
    """`jax.tree.map` needs no import after `import jax`; `jax.extend.core.Primitive` does
    (the rewrite adds `import jax.extend.core`): true on the current JAX and on jax 0.4.30."""
    python = sys.executable if side == "current" else str(legacy_python)
    out = subprocess.run(
        [python, "-c", _LOADED.format(modules=IMPORTED_WITH_JAX)],
        capture_output=True,
        text=True,
        env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"},
        check=True,
    ).stdout
    assert out.strip() == "[] False"


# ------------------------------------------------------------------------------ the scan
SCAN = RemovedApiScan(REMOVED_APIS)


@pytest.mark.parametrize(
    "text",
    [
        "import jax\njax.tree_map(f, x)\n",
        "import jax.numpy as np\ny = np.round_(x)\n",
        "from jax import numpy as jnp\njnp.clip(x, a_min=0)\n",
        "from jax import (\n    tree_map as tm,\n    jit,\n)\n",
        "from jax.config import config\n",
        "import jax.config\n",
        "from jax import core\ncore.Primitive('p')\n",
        "import jax\njax.jax.lax.cond(p, f, g, x)\n",
        "import jax\nb = x.device_buffer\n",
        "import jax\nd = x.device()\n",
        "from jax import core\ncall = core.closed_call_p\n",
        "from jax.interpreters import pxla\nrules = {pxla.xla_pmap_p: None}\n",
        "from jaxlib.xla_extension import XlaRuntimeError\n",
        "from jaxlib import xla_extension\n",
        "import jaxlib.xla_extension as xe\n",
        "import jaxlib\nd = jaxlib.xla_extension.Device\n",
    ],
)
def test_scan_finds_every_spelling_of_a_removed_api(text):
    assert SCAN.may_use(text)


@pytest.mark.parametrize(
    "text",
    [
        "import numpy as np\nnp.round_(x)\nnp.clip(x, a_min=0)\n",
        "import jax\njax.config.update('jax_enable_x64', True)\n",
        "from jax import config\nconfig.update('jax_enable_x64', True)\n",
        "import jax\njax.tree.map(f, x)\njax.tree_util.tree_map(f, x)\n",
        "from jax._src import core\ncore.Primitive('p')\n",
        "import jax\nd = x.device\n",
        "def tree_map(f, x):\n    return f(x)\n",
        "import jaxlib\nfrom jaxlib import xla_client\nprint(jaxlib.__version__)\n",
    ],
)
def test_scan_passes_over_current_jax_and_look_alikes(text):
    assert not SCAN.may_use(text)


def test_prefilter_selects_files_with_removed_apis_and_no_legacy_name(tmp_path):
    uses = tmp_path / "uses.py"
    uses.write_text("import jax.numpy as jnp\n\nx = jnp.round_(1.5)\n")
    modern = tmp_path / "modern.py"
    modern.write_text("import jax.numpy as jnp\n\nx = jnp.round(1.5)\n")
    found = scan([uses, modern])
    assert found.candidates == {0}


def test_scan_accepts_every_example_and_fixture_with_a_jax_finding():
    """The pre-filter's test is a superset: no file the codemod has a JAX1xx finding for is
    dropped before it, the random-stream note (JAX110) included."""
    texts = [e.before for rule in registry().rules for e in rule.examples]
    texts += [p.read_text() for p in FIXTURES.glob("**/*.in.py")]
    seen, notes = 0, 0
    for text in texts:
        codes = _codes(text)
        if any(c.startswith("JAX") for c in codes):
            seen += 1
            notes += "JAX110" in codes
            assert registry().words.removed.may_use(text), text
    assert seen >= 15 and notes >= 3


@pytest.mark.parametrize(
    "text",
    [
        "import jax\nx = jax.random.normal(key, (3,))\n",
        "import jax.random as jr\nkeys = jr.split(key)\n",
        "from jax import random\nx = random.uniform(key)\n",
        "from jax import (\n    numpy as jnp,\n    random,\n)\nx = random . bits(key)\n",
    ],
)
def test_scan_finds_every_spelling_of_a_call_into_jax_random(text):
    assert SCAN.may_use(text)
    assert not SCAN.may_use_removed(text)


@pytest.mark.parametrize(
    "text",
    [
        "import numpy as np\nimport jax\nx = np.random.rand(3)\n",
        "import random\nimport jax\nx = random.random()\n",
        "import jax\nimport jax.random\n",  # an import, no call
        "from jax.random import PRNGKey\nk = PRNGKey(0)\n",  # a bare name: the rule sees none
    ],
)
def test_scan_passes_over_files_that_call_no_jax_random(text):
    assert not SCAN.may_use(text)


_DRAWS = "import jax\n\nkey = jax.random.PRNGKey(0)\nprint(jax.random.normal(key, (3,)))\n"


def test_the_random_stream_note_is_said_once_a_run(tmp_path):
    """A project of 50 modules that draw random numbers (no legacy name, no removed API: the
    pre-filter selects them, each left byte for byte) hears the JAX110 note once, with the flag
    that restores the old numbers; a module that calls numpy's random is passed over. Once a
    module has something else to migrate, the note goes there, still once (issue 37)."""
    for i in range(50):
        (tmp_path / f"draw_{i:02}.py").write_text(_DRAWS)
    (tmp_path / "plain.py").write_text("import numpy as np\n\nprint(np.random.rand(3))\n")
    assert scan([tmp_path / "draw_00.py", tmp_path / "plain.py"]).candidates == {0}
    result = run(["--check", "."], tmp_path)
    assert result.exit_code == 0, result.output
    assert result.output.count("JAX110") == 1, result.output
    assert "draw_00.py:3:7: JAX110 [note] the project draws random" in result.output
    assert "jax_threefry_partitionable" in result.output
    assert "plain.py" not in result.output
    # (a note is information: never counted as fixed, never a reason to exit 1)
    assert "0 fixed, 0 fixed-with-behaviour-note, 0 compat-fallback, 0 manual; 1 note" in (
        result.output
    )
    run(["."], tmp_path)
    assert (tmp_path / "draw_17.py").read_text() == _DRAWS
    (tmp_path / "taps.py").write_text(
        "import jax\nfrom jax.experimental import host_callback as hcb\n\n\n"
        "def f(key):\n    return hcb.id_tap(print, jax.random.normal(key))\n"
    )
    result = run(["--check", "."], tmp_path)
    assert result.output.count("JAX110") == 1, result.output
    assert "taps.py:6:30: JAX110" in result.output, result.output


def test_the_random_stream_note_of_a_module_with_nothing_else_is_placed_as_in_any_module():
    """Such a module has only its random calls parsed by libcst (found from the scope
    analysis): the note lands where a whole-module migration puts it, after a `# noqa: JAX110`
    on the first call too; a shadowed `jax` is no call into JAX."""
    filler = "".join(f"def helper_{i}(v):\n    return v + {i}\n\n\n" for i in range(5))
    text = (
        "import jax\n\n\n"
        + filler
        + "def local(jax):\n    return jax.random.normal(1)\n\n\n"
        + "def draw(key):\n    return jax.random.normal(key, (3,))  # noqa: JAX110\n\n\n"
        + "def other(key):\n    return jax.random.uniform(key)\n"
    )
    found = migrate_source(text, Options())
    assert found.code == text
    assert [(d.line, d.col, d.code) for d in found.diagnostics] == [(33, 12, "JAX110")]
    # with a removed name beside it, the whole module is read: the same note
    both = migrate_source(text + "y = jax.tree_map(abs, [1])\n", Options())
    assert [(d.line, d.col, d.code) for d in both.diagnostics] == [
        (33, 12, "JAX110"),
        (34, 5, "JAX101"),
    ]


# ------------------------------------------------------------------------------ resolution
def test_partial_parse_rewrites_uses_far_from_any_import():
    """Statements holding a removed name are parsed wherever they are, with the module's
    other statements left as text: the same result as a whole-module parse."""
    filler = "".join(f"def helper_{i}(v):\n    return v + {i}\n\n\n" for i in range(30))
    text = f"import jax\n\n\n{filler}def late(t):\n    return jax.tree_map(helper_3, t)\n"
    result = migrate_source(text, Options(target_jax=(0, 10, 2)))
    assert result.code == text.replace("jax.tree_map", "jax.tree.map")


def test_names_shadowed_in_a_scope_are_left_alone():
    text = textwrap.dedent(
        """\
        import jax


        def run(jax, t):  # a parameter named jax: not the module
            return jax.tree_map(abs, t)


        def other(t):
            return jax.tree_map(abs, t)
        """
    )
    result = migrate_source(text, Options(target_jax=(0, 10, 2)))
    assert result.code.count("jax.tree_map") == 1
    assert result.code.count("jax.tree.map") == 1


# ------------------------------------------------------------------------------ jnp.clip
_ONE_BOUND = textwrap.dedent(
    """\
    import jax.numpy as jnp

    ratio = jnp.clip(jnp.exp(jnp.array([-1.0, 0.5])), a_max=1)
    capped = jnp.clip(
        jnp.arange(4),  # the counts
        a_max=2,
    )
    print(ratio, capped)
    """
)


def test_clip_given_only_its_upper_bound_runs_on_every_version(legacy_python):
    """`jnp.clip(x, a_max=hi)` where the project allows JAX < 0.4.27 (no `max=`): the lower
    bound left out is passed as None, its default in every release, so `jnp.clip(x, None,
    hi)` runs on jax 0.4.30 and on the current JAX and prints what the original printed."""
    result = migrate_source(_ONE_BOUND, Options(target_jax=(0, 4, 16)))
    assert [(d.code, d.level.value) for d in result.diagnostics] == [("JAX102", "fixed")] * 2
    assert result.code == _ONE_BOUND.replace("a_max=1)", "None, 1)").replace(
        "  # the counts\n    a_max=2,", "  # the counts\n    None,\n    2,"
    )

    legacy = _printed(str(legacy_python), _ONE_BOUND)
    assert _printed(str(legacy_python), result.code) == legacy
    assert _printed(sys.executable, result.code) == legacy


def _printed(python: str, code: str, pythonpath: str = "") -> str:
    """What `code` prints when run by `python` (on the CPU; `pythonpath`: where the compat
    runtime is)."""
    env = {"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin", "PYTHONPATH": pythonpath}
    run = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    return run.stdout


# ------------------------------------------------------------------------------ primitives
_CLOSED_CALL = "from jax import core\n\nprint(core.closed_call_p)\n"


@pytest.mark.parametrize(
    "text, after, diagnostics",
    [
        (
            _CLOSED_CALL,
            "import jax\nimport jax.extend.core.primitives\nfrom jax import core\n\n"
            "print(jax.extend.core.primitives.closed_call_p)\n",
            [
                "3:7 JAX107 [fixed] `core.closed_call_p` -> `jax.extend.core.primitives.closed_call_p`"
            ],
        ),
        (
            "from jax.interpreters import pxla\n\nRULES = {pxla.xla_pmap_p: None}\n",
            None,  # unchanged: nothing replaces it
            [
                "3:10 JAX111 [manual] `jax.interpreters.pxla.xla_pmap_p` was removed in JAX "
                "0.10.0: JAX internal with no successor: jax.pmap now traces to a `jit` equation "
                "holding a `shard_map` one, no primitive of its own; import it guarded (`except "
                "ImportError: xla_pmap_p = None`) or stop matching on it"
            ],
        ),
    ],
    ids=["closed_call_p", "xla_pmap_p"],
)
def test_removed_primitives_are_moved_or_reported(text, after, diagnostics):
    """Primitives numpyro 0.15.0 matches on (numpyro/ops/provenance.py's shapes)."""
    result = migrate_source(text, Options(target_jax=(0, 4, 30)))
    assert result.code == (text if after is None else after)
    assert [d.brief() for d in result.diagnostics] == diagnostics


def test_batch_tracer_is_reported_where_it_is_tested():
    """PennyLane 0.26's math/utils.py tests `isinstance(x, batching.BatchTracer)` to detect
    jax.vmap tracing: gone from jax.interpreters.batching, with no public home (issue 36)."""
    text = (
        "from jax.interpreters import batching\n\n\n"
        "def is_batched(x):\n"
        "    return isinstance(x, batching.BatchTracer)\n"
    )
    result = migrate_source(text, NEWEST)
    assert result.code == text
    [brief] = [d.brief() for d in result.diagnostics]
    assert brief.startswith(
        "5:26 JAX109 [manual] `jax.interpreters.batching.BatchTracer` was removed in JAX 0.9.0: "
        "JAX internal with no public home"
    )
    assert "isinstance(x, jax.core.Tracer)" in brief


def test_jax_ad_jvp_tracer_is_renamed_and_runs_on_every_version(legacy_python):
    """PennyLane 0.26 (and equinox) test `isinstance(x, jax.ad.JVPTracer)`: `jax.ad` is gone
    from every release the table covers; `jax.interpreters.ad.JVPTracer` is there on each."""
    text = (
        "import jax\n\n"
        "print(isinstance(1.0, (jax.ad.JVPTracer, jax.core.Tracer)), jax.ad.JVPTracer.__name__)\n"
    )
    result = migrate_source(text, Options(target_jax=(0, 4, 30)))
    assert "jax.ad." not in result.code
    assert [d.brief() for d in result.diagnostics] == [
        "3:24 JAX105 [fixed] `jax.ad` -> `jax.interpreters.ad`",
        "3:61 JAX105 [fixed] `jax.ad` -> `jax.interpreters.ad`",
    ]
    for python in (str(legacy_python), sys.executable):
        assert _printed(python, result.code) == "False JVPTracer\n"


def test_moved_closed_call_p_runs_on_every_version(legacy_python):
    """`jax.extend.core.primitives.closed_call_p` names the same primitive on jax 0.4.30 and
    on the current JAX, where `jax.core.closed_call_p` is gone."""
    migrated = migrate_source(_CLOSED_CALL, Options(target_jax=(0, 4, 30))).code
    legacy = _printed(str(legacy_python), _CLOSED_CALL)
    assert legacy == "closed_call\n"
    assert _printed(str(legacy_python), migrated) == legacy
    assert _printed(sys.executable, migrated) == legacy


# ------------------------------------------------------------------------------ the CLI
_PROGRAM = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp
    from jax.experimental import host_callback as hcb

    y = jnp.clip(jnp.arange(3), a_min=1, a_max=2)
    t = jax.tree_map(abs, [y])
    hcb.id_print(y)
    """
)


def test_rules_are_listed(tmp_path):
    result = run(["--list-rules"], tmp_path)
    for code in [f"JAX1{n:02d}" for n in range(1, 11)]:
        assert code in result.output


def _migrated(tmp_path: Path, name: str, *args: str, config: str = "") -> tuple[str, str]:
    """(the program after `hcmigrate ARGS`, the command's output), in a folder of its own."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "a.py").write_text(_PROGRAM)
    if config:
        (folder / "pyproject.toml").write_text(config)
    output = run([*args, "a.py"], folder).output
    return (folder / "a.py").read_text(), output


def test_on_by_default_and_switched_off_like_every_rule(tmp_path):
    code, output = _migrated(tmp_path, "default")
    # (a folder with no project: no JAX floor stated, so the spellings every JAX has)
    assert "jnp.clip(jnp.arange(3), 1, 2)" in code and "jax.tree_util.tree_map" in code
    assert "JAX101" in output and "JAX102" in output
    code, output = _migrated(tmp_path, "ignore", "--ignore", "JAX102")
    assert "a_min=1, a_max=2" in code and "jax.tree_util.tree_map" in code
    assert "JAX102" not in output
    code, output = _migrated(tmp_path, "select", "--select", "JAX")
    assert "hcb.id_print(y)" in code and "jax.tree_util.tree_map" in code
    assert "HCB" not in output
    code, output = _migrated(tmp_path, "config", config='[tool.hcmigrate]\nignore = ["JAX"]\n')
    assert "a_min=1" in code and "jax.tree_map" in code and "jax.debug.callback" in code
    assert "JAX1" not in output


# ------------------------------------------------------------------------------ --strategy compat
_KEPT_ON_COMPAT = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp
    from jax import tree_map as tmap
    from jax.experimental import host_callback as hcb


    def show(value, transforms):
        print("tap", value)


    @jax.jit
    def step(x):
        x = jnp.clip(x, a_min=0.0, a_max=2.0)
        x = hcb.id_tap(show, x)
        return jax.tree_map(lambda v: v * 2, x)


    out = tmap(lambda v: v + 1, step(jnp.arange(4.0)))
    hcb.barrier_wait()
    print(out)
    """
)


def test_compat_strategy_runs_the_jax_rules_too(tmp_path, legacy_python):
    """A project that keeps host_callback on the compat runtime still needs `jax.tree_map`,
    `jnp.clip(a_max=...)`, `from jax import tree_map` fixed to run on the current JAX: under
    `--strategy compat` the JAX1xx rules run as under the native strategy, and the migrated
    program prints on the current JAX what the original printed on jax 0.4.30."""
    (tmp_path / "prog.py").write_text(_KEPT_ON_COMPAT)
    result = run(["--strategy", "compat", "prog.py"], tmp_path)
    assert result.exit_code == 0, result.output
    code = (tmp_path / "prog.py").read_text()
    assert code == (
        _KEPT_ON_COMPAT.replace("from jax import tree_map", "from jax.tree_util import tree_map")
        .replace(
            "from jax.experimental import host_callback",
            "from hcmigrate_compat import host_callback",
        )
        # (no project: no JAX floor stated, so the spellings every JAX has)
        .replace("a_min=0.0, a_max=2.0", "0.0, 2.0")
        .replace("jax.tree_map(", "jax.tree_util.tree_map(")
    )
    for code_ in ("HCB701", "JAX101", "JAX102"):
        assert code_ in result.output
    assert run(["--strategy", "compat", "prog.py"], tmp_path).output.count("JAX1") == 0

    legacy = _printed(str(legacy_python), _KEPT_ON_COMPAT)
    assert legacy == "tap [0. 1. 2. 2.]\n[1. 3. 5. 5.]\n"
    assert _printed(sys.executable, code, pythonpath=str(REPO)) == legacy


# ------------------------------------------------------------------------------ star imports
_FILLER = "".join(f"def helper_{i}(v):\n    return v + {i}\n\n\n" for i in range(20))
_STAR_NUMPY = (
    "from jax.numpy import *\n\n\n"
    + _FILLER
    + "def bounded(v):\n    return clip(round_(v), a_min=0.5, a_max=2.0)\n\n\n"
    + "print(bounded(array([0.4, 1.6, 2.5])))\n"
)
_STAR_JAX = textwrap.dedent(
    """\
    from jax import *

    print(jax.lax.cond(True, lambda v: v + 1, lambda v: v, numpy.arange(3)))
    """
)


@pytest.mark.parametrize(
    "text, after, briefs",
    [
        (
            _STAR_NUMPY,
            "import jax\n"
            + _STAR_NUMPY.replace(
                "round_(v), a_min=0.5, a_max=2.0", "jax.numpy.round(v), min=0.5, max=2.0"
            ).replace(", NaN)", ", jax.numpy.nan)"),
            [
                "85:12 JAX102 [fixed] `clip(round_(v), a_min=0.5, a_max=2.0)` -> `clip(jax.numpy.round(v), min=0.5, max=2.0)`",
                "85:17 JAX106 [fixed] `round_` (bound by `from jax.numpy import *`) -> `jax.numpy.round`",
            ],
        ),
        (
            _STAR_JAX,
            "import jax\n" + _STAR_JAX,
            ["3:7 JAX103 [fixed] `jax` (bound by `from jax import *`) -> `jax`"],
        ),
    ],
    ids=["jax.numpy", "jax"],
)
def test_names_a_star_import_binds_are_rewritten_and_run(text, after, briefs, legacy_python):
    """`from jax.numpy import *` then `round_(v)`, `clip(v, a_min=...)`, `NaN`; `from jax import
    *` then `jax.lax` (the `jax.jax` alias the star bound): where nothing else binds the name,
    it was the star-imported module's, and the migrated program prints on the current JAX what
    the original printed on jax 0.4.30."""
    result = migrate_source(text, NEWEST)
    assert result.code == after
    assert [d.brief() for d in result.diagnostics] == briefs
    assert migrate_source(result.code, NEWEST).code == result.code
    legacy = _printed(str(legacy_python), text)
    assert _printed(str(legacy_python), result.code) == legacy
    assert _printed(sys.executable, result.code) == legacy


def test_names_a_star_import_binds_are_rewritten_where_legacy_cannot_run():
    """Names gone before jax 0.4.30 (`PRNGKeyArray`) or that its `from jax import *` does not
    bind (`tree_map`, deprecated there): rewritten all the same (they ran on the project's
    older JAX), and the result runs on the current JAX."""
    text = textwrap.dedent(
        """\
        from jax.random import *


        def fresh(k: PRNGKeyArray) -> bool:
            return isinstance(k, PRNGKeyArray)


        print(fresh(PRNGKey(0)))
        """
    )
    result = migrate_source(text, NEWEST)
    assert result.code == "import jax\n" + text.replace("PRNGKeyArray", "jax.Array")
    assert _printed(sys.executable, result.code) == "True\n"
    text = "from jax import *\n\nprint(tree_map(lambda v: v + 1, [1, 2]))\n"
    result = migrate_source(text, NEWEST)
    assert result.code == "import jax\n" + text.replace("tree_map", "jax.tree.map")
    assert _printed(sys.executable, result.code) == "[2, 3]\n"
    text = "from jax.numpy import *\n\nprint(isnan(NaN), NINF)\n"
    result = migrate_source(text, NEWEST)
    assert result.code == "import jax\n" + text.replace("NaN", "jax.numpy.nan").replace(
        "NINF", "-jax.numpy.inf"
    )
    assert _printed(sys.executable, result.code) == "True -inf\n"


@pytest.mark.parametrize(
    "text",
    [
        # another star import may bind the same names
        "from jax.numpy import *\nfrom numpy import *\n\ny = clip(round_(x), a_min=0)\n",
        # bound by the module itself, or a parameter
        "from jax.numpy import *\n\n\ndef clip(x, a_min=0):\n    return x\n\n\n"
        "round_ = round\ny = clip(round_(x), a_min=0)\n",
        "from jax.numpy import *\n\n\ndef h(NINF):\n    return NINF\n",
        # attributes of other values, numpy's own
        "from jax.numpy import *\nimport numpy as np\n\ny = np.clip(x, a_min=0)\n"
        "z = x.clip(a_min=0)\nw = x.round_\n",
        # a star import of numpy alone
        "from numpy import *\n\ny = clip(round_(x), a_min=0)\n",
        # bound by an import of its own: the import is the site, not the use
        "from jax.random import *\nfrom mylib import PRNGKeyArray\n\nk: PRNGKeyArray\n",
    ],
    ids=["two-stars", "own-bindings", "parameter", "attributes", "numpy-star", "own-import"],
)
def test_names_a_star_import_may_not_bind_are_left_alone(text):
    result = migrate_source(text, Options())
    assert result.code == text
    assert result.diagnostics == []


def test_scan_selects_files_using_names_of_a_jax_star_import(tmp_path):
    uses = tmp_path / "uses.py"
    uses.write_text("from jax.numpy import *\n\nx = round_(1.5)\n")
    modern = tmp_path / "modern.py"
    modern.write_text("from jax.numpy import *\n\nx = round(1.5)\n")
    numpy = tmp_path / "numpy_star.py"
    numpy.write_text("from numpy import *\n\nx = round_(1.5)\n")
    assert scan([uses, modern, numpy]).candidates == {0}


# ------------------------------------------------------------------------------ JAX internals
# numpyro 0.15.0's numpyro/ops/provenance.py, in its shapes: it matches jaxpr equations on the
# primitives of jit and pmap and maps with jax.util.safe_map; numpyro allows jax >= 0.4.14.
_INTERNALS = textwrap.dedent(
    """\
    import jax
    from jax import util
    from jax.experimental.pjit import pjit_p
    from jax.interpreters.pxla import xla_pmap_p  # pmap's primitive


    def calls_jit(eqn):
        return eqn.primitive is pjit_p


    def pairs(xs, ys):
        return util.safe_map(lambda a, b: a + b, xs, ys)


    jitted = jax.make_jaxpr(lambda x: jax.jit(lambda y: y + 1)(x))(1.0).jaxpr.eqns[0]
    pmapped = jax.make_jaxpr(jax.pmap(lambda x: x + 1))(jax.numpy.ones((1,))).eqns[0]
    print(calls_jit(jitted), pairs([1, 2], [3, 4]), pmapped.primitive is xla_pmap_p)
    print(xla_pmap_p is None, pmapped.primitive)
    """
)


def test_internals_numpyro_used_run_on_every_release_of_its_range(legacy_python):
    """`pjit_p`, `xla_pmap_p` and `jax.util.safe_map` (numpyro 0.15.0's provenance.py), for a
    project that allows jax 0.4.14: the guarded imports and `list(map(...))` run on jax 0.4.30
    as the original did, and on the current JAX, where jit's primitive still matches and
    pmap's is None (a pmapped function is a `jit` equation there); idempotent."""
    result = migrate_source(_INTERNALS, Options(target_jax=(0, 4, 14)))
    code = result.code
    assert "jax.util" not in code and "from jax import util" not in code
    assert "except ImportError:\n    xla_pmap_p = None\n" in code
    assert "from jax.interpreters.pxla import xla_pmap_p  # pmap's primitive\n" in code
    compile(code, "<migrated>", "exec")
    assert migrate_source(code, Options(target_jax=(0, 4, 14))).code == code
    assert [d.brief().split(" ", 3)[1:3] for d in result.diagnostics] == [
        ["JAX112", "[fixed]"],  # the import of jax.util, gone
        ["JAX111", "[fixed]"],
        ["JAX111", "[fixed-with-behaviour-note]"],
        ["JAX112", "[fixed-with-behaviour-note]"],
    ]
    legacy = "True [4, 6] True\nFalse xla_pmap\n"
    assert _printed(str(legacy_python), _INTERNALS) == legacy
    assert _printed(str(legacy_python), code) == legacy
    assert _printed(sys.executable, code) == "True [4, 6] False\nTrue jit\n"


def test_a_guarded_import_already_there_is_left_as_it_is():
    """The fallback of a guarded import is for the older JAX it was written for: numpyro's
    `try: import jax.extend.linear_util as lu / except ImportError: import jax.linear_util as
    lu` stays (numpyro allows jax 0.4.14, where only the fallback imports), and so does a
    guard the user wrote with a None fallback."""
    text = textwrap.dedent(
        """\
        try:
            import jax.extend.linear_util as lu
        except ImportError:
            import jax.linear_util as lu
        try:
            from jax.experimental.pjit import pjit_p
        except ImportError:
            pjit_p = None
        """
    )
    result = migrate_source(text, Options(target_jax=(0, 4, 14)))
    assert result.code == text and result.diagnostics == []


def test_jaxlib_xla_extension_is_reported_in_every_spelling_with_its_public_homes():
    """jaxlib's extension module (gone from jaxlib 0.6.1): every import of it and every use
    through `jaxlib` is a JAX109 finding naming the public homes of its names; the guard a
    project already wrote (the old import as the fallback, or the renamed module) stays
    silent, and jaxlib's other modules are no finding."""
    text = textwrap.dedent(
        """\
        import jaxlib
        import jaxlib.xla_extension as xe
        from jaxlib import xla_client, xla_extension
        from jaxlib.xla_extension import Device, XlaRuntimeError
        d = jaxlib.xla_extension.Device
        try:
            from jax.errors import JaxRuntimeError
        except ImportError:
            from jaxlib.xla_extension import XlaRuntimeError as JaxRuntimeError
        try:
            from jaxlib.xla_extension import ArrayImpl
        except ImportError:
            from jaxlib._jax import ArrayImpl
        """
    )
    result = migrate_source(text)
    assert result.code == text
    found = sorted((d.line, d.col, d.code) for d in result.diagnostics)
    assert found == [
        (2, 8, "JAX109"),
        (3, 32, "JAX109"),
        (4, 34, "JAX109"),  # (one finding for the statement's names from the module)
        (5, 5, "JAX109"),
    ], result.diagnostics
    for diagnostic in result.diagnostics:
        assert "`jaxlib.xla_extension` was removed in JAX 0.6.1" in diagnostic.message
        for home in ("jax.Device", "jax.Array", "jax.errors.JaxRuntimeError (JAX >= 0.4.34"):
            assert home in diagnostic.message


def test_jax_util_names_with_no_public_home_keep_the_import():
    """`util.unzip2` beside `util.safe_map`: the call is rewritten, the import stays (a manual
    finding); a `safe_map` passed as a value is a manual finding; a local `map` keeps
    `safe_map` as it is."""
    text = textwrap.dedent(
        """\
        from jax import util
        from jax.util import safe_map

        a = util.safe_map(str, [1])
        b, c = util.unzip2([(1, 2)])
        f = safe_map


        def local(map):
            return safe_map(map, [1])
        """
    )
    result = migrate_source(text)
    assert "a = list(map(str, [1]))" in result.code
    assert "return safe_map(map, [1])" in result.code
    assert result.code.startswith("from jax import util\nfrom jax.util import safe_map\n")
    assert [d.brief().split(" ", 3)[:3] for d in result.diagnostics] == [
        ["1:1", "JAX112", "[manual]"],  # (util.unzip2)
        ["2:1", "JAX112", "[manual]"],  # (f = safe_map)
        ["4:5", "JAX112", "[fixed-with-behaviour-note]"],
    ]


def test_added_imports_stay_out_of_a_shim_for_older_jax():
    """numpyro's provenance.py imports jax, then `try: import jax.extend.linear_util as lu /
    except ImportError: import jax.linear_util as lu` (a shim for older JAX, not a guard of
    jax being installed): the import a rewrite needs goes at the top level, not inside the
    `try:`, where a failing first import would skip it."""
    text = textwrap.dedent(
        """\
        import jax
        import jax.core as core

        try:
            import jax.extend.linear_util as lu
        except ImportError:
            import jax.linear_util as lu

        rules = {core.call_p: lu}
        """
    )
    code = migrate_source(text, Options(target_jax=(0, 4, 30))).code
    assert code.startswith(
        "import jax\nimport jax.core as core\nimport jax.extend.core.primitives\n"
    )
    assert "try:\n    import jax.extend.linear_util as lu\nexcept" in code


_CORE_USES = """\
import jax
import jax.core as core

Literal = "a name of the module's own"


def literal_count(jaxpr):
    return sum(isinstance(v, core.Literal) for e in jaxpr.eqns for v in e.invars)


RULES = {core.call_p: "call", core.closed_call_p: "closed_call"}
closed = jax.make_jaxpr(lambda x: x + 1.0)(2.0)
print(literal_count(closed.jaxpr), sorted(RULES.values()), Literal)
"""


def test_moved_core_names_used_as_attributes_run_on_every_release_of_the_range(legacy_python):
    """numpyro's `core.Literal`, `core.call_p`, `core.closed_call_p` where the project allows
    jax 0.4.14 (older than `jax.extend.core`, 0.4.27) and the current JAX has no `jax.core`
    spelling: each becomes the name a module-level guarded import binds (a fresh one where the
    module binds the name itself), and the module prints on jax 0.4.30 and on the current JAX
    what it printed on jax 0.4.30; idempotent."""
    options = Options(target_jax=(0, 4, 14))
    result = migrate_source(_CORE_USES, options)
    code = result.code
    assert "isinstance(v, Literal_1)" in code and "RULES = {call_p: " in code
    assert "    from jax.extend.core import Literal as Literal_1\nexcept ImportError:\n" in code
    assert {d.code for d in result.diagnostics} == {"JAX107"}
    assert {d.level.value for d in result.diagnostics} == {"fixed"}
    assert migrate_source(code, options).code == code
    printed = "1 ['call', 'closed_call'] a name of the module's own\n"
    assert _printed(str(legacy_python), _CORE_USES) == printed
    assert _printed(str(legacy_python), code) == printed
    assert _printed(sys.executable, code) == printed


@pytest.mark.parametrize(
    "text, after",
    [
        (
            "from jax.util import safe_map\n\nx = safe_map(str, [1])\n",
            "x = list(map(str, [1]))\n",  # (no blank line where the import was)
        ),
        (
            "from jax.experimental.pjit import pjit, pjit_p  # jit things\n\nP = (pjit, pjit_p)\n",
            "from jax.experimental.pjit import pjit  # jit things\n\ntry:\n"
            "    from jax.extend.core.primitives import jit_p as pjit_p\nexcept ImportError:\n"
            "    from jax.experimental.pjit import pjit_p\n\nP = (pjit, pjit_p)\n",
        ),
        (
            "from jax.experimental.pjit import pjit_p as P\n",
            "try:\n    from jax.extend.core.primitives import jit_p as P\nexcept ImportError:\n"
            "    from jax.experimental.pjit import pjit_p as P\n",
        ),
        (
            "import jax.experimental.pjit\n\nP = jax.experimental.pjit.pjit_p\n",
            "import jax.experimental.pjit\n\ntry:\n"
            "    from jax.extend.core.primitives import jit_p as pjit_p\nexcept ImportError:\n"
            "    from jax.experimental.pjit import pjit_p\n\n\nP = pjit_p\n",
        ),
        (  # (the module's own guarded import keeps its spacing: only written ones get a blank)
            "import jax\ntry:\n    import scipy\nexcept ImportError:\n    scipy = None\n"
            "x = jax.tree_map(str, [1])\n",
            "import jax\ntry:\n    import scipy\nexcept ImportError:\n    scipy = None\n"
            "x = jax.tree_util.tree_map(str, [1])\n",
        ),
        # negatives: not JAX's
        ("from mypkg import util\n\nx = util.safe_map(f, xs)\n", None),
        ("pjit_p = object()\nxla_pmap_p = None\nRULES = {pjit_p: 1}\n", None),
        ("def safe_map(f, xs):\n    return [f(x) for x in xs]\n\n\ny = safe_map(str, [1])\n", None),
    ],
    ids=[
        "bare-safe_map",
        "pjit_p-beside-pjit",
        "pjit_p-as",
        "pjit_p-spelled-out",
        "own-guard-kept",
        "other-util",
        "own-names",
        "own-def",
    ],
)
def test_internals_in_their_import_styles_and_look_alikes(text, after):
    options = Options(target_jax=(0, 4, 14))
    code = migrate_source(text, options).code
    assert code == (text if after is None else after)
    compile(code, "<migrated>", "exec")
    assert migrate_source(code, options).code == code


def test_guarded_bindings_are_written_under_the_compat_strategy_too():
    """The JAX1xx rules run in the compat strategy's pass too: the guarded imports their
    rewrites name are added there as well (without them, `Literal_1` would be unbound)."""
    options = Options(target_jax=(0, 4, 14), strategy="compat")
    code = migrate_source(_CORE_USES, options).code
    assert "    from jax.extend.core import Literal as Literal_1\n" in code
    assert migrate_source(code, options).code == code
    printed = "1 ['call', 'closed_call'] a name of the module's own\n"
    assert _printed(sys.executable, code) == printed


def test_an_import_of_jax_config_beside_import_jax_goes():
    """`import jax.config` (removed in 0.4.29) beside the module's own `import jax` (diffrax's
    conftest) goes, rather than becoming a second `import jax` (flake8's F811); in one
    statement, `import jax, jax.config` keeps one; alone, it becomes `import jax`."""
    from hcmigrate import migrate_source

    beside = "import jax\nimport jax.config\nimport jax.random as jr\n\njax.config.update('jax_enable_x64', True)\n"
    assert migrate_source(beside).code == (
        "import jax\nimport jax.random as jr\n\njax.config.update('jax_enable_x64', True)\n"
    )
    assert migrate_source("import jax, jax.config\n\nprint(jax.config)\n").code == (
        "import jax\n\nprint(jax.config)\n"
    )
    assert migrate_source("import jax.config\n\nprint(jax.config)\n").code == (
        "import jax\n\nprint(jax.config)\n"
    )


def test_a_written_guard_after_imports_follows_the_projects_lines_after_imports():
    """diffrax sets isort's `lines_after_imports = 2`: the guarded import the run writes after
    an import block is code to isort, so two blank lines stand between them there (one by
    default), and `isort --check` with that setting passes; two before a `def` after it
    (black's)."""
    from hcmigrate.projects.import_style import ImportStyle

    text = (
        "import jax.experimental.pjit\n\n\ndef prim():\n    return jax.experimental.pjit.pjit_p\n"
    )
    guard = (
        "try:\n    from jax.extend.core.primitives import jit_p as pjit_p\nexcept ImportError:\n"
        "    from jax.experimental.pjit import pjit_p\n"
    )
    tail = "\n\ndef prim():\n    return pjit_p\n"
    default = migrate_source(text, Options(target_jax=(0, 4, 14))).code
    assert default == "import jax.experimental.pjit\n\n" + guard + tail, default
    options = Options(target_jax=(0, 4, 14), import_style=ImportStyle(lines_after_imports=2))
    spaced = migrate_source(text, options).code
    assert spaced == "import jax.experimental.pjit\n\n\n" + guard + tail, spaced
    assert migrate_source(spaced, options).code == spaced


def test_an_alias_of_a_guarded_name_goes_only_where_nothing_else_binds_the_name():
    """kfac: `Var = jax.core.Var` at a floor below jax.extend.core: the guarded import binds
    `Var` and the alias goes; where a function also binds `Var` (a parameter), the alias
    stays, beside a guarded import of a fresh name."""
    text = "import jax\n\n# Types\nVar = jax.core.Var\nVars = list[Var]\n"
    result = migrate_source(text, Options(target_jax=(0, 4, 14)))
    assert result.code == (
        "import jax\n\ntry:\n    from jax.extend.core import Var\nexcept ImportError:\n"
        "    from jax.core import Var\n\n# Types\nVars = list[Var]\n"
    ), result.code
    shadowed = text + "\n\ndef f(Var):\n    return Var\n"
    kept = migrate_source(shadowed, Options(target_jax=(0, 4, 14))).code
    assert "Var = Var_1\n" in kept and "import Var as Var_1\n" in kept, kept


def test_a_module_importing_jax_in_a_function_gets_no_import_at_its_top():
    """(PennyLane's math/utils.py, where jax is optional: `import jax` inside `is_abstract`)
    `jax.ad.JVPTracer` -> `jax.interpreters.ad.JVPTracer`, which `import jax` loads: nothing is
    imported at the module's top, which would make jax a hard dependency of the library."""
    source = (
        '"""Optional JAX support."""\n\n\n'
        "def is_abstract(tensor):\n"
        "    import jax\n\n"
        "    return isinstance(tensor, jax.ad.JVPTracer)\n"
    )
    code = migrate_source(source).code
    assert code == source.replace("jax.ad.JVPTracer", "jax.interpreters.ad.JVPTracer"), code
