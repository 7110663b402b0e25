"""What each device can hold: every memory tier after its reserve, the dense model and activations
every device keeps in its own memory, and the per-device budgets of the placement rules
(docs/design.md, section 5)."""

from __future__ import annotations

from typing import NamedTuple

from dse.model.system import GB, System
from dse.model.tiers import HBM_RESERVE_FRACTION, HOST_RESERVE_FRACTION, MemoryTier
from dse.model.widths import ACTIVATION_BYTES, COMM_BYTES
from dse.model.workload import Workload

__all__ = ["HBM_RESERVE_FRACTION", "HOST_RESERVE_FRACTION", "Budgets", "activation_bytes_per_device",
           "dense_bytes_per_device", "device_budgets", "shortfall"]

MAX_SHARD_FRACTION = 0.5
"""A shard may take at most this share of a device's free HBM, so greedy packing stays feasible."""
REPLICATE_MAX_FRACTION = 0.01
"""Replicated tables may use at most this share of a device's free HBM [A]."""
HOT_MAX_FRACTION = 0.02
"""Replicated hot rows of one table may use at most this share of a device's free HBM [A]."""
MASTER_WEIGHT_BYTES = 4
"""Dense weights are kept in fp32 master copies with fp32 gradients (mixed-precision training)."""


def dense_bytes_per_device(workload: Workload) -> float:
    """HBM for the data-parallel dense part: fp32 master weights, gradients and optimizer state."""
    per_param = MASTER_WEIGHT_BYTES * (2 + workload.dense_optimizer_state_per_param())
    if workload.precision in ("amp", "bf16", "fp16", "fp8"):
        per_param += ACTIVATION_BYTES[workload.precision]  # low-precision working copy
    return workload.dense_params() * per_param


def activation_bytes_per_device(workload: Workload, local_batch: float) -> float:
    """Activations kept for backward: every GEMM's input and output, plus the pooled embeddings
    before and after the all-to-all."""
    s = ACTIVATION_BYTES[workload.precision]
    s_c = COMM_BYTES[workload.precision]
    gemm = sum(i + o for i, o in workload.mlp_layers())
    return local_batch * (gemm * s + 2.0 * workload.embedding_output_dim() * s_c)


class Budgets(NamedTuple):
    """Capacities (bytes) and batch figures of one workload on one system, read by every pass.
    Immutable; a named tuple, as :class:`~dse.model.placement.plan.Shard`, since a plan builds one
    and a frozen dataclass sets each field through ``object.__setattr__``."""

    devices: int
    """G: accelerators in the system."""
    local_batch: float
    """b = B / G samples per device and step."""
    global_batch: float
    """B samples per step."""
    domain: int
    """Devices in one scale-up domain (at most G)."""
    tiers: tuple[MemoryTier, ...]
    """The system's memory tiers (:attr:`~dse.model.system.System.tiers`), the device's own first."""
    device_capacity_bytes: float
    """Usable memory of each device's own tier, after the reserve."""
    dense_bytes: float
    """Per device: the dense model with its gradients and optimizer state."""
    activation_bytes: float
    """Per device: activations kept for backward."""
    table_bytes: float
    """Per device: own memory left for embeddings (negative when the dense part does not fit)."""
    replicate_bytes: float
    """Largest table replicated on every device."""
    hot_bytes: float
    """Largest set of one table's hot rows replicated on every device."""
    shard_bytes: float
    """Largest piece a table is cut into for capacity."""
    node_capacity_bytes: tuple[float, ...]
    """Usable bytes per node of each node tier (the tiers after the first), after its reserve."""
    lead: bool
    """Device 0 runs the bottom MLP and holds no tables (DeepLearningExamples' layout)."""
    device_noun: str
    """What one training device is, for sentences: an accelerator, or a node's CPU sockets."""

    def table_devices(self) -> int:
        """Devices that hold tables."""
        return self.devices - 1 if self.lead else self.devices

    def device_table_bytes(self, replica_bytes: float) -> float:
        """Own memory per device for sharded tables once the replicas (on every device) are in."""
        return max(self.table_bytes - replica_bytes, 0.0)


def device_budgets(workload: Workload, system: System) -> Budgets:
    """The :class:`Budgets` of ``workload`` on ``system``."""
    g = system.accelerators_total
    b = workload.global_batch / g
    dense = dense_bytes_per_device(workload)
    acts = activation_bytes_per_device(workload, b)
    tiers = system.tiers
    own_cap = tiers[0].usable_bytes
    table_cap = own_cap - dense - acts
    software = system.spec.software
    # Software that never splits to balance keeps whole tables while one fits a device.
    shard_fraction = MAX_SHARD_FRACTION if software.split_tables_to_balance else 1.0
    return Budgets(
        devices=g,
        local_batch=b,
        global_batch=float(workload.global_batch),
        domain=min(system.scaleup_domain, g),
        tiers=tiers,
        device_capacity_bytes=own_cap,
        dense_bytes=dense,
        activation_bytes=acts,
        table_bytes=table_cap,
        replicate_bytes=REPLICATE_MAX_FRACTION * max(table_cap, 0.0),
        hot_bytes=HOT_MAX_FRACTION * max(table_cap, 0.0),
        shard_bytes=shard_fraction * table_cap,
        node_capacity_bytes=tuple([t.usable_bytes for t in tiers[1:]]),
        lead=g > 1 and software.bottom_mlp_on_one_device,
        device_noun="node" if system.cpu_only else "accelerator",
    )


def shortfall(budgets: Budgets, workload: Workload, nodes: int, replica_bytes: float,
              unplaced_bytes: float) -> tuple[float, str]:
    """(bytes the design lacks, why it is infeasible; "" when it is not) given ``unplaced_bytes`` of
    tables that found room nowhere."""
    own = budgets.tiers[0].kind.label
    if budgets.table_bytes < 0:
        reason = (f"dense model and activations need "
                  f"{(budgets.dense_bytes + budgets.activation_bytes) / GB:.1f} GB per "
                  f"{budgets.device_noun} but {own} has {budgets.device_capacity_bytes / GB:.1f} GB usable")
        return max(unplaced_bytes, -budgets.table_bytes), reason
    if unplaced_bytes > 0:
        need = workload.embedding_footprint_bytes() / GB
        held = [f"{own} holds {budgets.device_table_bytes(replica_bytes) * budgets.devices / GB:.1f} GB"]
        held += [f"{tier.kind.label} {cap * nodes / GB:.1f} GB"
                 for tier, cap in zip(budgets.tiers[1:], budgets.node_capacity_bytes, strict=True)]
        reason = (f"embedding tables need {need:.1f} GB; {' and '.join(held)}: "
                  f"short by {unplaced_bytes / GB:.1f} GB")
        return unplaced_bytes, reason
    return unplaced_bytes, ""

