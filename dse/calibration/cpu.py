"""The CPU-only measurement class: published DLRM training throughputs of nodes without accelerators,
and the one calibration parameter they constrain, ``cpu_dense_efficiency``.

``dse/data/cpu_measurements.csv`` holds Intel's MLPerf Training DLRM submissions on Xeon CPUs up
to v3.1 (v0.7 Cooper Lake, 1-4 nodes; v1.0 Cooper Lake 8376H, 4 and 8 nodes; v2.1 Sapphire Rapids,
1 node; v3.1 Sapphire Rapids, DLRM-DCNv2 on 4 nodes), each derived from its round's
``result_*.txt`` logs net of the in-run evaluations (samples between each evaluation over the
time between them, as ``mlperf_dcnv2_2023.csv``'s ``net_of_eval``), with its ``systems/*.json``
and the parts the submission does not state in ``assumed``. The v1.0 repository's four ``8380H``
systems are the v0.7 logs relabelled (same file names and seeds) and are not separate points.

The class is fitted on its own (:func:`fit_cpu`): its points move only ``cpu_dense_efficiency``
(DDR is read at the host path's ``host_efficiency``, fitted or not elsewhere), and the accelerator
fit never sees them, as the wall-power fit of ``accelerator_training_utilisation`` stays apart.
"""

from __future__ import annotations

import csv
import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, get_args

from dse.calibration.parameters import Calibration
from dse.errors import DseInputError
from dse.model.catalog import Precision
from dse.model.evaluate import evaluate
from dse.model.limits import MAX_DATA_FILE_BYTES
from dse.model.system import System, resolve_system, system_spec_from_mapping
from dse.model.workload import Workload, load_workload
from dse.reading import read_text

CPU_DATA_FILE = "cpu_measurements.csv"
CPU_COLUMNS = (
    "id", "source", "published", "workload", "precision", "global_batch", "cpu", "cpu_sockets",
    "ddr_gb", "nodes", "nics", "nic_gbit_s", "samples_per_s", "metric", "software", "results",
    "assumed",
)
"""Columns of ``cpu_measurements.csv``."""
CPU_SOFTWARE: dict[str, dict[str, bool]] = {
    "intel-dlrm-2020": {"hot_embedding_replication": False, "replicate_small_tables": False,
                        "split_tables_to_balance": False},
    "torchrec-cpu-2023": {"hot_embedding_replication": False},
}
"""How each software lays out the tables (``[software]`` of the system). ``intel-dlrm-2020``:
Intel's ``dlrm_s_pytorch.py`` (MLPerf v0.7-v2.1, ``pytorch-cpu``) places each table whole on one
rank and the MLPs data-parallel ("hybrid parallel"); ``torchrec-cpu-2023``: Intel's TorchRec port
(v3.1 ``dlrm_v2/torchrec_cpu``) shards with TorchRec's planner, no frequent-row replication."""
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
    ddr_gb: float
    nodes: int
    nics: int
    nic_gbit_s: float
    samples_per_s: float
    metric: str
    software: str
    results: str
    assumed: str


_INTS = ("global_batch", "cpu_sockets", "nodes", "nics")
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
    precision and batch; ``m.nodes`` nodes of ``m.cpu_sockets`` CPUs, no accelerators, the NICs
    on the CPUs."""
    wl = dataclasses.replace(load_workload(m.workload), precision=m.precision, global_batch=m.global_batch)
    source = f"dse/data/{CPU_DATA_FILE}: {m.id}"
    spec = system_spec_from_mapping({
        "name": m.id, "nodes": m.nodes, "software": CPU_SOFTWARE[m.software],
        "node": {"accelerators": 0, "cpu": m.cpu, "cpu_sockets": m.cpu_sockets, "ddr_gb": m.ddr_gb,
                 "nics": m.nics, "nic_gbit_s": m.nic_gbit_s, "nic_attach": "cpu", "frontend_nics": 0},
    }, source)
    return wl, resolve_system(spec, source=source)


def predict_cpu(designs: Sequence[tuple[Workload, System]], calib: Calibration) -> list[float]:
    """Predicted samples/s of each design under ``calib``."""
    return [evaluate(wl, system, calib).throughput_samples_per_s for wl, system in designs]


GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
EFFICIENCY_RANGE = (1e-3, 1.0)
"""Where the fit searches ``cpu_dense_efficiency`` (the open range of an efficiency)."""
TOLERANCE = 1e-5
"""The fit stops when its bracket of log efficiency is this narrow."""


def fit_cpu(measurements: Sequence[CpuMeasurement], start: Calibration) -> Calibration:
    """``start`` with ``cpu_dense_efficiency`` fitted to ``measurements``: least squares of the log
    residuals, one parameter, by golden-section search over its log (the placements do not depend
    on it, so no re-planning is needed)."""
    designs = [cpu_design(m) for m in measurements]
    measured = [math.log(m.samples_per_s) for m in measurements]

    def loss(log_eff: float) -> float:
        calib = dataclasses.replace(start, cpu_dense_efficiency=math.exp(log_eff))
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
    return dataclasses.replace(start, cpu_dense_efficiency=math.exp((lo + hi) / 2.0))


@dataclass(frozen=True, slots=True)
class CpuReport:
    """Each point's measured and predicted samples/s, in sample and left out of the fit."""

    ids: tuple[str, ...]
    measured: tuple[float, ...]
    in_sample: tuple[float, ...]
    left_out: tuple[float, ...]
    efficiency: float
    """The fitted ``cpu_dense_efficiency`` on all points."""

    @staticmethod
    def errors(predicted: Sequence[float], measured: Sequence[float]) -> list[float]:
        """Signed % errors of ``predicted`` against ``measured``."""
        return [100.0 * (p / m - 1.0) for p, m in zip(predicted, measured, strict=True)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the fitted efficiency and each point's errors."""
        ins, loo = self.errors(self.in_sample, self.measured), self.errors(self.left_out, self.measured)
        return {"cpu_dense_efficiency": self.efficiency,
                "points": [{"id": i, "measured": m, "in_sample_pct": a, "leave_one_out_pct": b}
                           for i, m, a, b in zip(self.ids, self.measured, ins, loo, strict=True)],
                "max_abs_pct_in_sample": max(map(abs, ins)),
                "max_abs_pct_leave_one_out": max(map(abs, loo))}


def validate_cpu(measurements: Sequence[CpuMeasurement], start: Calibration) -> CpuReport:
    """Fit on every point and predict each; then fit without each point and predict it."""
    calib = fit_cpu(measurements, start)
    designs = [cpu_design(m) for m in measurements]
    left_out = []
    for i in range(len(measurements)):
        rest = fit_cpu([m for j, m in enumerate(measurements) if j != i], start)
        left_out.append(predict_cpu([designs[i]], rest)[0])
    return CpuReport(ids=tuple(m.id for m in measurements),
                     measured=tuple(m.samples_per_s for m in measurements),
                     in_sample=tuple(predict_cpu(designs, calib)), left_out=tuple(left_out),
                     efficiency=calib.cpu_dense_efficiency)
