"""What a buyer comparing accelerator generations acts on: the ratio between two measured systems
on the same job, and the error of a fit that never saw a generation.

A buyer choosing between generations (A100 or H100, H100 or B200) reads dse's ratio of their
throughputs on one job; a model that is 10% slow on both is right about the choice, one that is
10% fast on one and 10% slow on the other misleads by 22%. So beside each point's error,
``dse validate`` reports (:func:`ratio_report`):

- for every pair of measured systems on the same job (workload, precision and global batch: the
  same samples at the same batch, so the same convergence), the predicted ratio over the measured
  ratio, ``q = (predicted_a / predicted_b) / (measured_a / measured_b)``; its error is
  ``max(q, 1/q) - 1`` (the same whichever system is named first), reported as the median and the
  worst pair of each workload and over all pairs;
- the Spearman rank correlation of predicted and measured throughput over each workload's points
  (the order a buyer would rank them in).

And by generation (:class:`GenerationHoldout`): the calibration refitted without every point of
one architecture (the catalog's ``architecture``: volta, ampere, ada, hopper...), and those points
predicted by it, as dse predicts a generation nobody has measured yet (a software family measured
only on that generation runs at the reference family's speed there, as a new design does). The
intervals of a design on a generation no measurement has are built from the same holdouts, made
and kept by the ensemble (:func:`dse.calibration.ensemble.with_class_holdouts`, architecture
axis); these are refitted here for the report (the two fits are the same computation, run twice).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.calibration.measurements import Measurement
from dse.model.catalog import load_catalog

RATIO_KEY = ("workload", "precision", "global_batch")
"""What two measurements must share for their ratio to be a buyer's comparison: the same job."""


def ratio_error_pct(q: float) -> float:
    """The error of a predicted-over-measured ratio ``q``, percent: ``max(q, 1/q) - 1``, so a pair
    has one error whichever of its systems is named first."""
    return (max(q, 1.0 / q) - 1.0) * 100.0


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman rank correlation of ``a`` and ``b`` (average ranks for ties; 0 without spread)."""

    def ranks(x: Sequence[float]) -> np.ndarray:
        arr = np.asarray(x, dtype=float)
        r = np.empty(len(arr))
        r[arr.argsort()] = np.arange(len(arr), dtype=float)
        for v in np.unique(arr):
            tied = arr == v
            r[tied] = r[tied].mean()
        return r

    ra, rb = ranks(a), ranks(b)
    ra -= ra.mean()
    rb -= rb.mean()
    denom = math.sqrt(float(ra @ ra) * float(rb @ rb))
    return float(ra @ rb) / denom if denom else 0.0


@dataclass(frozen=True, slots=True)
class PairRatio:
    """Two measured systems on the same job, with both ratios."""

    a: str
    b: str
    """The measurements' ids."""
    workload: str
    measured: float
    """``measured_a / measured_b``."""
    predicted: float
    """``predicted_a / predicted_b``."""

    @property
    def q(self) -> float:
        """Predicted ratio over measured ratio (1: the comparison is right)."""
        return self.predicted / self.measured

    @property
    def error_pct(self) -> float:
        """:func:`ratio_error_pct` of :attr:`q`."""
        return ratio_error_pct(self.q)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (one entry of ``pairs``)."""
        return {"a": self.a, "b": self.b, "workload": self.workload, "measured_ratio": self.measured,
                "predicted_ratio": self.predicted, "ratio_error_pct": self.error_pct}


@dataclass(frozen=True, slots=True)
class RatioReport:
    """Every pair of measured systems on the same job (:data:`RATIO_KEY`) and each workload's
    rank correlation."""

    pairs: tuple[PairRatio, ...]
    spearman_by_workload: tuple[tuple[str, float, int], ...]
    """(workload, Spearman of predicted and measured throughput, points) per workload with at
    least two points."""

    @property
    def median_pct(self) -> float | None:
        """Median ratio error over every pair, percent (None without pairs)."""
        return float(np.median([p.error_pct for p in self.pairs])) if self.pairs else None

    @property
    def worst(self) -> PairRatio | None:
        """The pair with the largest ratio error."""
        return max(self.pairs, key=lambda p: p.error_pct) if self.pairs else None

    def by_workload(self) -> dict[str, dict[str, Any]]:
        """Each workload's pairs: count, median and worst ratio error, the worst pair, and its
        Spearman (workloads with points but no pair appear with their Spearman alone)."""
        out: dict[str, dict[str, Any]] = {}
        for workload, rho, n in self.spearman_by_workload:
            pairs = [p for p in self.pairs if p.workload == workload]
            worst = max(pairs, key=lambda p: p.error_pct) if pairs else None
            out[workload] = {
                "points": n, "pairs": len(pairs), "spearman": rho,
                "median_ratio_error_pct": float(np.median([p.error_pct for p in pairs])) if pairs else None,
                "max_ratio_error_pct": worst.error_pct if worst else None,
                "worst_pair": [worst.a, worst.b] if worst else None}
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the ``ratios`` entry of ``dse validate --json``)."""
        worst = self.worst
        return {"pairs_compared": len(self.pairs), "median_ratio_error_pct": self.median_pct,
                "max_ratio_error_pct": worst.error_pct if worst else None,
                "worst_pair": [worst.a, worst.b] if worst else None,
                "by_workload": self.by_workload(), "pairs": [p.to_dict() for p in self.pairs]}


def ratio_report(points: Sequence[tuple[Measurement, float]]) -> RatioReport:
    """:class:`RatioReport` of ``(measurement, predicted samples/s)`` pairs: every two points on
    the same job (:data:`RATIO_KEY`), in the order given."""
    jobs: dict[tuple[Any, ...], list[tuple[Measurement, float]]] = {}
    workloads: dict[str, list[tuple[float, float]]] = {}
    for m, p in points:
        jobs.setdefault(tuple(getattr(m, k) for k in RATIO_KEY), []).append((m, p))
        workloads.setdefault(m.workload, []).append((p, m.samples_per_s))
    pairs = tuple(PairRatio(a.id, b.id, a.workload, a.samples_per_s / b.samples_per_s, pa / pb)
                  for group in jobs.values() for (a, pa), (b, pb) in itertools.combinations(group, 2))
    rho = tuple((w, spearman([p for p, _ in v], [m for _, m in v]), len(v))
                for w, v in workloads.items() if len(v) >= 2)
    return RatioReport(pairs, rho)


def architecture_of(m: Measurement) -> str:
    """The architecture generation of the accelerator ``m`` ran on (the catalog's
    ``architecture``; ``not stated`` when empty)."""
    return load_catalog().accelerator[m.accelerator].architecture or "not stated"


@dataclass(frozen=True, slots=True)
class GenerationHoldout:
    """One architecture left out of the fit: its points predicted by the refit on the others."""

    architecture: str
    points: tuple[tuple[Measurement, float], ...]
    """Each left-out measurement with its prediction by the refit that saw none of them."""

    @property
    def errors(self) -> list[float]:
        """|error| of each point, percent."""
        return [abs(p - m.samples_per_s) / m.samples_per_s * 100.0 for m, p in self.points]

    @property
    def mean_log_error(self) -> float:
        """Mean ``log predicted - log measured``: above 0, the generation is over-rated by a fit
        that never saw it."""
        return float(np.mean([math.log(p / m.samples_per_s) for m, p in self.points]))

    def to_dict(self) -> dict[str, Any]:
        """JSON form (one entry of ``leave_one_generation_out``)."""
        e = self.errors
        return {"architecture": self.architecture, "points": len(e),
                "median_abs_pct_error": float(np.median(e)), "max_abs_pct_error": max(e),
                "mean_log_error": self.mean_log_error,
                "ratios": ratio_report(self.points).to_dict(),
                "predictions": [{"id": m.id, "measured": m.samples_per_s, "predicted": p}
                                for m, p in self.points]}


def generations(measurements: Sequence[Measurement]) -> list[str]:
    """The architectures of ``measurements`` that can be left out whole: every one, when there
    are at least two (with one, leaving it out leaves nothing to fit)."""
    found = sorted({architecture_of(m) for m in measurements})
    return found if len(found) >= 2 else []
