"""The calibration ensemble: the model's uncertainty, from the data, and the 80% prediction
intervals built from it.

An ensemble belongs to one calibration (``dse/data/calibration.toml``) and holds:

- **bootstrap members**: the calibration refitted (from itself, :func:`dse.calibration.fit.fit`) on
  ``B`` resamples of the measurements drawn with replacement. Their spread at a design is the
  *parameter* uncertainty there: how far the data let the efficiencies and overheads move. It is
  small near the measured systems and grows with extrapolation (a 2026 accelerator at 16 nodes
  leans on the fabric and network efficiencies, which few points pin down).
- **leave-one-out members**: the calibration refitted without each measurement, and that
  measurement's log error under the fit that never saw it (``log measured - log predicted``).
  These residuals are the *model-form* error: what the equations get wrong even with well-fitted
  parameters (a placement the measured software did differently, a kernel the model does not
  time).

Parameter spread alone under-covers (its 80% band holds well under half of the measurements in
leave-one-out), so an interval combines both, in the manner of the jackknife+ and split-conformal
intervals (Barber, Candes, Ramdas, Tibshirani, "Predictive inference with the jackknife+", Annals
of Statistics 49(1), 2021): the predictive distribution of ``log throughput`` at a design is the
point prediction plus ``d_b + r_j`` over every pair of a bootstrap deviation ``d_b`` (member ``b``'s
log throughput minus the calibration's) and a leave-one-out residual ``r_j``, i.e. the two
empirical distributions convolved; the interval is its 10% and 90% quantiles. Intervals are
asymmetric wherever the residuals are (the model under-predicts more often than it
over-predicts).

Coverage is computed, never assumed (:func:`coverage`): each measurement ``i`` is predicted by its
leave-one-out fit, its spread taken from the bootstrap members whose resample did not draw it
(out of bag) around that fit, and its residual distribution from the other ``n - 1`` points; it is
covered when its measured value lies inside. The share covered is written into the ensemble file
and reported by ``dse validate`` and in ``docs/validation.md``.

The ensemble is generic over the calibration's parameters: a member is a whole
:class:`~dse.model.parameters.Calibration` (every scalar field and the software factors), so
a refit with other parameter names needs only ``dse calibrate --ensemble N`` again. It records the
calibration's version and a fingerprint of its values; an ensemble built for another calibration
is refused (:class:`EnsembleMismatch`) and no interval is shown rather than a wrong one.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

import numpy as np

from dse.calibration.cpu import cpu_loo_log_residuals, cpu_outside
from dse.calibration.fit import check_loss, fit, loss_of, predict_full
from dse.calibration.measurements import REFERENCE_FAMILY, Measurement, measurement_design
from dse.calibration.regime import AXES, DesignClass, Regime, design_class, measurement_class, outside_axes
from dse.errors import DseInputError
from dse.limits import MAX_DATA_FILE_BYTES
from dse.model.cost import priced
from dse.model.evaluate import Evaluation
from dse.model.metrics import METRICS
from dse.model.parameters import (
    FITTED_APART,
    NOT_SCALARS,
    POWER_LEVELS,
    Calibration,
    fingerprint,
    load_calibration,
    unpinned,
)
from dse.model.placement import Plan, plan_placement
from dse.model.power import activity
from dse.model.stages import DenseTimes
from dse.model.system import System
from dse.model.timing import loads_key, recalibrated_loads, step_loads, step_time
from dse.model.workload import Workload, derived
from dse.reading import read_text
from dse.records import from_mapping
from dse.safe_write import write_file

LEVEL = 0.8
"""Nominal coverage of the intervals dse shows (an 80% interval: 10% and 90% quantiles)."""
ENSEMBLE_FILE = "calibration_ensemble.json"
"""Name of the packaged ensemble beside ``calibration.toml`` in ``dse/data``."""
LOO_MAX_ITERATIONS = 60
"""Levenberg-Marquardt iterations of each refit (they start at the calibration, a few steps from
their optimum; ``dse validate`` uses the same)."""
THROUGHPUT_EXPONENT: Mapping[str, int] = MappingProxyType(
    {m.name: m.throughput_exponent for m in METRICS if m.throughput_exponent is not None})
"""Metrics that move with the calibration, as the power of throughput they are proportional to
(their :attr:`~dse.model.metrics.Metric.throughput_exponent`; :func:`dse.model.cost.economics`:
TCO per second, capex and power do not depend on it). Capex and the memory figures are the same
under every member."""
POWER_EXPONENT: Mapping[str, int] = MappingProxyType(
    {m.name: m.power_exponent for m in METRICS if m.power_exponent is not None})
"""Metrics that move with the power levels no measurement pins down (:func:`power_ends`), as the
power of wall power they are proportional to (:attr:`~dse.model.metrics.Metric.power_exponent`).
The members' other parameters move a design's power too, through its step's activity, but they
move the measured node's step with it, which sets the dense kernels' level
(:func:`dse.model.power.dense_level`), so the power intervals take in the levels' ranges alone."""
TCO_EXPONENT: Mapping[str, int] = MappingProxyType(
    {m.name: m.price_exponents[1] for m in METRICS if m.price_exponents and m.price_exponents[1]})
"""Metrics proportional to a power of TCO (the second of their
:attr:`~dse.model.metrics.Metric.price_exponents`): the power levels move them through TCO's
energy share (:attr:`PredictionInterval.tco_energy_share`)."""
INTERVAL_METRICS: tuple[str, ...] = tuple(m.name for m in METRICS if m.name in THROUGHPUT_EXPONENT
                                          or m.name in POWER_EXPONENT or m.name in TCO_EXPONENT)
"""Every metric an interval moves (``metric_intervals`` of ``dse evaluate --json``)."""


class EnsembleUnavailable(DseInputError):
    """No usable ensemble: the file is missing, malformed, or belongs to another calibration.
    The message is one line and says how to rebuild it."""


class EnsembleMismatch(EnsembleUnavailable):
    """The ensemble was built for another calibration (version or fitted values differ)."""


# --- data --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Coverage:
    """Leave-one-out coverage of the intervals over the measurements (:func:`coverage`)."""

    level: float
    """Nominal coverage (0.8)."""
    covered: int
    points: int
    median_width_pct: float
    """Median width of the points' intervals, ``(high - low) / predicted``, percent."""
    median_spread_width_pct: float
    """The same with the bootstrap spread alone (no residual term): why it is needed."""
    spread_covered: int
    """Points inside the bootstrap-spread-only interval."""

    @property
    def share(self) -> float:
        """Share of measurements inside their interval."""
        return self.covered / self.points if self.points else math.nan


@dataclass(frozen=True, slots=True)
class ClassHoldout:
    """One class of an axis of the regime (:mod:`dse.calibration.regime`) left out of the fit
    whole: its points' ``log measured - log predicted`` under the refit that saw none of them
    (an unseen software family runs at the reference family's speed, as a design does)."""

    axis: str
    value: str
    measurement_ids: tuple[str, ...]
    log_residuals: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class ClassCoverage:
    """How often a left-out class's points fall inside their widened intervals
    (:func:`class_coverage_of`)."""

    axis: str
    value: str
    covered: int
    points: int
    median_width_pct: float
    """Median width of the class's widened intervals, ``(high - low) / predicted``, percent."""

    @property
    def share(self) -> float:
        """Share of the class's points inside their interval."""
        return self.covered / self.points if self.points else math.nan


@dataclass(frozen=True, slots=True)
class CalibrationEnsemble:
    """Bootstrap and leave-one-out refits of one calibration, with the leave-one-out residuals."""

    calibration_version: str
    calibration_fingerprint: str
    seed: int
    measurement_ids: tuple[str, ...]
    bootstrap: tuple[Calibration, ...]
    bootstrap_counts: tuple[tuple[int, ...], ...]
    """Times each measurement (in ``measurement_ids`` order) was drawn into each member's resample."""
    leave_one_out: tuple[Calibration, ...]
    """The refit without each measurement, in ``measurement_ids`` order."""
    loo_log_residuals: tuple[float, ...]
    """``log measured - log predicted`` of each measurement by the fit that left it out."""
    coverage: Coverage | None = None
    regime: Regime | None = None
    """The classes the measurements span (None: an ensemble built before the regime was
    recorded; its intervals are never widened)."""
    holdouts: tuple[ClassHoldout, ...] = ()
    """Every class of an axis with at least two measured classes, left out whole."""
    class_coverage: tuple[ClassCoverage, ...] = ()
    """Coverage of the widened intervals of each left-out class (:func:`class_coverages`)."""

    def outside_residuals(self, excluding: frozenset[str] = frozenset(),
                          axes: tuple[str, ...] = ()) -> np.ndarray:
        """The error distribution of a design outside the measured regime: the leave-one-class-out
        residuals of the holdouts on ``axes``, the axes the design lies outside on (without those
        of the measurements in ``excluding``), each with both signs. An accelerator generation no
        measurement has (Blackwell) takes the errors of the fit on each measured generation it
        never saw (the architecture holdouts), not those of an unseen software family; a design
        outside only on axes with no holdout (one measured class: placement, vendor), or when
        ``axes`` is empty or its holdouts hold only ``excluding``, takes every holdout's, the best
        evidence the data hold on an unseen class. A left-out class errs mostly one way (its own
        bias: Hopper over-rated, Volta under-rated), and which way a class never measured errs is
        not known from which classes happened to be measured, so the sign is not taken from
        them."""
        def pooled(holdouts: Iterable[ClassHoldout]) -> list[float]:
            return [r for h in holdouts for i, r in zip(h.measurement_ids, h.log_residuals, strict=True)
                    if i not in excluding]

        r = np.array(pooled(h for h in self.holdouts if h.axis in axes) or pooled(self.holdouts))
        return np.concatenate([r, -r])

    def outside(self, design: DesignClass) -> tuple[str, ...]:
        """Why ``design`` lies outside the measured regime (empty: inside, or no regime recorded)."""
        return self.regime.outside(design) if self.regime is not None else ()

    @classmethod
    def single(cls, calib: Calibration) -> CalibrationEnsemble:
        """An ensemble of the one calibration, no residuals: no uncertainty (zero-width intervals,
        every front design on the front with probability 1). For tests and for what-if use."""
        return cls(calib.version, fingerprint(calib), 0, (), (calib,), ((),), (), ())

    @property
    def members(self) -> tuple[Calibration, ...]:
        """The calibrations whose spread is the parameter uncertainty (the bootstrap members)."""
        return self.bootstrap

    def check(self, calib: Calibration, source: str = "") -> None:
        """Raise :class:`EnsembleMismatch` unless this ensemble was built for ``calib``."""
        where = source or f"dse/data/{ENSEMBLE_FILE}"
        if self.calibration_version != calib.version:
            raise EnsembleMismatch(where, "calibration_version", (
                f"built for calibration {self.calibration_version}, the calibration in use is "
                f"{calib.version}; no intervals (rebuild: dse calibrate --ensemble 100 --seed 0)"))
        if self.calibration_fingerprint != fingerprint(calib):
            raise EnsembleMismatch(where, "calibration_fingerprint", (
                f"built for other values of calibration {calib.version} (refitted since); no "
                "intervals (rebuild: dse calibrate --ensemble 100 --seed 0)"))


# --- building ----------------------------------------------------------------------------------


Job = tuple[Sequence[Measurement], Calibration, str]
"""One refit: the measurements, the calibration it starts from, the loss it minimises."""


def _fit_one(job: Job) -> Calibration:
    measurements, start, loss = job
    return fit(measurements, start, max_iter=LOO_MAX_ITERATIONS, loss=loss).calibration


def _run(jobs: list[Job], workers: int,
         progress: Callable[[int, int], None] | None) -> list[Calibration]:
    out: list[Calibration] = []
    if workers <= 1:
        results: Iterable[Calibration] = map(_fit_one, jobs)
    else:
        pool = ProcessPoolExecutor(max_workers=workers)
        results = pool.map(_fit_one, jobs)
    for c in results:
        out.append(c)
        if progress:
            progress(len(out), len(jobs))
    if workers > 1:
        pool.shutdown()
    return out


def build_ensemble(
    measurements: Sequence[Measurement],
    calib: Calibration,
    members: int = 100,
    seed: int = 0,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    loss: str | None = None,
) -> CalibrationEnsemble:
    """Refit ``calib`` on ``members`` bootstrap resamples of ``measurements`` (numpy's PCG64 seeded
    with ``seed``) and once without each measurement, then measure the intervals' coverage.

    Every refit minimises ``loss`` (default: the loss ``calib`` was fitted with,
    :func:`dse.calibration.fit.loss_of`), so the members vary the data, never the method.

    Each refit starts from ``calib`` and takes :data:`LOO_MAX_ITERATIONS` steps at most (about 2-3 s
    each on one core); ``workers`` processes share them."""
    if members < 1:
        raise DseInputError("--ensemble", "", f"needs at least 1 member, got {members}")
    loss = check_loss(loss or loss_of(calib))
    n = len(measurements)
    rng = np.random.default_rng(seed)
    draws = [rng.integers(0, n, size=n) for _ in range(members)]
    counts = [tuple(int(c) for c in np.bincount(d, minlength=n)) for d in draws]
    jobs: list[Job] = [([measurements[int(k)] for k in sorted(d)], calib, loss) for d in draws]
    jobs += [([x for j, x in enumerate(measurements) if j != i], calib, loss) for i in range(n)]
    fitted = _run(jobs, workers, progress)
    boot = tuple(dataclasses.replace(c, version=calib.version, fit={}) for c in fitted[:members])
    loo = tuple(dataclasses.replace(c, version=calib.version, fit={}) for c in fitted[members:])
    residuals = tuple(_log_error(m, c) for m, c in zip(measurements, loo, strict=True))
    ens = CalibrationEnsemble(calib.version, fingerprint(calib), seed,
                              tuple(m.id for m in measurements), boot, tuple(counts), loo, residuals)
    ens = dataclasses.replace(ens, coverage=coverage(ens, measurements))
    return with_class_holdouts(ens, measurements, calib, workers, loss=loss)


def _log_error(m: Measurement, calib: Calibration) -> float:
    """``log measured - log predicted`` of ``m`` under ``calib``."""
    return math.log(m.samples_per_s) - math.log(predict_full(m, calib))


def holdout_classes(classes: Sequence[DesignClass]) -> list[tuple[str, str, tuple[int, ...]]]:
    """``(axis, class, indices)`` of every class that can be left out whole: on each axis where
    the measurements span at least two classes (with one, leaving it out leaves nothing to fit),
    but for the reference software family: it defines the speed every design is scored at (its
    factor is 1 by definition), and without it the other families' factors and the efficiencies
    trade freely, so its points' errors would measure that scale, not an unseen class."""
    out = []
    for axis in AXES:
        values = sorted({c.of(axis) for c in classes} - ({REFERENCE_FAMILY} if axis == "software" else set()))
        if len({c.of(axis) for c in classes}) < 2:
            continue
        out += [(axis, v, tuple(i for i, c in enumerate(classes) if c.of(axis) == v)) for v in values]
    return out


def with_class_holdouts(ens: CalibrationEnsemble, measurements: Sequence[Measurement],
                        calib: Calibration, workers: int = 1, loss: str | None = None,
                        progress: Callable[[int, int], None] | None = None) -> CalibrationEnsemble:
    """``ens`` with its regime, its leave-one-class-out refits (one per class of
    :func:`holdout_classes`, from ``calib`` with its loss) and their coverage. ``dse calibrate
    --ensemble`` runs it as part of :func:`build_ensemble`; it needs none of the other members."""
    loss = check_loss(loss or loss_of(calib))
    classes = [measurement_class(m) for m in measurements]
    left_out = holdout_classes(classes)
    jobs: list[Job] = [([m for j, m in enumerate(measurements) if j not in set(idx)], calib, loss)
                       for _, _, idx in left_out]
    fitted = _run(jobs, workers, progress)
    holdouts = tuple(
        ClassHoldout(axis, value, tuple(measurements[i].id for i in idx),
                     tuple(_log_error(measurements[i], c) for i in idx))
        for (axis, value, idx), c in zip(left_out, fitted, strict=True))
    ens = dataclasses.replace(ens, regime=Regime.of(classes), holdouts=holdouts)
    return dataclasses.replace(ens, class_coverage=class_coverages(ens, measurements, calib))


# --- intervals ---------------------------------------------------------------------------------


DenseCache = dict[tuple[object, ...], DenseTimes]
"""Dense stage times by (member, :func:`~dse.model.timing.loads_key`, devices): shared by the
designs of one study that run the same accelerators on the same batch share."""


def log_throughputs(workload: Workload, system: System, plan: Plan,
                    calibrations: Sequence[Calibration], cache: DenseCache | None = None) -> np.ndarray:
    """``log`` samples/s of one design under each calibration (software factor 1, as designs are
    scored). The plan does not depend on the calibration and of the step's loads only the dense
    stage times do (:func:`dse.model.timing.recalibrated_loads`), so each member costs a
    retiming, about 0.1 ms. ``cache`` (one dict for designs of one workload, with the
    calibrations in the same order) keeps the dense times of designs that share them."""
    out = np.empty(len(calibrations))
    if not calibrations:
        return out
    base = step_loads(workload, system, plan, calibrations[0])
    key = (loads_key(system), plan.devices)
    for k, c in enumerate(calibrations):
        if cache is None:
            loads = recalibrated_loads(base, workload, system, c)
        else:
            dense = cache.get((k, *key))
            if dense is None:
                loads = recalibrated_loads(base, workload, system, c)
                cache[(k, *key)] = loads.dense
            else:
                loads = dataclasses.replace(base, dense=dense)
        step = step_time(workload, system, plan, c, loads).step_s
        out[k] = math.log(workload.global_batch / step) if 0 < step < math.inf else -math.inf
    return out


def _quantiles(spread: np.ndarray, residuals: np.ndarray, level: float) -> tuple[float, float]:
    """Quantiles ``(1 - level) / 2`` and ``(1 + level) / 2`` of ``spread + residual`` over every pair."""
    sums = (spread[:, None] + (residuals if residuals.size else np.zeros(1))[None, :]).ravel()
    lo, hi = np.quantile(sums, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def shown(lo: float, hi: float) -> tuple[float, float]:
    """Log bounds as an interval shows them: the point estimate (log ratio 0) always inside, so a
    skewed residual set cannot push the band off it. Coverage is counted on these bounds too."""
    return min(lo, 0.0), max(hi, 0.0)


@dataclass(frozen=True, slots=True)
class PredictionInterval:
    """The interval of one design's throughput (and of everything that scales with it)."""

    level: float
    throughput_samples_per_s: float
    """The point estimate (the calibration's prediction)."""
    throughput_low: float
    throughput_high: float
    spread_low: float
    """The interval's low end from the bootstrap spread alone (no residual term), samples/s."""
    spread_high: float
    members: int
    outside: tuple[str, ...] = ()
    """Why the design lies outside the measured regime (:mod:`dse.calibration.regime`), one
    sentence an axis; when any, the interval is widened (the leave-one-class-out residuals)."""
    basis: str = "ensemble"
    """What the interval comes from: ``ensemble`` (the accelerator fit's bootstrap members and
    residuals) or ``cpu_class`` (a node without accelerators: the CPU class's leave-one-out
    residuals, :func:`cpu_prediction_interval`)."""
    unpinned: tuple[str, ...] = ()
    """The parameters no measurement pins down that move this design's prediction
    (:func:`~dse.model.parameters.unpinned`), each with its range: the interval takes in the
    predictions at both ends of every range (:func:`range_ends`)."""
    power_low: float = 1.0
    power_high: float = 1.0
    """The interval of the design's wall power as factors of its point value: the power at both
    ends of the power levels' ranges (:func:`power_ends`)."""
    power_unpinned: tuple[str, ...] = ()
    """The power levels that move this design's power, each with its range."""
    tco_energy_share: float = 0.0
    """Share of the design's TCO that is energy (:func:`dse.model.cost.economics`), the part of it
    the power levels move: TCO moves by ``1 - share + share x`` the power factor."""

    @classmethod
    def around(cls, level: float, point: float, log_bounds: tuple[float, float],
               spread_log_bounds: tuple[float, float], members: int, outside: tuple[str, ...] = (),
               basis: str = "ensemble", unpinned: tuple[str, ...] = ()) -> PredictionInterval:
        """The interval at ``point`` samples/s from its log bounds (the interval's and the bootstrap
        spread's alone), as :func:`shown`."""
        (lo, hi), (slo, shi) = shown(*log_bounds), shown(*spread_log_bounds)
        return cls(level, point, point * math.exp(lo), point * math.exp(hi), point * math.exp(slo),
                   point * math.exp(shi), members, outside, basis, unpinned)

    @property
    def relative(self) -> tuple[float, float]:
        """``(low, high)`` as factors of the point estimate."""
        p = self.throughput_samples_per_s
        return self.throughput_low / p, self.throughput_high / p

    def of(self, metric: str, value: float) -> tuple[float, float] | None:
        """``[low, high]`` of ``metric`` whose point value is ``value`` (a metric of
        :data:`THROUGHPUT_EXPONENT`, :data:`POWER_EXPONENT` or :data:`TCO_EXPONENT`), or None for
        one neither the calibration nor the power levels move. A metric that moves with both
        (energy per sample, cost per sample) takes the widest of the four corners: the two are not
        known to move together."""
        exponent, watts = THROUGHPUT_EXPONENT.get(metric), POWER_EXPONENT.get(metric)
        tco = TCO_EXPONENT.get(metric, 0) if self.tco_energy_share > 0 else 0
        powers = (self.power_low, self.power_high)
        if (exponent is None and watts is None and not (tco and powers != (1.0, 1.0))) \
                or not math.isfinite(value):
            return None
        share = self.tco_energy_share
        factors = [f ** (exponent or 0) * p ** (watts or 0) * tco_ratio(share, p) ** tco
                   for f in self.relative for p in powers]
        return (value * min(factors), value * max(factors))

    def to_dict(self, step_time_s: float) -> dict[str, Any]:
        """The JSON keys of ``dse evaluate --json``."""
        step = self.of("step_time_s", step_time_s)
        return {
            "throughput_interval_samples_per_s": [self.throughput_low, self.throughput_high],
            "step_time_interval_s": list(step) if step else None,
            "interval_level": self.level,
            "interval_spread_samples_per_s": [self.spread_low, self.spread_high],
            "interval_members": self.members,
            "outside_measured_regime": list(self.outside),
            "interval_basis": self.basis,
            "interval_unpinned_parameters": list(self.unpinned),
            "power_interval_factors": [self.power_low, self.power_high],
            "power_interval_unpinned_parameters": list(self.power_unpinned),
        }


def prediction_interval(ev: Evaluation, ensemble: CalibrationEnsemble | None = None,
             calibration: Calibration | None = None, level: float = LEVEL) -> PredictionInterval | None:
    """The ``level`` prediction interval of ``ev``'s throughput: the calibration's prediction times
    ``exp`` of the quantiles of bootstrap deviation plus leave-one-out residual (module docstring),
    or plus leave-one-class-out residual for a design outside the measured regime (why, in
    :attr:`PredictionInterval.outside`). None for a design with no finite throughput.

    ``ensemble`` defaults to the packaged one, checked against ``calibration`` (default: the packaged
    calibration); raises :class:`EnsembleUnavailable` when there is none or it belongs to another
    calibration, and :class:`EnsembleMismatch` when ``ev`` was scored with another calibration."""
    calib = calibration or load_calibration()
    if ev.system.cpu_only:
        return with_power_ends(cpu_prediction_interval(ev, calib, level), ev, calib)
    ens = ensemble or load_ensemble(calibration=calib)
    if ev.calibration_version != ens.calibration_version:
        raise EnsembleMismatch("evaluation", "calibration_version", (
            f"scored with calibration {ev.calibration_version}, the ensemble belongs to "
            f"{ens.calibration_version}; no intervals"))
    point = ev.throughput_samples_per_s
    if not (0 < point < math.inf):
        return None
    logs = log_throughputs(ev.workload, ev.system, ev.plan, ens.members)
    outside = ens.outside(design_class(ev.system, ev.plan))
    ends = range_ends(ev.workload, ev.system, ev.plan, calib, point)
    return with_power_ends(interval_of_spread(point, logs - math.log(point), ens, level, outside, ends),
                           ev, calib)


def with_power_ends(iv: PredictionInterval | None, ev: Evaluation,
                    calib: Calibration) -> PredictionInterval | None:
    """``iv`` with the interval of ``ev``'s wall power (:func:`power_ends`) and the share of its
    TCO that power moves."""
    if iv is None:
        return None
    ends = power_ends(ev, calib)
    return dataclasses.replace(iv, power_low=ends.low, power_high=ends.high, power_unpinned=ends.moved,
                               tco_energy_share=ev.economics.energy_share)


PowerRatio = TypeVar("PowerRatio", float, np.ndarray)


def tco_ratio(energy_share: float, power_ratio: PowerRatio) -> PowerRatio:
    """TCO's ratio when wall power moves by ``power_ratio`` (a number or an array): only its
    energy share (:attr:`dse.model.cost.Economics.energy_share`) moves with it."""
    return 1.0 - energy_share + energy_share * power_ratio


@dataclass(frozen=True, slots=True)
class RangeEnds:
    """What the ranges of the unpinned parameters do to one design's prediction (log ratios to
    the point): at the slowest and the fastest ends of every range together (:func:`range_ends`),
    and which parameters move it."""

    low: float
    high: float
    moved: tuple[str, ...]
    """``name low-high`` of each parameter whose ends alone move the prediction by over 0.1%."""


NO_RANGE = RangeEnds(0.0, 0.0, ())
MOVED_LOG = 1e-3
"""A parameter whose range moves a prediction by less than this (log ratio, 0.1%) is not named."""


def range_ends(workload: Workload, system: System, plan: Plan, calib: Calibration,
               point: float) -> RangeEnds:
    """:class:`RangeEnds` of a design predicted at ``point`` samples/s under ``calib``: its
    throughput retimed at the ends of every unpinned parameter's range
    (:func:`~dse.model.parameters.unpinned`; :func:`_ends`: the step is monotone in each, an
    efficiency speeds it, an overhead slows it), and at the ends of its workload's skew
    (:func:`skew_ends`)."""
    if not (0 < point < math.inf):
        return NO_RANGE
    ranges = {n: r for n, r in unpinned(calib).items() if n not in POWER_LEVELS}

    def logs_at(values: list[dict[str, float]]) -> np.ndarray:
        logs = log_throughputs(workload, system, plan, [calib.with_values(**v) for v in values])
        return np.where(np.isfinite(logs), logs - math.log(point), 0.0)

    ends = _ends(ranges, logs_at) if ranges else NO_RANGE
    skew = skew_ends(workload, system, calib, point)
    return RangeEnds(min(ends.low, skew.low), max(ends.high, skew.high), ends.moved + skew.moved)


def skew_ends(workload: Workload, system: System, calib: Calibration, point: float) -> RangeEnds:
    """What the unpinned skew of ``workload``'s row popularity does to a design predicted at
    ``point`` samples/s: the design placed and timed again with the Zipf exponent the
    calibration's ``access_zipf_spread`` either side of the workload's (a placement of its own at
    each, as the distinct rows and cache hits it counts move its pieces), as log ratios to the
    point. A workload on uniform random data (exponent 0), or a spread of 0, has no range."""
    z, spread = workload.access_zipf, calib.access_zipf_spread
    if z <= 0.0 or spread <= 0.0:
        return NO_RANGE
    ends = (max(z - spread, 0.0), z + spread)
    logs = []
    for value in ends:
        wl = skewed(workload, value)
        step = step_time(wl, system, plan_placement(wl, system), calib).step_s
        logs.append(math.log(wl.global_batch / step / point) if 0 < step < math.inf else 0.0)
    moved = (f"access_zipf {ends[0]:g}-{ends[1]:g}",) if max(map(abs, logs)) > MOVED_LOG else ()
    return RangeEnds(min(*logs, 0.0), max(*logs, 0.0), moved)


def skewed(workload: Workload, exponent: float) -> Workload:
    """``workload`` with its rows' popularity at Zipf ``exponent``, one object for each exponent
    (kept with ``workload``): the figures it derives once (its tables' distinct rows, hot sets)
    then serve every design of a study whose interval takes the skew's ends in."""
    return derived(workload, f"skewed:{exponent!r}",
                   lambda w: dataclasses.replace(w, access_zipf=exponent))


NO_POWER = RangeEnds(1.0, 1.0, ())


def power_ends(ev: Evaluation, calib: Calibration) -> RangeEnds:
    """What the ranges of the power levels (:data:`~dse.model.parameters.POWER_LEVELS`) do to
    ``ev``'s wall power, as factors of its point value (not logs): its bill repriced at the ends of
    every level's range (:func:`_ends`: power is linear in each level); the measured node's
    dense-kernel level follows each draw (:func:`dse.model.power.dense_level`), so its own power
    moves only by its other parts'."""
    ranges = {n: r for n, r in unpinned(calib).items() if n in POWER_LEVELS}
    point = ev.power.power_w
    if ev.bill is None or not ranges or not 0 < point < math.inf:
        return NO_POWER
    bill = ev.bill

    def logs_at(values: list[dict[str, float]]) -> np.ndarray:
        return np.log([priced(bill, activity(ev.timing, ev.system, calib.with_values(**v))).power.power_w
                       / point for v in values])

    logs = _ends(ranges, logs_at)
    return RangeEnds(math.exp(logs.low), math.exp(logs.high), logs.moved)


def _ends(ranges: Mapping[str, tuple[float, float]],
          logs_at: Callable[[list[dict[str, float]]], np.ndarray]) -> RangeEnds:
    """What ``ranges`` do to one prediction, as log ratios to its point (0 included), and which
    parameters move it by over :data:`MOVED_LOG`: each parameter alone at either end of its range,
    then every one at its lower end together and at its higher end together (the prediction is
    monotone in each, so these two bound every draw). ``logs_at``: the log ratio under each set of
    parameter values."""
    names = list(ranges)
    alone = logs_at([{n: v} for n in names for v in ranges[n]])
    low = {n: ranges[n][0] if alone[2 * i] <= alone[2 * i + 1] else ranges[n][1] for i, n in enumerate(names)}
    high = {n: ranges[n][1] if v == ranges[n][0] else ranges[n][0] for n, v in low.items()}
    both = logs_at([low, high])
    moved = tuple(f"{n} {ranges[n][0]:g}-{ranges[n][1]:g}" for i, n in enumerate(names)
                  if max(abs(alone[2 * i]), abs(alone[2 * i + 1])) > MOVED_LOG)
    lo, hi = min(both.min(), alone.min(), 0.0), max(both.max(), alone.max(), 0.0)
    return RangeEnds(float(lo), float(hi), moved)


def cpu_prediction_interval(ev: Evaluation, calib: Calibration,
                            level: float = LEVEL) -> PredictionInterval | None:
    """The interval of a node without accelerators: its efficiencies are fitted apart, on the CPU
    class (:mod:`dse.calibration.cpu`), so the accelerator fit's members and residuals say nothing
    of it. The bounds are the ``level`` quantiles of the class's leave-one-out log residuals; for a
    CPU the class never measured (:func:`~dse.calibration.cpu.cpu_outside`), the class's largest
    residual on each side when that is further."""
    if ev.calibration_version != calib.version:
        raise EnsembleMismatch("evaluation", "calibration_version", (
            f"scored with calibration {ev.calibration_version}, not {calib.version}; no intervals"))
    return cpu_interval_at(ev.throughput_samples_per_s, ev.system, calib, level)


def cpu_interval_at(point: float, system: System, calib: Calibration,
                    level: float = LEVEL) -> PredictionInterval | None:
    """:func:`cpu_prediction_interval` of a node without accelerators (``system``) predicted at
    ``point`` samples/s under ``calib``; None when the point is not a positive finite rate."""
    if not (0 < point < math.inf):
        return None
    residuals = np.asarray(cpu_loo_log_residuals(calib))
    lo, hi = _quantiles(np.zeros(1), residuals, level)
    outside = cpu_outside(system)
    if outside:
        lo, hi = min(lo, float(residuals.min())), max(hi, float(residuals.max()))
    return PredictionInterval.around(level, point, (lo, hi), (0.0, 0.0), 0, outside, basis="cpu_class")


def interval_of_spread(point: float, spread: np.ndarray, ens: CalibrationEnsemble,
                       level: float = LEVEL, outside: tuple[str, ...] = (),
                       ends: RangeEnds = NO_RANGE) -> PredictionInterval | None:
    """The interval of a design predicted at ``point`` samples/s whose members deviate from it by
    ``spread`` (log ratios, one per member): :func:`prediction_interval` once the members are timed.
    ``outside`` (why the design lies outside the measured regime, :meth:`CalibrationEnsemble.outside`)
    widens the interval to take in the one the leave-one-class-out residuals give as well: the
    error of a fit on a class it never saw, the design's own case (:func:`widened_bounds`), taken
    from the holdouts on the axes the design is outside on (an unmeasured generation: the
    leave-one-generation-out errors; :meth:`CalibrationEnsemble.outside_residuals`).
    ``ends`` (:func:`range_ends`) widens it to take in the predictions at both ends of every range
    of the parameters no measurement pins down: what the design's step rests on unmeasured is never
    narrower than its range."""
    spread = spread[np.isfinite(spread)]
    if not (0 < point < math.inf) or spread.size == 0:
        return None
    widened = ens.outside_residuals(axes=outside_axes(outside)) if outside else np.zeros(0)
    lo, hi = widened_bounds(spread, np.asarray(ens.loo_log_residuals), widened, level)
    lo, hi = min(lo, ends.low), max(hi, ends.high)
    return PredictionInterval.around(level, point, (lo, hi), _quantiles(spread, np.zeros(0), level),
                                     len(ens.members), outside, unpinned=ends.moved)


def widened_bounds(spread: np.ndarray, loo: np.ndarray, widened: np.ndarray,
                   level: float = LEVEL) -> tuple[float, float]:
    """Log bounds of an interval from the members' ``spread`` and the leave-one-out residuals
    ``loo``; with leave-one-class-out residuals (``widened``, not empty for a design outside the
    measured regime) each bound is the further of the two: outside the regime an interval is
    never narrower than inside it, on either side."""
    lo, hi = _quantiles(spread, loo, level)
    if widened.size:
        wlo, whi = _quantiles(spread, widened, level)
        lo, hi = min(lo, wlo), max(hi, whi)
    return lo, hi


def class_coverage_of(holdout: ClassHoldout, ens: CalibrationEnsemble,
                      spreads: dict[str, np.ndarray], level: float = LEVEL) -> ClassCoverage:
    """Coverage of one left-out class: each of its points, predicted by the refit that saw none
    of the class, gets the interval a design outside the regime gets (``spreads[id]``, the
    bootstrap members' log deviations there, plus every leave-one-class-out residual of points
    outside the class and the leave-one-out residuals of the points outside it: never the class's
    own), and is covered when its residual lies inside."""
    own = frozenset(holdout.measurement_ids)
    pool = ens.outside_residuals(excluding=own, axes=(holdout.axis,))
    loo = np.array([r for i, r in zip(ens.measurement_ids, ens.loo_log_residuals, strict=True)
                    if i not in own])
    covered, widths = 0, []
    for mid, r in zip(holdout.measurement_ids, holdout.log_residuals, strict=True):
        lo, hi = shown(*widened_bounds(spreads.get(mid, np.zeros(1)), loo, pool, level))
        covered += lo <= r <= hi
        widths.append((math.exp(hi) - math.exp(lo)) * 100)
    return ClassCoverage(holdout.axis, holdout.value, int(covered), len(widths),
                         float(np.median(widths)) if widths else 0.0)


def class_coverages(ens: CalibrationEnsemble, measurements: Sequence[Measurement],
                    calib: Calibration, level: float = LEVEL) -> tuple[ClassCoverage, ...]:
    """:func:`class_coverage_of` for every holdout of ``ens``; the spread at each point is the
    bootstrap members' deviation from ``calib`` (members that saw the class: the spread is the
    smaller part of an interval, see :class:`Coverage`)."""
    by_id = {m.id: m for m in measurements}
    spreads: dict[str, np.ndarray] = {}
    for mid in {i for h in ens.holdouts for i in h.measurement_ids}:
        if mid not in by_id:
            raise EnsembleUnavailable(f"dse/data/{ENSEMBLE_FILE}", "holdouts",
                                      f"built on measurements not in the data ({mid}); rebuild it")
        wl, sysm = measurement_design(by_id[mid])
        logs = log_throughputs(wl, sysm, plan_placement(wl, sysm), [calib, *ens.members])
        spread = logs[1:] - logs[0]
        spreads[mid] = spread[np.isfinite(spread)] if spread.size else np.zeros(1)
    return tuple(class_coverage_of(h, ens, spreads, level) for h in ens.holdouts)


def coverage(ens: CalibrationEnsemble, measurements: Sequence[Measurement],
             level: float = LEVEL) -> Coverage:
    """Leave-one-out coverage of the ``level`` intervals over ``measurements`` (those the ensemble
    was built on): each point predicted by its leave-one-out fit, with the spread of the bootstrap
    members that never drew it (relative to that fit) and the residuals of the other points."""
    by_id = {m.id: m for m in measurements}
    missing = [i for i in ens.measurement_ids if i not in by_id]
    if missing:
        raise EnsembleUnavailable(f"dse/data/{ENSEMBLE_FILE}", "measurement_ids",
                                  f"built on measurements not in the data ({missing[0]}); rebuild it")
    residuals = np.asarray(ens.loo_log_residuals)
    covered = spread_covered = 0
    widths, spread_widths = [], []
    for i, mid in enumerate(ens.measurement_ids):
        wl, sysm = measurement_design(by_id[mid])
        plan = plan_placement(wl, sysm)
        out_of_bag = [c for c, n in zip(ens.bootstrap, ens.bootstrap_counts, strict=True)
                      if not n or n[i] == 0]
        logs = log_throughputs(wl, sysm, plan, [ens.leave_one_out[i], *out_of_bag])
        spread = logs[1:] - logs[0]
        spread = spread[np.isfinite(spread)] if spread.size else np.zeros(1)
        others = np.delete(residuals, i)
        lo, hi = shown(*_quantiles(spread, others, level))
        slo, shi = shown(*_quantiles(spread, np.zeros(0), level))
        covered += lo <= residuals[i] <= hi
        spread_covered += slo <= residuals[i] <= shi
        widths.append((math.exp(hi) - math.exp(lo)) * 100)
        spread_widths.append((math.exp(shi) - math.exp(slo)) * 100)
    n = len(ens.measurement_ids)
    return Coverage(level, int(covered), n, float(np.median(widths)) if n else 0.0,
                    float(np.median(spread_widths)) if n else 0.0, int(spread_covered))


# --- file ---------------------------------------------------------------------------------------


def _member_data(calib: Calibration) -> dict[str, Any]:
    data: dict[str, Any] = {f.name: float(getattr(calib, f.name)) for f in fields(Calibration)
                            if f.name not in NOT_SCALARS}
    data["software_factor"] = dict(sorted(calib.software_factor.items()))
    return data


def write_ensemble(ens: CalibrationEnsemble, path: Path) -> None:
    """Write ``ens`` as JSON (the format :func:`load_ensemble` reads; JSON rather than TOML as it
    parses ten times faster, and ``dse evaluate`` reads it on every call). One member per line."""
    head: dict[str, Any] = {
        "about": "dse calibration ensemble: written by `dse calibrate --ensemble N`; "
                 "dse/calibration/ensemble.py documents it.",
        "calibration_version": ens.calibration_version,
        "calibration_fingerprint": ens.calibration_fingerprint,
        "seed": ens.seed,
        "measurement_ids": list(ens.measurement_ids),
        "loo_log_residuals": list(ens.loo_log_residuals),
        "coverage": None if ens.coverage is None else dataclasses.asdict(ens.coverage),
        "regime": None if ens.regime is None else ens.regime.to_dict(),
        "class_holdouts": [dataclasses.asdict(h) for h in ens.holdouts],
        "class_coverage": [dataclasses.asdict(c) for c in ens.class_coverage],
    }
    boot = [{"counts": list(n), **_member_data(c)}
            for c, n in zip(ens.bootstrap, ens.bootstrap_counts, strict=True)]
    loo = [_member_data(c) for c in ens.leave_one_out]
    lines = ["{"] + [f"{json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    for key, rows, last in (("bootstrap", boot, False), ("leave_one_out", loo, True)):
        lines.append(f'"{key}": [')
        lines += [json.dumps(r) + ("," if k < len(rows) - 1 else "") for k, r in enumerate(rows)]
        lines.append("]" + ("" if last else ","))
    lines.append("}")
    write_file(path, "\n".join(lines) + "\n")


def _member(data: Any, version: str, source: str, key: str) -> tuple[Calibration, tuple[int, ...]]:
    if not isinstance(data, dict):
        raise EnsembleUnavailable(source, key, "expected an object")
    values = dict(data)
    counts = values.pop("counts", ())
    try:
        calib = from_mapping(Calibration, {**values, "version": version}, source, key)
    except DseInputError as exc:
        # Other parameter names than this dse's calibration: an ensemble of another model.
        raise EnsembleMismatch(source, exc.key, f"{exc.message}; rebuild: dse calibrate "
                               "--ensemble 100 --seed 0") from None
    return calib, tuple(int(c) for c in counts)


def ensemble_from_data(data: Any, source: str) -> CalibrationEnsemble:
    """An ensemble from its parsed file (:func:`write_ensemble`'s keys), strictly."""
    if not isinstance(data, dict):
        raise EnsembleUnavailable(source, "", "expected a JSON object")
    try:
        version = str(data["calibration_version"])
        boot = [_member(d, version, source, f"bootstrap[{k}]") for k, d in enumerate(data["bootstrap"])]
        loo = [_member(d, version, source, f"leave_one_out[{k}]")[0]
               for k, d in enumerate(data.get("leave_one_out", []))]
        cov = data.get("coverage")
        ens = CalibrationEnsemble(
            version, str(data["calibration_fingerprint"]), int(data.get("seed", 0)),
            tuple(str(i) for i in data.get("measurement_ids", [])),
            tuple(c for c, _ in boot), tuple(n for _, n in boot), tuple(loo),
            tuple(float(r) for r in data.get("loo_log_residuals", [])),
            Coverage(**cov) if isinstance(cov, dict) else None,
            *_regime_data(data))
    except KeyError as exc:
        raise EnsembleUnavailable(source, str(exc.args[0]), "required key is missing") from None
    except (TypeError, ValueError) as exc:
        if isinstance(exc, DseInputError):
            raise
        raise EnsembleUnavailable(source, "", f"malformed ensemble: {exc}") from None
    if not ens.bootstrap:
        raise EnsembleUnavailable(source, "bootstrap", "no members")
    if len(ens.loo_log_residuals) != len(ens.leave_one_out):
        raise EnsembleUnavailable(source, "loo_log_residuals",
                                  "one residual per leave-one-out fit expected")
    return ens


def _regime_data(data: dict[str, Any]) -> tuple[Regime | None, tuple[ClassHoldout, ...],
                                                tuple[ClassCoverage, ...]]:
    """The regime, holdouts and class coverage of an ensemble file (absent in files written
    before them: no regime, no widening)."""
    regime = data.get("regime")
    holdouts = tuple(ClassHoldout(str(h["axis"]), str(h["value"]),
                                  tuple(str(i) for i in h["measurement_ids"]),
                                  tuple(float(r) for r in h["log_residuals"]))
                     for h in data.get("class_holdouts", []))
    if any(len(h.measurement_ids) != len(h.log_residuals) for h in holdouts):
        raise ValueError("class_holdouts: one residual per measurement id expected")
    return (None if regime is None else Regime.from_dict(regime), holdouts,
            tuple(ClassCoverage(**c) for c in data.get("class_coverage", [])))


def read_ensemble(path: Path, source: str = "") -> CalibrationEnsemble:
    """Parse an ensemble file strictly (without checking it against a calibration)."""
    src = source or str(path)
    if not path.exists():
        raise EnsembleUnavailable(src, "", "file not found; no intervals (build it: dse calibrate "
                                  "--ensemble 100 --seed 0)")
    try:
        text = read_text(path, MAX_DATA_FILE_BYTES, src)
    except DseInputError as exc:
        raise EnsembleUnavailable(src, "", exc.message) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EnsembleUnavailable(src, "", f"not JSON (line {exc.lineno}: {exc.msg})") from None
    return ensemble_from_data(data, src)


_CACHE: dict[tuple[str, float], CalibrationEnsemble] = {}


def load_ensemble(path: Path | None = None, calibration: Calibration | None = None) -> CalibrationEnsemble:
    """The ensemble in ``path`` (default: the packaged ``dse/data/calibration_ensemble.json``),
    checked against ``calibration`` (default: the packaged calibration). Raises
    :class:`EnsembleUnavailable` (one line, how to rebuild) when it is missing or malformed and
    :class:`EnsembleMismatch` when it belongs to another calibration."""
    calib = calibration or load_calibration()
    if path is None:
        ref = resources.files("dse") / "data" / ENSEMBLE_FILE
        if not ref.is_file():
            raise EnsembleUnavailable(f"dse/data/{ENSEMBLE_FILE}", "", (
                "no calibration ensemble; no intervals (build it: dse calibrate --ensemble 100 "
                "--seed 0)"))
        with resources.as_file(ref) as p:
            ens = _cached(p, f"dse/data/{ENSEMBLE_FILE}")
        ens.check(calib)
        return with_drawn_ranges(_with_fitted_apart(ens, calib), calib)
    ens = _cached(path, str(path))
    ens.check(calib, str(path))
    return with_drawn_ranges(_with_fitted_apart(ens, calib), calib)


def ensemble_beside(calibration_file: Path) -> Path:
    """Where the ensemble of the calibration file ``calibration_file`` lives: ``NAME_ensemble.json``
    beside ``NAME.toml`` (the packaged ``calibration.toml``'s is :data:`ENSEMBLE_FILE`), where
    ``dse calibrate --ensemble N`` writes it."""
    return calibration_file.with_name(f"{calibration_file.stem}_ensemble.json")


def ensemble_of(calibration_file: Path | None, calibration: Calibration | None = None
                ) -> CalibrationEnsemble:
    """The ensemble of a calibration: the one beside its file (:func:`ensemble_beside`), or the
    packaged one for the packaged calibration (``calibration_file`` None), checked against
    ``calibration`` (default: the file's, or the packaged one) as :func:`load_ensemble` does. A
    calibration fitted to a user's rows without ``--ensemble`` has none: the message says how to
    build it."""
    if calibration_file is None:
        return load_ensemble(None, calibration)
    calib = calibration or load_calibration(calibration_file)
    path = ensemble_beside(calibration_file)
    if not path.exists():
        data = " --data YOUR.csv" if calib.based_on else ""
        raise EnsembleUnavailable(str(path), "", (
            f"no ensemble of calibration {calib.version}; no intervals (build it beside "
            f"{calibration_file.name}: dse calibrate{data} --out {calibration_file} "
            "--ensemble 100)"))
    return load_ensemble(path, calib)


RANGE_DRAW_STREAM = 39
"""Second seed word of the ranges' draws (the first is the ensemble's seed), so they are
independent of the bootstrap's resamples."""


def with_drawn_ranges(ens: CalibrationEnsemble, calib: Calibration) -> CalibrationEnsemble:
    """``ens`` with each bootstrap member's unpinned parameters (:func:`~dse.model.parameters.unpinned`)
    drawn across their ranges: a Latin hypercube over the members (for each parameter, member k
    takes the middle of its own 1/B of the range, in a seeded random order), so every stretch of
    every range is drawn once and the draws are independent of one another and of the resamples.
    The refits never move these parameters (no measurement depends on them), so the members keep
    their fitted values of the rest; the leave-one-out members, which only score the measurements,
    keep the calibration's values."""
    ranges = unpinned(calib)
    boot = ens.bootstrap
    if not ranges or not boot:
        return ens
    rng = np.random.default_rng([ens.seed, RANGE_DRAW_STREAM])
    n = len(boot)
    drawn: list[dict[str, float]] = [{} for _ in boot]
    for name, (lo, hi) in ranges.items():
        for k, slot in enumerate(rng.permutation(n)):
            drawn[k][name] = lo + (hi - lo) * (float(slot) + 0.5) / n
    members = tuple(m.with_values(**d) for m, d in zip(boot, drawn, strict=True))
    return dataclasses.replace(ens, bootstrap=members)


def _with_fitted_apart(ens: CalibrationEnsemble, calib: Calibration) -> CalibrationEnsemble:
    """``ens`` with every member's :data:`FITTED_APART` parameters set to ``calib``'s."""
    values = {name: getattr(calib, name) for name in FITTED_APART}
    members = (*ens.bootstrap, *ens.leave_one_out)
    if all(getattr(m, n) == v for m in members for n, v in values.items()):
        return ens
    return dataclasses.replace(
        ens, bootstrap=tuple(dataclasses.replace(m, **values) for m in ens.bootstrap),
        leave_one_out=tuple(dataclasses.replace(m, **values) for m in ens.leave_one_out))


def _cached(path: Path, source: str) -> CalibrationEnsemble:
    """Parse once per file and modification time (a CLI call or a report reads it once; a test
    that rewrites the file sees the new one)."""
    try:
        key = (str(path.resolve()), path.stat().st_mtime)
    except OSError:
        raise EnsembleUnavailable(source, "", "file not found; no intervals (build it: dse "
                                  "calibrate --ensemble 100 --seed 0)") from None
    if key not in _CACHE:
        _CACHE[key] = read_ensemble(path, source)
    return _CACHE[key]
