"""Worker processes of one study: the extra processes of ``dse run --jobs N`` on this machine, and
the graceful stop of a worker (``dse worker``) on SIGTERM or Ctrl-C.

Workers share nothing but the study's storage: each opens it, works on the study until the
common target of completed trials is reached (:func:`dse.search.runner.target_of`, fixed once by
the caller before they start) and exits. Processes are spawned, not forked: a fork would copy
the parent's open storage connections and Optuna's threads into the child.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
from dataclasses import dataclass
from multiprocessing.process import BaseProcess

import optuna

from dse.errors import DseInputError
from dse.search.runner import STOP, run_study
from dse.search.storage.failures import quiet_lost_storage, storage_failure
from dse.search.storage.servers import redact
from dse.search.study.study_file import load_study_spec, with_catalog

PARENT_POLL_S = 0.5
"""How often a ``--jobs`` worker checks that its parent lives."""
WORKER_ERROR_EXIT = 1
"""Exit code of a worker process that stopped on an error it reported in one line."""


@dataclass(frozen=True, slots=True)
class WorkerExits:
    """How the worker processes ended: exit codes of those that failed, signals that killed others."""

    failed: tuple[int, ...]
    """Positive exit codes (an error in the worker)."""
    killed: tuple[int, ...]
    """Numbers of the signals that killed workers (their running trials are retried by others)."""


def start_workers(study: str, storage: str | None, until: int, count: int,
                  catalog: str = "") -> tuple[BaseProcess, ...]:
    """Start ``count`` worker processes on the study file ``study`` (name or path) in ``storage``
    (``None``: the study's own), each working until ``until`` trials are complete in total;
    ``catalog`` replaces the study's user catalog (``dse run --catalog``). Optuna logs in them
    at this process's level (a spawned process starts at Optuna's default, every trial at INFO)."""
    ctx = multiprocessing.get_context("spawn")
    parent = os.getpid()
    verbosity = optuna.logging.get_verbosity()
    workers = tuple(ctx.Process(target=_work, daemon=True,
                                args=(study, storage, until, i + 1, parent, catalog, verbosity))
                    for i in range(count))
    for w in workers:
        w.start()
    return workers


def join_workers(workers: tuple[BaseProcess, ...]) -> WorkerExits:
    """Wait for every worker to end, and say how they ended."""
    for w in workers:
        w.join()
    codes = [w.exitcode for w in workers]
    return WorkerExits(failed=tuple(c for c in codes if c and c > 0),
                       killed=tuple(-c for c in codes if c and c < 0))


def _work(study: str, storage: str | None, until: int, index: int, parent: int,
          catalog: str, verbosity: int) -> None:
    """Entry point of worker ``index`` (from 1; the parent is worker 0) of process ``parent``,
    Optuna logging at ``verbosity``: an input error or a lost storage is one line on stderr and
    exit code :data:`WORKER_ERROR_EXIT`. It stops after its running trial when the parent dies."""
    optuna.logging.set_verbosity(verbosity)
    stop_gracefully()
    _stop_with_parent(parent)
    try:
        with quiet_lost_storage():
            run_study(with_catalog(load_study_spec(study), catalog), storage, until=until,
                      worker=f"jobs-{index}")
    except DseInputError as exc:
        _exit_with(str(exc))
    except Exception as exc:
        message = storage_failure(exc, redact(storage) if storage else "the study's journal")
        if message is None:
            raise
        _exit_with(message)


def _stop_with_parent(parent: int) -> None:
    """Set :data:`~dse.search.runner.STOP` once process ``parent`` is gone (this process is then
    re-parented), so ``dse run --jobs N`` killed by SIGKILL leaves no worker running alone; its
    trial in progress completes first. Polled every :data:`PARENT_POLL_S` seconds."""
    def watch() -> None:
        while not STOP.wait(PARENT_POLL_S):
            if os.getppid() != parent:
                STOP.set()

    threading.Thread(target=watch, name="dse-parent-watch", daemon=True).start()


def _exit_with(message: str) -> None:
    print(f"dse: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(WORKER_ERROR_EXIT)


def stop_gracefully() -> list[int]:
    """Make SIGTERM (Slurm's time limit or scancel, Kubernetes deleting a pod) and a first Ctrl-C
    stop this worker once its running trial is done (milliseconds), so nothing is left RUNNING; a
    second Ctrl-C stops it at once (its trial is failed and re-enqueued).

    Returns the list each stopping signal's number is appended to as it arrives."""
    stopped_by: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        if signum == signal.SIGINT and STOP.is_set():
            raise KeyboardInterrupt
        stopped_by.append(signum)
        STOP.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    return stopped_by
