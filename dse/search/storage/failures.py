"""A storage lost mid-run, said in one line: the database down, restarting or hung, the storage
proxy stopped, the journal's disk full or read-only.

A server that refuses or closes connections mid-run (restarted) is tried again by a worker for
:data:`~dse.search.storage.servers.RECONNECT_S` (:func:`storage_lost`,
:func:`dse.search.runner.run_study`). Failures to reach a storage are
:class:`~dse.errors.DseInputError` (one line, exit code 2); passwords never appear in messages
(:func:`dse.search.storage.servers.redact`). PostgreSQL's errors are read only when its driver was
loaded (:mod:`dse.search.storage.postgres`, imported for a PostgreSQL URL alone), gRPC's only when
gRPC was.
"""

from __future__ import annotations

import errno
import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from dse.errors import DseInputError
from dse.search import _optuna
from dse.search.storage.servers import (
    ANSWER_TIMEOUT_PARAM,
    ANSWER_TIMEOUT_S,
    CLOSED,
    RECONNECT_PARAM,
    REFUSED,
)

POSTGRES_MODULE = "dse.search.storage.postgres"
"""PostgreSQL's connections (:mod:`dse.search.storage.postgres`): its errors are read when it was
loaded, never loading it (nor psycopg) for that."""


def _postgres() -> ModuleType | None:
    """:data:`POSTGRES_MODULE` if a PostgreSQL storage loaded it."""
    return sys.modules.get(POSTGRES_MODULE)


RESOURCE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS,
                             errno.EIO})
"""File errors that are the machine's, not dse's: a full disk or quota, no permission, a
read-only or failing file system."""


class StorageUnreachable(DseInputError):
    """The server of a storage refused or closed the connection as it was opened (down, or
    restarting): a worker that had been working on it tries again (:func:`storage_lost`)."""


class ServerRestarting(StorageUnreachable):
    """The server answered as the connection was opened, then ended it (it is shutting down or
    still starting: a restart or a fail-over under way). A worker starting then waits for it
    like a worker that was running (:func:`dse.search.runner.run_study`); one refused at the
    start fails at once (the server is down, or the URL is wrong)."""


class ReconnectGaveUp(Exception):
    """A worker lost its storage mid-run and could not reach it again within ``seconds``; the
    last failure is its cause."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"could not reconnect within {seconds:g} s")
        self.seconds = seconds


def storage_failure(exc: BaseException, where: str = "") -> str | None:
    """One line for an error that says the storage was lost mid-run (the database went down or
    hung, the proxy stopped, the journal's disk is full or read-only: ``where`` names the storage
    when the error does not), or ``None`` for any other error. The storage error may be the cause
    or context of the one raised (Optuna's trial loop can raise another while handling it)."""
    gave_up = next((c for c in _chain(exc) if isinstance(c, ReconnectGaveUp)), None)
    said = _storage_failure(exc, where)
    if said is None or gave_up is None:
        return said
    return f"{said} (tried to reconnect for {gave_up.seconds:g} s, {RECONNECT_PARAM} in the URL)"


def _storage_failure(exc: BaseException, where: str) -> str | None:
    from optuna.exceptions import StorageInternalError
    from sqlalchemy.exc import SQLAlchemyError

    grpc = sys.modules.get("grpc")
    for current in _chain(exc):
        if isinstance(current, StorageUnreachable):
            return f"{current}; the completed trials are kept: rerun when it is back to resume"
        if isinstance(current, OSError) and current.errno in RESOURCE_ERRNOS:
            return (f"{current.filename or where or 'the storage'}: {current.strerror}; what was "
                    "written before stays intact: free space (or fix the permissions) and rerun "
                    "to resume")
        if isinstance(current, SQLAlchemyError | StorageInternalError):
            said = database_failure(current)
            at = f" at {where}" if where else ""
            if said is None:
                # Optuna's StorageInternalError guesses at "invalid data in the commit": the
                # driver's error it wraps says what happened.
                cause = next((c for c in _chain(current) if isinstance(c, SQLAlchemyError)),
                             current)
                return f"lost the database{at}: {first_line(cause)}"
            return (f"PostgreSQL{at} {said}; the completed trials are kept: rerun when it is "
                    "back to resume")
        if grpc is not None and isinstance(current, grpc.RpcError):
            return _proxy_failure(current, where)
    return None


def _proxy_failure(exc: Any, where: str) -> str:
    """One line for a failed call on the storage proxy (a ``grpc.RpcError``)."""
    code = exc.code() if hasattr(exc, "code") else None
    details = exc.details() if hasattr(exc, "details") else str(exc)
    name = getattr(code, "name", code)
    at = f" at {where}" if where else ""
    kept = "; the completed trials are kept: rerun when it is back to resume"
    if name == "DEADLINE_EXCEEDED":
        return (f"the storage proxy{at} did not answer within its deadline ({ANSWER_TIMEOUT_PARAM}, "
                f"default {ANSWER_TIMEOUT_S:g} s: the proxy or its database is hung, overloaded "
                f"or unreachable){kept}")
    if name == "UNAVAILABLE":
        return f"lost the storage proxy{at}: UNAVAILABLE: {_one_line(details)}{kept}"
    if name == "CANCELLED":
        return f"lost the storage proxy{at}: CANCELLED (it stopped during the call){kept}"
    return f"lost the storage proxy{at}: {name}: {_one_line(details)}"


def storage_lost(exc: BaseException) -> bool:
    """True when ``exc`` (or an error in its chain) says the storage's server went away in a way
    it comes back from: PostgreSQL refused or closed the connection (stopped, restarting, failing
    over), the storage proxy is unreachable or cancelled the call as it stopped (gRPC cancels a
    call that reaches a server shutting down; dse cancels none of its own), or the proxy's own
    database went so. False for a server that stopped answering (hung: the deadline's one line is
    final) and any other error."""
    grpc = sys.modules.get("grpc")
    for current in _chain(exc):
        if isinstance(current, StorageUnreachable):
            return True
        said = database_failure(current)
        if said is not None:
            return said.startswith(("refused", "closed"))
        if grpc is not None and isinstance(current, grpc.RpcError):
            code = getattr(current.code(), "name", "") if hasattr(current, "code") else ""
            details = current.details() if hasattr(current, "details") else ""
            return code in ("UNAVAILABLE", "CANCELLED") or (
                code in ("UNKNOWN", "INTERNAL")
                and any(sign in str(details) for sign in (*REFUSED, *CLOSED)))
    return False


@contextmanager
def quiet_lost_storage() -> Iterator[None]:
    """Within: losing the storage is reported once, by the caller (:func:`storage_failure`), not
    also by Optuna on the way. A helper thread (Optuna's heartbeat) that dies of it prints
    nothing: the storage gives up on a silent server for all its threads at once
    (:class:`dse.search.storage.postgres.AnswerWatch`), so the main thread meets the same loss at its next
    call. Optuna's note that a failed query falls back to a slower one is dropped when the
    failure was the server lost (the fallback fails the same way). Other errors in threads and
    other notes are printed as before."""
    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is None or storage_failure(args.exc_value) is None:
            previous(args)

    notes = _optuna.rdb_storage_logger()
    quiet = _LostServerNotes()
    threading.excepthook = hook
    notes.addFilter(quiet)
    try:
        yield
    finally:
        threading.excepthook = previous
        notes.removeFilter(quiet)


class _LostServerNotes(logging.Filter):
    """Drops Optuna's warning "Caught an error from sqlalchemy: ... Falling back to a slower
    alternative." when the error is a lost PostgreSQL server."""

    def filter(self, record: logging.LogRecord) -> bool:
        postgres = _postgres()
        message = record.getMessage()
        return not (postgres is not None and message.startswith("Caught an error from sqlalchemy")
                    and postgres.says_lost(message))


def database_failure(exc: BaseException) -> str | None:
    """What the PostgreSQL server did ("refused the connection", "did not answer within 20 s",
    ...) when ``exc`` or an error in its chain (SQLAlchemy's ``orig`` included) comes from its
    driver; ``None`` otherwise (:func:`dse.search.storage.postgres.failure`)."""
    postgres = _postgres()
    if postgres is None:
        return None
    for current in _chain(exc):
        said: str | None = postgres.failure(getattr(current, "orig", None) or current)
        if said is not None:
            return said
    return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and its causes and contexts, outermost first (each once)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def first_line(exc: BaseException) -> str:
    """The first informative line of a driver error (SQLAlchemy wraps it with its own text)."""
    cause: BaseException = getattr(exc, "orig", None) or exc
    return _one_line(str(cause)) or type(cause).__name__


def _one_line(text: str) -> str:
    """The first non-blank line of ``text``, at most 300 characters."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0][:300] if lines else ""
