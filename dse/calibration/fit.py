"""Fit the model's calibration parameters to published measurements and measure its accuracy.

The fit minimises a loss of the log throughput residuals over the named parameters of
:class:`~dse.calibration.Calibration` (listed in :data:`FIT_PARAMETERS`) plus one software factor per
software family (the reference family is fixed at 1). Bounds keep every parameter physical: an
efficiency is mapped through a logistic function onto (0, 1), an overhead through ``floor + exp``
onto (floor, inf), where the floor is a measured lower bound of that fixed cost
(:data:`OVERHEAD_FLOORS_S`), or through a logistic function onto (floor, ceiling) where it has a
ceiling too (:data:`CEILINGS_S`). The optimiser is Levenberg-Marquardt with forward-difference Jacobians
(numpy only).

The loss is a calibration-method choice (:data:`LOSSES`, default :data:`FIT_LOSS`):

- ``"squares"``: least squares on the log residuals.
- ``"huber"``: Huber's M-estimator (P. J. Huber, "Robust estimation of a location parameter",
  Annals of Mathematical Statistics 35(1), 1964), solved by iteratively reweighted least squares
  (P. W. Holland and R. E. Welsch, "Robust regression using iteratively reweighted
  least-squares", Communications in Statistics - Theory and Methods 6(9), 1977) around the same
  Levenberg-Marquardt solver: each point's residual is scaled by ``sqrt(w_i)`` with
  ``w_i = min(1, k s / |r_i|)``, and the weights are recomputed from the new residuals until they
  stop moving. Squared loss lets one point the model cannot explain (a machine that changed state
  mid-run) move shared efficiencies by as much as its residual asks; under Huber's loss a point
  beyond ``k s`` pulls with a bounded force. Both constants are textbook values, not tuned here:
  ``k = 1.345`` (:data:`HUBER_K`, 95% efficiency relative to least squares under normal errors)
  and the scale ``s`` re-estimated every round as the normalised median absolute deviation of the
  residuals, ``1.4826 median(|r - median(r)|)`` (:data:`MAD_TO_SIGMA`, consistent with the
  standard deviation under normal errors). Every fit (the forward fit, leave-one-out, the
  ensemble's refits in :mod:`dse.calibration.ensemble`) goes through :func:`fit` with the same
  loss.

While fitting, each measurement's placement is held at the plan made with the current calibration
(placement depends on calibration only through its balancing estimates); the fit re-plans and
refits until the plans stop moving (``REPLANS`` rounds at most). Validation scores the final
calibration with the full model.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.calibration.generations import (
    GenerationHoldout,
    RatioReport,
    architecture_of,
    generations,
    ratio_report,
    spearman,
)
from dse.calibration.measurements import (
    MEASUREMENT_CLASSES,
    POWER_MEASUREMENTS,
    REFERENCE_FAMILY,
    Measurement,
    PowerMeasurement,
    fitted,
    measurement_design,
)
from dse.errors import DseInputError
from dse.model.cost import power
from dse.model.evaluate import evaluate
from dse.model.parameters import DEFAULT_RANGES, Calibration
from dse.model.placement import Plan, plan_placement
from dse.model.power import flat
from dse.model.system import System, load_system
from dse.model.timing import step_time
from dse.model.workload import Workload, load_workload

FIT_PARAMETERS: tuple[str, ...] = (
    "dense_efficiency_simt",
    "dense_efficiency_tf32",
    "dense_efficiency_half",
    "memory_efficiency",
    "fabric_efficiency",
    "network_efficiency",
    "kernel_overhead_s",
    "key_peer_latency_s",
)
"""Scalar parameters the measurements constrain. ``host_efficiency`` (no fitted measurement places
tables in host memory; :data:`PRIOR_REASONS`), ``collective_latency_s`` and ``peer_latency_s``
(not separable from the per-kernel overhead with these data) and ``step_overhead_s`` (a measured
host synchronisation) keep their priors. ``accelerator_training_utilisation`` does not move
throughput; it is fitted to wall power after this fit (:func:`fit_power`)."""
EFFICIENCIES = frozenset(p for p in FIT_PARAMETERS if p.endswith("efficiency") or "_efficiency_" in p)
OVERHEAD_FLOORS_S: dict[str, float] = {
    "kernel_overhead_s": 0.5e-6,
    "key_peer_latency_s": 0.6e-6,
}
"""Measured floors of the fitted fixed costs (seconds). A kernel launched from a CUDA graph still
leaves about 0.5 us between dependent kernels (NVIDIA technical blog "Getting Started with CUDA
Graphs", 2019: a chain of short kernels took 3.4 us per kernel with a graph against 2.9 us of
kernel execution). The fit may only raise them. ``key_peer_latency_s``: NCCL 2.18.5's own latency
model (the NCCL of MLPerf v3.1's DGX H100 runs) charges 0.6 us per NVLink hop of its lowest-latency protocol
(``hwLat``, LL, NVIDIA/nccl ``src/graph/tuning.cc`` lines 65-69, tag v2.18.5-1): no message to a
peer costs less."""
CEILINGS_S: dict[str, float] = {
    "key_peer_latency_s": 14e-6,
}
"""Upper bounds of fitted costs (seconds). ``key_peer_latency_s``: 14 us, NCCL 2.18.5's latency of
one network hop with its slowest protocol (Simple; ``hwLat`` NET, ``src/graph/tuning.cc`` line 75):
a peer's message costs at most one such hop even when the peers are served one after another."""
AT_BOUND_REASONS: dict[str, str] = {
    "dense_efficiency_simt": (
        "The only fp32 (non tensor-core) points are DeepLearningExamples PyTorch on V100; they "
        "share one software factor with the mixed-precision runs of the same source, and fp32 "
        "runs lose less to that software (long GEMMs, short remainder) than tensor-core runs do, "
        "which one factor per source cannot express. cuBLAS SGEMM reaches 85-95% of fp32 peak on "
        "large GEMMs (NVIDIA cuBLAS performance pages), so the bound is not far from physics."),
    "kernel_overhead_s": (
        "At its measured floor (a CUDA-graph-launched kernel, 0.5 us): the measured systems launch "
        "their steps as CUDA graphs (HugeCTR and DeepLearningExamples PyTorch use them), and the "
        "data do not ask for more."),
}
"""Why a fitted parameter may end at a bound of its range; ``docs/validation.md`` lists every
parameter at a bound with its reason, and a parameter at a bound without one fails the tests."""
PRIOR_REASONS: dict[str, str] = {
    "host_efficiency": (
        "Not fitted: every fitted measurement holds its tables in HBM (class hbm_resident), so "
        "the data cannot constrain it; it keeps its prior, half of stream bandwidth for random "
        "64 B gathers, and matters only for designs that spill tables to DDR. The host-memory "
        "points collected for issue 27 (docs/host_memory_data.md) do not constrain it either: 8 "
        "usable rows from 3 sources (two of one project), none CPU-pooled inside a node (the two "
        "CPU-embedding hybrids found, docs/host_memory_candidates.md, pool on a remote parameter "
        "server or feed Ascend NPUs, which the model does not describe); the one the model "
        "places as measured predicts the same for every value from 0.1 to 1, the cache points "
        "hang on unpublished hit rates, and the TorchRec 2026 rows run a benchmark model with no "
        "preset here (their UVM difference alone asks for about 0.7 on 2 KB rows). So it is a range, "
        "0.25-0.82 (dse.model.parameters: TorchRec PR #4099's UVM rows give the top), drawn by the "
        "ensemble and taken in by every interval of a design that reads host memory."),
    "collective_latency_s": (
        "Not fitted: the fixed cost of one collective is not separable from the per-kernel overhead "
        "with these data (both add a constant per step); it keeps the nccl-tests small-message "
        "latency on one node, 15 us."),
    "peer_latency_s": (
        "Not fitted: a free fit drives it to 0, trading it against the network efficiency on the "
        "few multi-node points (one message per peer can cost no less than a network or NVLink "
        "message latency, about 1 us), so it keeps that prior; the hierarchical all-to-all pays it "
        "once per peer in the domain and once per other domain."),
    "step_overhead_s": (
        "Not fitted: a physical quantity, one host synchronisation per step (loss and "
        "gradient-scaler check, data hand-off), 5 us (NVIDIA technical blog \"Getting Started with "
        "CUDA Graphs\", 2019: 9.6 us per kernel when each launch was followed by a stream "
        "synchronisation, against 3.8 us without). Every earlier fit (calibrations 2026.12-1 and "
        "-2, where it was fitted above this floor) left it at the floor: the data ask for no more "
        "than one synchronisation per step, and a fixed cost a step is not separable from the "
        "per-kernel overhead with them."),
    "access_zipf_spread": (
        "Not fitted: it moves no step. It is how far a skewed workload's Zipf exponent may lie "
        "either side of its stated value (1.05 for Criteo), which no measurement pins: refits with "
        "every measured workload's exponent at 0.8 and at 1.3 reproduce the measurements about as "
        "well (median errors 7.0% and 4.0%); every interval takes in both ends [A]."),
}
PRIOR_REASONS.update({
    name: (f"Not fitted: no measurement depends on it, so it is a range, {lo:g}-{hi:g} ({why}), drawn by "
           "the ensemble and taken in by every interval of a design that depends on it.")
    for name, ((lo, hi), why) in DEFAULT_RANGES.items() if name not in PRIOR_REASONS})
"""Why each calibration parameter outside :data:`FIT_PARAMETERS` keeps its prior (listed in
``docs/validation.md`` beside the fitted ones): those stated here, and every parameter stated as a
range (:data:`~dse.model.parameters.DEFAULT_RANGES`) by its range's source."""


def parameter_bounds(name: str) -> tuple[float, float]:
    """The open range a fitted parameter lives in: (0, 1) for an efficiency, (floor, inf) for an
    overhead."""
    if name in EFFICIENCIES:
        return 0.0, 1.0
    return OVERHEAD_FLOORS_S.get(name, 0.0), CEILINGS_S.get(name, math.inf)


def at_bound(calib: Calibration, rel: float = 1e-3) -> list[str]:
    """The fitted parameters of ``calib`` within ``rel`` of a bound of their range."""
    out = []
    for name in FIT_PARAMETERS:
        v = float(getattr(calib, name))
        lo, hi = parameter_bounds(name)
        near_lo = v <= lo * (1 + rel) if lo > 0 else v <= rel * (1.0 if hi == 1.0 else 1e-6)
        if near_lo or (math.isfinite(hi) and v >= hi * (1 - rel)):
            out.append(name)
    return out
REPLANS = 3
MAX_ITERATIONS = 200

LOSSES: tuple[str, ...] = ("huber", "squares")
"""Losses :func:`fit` can minimise (module docstring)."""
FIT_LOSS = "squares"
"""The calibration method's loss. Huber's was measured against squares on the 58 points and would
be the default only if it predicted no worse out of sample in both tests; it does not: on
calibration 2026.12-3's model it cuts the leave-one-out median |error| from 11.6% to 8.4% (and the
in-sample median from 10.2% to 5.8%), but the forward median (fit through 2022, predict the 2023
DCNv2 points) rises from 12.8% to 14.3% (``docs/validation.md``, "Robust loss"); on 2026.12-5's
model it is still worse out of sample (leave-one-out 6.4% against 6.1%, forward 10.5% against
10.3%).
``dse calibrate --loss huber`` fits with it."""
HUBER_K = 1.345
"""Huber's threshold in units of the residuals' scale: 95% asymptotic efficiency relative to
least squares under normal errors (Holland and Welsch 1977; the textbook default)."""
MAD_TO_SIGMA = 1.4826
"""Normalised median absolute deviation: ``1 / Phi^-1(3/4)``, so that ``MAD_TO_SIGMA * MAD`` estimates
the standard deviation of normal errors (``1 / 0.6745``)."""
IRLS_ROUNDS = 20
"""Reweighting rounds at most per placement round (the weights typically settle in 3-6)."""
IRLS_TOLERANCE = 1e-3
"""The weights have stopped moving when none changes by more than this between rounds."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """A measurement with its design and current placement."""

    measurement: Measurement
    workload: Workload
    system: System
    plan: Plan


def prepare(measurements: Sequence[Measurement], calib: Calibration) -> list[Prepared]:
    """Resolve each measurement's design and place it with ``calib``."""
    out = []
    for m in measurements:
        wl, sysm = measurement_design(m)
        out.append(Prepared(m, wl, sysm, plan_placement(wl, sysm)))
    return out


def predict(p: Prepared, calib: Calibration) -> float:
    """Predicted samples/s of a prepared measurement (with its software family's factor)."""
    step = step_time(p.workload, p.system, p.plan, calib).step_s
    factor = calib.software_factor.get(p.measurement.family, 1.0)
    return p.workload.global_batch / step * factor


def predict_full(m: Measurement, calib: Calibration) -> float:
    """Predicted samples/s with the full model (placement redone with ``calib``)."""
    return _predict_point(m, calib)[0]


# --- parameter vector <-> calibration ----------------------------------------------------------


def _families(measurements: Sequence[Measurement]) -> list[str]:
    return sorted({m.family for m in measurements} - {REFERENCE_FAMILY})


def _encode(calib: Calibration, families: Sequence[str]) -> np.ndarray:
    z = []
    for name in FIT_PARAMETERS:
        v = float(getattr(calib, name))
        if name in EFFICIENCIES:
            v = min(max(v, 1e-4), 1 - 1e-6)
            z.append(math.log(v / (1 - v)))
        elif name in CEILINGS_S:  # logistic onto (floor, ceiling)
            lo, hi = parameter_bounds(name)
            u = min(max((v - lo) / (hi - lo), 1e-6), 1 - 1e-6)
            z.append(math.log(u / (1 - u)))
        else:
            floor = OVERHEAD_FLOORS_S.get(name, 0.0)
            z.append(math.log(max(v - floor, 1e-12)))
    z.extend(math.log(calib.software_factor.get(f, 1.0)) for f in families)
    return np.array(z)


def _decode(z: np.ndarray, base: Calibration, families: Sequence[str]) -> Calibration:
    values: dict[str, Any] = {}
    for i, name in enumerate(FIT_PARAMETERS):
        zi = min(max(float(z[i]), -700.0), 700.0)  # a wild trial step must not overflow exp
        if name in CEILINGS_S:
            lo, hi = parameter_bounds(name)
            values[name] = lo + (hi - lo) / (1 + math.exp(-zi))
            continue
        values[name] = (1 / (1 + math.exp(-zi)) if name in EFFICIENCIES
                        else OVERHEAD_FLOORS_S.get(name, 0.0) + math.exp(zi))
    factors = {REFERENCE_FAMILY: 1.0}
    n = len(FIT_PARAMETERS)
    factors.update({f: math.exp(z[n + i]) for i, f in enumerate(families)})
    return dataclasses.replace(base, software_factor=factors, **values)


def levenberg_marquardt(
    residuals: Callable[[np.ndarray], np.ndarray], z0: np.ndarray, max_iter: int = MAX_ITERATIONS
) -> tuple[np.ndarray, int]:
    """Minimise ``sum(residuals(z)**2)`` from ``z0``; returns the solution and the iterations used."""
    z = z0.astype(float)
    r = residuals(z)
    cost = float(r @ r)
    lam = 1e-3
    for it in range(1, max_iter + 1):
        jac = np.empty((r.size, z.size))
        for j in range(z.size):
            h = 1e-6 * max(1.0, abs(z[j]))
            dz = z.copy()
            dz[j] += h
            jac[:, j] = (residuals(dz) - r) / h
        grad = jac.T @ r
        hess = jac.T @ jac
        improved = False
        while lam < 1e10:
            damp = hess + lam * np.diag(np.diag(hess) + 1e-9)
            step = np.linalg.solve(damp, -grad)
            z_new = z + step
            r_new = residuals(z_new)
            c_new = float(r_new @ r_new)
            if c_new < cost:
                improved = True
                done = cost - c_new < 1e-10 * max(cost, 1e-12)
                z, r, cost = z_new, r_new, c_new
                lam = max(lam / 3, 1e-12)
                break
            lam *= 4
        if not improved or done:
            return z, it
    return z, max_iter


def check_loss(loss: str) -> str:
    """``loss`` if it is one of :data:`LOSSES`; else a one-line :class:`DseInputError`."""
    if loss not in LOSSES:
        raise DseInputError("--loss", "", f"unknown loss {loss!r}; expected one of {', '.join(LOSSES)}")
    return loss


def huber_weights(residuals: np.ndarray, k: float = HUBER_K) -> np.ndarray:
    """Huber's IRLS weights of ``residuals``: ``min(1, k s / |r_i|)`` with ``s`` the normalised
    median absolute deviation (:data:`MAD_TO_SIGMA`). All 1 when ``s`` is 0 (half the points or
    more fitted exactly: no scale to call anything an outlier by)."""
    r = np.asarray(residuals, dtype=float)
    scale = MAD_TO_SIGMA * float(np.median(np.abs(r - np.median(r)))) if r.size else 0.0
    if scale <= 0.0:
        return np.ones_like(r)
    cut = k * scale
    out: np.ndarray = np.minimum(1.0, cut / np.maximum(np.abs(r), 1e-300))
    return out


def loss_weights(residuals: np.ndarray, loss: str) -> np.ndarray:
    """The weight of each residual under ``loss``: Huber's (:func:`huber_weights`) or all 1."""
    if check_loss(loss) == "huber":
        return huber_weights(residuals)
    return np.ones(np.asarray(residuals).size)


def irls(
    residuals: Callable[[np.ndarray], np.ndarray], z0: np.ndarray, loss: str,
    max_iter: int = MAX_ITERATIONS,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Minimise ``loss`` of ``residuals(z)`` from ``z0`` by iteratively reweighted least squares:
    Levenberg-Marquardt on ``sqrt(w) * residuals`` with the weights held, then the weights
    recomputed from the new residuals, until none moves by more than :data:`IRLS_TOLERANCE`
    (:data:`IRLS_ROUNDS` at most). Squares is the one round with all weights 1. Returns the
    solution, the final weights and the Levenberg-Marquardt iterations used."""
    z = z0.astype(float)
    w = loss_weights(residuals(z), loss)
    iterations = 0
    for _ in range(IRLS_ROUNDS if loss == "huber" else 1):
        root_w = np.sqrt(w)

        def weighted(zz: np.ndarray, root_w: np.ndarray = root_w) -> np.ndarray:
            out: np.ndarray = root_w * residuals(zz)
            return out

        z, its = levenberg_marquardt(weighted, z, max_iter)
        iterations += its
        w_new = loss_weights(residuals(z), loss)
        moved = float(np.max(np.abs(w_new - w))) if w.size else 0.0
        w = w_new
        if moved <= IRLS_TOLERANCE:
            break
    return z, w, iterations


def loss_record(loss: str) -> dict[str, float]:
    """What ``dse calibrate`` writes into a calibration's ``[fit]`` table to say its loss:
    ``huber_k`` for Huber's, nothing for squares (the calibrations fitted before the choice
    existed were fitted by squares)."""
    return {"huber_k": HUBER_K} if check_loss(loss) == "huber" else {}


def loss_of(calib: Calibration) -> str:
    """The loss ``calib`` was fitted with, from its ``[fit]`` table (:func:`loss_record`): Huber's
    when it records ``huber_k``, squares when it records a fit without it, and :data:`FIT_LOSS`
    for one never fitted (the priors)."""
    if "huber_k" in calib.fit:
        return "huber"
    return "squares" if calib.fit else FIT_LOSS


@dataclass(frozen=True, slots=True)
class Fit:
    """A fitted calibration and the residuals of the points it was fitted on."""

    calibration: Calibration
    log_residuals: tuple[float, ...]
    iterations: int
    free_parameters: int
    loss: str = "squares"
    """The loss minimised (:data:`LOSSES`)."""
    weights: tuple[float, ...] = ()
    """Each point's final weight (1 under squares; under Huber's loss, below 1 for a point whose
    residual lies beyond ``k s``)."""


def fit(
    measurements: Sequence[Measurement],
    start: Calibration | None = None,
    max_iter: int = MAX_ITERATIONS,
    loss: str = FIT_LOSS,
) -> Fit:
    """Fit :data:`FIT_PARAMETERS` and the software factors to ``measurements``: minimise ``loss``
    (:data:`LOSSES`; the module docstring says what each is and what Huber's is for) of the log
    residuals, re-planning the placements between rounds."""
    check_loss(loss)
    base = start or Calibration()
    families = _families(measurements)
    calib = base
    iterations = 0
    z = _encode(calib, families)
    weights = np.ones(len(measurements))
    for _ in range(REPLANS):
        prepared = prepare(measurements, calib)
        measured = np.log([p.measurement.samples_per_s for p in prepared])

        def residuals(zz: np.ndarray, prepared: list[Prepared] = prepared,
                      measured: np.ndarray = measured) -> np.ndarray:
            c = _decode(zz, base, families)
            out: np.ndarray = np.log([predict(p, c) for p in prepared]) - measured
            return out

        z_new, weights, its = irls(residuals, z, loss, max_iter)
        iterations += its
        moved = float(np.max(np.abs(z_new - z))) if z.size else 0.0
        z = z_new
        calib = _decode(z, base, families)
        if moved < 1e-3:
            break
    res = tuple(math.log(predict_full(m, calib)) - math.log(m.samples_per_s) for m in measurements)
    return Fit(calib, res, iterations, len(FIT_PARAMETERS) + len(families), loss,
               tuple(float(w) for w in weights))


# --- accuracy ----------------------------------------------------------------------------------


def abs_pct_error(predicted: float, measured: float) -> float:
    """|predicted - measured| / measured, in percent."""
    return abs(predicted - measured) / measured * 100.0


@dataclass(frozen=True, slots=True)
class PowerFit:
    """``accelerator_training_utilisation`` against its wall-power measurement: the model's wall
    power of the measured system training the measured workload, and the utilisation that would
    hit the middle of the measured range."""

    measurement: PowerMeasurement
    utilisation: float
    """The calibration's ``accelerator_training_utilisation``: the measured node's accelerators'
    average share of TDP - idle (:mod:`dse.model.power` makes it so, whatever the other levels)."""
    predicted_w: float
    exact_utilisation: float
    """The utilisation at which the model draws ``measurement.mid_w``, the node's other parts
    drawing as they do over its step."""

    @property
    def abs_pct_error(self) -> float:
        """|predicted - middle of the measured range| / middle, percent."""
        return abs_pct_error(self.predicted_w, self.measurement.mid_w)

    @property
    def within_range(self) -> bool:
        """Whether the prediction lies inside the measured range."""
        return self.measurement.low_w <= self.predicted_w <= self.measurement.high_w

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the ``power`` entry of ``dse validate --json``)."""
        m = self.measurement
        return {"parameter": "accelerator_training_utilisation", "value": self.utilisation,
                "exact_fit": self.exact_utilisation, "id": m.id, "system": m.system,
                "workload": m.workload, "measured_low_w": m.low_w, "measured_high_w": m.high_w,
                "predicted_w": self.predicted_w, "abs_pct_error": self.abs_pct_error,
                "within_range": self.within_range, "source": m.source}


def power_fit(calib: Calibration, measurement: PowerMeasurement = POWER_MEASUREMENTS[0]) -> PowerFit:
    """Score ``calib``'s ``accelerator_training_utilisation`` on ``measurement``: the measured
    system evaluated on the measured workload. Its accelerators draw that utilisation on average
    (:func:`dse.model.power.dense_level`) and the rest of its parts by its step's activity, so its
    wall power is linear in the utilisation, and the exact fit is where the line through its values
    at 0 and 1 meets the measured midpoint."""
    system = load_system(measurement.system)
    ev = evaluate(load_workload(measurement.workload), system, calib)
    act = ev.power.activity or flat(calib.accelerator_training_utilisation)
    idle_w = power(system, None, act._replace(accelerator=0.0)).power_w
    full_w = power(system, None, act.at_tdp()).power_w
    return PowerFit(measurement, calib.accelerator_training_utilisation, ev.power.power_w,
                    (measurement.mid_w - idle_w) / (full_w - idle_w))


POWER_DIGITS = 2
"""Decimals ``accelerator_training_utilisation`` is fitted to: the measured range (7.06-7.11 kW,
+-25 W) moves it by +-0.005, so a third digit would claim more than the measurement holds."""


def fit_power(calib: Calibration) -> Calibration:
    """``calib`` with ``accelerator_training_utilisation`` fitted to the wall-power measurement:
    its exact fit (:func:`power_fit`) to :data:`POWER_DIGITS` decimals. Run after the throughput
    fit, since the measured node's other parts draw by the step the throughput parameters time."""
    exact = power_fit(calib).exact_utilisation
    return calib.with_values(accelerator_training_utilisation=round(exact, POWER_DIGITS))


def power_record(calib: Calibration) -> dict[str, float]:
    """The power fit's entries of a calibration file's ``[fit]`` table."""
    return {"power_points": float(len(POWER_MEASUREMENTS)),
            "power_abs_pct_error": power_fit(calib).abs_pct_error}


@dataclass(frozen=True, slots=True)
class PointReport:
    """One measurement with its prediction."""

    measurement: Measurement
    predicted: float
    abs_pct_error: float
    loo_predicted: float | None
    loo_abs_pct_error: float | None
    bottleneck: str


FORWARD_CUT = "2022-12"
"""Default cut of the forward validation: fit on what was published through 2022 (one-hot DLRM
only), predict what came after (the 2023 DCNv2 measurements)."""


@dataclass(frozen=True, slots=True)
class Forward:
    """A forward validation: fitted on the measurements published up to ``cut``, scored on the
    later ones, as a tool predicting hardware that does not exist yet would be."""

    cut: str
    """Last month (``YYYY-MM``) of the fitted measurements."""
    calibration: Calibration
    fitted: tuple[str, ...]
    """Ids of the measurements the calibration was fitted on."""
    points: tuple[tuple[Measurement, float], ...]
    """Every later measurement with its prediction (a software family unseen at the cut runs at
    the reference family's speed, as a new design would)."""

    @property
    def errors(self) -> list[float]:
        """|error| in percent of every predicted point."""
        return [abs_pct_error(p, m.samples_per_s) for m, p in self.points]

    @property
    def median_abs_pct_error(self) -> float:
        """Median |error| of the predicted points, percent."""
        return float(np.median(self.errors))

    @property
    def max_abs_pct_error(self) -> float:
        """Largest |error| of the predicted points, percent."""
        return max(self.errors)

    @property
    def spearman(self) -> float:
        """Rank correlation of predicted and measured throughput over the predicted points."""
        return spearman([p for _, p in self.points], [m.samples_per_s for m, _ in self.points])

    @property
    def ratios(self) -> RatioReport:
        """The pairwise ratios among the predicted points (:func:`ratio_report`)."""
        return ratio_report(self.points)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the ``forward`` entry of ``dse validate --json``)."""
        return {
            "cut": self.cut,
            "fitted_points": len(self.fitted),
            "predicted_points": len(self.points),
            "median_abs_pct_error": self.median_abs_pct_error,
            "max_abs_pct_error": self.max_abs_pct_error,
            "spearman": self.spearman,
            "ratios": self.ratios.to_dict(),
            "points": [{"id": m.id, "published": m.published, "measured": m.samples_per_s,
                        "predicted": p, "abs_pct_error": abs_pct_error(p, m.samples_per_s)}
                       for m, p in self.points],
        }


def split_by_date(measurements: Sequence[Measurement], cut: str
                  ) -> tuple[list[Measurement], list[Measurement]]:
    """The measurements published up to ``cut`` (``YYYY-MM``, inclusive) and those after it."""
    before = [m for m in measurements if m.published <= cut]
    return before, [m for m in measurements if m.published > cut]


def forward_validate(measurements: Sequence[Measurement], cut: str = FORWARD_CUT,
                     loss: str = FIT_LOSS) -> Forward:
    """Fit from the priors (with ``loss``) on the measurements published up to ``cut`` and predict
    the rest."""
    before, after = split_by_date(fitted(measurements), cut)
    if not before or not after:
        raise DseInputError("forward validation", "cut",
                            f"{cut!r} leaves {len(before)} points to fit and {len(after)} to predict")
    result = fit(before, Calibration(), loss=loss)
    return Forward(cut, result.calibration, tuple(m.id for m in before),
                   tuple((m, predict_full(m, result.calibration)) for m in after))


@dataclass(frozen=True, slots=True)
class Validation:
    """Accuracy of a calibration on the measurements."""

    calibration: Calibration
    points: tuple[PointReport, ...]
    median_abs_pct_error: float
    mean_abs_pct_error: float
    spearman: float
    loo_median_abs_pct_error: float | None
    loo_mean_abs_pct_error: float | None
    forward: Forward | None = None
    loss: str = "squares"
    """The loss of the refits (leave-one-out, forward) and of the weights below."""
    weights: tuple[float, ...] = ()
    """Each point's weight under ``loss`` at this calibration's residuals (:func:`loss_weights`):
    how much it pulls on the fit; below 1 only under Huber's loss."""
    power: PowerFit | None = None
    """The wall-power parameter against its measurement (:func:`power_fit`)."""
    excluded: tuple[PointReport, ...] = ()
    """The points the state-change rule keeps out of the fit and out of every statistic above,
    each with its error against the calibration (no leave-one-out: the fit never saw them)."""
    generations: tuple[GenerationHoldout, ...] = ()
    """Each architecture left out of the fit whole and predicted (:func:`generation_holdouts`;
    empty without leave-one-out)."""

    @property
    def ratios(self) -> RatioReport:
        """The pairwise ratios of the points at this calibration (:func:`ratio_report`)."""
        return ratio_report([(p.measurement, p.predicted) for p in self.points])

    @property
    def loo_ratios(self) -> RatioReport | None:
        """The same with each point predicted by the fit that left it out (None without
        leave-one-out): out of sample, as every pair's two points are."""
        if any(p.loo_predicted is None for p in self.points):
            return None
        return ratio_report([(p.measurement, float(p.loo_predicted or 0.0)) for p in self.points])

    @property
    def downweighted(self) -> list[tuple[PointReport, float]]:
        """The points with weight below 1, lowest first."""
        pairs = [(p, w) for p, w in zip(self.points, self.weights, strict=True) if w < 1.0]
        return sorted(pairs, key=lambda pw: pw[1])

    def classes(self) -> dict[str, dict[str, Any]]:
        """Each measurement class's points and errors (:data:`MEASUREMENT_CLASSES` order): the
        in-sample median and largest |error| at this calibration, and the median of the points'
        leave-one-out errors (each from the refit on every other fitted point, of every class;
        ``None`` without leave-one-out)."""
        out: dict[str, dict[str, Any]] = {}
        for name in MEASUREMENT_CLASSES:
            pts = [p for p in self.points if p.measurement.measurement_class == name]
            if not pts:
                continue
            errors = [p.abs_pct_error for p in pts]
            loo = [p.loo_abs_pct_error for p in pts if p.loo_abs_pct_error is not None]
            out[name] = {"points": len(pts), "median_abs_pct_error": float(np.median(errors)),
                         "max_abs_pct_error": max(errors),
                         "loo_median_abs_pct_error": float(np.median(loo)) if loo else None,
                         "excluded": sum(p.measurement.measurement_class == name
                                         for p in self.excluded)}
        return out

    @property
    def worst(self) -> PointReport:
        """The point with the largest error."""
        return max(self.points, key=lambda p: p.abs_pct_error)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``dse validate --json``)."""
        return {
            "calibration_version": self.calibration.version,
            "median_abs_pct_error": self.median_abs_pct_error,
            "mean_abs_pct_error": self.mean_abs_pct_error,
            "spearman": self.spearman,
            "loo_median_abs_pct_error": self.loo_median_abs_pct_error,
            "loo_mean_abs_pct_error": self.loo_mean_abs_pct_error,
            "worst": self.worst.measurement.id,
            "loss": self.loss,
            "huber_k": HUBER_K if self.loss == "huber" else None,
            "downweighted": [{"id": p.measurement.id, "weight": w} for p, w in self.downweighted],
            "forward": None if self.forward is None else self.forward.to_dict(),
            "ratios": self.ratios.to_dict(),
            "loo_ratios": None if self.loo_ratios is None else self.loo_ratios.to_dict(),
            "leave_one_generation_out": [g.to_dict() for g in self.generations],
            "power": None if self.power is None else self.power.to_dict(),
            "classes": self.classes(),
            "excluded": [
                {"id": p.measurement.id, "measured": p.measurement.samples_per_s,
                 "predicted": p.predicted, "abs_pct_error": p.abs_pct_error,
                 "bottleneck": p.bottleneck, "state_check": p.measurement.state_check,
                 "state_evidence": p.measurement.state_evidence}
                for p in self.excluded],
            "points": [
                {
                    "id": p.measurement.id,
                    "workload": p.measurement.workload,
                    "accelerator": p.measurement.accelerator,
                    "accelerators": p.measurement.accelerators,
                    "scaleup": p.measurement.scaleup,
                    "precision": p.measurement.precision,
                    "family": p.measurement.family,
                    "published": p.measurement.published,
                    "measured": p.measurement.samples_per_s,
                    "predicted": p.predicted,
                    "abs_pct_error": p.abs_pct_error,
                    "loo_predicted": p.loo_predicted,
                    "loo_abs_pct_error": p.loo_abs_pct_error,
                    "bottleneck": p.bottleneck,
                    "fit_weight": w,
                    "measurement_class": p.measurement.measurement_class,
                }
                for p, w in zip(self.points, self.weights or [1.0] * len(self.points), strict=True)
            ],
        }


def validate(
    measurements: Sequence[Measurement],
    calib: Calibration,
    leave_one_out: bool = True,
    progress: Callable[[int, int], None] | None = None,
    forward_cut: str | None = None,
    loss: str | None = None,
) -> Validation:
    """Predict every measurement with ``calib`` and its wall power (:func:`power_fit`); with
    ``leave_one_out``, also refit without each
    point (starting from ``calib``) and predict it; with ``forward_cut``, also fit on the points
    published up to that month and predict the later ones (:func:`forward_validate`). Every refit
    minimises ``loss`` (default: the one ``calib`` was fitted with, :func:`loss_of`). Points the
    state-change rule excludes (:attr:`Measurement.excluded`) are predicted and listed apart
    (:attr:`Validation.excluded`), outside every statistic and refit."""
    loss = check_loss(loss or loss_of(calib))
    out_of_fit = [m for m in measurements if m.excluded]
    measurements = fitted(measurements)
    preds, bottlenecks = [], []
    for m in measurements:
        p, bn = _predict_point(m, calib)
        preds.append(p)
        bottlenecks.append(bn)
    loo: list[float | None] = [None] * len(measurements)
    if leave_one_out:
        for i, m in enumerate(measurements):
            rest = [x for j, x in enumerate(measurements) if j != i]
            refit = fit(rest, calib, max_iter=60, loss=loss)
            loo[i] = predict_full(m, refit.calibration)
            if progress:
                progress(i + 1, len(measurements))
    points = tuple(
        PointReport(m, p, abs_pct_error(p, m.samples_per_s), lp,
                    None if lp is None else abs_pct_error(lp, m.samples_per_s), bn)
        for m, p, lp, bn in zip(measurements, preds, loo, bottlenecks, strict=True)
    )
    errors = [p.abs_pct_error for p in points]
    loo_errors = [p.loo_abs_pct_error for p in points if p.loo_abs_pct_error is not None]
    return Validation(
        calibration=calib,
        points=points,
        median_abs_pct_error=float(np.median(errors)),
        mean_abs_pct_error=float(np.mean(errors)),
        spearman=spearman(preds, [m.samples_per_s for m in measurements]),
        loo_median_abs_pct_error=float(np.median(loo_errors)) if loo_errors else None,
        loo_mean_abs_pct_error=float(np.mean(loo_errors)) if loo_errors else None,
        forward=None if forward_cut is None else forward_validate(measurements, forward_cut, loss),
        loss=loss,
        weights=tuple(float(w) for w in loss_weights(
            np.log(preds) - np.log([m.samples_per_s for m in measurements]), loss)),
        power=power_fit(calib),
        excluded=tuple(PointReport(m, p, abs_pct_error(p, m.samples_per_s), None, None, bn)
                       for m in out_of_fit for p, bn in [_predict_point(m, calib)]),
        generations=generation_holdouts(measurements, calib, loss) if leave_one_out else (),
    )


def generation_holdouts(measurements: Sequence[Measurement], calib: Calibration,
                        loss: str = FIT_LOSS) -> tuple[GenerationHoldout, ...]:
    """Refit ``calib`` (with ``loss``) without every point of each architecture in turn
    (:func:`~dse.calibration.generations.generations`) and predict those points: the error dse
    makes on a generation it has never seen. A software family measured only on the left-out
    generation runs at the reference family's speed there (:func:`predict_full`)."""
    out = []
    for arch in generations(measurements):
        rest = [m for m in measurements if architecture_of(m) != arch]
        refit = fit(rest, calib, max_iter=60, loss=loss).calibration
        held = tuple((m, predict_full(m, refit)) for m in measurements if architecture_of(m) == arch)
        out.append(GenerationHoldout(arch, held))
    return tuple(out)


def _predict_point(m: Measurement, calib: Calibration) -> tuple[float, str]:
    """Predicted samples/s of ``m`` with the full model and its software factor, and the stage
    that bounds its step."""
    wl, sysm = measurement_design(m)
    ev = evaluate(wl, sysm, calib)
    return ev.throughput_samples_per_s * calib.software_factor.get(m.family, 1.0), ev.bottleneck
