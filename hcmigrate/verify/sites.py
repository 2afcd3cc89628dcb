"""Which legacy call site a candidate's host call came from.

The migrated code registers its callbacks at other lines than the original (imports added
above, a call rewritten over several lines, a helper the codemod wrote). A candidate source
line is mapped back to the original lines it replaced by aligning the two files line by line
(`difflib`): unchanged lines map one to one, a rewritten block maps to the block it replaced,
and added lines (new imports, helpers) map to nothing, so a registration made inside a helper
is attributed to the caller's line, the next user frame of its stack.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path


def _key(path: str | Path) -> str:
    return os.path.realpath(str(path))


@dataclass
class SiteMap:
    """Candidate files -> the original files they were migrated from."""

    files: dict[str, str] = field(default_factory=dict)  # realpath(candidate) -> original
    _aligned: dict[str, list[tuple[int, int, int, int, str]]] = field(default_factory=dict)
    _lines: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)

    @classmethod
    def for_roots(cls, original: Path, candidate: Path) -> SiteMap:
        """Files at the same relative path under two folders (or two single files)."""
        out = cls()
        if original.is_file() and candidate.is_file():
            out.files[_key(candidate)] = str(original)
            return out
        if original.is_dir() and candidate.is_dir():
            for cand in candidate.rglob("*.py"):
                orig = original / cand.relative_to(candidate)
                if orig.is_file():
                    out.files[_key(cand)] = str(orig)
        return out

    def add(self, candidate: str | Path, original: str | Path) -> None:
        self.files[_key(candidate)] = str(original)

    def _opcodes(self, cand_key: str):
        if cand_key not in self._aligned:
            try:
                a = Path(self.files[cand_key]).read_text(encoding="utf-8").splitlines()
                b = Path(cand_key).read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError):
                self._aligned[cand_key] = []
            else:
                self._lines[cand_key] = (a, b)
                matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
                self._aligned[cand_key] = [
                    (i1, i2, j1, j2, tag) for tag, i1, i2, j1, j2 in matcher.get_opcodes()
                ]
        return self._aligned[cand_key]

    def _closest(self, key: str, i1: int, i2: int, j: int) -> int | None:
        """Within a rewritten block, the original line a candidate line is clearly closest to
        (the rewrite of that very call), or None when no line stands out."""
        if i2 - i1 < 2:
            return None
        a, b = self._lines[key]
        scores = sorted(
            ((difflib.SequenceMatcher(None, a[i], b[j]).ratio(), i) for i in range(i1, i2)),
            reverse=True,
        )
        (top, line), (second, _) = scores[0], scores[1]
        return line if top >= 0.4 and top - second >= 0.1 else None

    def origin(self, file: str, line: int) -> tuple[str, int, int] | None:
        """(original file, first line, last line) a candidate line came from; None when the
        line is not from the original (an added import or helper) or the file is not mapped."""
        key = _key(file)
        if key not in self.files:
            return None
        j = line - 1
        for i1, i2, j1, j2, tag in self._opcodes(key):
            if j1 <= j < j2:
                if tag == "equal":
                    return self.files[key], i1 + (j - j1) + 1, i1 + (j - j1) + 1
                if tag == "replace":
                    best = self._closest(key, i1, i2, j)
                    if best is not None:
                        return self.files[key], best + 1, best + 1
                    return self.files[key], i1 + 1, i2
                return None  # inserted by the migration
        return None

    def legacy_site(self, site: dict | None) -> tuple[str, int, int] | None:
        """The legacy lines a candidate registration came from: the first frame of its stack
        (innermost first) that maps back to the original."""
        if not site:
            return None
        for file, line in site.get("stack") or [[site["file"], site["line"]]]:
            found = self.origin(file, line)
            if found is not None:
                return found
        return None

    def agrees(self, reference_site: dict | None, candidate_site: dict | None) -> bool | None:
        """Does a candidate registration come from the reference's call site? None when it
        cannot be told (either site unknown, or the candidate's not mapped)."""
        if not reference_site:
            return None
        found = self.legacy_site(candidate_site)
        if found is None:
            return None
        file, first, last = found
        ref_file, ref_line = reference_site.get("raw") or (
            reference_site["file"],
            reference_site["line"],
        )
        return _key(file) == _key(ref_file) and first <= ref_line <= last
