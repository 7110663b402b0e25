"""The journal's wire format as dse reads and writes it: Optuna's records (one JSON object a
line, ``op_code``, ``worker_id`` and the id first; the op codes and the keys each names are
:mod:`dse.search._optuna`'s) and the check dse adds to each.

Optuna's records carry no check of their own, so a duplicated, deleted or altered line that is still
valid JSON reads as a different study: a copied trial creation record shifts every later trial onto
its neighbour's records, a lost state record leaves a finished trial RUNNING, a changed digit is a
changed result. dse therefore writes each record with a check of its own
(:class:`~dse.search.storage.journal_writing.CheckedJournalBackend`): a last field
``"dse_check":[N,CRC]``, where ``N`` numbers the record's line in the file (counted under the write
lock, so several workers appending at once number their lines in file order) and ``CRC`` is a CRC-32
of the record before that field and of ``N``. Optuna's replay reads only the keys it knows and
ignores the field, so such a journal is still an Optuna journal. The scan then finds
(:class:`RecordNumbers`):

- a record whose CRC does not match: altered since it was written;
- a record numbered like an earlier one: a copy (a duplicated line) when byte-identical, or
  numbers out of order (:mod:`dse.search.storage.journal_sequence` tells which and restores the
  order);
- numbers that jump further than the lines between them: records lost;
- record 0 below other lines: it was written to an empty file, so those lines were added since.

Records without the field (written by plain Optuna or by earlier versions of dse; a journal may mix both)
are read as before, with only the checks above on the records around them. A writer that does
not take dse's lock can slip a line in between another's count and its write; such unchecked
lines are allowed for (they only ever add lines), so they are never taken for damage. One kind
is not: a study created without the check after dse's first record was created by no dse
(:mod:`dse.search.storage.journal_foreign`), so :func:`checks_hold` leaves it to the scan.
"""
from __future__ import annotations

import json
import re
import zlib
from typing import Any

from dse.search._optuna import JournalOperation

_STRING = rb'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"'
RECORD_LINE = re.compile(
    rb'^\{"op_code":(0|[1-9]\d?),"worker_id":"[\x20\x21\x23-\x5b\x5d-\x7e]*",'
    rb'"(study_id|trial_id|study_name)":(0|[1-9]\d*|' + _STRING + rb")(.*)$", re.MULTILINE)
"""A record's line as Optuna writes it (``json.dumps`` with compact separators, ``op_code``,
``worker_id`` and the id first): the op code, the id's key and value (a number, or a study's
name as JSON text) and the rest of the line. The worker id is only matched (printable ASCII without
quote or backslash, so valid JSON), never decoded: no reader of a journal depends on it. A line in
another layout (written by another tool, or damaged) is decoded whole."""
CHECK_KEY = "dse_check"
"""The last field of each record dse writes: ``[N, CRC]`` (see the module)."""
_CHECK_AT = b',"' + CHECK_KEY.encode() + b'":['
_CHECK = re.compile(re.escape(_CHECK_AT) + rb"(0|[1-9]\d{0,17}),(\d{1,10})\]\}")
"""The check field at the end of a line (its whole rest: a field of the same name nested in a
value is followed by more closing brackets)."""


LOCK_SUFFIX = ".write.lock"
"""The journal's write lock beside it (``NAME.journal.write.lock``), which also keeps the journal's
extent (:func:`extent_text`)."""
_EXTENT = re.compile(rb"dse journal extent 1: inode (\d{1,20}), first line crc (\d{1,10}), "
                     rb"lines (\d{1,18})\n")
EXTENT_BYTES = 128
"""The extent's fixed size at the start of the lock file (overwritten in place, never grown)."""


def extent_text(inode: int, first_line: bytes, lines: int) -> bytes:
    """What a writer keeps in the lock file after each append (fsynced before): the journal (its
    inode and the CRC of its first line, so a replaced or recreated journal is not taken for it)
    held ``lines`` lines. A journal found with fewer lines was cut after dse wrote to it; an
    interrupted append never updates it, so a torn last line is not taken for a cut."""
    text = b"dse journal extent 1: inode %d, first line crc %d, lines %d\n" % (
        inode, zlib.crc32(first_line), lines)
    return text.ljust(EXTENT_BYTES, b" ")


def read_extent(blob: bytes) -> tuple[int, int, int] | None:
    """(inode, CRC of the first line, lines) of a lock file's extent; ``None`` without one."""
    m = _EXTENT.match(blob)
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


def first_line(data: bytes) -> bytes | None:
    """The journal's first line with its newline (``None`` before one is complete)."""
    end = data.find(b"\n")
    return data[:end + 1] if end >= 0 else None


def _crc(head: bytes | memoryview, number: int) -> int:
    """The CRC of a record: of its text before the check field, then of its line number."""
    return zlib.crc32(b"%d" % number, zlib.crc32(head))


def checked_line(head: bytes, number: int) -> bytes:
    """The journal line of a record whose JSON text without its closing brace is ``head``, written
    on line ``number`` (from 0), with dse's check, and its newline."""
    return head + _CHECK_AT + b"%d,%d]}\n" % (number, _crc(head, number))


def record_line(log: dict[str, Any], number: int) -> bytes:
    """``log`` as Optuna writes it (compact JSON, ASCII), checked as line ``number``."""
    return checked_line(json.dumps(log, separators=(",", ":")).encode()[:-1], number)


def read_check(raw: bytes) -> tuple[int, bool] | None:
    """(line number the record was written as, whether it is as written) of a line with dse's
    check; ``None`` for a line without one."""
    at = raw.rfind(_CHECK_AT)
    if at < 0:
        return None
    m = _CHECK.fullmatch(raw, at)
    if m is None:
        return None
    number = int(m[1])
    return number, int(m[2]) == _crc(memoryview(raw)[:at], number)


def check_start(raw: bytes) -> int:
    """Where dse's check field starts in the line ``raw`` (-1: the line has none)."""
    return raw.rfind(_CHECK_AT) if read_check(raw) else -1


def without_check(text: bytes) -> bytes:
    """A record's text (or the end of it) without dse's check field."""
    at = text.rfind(_CHECK_AT)
    return text if at < 0 or _CHECK.fullmatch(text, at) is None else text[:at] + b"}"


REPEATED = -1
""":meth:`RecordNumbers.take` of a record numbered like an earlier one, or below it."""
ADDED_BEFORE_FIRST = -2
""":meth:`RecordNumbers.take` of record 0 below other lines (lines added above dse's first)."""


class RecordNumbers:
    """dse's record numbers read in file order, and what they say about the lines between.

    Written under the lock, the records of consecutive lines carry consecutive numbers. Lines
    without a number (written by plain Optuna or an older dse, possibly between another writer's
    count and its write) only ever add lines, so a number may fall behind its line by as many
    unnumbered lines as came just before it (``slack``), never run ahead of it."""

    __slots__ = ("last", "line", "slack")

    def __init__(self, state: tuple[int, int, int] = (-1, -1, 0)) -> None:
        self.last, self.line, self.slack = state

    def state(self) -> tuple[int, int, int]:
        return self.last, self.line, self.slack

    def take(self, line: int, number: int, unnumbered: int) -> int:
        """Records lost just before ``line`` (from 0), which holds record ``number`` after
        ``unnumbered`` lines without a number: 0 if none, :data:`REPEATED` when ``number`` does
        not come after every earlier record's (a duplicated or reordered line; then nothing is
        taken), :data:`ADDED_BEFORE_FIRST` when record 0 does not stand on the first line."""
        if number <= self.last:
            return REPEATED
        if number == 0 and line > 0:
            # Record 0 was written to an empty file: every line above it was put there since, by
            # no dse (which checks all it writes) -- another study's creation record shifts the
            # study ids of every record below it.
            return ADDED_BEFORE_FIRST
        lost = max(0, (number - self.last) - (line - self.line) - self.slack)
        self.slack = unnumbered or (self.slack if number == self.last + 1 else 0)
        self.last, self.line = number, line
        return lost


_CREATES_STUDY = b"%d" % JournalOperation.CREATE_STUDY
"""A study creation record's op code as its line spells it."""
_CHECK_LINE = re.compile(_CHECK.pattern + rb"$", re.MULTILINE)
_CHECKED_LINE = re.compile(rb"^(.*)" + _CHECK_LINE.pattern, re.MULTILINE)


def checks_hold(data: bytes, start: int, line: int, numbers: RecordNumbers) -> bool:
    """Whether dse's checks of every line of ``data`` from byte ``start`` (the start of line
    ``line``, from 0) hold: no record altered, repeated or lost, and no study created without
    dse's check after dse's first record, as
    :func:`~dse.search.storage.journal_check.scan_journal` finds them (a yes or no, several times
    faster: for a reader that refuses any damage). ``numbers`` goes on from the lines before
    ``start``."""
    checked = data.count(_CHECK_AT, start)
    if not checked:
        # Written by plain Optuna or an earlier dse: nothing to check, unless dse wrote before.
        return numbers.last < 0 or _unchecked_hold(data, start, len(data))
    if checked != data.count(b"\n", start) + (not data.endswith(b"\n")):
        return _checks_hold_mixed(data, start, line, numbers)
    rows = _CHECKED_LINE.findall(data, start)
    if len(rows) != checked:
        return _checks_hold_mixed(data, start, line, numbers)
    # Every line checked (a journal dse wrote): its numbers must run on from the first.
    first = int(rows[0][1])
    if numbers.take(line, first, line - numbers.line - 1):
        return False
    if [int(n) for _, n, _ in rows] != list(range(first, first + len(rows))):
        return False
    numbers.last, numbers.line = first + len(rows) - 1, line + len(rows) - 1
    crc32 = zlib.crc32
    return all(crc32(b"%d" % n, crc32(head)) == int(crc)
               for n, (head, _, crc) in enumerate(rows, start=first))


def _checks_hold_mixed(data: bytes, start: int, line: int, numbers: RecordNumbers) -> bool:
    """:func:`checks_hold` of lines some of which have no check (:func:`_unchecked_hold` of
    those after dse's first record)."""
    pos = start
    after = start if numbers.last >= 0 else -1  # the lines after dse's last record so far
    for m in _CHECK_LINE.finditer(data, start):
        at = m.start()
        line += data.count(b"\n", pos, at)
        pos = at
        number = int(m[1])
        head = max(data.rfind(b"\n", start, at) + 1, start)
        if after >= 0 and not _unchecked_hold(data, after, head):
            return False
        if int(m[2]) != _crc(memoryview(data)[head:at], number):
            return False
        if numbers.take(line, number, line - numbers.line - 1):
            return False
        after = m.end() + 1
    return after < 0 or _unchecked_hold(data, after, len(data))


def _unchecked_hold(data: bytes, start: int, end: int) -> bool:
    """Whether the lines of ``data`` from byte ``start`` (a line's start) to ``end``, none with
    dse's check and all after dse's first record, are records in Optuna's layout that create no
    study. A study created there was written by no dse
    (:mod:`dse.search.storage.journal_foreign`); a line the fast test cannot read (another
    layout, damage) is left to the scan too."""
    while start < end:
        m = RECORD_LINE.match(data, start, end)
        if m is None or m[1] == _CREATES_STUDY:
            return False
        start = m.end() + 1
    return True
