"""Workers under faults of their storage's server, and the storage proxy's port and exposure
(issue 30, item 4), with a real PostgreSQL server, real ``dse storage-proxy`` and ``dse worker``
processes and signals:

- a server restarted under running workers (PostgreSQL, the proxy) is reached again and the
  study ends at exactly its budget; one that stays down ends a worker after the reconnection
  window (``?dse_reconnect=``) with one line;
- every call through the proxy has a deadline: a SIGSTOPped proxy ends its workers with one line;
- a worker stopped while another process fails its trial as abandoned goes on with a new trial
  and says so in one line (no traceback);
- a second proxy cannot take a port a proxy holds; the proxy says it has no authentication.

Each test leaves the server running. Skipped without PostgreSQL's server binaries, psycopg or
grpcio, except under CI (``CI=true``), where they fail.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
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
from test_distributed import Worker, require, running_of, wait_for
from test_postgres_faults import LATE_S, server, states

from dse.search import _optuna
from dse.search.algorithms.dedup import DUPLICATE_KEY
from dse.search.storage import databases, failures
from dse.search.storage.opening import open_storage
from dse.search.storage.recovery import RETRY_KEY, WORKER_KEY, recover, retry
from dse.search.study.study_file import load_study_spec

__all__ = ["server"]  # the module's own PostgreSQL server (a fixture), shared by its tests

BUDGET = 20
"""Trials left to do when the fault comes, whatever the load: the workers are stopped (SIGSTOP)
from the moment the test sees 3 trials complete until the fault has come (:func:`paused`)."""
ENV = {**os.environ, "COLUMNS": "250"}
GRACE_S = 3
"""The heartbeat's grace period of this process's storage (dse's is 10 s): longer than a heartbeat
interval (2 s), so a worker's trial is taken for abandoned only once it stopped beating."""
OWN_LINES = ("dse: lost the storage ", "dse: reconnected to ")
"""What a worker that reconnected says (one line each)."""


@pytest.fixture(autouse=True)
def _needs_grpc() -> None:
    require("grpc")


def make_study(tmp_path: Path) -> Path:
    name = f"faults-{uuid.uuid4().hex[:8]}"
    return write_study(tmp_path / f"{name}.toml", name=name, **CHEAP, sampler="random",
                       budget=BUDGET, seed=3)


def dse(*args: str, env: dict[str, str] | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dse", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=env or ENV)


def password_of(url: str) -> str:
    return url.split("@")[0].rsplit(":", 1)[1]


class Proxy:
    """A ``dse storage-proxy`` process on ``port``, once it says it listens."""

    def __init__(self, url: str, port: int, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dse", "storage-proxy", "--storage", url, "--port", str(port),
             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=ENV)
        assert self.proc.stdout is not None
        self.line = self.proc.stdout.readline()
        assert f":{port}" in self.line, self.line + self.proc.communicate(timeout=30)[1]
        self.url = f"grpc://127.0.0.1:{port}"

    def stop(self) -> tuple[str, str]:
        """SIGTERM (and SIGCONT, should it be stopped); its remaining stdout and stderr."""
        self.proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGCONT)
        out, err = self.proc.communicate(timeout=30)
        return out, err


@pytest.fixture
def proxies() -> Iterator[list[Proxy]]:
    """The proxies a test starts (append them); stopped after it."""
    started: list[Proxy] = []
    yield started
    for proxy in started:
        if proxy.proc.poll() is None:
            proxy.stop()


def created(path: Path, url: str) -> optuna.Study:
    """Create the study (``dse run --trials 0``) and load it straight from ``url``."""
    result = dse("run", str(path), "--storage", url, "--trials", "0")
    assert result.returncode == 0, result.stderr
    spec = load_study_spec(str(path))
    return optuna.load_study(study_name=spec.name, storage=open_storage(url, spec))


def wait_complete(url: str, name: str, complete: int, workers: list[Worker]) -> None:
    """Until ``complete`` trials are complete and every worker has taken a trial. A fault that
    comes while a worker still opens its storage is the start-up failure (a server down at the
    start fails at once), not the mid-run loss these tests are about: under CI load one worker
    had not taken a trial when the other had completed three."""
    deadline = time.monotonic() + 120
    while (states(url, name).get("COMPLETE", 0) < complete
           or len(workers_with_trials(url, name)) < len(workers)):
        assert time.monotonic() < deadline, "the study did not start"
        assert all(w.proc.poll() is None for w in workers), [w.wait(1) for w in workers]
        time.sleep(0.1)


def workers_with_trials(url: str, name: str) -> set[str]:
    """The workers (``dse:worker``) that have taken a trial of study ``name``, read with SQL."""
    import psycopg

    with psycopg.connect(url, connect_timeout=10) as conn:
        rows = conn.execute(
            "SELECT a.value_json FROM trial_system_attributes a JOIN trials t "
            "ON t.trial_id = a.trial_id JOIN studies s ON s.study_id = t.study_id "
            "WHERE s.study_name = %s AND a.key = %s", (name, WORKER_KEY)).fetchall()
    return {str(json.loads(value)) for (value,) in rows}


@contextlib.contextmanager
def paused(workers: list[Worker]) -> Iterator[None]:
    """The workers SIGSTOPped meanwhile (and SIGCONTed after, whatever happens): the fault then
    comes while they still have trials to run, however the load delays this process (they
    finished a 100-trial study before a fault under load), and each meets it on waking."""
    for w in workers:
        os.kill(w.proc.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for w in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(w.proc.pid, signal.SIGCONT)


def until_one_lost(workers: list[Worker], timeout_s: float = 40) -> None:
    """Wait until a worker says it lost its storage. A fixed outage raced the workers' next call:
    a worker that first reaches the storage after it is back reconnects in its connection pool's
    check, unseen, and once under CI load neither worker said a line across a 2 s outage."""
    deadline = time.monotonic() + timeout_s
    while not any(OWN_LINES[0] in w.err.read_text() for w in workers):
        assert time.monotonic() < deadline, [w.err.read_text() for w in workers]
        assert all(w.proc.poll() is None for w in workers), [w.wait(1) for w in workers]
        time.sleep(0.1)


def assert_exact(url: str, name: str) -> None:
    counts = states(url, name)
    assert counts.get("COMPLETE") == BUDGET, counts
    assert "RUNNING" not in counts and "WAITING" not in counts, counts


def assert_reconnected(workers: list[Worker], url: str) -> None:
    """Every worker ended at the budget (exit 0) saying nothing but that it lost and reached its
    storage again, and at least one did."""
    said = []
    for w in workers:
        code, out, err = w.wait()
        assert code == 0, err
        lines = err.strip().splitlines()
        assert all(line.startswith(OWN_LINES) for line in lines), err
        said += lines
        assert password_of(url) not in out + err
    assert any(line.startswith(OWN_LINES[1]) for line in said), said


# --- a server restarted, or gone for good ----------------------------------------------------------


def test_a_summary_read_after_a_restart_reconnects(tmp_path: Path, server: tuple[Path, str],
                                                   caplog: pytest.LogCaptureFixture) -> None:
    """A worker that finished its trials and was paused before its summary read, while the server
    restarted, reads the summary on a new connection (one line each way), not one line of error."""
    from dse.search.runner import read_after_run
    from dse.search.storage.failures import StorageUnreachable

    _, url = server
    path = make_study(tmp_path)
    study = created(path, url)
    spec = load_study_spec(str(path))
    calls: list[optuna.Study] = []

    def summary(done: optuna.Study) -> int:
        calls.append(done)
        if len(calls) == 1:  # the connection the restart ended
            raise StorageUnreachable("--storage", url, "PostgreSQL closed the connection")
        return len(done.get_trials(deepcopy=False))

    assert read_after_run(study, spec, url, "w", summary) == len(study.get_trials(deepcopy=False))
    assert len(calls) == 2 and calls[1] is not study  # the second read on the study opened again
    said = [r.getMessage() for r in caplog.records if r.name == "dse"]
    assert any(m.startswith("dse: lost the storage") for m in said), said
    assert any(m.startswith("dse: reconnected to") for m in said), said


def test_a_worker_whose_first_connection_meets_a_restart_waits_for_it(
        tmp_path: Path, server: tuple[Path, str], caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker started while its server restarts (it answered, then ended the connection:
    ``ServerRestarting``) joins the study once the server is back, as a running worker would;
    one refused at the start, and a ``dse run`` that may create the study, fail at once."""
    from dse.search import runner
    from dse.search.storage.failures import ServerRestarting, StorageUnreachable

    _, url = server
    path = make_study(tmp_path)
    created(path, url)
    spec = load_study_spec(str(path))
    real = runner.open_storage
    first: list[BaseException] = []

    def restarting(storage_url: str | None, spec_: object) -> object:
        if first:
            raise first.pop()
        return real(storage_url, spec_)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "open_storage", restarting)
    closed = "PostgreSQL closed the connection (the database system is shutting down)"
    for error, create in ((StorageUnreachable("--storage", url, "PostgreSQL refused the "
                                              "connection (is the server running?)"), False),
                          (ServerRestarting("--storage", url, closed), True)):
        first.append(error)
        with pytest.raises(type(error)):
            runner.run_study(spec, url, create=create, worker="w")
    first.append(ServerRestarting("--storage", url, closed))
    study = runner.run_study(spec, url, create=False, worker="w")
    assert not first and completed_of(study) == BUDGET
    said = [r.getMessage() for r in caplog.records if r.name == "dse"]
    assert any(m.startswith("dse: lost the storage") for m in said), said
    assert any(m.startswith("dse: reconnected to") for m in said), said
    assert_exact(url, path.stem)


def completed_of(study: optuna.Study) -> int:
    return sum(t.state == TrialState.COMPLETE for t in study.get_trials(deepcopy=False))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["postgres", "grpc"])
def test_workers_reconnect_across_a_postgres_restart(tmp_path: Path, server: tuple[Path, str],
                                                     proxies: list[Proxy], kind: str) -> None:
    """Directly, and behind a storage proxy (which answers its workers UNAVAILABLE meanwhile)."""
    folder, url = server
    path = make_study(tmp_path)
    created(path, url)
    target = url
    if kind == "grpc":
        proxies.append(Proxy(url, postgres_server.free_port()))
        target = proxies[0].url
    workers = [Worker(tmp_path, i, "worker", str(path), "--storage", target) for i in range(2)]
    wait_complete(url, path.stem, 3, workers)
    with paused(workers):
        postgres_server.stop(folder, mode="fast")  # it ends every session and its port closes
    until_one_lost(workers)  # within the reconnection window (60 s)
    postgres_server.restart(folder)
    assert_reconnected(workers, url)
    assert_exact(url, path.stem)
    if kind == "grpc":
        _, err = proxies[0].stop()
        assert not err.strip(), err  # no traceback of the lost database on the proxy's side


@pytest.mark.slow
def test_a_server_that_stays_down_ends_the_worker_after_the_window(
        tmp_path: Path, server: tuple[Path, str]) -> None:
    folder, url = server
    path = make_study(tmp_path)
    created(path, url)
    window_s = 4
    short = f"{url}?dse_reconnect={window_s}"
    worker = Worker(tmp_path, 0, "worker", str(path), "--storage", short)
    wait_complete(url, path.stem, 3, [worker])
    with paused([worker]):
        postgres_server.stop(folder, mode="immediate")
    stopped = time.monotonic()
    try:
        code, out, err = worker.wait(timeout=60)
        took = time.monotonic() - stopped
    finally:
        postgres_server.restart(folder)
    assert code == 2, err
    notice, error = err.strip().splitlines()  # exactly two lines
    assert notice.startswith("dse: lost the storage postgresql://dse:***@") and "4 s" in notice
    assert error.startswith("dse: error: ") and "tried to reconnect for 4 s" in error, error
    # A server going down refuses new connections once its port is closed; one still shutting
    # down, or anything else that took its port meanwhile, accepts and closes them.
    assert "PostgreSQL refused the connection" in error or "PostgreSQL closed the connection" in error, error
    assert window_s <= took < window_s + LATE_S, took  # the window, its last attempt, the exit
    assert password_of(url) not in out + err
    resumed = dse("run", str(path), "--storage", url, "--quiet", "--no-report")
    assert resumed.returncode == 0, resumed.stderr
    assert_exact(url, path.stem)


@pytest.mark.slow
def test_workers_reconnect_across_a_proxy_restart(tmp_path: Path, server: tuple[Path, str],
                                                  proxies: list[Proxy]) -> None:
    _, url = server
    port = postgres_server.free_port()
    proxies.append(Proxy(url, port))
    path = make_study(tmp_path)
    created(path, url)
    workers = [Worker(tmp_path, i, "worker", str(path), "--storage", proxies[0].url)
               for i in range(2)]
    wait_complete(url, path.stem, 3, workers)
    with paused(workers):
        proxies[0].proc.send_signal(signal.SIGTERM)
    proxies[0].proc.communicate(timeout=30)  # the workers meet its shutdown awake
    until_one_lost(workers)
    proxies.append(Proxy(url, port))  # the same port, at once free again
    assert_reconnected(workers, url)
    assert_exact(url, path.stem)


def test_a_call_the_stopping_proxy_cancels_is_a_lost_storage() -> None:
    """A gRPC server shutting down answers a call that reaches it at that moment CANCELLED, not
    UNAVAILABLE (1 to 10 of some 2,000 calls when 16 threads loop on a server stopping with a
    grace period; a worker under load once met it across a proxy restart and ended, "lost the
    storage proxy ...: CANCELLED"): the worker reconnects as for any lost proxy.
    DEADLINE_EXCEEDED (a hung proxy) and the servicer's own answers stay final."""
    import grpc

    class Status(grpc.RpcError):  # type: ignore[misc]
        def __init__(self, code: grpc.StatusCode, details: str) -> None:
            super().__init__(details)
            self._code, self._details = code, details

        def code(self) -> grpc.StatusCode:
            return self._code

        def details(self) -> str:
            return self._details

    where = "grpc://127.0.0.1:1"
    cancelled = Status(grpc.StatusCode.CANCELLED, "CANCELLED")
    assert failures.storage_lost(cancelled)
    assert failures.storage_failure(cancelled, where) == (
        f"lost the storage proxy at {where}: CANCELLED (it stopped during the call); the completed "
        "trials are kept: rerun when it is back to resume")
    assert failures.storage_lost(Status(grpc.StatusCode.UNAVAILABLE, "Socket closed"))
    for final in (Status(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded"),
                  Status(grpc.StatusCode.ALREADY_EXISTS, "study x exists"),
                  Status(grpc.StatusCode.UNKNOWN, "a bug")):
        assert not failures.storage_lost(final), final.code()


# --- a hung proxy ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_stopped_proxy_ends_its_workers_within_the_deadline(
        tmp_path: Path, server: tuple[Path, str], proxies: list[Proxy]) -> None:
    """The issue's two workers behind a SIGSTOPped proxy sat silent for over 300 s: every call
    now has a deadline (3 s here, ``?dse_answer_timeout=``; 20 s by default)."""
    _, url = server
    proxy = Proxy(url, postgres_server.free_port())
    proxies.append(proxy)
    path = make_study(tmp_path)
    created(path, url)
    grpc_url = f"{proxy.url}?dse_answer_timeout=3"
    workers = [Worker(tmp_path, i, "worker", str(path), "--storage", grpc_url) for i in range(2)]
    wait_complete(url, path.stem, 3, workers)
    with paused(workers):
        os.kill(proxy.proc.pid, signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        for w in workers:
            code, _, err = w.wait(timeout=60)
            assert code == 2, err
            lines = err.strip().splitlines()
            assert len(lines) == 1 and "storage proxy at grpc://127.0.0.1:" in lines[0], err
            assert "did not answer within its deadline" in lines[0], err
        assert time.monotonic() - stopped < 3 + LATE_S
    finally:
        os.kill(proxy.proc.pid, signal.SIGCONT)
    resumed = dse("run", str(path), "--storage", proxy.url, "--quiet", "--no-report")
    assert resumed.returncode == 0, resumed.stderr
    assert_exact(url, path.stem)


PAUSE_DEADLINE_S = 5.0
"""The workers' answer deadline in the paused-proxy test (``dse_answer_timeout``)."""
SAID_WITHIN_S = PAUSE_DEADLINE_S + 4
"""Tolerance of a worker's one line after the pause: one deadline, plus the time to its next call
(a trial in flight, the process's own wake-up) under load. Below two deadlines, which is what
failing the trial and reading the summary each cost before (issue 42)."""
ENDED_WITHIN_S = PAUSE_DEADLINE_S + 9
"""Tolerance of the worker's exit: its line, then the process's teardown (3-4 s measured under a
load of 10 with the default 20 s deadline: lines at 20.6-21.4 s, exits at 24.4-25.2 s;
``benchmarks/bench_proxy_pause.py``)."""


@pytest.mark.slow
def test_a_paused_proxy_ends_every_worker_after_one_deadline(
        tmp_path: Path, server: tuple[Path, str], proxies: list[Proxy]) -> None:
    """Five workers behind a SIGSTOPped proxy ended 40-60 s after the pause, past the documented
    30 s (20 s deadline): each closing call (failing the trial, the summary) waited a deadline of
    its own. A proxy that passed its deadline is now not waited for again (its later calls fail at
    once): every worker says its one line within one deadline and the stated tolerance. This
    test takes about 30 s (no ``slow`` marker is registered on this branch to mark it)."""
    _, url = server
    proxy = Proxy(url, postgres_server.free_port())
    proxies.append(proxy)
    path = make_study(tmp_path)
    created(path, url)
    grpc_url = f"{proxy.url}?dse_answer_timeout={PAUSE_DEADLINE_S:g}"
    workers = [Worker(tmp_path, i, "worker", str(path), "--storage", grpc_url) for i in range(5)]
    wait_complete(url, path.stem, 5, workers)
    said: dict[int, float] = {}
    ended: dict[int, float] = {}
    with paused(workers):
        os.kill(proxy.proc.pid, signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        while len(ended) < len(workers) and time.monotonic() - stopped < 60:
            for i, w in enumerate(workers):
                if i not in said and w.err.stat().st_size:
                    said[i] = time.monotonic() - stopped
                if i not in ended and w.proc.poll() is not None:
                    ended[i] = time.monotonic() - stopped
            time.sleep(0.05)
    finally:
        os.kill(proxy.proc.pid, signal.SIGCONT)
    for w in workers:
        code, _, err = w.wait(timeout=30)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "did not answer within its deadline" in err, err
    assert max(said.values()) < SAID_WITHIN_S, said
    assert max(ended.values()) < ENDED_WITHIN_S, ended


# --- a worker that wakes after its trial was failed ------------------------------------------------


def assert_goes_on(worker: Worker, url: str, name: str, failed: FrozenTrial) -> None:
    """The worker ended at the budget (exit 0), with one line saying its trial was failed by
    another (or, should the server have ended its session meanwhile, that it reconnected)."""
    code, _, err = worker.wait()
    assert code == 0, err
    lines = err.strip().splitlines()
    taken = f"dse: trial {failed.number} of this worker was failed as abandoned by another process"
    assert lines and all(line.startswith((taken, *OWN_LINES)) for line in lines), err
    assert "Traceback" not in err
    assert_exact(url, name)


def fail_as_abandoned(study: optuna.Study) -> Callable[[FrozenTrial], None]:
    """What another worker's recovery does to a trial it takes for abandoned: fail it, enqueue
    its retry."""
    def fail(trial: FrozenTrial) -> None:
        _optuna.fail_trial(study, trial)
        retry(study, trial)
    return fail


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["postgres", "grpc"])
def test_a_worker_that_wakes_after_its_trial_was_failed_goes_on(
        tmp_path: Path, server: tuple[Path, str], proxies: list[Proxy], kind: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """On PostgreSQL the worker is stopped past the heartbeat's grace period and Optuna's
    heartbeat logic of another process fails its trial; behind the proxy (where that takes 300 s)
    another process fails it directly, as dse's recovery does. The grace period is the failing
    process's own (its storage's): 3 s in this one instead of 10, so the test waits less."""
    monkeypatch.setattr(databases, "GRACE_S", GRACE_S)
    _, url = server
    path = make_study(tmp_path)
    study = created(path, url)
    target = url
    if kind == "grpc":
        proxies.append(Proxy(url, postgres_server.free_port()))
        target = proxies[0].url
    # The worker stalls as it is about to complete its fourth trial, until told to go on
    # (:mod:`stalling`: caught holding a trial, not raced for one).
    stalled, wake = tmp_path / "stalled", tmp_path / "wake"
    worker = Worker(tmp_path, 0, "worker", str(path), "--storage", target,
                    launcher=stalling.command(stalled, 4, wake))
    wait_for(stalled.exists, "the worker to stall in a trial", [worker.proc])
    [trial] = running_of(study, worker.name)
    assert trial.number == int(stalled.read_text())
    try:
        if kind == "postgres":
            os.kill(worker.proc.pid, signal.SIGSTOP)  # its heartbeat too
            time.sleep(GRACE_S + 1.5)  # the grace period and a heartbeat interval's slack
            assert trial.number in [t.number for t in study.get_trials(
                deepcopy=False, states=(TrialState.RUNNING,))]
            recover(study)  # Optuna's fail_stale_trials and its retry callback
        else:
            fail_as_abandoned(study)(trial)
    finally:
        wake.touch()
        os.kill(worker.proc.pid, signal.SIGCONT)
    assert_goes_on(worker, url, path.stem, trial)
    trials = study.get_trials(deepcopy=False)
    assert trials[trial.number].state == TrialState.FAIL
    retries = [t for t in trials if t.user_attrs.get(RETRY_KEY) == trial.number]
    # The retry redoes the failed trial's design. That trial may have been caught in the moment
    # after its design was found to repeat a completed one (it was being pruned as a repeat): its
    # retry is then pruned as the same repeat, which the study's exact budget above allows for.
    assert len(retries) == 1, retries
    assert retries[0].state == TrialState.COMPLETE or (
        retries[0].state == TrialState.PRUNED and DUPLICATE_KEY in retries[0].user_attrs), [
        (t.number, t.state, t.user_attrs, t.system_attrs) for t in trials[trial.number:]]


# --- the proxy's port and exposure -----------------------------------------------------------------


def test_a_second_proxy_on_a_taken_port_refuses_to_start(
        server: tuple[Path, str], proxies: list[Proxy]) -> None:
    """gRPC shares a port by default (SO_REUSEPORT): the second proxy would start and take half
    the new clients."""
    _, url = server
    port = postgres_server.free_port()
    first = Proxy(url, port)
    proxies.append(first)
    second = dse("storage-proxy", "--storage", url, "--port", str(port), timeout=60)
    assert second.returncode == 2, second.stdout + second.stderr
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and f"cannot listen on 127.0.0.1:{port}" in lines[0], second.stderr
    assert "another dse storage-proxy" in lines[0] and password_of(url) not in second.stderr
    assert first.proc.poll() is None  # still serving
    _, err = first.stop()
    assert first.proc.returncode == 0 and not err.strip(), err


def test_the_proxy_says_it_has_no_authentication(server: tuple[Path, str],
                                                 proxies: list[Proxy]) -> None:
    _, url = server
    local = Proxy(url, postgres_server.free_port())
    proxies.append(local)
    assert "no authentication or encryption" in local.line, local.line
    assert "any process on this machine" in local.line and "every study" in local.line
    _, err = local.stop()
    assert not err.strip(), err
    remote = Proxy(url, postgres_server.free_port(), "--host", "0.0.0.0", "--allow-remote")
    proxies.append(remote)
    assert "no authentication" in remote.line and "any machine that reaches" in remote.line
    out, err = remote.stop()
    warning = err.strip().splitlines()
    assert len(warning) == 1 and warning[0].startswith("dse storage-proxy: warning: --allow-remote"), err
    assert "read, change and delete every study" in warning[0]
    for said in (local.line, remote.line, out, err):
        assert password_of(url) not in said
