"""A project whose own pins keep current JAX out is told so, where it declares them, as a
manual finding (issue 25: ott-jax 0.4.3 pins `numpy<1.25`, apax `jax<0.5`); hcmigrate never
edits the pin. Real metadata of the installed jax decides what current JAX needs."""

from __future__ import annotations

import importlib.metadata

import pytest

from cli_helpers import run

LEGACY = "from jax.experimental import host_callback as hcb\n\n\ndef f(x):\n    hcb.id_print(x)\n"
JAX = importlib.metadata.version("jax")


@pytest.mark.parametrize(
    "name, text, line",
    [
        (
            "pyproject.toml",
            '[project]\nname = "p"\ndependencies = ["jax>=0.4.20", "numpy>=1.18.4, <1.25.0"]\n',
            "pyproject.toml [project] dependencies: manual: `numpy>=1.18.4, <1.25.0` excludes "
            f"what JAX {JAX} requires (`numpy>=",
        ),
        (
            "pyproject.toml",
            '[tool.poetry]\nname = "p"\n\n[tool.poetry.dependencies]\njax = "^0.4.1"\n',
            "pyproject.toml [tool.poetry.dependencies]: manual: `jax>=0.4.1,<0.5` excludes "
            f"JAX {JAX}, the JAX this migration is for: raise this pin by hand",
        ),
        (
            "setup.cfg",
            "[options]\ninstall_requires =\n    jax==0.4.30\n",
            f"setup.cfg install_requires: manual: `jax==0.4.30` excludes JAX {JAX}",
        ),
    ],
)
def test_a_pin_that_keeps_current_jax_out_is_a_manual_finding(tmp_path, name, text, line):
    (tmp_path / name).write_text(text)
    (tmp_path / "m.py").write_text(LEGACY)
    res = run(["--check", "m.py"], tmp_path)
    assert line in res.stdout, res.output
    assert res.exit_code == 1
    assert (tmp_path / name).read_text() == text  # (never edited)


def test_pins_that_admit_current_jax_say_nothing(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\ndependencies = ["jax>=0.4.26", "numpy>=1.26", "scipy"]\n'
    )
    (tmp_path / "m.py").write_text(LEGACY)
    res = run(["m.py"], tmp_path)
    assert ": manual:" not in res.stdout and res.exit_code == 0, res.output
