"""Reading and writing source files without losing a byte.

* Only regular files of at most MAX_FILE_BYTES are read (read_regular): a FIFO, a socket or a
  device is refused without blocking, before a byte is read; so is a file too large.
* Reading keeps the exact bytes' meaning: PEP 263 coding cookies, a UTF-8 BOM and the line
  endings (CRLF, LF, mixed) all survive a round trip, because text is decoded without newline
  translation and re-encoded with the same codec (and BOM).
* Writing is atomic: the new text goes to a temporary file in the same folder, gets the old
  file's mode bits (and owner and group, where this process may set them), is flushed to disk,
  and replaces the old file with ``os.replace``. Just before the replace the old file is checked
  again; if it changed since it was read, nothing is written. Where a replace would lose
  something (hard links, an owner or group it cannot give), the checked file is overwritten in
  place instead (see write_atomic). A file reached through a symlink is never written.
* Temporary files name the process writing them; those whose process is gone are removed by
  a later run (remove_stale_temp_files).
"""

from __future__ import annotations

import codecs
import errno
import hashlib
import io
import functools
import os
import re
import signal
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path

from hcmigrate.errors import FileError

TEMP_SUFFIX = ".hcmigrate-tmp"


def printable(path: str) -> str:
    """`path` as messages show it: a file name that is not valid UTF-8 (its undecodable bytes
    are held as surrogates, PEP 383) gets them as `\\xNN` escapes, so it can be printed and
    written into JSON; other names are unchanged."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # (a surrogate that stands for no byte)
            return path.encode("utf-8", "backslashreplace").decode("utf-8")
    return path


@dataclass(frozen=True)
class Snapshot:
    """What the file looked like when it was read: checked again right before replacing it."""

    mtime_ns: int
    size: int
    inode: int
    digest: str


@dataclass
class SourceFile:
    path: Path
    text: str  # decoded, newlines untranslated, BOM removed
    encoding: str  # codec used to decode (and to encode the result)
    bom: bool
    raw: bytes
    snapshot: Snapshot

    def encode(self, text: str) -> bytes:
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data


def _snapshot(st: os.stat_result, data: bytes) -> Snapshot:
    return Snapshot(st.st_mtime_ns, st.st_size, st.st_ino, hashlib.sha1(data).hexdigest())


# Files larger than this are refused (named, exit 2): no real source file comes near it, and a
# file that did (or a device that never ends) would only exhaust memory in the parser.
MAX_FILE_BYTES = 32 * 1024 * 1024

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words (for messages)."""
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def too_large(size: int, limit: int = MAX_FILE_BYTES) -> str:
    return (
        f"file too large ({size:,} bytes; the limit is {limit // (1024 * 1024)} MiB); not processed"
    )


def open_regular(path: str | Path, limit: int = MAX_FILE_BYTES) -> int:
    """A read-only descriptor of `path`, which must be a regular file of at most `limit` bytes;
    FileError otherwise. Opening never blocks: a FIFO is opened non-blocking and refused, a
    device (/dev/zero) is refused before a byte is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except PermissionError:
        raise FileError("permission denied (file is not readable)") from None
    except IsADirectoryError:
        raise FileError("is a directory") from None
    except FileNotFoundError:
        if os.path.islink(path):
            raise FileError("broken symlink or symlink loop") from None
        raise FileError("no such file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileError("broken symlink or symlink loop") from None
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO that refuses non-blocking opens
            raise FileError("not a regular file (a socket or FIFO); not read") from None
        raise FileError(f"cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            if stat.S_ISDIR(st.st_mode):
                raise FileError("is a directory")
            raise FileError(f"not a regular file ({kind_of(st.st_mode)}); not read")
        if st.st_size > limit:
            raise FileError(too_large(st.st_size, limit))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_fd(fd: int, limit: int = MAX_FILE_BYTES) -> bytes:
    """All of an open file's bytes, at most `limit` (a file that grows past it is refused)."""
    chunks, total = [], 0
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise FileError(too_large(total, limit))
    return b"".join(chunks)


def read_regular(path: str | Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of `path`, a regular file of at most `limit` bytes; FileError otherwise (a
    FIFO, a device, a socket, a folder, a file too large, an unreadable one). Never blocks."""
    return _read_snapshot(path, limit)[0]


def _read_snapshot(path: str | Path, limit: int = MAX_FILE_BYTES) -> tuple[bytes, Snapshot]:
    fd = open_regular(path, limit)
    try:
        data = read_fd(fd, limit)
        return data, _snapshot(os.fstat(fd), data)
    except OSError as exc:
        raise FileError(f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_bytes(path: Path) -> bytes:
    return read_regular(path)


def looks_binary(data: bytes) -> bool:
    return b"\x00" in data[:8192]


def decode_python(data: bytes) -> tuple[str, str, bool]:
    """Decode Python source bytes as the interpreter would. Returns (text, encoding, bom)."""
    if looks_binary(data):
        raise FileError("binary file (contains NUL bytes), not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if _has_cookie(data):
            raise FileError(f"bad coding cookie: {exc}") from None
        encoding = "utf-8"  # no cookie: the decode below explains what is wrong
    bom = data.startswith(codecs.BOM_UTF8)
    body = data[len(codecs.BOM_UTF8) :] if bom else data
    codec = "utf-8" if encoding == "utf-8-sig" else encoding
    try:
        text = body.decode(codec)
    except UnicodeDecodeError as exc:
        line = body[: exc.start].count(b"\n") + 1
        if codec == "utf-8" and not _has_cookie(data):
            raise FileError(
                f"not valid UTF-8 (byte 0x{body[exc.start]:02x} at line {line}) and no PEP 263 coding "
                "cookie; add e.g. '# -*- coding: latin-1 -*-' or re-encode the file as UTF-8",
                line=line,
            ) from None
        raise FileError(
            f"cannot decode as {encoding} (line {line}): {exc.reason}", line=line
        ) from None
    return text, codec, bom


def _has_cookie(data: bytes) -> bool:
    import re

    first_two = b"\n".join(data.splitlines()[:2])
    return re.search(rb"^[ \t\f]*#.*?coding[:=]", first_two, re.MULTILINE) is not None


def decode_utf8(data: bytes) -> tuple[str, str, bool]:
    """Decode a UTF-8 text file (notebooks). Returns (text, encoding, bom)."""
    bom = data.startswith(codecs.BOM_UTF8)
    body = data[3:] if bom else data
    try:
        return body.decode("utf-8"), "utf-8", bom
    except UnicodeDecodeError as exc:
        raise FileError(f"not valid UTF-8: {exc.reason} at byte {exc.start}") from None


def read_source(path: Path, *, notebook: bool = False) -> SourceFile:
    data, snap = _read_snapshot(path)
    text, encoding, bom = decode_utf8(data) if notebook else decode_python(data)
    return SourceFile(path, text, encoding, bom, data, snap)


def check_writable(path: Path) -> None:
    """Raise FileError when `path` must not be written (symlink, read-only)."""
    if path.is_symlink():
        raise FileError(
            f"is a symlink (to {os.readlink(path)}); not written through, pass the real file"
        )
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise FileError("not a regular file")
    if not os.access(path, os.W_OK):
        raise FileError("read-only file, not written (make it writable to migrate it)")


def temp_name_prefix(path: Path) -> str:
    """`.NAME.PID.`: a temporary file names the process writing it, so a later run can tell a
    temporary file left by a process that died (removed, see remove_stale_temp_files) from one
    that a running process is still writing."""
    return f".{path.name}.{os.getpid()}."


_TEMP_PID = re.compile(r"^\..+\.(\d+)\.[^.]+" + re.escape(TEMP_SUFFIX) + "$")


def stale_temp_file(path: str) -> bool:
    """Whether `path` is a temporary file of ours whose writer is no longer running."""
    m = _TEMP_PID.match(os.path.basename(path))
    if m is None:
        return False
    pid = int(m.group(1))
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # (alive, another user's)
        return False
    return False


def remove_stale_temp_files(paths) -> list[str]:
    """Remove those of `paths` (temporary files met while walking) that a dead process left
    behind (a run killed with SIGKILL, a machine that lost power); returns those removed."""
    removed = []
    for path in paths:
        if stale_temp_file(path):
            try:
                os.unlink(path)
                removed.append(path)
            except OSError:
                pass
    return removed


# Signals that stop a run (the CLI turns them into an interruption): held back while a file is
# overwritten in place, so that an interruption never leaves it half written.
_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


def _stop_signals_held(write):
    """`write` with the stop signals held back from the temporary file's creation to its
    end (renamed into place or removed): an interruption lands after it, so a run stopped by
    Ctrl-C leaves no temporary file (a -j2 run interrupted between `mkstemp` and the `try`
    that removes it left one) and every file wholly old or new."""

    @functools.wraps(write)
    def held(*args, **kwargs):
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            return write(*args, **kwargs)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    return held


@_stop_signals_held
def write_atomic(source: SourceFile, new_text: str) -> None:
    """Replace `source.path` with `new_text` if the file did not change meanwhile.

    The new bytes go to a temporary file in the same folder first (flushed to disk: the disk
    has room for them), then the file is checked again. Normally the temporary file then
    replaces the file (atomic), with the file's mode and, where this process may set them
    (root), its owner and group. When that would lose something, the file is instead
    overwritten in place, as black and ruff do, which keeps its inode: a file with several hard
    links (a replace would split them), or one whose owner or group this process cannot give
    the new file (a replace by another user would change them). Stop signals are held back
    during that write, and if it fails the old bytes are written back."""
    path = source.path
    check_writable(path)
    data = source.encode(new_text)
    st = os.stat(path)
    mode = stat.S_IMODE(st.st_mode)
    fd, tmp = tempfile.mkstemp(prefix=temp_name_prefix(path), suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
            in_place = st.st_nlink > 1 or not _give_owner(fh.fileno(), st)
        os.chmod(tmp, mode)
        _ensure_unchanged(source)
        if in_place:
            _write_in_place(path, data, source.raw)
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


@_stop_signals_held
def create_atomic(path: Path, data: bytes, like: Path | None = None) -> None:
    """Create the file `path` with `data`, never over anything by that name (FileExistsError).
    The bytes go to a temporary file in the same folder first (flushed to disk), which is then
    linked to `path`: the file appears whole or not at all. Its mode is that of `like` (a file
    beside it: the package's `__init__.py`), else what the umask leaves of 0o666."""
    if like is not None:
        mode = stat.S_IMODE(os.stat(like).st_mode)
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=temp_name_prefix(path), suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        try:
            os.link(tmp, path)  # (FileExistsError where anything has that name)
        except FileExistsError:
            raise
        except OSError:  # (a file system without hard links: created, then written)
            out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
            try:
                _overwrite(out, data)
            finally:
                os.close(out)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _give_owner(fd: int, st: os.stat_result) -> bool:
    """Give the new file the old one's owner and group; False where that is not allowed."""
    now = os.fstat(fd)
    if (now.st_uid, now.st_gid) == (st.st_uid, st.st_gid):
        return True
    try:
        os.fchown(fd, st.st_uid, st.st_gid)
    except OSError:
        return False
    return True


def _write_in_place(path: Path, data: bytes, old: bytes) -> None:
    """Overwrite `path`'s bytes with `data` (same inode: hard links, owner, group, ACLs kept)."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise FileError("not a regular file any more; not written")
            try:
                _overwrite(fd, data)
            except OSError:
                _overwrite(fd, old)  # (best effort: put the old bytes back)
                raise
        finally:
            os.close(fd)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _overwrite(fd: int, data: bytes) -> None:
    os.lseek(fd, 0, os.SEEK_SET)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.ftruncate(fd, len(data))
    os.fsync(fd)


def _ensure_unchanged(source: SourceFile) -> None:
    path = source.path
    try:
        _, snap = _read_snapshot(path)
    except FileError as exc:
        raise FileError(
            f"file disappeared or became unreadable during the run: {exc.message}"
        ) from None
    except OSError as exc:
        raise FileError(
            f"file disappeared or became unreadable during the run: {exc.strerror}"
        ) from None
    old = source.snapshot
    if snap.digest != old.digest or snap.inode != old.inode or snap.mtime_ns != old.mtime_ns:
        raise FileError("file changed on disk while it was being migrated; not written (run again)")
