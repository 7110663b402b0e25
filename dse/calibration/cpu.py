"""The CPU-only measurement class: published DLRM training throughputs of nodes without accelerators,
and the two calibration parameters they constrain, ``cpu_dense_efficiency`` (vector units) and
``cpu_matrix_efficiency`` (AMX).

``dse/data/cpu_measurements.csv`` holds Intel's MLPerf Training DLRM submissions on Xeon CPUs up
to v3.1 (v0.7 Cooper Lake, 1-4 nodes; v1.0 Cooper Lake 8376H, 4 and 8 nodes; v2.1 Sapphire Rapids,
1, 2 and 4 nodes; v3.1 Sapphire Rapids, DLRM-DCNv2 on 4 nodes), each derived from its round's
``result_*.txt`` logs net of the in-run evaluations (samples between each evaluation over the
time between them, as ``mlperf_dcnv2_2023.csv``'s ``net_of_eval``), with its ``systems/*.json``
and the parts the submission does not state in ``assumed``. The v1.0 repository's four ``8380H``
systems are the v0.7 logs relabelled (same file names and seeds) and are not separate points.

The class is fitted on its own (:func:`fit_cpu`): each point moves only the efficiency of the
unit its dense math runs on (DDR is read at the host path's ``host_efficiency``, fitted or not
elsewhere), and the accelerator
fit never sees them, as the wall-power fit of ``accelerator_training_utilisation`` stays apart.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, get_args

from dse.errors import DseInputError
from dse.limits import MAX_DATA_FILE_BYTES
from dse.model.catalog import Precision
from dse.model.evaluate import evaluate
from dse.model.parameters import FITTED_APART, Calibration, fingerprint
from dse.model.system import System, resolve_system, system_spec_from_mapping
from dse.model.timing import cpu_efficiency_of
from dse.model.workload import Workload, load_workload
from dse.reading import read_text

CPU_DATA_FILE = "cpu_measurements.csv"
CPU_COLUMNS = (
    "id", "source", "published", "workload", "precision", "global_batch", "cpu", "cpu_sockets",
    "compute_cores", "ddr_gb", "nodes", "nics", "nic_gbit_s", "samples_per_s", "metric", "software",
    "results", "assumed",
)
"""Columns of ``cpu_measurements.csv``."""
CPU_SOFTWARE: dict[str, dict[str, bool | int]] = {
    "intel-dlrm-2020": {"hot_embedding_replication": False, "replicate_below_rows": 2048,
                        "split_tables_to_balance": False},
    "torchrec-cpu-2023": {"hot_embedding_replication": False},
}
"""How each software lays out the tables (``[software]`` of the system); the rest is the
model's default. ``intel-dlrm-2020``: Intel's ``dlrm_s_pytorch.py`` (MLPerf v0.7-v2.1,
``pytorch-cpu``) keeps the tables of fewer than 2,048 rows data-parallel, a copy on every rank
(``sparse_dense_boundary = 2048``, "dense embs", in the v0.7 patch
``torch_patches/models/0001-enable-dlrm-distributed-training-for-cpu.patch`` of
intel/intel-extension-for-pytorch, commit 70f0f1f, and its v1.0 diff
``torch_patches/models/dlrm_mlperf_v1.0_training.diff``, commit 5845989) and shares the other 16
Criteo tables out among the ranks; the MLPs run data-parallel. The model's device is a whole node
(:func:`dse.model.system.cpu_device`), so it shares those tables out among the nodes, whole: a
node's all-to-all carries the same bytes as its ranks' pieces (v1.0 splits each table
column-wise when the ranks outnumber the 16 tables, ``new_m = m // (my_size // 16)``). No
frequent-row replication. ``torchrec-cpu-2023``: Intel's TorchRec port (v3.1
``dlrm_v2/torchrec_cpu``) shards with TorchRec's planner, no frequent-row replication."""
TARGET_ABS_PCT = 25.0
"""Issue 27's target for the class: every point within 25%."""


@dataclass(frozen=True, slots=True)
class CpuMeasurement:
    """One published throughput of a cluster of nodes without accelerators."""

    id: str
    source: str
    published: str
    workload: str
    precision: Precision
    global_batch: int
    cpu: str
    cpu_sockets: int
    compute_cores: int
    """Cores of each socket that ran the model (``OMP_NUM_THREADS`` of the run script); the rest
    ran the communication library's workers."""
    ddr_gb: float
    nodes: int
    nics: int
    nic_gbit_s: float
    samples_per_s: float
    metric: str
    software: str
    results: str
    assumed: str


_INTS = ("global_batch", "cpu_sockets", "compute_cores", "nodes", "nics")
_FLOATS = ("ddr_gb", "nic_gbit_s", "samples_per_s")


def load_cpu_measurements(path: Path | None = None) -> tuple[CpuMeasurement, ...]:
    """The CPU-only points of ``path`` (the packaged ``cpu_measurements.csv`` by default); a bad
    row is a :class:`~dse.errors.DseInputError` naming the file, row and column."""
    if path is None:
        ref = resources.files("dse") / "data" / CPU_DATA_FILE
        with resources.as_file(ref) as p:
            return _read(p, f"dse/data/{CPU_DATA_FILE}")
    return _read(path, str(path))


def _read(path: Path, source: str) -> tuple[CpuMeasurement, ...]:
    rows = list(csv.DictReader(read_text(path, MAX_DATA_FILE_BYTES, source).splitlines()))
    if not rows or tuple(rows[0]) != CPU_COLUMNS:
        raise DseInputError(source, "header", f"columns must be {', '.join(CPU_COLUMNS)}")
    out = []
    for i, row in enumerate(rows, start=2):
        values: dict[str, Any] = dict(row)
        for name in (*_INTS, *_FLOATS):
            try:
                values[name] = int(row[name]) if name in _INTS else float(row[name])
            except (TypeError, ValueError):
                raise DseInputError(source, f"row {i}.{name}", f"not a number: {row[name]!r}") from None
            if not values[name] > 0 and name != "nics":
                raise DseInputError(source, f"row {i}.{name}", "must be positive")
        if row["precision"] not in get_args(Precision):
            raise DseInputError(source, f"row {i}.precision", f"unknown precision {row['precision']!r}")
        if row["software"] not in CPU_SOFTWARE:
            raise DseInputError(source, f"row {i}.software",
                                f"unknown software {row['software']!r} (known: {', '.join(CPU_SOFTWARE)})")
        out.append(CpuMeasurement(**values))
    return tuple(out)


def cpu_design(m: CpuMeasurement) -> tuple[Workload, System]:
    """The workload and system the model scores for ``m``: the workload preset at the measured
    precision and batch; ``m.nodes`` nodes of ``m.cpu_sockets`` CPUs computing on
    ``m.compute_cores`` cores each, no accelerators, the NICs on the CPUs."""
    wl = dataclasses.replace(load_workload(m.workload), precision=m.precision, global_batch=m.global_batch)
    source = f"dse/data/{CPU_DATA_FILE}: {m.id}"
    spec = system_spec_from_mapping({
        "name": m.id, "nodes": m.nodes, "software": CPU_SOFTWARE[m.software],
        "node": {"accelerators": 0, "cpu": m.cpu, "cpu_sockets": m.cpu_sockets,
                 "cpu_compute_cores": m.compute_cores, "ddr_gb": m.ddr_gb,
                 "nics": m.nics, "nic_gbit_s": m.nic_gbit_s, "nic_attach": "cpu", "frontend_nics": 0},
    }, source)
    return wl, resolve_system(spec, source=source)


def predict_cpu(designs: Sequence[tuple[Workload, System]], calib: Calibration) -> list[float]:
    """Predicted samples/s of each design under ``calib``."""
    return [evaluate(wl, system, calib).throughput_samples_per_s for wl, system in designs]


GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
EFFICIENCY_RANGE = (1e-3, 1.0)
"""Where the fit searches each efficiency (the open range of an efficiency)."""
TOLERANCE = 1e-5
"""The fit stops when its bracket of log efficiency is this narrow."""
CPU_PARAMETERS = FITTED_APART
"""The calibration parameters the class constrains, each on its own points (:func:`timed_by`)."""


def timed_by(design: tuple[Workload, System]) -> str:
    """The parameter that times ``design``'s dense math: ``cpu_matrix_efficiency`` when its
    precision runs on the CPU's matrix engine (``Cpu.matrix_precisions``: AMX bf16 on Sapphire
    Rapids), ``cpu_dense_efficiency`` on the vector units."""
    wl, system = design
    return cpu_efficiency_of(system, wl.precision)


def fit_cpu(measurements: Sequence[CpuMeasurement], start: Calibration) -> Calibration:
    """``start`` with :data:`CPU_PARAMETERS` fitted to ``measurements``: each parameter on the
    points it times (:func:`timed_by`; a point moves only its own), least squares of the log
    residuals by golden-section search over its log (the placements do not depend on them, so no
    re-planning is needed). A parameter without points keeps ``start``'s value."""
    return _fit_designs([cpu_design(m) for m in measurements], [m.samples_per_s for m in measurements],
                        start)


def _fit_designs(designs: Sequence[tuple[Workload, System]], measured: Sequence[float],
                 start: Calibration) -> Calibration:
    """:func:`fit_cpu` on designs already built (the refits of :func:`validate_cpu` share them)."""
    calib = start
    for name in CPU_PARAMETERS:
        mine = [i for i, d in enumerate(designs) if timed_by(d) == name]
        if mine:
            value = _fit_one(name, [designs[i] for i in mine], [math.log(measured[i]) for i in mine], calib)
            calib = calib.with_values(**{name: value})
    return calib


def _fit_one(name: str, designs: Sequence[tuple[Workload, System]], measured: Sequence[float],
             start: Calibration) -> float:
    """The value of ``name`` that minimises the squared log residuals of ``designs``."""

    def loss(log_eff: float) -> float:
        calib = start.with_values(**{name: math.exp(log_eff)})
        return sum((math.log(p) - y) ** 2 for p, y in zip(predict_cpu(designs, calib), measured, strict=True))

    lo, hi = (math.log(v) for v in EFFICIENCY_RANGE)
    a, b = hi - GOLDEN * (hi - lo), lo + GOLDEN * (hi - lo)
    fa, fb = loss(a), loss(b)
    while hi - lo > TOLERANCE:
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - GOLDEN * (hi - lo)
            fa = loss(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + GOLDEN * (hi - lo)
            fb = loss(b)
    return math.exp((lo + hi) / 2.0)


@dataclass(frozen=True, slots=True)
class CpuReport:
    """Each point's measured and predicted samples/s, in sample and left out of the fit."""

    ids: tuple[str, ...]
    measured: tuple[float, ...]
    in_sample: tuple[float, ...]
    left_out: tuple[float, ...]
    efficiency: float
    """The fitted ``cpu_dense_efficiency`` on all points."""
    matrix_efficiency: float
    """The fitted ``cpu_matrix_efficiency`` on all points."""
    timed_by: tuple[str, ...]
    """The parameter that times each point's dense math (:func:`timed_by`)."""
    forward_cut: str | None = None
    """Last month (YYYY-MM) of the forward fit; ``None``: no forward test."""
    forward: tuple[tuple[str, float], ...] = ()
    """Each later point's id and its samples/s predicted by the fit on the points up to
    :attr:`forward_cut`."""
    forward_unfitted: tuple[str, ...] = ()
    """Parameters no point up to the cut constrains (they stay at their priors)."""

    @staticmethod
    def errors(predicted: Sequence[float], measured: Sequence[float]) -> list[float]:
        """Signed % errors of ``predicted`` against ``measured``."""
        return [100.0 * (p / m - 1.0) for p, m in zip(predicted, measured, strict=True)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the fitted efficiency and each point's errors."""
        ins, loo = self.errors(self.in_sample, self.measured), self.errors(self.left_out, self.measured)
        return {"cpu_dense_efficiency": self.efficiency,
                "cpu_matrix_efficiency": self.matrix_efficiency,
                "points": [{"id": i, "measured": m, "in_sample_pct": a, "leave_one_out_pct": b,
                            "timed_by": t}
                           for i, m, a, b, t in zip(self.ids, self.measured, ins, loo, self.timed_by,
                                                    strict=True)],
                "max_abs_pct_in_sample": max(map(abs, ins)),
                "max_abs_pct_leave_one_out": max(map(abs, loo)),
                **({"forward": {"cut": self.forward_cut, "unfitted": list(self.forward_unfitted),
                                "points": [{"id": i, "forward_pct": e}
                                           for i, e in zip(self.forward_ids, self.forward_errors(),
                                                           strict=True)]}}
                   if self.forward_cut else {})}

    @property
    def forward_ids(self) -> list[str]:
        """The points after the forward cut."""
        return [i for i, _ in self.forward]

    def forward_errors(self) -> list[float]:
        """Signed % error of each forward prediction."""
        measured = dict(zip(self.ids, self.measured, strict=True))
        return self.errors([p for _, p in self.forward], [measured[i] for i, _ in self.forward])


def validate_cpu(measurements: Sequence[CpuMeasurement], start: Calibration,
                 forward_cut: str | None = None) -> CpuReport:
    """Fit on every point and predict each; then fit without each point and predict it; with
    ``forward_cut`` (YYYY-MM), also fit on the points published up to it and predict the later
    ones. Every refit starts from the parameters' priors, so a parameter none of its points
    constrains cannot carry the full fit's value into a prediction."""
    priors = Calibration()
    start = start.with_values(**{name: getattr(priors, name) for name in CPU_PARAMETERS})
    designs = [cpu_design(m) for m in measurements]
    measured = [m.samples_per_s for m in measurements]
    calib = _fit_designs(designs, measured, start)
    left_out = []
    for i in range(len(measurements)):
        rest = _fit_designs([d for j, d in enumerate(designs) if j != i],
                            [y for j, y in enumerate(measured) if j != i], start)
        left_out.append(predict_cpu([designs[i]], rest)[0])
    forward: list[tuple[str, float]] = []
    unfitted: tuple[str, ...] = ()
    if forward_cut is not None:
        early = [i for i, m in enumerate(measurements) if m.published <= forward_cut]
        late = [(m, d) for m, d in zip(measurements, designs, strict=True) if m.published > forward_cut]
        past = _fit_designs([designs[i] for i in early], [measured[i] for i in early], start)
        forward = [(m.id, p) for (m, _), p in zip(late, predict_cpu([d for _, d in late], past), strict=True)]
        used = {timed_by(designs[i]) for i in early}
        unfitted = tuple(name for name in CPU_PARAMETERS if name not in used)
    return CpuReport(ids=tuple(m.id for m in measurements),
                     measured=tuple(measured),
                     in_sample=tuple(predict_cpu(designs, calib)), left_out=tuple(left_out),
                     efficiency=calib.cpu_dense_efficiency,
                     matrix_efficiency=calib.cpu_matrix_efficiency,
                     timed_by=tuple(timed_by(d) for d in designs),
                     forward_cut=forward_cut, forward=tuple(forward), forward_unfitted=unfitted)


_LOO_RESIDUALS: dict[str, tuple[float, ...]] = {}
"""Memo of :func:`cpu_loo_log_residuals` per calibration (a pure function of it, about a second)."""


def cpu_loo_log_residuals(calib: Calibration) -> tuple[float, ...]:
    """log(measured / predicted) of each CPU-class point, predicted by the fit without it under
    ``calib``'s other parameters (the CPU efficiencies are refitted, so only the rest matters)."""
    key = f"{calib.version}:{fingerprint(calib)}"
    got = _LOO_RESIDUALS.get(key)
    if got is None:
        report = validate_cpu(load_cpu_measurements(), calib)
        got = _LOO_RESIDUALS[key] = tuple(math.log(m / p) for m, p in zip(report.measured, report.left_out,
                                                                          strict=True))
    return got


@functools.cache
def _measured_cpus() -> tuple[str, ...]:
    """The catalog CPUs the packaged class ran on (read once: every CPU design's interval asks)."""
    return tuple(sorted({m.cpu for m in load_cpu_measurements()}))


def cpu_outside(system: System) -> tuple[str, ...]:
    """Why a node without accelerators lies outside the CPU class's measured regime: a CPU none
    of the class's points ran on (empty: one of them)."""
    measured = _measured_cpus()
    cpu = system.spec.node.cpu
    if cpu in measured:
        return ()
    return (f"cpu: {cpu} was never measured in the CPU class (measured: {', '.join(measured)})",)
