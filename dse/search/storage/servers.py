"""Database servers and the storage proxy as a study reaches them, without their drivers: their
URLs (dse's own query parameters, credentials and their redaction), the time bounds of a connection
and of an answer, and the words of a server that was lost.

Shared by the storages of servers (:mod:`~dse.search.storage.databases`,
:mod:`~dse.search.storage.proxy`), PostgreSQL's connections (:mod:`~dse.search.storage.postgres`,
imported only for a PostgreSQL URL) and the reading of a lost storage
(:mod:`~dse.search.storage.failures`), so that none of them imports another for these.
"""

from __future__ import annotations

from urllib.parse import SplitResult, quote, unquote, urlsplit

from dse.errors import DseInputError

CONNECT_TIMEOUT_S = 10
"""A database that does not answer fails the connection after this long (libpq's
``connect_timeout``; a refused connection fails at once). PostgreSQL's other timeouts are in
:mod:`dse.search.storage.postgres`."""
ANSWER_TIMEOUT_S = 20.0
"""A storage call with no answer after this long means the server is hung or unreachable: the
worker gives up with one line (PostgreSQL: :class:`dse.search.storage.postgres.AnswerWatch`; the gRPC
proxy: a deadline on every call). Longer than PostgreSQL's ``statement_timeout``
(:data:`dse.search.storage.postgres.STATEMENT_TIMEOUT_S`), so a live server answers first; short enough
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
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
REFUSED = ("Connection refused", "No such file or directory")
"""libpq's words for a server that is not there (its TCP port, its Unix socket)."""
CLOSED = ("terminating connection", "closed the connection", "shutting down", "starting up",
          "could not receive data", "could not send data", "connection is closed",
          "connection is lost", "not yet accepting connections", "in recovery mode")
"""libpq's and the server's words for a connection the server ended (stopped, crashed,
restarting)."""


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


def parse_url(url: str) -> SplitResult:
    """The one parse of a server's URL, which every reader of one goes through (:func:`dse_params`,
    :func:`parse_grpc_url`, PostgreSQL's connection): its parts, with the user name and password
    percent-encoded (:func:`encode_credentials`). A malformed URL (an unclosed IPv6 bracket, a
    host that is no address, a port that is no number or over 65535, a password that cannot be
    told from the host) is a one-line :class:`DseInputError` showing the URL with its password
    masked (:func:`redact`), never Python's ``ValueError``."""
    try:
        parts = urlsplit(encode_credentials(url))
        _ = parts.port  # a port that is no number, or out of range, raises here
    except ValueError as exc:
        raise DseInputError("--storage", redact(url), f"malformed URL ({exc}): expected "
                            "SCHEME://[USER[:PASSWORD]@]HOST[:PORT][/DATABASE][?PARAMETERS], an "
                            "IPv6 address in brackets ([::1])") from None
    return parts


def dse_params(url: str) -> tuple[str, dict[str, float]]:
    """``url`` without dse's own query parameters (:data:`ANSWER_TIMEOUT_PARAM`,
    :data:`RECONNECT_PARAM`; the rest of it exactly as given) and their values in seconds; a
    malformed URL is refused by :func:`parse_url`."""
    query = parse_url(url).query
    kept: list[str] = []
    found: dict[str, float] = {}
    for item in filter(None, query.split("&")):
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
    # The query as given (the URL's own text, not the parse's, whose credentials are encoded): it
    # starts at the first '?' (parse_url refused a password holding one unencoded).
    rest, hash_, fragment = url.partition("#")
    head = rest.partition("?")[0]
    return head + ("?" + "&".join(kept) if kept else "") + hash_ + fragment, found


def reconnect_window(url: str | None) -> float:
    """Seconds a worker tries to reach the storage ``url`` again after losing it mid-run
    (:data:`RECONNECT_S`, or the URL's :data:`RECONNECT_PARAM`); 0 for a file (journal,
    SQLite), whose errors are the disk's."""
    if not url or "://" not in url or url.startswith("sqlite"):
        return 0.0
    return dse_params(url)[1].get(RECONNECT_PARAM, RECONNECT_S)


def parse_grpc_url(url: str) -> tuple[str, int]:
    """``grpc://HOST:PORT`` (dse's query parameters aside) -> (host, port); a malformed URL is
    refused by :func:`parse_url`."""
    where = dse_params(url)[0].removeprefix("grpc://").rstrip("/")
    host, _, port = where.rpartition(":")
    if not host or not port.isdigit():
        raise DseInputError("--storage", url, "expected grpc://HOST:PORT (a dse storage-proxy)")
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    """True when ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    import ipaddress

    if host.strip("[]") in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
