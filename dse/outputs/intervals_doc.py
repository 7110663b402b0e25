"""The section "Prediction intervals" of ``docs/validation.md`` (and of ``dse validate``): how the
calibration ensemble makes its 80% intervals, their leave-one-out coverage computed from the
ensemble's members, and the widths of a measured and of extrapolated designs with what drives
each (:mod:`dse.calibration.ensemble`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dse.calibration.ensemble import (
    CalibrationEnsemble,
    ClassCoverage,
    Coverage,
    PredictionInterval,
    prediction_interval,
)
from dse.calibration.fit import EFFICIENCIES, at_bound
from dse.calibration.regime import AXES
from dse.model.evaluate import evaluate
from dse.model.parameters import Calibration
from dse.model.system import load_system
from dse.model.workload import load_workload

EXAMPLES: tuple[tuple[str, str, str, tuple[tuple[str, Any], ...]], ...] = (
    ("DGX H100, 1 node (measured, MLPerf v3.x)", "mlperf-dlrm-dcnv2", "dgx-h100", ()),
    ("DGX H100, 16 nodes (measured, MLPerf v3.x)", "mlperf-dlrm-dcnv2", "dgx-h100", (("nodes", 16),)),
    ("B300 in a DGX B200 chassis, 16 nodes (128 GPUs; 2026 part, extrapolated)", "mlperf-dlrm-dcnv2",
     "dgx-b200", (("node.accelerator", "b300-sxm-288gb"), ("nodes", 16))),
    ("GB300 NVL72 rack, 16 compute trays (64 GPUs; 2026 part, extrapolated)", "mlperf-dlrm-dcnv2",
     "gb200-nvl72",
     (("node.accelerator", "gb300"), ("nodes", 16))),
    ("AMD MI355X x8, 1 node (vendor never measured)", "mlperf-dlrm-dcnv2", "mi355x-x8", ()),
    ("Intel Gaudi 3 x8, 1 node (vendor never measured)", "mlperf-dlrm-dcnv2", "gaudi3-x8", ()),
    ("DGX H100, 1 node, Zion 2019 tables (part in host memory)", "zion-2019", "dgx-h100", ()),
)
"""Designs whose intervals the page shows: two measured, two a 2026 accelerator at 16 nodes, two
of vendors never measured and one with tables in host memory."""
COVERAGE_TARGET = (0.7, 0.9)
"""An 80% interval must hold 70-90% of the measured values in leave-one-out (issue 14)."""


@dataclass(frozen=True, slots=True)
class Example:
    """One example design's interval and its bound stage."""

    label: str
    bottleneck: str
    interval: PredictionInterval


def examples(ens: CalibrationEnsemble, calib: Calibration) -> list[Example]:
    """The :data:`EXAMPLES` scored with ``calib`` and their intervals from ``ens``."""
    out = []
    for label, workload, system, overrides in EXAMPLES:
        ev = evaluate(load_workload(workload), load_system(system, overrides), calib)
        iv = prediction_interval(ev, ens, calib)
        if iv is not None:
            out.append(Example(label, ev.bottleneck, iv))
    return out


def coverage_line(cov: Coverage) -> str:
    """The headline: leave-one-out coverage against its target."""
    lo, hi = COVERAGE_TARGET
    met = "met" if lo <= cov.share <= hi else "NOT met"
    return (f"leave-one-out coverage of the {cov.level:.0%} prediction intervals: {cov.covered} of "
            f"{cov.points} measured values inside ({cov.share:.0%}; target {lo:.0%}-{hi:.0%}: {met}), "
            f"median width {cov.median_width_pct:.0f}% of the prediction")


def _span(first: float, last: float) -> str:
    """``first`` to ``last`` as percentages, one figure when they print alike."""
    a, b = _pct(first), _pct(last)
    return a if a == b else f"{a} to {b}"


def _pct(x: float) -> str:
    return f"{x - 1:+.0%}"


def interval_lines(ens: CalibrationEnsemble, cov: Coverage, shown: Sequence[Example],
                   loo_median_pct: float | None = None, forward_median_pct: float | None = None,
                   calibration: Calibration | None = None) -> list[str]:
    """The Markdown section (``loo_median_pct`` and ``forward_median_pct``: the median errors of
    the leave-one-out and forward validations, to say how far the intervals' assumption holds)."""
    upper = [p for p in at_bound(calibration) if p in EFFICIENCIES] if calibration else []
    bound = (f"It is one-sided where the fit sits at the top of a range ({', '.join(upper)} at 1.0 "
             "can only come down, so a design bound by what they time has a spread that points "
             "down). " if upper else "")
    if loo_median_pct is not None and forward_median_pct is not None:
        forward = (f" (median error {forward_median_pct:.1f}% on the later points against "
                   f"{loo_median_pct:.1f}% in leave-one-out" + (
                       ", so intervals of designs far from any measurement are optimistic)"
                       if forward_median_pct > loo_median_pct else ")"))
    else:
        forward = ""
    inside = [e for e in shown if not e.interval.outside]
    lows = [e.interval.relative[0] for e in inside] or [1.0]
    highs = [e.interval.relative[1] for e in inside] or [1.0]
    span = f"{_span(max(lows), min(lows))} below, {_span(min(highs), max(highs))} above"
    rows = [f"| {e.label} | {e.bottleneck} | {e.interval.throughput_samples_per_s / 1e6:.1f} | "
            f"{_pct(e.interval.relative[0])} to {_pct(e.interval.relative[1])} | "
            f"{_pct(e.interval.spread_low / e.interval.throughput_samples_per_s)} to "
            f"{_pct(e.interval.spread_high / e.interval.throughput_samples_per_s)} | "
            f"{'; '.join(r.split(':')[0] for r in e.interval.outside) or 'inside'} |" for e in shown]
    return [
        "## Prediction intervals",
        "",
        f"Built by `dse calibrate --ensemble {len(ens.bootstrap)} --seed {ens.seed}` "
        "(`dse/data/calibration_ensemble.json`, versioned with the calibration: an ensemble of "
        "another calibration is refused and no interval is shown). The ensemble holds "
        f"{len(ens.bootstrap)} refits of the calibration on bootstrap resamples of the "
        f"measurements and the {len(ens.leave_one_out)} leave-one-out refits with each left-out "
        "point's log error. An interval at a design is the prediction times the 10% and 90% "
        "quantiles of (bootstrap member's log deviation there + a leave-one-out residual) over "
        "every pair: the parameter spread convolved with the model's own out-of-sample error, as "
        "the jackknife+ does (Barber et al., \"Predictive inference with the jackknife+\", Annals "
        "of Statistics 2021). The point estimate is always inside. Every figure that scales with "
        "throughput (step time, cost and energy per sample, epoch time) carries the same "
        "relative interval; capex and power do not depend on the calibration.",
        "",
        f"- {coverage_line(cov)}",
        f"- the bootstrap spread alone covers {cov.spread_covered} of {cov.points} "
        f"({cov.spread_covered / cov.points:.0%}, median width {cov.median_spread_width_pct:.0f}%): "
        "parameter uncertainty is the smaller part of the model's error, so intervals from it "
        "alone would be too narrow",
        "",
        "Coverage is computed from the ensemble, not assumed: each measurement is predicted by "
        "the fit that left it out, its spread is that of the bootstrap members whose resample "
        "never drew it (about a third), taken around that fit, and its residuals are the other "
        f"{cov.points - 1} points' (never its own). `dse validate` recomputes it; the tests "
        "check the file states what its members give.",
        "",
        "| design | bound by | predicted M samples/s | 80% interval | bootstrap spread alone | "
        "outside the measured regime on |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        "What drives the widths of designs inside the measured regime: the leave-one-out "
        "residuals, almost everywhere. They are the same for every such design, so measured and "
        "extrapolated designs get intervals of similar "
        f"width (here {span}); the bootstrap spread adds a few percent, more where a "
        "design leans on a parameter few points pin down (dense efficiencies for tensor-core "
        f"bound single nodes; fabric and HBM efficiency for scale-out). {bound}The intervals "
        "assume the model errs on a new design as it errs on the measured ones; the forward validation "
        f"is the check of that assumption for hardware the fit has not seen{forward}; "
        "designs outside the measured regime get the wider intervals of the next section.",
        "",
        *regime_lines(ens),
    ]


def regime_lines(ens: CalibrationEnsemble) -> list[str]:
    """The subsection on designs outside the measured regime: the rule, the regime and the
    leave-one-class-out coverage of each class (empty for an ensemble without them)."""
    if ens.regime is None:
        return []
    regime = ens.regime
    single = [a for a in AXES if len(regime.classes(a)) < 2]
    return [
        *_regime_intro(ens),
        *_regime_rule(ens.outside_residuals().size // 2),
        "**Judged by leave-one-class-out.** Each class left out is predicted by the fit without "
        "it, with the widened interval built from the pooled residuals of the other classes of "
        "its axis (every axis's where it is alone on its own) and the "
        "leave-one-out residuals of the points outside the class (never its own points'), and "
        "the bootstrap members' spread at each point (members that saw "
        "the class: the spread is the smaller part of every interval). Coverage of the 80% "
        "intervals:",
        "",
        "| axis | class left out | points | inside | median width | 70%-90% |",
        "|---|---|---|---|---|---|",
        *_class_rows(ens),
        "",
        *_axis_lines(ens),
        f"- {', '.join(single) or 'no axis'}: one measured class only, so no class can be left "
        "out and the widening there cannot be judged by these data; a design outside only on such "
        "axes gets every holdout's residuals, the best evidence the data hold on an unseen class, "
        "and no claim of coverage; an AMD or Intel part, outside on vendor and architecture, "
        "takes the architecture holdouts'",
        "- per class, 70%-90% cannot hold for every class under any one rule: a class whose "
        "points share one bias (Hopper, HugeCTR 2023.04: residuals within a few percent of "
        "each other) is covered whole or not at all, and a class of 2 points can only score "
        "0%, 50% or 100%",
        "- every measured point is inside the regime, so the overall 70-90% check is the "
        "leave-one-out coverage above, unchanged by the rule",
        "",
    ]


def _class_rows(ens: CalibrationEnsemble) -> list[str]:
    """One table row per class left out: its points, how many its interval covers, its median
    width and whether its share is within the target."""
    return [f"| {c.axis} | {c.value} | {c.points} | {c.covered} ({c.share:.0%}) | "
            f"{c.median_width_pct:.0f}% | {'yes' if _met(c.share) else 'NO'} |" for c in ens.class_coverage]


def _axis_lines(ens: CalibrationEnsemble) -> list[str]:
    """One bullet per axis: the points covered when their class is left out, over all its
    classes, and how many classes are within the target."""
    lines = []
    for axis in dict.fromkeys(c.axis for c in ens.class_coverage):
        got = [c for c in ens.class_coverage if c.axis == axis]
        covered, points = sum(c.covered for c in got), sum(c.points for c in got)
        met = sum(_met(c.share) for c in got)
        lines.append(f"- {axis}: {covered} of {points} points covered when their class is left "
                     f"out ({covered / points:.0%}; target 70%-90%: "
                     f"{'met' if _met(covered / points) else 'NOT met'}); {met} of {len(got)} "
                     "classes inside 70%-90%")
    return lines


def _regime_intro(ens: CalibrationEnsemble) -> list[str]:
    """The subsection's heading, what outside the measured regime means (the four axes, this
    ensemble's classes on each) and why nodes without accelerators take the CPU class's
    interval instead."""
    assert ens.regime is not None
    regime = ens.regime
    return [
        "### Outside the measured regime",
        "",
        "A design lies outside the measured regime (`dse.calibration.regime`) when, on any of four "
        "axes, it is in a class no measurement is in: **placement** (tables wholly in HBM, or any "
        "in host memory), accelerator **vendor**, accelerator **architecture** (the catalog's "
        "`architecture`; not stated counts as never measured) and **software** (a design is "
        "scored at the reference family's speed with its own `[software]` layout, inside when a "
        "measured family used that layout). The measured regime of this ensemble: "
        + "; ".join(f"{a} {', '.join(regime.classes(a))}" for a in AXES)
        + ".",
        "",
        "**Nodes without accelerators** do not use this ensemble: their efficiencies are fitted "
        "apart, on the CPU class, so the accelerator fit's members and residuals say nothing of "
        "them. Their interval is the 10%-90% quantiles of the CPU class's leave-one-out log "
        "residuals (`dse.calibration.ensemble.cpu_prediction_interval`; the class's section "
        "below gives them), and a CPU the class never ran on takes the class's largest residual "
        "on each side when that is further, which `dse evaluate` says (\"cpu: ... was never "
        "measured in the CPU class\").",
        "",
    ]


def _regime_rule(pooled: int) -> list[str]:
    """The paragraph on how an interval outside the regime is built, with the number of
    ``pooled`` class-out residuals (each taken with both signs)."""
    return [
        "**The rule.** Such a design's interval is built as any other's (the bootstrap spread at the "
        "design convolved with a residual distribution) once with the leave-one-out residuals and "
        "once with the leave-one-class-out ones, and each bound is the further of the two, so an "
        "interval outside the regime is never narrower than inside it on either side (calibration "
        "2026.12-5 made that a rule: with the class-out residuals alone, the lower bound of a "
        "design outside came out 1 point narrower than inside). The class-out residuals: every "
        "class of an axis with at least two measured classes is left out of the fit whole "
        "(refitted from the calibration, unseen software at the reference family's speed), and "
        "its points' log errors under that fit are pooled over the classes of the axes the "
        "design is outside on, each taken with both signs: a generation no measurement has "
        "(Blackwell, CDNA, Gaudi) takes the errors of the fit on each measured generation it "
        "never saw (the architecture holdouts, leave-one-generation-out, as vendors quote a new "
        "generation against the last), not those of an unseen software family (issue 40); a "
        "design outside only on an axis with one measured class (placement, vendor) takes every "
        f"holdout's ({pooled} residuals). They are the errors the model makes on a "
        "class it never saw, which "
        "is the design's case; a left-out class errs mostly one way (Hopper over, Volta "
        "under), and which way a class never measured will err is not known from the classes "
        "that happened to be measured. (Both were measured, on calibration 2026.12-3's 58 points, "
        "with the rule of class-out residuals alone: with the signs as they fell the "
        "pooled rule covers 43 of 58 points when their architecture is left out and 44 of 49 "
        "when their software family is, 1 of the 10 classes inside 70%-90%; with both signs "
        "3 of 10; the figures below are this ensemble's, with the rule as stated.) The "
        "reference software family is not left out: it defines the speed every design is "
        "scored at, and without it the other families' factors and the efficiencies trade "
        "freely. `dse evaluate` (text, and `outside_measured_regime` in `--json`) and the report's "
        "robust-front table say when a design is outside and on which axis; the reasons are "
        "computed only with the interval, never in a search's evaluations.",
        "",
    ]


def _met(share: float) -> bool:
    lo, hi = COVERAGE_TARGET
    return lo <= share <= hi


def intervals_dict(cov: Coverage, shown: Sequence[Example],
                   classes: Sequence[ClassCoverage] = ()) -> dict[str, Any]:
    """The ``intervals`` entry of ``dse validate --json``."""
    return {
        "class_coverage": [{"axis": c.axis, "class": c.value, "covered": c.covered,
                            "points": c.points, "coverage": c.share,
                            "median_width_pct": c.median_width_pct} for c in classes],
        "level": cov.level, "covered": cov.covered, "points": cov.points, "coverage": cov.share,
        "median_width_pct": cov.median_width_pct, "spread_covered": cov.spread_covered,
        "median_spread_width_pct": cov.median_spread_width_pct,
        "examples": [{"design": e.label, "bottleneck": e.bottleneck,
                      "predicted": e.interval.throughput_samples_per_s,
                      "interval": [e.interval.throughput_low, e.interval.throughput_high],
                      "spread": [e.interval.spread_low, e.interval.spread_high],
                      "outside_measured_regime": list(e.interval.outside)} for e in shown],
    }
