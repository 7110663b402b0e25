"""A throwaway PostgreSQL server on loopback, for the distributed tests and benchmark.

    python tests/postgres_server.py start DIR   # initdb into DIR, start, print the URL
    python tests/postgres_server.py stop DIR    # stop it (DIR stays; remove it yourself)

Debian's server binaries (``/usr/lib/postgresql/*/bin``; ``apt-get install postgresql``) are run
as the ``postgres`` user when this runs as root (PostgreSQL refuses root). The server listens on
127.0.0.1 only, on a free port, with a random password for the user ``dse`` (scram-sha-256) and a
database ``dse``; its Unix socket stays in DIR. ``.ci/run`` uses this to serve the test session;
``tests/test_distributed.py`` starts one itself when ``DSE_TEST_POSTGRES_URL`` is not set
(:func:`start_watched`: a detached watcher stops it if the session dies before its teardown).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
from pathlib import Path

BIN_GLOB = "/usr/lib/postgresql/*/bin"


def server_bin() -> Path | None:
    """The newest installed PostgreSQL server's bin folder (``None`` when none is installed)."""
    found = [p for p in Path("/").glob(BIN_GLOB.lstrip("/")) if (p / "initdb").exists()]
    if not found:
        return None
    return max(found, key=lambda p: [int(x) if x.isdigit() else 0 for x in p.parent.name.split(".")])


def _as_server_user() -> list[str]:
    if os.geteuid() != 0:
        return []
    if shutil.which("runuser") is None:
        raise RuntimeError("running as root without runuser: cannot start postgres as another user")
    return ["runuser", "-u", "postgres", "--"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 free at the time of asking (servers, proxies in tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {result.stdout}{result.stderr}")


def start(folder: Path) -> str:
    """Create a cluster in ``folder`` (which must be empty or missing), start it and return its
    ``postgresql://`` URL."""
    bindir = server_bin()
    if bindir is None:
        raise RuntimeError(f"no PostgreSQL server in {BIN_GLOB} (apt-get install postgresql)")
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    user = _as_server_user()
    if user:
        shutil.chown(folder, "postgres", "postgres")
    password = secrets.token_hex(12)
    pwfile = folder / "password"
    pwfile.write_text(password + "\n", encoding="utf-8")
    if user:
        shutil.chown(pwfile, "postgres", "postgres")
    data = folder / "data"
    _run([*user, str(bindir / "initdb"), "-D", str(data), "-U", "dse", f"--pwfile={pwfile}",
          "--auth=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"])
    pwfile.unlink()
    port = free_port()
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c max_connections=100"
    (folder / "options").write_text(options + "\n", encoding="utf-8")
    restart(folder)
    env = {**os.environ, "PGPASSWORD": password}
    _run([str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "dse", "dse"], env=env)
    url = f"postgresql://dse:{password}@127.0.0.1:{port}/dse"
    (folder / "url").write_text(url + "\n", encoding="utf-8")
    return url


def restart(folder: Path) -> None:
    """Start the server of ``folder`` (created by :func:`start`) again, on the same port."""
    bindir = server_bin()
    assert bindir is not None
    options = (folder / "options").read_text(encoding="utf-8").strip()
    _run([*_as_server_user(), str(bindir / "pg_ctl"), "-D", str(folder / "data"), "-l",
          str(folder / "server.log"), "-w", "-t", "60", "-o", options, "start"])


def stop(folder: Path, mode: str = "fast") -> None:
    """Stop the server started in ``folder`` (nothing if it is not running); ``mode`` is
    pg_ctl's: ``fast`` (roll back and disconnect), ``immediate`` (quit at once, as a crash)."""
    bindir = server_bin()
    data = folder / "data"
    if bindir is None or not (data / "postmaster.pid").exists():
        return
    subprocess.run([*_as_server_user(), str(bindir / "pg_ctl"), "-D", str(data), "-m", mode,
                    "-w", "stop"], capture_output=True, timeout=60, check=False)


def server_pids(folder: Path) -> list[int]:
    """The server's processes: its postmaster (first) and the postmaster's children (backends,
    checkpointer, WAL writer, ...)."""
    postmaster = int((folder / "data" / "postmaster.pid").read_text().split()[0])
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # ended meanwhile
        if int(fields[1]) == postmaster:
            children.append(int(stat.parent.name))
    return [postmaster, *children]


def watch(pid: int, folder: Path) -> None:
    """Stop the server in ``folder`` and remove the folder once process ``pid`` has ended (a
    test session killed before its teardown then leaves no server behind)."""
    import time

    while Path(f"/proc/{pid}").exists():
        time.sleep(1.0)
    stop(folder)
    shutil.rmtree(folder, ignore_errors=True)


def start_watched(folder: Path) -> str:
    """:func:`start`, with a detached :func:`watch` of this process."""
    url = start(folder)
    subprocess.Popen([sys.executable, __file__, "watch", str(folder), str(os.getpid())],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)
    return url


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or argv[0] not in ("start", "stop", "watch"):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    folder = Path(argv[1])
    if argv[0] == "start":
        print(start(folder))
    elif argv[0] == "watch":
        watch(int(argv[2]), folder)
    else:
        stop(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
