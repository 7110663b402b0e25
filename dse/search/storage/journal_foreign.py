"""Studies created in a journal dse writes by no dse version (issue 42, item 1), and the records
naming them.

Every record dse writes carries its check (:mod:`dse.search.storage.journal_format`), its study's
creation record included. In a journal that holds dse's records, a study creation record without
the check that stands after dse's first record was written by another tool (plain Optuna,
optuna-dashboard, a script pointed at the journal): it is another study in dse's file, which
Optuna's replay numbers like any other, so a study id or a trial id a reader takes for dse's may be
its. The scan (:mod:`dse.search.storage.journal_check`) names the line, and a repaired copy drops
it with every record naming it (its attributes, its trials and their records, its deletion), then
closes up the ids of what follows: the studies and trials after it keep their records, numbered as
if it had never been written (:meth:`ForeignStudies.renumbered`). A creation record whose name is
already taken creates nothing but is still no dse's: it is named and dropped the same way, which
changes nothing in the reading.

Other records without the check are accepted as before: a note, an attribute or a trial written to
dse's own study by such a tool (optuna-dashboard's notes are study and trial attributes) names
dse's ids, and an unchecked line may slip in between another writer's count and its write. So are
study creation records above dse's first record when it is not record 0 (a journal begun by plain
Optuna or by an earlier dse, which dse then appended to); above record 0 (written to an empty file)
every line is refused already (``journal_check._above_first``). A journal without any check is not
checked at all.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from typing import Any

from dse.search._optuna import JOURNAL_ID_KEY, STUDY_OPS, TRIAL_OPS
from dse.search.storage.journal_format import RECORD_LINE, check_start, record_line, without_check
from dse.search.storage.journal_replay import JournalReplay


class ForeignStudies:
    """The studies of one journal created without dse's check after dse's first record, followed
    in Optuna's replay of its ids (``replay``, which the scan follows every record in), and the
    ids a repaired copy gives the studies and trials it keeps once they are dropped."""

    def __init__(self, replay: JournalReplay) -> None:
        self.replay = replay
        self.created: dict[int, tuple[str, int]] = {}
        """Study id (as Optuna's replay numbers it) -> (its name, the line creating it, from 1)."""
        self._studies: list[int] = []
        """The ids of :attr:`created`, rising."""
        self._trials: list[int] = []
        """The ids of the trials created in them, rising (taken from the replay as it grows)."""
        self._seen = 0
        """Trials of the replay looked at for :attr:`_trials`."""

    def creation(self, record: dict[str, Any], line: int, first: int) -> str:
        """Follow ``record``, a study creation without dse's check on ``line``, in the replay
        (it takes a study id as in Optuna's) and say why it is refused (dse's first record is on
        line ``first``)."""
        name = record.get("study_name")  # any JSON value a thorough scan decodes
        text = name if isinstance(name, str) else json.dumps(name)
        sid = len(self.replay.studies)
        self.replay.create_study(text, [])
        made = len(self.replay.studies) > sid
        if made:
            self.created[sid] = (text, line)
            self._studies.append(sid)
        return (f"creates study {text!r} without dse's check, in a journal dse writes (its "
                f"first record on line {first}): written by no dse version; a "
                + ("repaired copy drops it and every record naming that study" if made else
                   "repaired copy drops it (the name is taken, so it creates nothing)"))

    def owner(self, record: dict[str, Any]) -> int | None:
        """The study created without dse's check that ``record`` names, itself or through one of
        its trials (``None``: none, or a study or trial not created yet)."""
        if not self.created:
            return None
        op = record["op_code"]
        sid: object = None
        if op in STUDY_OPS:
            sid = record.get("study_id")
        elif op in TRIAL_OPS:
            tid = record.get("trial_id")
            if isinstance(tid, int) and 0 <= tid < len(self.replay.trials):
                sid = self.replay.trials[tid].study
        return sid if isinstance(sid, int) and sid in self.created else None

    def named(self, sid: int, record: dict[str, Any]) -> str:
        """Why ``record``, naming the foreign study ``sid`` (:meth:`owner`), is refused."""
        name, line = self.created[sid]
        tid = record.get("trial_id") if record["op_code"] in TRIAL_OPS else None
        what = f"trial {tid} of study" if tid is not None else "study"
        return (f"names {what} {name!r}, created on line {line} without dse's check: a repaired "
                "copy drops it with that study")

    def study_id(self, sid: int) -> int | None:
        """Study ``sid``'s id in a repaired copy (``None``: dropped)."""
        if sid in self.created:
            return None
        return sid - bisect_left(self._studies, sid)

    def trial_id(self, tid: int) -> int | None:
        """Trial ``tid``'s id in a repaired copy (``None``: a trial of a dropped study)."""
        trials = self.replay.trials
        for t in range(self._seen, len(trials)):
            if trials[t].study in self.created:
                self._trials.append(t)
        self._seen = len(trials)
        at = bisect_left(self._trials, tid)
        if at < len(self._trials) and self._trials[at] == tid:
            return None
        return tid - at

    def renumbered(self, raw: bytes) -> bytes | None:
        """The line ``raw`` (without its newline) with the id it names as a repaired copy numbers
        it (:meth:`study_id`, :meth:`trial_id`; dse's check, if any, is written afresh by the
        copy), or ``None`` when it names a dropped study or trial. Every byte but the id is
        kept; a line in another layout than Optuna's is written in Optuna's when its id changes."""
        if not self.created:
            return raw
        m = RECORD_LINE.match(raw)
        if m is not None:
            key, text = m[2].decode(), m[3]
            if not text.isdigit():
                return raw  # a study's name: no id
            old = int(text)
            new = self.study_id(old) if key == "study_id" else self.trial_id(old)
            if new is None or new == old:
                return None if new is None else raw
            return raw[:m.start(3)] + b"%d" % new + raw[m.end(3):]
        return self._renumbered_whole(raw)

    def _renumbered_whole(self, raw: bytes) -> bytes | None:
        """:meth:`renumbered` of a line in another layout than Optuna's, decoded whole."""
        log = json.loads(without_check(raw))
        key = JOURNAL_ID_KEY.get(log["op_code"], "study_name")
        old = log.get(key)
        if key == "study_name" or not isinstance(old, int):
            return raw
        new = self.study_id(old) if key == "study_id" else self.trial_id(old)
        if new is None or new == old:
            return None if new is None else raw
        log[key] = new
        if check_start(raw) >= 0:
            return record_line(log, 0)[:-1]  # a check of its own, numbered afresh by the copy
        return json.dumps(log, separators=(",", ":")).encode()
