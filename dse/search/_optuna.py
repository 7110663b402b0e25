"""Every private name of Optuna that dse uses, in one place.

dse reaches past Optuna's public API where the public calls are too slow (one fsynced journal
append or database round trip per trial attribute, where dse writes ~25 per trial), where Optuna
has no public form of what dse needs (a trial's storage id, the key constrained samplers read, the
hypervolume of arbitrary points, a gRPC proxy server dse can add its own calls to), or to hand a
study from one sampler to another. Optuna may rename any of these in a minor release: importing this
module then fails with one message naming the name and the Optuna version, and
``tests/test_optuna_private.py`` exercises each one, so an upgrade breaks here and nowhere else.

Where a public way exists it is named beside the name (and used when the private one is absent
where that costs only speed). Written against Optuna 4.x-5.x.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import optuna
from optuna.storages import BaseStorage, JournalStorage, RDBStorage
from optuna.trial import FrozenTrial, Trial, TrialState


class OptunaPrivateError(ImportError):
    """An Optuna private name dse relies on is missing (Optuna was upgraded)."""


def _missing(what: str, exc: BaseException | None = None) -> OptunaPrivateError:
    return OptunaPrivateError(
        f"dse needs Optuna's private {what}, which Optuna {optuna.__version__} lacks "
        f"({exc or 'not found'}); install an Optuna dse supports (see pyproject.toml) or update "
        "dse/search/_optuna.py")


try:
    # The cache Optuna wraps RDB storages in; dse unwraps it to batch writes on the RDB itself.
    # No public form.
    from optuna.storages import _CachedStorage

    # The base class of journal file locks: dse's FlockLock subclasses it (the public locks are
    # its subclasses, and Optuna checks the lock against this class). No public form.
    from optuna.storages.journal._file import BaseJournalFileLock

    # The op codes of journal records: dse appends a trial's attributes as one batch of the
    # same records ``set_trial_user_attr`` writes one by one. No public form.
    from optuna.storages.journal._storage import JournalOperation

    # The system-attribute key prefix of a trial's constraint values, which Optuna's
    # constrained samplers and ``FrozenTrial.constraints`` read; dse writes it with the other
    # attributes in one batch. Public form: ``Trial.set_constraint`` (one write per constraint).
    from optuna.study._constrained_optimization import _CONSTRAINTS_KEY as CONSTRAINTS_KEY

    # A study's summary as ``BaseStorage.get_all_studies`` returns it: dse's read-only journal
    # snapshot (:mod:`dse.search.storage.journal_snapshot`) is a storage and returns them too. No public form.
    from optuna.study._frozen import FrozenStudy
except ImportError as _exc:  # pragma: no cover - depends on the installed Optuna
    raise _missing(str(_exc.name or _exc), _exc) from _exc

__all__ = [
    "CONSTRAINTS_KEY", "JOURNAL_FIELDS", "JOURNAL_ID_KEY", "OPTIMIZE_LOGGER", "RDB_STORAGE_LOGGER",
    "STUDY_OPS", "TRIAL_OPS", "BaseJournalFileLock", "FrozenStudy", "JournalOperation",
    "OptunaPrivateError",
    "cached_frozen_trial", "completed_trials_cached", "compute_hypervolume", "fail_trial",
    "grpc_channel", "grpc_proxy_client", "heartbeat_enabled", "intersection_step", "journal_append",
    "make_grpc_server", "nsga2_generation_key", "nsga2_parent_cache_key_prefix", "optimize_logger",
    "rdb_backend", "rdb_models", "rdb_session", "rdb_set_attr", "rdb_storage_logger", "study_id_of",
    "study_storage", "trial_id_of", "trials_since", "trials_since_number",
]


def _private(module: str, name: str) -> Any:
    """``module.name``, imported when first needed (for modules that pull in SQLAlchemy or gRPC)."""
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        if isinstance(exc, ModuleNotFoundError) and exc.name and not exc.name.startswith("optuna"):
            raise  # a missing driver (sqlalchemy, grpc): the caller reports it
        raise _missing(f"{module}.{name}", exc) from exc


# --- studies and trials --------------------------------------------------------------------------


def study_storage(study: optuna.Study) -> BaseStorage:
    """The storage a study reads and writes (``Study._storage``; no public form: the storage
    passed to ``create_study`` is wrapped, an RDB storage in a cache)."""
    storage: BaseStorage = study._storage
    return storage


def study_id_of(study: optuna.Study) -> int:
    """The study's id in its storage (``Study._study_id``; public form, one more query:
    ``storage.get_study_id_from_name(study.study_name)``)."""
    sid = getattr(study, "_study_id", None)
    if sid is None:
        return study_storage(study).get_study_id_from_name(study.study_name)
    return int(sid)


def trial_id_of(trial: Trial | FrozenTrial) -> int:
    """A trial's id in its storage (``_trial_id``; the public ``number`` counts within a study,
    while storage calls take the id). No public form."""
    return int(trial._trial_id)


def cached_frozen_trial(trial: Trial) -> FrozenTrial:
    """The running trial's own view of itself (``Trial._cached_frozen_trial``), kept in step when
    dse writes attributes past ``Trial.set_user_attr``. No public form."""
    frozen: FrozenTrial = trial._cached_frozen_trial
    return frozen


def fail_trial(study: optuna.Study, trial: FrozenTrial) -> None:
    """Mark a RUNNING trial of a dead worker FAIL (public only inside Optuna's heartbeat, as
    ``fail_stale_trials``); :class:`~optuna.exceptions.UpdateFinishedTrialError` when it has
    finished meanwhile."""
    study_storage(study).set_trial_state_values(trial_id_of(trial), TrialState.FAIL)


def completed_trials_cached(study: optuna.Study) -> list[FrozenTrial]:
    """Completed trials through the study's per-trial cache (``Study._get_trials(use_cache=True)``,
    as Optuna's own samplers read them); public form, slower: ``study.get_trials``."""
    get = getattr(study, "_get_trials", None)
    if get is None:
        return study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    trials: list[FrozenTrial] = get(deepcopy=False, states=[TrialState.COMPLETE], use_cache=True)
    return trials


def trials_since(study: optuna.Study, since: int, also: Sequence[int] = ()) -> list[FrozenTrial]:
    """The study's trials numbered ``since`` and up (in number order), after those numbered in
    ``also`` (say the trials last seen running), as they are now: one read of the storage whose
    cost grows with the trials returned, not with the study (``get_all_trials`` rebuilds a
    study's trial list in full, O(trials) per call). See :func:`trials_since_number`."""
    return trials_since_number(study_storage(study), study_id_of(study), since, also)


def trials_since_number(storage: BaseStorage, sid: int, since: int,
                        also: Sequence[int] = ()) -> list[FrozenTrial]:
    """:func:`trials_since` given the storage and the study's id. Reads the journal's replayed
    trials, the in-memory storage's list and the RDB cache's dict directly; public form, used on
    any other storage: ``get_all_trials(deepcopy=False)`` filtered."""
    early = sorted(n for n in set(also) if n < since)
    try:
        if isinstance(storage, JournalStorage):
            with storage._thread_lock:
                storage._sync_with_backend()
                replay = storage._replay_result
                ids = replay._study_id_to_trial_ids[sid]
                return [replay._trials[ids[n]] for n in early] + [replay._trials[i] for i in ids[since:]]
        if isinstance(storage, optuna.storages.InMemoryStorage):
            with storage._lock:
                listed = storage._studies[sid].trials
                return [listed[n] for n in early] + listed[since:]
        if isinstance(storage, _CachedStorage):
            storage._read_trials_from_remote_storage(sid)
            with storage._lock:
                cached = storage._studies[sid].trials
                out = [cached[n] for n in early if n in cached]
                n = since
                while n in cached:  # numbers are contiguous; stop at one not read yet
                    out.append(cached[n])
                    n += 1
                return out
    except (AttributeError, KeyError, IndexError):
        pass  # an Optuna that stores trials otherwise: the public form below
    wanted = set(early)
    return [t for t in storage.get_all_trials(sid, deepcopy=False)
            if t.number >= since or t.number in wanted]


def heartbeat_enabled(storage: BaseStorage) -> bool:
    """True when ``storage`` runs Optuna's heartbeat (``optuna.storages._heartbeat``; no public
    form: ``fail_stale_trials`` checks it the same way)."""
    return bool(_private("optuna.storages._heartbeat", "is_heartbeat_enabled")(storage))


# --- NSGA-II -------------------------------------------------------------------------------------


def nsga2_generation_key() -> str:
    """The system-attribute key of a trial's NSGA-II generation (a private classmethod): dse's
    hand-over sampler writes it so that NSGA-II, and ``nsga2`` resuming the study, take over."""
    key: str = optuna.samplers.NSGAIISampler._get_generation_key()
    return key


def nsga2_parent_cache_key_prefix() -> str:
    """The study-attribute key prefix of NSGA-II's cached parent populations (private)."""
    key: str = optuna.samplers.NSGAIISampler._get_parent_cache_key_prefix()
    return key


# --- loggers -------------------------------------------------------------------------------------

OPTIMIZE_LOGGER = "optuna.study._optimize"
"""The logger of Optuna's optimize loop (its private module's name), which warns twice about a
trial failed by an exception (``Trial N failed with parameters: ...`` with the traceback, then
``Trial N failed with value None.``)."""
RDB_STORAGE_LOGGER = "optuna.storages._rdb.storage"
"""The logger of Optuna's RDB storage (its private module's name), which warns ``Caught an error
from sqlalchemy: ... Falling back to a slower alternative.`` when a query fails."""


def optimize_logger() -> logging.Logger:
    """Optuna's :data:`OPTIMIZE_LOGGER`: dse's CLI drops its warnings about a trial failed by
    Ctrl-C and says in one line what was kept. No public form (Optuna's public logging
    configures only the library's root logger, ``optuna``)."""
    return logging.getLogger(OPTIMIZE_LOGGER)


def rdb_storage_logger() -> logging.Logger:
    """Optuna's :data:`RDB_STORAGE_LOGGER`: dse drops its fall-back note when the failed query
    lost the database server (the fall-back fails the same way). No public form."""
    return logging.getLogger(RDB_STORAGE_LOGGER)


def intersection_step(trials: list[FrozenTrial], space: dict[str, Any] | None,
                      cached_number: int) -> tuple[dict[str, Any] | None, int]:
    """One step of Optuna's intersection search space (``IntersectionSearchSpace.calculate``, as
    NSGA-II infers its relative search space): ``trials`` must hold every trial numbered
    ``cached_number`` and up, in number order (earlier ones are not read); returns the new
    space and cached number. Optuna's ``calculate`` hands this step every trial of the study, a
    read of the whole study per trial; dse hands it the trials from ``cached_number`` on
    (:func:`trials_since`). Private (``optuna.search_space.intersection._calculate``); public
    form, O(trials): ``IntersectionSearchSpace().calculate(study)``."""
    step = _private("optuna.search_space.intersection", "_calculate")
    out: tuple[dict[str, Any] | None, int] = step(trials, False, space, cached_number)
    return out


# --- the journal ---------------------------------------------------------------------------------

JOURNAL_ID_KEY: dict[int, str] = {
    JournalOperation.CREATE_STUDY: "study_name",
    JournalOperation.DELETE_STUDY: "study_id",
    JournalOperation.SET_STUDY_USER_ATTR: "study_id",
    JournalOperation.SET_STUDY_SYSTEM_ATTR: "study_id",
    JournalOperation.CREATE_TRIAL: "study_id",
    JournalOperation.SET_TRIAL_PARAM: "trial_id",
    JournalOperation.SET_TRIAL_STATE_VALUES: "trial_id",
    JournalOperation.SET_TRIAL_INTERMEDIATE_VALUE: "trial_id",
    JournalOperation.SET_TRIAL_USER_ATTR: "trial_id",
    JournalOperation.SET_TRIAL_SYSTEM_ATTR: "trial_id",
}
"""The id each journal operation names, written third after ``op_code`` and ``worker_id``
(``JournalStorage._write_log``; ``DISCARD_TRIALS``, written only by other tools, names none)."""
JOURNAL_FIELDS: dict[int, tuple[str, ...]] = {
    **{op: (key,) for op, key in JOURNAL_ID_KEY.items()},
    JournalOperation.CREATE_STUDY: ("study_name", "directions"),
    JournalOperation.SET_STUDY_USER_ATTR: ("study_id", "user_attr"),
    JournalOperation.SET_STUDY_SYSTEM_ATTR: ("study_id", "system_attr"),
    JournalOperation.CREATE_TRIAL: ("study_id", "datetime_start"),
    JournalOperation.SET_TRIAL_PARAM: ("trial_id", "param_name", "param_value_internal",
                                       "distribution"),
    JournalOperation.SET_TRIAL_STATE_VALUES: ("trial_id", "state"),
    JournalOperation.SET_TRIAL_INTERMEDIATE_VALUE: ("trial_id", "step", "intermediate_value"),
    JournalOperation.SET_TRIAL_USER_ATTR: ("trial_id", "user_attr"),
    JournalOperation.SET_TRIAL_SYSTEM_ATTR: ("trial_id", "system_attr"),
    JournalOperation.DISCARD_TRIALS: (),
}
"""The keys Optuna's replay reads from each operation's record
(``JournalStorageReplayResult._apply_*``); every journal op code is a key."""
STUDY_OPS = frozenset(op for op, key in JOURNAL_ID_KEY.items() if key == "study_id")
"""Operations naming a ``study_id`` (delete, user and system attribute, create a trial)."""
TRIAL_OPS = frozenset(op for op, key in JOURNAL_ID_KEY.items() if key == "trial_id")
"""Operations naming a ``trial_id`` (parameter, state, intermediate value, attributes)."""



def journal_append(storage: JournalStorage, logs: Callable[[str], list[dict[str, Any]]]) -> bool:
    """Append the records ``logs(worker_id)`` to ``storage``'s journal in one locked write and
    replay them, as each ``set_trial_*_attr`` call does for one (``_backend``, ``_thread_lock``,
    ``_replay_result``, ``_sync_with_backend``). False, with nothing written, when this Optuna
    lacks them: the caller then takes the public calls."""
    if not all(hasattr(storage, a) for a in ("_backend", "_thread_lock", "_replay_result",
                                              "_sync_with_backend")):
        return False
    lock: threading.Lock = storage._thread_lock
    with lock:
        storage._backend.append_logs(logs(storage._replay_result.worker_id))
        storage._sync_with_backend()
    return True


# --- RDB storages --------------------------------------------------------------------------------


def rdb_backend(storage: BaseStorage) -> RDBStorage | None:
    """The RDB storage behind ``storage`` (Optuna wraps it in ``_CachedStorage``), or ``None``;
    also ``None`` when it lacks what dse's batched writes use."""
    backend = storage._backend if isinstance(storage, _CachedStorage) else storage
    if (isinstance(backend, RDBStorage) and hasattr(backend, "scoped_session")
            and hasattr(backend, "_set_trial_attr_without_commit")):
        return backend
    return None


def rdb_models() -> Any:
    """Optuna's SQLAlchemy models (``optuna.storages._rdb.models``): dse upserts a trial's
    attributes in one statement per table and counts trials in one query. No public form."""
    return importlib.import_module("optuna.storages._rdb.models")


@contextmanager
def rdb_session(backend: RDBStorage, commit: bool = False) -> Iterator[Any]:
    """A session of ``backend`` that commits (``commit``) and rolls back as Optuna's own calls do
    (``optuna.storages._rdb.storage._create_scoped_session``). No public form."""
    create = _private("optuna.storages._rdb.storage", "_create_scoped_session")
    with create(backend.scoped_session, commit) as session:
        yield session


def rdb_set_attr(backend: RDBStorage, session: Any, model: Any, trial_id: int, key: str,
                 value: Any) -> None:
    """Set one trial attribute in ``session`` without committing (a private method of
    ``RDBStorage``; the public ``set_trial_*_attr`` commit each)."""
    backend._set_trial_attr_without_commit(session, model, trial_id, key, value)


# --- the gRPC proxy ------------------------------------------------------------------------------


def make_grpc_server(storage: BaseStorage, host: str, port: int, executor: Any,
                     options: Sequence[tuple[str, Any]] = (), interceptors: Sequence[Any] = ()) -> Any:
    """Optuna's gRPC storage proxy server with the gRPC server ``options`` and ``interceptors``,
    not yet started
    (``optuna.storages._grpc.server.make_server`` does the same without options, from
    ``servicer.OptunaStorageProxyService`` and ``api_pb2_grpc.add_StorageServiceServicer_to_server``):
    dse adds its own calls to it, refuses a port another server shares, and stops it on a
    signal. Public form, without any of these: ``optuna.storages.run_grpc_proxy_server``."""
    import grpc

    service = _private("optuna.storages._grpc.servicer", "OptunaStorageProxyService")
    add = _private("optuna.storages._grpc.auto_generated.api_pb2_grpc",
                   "add_StorageServiceServicer_to_server")
    server = grpc.server(executor, options=list(options), interceptors=list(interceptors))
    add(service(storage), server)
    server.add_insecure_port(f"{host}:{port}")
    return server


def grpc_proxy_client(host: str, port: int, interceptor: Any = None) -> BaseStorage:
    """Optuna's gRPC proxy client (``GrpcStorageProxy``) whose calls pass through the gRPC client
    ``interceptor`` (a deadline on each): its channel, stub and trial cache (``_channel``,
    ``_stub``, ``_cache``, ``GrpcClientCache``, ``api_pb2_grpc.StorageServiceStub``) are rebuilt on
    the intercepted channel. No public form: the public client takes no channel options."""
    from optuna.storages import GrpcStorageProxy

    storage = GrpcStorageProxy(host=host, port=port)
    if interceptor is not None:
        import grpc

        stub = _private("optuna.storages._grpc.auto_generated.api_pb2_grpc", "StorageServiceStub")
        cache = _private("optuna.storages._grpc.client", "GrpcClientCache")
        storage._channel = grpc.intercept_channel(storage._channel, interceptor)
        storage._stub = stub(storage._channel)
        storage._cache = cache(storage._stub)
    return storage


def grpc_channel(storage: BaseStorage) -> Any:
    """The channel of a ``GrpcStorageProxy`` client (``_channel``), on which dse calls its proxy's
    own methods. No public form."""
    return storage._channel  # type: ignore[attr-defined]


# --- hypervolume ---------------------------------------------------------------------------------


def compute_hypervolume(points: np.ndarray, reference: Sequence[float] | np.ndarray) -> float:
    """Hypervolume dominated by ``points`` (minimisation) up to ``reference``
    (``optuna._hypervolume.compute_hypervolume``, exact and fast in 2-D and 3-D). No public form
    takes arbitrary points."""
    fn = _private("optuna._hypervolume", "compute_hypervolume")
    return float(fn(points, np.asarray(reference, dtype=float)))
