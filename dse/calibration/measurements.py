"""Published DLRM training-throughput measurements, loaded strictly, and the design each describes.

Two data files hold public figures; every row names its source, the date it was published and
where its logs or table live:

- ``dse/data/dlrm_measurements.csv``: one-hot DLRM, NVIDIA DeepLearningExamples tables and MLPerf
  Training DLRM v0.7-v2.1 results (plus DeepLearningExamples TensorFlow2 DCNv2 tables, 2023-06).
- ``dse/data/mlperf_dcnv2_2023.csv``: multi-hot DLRM-DCNv2, MLPerf Training v3.0 and v3.1 closed
  division (2023), derived from the ``result_*.txt`` logs and ``systems/*.json`` of
  ``mlcommons/training_results_v3.0`` and ``v3.1``. ``samples_per_s`` is net of the in-run
  evaluations (samples to target over time-to-train minus summed evaluation time): the model times
  training steps, and evaluation is not one; the official gross figure and HugeCTR's steady
  per-iteration rate (where logged) are kept beside it for reference.

:func:`measurement_design`
turns a row into the workload and system the model scores: the workload preset with the measured
precision and global batch, and the system preset of the same accelerator and fabric with the
measured accelerator and node counts.

One wall-power figure (:data:`POWER_MEASUREMENTS`) is what the calibration's
``accelerator_training_utilisation`` is fitted to (:func:`dse.calibration.fit.power_fit`).
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, get_args

from dse.calibration.state_change import STATE_CHECKS
from dse.errors import DseInputError
from dse.limits import MAX_DATA_FILE_BYTES
from dse.model.catalog import Precision, Topology, load_catalog
from dse.model.power import REFERENCE
from dse.model.system import System, load_system, system_presets
from dse.model.workload import Workload, load_workload, workload_presets
from dse.reading import read_text

COLUMNS = (
    "id", "source", "published", "workload", "precision", "global_batch", "accelerator",
    "accelerators_per_node", "nodes", "scaleup", "samples_per_s", "metric", "software", "results",
)
"""Columns of ``dlrm_measurements.csv``."""
DCNV2_COLUMNS = (
    "id", "source", "published", "workload", "precision", "global_batch", "accelerator",
    "accelerators_per_node", "nodes", "scaleup", "scaleup_gb_s", "samples_per_s", "metric",
    "gross_samples_per_s", "steady_samples_per_s", "software", "submitted_software", "host_cpu",
    "cpus_per_node", "host_memory", "host_network", "accelerator_interconnect", "results",
)
"""Columns of ``mlperf_dcnv2_2023.csv``: the common ones plus the submission's own description
(free text as the submitter wrote it; ``software`` is the family label, ``submitted_software``
the submitter's words)."""
MEASUREMENT_CLASSES = ("hbm_resident", "host_memory", "cpu_only")
"""Where a measured system kept its embedding tables and who computed: ``hbm_resident`` (every
table in accelerator HBM: all the packaged MLPerf and DeepLearningExamples points),
``host_memory`` (all or part of the tables in host DDR: pooled by the CPU, read over PCIe, or
cached in HBM), ``cpu_only`` (no accelerator). ``dse validate`` reports each class's errors apart;
a new class is one more name here."""
STATE_COLUMNS = ("state_check", "state_evidence")
"""Columns that may follow either column set: the state-change exclusion rule's verdict
(``steady``, ``changed`` or ``unlogged``; :data:`dse.calibration.state_change.STATE_CHECKS`) and
its evidence (the changed stretch's steps and rates against the run's median, or the longest
stretch found). A ``changed`` point stays in the data with its published figure and is excluded
from the fit (:attr:`Measurement.excluded`); a file without them is read as ``unlogged``."""
OPTIONAL_TAILS: tuple[tuple[str, ...], ...] = (
    (), STATE_COLUMNS, ("measurement_class",), ("measurement_class", *STATE_COLUMNS))
"""What may follow either column set, in this order: the measurement's class
(:data:`MEASUREMENT_CLASSES`) and the state-change rule's columns (:data:`STATE_COLUMNS`)."""
DATA_FILES = ("dlrm_measurements.csv", "mlperf_dcnv2_2023.csv")
"""The packaged measurement files, loaded in this order."""
METRICS = ("epoch_average", "synthetic_1000_steps", "net_of_eval")
SOFTWARE_FAMILIES: tuple[tuple[str, str], ...] = (
    ("HugeCTR 2023-04", "hugectr-2023.04"),
    ("HugeCTR 2023-09", "hugectr-2023.09"),
    ("HugeCTR 2020", "hugectr-2020"),
    ("HugeCTR 2021", "hugectr-2021"),
    ("HugeCTR 2022 preview", "hugectr-2022.11"),
    ("HugeCTR 2022", "hugectr-2022"),
    ("PyTorch", "pytorch-2021"),
    ("TF2", "tensorflow-2023"),
)
"""Software generations by prefix of the ``software`` column (first match wins). The calibration
carries one throughput factor per generation; ``hugectr-2022`` (MLPerf Training v2.0, the NGC
22.04 HugeCTR container) is the reference at 1.0, the software the model assumes for every
design. One family per MLPerf round keeps each round's software release apart: v2.1's DGX H100
runs (``hugectr-2022.11``) used a pre-release build (``hugectr-preview``, status preview,
mlcommons/training_results_v2.1 ``NVIDIA/benchmarks/dlrm/implementations/hugectr-preview``), not
v2.0's release; the MLPerf Training v3.0 (NGC 23.04 containers) and v3.1 (23.09) DCNv2
submissions all run NVIDIA's HugeCTR reference implementation, whatever other containers the
submitter lists."""
REFERENCE_FAMILY = "hugectr-2022"
_WHOLE_TABLES = (
    ("software.hot_embedding_replication", False),
    ("software.replicate_small_tables", False),
    ("software.split_tables_to_balance", False),
)
_NO_WGRAD_STREAM = (("software.overlap_weight_gradients", False),)
SOFTWARE_CAPABILITIES: dict[str, tuple[tuple[str, Any], ...]] = {
    "hugectr-2020": (*_WHOLE_TABLES, *_NO_WGRAD_STREAM),
    "hugectr-2021": _NO_WGRAD_STREAM,
    "hugectr-2022": (),
    "hugectr-2022.11": (),
    "hugectr-2023.04": (("software.hot_embedding_replication", False),
                        ("software.replicate_small_tables", False),
                        ("software.overlap_weight_gradients", True),
                        ("software.flat_key_exchange", True)),
    "hugectr-2023.09": (("software.hot_embedding_replication", False),
                        ("software.overlap_weight_gradients", True),
                        ("software.flat_key_exchange", True)),
    "pytorch-2021": (*_WHOLE_TABLES, *_NO_WGRAD_STREAM, ("software.bottom_mlp_on_one_device", True)),
    "tensorflow-2023": (*_WHOLE_TABLES, *_NO_WGRAD_STREAM),
}
"""How each family lays out the model (``[software]`` overrides of the system; the defaults are
the reference family's). ``hugectr-2020`` (MLPerf v0.7): one-hot localized-slot embedding, every
table whole on one device, all-to-all for all of them. ``pytorch-2021``: DeepLearningExamples
PyTorch DLRM README, "Embedding table placement and load balancing": the bottom MLP on GPU 0 with
no tables, whole tables (at most ceil(tables / (GPUs - 1)) per GPU) on the others.
``tensorflow-2023``: DeepLearningExamples TensorFlow2 DLRM_and_DCNv2 README (Merlin Distributed
Embeddings): data-parallel MLPs, "each smaller table is placed entirely on a single device".
No weight-gradient side stream (``software.overlap_weight_gradients`` off) for ``hugectr-2020``
and ``hugectr-2021``: the option (``async_mlp_wgrad``) first appears in HugeCTR v3.3, after the
v0.7 (HugeCTR 2.2) and v1.0 (3.1, ``enable_overlap`` only) submissions; nor for the two
DeepLearningExamples families, whose backward is their framework's autograd on one stream. The
reference family has it (``async_mlp_wgrad = True`` in the v2.0 and v2.1 NVIDIA configurations; the
:class:`dse.model.system.SoftwareSpec` default).
``hugectr-2023.04`` and ``hugectr-2023.09`` (MLPerf Training v3.0/v3.1 DCNv2): the reference builds
an embedding collection whose tables are sharded model- or data-parallel as a whole, with no
frequent-row hybrid (that was the one-hot DLRM's hybrid embedding), and computes weight gradients
on a side stream (``use_embedding_collection=True``, ``DenseLayerComputeConfig(async_wgrad=True)``
in NVIDIA's dlrm_dcnv2 train.py); v3.1's multi-node configuration makes small tables
data-parallel (``DP_SHARDING_THRESHOLD=0.0125`` in config_DGXH100_8x8x2112.sh), v3.0's sets no
such threshold, so its small tables stay model-parallel. Both releases' data distributor sends
each model-parallel key to its owner with a flat all-to-all over all devices
(``software.flat_key_exchange``; docs/sources.md, "What the MLPerf v3.0/v3.1 DCNv2 runs did")."""


@dataclass(frozen=True, slots=True)
class PowerMeasurement:
    """A published wall power of a whole system while it trained, as the range its logs show (W)."""

    id: str
    workload: str
    """The workload preset of what it trained (its step's activity sets the parts' draws,
    :mod:`dse.model.power`)."""
    system: str
    """The system preset that describes the measured machine."""
    low_w: float
    high_w: float
    source: str

    @property
    def mid_w(self) -> float:
        """The middle of the measured range (W): the value a fit aims at."""
        return (self.low_w + self.high_w) / 2.0


POWER_MEASUREMENTS: tuple[PowerMeasurement, ...] = (
    PowerMeasurement(
        "mlperf-v4.0-8xh100-dcnv2-power", *REFERENCE, 7060.0, 7110.0,
        "MLPerf Training v4.0 DLRM-DCNv2 on an 8x H100 SXM node, wall power during training from "
        "the submission's smc-ac-power logs (mlcommons/training_results_v4.0; docs/sources.md, "
        "\"Whole-node power\")"),
)
"""Wall-power measurements of training systems: the one point ``accelerator_training_utilisation``
is fitted to, the measured node whose dense kernels' level :mod:`dse.model.power` derives from it
(:data:`dse.model.power.REFERENCE`, the design named once)."""


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
    ("h100-sxm5-80gb", "fully_connected"): ("hgx-h100-4gpu",),
    ("h100-pcie-80gb", "none"): ("h100-pcie-x8", "h100-pcie-x4"),
    ("a40", "none"): ("a40-pcie-x8",),
    ("l40", "none"): ("l40-pcie-x8",),
    ("l40s", "none"): ("l40s-pcie-x8",),
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
    published: str = ""
    """Month the figure was published, ``YYYY-MM`` (an MLPerf round's results date, or the date a
    DeepLearningExamples README gives its table); orders the forward validation."""
    results: str = ""
    """Where the figure's logs or table live (``repository:path``)."""
    gross_samples_per_s: float | None = None
    """Official figure with in-run evaluations included (MLPerf DCNv2 rows only)."""
    steady_samples_per_s: float | None = None
    """Median steady training-step rate from the logs, where they print it."""
    measurement_class: str = "hbm_resident"
    """Where the tables lived and who computed (:data:`MEASUREMENT_CLASSES`; optional column
    ``measurement_class``, default ``hbm_resident``)."""
    state_check: str = "unlogged"
    """The state-change rule's verdict on the point's logs (:data:`STATE_COLUMNS`)."""
    state_evidence: str = ""
    """The rule's evidence: step range and rates of the changed stretch, or the longest found."""

    @property
    def excluded(self) -> bool:
        """Whether the state-change rule excludes the point from the fit (its logs show the
        machine changing state during the timed run; :mod:`dse.calibration.state_change`)."""
        return self.state_check == "changed"

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

    def optional(key: str) -> float | None:
        return num(key, float) if raw.get(key, "").strip() else None

    published = raw["published"].strip()
    if not _is_month(published):
        raise DseInputError(where, "published", f"expected YYYY-MM, got {published!r}")
    if not raw["results"].strip():
        raise DseInputError(where, "results", "must not be empty")
    software = raw["software"].strip()
    if software_family(software) is None:
        raise DseInputError(where, "software", f"unknown software family in {software!r}")
    if raw.get("state_check", "").strip() == "changed" and not raw.get("state_evidence", "").strip():
        raise DseInputError(where, "state_evidence", "a changed point must carry the rule's evidence")
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
        published=published,
        results=raw["results"].strip(),
        gross_samples_per_s=optional("gross_samples_per_s"),
        steady_samples_per_s=optional("steady_samples_per_s"),
        measurement_class=(choice("measurement_class", MEASUREMENT_CLASSES)
                           if "measurement_class" in raw else "hbm_resident"),
        state_check=choice("state_check", STATE_CHECKS) if "state_check" in raw else "unlogged",
        state_evidence=raw.get("state_evidence", "").strip(),
    )


def _is_month(text: str) -> bool:
    """Whether ``text`` is a ``YYYY-MM`` month."""
    year, _, month = text.partition("-")
    return (len(year) == 4 and year.isdigit() and len(month) == 2 and month.isdigit()
            and 1 <= int(month) <= 12)


def fitted(measurements: Sequence[Measurement]) -> list[Measurement]:
    """The measurements a fit uses: all but those the state-change rule excludes
    (:attr:`Measurement.excluded`)."""
    return [m for m in measurements if not m.excluded]


def load_measurements(path: Path | None = None) -> tuple[Measurement, ...]:
    """Load a measurement CSV strictly (exact columns, known names, positive numbers, unique ids);
    without ``path``, every packaged file of :data:`DATA_FILES`, ids unique across them."""
    if path is not None:
        return _load(path, str(path))
    rows: list[Measurement] = []
    for name in DATA_FILES:
        with resources.as_file(resources.files("dse") / "data" / name) as p:
            rows.extend(_load(p, f"dse/data/{name}"))
    ids = [m.id for m in rows]
    duplicate = next((i for i in ids if ids.count(i) > 1), None)
    if duplicate is not None:
        raise DseInputError("dse/data", "id", f"duplicate id {duplicate!r}")
    return tuple(rows)


def _load(path: Path, name: str) -> tuple[Measurement, ...]:
    text = read_text(path, MAX_DATA_FILE_BYTES, name)
    reader = csv.DictReader(text.splitlines())
    header = tuple(reader.fieldnames or ())
    base = DCNV2_COLUMNS if "submitted_software" in header else COLUMNS
    tail = header[len(base):]
    if header[:len(base)] != base or tail not in OPTIONAL_TAILS:
        expected = base + next((t for t in OPTIONAL_TAILS if set(t) == set(tail)), STATE_COLUMNS)
        missing = [c for c in expected if c not in header]
        extra = [c for c in header if c not in expected]
        raise DseInputError(name, "header", f"expected columns {', '.join(expected)}; "
                            f"missing {missing or 'none'}, unknown {extra or 'none'}")
    rows: list[Measurement] = []
    seen: set[str] = set()
    for i, raw in enumerate(reader, start=2):
        if None in raw or any(v is None for v in raw.values()):
            raise DseInputError(f"{name}:{i}", "", f"expected {len(header)} fields")
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
