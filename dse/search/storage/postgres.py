"""PostgreSQL connections of a study, bounded in time: a hung or vanished server ends a worker with
one line within 30 s instead of hanging it, and never damages the study.

A server can fail a worker in three ways, each bounded by a different mechanism (measured with a
real PostgreSQL 15 server, ``tests/test_postgres_faults.py``):

- **Down** (stopped, its port closed): the kernel refuses the connection and libpq fails at once.
- **Hung** (its processes stopped, overloaded past answering, a host gone): the kernel of a stopped
  server's host still accepts connections and acknowledges every byte, so no TCP timer ever fires
  (keepalive probes are answered; ``tcp_user_timeout`` only counts unacknowledged data).
  libpq's ``connect_timeout`` (:data:`~dse.search.storage.servers.CONNECT_TIMEOUT_S`) bounds a new
  connection; a query on an open connection is bounded
  only by the client: :class:`AnswerWatch` shuts down the socket of any round trip that has waited
  :data:`ANSWER_TIMEOUT_S` for an answer, and every later call on the storage fails at once.
- **Gone from the network** (host powered off, a partition): TCP keepalives
  (:data:`KEEPALIVES_IDLE_S`, ...) and ``tcp_user_timeout`` end the connection in the kernel, and
  the answer deadline covers what they do not.

On the server, ``statement_timeout`` (:data:`STATEMENT_TIMEOUT_S`, shorter than the answer
deadline so a live server always answers first) cancels a statement that runs too long, and
``idle_in_transaction_session_timeout`` (:data:`IDLE_IN_TRANSACTION_S`) ends the session of a
worker stopped inside a transaction, freeing the locks the others would wait on; the server's
TCP keepalives end the session of a worker whose host vanished. The transactions of a worker
that gave up are rolled back by the server (when it is back); its running trial is failed and
retried by Optuna's heartbeat (:mod:`dse.search.storage.recovery`), so a resumed study ends with
exactly its budget.

Every libpq parameter in the URL's query string wins over dse's (``?connect_timeout=30``,
``?keepalives=0``); ``options`` in the URL come after dse's, so its ``-c`` settings win
(``?options=-cstatement_timeout%3D0``). The answer deadline is dse's own parameter,
``?dse_answer_timeout=SECONDS`` (0: none), taken out of the URL before libpq sees it, as is the
reconnection window ``?dse_reconnect=SECONDS`` (:data:`~dse.search.storage.servers.RECONNECT_S`).

Needs psycopg 3 (``pip install 'dse[cluster]'``); imported only for a PostgreSQL URL.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import unquote, urlunsplit

import psycopg
from psycopg.abc import PQGen

from dse.search.storage.servers import (
    ANSWER_TIMEOUT_PARAM,
    ANSWER_TIMEOUT_S,
    CLOSED,
    CONNECT_TIMEOUT_S,
    REFUSED,
    dse_params,
    encode_credentials,
    parse_url,
)

STATEMENT_TIMEOUT_S = 15
"""The server's ``statement_timeout``: a statement running longer is cancelled by the server with
its own error (a lock held by a stopped worker, a runaway query). dse's statements take
milliseconds; the largest, Optuna's reads of trials' attributes, come in batches of 500 trials
(SQLAlchemy's select-in loading): 62,595 attribute rows (1,701 trials) took 1.8 s in one
statement on this machine under load, so a batch of 500 takes well under a second."""
IDLE_IN_TRANSACTION_S = 10
"""The server's ``idle_in_transaction_session_timeout``: the session of a worker stopped in the
middle of a transaction (SIGSTOP, Ctrl-Z, a paused VM) is ended after this long, so the locks it
holds free the other workers before their statements reach :data:`STATEMENT_TIMEOUT_S`. dse's
transactions last milliseconds."""
KEEPALIVES_IDLE_S = 10
"""TCP keepalive: seconds of silence on an idle connection before the first probe."""
KEEPALIVES_INTERVAL_S = 5
"""TCP keepalive: seconds between unanswered probes."""
KEEPALIVES_COUNT = 2
"""TCP keepalive: unanswered probes that end the connection (a vanished host: 10 + 2 x 5 = 20 s)."""
TCP_USER_TIMEOUT_S = 20
"""libpq's ``tcp_user_timeout``: data unacknowledged this long (a vanished host) ends the
connection in the kernel."""
WATCH_POLL_S = 0.25
"""How often :class:`AnswerWatch` looks at the round trips in flight."""
STALL_S = 2.0
"""A poll of :class:`AnswerWatch` this much later than due means this process itself was not
running (stopped, paused): that time is not counted against the server."""

RV = TypeVar("RV")


class ServerSilentError(psycopg.OperationalError):
    """The server at ``shown`` did not answer within ``seconds`` (``while_doing`` says when)."""

    def __init__(self, shown: str, seconds: float, while_doing: str = "") -> None:
        self.shown = shown
        self.seconds = seconds
        self.while_doing = while_doing
        doing = f" {while_doing}" if while_doing else ""
        super().__init__(f"PostgreSQL at {shown} did not answer within {seconds:g} s{doing}")


class AnswerWatch:
    """The answer deadline of one storage's connections.

    Each round trip registers itself while it waits (:meth:`begin`, :meth:`end`); a thread, alive
    while any waits, shuts down the socket of every waiting connection once one has waited
    ``seconds``. The waiting call then fails at once (libpq reads the end of the stream), the
    connection is closed and dropped from the pool, and the storage gives up: later calls
    (``give_up``) fail at once with the same error instead of each waiting its own deadline, so
    the worker's error comes after one deadline, not several. A ``dse storage-proxy`` keeps
    serving (``give_up=False``): the server may come back.
    """

    def __init__(self, shown: str, seconds: float, give_up: bool = True) -> None:
        self.shown = shown
        self.seconds = seconds
        self.give_up = give_up
        self.silent = False
        """True once a round trip went unanswered for ``seconds``."""
        self._waiting: dict[int, tuple[float, WatchedConnection]] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def error(self) -> ServerSilentError:
        """The error of a round trip cut off by the deadline."""
        return ServerSilentError(self.shown, self.seconds)

    def gave_up(self) -> bool:
        """True when this storage no longer waits for its server."""
        return self.silent and self.give_up

    def begin(self, conn: WatchedConnection) -> None:
        """``conn`` starts waiting for the server."""
        with self._lock:
            self._waiting[id(conn)] = (time.monotonic(), conn)
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="dse-answer-watch",
                                                daemon=True)
                self._thread.start()

    def end(self, conn: WatchedConnection) -> None:
        """``conn`` no longer waits."""
        with self._lock:
            self._waiting.pop(id(conn), None)

    def _watch(self) -> None:
        last = time.monotonic()
        while True:
            time.sleep(WATCH_POLL_S)
            with self._lock:
                if not self._waiting:
                    self._thread = None
                    return
                now = time.monotonic()
                stalled = now - last - WATCH_POLL_S
                last = now
                if stalled > STALL_S:
                    # This process did not run (SIGSTOP, Ctrl-Z, a paused VM): its own pause is
                    # not the server's silence, so the waits start over from now.
                    self._waiting = {k: (since + stalled, c)
                                     for k, (since, c) in self._waiting.items()}
                if all(now - since < self.seconds for since, _ in self._waiting.values()):
                    continue
                self.silent = True
                for _, conn in self._waiting.values():
                    conn.cut()  # under the lock: the connection is still in its wait


class WatchedConnection(psycopg.Connection[Any]):
    """A psycopg connection whose round trips are under an :class:`AnswerWatch`.

    ``Connection.wait`` is the one call through which psycopg waits for the server (every query,
    commit, rollback and SQLAlchemy's pre-ping); it is not in psycopg's documented API, so
    ``tests/test_postgres_faults.py`` exercises it with a stopped server on every run.
    """

    _dse_watch: AnswerWatch | None = None
    _dse_cut = False

    def cut(self) -> None:
        """Shut down the socket (its file descriptor stays open until psycopg closes it), so a
        wait on it returns at once with an error."""
        self._dse_cut = True
        try:
            sock = socket.socket(fileno=os.dup(self.fileno()))
        except (OSError, psycopg.Error):
            return  # already closed
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        finally:
            sock.close()

    def wait(self, gen: PQGen[RV], *args: Any, **kwargs: Any) -> RV:
        watch = self._dse_watch
        if watch is None:
            return super().wait(gen, *args, **kwargs)
        if watch.gave_up():
            self.close()  # closed: SQLAlchemy drops it from the pool without a rollback
            raise watch.error()
        watch.begin(self)
        try:
            return super().wait(gen, *args, **kwargs)
        except psycopg.Error:
            if self._dse_cut:
                self.close()
                raise watch.error() from None
            raise
        finally:
            watch.end(self)


def libpq_params(query: dict[str, str]) -> dict[str, Any]:
    """dse's connection parameters that the URL's ``query`` does not set itself (libpq names and
    units: seconds, milliseconds for ``tcp_user_timeout``), and the server settings in
    ``options`` (the URL's own options after dse's, so they win)."""
    ours: dict[str, Any] = {
        "connect_timeout": CONNECT_TIMEOUT_S,
        "keepalives": 1,
        "keepalives_idle": KEEPALIVES_IDLE_S,
        "keepalives_interval": KEEPALIVES_INTERVAL_S,
        "keepalives_count": KEEPALIVES_COUNT,
        "tcp_user_timeout": TCP_USER_TIMEOUT_S * 1000,
    }
    params = {k: v for k, v in ours.items() if k not in query}
    settings = [f"-c statement_timeout={STATEMENT_TIMEOUT_S * 1000}",
                f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_S * 1000}",
                # The server's side of the connection: it ends a vanished worker's session (and
                # frees its locks) as the worker's side ends a vanished server's.
                f"-c tcp_keepalives_idle={KEEPALIVES_IDLE_S}",
                f"-c tcp_keepalives_interval={KEEPALIVES_INTERVAL_S}",
                f"-c tcp_keepalives_count={KEEPALIVES_COUNT}"]
    if "options" not in query:
        # Commits return before the WAL is on disk: ~11 commits per trial cost about 2 ms each
        # otherwise. A server crash may lose the last ~0.6 s of commits (never a consistent
        # state): those trials are redone. ?options=-csynchronous_commit%3Don in the URL
        # restores full durability.
        settings.append("-c synchronous_commit=off")
    params["options"] = " ".join([*settings, query.get("options", "")]).strip()
    return params


def split_url(url: str) -> tuple[str, dict[str, str], float]:
    """``url`` (``postgresql://``, ``postgres://`` or ``postgresql+DRIVER://``) as a libpq URI
    without dse's own query parameters (the rest of the query exactly as given; the user name and
    password percent-encoded, :func:`~dse.search.storage.servers.encode_credentials`), the query's
    parameters as libpq reads them (percent-decoded; ``+`` stays ``+``), and the answer deadline
    in seconds (0: none)."""
    plain, ours = dse_params(encode_credentials(url))
    parts = parse_url(plain)
    query = {unquote(k): unquote(v) for k, _, v in
             (item.partition("=") for item in filter(None, parts.query.split("&")))}
    uri = urlunsplit(("postgresql", parts.netloc, parts.path, parts.query, parts.fragment))
    return uri, query, ours.get(ANSWER_TIMEOUT_PARAM, ANSWER_TIMEOUT_S)


def connector(url: str, shown: str, give_up: bool = True) -> Callable[[], psycopg.Connection[Any]]:
    """A function opening one connection of the PostgreSQL storage ``url`` (shown as ``shown``)
    with dse's timeouts, keepalives and settings (:func:`libpq_params`) under one
    :class:`AnswerWatch` (SQLAlchemy's ``creator``)."""
    uri, query, answer_s = split_url(url)
    params = libpq_params(query)
    watch = AnswerWatch(shown, answer_s, give_up) if answer_s > 0 else None
    try:
        connect_s = float(query.get("connect_timeout", params.get("connect_timeout", 0)))
    except ValueError:
        connect_s = 0.0

    def connect() -> psycopg.Connection[Any]:
        if watch is not None and watch.gave_up():
            raise watch.error()
        try:
            conn = WatchedConnection.connect(uri, **params)
        except psycopg.errors.ConnectionTimeout:
            raise ServerSilentError(shown, connect_s, "while connecting") from None
        conn._dse_watch = watch
        return conn

    return connect


def failure(exc: BaseException) -> str | None:
    """What the server did, as the predicate of "PostgreSQL at URL ...", for a psycopg error
    (``None`` for another error)."""
    if isinstance(exc, ServerSilentError):
        doing = f" {exc.while_doing}" if exc.while_doing else ""
        return (f"did not answer within {exc.seconds:g} s{doing} (the server is hung, overloaded "
                "or unreachable)")
    if not isinstance(exc, psycopg.Error):
        return None
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = (lines[0] if lines else type(exc).__name__)[:300]
    if any(sign in text for sign in REFUSED):
        return "refused the connection (is the server running?)"
    if isinstance(exc, psycopg.errors.QueryCanceled) and "statement timeout" in text:
        return ("cancelled a statement that ran past its statement_timeout (a lock held by a "
                "stopped worker, or an overloaded server)")
    if any(sign in text for sign in CLOSED):
        return f"closed the connection ({text})"
    return f"failed: {text}"


def says_lost(text: str) -> bool:
    """True when an error's text (as SQLAlchemy or Optuna render it) says the server was lost:
    silent, refusing, or closing connections."""
    return any(sign in text for sign in (ServerSilentError.__name__, *REFUSED, *CLOSED))
