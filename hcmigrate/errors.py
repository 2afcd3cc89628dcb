"""The one family of errors hcmigrate raises for a file it leaves unchanged.

Each carries where the problem is (line, column, notebook cell, when known), so every caller
reports it the same way: `path[:cell N][:line]: message`.
"""

from __future__ import annotations


class HcmigrateError(Exception):
    """A file (or the configuration) hcmigrate cannot process; the message says why."""

    def __init__(
        self,
        message: str,
        line: int | None = None,
        col: int | None = None,
        cell: int | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.line = line
        self.col = col
        self.cell = cell

    def location(self, display: str) -> str:
        """`display` with the cell and line appended, as messages show a location."""
        return (
            display
            + (f":cell {self.cell}" if self.cell else "")
            + (f":{self.line}" if self.line else "")
        )


class MigrationError(HcmigrateError):
    """The source cannot be migrated (it does not parse, or a rewrite would not compile)."""

    def __init__(self, message: str, line: int = 1, col: int = 1, cell: int | None = None):
        super().__init__(message, line, col, cell)


class FileError(HcmigrateError):
    """A file that cannot be read, decoded or written (the caller adds its path)."""


class ConfigError(HcmigrateError):
    """Configuration (pyproject.toml, command-line values) that cannot be used."""


class OutputError(Exception):
    """Standard output cannot be written (a full disk, a closed descriptor): the run stops."""
