"""The Optuna objective of a study: a trial's design scored by the model, and its attributes.

:class:`DesignObjective` draws a design, builds its system, evaluates it and returns the objective
values; the metrics, the step breakdown, the design and the reasons for infeasibility are stored as
the trial's attributes in one storage write (:func:`write_trial_attrs`). Several workers stop
together at the budget (:func:`over_budget`, checked at the start of every trial).
"""

from __future__ import annotations

import math
import os
import random
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import optuna
from optuna.storages import JournalStorage
from optuna.trial import Trial, TrialState

from dse.errors import DseInputError
from dse.model.catalog import Catalog, load_catalog
from dse.model.evaluate import evaluate
from dse.model.parameters import Calibration, load_calibration
from dse.model.workload import Workload
from dse.search import _optuna
from dse.search._optuna import CONSTRAINTS_KEY, JournalOperation, rdb_backend
from dse.search.algorithms.dedup import (
    DUPLICATE_KEY,
    DesignIndex,
    design_key,
    fresh_neighbour,
    random_design,
    shared_index,
)
from dse.search.storage.databases import rdb_write_attrs
from dse.search.storage.opening import quick_counts
from dse.search.storage.proxy import grpc_call
from dse.search.storage.recovery import retry
from dse.search.study.attribute_keys import PROPOSAL_KEY, WORKER_KEY
from dse.search.study.encoding import (
    canonical_design,
    design_system,
    design_workload,
    encode_design,
    suggest_design,
)
from dse.search.study.objective_sets import UNSCORABLE_CONSTRAINTS, ObjectiveSet
from dse.search.study.search_space import SearchSpace


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
    dedup: bool = True
    """Prune a trial that repeats a design already evaluated (or being evaluated) in the study,
    without running the model (:mod:`dse.search.algorithms.dedup`), and enqueue an unevaluated neighbour of
    it in its place; a pruned trial does not count against the budget."""
    exhausted: bool = False
    """Set when a repeat finds no design left to evaluate (every design of a small discrete
    space is done): the study then stops short of its budget."""
    trial: int = -1
    """The number of the trial this objective scores now (or last scored)."""
    _rng: random.Random = field(default_factory=lambda: random.Random(0), repr=False)

    def __call__(self, trial: Trial) -> list[float]:
        self.trial = trial.number
        try:
            return self._score(trial)
        except KeyboardInterrupt:
            # Optuna fails the trial and stops: put its design back for the next run.
            study = trial.study
            retry(study, _optuna.study_storage(study).get_trial(_optuna.trial_id_of(trial)))
            raise

    def _score(self, trial: Trial) -> list[float]:
        _claim(trial, self.worker, self.heartbeat)
        index = shared_index(trial.study, self.space)
        index.refresh_study(trial.study)
        if over_budget(trial, self.budget, index):
            _requeue_if_enqueued(trial)
            trial.study.stop()
            raise optuna.TrialPruned("the study's budget is reached")
        design = canonical_design(self.space, suggest_design(trial, self.space))
        if self.dedup:
            self._prune_if_repeat(trial, design, index)
        try:
            system = design_system(self.space, design, self.catalog)
            workload = design_workload(self.space, design, self.workload)
        except DseInputError as exc:
            # A combination the schema cannot express is an infeasible design, not a crash.
            write_trial_attrs(trial, {"design": design, "feasible": False, "model_feasible": False,
                                      "infeasible_reasons": [str(exc)]},
                              UNSCORABLE_CONSTRAINTS)
            return self.objectives.worst_values()
        ev = evaluate(workload, system, self.calibration, self.catalog)
        metrics = ev.metrics()
        constraints = self.objectives.violations(metrics, ev.rule_violations())
        attrs: dict[str, Any] = {key: _jsonable(value) for key, value in metrics.items()}
        # `feasible` is the study's verdict (the model's and the objective set's constraints: what
        # keeps a design off the front), so tools that ignore Optuna's constraints, such as
        # optuna-dashboard, can show it; the model's own verdict is `model_feasible`.
        attrs["model_feasible"] = bool(metrics["feasible"])
        attrs["feasible"] = all(v <= 0 for v in constraints.values())
        attrs["breakdown_s"] = {k: _jsonable(v) for k, v in ev.breakdown_s.items()}
        attrs["design"] = design
        attrs["infeasible_reasons"] = list(ev.reasons) + self.objectives.violated(metrics)
        proposal = _optuna.cached_frozen_trial(trial).system_attrs.get(PROPOSAL_KEY)
        if proposal:
            attrs["proposal"] = str(proposal)
        if ev.what_if:
            # One string (not a list), so the CSV and Parquet exports keep a plain text column.
            attrs["what_if"] = "; ".join(ev.what_if)
        write_trial_attrs(trial, attrs, constraints)
        return self.objectives.values(metrics)


    def _prune_if_repeat(self, trial: Trial, design: dict[str, Any], index: DesignIndex) -> None:
        """Prune ``trial`` when its design was evaluated before in the study (recording which
        trial it repeats) and enqueue a fresh neighbour of it, so the next trial makes progress.
        ``index``: the study's shared index (:func:`dse.search.algorithms.dedup.shared_index`), refreshed
        again here (other workers may have written since the budget check)."""
        index.refresh_study(trial.study)
        earlier = index.duplicate_of(trial.number, design)
        if earlier is None:
            return
        write_trial_attrs(trial, {"design": design, DUPLICATE_KEY: earlier}, {})
        taken = index.taken()
        fresh = fresh_neighbour(self.space, design, taken, self._rng)
        for _ in range(200 if fresh is None else 0):
            cand = random_design(self.space, self._rng)
            if design_key(cand) not in taken:
                fresh = cand
                break
        if fresh is None:
            self.exhausted = True
            trial.study.stop()
        else:
            trial.study.enqueue_trial(encode_design(self.space, fresh),
                                      user_attrs={"proposal": "after-repeat"})
        raise optuna.TrialPruned(f"repeats the design of trial {earlier}")


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
        system_attrs[f"{CONSTRAINTS_KEY}:{key}"] = value
    storage = trial.storage
    tid = _optuna.trial_id_of(trial)
    backend = rdb_backend(storage)

    def journal_logs(worker_id: str) -> list[dict[str, Any]]:
        logs = [{"op_code": JournalOperation.SET_TRIAL_USER_ATTR, "worker_id": worker_id,
                 "trial_id": tid, "user_attr": {k: v}} for k, v in user_attrs.items()]
        logs += [{"op_code": JournalOperation.SET_TRIAL_SYSTEM_ATTR, "worker_id": worker_id,
                  "trial_id": tid, "system_attr": {k: v}} for k, v in system_attrs.items()]
        return logs

    if isinstance(storage, JournalStorage) and _optuna.journal_append(storage, journal_logs):
        pass  # the journal: one append
    elif backend is not None:
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
    frozen = _optuna.cached_frozen_trial(trial)
    frozen.user_attrs.update(user_attrs)
    frozen.system_attrs.update(system_attrs)


def _claim(trial: Trial, worker: str, heartbeat: bool) -> None:
    """Record the worker running ``trial`` (``dse:worker`` = host:pid). With Optuna's heartbeat,
    record one first (in the same transaction on PostgreSQL and SQLite): a trial claimed then
    always has a heartbeat, so Optuna can find it stale."""
    backend = rdb_backend(trial.storage)
    tid = _optuna.trial_id_of(trial)
    if backend is not None:
        rdb_write_attrs(backend, tid, {}, {WORKER_KEY: worker}, heartbeat=heartbeat)
    else:
        if heartbeat:
            storage: Any = trial.storage  # a BaseHeartbeat
            storage.record_heartbeat(tid)
        trial.storage.set_trial_system_attr(tid, WORKER_KEY, worker)
    _optuna.cached_frozen_trial(trial).system_attrs[WORKER_KEY] = worker


_LIVE = (TrialState.COMPLETE, TrialState.RUNNING, TrialState.WAITING)


def _requeue_if_enqueued(trial: Trial) -> None:
    """Put back the parameters of an enqueued trial (a baseline or a retry) that is pruned at the
    budget, so a later run with a larger budget still evaluates it."""
    frozen = _optuna.cached_frozen_trial(trial)
    fixed = frozen.system_attrs.get("fixed_params")
    if fixed and PROPOSAL_KEY not in frozen.system_attrs:  # not the sampler's own proposal
        trial.study.enqueue_trial(dict(fixed), user_attrs=dict(frozen.user_attrs),
                                  skip_if_exists=False)


def over_budget(trial: Trial, budget: int, index: DesignIndex | None = None) -> bool:
    """True when ``budget`` trials numbered before this one are complete, running or waiting to
    run (so several workers together stop at the total, not each at it). A waiting trial numbered
    before this one (a retry, a baseline) counts: some worker will take it, and its own check
    counts only the trials before it, so the two checks together never pass the budget.
    ``index``: the study's shared index, refreshed just before (counted from it on storages
    without a COUNT query, instead of reading every trial)."""
    counts = quick_counts(trial.study, below=trial.number)
    if counts is not None:
        return sum(counts.get(s, 0) for s in _LIVE) >= budget
    if index is not None:
        # The study's shared index, just refreshed: counts without reading every trial.
        return index.live_below(trial.number) >= budget
    trials = trial.study.get_trials(deepcopy=False, states=_LIVE)
    # Trials come in number order: only the last few (this one, and any other workers started
    # since) are not ahead of it.
    ahead = len(trials)
    for t in reversed(trials):
        if t.number < trial.number:
            break
        ahead -= 1
    return ahead >= budget
