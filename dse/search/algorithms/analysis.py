"""What a finished study says beyond its front: hypervolume as the trials accumulate, and which
parameters matter for each objective (Optuna's PED-ANOVA). The study page draws both."""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import numpy as np
import optuna
from optuna.trial import FrozenTrial

from dse.search.algorithms.pareto import hypervolume, pareto_mask, reference_point, study_losses
from dse.search.algorithms.reference import study_reference
from dse.search.study.objective_sets import ObjectiveSet, loss_sign

HYPERVOLUME_POINTS = 100
"""Hypervolume is computed at this many trial counts (each costs a front and a volume)."""


def hypervolume_curve(study: optuna.Study, feasible: list[FrozenTrial], trials: list[FrozenTrial],
                      points: int = HYPERVOLUME_POINTS) -> tuple[list[int], list[float]]:
    """Hypervolume of the feasible trials among the first n, at up to ``points`` n: against the
    study's fixed reference (:func:`dse.search.algorithms.reference.study_reference`; 1.0 = the coarse
    sweep's front) when it has one, else in one box over the whole study's range."""
    if not feasible:
        return [], []
    fixed = study_reference(study)
    ref = reference_point(study, feasible)
    loss = study_losses(study, feasible)
    lo = loss.min(axis=0)
    numbers = np.array([t.number for t in feasible])
    last = max(t.number for t in trials) + 1
    xs = sorted({int(v) for v in np.linspace(1, last, min(points, last))})
    # The volume of the first n trials is that of their front (a dominated point adds nothing,
    # and both volumes below drop dominated points first), so each n measures only the front
    # of the last n's front and the trials since: the same numbers, without one volume of
    # every trial so far per n.
    ys = []
    front = np.zeros(0, dtype=int)  # indices into ``feasible``: the front of the trials before ``done``
    done = 0
    for n in xs:
        new = np.flatnonzero((numbers >= done) & (numbers < n))
        if len(new):
            candidates = np.concatenate([front, new])
            front = candidates[pareto_mask(loss[candidates])]
        done = n
        if fixed is not None:
            ys.append(fixed.volume(loss[front]) / fixed.hypervolume
                      if len(front) and fixed.hypervolume > 0 else 0.0)
            continue
        ys.append(hypervolume(study, [feasible[i] for i in front], ref, lo) if len(front) else 0.0)
    return xs, ys


def importances_key(trials: list[FrozenTrial], objectives: ObjectiveSet) -> str:
    """What :func:`importances` of ``trials`` depends on (it is deterministic), as a SHA-256: this
    module's code, Optuna's version, the objectives and every trial's number, parameters,
    distributions and values (the report keeps the importances under it)."""
    digest = hashlib.sha256(f"{optuna.__version__} ".encode() + Path(__file__).read_bytes())
    digest.update(repr([(o.metric, o.direction) for o in objectives.objectives]).encode())
    for t in trials:
        digest.update(f"\0{t.number} {t.params!r} {t.distributions!r} {t.values!r}".encode())
    return digest.hexdigest()


def importances(study: optuna.Study, trials: list[FrozenTrial],
                objectives: ObjectiveSet) -> dict[str, dict[str, float]]:
    """Parameter importances per objective with Optuna's PED-ANOVA evaluator (fast), over the
    parameters every completed trial has (conditional ones are left out)."""
    evaluator = optuna.importance.PedAnovaImportanceEvaluator()
    common = set.intersection(*(set(t.params) for t in trials)) if trials else set()
    out: dict[str, dict[str, float]] = {}
    if len(trials) < 10 or not common:
        return out
    for i, o in enumerate(objectives.objectives):
        # PED-ANOVA ranks parameters by how they reach *low* target values.
        sign = loss_sign(o.direction)

        def target(t: FrozenTrial, i: int = i, sign: float = sign) -> float:
            return sign * float(t.values[i])

        try:
            with warnings.catch_warnings():
                # It warns that it ranks for low targets, which `sign` already arranges.
                warnings.simplefilter("ignore", UserWarning)
                out[o.metric] = dict(optuna.importance.get_param_importances(
                    study, evaluator=evaluator, params=sorted(common), target=target))
        except (ValueError, RuntimeError):
            continue
    return out
