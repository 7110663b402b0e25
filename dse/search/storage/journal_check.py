"""Checking and repairing a study's journal file (Optuna's ``JournalFileBackend`` format).

A journal is one JSON record per line, each an operation (create a study, create a trial, set a
parameter...). Optuna replays them in order and numbers studies and trials by their creation
records, so one lost line silently shifts every later trial onto the wrong one, and one garbage
line makes every read fail. Before a journal is opened dse scans it (:func:`scan_journal`):

- a damaged last line (torn by power loss, or garbage even when it ends in a newline) holds no
  complete record: a command that writes to the journal cuts it off
  (:func:`dse.search.storage.journal_writing.repair_journal_tail`), one that only reads leaves it
  out of its reading and the file as it is (:func:`dse.search.storage.journal_snapshot.read_journal`);
- any other damage (a line that is not a record, invalid UTF-8, NUL bytes, a record naming a
  trial or study never created) is refused with one line naming the file, the line and what is
  wrong (:func:`check_journal`), and nothing is written to the file;
- dse's own records are checked as a sequence (:mod:`dse.search.storage.journal_sequence`): a
  byte-identical repeat is a copy, reordered records are named and put back in order, a line
  above dse's record 0 was written by no dse, and a journal holding fewer lines than its writer
  last recorded was cut (how many records were lost is said; a torn last line is not a cut);
- a study created without dse's check after dse's first record was written by no dse: its line
  and every record naming it are refused (:mod:`dse.search.storage.journal_foreign`); other
  records without the check (a note on dse's study written by optuna-dashboard) are accepted;
- ``dse repair STUDY`` (:func:`repair_journal`) writes a clean copy beside the original: every
  intact record kept (in the order of dse's numbers), a placeholder creation record where a
  trial's was lost (so later trials keep their numbers), garbage dropped and reported, a study
  no dse created dropped with its records (the ids after it closed up); the
  original is left untouched, and an existing copy is never overwritten (without ``--force``).

The records' layout and dse's check on each are :mod:`dse.search.storage.journal_format`'s; the ids
a record names are checked as Optuna's replay numbers them, by the replay the snapshot reader
follows (:class:`~dse.search.storage.journal_replay.JournalReplay`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from optuna.trial import TrialState

from dse.errors import DseInputError
from dse.safe_write import check_target, write_file
from dse.search._optuna import JOURNAL_FIELDS, STUDY_OPS, TRIAL_OPS, JournalOperation
from dse.search.storage.journal_foreign import ForeignStudies
from dse.search.storage.journal_format import (
    LOCK_SUFFIX,
    RECORD_LINE,
    RecordNumbers,
    check_start,
    checked_line,
    checks_hold,
    read_check,
)
from dse.search.storage.journal_replay import JournalReplay
from dse.search.storage.journal_sequence import repeats, restored_order, was_cut

OP = JournalOperation
PLACEHOLDER_WORKER = "dse-repair"
"""``worker_id`` of the records :func:`repair_journal` writes: creation records in place of lost
ones, FAIL states in place of altered records."""
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
    cut: int = 0
    """Records lost after the journal's last line: the file was cut after dse wrote them
    (:func:`dse.search.storage.journal_sequence.was_cut`); 0 if not."""


def _quick(raw: bytes) -> dict[str, Any] | str:
    """:func:`_parse` for a line as Optuna writes it (:data:`RECORD_LINE`), reading only its op
    code and first id (a study's name as its JSON text): enough for the replay of the ids. The JSON
    of the rest is left to Optuna's own reading
    (:func:`dse.search.storage.journal_writing.journal_storage` scans thoroughly when that fails)."""
    m = RECORD_LINE.match(raw)
    if m is None or m[4][:1] not in (b",", b"}") or not raw.endswith(b"}") or b"\x00" in raw:
        return _parse(raw)
    value = m[3]
    try:  # a study's name decoded (a creation record is rare), as the thorough scan decodes it
        ident = int(value) if value[:1] != b'"' else json.loads(value)
    except ValueError:
        return _parse(raw)
    return {"op_code": int(m[1]), m[2].decode(): ident}


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
    if not isinstance(record, dict) or record.get("op_code") not in JOURNAL_FIELDS:
        return "not a journal record (no known op_code)"
    lacking = [k for k in JOURNAL_FIELDS[record["op_code"]] if k not in record]
    if lacking:
        return f"a record of operation {record['op_code']} without {', '.join(lacking)}"
    return record


def _lines(data: bytes) -> Iterator[tuple[int, bytes, bool]]:
    """(line number from 1, bytes without the newline, whether it ended in a newline)."""
    parts = data.split(b"\n")
    last = parts.pop()
    for number, raw in enumerate(parts, start=1):
        yield number, raw, True
    if last:
        yield len(parts) + 1, last, False


def _place(replay: JournalReplay, record: dict[str, Any]) -> tuple[str, int]:
    """Follow ``record``'s ids in ``replay``: what is wrong with it given the records before it
    ('' if nothing), and how many trial creation records are missing before it."""
    op = record["op_code"]
    if op == OP.CREATE_STUDY:
        name = record.get("study_name")  # any JSON value a thorough scan decodes
        replay.create_study(name if isinstance(name, str) else json.dumps(name), [])
        return "", 0
    if op in STUDY_OPS:
        sid = record.get("study_id")
        if not replay.created(sid):
            return f"names study {sid}, which no earlier record created", 0
        if op == OP.DELETE_STUDY:
            replay.delete_study(sid)
        elif op == OP.CREATE_TRIAL:
            replay.create_trial(sid)
        return "", 0
    if op in TRIAL_OPS:
        tid = record.get("trial_id")
        if not isinstance(tid, int) or tid < 0:
            return f"names trial {tid!r}, not a trial id", 0
        if tid >= len(replay.trials):
            missing = tid - len(replay.trials) + 1
            return (f"names trial {tid}, which no earlier record created ({missing} trial "
                    "creation record(s) lost before this line)"), missing
    return "", 0


@dataclass(slots=True)
class _Line:
    """What the scan found on a line that is not simply an intact record, and what a repaired
    copy does with it (``kind``)."""

    kind: str
    """``record`` (kept), ``garbage`` (no record), ``copy`` (a duplicated line),
    ``unplaceable`` (names a study or trial that cannot be), ``altered`` (its check fails),
    ``foreign`` (a record no dse wrote into this journal: above dse's first record, or creating
    another study)."""
    problems: list[str]
    lost: int = 0
    """Trial creation records lost just before this line (restored as placeholders)."""
    study: int = 0
    """The study a placeholder creation record before this line goes to."""
    failed: int = -1
    """For an altered record: the trial a repaired copy marks FAIL in its place (-1: none)."""
    creates: bool = False
    """For an altered record: it created a trial (a placeholder takes its place)."""


class _Order:
    """dse's records of one journal as a sequence (:mod:`dse.search.storage.journal_sequence`): the
    order a repaired copy restores, and what each line repeating or moved is."""

    def __init__(self, raws: list[bytes], verify: bool) -> None:
        self.checks: list[tuple[int, bool] | None] = [
            read_check(raw) if verify else None for raw in raws]
        repeated, first_at = repeats(raws, self.checks) if verify else ({}, {})
        self.repeated = repeated
        self.first_at = first_at
        self.order, self.moved = restored_order(len(raws), first_at)
        self.first, number = self._first()
        """Where dse's first record stands in the restored order (after the last line: none)."""
        self.above_first = self.first if number == 0 else 0
        """Lines (in the restored order) above dse's first record when that is record 0: it was
        written to an empty file, so they were added since (0 if none)."""

    def _first(self) -> tuple[int, int]:
        """Where (in the restored order) dse's first intact record stands and its number; the
        end of the journal and -1 without one."""
        for at, i in enumerate(self.order):
            check = self.checks[i]
            if check is not None and check[1] and i not in self.repeated:
                return at, check[0]
        return len(self.order), -1

    def said(self, i: int, lines: list[tuple[int, bytes, bool]]) -> str:
        """What is wrong with line ``i`` that repeats or moved a record ('' if neither)."""
        check = self.checks[i]
        kind = self.repeated.get(i)
        if check is None or (kind is None and i not in self.moved):
            return ""
        if kind == "copy":
            return (f"a copy of line {lines[self.first_at[check[0]]][0]} (dse's record "
                    f"{check[0]} again): a duplicated line, dropped from a repaired copy")
        if kind == "conflict":
            return (f"numbered like line {lines[self.first_at[check[0]]][0]} (dse's record "
                    f"{check[0]}) but a different record, so not a copy: written without dse's "
                    "lock or taken from another journal; a repaired copy keeps both")
        neighbour, at = self.moved[i]
        side = "after" if neighbour < check[0] else "before"
        return (f"dse's record {check[0]} is out of order (it belongs {side} record {neighbour}, "
                f"line {lines[at][0]}): reordered lines; a repaired copy puts it back in its place")


def _read(data: bytes, thorough: bool, foreign: ForeignStudies | None = None
          ) -> Iterator[tuple[int, bytes, bool, _Line | None]]:
    """Every line of a journal, dse's records in the order of their numbers
    (:class:`_Order`): (line number from 1, its bytes, whether it ended in a newline, what is
    wrong with it or ``None`` for an intact record), as the checks of the module find it.
    ``foreign`` follows the ids (pass one to learn the ids a repaired copy gives)."""
    parse = _parse if thorough else _quick
    lines = list(_lines(data))
    raws = [raw for _, raw, _ in lines]
    # Where every check holds (nearly always) no line needs its own: the fast test first.
    order = _Order(raws, verify=not checks_hold(data, 0, 0, RecordNumbers()))
    foreign = ForeignStudies(JournalReplay()) if foreign is None else foreign
    replay = foreign.replay
    numbers = RecordNumbers()
    unnumbered = 0
    for at, i in enumerate(order.order):
        number, raw, ended = lines[i]
        parsed = parse(raw)
        if isinstance(parsed, str):
            unnumbered += 1
            yield number, raw, ended, _Line(
                "garbage", [parsed if ended else "a torn last record (no newline)"])
            continue
        said = order.said(i, lines)
        if order.repeated.get(i) == "copy":
            yield number, raw, ended, _Line("copy", [said])
            continue
        check = order.checks[i]
        if at < order.above_first and (check is None or not check[1]):
            unnumbered += 1
            yield number, raw, ended, _Line("foreign", [_above_first(parsed)])
            continue
        if check is None and at > order.first and parsed["op_code"] == OP.CREATE_STUDY:
            unnumbered += 1
            first = lines[order.order[order.first]][0]
            yield number, raw, ended, _Line("foreign", [foreign.creation(parsed, number, first)])
            continue
        problems = [said] if said else []
        if check is None or not check[1] or i in order.repeated:
            unnumbered += 1
            if check is not None and not check[1]:
                yield number, raw, ended, _altered(parsed, replay)
                continue
        else:
            before = numbers.last
            lost = max(0, numbers.take(at, check[0], unnumbered))
            unnumbered = 0
            if lost:
                problems.append(f"{lost} record(s) lost just before this line (dse's record numbers "
                                f"go from {before} to {check[0]}; a repair restores lost trial "
                                "creations only)")
        yield number, raw, ended, _owned(foreign, parsed, problems)


def _owned(foreign: ForeignStudies, record: dict[str, Any], problems: list[str]) -> _Line | None:
    """:func:`_placed`, but a record naming a study created without dse's check (or one of its
    trials) goes with that study: refused, and dropped from a repaired copy."""
    owner = foreign.owner(record)
    line = _placed(foreign.replay, record, problems)
    return line if owner is None else _Line("foreign", [*problems, foreign.named(owner, record)])


def _placed(replay: JournalReplay, record: dict[str, Any], problems: list[str]) -> _Line | None:
    """``record`` followed in ``replay``: what is wrong with it (with ``problems`` found before),
    or ``None`` for an intact record."""
    problem, missing = _place(replay, record)
    if problem:
        problems.append(problem)
    if missing:
        replay.placeholder_trials(missing, replay.last_study)
    if problems or missing:
        kind = "unplaceable" if problem and not missing else "record"
        return _Line(kind, problems, missing, replay.last_study)
    return None


def _above_first(record: dict[str, Any]) -> str:
    """Why a record above dse's record 0 is not this journal's: dse wrote record 0 to an empty
    file, so the record was added since, by no dse (whose records all carry their check); a
    study created there would take the id dse's records name their own study by."""
    created = record.get("study_name") if record["op_code"] == OP.CREATE_STUDY else None
    what = f" (it creates study {created!r})" if isinstance(created, str) else ""
    return (f"added above dse's first record (record 0, written when the journal was empty), "
            f"so written by no dse version{what}; a repaired copy drops it")


def _altered(record: dict[str, Any], replay: JournalReplay) -> _Line:
    """A line whose check fails: what it named, so a repaired copy can mark that trial FAIL."""
    line = _Line("altered", ["altered since dse wrote it (its checksum does not match); a "
                             "repaired copy drops it and fails the trial it names, if any"])
    op, ident = record["op_code"], record.get("trial_id", record.get("study_id"))
    if op == OP.CREATE_TRIAL:
        line.creates = True
        line.study = ident if replay.created(ident) else replay.last_study
        line.failed = len(replay.trials)
        replay.placeholder_trials(1, line.study)
    elif op in TRIAL_OPS and isinstance(ident, int) and 0 <= ident < len(replay.trials):
        line.failed = ident
    return line


def scan_journal(path: Path, thorough: bool = True, data: bytes | None = None) -> JournalScan:
    """Read every line of the journal at ``path`` (or its bytes ``data``) and find its damage
    (see the module).

    ``thorough=False`` decodes only the op code and first id of each line as Optuna writes it
    (about ten times faster); it finds every damage but a broken end of such a line without
    dse's check."""
    data = path.read_bytes() if data is None else data
    damage: list[Damage] = []
    missing: dict[int, int] = {}
    tail_start: int | None = None  # line where the trailing run of damaged lines starts
    tail_bytes = 0
    tail_complete = False
    records = 0
    for number, raw, ended, line in _read(data, thorough):
        if line is not None and line.kind == "garbage":
            if tail_start is None:
                tail_start, tail_bytes, tail_complete = number, 0, False
            tail_bytes += len(raw) + ended
            tail_complete = tail_complete or ended
        else:
            tail_start, tail_bytes = None, 0
            records += line is None or line.kind == "record"
        if line is not None and line.problems:
            damage.append(Damage(number, "; ".join(line.problems)))
        if line is not None and line.lost:
            missing[number] = line.lost
    if tail_start is not None:
        damage = [d for d in damage if d.line < tail_start]
    cut = was_cut(path, data)
    if cut:
        end = data.count(b"\n")
        damage.append(Damage(end + 1, f"the journal ends here, but it held {end + cut} lines when "
                             f"dse last wrote to it ({path.name}{LOCK_SUFFIX}): its last {cut} "
                             "record(s) were lost (the file was cut, not torn by one interrupted "
                             f"write); a repaired copy keeps the {records} record(s) before"))
    return JournalScan(tuple(damage), tail_bytes, tail_start or 0, tail_complete, records, missing,
                       cut)


def check_journal(path: Path, study: str | None = None, thorough: bool = True,
                  data: bytes | None = None) -> JournalScan:
    """Scan the journal at ``path`` (:func:`scan_journal`) and refuse damage before its tail: a
    :class:`DseInputError` naming the file, the first damaged line and what is wrong (``study``
    names the study in its ``dse repair`` advice)."""
    scan = scan_journal(path, thorough, data)
    if not scan.records and scan.tail_complete:
        # Nothing but lines that are no records: another file, not a journal to cut short.
        raise DseInputError(str(path), "line 1", "not an Optuna journal (no line holds a "
                            "journal record); it is left as it is")
    if scan.damage:
        first = scan.damage[0]
        more = f" (and {len(scan.damage) - 1} more damaged lines)" if len(scan.damage) > 1 else ""
        raise DseInputError(str(path), f"line {first.line}",
                            f"damaged journal: {first.problem}{more}; it is left as it is: "
                            f"dse repair {study or 'STUDY'} writes a repaired copy beside it")
    return scan


def repaired_path(path: Path) -> Path:
    """Where :func:`repair_journal` writes the repaired copy of ``path``."""
    return path.with_name(path.stem + REPAIRED_SUFFIX + path.suffix)


def repaired_lines(data: bytes) -> Iterator[bytes]:
    """The lines of a repaired copy of the journal ``data`` (see :func:`repair_journal`).

    Records with dse's check are numbered afresh for the lines of the copy; where a study created
    without dse's check is dropped, the ids of the studies and trials after it close up
    (:meth:`~dse.search.storage.journal_foreign.ForeignStudies.renumbered`)."""
    written = 0
    foreign = ForeignStudies(JournalReplay())

    def out(head: bytes | None, raw: bytes = b"") -> bytes:
        nonlocal written
        written += 1
        if head is None:
            at = check_start(raw)
            return raw + b"\n" if at < 0 else checked_line(raw[:at], written - 1)
        return checked_line(head, written - 1)

    for _, raw, _ended, line in _read(data, True, foreign):
        if line is not None and line.kind in ("garbage", "copy", "unplaceable", "foreign"):
            continue
        study = foreign.study_id(line.study) if line is not None else None
        if line is not None and study is not None:  # none for a dropped study's trials
            for _ in range(line.lost + line.creates):
                yield out(_head(_placeholder(study)))
        if line is not None and line.kind == "altered":
            failed = foreign.trial_id(line.failed) if line.failed >= 0 else None
            if failed is not None:
                yield out(_head(_fail(failed)))
            continue
        kept = foreign.renumbered(raw)
        if kept is not None:
            yield out(None, kept)


def _head(log: dict[str, Any]) -> bytes:
    return json.dumps(log, separators=(",", ":")).encode()[:-1]


def _placeholder(study: int) -> dict[str, Any]:
    """A creation record in place of a lost one (the trial is then made of the records naming
    it; one that none completes stays RUNNING until ``dse run`` fails and retries it)."""
    return {"op_code": OP.CREATE_TRIAL, "worker_id": PLACEHOLDER_WORKER, "study_id": study,
            "datetime_start": None}


def _fail(trial: int) -> dict[str, Any]:
    """A state record failing ``trial``, in place of an altered record of it: a trial with a
    part that cannot be trusted is never read as complete."""
    return {"op_code": OP.SET_TRIAL_STATE_VALUES, "worker_id": PLACEHOLDER_WORKER,
            "trial_id": trial, "state": TrialState.FAIL.value, "values": None,
            "datetime_complete": datetime.now().isoformat()}


def repair_journal(path: Path, out: Path | None = None,
                   force: bool = False) -> tuple[Path, JournalScan]:
    """Write a clean copy of the journal at ``path`` to ``out`` (default :func:`repaired_path`),
    leaving ``path`` untouched; returns the copy's path and what was repaired.

    Every intact record is kept, dse's records in the order of their numbers (reordered lines
    are put back in their place). A line that is not a record, a byte-identical second copy of
    a record and a record no dse wrote (above dse's record 0, which was written to an empty
    file) are dropped, and so is a study created without dse's check after dse's first record,
    with every record naming it or its trials (the ids of the studies and trials after it
    close up, so each record still names its own); where records name trials whose
    creation records were lost, placeholder creation records (in the study of the trial created
    last) take their place so every later trial keeps its number. A record altered since dse
    wrote it is replaced by a FAIL state record of its trial (a placeholder first if it created
    the trial). A record naming a study never created cannot be placed and is dropped. Lost
    records other than trial creations cannot be restored: they are reported, as are records
    lost after a cut.

    An existing ``out`` (an earlier repair a study may have resumed on, or the journal of a study
    named ``NAME.repaired``) is refused unless ``force``; the copy is written in one rename
    (:func:`dse.safe_write.write_file`), so a failure leaves no partial copy.
    """
    target = out or repaired_path(path)
    hint = "an earlier repair's output (perhaps resumed since) or another study's journal: " \
           "move it away, or repair to another file with --out (or pass --force to replace it)"
    check_target(target, force, hint)
    data = path.read_bytes()
    scan = scan_journal(path, data=data)
    write_file(target, b"".join(repaired_lines(data)), replace=force, hint=hint)
    return target, scan
