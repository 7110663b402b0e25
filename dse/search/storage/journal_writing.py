"""A study's journal file opened for writing: Optuna's ``JournalFileBackend`` with dse's check on
every record (:class:`CheckedJournalBackend`), written under an ``flock`` (:class:`FlockLock`;
Optuna's default symlink lock outlives a SIGKILLed writer), read through a storage whose queue
look-up does not reread the study (:class:`QueueJournalStorage`), checked before it is opened and
its torn tail cut off (:func:`journal_storage`, :func:`repair_journal_tail`).

Safe for several processes on one host; SQLite is unsafe for several processes. Measured on this
2-core machine under load (``benchmarks/bench_study.py``): about 15 ms per trial on the journal for
the default study, most of it Optuna (sampling and one fsynced append per parameter); SQLite about
87 ms per trial.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Container
from pathlib import Path
from typing import Any

from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import FrozenTrial, TrialState

from dse.errors import DseInputError
from dse.safe_write import check_target, open_in_place
from dse.search import _optuna
from dse.search._optuna import BaseJournalFileLock
from dse.search.storage.journal_check import check_journal
from dse.search.storage.journal_format import (
    LOCK_SUFFIX,
    extent_text,
    first_line,
    record_line,
)

FIRST_LINE_BYTES = 1 << 16
"""The most of a journal's first line read to name it in its extent: a study creation record is a
few hundred bytes."""


class CheckedJournalBackend(JournalFileBackend):
    """Optuna's journal file with each record written with dse's check (see the module).

    Under the write lock it counts the lines other writers added since its last write (reading
    only those bytes) and numbers its own from there, and after each append keeps the journal's
    extent in the lock file (:meth:`FlockLock.keep_extent`); reads are Optuna's. The file is
    opened without following a link (:func:`dse.safe_write.open_in_place`), and created so
    before Optuna's own constructor would create a missing one through a dangling link."""

    def __init__(self, path: str, lock: BaseJournalFileLock) -> None:
        os.close(open_in_place(Path(path), os.O_WRONLY | os.O_CREAT))
        super().__init__(path, lock_obj=lock)
        self._path = path
        self._write_lock = lock
        self._counted = (0, 0)
        """(bytes, lines) of the file as this writer last counted or wrote them."""

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        self._write_lock.acquire()
        try:
            fd = open_in_place(Path(self._path), os.O_RDWR | os.O_APPEND | os.O_CREAT)
            with os.fdopen(fd, "a+b") as f:
                size = os.fstat(fd).st_size
                first = self._lines_in(fd, size)
                data = b"".join(record_line(log, first + i) for i, log in enumerate(logs))
                f.write(data)
                f.flush()
                os.fsync(fd)
                self._counted = (size + len(data), first + len(logs))
                if isinstance(self._write_lock, FlockLock):
                    self._write_lock.keep_extent(fd, first + len(logs))
        finally:
            self._write_lock.release()

    def _lines_in(self, fd: int, size: int) -> int:
        """Lines in the first ``size`` bytes of the file open as ``fd`` (counted on from the last
        count when the file still ends a line there; afresh when it was cut or replaced)."""
        offset, lines = self._counted
        if offset > size or (offset and os.pread(fd, 1, offset - 1) != b"\n"):
            offset, lines = 0, 0
        while offset < size:
            chunk = os.pread(fd, min(size - offset, 1 << 20), offset)
            if not chunk:
                break
            lines += chunk.count(b"\n")
            offset += len(chunk)
        return lines


class FlockLock(BaseJournalFileLock):
    """The journal's write lock as an ``flock`` on ``FILE.write.lock``.

    Optuna's default lock is a symlink that a SIGKILLed writer leaves behind: the next run then
    waits out its 30-second grace period. The kernel drops an ``flock`` when its process dies.
    (Processes that open the same journal with Optuna's default lock are not excluded by this
    one; readers such as optuna-dashboard take no lock.)
    """

    def __init__(self, journal: str) -> None:
        self.path = journal + LOCK_SUFFIX
        self._fd: int | None = None
        self._first: bytes | None = None
        """The journal's first line, once read (what its extent names it by)."""

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "_fd": None, "_first": None}

    def acquire(self) -> bool:
        if self._fd is None:
            self._fd = open_in_place(Path(self.path), os.O_RDWR | os.O_CREAT)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return True

    def keep_extent(self, journal_fd: int, lines: int) -> None:
        """Keep in the lock file (held) that the journal open as ``journal_fd``, just fsynced,
        holds ``lines`` lines (:func:`~dse.search.storage.journal_format.extent_text`): a later
        reader finding fewer knows the file was cut. Not fsynced itself: after a power cut it
        may be older than the journal, never newer, so it never claims lines the journal lacks."""
        if self._fd is None:
            return
        if self._first is None:
            self._first = first_line(os.pread(journal_fd, FIRST_LINE_BYTES, 0))
            if self._first is None:
                return  # a first line longer than any record dse writes: no extent kept
        os.pwrite(self._fd, extent_text(os.fstat(journal_fd).st_ino, self._first, lines), 0)

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)


class QueueJournalStorage(JournalStorage):
    """A journal storage whose queue look-up (Optuna's ``Study.ask`` reads the waiting trials on
    every trial) scans only from the first trial that was waiting at the last look-up: a trial
    is created waiting or running and never becomes waiting again, so the trials before it stay
    not waiting (what Optuna's in-memory storage does). Without it each ``ask`` reads every trial
    of the study, O(trials) per trial."""

    def __init__(self, backend: JournalFileBackend) -> None:
        super().__init__(backend)
        self._scan_from: dict[int, int] = {}
        """Per study id: the trial number the next queue look-up starts from."""

    def get_all_trials(self, study_id: int, deepcopy: bool = True,
                       states: Container[TrialState] | None = None) -> list[FrozenTrial]:
        if states != (TrialState.WAITING,) or deepcopy:
            return super().get_all_trials(study_id, deepcopy, states)
        early = _optuna.trials_since_number(self, study_id, self._scan_from.get(study_id, 0))
        waiting = [t for t in early if t.state == TrialState.WAITING]
        if early:
            self._scan_from[study_id] = waiting[0].number if waiting else early[-1].number + 1
        return waiting


def journal_storage(path: Path, study: str | None = None) -> JournalStorage:
    """Optuna's journal in ``path`` with an :class:`FlockLock`, checked first: a damaged tail is
    cut off, any other damage refused without writing (:func:`dse.search.storage.journal_check.check_journal`;
    ``study`` names the study in the message's ``dse repair`` advice)."""
    check_journal_file(path)
    lock = FlockLock(str(path))
    for target in (path, Path(lock.path)):  # never written through a link (open_in_place)
        check_target(target, True)  # said before any work, not at the first write
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and check_journal(path, study, thorough=False).tail_bytes:
            repair_journal_tail(path, lock, study)
        return QueueJournalStorage(CheckedJournalBackend(str(path), lock))
    except OSError as exc:
        raise DseInputError(str(exc.filename or path), "", f"cannot open the journal: "
                            f"{exc.strerror or exc}") from None
    except Exception:
        # The quick check reads only the start of each line; Optuna's reading (which decodes
        # every line, before anything is written) failed on the rest of one: find and name it.
        check_journal(path, study)
        raise


def check_journal_file(path: Path) -> None:
    """Refuse, in one line, a journal path that cannot hold a journal: a symbolic link loop
    (which reads as no file at all), or something other than a regular file, such as a link to
    ``/dev/null`` (where every append's fsync fails). A path that does not exist yet passes: the
    first write creates it."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DseInputError(str(path), "", "is a symbolic link loop (following it leads back "
                                "to itself), not a journal: remove the link") from None
        raise DseInputError(str(path), "", f"cannot read the journal: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise DseInputError(str(path), "", "is not a regular file (a device such as /dev/null, a "
                            "folder or a pipe, perhaps through a link): a journal must be a file")


def repair_journal_tail(path: Path, lock: BaseJournalFileLock,
                        study: str | None = None) -> bool:
    """Cut the damaged last lines off the journal: a partial record (an append that power loss
    interrupted) or lines that hold no record (garbage, even ending in a newline), when no intact
    record follows them.

    Optuna's reader skips a last line without its newline, but the next append would be glued
    to it and make the whole journal unreadable. Writes happen under the lock, so a partial line
    seen under it never completed (its writer never saw its fsync return). True if cut.
    """
    if not path.exists() or path.stat().st_size == 0:
        return False
    lock.acquire()
    try:
        scan = check_journal(path, study)  # again under the lock: a writer may have finished
        if not scan.tail_bytes:
            return False
        with os.fdopen(open_in_place(path, os.O_RDWR), "rb+") as f:
            f.truncate(f.seek(0, os.SEEK_END) - scan.tail_bytes)
            f.flush()
            os.fsync(f.fileno())
        return True
    finally:
        lock.release()
