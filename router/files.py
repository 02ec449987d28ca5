"""Reading the files users and file systems hand the router: regular files only, and never without limit.

Every file the router reads is read here (``tests/test_reliability_text.py`` checks that no other module opens a
file for reading, with the few exceptions it lists).

A SKILL.md can be a FIFO (``open`` would block until a writer comes), a symlink to ``/dev/zero`` (a read never
ends) or simply huge. Every input file is therefore opened non-blocking, checked to be a regular file with
``fstat`` on the open descriptor (no race between a check and the open), and read up to a cap. Failures are
``OSError`` subclasses, so each caller keeps its own rule for unreadable files (genkit skips the folder, unreal
reports ``read skill ...``, agentskills skips with a warning, the CLI prints one line).
"""

from __future__ import annotations

import errno
import io
import os
import stat
from typing import BinaryIO, Callable

#: Largest SKILL.md read (a skill's instructions are a few KB; the harnesses' own guides say under 500 lines).
MAX_SKILL_FILE_BYTES = 4 * 1024 * 1024
#: Largest token file read (a token is a line of a few dozen characters).
MAX_TOKEN_FILE_BYTES = 64 * 1024
#: Largest catalogue, labelled-requests, config or learned-examples file read.
MAX_INPUT_FILE_BYTES = 64 * 1024 * 1024


class NotRegularFileError(OSError):
    """The path is a FIFO, a device or a socket: skipped as unreadable, never opened for a blocking read."""


class FileTooLargeError(OSError):
    """The file is larger than the cap of its kind."""


def _open_regular(path: str) -> int:
    """A read-only descriptor of the regular file at ``path``: opened non-blocking (a FIFO cannot hold the open),
    then checked with ``fstat`` on that descriptor."""
    return _open_checked(path)[0]


def _open_checked(path: str) -> tuple[int, os.stat_result]:
    """:func:`_open_regular`, and the ``fstat`` it checked."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        found = os.fstat(fd)
        mode = found.st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(errno.EINVAL, "not a regular file", path)
    except BaseException:
        os.close(fd)
        raise
    return fd, found


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """The regular file at ``path`` open for binary reading (for readers that stream: a checksum, ``np.load``);
    raises as :func:`read_bytes` does, with no size cap."""
    path = os.fspath(path)
    return io.open(_open_regular(path), "rb", closefd=True)


def open_text(path: str | os.PathLike[str], *, errors: str = "replace") -> io.TextIOWrapper:
    """:func:`open_regular` decoded as UTF-8, for reading a long file line by line (a decision log)."""
    return io.TextIOWrapper(open_regular(path), encoding="utf-8", errors=errors)


def read_bytes(path: str | os.PathLike[str], limit: int = MAX_INPUT_FILE_BYTES, *, truncate: bool = False) -> bytes:
    """The bytes of the regular file at ``path`` (symlinks followed), at most ``limit`` of them.

    Raises :class:`NotRegularFileError` for anything but a regular file, :class:`IsADirectoryError` for a
    folder, :class:`FileTooLargeError` above ``limit`` (with ``truncate``: the first ``limit`` bytes are returned
    instead), and the OS's own ``OSError`` otherwise.
    """
    return read_bytes_stat(path, limit, truncate=truncate)[0]


def read_bytes_stat(path: str | os.PathLike[str], limit: int = MAX_INPUT_FILE_BYTES, *, truncate: bool = False
                    ) -> tuple[bytes, os.stat_result]:
    """:func:`read_bytes`, and the file's ``fstat`` taken when it was opened, before a byte was read (a write
    after it changes the file's stamp)."""
    path = os.fspath(path)
    fd, found = _open_checked(path)
    try:
        chunks = []
        size = 0
        while size <= limit:  # the file may grow while it is read: stop one byte past the cap
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit and truncate:
            return b"".join(chunks)[:limit], found
        if size > limit:
            # Lower case and in bytes: the Go harnesses' messages lower-case the OS's reason.
            raise FileTooLargeError(errno.EFBIG, f"file is larger than the limit of {limit} bytes", path)
        return b"".join(chunks), found
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike[str], limit: int = MAX_INPUT_FILE_BYTES, *, errors: str = "strict") -> str:
    """:func:`read_bytes` decoded as UTF-8 (strict: ``UnicodeDecodeError`` on invalid bytes; ``errors="replace"``:
    U+FFFD in their place), with line ends translated as ``open(path, encoding="utf-8")`` translates them (CRLF
    and CR become LF)."""
    return read_bytes(path, limit).decode("utf-8", errors).replace("\r\n", "\n").replace("\r", "\n")


def read_user_text(path: str | os.PathLike[str], what: str, error: Callable[[str], Exception], *,
                   missing: str | None = None, not_utf8: str = "save it as UTF-8",
                   limit: int = MAX_INPUT_FILE_BYTES, errors: str = "strict") -> str:
    """:func:`read_text` of a file a user named, every failure turned into ``error`` with one line that names the
    file and what it is (``what``)::

        {what} '{path}' does not exist: {missing}                          (only when ``missing`` is given)
        {what} '{path}' cannot be read: {the OS's reason}
        {what} '{path}' cannot be read: not UTF-8 ({reason} at byte {n}); {not_utf8}
    """
    shown = os.fspath(path)
    try:
        return read_text(path, limit, errors=errors)
    except FileNotFoundError as exc:
        if missing is not None:
            raise error(f"{what} '{shown}' does not exist: {missing}") from None
        raise error(f"{what} '{shown}' cannot be read: {describe_os_error(exc)}") from None
    except OSError as exc:
        raise error(f"{what} '{shown}' cannot be read: {describe_os_error(exc)}") from None
    except UnicodeDecodeError as exc:
        raise error(f"{what} '{shown}' cannot be read: not UTF-8 ({exc.reason} at byte {exc.start}); "
                    f"{not_utf8}") from None


def describe_os_error(exc: OSError) -> str:
    """A short reason for an OSError, without the path it already names elsewhere."""
    return exc.strerror or str(exc)
