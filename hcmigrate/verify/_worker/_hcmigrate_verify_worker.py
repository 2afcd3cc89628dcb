"""The `hcmigrate verify --pytest` recorder inside a pytest-xdist worker.

pytest imports this module by name in every process of the run (`PYTEST_PLUGINS`; its folder,
which holds nothing else, is on `PYTHONPATH`). In the main process it does nothing: the runner
(`../_runner.py`) already records there. In an xdist worker (`PYTEST_XDIST_WORKER` is set
before pytest starts) it loads the runner by file path, opens the worker's own trace stream
(`$HCMIGRATE_VERIFY_TRACE.<worker>.<pid>`) and installs the import hooks before any test module
imports jax, then registers the recorder plugin. Standard library only, as the runner.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys

_RUNNER_NAME = "_hcmigrate_verify_runner"
_worker = os.environ.get("PYTEST_XDIST_WORKER")
_trace = os.environ.get("HCMIGRATE_VERIFY_TRACE")
# Only the recorded run's own workers (its children), not a pytest a test starts in turn.
if os.environ.get("HCMIGRATE_VERIFY_PARENT") != str(os.getppid()):
    _worker = None
_runner = None
_plugin = None

if _worker and _trace and not getattr(sys, "pycache_prefix", None):
    sys.dont_write_bytecode = True  # never write into the original's folder

if _worker and _trace and _RUNNER_NAME not in sys.modules:
    _here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    _spec = importlib.util.spec_from_file_location(_RUNNER_NAME, os.path.join(_here, "_runner.py"))
    _runner = importlib.util.module_from_spec(_spec)
    sys.modules[_RUNNER_NAME] = _runner
    _spec.loader.exec_module(_runner)
    _options = json.loads(os.environ.get("HCMIGRATE_VERIFY_OPTIONS", "{}"))
    _runner.start_worker(f"{_trace}.{_worker}.{os.getpid()}", _worker, _options)


def pytest_configure(config):
    global _plugin
    if _runner is not None and _plugin is None:
        _plugin = _runner.load_pytest_plugin().RecorderPlugin(_runner)
        config.pluginmanager.register(_plugin, "hcmigrate-verify-recorder")
        if _plugin.follower is not None:
            config.pluginmanager.register(_plugin.follower, "hcmigrate-verify-follower")


def pytest_unconfigure(config):
    if _runner is not None:
        _runner.end_worker(_plugin)
