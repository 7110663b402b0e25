"""Optuna's replay of a journal, the one copy of its rules in dse: how Optuna's own replay
(``optuna.storages.journal._storage.JournalStorageReplayResult``) turns a journal's records into
studies and trials. Both of dse's readers of a journal follow it: the damage check
(:mod:`~dse.search.storage.journal_check`) follows the ids only (which study or trial a record
names, and whether a record created it), the one-pass reader of the read-only commands
(:mod:`~dse.search.storage.journal_snapshot`) every record whole.

- Studies are numbered by their creation records, from 0. A second creation of a live study's name
  creates nothing (a process racing to create it); the name of a deleted study may be created
  again, as a new study.
- Trials are numbered by their creation records, from 0 across the journal and from 0 within their
  study. A record of a deleted study changes nothing, a trial creation record included; a trial of
  a deleted study still takes records.
- A finished trial takes no more records; a record setting RUNNING on a running trial (an enqueued
  trial another worker took) changes nothing.
- A parameter whose distribution is incompatible with the study's earlier one for that name is
  dropped; attributes are merged key by key.

What the reader does not read exactly as Optuna would (a record naming a study or trial never
created, a second id, an op code Optuna does not know...) raises :class:`ReplayRefused`: the damage
check names it, and the reader hands the journal to Optuna's own reading.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, NoReturn, TypeGuard

from optuna.distributions import (
    BaseDistribution,
    check_distribution_compatibility,
    json_to_distribution,
)
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from dse.search._optuna import JOURNAL_ID_KEY, STUDY_OPS, JournalOperation
from dse.search.storage.journal_format import RecordNumbers, without_check

OP = JournalOperation
_ID_KEY = {op: key.encode() for op, key in JOURNAL_ID_KEY.items()}
"""The id each operation names first (the key Optuna's replay reads), as bytes."""
_USER_ATTR, _SYSTEM_ATTR = (b"%d" % OP.SET_TRIAL_USER_ATTR, b"%d" % OP.SET_TRIAL_SYSTEM_ATTR)
"""The op codes of attribute records, as their line spells them (the replay's hot path)."""
_IDS_ONLY: dict[str, Any] = {"datetime_start": None}
"""The creation record of a trial the damage check follows by its ids alone."""


class ReplayRefused(Exception):
    """The journal holds something the replay does not read exactly as Optuna would."""


def refuse() -> NoReturn:
    raise ReplayRefused


class ReplayedTrial:
    """A trial while the journal is replayed (made a :class:`FrozenTrial` at the end)."""

    __slots__ = ("complete_text", "dist_texts", "distributions", "finished",
                 "intermediate_values", "number", "params", "start_text", "state", "study",
                 "system_attrs", "user_attrs", "values")

    def __init__(self, study: int, number: int, log: dict[str, Any], dists: Distributions) -> None:
        self.study = study
        self.number = number
        self.state = TrialState(log.get("state", TrialState.RUNNING.value))
        self.finished = self.state.is_finished()
        self.dist_texts: dict[str, str] = dict(log.get("distributions", {}))
        self.distributions: dict[str, BaseDistribution] = {
            k: dists.get(v) for k, v in self.dist_texts.items()}
        self.params: dict[str, Any] = {
            k: self.distributions[k].to_external_repr(p) for k, p in log.get("params", {}).items()}
        self.start_text: str | None = log["datetime_start"]
        self.complete_text: str | None = log.get("datetime_complete")
        value, values = log.get("value"), log.get("values")
        if value is not None and values is not None:
            refuse()  # Optuna's FrozenTrial refuses both
        self.values: list[float] | None = [value] if value is not None else (
            list(values) if values is not None else None)
        self.user_attrs: dict[str, Any] = dict(log.get("user_attrs", {}))
        self.system_attrs: dict[str, Any] = dict(log.get("system_attrs", {}))
        self.intermediate_values: dict[int, float] = {
            int(k): v for k, v in log.get("intermediate_values", {}).items()}

    def frozen(self, trial_id: int) -> FrozenTrial:
        return FrozenTrial(
            number=self.number, state=self.state, value=None, values=self.values,
            datetime_start=_time(self.start_text), datetime_complete=_time(self.complete_text),
            params=self.params, distributions=self.distributions, user_attrs=self.user_attrs,
            system_attrs=self.system_attrs, intermediate_values=self.intermediate_values,
            trial_id=trial_id)

    def to_state(self) -> list[Any]:
        return [self.study, self.number, self.state.value, self.values, self.start_text,
                self.complete_text, self.params, self.dist_texts, self.user_attrs,
                self.system_attrs, self.intermediate_values]

    @classmethod
    def from_state(cls, state: list[Any], dists: Distributions) -> ReplayedTrial:
        trial = cls.__new__(cls)
        (trial.study, trial.number, value, trial.values, trial.start_text, trial.complete_text,
         trial.params, trial.dist_texts, trial.user_attrs, trial.system_attrs,
         trial.intermediate_values) = state
        trial.state = TrialState(value)
        trial.finished = trial.state.is_finished()
        trial.distributions = {k: dists.get(v) for k, v in trial.dist_texts.items()}
        return trial


def _time(text: str | None) -> datetime | None:
    """A journal time as Optuna's replay reads it: naive, in the local time zone."""
    if text is None:
        return None
    return datetime.fromisoformat(text).astimezone().replace(tzinfo=None)


class Distributions:
    """Distributions by their JSON text, each decoded once (a study repeats a few of them)."""

    def __init__(self) -> None:
        self._by_text: dict[str, BaseDistribution] = {}

    def get(self, text: str) -> BaseDistribution:
        found = self._by_text.get(text)
        if found is None:
            found = self._by_text[text] = json_to_distribution(text)
        return found


class ReplayedStudy:
    """A study while the journal is replayed (the damage check gives it no directions)."""

    def __init__(self, name: str, directions: list[StudyDirection]) -> None:
        self.name = name
        self.directions = directions
        self.user_attrs: dict[str, Any] = {}
        self.system_attrs: dict[str, Any] = {}
        self.trial_ids: list[int] = []
        self.first_with: dict[str, int] = {}
        """Parameter name -> position (in ``trial_ids``) of the study's first trial having it."""
        self.deleted = False

    def to_state(self) -> list[Any]:
        return [self.name, [d.value for d in self.directions], self.user_attrs, self.system_attrs,
                self.trial_ids, self.first_with, self.deleted]

    @classmethod
    def from_state(cls, state: list[Any]) -> ReplayedStudy:
        name, directions, user_attrs, system_attrs, trial_ids, first_with, deleted = state
        study = cls(name, [StudyDirection(d) for d in directions])
        study.user_attrs, study.system_attrs = user_attrs, system_attrs
        study.trial_ids, study.first_with, study.deleted = trial_ids, first_with, deleted
        return study


class JournalReplay:
    """Optuna's replay of the records of one journal, in order (see the module): the studies and
    trials they make, and where a read of the journal stands."""

    def __init__(self) -> None:
        self.studies: list[ReplayedStudy] = []
        """Every study created, by id (a deleted one is marked so)."""
        self.names: dict[str, int] = {}
        """The live studies by name (the damage check's quick scan names them by their JSON text)."""
        self.trials: list[ReplayedTrial] = []
        """Every trial created, by id."""
        self.dists = Distributions()
        self.strings: dict[bytes, Any] = {}
        self.attr_rests: list[bytes] = []
        self.attr_targets: list[tuple[str, dict[str, Any] | None]] = []
        self.lines = 0
        """Lines read so far."""
        self.numbers = RecordNumbers()
        """dse's record numbers read so far (:mod:`dse.search.storage.journal_format`)."""

    def to_state(self) -> list[Any]:
        """Everything a later read resumes from, as plain data (for :mod:`marshal`)."""
        return [[s.to_state() for s in self.studies], self.names,
                [t.to_state() for t in self.trials], self.lines, list(self.numbers.state())]

    @classmethod
    def from_state(cls, state: list[Any]) -> JournalReplay:
        replay = cls()
        studies, replay.names, trials, replay.lines, numbers = state
        replay.numbers = RecordNumbers(tuple(numbers))
        replay.studies = [ReplayedStudy.from_state(s) for s in studies]
        replay.trials = [ReplayedTrial.from_state(t, replay.dists) for t in trials]
        return replay

    # --- the ids: the damage check and the reader ----------------------------------------------

    def created(self, sid: object) -> TypeGuard[int]:
        """Whether a creation record made study ``sid`` (live or since deleted)."""
        return isinstance(sid, int) and 0 <= sid < len(self.studies)

    @property
    def last_study(self) -> int:
        """The study of the trial created last (0 before any): where a repaired copy puts a
        placeholder for a lost trial creation record."""
        return self.trials[-1].study if self.trials else 0

    def study(self, sid: int) -> ReplayedStudy | None:
        """The live study ``sid`` (``None`` if deleted); refused if never created."""
        if sid >= len(self.studies):
            refuse()  # dse's damage check names it; Optuna would ignore the record
        found = self.studies[sid]
        return None if found.deleted else found

    def updatable(self, tid: int) -> ReplayedTrial | None:
        """Trial ``tid`` if records may still change it (not finished; as in Optuna, a trial of
        a deleted study still takes records); refused if never created."""
        if tid >= len(self.trials):
            refuse()  # dse's damage check names it; Optuna would ignore the record
        trial = self.trials[tid]
        return None if trial.finished else trial

    def create_study(self, name: str, directions: list[StudyDirection]) -> None:
        """A study creation record."""
        if name in self.names:
            return  # a process racing to create the same study: the first creation stands
        self.names[name] = len(self.studies)
        self.studies.append(ReplayedStudy(name, directions))

    def delete_study(self, sid: int) -> None:
        """A study deletion record (of a study created: :meth:`study`)."""
        study = self.study(sid)
        if study is not None:
            study.deleted = True
            del self.names[study.name]

    def create_trial(self, sid: int, log: dict[str, Any] = _IDS_ONLY) -> None:
        """A trial creation record of study ``sid`` (created: :meth:`study`), the record ``log``
        (the damage check gives none: the trial's ids alone)."""
        study = self.study(sid)
        if study is None:
            return
        study.trial_ids.append(len(self.trials))
        trial = ReplayedTrial(sid, len(study.trial_ids) - 1, log, self.dists)
        self.trials.append(trial)
        for name in trial.params:  # a trial added whole (``Study.add_trial``)
            study.first_with.setdefault(name, trial.number)

    def placeholder_trials(self, count: int, sid: int) -> None:
        """``count`` trials a repaired copy creates with placeholder records (for creation records
        lost or altered) in study ``sid``: counted, not numbered within their study (the damage
        check reads ids alone)."""
        self.trials += [ReplayedTrial(sid, -1, _IDS_ONLY, self.dists) for _ in range(count)]

    # --- whole records: the reader -------------------------------------------------------------

    def decoded(self, raw: bytes) -> Any:
        """A short JSON text (a name, a distribution) decoded once however often it recurs."""
        value = self.strings.get(raw)
        if value is None:
            value = self.strings[raw] = json.loads(raw)
        return value

    def run(self, rows: list[tuple[bytes, bytes, bytes, bytes]]) -> None:
        """Apply the records (op code, id key, id, rest of the line) in order."""
        trials, rests, targets = self.trials, self.attr_rests, self.attr_targets
        for op, key, ident, rest in rows:
            if op in (_USER_ATTR, _SYSTEM_ATTR):  # attributes, most of a journal: the hot path
                # Decoded later, all together; whether the trial takes it is decided now, in order.
                tid = int(ident)
                if key != b"trial_id" or rest[:1] != b"," or tid >= len(trials):
                    refuse()  # a record naming a trial never created: dse's check names it
                trial = trials[tid]
                rests.append(rest)
                if op == _USER_ATTR:
                    targets.append(("user_attr", None if trial.finished else trial.user_attrs))
                else:
                    targets.append(("system_attr", None if trial.finished else trial.system_attrs))
            else:
                self.apply(int(op), key, ident, rest)

    def apply(self, op: int, key: bytes, ident: bytes, rest: bytes) -> None:
        """Apply one record other than an attribute's."""
        if _ID_KEY.get(op, key) != key:
            refuse()  # e.g. a trial record naming a study: Optuna would fail on it
        if op == OP.SET_TRIAL_PARAM:
            self.param(int(ident), rest)
        elif op == OP.CREATE_STUDY:
            self.study_creation(self.decoded(ident), _fields(rest, key))
        elif op == OP.DISCARD_TRIALS:
            _fields(rest, key)
        elif op in STUDY_OPS:
            self.study_record(op, int(ident), _fields(rest, key))
        elif op in (OP.SET_TRIAL_STATE_VALUES, OP.SET_TRIAL_INTERMEDIATE_VALUE):
            self.trial_record(op, int(ident), _fields(rest, key))
        else:
            refuse()  # an op code Optuna does not know

    def study_creation(self, name: Any, log: dict[str, Any]) -> None:
        directions = [StudyDirection(d) for d in log["directions"]]
        if not isinstance(name, str):
            refuse()
        self.create_study(name, directions)

    def study_record(self, op: int, sid: int, log: dict[str, Any]) -> None:
        if op == OP.CREATE_TRIAL:
            self.create_trial(sid, log)
        elif op == OP.DELETE_STUDY:
            self.delete_study(sid)
        else:  # SET_STUDY_USER_ATTR, SET_STUDY_SYSTEM_ATTR
            study = self.study(sid)
            if study is None:
                return
            user = op == OP.SET_STUDY_USER_ATTR
            attr = log["user_attr" if user else "system_attr"]
            if len(attr) != 1:
                refuse()  # Optuna asserts one key per record
            (study.user_attrs if user else study.system_attrs).update(attr)

    def trial_record(self, op: int, tid: int, log: dict[str, Any]) -> None:
        trial = self.updatable(tid)
        if trial is None:
            return
        if op == OP.SET_TRIAL_INTERMEDIATE_VALUE:
            trial.intermediate_values[log["step"]] = log["intermediate_value"]
            return
        state = TrialState(log["state"])
        if state == TrialState.RUNNING and trial.state == TrialState.RUNNING:
            return  # another worker already runs this (enqueued) trial
        if state == TrialState.RUNNING:
            trial.start_text = log["datetime_start"]
        if state.is_finished():
            trial.complete_text = log["datetime_complete"]
        trial.state = state
        trial.finished = state.is_finished()
        if log["values"] is not None:
            trial.values = list(log["values"])

    def param(self, tid: int, rest: bytes) -> None:
        trial = self.updatable(tid)
        rest = without_check(rest)
        value_at = rest.find(b',"param_value_internal":')
        dist_at = rest.find(b',"distribution":', value_at)
        if rest.startswith(b',"param_name":') and rest.endswith(b"}") and 0 < value_at < dist_at:
            # Optuna's layout. The keys cannot occur inside a JSON string (a quote there is
            # escaped), and each part is decoded (once per distinct text) and checked.
            name = self.decoded(rest[14:value_at])
            value = self.decoded(rest[value_at + 24:dist_at])
            text = self.decoded(rest[dist_at + 16:-1])
        else:
            log = _fields(rest, b"trial_id")
            name, value, text = log["param_name"], log["param_value_internal"], log["distribution"]
        if type(name) is not str or type(text) is not str or type(value) not in (int, float):
            refuse()
        if trial is None:
            return
        dist = self.dists.get(text)
        study = self.studies[trial.study]
        first = study.first_with.get(name)
        if first is not None:
            earlier = self.trials[study.trial_ids[first]]
            if earlier.distributions[name] is not dist:
                try:
                    check_distribution_compatibility(earlier.distributions[name], dist)
                except Exception:
                    return  # Optuna's replay drops an incompatible parameter
        if first is None or trial.number < first:
            study.first_with[name] = trial.number
        trial.params[name] = dist.to_external_repr(value)
        trial.distributions[name] = dist
        trial.dist_texts[name] = text

    def apply_attrs(self) -> None:
        """Decode every attribute record in one call and merge them into their trials in order."""
        if not self.attr_rests:
            return
        decoded = json.loads(b"[{" + b",{".join(r[1:] for r in self.attr_rests) + b"]")
        if len(decoded) != len(self.attr_rests):
            refuse()  # lines that are not one record each
        for (key, target), record in zip(self.attr_targets, decoded, strict=True):
            attr = record[key]
            if type(attr) is not dict:
                refuse()
            if target is not None:
                if len(attr) != 1:
                    refuse()  # Optuna asserts one key per record
                target.update(attr)


def _fields(rest: bytes, key: bytes) -> dict[str, Any]:
    """The fields of a record after its id ``key`` (``rest`` starts after the id)."""
    if rest == b"}":
        return {}
    if rest[:1] != b",":
        refuse()
    fields = json.loads(b"{" + rest[1:])
    if type(fields) is not dict or key.decode() in fields:
        refuse()  # a second id: Optuna would read the last one
    return fields
