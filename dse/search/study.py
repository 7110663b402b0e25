"""Resumable multi-objective Optuna studies over system designs (``studies/*.toml``).

A study file names a workload, a search space, an objective set, a sampler, a trial budget, a seed
and optionally a storage. :func:`run_study` creates or resumes the study and works until the budget
of *completed* trials is reached, so running it twice never doubles the work.

Storage: the default is Optuna's journal file ``studies/NAME.journal``, written under an ``flock``
(:class:`FlockLock`; Optuna's default symlink lock outlives a SIGKILLed writer) and safe for several
processes on one host; SQLite is unsafe for several processes. Measured on this 2-core machine
under load (``benchmarks/bench_study.py``): about 15 ms per trial on the journal for the default
study, most of it Optuna (sampling and one fsynced append per parameter); SQLite about 87 ms per
trial. A trial's ~25 attributes are written in one append (:func:`write_trial_attrs`). Database
servers (PostgreSQL) and Optuna's gRPC proxy are opened by :mod:`dse.search.storage`.

Recovery: a worker that dies leaves its RUNNING trial; another fails it and re-enqueues its
parameters (:func:`recover`), at the start of a run, every :data:`RECOVER_EVERY_S` while it works
and every second while it waits for the study's last trials. On a database server that is Optuna's
heartbeat (``fail_stale_trials`` with :class:`RetryStaleTrial`); elsewhere (journal, SQLite, the
gRPC proxy; Optuna's heartbeat works only for RDB storages inside ``study.optimize``) dse records
which process runs each trial (``dse:worker`` = host:pid), every worker holds a shared lock on
``FILE.workers.lock`` (:class:`WorkerLock`), and a trial is abandoned when its process on this host
is gone, when it is older than :data:`STALE_SECONDS` (another host), or when the recovering
process is alone (:func:`recover_stale_trials`). A completed trial is never lost or evaluated twice
by a crash; a record torn by power loss is cut off (:func:`repair_journal_tail`). Several workers
stop together at the budget (:func:`_over_budget`, and :func:`_optimize` waits for trials running
elsewhere rather than stopping one short).
"""

from __future__ import annotations

import dataclasses
import fcntl
import functools
import hashlib
import json
import logging
import math
import os
import socket
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from optuna.exceptions import DuplicatedStudyError, ExperimentalWarning, UpdateFinishedTrialError
from optuna.storages import (
    BaseStorage,
    JournalStorage,
    RDBStorage,
    RetryHeartbeatStaleTrialCallback,
    _CachedStorage,
)
from optuna.storages._heartbeat import is_heartbeat_enabled
from optuna.storages.journal import JournalFileBackend
from optuna.storages.journal._file import BaseJournalFileLock
from optuna.storages.journal._storage import JournalOperation
from optuna.study._constrained_optimization import _CONSTRAINTS_KEY
from optuna.trial import FrozenTrial, Trial, TrialState

from dse import __version__
from dse.calibration.parameters import Calibration, load_calibration
from dse.errors import DseInputError
from dse.model.catalog import Catalog, load_catalog
from dse.model.evaluate import evaluate
from dse.model.system import System, resolve_system, system_spec_from_mapping
from dse.model.workload import Workload, load_workload, scale_tables
from dse.records import from_mapping, named_file, read_toml
from dse.search.objectives import ObjectiveSet, load_objectives
from dse.search.samplers import SAMPLERS, make_sampler
from dse.search.space import Parameter, SearchSpace, load_space, preset_params
from dse.search.storage import (
    grpc_call,
    grpc_storage,
    rdb_backend,
    rdb_state_counts,
    rdb_storage,
    rdb_write_attrs,
)

STUDIES_DIR = Path(__file__).resolve().parents[2] / "studies"
DEFAULT_STUDY = "zion-2020"
STALE_SECONDS = 300.0
"""A RUNNING trial of another host older than this is taken as abandoned (dse trials take
milliseconds; a live worker never holds one this long)."""
UNCLAIMED_SECONDS = 10.0
RECOVER_EVERY_S = 2.0
"""How often a worker looks for dead workers' trials while it works (and every second while it
waits for the last trials of the study), so a trial a dead worker left is retried by the others
before they stop."""
WAIT_POLL_S = 0.2
MAX_RETRIES = 3
"""A trial whose worker died is retried at most this often on a database server (a design that
kills its worker every time is then given up)."""
OPEN_WAIT_S = 15.0
"""How long a process that finds a study being created by another waits for it to be ready."""
WORKER_KEY = "dse:worker"
RETRY_KEY = "dse:retry_of"
BASELINE_KEY = "baseline"
ORDINAL_SUFFIX = "_index"
"""An ordinal parameter is searched as the integer index of its choice, named ``NAME_index``;
the decoded value is in the trial's ``design`` attribute."""

optuna.logging.set_verbosity(optuna.logging.WARNING)
log = logging.getLogger("dse")
STOP = threading.Event()
"""Set (by a SIGTERM handler, say) to stop this process's workers after their running trials."""


@dataclass(frozen=True, slots=True)
class StudySpec:
    """A study definition."""

    name: str
    workload: str
    space: str
    objectives: str
    budget: int = field(metadata={"min": 1})
    sampler: str = "auto"
    seed: int | None = None
    storage: str = ""
    """Optuna storage URL; empty = the journal file ``studies/NAME.journal``."""
    description: str = ""
    workload_overrides: dict[str, Any] = field(default_factory=dict)
    """Workload fields changed for this study (``global_batch = 135168``)."""
    table_scale: float = field(default=1.0, metadata={"min": 0.0, "min_exclusive": True})
    """Every embedding table's rows multiplied by this (the growth question: 4 = tables 4x larger;
    :func:`dse.model.workload.scale_tables`)."""


def study_names() -> tuple[str, ...]:
    """Studies defined in ``studies/``."""
    return tuple(sorted(p.stem for p in STUDIES_DIR.glob("*.toml")))


def study_path(name_or_path: str) -> Path:
    """The file of a study given by name or path."""
    return named_file(name_or_path, STUDIES_DIR, "study")


def load_study_spec(name_or_path: str) -> StudySpec:
    """Load and validate a study file; its workload, space and objectives must load too, and the
    objectives may only name metrics the model reports."""
    path = study_path(name_or_path)
    source = str(path)
    spec = from_mapping(StudySpec, read_toml(path), source)
    # A file named by a relative path is looked for beside the study file first.
    def beside(v: str) -> str:
        near = path.parent / v
        return str(near) if v.endswith(".toml") and not Path(v).is_absolute() and near.exists() else v

    spec = dataclasses.replace(spec, workload=beside(spec.workload), space=beside(spec.space),
                               objectives=beside(spec.objectives))
    if spec.sampler not in SAMPLERS:
        raise DseInputError(source, "sampler", f"unknown sampler {spec.sampler!r} "
                            f"(known: {', '.join(SAMPLERS)})")
    for key, loader in (("workload", study_workload), ("space", _space_of), ("objectives", _obj_of)):
        try:
            loader(spec)
        except DseInputError as exc:
            raise DseInputError(source, key, str(exc)) from None
    if spec.sampler == "grid" and grid_of(_space_of(spec)) is None:
        raise DseInputError(source, "sampler", f"grid search needs a discrete space without "
                            f"conditional parameters; space {spec.space!r} has float or "
                            "conditional parameters (give them choices, or use another sampler)")
    return spec


def study_workload(spec: StudySpec) -> Workload:
    """The workload a study scores: its preset or file, overrides applied, tables scaled."""
    wl = load_workload(spec.workload, tuple(spec.workload_overrides.items()))
    return wl if spec.table_scale == 1.0 else scale_tables(wl, spec.table_scale)



def _space_of(spec: StudySpec) -> SearchSpace:
    return load_space(spec.space)


def _obj_of(spec: StudySpec) -> ObjectiveSet:
    return load_objectives(spec.objectives)


# --- storage -----------------------------------------------------------------------------------


def default_storage_path(spec: StudySpec) -> Path:
    """Where the default journal of ``spec`` lives."""
    return STUDIES_DIR / f"{spec.name}.journal"


def open_storage(url: str | None, spec: StudySpec) -> BaseStorage:
    """The storage for ``url`` (``spec.storage`` when ``None``; the default journal when empty).

    ``journal:PATH`` or a path ending in ``.journal``: a journal file. ``grpc://HOST:PORT``: a
    ``dse storage-proxy``. ``postgresql://...`` (psycopg 3), ``sqlite:///...`` and other
    SQLAlchemy URLs: an RDB storage, with Optuna's heartbeat and :class:`RetryStaleTrial` on a
    database server (:mod:`dse.search.storage`). A storage that cannot be reached raises
    :class:`DseInputError` within seconds.
    """
    url = spec.storage if url is None else url
    if not url:
        return journal_storage(default_storage_path(spec))
    if url.startswith("journal:") or url.endswith(".journal"):
        return journal_storage(Path(url.removeprefix("journal:")))
    if "://" not in url:
        raise DseInputError("--storage", url, "expected an Optuna storage URL or a .journal path")
    if url.startswith("grpc://"):
        return grpc_storage(url)
    return rdb_storage(url, RetryStaleTrial(max_retry=MAX_RETRIES))


class FlockLock(BaseJournalFileLock):
    """The journal's write lock as an ``flock`` on ``FILE.write.lock``.

    Optuna's default lock is a symlink that a SIGKILLed writer leaves behind: the next run then
    waits out its 30-second grace period. The kernel drops an ``flock`` when its process dies.
    (Processes that open the same journal with Optuna's default lock are not excluded by this
    one; readers such as optuna-dashboard take no lock.)
    """

    def __init__(self, journal: str) -> None:
        self.path = journal + ".write.lock"
        self._fd: int | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "_fd": None}

    def acquire(self) -> bool:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return True

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)


def journal_storage(path: Path) -> JournalStorage:
    """Optuna's journal in ``path`` with an :class:`FlockLock`, its tail repaired first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FlockLock(str(path))
    repair_journal_tail(path, lock)
    return JournalStorage(JournalFileBackend(str(path), lock_obj=lock))


def repair_journal_tail(path: Path, lock: BaseJournalFileLock) -> bool:
    """Cut a partial last record (an append that power loss interrupted) off the journal.

    Optuna's reader skips a last line without its newline, but the next append would be glued
    to it and make the whole journal unreadable. Writes happen under the lock, so a partial line
    seen under it never completed (its writer never saw its fsync return). True if cut.
    """
    if not path.exists() or path.stat().st_size == 0:
        return False
    lock.acquire()
    try:
        with path.open("rb+") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(size - 1)
            if f.read(1) == b"\n":
                return False
            keep = 0
            chunk = 1 << 16
            pos = size
            while pos > 0:
                start = max(0, pos - chunk)
                f.seek(start)
                found = f.read(pos - start).rfind(b"\n")
                if found >= 0:
                    keep = start + found + 1
                    break
                pos = start
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())
        return True
    finally:
        lock.release()


def storage_file(url: str | None, spec: StudySpec) -> Path | None:
    """The file behind a journal or SQLite storage (``None`` for a database server)."""
    url = spec.storage if url is None else url
    if not url:
        return default_storage_path(spec)
    if url.startswith("journal:") or url.endswith(".journal"):
        return Path(url.removeprefix("journal:"))
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        return Path(url.removeprefix("sqlite:///"))
    return None


# --- designs -----------------------------------------------------------------------------------


def suggest_design(trial: Trial, space: SearchSpace) -> dict[str, Any]:
    """Draw a design's parameters from ``trial`` (conditional ones only when active)."""
    design: dict[str, Any] = {}
    for name, p in space.parameters.items():
        if not space.active(name, design):
            continue
        design[name] = _suggest(trial, p)
    return design


def _suggest(trial: Trial, p: Parameter) -> Any:
    if p.type == "categorical":
        return trial.suggest_categorical(p.name, list(p.choices))
    if p.type == "ordinal":
        index = trial.suggest_int(p.name + ORDINAL_SUFFIX, 0, len(p.choices) - 1)
        return p.choices[index]
    assert p.low is not None and p.high is not None
    if p.type == "int":
        step = int(p.step or 1)
        return trial.suggest_int(p.name, int(p.low), int(p.high), step=step, log=p.log and step == 1)
    return trial.suggest_float(p.name, p.low, p.high, log=p.log)


def encode_design(space: SearchSpace, design: Mapping[str, Any]) -> dict[str, Any]:
    """Optuna parameters of a design (for enqueueing): ordinals become indices."""
    out: dict[str, Any] = {}
    for name, value in design.items():
        p = space.parameters[name]
        if p.type == "ordinal":
            out[name + ORDINAL_SUFFIX] = p.choices.index(value)
        else:
            out[name] = value
    return out


def decode_params(space: SearchSpace, params: Mapping[str, Any]) -> dict[str, Any]:
    """A design from Optuna parameters (the inverse of :func:`encode_design`)."""
    out: dict[str, Any] = {}
    for name, p in space.parameters.items():
        if p.type == "ordinal" and name + ORDINAL_SUFFIX in params:
            out[name] = p.choices[int(params[name + ORDINAL_SUFFIX])]
        elif name in params:
            out[name] = params[name]
    return out


def grid_of(space: SearchSpace) -> dict[str, list[Any]] | None:
    """The Optuna grid of a discrete, unconditional space (``None`` otherwise)."""
    if not space.is_discrete() or any(p.when for p in space.parameters.values()):
        return None
    grid: dict[str, list[Any]] = {}
    for name, p in space.parameters.items():
        if p.type == "ordinal":
            grid[name + ORDINAL_SUFFIX] = list(range(len(p.choices)))
        else:
            grid[name] = list(p.grid())
    return grid


# --- the objective -----------------------------------------------------------------------------


@dataclass
class DesignObjective:
    """Scores one trial: design -> system -> model -> objective values, constraints, attributes."""

    workload: Workload
    space: SearchSpace
    objectives: ObjectiveSet
    budget: int
    calibration: Calibration = field(default_factory=load_calibration)
    catalog: Catalog = field(default_factory=load_catalog)
    worker: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    heartbeat: bool = False
    """The storage has Optuna's heartbeat: record one before claiming a trial, so a claimed trial
    always has one (Optuna never fails a RUNNING trial that has none)."""

    def __call__(self, trial: Trial) -> list[float]:
        try:
            return self._score(trial)
        except KeyboardInterrupt:
            # Optuna fails the trial and stops: put its design back for the next run.
            retry(trial.study, trial.study._storage.get_trial(trial._trial_id))
            raise

    def _score(self, trial: Trial) -> list[float]:
        _claim(trial, self.worker, self.heartbeat)
        if _over_budget(trial, self.budget):
            _requeue_if_enqueued(trial)
            trial.study.stop()
            raise optuna.TrialPruned("the study's budget is reached")
        design = suggest_design(trial, self.space)
        try:
            system = design_system(self.space, design, self.catalog)
        except DseInputError as exc:
            # A combination the schema cannot express is an infeasible design, not a crash.
            write_trial_attrs(trial, {"design": design, "feasible": False, "model_feasible": False,
                                      "infeasible_reasons": [str(exc)]},
                              {"feasible": 1.0, "memory": 0.0})
            return [-1e300 if o.direction == "maximize" else 1e300 for o in self.objectives.objectives]
        ev = evaluate(self.workload, system, self.calibration, self.catalog)
        metrics = ev.metrics()
        constraints = self.objectives.violations(metrics)
        attrs: dict[str, Any] = {key: _jsonable(value) for key, value in metrics.items()}
        # `feasible` is the study's verdict (the model's and the objective set's constraints: what
        # keeps a design off the front), so tools that ignore Optuna's constraints, such as
        # optuna-dashboard, can show it; the model's own verdict is `model_feasible`.
        attrs["model_feasible"] = bool(metrics["feasible"])
        attrs["feasible"] = all(v <= 0 for v in constraints.values())
        attrs["breakdown_s"] = {k: _jsonable(v) for k, v in ev.breakdown_s.items()}
        attrs["design"] = design
        attrs["infeasible_reasons"] = list(ev.reasons) + self.objectives.violated(metrics)
        write_trial_attrs(trial, attrs, constraints)
        return self.objectives.values(metrics)



def design_system(space: SearchSpace, design: Mapping[str, Any], catalog: Catalog | None = None,
                  base: str | None = None) -> System:
    """The system of one design of ``space`` (decoded parameter values; those left out keep the
    base system's; other system keys, such as a fixed ``nodes``, are applied last, for
    comparisons outside the space). ``base`` replaces the base system. Raises
    :class:`DseInputError` for a combination the schema cannot express."""
    from dse.records import apply_override

    data, _ = _base_table(base or space.base_for(design))
    extra = tuple((k, v) for k, v in design.items() if k not in space.parameters)
    for key, value in space.overrides(design) + extra:
        data = apply_override(data, key, value)
    spec = system_spec_from_mapping(data, f"space {space.name}")
    return resolve_system(spec, catalog or load_catalog(), f"space {space.name}")


@functools.lru_cache(maxsize=16)
def _base_table_cached(name: str) -> str:
    from dse.model.system import read_system_data

    data, source = read_system_data(name)
    return json.dumps([data, source])


def _base_table(name: str) -> tuple[dict[str, Any], str]:
    data, source = json.loads(_base_table_cached(name))
    return data, source


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_trial_attrs(trial: Trial, user_attrs: Mapping[str, Any],
                      constraints: Mapping[str, float]) -> None:
    """Store a trial's user attributes and constraint values in one storage write.

    Each attribute stays a separate key (the dashboard and ``trials_dataframe`` show them one by
    one); only the writing is batched. Set one by one, the ~25 attributes of a trial cost ~25
    locked, fsynced journal appends (or SQLite commits): most of a trial's time. The journal gets
    them as one append of ordinary single-key records (what ``set_trial_user_attr`` writes); an
    RDB storage as one transaction. Any other storage takes the public calls.
    """
    system_attrs: dict[str, Any] = {}
    for key, value in constraints.items():
        value = float(value)
        if math.isnan(value):
            raise ValueError(f"constraint {key!r} is NaN")
        system_attrs[f"{_CONSTRAINTS_KEY}:{key}"] = value
    storage = trial.storage
    backend = storage._backend if isinstance(storage, _CachedStorage) else storage
    tid = trial._trial_id
    if isinstance(storage, JournalStorage) and _journal_batchable(storage):
        worker_id = storage._replay_result.worker_id
        logs = [{"op_code": JournalOperation.SET_TRIAL_USER_ATTR, "worker_id": worker_id,
                 "trial_id": tid, "user_attr": {k: v}} for k, v in user_attrs.items()]
        logs += [{"op_code": JournalOperation.SET_TRIAL_SYSTEM_ATTR, "worker_id": worker_id,
                  "trial_id": tid, "system_attr": {k: v}} for k, v in system_attrs.items()]
        with storage._thread_lock:
            storage._backend.append_logs(logs)
            storage._sync_with_backend()
    elif isinstance(backend, RDBStorage) and _rdb_batchable(backend):
        rdb_write_attrs(backend, tid, dict(user_attrs), system_attrs)
    elif grpc_call(storage, "WriteTrialAttrs", {"trial_id": tid, "user_attrs": dict(user_attrs),
                                                "system_attrs": system_attrs}) is not None:
        pass  # a dse storage-proxy: one call
    else:
        for k, v in user_attrs.items():
            storage.set_trial_user_attr(tid, k, v)
        for k, v in system_attrs.items():
            storage.set_trial_system_attr(tid, k, v)
    # Keep the trial's own view in step, as Trial.set_user_attr and set_constraint do.
    trial._cached_frozen_trial.user_attrs.update(user_attrs)
    trial._cached_frozen_trial.system_attrs.update(system_attrs)


def _claim(trial: Trial, worker: str, heartbeat: bool) -> None:
    """Record the worker running ``trial`` (``dse:worker`` = host:pid). With Optuna's heartbeat,
    record one first (in the same transaction on PostgreSQL and SQLite): a trial claimed then
    always has a heartbeat, so Optuna can find it stale."""
    backend = rdb_backend(trial.storage)
    if backend is not None and _rdb_batchable(backend):
        rdb_write_attrs(backend, trial._trial_id, {}, {WORKER_KEY: worker}, heartbeat=heartbeat)
    else:
        if heartbeat:
            storage: Any = trial.storage  # a BaseHeartbeat
            storage.record_heartbeat(trial._trial_id)
        trial.storage.set_trial_system_attr(trial._trial_id, WORKER_KEY, worker)
    trial._cached_frozen_trial.system_attrs[WORKER_KEY] = worker


def _quick_counts(study: optuna.Study, below: int | None = None) -> dict[TrialState, int] | None:
    """:func:`state_counts` in one COUNT query (an RDB storage, directly or through a dse
    storage-proxy); ``None`` on other storages."""
    backend = rdb_backend(study._storage)
    if backend is not None:
        return rdb_state_counts(backend, study._study_id, below)
    reply = grpc_call(study._storage, "StateCounts", {"study_id": study._study_id, "below": below})
    if reply is None:
        return None
    return {TrialState[name]: int(n) for name, n in reply.items()}


def state_counts(study: optuna.Study, below: int | None = None) -> dict[TrialState, int]:
    """The study's trials by state (only those numbered below ``below`` when given): one COUNT
    query on an RDB storage or a dse storage-proxy, a read of the trials on the others."""
    quick = _quick_counts(study, below)
    if quick is not None:
        return quick
    counts: dict[TrialState, int] = {}
    for t in study.get_trials(deepcopy=False):
        if below is None or t.number < below:
            counts[t.state] = counts.get(t.state, 0) + 1
    return counts


def _journal_batchable(storage: JournalStorage) -> bool:
    return all(hasattr(storage, a) for a in ("_backend", "_thread_lock", "_replay_result",
                                              "_sync_with_backend"))


def _rdb_batchable(storage: RDBStorage) -> bool:
    return hasattr(storage, "_set_trial_attr_without_commit") and hasattr(storage, "scoped_session")


_LIVE = (TrialState.COMPLETE, TrialState.RUNNING, TrialState.WAITING)


def _requeue_if_enqueued(trial: Trial) -> None:
    """Put back the parameters of an enqueued trial (a baseline or a retry) that is pruned at the
    budget, so a later run with a larger budget still evaluates it."""
    frozen = trial._cached_frozen_trial
    fixed = frozen.system_attrs.get("fixed_params")
    if fixed:
        trial.study.enqueue_trial(dict(fixed), user_attrs=dict(frozen.user_attrs),
                                  skip_if_exists=False)


def _over_budget(trial: Trial, budget: int) -> bool:
    """True when ``budget`` trials numbered before this one are complete, running or waiting to
    run (so several workers together stop at the total, not each at it). A waiting trial numbered
    before this one (a retry, a baseline) counts: some worker will take it, and its own check
    counts only the trials before it, so the two checks together never pass the budget."""
    counts = _quick_counts(trial.study, below=trial.number)
    if counts is not None:
        return sum(counts.get(s, 0) for s in _LIVE) >= budget
    trials = trial.study.get_trials(deepcopy=False, states=_LIVE)
    # Trials come in number order: only the last few (this one, and any other workers started
    # since) are not ahead of it.
    ahead = len(trials)
    for t in reversed(trials):
        if t.number < trial.number:
            break
        ahead -= 1
    return ahead >= budget


# --- study lifecycle ---------------------------------------------------------------------------


def _describe(spec: StudySpec) -> dict[str, str]:
    wl = study_workload(spec)
    return {
        "dse:workload": json.dumps({"name": spec.workload, "overrides": spec.workload_overrides,
                                    **({"table_scale": spec.table_scale} if spec.table_scale != 1.0
                                       else {}),
                                    **wl.summary()}, sort_keys=True),
        "dse:space": json.dumps(_space_of(spec).to_dict(), sort_keys=True),
        "dse:objectives": json.dumps(_obj_of(spec).to_dict(), sort_keys=True),
    }


MODEL_DATA = ("data/catalog.toml", "data/calibration.toml")
"""The data files whose content decides a design's score, beside every module of :mod:`dse.model`
(the workload and system files a study records itself)."""


def model_sources() -> list[str]:
    """Package-relative paths of the files hashed by :func:`model_fingerprint`, in a fixed order."""
    root = Path(str(resources.files("dse")))
    modules = sorted(p.relative_to(root).as_posix() for p in (root / "model").rglob("*.py"))
    return [*modules, *MODEL_DATA]


@functools.cache
def model_fingerprint() -> str:
    """12 hex digits of a SHA-256 over :func:`model_sources`: a study records it, and a resume
    under a different model (a fix that changes scores without a new dse or calibration version)
    is recorded in ``dse:changes`` with the trial it starts from. Any edit counts, a refactoring
    that keeps every score too: the record says the code changed, not that the scores did."""
    digest = hashlib.sha256()
    package = resources.files("dse")
    for name in model_sources():
        digest.update(name.encode())
        digest.update((package / name).read_bytes())
    return digest.hexdigest()[:12]


def open_study(spec: StudySpec, storage: BaseStorage, force: bool = False,
               create: bool = True, where: str = "") -> optuna.Study:
    """Create the study, or load it and check it was made with the same workload, space and
    objectives (refused unless ``force``, which records the change in ``dse:changes``).

    ``create=False`` (a worker joining a study) refuses a study that does not exist (``where``
    names the storage in the message). Several processes may open a new study at once: the one
    whose ``create_study`` succeeds records it and enqueues the baselines, then writes
    ``dse:budget`` last; the others wait for that before they work.
    """
    objectives = _obj_of(spec)
    sampler = make_sampler(spec.sampler, spec.seed, grid_of(_space_of(spec)), spec.name)
    if create:
        try:
            study = optuna.create_study(storage=storage, study_name=spec.name, sampler=sampler,
                                        directions=objectives.directions)
            _record_new(study, spec)
            return study
        except DuplicatedStudyError:
            pass
    try:
        study = optuna.load_study(study_name=spec.name, storage=storage, sampler=sampler)
    except KeyError:
        raise DseInputError(spec.name, "", f"no such study in {where or 'the storage'}; create "
                            f"it first with dse run {spec.name} --storage URL --trials 0") from None
    attrs = _wait_until_recorded(study)
    described = _describe(spec)
    if "dse:space" not in attrs:  # made by plain Optuna, or its creator died before recording it
        _record_new(study, spec)
        return study
    changed = [k.removeprefix("dse:") for k, v in described.items() if attrs.get(k) != v]
    directions = [optuna.study.StudyDirection.MAXIMIZE if d == "maximize"
                  else optuna.study.StudyDirection.MINIMIZE for d in objectives.directions]
    if list(study.directions) != directions:
        # Optuna cannot change a study's directions: forced, every value would be read the wrong
        # way round (or every trial would fail on a count mismatch).
        raise DseInputError(spec.name, "objectives",
                            f"directions {[d.name.lower() for d in directions]} differ from the "
                            f"stored study's {[d.name.lower() for d in study.directions]}, which "
                            "cannot change (not even with --force): start a new study (another "
                            "name or storage)")
    if changed and not force:
        raise DseInputError(spec.name, ", ".join(changed),
                            "differs from what the stored study was created with; "
                            "rerun with --force to continue anyway (the change is recorded)")
    log = list(attrs.get("dse:changes", []))
    now = datetime.now(UTC).isoformat()
    if changed:
        log.append({"at": now, "changed": changed, **described})
        for key, value in described.items():
            study.set_user_attr(key, value)
    # A new model (its code or data), calibration or dse version is not refused, but recorded:
    # trials after this point were scored by it.
    versions = {"dse:calibration_version": load_calibration().version, "dse:version": __version__,
                "dse:model": model_fingerprint()}
    moved = {k: {"from": attrs.get(k), "to": v} for k, v in versions.items() if attrs.get(k) != v}
    if moved:
        log.append({"at": now, "changed": [k.removeprefix("dse:") for k in moved],
                    "from_trial": len(study.get_trials(deepcopy=False)), **moved})
        for key, value in versions.items():
            study.set_user_attr(key, value)
    if len(log) > len(attrs.get("dse:changes", [])):
        study.set_user_attr("dse:changes", log)
    study.set_user_attr("dse:budget", spec.budget)
    return study


def _record_new(study: optuna.Study, spec: StudySpec) -> None:
    """Record a new study's definition and enqueue its baselines; ``dse:budget`` comes last and
    tells other processes the study is ready."""
    for key, value in _describe(spec).items():
        study.set_user_attr(key, value)
    study.set_user_attr("dse:version", __version__)
    study.set_user_attr("dse:calibration_version", load_calibration().version)
    study.set_user_attr("dse:model", model_fingerprint())
    study.set_user_attr("dse:study", json.dumps(_spec_dict(spec), sort_keys=True))
    if spec.sampler != "grid":  # the grid holds every design; an enqueued one would repeat
        enqueue_baselines(study, _space_of(spec))
    study.set_user_attr("dse:budget", spec.budget)


def _wait_until_recorded(study: optuna.Study) -> dict[str, Any]:
    """The study's user attributes once its creator has recorded it (``dse:budget`` set), or as
    they are after :data:`OPEN_WAIT_S` seconds."""
    deadline = time.monotonic() + OPEN_WAIT_S
    while True:
        attrs: dict[str, Any] = study.user_attrs
        if "dse:budget" in attrs or time.monotonic() > deadline:
            return attrs
        time.sleep(0.1)


def _spec_dict(spec: StudySpec) -> dict[str, Any]:
    return {"name": spec.name, "workload": spec.workload, "space": spec.space,
            "objectives": spec.objectives, "sampler": spec.sampler, "budget": spec.budget,
            "seed": spec.seed, "workload_overrides": spec.workload_overrides,
            "table_scale": spec.table_scale}


def enqueue_baselines(study: optuna.Study, space: SearchSpace) -> list[str]:
    """Enqueue the system presets the space can express, so every front is compared with real
    machines; returns their names."""
    baselines = preset_params(space)
    for name, design in baselines.items():
        study.enqueue_trial(encode_design(space, design), user_attrs={BASELINE_KEY: name})
    return list(baselines)


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
    return bool(is_heartbeat_enabled(study._storage))


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
                         alone: bool = False, heartbeat: bool = False) -> list[int]:
    """Fail RUNNING trials left by dead workers and re-enqueue their parameters.

    A trial is abandoned when no worker can still be running it: ``alone`` (the caller holds the
    study's :class:`WorkerLock` exclusively, so no other worker is alive); its worker ran on this
    host and that process is gone; or it has run longer than ``stale_seconds`` (a worker on
    another host, or one that died before it recorded itself). With ``heartbeat`` (Optuna's
    heartbeat covers every trial a worker has claimed) only the last rule's second case applies.
    Returns the numbers of the failed trials. Safe against other processes recovering at the
    same time: each trial is failed and re-enqueued once.
    """
    host = socket.gethostname()
    now = datetime.now()
    recovered: list[int] = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker = str(t.system_attrs.get(WORKER_KEY, ""))
        w_host, _, w_pid = worker.rpartition(":")
        dead = w_host == host and w_pid.isdigit() and not _pid_alive(int(w_pid))
        age = (now - (t.datetime_start or now)).total_seconds()
        # A worker records itself a millisecond after creating a trial: one that has not after
        # UNCLAIMED_SECONDS died in between.
        old = age > (stale_seconds if worker else min(stale_seconds, UNCLAIMED_SECONDS))
        abandoned = (old and not worker) if heartbeat else (alone or dead or old)
        if not abandoned:
            continue
        try:
            study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
        except UpdateFinishedTrialError:
            continue  # another process recovered (or finished) it first
        retry(study, t)
        recovered.append(t.number)
    return recovered


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

    def exclusive(self) -> bool:
        """Try to hold the lock alone, without waiting: True when no other worker is alive."""
        if self.path is None:
            return False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def share(self) -> None:
        """Hold the lock shared for the rest of the work (waits while another process recovers)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_SH)

    def release(self) -> None:
        """Let go of the lock."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def completed(study: optuna.Study) -> int:
    """Number of completed trials."""
    return len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))


@dataclass
class Progress:
    """What a progress display shows after each trial."""

    complete: int
    budget: int
    feasible: int
    front: int
    hypervolume: float


def target_of(spec: StudySpec, study: optuna.Study, trials: int | None) -> int:
    """The number of completed trials to work until: the budget, or ``trials`` more than now
    (never past the budget); a grid study stops when its grid is covered."""
    budget = spec.budget
    grid = grid_of(_space_of(spec)) if spec.sampler == "grid" else None
    if grid is not None:
        budget = min(budget, math.prod(len(v) for v in grid.values()))
    return budget if trials is None else min(budget, completed(study) + trials)


def run_study(
    spec: StudySpec,
    storage_url: str | None = None,
    force: bool = False,
    trials: int | None = None,
    on_trial: Callable[[Progress], None] | None = None,
    until: int | None = None,
    max_trials: int | None = None,
    create: bool = True,
) -> optuna.Study:
    """Create or resume ``spec`` and work until its budget (or ``trials`` more) is complete.

    One worker per call; start several processes with the same storage to work in parallel, and
    give them one absolute target ``until`` (:func:`target_of`), computed once before they start:
    ``trials`` counted by each worker from its own start would overshoot. ``max_trials`` caps
    the trials this worker completes itself; ``create=False`` joins an existing study only.
    The worker stops when the target is complete, not merely started: while the last trials run
    elsewhere it waits, and retries any that a dead worker leaves (:func:`recover`).
    """
    storage = open_storage(storage_url, spec)
    url = spec.storage if storage_url is None else storage_url
    study = open_study(spec, storage, force, create=create, where=url or "the default journal")
    with WorkerLock(storage_file(storage_url, spec)) as lock:
        recover(study, alone=lock.exclusive())
        lock.share()
        budget = target_of(spec, study, trials) if until is None else min(until, spec.budget)
        if budget - completed(study) > 0 and max_trials != 0:
            _optimize(study, spec, budget, on_trial, max_trials)
    return study


def _counts(study: optuna.Study) -> tuple[int, int, int]:
    """(complete, running, waiting) trials of ``study``."""
    counts = state_counts(study)
    return (counts.get(TrialState.COMPLETE, 0), counts.get(TrialState.RUNNING, 0),
            counts.get(TrialState.WAITING, 0))


def _optimize(study: optuna.Study, spec: StudySpec, budget: int,
              on_trial: Callable[[Progress], None] | None, max_trials: int | None = None) -> int:
    """Work on ``study`` until ``budget`` trials are complete (or this worker has completed
    ``max_trials``); returns the number this worker completed."""
    objective = DesignObjective(study_workload(spec), _space_of(spec), _obj_of(spec), budget,
                                heartbeat=heartbeat_enabled(study))
    tracker = _Tracker(study, budget, on_trial)
    own = 0
    last_recovery = time.monotonic()

    def recover_now(every: float) -> None:
        nonlocal last_recovery
        if time.monotonic() - last_recovery >= every:
            last_recovery = time.monotonic()
            recover(study)

    def after_trial(st: optuna.Study, finished: FrozenTrial) -> None:
        # Stops this worker once all workers together have the budget complete or running, so it
        # does not start a trial only to prune it. Only an early stop (the exact check is
        # _over_budget, at the start of every trial), so the O(trials) read is skipped while the
        # trial numbers say the budget is still far.
        nonlocal own
        tracker.update()
        own += finished.state == TrialState.COMPLETE
        if STOP.is_set() or (max_trials is not None and own >= max_trials):
            st.stop()
            return
        recover_now(RECOVER_EVERY_S)
        if finished.number + 1 < budget:
            return
        if sum(_counts(st)[:2]) >= budget:
            st.stop()

    room_since: float | None = None  # None: not waited; 0: waiting; else when room appeared
    while (max_trials is None or own < max_trials) and not STOP.is_set():
        complete, running, waiting = _counts(study)
        if complete >= budget:
            break
        if complete + running >= budget:
            # The rest of the budget is running elsewhere: wait until it completes, or until a
            # dead worker's trial is failed and retried (then there is room again).
            room_since = 0.0
            time.sleep(WAIT_POLL_S)
            recover_now(1.0)
            continue
        if room_since is not None and not waiting:
            # Room after waiting is a trial just failed as abandoned, and its retry is a moment
            # behind (failing and enqueueing are two writes, by Optuna's heartbeat or by
            # recover_stale_trials). A new trial started in between would take its place and
            # leave the retry queued past the budget: wait for the retry (or, when none comes,
            # as after a trial that failed for good, for half a second).
            if not room_since:
                room_since = time.monotonic()
            if time.monotonic() - room_since < 0.5:
                time.sleep(WAIT_POLL_S / 4)
                continue
        room_since = None
        try:
            study.optimize(objective, n_trials=budget - complete, callbacks=[after_trial],
                           catch=(), gc_after_trial=False)
        except UpdateFinishedTrialError as exc:
            # Another worker took this one for dead (it stalled past the heartbeat's grace
            # period) and failed its trial; the retry it enqueued redoes the design.
            log.warning("dse: a trial of this worker was failed by another as abandoned (%s); "
                        "its retry redoes it", exc)
    return own


class _Tracker:
    """Feeds a progress callback at most every half second (the front and hypervolume cost
    O(trials) to compute)."""

    def __init__(self, study: optuna.Study, budget: int, cb: Callable[[Progress], None] | None):
        self.study, self.budget, self.cb = study, budget, cb
        self.last = 0.0

    def update(self, force: bool = False) -> None:
        if self.cb is None or (not force and time.monotonic() - self.last < 0.5):
            return
        self.last = time.monotonic()
        self.cb(progress(self.study, self.budget))


def progress(study: optuna.Study, budget: int) -> Progress:
    """Completed trials, feasible count, front size and hypervolume of ``study``."""
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    feasible = [t for t in trials if all(v <= 0 for v in t.constraints.values())]
    front = pareto_trials(study, feasible)
    return Progress(len(trials), budget, len(feasible), len(front),
                    hypervolume(study, feasible))


def pareto_trials(study: optuna.Study, feasible: list[FrozenTrial] | None = None) -> list[FrozenTrial]:
    """The feasible non-dominated trials (the front), sorted by the first objective."""
    if feasible is None:
        feasible = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                    if all(v <= 0 for v in t.constraints.values())]
    if not feasible:
        return []
    return [feasible[i] for i in non_dominated(_losses(study, feasible))]


def non_dominated(loss: np.ndarray) -> list[int]:
    """Indices of the non-dominated rows of ``loss`` (minimisation), in lexicographic order.

    Rows are visited in lexicographic order, so no later row can dominate an earlier one: each row
    only needs checking against the front kept so far.
    """
    order = np.lexsort(loss.T[::-1])
    front: list[int] = []
    kept = np.empty((0, loss.shape[1]))
    for i in order:
        row = loss[i]
        if kept.size and bool(np.any(np.all(kept <= row, axis=1) & np.any(kept < row, axis=1))):
            continue
        front.append(int(i))
        kept = np.vstack([kept, row])
    return front


def _losses(study: optuna.Study, trials: list[FrozenTrial]) -> np.ndarray:
    signs = np.array([1.0 if d == optuna.study.StudyDirection.MINIMIZE else -1.0
                      for d in study.directions])
    loss: np.ndarray = np.array([t.values for t in trials], dtype=float) * signs
    return loss


def reference_point(study: optuna.Study, trials: list[FrozenTrial]) -> np.ndarray:
    """Hypervolume reference: the worst feasible value of each objective, pushed 10% further."""
    loss = _losses(study, trials)
    worst = loss.max(axis=0)
    best = loss.min(axis=0)
    ref: np.ndarray = worst + 0.1 * np.maximum(worst - best, np.abs(worst) * 1e-9 + 1e-12)
    return ref


def hypervolume(study: optuna.Study, trials: list[FrozenTrial],
                ref: np.ndarray | None = None, lo: np.ndarray | None = None) -> float:
    """Hypervolume of ``trials`` (minimisation form) with objectives scaled to [0, 1] between
    ``lo`` (default: their best values) and ``ref`` (default :func:`reference_point`); fix both to
    compare subsets of one study."""
    if not trials:
        return 0.0
    from optuna._hypervolume import compute_hypervolume

    loss = _losses(study, trials)
    ref = reference_point(study, trials) if ref is None else ref
    lo = loss.min(axis=0) if lo is None else lo
    scale = np.where(ref - lo > 0, ref - lo, 1.0)
    points = (loss - lo) / scale
    inside = np.all(points < 1.0, axis=1)
    if not inside.any():
        return 0.0
    return float(compute_hypervolume(points[inside], np.ones(loss.shape[1])))
