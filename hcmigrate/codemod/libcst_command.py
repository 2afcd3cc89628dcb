"""hcmigrate as a libcst codemod command, for libcst's own runner:

    python -m libcst.tool codemod -x hcmigrate.codemod.MigrateHostCallbackCommand PATH

(`hcmigrate.codemod.MigrateHostCallbackCommand` loads this module on first use; a plain
`hcmigrate` run never imports libcst.codemod, which is slow to import.)
"""

from __future__ import annotations

import argparse

import libcst as cst
from libcst.codemod import CodemodCommand, CodemodContext

from hcmigrate.options import Options
from hcmigrate.codemod.pipeline import migrate_module


class MigrateHostCallbackCommand(CodemodCommand):
    DESCRIPTION = "Rewrite jax.experimental.host_callback uses onto modern JAX callbacks."

    def __init__(self, context: CodemodContext, strategy: str = "native") -> None:
        super().__init__(context)
        self.options = Options(strategy=strategy)

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument("--strategy", choices=("native", "compat"), default="native")

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        return migrate_module(tree, self.options)[0]
