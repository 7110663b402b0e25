"""The PostgreSQL password (issue 30, item 8): from the environment (``PGPASSWORD``) or a pgpass
file (``PGPASSFILE``, ``~/.pgpass``) when the URL has none; a password typed in the URL with
unescaped ``@`` and ``:`` connects and is shown nowhere (output, errors, the report, the study's
attributes); one whose end cannot be told (a ``/``, ``?`` or ``#`` in it) is refused in one line
that shows no part of it. Against a real PostgreSQL server (``test_distributed``'s)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import optuna
import postgres_server
import pytest
from study_helpers import CHEAP, ROOT, write_study
from test_distributed import postgres_url

from dse.errors import DseInputError
from dse.search.storage.opening import open_storage
from dse.search.storage.servers import encode_credentials, redact, without_password
from dse.search.study.study_file import load_study_spec

__all__ = ["postgres_url"]  # the PostgreSQL server fixture these tests share

AT_PASSWORD = "Xq7kVb2Rt@Zr9pLm4Ws:w@K"
"""A password with unescaped ``@`` and ``:``; its pieces must show nowhere. They are long enough
(9 characters of base64's alphabet) not to turn up by chance in the report's packed plotly.js (2 MB
of base64, where a given 3-character string is expected about ten times)."""
PIECES = ("Xq7kVb2Rt", "Zr9pLm4Ws", "w@K")


def dse(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dse", *args], capture_output=True, text=True,
                          timeout=180, cwd=ROOT, env={"COLUMNS": "250", **(env or os.environ)})


def study_file(tmp_path: Path, budget: int = 10) -> Path:
    name = f"secrets-{uuid.uuid4().hex[:8]}"
    return write_study(tmp_path / f"{name}.toml", name=name, **CHEAP, sampler="random",
                       budget=budget, seed=5)


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dse: error: "), result.stderr
    return lines[0]


def shows_none(text: str, pieces: tuple[str, ...] = PIECES) -> None:
    shown = [p for p in pieces if p in text]
    assert not shown, (shown, text)


def test_the_password_from_the_environment_or_a_pgpass_file(tmp_path: Path,
                                                            postgres_url: str) -> None:
    password = postgres_url.split("@")[0].rsplit(":", 1)[1]
    bare = without_password(postgres_url)
    assert password not in bare and bare.startswith("postgresql://dse@127.0.0.1:")
    host_port_db = bare.split("@", 1)[1]
    env = {k: v for k, v in os.environ.items() if k not in ("PGPASSWORD", "PGPASSFILE")}
    env["HOME"] = str(tmp_path)  # no ~/.pgpass of the machine's
    path = study_file(tmp_path)
    created = dse("run", str(path), "--storage", bare, "--trials", "0",
                  env={**env, "PGPASSWORD": password})
    assert created.returncode == 0, created.stderr
    assert f"ready in {bare}" in created.stdout, created.stdout
    pgpass = tmp_path / "pgpass"
    host, port = host_port_db.split("/")[0].split(":")
    pgpass.write_text(f"{host}:{port}:dse:dse:{password}\n", encoding="utf-8")
    pgpass.chmod(0o600)
    worked = dse("worker", str(path), "--storage", bare, "--trials", "2",
                 env={**env, "PGPASSFILE": str(pgpass)})
    assert worked.returncode == 0, worked.stderr
    assert "this worker completed 2 trials" in worked.stdout, worked.stdout
    # Neither: libpq's own words, in one line.
    line = one_line(dse("status", str(path), "--storage", bare, env=env))
    assert "password" in line, line


@pytest.fixture
def at_role(postgres_url: str) -> Iterator[str]:
    """A role with :data:`AT_PASSWORD` owning a database of its own: the URL that reaches it
    (the password as typed, unescaped)."""
    import psycopg

    role = f"dse_at_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{AT_PASSWORD}'")
        conn.execute(f"CREATE DATABASE {role} OWNER {role}")
    where = postgres_url.split("@", 1)[1].split("/")[0]
    yield f"postgresql://{role}:{AT_PASSWORD}@{where}/{role}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {role} WITH (FORCE)")
        conn.execute(f"DROP ROLE IF EXISTS {role}")


@pytest.mark.slow
def test_a_password_with_at_signs_connects_and_shows_nowhere(tmp_path: Path,
                                                             at_role: str) -> None:
    path = study_file(tmp_path)
    said = []
    for args in (("run", str(path), "--storage", at_role, "--trials", "0"),
                 ("worker", str(path), "--storage", at_role, "--trials", "3"),
                 ("status", str(path), "--storage", at_role),
                 ("report", str(path), "--storage", at_role, "--out", str(tmp_path / "out"))):
        result = dse(*args)
        assert result.returncode == 0, (args, result.stderr)
        said.append(result.stdout + result.stderr)
    assert "ready in postgresql://dse_at_" in said[0] and ":***@127.0.0.1:" in said[0], said[0]
    assert "this worker completed 3 trials" in said[1], said[1]
    shows_none("\n".join(said))
    page = next((tmp_path / "out").glob("*.html")).read_text(encoding="utf-8")
    assert ":***@127.0.0.1:" in page
    shows_none(page)
    spec = load_study_spec(str(path))
    study = optuna.load_study(study_name=spec.name, storage=open_storage(at_role, spec))
    storage = open_storage(at_role, spec)
    attrs = [study.user_attrs, storage.get_study_system_attrs(storage.get_study_id_from_name(
        spec.name))] + [
        {**t.user_attrs, **t.system_attrs} for t in study.get_trials(deepcopy=False)]
    assert len(attrs) > 3
    shows_none(json.dumps(attrs))
    # The same role with a wrong password of the same shape: one line, no piece of it.
    wrong = at_role.replace(AT_PASSWORD, "Ab3@Cd4:e@F")
    shows_none(one_line(dse("status", str(path), "--storage", wrong)), ("Ab3", "Cd4", "e@F"))
    proxy = subprocess.Popen([sys.executable, "-m", "dse", "storage-proxy", "--storage", at_role,
                              "--port", str(postgres_server.free_port())],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=ROOT)
    assert proxy.stdout is not None
    line = proxy.stdout.readline()
    proxy.send_signal(signal.SIGTERM)
    out, err = proxy.communicate(timeout=30)
    assert "dse storage-proxy: serving postgresql://dse_at_" in line, line + err
    shows_none(line + out + err)


@pytest.mark.parametrize("command", ["run", "status", "storage-proxy"])
def test_a_password_whose_end_cannot_be_told_is_refused_showing_none_of_it(
        tmp_path: Path, command: str) -> None:
    pytest.importorskip("psycopg")
    url = "postgresql://dse:Xq7/Zr9@w@K@127.0.0.1:1/dse"
    args = ["--storage", url] if command == "storage-proxy" else [str(study_file(tmp_path)),
                                                                   "--storage", url]
    line = one_line(dse(command, *args))
    assert "percent-encode" in line and "PGPASSWORD" in line, line
    shows_none(line)


def test_urls_as_libpq_reads_them_and_as_shown() -> None:
    """The user information ends at the last ``@`` before the host; what reaches libpq is
    percent-encoded; what is shown has no password (or, when its end is unclear, nothing)."""
    typed = "postgresql://dse:Xq7@Zr9:w@K@db:5432/dse?sslmode=require&application_name=a@b"
    assert encode_credentials(typed) == ("postgresql://dse:Xq7%40Zr9%3Aw%40K@db:5432/dse"
                                         "?sslmode=require&application_name=a@b")
    assert redact(typed) == "postgresql://dse:***@db:5432/dse?sslmode=require&application_name=a@b"
    assert without_password(typed) == ("postgresql://dse@db:5432/dse?sslmode=require"
                                       "&application_name=a@b")
    for same in ("postgresql://dse@db/dse", "postgresql://db/dse?application_name=a@b",
                 "postgresql://u:p%40w@h:5/db", "grpc://127.0.0.1:13000", "studies/x.journal"):
        assert encode_credentials(same) == same
    assert redact("postgresql://u:p%40w@h:5/db") == "postgresql://u:***@h:5/db"
    # A password is percent-decoded (docs/cluster.md says so): %40 is '@', a literal '%40' is %2540.
    assert encode_credentials("postgresql://u:p%2540w@h/db") == "postgresql://u:p%2540w@h/db"
    for unclear in ("postgresql://dse:Xq7/Zr9@db/dse", "postgresql://dse:Xq7?a=Zr9@db/dse",
                    "postgresql://dse:Xq7@Zr9#x@db/dse", "mysql+pymysql://dse:Xq7/Zr9@db/dse"):
        assert redact(unclear) == unclear.split("://")[0] + "://***"
        with pytest.raises(DseInputError) as refused:
            encode_credentials(unclear)
        shows_none(str(refused.value))


MALFORMED = {
    "unclosed IPv6 bracket": ("postgresql://dse:Xq7kVb2Rt@[::1:5432/dse", "Invalid IPv6 URL"),
    "unclosed IPv6 bracket, proxy": ("grpc://[::1", "Invalid IPv6 URL"),
    "a host that is no address": ("postgresql://dse:Xq7kVb2Rt@[zz]/dse", "'zz' does not appear"),
    "a port out of range": ("postgresql://dse:Xq7kVb2Rt@db:99999/dse", "Port out of range"),
    "a port that is no number": ("grpc://127.0.0.1:x", "Port could not be cast"),
}


@pytest.mark.parametrize("command", ["status", "worker", "storage-proxy"])
@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_a_malformed_url_is_one_line_with_its_password_masked(tmp_path: Path, command: str,
                                                              kind: str) -> None:
    """Issue 42, item 5: an unclosed IPv6 bracket printed a 56-line ``ValueError`` traceback in
    status, worker and storage-proxy. Every URL is parsed by one function
    (:func:`dse.search.storage.servers.parse_url`) that turns a malformed one into one line."""
    url, words = MALFORMED[kind]
    args = ["--storage", url] if command == "storage-proxy" else [str(study_file(tmp_path)),
                                                                   "--storage", url]
    line = one_line(dse(command, *args))
    assert "malformed URL" in line and words in line, line
    assert "Traceback" not in line and "Xq7kVb2Rt" not in line
    if "dse:" in url:
        assert "dse:***@" in line, line
