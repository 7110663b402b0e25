"""Two designs side by side (``dse compare``): their metrics, the critical-path seconds of every
stage, what binds each, and which stage made twice as fast would shorten each step most
(:mod:`dse.model.whatif`). Pure: computed from two :class:`~dse.model.evaluate.Evaluation`; the
CLI only prints it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dse.model.evaluate import Evaluation
from dse.model.metrics import METRICS
from dse.model.timing import STAGES
from dse.model.whatif import what_if

COMPARED_METRICS = tuple(m.name for m in METRICS if m.compared)
"""Metrics a comparison lists, in the registry's order (:attr:`~dse.model.metrics.Metric.compared`)."""


@dataclass(frozen=True, slots=True)
class Row:
    """One compared quantity: its name and the value of each design."""

    name: str
    a: float
    b: float

    @property
    def change(self) -> float | None:
        """``b`` relative to ``a`` (0.12: 12% more); None when ``a`` is 0 or not finite."""
        if not self.a or self.a != self.a or abs(self.a) == float("inf"):
            return None
        return self.b / self.a - 1.0


@dataclass(frozen=True, slots=True)
class DesignComparison:
    """Designs ``a`` and ``b`` side by side."""

    labels: tuple[str, str]
    metrics: tuple[Row, ...]
    stages_s: tuple[Row, ...]
    """Critical-path seconds per stage (they add up to each step time)."""
    bottlenecks: tuple[str, str]
    feasible: tuple[bool, bool]
    what_if_s: tuple[dict[str, float], dict[str, float]]
    """Each design's step seconds were one stage twice as fast."""

    def best_upgrade(self, side: int) -> tuple[str, float]:
        """The stage whose 2x speed-up shortens design ``side``'s step most, and that step (s)."""
        options = self.what_if_s[side]
        stage = min(options, key=options.__getitem__)
        return stage, options[stage]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``dse compare --json``)."""
        return {
            "designs": list(self.labels),
            "feasible": list(self.feasible),
            "metrics": {r.name: [r.a, r.b] for r in self.metrics},
            "breakdown_s": {r.name: [r.a, r.b] for r in self.stages_s},
            "bottleneck": list(self.bottlenecks),
            "step_s_if_2x_faster": {stage: [self.what_if_s[0][stage], self.what_if_s[1][stage]]
                                    for stage in STAGES},
        }


def compare(a: Evaluation, b: Evaluation, labels: tuple[str, str]) -> DesignComparison:
    """``a`` and ``b`` side by side, named ``labels``."""
    ma, mb = a.metrics(), b.metrics()
    return DesignComparison(
        labels=labels,
        metrics=tuple(Row(m, float(ma[m]), float(mb[m])) for m in COMPARED_METRICS),
        stages_s=tuple(Row(s, a.breakdown_s[s], b.breakdown_s[s]) for s in STAGES),
        bottlenecks=(a.bottleneck, b.bottleneck),
        feasible=(a.feasible, b.feasible),
        what_if_s=(what_if(a), what_if(b)),
    )
