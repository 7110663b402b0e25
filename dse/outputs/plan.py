"""The placement plan as a person reads it: one row per table, one per device (``dse evaluate --plan``).

TorchRec's planner prints each table's sharding type, ranks and storage per rank; this is the same
view of a :class:`~dse.model.placement.Plan`, with the seconds each device spends on embedding
lookups and on the all-to-all, computed by the timing model's own equations (docs/design.md,
section 5, "Placement" and "Embedding lookup, per tier"). Pure: computed from an
:class:`~dse.model.evaluate.Evaluation` and its calibration; the CLI only prints it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from dse.model.evaluate import Evaluation
from dse.model.parameters import Calibration
from dse.model.placement import Plan, Shard
from dse.model.system import GB
from dse.model.timing import (
    EmbeddingLoads,
    alltoall_elements,
    alltoall_seconds,
    embedding_seconds,
    own_memory_bytes_s,
)
from dse.model.widths import COMM_BYTES


@dataclass(frozen=True, slots=True)
class TablePlan:
    """Where one table lives."""

    table: int
    """Index in the workload's table list."""
    sharding: str
    """``replicated``, ``table_wise``, ``column_wise`` or ``row_wise`` (of the part not replicated)."""
    hot_rows: int
    """Rows replicated on every device besides the sharded table (hybrid embedding); 0 if none."""
    size_bytes: float
    """The table with its optimizer state, one copy."""
    copies: int
    """Copies of ``size_bytes`` across devices: every device for a replicated table, else 1."""
    devices: tuple[int, ...]
    """Devices holding a piece (every device for a replicated table)."""
    tiers: tuple[str, ...]
    """Tiers of its pieces: ``hbm``, ``host`` (DDR) or ``cache`` (DDR behind an HBM cache)."""
    bytes_by_device: dict[int, float]
    """Bytes of the table (not its hot rows) per device; they add up to size x copies (plus, for a
    column-wise split under a row-wise optimizer, the row state each extra chunk keeps)."""
    hot_rows_bytes_per_device: float
    """Bytes of the hot-row copy each device holds."""
    embedding_share: float
    """Share of all devices' embedding seconds (lookup, backward and update) spent on this table."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (device keys become strings in JSON; listed here as ``gb_by_device``)."""
        return {
            "table": self.table,
            "sharding": self.sharding,
            "hot_rows": self.hot_rows,
            "size_bytes": self.size_bytes,
            "copies": self.copies,
            "devices": list(self.devices),
            "tiers": list(self.tiers),
            "bytes_by_device": {str(d): b for d, b in self.bytes_by_device.items()},
            "gb_per_device": max(self.bytes_by_device.values(), default=0.0) / GB,
            "hot_rows_bytes_per_device": self.hot_rows_bytes_per_device,
            "embedding_share": self.embedding_share,
        }


@dataclass(frozen=True, slots=True)
class DevicePlan:
    """What one device holds and how long its embedding work and all-to-all take per step."""

    device: int
    node: int
    hbm_used_gb: float
    """Tables, cache, dense model and activations in this device's HBM (0 without HBM)."""
    ddr_used_gb: float
    """Tables in DDR: the node's host DDR (shared by the node's devices), or the device's own
    when it is a node's CPU sockets."""
    tables: int
    """Tables with a piece here (replicated ones included)."""
    embedding_s: float
    """Forward lookup plus backward and update, HBM and host work overlapped as in the step."""
    cpu_pooling_s: float
    """Of it, the host CPUs' work on the tables they pool for this device's node (its own stage,
    ``cpu_pooling``), forward and backward."""
    alltoall_s: float
    """Forward and backward all-to-all, were this device the busiest."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"device": self.device, "node": self.node, "hbm_used_gb": self.hbm_used_gb,
                "ddr_used_gb": self.ddr_used_gb, "tables": self.tables,
                "embedding_s": self.embedding_s, "cpu_pooling_s": self.cpu_pooling_s,
                "alltoall_s": self.alltoall_s}


@dataclass(frozen=True, slots=True)
class PlanSummary:
    """Every table and every device of a plan."""

    tables: tuple[TablePlan, ...]
    devices: tuple[DevicePlan, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the ``plan`` key of ``dse evaluate --plan --json``)."""
        return {"tables": [t.to_dict() for t in self.tables],
                "devices": [d.to_dict() for d in self.devices]}


def _device_loads(ev: Evaluation) -> list[EmbeddingLoads]:
    """Each device's embedding bytes (its own shards plus every replica), as the timing model's
    :class:`EmbeddingLoads` of a single device; the bytes of each node tier are its node's."""
    plan, system = ev.plan, ev.system
    devices, per_node = plan.devices, system.accelerators_per_node
    tiers = [t.name for t in system.tiers[1:]]
    local = [[0.0, 0.0] for _ in range(devices)]
    link = [[0.0, 0.0] for _ in range(devices)]
    far: defaultdict[tuple[str, int], list[float]] = defaultdict(lambda: [0.0, 0.0])
    pooled: defaultdict[tuple[str, int], list[float]] = defaultdict(lambda: [0.0, 0.0])
    pooled_tables: defaultdict[int, int] = defaultdict(int)
    rep = [0.0, 0.0]
    for s in plan.shards:
        t = s.traffic
        if s.device < 0:
            rep[0] += t.local_fwd
            rep[1] += t.local_bwd
            continue
        local[s.device][0] += t.local_fwd
        local[s.device][1] += t.local_bwd
        link[s.device][0] += t.link_fwd
        link[s.device][1] += t.link_bwd
        by_cpu = s.access == "pooled"
        node = (pooled if by_cpu else far)[s.tier, s.device // per_node]
        node[0] += t.far_fwd
        node[1] += t.far_bwd
        pooled_tables[s.device // per_node] += by_cpu
    return [EmbeddingLoads(local_fwd=local[d][0] + rep[0], local_bwd=local[d][1] + rep[1],
                           link=(link[d][0], link[d][1]),
                           far=tuple((far[name, d // per_node][0], far[name, d // per_node][1])
                                     for name in tiers),
                           host=bool(link[d][0] or link[d][1]),
                           pooled=tuple((pooled[name, d // per_node][0], pooled[name, d // per_node][1])
                                        for name in tiers),
                           pooled_tables=pooled_tables[d // per_node])
            for d in range(devices)]


def _shard_seconds(s: Shard, ev: Evaluation, calib: Calibration) -> float:
    """Device-seconds of one shard's embedding traffic: its device's own memory plus its host link
    (a replica's on every device)."""
    system = ev.system
    t = s.traffic
    mem = own_memory_bytes_s(system, calib)
    link = system.pcie_bytes_s * calib.host_efficiency
    sec = (t.local_fwd + t.local_bwd) / mem + ((t.link_fwd + t.link_bwd) / link if link else 0.0)
    return sec * (ev.plan.devices if s.device < 0 else 1)


def plan_summary(ev: Evaluation, calib: Calibration) -> PlanSummary:
    """The plan of ``ev`` per table and per device. ``calib``: the calibration ``ev`` was scored
    with (it sets the efficiencies that turn bytes into seconds)."""
    plan, wl = ev.plan, ev.workload
    g = plan.devices
    by_table: defaultdict[int, list[Shard]] = defaultdict(list)
    for s in plan.shards:
        by_table[s.table].append(s)
    seconds = {ti: sum(_shard_seconds(s, ev, calib) for s in shards) for ti, shards in by_table.items()}
    total_s = sum(seconds.values())
    tables = []
    for ti, table in enumerate(wl.tables):
        shards = by_table.get(ti, [])
        hot = [s for s in shards if s.sharding == "hot_rows"]
        rest = [s for s in shards if s.sharding != "hot_rows"]
        replicated = any(s.device < 0 for s in rest)
        by_device: dict[int, float] = {}
        for s in rest:
            for d in (range(g) if s.device < 0 else (s.device,)):
                by_device[d] = by_device.get(d, 0.0) + s.footprint_bytes
        tables.append(TablePlan(
            table=ti, sharding=rest[0].sharding if rest else "unplaced",
            hot_rows=sum(s.rows for s in hot), size_bytes=float(wl.table_bytes(table)),
            copies=g if replicated else 1, devices=tuple(sorted(by_device)),
            tiers=tuple(dict.fromkeys(s.where for s in rest)), bytes_by_device=by_device,
            hot_rows_bytes_per_device=sum(s.footprint_bytes for s in hot),
            embedding_share=seconds.get(ti, 0.0) / total_s if total_s else 0.0))
    return PlanSummary(tuple(tables), _devices(ev, calib))


def _devices(ev: Evaluation, calib: Calibration) -> tuple[DevicePlan, ...]:
    """Every device's memory, tables and embedding and all-to-all seconds."""
    plan, system = ev.plan, ev.system
    g, per_node = plan.devices, system.accelerators_per_node
    loads = _device_loads(ev)
    same, cross = _alltoall_sends(ev)
    everywhere = {s.table for s in plan.shards if s.device < 0}
    owned: defaultdict[int, set[int]] = defaultdict(set)
    for s in plan.shards:
        if s.device >= 0:
            owned[s.device].add(s.table)
    out = []
    for d in range(g):
        t = embedding_seconds(loads[d], system, calib)
        a2a = alltoall_seconds(same[d], cross[d], g, system, calib)
        out.append(DevicePlan(
            device=d, node=d // per_node, hbm_used_gb=_used(plan, "hbm", d, per_node) / GB,
            ddr_used_gb=_used(plan, "ddr", d, per_node) / GB,
            tables=len(owned[d] | everywhere),
            embedding_s=max(t.emb_fwd, t.cpu_fwd + t.host_fwd) + max(t.emb_bwd, t.host_bwd + t.cpu_bwd),
            cpu_pooling_s=t.cpu_fwd + t.cpu_bwd,
            alltoall_s=2.0 * max(a2a.fabric, a2a.network)))
    return tuple(out)


def _used(plan: Plan, tier: str, device: int, per_node: int) -> float:
    """Bytes in tier ``tier`` on ``device`` (the device's own memory) or on its node (a node tier),
    0 when the system has no such tier."""
    use = plan.memory.of(tier)
    if use is None:
        return 0.0
    at = device if use.tier.scope == "device" else device // per_node
    return use.used_bytes[at] if at < len(use.used_bytes) else 0.0


def _alltoall_sends(ev: Evaluation) -> tuple[list[float], list[float]]:
    """Bytes each device sends per all-to-all inside and outside its scale-up domain (the per-device
    lists behind :func:`dse.model.timing.alltoall_sends`, which keeps only their maxima)."""
    plan, system, wl = ev.plan, ev.system, ev.workload
    g = plan.devices
    if g <= 1:
        return [0.0] * g, [0.0] * g
    s_c = COMM_BYTES[wl.precision]
    lead_dim = wl.interaction_dim() if system.spec.software.bottom_mlp_on_one_device else 0
    same, cross = alltoall_elements(plan, min(system.scaleup_domain, g), wl.global_batch / g,
                                    wl.global_batch, lead_dim)
    return [x * s_c for x in same], [x * s_c for x in cross]
