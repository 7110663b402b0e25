"""Checking and repairing a study's journal file (Optuna's ``JournalFileBackend`` format).

A journal is one JSON record per line, each an operation (create a study, create a trial, set a
parameter...). Optuna replays them in order and numbers studies and trials by their creation
records, so one lost line silently shifts every later trial onto the wrong one, and one garbage
line makes every read fail. Before a journal is opened dse scans it (:func:`scan_journal`):

- a damaged last line (torn by power loss, or garbage even when it ends in a newline) holds no
  complete record and is cut off, as before (:func:`dse.search.storage.repair_journal_tail`);
- any other damage (a line that is not a record, invalid UTF-8, NUL bytes, a record naming a
  trial or study never created) is refused with one line naming the file, the line and what is
  wrong (:func:`check_journal`), and nothing is written to the file;
- ``dse repair STUDY`` (:func:`repair_journal`) writes a clean copy beside the original: every
  intact record kept, a placeholder creation record where a trial's was lost (so later trials
  keep their numbers), garbage dropped and reported; the original is left untouched, and an
  existing copy is never overwritten (without ``--force``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dse.errors import DseInputError
from dse.safe_write import check_target, write_file

CREATE_STUDY, DELETE_STUDY, CREATE_TRIAL, DISCARD_TRIALS = 0, 1, 4, 10
"""Optuna's ``JournalOperation`` codes that create or remove what other records name."""
STUDY_OPS = frozenset({1, 2, 3, 4})
"""Operations that name a ``study_id`` (delete, user and system attribute, create trial)."""
TRIAL_OPS = frozenset({5, 6, 7, 8, 9})
"""Operations that name a ``trial_id`` (parameter, state, intermediate value, attributes)."""
REQUIRED: dict[int, tuple[str, ...]] = {
    0: ("study_name", "directions"), 1: ("study_id",), 2: ("study_id", "user_attr"),
    3: ("study_id", "system_attr"), 4: ("study_id", "datetime_start"),
    5: ("trial_id", "param_name", "param_value_internal", "distribution"),
    6: ("trial_id", "state"), 7: ("trial_id", "step", "intermediate_value"),
    8: ("trial_id", "user_attr"), 9: ("trial_id", "system_attr"), 10: (),
}
"""The keys Optuna's replay reads from each operation (``optuna.storages.journal._storage``)."""
PLACEHOLDER_WORKER = "dse-repair"
"""``worker_id`` of the creation records :func:`repair_journal` puts in place of lost ones."""
REPAIRED_SUFFIX = ".repaired"


@dataclass(frozen=True, slots=True)
class Damage:
    """One damaged line of a journal (``line`` counts from 1)."""

    line: int
    problem: str


@dataclass(frozen=True, slots=True)
class JournalScan:
    """What :func:`scan_journal` found: damage in the body, and the damaged tail to cut."""

    damage: tuple[Damage, ...]
    tail_bytes: int
    """Bytes at the end that hold no complete record (a torn or garbage last line); 0 if none."""
    tail_from_line: int = 0
    tail_complete: bool = False
    """Whether the damaged tail holds a whole line (ending in a newline), not only a torn one."""
    records: int = 0
    missing: dict[int, int] = field(default_factory=dict)
    """Line number -> trial creation records lost just before it (as :func:`repair_journal`
    restores them), keyed by the line of the first record naming a trial never created."""


_QUICK = re.compile(rb'\{"op_code":(\d+),"worker_id":"[^"\\]*","(study_id|trial_id|study_name)":'
                    rb'(\d+|"[^"\\]*")[,}]')
"""The start of a record as Optuna writes it (keys in this order, no spaces): enough of it for
the replay check without decoding the whole line."""


def _quick(raw: bytes) -> dict[str, Any] | str:
    """:func:`_parse` for a line as Optuna writes it, reading only its op code and first id; the
    JSON of the rest is left to Optuna's own reading (:func:`dse.search.storage.journal_storage`
    scans thoroughly when that fails)."""
    m = _QUICK.match(raw)
    if m is None or not raw.endswith(b"}") or b"\x00" in raw:
        return _parse(raw)
    value = m.group(3)
    return {"op_code": int(m.group(1)),
            m.group(2).decode(): int(value) if value[:1] != b'"' else value.decode("utf-8", "replace")}


def _parse(raw: bytes) -> dict[str, Any] | str:
    """The record on one line (without its newline), or what is wrong with it."""
    if b"\x00" in raw:
        return "NUL bytes (a block the file system lost)"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"invalid UTF-8 at byte {exc.start}"
    try:
        record = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return f"not a JSON record ({str(exc).split(':')[0]})"
    if not isinstance(record, dict) or record.get("op_code") not in REQUIRED:
        return "not a journal record (no known op_code)"
    lacking = [k for k in REQUIRED[record["op_code"]] if k not in record]
    if lacking:
        return f"a record of operation {record['op_code']} without {', '.join(lacking)}"
    return record


def _lines(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """(line number from 1, bytes without the newline, whether it ended in a newline)."""
    with path.open("rb") as f:
        for number, line in enumerate(f, start=1):
            ended = line.endswith(b"\n")
            yield number, (line[:-1] if ended else line), ended


class _Replay:
    """The ids Optuna's replay would give: studies and trials numbered by creation record."""

    def __init__(self) -> None:
        self.names: set[Any] = set()
        self.deleted: set[int] = set()
        self.trials = 0
        self.last_study = 0

    def check(self, record: dict[str, Any]) -> tuple[str, int]:
        """What is wrong with ``record`` given the records before it ('' if nothing), and how
        many trial creation records are missing before it."""
        op = record["op_code"]
        if op == CREATE_STUDY:
            # A second creation of a name (a process racing to create it) creates nothing.
            self.names.add(record.get("study_name"))
            return "", 0
        if op in STUDY_OPS:
            sid = record.get("study_id")
            if not isinstance(sid, int) or not 0 <= sid < len(self.names):
                return f"names study {sid}, which no earlier record created", 0
            if op == DELETE_STUDY:
                self.deleted.add(sid)
            elif op == CREATE_TRIAL and sid not in self.deleted:
                self.trials += 1
                self.last_study = sid
            return "", 0
        if op in TRIAL_OPS:
            tid = record.get("trial_id")
            if not isinstance(tid, int) or tid < 0:
                return f"names trial {tid!r}, not a trial id", 0
            if tid >= self.trials:
                missing = tid - self.trials + 1
                return (f"names trial {tid}, which no earlier record created ({missing} trial "
                        "creation record(s) lost before this line)"), missing
        return "", 0


def scan_journal(path: Path, thorough: bool = True) -> JournalScan:
    """Read every line of the journal at ``path`` and find its damage (see the module).

    ``thorough=False`` decodes only the op code and first id of each line as Optuna writes it
    (about ten times faster); it finds every damage but a broken end of such a line."""
    parse = _parse if thorough else _quick
    damage: list[Damage] = []
    missing: dict[int, int] = {}
    replay = _Replay()
    tail_start: int | None = None  # line where the trailing run of damaged lines starts
    tail_bytes = 0
    tail_complete = False
    records = 0
    for number, raw, ended in _lines(path):
        parsed = parse(raw)
        if isinstance(parsed, str):
            if tail_start is None:
                tail_start, tail_bytes, tail_complete = number, 0, False
            tail_bytes += len(raw) + ended
            tail_complete = tail_complete or ended
            damage.append(Damage(number, parsed if ended else "a torn last record (no newline)"))
            continue
        tail_start, tail_bytes = None, 0
        records += 1
        problem, lost = replay.check(parsed)
        if problem:
            damage.append(Damage(number, problem))
            if lost:
                missing[number] = lost
                replay.trials += lost
    if tail_start is not None:
        damage = [d for d in damage if d.line < tail_start]
    return JournalScan(tuple(damage), tail_bytes, tail_start or 0, tail_complete, records, missing)


def check_journal(path: Path, study: str = "STUDY", thorough: bool = True) -> JournalScan:
    """Scan the journal at ``path`` (:func:`scan_journal`) and refuse damage before its tail: a
    :class:`DseInputError` naming the file, the first damaged line and what is wrong."""
    scan = scan_journal(path, thorough)
    if not scan.records and scan.tail_complete:
        # Nothing but lines that are no records: another file, not a journal to cut short.
        raise DseInputError(str(path), "line 1", "not an Optuna journal (no line holds a "
                            "journal record); it is left as it is")
    if scan.damage:
        first = scan.damage[0]
        more = f" (and {len(scan.damage) - 1} more damaged lines)" if len(scan.damage) > 1 else ""
        raise DseInputError(str(path), f"line {first.line}",
                            f"damaged journal: {first.problem}{more}; it is left as it is: "
                            f"dse repair {study} writes a repaired copy beside it")
    return scan


def repaired_path(path: Path) -> Path:
    """Where :func:`repair_journal` writes the repaired copy of ``path``."""
    return path.with_name(path.stem + REPAIRED_SUFFIX + path.suffix)


def repair_journal(path: Path, out: Path | None = None,
                   force: bool = False) -> tuple[Path, JournalScan]:
    """Write a clean copy of the journal at ``path`` to ``out`` (default :func:`repaired_path`),
    leaving ``path`` untouched; returns the copy's path and what was repaired.

    Every intact record is kept in order. A line that is not a record is dropped; where records
    name trials whose creation records were lost, placeholder creation records (in the study of
    the trial created last) take their place so every later trial keeps its number. A record
    naming a study never created cannot be placed and is dropped.

    An existing ``out`` (an earlier repair a study may have resumed on, or the journal of a study
    named ``NAME.repaired``) is refused unless ``force``; the copy is written in one rename
    (:func:`dse.safe_write.write_file`), so a failure leaves no partial copy.
    """
    target = out or repaired_path(path)
    hint = "an earlier repair's output (perhaps resumed since) or another study's journal: " \
           "move it away, or repair to another file with --out (or pass --force to replace it)"
    check_target(target, force, hint)
    scan = scan_journal(path)
    replay = _Replay()
    kept: list[bytes] = []
    for _, raw, _ended in _lines(path):
        parsed = _parse(raw)
        if isinstance(parsed, str):
            continue
        problem, lost = replay.check(parsed)
        if lost:
            placeholder = {"op_code": CREATE_TRIAL, "worker_id": PLACEHOLDER_WORKER,
                           "study_id": replay.last_study, "datetime_start": None}
            line = json.dumps(placeholder, separators=(",", ":")).encode()  # as Optuna writes
            kept += [line] * lost
            replay.trials += lost
        elif problem:
            continue
        kept.append(raw)
    write_file(target, b"".join(line + b"\n" for line in kept), replace=force, hint=hint)
    return target, scan
