"""dse's records of a journal read as a sequence (issue 42, item 1): which repeat another (a copy
only when byte-identical), which stand out of their numbers' order (put back in their place, never
dropped), and how many lines the journal held when dse last wrote to it (so a file cut in the
middle is told from a last line torn by one interrupted write).

Each record dse writes carries its line number (:mod:`dse.search.storage.journal_format`), counted
under the write lock, so dse's records stand in the order of their numbers. A record numbered
like an earlier one is a copy of it only when its bytes are the same; a different record with
an intact check under an earlier number was written without dse's lock or taken from another
journal, and is kept. Records whose numbers go back are reordered lines: the longest run of
numbers that rises in file order stands (:func:`_rising`), and each record outside it goes back
beside its neighbours in number (:func:`restored_order`). The loss check
(:meth:`~dse.search.storage.journal_format.RecordNumbers.take`) then reads the restored order,
where a swap loses nothing.

A cut is found against the extent the writer keeps in the lock file after every append
(:func:`~dse.search.storage.journal_format.extent_text`, :func:`lines_written`): a journal with
fewer lines than its writer last fsynced lost its end. A file replaced since (another inode, or
another first line: a repaired copy moved over it, a new study) is not compared.
"""

from __future__ import annotations

import os
import zlib
from bisect import bisect_left
from collections.abc import Sequence
from pathlib import Path

from dse.search.storage.journal_format import (
    EXTENT_BYTES,
    LOCK_SUFFIX,
    first_line,
    read_extent,
)

Check = tuple[int, bool] | None
"""A line's check as :func:`~dse.search.storage.journal_format.read_check` reads it."""


def _rising(numbers: Sequence[int]) -> set[int]:
    """Positions of a longest strictly rising run of ``numbers`` (patience sorting, O(n log n)):
    the records standing in order; every other one was moved."""
    tails: list[int] = []
    tails_at: list[int] = []
    before = [-1] * len(numbers)
    for i, n in enumerate(numbers):
        k = bisect_left(tails, n)
        before[i] = tails_at[k - 1] if k else -1
        if k == len(tails):
            tails.append(n)
            tails_at.append(i)
        else:
            tails[k], tails_at[k] = n, i
    keep: set[int] = set()
    i = tails_at[-1] if tails_at else -1
    while i >= 0:
        keep.add(i)
        i = before[i]
    return keep


def repeats(raws: Sequence[bytes], checks: Sequence[Check]) -> tuple[dict[int, str], dict[int, int]]:
    """Lines (by index) whose intact check repeats an earlier line's number: ``copy`` when its
    bytes are that line's, else ``conflict``; and the index of each number's first line."""
    first_at: dict[int, int] = {}
    found: dict[int, str] = {}
    for i, check in enumerate(checks):
        if check is None or not check[1]:
            continue
        if check[0] in first_at:
            found[i] = "copy" if raws[i] == raws[first_at[check[0]]] else "conflict"
        else:
            first_at[check[0]] = i
    return found, first_at


def restored_order(count: int, first_at: dict[int, int]) -> tuple[list[int], dict[int, tuple[int, int]]]:
    """The order of ``count`` lines with dse's records (each number's first line, ``first_at``)
    in the order of their numbers, every other line where it stands; and for each record moved,
    (the number of its neighbour in order, that neighbour's index): its predecessor, or its
    successor when it has none."""
    firsts = sorted((i, n) for n, i in first_at.items())
    keep = _rising([n for _, n in firsts])
    if len(keep) == len(firsts):
        return list(range(count)), {}
    standing = [firsts[k] for k in sorted(keep)]
    numbers = [n for _, n in standing]
    key = {i: (i, 0, 0) for i in range(count)}
    moved: dict[int, tuple[int, int]] = {}
    for k, (i, n) in enumerate(firsts):
        if k in keep:
            continue
        at = bisect_left(numbers, n)
        if at < len(standing):  # just before the record that follows it in number
            key[i] = (standing[at][0], -1, n)
        else:  # after the last record, before any line that follows that one
            key[i] = (standing[at - 1][0], 1, n)
        neighbour = standing[at - 1] if at else standing[at]
        moved[i] = (neighbour[1], neighbour[0])
    return sorted(range(count), key=key.__getitem__), moved


def lines_written(path: Path, data: bytes) -> int | None:
    """The lines the journal ``path`` (its bytes ``data``) held when dse last appended to it, as
    its lock file keeps them; ``None`` when unknown (no extent, a lock file that is a link, or
    the journal replaced or recreated since)."""
    try:
        fd = os.open(str(path) + LOCK_SUFFIX, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        extent = read_extent(os.pread(fd, EXTENT_BYTES, 0))
        inode = os.stat(path).st_ino
    except OSError:
        return None
    finally:
        os.close(fd)
    first = first_line(data)
    if extent is None or first is None or extent[:2] != (inode, zlib.crc32(first)):
        return None
    return extent[2]


def was_cut(path: Path, data: bytes) -> int:
    """Records lost after the end of the journal ``path`` (its bytes ``data``): how many fewer
    lines it holds than when dse last appended to it (:func:`lines_written`); 0 if none or
    unknown.

    The extent is read after ``data``, so a writer may have appended (and counted) lines since:
    the lines the file holds past ``data`` now count too (a cut never grows the file back)."""
    written = lines_written(path, data)
    have = data.count(b"\n")
    if written is None or written <= have:
        return 0
    try:
        with path.open("rb") as f:
            f.seek(len(data))
            while written > have and (chunk := f.read(1 << 20)):
                have += chunk.count(b"\n")
    except OSError:
        return 0
    return max(0, written - have)
