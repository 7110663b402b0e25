"""A study journal read in one pass, for the commands that only read it (status, pareto, export,
report, plot).

Opening a journal through Optuna (``JournalStorage``) decodes every line as a whole, copies a trial
for each of its ~45 records and, after dse's damage scan (:mod:`dse.search.storage.journal_check`),
reads the file a second time: about 6 s for a study of 3,000 trials (25 MB) on a loaded 2-core
machine. :func:`read_snapshot` reads the file once and applies the same rules as Optuna's replay
(``optuna.storages.journal._storage.JournalStorageReplayResult``): studies and trials numbered by
their creation records, a second creation of a name ignored, records of a deleted study ignored,
nothing changed on a finished trial, a parameter whose distribution is incompatible with the study's
earlier one ignored, attributes merged key by key. It decodes only what is not fixed by the record's
shape: the leading ``op_code``, ``worker_id`` and id of every line are matched, the parameter
records (a quarter of the file) are split at their keys with names, values and distributions decoded
once per distinct text, and the attribute records (over half) are decoded together in one call.
About 1 s for that study; the replay is then kept beside the journal (``NAME.journal.snapshot``, a
cache checked against the journal's bytes) so that later reads decode only the records added since:
about 0.2 s.

It refuses, by returning ``None``, anything it does not read exactly as Optuna would: any damage
(the caller then opens the journal as before, so the damage is reported or the torn tail cut off
as :func:`dse.search.storage.journal_writing.journal_storage` does), a record naming a trial or study never
created, a last line without its newline (a write in progress, or torn), and lines in another
layout than Optuna's. A :class:`JournalSnapshot` serves the result as a read-only Optuna storage,
so the callers get an ordinary :class:`optuna.Study` with the same frozen trials.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import re
import sys
from collections.abc import Container, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

from optuna.distributions import (
    BaseDistribution,
    check_distribution_compatibility,
    json_to_distribution,
)
from optuna.storages import BaseStorage, JournalStorage
from optuna.storages.journal import BaseJournalBackend
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from dse.errors import DseInputError
from dse.safe_write import write_file
from dse.search._optuna import JOURNAL_ID_KEY, STUDY_OPS, FrozenStudy, JournalOperation
from dse.search.storage.journal_check import check_journal
from dse.search.storage.journal_format import RecordNumbers, checks_hold, without_check

_STRING = rb'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"'
_LINE = re.compile(
    rb'^\{"op_code":(0|[1-9]\d?),"worker_id":"[\x20\x21\x23-\x5b\x5d-\x7e]*",'
    rb'"(study_id|trial_id|study_name)":(0|[1-9]\d*|' + _STRING + rb")(.*)$", re.MULTILINE)
"""A record's start as Optuna writes it (``json.dumps`` with compact separators, ``op_code``,
``worker_id`` and the id first): the op code, the id's key and value (a number, or a study's
name) and the rest of the line. The worker id is only matched (printable ASCII without quote or
backslash, so valid JSON), never decoded: no record of a reader depends on it."""
OP = JournalOperation
_ID_KEY = {op: key.encode() for op, key in JOURNAL_ID_KEY.items()}
"""The id each operation names first (the key Optuna's replay reads), as bytes."""
_USER_ATTR, _SYSTEM_ATTR = (b"%d" % OP.SET_TRIAL_USER_ATTR, b"%d" % OP.SET_TRIAL_SYSTEM_ATTR)
"""The op codes of attribute records, as their line spells them (the replay's hot path)."""


class _Refused(Exception):
    """The journal holds something :func:`read_snapshot` does not read as Optuna would."""


def _refuse() -> NoReturn:
    raise _Refused


class _Trial:
    """A trial while the journal is replayed (made a :class:`FrozenTrial` at the end)."""

    __slots__ = ("complete_text", "dist_texts", "distributions", "finished",
                 "intermediate_values", "number", "params", "start_text", "state", "study",
                 "system_attrs", "user_attrs", "values")

    def __init__(self, study: int, number: int, log: dict[str, Any], dists: _Distributions) -> None:
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
            _refuse()  # Optuna's FrozenTrial refuses both
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
    def from_state(cls, state: list[Any], dists: _Distributions) -> _Trial:
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


class _Distributions:
    """Distributions by their JSON text, each decoded once (a study repeats a few of them)."""

    def __init__(self) -> None:
        self._by_text: dict[str, BaseDistribution] = {}

    def get(self, text: str) -> BaseDistribution:
        found = self._by_text.get(text)
        if found is None:
            found = self._by_text[text] = json_to_distribution(text)
        return found


class _Study:
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
    def from_state(cls, state: list[Any]) -> _Study:
        name, directions, user_attrs, system_attrs, trial_ids, first_with, deleted = state
        study = cls(name, [StudyDirection(d) for d in directions])
        study.user_attrs, study.system_attrs = user_attrs, system_attrs
        study.trial_ids, study.first_with, study.deleted = trial_ids, first_with, deleted
        return study


class _Replay:
    """Optuna's replay rules over the records of one journal (see the module)."""

    def __init__(self) -> None:
        self.studies: list[_Study] = []
        self.names: dict[str, int] = {}
        self.trials: list[_Trial] = []
        self.dists = _Distributions()
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
    def from_state(cls, state: list[Any]) -> _Replay:
        replay = cls()
        studies, replay.names, trials, replay.lines, numbers = state
        replay.numbers = RecordNumbers(tuple(numbers))
        replay.studies = [_Study.from_state(s) for s in studies]
        replay.trials = [_Trial.from_state(t, replay.dists) for t in trials]
        return replay

    def decoded(self, raw: bytes) -> Any:
        """A short JSON text (a name, a distribution) decoded once however often it recurs."""
        value = self.strings.get(raw)
        if value is None:
            value = self.strings[raw] = json.loads(raw)
        return value

    def study(self, sid: int) -> _Study | None:
        """The live study ``sid`` (``None`` if deleted); refused if never created."""
        if sid >= len(self.studies):
            _refuse()  # dse's damage check names it; Optuna would ignore the record
        found = self.studies[sid]
        return None if found.deleted else found

    def updatable(self, tid: int) -> _Trial | None:
        """Trial ``tid`` if records may still change it (not finished; as in Optuna, a trial of
        a deleted study still takes records); refused if never created."""
        if tid >= len(self.trials):
            _refuse()  # dse's damage check names it; Optuna would ignore the record
        trial = self.trials[tid]
        return None if trial.finished else trial

    def run(self, rows: list[tuple[bytes, bytes, bytes, bytes]]) -> None:
        """Apply the records (op code, id key, id, rest of the line) in order."""
        trials, rests, targets = self.trials, self.attr_rests, self.attr_targets
        for op, key, ident, rest in rows:
            if op in (_USER_ATTR, _SYSTEM_ATTR):  # attributes, most of a journal: the hot path
                # Decoded later, all together; whether the trial takes it is decided now, in order.
                tid = int(ident)
                if key != b"trial_id" or rest[:1] != b"," or tid >= len(trials):
                    _refuse()  # a record naming a trial never created: dse's check names it
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
            _refuse()  # e.g. a trial record naming a study: Optuna would fail on it
        if op == OP.SET_TRIAL_PARAM:
            self.param(int(ident), rest)
        elif op == OP.CREATE_STUDY:
            self.create_study(self.decoded(ident), _fields(rest, key))
        elif op == OP.DISCARD_TRIALS:
            _fields(rest, key)
        elif op in STUDY_OPS:
            self.study_record(op, int(ident), _fields(rest, key))
        elif op in (OP.SET_TRIAL_STATE_VALUES, OP.SET_TRIAL_INTERMEDIATE_VALUE):
            self.trial_record(op, int(ident), _fields(rest, key))
        else:
            _refuse()  # an op code Optuna does not know

    def create_study(self, name: Any, log: dict[str, Any]) -> None:
        directions = [StudyDirection(d) for d in log["directions"]]
        if not isinstance(name, str):
            _refuse()
        if name in self.names:
            return  # a process racing to create the same study: the first creation stands
        self.names[name] = len(self.studies)
        self.studies.append(_Study(name, directions))

    def study_record(self, op: int, sid: int, log: dict[str, Any]) -> None:
        study = self.study(sid)
        if study is None:
            return
        if op == OP.DELETE_STUDY:
            study.deleted = True
            del self.names[study.name]
        elif op in (OP.SET_STUDY_USER_ATTR, OP.SET_STUDY_SYSTEM_ATTR):
            user = op == OP.SET_STUDY_USER_ATTR
            attr = log["user_attr" if user else "system_attr"]
            if len(attr) != 1:
                _refuse()  # Optuna asserts one key per record
            (study.user_attrs if user else study.system_attrs).update(attr)
        else:  # CREATE_TRIAL
            study.trial_ids.append(len(self.trials))
            trial = _Trial(sid, len(study.trial_ids) - 1, log, self.dists)
            self.trials.append(trial)
            for name in trial.params:  # a trial added whole (``Study.add_trial``)
                study.first_with.setdefault(name, trial.number)

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
            _refuse()
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
            _refuse()  # lines that are not one record each
        for (key, target), record in zip(self.attr_targets, decoded, strict=True):
            attr = record[key]
            if type(attr) is not dict:
                _refuse()
            if target is not None:
                if len(attr) != 1:
                    _refuse()  # Optuna asserts one key per record
                target.update(attr)


def _fields(rest: bytes, key: bytes) -> dict[str, Any]:
    """The fields of a record after its id ``key`` (``rest`` starts after the id)."""
    if rest == b"}":
        return {}
    if rest[:1] != b",":
        _refuse()
    fields = json.loads(b"{" + rest[1:])
    if type(fields) is not dict or key.decode() in fields:
        _refuse()  # a second id: Optuna would read the last one
    return fields


def read_journal(path: Path, study: str = "STUDY") -> BaseStorage:
    """The journal at ``path`` for a command that only reads it, never writing to it (a damaged tail
    is left out, not cut off; nothing is created beside it but the snapshot cache, whose write may
    fail): a :class:`JournalSnapshot`, or Optuna's replay of the journal's bytes when the snapshot
    refuses them. Damage before the tail is refused as
    :func:`dse.search.storage.journal_check.check_journal` refuses it (``study`` names the study in
    its ``dse repair`` advice); an unreadable file raises :class:`OSError`."""
    data = path.read_bytes()
    snapshot = read_snapshot(path, data=data)
    if snapshot is not None:
        return snapshot
    scan = check_journal(path, study, thorough=False, data=data)
    data = data[:len(data) - scan.tail_bytes]
    if scan.tail_bytes:
        snapshot = read_snapshot(path, data=data)
    if snapshot is not None:
        return snapshot
    try:
        return JournalStorage(_BytesBackend(path, data))
    except Exception:
        # The quick scan reads only the start of each line; Optuna's reading failed on the rest
        # of one: find and name it.
        check_journal(path, study, data=data)
        raise


class _BytesBackend(BaseJournalBackend):
    """A journal's bytes as Optuna's journal storage reads them (every line a record); no
    writes."""

    def __init__(self, path: Path, data: bytes) -> None:
        self._path = path
        self._lines = data.splitlines()

    def read_logs(self, log_number_from: int) -> Iterator[dict[str, Any]]:
        for line in self._lines[log_number_from:]:
            yield json.loads(line)

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        raise ReadOnlyError(f"{self._path}: read for a read-only command")


def read_snapshot(path: Path, cache: bool = True, data: bytes | None = None
                  ) -> JournalSnapshot | None:
    """Every study of the journal at ``path`` (or of its first bytes ``data``) as Optuna's replay
    reads it, or ``None`` when the journal is damaged or holds what this reader does not read
    exactly as Optuna (see the module): the caller then opens it through Optuna.

    With ``cache``, the replay of the journal up to some line is kept beside it
    (:func:`cache_path`) and only the lines after it are read (:func:`_load_cache`)."""
    data = path.read_bytes() if data is None else data
    if data and not data.endswith(b"\n"):
        return None
    replay, start = _load_cache(path, data) if cache else (None, 0)
    replay = replay or _Replay()
    try:
        rows = _LINE.findall(data, start)
        lines = data.count(b"\n", start)
        if len(rows) != lines:
            return None  # a line not in Optuna's layout (damage, or another writer's)
        if not checks_hold(data, start, replay.lines, replay.numbers):
            return None  # a record altered, repeated or lost: the scan names it
        replay.lines += lines
        replay.run(rows)
        replay.apply_attrs()
        snapshot = JournalSnapshot(path, replay)
    except (_Refused, ValueError, KeyError, TypeError, AttributeError, IndexError,
            RecursionError):
        return None
    if cache and len(data) - start >= CACHE_AFTER_BYTES:
        _write_cache(path, data, replay)
    return snapshot


CACHE_SUFFIX = ".snapshot"
CACHE_FORMAT = 2
CACHE_AFTER_BYTES = 1_000_000
"""The cache is rewritten when at least this much of the journal was read past it (about 120
trials of the default study): a study read while it runs is not rewritten at every look."""


def cache_path(path: Path) -> Path:
    """Where the replay of the journal ``path`` is cached: ``NAME.journal.snapshot`` beside it.
    Only a cache: deleting it costs the next read a full pass, nothing else."""
    return path.with_name(path.name + CACHE_SUFFIX)


def _cache_key() -> list[Any]:
    import optuna

    return ["dse journal snapshot", CACHE_FORMAT, optuna.__version__, list(sys.version_info[:2])]


def _digest(data: bytes | memoryview) -> bytes:
    return hashlib.blake2b(data, digest_size=20).digest()


def _load_cache(path: Path, data: bytes) -> tuple[_Replay | None, int]:
    """The cached replay and the journal offset it reaches, when the cache is this dse's and
    Optuna's, intact (its own digest), and the journal still starts with exactly the bytes it
    read (their digest: a journal repaired, replaced or cut is read afresh); else (None, 0)."""
    try:
        blob = cache_path(path).read_bytes()
        head, body = blob[:20], blob[20:]
        if _digest(body) != head:
            return None, 0
        key, size, digest, state = marshal.loads(body)
        if key != _cache_key() or not 0 < size <= len(data) or data[size - 1:size] != b"\n":
            return None, 0
        if _digest(memoryview(data)[:size]) != digest:
            return None, 0
        return _Replay.from_state(state), size
    except (OSError, ValueError, EOFError, TypeError, KeyError, IndexError):
        return None, 0


def _write_cache(path: Path, data: bytes, replay: _Replay) -> None:
    """Keep ``replay`` (of all of ``data``) beside the journal, atomically; a failure to write
    (a read-only folder, a full disk) is only a cache not kept."""
    try:
        body = marshal.dumps([_cache_key(), len(data), _digest(data), replay.to_state()])
        write_file(cache_path(path), _digest(body) + body, durable=False)
    except (DseInputError, ValueError):
        pass


class JournalSnapshot(BaseStorage):
    """A read-only Optuna storage holding the studies :func:`read_snapshot` read: give it to
    ``optuna.load_study``. Every write raises :class:`ReadOnlyError`."""

    def __init__(self, path: Path, replay: _Replay) -> None:
        self.path = path
        self._names = dict(replay.names)
        self._studies = replay.studies
        self._trials = [t.frozen(i) for i, t in enumerate(replay.trials)]

    def _study(self, study_id: int) -> _Study:
        if not 0 <= study_id < len(self._studies) or self._studies[study_id].deleted:
            raise KeyError("Record does not exist.")
        return self._studies[study_id]

    def get_study_id_from_name(self, study_name: str) -> int:
        if study_name not in self._names:
            raise KeyError(f"No such study {study_name}.")
        return self._names[study_name]

    def get_study_name_from_id(self, study_id: int) -> str:
        return self._study(study_id).name

    def get_study_directions(self, study_id: int) -> list[StudyDirection]:
        return list(self._study(study_id).directions)

    def get_study_user_attrs(self, study_id: int) -> dict[str, Any]:
        return self._study(study_id).user_attrs

    def get_study_system_attrs(self, study_id: int) -> dict[str, Any]:
        return self._study(study_id).system_attrs

    def get_all_studies(self) -> list[Any]:
        return [FrozenStudy(study_name=s.name, direction=None, user_attrs=s.user_attrs,
                            system_attrs=s.system_attrs, study_id=sid, directions=s.directions)
                for sid, s in enumerate(self._studies) if not s.deleted]

    def get_trial(self, trial_id: int) -> FrozenTrial:
        if not 0 <= trial_id < len(self._trials):
            raise KeyError("Record does not exist.")
        return self._trials[trial_id]

    def get_all_trials(self, study_id: int, deepcopy: bool = True,
                       states: Container[TrialState] | None = None) -> list[FrozenTrial]:
        import copy

        found = [t for t in (self._trials[i] for i in self._study(study_id).trial_ids)
                 if states is None or t.state in states]
        return copy.deepcopy(found) if deepcopy else found

    # --- writes: none ------------------------------------------------------------------------

    def _read_only(self) -> NoReturn:
        raise ReadOnlyError(f"{self.path}: a snapshot read for a read-only command")

    def create_new_study(self, directions: Sequence[StudyDirection],
                         study_name: str | None = None) -> int:
        self._read_only()

    def delete_study(self, study_id: int) -> None:
        self._read_only()

    def set_study_user_attr(self, study_id: int, key: str, value: Any) -> None:
        self._read_only()

    def set_study_system_attr(self, study_id: int, key: str, value: Any) -> None:
        self._read_only()

    def create_new_trial(self, study_id: int, template_trial: FrozenTrial | None = None) -> int:
        self._read_only()

    def set_trial_param(self, trial_id: int, param_name: str, param_value_internal: float,
                        distribution: BaseDistribution) -> None:
        self._read_only()

    def set_trial_state_values(self, trial_id: int, state: TrialState,
                               values: Sequence[float] | None = None) -> bool:
        self._read_only()

    def set_trial_intermediate_value(self, trial_id: int, step: int,
                                     intermediate_value: float) -> None:
        self._read_only()

    def set_trial_user_attr(self, trial_id: int, key: str, value: Any) -> None:
        self._read_only()

    def set_trial_system_attr(self, trial_id: int, key: str, value: Any) -> None:
        self._read_only()


class ReadOnlyError(RuntimeError):
    """A write to a :class:`JournalSnapshot` (a read-only command tried to change a study)."""
