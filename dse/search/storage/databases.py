"""Database servers and SQLite as Optuna's RDB storage, with dse's pool, timeouts and heartbeat,
and the writes and counts dse makes in one statement.

``postgresql://...`` (also ``postgres://``) opens PostgreSQL through the psycopg 3 driver
(``postgresql+psycopg://``); other SQLAlchemy URLs (``sqlite:///FILE``, ``mysql+pymysql://``) are
used as given. A server database gets Optuna's heartbeat (:data:`HEARTBEAT_S`, :data:`GRACE_S`)
with a retry callback, a small connection pool per process (:data:`POOL_SIZE` +
:data:`POOL_OVERFLOW`, checked before use) and a connect timeout
(:data:`~dse.search.storage.servers.CONNECT_TIMEOUT_S`), so a database that is down fails in seconds
with one line. PostgreSQL connections also get statement, idle-in-transaction and keepalive
timeouts and a deadline on every answer (:mod:`dse.search.storage.postgres`), so a hung or vanished
server ends a worker with one line within 30 s; its sessions commit asynchronously
(``synchronous_commit=off``) unless the URL gives its own ``options``.

Optuna writes each trial attribute in two statements (find the trial, upsert the row) and counts
trials by loading them; on a database server each statement is a round trip.
:func:`rdb_write_attrs` and :func:`rdb_state_counts` do the same work in one transaction and one
statement per table, or one COUNT.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import optuna
from optuna.exceptions import ExperimentalWarning
from optuna.storages import RDBStorage
from optuna.trial import FrozenTrial

from dse.errors import DseInputError
from dse.search import _optuna
from dse.search.storage.failures import (
    ServerRestarting,
    StorageUnreachable,
    database_failure,
    first_line,
)
from dse.search.storage.servers import (
    CONNECT_TIMEOUT_S,
    dse_params,
    encode_credentials,
    is_server_url,
    normalize_url,
    redact,
    without_password,
)

HEARTBEAT_S = 2
"""Seconds between a running trial's heartbeats on a database server (Optuna records one when a
trial starts and then every interval; dse trials take milliseconds, so most record one)."""
GRACE_S = 10
"""A RUNNING trial whose heartbeat is older than this is taken as abandoned by a dead worker:
failed, and its parameters retried (Optuna's ``fail_stale_trials``, run by every worker before
each trial and while it waits for the last trials of a study)."""
POOL_SIZE = 2
"""Database connections a worker keeps: one for its trials, one for the heartbeat thread."""
POOL_OVERFLOW = 1


def rdb_storage(url: str,
                stale_callback: Callable[[optuna.Study, FrozenTrial], None] | None = None,
                pool_size: int = POOL_SIZE, overflow: int = POOL_OVERFLOW,
                heartbeat: bool = True) -> RDBStorage:
    """Optuna's RDB storage for an SQLAlchemy URL.

    On a database server: a pool of ``pool_size`` (+ ``overflow``) connections checked before
    use, a connect timeout (on PostgreSQL all of :mod:`dse.search.storage.postgres`'s timeouts), and
    (``heartbeat``) Optuna's heartbeat calling ``stale_callback`` for each trial it fails as
    stale. A worker (``heartbeat``) gives up on a PostgreSQL server that stopped answering; the
    storage proxy (no heartbeat) keeps trying, as the server may come back. SQLite keeps
    SQLAlchemy's defaults and no heartbeat (a heartbeat per trial is one more fsynced commit, and
    dse's own recovery covers a local file).
    Raises :class:`DseInputError` when the database cannot be reached or its driver is missing.
    """
    shown = redact(url)
    url = normalize_url(encode_credentials(url))
    kwargs: dict[str, Any] = {}
    engine: dict[str, Any] = {}
    if is_server_url(url):
        engine = {"pool_size": pool_size, "max_overflow": overflow, "pool_pre_ping": True,
                  "pool_recycle": 1800}
        if url.startswith("postgresql+psycopg://"):
            url, engine["creator"] = _postgres_connector(url, shown, give_up=heartbeat)
        else:
            url = dse_params(url)[0]
            if url.startswith("mysql"):
                engine["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT_S}
        if heartbeat:
            kwargs = {"heartbeat_interval": HEARTBEAT_S, "grace_period": GRACE_S,
                      "heartbeat_stale_trial_callback": stale_callback}
    try:
        return _open_rdb(url, engine, kwargs)
    except ModuleNotFoundError as exc:
        raise DseInputError("--storage", shown,
                            f"the database driver is not installed ({exc.name}): "
                            "pip install 'dse[cluster]'") from None
    except Exception as exc:  # SQLAlchemy, the driver and Optuna raise several types
        said = database_failure(exc)
        if said is not None:
            error = (ServerRestarting if said.startswith("closed") else StorageUnreachable
                     if said.startswith("refused") else DseInputError)
            raise error("--storage", shown, f"PostgreSQL {said}") from None
        raise DseInputError("--storage", shown,
                            f"cannot open the database: {first_line(exc)}") from None


SCHEMA_RACE_ATTEMPTS = 5
"""Times a storage is opened before a schema-creation race is taken as a failure."""
SCHEMA_RACE_MARKS = ("pg_type_typname_nsp_index", "already exists")
"""What PostgreSQL says when two processes create the same new table at once: the loser of
``CREATE TABLE`` meets the winner's row type (unique violation on ``pg_type``) or table."""


def _open_rdb(url: str, engine: dict[str, Any], kwargs: dict[str, Any]) -> RDBStorage:
    """Optuna's RDB storage, which creates its tables when the database has none. Workers started
    together on a new database race to create them; a loser opens it again, and finds them."""
    for attempt in range(SCHEMA_RACE_ATTEMPTS - 1):
        try:
            return _rdb(url, engine, kwargs)
        except Exception as exc:  # SQLAlchemy's IntegrityError or ProgrammingError, by the driver
            if not any(mark in str(exc) for mark in SCHEMA_RACE_MARKS):
                raise
            time.sleep(0.1 * (attempt + 1))
    return _rdb(url, engine, kwargs)


def _rdb(url: str, engine: dict[str, Any], kwargs: dict[str, Any]) -> RDBStorage:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        return RDBStorage(url, engine_kwargs=engine, **kwargs)


def _postgres_connector(url: str, shown: str, give_up: bool) -> tuple[str, Callable[[], Any]]:
    """The URL SQLAlchemy gets (without dse's own query parameter) and the function that opens
    each connection with dse's timeouts (:func:`dse.search.storage.postgres.connector`)."""
    try:
        from dse.search.storage import postgres
    except ModuleNotFoundError as exc:
        raise DseInputError("--storage", shown, f"the database driver is not installed "
                            f"({exc.name}): pip install 'dse[cluster]'") from None
    uri, _, _ = postgres.split_url(url)
    # SQLAlchemy and Optuna get the URL without the password (only the connector holds it), so
    # no object, message or log of theirs can show it.
    return ("postgresql+psycopg://" + without_password(uri).removeprefix("postgresql://"),
            postgres.connector(url, shown, give_up))


def rdb_write_attrs(backend: RDBStorage, trial_id: int, user_attrs: dict[str, Any],
                    system_attrs: dict[str, Any], heartbeat: bool = False) -> None:
    """Upsert a trial's user and system attributes (and, with ``heartbeat``, its heartbeat) in
    one transaction; :class:`~optuna.exceptions.UpdateFinishedTrialError` if it has finished."""
    import json

    from sqlalchemy import func

    models = _optuna.rdb_models()
    dialect = backend.engine.name
    with _optuna.rdb_session(backend, commit=True) as session:
        if dialect in ("postgresql", "sqlite"):
            from sqlalchemy.dialects import postgresql, sqlite

            insert: Any = postgresql.insert if dialect == "postgresql" else sqlite.insert
            trial: Any = models.TrialModel.find_or_raise_by_id(trial_id, session)
            backend.check_trial_is_updatable(trial_id, trial.state)
            for model, attrs in ((models.TrialUserAttributeModel, user_attrs),
                                 (models.TrialSystemAttributeModel, system_attrs)):
                if not attrs:
                    continue
                stmt = insert(model).values([{"trial_id": trial_id, "key": k,
                                              "value_json": json.dumps(v)} for k, v in attrs.items()])
                session.execute(stmt.on_conflict_do_update(
                    index_elements=[model.trial_id, model.key],
                    set_={"value_json": stmt.excluded.value_json}))
            if heartbeat:
                beat = insert(models.TrialHeartbeatModel).values(trial_id=trial_id,
                                                                 heartbeat=func.now())
                session.execute(beat.on_conflict_do_update(
                    index_elements=[models.TrialHeartbeatModel.trial_id],
                    set_={"heartbeat": func.now()}))
            return
        for model, attrs in ((models.TrialUserAttributeModel, user_attrs),
                             (models.TrialSystemAttributeModel, system_attrs)):
            for k, v in attrs.items():
                _optuna.rdb_set_attr(backend, session, model, trial_id, k, v)
    if heartbeat:
        backend.record_heartbeat(trial_id)


def rdb_state_counts(backend: RDBStorage, study_id: int,
                     below: int | None = None) -> dict[Any, int]:
    """Trials of a study by state (numbered below ``below`` when given), in one query."""
    from sqlalchemy import func

    models = _optuna.rdb_models()
    with _optuna.rdb_session(backend) as session:
        query = session.query(models.TrialModel.state, func.count(models.TrialModel.trial_id)).filter(
            models.TrialModel.study_id == study_id)
        if below is not None:
            query = query.filter(models.TrialModel.number < below)
        return {state: int(n) for state, n in query.group_by(models.TrialModel.state).all()}
