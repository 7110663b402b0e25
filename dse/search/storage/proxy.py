"""The gRPC storage proxy: ``grpc://HOST:PORT`` reaches a ``dse storage-proxy`` (Optuna's gRPC
storage proxy) in front of the database, so the workers hold no database connection at all, the
proxy a fixed pool. Every call has a deadline
(:data:`~dse.search.storage.servers.ANSWER_TIMEOUT_S`), so a hung proxy ends a worker with one line;
a proxy owns its port alone (:func:`serve_proxy`).

Optuna's proxy writes one attribute per call: ~28 calls per trial. A dse storage-proxy also serves
two calls of its own (:data:`EXTRAS_SERVICE`, JSON over gRPC beside Optuna's service), so a worker
writes a trial's attributes in one call and counts trials without loading them
(:func:`grpc_call`). Against Optuna's own proxy the worker falls back to Optuna's calls.
"""

from __future__ import annotations

import signal
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import optuna
from optuna.exceptions import ExperimentalWarning
from optuna.storages import BaseStorage

from dse.errors import DseInputError
from dse.search import _optuna
from dse.search._optuna import rdb_backend
from dse.search.storage.databases import rdb_state_counts, rdb_storage, rdb_write_attrs
from dse.search.storage.failures import StorageUnreachable, database_failure, first_line
from dse.search.storage.servers import (
    ANSWER_TIMEOUT_PARAM,
    ANSWER_TIMEOUT_S,
    dse_params,
    is_server_url,
    normalize_url,
    parse_grpc_url,
    redact,
)

GRPC_READY_TIMEOUT_S = 10.0
_HUNG: dict[str, Any] = {}
"""Per proxy address (``HOST:PORT``): the first call of this process there that passed its
deadline. A deadline's one line is final (a hung proxy is not waited for again:
:func:`~dse.search.storage.failures.storage_lost`), so every later call there fails at once with
that error: a worker's closing calls (failing its trial, its summary) no longer wait a deadline
each, which ended 5 workers behind a paused proxy 21-63 s after the pause instead of within
30 s (issue 42; ``benchmarks/bench_proxy_pause.py``)."""
PROXY_THREADS = 8
"""Requests a ``dse storage-proxy`` serves at once, and so its database connections."""


def grpc_storage(url: str, timeout: float = GRPC_READY_TIMEOUT_S) -> BaseStorage:
    """A client of the gRPC storage proxy at ``grpc://HOST:PORT``, once it answers (else a
    :class:`DseInputError` after ``timeout`` seconds)."""
    host, port = parse_grpc_url(url)
    answer_s = dse_params(url)[1].get(ANSWER_TIMEOUT_PARAM, ANSWER_TIMEOUT_S)
    address = grpc_address(host, port)
    if address in _HUNG:
        raise _HUNG[address]  # hung earlier in this process: not waited for again
    try:
        import grpc
    except ModuleNotFoundError as exc:
        raise DseInputError("--storage", url, f"gRPC storage needs {exc.name}: "
                            "pip install 'dse[cluster]'") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        channel = grpc.insecure_channel(address)
        try:
            grpc.channel_ready_future(channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise StorageUnreachable("--storage", url, f"no storage proxy answers at {address} "
                                f"within {timeout:g} s (is dse storage-proxy running?)") from None
        finally:
            channel.close()
        return _optuna.grpc_proxy_client(address.rpartition(":")[0], port,
                                         _deadline(answer_s, address)
                                         if answer_s else None)


def _deadline(seconds: float, address: str) -> Any:
    """A gRPC client interceptor that gives every call without a deadline of its own one of
    ``seconds``: Optuna's proxy client sets none, so a hung proxy (or one whose database hangs
    past the proxy's own deadlines) would hold a worker forever. A call past it fails with
    ``DEADLINE_EXCEEDED`` (:func:`~dse.search.storage.failures.storage_failure` says so in one
    line), and so does every later call to ``address`` at once (:data:`_HUNG`)."""
    import grpc

    class Deadline(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
        def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
            hung = _HUNG.get(address)
            if hung is not None:
                return hung  # an RpcError is its own outcome: its result() raises it
            if details.timeout is None:
                details = _CallDetails(details.method, seconds, details.metadata,
                                       details.credentials, details.wait_for_ready,
                                       getattr(details, "compression", None))
            outcome = continuation(details, request)
            if isinstance(outcome, grpc.RpcError) and outcome.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                _HUNG.setdefault(address, outcome)
            return outcome

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
    its clients' trials are recovered by dse (see :func:`dse.search.storage.recovery.recover_stale_trials`).
    A port another server holds is refused (:class:`DseInputError`), never shared.
    """
    if not is_server_url(normalize_url(url)) and not url.startswith("sqlite"):
        raise DseInputError("--storage", url, "the storage proxy serves a database "
                            "(postgresql://... or sqlite:///...), not a journal file")
    _check_port_free(host, port)
    listen = grpc_address(host, port).rpartition(":")[0]  # an IPv6 address in brackets
    storage = optuna.storages.get_storage(
        rdb_storage(url, pool_size=threads, overflow=0, heartbeat=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        try:
            # gRPC shares a port by default (SO_REUSEPORT): a second proxy on it would start
            # and take half the new clients, to its own database.
            server = _optuna.make_grpc_server(storage, listen, port,
                                              ThreadPoolExecutor(max_workers=threads),
                                              options=(("grpc.so_reuseport", 0),),
                                              interceptors=(_database_status(redact(url)),))
        except RuntimeError as exc:
            raise DseInputError("--port", str(port),
                                f"cannot listen on {host}:{port}: {first_line(exc)}") from None
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
    silent: restarting, or sessions ended while the proxy itself was stopped) with ``UNAVAILABLE``
    and the one line of :func:`database_failure`, so its workers try again for their reconnection
    window (:func:`~dse.search.storage.failures.storage_lost`); a database that stays hung is
    bounded by the workers' own deadline. Optuna's servicer lets the error escape (``UNKNOWN``,
    wrapped by Optuna as "invalid data in the commit", and a traceback on the proxy's stderr)."""
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


def grpc_address(host: str, port: int) -> str:
    """``HOST:PORT`` as gRPC reads an address: an IPv6 address in brackets (``[::1]:13000``;
    gRPC took ``::1:13000`` for a misformatted name and logged a line of its own)."""
    bare = host.strip("[]")
    return f"[{bare}]:{port}" if ":" in bare else f"{bare}:{port}"


def _check_port_free(host: str, port: int) -> None:
    """:class:`DseInputError` when ``host:port`` cannot be ours alone (another proxy, or any
    server, listens on it), before the gRPC server tries it (whose own refusal also logs a line
    of gRPC's)."""
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host.strip("[]"), port,
                                                             type=socket.SOCK_STREAM)[0]
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
