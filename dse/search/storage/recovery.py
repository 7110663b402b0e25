"""Recovery: the trials of workers that died are failed and their designs retried.

A worker that dies leaves its RUNNING trial; another fails it and re-enqueues its parameters
(:func:`recover`), at the start of a run, every :data:`dse.search.runner.RECOVER_EVERY_S` while it
works and every second while it waits for the study's last trials. On a database server that is
Optuna's heartbeat (``fail_stale_trials`` with :class:`RetryStaleTrial`); elsewhere (journal,
SQLite, the gRPC proxy; Optuna's heartbeat works only for RDB storages inside ``study.optimize``)
dse records which process runs each trial (``dse:worker`` = host:pid), every worker holds a shared
lock on ``FILE.workers.lock`` (:class:`WorkerLock`), and a trial is abandoned when its process on
this host is gone, when it is older than :data:`STALE_SECONDS` (another host), or when the
recovering process is alone (:func:`recover_stale_trials`). A completed trial is never lost or
evaluated twice by a crash.
"""

from __future__ import annotations

import fcntl
import os
import socket
import warnings
from datetime import datetime
from pathlib import Path

import optuna
from optuna.exceptions import ExperimentalWarning, UpdateFinishedTrialError
from optuna.storages import RetryHeartbeatStaleTrialCallback
from optuna.trial import FrozenTrial, TrialState

from dse.safe_write import open_in_place
from dse.search import _optuna
from dse.search.study.attribute_keys import RETRY_KEY, WORKER_KEY

STALE_SECONDS = 300.0
"""A RUNNING trial of another host older than this is taken as abandoned (dse trials take
milliseconds; a live worker never holds one this long)."""
UNCLAIMED_SECONDS = 10.0
MAX_RETRIES = 3
"""A trial whose worker died is retried at most this often on a database server (a design that
kills its worker every time is then given up)."""
BASELINE_KEY = "baseline"
"""Trial user attribute: the system preset an enqueued baseline design reproduces."""


def _pid_alive(pid: int) -> bool:
    """True while process ``pid`` of this host runs (a zombie, dead but not yet reaped by its
    parent, as a ``--jobs`` worker is until ``dse run`` finishes, counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (not Linux): alive as far as we can tell
    return not stat.rpartition(")")[2].strip().startswith(("Z", "X"))


def heartbeat_enabled(study: optuna.Study) -> bool:
    """True when the study's storage has Optuna's heartbeat (a database server)."""
    return _optuna.heartbeat_enabled(_optuna.study_storage(study))


def recover(study: optuna.Study, alone: bool = False) -> list[int]:
    """Fail and retry the trials of dead workers, by the rule of the study's storage.

    With Optuna's heartbeat (a database server): Optuna's ``fail_stale_trials``, whose callback
    (:class:`RetryStaleTrial`) retries each trial; dse's own rule then only covers a trial whose
    worker died before it recorded itself (it has no heartbeat either). Otherwise (journal,
    SQLite, the gRPC proxy): :func:`recover_stale_trials`. Returns the numbers dse recovered.
    """
    if heartbeat_enabled(study):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExperimentalWarning)
            optuna.storages.fail_stale_trials(study)
        return recover_stale_trials(study, heartbeat=True)
    return recover_stale_trials(study, alone=alone)


class RetryStaleTrial(RetryHeartbeatStaleTrialCallback):
    """Optuna's retry of a trial its heartbeat found stale, with dse's bookkeeping.

    The retry is Optuna's (its ``failed_trial`` and ``retry_history`` system attributes, at most
    ``max_retry`` retries of one design), and carries what :func:`retry` gives one: the failed
    trial's number as ``dse:retry_of``, its baseline name, and no other attribute of the dead
    worker's.
    """

    def __init__(self, max_retry: int | None = MAX_RETRIES) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExperimentalWarning)
            super().__init__(max_retry=max_retry)

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        attrs = {k: v for k, v in trial.user_attrs.items() if k == BASELINE_KEY}
        attrs[RETRY_KEY] = trial.number
        trial.user_attrs = attrs
        trial.system_attrs = {k: v for k, v in trial.system_attrs.items()
                              if k in ("fixed_params", "failed_trial", "retry_history")}
        super().__call__(study, trial)


def recover_stale_trials(study: optuna.Study, stale_seconds: float = STALE_SECONDS,
                         alone: bool = False, heartbeat: bool = False,
                         mine: bool = False) -> list[int]:
    """Fail RUNNING trials left by dead workers and re-enqueue their parameters.

    A trial is abandoned when no worker can still be running it: ``alone`` (the caller holds the
    study's :class:`WorkerLock` exclusively, so no other worker is alive); its worker ran on this
    host and that process is gone; or it has run longer than ``stale_seconds`` (a worker on
    another host, or one that died before it recorded itself). With ``heartbeat`` (Optuna's
    heartbeat covers every trial a worker has claimed) only the last rule's second case applies.
    ``mine``: this process runs no trial now (it has just reconnected to its storage), so its own
    RUNNING trials are abandoned too.
    Returns the numbers of the failed trials. Safe against other processes recovering at the
    same time: each trial is failed and re-enqueued once.
    """
    host = socket.gethostname()
    now = datetime.now()
    recovered: list[int] = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker = str(t.system_attrs.get(WORKER_KEY, ""))
        w_host, _, w_pid = worker.rpartition(":")
        dead = w_host == host and w_pid.isdigit() and (
            not _pid_alive(int(w_pid)) or (mine and int(w_pid) == os.getpid()))
        age = (now - (t.datetime_start or now)).total_seconds()
        # A worker records itself a millisecond after creating a trial: one that has not after
        # UNCLAIMED_SECONDS died in between.
        old = age > (stale_seconds if worker else min(stale_seconds, UNCLAIMED_SECONDS))
        abandoned = ((old and not worker) or (dead and mine)) if heartbeat else (alone or dead or old)
        if not abandoned:
            continue
        try:
            _optuna.fail_trial(study, t)
        except UpdateFinishedTrialError:
            continue  # another process recovered (or finished) it first
        retry(study, t)
        recovered.append(t.number)
    return recovered


def taken_by_another(exc: BaseException) -> bool:
    """True when ``exc`` (or an error in its cause or context) says this worker's trial was
    finished by another process (failed as abandoned while this one stalled): the storage's
    :class:`~optuna.exceptions.UpdateFinishedTrialError`, or Optuna's "Cannot tell a FAIL trial."
    (``Study.tell`` finding it finished; Optuna's trial loop may raise another error while
    handling that one)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, UpdateFinishedTrialError) or (
                isinstance(current, ValueError) and str(current).startswith("Cannot tell a ")
                and str(current).endswith(" trial.")):
            return True
        current = current.__cause__ or current.__context__
    return False


def retry(study: optuna.Study, trial: FrozenTrial) -> None:
    """Enqueue the parameters of a trial that did not finish (``dse:retry_of`` = its number)."""
    attrs = {k: v for k, v in trial.user_attrs.items() if k == BASELINE_KEY}
    attrs[RETRY_KEY] = trial.number
    # An enqueued trial (a baseline, a retry) may die before it suggested its fixed parameters.
    params = {**trial.system_attrs.get("fixed_params", {}), **trial.params}
    study.enqueue_trial(params, user_attrs=attrs, skip_if_exists=False)


class WorkerLock:
    """Marks the live workers of a study kept in a local file (journal or SQLite).

    Each worker holds a shared ``flock`` on ``FILE.workers.lock`` while it works; the kernel drops
    it when the process ends, however it ends. A process that gets the lock exclusively knows no
    other worker is alive, so every RUNNING trial is abandoned, including one killed in the
    millisecond between its creation and its worker recording itself. It recovers them while
    still exclusive (no worker can start a trial meanwhile), then shares the lock and works.
    Without a file (a database server) it does nothing and recovery relies on pids and ages.
    """

    def __init__(self, storage_path: Path | None) -> None:
        self.path = None if storage_path is None else storage_path.with_name(
            storage_path.name + ".workers.lock")
        self._fd: int | None = None

    def __enter__(self) -> WorkerLock:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()

    def _open(self) -> int | None:
        if self.path is not None and self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = open_in_place(self.path, os.O_RDWR | os.O_CREAT)  # never through a link
        return self._fd

    def exclusive(self) -> bool:
        """Try to hold the lock alone, without waiting: True when no other worker is alive."""
        fd = self._open()
        if fd is None:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def share(self) -> None:
        """Hold the lock shared for the rest of the work (waits while another process recovers)."""
        fd = self._open()
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_SH)

    def alone(self) -> bool:
        """Whether no other process holds the lock: it is then held exclusively (until
        :meth:`share` or :meth:`release`); else shared again (converting a shared ``flock`` may
        drop it before it fails)."""
        if self.exclusive():
            return True
        self.share()
        return False

    def release(self) -> None:
        """Let go of the lock."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
