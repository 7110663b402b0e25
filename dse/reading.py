"""The one way dse reads a file a user names: a regular file, at most a named size, as UTF-8 text.

Every spec (workloads, systems, catalogs, spaces, objectives, studies) and every data file (the
measurements CSV, a calibration ensemble's JSON) is read here, so that a mistaken or hostile path
ends in one line instead of a hang or a ``MemoryError``:

- a named pipe would block ``open`` forever and a device (``/dev/zero``, ``/dev/urandom``) never
  ends, so anything but a regular file is refused before a byte is read. The file is opened
  without blocking and checked on the open descriptor, so a path swapped for a pipe between a
  check and the open cannot slip through;
- at most ``max_bytes`` are read (the limits are in :mod:`dse.limits` with their reasons);
  a file larger than that, or one that grows past it while read, is refused;
- text must be UTF-8 without NUL bytes: a binary file (a journal, an archive, random bytes) is
  refused as such rather than reported as a parse error deep inside it; a leading UTF-8
  byte-order mark is dropped.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from dse.errors import DseInputError

_KINDS = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def _size_text(n: int) -> str:
    """A byte count for an error line: whole MiB as such, else bytes."""
    return f"{n // 2**20} MiB" if n >= 2**20 and n % 2**20 == 0 else f"{n:,} bytes"


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_bytes(path: Path, max_bytes: int, source: str = "") -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them; a one-line
    :class:`DseInputError` naming ``source`` (default: the path) for a missing or unreadable
    file, anything but a regular file, or a file larger than ``max_bytes``."""
    name = source or str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise DseInputError(name, "", "file not found") from None
    except IsADirectoryError:
        raise DseInputError(name, "", "is a directory, not a file") from None
    except OSError as exc:
        raise DseInputError(name, "", f"cannot read: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise DseInputError(name, "", f"is {_kind(mode)}, not a regular file; dse reads only "
                                "regular files")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise DseInputError(name, "", f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise DseInputError(name, "", f"larger than {_size_text(max_bytes)}, the limit for this "
                            "kind of file (dse.limits)")
    return data


def read_text(path: Path, max_bytes: int, source: str = "") -> str:
    """:func:`read_bytes` decoded as UTF-8; binary content (invalid UTF-8 or a NUL byte) is
    refused with one line giving the first offending byte's offset."""
    data = read_bytes(path, max_bytes, source)
    name = source or str(path)
    nul = data.find(b"\0")
    if nul >= 0:
        raise DseInputError(name, "", f"binary content (a NUL byte at offset {nul}); expected "
                            "UTF-8 text")
    try:
        # A leading byte-order mark (Windows editors write one) is no content: dropped, where
        # TOML's parser read it as "Invalid statement (line 1, column 1)".
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DseInputError(name, "", f"not UTF-8 text (byte {exc.start}); expected UTF-8 "
                            "text") from None
