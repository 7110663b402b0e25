"""Robust fronts: which of a finished study's front designs stay on the front whatever the
model's error, within what the calibration ensemble says that error is.

For each front design (one per distinct design) and each bootstrap member of the calibration
ensemble (:mod:`dse.calibration.ensemble`), the design's step is retimed with that member's
parameters; every objective that moves with throughput (:data:`THROUGHPUT_EXPONENT`: throughput,
cost and energy per sample, samples per kUSD or per watt, epoch time) is scaled by the member's
throughput ratio; the objectives that move with wall power (:data:`POWER_EXPONENT`) or are priced
by TCO (:data:`TCO_EXPONENT`) are moved by the member's power levels (each member draws them across
their ranges: the design's power ratio, and TCO's through its energy share); the others (capex,
memory) stay. A design's *probability* is the share of
members under which it is still non-dominated; the *robust front* is the designs at or above
:data:`ROBUST_PROBABILITY`. The leave-one-out residuals are left out of the probabilities on
purpose: they are the model-form error of one design against its measurement, and between two
designs of one study (same workload, mostly the same parts) that error is shared, not
independent, so drawing it per design would invent disagreements. They do enter each design's
80% interval (its error bars). A comparison between two neighbouring front designs is *within the
model's error* when fewer than :data:`LEVEL` of the members keep their throughput order
(:attr:`NeighbourComparison.within_error`), not when their intervals overlap.

When the study's user catalog states price ranges (``price_low_usd``/``price_high_usd``,
:mod:`dse.model.user_catalog`), each member also draws every ranged part's price uniformly within
its range (:data:`PRICE_SEED`, one price catalog per member, shared by all designs), and the
objectives that move with capex or TCO (:data:`PRICE_EXPONENTS`) are scaled by each design's capex
and TCO under that draw over its capex and TCO as scored. Without ranges prices stay as scored.

Feasibility is kept as the study scored it (a constraint on a throughput-dependent metric is not
re-checked per member). Only the front and the designs near it are retimed: a dominated design is
a candidate when, with each throughput-dependent objective moved in its favour by the largest
amount any member moves two front designs apart, it would no longer be dominated by the front (the
:data:`NEAR_FRONT_LIMIT` closest at most). A design further away could only matter if the
ensemble moved it further than it moves any two front designs apart.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np
from optuna import Study
from optuna.trial import FrozenTrial, TrialState

from dse.calibration.ensemble import (
    LEVEL,
    POWER_EXPONENT,
    TCO_EXPONENT,
    THROUGHPUT_EXPONENT,
    CalibrationEnsemble,
    DenseCache,
    EnsembleMismatch,
    PredictionInterval,
    cpu_interval_at,
    ensemble_of,
    interval_of_spread,
    log_throughputs,
    range_ends,
    tco_ratio,
    with_power_ends,
)
from dse.calibration.regime import design_class
from dse.errors import DseInputError
from dse.limits import MAX_DATA_FILE_BYTES
from dse.model.catalog import Catalog
from dse.model.cost import capex, economics, priced
from dse.model.evaluate import Evaluation, Memo, evaluate
from dse.model.metrics import METRICS
from dse.model.parameters import POWER_LEVELS, Calibration
from dse.model.power import activity
from dse.model.system import System
from dse.model.timing import loads_key
from dse.model.user_catalog import PRICED, draw_ranged_prices, price_range, ranged_parts
from dse.model.workload import Workload
from dse.reading import read_bytes, read_text
from dse.safe_write import write_file
from dse.search.algorithms.pareto import is_feasible, pareto_mask, pareto_trials
from dse.search.fingerprint import model_fingerprint
from dse.search.storage.recovery import BASELINE_KEY
from dse.search.study.attribute_keys import CALIBRATION_VERSION_KEY
from dse.search.study.encoding import design_system, design_workload
from dse.search.study.objective_sets import ObjectiveSet, losses_of
from dse.search.study.study_file import (
    StudySpec,
    study_calibration,
    study_calibration_file,
    study_catalog,
    study_space,
    study_workload,
)

PRICE_EXPONENTS: Mapping[str, tuple[int, int]] = MappingProxyType(
    {m.name: m.price_exponents for m in METRICS if m.price_exponents is not None})
"""Metrics that move with prices, as (power of capex, power of TCO) they are proportional to
(their :attr:`~dse.model.metrics.Metric.price_exponents`; :func:`dse.model.cost.economics`: cost
per sample and per epoch are TCO per second over throughput)."""
PRICE_SEED = 0
"""Seed of the price draws within user-catalog ranges (the same front on every run)."""
ROBUST_PROBABILITY = 0.8
"""A front design whose probability of staying on the front is at least this is on the robust
front (the issue's threshold)."""
NEAR_FRONT_LIMIT = 200
"""Most dominated designs retimed as near-front candidates (the closest by their margin)."""
RETIMING_SUFFIX = ".retiming"
"""The cache of a journal's retimings: ``NAME.journal.retiming`` beside it (:func:`retiming_cache`)."""
RETIMING_FORMAT = 1
"""Version of the cache's layout and of what a cached retiming means; raise it when either changes."""
FRONT_SUFFIX = ".front"
"""The cache of a journal's last robust front, beside its retimings: ``NAME.journal.retiming.front``
(:func:`front_cache`)."""
FRONT_FORMAT = 5
"""Version of that cache's layout; raise it when the layout, :class:`RobustFront` or how it is
computed changes (5: objectives priced by TCO move with the power levels)."""


@dataclass(frozen=True)
class RobustDesign:
    """One distinct front design under the ensemble."""

    trials: tuple[int, ...]
    """Trial numbers that found this design (the first is its row in tables)."""
    design: dict[str, Any]
    values: tuple[float, ...]
    """Objective values at the calibration (the study's)."""
    intervals: tuple[tuple[float, float] | None, ...]
    """80% interval of each objective (None for one the calibration does not move)."""
    probability: float
    """Share of ensemble members under which the design stays non-dominated."""
    throughput: PredictionInterval | None
    baseline: str = ""

    @property
    def trial(self) -> int:
        """The design's first trial number."""
        return self.trials[0]


@dataclass(frozen=True)
class NeighbourComparison:
    """Two front designs next to each other in the first objective's order."""

    first: int
    second: int
    throughput_ratio: float
    """Throughput of ``second`` over ``first`` at the calibration."""
    order_kept: float
    """Share of ensemble members that keep the order of their throughputs."""
    within_error: bool
    """Fewer than :data:`LEVEL` (80%) of the ensemble's members keep their order: the model
    cannot tell them apart. Not whether their 80% intervals overlap: the members move
    neighbouring designs together, so two designs 1.49x apart whose intervals overlap kept their
    order in every member."""


@dataclass(frozen=True)
class RobustFront:
    """A study's front under the calibration ensemble."""

    objectives: tuple[tuple[str, str], ...]
    designs: tuple[RobustDesign, ...]
    """The distinct front designs, in the first objective's order."""
    comparisons: tuple[NeighbourComparison, ...]
    members: int
    candidates: int
    """Designs retimed across the ensemble (front and near-front)."""
    calibration_version: str
    threshold: float = ROBUST_PROBABILITY
    level: float = LEVEL
    notes: tuple[str, ...] = field(default=())

    @property
    def robust(self) -> tuple[RobustDesign, ...]:
        """The front designs at or above the threshold probability."""
        return tuple(d for d in self.designs if d.probability >= self.threshold)

    def rows(self) -> list[dict[str, Any]]:
        """One record per front design (``dse pareto --robust --json`` and ``--csv``)."""
        out = []
        for d in self.designs:
            row: dict[str, Any] = {"trial": d.trial, "trials": list(d.trials), "baseline": d.baseline,
                                   "probability_on_front": d.probability,
                                   "robust": d.probability >= self.threshold}
            for (metric, _), v, span in zip(self.objectives, d.values, d.intervals, strict=True):
                row[metric] = v
                row[f"{metric}_low"] = span[0] if span else None
                row[f"{metric}_high"] = span[1] if span else None
            row.update(d.design)
            out.append(row)
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "calibration_version": self.calibration_version,
            "members": self.members, "candidates": self.candidates, "threshold": self.threshold,
            "level": self.level,
            "objectives": [{"metric": m, "direction": d} for m, d in self.objectives],
            "front": self.rows(),
            "robust_front": [d.trial for d in self.robust],
            "comparisons": [{"first": c.first, "second": c.second,
                             "throughput_ratio": c.throughput_ratio, "order_kept": c.order_kept,
                             "within_error": c.within_error} for c in self.comparisons],
            "notes": list(self.notes),
        }


class Scored(NamedTuple):
    """A front design built and evaluated once (:meth:`_Retimer.scored`)."""

    system: System
    trained: Workload
    """The study's workload as the design trains it (its searched batch, if any)."""
    evaluation: Evaluation


def _key(t: FrozenTrial) -> str:
    return json.dumps(t.user_attrs.get("design") or {}, sort_keys=True, default=str)


def _distinct(trials: Sequence[FrozenTrial]) -> list[list[FrozenTrial]]:
    groups: dict[str, list[FrozenTrial]] = {}
    for t in trials:
        groups.setdefault(_key(t), []).append(t)
    return list(groups.values())


def _exponents(objectives: Sequence[tuple[str, str]]) -> np.ndarray:
    return np.array([THROUGHPUT_EXPONENT.get(m, 0) for m, _ in objectives], dtype=float)


def _near_front(front_loss: np.ndarray, loss: np.ndarray, exps: np.ndarray, margin: float) -> np.ndarray:
    """Indices of the rows of ``loss`` not dominated by ``front_loss`` once each throughput-moved
    objective is moved in its favour by ``exp(margin)``, nearest first (by how much margin they
    needed, approximately: the smallest factor that leaves them undominated is not computed)."""
    if not len(loss) or not len(front_loss):
        return np.zeros(0, dtype=int)
    up, down = (loss * np.exp(sign * margin * exps) for sign in (1.0, -1.0))
    best = np.minimum(up, down)
    dominated = np.zeros(len(loss), dtype=bool)
    for f in front_loss:
        dominated |= np.all(f <= best, axis=1) & np.any(f < best, axis=1)
    idx = np.flatnonzero(~dominated)
    # Nearest first: the smallest relative distance to the front in the worst objective.
    scale = np.maximum(np.abs(front_loss).max(axis=0), 1e-300)
    gap = np.array([np.min(np.max((loss[i] - front_loss) / scale, axis=1)) for i in idx])
    return idx[np.argsort(gap, kind="stable")]


def timing_key(ev: Evaluation) -> tuple[object, ...]:
    """What decides a design's step under any calibration: every stage's duration before overlap
    (each a byte count over a bandwidth times one efficiency, plus latencies), the kernel count,
    the devices and the loads' key. Designs equal in all of it (a front often holds designs that
    differ only in a part that costs but never binds, such as DDR size) share one retiming."""
    return (ev.timing.stages, ev.timing.kernels, ev.plan.devices,
            loads_key(ev.system), ev.timing.critical_path)


def _margin(devs: np.ndarray) -> float:
    """How far (log) the ensemble moves two front designs apart at most: the largest spread of
    the front's deviations under any one member. Designs near the front share its parts, so
    their deviations are taken to lie in the same range (a near-front design whose deviation
    fell outside it could be missed; docs/validation.md)."""
    if devs.size == 0 or devs.shape[0] < 2:
        return float(np.max(np.abs(devs))) if devs.size else 0.0
    return float(np.max(devs.max(axis=0) - devs.min(axis=0)))


def retiming_cache(journal: Path) -> Path:
    """Where the retimings of a journal's designs are kept: ``NAME.journal.retiming`` beside it.
    Only a cache (like ``NAME.journal.snapshot``): deleting it costs the next robust front its
    retimings, nothing else."""
    return journal.with_name(journal.name + RETIMING_SUFFIX)


def _context(*inputs: object) -> str:
    """What every cached retiming depends on besides its design: the cache's format, the model's
    code and data (:func:`~dse.search.fingerprint.model_fingerprint`), the ensemble's code, and
    the workload, space, catalog, calibration and ensemble members themselves (frozen
    dataclasses, whose ``repr`` holds every field)."""
    digest = hashlib.sha256(f"{RETIMING_FORMAT} {model_fingerprint()}".encode())
    import dse.calibration.ensemble as ensemble_code

    for source in (__file__, str(ensemble_code.__file__)):
        digest.update(Path(source).read_bytes())
    for item in inputs:
        digest.update(b"\0" + repr(item).encode())
    return digest.hexdigest()


Retiming = tuple[np.ndarray, float]
"""A design's log throughput ratio under each ensemble member, and its throughput at the
calibration (NaN when it has none)."""


def _read_retimings(raw: bytes | None, context: str) -> dict[str, Retiming]:
    """The retimings of the cache file's bytes ``raw`` made in ``context``; none when the file is
    missing, unreadable or made in another context."""
    if raw is None:
        return {}
    try:
        stored = json.loads(raw.decode("utf-8"))
        if stored.get("context") != context:
            return {}
        return {k: (np.array(v[1], dtype=float), float(v[0])) for k, v in stored["designs"].items()}
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return {}


def _write_retimings(path: Path | None, context: str, retimings: dict[str, Retiming]) -> bytes | None:
    """Replace the cache ``path`` in one rename and return the bytes written; None (the file as
    it was) when the folder cannot be written."""
    if path is None:
        return None
    text = json.dumps({"context": context, "designs": {
        k: [point, [float(x) for x in dev]] for k, (dev, point) in retimings.items()}})
    return text.encode("utf-8") if _write_atomic(path, text) else None


def front_cache(retimings: Path) -> Path:
    """Where the robust front computed from the retimings cache ``retimings`` is kept:
    ``NAME.journal.retiming.front``. Only a cache: deleting it costs the next front its
    probabilities and intervals (a few tenths of a second on a study of 3,000 trials)."""
    return retimings.with_name(retimings.name + FRONT_SUFFIX)


def _front_key(context: str, retimings: bytes | None, ens: CalibrationEnsemble, threshold: float,
               objectives: Sequence[tuple[str, str]], feasible: Sequence[FrozenTrial]) -> str:
    """What a robust front depends on beyond the retimings' context: the retimings themselves
    (the cache file's bytes), the ensemble's residuals, the threshold and interval level, the
    objectives, the code that finds fronts and losses, and every feasible trial's number,
    values, design and baseline name."""
    from dse.search.algorithms import pareto as pareto_code
    from dse.search.study import objective_sets as objectives_code

    digest = hashlib.sha256(f"{FRONT_FORMAT} {context} {threshold!r} {LEVEL!r}".encode())
    digest.update(hashlib.sha256(retimings or b"").digest())
    digest.update(repr((tuple(ens.loo_log_residuals), tuple(objectives), ens.regime,
                        ens.outside_residuals().tolist())).encode())
    for source in (pareto_code.__file__, objectives_code.__file__):
        digest.update(Path(str(source)).read_bytes())
    for t in feasible:
        digest.update(f"\0{t.number} {t.values!r} {_key(t)} {t.user_attrs.get(BASELINE_KEY, '')!r}"
                      .encode())
    return digest.hexdigest()


def _front_to_json(front: RobustFront) -> dict[str, Any]:
    """Every field of ``front`` (floats as ``repr`` writes them: read back bit for bit)."""
    def interval(iv: PredictionInterval | None) -> list[Any] | None:
        return None if iv is None else [getattr(iv, f.name) for f in fields(PredictionInterval)]

    return {
        "objectives": [list(o) for o in front.objectives],
        "designs": [[list(d.trials), d.design, list(d.values),
                     [None if span is None else list(span) for span in d.intervals],
                     d.probability, interval(d.throughput), d.baseline] for d in front.designs],
        "comparisons": [[c.first, c.second, c.throughput_ratio, c.order_kept, c.within_error]
                        for c in front.comparisons],
        "members": front.members, "candidates": front.candidates,
        "calibration_version": front.calibration_version, "threshold": front.threshold,
        "level": front.level, "notes": list(front.notes)}


def _interval_from_json(values: list[Any]) -> PredictionInterval:
    """A :class:`PredictionInterval` from its fields in order (its tuples of reasons and of
    unpinned parameters lists in JSON)."""
    named = {f.name: v for f, v in zip(fields(PredictionInterval), values, strict=True)}
    named["outside"] = tuple(named["outside"])
    named["unpinned"] = tuple(named["unpinned"])
    named["power_unpinned"] = tuple(named["power_unpinned"])
    return PredictionInterval(**named)


def _front_from_json(data: dict[str, Any]) -> RobustFront:
    """The inverse of :func:`_front_to_json`."""
    designs = tuple(RobustDesign(
        tuple(trials), design, tuple(values),
        tuple(None if span is None else (span[0], span[1]) for span in spans), probability,
        None if iv is None else _interval_from_json(iv), baseline)
        for trials, design, values, spans, probability, iv, baseline in data["designs"])
    return RobustFront(
        tuple((m, d) for m, d in data["objectives"]), designs,
        tuple(NeighbourComparison(*c) for c in data["comparisons"]), data["members"], data["candidates"],
        data["calibration_version"], data["threshold"], data["level"], tuple(data["notes"]))


def _read_front(path: Path | None, key: str) -> RobustFront | None:
    """The front cached in ``path`` under ``key``; None when missing, unreadable or another key's."""
    if path is None:
        return None
    try:
        stored = json.loads(read_text(path, MAX_DATA_FILE_BYTES))
        if stored.get("key") != key:
            return None
        return _front_from_json(stored["front"])
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


def _write_atomic(path: Path, text: str) -> bool:
    """Replace the cache ``path`` with ``text`` in one rename (a reader sees the old file or the
    new one; :func:`dse.safe_write.write_file`, unsynced: a cache is checked on reading); False,
    with ``path`` as it was, when the folder cannot be written."""
    try:
        write_file(path, text, durable=False)
    except DseInputError:
        return False
    return True


def _read_bytes(path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        return read_bytes(path, MAX_DATA_FILE_BYTES)
    except (OSError, DseInputError):
        return None


class _Retimer:
    """The designs of one study (its space, workload and catalog) scored under the calibration and
    retimed under every member of the ensemble, with the caches that make a front cheap to retime:
    one placement memo, the dense times and retimings shared by designs of one timing
    (:func:`timing_key`), and the retimings read from or kept for the cache file (``known``)."""

    def __init__(self, spec: StudySpec, calib: Calibration, ens: CalibrationEnsemble,
                 known: dict[str, Retiming]) -> None:
        self.space, self.workload = study_space(spec), study_workload(spec)
        self.catalog = study_catalog(spec).catalog
        self.calib, self.ens = calib, ens
        self.memo = Memo(self.workload, calib)
        self.known = known
        """Retimings by design key (:func:`_key`): read from the cache, then each one made."""
        self.dense: DenseCache = {}
        self.retimed: dict[tuple[object, ...], np.ndarray] = {}
        """Log throughput ratios by :func:`timing_key`: designs that time alike share one."""
        self.levels = tuple(calib.with_values(**{n: getattr(m, n) for n in POWER_LEVELS})
                            for m in ens.members)
        """The calibration with each member's power levels (drawn across their ranges,
        :func:`~dse.calibration.ensemble.with_drawn_ranges`): what moves a design's power."""
        self.evaluated: dict[str, Scored | None] = {}
        """Each design's system, trained workload and evaluation by :func:`_key` (None: it no
        longer builds), made once for its retiming, prices, power and interval."""

    def context(self) -> str:
        """What every retiming depends on besides its design (:func:`_context`)."""
        return _context(self.workload, self.space, self.catalog, self.calib,
                        self.ens.calibration_version, self.ens.members)

    def built(self, group: list[FrozenTrial]) -> tuple[System, Workload]:
        """The system and trained workload of a group's design (:class:`DseInputError` when its
        design no longer builds)."""
        design = group[0].user_attrs.get("design") or {}
        return (design_system(self.space, design, self.catalog),
                design_workload(self.space, design, self.workload))

    def scored(self, group: list[FrozenTrial]) -> Scored | None:
        """The group's design built and evaluated under the calibration, once (None when it no
        longer builds)."""
        key = _key(group[0])
        if key not in self.evaluated:
            try:
                system, trained = self.built(group)
            except DseInputError:
                self.evaluated[key] = None
            else:
                ev = evaluate(trained, system, self.calib, self.catalog, self.memo)
                self.evaluated[key] = Scored(system, trained, ev)
        return self.evaluated[key]

    def ratios(self, group: list[FrozenTrial]) -> Retiming:
        """Each member's log throughput ratio to the calibration's, and the point throughput
        (from the cache when it holds the design)."""
        key = _key(group[0])
        found = self.known.get(key)
        if found is None or len(found[0]) != len(self.ens.members):
            found = self.known[key] = self._retime(group)
        return found

    def _retime(self, group: list[FrozenTrial]) -> Retiming:
        members = len(self.ens.members)
        scored = self.scored(group)
        if scored is None:
            return np.zeros(members), math.nan
        system, trained, ev = scored
        point = ev.throughput_samples_per_s
        if not 0 < point < math.inf:
            return np.zeros(members), math.nan
        key = timing_key(ev)
        d = self.retimed.get(key)
        if d is None:
            logs = log_throughputs(trained, system, ev.plan, self.ens.members, self.dense)
            d = self.retimed[key] = np.where(np.isfinite(logs), logs - math.log(point), 0.0)
        return d, point

    def priced(self, group: list[FrozenTrial], prices: Sequence[Catalog]) -> np.ndarray:
        """The group's capex and TCO ratios under each price draw (:func:`price_ratios`)."""
        scored = self.scored(group)
        if scored is None:
            return np.ones((len(prices), 2))
        return price_ratios(scored.system, scored.evaluation, prices)

    def power_ratios(self, group: list[FrozenTrial]) -> np.ndarray:
        """Per member (rows), the group's wall power under its power levels over its power as
        scored, and its TCO's, which moves by TCO's energy share (columns; ones for a design that
        no longer builds)."""
        members = len(self.levels)
        scored = self.scored(group)
        if scored is None:
            return np.ones((members, 2))
        system, _, ev = scored
        point, bill, eco = ev.power.power_w, ev.bill, ev.economics
        if bill is None or not 0 < point < math.inf:
            return np.ones((members, 2))
        watts = np.array([priced(bill, activity(ev.timing, system, c)).power.power_w / point
                          for c in self.levels])
        return np.column_stack([watts, tco_ratio(eco.energy_share, watts)])

    def interval(self, group: list[FrozenTrial], dev: np.ndarray,
                 point: float) -> PredictionInterval | None:
        """The group's interval: a node without accelerators takes the CPU class's (its
        efficiencies are fitted apart, the same in every member); any other, the members' spread
        at it, widened when it lies outside the measured regime (one evaluation, memoised)."""
        ens = self.ens
        if not math.isfinite(point):
            return None
        scored = self.scored(group)
        if scored is None:
            return interval_of_spread(point, dev, ens, LEVEL)
        system, trained, ev = scored
        if system.cpu_only:
            return with_power_ends(cpu_interval_at(point, system, self.calib, LEVEL), ev, self.calib)
        plan = ev.plan
        ends = range_ends(trained, system, plan, self.calib, point)
        outside = ens.outside(design_class(system, plan)) if ens.regime is not None else ()
        return with_power_ends(interval_of_spread(point, dev, ens, LEVEL, outside, ends), ev, self.calib)


def robust_front(study: Study, spec: StudySpec, objectives: ObjectiveSet,
                 ensemble: CalibrationEnsemble | None = None,
                 calibration: Calibration | None = None,
                 threshold: float = ROBUST_PROBABILITY, cache: Path | None = None) -> RobustFront:
    """The study's front designs under the ensemble (module docstring). Raises
    :class:`~dse.calibration.ensemble.EnsembleUnavailable` without a usable ensemble, and
    :class:`~dse.calibration.ensemble.EnsembleMismatch` when the study was scored with another
    calibration than the ensemble's (rerun the study).

    ``cache`` (:func:`retiming_cache` of the study's journal): each design's retimings are kept
    there and read back while the model, calibration, ensemble, workload, space and catalog are
    those they were made with (a retiming is deterministic), so a later report of the same study
    retimes only the designs it has not met; the front itself is kept beside them
    (:func:`front_cache`) and read back while nothing it depends on changed (:func:`_front_key`)."""
    calib = calibration or study_calibration(spec)
    ens = ensemble or ensemble_of(study_calibration_file(spec), calib)
    scored = study.user_attrs.get(CALIBRATION_VERSION_KEY)
    if scored is not None and scored != ens.calibration_version:
        raise EnsembleMismatch(spec.name, "calibration", (
            f"the study was scored with calibration {scored}, the ensemble belongs to "
            f"{ens.calibration_version}; no robust front (rerun the study)"))
    objs = tuple((o.metric, o.direction) for o in objectives.objectives)
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    feasible = [t for t in trials if is_feasible(t) and t.values is not None]
    retimer = _Retimer(spec, calib, ens, {})
    context = retimer.context()
    raw = _read_bytes(cache)
    saved = front_cache(cache) if cache is not None else None
    if saved is not None:
        found = _read_front(saved, _front_key(context, raw, ens, threshold, objs, feasible))
        if found is not None:
            return found
    retimer.known = _read_retimings(raw, context)
    loaded = len(retimer.known)
    front_groups = _distinct(pareto_trials(study, feasible))
    on_front = {_key(g[0]) for g in front_groups}
    rest_groups = [g for g in _distinct(feasible) if _key(g[0]) not in on_front]
    front_dev = [retimer.ratios(g) for g in front_groups]
    prices = price_draws(retimer.catalog, len(ens.members))
    notes: list[str] = []
    moves_power = bool(np.any(_power_exponents(objs)))
    front_watts = [retimer.power_ratios(g) for g in front_groups] if moves_power else []
    near = _near_groups(front_groups, rest_groups, front_dev, objs, prices, retimer.catalog, notes,
                        front_watts)
    near_dev = [retimer.ratios(g) for g in near]
    if len(retimer.known) != loaded:
        raw = _write_retimings(cache, context, retimer.known)
    groups = [*front_groups, *near]
    devs = np.array([d for d, _ in [*front_dev, *near_dev]]).reshape(len(groups), len(ens.members))
    moves = np.array([retimer.priced(g, prices) for g in groups]) if prices else None
    if prices:
        notes.append(f"prices drawn within the user catalog's ranges "
                     f"({len(ranged_parts(retimer.catalog))} parts) under each member")
    watts = (np.array([*front_watts, *(retimer.power_ratios(g) for g in near)]).reshape(
        len(groups), len(ens.members), 2) if moves_power else None)
    if moves_power:
        notes.append("power levels drawn within their ranges under each member (dse.model.power)")
    probability = _probabilities(groups, len(front_groups), devs, moves, objs, len(ens.members), watts)
    designs, comparisons = _front_designs(front_groups, front_dev, probability, objs, retimer)
    result = RobustFront(objs, designs, comparisons, len(ens.members), len(groups),
                         ens.calibration_version, threshold, LEVEL, tuple(notes))
    if saved is not None and raw is not None:
        key = _front_key(context, raw, ens, threshold, objs, feasible)
        _write_atomic(saved, json.dumps({"key": key, "front": _front_to_json(result)}))
    return result


def _power_exponents(objectives: Sequence[tuple[str, str]]) -> np.ndarray:
    """Per objective, the powers of wall power and of TCO it moves with under the power levels
    (:data:`POWER_EXPONENT`, :data:`TCO_EXPONENT`; the columns of :meth:`_Retimer.power_ratios`)."""
    return np.array([(POWER_EXPONENT.get(m, 0), TCO_EXPONENT.get(m, 0)) for m, _ in objectives],
                    dtype=float).reshape(-1, 2)


def _cost_exponents(objectives: Sequence[tuple[str, str]]) -> np.ndarray:
    """Per objective, the powers of capex and TCO it moves with (:data:`PRICE_EXPONENTS`)."""
    return np.array([PRICE_EXPONENTS.get(m, (0, 0)) for m, _ in objectives], dtype=float).reshape(-1, 2)


def _near_groups(front_groups: list[list[FrozenTrial]], rest_groups: list[list[FrozenTrial]],
                 front_dev: list[Retiming], objs: tuple[tuple[str, str], ...],
                 prices: Sequence[Catalog], catalog: Catalog, notes: list[str],
                 front_watts: Sequence[np.ndarray] = ()) -> list[list[FrozenTrial]]:
    """The dominated designs that the ensemble and the price draws could move onto the front,
    nearest first (at most :data:`NEAR_FRONT_LIMIT`; a note in ``notes`` when more were near)."""
    margin = _margin(np.array([d for d, _ in front_dev]))
    watt_margin = _margin(np.log(np.array(front_watts))) if len(front_watts) else 0.0
    # How far each objective can move two designs apart: the ensemble's throughput margin, the
    # power levels' on the objectives that move with power, and the price ranges' reach on the
    # objectives that move with capex or TCO.
    reach = (margin * np.abs(_exponents(objs)) + watt_margin * np.abs(_power_exponents(objs)).sum(axis=1)
             + (price_reach(catalog) if prices else 0.0) * np.abs(_cost_exponents(objs)).sum(axis=1))
    if not (rest_groups and reach.any()):
        return []
    directions = [d for _, d in objs]
    front_loss = losses_of([g[0].values for g in front_groups], directions)
    rest_loss = losses_of([g[0].values for g in rest_groups], directions)
    picked = _near_front(front_loss, rest_loss, reach, 1.0)
    if len(picked) > NEAR_FRONT_LIMIT:
        notes.append(f"{len(picked)} designs lie within the ensemble's reach of the front; the "
                     f"{NEAR_FRONT_LIMIT} nearest were retimed")
    return [rest_groups[int(i)] for i in picked[:NEAR_FRONT_LIMIT]]


def _probabilities(groups: list[list[FrozenTrial]], front: int, devs: np.ndarray,
                   moves: np.ndarray | None, objs: tuple[tuple[str, str], ...],
                   members: int, watts: np.ndarray | None = None) -> np.ndarray:
    """Per front group (the first ``front`` of ``groups``), the share of the ``members`` under
    which it stays non-dominated among ``groups``: each member moves every group's objectives by
    its throughput ratio (``devs``), with price draws its capex and TCO ratios (``moves``), and
    the objectives that move with power by its power and TCO ratios under the member's power
    levels (``watts``: groups x members x 2, :meth:`_Retimer.power_ratios`)."""
    directions = [d for _, d in objs]
    exps, cost_exps, power_exps = _exponents(objs), _cost_exponents(objs), _power_exponents(objs)
    values = np.array([g[0].values for g in groups], dtype=float).reshape(len(groups), len(objs))
    kept = np.zeros(front)
    for b in range(members):
        moved = values * np.exp(devs[:, b][:, None] * exps[None, :])
        if moves is not None:
            moved *= np.exp(np.log(moves[:, b, :]) @ cost_exps.T)
        if watts is not None:
            moved *= np.exp(np.log(watts[:, b, :]) @ power_exps.T)
        mask = pareto_mask(losses_of(moved, directions))
        kept += mask[:front]
    return kept / members


def _front_designs(front_groups: list[list[FrozenTrial]], front_dev: list[Retiming],
                   probability: np.ndarray, objs: tuple[tuple[str, str], ...], retimer: _Retimer
                   ) -> tuple[tuple[RobustDesign, ...], tuple[NeighbourComparison, ...]]:
    """The front's designs with their intervals and probabilities, in the first objective's order,
    and each one's comparison with the next."""
    designs = []
    for k, group in enumerate(front_groups):
        dev, point = front_dev[k]
        iv = retimer.interval(group, dev, point)
        vals = tuple(float(v) for v in group[0].values)
        spans = tuple(iv.of(m, v) if iv else None for (m, _), v in zip(objs, vals, strict=True))
        designs.append(RobustDesign(
            tuple(t.number for t in group), dict(group[0].user_attrs.get("design") or {}), vals,
            spans, float(probability[k]), iv, str(group[0].user_attrs.get(BASELINE_KEY, ""))))
    order = sorted(range(len(designs)), key=lambda k: (designs[k].values[0], designs[k].trial))
    designs = [designs[k] for k in order]
    devs_front = [front_dev[k][0] for k in order]
    comparisons = tuple(_compare_neighbours(designs[k], designs[k + 1], devs_front[k], devs_front[k + 1])
                        for k in range(len(designs) - 1))
    return tuple(designs), comparisons


def price_draws(catalog: Catalog, members: int) -> tuple[Catalog, ...]:
    """One price catalog per ensemble member, every ranged part's price drawn uniformly in its
    range (:data:`PRICE_SEED`); empty when the catalog states no range."""
    if not ranged_parts(catalog):
        return ()
    rng = np.random.default_rng(PRICE_SEED)
    return tuple(draw_ranged_prices(catalog, lambda: float(rng.uniform())) for _ in range(members))


def price_reach(catalog: Catalog) -> float:
    """Largest log factor by which price draws within the ranges can move two designs' capex (or
    TCO) apart: capex is a sum of prices, so its ratio between draws lies between the smallest
    ``low / price`` and the largest ``high / price`` of any ranged part."""
    lows, highs = [1.0], [1.0]
    for section in PRICED:
        for part in getattr(catalog, section).values():
            span = price_range(part)
            if span is not None:
                lows.append(span[0] / part.price_usd)
                highs.append(span[1] / part.price_usd)
    return math.log(max(highs)) - math.log(min(lows))


def price_ratios(system: System, ev: Evaluation, catalogs: Sequence[Catalog]) -> np.ndarray:
    """``(len(catalogs), 2)``: the design's capex and TCO under each price catalog over its capex
    and TCO as scored (``ev``); power, and so energy, does not move with prices."""
    node = system.spec.node
    out = np.ones((len(catalogs), 2))
    base_capex, base_tco = ev.cost.capex_usd, ev.economics.tco_usd_per_year
    if not (base_capex > 0 and base_tco > 0):
        return out
    for b, cat in enumerate(catalogs):
        # (A node without accelerators keeps its CPU device: the CPUs are priced as CPUs.)
        acc = cat.accelerator[node.accelerator] if node.accelerators else system.accelerator
        priced = dataclasses.replace(system, accelerator=acc, cpu=cat.cpu[node.cpu])
        cost = capex(priced, cat)
        tco = economics(ev.throughput_samples_per_s, cost, ev.power, cat).tco_usd_per_year
        out[b] = (cost.capex_usd / base_capex, tco / base_tco)
    return out


def _compare_neighbours(a: RobustDesign, b: RobustDesign, dev_a: np.ndarray,
                        dev_b: np.ndarray) -> NeighbourComparison:
    ia, ib = a.throughput, b.throughput
    if ia is None or ib is None:
        return NeighbourComparison(a.trial, b.trial, math.nan, math.nan, True)
    ratio = ib.throughput_samples_per_s / ia.throughput_samples_per_s
    base = math.log(ratio)
    member = base + dev_b - dev_a
    kept = float(np.mean(np.sign(member) == np.sign(base))) if base else 1.0
    return NeighbourComparison(a.trial, b.trial, ratio, kept, kept < LEVEL)
