"""A convergence figure that does not move with what was found.

The hypervolume of a front measured in the front's own range reads ~0.98 for any front, good or
poor. A study created with a budget of at least :data:`REFERENCE_MIN_BUDGET` on a space whose
coarse grid (:func:`dse.search.algorithms.sweep.coarse_grid`, at most :data:`REFERENCE_MAX_DESIGNS` designs)
is small enough is given a fixed box when it is created (``dse:reference``): the exact front of
the coarse-to-fine sweep of :mod:`dse.search.algorithms.refine` (that coarse grid, refined along its front),
its ideal point and its nadir pushed 10% out. From then on the study's hypervolume is that of its
feasible front in this box divided by the sweep front's (1.0: as good as the sweep; above 1:
better), and whether the front is still moving is the hypervolume gained over the last
:func:`window` completed trials. Without a reference (a small budget, a huge space) the figure is
the old one, in the front's own range, and says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import optuna
from optuna.trial import FrozenTrial

from dse.search._optuna import compute_hypervolume
from dse.search.algorithms.pareto import hypervolume, loss_box, study_losses
from dse.search.study.attribute_keys import REFERENCE_KEY

REFERENCE_MIN_BUDGET = 50
"""Studies with smaller budgets get no sweep (it would cost more than the study)."""
REFERENCE_MAX_DESIGNS = 20_000
"""The largest coarse grid swept when a study is created (seconds on one core; the refinement
of :mod:`dse.search.algorithms.refine` adds at most as many designs again)."""
MOVING_GAIN = 0.005
"""A front whose hypervolume rose by more than this over the last window is still moving."""
FLAT_WIDTH = 1e-6
"""A box narrower than this share of its values in some objective has no width there: its front
held a single value of that objective (:func:`~dse.search.algorithms.pareto.loss_box` widens a
zero range by 1e-9 of it). Any design a little better than that value then scores beyond all
measure: a single-design reference front, a box 5e-5 wide, gave "hypervolume 1255068.997"
(issue 42), so such a box is not used."""
OWN_RANGE = "own range"
"""The reference label of a figure in the front's own range (no fixed box); a label that starts
with it may say why a stored box is not used."""


@dataclass(frozen=True, slots=True)
class Reference:
    """A fixed box: losses scaled to [0, 1] between ``ideal`` and ``nadir``."""

    ideal: np.ndarray
    nadir: np.ndarray
    hypervolume: float
    """Hypervolume of the reference front (the sweep's) in the box."""
    designs: int
    method: str

    def to_json(self) -> str:
        """The ``dse:reference`` attribute."""
        return json.dumps({"ideal": self.ideal.tolist(), "nadir": self.nadir.tolist(),
                           "hypervolume": self.hypervolume, "designs": self.designs,
                           "method": self.method})

    def volume(self, loss: np.ndarray) -> float:
        """Hypervolume of ``loss`` rows in the box (rows beyond the nadir count nothing; rows
        beyond the ideal count more than the box)."""
        if len(loss) == 0:
            return 0.0
        scale = np.where(self.nadir - self.ideal > 0, self.nadir - self.ideal, 1.0)
        points = (loss - self.ideal) / scale
        points = points[np.all(points < 1.0, axis=1)]
        if len(points) == 0:
            return 0.0
        return float(compute_hypervolume(points, np.ones(loss.shape[1])))

    def flat(self) -> int | None:
        """The first objective (from 0) in which the box has no width (:data:`FLAT_WIDTH`), or
        ``None``: only a box of width in every objective measures a hypervolume."""
        width = self.nadir - self.ideal
        scale = np.maximum(np.maximum(np.abs(self.ideal), np.abs(self.nadir)), 1e-12)
        found = np.flatnonzero(width <= FLAT_WIDTH * scale)
        return int(found[0]) if len(found) else None


def reference_from_front(front_losses: np.ndarray, designs: int, method: str) -> Reference:
    """The box of a reference front (losses): its ideal point and its nadir pushed 10% out."""
    ideal, nadir = loss_box(front_losses)
    ref = Reference(ideal, nadir, 0.0, designs, method)
    return Reference(ideal, nadir, ref.volume(front_losses), designs, method)


def study_reference(study: optuna.Study) -> Reference | None:
    """The study's fixed box, if it has one with width in every objective (else the study is
    measured in its own range, and :func:`convergence`'s label says why)."""
    ref = stored_reference(study)
    return ref if ref is not None and ref.flat() is None else None


def stored_reference(study: optuna.Study) -> Reference | None:
    """The box stored when the study was created, as it is (perhaps flat)."""
    raw = study.user_attrs.get(REFERENCE_KEY)
    if not raw:
        return None
    data: dict[str, Any] = json.loads(raw)
    return Reference(np.array(data["ideal"], dtype=float), np.array(data["nadir"], dtype=float),
                     float(data["hypervolume"]), int(data["designs"]), str(data["method"]))


def window(complete: int) -> int:
    """Completed trials over which the recent gain is measured: a tenth of them, 20 to 200."""
    return int(min(200, max(20, complete // 10)))


@dataclass(frozen=True, slots=True)
class Convergence:
    """The study's hypervolume and how it moved lately."""

    hypervolume: float
    """Against the reference front (``reference`` set) or in the front's own range."""
    reference: str
    """What ``hypervolume`` is relative to: ``coarse-to-fine sweep of N designs`` (``coarse sweep
    of N designs`` for studies created before it) or ``own range`` (followed by why a stored box
    is not used, when one is flat: :func:`is_own_range`)."""
    gained: float
    """Hypervolume gained over the last ``window`` completed trials (same scale)."""
    window: int
    moving: bool
    """``gained`` above :data:`MOVING_GAIN`: the front is still moving."""


def convergence(study: optuna.Study, feasible: list[FrozenTrial], complete: int) -> Convergence:
    """:class:`Convergence` of the feasible completed trials of ``study`` (``complete`` trials
    completed in all)."""
    w = window(complete)
    stored = stored_reference(study)
    ref = stored if stored is not None and stored.flat() is None else None
    if not feasible:
        return Convergence(0.0, _label(stored), 0.0, w, False)
    last = max(t.number for t in feasible)
    numbers = np.array([t.number for t in feasible])
    # The trial number `w` completed trials back (numbers skip pruned repeats; close enough).
    cut = last - w
    older = [feasible[i] for i in np.flatnonzero(numbers <= cut)]
    if ref is not None:
        loss = study_losses(study, feasible)
        now = ref.volume(loss) / ref.hypervolume if ref.hypervolume > 0 else 0.0
        before = (ref.volume(study_losses(study, older)) / ref.hypervolume
                  if older and ref.hypervolume > 0 else 0.0)
    else:
        now = hypervolume(study, feasible)
        best, box = loss_box(study_losses(study, feasible))
        before = hypervolume(study, older, box, best) if older else 0.0
    gained = now - before
    return Convergence(now, _label(stored), gained, w, gained > MOVING_GAIN)


def _label(stored: Reference | None) -> str:
    """What a study's figure is relative to, given its stored box (see :class:`Convergence`)."""
    if stored is None:
        return OWN_RANGE
    flat = stored.flat()
    if flat is None:
        return f"{stored.method} of {stored.designs:,} designs"
    return (f"{OWN_RANGE} (no fixed reference: the front of the {stored.method} of "
            f"{stored.designs:,} designs has a single value of objective {flat + 1}, a box of no "
            "width)")


def is_own_range(reference: str) -> bool:
    """Whether a :class:`Convergence` label is the front's own range (no fixed box used)."""
    return reference.startswith(OWN_RANGE)


def own_range_reason(reference: str) -> str:
    """Why a :class:`Convergence` label in the front's own range uses no fixed box (empty when the
    study never fixed one)."""
    return reference.removeprefix(OWN_RANGE).strip(" ()")


__all__ = ["OWN_RANGE", "REFERENCE_KEY", "Convergence", "Reference", "convergence", "is_own_range",
           "own_range_reason",
           "reference_from_front", "stored_reference", "study_reference", "window"]
