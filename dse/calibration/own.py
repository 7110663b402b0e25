"""A user's own measurements, and the calibration fitted to them on top of the packaged one.

An architect with a machine measures it (samples/s of a DLRM training run) and writes the rows in
a CSV (:data:`OWN_COLUMNS`): each names the system and workload as ``dse evaluate`` takes them (a
preset, or a TOML file beside the CSV) with ``--set`` overrides, so every row is a design the
model scores exactly as it scores a design of a study.

``dse calibrate --data mine.csv`` (:func:`fit_own`) fits only what those rows constrain and keeps
the packaged calibration's value, or range, for everything else. Taken in order of the rows'
largest elasticity to it (:func:`choose`), a parameter is fitted when

- the rows' predictions depend on it: its elasticity (the change of log throughput per change of
  log parameter, by finite differences of :data:`ELASTICITY_STEP` each way) reaches
  :data:`MIN_ELASTICITY` on some row;
- there are more rows than parameters chosen so far: one row fits one parameter;
- the rows tell it apart from those: its elasticities across the rows do not lie (nearly) in the
  span of theirs (:data:`MIN_INDEPENDENCE`);
- and the rows pin it more tightly than the published measurements already do
  (:func:`pinned_to`): each row taken to carry the model's error on a measured point
  (:class:`Prior`), against the spread of the packaged ensemble's refits. A parameter no published
  measurement pins (a prior, or a range such as ``host_efficiency``) is fitted whenever the rows
  constrain it; one the published points pin well (``fabric_efficiency``) only when the rows pin
  it better, so a few rows of one node do not undo what 57 published systems measured.

The rows are one software family, the user's own, and they are scored at factor 1: the speed
every design is scored at. So the parameters they constrain absorb the user's software as well as
the machine, and designs are then scored as that software would run them; the packaged families'
factors are kept (they only say how the published measurements ran).

A parameter stated as a range by default (``host_efficiency`` for a user who measured a node
with tables in host memory) that the rows fit is pinned: it leaves the written file's
``[ranges]`` (:attr:`~dse.model.parameters.Calibration.own_fitted`).
"""

from __future__ import annotations

import csv
import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from dse.calibration.ensemble import CalibrationEnsemble
from dse.calibration.fit import (
    CEILINGS_S,
    FIT_PARAMETERS,
    MAD_TO_SIGMA,
    OVERHEAD_FLOORS_S,
    levenberg_marquardt,
)
from dse.errors import DseInputError
from dse.limits import MAX_DATA_FILE_BYTES
from dse.model.evaluate import evaluate
from dse.model.parameters import FITTED_PARAMETERS, Calibration
from dse.model.placement import Plan
from dse.model.power import NOT_TIMING
from dse.model.system import System, load_system
from dse.model.timing import step_time
from dse.model.workload import Workload, load_workload
from dse.reading import read_text
from dse.records import SYSTEM, WORKLOAD, named_beside, parse_override

T = TypeVar("T")

OWN_COLUMNS = ("id", "system", "workload", "set", "samples_per_s", "note")
"""Columns of a user's measurement CSV, in any order: ``id`` (unique), ``system`` and ``workload``
(a preset name, or a TOML file: a relative path or a name is looked for beside the CSV first, as
a study's files are), ``set`` (``--set`` overrides separated by ``;``, ``workload.`` keys to the
workload: ``nodes=2;workload.global_batch=32768``; optional), ``samples_per_s`` (the measured
training throughput, positive) and ``note`` (free text; optional)."""
REQUIRED_COLUMNS = ("id", "system", "workload", "samples_per_s")
"""The columns every user CSV must have."""
CANDIDATES: tuple[str, ...] = tuple(n for n in FITTED_PARAMETERS if n not in NOT_TIMING)
"""Every parameter a user's rows may constrain: those that move the step (the power levels and the
training utilisation move wall power alone, :data:`dse.model.power.NOT_TIMING`)."""
ELASTICITY_STEP = 0.1
"""Relative move of a parameter (down and up, within its bounds) by which its elasticity is
measured: wide enough to see a stage that a step's overlap hides until it grows."""
MIN_ELASTICITY = 0.05
"""A row constrains a parameter when its log throughput moves by at least this share of the
parameter's log move (5%: the parameter 10% off moves the prediction 0.5%, about the
run-to-run spread of a throughput measurement); below it the rows cannot see the parameter."""
MIN_INDEPENDENCE = 0.1
"""Smallest singular value of the chosen parameters' unit-norm elasticity columns: below it a
parameter's effect on the rows is (nearly) a combination of those already chosen, and a fit would
trade them freely."""
RIDGE = 1e-9
"""Added to the diagonal of ``J^T J`` so a parameter the rows barely move gets a wide, finite
spread rather than a singular matrix."""


@dataclass(frozen=True, slots=True)
class OwnMeasurement:
    """One row of a user's measurement CSV, with the design it describes."""

    id: str
    system: str
    """The ``system`` column as written."""
    workload: str
    """The ``workload`` column as written."""
    overrides: tuple[tuple[str, Any], ...]
    """The ``set`` column's overrides, in order."""
    samples_per_s: float
    note: str
    where: str
    """``FILE:LINE`` of the row, for messages."""
    design_workload: Workload
    design_system: System


def load_own_measurements(path: Path) -> tuple[OwnMeasurement, ...]:
    """A user's measurement CSV, strictly: the header of :data:`OWN_COLUMNS` (every one of
    :data:`REQUIRED_COLUMNS`, no other), unique ids, positive throughputs, and every row's system
    and workload loading with its overrides; each failure one line naming the file (and line) and
    the column."""
    name = str(path)
    text = read_text(path, MAX_DATA_FILE_BYTES, name)
    reader = csv.DictReader(text.splitlines())
    header = [h.strip() for h in reader.fieldnames or ()]
    unknown = [c for c in header if c not in OWN_COLUMNS]
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if unknown or missing or len(set(header)) != len(header):
        problem = (f"unknown column {unknown[0]!r}" if unknown else f"missing column {missing[0]!r}"
                   if missing else "a column is given twice")
        raise DseInputError(name, "header", f"{problem} (columns: {', '.join(OWN_COLUMNS)}; "
                            f"required: {', '.join(REQUIRED_COLUMNS)})")
    reader.fieldnames = header
    rows: list[OwnMeasurement] = []
    for line, raw in enumerate(reader, start=2):
        if None in raw or any(v is None for v in raw.values()):
            raise DseInputError(f"{name}:{line}", "", f"expected {len(header)} fields")
        row = _own_row({k: v.strip() for k, v in raw.items()}, path, f"{name}:{line}")
        if any(r.id == row.id for r in rows):
            raise DseInputError(row.where, "id", f"duplicate id {row.id!r}")
        rows.append(row)
    if not rows:
        raise DseInputError(name, "", "no measurements")
    return tuple(rows)


def _own_row(raw: dict[str, str], csv_path: Path, where: str) -> OwnMeasurement:
    """One row of :func:`load_own_measurements`: its values checked and its design loaded."""
    for key in REQUIRED_COLUMNS:
        if not raw[key]:
            raise DseInputError(where, key, "must not be empty")
    try:
        rate = float(raw["samples_per_s"])
    except ValueError:
        raise DseInputError(where, "samples_per_s", f"expected a number, got "
                            f"{raw['samples_per_s']!r}") from None
    if not 0 < rate < math.inf:
        raise DseInputError(where, "samples_per_s", f"must be a positive finite rate, got {rate:g}")
    try:
        overrides = tuple(parse_override(item) for item in raw.get("set", "").split(";") if item.strip())
    except DseInputError as exc:
        raise DseInputError(where, "set", str(exc)) from None
    wl_set = tuple((k.removeprefix("workload."), v) for k, v in overrides if k.startswith("workload."))
    sys_set = tuple((k.removeprefix("system."), v) for k, v in overrides if not k.startswith("workload."))
    wl = _loaded(where, "workload", lambda: str(named_beside(raw["workload"], WORKLOAD, csv_path)),
                 load_workload, wl_set)
    sysm = _loaded(where, "system", lambda: str(named_beside(raw["system"], SYSTEM, csv_path)),
                   lambda f, s: load_system(f, s), sys_set)
    return OwnMeasurement(raw["id"], raw["system"], raw["workload"], overrides, rate,
                          raw.get("note", ""), where, wl, sysm)


def _loaded(where: str, column: str, resolve: Callable[[], str],
            load: Callable[[str, tuple[tuple[str, Any], ...]], T],
            overrides: tuple[tuple[str, Any], ...]) -> T:
    """``load(file, overrides)`` of a row's ``column``; an error names the row and the column at
    fault: the column when its file does not load, ``set`` when only the overrides fail."""
    try:
        found = resolve()
        plain = load(found, ())
    except DseInputError as exc:
        raise DseInputError(where, column, str(exc)) from None
    if not overrides:
        return plain
    try:
        return load(found, overrides)
    except DseInputError as exc:
        raise DseInputError(where, "set", str(exc)) from None


# --- predictions -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OwnRow:
    """A row with its placement (which no calibration parameter changes), ready to predict."""

    measurement: OwnMeasurement
    plan: Plan

    def log_predicted(self, calib: Calibration) -> float:
        """Log samples/s the model predicts for the row under ``calib`` (software factor 1)."""
        m = self.measurement
        step = step_time(m.design_workload, m.design_system, self.plan, calib).step_s
        return math.log(m.design_workload.global_batch / step) if 0 < step < math.inf else -math.inf


def prepared(rows: Sequence[OwnMeasurement], calib: Calibration) -> list[OwnRow]:
    """Each row placed; a design the model finds infeasible (its tables fit nowhere, too small a
    batch...) is refused, naming the row: no throughput to fit to."""
    out = []
    for m in rows:
        ev = evaluate(m.design_workload, m.design_system, calib)
        if not ev.feasible or not 0 < ev.throughput_samples_per_s < math.inf:
            raise DseInputError(m.where, "system", "the model finds this design infeasible ("
                                + "; ".join(ev.reasons or ("no finite throughput",)) + ")")
        out.append(OwnRow(m, ev.plan))
    return out


def log_errors(rows: Sequence[OwnRow], calib: Calibration) -> np.ndarray:
    """``log predicted - log measured`` of every row under ``calib``."""
    return np.array([r.log_predicted(calib) - math.log(r.measurement.samples_per_s) for r in rows])


# --- which parameters the rows constrain ------------------------------------------------------


def bounds(name: str) -> tuple[float, float]:
    """The open range parameter ``name`` lives in: (0, 1) for an efficiency (a field bounded by
    1), else (its measured floor, its ceiling) (:data:`~dse.calibration.fit.OVERHEAD_FLOORS_S`,
    :data:`~dse.calibration.fit.CEILINGS_S`; 0 and infinity where none is stated)."""
    meta = next(f.metadata for f in fields(Calibration) if f.name == name)
    if meta.get("max") == 1.0:
        return 0.0, 1.0
    return OVERHEAD_FLOORS_S.get(name, 0.0), CEILINGS_S.get(name, math.inf)


def elasticities(rows: Sequence[OwnRow], calib: Calibration,
                 names: Sequence[str] = CANDIDATES) -> np.ndarray:
    """``rows x names``: each row's elasticity to each parameter, ``d log throughput / d log
    parameter`` by finite differences of :data:`ELASTICITY_STEP` down and up (a move that would
    leave the parameter's bounds is not made); of the two, the one larger in size, with its sign,
    so a stage an overlap hides until it grows still counts."""
    base = np.array([r.log_predicted(calib) for r in rows])
    out = np.zeros((len(rows), len(names)))
    for j, name in enumerate(names):
        value = float(getattr(calib, name))
        lo, hi = bounds(name)
        best = np.zeros(len(rows))
        for factor in (1 - ELASTICITY_STEP, 1 + ELASTICITY_STEP):
            moved = value * factor
            if value <= 0 or not lo < moved < hi:
                continue
            logs = np.array([r.log_predicted(calib.with_values(**{name: moved})) for r in rows])
            e = (logs - base) / math.log(factor)
            best = np.where(np.abs(e) > np.abs(best), e, best)
        out[:, j] = best
    return out


@dataclass(frozen=True, slots=True)
class Prior:
    """What the packaged calibration already knows, against which a user's rows are weighed."""

    sigma: float
    """One row's log error: the model's error on a measured point, the packaged leave-one-out
    residuals' normalised median absolute deviation (:data:`dse.calibration.fit.MAD_TO_SIGMA`)."""
    spread: dict[str, float]
    """For each parameter the packaged fit pins, the spread of its free coordinate
    (:func:`encode`) over the packaged ensemble's bootstrap members, as a standard deviation
    estimated robustly (the normalised median absolute deviation: a few members saturated at a
    bound would inflate a plain one many times); a parameter not listed no published measurement
    pins (a prior or a range)."""


def prior_of(ens: CalibrationEnsemble) -> Prior:
    """:class:`Prior` from the packaged ensemble (as :func:`~dse.calibration.ensemble.load_ensemble`
    returns it)."""
    spread = {name: robust_sd(np.array([encode(m, [name])[0] for m in ens.members]))
              for name in FIT_PARAMETERS}
    return Prior(robust_sd(np.asarray(ens.loo_log_residuals)), spread)


def robust_sd(x: np.ndarray) -> float:
    """The normalised median absolute deviation of ``x`` (:data:`~dse.calibration.fit.MAD_TO_SIGMA`):
    a standard deviation under normal errors that a few outlying values do not inflate."""
    return MAD_TO_SIGMA * float(np.median(np.abs(x - np.median(x)))) if x.size else 0.0


@dataclass(frozen=True, slots=True)
class Choice:
    """What the rows say of one parameter."""

    name: str
    elasticity: float
    """Its largest elasticity over the rows, in size (with its sign)."""
    fitted: bool
    reason: str
    """Why it is fitted, or why it keeps its packaged value, in words."""
    pinned: float = math.nan
    """How tightly the rows pin it (:func:`pinned_to`: one standard deviation relative to its
    value; NaN when the rules before that test already decided)."""


def choose(rows: Sequence[OwnRow], calib: Calibration, prior: Prior,
           names: Sequence[str] = CANDIDATES) -> tuple[Choice, ...]:
    """Which of ``names`` the rows constrain under ``calib``, taken in order of their largest
    elasticity (:func:`elasticities`): a parameter is fitted when the rows depend on it (at least
    :data:`MIN_ELASTICITY`), fewer parameters than rows are chosen so far, the rows tell it apart
    from those (:data:`MIN_INDEPENDENCE`), and they pin it more tightly than the published
    measurements do (:func:`pinned_to` against ``prior.spread``)."""
    elastic = elasticities(rows, calib, names)
    peak = [float(elastic[np.argmax(np.abs(elastic[:, j])), j]) for j in range(len(names))]
    order = sorted(range(len(names)), key=lambda j: (-abs(peak[j]), names[j]))
    chosen: list[int] = []
    out = []
    for j in order:
        size, name = abs(peak[j]), names[j]
        if size < MIN_ELASTICITY:
            reason = f"your rows do not depend on it (elasticity {size:.3f} < {MIN_ELASTICITY:g})"
        elif len(chosen) >= len(rows):
            reason = (f"your rows depend on it (elasticity {size:.2f}), but {len(rows)} row(s) fit "
                      f"at most {len(rows)} parameter(s)")
        elif _independence(elastic[:, [*chosen, j]]) < MIN_INDEPENDENCE:
            reason = (f"your rows depend on it (elasticity {size:.2f}) as they do on "
                      f"{', '.join(names[c] for c in chosen)}: not separable with these rows")
        elif not 0 < _slope(calib, name) < math.inf:
            reason = (f"your rows depend on it (elasticity {size:.2f}), but it sits at a bound of "
                      f"its range ({float(getattr(calib, name)):g}), where a fit cannot move it")
        else:
            own, packaged = pinned_to(rows, calib, [names[c] for c in chosen], name, prior)
            if own < packaged:
                chosen.append(j)
                out.append(Choice(name, peak[j], True, f"fitted (elasticity {size:.2f}; your rows "
                                  f"pin it to +-{own:.0%}" + (f", the published measurements to "
                                  f"+-{packaged:.0%})" if math.isfinite(packaged) else ")"), own))
                continue
            out.append(Choice(name, peak[j], False, f"your rows depend on it (elasticity "
                              f"{size:.2f}) but pin it to +-{own:.0%}, the published measurements "
                              f"to +-{packaged:.0%}: kept", own))
            continue
        out.append(Choice(name, peak[j], False, reason + ": kept"))
    return tuple(out)


def pinned_to(rows: Sequence[OwnRow], calib: Calibration, chosen: Sequence[str], name: str,
              prior: Prior) -> tuple[float, float]:
    """How tightly the rows would pin ``name`` fitted with ``chosen``, and how tightly the
    published measurements do (infinite when none does), each as one standard deviation of the
    parameter relative to its value: the rows' from ``prior.sigma^2 (J^T J)^-1`` in the free
    coordinates, the packaged one from ``prior.spread``; both carried to the value through the
    slope of :func:`decode` at ``calib``."""
    names = [*chosen, name]
    jac = jacobian(rows, calib, names)
    cov = prior.sigma ** 2 * np.linalg.inv(jac.T @ jac + RIDGE * np.eye(len(names)))
    slope = _slope(calib, name)
    own = math.sqrt(float(cov[-1, -1])) * slope
    return own, prior.spread.get(name, math.inf) * slope


def _slope(calib: Calibration, name: str) -> float:
    """``d value / d z`` of ``name``'s free coordinate at ``calib``, relative to the value."""
    v = float(getattr(calib, name))
    lo, hi = bounds(name)
    if v <= 0:
        return math.inf
    # At a bound (an efficiency of 1, an overhead on its floor) the free coordinate saturates: 0.
    u = min(max((v - lo) / (hi - lo), 1e-9), 1 - 1e-9) if math.isfinite(hi) else 0.0
    slope = (hi - lo) * u * (1 - u) if math.isfinite(hi) else max(v - lo, 0.0)
    return slope / v if slope > (hi - lo if math.isfinite(hi) else v) * 1e-6 else 0.0


def _independence(columns: np.ndarray) -> float:
    """Smallest singular value of ``columns`` scaled to unit norm: 1 for orthogonal columns, 0 when
    one is a combination of the others."""
    norms = np.linalg.norm(columns, axis=0)
    if np.any(norms == 0):
        return 0.0
    return float(np.linalg.svd(columns / norms, compute_uv=False).min())

# --- the fit ----------------------------------------------------------------------------------


def encode(calib: Calibration, names: Sequence[str]) -> np.ndarray:
    """The free coordinates of ``names``: a logistic map of each bounded range, a log above the
    floor of one open above (so no step of the fit leaves a parameter's bounds)."""
    z = []
    for name in names:
        v = float(getattr(calib, name))
        lo, hi = bounds(name)
        if math.isfinite(hi):
            u = min(max((v - lo) / (hi - lo), 1e-9), 1 - 1e-9)
            z.append(math.log(u / (1 - u)))
        else:
            z.append(math.log(max(v - lo, 1e-15)))
    return np.array(z)


def decode(z: np.ndarray, base: Calibration, names: Sequence[str]) -> Calibration:
    """``base`` with ``names`` set from their free coordinates ``z`` (:func:`encode`'s inverse)."""
    values: dict[str, float] = {}
    for zi, name in zip(z, names, strict=True):
        lo, hi = bounds(name)
        x = min(max(float(zi), -700.0), 700.0)  # a wild trial step must not overflow exp
        values[name] = lo + (hi - lo) / (1 + math.exp(-x)) if math.isfinite(hi) else lo + math.exp(x)
    return base.with_values(**values)


def refit(rows: Sequence[OwnRow], start: Calibration, names: Sequence[str]) -> Calibration:
    """``start`` with ``names`` fitted to ``rows`` by least squares on the log errors
    (Levenberg-Marquardt, :func:`dse.calibration.fit.levenberg_marquardt`)."""
    if not names:
        return start
    z, _ = levenberg_marquardt(lambda zz: log_errors(rows, decode(zz, start, names)),
                               encode(start, names))
    return decode(z, start, names)


def jacobian(rows: Sequence[OwnRow], calib: Calibration, names: Sequence[str]) -> np.ndarray:
    """``d log predicted / d z`` of every row in the free coordinates of ``names``
    (forward differences), at ``calib``."""
    z0 = encode(calib, names)
    r0 = log_errors(rows, calib)
    out = np.empty((len(rows), len(names)))
    for j in range(len(names)):
        h = 1e-5 * max(1.0, abs(z0[j]))
        z = z0.copy()
        z[j] += h
        out[:, j] = (log_errors(rows, decode(z, calib, names)) - r0) / h
    return out


@dataclass(frozen=True, slots=True)
class OwnFit:
    """A calibration fitted to a user's rows on top of ``base``."""

    base: Calibration
    calibration: Calibration
    rows: tuple[OwnRow, ...]
    choices: tuple[Choice, ...]
    """Every candidate parameter with what the rows say of it, fitted ones first."""
    prior: Prior
    """What the packaged calibration knew (:func:`prior_of`)."""
    before: tuple[float, ...]
    """Each row's log error under ``base``."""
    after: tuple[float, ...]
    """Each row's log error under the fitted calibration."""

    @property
    def fitted(self) -> tuple[str, ...]:
        """The parameters fitted to the rows."""
        return tuple(c.name for c in self.choices if c.fitted)


def fit_own(rows: Sequence[OwnMeasurement], base: Calibration, version: str, prior: Prior) -> OwnFit:
    """Fit what ``rows`` constrain (:func:`choose`, weighed against ``prior``) on top of ``base``,
    keeping every other value,
    range and software factor of it; the result is labelled ``version``, records ``base``'s
    version as ``based_on`` and the fitted parameters as ``own_fitted`` (a range they had is
    dropped), and adds the own fit's figures to ``base``'s ``[fit]`` table (``own_points``,
    ``own_fitted_parameters``, ``own_median_abs_pct_error``, ``own_max_abs_pct_error``). Rows that
    fit a parameter were measured on their own data, whose popularity's skew is then in what they
    fit: the result keeps no skew range (``access_zipf_spread`` 0), which stands for the unknown
    skew of the published measurements' Criteo data."""
    ready = tuple(prepared(rows, base))
    choices = choose(ready, base, prior)
    names = [c.name for c in choices if c.fitted]
    fitted = refit(ready, base, names)
    after = log_errors(ready, fitted)
    errors = np.abs(np.expm1(after)) * 100  # |predicted - measured| / measured, percent
    calib = dataclasses.replace(
        fitted, version=version, based_on=base.version, own_fitted=tuple(names),
        access_zipf_spread=0.0 if names else base.access_zipf_spread,
        ranges={k: v for k, v in base.ranges.items() if k not in names},
        fit={**base.fit, "own_points": float(len(ready)), "own_fitted_parameters": float(len(names)),
             "own_median_abs_pct_error": float(np.median(errors)),
             "own_max_abs_pct_error": float(errors.max())})
    return OwnFit(base, calib, ready, tuple(sorted(choices, key=lambda c: not c.fitted)), prior,
                  tuple(float(x) for x in log_errors(ready, base)), tuple(float(x) for x in after))
