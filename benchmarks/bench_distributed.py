"""Completed trials per second with 1, 2 and 4 worker processes on PostgreSQL, the journal file
and the gRPC proxy, and each storage's cost per trial.

    python benchmarks/bench_distributed.py                  # 200 trials per study
    python benchmarks/bench_distributed.py --trials 400 --workers 1,2,4,8 --json
    python benchmarks/bench_distributed.py --storages journal,postgres --overhead-trials 100

PostgreSQL: ``DSE_TEST_POSTGRES_URL``, else a throwaway server on loopback started from Debian's
binaries (``tests/postgres_server.py``) and stopped after. gRPC: a ``dse storage-proxy`` in front
of that server, started and stopped here.

Throughput: each study (``mlperf-dlrm-v1`` on ``scale-out``, throughput against capex, the random
sampler so that the storage, not the sampler, is measured) is created first with ``dse run
--trials 0``; then W ``dse worker`` processes start together. Trials per second = completed trials
/ (last completion - first trial start), from the trials' own timestamps, so process start-up
(~1.5 s of imports) is left out; the wall time with start-up is printed beside it.

Per-trial storage overhead: one worker in this process runs a study on the storage and the same
study (same seed, same designs) on Optuna's in-memory storage; overhead = the difference of their
times per trial. The model itself costs about 1.5 ms of either.

Server CPU per trial (when this script started the PostgreSQL server, and for the proxy it starts):
the CPU seconds the database (postmaster and its reaped backends) and the proxy process spent
during the throughput runs, per completed trial: how many trials per second one core of each can
serve, so how many workers one database or one proxy can keep busy.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import postgres_server  # noqa: E402

from dse.search.runner import _optimize, _Quota, open_study  # noqa: E402
from dse.search.storage.opening import open_storage  # noqa: E402
from dse.search.study.study_file import StudySpec, load_study_spec  # noqa: E402

STUDY = {"workload": "mlperf-dlrm-v1", "space": "scale-out", "objectives": "throughput-vs-capex"}


SERVER_PIDS: dict[str, int] = {}
"""pids of the servers this script started: "postgres" (the postmaster), "grpc" (the proxy)."""


def cpu_seconds(pid: int) -> float:
    """CPU time of a process, its reaped children and its live children (PostgreSQL's backends,
    which live as long as their connections)."""
    def ticks(p: int | str, fields: slice) -> int:
        try:
            stat = Path(f"/proc/{p}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            return 0
        return sum(int(f) for f in stat[fields])

    total = ticks(pid, slice(11, 15))  # utime, stime, cutime, cstime
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            total += ticks(child, slice(11, 13))
    return total / os.sysconf("SC_CLK_TCK")


@contextmanager
def postgres() -> Iterator[str]:
    url = os.environ.get("DSE_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    folder = Path(tempfile.mkdtemp(prefix="dse-bench-pg-"))
    try:
        url = postgres_server.start_watched(folder)
        SERVER_PIDS["postgres"] = int((folder / "data" / "postmaster.pid").read_text().split()[0])
        yield url
    finally:
        postgres_server.stop(folder)
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def proxy(database: str) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "dse", "storage-proxy", "--storage", database,
                             "--port", str(port)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    proc.stdout.readline()
    SERVER_PIDS["grpc"] = proc.pid
    try:
        yield f"grpc://127.0.0.1:{port}"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def write_study(folder: Path, trials: int, sampler: str) -> Path:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    path = folder / f"{name}.toml"
    fields = {"name": name, **STUDY, "sampler": sampler, "budget": trials, "seed": 1}
    path.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in fields.items()), encoding="utf-8")
    return path


def storage_url(kind: str, urls: dict[str, str], folder: Path, path: Path) -> str:
    return str(folder / f"{path.stem}.journal") if kind == "journal" else urls[kind]


def throughput(kind: str, urls: dict[str, str], folder: Path, workers: int, trials: int,
               sampler: str) -> dict[str, Any]:
    """W worker processes on one fresh study of ``trials`` trials."""
    path = write_study(folder, trials, sampler)
    url = storage_url(kind, urls, folder, path)
    dse = [sys.executable, "-m", "dse"]
    subprocess.run([*dse, "run", str(path), "--storage", url, "--trials", "0"], check=True,
                   capture_output=True, cwd=ROOT)
    servers = {k: cpu_seconds(pid) for k, pid in SERVER_PIDS.items()}
    start = time.perf_counter()
    procs = [subprocess.Popen([*dse, "worker", str(path), "--storage", url],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
             for _ in range(workers)]
    errors = [p.communicate()[1].decode() for p in procs]
    wall = time.perf_counter() - start
    server_cpu = {f"{k}_cpu_ms_per_trial": (cpu_seconds(SERVER_PIDS[k]) - v) / trials * 1e3
                  for k, v in servers.items() if k == kind or (kind == "grpc" and k == "postgres")}
    if any(p.returncode for p in procs):
        raise RuntimeError(f"a worker failed: {errors}")
    spec = load_study_spec(str(path))
    read_url = urls["postgres"] if kind == "grpc" else url
    study = optuna.load_study(study_name=spec.name, storage=open_storage(read_url, spec))
    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    assert len(done) == trials, (kind, workers, len(done))
    first = min(t.datetime_start for t in done if t.datetime_start)
    last = max(t.datetime_complete for t in done if t.datetime_complete)
    span = (last - first).total_seconds()
    return {"storage": kind, "workers": workers, "trials": trials, "trials_per_s": trials / span,
            "span_s": span, "wall_s": wall, **server_cpu}


def per_trial(kind: str, urls: dict[str, str], folder: Path, trials: int,
              sampler: str) -> dict[str, Any]:
    """ms per trial of one in-process worker on the storage, and on the in-memory storage."""
    path = write_study(folder, trials, sampler)
    url = storage_url(kind, urls, folder, path)
    spec = load_study_spec(str(path))

    def timed(storage: optuna.storages.BaseStorage, spec: StudySpec) -> float:
        study = open_study(spec, storage)
        start = time.perf_counter()
        _optimize(study, spec, trials, None, _Quota(None))
        return (time.perf_counter() - start) / trials

    on_storage = timed(open_storage(url, spec), spec)
    in_memory = timed(optuna.storages.InMemoryStorage(), spec)
    return {"storage": kind, "trials": trials, "ms_per_trial": on_storage * 1e3,
            "in_memory_ms_per_trial": in_memory * 1e3,
            "overhead_ms_per_trial": (on_storage - in_memory) * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200, help="trials per throughput study")
    parser.add_argument("--workers", default="1,2,4", help="worker counts, comma-separated")
    parser.add_argument("--storages", default="postgres,journal,grpc")
    parser.add_argument("--overhead-trials", type=int, default=100)
    parser.add_argument("--sampler", default="random")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    kinds = args.storages.split(",")
    counts = [int(n) for n in args.workers.split(",")]
    rows: list[dict[str, Any]] = []
    overheads: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, postgres() as database:
        folder = Path(tmp)
        urls = {"postgres": database}
        with proxy(database) if "grpc" in kinds else _nothing() as grpc_url:
            if grpc_url:
                urls["grpc"] = grpc_url
            for kind in kinds:
                overheads.append(per_trial(kind, urls, folder, args.overhead_trials, args.sampler))
                for w in counts:
                    rows.append(throughput(kind, urls, folder, w, args.trials, args.sampler))
                    if not args.json:
                        r = rows[-1]
                        cpu = "".join(f"; {k.split('_')[0]} server {v:.1f} ms CPU/trial"
                                      for k, v in r.items() if k.endswith("_cpu_ms_per_trial"))
                        print(f"{kind:9s} {w} worker(s): {r['trials_per_s']:6.1f} trials/s "
                              f"({r['trials']} trials in {r['span_s']:.1f} s; "
                              f"{r['wall_s']:.1f} s with start-up{cpu})", flush=True)
    if args.json:
        print(json.dumps({"throughput": rows, "per_trial": overheads, "cpus": os.cpu_count()},
                         indent=2))
        return
    print(f"\nper trial, one worker ({args.overhead_trials} trials; in-memory storage "
          f"{overheads[0]['in_memory_ms_per_trial']:.1f} ms):")
    for o in overheads:
        print(f"  {o['storage']:9s} {o['ms_per_trial']:6.1f} ms, storage overhead "
              f"{o['overhead_ms_per_trial']:6.1f} ms")


@contextmanager
def _nothing() -> Iterator[str]:
    yield ""


if __name__ == "__main__":
    main()
