"""Studies shared by many worker processes, on a real PostgreSQL server, the journal file and
Optuna's gRPC proxy (``dse storage-proxy``) in front of PostgreSQL.

Four ``dse worker`` processes on one 48-trial study end with exactly 48 completed trials, no
duplicate trial numbers and nothing on their stderr; with one of them SIGKILLed half-way through
a trial, that trial is failed and retried once by the others (Optuna's heartbeat on PostgreSQL,
dse's recovery on the journal and through the proxy) and the total still reaches 48. A worker
pointed at a storage that is down (refused, or silent) fails with one line within 30 s.

PostgreSQL: ``DSE_TEST_POSTGRES_URL`` (``.ci/run`` starts a server and sets it), else a throwaway
server started here from Debian's binaries (``tests/postgres_server.py``). Without either the
PostgreSQL tests skip, except under CI (``CI=true``), where they fail.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import optuna
import postgres_server
import pytest
import stalling
from optuna.trial import FrozenTrial, TrialState
from study_helpers import CHEAP, ROOT, write_study

from dse.search.algorithms.dedup import DUPLICATE_KEY
from dse.search.storage.opening import open_storage
from dse.search.storage.recovery import BASELINE_KEY, RETRY_KEY, WORKER_KEY
from dse.search.storage.servers import is_loopback, normalize_url, redact
from dse.search.study.study_file import load_study_spec

BUDGET = 48
"""Below ``dse.search.algorithms.reference.REFERENCE_MIN_BUDGET`` (50): creating the study sweeps no
hypervolume reference (seconds of CPU each, not what these tests are about)."""
JOBS_BUDGET = 200
"""``dse run --jobs 2``: enough trials that the second process, spawned while the first works,
still finds some (with 40 the first finished them all before the second had imported dse)."""
WORKERS = 4
ENV = {**os.environ, "COLUMNS": "250"}


# --- servers --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    url = os.environ.get("DSE_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    require("psycopg")
    require("grpc")
    why = None
    if postgres_server.server_bin() is None:
        why = "no PostgreSQL server binaries (apt-get install postgresql)"
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL is required under CI: {why}")
        pytest.skip(why)
    folder = Path(tempfile.mkdtemp(prefix="dse-pg-"))
    try:
        yield postgres_server.start_watched(folder)
    finally:
        postgres_server.stop(folder)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def proxy_url(postgres_url: str) -> Iterator[str]:
    """A ``dse storage-proxy`` in front of the PostgreSQL server; stopped with SIGTERM after."""
    port = postgres_server.free_port()
    proc = subprocess.Popen([sys.executable, "-m", "dse", "storage-proxy", "--storage", postgres_url,
                             "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT, env=ENV)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the proxy says where it listens once it does
    assert f"127.0.0.1:{port}" in line and "***" in line, line + proc.stderr.read()
    assert postgres_url.split("@")[0].split(":")[-1] not in line  # no password
    try:
        yield f"grpc://127.0.0.1:{port}"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "stopped" in out and not err.strip(), (out, err)


def storage_of(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    if kind == "grpc":
        return str(request.getfixturevalue("proxy_url"))
    assert kind == "journal"
    return str(tmp_path / "study.journal")


# --- helpers --------------------------------------------------------------------------------------


def make_study(tmp_path: Path, kind: str, budget: int = BUDGET) -> Path:
    """A study file with a name of its own (the PostgreSQL database outlives the test)."""
    name = f"{kind}-{uuid.uuid4().hex[:8]}"
    return write_study(tmp_path / f"{name}.toml", name=name, **CHEAP, sampler="random",
                       budget=budget, seed=7)


def dse(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dse", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=ENV)


class Worker:
    """A ``dse`` process (``python -m dse ARGS``, or ``launcher`` then ARGS: :mod:`stalling`)
    with its output in files (no pipe to fill up)."""

    def __init__(self, tmp_path: Path, index: int, *args: str,
                 launcher: list[str] | None = None) -> None:
        self.out = tmp_path / f"worker{index}.out"
        self.err = tmp_path / f"worker{index}.err"
        with self.out.open("w") as out, self.err.open("w") as err:
            self.proc = subprocess.Popen([*(launcher or [sys.executable, "-m", "dse"]), *args],
                                         stdout=out, stderr=err, cwd=ROOT, env=ENV)

    @property
    def name(self) -> str:
        return f"{socket.gethostname()}:{self.proc.pid}"

    def wait(self, timeout: float = 240) -> tuple[int, str, str]:
        code = self.proc.wait(timeout=timeout)
        return code, self.out.read_text(), self.err.read_text()


def start_workers(tmp_path: Path, path: Path, url: str, n: int = WORKERS) -> list[Worker]:
    create_study(path, url)
    return spawn_workers(tmp_path, path, url, n)


def create_study(path: Path, url: str) -> None:
    created = dse("run", str(path), "--storage", url, "--trials", "0")
    assert created.returncode == 0, created.stderr
    assert "ready" in created.stdout and "2 queued" in created.stdout, created.stdout


def spawn_workers(tmp_path: Path, path: Path, url: str, n: int = WORKERS) -> list[Worker]:
    return [Worker(tmp_path, i, "worker", str(path), "--storage", url) for i in range(n)]


@contextlib.contextmanager
def held_journal(journal: Path) -> Iterator[Callable[[], int]]:
    """The journal's write lock (``FILE.write.lock``, an ``flock``:
    dse.search.storage.journal_writing.FlockLock) held meanwhile; yields how many processes wait for
    it (``/proc/locks``)."""
    lock = Path(f"{journal}.write.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    inode = os.fstat(fd).st_ino

    def waiting() -> int:
        return sum(1 for line in Path("/proc/locks").read_text().splitlines()
                   if "->" in line.split() and any(f.endswith(f":{inode}") for f in line.split()))

    try:
        yield waiting
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def load(path: Path, url: str) -> optuna.Study:
    spec = load_study_spec(str(path))
    return optuna.load_study(study_name=spec.name, storage=open_storage(url, spec))


def assert_exact(study: optuna.Study, budget: int = BUDGET) -> list[FrozenTrial]:
    trials = study.get_trials(deepcopy=False)
    numbers = [t.number for t in trials]
    assert len(numbers) == len(set(numbers)), "duplicate trial numbers"
    assert sorted(numbers) == list(range(len(numbers)))
    states = [t.state for t in trials]
    assert states.count(TrialState.COMPLETE) == budget
    assert TrialState.RUNNING not in states
    baselines = sorted(t.user_attrs[BASELINE_KEY] for t in trials
                       if BASELINE_KEY in t.user_attrs and t.state == TrialState.COMPLETE)
    assert baselines == ["dgx-h100", "hgx-h200"]
    return trials


def assert_clean(code: int, out: str, err: str) -> int:
    """A worker that exited 0 with nothing on stderr; returns the trials it says it completed."""
    assert code == 0, err
    assert err.strip() == "", err
    words = out.split("this worker completed ")[1].split()
    return int(words[0])


def kill_mid_trial(pid: int, study: optuna.Study, after: int) -> FrozenTrial:
    """SIGKILL process ``pid`` once ``after`` trials are complete, while it runs a trial (it is
    stopped, looked at, and killed only when a RUNNING trial is claimed by it); that trial."""
    name = f"{socket.gethostname()}:{pid}"
    deadline = time.monotonic() + 120
    while sum(t.state == TrialState.COMPLETE for t in study.get_trials(deepcopy=False)) < after:
        assert time.monotonic() < deadline, "the study did not get half-way"
        time.sleep(0.1)
    def claimed() -> list[FrozenTrial]:
        return [t for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
                if t.system_attrs.get(WORKER_KEY) == name]

    for _ in range(500):
        os.kill(pid, signal.SIGSTOP)
        if claimed():
            # A stopped worker may have sent its trial's completion already (the database or
            # the proxy finishes it without the worker): kill only once that has had time.
            time.sleep(0.1)
            running = claimed()
            if running:
                os.kill(pid, signal.SIGKILL)
                return running[0]
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.005)
    raise AssertionError("never caught the worker running a trial")


def assert_retried_once(trials: list[FrozenTrial], killed: FrozenTrial) -> FrozenTrial:
    by_number = {t.number: t for t in trials}
    assert by_number[killed.number].state == TrialState.FAIL
    retries = [t for t in trials if t.user_attrs.get(RETRY_KEY) == killed.number]
    assert len(retries) == 1, retries
    retry = retries[0]
    if retry.state == TrialState.PRUNED:
        # The killed trial's design was freed when it failed and drawn again by another worker
        # before the retry ran: the retry is pruned as a repeat of that trial, so the design is
        # still evaluated once (a retry pruned for any other reason has no DUPLICATE_KEY: fails).
        twin = by_number[retry.user_attrs[DUPLICATE_KEY]]
        assert twin.state == TrialState.COMPLETE
        assert twin.user_attrs["design"] == retry.user_attrs["design"]
    else:
        assert retry.state == TrialState.COMPLETE
    assert killed.params.items() <= retry.params.items(), (
        killed.number, killed.params, retry.number, retry.params, retry.system_attrs)
    assert retry.system_attrs[WORKER_KEY] != killed.system_attrs[WORKER_KEY]
    if BASELINE_KEY in killed.user_attrs:
        assert retry.user_attrs[BASELINE_KEY] == killed.user_attrs[BASELINE_KEY]
    # Nothing else failed, and nothing was lost: every failure is the killed trial.
    assert [t.number for t in trials if t.state == TrialState.FAIL] == [killed.number]
    return retry


# --- the shared budget ----------------------------------------------------------------------------

KINDS = ["postgres", "grpc", "journal"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_four_workers_share_one_budget(tmp_path: Path, kind: str,
                                       request: pytest.FixtureRequest) -> None:
    url = storage_of(kind, tmp_path, request)
    path = make_study(tmp_path, kind)
    if kind == "journal":
        # Every worker waits at the journal's write lock before the first trial is claimed: a
        # worker that finished importing dse seconds before the others (CI load) once ran all 48
        # cheap trials alone. The database kinds' trials cost more and have not raced so.
        create_study(path, url)
        with held_journal(Path(url)) as waiting:
            workers = spawn_workers(tmp_path, path, url)
            deadline = time.monotonic() + 120
            while waiting() < len(workers):
                assert time.monotonic() < deadline, f"{waiting()} workers at the lock"
                assert all(w.proc.poll() is None for w in workers), [w.wait(1) for w in workers]
                time.sleep(0.1)
    else:
        workers = start_workers(tmp_path, path, url)
    done = [assert_clean(*w.wait()) for w in workers]
    assert sum(done) == BUDGET and all(n > 0 for n in done), done
    trials = assert_exact(load(path, url))
    assert not [t for t in trials if t.state == TrialState.FAIL]
    assert {t.system_attrs[WORKER_KEY] for t in trials if t.state == TrialState.COMPLETE} == {
        w.name for w in workers}
    status = dse("status", str(path), "--storage", url, "--json")
    assert status.returncode == 0 and f'"complete": {BUDGET}' in status.stdout, status.stderr


def wait_for(done: Callable[[], bool], what: str, procs: list[subprocess.Popen[bytes]],
             timeout_s: float = 120) -> None:
    """Until ``done()``, while every process of ``procs`` runs (the timeout guards a hang)."""
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        assert all(p.poll() is None for p in procs), f"a process ended before {what}"
        time.sleep(0.05)


def running_of(study: optuna.Study, worker: str) -> list[FrozenTrial]:
    """The RUNNING trials of ``study`` claimed by ``worker`` (host:pid)."""
    return [t for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
            if t.system_attrs.get(WORKER_KEY) == worker]


VICTIM_COMPLETES = 2
"""Trials the victim completes (alone: the two baselines) before it stalls in its next one."""


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_worker_killed_mid_trial_is_retried(tmp_path: Path, kind: str,
                                              request: pytest.FixtureRequest) -> None:
    """The victim works alone until it stalls as it is about to complete its third trial
    (:mod:`stalling`: no race to catch it running one), the others start, and once they have
    completed a trial it is SIGKILLed: its trial is found abandoned mid-run and retried."""
    url = storage_of(kind, tmp_path, request)
    path = make_study(tmp_path, kind)
    create_study(path, url)
    # Watch the study straight in the database (not through the proxy the workers share).
    study = load(path, str(request.getfixturevalue("postgres_url")) if kind == "grpc" else url)
    stalled = tmp_path / "stalled"
    victim = Worker(tmp_path, 0, "worker", str(path), "--storage", url,
                    launcher=stalling.command(stalled, VICTIM_COMPLETES + 1))
    wait_for(stalled.exists, "the victim to stall in a trial", [victim.proc])
    [killed] = running_of(study, victim.name)
    assert killed.number == int(stalled.read_text())
    survivors = [Worker(tmp_path, i, "worker", str(path), "--storage", url)
                 for i in range(1, WORKERS)]
    wait_for(lambda: any(t.state == TrialState.COMPLETE and t.system_attrs.get(WORKER_KEY)
                         != victim.name for t in study.get_trials(deepcopy=False)),
             "a survivor's trial", [w.proc for w in (victim, *survivors)])
    os.kill(victim.proc.pid, signal.SIGKILL)
    assert victim.proc.wait(timeout=30) == -signal.SIGKILL
    done = [assert_clean(*w.wait()) for w in survivors]
    trials = assert_exact(load(path, url))
    retry = assert_retried_once(trials, killed)
    if kind == "postgres":
        # Found by Optuna's heartbeat and retried by its callback (dse's bookkeeping added).
        assert retry.system_attrs["failed_trial"] == killed.number
    else:
        assert "failed_trial" not in retry.system_attrs  # dse's own recovery (pid gone)
    mine = sum(t.system_attrs[WORKER_KEY] == victim.name for t in trials
               if t.state == TrialState.COMPLETE)
    assert mine == VICTIM_COMPLETES and sum(done) + mine == BUDGET


@pytest.mark.slow
def test_jobs_on_the_journal_survive_a_killed_job(tmp_path: Path) -> None:
    """``dse run --jobs 2`` on the default storage type: a job process SIGKILLed mid-trial
    leaves its trial to the other, and the run still ends at the budget."""
    journal = tmp_path / "jobs.journal"
    path = write_study(tmp_path / "jobs.toml", name="jobs", **CHEAP, sampler="random",
                       budget=JOBS_BUDGET, seed=7, storage=str(journal))
    parent = subprocess.Popen([sys.executable, "-m", "dse", "run", str(path), "--jobs", "2",
                               "--quiet", "--no-report"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT, env=ENV)
    try:
        deadline = time.monotonic() + 60
        # The journal exists (empty) a moment before the study's creation record is in it.
        while not journal.exists() or journal.stat().st_size == 0:
            assert time.monotonic() < deadline and parent.poll() is None
            time.sleep(0.05)
        study = load(path, str(journal))
        # Pick a job once trials run: before that, a child may be one of the creation sweep's
        # short-lived processes (CI once picked one that had exited by the half-way point).
        while not any(t.state == TrialState.COMPLETE for t in study.get_trials(deepcopy=False)):
            assert time.monotonic() < deadline + 60 and parent.poll() is None, "no trial completed"
            time.sleep(0.05)
        child = None
        while child is None:
            assert time.monotonic() < deadline + 60, "no job process"
            child = next(iter(_job_children(parent.pid)), None)
            time.sleep(0.05)
        killed = kill_mid_trial(child, study, JOBS_BUDGET // 2)
        out, err = parent.communicate(timeout=180)
    finally:
        if parent.poll() is None:
            parent.kill()
    assert parent.returncode == 0, err
    assert f"{JOBS_BUDGET} of {JOBS_BUDGET} trials complete" in out
    assert err.strip().startswith("dse: note: 1 worker process(es) were killed"), err
    assert_retried_once(assert_exact(load(path, str(journal)), JOBS_BUDGET), killed)


def _job_children(pid: int) -> list[int]:
    """The ``--jobs`` worker processes of ``pid`` (spawned Pythons, not the resource tracker)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"multiprocessing" in cmdline and b"resource_tracker" not in cmdline:
                found.append(int(child))
    return found


@pytest.mark.parametrize("kind", ["postgres", "journal"])
def test_processes_creating_one_study_at_once_record_it_once(
        tmp_path: Path, kind: str, request: pytest.FixtureRequest) -> None:
    url = storage_of(kind, tmp_path, request)
    path = make_study(tmp_path, kind)
    procs = [subprocess.Popen([sys.executable, "-m", "dse", "run", str(path), "--storage", url,
                               "--trials", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=ROOT, env=ENV) for _ in range(3)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    study = load(path, url)
    assert sorted(t.user_attrs[BASELINE_KEY] for t in study.trials) == ["dgx-h100", "hgx-h200"]
    assert all(t.state == TrialState.WAITING for t in study.trials)
    assert study.user_attrs["dse:budget"] == BUDGET and "dse:changes" not in study.user_attrs


@pytest.mark.slow
def test_run_with_jobs_on_postgres(tmp_path: Path, postgres_url: str) -> None:
    path = make_study(tmp_path, "jobs", budget=JOBS_BUDGET)
    result = dse("run", str(path), "--storage", postgres_url, "--jobs", "2", "--quiet",
                 "--no-report")
    assert result.returncode == 0, result.stderr
    assert f"{JOBS_BUDGET} of {JOBS_BUDGET} trials complete" in result.stdout
    assert "***" in result.stdout
    assert postgres_url.split("@")[0].split(":")[-1] not in result.stdout + result.stderr
    trials = assert_exact(load(path, postgres_url), JOBS_BUDGET)
    assert len({t.system_attrs[WORKER_KEY] for t in trials if t.state == TrialState.COMPLETE}) == 2


def test_worker_trials_cap_and_sigterm(tmp_path: Path) -> None:
    """``--trials N`` caps one worker's own completions; SIGTERM stops a worker after its running
    trial (exit 143, nothing left RUNNING, one line on stderr)."""
    url = str(tmp_path / "cap.journal")
    path = make_study(tmp_path, "cap")
    capped = start_workers(tmp_path, path, url, n=0) or [
        Worker(tmp_path, 0, "worker", str(path), "--storage", url, "--trials", "7")]
    code, out, err = capped[0].wait()
    assert assert_clean(code, out, err) == 7
    worker = Worker(tmp_path, 1, "worker", str(path), "--storage", url)
    study = load(path, url)
    deadline = time.monotonic() + 60
    while sum(t.state == TrialState.COMPLETE for t in study.get_trials(deepcopy=False)) < 20:
        assert time.monotonic() < deadline and worker.proc.poll() is None
        time.sleep(0.05)
    # Stopped meanwhile, so the signal comes while it still has trials to run, whatever the load
    # (a stopped process gets the signal when it is continued).
    os.kill(worker.proc.pid, signal.SIGSTOP)
    try:
        done = sum(t.state == TrialState.COMPLETE for t in study.get_trials(deepcopy=False))
        assert done < BUDGET and worker.proc.poll() is None, done
        worker.proc.send_signal(signal.SIGTERM)
    finally:
        os.kill(worker.proc.pid, signal.SIGCONT)
    code, out, err = worker.wait(timeout=30)
    assert code == 128 + signal.SIGTERM, err
    assert err.strip() == "dse: worker stopped by SIGTERM after its running trial", err
    states = [t.state for t in load(path, url).get_trials(deepcopy=False)]
    assert TrialState.RUNNING not in states and TrialState.FAIL not in states


# --- storages that are down -----------------------------------------------------------------------


class SilentServer:
    """A loopback port that accepts connections and never answers (a hung database)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = int(self.sock.getsockname()[1])
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


def require(module: str) -> None:
    """Skip without ``module`` (the test extra installs it), but fail under CI."""
    try:
        __import__(module)
    except ModuleNotFoundError:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{module} is required under CI (pip install -e '.[test]')")
        pytest.skip(f"{module} is not installed")


DOWN_LIMIT_S = 30.0
"""Issue 16's bound for a worker on a storage that is down: the silent ones wait out their
connection deadline (10 s: ``CONNECT_TIMEOUT_S``, ``GRPC_READY_TIMEOUT_S``), the refused ones
none; the other 20 s are for four interpreters starting at once, and importing dse, on a loaded
machine."""


@pytest.mark.slow
def test_a_worker_on_a_storage_that_is_down_fails_fast(tmp_path: Path) -> None:
    require("psycopg")
    require("grpc")
    path = make_study(tmp_path, "down")
    closed = postgres_server.free_port()
    silent = SilentServer()
    cases = {
        "refused": f"postgresql://dse:secret-pw@127.0.0.1:{closed}/dse",
        "silent": f"postgresql://dse:secret-pw@127.0.0.1:{silent.port}/dse",
        "proxy refused": f"grpc://127.0.0.1:{closed}",
        "proxy silent": f"grpc://127.0.0.1:{silent.port}",
    }
    try:
        start = time.monotonic()
        procs = {case: subprocess.Popen([sys.executable, "-m", "dse", "worker", str(path),
                                         "--storage", url], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, cwd=ROOT, env=ENV)
                 for case, url in cases.items()}
        for case, proc in procs.items():
            out, err = proc.communicate(timeout=60)
            assert time.monotonic() - start < DOWN_LIMIT_S, case
            assert proc.returncode == 2, (case, out, err)
            lines = err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("dse: error: "), (case, err)
            assert "secret-pw" not in err, err
            assert ("proxy" in lines[0]) == case.startswith("proxy"), lines[0]
    finally:
        silent.close()


def test_a_worker_needs_an_existing_study(tmp_path: Path, postgres_url: str) -> None:
    path = make_study(tmp_path, "missing")
    result = dse("worker", str(path), "--storage", postgres_url)
    assert result.returncode == 2
    assert "no such study" in result.stderr and "--trials 0" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert postgres_url.split("@")[0].split(":")[-1] not in result.stderr  # the URL shown redacted


# --- small parts ----------------------------------------------------------------------------------


def test_storage_urls() -> None:
    assert normalize_url("postgresql://u:p@h:5432/db") == "postgresql+psycopg://u:p@h:5432/db"
    assert normalize_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalize_url("postgresql+psycopg2://u@h/db") == "postgresql+psycopg2://u@h/db"
    assert normalize_url("sqlite:///x.db") == "sqlite:///x.db"
    assert redact("postgresql://dse:hunter2@db:5432/dse") == "postgresql://dse:***@db:5432/dse"
    assert redact("grpc://127.0.0.1:13000") == "grpc://127.0.0.1:13000"
    assert is_loopback("127.0.0.1") and is_loopback("127.1.2.3") and is_loopback("::1")
    assert is_loopback("localhost") and not is_loopback("0.0.0.0") and not is_loopback("10.0.0.5")


def test_storage_proxy_listens_beyond_loopback_only_when_told() -> None:
    result = dse("storage-proxy", "--storage", "postgresql://dse:pw@127.0.0.1:1/dse",
                 "--host", "0.0.0.0")
    assert result.returncode == 2
    assert "--allow-remote" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_schema_creation_race_is_opened_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two processes creating the same new table at once: PostgreSQL tells the loser of the race
    # by a unique violation on pg_type; opening again finds the tables. Any other error is not
    # retried.
    import dse.search.storage.databases as databases

    calls: list[str] = []

    def racing(url: str, **_: object) -> str:
        calls.append(url)
        if len(calls) < 3:
            raise RuntimeError('duplicate key value violates unique constraint "pg_type_typname_nsp_index"')
        return "storage"

    monkeypatch.setattr(databases, "RDBStorage", racing)
    monkeypatch.setattr(databases.time, "sleep", lambda _s: None)
    assert databases._open_rdb("postgresql://x", {}, {}) == "storage" and len(calls) == 3

    def broken(url: str, **_: object) -> str:
        calls.append(url)
        raise RuntimeError("password authentication failed")

    calls.clear()
    monkeypatch.setattr(databases, "RDBStorage", broken)
    with pytest.raises(RuntimeError, match="password"):
        databases._open_rdb("postgresql://x", {}, {})
    assert len(calls) == 1
