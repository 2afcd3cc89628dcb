"""``compat``: the import name hcmigrate's codemod writes for the compat runtime.

The runtime is the package ``hcmigrate_compat`` (its own distribution, ``hcmigrate-compat``,
for libraries; see docs/compat.md). This package makes ``import compat``,
``from compat import host_callback``, ``import compat.X`` and ``python -m compat SCRIPT``
resolve to it: ``compat`` *is* the module ``hcmigrate_compat`` and ``compat.X`` is
``hcmigrate_compat.X`` (the same objects: one runtime, one primitive registration per
process). Importing it imports no JAX.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys

_RUNTIME = "hcmigrate_compat"


def _import_runtime():
    try:
        return importlib.import_module(_RUNTIME)
    except ImportError:
        # This folder was loaded by path with its parent not on sys.path (hcmigrate verify
        # does so): the runtime is the sibling package.
        folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), _RUNTIME)
        spec = importlib.util.spec_from_file_location(
            _RUNTIME, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder]
        )
        if spec is None:
            raise
        module = importlib.util.module_from_spec(spec)
        sys.modules[_RUNTIME] = module
        spec.loader.exec_module(module)
        return module


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module):
        pass  # executed under its own name


class _SubmoduleAlias(importlib.abc.MetaPathFinder):
    """``compat.X`` -> the module ``hcmigrate_compat.X`` itself (``compat.__main__`` stays a
    file that ``python -m compat`` runs)."""

    def find_spec(self, fullname, path=None, target=None):
        name, _, rest = fullname.partition(".")
        if name != __name__ or not rest or rest == "__main__":
            return None
        target = f"{_RUNTIME}.{rest}"
        if importlib.util.find_spec(target) is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(target))


if not any(type(f).__name__ == "_SubmoduleAlias" for f in sys.meta_path):
    sys.meta_path.insert(0, _SubmoduleAlias())
sys.modules[__name__] = _import_runtime()
