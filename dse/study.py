"""Resumable multi-objective Optuna studies over system designs (``studies/*.toml``).

A study file names a workload, a search space, an objective set, a sampler, a trial budget, a seed
and optionally a storage. :func:`run_study` creates or resumes the study and works until the budget
of *completed* trials is reached, so running it twice never doubles the work.

Storage: the default is Optuna's journal file ``studies/NAME.journal``. Measured on this machine
(see the studies issue): SQLite costs about 45 ms per trial and is unsafe for several processes;
the journal costs about 7 ms and is safe for several processes on one host (its appends are
serialised by a lock file). Optuna's heartbeat works only for RDB storages inside
``study.optimize``, so dse records which process runs each trial (``dse:worker`` = host:pid) and,
before working, fails the RUNNING trials of dead processes and re-enqueues their parameters
(:func:`recover_stale_trials`). A completed trial is never lost or evaluated twice by a crash.
"""

from __future__ import annotations

import functools
import json
import math
import os
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from optuna.storages import BaseStorage, JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import FrozenTrial, Trial, TrialState

from dse import __version__
from dse.calibration import Calibration, load_calibration
from dse.catalog import Catalog, load_catalog
from dse.errors import DseInputError
from dse.model import evaluate
from dse.objectives import ObjectiveSet, load_objectives
from dse.records import from_mapping, read_toml
from dse.samplers import SAMPLERS, make_sampler
from dse.space import Parameter, SearchSpace, load_space, preset_params
from dse.system import resolve_system, system_spec_from_mapping
from dse.workload import Workload, load_workload

STUDIES_DIR = Path(__file__).resolve().parent.parent / "studies"
DEFAULT_STUDY = "zion-2020"
STALE_SECONDS = 300.0
"""A RUNNING trial of another host older than this is taken as abandoned (dse trials take
milliseconds; a live worker never holds one this long)."""
UNCLAIMED_SECONDS = 10.0
WORKER_KEY = "dse:worker"
RETRY_KEY = "dse:retry_of"
BASELINE_KEY = "baseline"
ORDINAL_SUFFIX = "_index"
"""An ordinal parameter is searched as the integer index of its choice, named ``NAME_index``;
the decoded value is in the trial's ``design`` attribute."""

optuna.logging.set_verbosity(optuna.logging.WARNING)


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


def study_names() -> tuple[str, ...]:
    """Studies defined in ``studies/``."""
    return tuple(sorted(p.stem for p in STUDIES_DIR.glob("*.toml")))


def study_path(name_or_path: str) -> Path:
    """The file of a study given by name or path."""
    path = Path(name_or_path)
    if name_or_path.endswith(".toml") or path.exists():
        return path
    if name_or_path not in study_names():
        raise DseInputError(name_or_path, "", f"unknown study (known: {', '.join(study_names())})")
    return STUDIES_DIR / f"{name_or_path}.toml"


def load_study_spec(name_or_path: str) -> StudySpec:
    """Load and validate a study file; its workload, space and objectives must load too, and the
    objectives may only name metrics the model reports."""
    path = study_path(name_or_path)
    source = str(path)
    spec = from_mapping(StudySpec, read_toml(path), source)
    if spec.sampler not in SAMPLERS:
        raise DseInputError(source, "sampler", f"unknown sampler {spec.sampler!r} "
                            f"(known: {', '.join(SAMPLERS)})")
    for key, loader in (("workload", _workload_of), ("space", _space_of), ("objectives", _obj_of)):
        try:
            loader(spec)
        except DseInputError as exc:
            raise DseInputError(source, key, str(exc)) from None
    return spec


def _workload_of(spec: StudySpec) -> Workload:
    return load_workload(spec.workload, tuple(spec.workload_overrides.items()))


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

    ``sqlite:///...``, ``postgresql+psycopg://...`` and other SQLAlchemy URLs open an RDB storage;
    ``journal:PATH`` or a path ending in ``.journal`` a journal file.
    """
    url = spec.storage if url is None else url
    if not url:
        path = default_storage_path(spec)
        path.parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(str(path)))
    if url.startswith("journal:") or url.endswith(".journal"):
        path = Path(url.removeprefix("journal:"))
        path.parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(str(path)))
    if "://" not in url:
        raise DseInputError("--storage", url, "expected an Optuna storage URL or a .journal path")
    return RDBStorage(url)


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

    def __call__(self, trial: Trial) -> list[float]:
        trial.storage.set_trial_system_attr(trial._trial_id, WORKER_KEY, self.worker)
        if _over_budget(trial, self.budget):
            trial.study.stop()
            raise optuna.TrialPruned("the study's budget is reached")
        design = suggest_design(trial, self.space)
        try:
            spec = system_spec_from_mapping(self._system_table(design), f"space {self.space.name}")
            system = resolve_system(spec, self.catalog, f"space {self.space.name}")
        except DseInputError as exc:
            # A combination the schema cannot express is an infeasible design, not a crash.
            trial.set_user_attr("design", design)
            trial.set_user_attr("feasible", False)
            trial.set_user_attr("infeasible_reasons", [str(exc)])
            trial.set_constraint("feasible", 1.0)
            trial.set_constraint("memory", 0.0)
            return [-1e300 if o.direction == "maximize" else 1e300 for o in self.objectives.objectives]
        ev = evaluate(self.workload, system, self.calibration, self.catalog)
        metrics = ev.metrics()
        for key, value in metrics.items():
            trial.set_user_attr(key, _jsonable(value))
        trial.set_user_attr("breakdown_s", {k: _jsonable(v) for k, v in ev.breakdown_s.items()})
        trial.set_user_attr("design", design)
        trial.set_user_attr("infeasible_reasons", list(ev.reasons))
        for key, value in self.objectives.violations(metrics).items():
            trial.set_constraint(key, value)
        return self.objectives.values(metrics)

    def _system_table(self, design: Mapping[str, Any]) -> dict[str, Any]:
        from dse.records import apply_override

        data, _ = _base_table(self.space.base_system)
        for key, value in self.space.overrides(design):
            data = apply_override(data, key, value)
        return data


@functools.lru_cache(maxsize=16)
def _base_table_cached(name: str) -> str:
    from dse.system import read_system_data

    data, source = read_system_data(name)
    return json.dumps([data, source])


def _base_table(name: str) -> tuple[dict[str, Any], str]:
    data, source = json.loads(_base_table_cached(name))
    return data, source


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _over_budget(trial: Trial, budget: int) -> bool:
    """True when ``budget`` trials numbered before this one are complete or still running (so
    several workers together stop at the total, not each at it)."""
    trials = trial.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.RUNNING))
    ahead = sum(1 for t in trials if t.number < trial.number)
    return ahead >= budget


# --- study lifecycle ---------------------------------------------------------------------------


def _describe(spec: StudySpec) -> dict[str, str]:
    wl = _workload_of(spec)
    return {
        "dse:workload": json.dumps({"name": spec.workload, "overrides": spec.workload_overrides,
                                    **wl.summary()}, sort_keys=True),
        "dse:space": json.dumps(_space_of(spec).to_dict(), sort_keys=True),
        "dse:objectives": json.dumps(_obj_of(spec).to_dict(), sort_keys=True),
    }


def open_study(spec: StudySpec, storage: BaseStorage, force: bool = False) -> optuna.Study:
    """Create the study, or load it and check it was made with the same workload, space and
    objectives (refused unless ``force``, which records the change in ``dse:changes``)."""
    objectives = _obj_of(spec)
    sampler = make_sampler(spec.sampler, spec.seed, grid_of(_space_of(spec)), spec.name)
    study = optuna.create_study(storage=storage, study_name=spec.name, sampler=sampler,
                                directions=objectives.directions, load_if_exists=True)
    attrs = study.user_attrs
    described = _describe(spec)
    if "dse:space" not in attrs:
        for key, value in described.items():
            study.set_user_attr(key, value)
        study.set_user_attr("dse:version", __version__)
        study.set_user_attr("dse:calibration_version", load_calibration().version)
        study.set_user_attr("dse:study", json.dumps(_spec_dict(spec), sort_keys=True))
        study.set_user_attr("dse:budget", spec.budget)
        enqueue_baselines(study, _space_of(spec))
        return study
    changed = [k.removeprefix("dse:") for k, v in described.items() if attrs.get(k) != v]
    if list(study.directions) != [optuna.study.StudyDirection.MAXIMIZE if d == "maximize"
                                  else optuna.study.StudyDirection.MINIMIZE
                                  for d in objectives.directions]:
        changed.append("objective directions")
    if changed and not force:
        raise DseInputError(spec.name, ", ".join(changed),
                            "differs from what the stored study was created with; "
                            "rerun with --force to continue anyway (the change is recorded)")
    if changed:
        log = list(attrs.get("dse:changes", []))
        log.append({"at": datetime.now(UTC).isoformat(), "changed": changed, **described})
        study.set_user_attr("dse:changes", log)
        for key, value in described.items():
            study.set_user_attr(key, value)
    study.set_user_attr("dse:budget", spec.budget)
    return study


def _spec_dict(spec: StudySpec) -> dict[str, Any]:
    return {"name": spec.name, "workload": spec.workload, "space": spec.space,
            "objectives": spec.objectives, "sampler": spec.sampler, "budget": spec.budget,
            "seed": spec.seed, "workload_overrides": spec.workload_overrides}


def enqueue_baselines(study: optuna.Study, space: SearchSpace) -> list[str]:
    """Enqueue the system presets the space can express, so every front is compared with real
    machines; returns their names."""
    baselines = preset_params(space)
    for name, design in baselines.items():
        study.enqueue_trial(encode_design(space, design), user_attrs={BASELINE_KEY: name})
    return list(baselines)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover_stale_trials(study: optuna.Study, stale_seconds: float = STALE_SECONDS) -> list[int]:
    """Fail RUNNING trials left by dead workers and re-enqueue their parameters.

    A trial is abandoned when its worker ran on this host and that process is gone, or when it
    has run longer than ``stale_seconds`` (a worker on another host, or one that died before it
    recorded itself). Returns the numbers of the failed trials.
    """
    host = socket.gethostname()
    now = datetime.now()
    recovered: list[int] = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker = str(t.system_attrs.get(WORKER_KEY, ""))
        w_host, _, w_pid = worker.rpartition(":")
        dead = w_host == host and w_pid.isdigit() and not _pid_alive(int(w_pid))
        age = (now - (t.datetime_start or now)).total_seconds()
        # A worker records itself microseconds after creating a trial: one that has not after
        # UNCLAIMED_SECONDS died in between.
        old = age > (stale_seconds if worker else min(stale_seconds, UNCLAIMED_SECONDS))
        if not (dead or old):
            continue
        if not study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL):
            continue
        attrs = {k: v for k, v in t.user_attrs.items() if k == BASELINE_KEY}
        attrs[RETRY_KEY] = t.number
        study.enqueue_trial(dict(t.params), user_attrs=attrs, skip_if_exists=False)
        recovered.append(t.number)
    return recovered


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


def run_study(
    spec: StudySpec,
    storage_url: str | None = None,
    force: bool = False,
    trials: int | None = None,
    on_trial: Callable[[Progress], None] | None = None,
) -> optuna.Study:
    """Create or resume ``spec`` and work until its budget (or ``trials`` more) is complete.

    One worker per call; start several processes with the same storage to work in parallel.
    """
    storage = open_storage(storage_url, spec)
    study = open_study(spec, storage, force)
    recover_stale_trials(study)
    budget = spec.budget if trials is None else min(spec.budget, completed(study) + trials)
    remaining = budget - completed(study)
    if remaining <= 0:
        return study
    objective = DesignObjective(_workload_of(spec), _space_of(spec), _obj_of(spec), budget)
    tracker = _Tracker(study, budget, on_trial)

    def stop_at_budget(st: optuna.Study, _: FrozenTrial) -> None:
        done = st.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.RUNNING))
        if on_trial is not None:
            tracker.update()
        if len(done) >= budget:
            st.stop()

    study.optimize(objective, n_trials=remaining, callbacks=[stop_at_budget],
                   catch=(), gc_after_trial=False)
    return study


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
