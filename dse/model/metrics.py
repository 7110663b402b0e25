"""Every metric of an evaluation, declared once: one :class:`Metric` per key of
:meth:`dse.model.evaluate.Evaluation.metrics`, in that order.

A record says what the metric is (its name, in words, its kind), how a table and a figure label it
(header, title, the scale between them), which direction is better, and how it moves when the
model's inputs move: with throughput under the calibration ensemble (a power of throughput), with
the power levels no measurement pins down (a power of wall power) and with prices (powers of capex
and of TCO). Every list of metric names elsewhere is derived from
:data:`METRICS`:

- the metrics objectives and constraints may name (``dse.search.study.objective_sets.METRICS``,
  with the ones that need a dataset size or a convergence curve);
- the columns a sweep writes per design (``dse.search.algorithms.sweep.METRIC_COLUMNS``);
- the labels of tables and figures (``dse.outputs.labels.LABELS``);
- the throughput and power exponents of the prediction intervals (``dse.calibration.ensemble``)
  and the price exponents of the robust front (``dse.search.robust_front``);
- the metrics ``dse compare`` lists (``dse.outputs.compare.COMPARED_METRICS``) and those every
  point of a report shows (``dse.outputs.report.HOVER_METRICS``).

A new metric is one entry here and its computation in ``Evaluation.metrics()``;
tests/test_metrics_registry.py holds the two, and every derived list, together.

>>> METRIC["power_w"].header, METRIC["power_w"].scale
('power kW', 0.001)
>>> [m.name for m in METRICS if m.compared][:4]
['throughput_samples_per_s', 'step_time_s', 'capex_usd', 'power_w']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

Direction = Literal["maximize", "minimize"]
"""Which way a metric is better (Optuna's study direction names)."""
Kind = Literal["float", "int", "bool", "str"]
"""The Python type of a metric's value in ``Evaluation.metrics()``."""
Needs = Literal["", "dataset", "convergence"]
"""What a workload must state for the metric to be finite: nothing, its dataset size
(``samples_per_epoch``), or what a training run needs (a convergence curve, else a dataset size)."""


@dataclass(frozen=True, slots=True)
class Metric:
    """One metric of an evaluation, and everything other modules list about it."""

    name: str
    """Key in ``Evaluation.metrics()``, objective files, trial attributes and sweep columns (a
    contract: never renamed)."""
    words: str
    """What it is, with its unit (the list of metrics objectives may name)."""
    header: str
    """Short column header with the unit it is shown in (terminal tables)."""
    title: str
    """Axis title with the unit of the stored value (figures plot stored values)."""
    scale: float = 1.0
    """Multiplies the stored value into the unit of :attr:`header` (W -> kW: 1e-3)."""
    kind: Kind = "float"
    better: Direction | None = "minimize"
    """The direction a study optimising it alone would take; None for a verdict or a name."""
    throughput_exponent: int | None = None
    """The power of throughput the metric is proportional to with everything else fixed (samples
    per kUSD: 1, USD per sample: -1), so it moves with the calibration's throughput; None for one
    the calibration does not move (capex, power, memory)."""
    power_exponent: int | None = None
    """The power of the cluster's wall power the metric is proportional to with everything else
    fixed (energy per sample: 1, samples per watt: -1), so it moves with the power levels no
    measurement pins down (``dse.model.power``; the power intervals); None for one they do not
    move, or move only in part (TCO, whose energy share they move)."""
    price_exponents: tuple[int, int] | None = None
    """(power of capex, power of TCO) it is proportional to, so it moves with prices; None for one
    prices do not move (:func:`dse.model.cost.economics`)."""
    compared: bool = False
    """Listed by ``dse compare``, in registry order."""
    hovered: bool = False
    """Shown in every point's hover on a study's report, after the study's objectives."""
    needs: Needs = ""
    phrase: str = ""
    """How a design states the value where the metric is also a design knob (``"{} nodes"``)."""

    @property
    def numeric(self) -> bool:
        """A number: objectives and constraints may name it, and a sweep stores it as a column."""
        return self.kind in ("float", "int")


METRICS: tuple[Metric, ...] = (
    Metric("throughput_samples_per_s", "training samples per second", "samples/s",
           "throughput (samples/s)", better="maximize", throughput_exponent=1, compared=True,
           hovered=True),
    Metric("step_time_s", "seconds per step", "step ms", "step time (s)", 1e3, throughput_exponent=-1,
           compared=True, hovered=True),
    Metric("feasible", "the model's verdict: the design fits, runs and keeps every buildability rule",
           "feasible", "feasible", kind="bool", better=None),
    Metric("bottleneck", "the stage with the largest share of the critical path", "bound by",
           "bottleneck", kind="str", better=None, hovered=True),
    Metric("capex_usd", "capital cost of the cluster (USD)", "capex USD", "capex (USD)",
           price_exponents=(1, 0), compared=True, hovered=True),
    Metric("power_w", "wall power of the cluster while training (W)", "power kW", "power (W)", 1e-3,
           power_exponent=1, compared=True, hovered=True),
    Metric("power_per_node_w", "wall power per node (W)", "kW/node", "power per node (W)", 1e-3,
           power_exponent=1),
    Metric("tco_usd_per_year", "capex amortised plus energy, per year (USD)", "TCO USD/yr",
           "TCO (USD per year)", price_exponents=(0, 1), compared=True),
    Metric("usd_per_million_samples", "TCO per million training samples (USD)", "USD/M samples",
           "cost (USD per million samples)", throughput_exponent=-1, price_exponents=(0, 1)),
    Metric("usd_per_billion_samples", "TCO per billion training samples (USD): differences between "
           "designs show in three significant figures", "USD/G samples",
           "cost (USD per billion samples)", throughput_exponent=-1, price_exponents=(0, 1), compared=True),
    Metric("samples_per_s_per_kusd", "throughput per thousand dollars of capex", "samples/s/kUSD",
           "throughput per capex (samples/s per kUSD)", better="maximize", throughput_exponent=1,
           price_exponents=(-1, 0)),
    Metric("samples_per_s_per_w", "throughput per watt", "samples/s/W",
           "throughput per watt (samples/s per W)", better="maximize", throughput_exponent=1,
           power_exponent=-1),
    Metric("energy_per_sample_j", "wall energy per sample (J)", "mJ/sample", "energy per sample (J)",
           1e3, throughput_exponent=-1, power_exponent=1, compared=True),
    Metric("epoch_time_s", "time for one epoch of the workload's dataset, else of Criteo 1TB (s)",
           "epoch min", "one epoch of the dataset (s)", 1 / 60, throughput_exponent=-1),
    Metric("epoch_cost_usd", "TCO of one epoch of the workload's dataset, else of Criteo 1TB (USD)",
           "epoch USD", "one epoch of the dataset (USD)", throughput_exponent=-1, price_exponents=(0, 1)),
    # Infinite where the workload states no dataset (a study naming them is refused when it loads).
    Metric("dataset_time_s", "time for one pass over the workload's own dataset (s)", "train h",
           "one pass over the dataset (s)", 1 / 3600, throughput_exponent=-1, needs="dataset"),
    Metric("dataset_cost_usd", "TCO of one pass over the workload's own dataset (USD)", "train USD",
           "one pass over the dataset (USD)", throughput_exponent=-1, price_exponents=(0, 1),
           needs="dataset"),
    Metric("memory_short_gb", "memory the design lacks to hold the model (GB)", "short GB",
           "memory lacking (GB)"),
    Metric("hbm_used_gb", "HBM used on the fullest accelerator (GB)", "HBM GB",
           "HBM used, fullest accelerator (GB)", compared=True),
    Metric("hbm_capacity_gb", "HBM for tables per accelerator, after reserves (GB)", "HBM cap. GB",
           "HBM for tables per accelerator (GB)", better="maximize"),
    Metric("ddr_used_gb", "host DDR used on the fullest node (GB)", "DDR GB",
           "host DDR used, fullest node (GB)", compared=True),
    Metric("ddr_capacity_gb", "host DDR for tables per node, after reserves (GB)", "DDR cap. GB",
           "host DDR for tables per node (GB)", better="maximize"),
    Metric("cxl_used_gb", "CXL memory used on the fullest node (GB)", "CXL GB",
           "CXL memory used, fullest node (GB)"),
    Metric("cxl_capacity_gb", "CXL memory for tables per node, after reserves (GB)", "CXL cap. GB",
           "CXL memory for tables per node (GB)", better="maximize"),
    Metric("accelerators", "accelerators in the cluster", "accel.", "accelerators", kind="int",
           compared=True),
    Metric("nodes", "nodes in the cluster", "nodes", "nodes", kind="int", compared=True,
           phrase="{} nodes"),
    Metric("compute_share", "share of the step on compute and HBM traffic", "compute %",
           "compute and HBM share of the step (fraction)", 100.0, better="maximize"),
    # A design these cannot be computed for breaks the `to_train` constraint of a study naming them.
    Metric("time_to_train_s", "time to train: samples to converge at the batch (the workload's "
           "convergence curve, else one epoch) over throughput (s)", "TTT min",
           "time to train to target (s)", 1 / 60, throughput_exponent=-1, needs="convergence"),
    # TCO over a time, so it moves with prices as epoch_cost_usd does (before 2026-12 it had no
    # price exponents, and the robust front's price draws left it as scored).
    Metric("cost_to_train_usd", "TCO over the time to train (USD)", "TTT USD",
           "TCO of training to target (USD)", throughput_exponent=-1, price_exponents=(0, 1),
           needs="convergence"),
    # A rack-scale system's racks (dse.model.racks), or the facility's racks its nodes fill
    # (dse.model.cost.facility_racks).
    Metric("racks", "racks of a rack-scale system (whole racks or the fractions sold), or the "
           "facility's racks that hold a system's nodes", "racks", "racks", kind="int", phrase="{} racks"),
    Metric("rack_kw", "draw of the fullest rack with every accelerator at TDP (kW), for a facility's "
           "rack limit", "kW/rack", "rack power at full draw (kW)"),
    Metric("rack_nodes", "nodes (compute trays) in a whole rack of a rack-scale system as sold; 0 "
           "for a system bought node by node", "nodes/rack", "nodes in a rack as sold", kind="int"),
)
"""The registry, in the order of ``Evaluation.metrics()``."""

METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRICS)
"""The keys of ``Evaluation.metrics()``, in order."""
METRIC: Mapping[str, Metric] = MappingProxyType({m.name: m for m in METRICS})
"""Each metric by its name."""
