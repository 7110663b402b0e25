"""Storages of studies: the journal file by default, database servers and the gRPC proxy.

:func:`open_storage` opens the storage of a study. The default is Optuna's journal file
``NAME.journal`` beside the study file (under ``./studies/`` for a built-in study), written under
an ``flock`` (:class:`FlockLock`; Optuna's default symlink lock outlives a SIGKILLed writer) and
safe for several processes on one host; SQLite is unsafe for several processes. Measured on this
2-core machine under load (``benchmarks/bench_study.py``): about 15 ms per trial on the journal for
the default study, most of it Optuna (sampling and one fsynced append per parameter); SQLite about
87 ms per trial. A record torn by power loss is cut off
(:func:`repair_journal_tail`). Every other URL is a database server or the proxy in front of one:

- ``postgresql://...`` (also ``postgres://``) opens PostgreSQL through the psycopg 3 driver
  (``postgresql+psycopg://``); other SQLAlchemy URLs (``sqlite:///FILE``, ``mysql+pymysql://``)
  are used as given. A server database gets Optuna's heartbeat (:data:`HEARTBEAT_S`,
  :data:`GRACE_S`) with a retry callback, a small connection pool per process
  (:data:`POOL_SIZE` + :data:`POOL_OVERFLOW`, checked before use) and a connect timeout
  (:data:`CONNECT_TIMEOUT_S`), so a database that is down fails in seconds with one line.
  PostgreSQL connections also get statement, idle-in-transaction and keepalive timeouts and a
  deadline on every answer (:mod:`dse.search.postgres`), so a hung or vanished server ends a
  worker with one line within 30 s; its sessions commit asynchronously
  (``synchronous_commit=off``) unless the URL gives its own ``options``.
- ``grpc://HOST:PORT`` reaches a ``dse storage-proxy`` (Optuna's gRPC storage proxy) in front of
  the database: the workers then hold no database connection at all, the proxy a fixed pool.
  Every call has a deadline (:data:`ANSWER_TIMEOUT_S`), so a hung proxy ends a worker with one
  line; a proxy owns its port alone (:func:`serve_proxy`).

A server that refuses or closes connections mid-run (restarted) is tried again by a worker for
:data:`RECONNECT_S` (:func:`storage_lost`, :func:`dse.search.runner.run_study`). Failures to
reach a storage are :class:`~dse.errors.DseInputError` (one line, exit code 2); passwords never
appear in messages (:func:`redact`), and a password may hold ``@`` (:func:`encode_credentials`);
a URL without one leaves it to libpq (``PGPASSWORD``, ``~/.pgpass``).
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import signal
import stat
import sys
import threading
import warnings
from collections.abc import Callable, Container, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import optuna
from optuna.exceptions import ExperimentalWarning
from optuna.storages import BaseStorage, JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import FrozenTrial, TrialState

from dse.errors import DseInputError
from dse.search import _optuna
from dse.search._optuna import BaseJournalFileLock, rdb_backend
from dse.search.journal import CheckedJournalBackend, check_journal
from dse.search.recovery import MAX_RETRIES, RetryStaleTrial
from dse.search.spec import StudySpec, results_dir

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
CONNECT_TIMEOUT_S = 10
"""A database that does not answer fails the connection after this long (libpq's
``connect_timeout``; a refused connection fails at once). PostgreSQL's other timeouts are in
:mod:`dse.search.postgres`."""
ANSWER_TIMEOUT_S = 20.0
"""A storage call with no answer after this long means the server is hung or unreachable: the
worker gives up with one line (PostgreSQL: :class:`dse.search.postgres.AnswerWatch`; the gRPC
proxy: a deadline on every call). Longer than PostgreSQL's ``statement_timeout``
(:data:`dse.search.postgres.STATEMENT_TIMEOUT_S`), so a live server answers first; short enough
that the worker's one line comes within 30 s of the hang. URL parameter
:data:`ANSWER_TIMEOUT_PARAM`."""
RECONNECT_S = 60.0
"""How long a worker that has been working tries to reach its storage again after the server
(PostgreSQL, the storage proxy) went away (refused or closed its connections: a restart, a
fail-over), with a growing wait between tries (:data:`RECONNECT_FIRST_S` doubling up to
:data:`RECONNECT_MAX_WAIT_S`), before it gives up with one line. A routine PostgreSQL restart
takes seconds. URL parameter :data:`RECONNECT_PARAM`."""
RECONNECT_FIRST_S = 0.5
RECONNECT_MAX_WAIT_S = 8.0
ANSWER_TIMEOUT_PARAM = "dse_answer_timeout"
"""The URL query parameter (PostgreSQL and ``grpc://``) that sets the answer deadline in seconds
(0: none); dse takes it out of the URL before the driver sees it."""
RECONNECT_PARAM = "dse_reconnect"
"""The URL query parameter (PostgreSQL and ``grpc://``) that sets :data:`RECONNECT_S` (0: give up
at once, as a worker does on a storage that is down when it starts)."""
GRPC_READY_TIMEOUT_S = 10.0
PROXY_THREADS = 8
"""Requests a ``dse storage-proxy`` serves at once, and so its database connections."""
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")

REFUSED = ("Connection refused", "No such file or directory")
"""libpq's words for a server that is not there (its TCP port, its Unix socket)."""
CLOSED = ("terminating connection", "closed the connection", "shutting down", "starting up",
          "could not receive data", "could not send data", "connection is closed",
          "connection is lost", "not yet accepting connections", "in recovery mode")
"""libpq's and the server's words for a connection the server ended (stopped, crashed,
restarting)."""


# --- the journal file and opening a storage ----------------------------------------------------


def default_storage_path(spec: StudySpec) -> Path:
    """Where the default journal of ``spec`` lives: ``NAME.journal`` beside the study file, or under
    ``./studies`` for a built-in study (:func:`dse.search.spec.results_dir`)."""
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
    database server (see below). A storage that cannot be reached raises
    :class:`DseInputError` within seconds.
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
    return rdb_storage(url, RetryStaleTrial(max_retry=MAX_RETRIES))


class FlockLock(BaseJournalFileLock):
    """The journal's write lock as an ``flock`` on ``FILE.write.lock``.

    Optuna's default lock is a symlink that a SIGKILLed writer leaves behind: the next run then
    waits out its 30-second grace period. The kernel drops an ``flock`` when its process dies.
    (Processes that open the same journal with Optuna's default lock are not excluded by this
    one; readers such as optuna-dashboard take no lock.)
    """

    def __init__(self, journal: str) -> None:
        self.path = journal + ".write.lock"
        self._fd: int | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "_fd": None}

    def acquire(self) -> bool:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return True

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)


class QueueJournalStorage(JournalStorage):
    """A journal storage whose queue look-up (Optuna's ``Study.ask`` reads the waiting trials on
    every trial) scans only from the first trial that was waiting at the last look-up: a trial
    is created waiting or running and never becomes waiting again, so the trials before it stay
    not waiting (what Optuna's in-memory storage does). Without it each ``ask`` reads every trial
    of the study, O(trials) per trial."""

    def __init__(self, backend: JournalFileBackend) -> None:
        super().__init__(backend)
        self._scan_from: dict[int, int] = {}
        """Per study id: the trial number the next queue look-up starts from."""

    def get_all_trials(self, study_id: int, deepcopy: bool = True,
                       states: Container[TrialState] | None = None) -> list[FrozenTrial]:
        if states != (TrialState.WAITING,) or deepcopy:
            return super().get_all_trials(study_id, deepcopy, states)
        early = _optuna.trials_since_number(self, study_id, self._scan_from.get(study_id, 0))
        waiting = [t for t in early if t.state == TrialState.WAITING]
        if early:
            self._scan_from[study_id] = waiting[0].number if waiting else early[-1].number + 1
        return waiting


def journal_storage(path: Path, study: str = "STUDY") -> JournalStorage:
    """Optuna's journal in ``path`` with an :class:`FlockLock`, checked first: a damaged tail is
    cut off, any other damage refused without writing (:func:`dse.search.journal.check_journal`;
    ``study`` names the study in the message's ``dse repair`` advice)."""
    check_journal_file(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = FlockLock(str(path))
        if path.exists() and check_journal(path, study, thorough=False).tail_bytes:
            repair_journal_tail(path, lock, study)
        return QueueJournalStorage(CheckedJournalBackend(str(path), lock))
    except OSError as exc:
        raise DseInputError(str(exc.filename or path), "", f"cannot open the journal: "
                            f"{exc.strerror or exc}") from None
    except Exception:
        # The quick check reads only the start of each line; Optuna's reading (which decodes
        # every line, before anything is written) failed on the rest of one: find and name it.
        check_journal(path, study)
        raise


def check_journal_file(path: Path) -> None:
    """Refuse, in one line, a journal path that cannot hold a journal: a symbolic link loop
    (which reads as no file at all), or something other than a regular file, such as a link to
    ``/dev/null`` (where every append's fsync fails). A path that does not exist yet passes: the
    first write creates it."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DseInputError(str(path), "", "is a symbolic link loop (following it leads back "
                                "to itself), not a journal: remove the link") from None
        raise DseInputError(str(path), "", f"cannot read the journal: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise DseInputError(str(path), "", "is not a regular file (a device such as /dev/null, a "
                            "folder or a pipe, perhaps through a link): a journal must be a file")


def repair_journal_tail(path: Path, lock: BaseJournalFileLock, study: str = "STUDY") -> bool:
    """Cut the damaged last lines off the journal: a partial record (an append that power loss
    interrupted) or lines that hold no record (garbage, even ending in a newline), when no intact
    record follows them.

    Optuna's reader skips a last line without its newline, but the next append would be glued
    to it and make the whole journal unreadable. Writes happen under the lock, so a partial line
    seen under it never completed (its writer never saw its fsync return). True if cut.
    """
    if not path.exists() or path.stat().st_size == 0:
        return False
    lock.acquire()
    try:
        scan = check_journal(path, study)  # again under the lock: a writer may have finished
        if not scan.tail_bytes:
            return False
        with path.open("rb+") as f:
            f.truncate(f.seek(0, os.SEEK_END) - scan.tail_bytes)
            f.flush()
            os.fsync(f.fileno())
        return True
    finally:
        lock.release()


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


# --- database servers ----------------------------------------------------------------------------



def normalize_url(url: str) -> str:
    """``postgresql://`` and ``postgres://`` name the psycopg 3 driver; other URLs unchanged."""
    for scheme in ("postgresql://", "postgres://"):
        if url.startswith(scheme):
            return "postgresql+psycopg://" + url.removeprefix(scheme)
    return url


def _credentials(url: str) -> tuple[str, str | None, str]:
    """``url`` as (scheme, its user information or ``None``, the rest after the ``@``), as given.

    The user information ends at the **last** ``@`` before the host, so a password may hold
    ``@`` and ``:`` unescaped (``postgresql://dse:p@ss:w@db/dse``); libpq and SQLAlchemy take the
    first ``@`` and would read part of the password as the host. A ``/``, ``?`` or ``#`` in a
    password leaves the URL ambiguous (the host could start at either ``@``): refused by
    :class:`DseInputError`, whose message holds no part of the URL's user information.
    """
    scheme, _, rest = url.partition("://")
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    head = rest[:cut]
    userinfo, at, _ = head.rpartition("@")
    after = rest[len(userinfo) + 1:] if at else rest
    password_like = ":" in head and not head.rpartition(":")[2].isdigit()
    if "@" in after.split("=", 1)[0] or (not at and "@" in after and password_like):
        raise DseInputError("--storage", f"{scheme}://***", "cannot tell where the password ends "
                            "(a '/', '?' or '#' in it): percent-encode those characters in the URL "
                            "(%2F, %3F, %23), or better keep the password out of the URL: libpq reads "
                            "PGPASSWORD or ~/.pgpass (PGPASSFILE)")
    return scheme, (userinfo if at else None), after


def encode_credentials(url: str) -> str:
    """``url`` with its user name and password percent-encoded as libpq and SQLAlchemy read them
    (a password with an unescaped ``@`` or ``:`` then connects as typed). :class:`DseInputError`
    for an ambiguous URL (:func:`_credentials`)."""
    return _with_credentials(url, keep_password=True)


def without_password(url: str) -> str:
    """``url`` without its password (the user name kept, percent-encoded), for the objects that
    need no password: nothing that holds this URL can show it."""
    return _with_credentials(url, keep_password=False)


def _with_credentials(url: str, keep_password: bool) -> str:
    if "://" not in url:
        return url
    scheme, userinfo, after = _credentials(url)
    if userinfo is None:
        return url
    user, colon, password = userinfo.partition(":")
    encoded = quote(unquote(user), safe="")
    if colon and keep_password:
        encoded += ":" + quote(unquote(password), safe="")
    return f"{scheme}://{encoded}@{after}"


def redact(url: str) -> str:
    """``url`` with its password hidden (for messages, reports and logs); a URL whose password
    cannot be told from its host shows nothing after its scheme."""
    if "://" not in url:
        return url
    try:
        scheme, userinfo, after = _credentials(url)
    except DseInputError:
        return url.partition("://")[0] + "://***"
    if userinfo is None or ":" not in userinfo:
        return url
    return f"{scheme}://{userinfo.partition(':')[0]}:***@{after}"


def is_server_url(url: str) -> bool:
    """True for a database server (heartbeat, pool); False for SQLite, a file."""
    return "://" in url and not url.startswith("sqlite")


def rdb_storage(url: str,
                stale_callback: Callable[[optuna.Study, FrozenTrial], None] | None = None,
                pool_size: int = POOL_SIZE, overflow: int = POOL_OVERFLOW,
                heartbeat: bool = True) -> RDBStorage:
    """Optuna's RDB storage for an SQLAlchemy URL.

    On a database server: a pool of ``pool_size`` (+ ``overflow``) connections checked before
    use, a connect timeout (on PostgreSQL all of :mod:`dse.search.postgres`'s timeouts), and
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
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExperimentalWarning)
            return RDBStorage(url, engine_kwargs=engine, **kwargs)
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
                            f"cannot open the database: {_first_line(exc)}") from None


def _postgres_connector(url: str, shown: str, give_up: bool) -> tuple[str, Callable[[], Any]]:
    """The URL SQLAlchemy gets (without dse's own query parameter) and the function that opens
    each connection with dse's timeouts (:func:`dse.search.postgres.connector`)."""
    try:
        from dse.search import postgres
    except ModuleNotFoundError as exc:
        raise DseInputError("--storage", shown, f"the database driver is not installed "
                            f"({exc.name}): pip install 'dse[cluster]'") from None
    uri, _, _ = postgres.split_url(url)
    # SQLAlchemy and Optuna get the URL without the password (only the connector holds it), so
    # no object, message or log of theirs can show it.
    return ("postgresql+psycopg://" + without_password(uri).removeprefix("postgresql://"),
            postgres.connector(url, shown, give_up))


def _first_line(exc: BaseException) -> str:
    """The first informative line of a driver error (SQLAlchemy wraps it with its own text)."""
    cause: BaseException = getattr(exc, "orig", None) or exc
    return _one_line(str(cause)) or type(cause).__name__


def _one_line(text: str) -> str:
    """The first non-blank line of ``text``, at most 300 characters."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0][:300] if lines else ""


def dse_params(url: str) -> tuple[str, dict[str, float]]:
    """``url`` without dse's own query parameters (:data:`ANSWER_TIMEOUT_PARAM`,
    :data:`RECONNECT_PARAM`; the rest of it exactly as given) and their values in seconds."""
    parts = urlsplit(url)
    kept: list[str] = []
    found: dict[str, float] = {}
    for item in filter(None, parts.query.split("&")):
        key, _, value = (unquote(x) for x in item.partition("="))
        if key not in (ANSWER_TIMEOUT_PARAM, RECONNECT_PARAM):
            kept.append(item)
            continue
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if not 0 <= seconds < float("inf"):
            raise DseInputError("--storage", key, f"expected seconds >= 0, found {value!r}")
        found[key] = seconds
    if not found:
        return url, found
    return urlunsplit(parts._replace(query="&".join(kept))), found


def reconnect_window(url: str | None) -> float:
    """Seconds a worker tries to reach the storage ``url`` again after losing it mid-run
    (:data:`RECONNECT_S`, or the URL's :data:`RECONNECT_PARAM`); 0 for a file (journal,
    SQLite), whose errors are the disk's."""
    if not url or "://" not in url or url.startswith("sqlite"):
        return 0.0
    return dse_params(url)[1].get(RECONNECT_PARAM, RECONNECT_S)


def parse_grpc_url(url: str) -> tuple[str, int]:
    """``grpc://HOST:PORT`` (dse's query parameters aside) -> (host, port)."""
    where = dse_params(url)[0].removeprefix("grpc://").rstrip("/")
    host, _, port = where.rpartition(":")
    if not host or not port.isdigit():
        raise DseInputError("--storage", url, "expected grpc://HOST:PORT (a dse storage-proxy)")
    return host.strip("[]"), int(port)


def grpc_storage(url: str, timeout: float = GRPC_READY_TIMEOUT_S) -> BaseStorage:
    """A client of the gRPC storage proxy at ``grpc://HOST:PORT``, once it answers (else a
    :class:`DseInputError` after ``timeout`` seconds)."""
    host, port = parse_grpc_url(url)
    answer_s = dse_params(url)[1].get(ANSWER_TIMEOUT_PARAM, ANSWER_TIMEOUT_S)
    try:
        import grpc
    except ModuleNotFoundError as exc:
        raise DseInputError("--storage", url, f"gRPC storage needs {exc.name}: "
                            "pip install 'dse[cluster]'") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        channel = grpc.insecure_channel(f"{host}:{port}")
        try:
            grpc.channel_ready_future(channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise StorageUnreachable("--storage", url, f"no storage proxy answers at {host}:{port} "
                                f"within {timeout:g} s (is dse storage-proxy running?)") from None
        finally:
            channel.close()
        return _optuna.grpc_proxy_client(host, port, _deadline(answer_s) if answer_s else None)


def _deadline(seconds: float) -> Any:
    """A gRPC client interceptor that gives every call without a deadline of its own one of
    ``seconds``: Optuna's proxy client sets none, so a hung proxy (or one whose database hangs
    past the proxy's own deadlines) would hold a worker forever. A call past it fails with
    ``DEADLINE_EXCEEDED`` (:func:`storage_failure` says so in one line)."""
    import grpc

    class Deadline(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
        def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
            if details.timeout is None:
                details = _CallDetails(details.method, seconds, details.metadata,
                                       details.credentials, details.wait_for_ready,
                                       getattr(details, "compression", None))
            return continuation(details, request)

    class _CallDetails(grpc.ClientCallDetails):  # type: ignore[misc]
        def __init__(self, method: str, timeout: float, metadata: Any, credentials: Any,
                     wait_for_ready: Any, compression: Any) -> None:
            self.method, self.timeout, self.metadata = method, timeout, metadata
            self.credentials, self.wait_for_ready = credentials, wait_for_ready
            self.compression = compression

    return Deadline()


def serve_proxy(url: str, host: str, port: int, threads: int = PROXY_THREADS,
                on_ready: Callable[[int], None] | None = None) -> None:
    """Run Optuna's gRPC storage proxy for the database ``url`` on ``host:port`` until SIGTERM,
    SIGINT or Ctrl-C; ``on_ready`` gets the port once it listens.

    The proxy keeps ``threads`` database connections (one per request thread) and no heartbeat:
    its clients' trials are recovered by dse (see :func:`dse.search.recovery.recover_stale_trials`).
    A port another server holds is refused (:class:`DseInputError`), never shared.
    """
    if not is_server_url(normalize_url(url)) and not url.startswith("sqlite"):
        raise DseInputError("--storage", url, "the storage proxy serves a database "
                            "(postgresql://... or sqlite:///...), not a journal file")
    _check_port_free(host, port)
    storage = optuna.storages.get_storage(
        rdb_storage(url, pool_size=threads, overflow=0, heartbeat=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        try:
            # gRPC shares a port by default (SO_REUSEPORT): a second proxy on it would start
            # and take half the new clients, to its own database.
            server = _optuna.make_grpc_server(storage, host, port,
                                              ThreadPoolExecutor(max_workers=threads),
                                              options=(("grpc.so_reuseport", 0),),
                                              interceptors=(_database_status(redact(url)),))
        except RuntimeError as exc:
            raise DseInputError("--port", str(port),
                                f"cannot listen on {host}:{port}: {_first_line(exc)}") from None
    server.add_generic_rpc_handlers((extras_handler(storage),))
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set())
                for sig in (signal.SIGTERM, signal.SIGINT)}
    server.start()
    try:
        if on_ready is not None:
            on_ready(port)
        while not stop.wait(0.5):
            pass
    finally:
        server.stop(grace=5).wait()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _database_status(shown: str) -> Any:
    """A gRPC server interceptor that answers a call whose database was lost (refused, closed,
    silent: restarting, or sessions ended while the proxy itself was stopped) with
    ``UNAVAILABLE`` and the one line of :func:`database_failure`, so its workers try again for
    their reconnection window (:func:`storage_lost`); a database that stays hung is bounded by
    the workers' own deadline. Optuna's servicer lets the error escape (``UNKNOWN``, wrapped by
    Optuna as "invalid data in the commit", and a traceback on the proxy's stderr)."""
    import grpc

    def guard(behavior: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        def call(request: Any, context: Any) -> Any:
            try:
                return behavior(request, context)
            except Exception as exc:
                # Only a lost server: the servicer's own answers (ALREADY_EXISTS for a duplicate
                # study, whose cause is the database's IntegrityError) pass as they are.
                said = database_failure(exc)
                if said is None or not said.startswith(("refused", "closed", "did not answer")):
                    raise
                context.abort(grpc.StatusCode.UNAVAILABLE, f"PostgreSQL at {shown} {said}")
        return call

    class DatabaseStatus(grpc.ServerInterceptor):  # type: ignore[misc]
        def intercept_service(self, continuation: Any, details: Any) -> Any:
            handler = continuation(details)
            if handler is None or handler.unary_unary is None:
                return handler
            return grpc.unary_unary_rpc_method_handler(
                guard(handler.unary_unary), request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer)

    return DatabaseStatus()


def _check_port_free(host: str, port: int) -> None:
    """:class:`DseInputError` when ``host:port`` cannot be ours alone (another proxy, or any
    server, listens on it), before the gRPC server tries it (whose own refusal also logs a line
    of gRPC's)."""
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except OSError as exc:
        raise DseInputError("--host", host, f"cannot listen there: {exc.strerror or exc}") from None
    with socket.socket(family, kind, proto) as probe:
        # As gRPC binds: SO_REUSEADDR (a port whose last server just stopped is free), and no
        # SO_REUSEPORT (a listener that shares the port is refused).
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise DseInputError("--port", str(port), f"cannot listen on {host}:{port}: "
                                f"{exc.strerror or exc} (another dse storage-proxy or another "
                                "server holds it; choose another --port)") from None


RESOURCE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS,
                             errno.EIO})
"""File errors that are the machine's, not dse's: a full disk or quota, no permission, a
read-only or failing file system."""


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
                return f"lost the database{at}: {_first_line(cause)}"
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
    (:class:`dse.search.postgres.AnswerWatch`), so the main thread meets the same loss at its next
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
        postgres = sys.modules.get("dse.search.postgres")
        message = record.getMessage()
        return not (postgres is not None and message.startswith("Caught an error from sqlalchemy")
                    and postgres.says_lost(message))


def database_failure(exc: BaseException) -> str | None:
    """What the PostgreSQL server did ("refused the connection", "did not answer within 20 s",
    ...) when ``exc`` or an error in its chain (SQLAlchemy's ``orig`` included) comes from its
    driver; ``None`` otherwise (:func:`dse.search.postgres.failure`)."""
    postgres = sys.modules.get("dse.search.postgres")
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


def is_loopback(host: str) -> bool:
    """True when ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    import ipaddress

    if host.strip("[]") in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# --- RDB fast paths ------------------------------------------------------------------------------
# Optuna writes each trial attribute in two statements (find the trial, upsert the row) and
# counts trials by loading them; on a database server each statement is a round trip. These do
# the same work in one transaction and one statement per table, or one COUNT.


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


# --- dse's calls on the gRPC proxy ---------------------------------------------------------------
# Optuna's proxy writes one attribute per call: ~28 calls per trial. A dse storage-proxy also
# serves these two calls (JSON over gRPC, beside Optuna's service), so a worker writes a trial's
# attributes in one call and counts trials without loading them. Against Optuna's own proxy the
# worker falls back to Optuna's calls.

EXTRAS_SERVICE = "dse.StorageExtras"


def _json_bytes(value: Any) -> bytes:
    import json

    return json.dumps(value).encode()


def _from_json(data: bytes) -> Any:
    import json

    return json.loads(data)


def extras_handler(storage: BaseStorage) -> Any:
    """The gRPC handler of dse's calls for a proxy serving ``storage`` (an RDB storage)."""
    import grpc
    from optuna.exceptions import UpdateFinishedTrialError

    backend = rdb_backend(storage)
    assert backend is not None

    def write_attrs(req: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            rdb_write_attrs(backend, int(req["trial_id"]), req["user_attrs"], req["system_attrs"])
        except UpdateFinishedTrialError as exc:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        except KeyError as exc:
            context.abort(grpc.StatusCode.NOT_FOUND, str(exc))
        return {}

    def state_counts(req: dict[str, Any], context: Any) -> dict[str, int]:
        counts = rdb_state_counts(backend, int(req["study_id"]), req.get("below"))
        return {state.name: n for state, n in counts.items()}

    handlers = {name: grpc.unary_unary_rpc_method_handler(
        fn, request_deserializer=_from_json, response_serializer=_json_bytes)
        for name, fn in (("WriteTrialAttrs", write_attrs), ("StateCounts", state_counts))}
    return grpc.method_handlers_generic_handler(EXTRAS_SERVICE, handlers)


def grpc_call(storage: BaseStorage, method: str, request: dict[str, Any]) -> Any:
    """Call dse's ``method`` on the proxy behind ``storage``: its reply, or ``None`` when
    ``storage`` is not a gRPC proxy client or the proxy is Optuna's own (without dse's calls)."""
    from optuna.storages import GrpcStorageProxy

    if not isinstance(storage, GrpcStorageProxy) or getattr(storage, "_dse_plain", False):
        return None
    import grpc
    from optuna.exceptions import UpdateFinishedTrialError

    calls: dict[str, Any] = storage.__dict__.setdefault("_dse_calls", {})
    if method not in calls:
        calls[method] = _optuna.grpc_channel(storage).unary_unary(
            f"/{EXTRAS_SERVICE}/{method}", request_serializer=_json_bytes,
            response_deserializer=_from_json)
    try:
        return calls[method](request)  # the channel's deadline (:func:`_deadline`)
    except grpc.RpcError as exc:
        if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
            storage._dse_plain = True  # type: ignore[attr-defined]
            return None
        if exc.code() == grpc.StatusCode.FAILED_PRECONDITION:
            raise UpdateFinishedTrialError(exc.details()) from None
        if exc.code() == grpc.StatusCode.NOT_FOUND:
            raise KeyError(exc.details()) from None
        raise
