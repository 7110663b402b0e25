"""Pareto fronts and hypervolume: the one place the search decides which designs are on a front.

Everything is minimisation of losses (:func:`dse.search.study.objective_sets.losses_of`: a maximised
objective is negated). :func:`pareto_mask` finds the non-dominated rows of a loss matrix (sweeps,
case studies) and :func:`pareto_trials` the front of a study's feasible trials (the runner's
progress, ``dse status``, ``dse pareto``, the report); :func:`hypervolume` measures a front with
objectives scaled to the study's own range.
"""

from __future__ import annotations

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from dse.search._optuna import compute_hypervolume
from dse.search.study.objective_sets import losses_of


def pareto_mask(loss: np.ndarray) -> np.ndarray:
    """Rows of ``loss`` (minimisation) that no other row dominates (no worse in every objective,
    better in one). Equal rows are all kept."""
    n = loss.shape[0]
    mask = np.zeros(n, dtype=bool)
    if n == 0:
        return mask
    unique, inverse = np.unique(loss, axis=0, return_inverse=True)  # lexicographically sorted
    on = np.zeros(len(unique), dtype=bool)
    if unique.shape[1] == 1:
        on[0] = True
    elif unique.shape[1] == 2:
        # Sorted by the first objective (ties by the second): a row is on the front when its second
        # objective beats every earlier row's.
        best = np.minimum.accumulate(unique[:, 1])
        on[0] = True
        on[1:] = unique[1:, 1] < best[:-1]
    else:
        rest = unique[:, 1:]
        remaining = np.arange(len(unique))
        while len(remaining):
            top = remaining[0]  # no later row of a lexicographic order can dominate it
            on[top] = True
            remaining = remaining[np.any(rest[remaining] < rest[top], axis=1)]
    mask[:] = on[inverse.reshape(-1)]
    return mask


class GrowingFront:
    """The non-dominated rows of a loss matrix (minimisation) that grows one row at a time: what
    :func:`pareto_mask` of every row so far gives (equal rows all kept), in O(front) per row
    rather than a pass over every row per question (a long study asks after every trial)."""

    def __init__(self) -> None:
        self.rows: list[int] = []
        """Indices of the front's rows, in the order they were added (ascending when rows are
        added with increasing indices)."""
        self._points = np.zeros((0, 0))

    def add(self, index: int, loss: np.ndarray) -> bool:
        """Add row ``index`` with losses ``loss``; True when it is on the front (the rows it
        dominates leave it)."""
        loss = np.asarray(loss, dtype=float)
        if not self.rows:
            self.rows, self._points = [index], loss[None, :].copy()
            return True
        points = self._points
        if np.any(np.all(points <= loss, axis=1) & np.any(points < loss, axis=1)):
            return False
        keep = ~(np.all(loss <= points, axis=1) & np.any(loss < points, axis=1))
        self.rows = [r for r, k in zip(self.rows, keep.tolist(), strict=True) if k] + [index]
        self._points = np.vstack([points[keep], loss[None, :]])
        return True


def best_row(loss: np.ndarray, j: int) -> int:
    """Row of ``loss`` (minimised) best in objective ``j``, ties broken by the others in order:
    that objective's extreme point of the front."""
    others = [loss[:, c] for c in range(loss.shape[1]) if c != j][::-1]
    return int(np.lexsort([*others, loss[:, j]])[0])


def non_dominated(loss: np.ndarray) -> list[int]:
    """Indices of the non-dominated rows of ``loss`` (minimisation), in lexicographic order of
    their rows (equal rows in index order)."""
    rows = np.flatnonzero(pareto_mask(loss))
    order = np.lexsort(loss[rows].T[::-1])
    return [int(i) for i in rows[order]]


def is_feasible(trial: FrozenTrial) -> bool:
    """All constraint values <= 0 (the model's and the objective set's)."""
    return all(v <= 0 for v in trial.constraints.values())


def feasible_trials(study: optuna.Study) -> list[FrozenTrial]:
    """The completed trials that meet every constraint."""
    return [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
            if is_feasible(t)]


def study_losses(study: optuna.Study, trials: list[FrozenTrial]) -> np.ndarray:
    """The objective values of ``trials`` as losses, by the study's directions."""
    return losses_of([t.values for t in trials], [d.name for d in study.directions])


def pareto_trials(study: optuna.Study, feasible: list[FrozenTrial] | None = None) -> list[FrozenTrial]:
    """The feasible non-dominated trials (the front), sorted by the first objective."""
    if feasible is None:
        feasible = feasible_trials(study)
    if not feasible:
        return []
    return [feasible[i] for i in non_dominated(study_losses(study, feasible))]


def loss_box(loss: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The hypervolume box of loss rows: their ideal point (best value of each objective) and
    their nadir (worst value) pushed out by 10% of the range, so that the extreme designs still
    add volume; a zero range is widened by a relative 1e-9 so that the box never collapses."""
    ideal = loss.min(axis=0)
    worst = loss.max(axis=0)
    nadir: np.ndarray = worst + 0.1 * np.maximum(worst - ideal, np.abs(worst) * 1e-9 + 1e-12)
    return ideal, nadir


def reference_point(study: optuna.Study, trials: list[FrozenTrial]) -> np.ndarray:
    """Hypervolume reference: the worst feasible value of each objective, pushed 10% further."""
    return loss_box(study_losses(study, trials))[1]


def hypervolume(study: optuna.Study, trials: list[FrozenTrial],
                ref: np.ndarray | None = None, lo: np.ndarray | None = None) -> float:
    """Hypervolume of ``trials`` (minimisation form) with objectives scaled to [0, 1] between
    ``lo`` (default: their best values) and ``ref`` (default :func:`reference_point`); fix both to
    compare subsets of one study."""
    if not trials:
        return 0.0
    loss = study_losses(study, trials)
    ref = reference_point(study, trials) if ref is None else ref
    lo = loss.min(axis=0) if lo is None else lo
    scale = np.where(ref - lo > 0, ref - lo, 1.0)
    points = (loss - lo) / scale
    inside = np.all(points < 1.0, axis=1)
    if not inside.any():
        return 0.0
    return compute_hypervolume(points[inside], np.ones(loss.shape[1]))
