"""Published DLRM training-throughput measurements, loaded strictly, and the design each describes.

The data file ``dse/data/dlrm_measurements.csv`` holds public figures (NVIDIA DeepLearningExamples
tables and MLPerf Training DLRM results); every row names its source. :func:`measurement_design`
turns a row into the workload and system the model scores: the workload preset with the measured
precision and global batch, and the system preset of the same accelerator and fabric with the
measured accelerator and node counts.
"""

from __future__ import annotations

import csv
import dataclasses
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, get_args

from dse.errors import DseInputError
from dse.model.catalog import Precision, Topology, load_catalog
from dse.model.system import System, load_system, system_presets
from dse.model.workload import Workload, load_workload, workload_presets

COLUMNS = (
    "id", "source", "workload", "precision", "global_batch", "accelerator",
    "accelerators_per_node", "nodes", "scaleup", "samples_per_s", "metric", "software",
)
METRICS = ("epoch_average", "synthetic_1000_steps", "net_of_eval")
SOFTWARE_FAMILIES: tuple[tuple[str, str], ...] = (
    ("HugeCTR 2020", "hugectr-2020"),
    ("HugeCTR 2021", "hugectr-2021"),
    ("HugeCTR 2022", "hugectr-2022"),
    ("PyTorch", "pytorch-2021"),
    ("TF2", "tensorflow-2023"),
)
"""Software generations by prefix of the ``software`` column (first match wins). The calibration
carries one throughput factor per generation; ``hugectr-2022`` (MLPerf Training v2.0/v2.1) is the
reference at 1.0, the software the model assumes for every design."""
REFERENCE_FAMILY = "hugectr-2022"
HOT_REPLICATION_FAMILIES = frozenset({"hugectr-2021", "hugectr-2022"})
"""Families that replicate frequently used embedding rows on every device (HugeCTR's hybrid
embedding, introduced for MLPerf Training v1.0; NVIDIA developer blog on MLPerf v1.0 DLRM, 2021).
In the hybrid embedding every row of a tiny table is frequent, so these families also keep small
tables data-parallel, and they balance devices by splitting tables."""
_WHOLE_TABLES = (
    ("software.hot_embedding_replication", False),
    ("software.replicate_small_tables", False),
    ("software.split_tables_to_balance", False),
)
SOFTWARE_CAPABILITIES: dict[str, tuple[tuple[str, Any], ...]] = {
    "hugectr-2020": _WHOLE_TABLES,
    "hugectr-2021": (),
    "hugectr-2022": (),
    "pytorch-2021": (*_WHOLE_TABLES, ("software.bottom_mlp_on_one_device", True)),
    "tensorflow-2023": _WHOLE_TABLES,
}
"""How each family lays out the model (``[software]`` overrides of the system; the defaults are
the reference family's). ``hugectr-2020`` (MLPerf v0.7): one-hot localized-slot embedding, every
table whole on one device, all-to-all for all of them. ``pytorch-2021``: DeepLearningExamples
PyTorch DLRM README, "Embedding table placement and load balancing": the bottom MLP on GPU 0 with
no tables, whole tables (at most ceil(tables / (GPUs - 1)) per GPU) on the others.
``tensorflow-2023``: DeepLearningExamples TensorFlow2 DLRM_and_DCNv2 README (Merlin Distributed
Embeddings): data-parallel MLPs, "each smaller table is placed entirely on a single device"."""


def software_family(software: str) -> str | None:
    """The family of a ``software`` label, or ``None`` when no prefix matches."""
    return next((fam for prefix, fam in SOFTWARE_FAMILIES if software.startswith(prefix)), None)

_SYSTEM_FOR: dict[tuple[str, str], tuple[str, ...]] = {
    ("a100-sxm4-80gb", "switch"): ("dgx-a100",),
    ("a100-sxm4-80gb", "fully_connected"): ("hgx-a100-4gpu",),
    ("a100-sxm4-40gb", "switch"): ("dgx-a100-40gb",),
    ("a100-pcie-80gb", "none"): ("a100-pcie-x8", "a100-pcie-x4"),
    ("a30", "none"): ("a30-pcie-x8",),
    ("v100-sxm2-32gb", "hybrid_cube_mesh"): ("dgx-1",),
    ("v100-sxm3-32gb", "switch"): ("dgx-2",),
    ("h100-sxm5-80gb", "switch"): ("dgx-h100",),
}
"""The host platforms each measured (accelerator, fabric) ran in, the first being the default; a
platform with the measured accelerator count is preferred (4- and 8-GPU PCIe boxes differ in their
PCIe switch sharing). Single-accelerator rows use the accelerator's usual platform."""


@dataclass(frozen=True, slots=True)
class Measurement:
    """One published throughput figure."""

    id: str
    source: str
    workload: str
    precision: Precision
    global_batch: int
    accelerator: str
    accelerators_per_node: int
    nodes: int
    scaleup: Topology
    samples_per_s: float
    metric: str
    software: str

    @property
    def family(self) -> str:
        """Software family of the measurement (see ``SOFTWARE_FAMILIES``)."""
        family = software_family(self.software)
        assert family is not None
        return family

    @property
    def accelerators(self) -> int:
        """Accelerators in the measured system."""
        return self.accelerators_per_node * self.nodes


def _row(raw: dict[str, str], path: str, line: int) -> Measurement:
    where = f"{path}:{line}"

    def num(key: str, kind: type[int] | type[float]) -> Any:
        text = raw[key].strip()
        try:
            value = kind(text)
        except ValueError:
            raise DseInputError(where, key, f"expected {kind.__name__}, got {text!r}") from None
        if value <= 0:
            raise DseInputError(where, key, f"must be positive, got {value}")
        return value

    def choice(key: str, options: tuple[str, ...]) -> str:
        value = raw[key].strip()
        if value not in options:
            raise DseInputError(where, key, f"unknown value {value!r} (known: {', '.join(options)})")
        return value

    software = raw["software"].strip()
    if software_family(software) is None:
        raise DseInputError(where, "software", f"unknown software family in {software!r}")
    if not raw["id"].strip() or not raw["source"].strip():
        raise DseInputError(where, "id" if not raw["id"].strip() else "source", "must not be empty")
    return Measurement(
        id=raw["id"].strip(),
        source=raw["source"].strip(),
        workload=choice("workload", workload_presets()),
        precision=choice("precision", get_args(Precision)),  # type: ignore[arg-type]
        global_batch=num("global_batch", int),
        accelerator=choice("accelerator", tuple(sorted(load_catalog().accelerator))),
        accelerators_per_node=num("accelerators_per_node", int),
        nodes=num("nodes", int),
        scaleup=choice("scaleup", get_args(Topology)),  # type: ignore[arg-type]
        samples_per_s=num("samples_per_s", float),
        metric=choice("metric", METRICS),
        software=software,
    )


def load_measurements(path: Path | None = None) -> tuple[Measurement, ...]:
    """Load the measurement CSV strictly: exact columns, known names, positive numbers, unique ids."""
    if path is None:
        ref = resources.files("dse") / "data" / "dlrm_measurements.csv"
        with resources.as_file(ref) as p:
            return _load(p, "dse/data/dlrm_measurements.csv")
    return _load(path, str(path))


def _load(path: Path, name: str) -> tuple[Measurement, ...]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DseInputError(name, "", "file not found") from None
    reader = csv.DictReader(text.splitlines())
    header = tuple(reader.fieldnames or ())
    if header != COLUMNS:
        missing = [c for c in COLUMNS if c not in header]
        extra = [c for c in header if c not in COLUMNS]
        raise DseInputError(name, "header", f"expected columns {', '.join(COLUMNS)}; "
                            f"missing {missing or 'none'}, unknown {extra or 'none'}")
    rows: list[Measurement] = []
    seen: set[str] = set()
    for i, raw in enumerate(reader, start=2):
        if None in raw or any(v is None for v in raw.values()):
            raise DseInputError(f"{name}:{i}", "", f"expected {len(COLUMNS)} fields")
        m = _row(raw, name, i)
        if m.id in seen:
            raise DseInputError(f"{name}:{i}", "id", f"duplicate id {m.id!r}")
        seen.add(m.id)
        rows.append(m)
    if not rows:
        raise DseInputError(name, "", "no measurements")
    return tuple(rows)


def measurement_system_preset(m: Measurement) -> str:
    """The system preset a measurement ran on (see ``_SYSTEM_FOR``)."""
    key = (m.accelerator, m.scaleup)
    options = _SYSTEM_FOR.get(key, ())
    if not options and m.accelerators_per_node == 1:
        options = next((v for (acc, _), v in _SYSTEM_FOR.items() if acc == m.accelerator), ())
    if not options:
        raise DseInputError(m.id, "accelerator", f"no platform preset for {key}")
    for preset in options:
        if load_system(preset).accelerators_per_node == m.accelerators_per_node:
            return preset
    return options[0]


def measurement_design(m: Measurement) -> tuple[Workload, System]:
    """Workload and system of a measurement, with its precision, batch and accelerator counts."""
    wl = load_workload(m.workload)
    wl = dataclasses.replace(wl, precision=m.precision, global_batch=m.global_batch)
    preset = measurement_system_preset(m)
    assert preset in system_presets()
    overrides: tuple[tuple[str, Any], ...] = (
        ("node.accelerators", m.accelerators_per_node),
        ("nodes", m.nodes),
    )
    if m.accelerators_per_node > 1:
        overrides += (("node.scaleup", m.scaleup),)
    overrides += SOFTWARE_CAPABILITIES[m.family]
    return wl, load_system(preset, overrides)
