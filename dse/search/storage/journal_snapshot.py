"""A study journal read in one pass, for the commands that only read it (status, pareto, export,
report, plot).

Opening a journal through Optuna (``JournalStorage``) decodes every line as a whole, copies a trial
for each of its ~45 records and, after dse's damage scan (:mod:`dse.search.storage.journal_check`),
reads the file a second time: about 6 s for a study of 3,000 trials (25 MB) on a loaded 2-core
machine. :func:`read_snapshot` reads the file once and applies the same rules as Optuna's replay
(``optuna.storages.journal._storage.JournalStorageReplayResult``, followed in
:class:`~dse.search.storage.journal_replay.JournalReplay`, whose ids the damage check follows
too): studies and trials numbered by
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
import sys
from collections.abc import Container, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from optuna.distributions import (
    BaseDistribution,
)
from optuna.storages import BaseStorage, JournalStorage
from optuna.storages.journal import BaseJournalBackend
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from dse.errors import DseInputError
from dse.safe_write import write_file
from dse.search._optuna import FrozenStudy
from dse.search.storage.journal_check import check_journal
from dse.search.storage.journal_format import RECORD_LINE, checks_hold
from dse.search.storage.journal_replay import JournalReplay, ReplayedStudy, ReplayRefused
from dse.search.storage.journal_sequence import was_cut


def read_journal(path: Path, study: str | None = None) -> BaseStorage:
    """The journal at ``path`` for a command that only reads it, never writing to it (a damaged tail
    is left out, not cut off; nothing is created beside it but the snapshot cache, whose write may
    fail): a :class:`JournalSnapshot`, or Optuna's replay of the journal's bytes when the snapshot
    refuses them. Damage before the tail is refused as
    :func:`dse.search.storage.journal_check.check_journal` refuses it (``study`` names the study
    in its ``dse repair`` advice), a journal cut since dse wrote to it included; an unreadable
    file raises :class:`OSError`."""
    data = path.read_bytes()
    snapshot = read_snapshot(path, data=data)
    if snapshot is not None and not was_cut(path, data):
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
    replay = replay or JournalReplay()
    try:
        rows = RECORD_LINE.findall(data, start)
        lines = data.count(b"\n", start)
        if len(rows) != lines:
            return None  # a line not in Optuna's layout (damage, or another writer's)
        if not checks_hold(data, start, replay.lines, replay.numbers):
            return None  # a record altered, repeated or lost: the scan names it
        replay.lines += lines
        replay.run(rows)
        replay.apply_attrs()
        snapshot = JournalSnapshot(path, replay)
    except (ReplayRefused, ValueError, KeyError, TypeError, AttributeError, IndexError,
            RecursionError):
        return None
    if cache and len(data) - start >= CACHE_AFTER_BYTES:
        _write_cache(path, data, replay)
    return snapshot


CACHE_SUFFIX = ".snapshot"
CACHE_FORMAT = 3
"""3: a cache written before a study created without dse's check was refused is not resumed."""
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


def _load_cache(path: Path, data: bytes) -> tuple[JournalReplay | None, int]:
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
        return JournalReplay.from_state(state), size
    except (OSError, ValueError, EOFError, TypeError, KeyError, IndexError):
        return None, 0


def _write_cache(path: Path, data: bytes, replay: JournalReplay) -> None:
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

    def __init__(self, path: Path, replay: JournalReplay) -> None:
        self.path = path
        self._names = dict(replay.names)
        self._studies = replay.studies
        self._trials = [t.frozen(i) for i, t in enumerate(replay.trials)]

    def _study(self, study_id: int) -> ReplayedStudy:
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
