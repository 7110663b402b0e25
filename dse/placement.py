"""Placement: which embedding shard lives on which accelerator, in which memory tier.

The planner follows TorchRec's split into enumerator (how each table may be sharded), estimator
(:mod:`dse.estimators`: bytes per shard) and partitioner (greedy longest-processing-time assignment
with a capacity check per device). One :class:`Plan` passes to the timing model.

Rules (DESIGN.md section 5, "Placement"):
- a small table whose gradient allreduce moves fewer bytes than its all-to-all is replicated;
- a table larger than half a device's free HBM is split column-wise when its dim allows chunks of at
  least ``MIN_COLUMN_DIM``, otherwise row-wise;
- a table whose time alone exceeds the ideal per-device time is split column-wise to balance;
- shards are ranked by traffic per byte; the hottest fill HBM, the rest go to host DDR, where leftover
  HBM serves as a cache with a Zipf hit rate;
- shards are assigned largest-cost first to the least-loaded device that has room (LPT).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from dse.calibration import Calibration
from dse.estimators import Traffic, cached_traffic, host_traffic, hbm_traffic, zipf_hit_rate
from dse.system import GB, System
from dse.workload import EmbeddingTable, Workload

Tier = Literal["hbm", "host", "cache"]
Sharding = Literal["table_wise", "row_wise", "column_wise", "replicated"]

HBM_RESERVE_FRACTION = 0.10
"""HBM kept free for the CUDA context, library workspaces and allocator fragmentation [A: PyTorch's
caching allocator typically leaves 5-15% unusable]."""
HOST_RESERVE_FRACTION = 0.10
"""Host DDR kept for the OS, the data pipeline and pinned buffers [A]."""
MAX_SHARD_FRACTION = 0.5
"""A shard may take at most this share of a device's free HBM, so greedy packing stays feasible."""
MIN_COLUMN_DIM = 32
"""Smallest column-wise shard width (elements): narrower rows waste DRAM sectors (32 B) in fp32/fp16
[A: TorchRec's planner uses similar minimum column-shard sizes]."""
SPLIT_RATIO_TOLERANCE = 1e-9
"""Relative tolerance on a shard's cost over the ideal per-device cost before rounding up the
column-wise split count (float sums of equal costs are not exact)."""
REPLICATE_MAX_FRACTION = 0.01
"""Replicated tables may use at most this share of a device's free HBM [A]."""
COMM_BYTES = {"fp32": 4, "tf32": 4, "amp": 2, "bf16": 2, "fp16": 2, "fp8": 2}
"""Bytes per communicated activation or gradient element by precision (fp8 training still
communicates 16-bit activations and gradients)."""
ACTIVATION_BYTES = {"fp32": 4, "tf32": 4, "amp": 2, "bf16": 2, "fp16": 2, "fp8": 1}
MASTER_WEIGHT_BYTES = 4
"""Dense weights are kept in fp32 master copies with fp32 gradients (mixed-precision training)."""


@dataclass(frozen=True, slots=True)
class Shard:
    """One placed piece of a table."""

    table: int
    sharding: Sharding
    rows: int
    dim: int
    lookups: float
    """Rows this shard gathers per step (forward)."""
    out_rows: float
    """Pooled output rows this shard produces per step (global batch, or local for replicas)."""
    footprint_bytes: float
    device: int
    """Owning device; -1 for a replicated table (a copy on every device)."""
    tier: Tier
    traffic: Traffic
    hit_rate: float = 1.0


@dataclass(frozen=True, slots=True)
class Plan:
    """A placement of every table of a workload on a system."""

    shards: tuple[Shard, ...]
    devices: int
    hbm_used_bytes: tuple[float, ...]
    """Per device: tables, cache, dense model, activations."""
    hbm_capacity_bytes: float
    ddr_used_bytes: tuple[float, ...]
    """Per node: host-resident tables."""
    ddr_capacity_bytes: float
    dense_bytes_per_device: float
    activation_bytes_per_device: float
    feasible: bool
    reason: str = ""
    memory_short_bytes: float = 0.0
    """How many bytes the design lacks to hold the model (0 when feasible)."""
    replicated_grad_elements: float = 0.0
    """Elements of replicated tables' gradients that join the dense allreduce."""
    counts: dict[str, int] = field(default_factory=dict)
    """Shards per sharding kind and tier (``table_wise``, ``hbm``, ...)."""


@dataclass(slots=True)
class _Cand:
    table: int
    sharding: Sharding
    rows: int
    dim: int
    lookups: float
    out_rows: float
    footprint: float
    cost: float
    device: int = -1


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


def comm_bytes_s_per_device(system: System, calib: Calibration) -> float:
    """Rough all-to-all bandwidth one device sees, only for ranking shards while balancing."""
    g = system.accelerators_total
    if g <= 1:
        return math.inf
    domain = min(system.scaleup_domain, g)
    same = (domain - 1) / (g - 1)
    fabric = system.scaleup_bytes_s if system.scaleup != "none" else system.pcie_bytes_s
    per_byte = same / (fabric * calib.fabric_efficiency)
    if same < 1.0:
        net = system.nic_bytes_s * calib.network_efficiency / system.network.oversubscription
        per_byte += (1.0 - same) * system.accelerators_per_node / max(net, 1.0)
    return 1.0 / per_byte


def _split(
    cand: _Cand, k: int, sharding: Sharding, table: EmbeddingTable, wl: Workload
) -> list[_Cand]:
    out: list[_Cand] = []
    if sharding == "column_wise":
        base, extra = divmod(cand.dim, k)
        for i in range(k):
            d = base + (1 if i < extra else 0)
            share = d / cand.dim
            out.append(
                _Cand(cand.table, sharding, cand.rows, d, cand.lookups, cand.out_rows,
                      cand.rows * wl.row_state_bytes(d), cand.cost * share)
            )
    else:
        base, extra = divmod(cand.rows, k)
        for i in range(k):
            r = base + (1 if i < extra else 0)
            share = r / cand.rows
            # Row-wise: a shard sees the lookups that hash to its rows but emits partial sums for the
            # whole batch, which the all-to-all then reduce-scatters.
            out.append(
                _Cand(cand.table, sharding, r, cand.dim, cand.lookups * share, cand.out_rows,
                      r * wl.row_state_bytes(cand.dim), cand.cost * (0.5 + 0.5 * share))
            )
    return out


def lpt_assign(
    costs: Sequence[float],
    sizes: Sequence[float],
    capacities: Sequence[float],
    loads: Sequence[float] | None = None,
) -> list[int | None]:
    """Assign items (largest cost first) to the least-loaded bin that still has room.

    Returns the bin of each item, ``None`` where no bin has room. ``loads`` are the bins' starting
    loads (zero by default). Without capacity limits this is Graham's LPT rule: the max load is within
    4/3 - 1/(3m) of optimal for m bins.
    """
    order = sorted(range(len(costs)), key=lambda i: -costs[i])
    free = list(capacities)
    start = loads if loads is not None else [0.0] * len(capacities)
    heap = [(start[b], b) for b in range(len(capacities))]
    heapq.heapify(heap)
    out: list[int | None] = [None] * len(costs)
    for i in order:
        skipped: list[tuple[float, int]] = []
        while heap:
            load, b = heapq.heappop(heap)
            if sizes[i] <= free[b]:
                out[i] = b
                free[b] -= sizes[i]
                heapq.heappush(heap, (load + costs[i], b))
                break
            skipped.append((load, b))
        for entry in skipped:
            heapq.heappush(heap, entry)
    return out


def plan_placement(workload: Workload, system: System, calib: Calibration) -> Plan:
    """Shard and place every table of ``workload`` on ``system`` (see the module rules)."""
    g = system.accelerators_total
    b = workload.global_batch / g
    batch = float(workload.global_batch)
    s_c = COMM_BYTES[workload.precision]
    dense = dense_bytes_per_device(workload)
    acts = activation_bytes_per_device(workload, b)
    hbm_cap = system.hbm_bytes * (1.0 - HBM_RESERVE_FRACTION)
    table_cap = hbm_cap - dense - acts
    mem_bw = system.hbm_bytes_s * calib.memory_efficiency
    comm_bw = comm_bytes_s_per_device(system, calib)

    def hbm_cost(lookups: float, dim: int, out_rows: float, rows_local: bool) -> float:
        t = hbm_traffic(lookups, workload.row_bytes(dim), workload.row_state_bytes(dim)
                        - workload.row_bytes(dim), out_rows * dim * s_c)
        comm = 0.0 if rows_local else 2.0 * (g - 1) * b * dim * s_c / comm_bw
        return (t.hbm_fwd + t.hbm_bwd) / mem_bw + comm

    cands: list[_Cand] = []
    replicated: list[_Cand] = []
    for ti, table in enumerate(workload.tables):
        fp = float(workload.table_bytes(table))
        # Replicate when the gradient allreduce (every device moves ~2 x rows x dim) is cheaper than
        # the all-to-all (all devices together move ~2 x B x dim): rows <= B / G.
        if g > 1 and table.rows <= b and fp <= REPLICATE_MAX_FRACTION * max(table_cap, 0.0):
            lk = b * table.pooling
            replicated.append(_Cand(ti, "replicated", table.rows, table.dim, lk, b, fp,
                                    hbm_cost(lk, table.dim, b, True)))
            continue
        lk = batch * table.pooling
        cand = _Cand(ti, "table_wise", table.rows, table.dim, lk, batch, fp,
                     hbm_cost(lk, table.dim, batch, False))
        limit = MAX_SHARD_FRACTION * table_cap
        if limit > 0 and fp > limit:
            k = math.ceil(fp / limit)
            if k <= table.dim // MIN_COLUMN_DIM:
                cands.extend(_split(cand, k, "column_wise", table, workload))
            else:
                cands.extend(_split(cand, k, "row_wise", table, workload))
        else:
            cands.append(cand)

    if g > 1 and cands:
        ideal = sum(c.cost for c in cands) / g
        balanced: list[_Cand] = []
        for c in cands:
            max_k = min(g, c.dim // MIN_COLUMN_DIM)
            # The ratio of equal costs comes out as 2.0000000000000004 after the float sum: without
            # the tolerance it splits in 3 where 2 balance exactly (16 tables on 32 devices -> 48
            # shards, and a step that got slower as bandwidth rose).
            ratio = c.cost / ideal
            if c.sharding == "table_wise" and ratio > 1.0 + SPLIT_RATIO_TOLERANCE and max_k >= 2:
                k = min(max_k, math.ceil(ratio - SPLIT_RATIO_TOLERANCE))
                balanced.extend(_split(c, k, "column_wise", workload.tables[c.table], workload))
            else:
                balanced.append(c)
        cands = balanced

    replica_bytes = sum(c.footprint for c in replicated)
    device_cap = max(table_cap - replica_bytes, 0.0)
    # Tier choice: the most traffic per byte goes to HBM.
    cands.sort(key=lambda c: -(c.lookups / max(c.footprint, 1.0)))
    budget = device_cap * g
    hbm_set: list[_Cand] = []
    host_set: list[_Cand] = []
    for c in cands:
        if c.footprint <= budget:
            hbm_set.append(c)
            budget -= c.footprint
        else:
            host_set.append(c)
    hbm_used = [dense + acts + replica_bytes] * g
    dev_load = [0.0] * g
    free = [device_cap] * g
    shards: list[Shard] = []
    leftover = _assign_hbm(hbm_set, free, dev_load, min(system.scaleup_domain, g))
    host_set.extend(leftover)
    for c, dev in _placed(hbm_set, leftover):
        hbm_used[dev] += c.footprint
        shards.append(_shard(c, dev, "hbm", workload, s_c))

    a = system.accelerators_per_node
    ddr_cap = system.ddr_bytes * (1.0 - HOST_RESERVE_FRACTION)
    ddr_used = [0.0] * system.nodes
    short = 0.0
    if host_set:
        host_bw = (system.ddr_bytes_s / a) * calib.host_efficiency
        pcie_bw = system.pcie_bytes_s * calib.host_efficiency
        costs = []
        for c in host_set:
            t = host_traffic(c.lookups, workload.row_bytes(c.dim),
                             workload.row_state_bytes(c.dim) - workload.row_bytes(c.dim),
                             c.out_rows * c.dim * s_c)
            costs.append((t.ddr_fwd + t.ddr_bwd) / host_bw + (t.pcie_fwd + t.pcie_bwd) / pcie_bw)
        # Host memory is per node: place on nodes, then on the node's least-loaded device.
        node_of = lpt_assign(costs, [c.footprint for c in host_set], [ddr_cap] * system.nodes)
        host_by_device: dict[int, list[_Cand]] = {}
        for c, cost, node in sorted(zip(host_set, costs, node_of, strict=True), key=lambda x: -x[1]):
            if node is None:
                short += c.footprint
                continue
            devs = range(node * a, node * a + a)
            dev = min(devs, key=lambda d: dev_load[d])
            dev_load[dev] += cost
            ddr_used[node] += c.footprint
            host_by_device.setdefault(dev, []).append(c)
        shards.extend(_host_shards(host_by_device, hbm_used, hbm_cap, system, workload, s_c))
    for c in replicated:
        shards.append(_shard(c, -1, "hbm", workload, s_c))

    reason = ""
    if table_cap < 0:
        short = max(short, -table_cap)
        reason = (f"dense model and activations need {(dense + acts) / GB:.1f} GB per accelerator "
                  f"but HBM has {hbm_cap / GB:.1f} GB usable")
    elif short > 0:
        need = workload.embedding_footprint_bytes() / GB
        reason = (f"embedding tables need {need:.1f} GB; HBM holds {device_cap * g / GB:.1f} GB "
                  f"and host DDR {ddr_cap * system.nodes / GB:.1f} GB: short by {short / GB:.1f} GB")
    counts: dict[str, int] = {}
    for s in shards:
        counts[s.sharding] = counts.get(s.sharding, 0) + 1
        counts[s.tier] = counts.get(s.tier, 0) + 1
    return Plan(
        shards=tuple(shards),
        devices=g,
        hbm_used_bytes=tuple(hbm_used),
        hbm_capacity_bytes=hbm_cap,
        ddr_used_bytes=tuple(ddr_used),
        ddr_capacity_bytes=ddr_cap,
        dense_bytes_per_device=dense,
        activation_bytes_per_device=acts,
        feasible=not reason,
        reason=reason,
        memory_short_bytes=short,
        replicated_grad_elements=float(sum(c.rows * c.dim for c in replicated)),
        counts=counts,
    )


def _assign_hbm(
    cands: list[_Cand], free: list[float], load: list[float], domain: int
) -> list[_Cand]:
    """Assign HBM shards to devices (updating ``free`` and ``load``); return those that fit nowhere.

    Row-wise shards of one table are kept inside one scale-up domain when it has room (as TorchRec's
    table-wise-row-wise sharding), so their partial-sum reduce-scatter stays on the fabric.
    """
    groups: dict[int, list[_Cand]] = {}
    rest: list[_Cand] = []
    for c in cands:
        if c.sharding == "row_wise":
            groups.setdefault(c.table, []).append(c)
        else:
            rest.append(c)
    unplaced: list[_Cand] = []
    domains = [list(range(d, min(d + domain, len(free)))) for d in range(0, len(free), domain)]
    for group in sorted(groups.values(), key=lambda grp: -sum(c.cost for c in grp)):
        for devs in sorted(domains, key=lambda ds: sum(load[d] for d in ds)):
            got = lpt_assign([c.cost for c in group], [c.footprint for c in group],
                             [free[d] for d in devs], [load[d] for d in devs])
            if all(x is not None for x in got):
                for c, x in zip(group, got, strict=True):
                    _commit(c, devs[x], free, load)  # type: ignore[index]
                break
        else:
            rest.extend(group)
    got = lpt_assign([c.cost for c in rest], [c.footprint for c in rest], free, load)
    for c, x in zip(rest, got, strict=True):
        if x is None:
            unplaced.append(c)
        else:
            _commit(c, x, free, load)
    return unplaced


def _commit(c: _Cand, device: int, free: list[float], load: list[float]) -> None:
    c.device = device
    free[device] -= c.footprint
    load[device] += c.cost


def _placed(cands: list[_Cand], unplaced: list[_Cand]) -> list[tuple[_Cand, int]]:
    skip = {id(c) for c in unplaced}
    return [(c, c.device) for c in cands if id(c) not in skip]


def _shard(c: _Cand, device: int, tier: Tier, wl: Workload, s_c: int) -> Shard:
    rb = wl.row_bytes(c.dim)
    traffic = hbm_traffic(c.lookups, rb, wl.row_state_bytes(c.dim) - rb, c.out_rows * c.dim * s_c)
    return Shard(c.table, c.sharding, c.rows, c.dim, c.lookups, c.out_rows, c.footprint, device,
                 tier, traffic)


def _host_shards(
    by_device: dict[int, list[_Cand]],
    hbm_used: list[float],
    hbm_cap: float,
    system: System,
    wl: Workload,
    s_c: int,
) -> list[Shard]:
    """Host-resident shards, behind an HBM cache where the device has HBM to spare."""
    out: list[Shard] = []
    wanted = system.spec.node.hbm_cache_gb
    for dev, group in by_device.items():
        spare = max(hbm_cap - hbm_used[dev], 0.0)
        cache = spare if wanted is None else min(spare, wanted * GB)
        total = sum(c.footprint for c in group)
        hbm_used[dev] += cache
        for c in group:
            rb = wl.row_bytes(c.dim)
            st = wl.row_state_bytes(c.dim) - rb
            out_bytes = c.out_rows * c.dim * s_c
            if cache > 0:
                rows_cached = cache * (c.footprint / total) / wl.row_state_bytes(c.dim)
                hit = zipf_hit_rate(rows_cached, c.rows, wl.access_zipf)
                traffic = cached_traffic(c.lookups, rb, st, out_bytes, hit)
                out.append(Shard(c.table, c.sharding, c.rows, c.dim, c.lookups, c.out_rows,
                                 c.footprint, dev, "cache", traffic, hit))
            else:
                traffic = host_traffic(c.lookups, rb, st, out_bytes)
                out.append(Shard(c.table, c.sharding, c.rows, c.dim, c.lookups, c.out_rows,
                                 c.footprint, dev, "host", traffic, 0.0))
    return out


def with_device(shard: Shard, device: int) -> Shard:
    """A copy of ``shard`` on another device (for tests and what-if tools)."""
    return replace(shard, device=device)
