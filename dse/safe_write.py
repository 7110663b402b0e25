"""Writing a file so that nothing is lost: every file dse writes goes through :func:`write_file`.

The bytes go to a new temporary file in the target's folder (created with ``O_EXCL``, so it is
never someone else's file), are flushed and fsynced, and only then take the target's name in one
``rename``: a full disk, a read-only folder or a kill mid-write leaves the previous file exactly
as it was (and no temporary file behind), never a truncated one. A target that is a symbolic
link is refused (writing through it would overwrite whatever it points to, a rename would
replace the link), as is one that is not a regular file (``/dev/null``, a folder).

Two meanings of an existing target:

- ``replace=True``: a page regenerated in place (``dse report``, ``evaluate --html``, caches):
  the new file replaces the old one atomically, keeping its permission bits.
- ``replace=False``: a new artefact (``dse repair``'s output, ``dse export``): an existing file is
  never replaced (the new name is taken with ``link``, which fails if the name exists, so not even
  a file created meanwhile is lost).

A file dse changes in place (a journal it appends to, its lock files) is opened by
:func:`open_in_place`, which refuses a link the same way.

Every failure is a :class:`~dse.errors.DseInputError` naming the file: one line for the CLI.
This module is shared by every layer (like :mod:`dse.errors`), since the search, the outputs and
the calibration all write files.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

from dse.errors import DseInputError

_DIR_FSYNC_UNSUPPORTED = (errno.EINVAL, errno.ENOTSUP, errno.EBADF, errno.EACCES)
"""Errors of fsync on a folder that mean the file system does not do it (the rename stands)."""


def check_target(path: Path, replace: bool, hint: str = "") -> None:
    """Refuse ``path`` as a target: a symbolic link, not a regular file, or (without ``replace``)
    an existing file; ``hint`` says what to do about an existing one. Checked before a command's
    work, so a refusal costs nothing; :func:`write_file` checks again."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _failure(path, exc, "nothing was written") from None
    if stat.S_ISLNK(st.st_mode):
        raise DseInputError(str(path), "", f"is a symbolic link (to {os.readlink(path)}); dse "
                            "does not write through links: remove it or write elsewhere")
    if not stat.S_ISREG(st.st_mode):
        raise DseInputError(str(path), "", "exists and is not a regular file; dse only writes "
                            "files (choose another path)")
    if not replace:
        raise DseInputError(str(path), "", "already exists and is left as it is; "
                            + (hint or "pass --force to replace it, or write elsewhere"))


def open_in_place(path: Path, flags: int, mode: int = 0o644) -> int:
    """Open ``path`` to change it in place (a journal appended to or cut, a lock file), never
    through a link: ``O_NOFOLLOW``, so a link put there at any time is refused in the one line
    :func:`check_target` gives, as is anything but a regular file. ``flags`` are :func:`os.open`'s
    (``O_CREAT`` creates a missing file, never a link's target)."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            check_target(path, True)  # a link: says where it points
        raise _failure(path, exc, "nothing was written") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise DseInputError(str(path), "", "exists and is not a regular file; dse only writes "
                            "files (choose another path)")
    return fd


def write_file(path: Path, data: bytes | str, replace: bool = True, hint: str = "",
               durable: bool = True) -> Path:
    """Write ``data`` (text is written as UTF-8) to ``path`` through a fsynced temporary file and
    one rename (see the module); the folder is created if missing. With ``replace=False`` an
    existing ``path`` is refused (``hint`` says what to do instead). ``durable=False`` skips the
    fsyncs (for caches checked on reading: a power cut may then lose the new file, never leave a
    partial one under the name). Returns ``path``.

    Raises :class:`DseInputError` naming the file when it cannot be written; the previous file,
    if any, is then left as it was."""
    check_target(path, replace, hint)
    body = data.encode("utf-8") if isinstance(data, str) else data
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _failure(Path(exc.filename or folder), exc, "nothing was written") from None
    tmp, fd = _new_temporary(path)
    try:
        _fill(fd, body, path, durable)
        _rename(tmp, path, replace, hint)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        _sync_folder(folder)
    return path


def _new_temporary(path: Path) -> tuple[Path, int]:
    """A new file beside ``path`` (a hidden name no one else uses), open for writing."""
    mode = 0o666  # as open() creates files: the umask applies
    with contextlib.suppress(OSError):
        mode = stat.S_IMODE(os.stat(path, follow_symlinks=False).st_mode)  # a replaced file's bits
    for _ in range(8):
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
        except FileExistsError:
            continue
        except OSError as exc:
            raise _failure(path, exc, _kept(path)) from None
    raise DseInputError(str(path), "", "cannot create a temporary file beside it")


def _fill(fd: int, body: bytes, path: Path, durable: bool) -> None:
    """Write all of ``body`` to ``fd``, fsync it (``durable``) and close it."""
    try:
        with os.fdopen(fd, "wb", closefd=True) as f:
            f.write(body)
            f.flush()
            if durable:
                os.fsync(f.fileno())
    except OSError as exc:
        raise _failure(path, exc, _kept(path)) from None


def _rename(tmp: Path, path: Path, replace: bool, hint: str) -> None:
    """Give ``tmp`` the name ``path``: replacing it (``replace``), else only if it is free."""
    try:
        if replace:
            check_target(path, True)  # a link or device put there meanwhile is not replaced
            os.replace(tmp, path)
            return
        try:
            os.link(tmp, path)
        except FileExistsError:
            check_target(path, False, hint)  # says what is there
            raise
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                raise
            # A file system without hard links (FAT, some network mounts): check, then rename.
            check_target(path, False, hint)
            os.rename(tmp, path)
            return
        os.unlink(tmp)
    except OSError as exc:
        raise _failure(path, exc, _kept(path)) from None


def _sync_folder(folder: Path) -> None:
    """Make the rename durable (a crash after it keeps the new name); file systems that cannot
    fsync a folder are left to their own ordering."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _DIR_FSYNC_UNSUPPORTED:
            raise _failure(folder, exc, "the file was written but its folder not synced") from None
    finally:
        os.close(fd)


def _kept(path: Path) -> str:
    return "the previous file is left as it was" if path.exists() else "nothing was written"


def _failure(path: Path, exc: OSError, outcome: str) -> DseInputError:
    """The one-line error for an ``OSError`` while writing ``path``."""
    reason = exc.strerror or type(exc).__name__
    if exc.errno == errno.ENOSPC:
        reason = "the disk is full (No space left on device)"
    elif exc.errno == errno.EROFS:
        reason = "the file system is read-only"
    return DseInputError(str(path), "", f"cannot write: {reason}; {outcome}")
