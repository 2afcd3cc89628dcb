"""hcmigrate: move JAX code off the removed jax.experimental.host_callback API."""

from hcmigrate.api import MigrationError, MigrationResult, Options, migrate_source
from hcmigrate.diagnostics import Diagnostic, Level

__all__ = ["Diagnostic", "Level", "MigrationError", "MigrationResult", "Options", "migrate_source"]
__version__ = "0.1.0"
