"""The codemod: libcst machinery that rewrites host_callback uses with the rules of
hcmigrate.rules (see hcmigrate.codemod.pipeline for the stages of one module).

`migrate` is imported on first use, so that importing a helper module of this package does not
import the whole engine.
"""

from __future__ import annotations


def __getattr__(name: str):
    if name == "migrate":
        from hcmigrate.codemod.pipeline import migrate

        return migrate
    if name == "MigrateHostCallbackCommand":  # libcst's runner entry point, built on first use
        from hcmigrate.codemod.libcst_command import MigrateHostCallbackCommand

        return MigrateHostCallbackCommand
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
