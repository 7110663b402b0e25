"""How long workers behind a paused ``dse storage-proxy`` take to end (issue 42, item 6).

Starts a proxy in front of a PostgreSQL database, creates a study, starts ``--workers`` ``dse
worker`` processes on it and, once they run trials, SIGSTOPs the proxy; prints, per run, the
seconds from the pause to each worker's exit and the worker's last line. docs/cluster.md states
the bound this measures.

    python tests/postgres_server.py start /tmp/pg-bench        # prints the URL
    python benchmarks/bench_proxy_pause.py URL --runs 3 --workers 5
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import postgres_server  # noqa: E402
from study_helpers import CHEAP, write_study  # noqa: E402

ENV = {**os.environ, "COLUMNS": "250", "PYTHONPATH": str(ROOT)}


def complete(url: str, name: str) -> int:
    import psycopg

    with psycopg.connect(url, connect_timeout=10) as conn:
        row = conn.execute("SELECT count(*) FROM trials t JOIN studies s ON s.study_id = t.study_id "
                           "WHERE s.study_name = %s AND t.state = 'COMPLETE'", (name,)).fetchone()
    return int(row[0]) if row else 0


def one_run(url: str, workers: int, answer_s: float | None, folder: Path) -> list[tuple[float, str]]:
    """(seconds from the pause to the exit, last line) of each worker of one paused proxy."""
    port = postgres_server.free_port()
    proxy = subprocess.Popen([sys.executable, "-m", "dse", "storage-proxy", "--storage", url,
                              "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=ROOT, env=ENV)
    assert proxy.stdout is not None and f":{port}" in proxy.stdout.readline()
    name = f"pause-{uuid.uuid4().hex[:8]}"
    study = write_study(folder / f"{name}.toml", name=name, **CHEAP, sampler="random",
                        budget=100_000, seed=3)
    target = f"grpc://127.0.0.1:{port}" + (f"?dse_answer_timeout={answer_s:g}" if answer_s else "")
    subprocess.run([sys.executable, "-m", "dse", "run", str(study), "--storage", url, "--trials",
                    "0"], check=True, capture_output=True, cwd=ROOT, env=ENV)
    errs = [folder / f"{name}-{i}.err" for i in range(workers)]
    procs = [subprocess.Popen([sys.executable, "-m", "dse", "worker", str(study), "--storage",
                               target], stdout=subprocess.DEVNULL, stderr=err.open("w"),
                              cwd=ROOT, env=ENV) for err in errs]
    try:
        deadline = time.monotonic() + 120
        while complete(url, name) < 3 * workers and time.monotonic() < deadline:
            time.sleep(0.2)
        os.kill(proxy.pid, signal.SIGSTOP)
        paused = time.monotonic()
        said: dict[int, float] = {}
        exited: dict[int, float] = {}
        while len(exited) < len(procs) and time.monotonic() - paused < 300:
            for i, (proc, err) in enumerate(zip(procs, errs, strict=True)):
                if i not in said and err.stat().st_size:
                    said[i] = time.monotonic() - paused
                if i not in exited and proc.poll() is not None:
                    exited[i] = time.monotonic() - paused
            time.sleep(0.05)
        return [(exited[i], f"(said at {said.get(i, -1):.1f} s) " + (
            err.read_text().strip().splitlines() or [""])[-1]) for i, err in enumerate(errs)]
    finally:
        os.kill(proxy.pid, signal.SIGCONT)
        proxy.send_signal(signal.SIGTERM)
        proxy.communicate(timeout=30)
        for proc in procs:
            if proc.poll() is None:
                proc.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="a PostgreSQL URL (tests/postgres_server.py start prints one)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=5)
    parser.add_argument("--answer-timeout", type=float, default=None,
                        help="dse_answer_timeout in the workers' URL (default: dse's)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for run in range(args.runs):
            ended = one_run(args.url, args.workers, args.answer_timeout, Path(folder))
            times = sorted(t for t, _ in ended)
            print(f"run {run + 1}: workers ended {', '.join(f'{t:.1f}' for t in times)} s after "
                  f"the pause (load {os.getloadavg()[0]:.1f}); last line: {ended[0][1][:100]}")
            print("  said at: " + ", ".join(t.split(")")[0].removeprefix("(said at ")
                                           for _, t in ended))


if __name__ == "__main__":
    main()
