"""Score one design: workload + system -> placement -> step time -> cost, power and metrics.

>>> from dse import evaluate, load_system, load_workload
>>> ev = evaluate(load_workload("mlperf-dlrm-v1"), load_system("dgx-a100"))
>>> ev.feasible, ev.bottleneck in ev.breakdown_s
(True, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dse.limits import MAX_MEMO_PLAN_GROUPS, check_placement_work
from dse.model.bom import Bill, bill_of_materials
from dse.model.catalog import Catalog, load_catalog
from dse.model.convergence import TrainingSamples, training_samples
from dse.model.cost import (
    CRITEO_EPOCH_SAMPLES,
    CostBreakdown,
    Economics,
    PowerBreakdown,
    economics,
    priced,
    to_train,
)
from dse.model.parameters import Calibration, load_calibration
from dse.model.placement import Plan, plan_key, plan_placement
from dse.model.power import activity
from dse.model.rules import RuleCheck, check_rules, what_if_parts
from dse.model.system import GB, System
from dse.model.tiers import TIER_KINDS
from dse.model.timing import StepLoads, StepTime, loads_key, step_loads, step_time
from dse.model.workload import Workload


@dataclass(frozen=True, slots=True)
class Evaluation:
    """Everything the model says about one design."""

    workload: Workload
    system: System
    plan: Plan
    timing: StepTime
    cost: CostBreakdown
    power: PowerBreakdown
    economics: Economics
    feasible: bool
    reasons: tuple[str, ...]
    calibration_version: str
    rules: tuple[RuleCheck, ...] = ()
    """Every buildability rule's verdict (:mod:`dse.model.rules`); broken ones are also reasons."""
    what_if: tuple[str, ...] = ()
    """What-if parts the design uses (allowed by ``[constraints] hypothetical = true``)."""
    rack_kw: float = 0.0
    """Draw of the fullest rack at full accelerator power (kW; :attr:`dse.model.cost.Priced.rack_kw`)."""
    racks: int = 0
    """Racks: a rack-scale system's own, or the facility's that hold its nodes
    (:attr:`dse.model.cost.Priced.racks`)."""
    bill: Bill | None = None
    """The bill of materials the cost and power were priced from (:mod:`dse.model.bom`): what the
    power intervals reprice at other power levels (``dse.calibration.ensemble.power_ends``)."""

    @property
    def feasible_without_rules(self) -> bool:
        """The model's own verdict (memory, batch, NICs, precision), buildability rules aside: what
        properties of the step-time model are stated over, on designs nobody would build."""
        broken = sum(c.broken for c in self.rules)
        return len(self.reasons) == broken

    def rule_violations(self) -> dict[str, float]:
        """Violation of each buildability rule (0 kept, > 0 broken), for named constraints."""
        return {c.name: c.violation for c in self.rules}

    @property
    def throughput_samples_per_s(self) -> float:
        """Training samples per second (global batch / step time)."""
        return self.workload.global_batch / self.timing.step_s

    @property
    def step_time_s(self) -> float:
        """Seconds per training step."""
        return self.timing.step_s

    @property
    def bottleneck(self) -> str:
        """The stage with the largest share of the critical path."""
        return self.timing.bottleneck

    @property
    def breakdown_s(self) -> dict[str, float]:
        """Critical-path seconds per stage (sums to the step time)."""
        return self.timing.breakdown_s

    def compute_share(self) -> float:
        """Share of the step on dense compute and embedding memory (the rest waits on links)."""
        bd = self.timing.breakdown
        step = self.step_time_s
        if not 0 < step < math.inf:
            return 0.0
        return (bd.dense_compute + bd.embedding_memory) / step

    @property
    def usd_per_billion_samples(self) -> float:
        """TCO per billion training samples (USD): differences between designs show in three
        significant figures, where per million they round away."""
        return self.economics.usd_per_million_samples * 1e3

    def dataset_pass(self) -> tuple[float, float] | None:
        """Seconds and TCO (USD) of one pass over the workload's own dataset
        (``Workload.samples_per_epoch``, the epoch :func:`dse.model.cost.economics` was given);
        None when its file states no dataset size."""
        if not self.workload.samples_per_epoch:
            return None
        return self.economics.epoch_time_s, self.economics.epoch_cost_usd

    def training_samples(self) -> TrainingSamples:
        """Samples to train this workload at its batch (its convergence curve, else one epoch)."""
        wl = self.workload
        return training_samples(wl.name, wl.curve(), wl.global_batch, wl.samples_per_epoch)

    def to_train(self) -> tuple[float, float]:
        """Seconds and TCO (USD) to train: :meth:`training_samples` over the throughput."""
        return to_train(self.training_samples().samples, self.throughput_samples_per_s,
                        self.economics)

    def metrics(self) -> dict[str, float | int | str | bool]:
        """Flat scalar metrics: what objectives, constraints and trial attributes read. Their keys
        are exactly the registry's, in its order (:data:`dse.model.metrics.METRICS`)."""
        memory = self.plan.memory
        eco = self.economics
        dataset = self.dataset_pass()
        return {
            "throughput_samples_per_s": self.throughput_samples_per_s,
            "step_time_s": self.step_time_s,
            "feasible": self.feasible,
            "bottleneck": self.bottleneck,
            "capex_usd": self.cost.capex_usd,
            "power_w": self.power.power_w,
            "power_per_node_w": self.power.power_w / self.system.nodes,
            "tco_usd_per_year": eco.tco_usd_per_year,
            "usd_per_million_samples": eco.usd_per_million_samples,
            "usd_per_billion_samples": self.usd_per_billion_samples,
            "samples_per_s_per_kusd": eco.samples_per_s_per_kusd,
            "samples_per_s_per_w": eco.samples_per_s_per_w,
            "energy_per_sample_j": eco.energy_per_sample_j,
            "epoch_time_s": eco.epoch_time_s,
            "epoch_cost_usd": eco.epoch_cost_usd,
            # Infinite (never met, worst as an objective) where the workload states no dataset;
            # a study naming them is refused up front (dse.search.study.objective_sets.needs_dataset).
            "dataset_time_s": dataset[0] if dataset else math.inf,
            "dataset_cost_usd": dataset[1] if dataset else math.inf,
            "memory_short_gb": memory.short_bytes / GB,
            **self._memory_gb(),
            "accelerators": self.system.spec.node.accelerators * self.system.nodes,
            "nodes": self.system.nodes,
            "compute_share": self.compute_share(),
            **dict(zip(("time_to_train_s", "cost_to_train_usd"), self.to_train(), strict=True)),
            # A rack-scale system's racks (dse.model.racks), or the facility's that hold a system
            # bought node by node (dse.model.cost.facility_racks).
            "racks": self.racks,
            "rack_kw": self.rack_kw,
            "rack_nodes": self.system.spec.rack.nodes,
        }

    def _memory_gb(self) -> dict[str, float]:
        """Use (the fullest device or node) and usable capacity (per device or node) of each kind
        of memory (GB), 0 for a kind the system lacks: a node without accelerators keeps its tables
        in its device's own memory, which is DDR."""
        out: dict[str, float] = {}
        for name in TIER_KINDS:
            use = self.plan.memory.of(name)
            out[f"{name}_used_gb"] = use.max_used_bytes / GB if use else 0.0
            out[f"{name}_capacity_gb"] = use.usable_bytes / GB if use else 0.0
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready result (``dse evaluate --json``)."""
        out: dict[str, Any] = dict(self.metrics())
        out.update(
            {
                "infeasible_reasons": list(self.reasons),
                "breakdown_s": dict(self.breakdown_s),
                "stages_s": dict(self.timing.stages_s),
                "critical_path": list(self.timing.critical_path),
                "kernels_per_step": self.timing.kernels,
                "capex_by_part_usd": {part.value: usd for part, usd in self.cost.parts_usd.items()},
                "power_by_part_w": {part.value: w for part, w in self.power.parts_w.items()},
                "power_activity": self.power.activity._asdict() if self.power.activity else None,
                "placement": dict(self.plan.counts),
                "notes": list(self.timing.notes),
                "workload": self.workload.name,
                "system": self.system.spec.name or self.system.accelerator.name,
                "calibration_version": self.calibration_version,
                "rules_broken": [c.name for c in self.rules if c.broken],
                "what_if": list(self.what_if),
            }
        )
        dataset = self.dataset_pass()
        out.update({
            "samples_per_epoch": self.workload.samples_per_epoch or None,
            "dataset_time_s": dataset[0] if dataset else None,
            "dataset_cost_usd": dataset[1] if dataset else None,
        })
        need = self.training_samples()
        out.update({"samples_to_train": need.samples, "to_train_basis": need.basis,
                    "convergence": self.workload.convergence or (
                        self.workload.convergence_curve.name if self.workload.convergence_curve
                        else None)})
        return out


class Memo:
    """Placements and step loads shared by the designs of one workload and calibration (a sweep).

    A plan is keyed by :func:`dse.model.placement.plan_key` (capacities and counts: never bandwidths) and
    the step's bandwidth-free loads additionally by :func:`dse.model.timing.loads_key`, so a design that
    differs from an earlier one only in its links (PCIe generation, fabric, NICs, network) reuses
    both and pays only for the link-dependent stages, cost and power. ``evaluate(..., memo=m)``
    returns exactly what ``evaluate`` without it does.
    """

    def __init__(self, workload: Workload, calibration: Calibration,
                 max_groups: int = MAX_MEMO_PLAN_GROUPS) -> None:
        self.workload = workload
        self.calibration = calibration
        self.plans: dict[tuple[object, ...], Plan] = {}
        self.loads: dict[tuple[object, ...], StepLoads] = {}
        self.max_groups = max_groups
        """Placed groups the plans may hold together; the least recently used plans (and their
        loads) are dropped beyond it (:data:`~dse.limits.MAX_MEMO_PLAN_GROUPS`)."""
        self._groups = 0

    def plan_and_loads(self, system: System) -> tuple[Plan, StepLoads]:
        """The plan and step loads of ``system``, computed on first use of their keys."""
        pk = plan_key(system)
        # Taken out and put back last: the plans stay in order of last use, oldest first.
        plan = self.plans.pop(pk, None)
        if plan is None:
            plan = plan_placement(self.workload, system)
            self._groups += len(plan.group_shards)
        self.plans[pk] = plan
        self._evict(keep=pk)
        lk = (pk, loads_key(system))
        loads = self.loads.get(lk)
        if loads is None:
            loads = self.loads[lk] = step_loads(self.workload, system, plan, self.calibration)
        return plan, loads

    def _evict(self, keep: tuple[object, ...]) -> None:
        """Drop the least recently used plans, never ``keep``, until the groups held fit
        :attr:`max_groups`."""
        while self._groups > self.max_groups and len(self.plans) > 1:
            oldest = next(k for k in self.plans if k != keep)
            self._groups -= len(self.plans.pop(oldest).group_shards)
            for key in [k for k in self.loads if k[0] == oldest]:
                del self.loads[key]


def evaluate(
    workload: Workload,
    system: System,
    calibration: Calibration | None = None,
    catalog: Catalog | None = None,
    memo: Memo | None = None,
) -> Evaluation:
    """Place, time, cost and power one design. Never raises for an infeasible design: it is
    returned with ``feasible=False``, its reasons, and the metrics the model can still estimate.

    ``memo``: reuse placements and step loads across designs of the same workload and calibration
    (:class:`Memo`); the result is the same."""
    calib = calibration or load_calibration()
    cat = catalog or load_catalog()
    reasons: list[str] = []
    g = system.accelerators_total
    check_placement_work(len(workload.tables), g, f"workload {workload.name}")
    if system.precision_fallback[workload.precision] == "unsupported":
        reasons.append(
            f"{system.accelerator.name} has no published {workload.precision} peak in the catalog"
            + (" (no fp8 math: fp8 training needs fp8 tensor cores)" if workload.precision == "fp8"
               else "")
        )
    if workload.global_batch < g:
        reasons.append(f"global batch {workload.global_batch} is smaller than {g} accelerators")
    if g > system.scaleup_domain and system.nic_bytes_s <= 0:
        reasons.append(f"{system.nodes} nodes need scale-out NICs but node.nics = 0")
    rules = check_rules(system, cat)
    reasons.extend(f"{c.name}: {c.message}" for c in rules if c.broken)
    if memo is not None and memo.workload is workload and memo.calibration is calib:
        plan, loads = memo.plan_and_loads(system)
    else:
        plan = plan_placement(workload, system)
        loads = step_loads(workload, system, plan, calib)
    if not plan.feasible:
        reasons.append(plan.reason)
    timing = step_time(workload, system, plan, calib, loads)
    if not math.isfinite(timing.step_s):
        reasons.append("a stage has no bandwidth (step time is infinite)")
    step = timing.step_s
    bill = bill_of_materials(system, cat)
    cost, pw, rack_kw, racks = priced(bill, activity(timing, system, calib))
    throughput = workload.global_batch / step if 0 < step < math.inf else 0.0
    return Evaluation(
        workload=workload,
        system=system,
        plan=plan,
        timing=timing,
        cost=cost,
        power=pw,
        economics=economics(throughput, cost, pw, cat,
                            workload.samples_per_epoch or CRITEO_EPOCH_SAMPLES),
        feasible=not reasons,
        reasons=tuple(reasons),
        calibration_version=calib.version,
        rules=rules,
        what_if=what_if_parts(system) if system.spec.constraints.hypothetical else (),
        rack_kw=rack_kw,
        racks=racks,
        bill=bill,
    )

