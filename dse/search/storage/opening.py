"""Storages of studies opened by their URL: the journal file by default, database servers and the
gRPC proxy; where a storage's file lies; a study's trials counted on any of them.

:func:`open_storage` opens the storage of a study. The default is Optuna's journal file
``NAME.journal`` beside the study file (under ``./studies/`` for a built-in study), written under
dse's lock and checks (:mod:`dse.search.storage.journal_writing`); a record torn by power loss is cut
off. Every other URL is a database server (:mod:`dse.search.storage.databases`, PostgreSQL's
connections bounded in time by :mod:`dse.search.storage.postgres`) or the proxy in front of one
(:mod:`dse.search.storage.proxy`). A storage that cannot be reached raises a one-line
:class:`~dse.errors.DseInputError` within seconds (:mod:`dse.search.storage.failures`); a password
may hold ``@`` and never appears in a message (:mod:`dse.search.storage.servers`), and a URL
without one leaves it to libpq (``PGPASSWORD``, ``~/.pgpass``).
"""

from __future__ import annotations

from pathlib import Path

import optuna
from optuna.storages import BaseStorage
from optuna.trial import TrialState

from dse.errors import DseInputError
from dse.safe_write import check_target
from dse.search import _optuna
from dse.search._optuna import rdb_backend
from dse.search.storage.databases import rdb_state_counts, rdb_storage
from dse.search.storage.journal_writing import journal_storage
from dse.search.storage.proxy import grpc_call, grpc_storage
from dse.search.storage.recovery import MAX_RETRIES, RetryStaleTrial
from dse.search.study.study_file import StudySpec, results_dir


def default_storage_path(spec: StudySpec) -> Path:
    """Where the default journal of ``spec`` lives: ``NAME.journal`` beside the study file, or under
    ``./studies`` for a built-in study (:func:`dse.search.study.study_file.results_dir`)."""
    return results_dir(spec) / f"{spec.name}.journal"


def study_exists(storage: BaseStorage, name: str) -> bool:
    """Whether ``storage`` (an Optuna storage) holds a study called ``name``."""
    try:
        storage.get_study_id_from_name(name)
    except KeyError:
        return False
    return True


def open_storage(url: str | None, spec: StudySpec) -> BaseStorage:
    """The storage for ``url`` (``spec.storage`` when ``None``; the default journal when empty).

    ``journal:PATH`` or a path ending in ``.journal``: a journal file. ``grpc://HOST:PORT``: a
    ``dse storage-proxy``. ``postgresql://...`` (psycopg 3), ``sqlite:///...`` and other
    SQLAlchemy URLs: an RDB storage, with Optuna's heartbeat and :class:`RetryStaleTrial` on a
    database server (:func:`~dse.search.storage.databases.rdb_storage`). A storage that cannot be
    reached raises :class:`DseInputError` within seconds.
    """
    url = spec.storage if url is None else url
    if not url:
        return journal_storage(default_storage_path(spec), spec.name)
    if url.startswith("journal:") or url.endswith(".journal"):
        return journal_storage(Path(url.removeprefix("journal:")), spec.name)
    if "://" not in url:
        raise DseInputError("--storage", url, "expected an Optuna storage URL or a .journal path")
    if url.startswith("grpc://"):
        return grpc_storage(url)
    database = storage_file(url, spec)
    if database is not None:
        check_target(database, True)  # SQLite writes its file in place: never through a link
    return rdb_storage(url, RetryStaleTrial(max_retry=MAX_RETRIES))


def journal_file(url: str | None, spec: StudySpec) -> Path | None:
    """The journal file of a journal storage (as :func:`open_storage` reads ``url``); ``None``
    for a database or the proxy."""
    url = spec.storage if url is None else url
    if not url:
        return default_storage_path(spec)
    if url.startswith("journal:") or url.endswith(".journal"):
        return Path(url.removeprefix("journal:"))
    return None


def storage_file(url: str | None, spec: StudySpec) -> Path | None:
    """The file behind a journal or SQLite storage (``None`` for a database server)."""
    journal = journal_file(url, spec)
    if journal is not None:
        return journal
    url = spec.storage if url is None else url
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        return Path(url.removeprefix("sqlite:///"))
    return None


def quick_counts(study: optuna.Study, below: int | None = None) -> dict[TrialState, int] | None:
    """:func:`state_counts` in one COUNT query (an RDB storage, directly or through a dse
    storage-proxy); ``None`` on other storages."""
    backend = rdb_backend(_optuna.study_storage(study))
    if backend is not None:
        return rdb_state_counts(backend, _optuna.study_id_of(study), below)
    reply = grpc_call(_optuna.study_storage(study), "StateCounts",
                      {"study_id": _optuna.study_id_of(study), "below": below})
    if reply is None:
        return None
    return {TrialState[name]: int(n) for name, n in reply.items()}


def state_counts(study: optuna.Study, below: int | None = None) -> dict[TrialState, int]:
    """The study's trials by state (only those numbered below ``below`` when given): one COUNT
    query on an RDB storage or a dse storage-proxy, a read of the trials on the others."""
    quick = quick_counts(study, below)
    if quick is not None:
        return quick
    counts: dict[TrialState, int] = {}
    for t in study.get_trials(deepcopy=False):
        if below is None or t.number < below:
            counts[t.state] = counts.get(t.state, 0) + 1
    return counts
