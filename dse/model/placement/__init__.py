"""Placement: which embedding shard lives on which accelerator, in which memory tier.

The planner follows TorchRec's split into enumerator (how each table may be sharded), estimator
(:mod:`dse.model.estimators`: bytes per shard) and partitioner (greedy longest-processing-time assignment
with a capacity check per device). One :class:`Plan` passes to the timing model.

Rules (DESIGN.md section 5, "Placement"):
- a small table whose gradient allreduce moves fewer bytes than its all-to-all is replicated;
- a table larger than half a device's free HBM is split column-wise when its dim allows chunks of at
  least ``MIN_COLUMN_DIM``, otherwise row-wise;
- a table whose cost alone exceeds the ideal per-device cost is split column-wise to balance;
- with hot-embedding replication (HugeCTR's hybrid embedding, on by default), each table's most
  popular rows are replicated when that saves more all-to-all bytes than their gradient allreduce
  adds (:func:`hot_rows`);
- shards are ranked by traffic per byte; the hottest fill HBM, the rest go to host DDR, where leftover
  HBM serves as a cache with a Zipf hit rate;
- shards are assigned largest-cost first to the least-loaded device that has room (LPT).
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
import operator
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from dse.calibration.parameters import Calibration
from dse.model.estimators import (
    INDEX_BYTES,
    Traffic,
    cached_traffic,
    hbm_traffic,
    host_traffic,
    zipf_hit_rate,
)
from dse.model.system import GB, System
from dse.model.workload import EmbeddingTable, Workload, derived

Tier = Literal["hbm", "host", "cache"]
Sharding = Literal["table_wise", "row_wise", "column_wise", "replicated", "hot_rows"]

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
HOT_ROWS_MIN = 1024
"""Smallest hot-row set considered; candidates grow by 4x [A: HugeCTR sizes its frequent set in
thousands of rows]."""
HOT_MAX_FRACTION = 0.02
"""Replicated hot rows of one table may use at most this share of a device's free HBM [A]."""
COMM_BYTES = {"fp32": 4, "tf32": 4, "amp": 2, "bf16": 2, "fp16": 2, "fp8": 2}
"""Bytes per communicated activation or gradient element by precision (fp8 training still
communicates 16-bit activations and gradients)."""
ACTIVATION_BYTES = {"fp32": 4, "tf32": 4, "amp": 2, "bf16": 2, "fp16": 2, "fp8": 1}
MASTER_WEIGHT_BYTES = 4
"""Dense weights are kept in fp32 master copies with fp32 gradients (mixed-precision training)."""


class Shard(NamedTuple):
    """One placed piece of a table.

    An immutable named tuple rather than a frozen dataclass: a plan builds one per piece (137 for
    DCNv2 on 16 DGX H100), and a frozen dataclass sets each of its 12 fields through
    ``object.__setattr__``, ~1.3 us a shard against ~0.2 us for a tuple (a sixth of an evaluation).
    Fields, attribute access, equality and repr are those of the dataclass (a Shard also equals the
    plain tuple of its fields); copy one with ``_replace``.
    """

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
    """Owning device; -1 for a replicated table or hot rows (a copy on every device)."""
    tier: Tier
    traffic: Traffic
    hit_rate: float = 1.0
    partial_sums: bool = True
    """Row-wise only: the shard emits partial sums for every sample of ``out_rows``, reduced with its
    co-shards. False for a one-hot table, where each sample's single lookup lands on one shard and
    the shard sends just its own rows (``out_rows`` is then its share)."""


_shard = functools.partial(tuple.__new__, Shard)
"""A Shard from the tuple of all its fields: skips the named tuple's ``__new__``, a Python function
that costs as much again (a plan builds one Shard per piece)."""
_traffic = functools.partial(tuple.__new__, Traffic)
"""A Traffic from the tuple of all its fields (as :data:`_shard`)."""


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
    """A whole table or one piece of a split, before placement. Never changed once built, so the
    equal pieces of a split are one object (see :func:`_split`)."""

    table: int
    sharding: Sharding
    rows: int
    dim: int
    lookups: float
    out_rows: float
    footprint: float
    mem: float
    """HBM bytes per step on the owning device."""
    comm: float
    """All-to-all bytes per step the owning device sends."""
    partial: bool = True
    traffic: Traffic | None = None
    """HBM traffic, when known already: the pieces of a split share one (see :func:`_split`)."""


def _row_cost_caches(
    wl: Workload,
) -> tuple[dict[int, tuple[int, int]], dict[int, tuple[float, float, float]]]:
    """Empty per-dim caches for :class:`_Costs`, kept with ``wl`` (their figures depend on it alone)."""
    return {}, {}


class _TableFigures(NamedTuple):
    rows: int
    dim: int
    pooling: float
    row_bytes: int
    """Bytes per row with its optimizer state."""
    footprint: float


def _table_figures(wl: Workload) -> tuple[_TableFigures, ...]:
    """What placement reads of each table, computed once per workload (see :func:`derived`)."""
    return tuple(_TableFigures(t.rows, t.dim, t.pooling, wl.row_state_bytes(t.dim),
                               float(wl.table_bytes(t))) for t in wl.tables)


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


class _Costs:
    """Bandwidth-free shard loads for balancing: HBM bytes and all-to-all bytes, kept apart because
    the step waits for the slowest device in each. Keeping bandwidths out of the plan makes the plan
    the same for every link speed, so a faster link can only shorten the step (the timing is
    monotone for a fixed plan)."""

    def __init__(self, wl: Workload, g: int, b: float) -> None:
        self.wl, self.g, self.b = wl, g, b
        self.s_c = COMM_BYTES[wl.precision]
        self.comm_per_elem = 2.0 * (g - 1) * b * self.s_c
        # Per-dim figures depend on the workload alone: kept with it, filled as dims come up.
        self._rows, self._coef = derived(wl, "placement.row_costs", _row_cost_caches)

    def row(self, dim: int) -> tuple[int, int]:
        """(row bytes, optimizer-state bytes per row) for ``dim``."""
        got = self._rows.get(dim)
        if got is None:
            rb = self.wl.row_bytes(dim)
            got = self._rows[dim] = (rb, self.wl.row_state_bytes(dim) - rb)
        return got

    def _coefficients(self, dim: int) -> tuple[float, float, float]:
        """Per-lookup forward bytes, per-updated-row backward bytes and per-output-row bytes of
        :func:`~dse.model.estimators.hbm_traffic` for ``dim`` (its traffic is linear in each count). Called
        on a miss of ``self._coef``, which the callers read first (a method call per shard costs)."""
        rb, st = self.row(dim)
        unit = hbm_traffic(1.0, rb, st, 0.0)
        got = self._coef[dim] = (unit.hbm_fwd, unit.hbm_bwd - INDEX_BYTES, float(dim * self.s_c))
        return got

    def traffic(self, lookups: float, dim: int, out_rows: float, update_rows: float = 0.0) -> Traffic:
        """HBM traffic of a shard: :func:`~dse.model.estimators.hbm_traffic`, from its coefficients."""
        per_lookup, per_update, per_out = self._coef.get(dim) or self._coefficients(dim)
        out = out_rows * per_out
        rows = update_rows if update_rows > lookups else lookups  # max(), without its call
        return _traffic((lookups * per_lookup + out,  # HBM forward, backward; no host traffic
                         out + rows * per_update + lookups * INDEX_BYTES, 0.0, 0.0, 0.0, 0.0))

    def loads(self, lookups: float, dim: int, out_rows: float, batch: float) -> tuple[float, float]:
        """(HBM bytes, all-to-all bytes) per step of a shard."""
        per_lookup, per_update, per_out = self._coef.get(dim) or self._coefficients(dim)
        mem = lookups * (per_lookup + per_update + INDEX_BYTES) + 2.0 * out_rows * per_out
        return mem, self.comm_per_elem * dim * out_rows / batch


def hot_rows(table: EmbeddingTable, wl: Workload, b: float, max_rows: float) -> tuple[int, float]:
    """Rows of ``table`` to replicate on every device (hybrid embedding) and their hit rate.

    Replicating the H most popular rows saves the all-to-all for every sample whose lookups all hit
    them (share h^pooling, h the Zipf hit rate of H rows) and costs an allreduce of their H x dim
    gradient. Both travel the same links, so H minimises b x s_c x (1 - h^pooling) + H x s_g: a
    byte count, free of bandwidths (s_c = s_g here). ``b`` is the batch behind one set of those
    links: a device's local batch within one scale-up domain (or on PCIe-only nodes, where the
    allreduce's in-node part is as slow as the NICs); across domains joined by a scale-up fabric,
    the batch of one domain, since a domain's all-to-all and the inter-domain step of its
    hierarchical allreduce both leave through the domain's NICs (per node: B/N x (1 - h^pooling)
    against H; HugeCTR sizes its multi-node frequent set the same way, all-to-all against
    allreduce bytes, HugeCTR HybridEmbeddingParam documentation).
    Candidates are 0 and 1,024 x 4^k rows; the saving is concave in log H, so the search stops at
    the first candidate that does not improve.
    """
    return _hot_rows(table.rows, table.pooling, wl.access_zipf, b, max_rows)


@functools.lru_cache(maxsize=1 << 16)
def _hot_rows(rows: int, pooling: float, zipf: float, b: float, max_rows: float) -> tuple[int, float]:
    # Keyed on plain numbers: hashing an EmbeddingTable runs its generated Python __hash__.
    # In units of s (bytes per element): all-to-all b x (1 - h^pooling) against allreduce H.
    best, best_hit, best_cost = 0, 0.0, b
    h_rows = HOT_ROWS_MIN
    limit = min(max_rows, rows / 2, b)  # H >= b can never beat sending the b pooled rows
    while h_rows <= limit:
        hit = zipf_hit_rate(h_rows, rows, zipf)
        cost = b * (1.0 - hit ** pooling) + h_rows
        if cost >= best_cost:
            break  # the saving grows ever more slowly than H: past the minimum
        best, best_hit, best_cost = h_rows, hit, cost
        h_rows *= 4
    return best, best_hit


def _split(cand: _Cand, k: int, sharding: Sharding, one_hot: bool, costs: _Costs,
           batch: float) -> list[tuple[_Cand, int]]:
    """``cand`` in ``k`` pieces of (near-)equal width or rows: the first ``extra`` pieces get one
    more. Pieces come in at most two sizes: each size once, with its count (building a piece and
    its Traffic costs more than the arithmetic)."""
    out: list[tuple[_Cand, int]] = []
    table = cand.table
    if sharding == "column_wise":
        base, extra = divmod(cand.dim, k)
        rows, lk, o = cand.rows, cand.lookups, cand.out_rows
        for d, n in ((base + 1, extra), (base, k - extra)):
            if n:
                mem, comm = costs.loads(lk, d, o, batch)
                out.append((_Cand(table, sharding, rows, d, lk, o, rows * sum(costs.row(d)), mem, comm,
                                  True, costs.traffic(lk, d, o)), n))
    else:
        base, extra = divmod(cand.rows, k)
        dim, row_bytes = cand.dim, sum(costs.row(cand.dim))
        for r, n in ((base + 1, extra), (base, k - extra)):
            if n:
                lk = cand.lookups * r / cand.rows
                # Row-wise: a shard sees the lookups that hash to its rows but emits partial sums for
                # the whole batch, which the all-to-all then reduce-scatters. One-hot: a sample's one
                # lookup lands on one shard, which sends that row only (HugeCTR's distributed one-hot
                # embedding), so the shard's output is its share of the table's.
                o = cand.out_rows * r / cand.rows if one_hot else cand.out_rows
                mem, comm = costs.loads(lk, dim, o, batch)
                out.append((_Cand(table, sharding, r, dim, lk, o, r * row_bytes, mem, comm, not one_hot,
                                  costs.traffic(lk, dim, o)), n))
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


def plan_key(system: System) -> tuple[object, ...]:
    """Everything :func:`plan_placement` reads from ``system``: designs with equal keys (for one
    workload) get the same plan. Bandwidths are absent by design (see :class:`_Costs`), so a sweep
    over link speeds places each workload once per key."""
    return (system.nodes, system.accelerators_per_node, system.hbm_bytes, system.ddr_bytes,
            system.scaleup_domain, system.scaleup == "none", system.spec.software,
            system.spec.node.hbm_cache_gb)


def _shard_tables(whole: list[_Cand], tables: tuple[_TableFigures, ...], g: int, domain: int,
                  limit: float, balance: bool, costs: _Costs, batch: float) -> list[tuple[_Cand, int]]:
    """Split each whole table into as many pieces as its capacity needs and, for software that
    splits to balance, as its load needs: one count from both. (Split for capacity first and for
    load only if still whole, a large table escaped the balance rule, so a model whose tables grew
    4x could train faster than the original on the same machine.)

    Capacity: no piece above ``limit`` bytes. Load (``balance``): a table heavier than a device's
    fair share (1/G of all HBM traffic or of all all-to-all bytes) is split into that many pieces,
    at most G. A one-hot table split for load goes row-wise (no partial sums to reduce: HugeCTR
    spreads one-hot tables' rows over all GPUs); otherwise column-wise down to MIN_COLUMN_DIM and
    row-wise, with partial sums, beyond, for a table whose HBM traffic outweighs its all-to-all
    bytes: into at most ``domain`` pieces, as those stay in one scale-up domain
    (:func:`_assign_hbm`) and more would only share its devices. Returns each size of piece
    once, with the number of its pieces.
    """
    balance = balance and g > 1 and bool(whole)
    share_mem = g / (sum([c.mem for c in whole]) or 1.0)
    share_comm = g / (sum([c.comm for c in whole]) or 1.0)
    out: list[tuple[_Cand, int]] = []
    for c in whole:
        k_cap = math.ceil(c.footprint / limit) if 0.0 < limit < c.footprint else 1
        k_load = 1
        if balance:
            # The ratio of equal loads comes out as 2.0000000000000004 after the float sum:
            # without the tolerance it splits in 3 where 2 balance exactly (16 tables on 32
            # devices -> 48 shards, and a step that got slower as bandwidth rose).
            ratio_mem, ratio_comm = c.mem * share_mem, c.comm * share_comm
            ratio = ratio_comm if ratio_comm > ratio_mem else ratio_mem  # max(), without its call
            if ratio > 1.0 + SPLIT_RATIO_TOLERANCE:
                k_load = min(g, math.ceil(ratio - SPLIT_RATIO_TOLERANCE))
        hot = tables[c.table].pooling <= 1.0  # one-hot
        columns = c.dim // MIN_COLUMN_DIM
        if not hot and k_load > columns:
            # Row pieces of a multi-hot table each send partial sums for every output row: they
            # divide its HBM traffic, not its all-to-all bytes, which they multiply. So split past
            # the column pieces only while a piece's HBM share stays above its all-to-all share
            # (a lookup-heavy table, like DCNv2's 100-hot one), and within one scale-up domain.
            k_rows = math.floor(ratio_mem / ratio_comm) if ratio_comm > 0.0 else domain
            k_load = max(columns, min(k_load, k_rows, domain))
        k = k_cap if k_cap > k_load else k_load
        if k < 2:
            out.append((c, 1))
            continue
        row_wise = (hot and k_load >= k_cap) or k > columns
        out.extend(_split(c, k, "row_wise" if row_wise else "column_wise", hot, costs, batch))
    return out


def plan_placement(workload: Workload, system: System, calib: Calibration) -> Plan:
    """Shard and place every table of ``workload`` on ``system`` (see the module rules).

    The plan depends on capacities, counts and the workload, never on bandwidths (see
    :class:`_Costs`); ``calib`` is accepted for a uniform model interface and not read.
    """
    g = system.accelerators_total
    b = workload.global_batch / g
    batch = float(workload.global_batch)
    s_c = COMM_BYTES[workload.precision]
    dense = dense_bytes_per_device(workload)
    acts = activation_bytes_per_device(workload, b)
    hbm_cap = system.hbm_bytes * (1.0 - HBM_RESERVE_FRACTION)
    table_cap = hbm_cap - dense - acts
    costs = _Costs(workload, g, b)
    software = system.spec.software
    hybrid = g > 1 and software.hot_embedding_replication
    # Hot rows are sized against the batch behind the scarcest links (see hot_rows): a device's
    # own, or, across scale-up domains joined by a fabric, the NICs of a whole domain.
    domains = math.ceil(g / min(system.scaleup_domain, g))
    hot_batch = b if domains == 1 or system.scaleup == "none" else batch / domains
    # DeepLearningExamples' layout: device 0 runs the bottom MLP and holds no tables.
    lead = g > 1 and software.bottom_mlp_on_one_device

    cands: list[_Cand] = []
    replicas: list[Shard] = []  # replicated tables and hot rows: a copy on every device
    rep_limit = REPLICATE_MAX_FRACTION * max(table_cap, 0.0)
    hot_limit = HOT_MAX_FRACTION * max(table_cap, 0.0)
    # Software that never splits to balance keeps whole tables while one fits a device.
    limit = (MAX_SHARD_FRACTION if software.split_tables_to_balance else 1.0) * table_cap
    replicate = g > 1 and software.replicate_small_tables
    zipf = workload.access_zipf
    traffic = costs.traffic
    tables = derived(workload, "placement.tables", _table_figures)
    for ti, (rows, dim, pooling, row_bytes, fp) in enumerate(tables):
        # Replicate when the gradient allreduce (every device moves ~2 x rows x dim) is cheaper than
        # the all-to-all (all devices together move ~2 x B x dim): rows <= B / G. A replica's
        # gradient arrives allreduced and dense: every one of its rows is updated.
        if replicate and rows <= b and fp <= rep_limit:
            lk = b * pooling
            replicas.append(_shard((ti, "replicated", rows, dim, lk, b, fp, -1, "hbm",
                                    traffic(lk, dim, b, float(rows)), 1.0, True)))
            continue
        lk = batch * pooling
        out_rows = batch
        if hybrid:
            h_rows, hit = _hot_rows(rows, pooling, zipf, hot_batch, hot_limit / row_bytes)  # see hot_rows
            if h_rows:
                hot_lk = b * pooling * hit
                replicas.append(_shard((ti, "hot_rows", h_rows, dim, hot_lk, b, h_rows * row_bytes, -1,
                                        "hbm", traffic(hot_lk, dim, b, float(h_rows)), 1.0, True)))
                lk *= 1.0 - hit
                out_rows *= 1.0 - hit ** pooling
        mem, comm = costs.loads(lk, dim, out_rows, batch)
        cands.append(_Cand(ti, "table_wise", rows, dim, lk, out_rows, fp, mem, comm))
    pieces = _shard_tables(cands, tables, g, min(system.scaleup_domain, g), limit,
                           software.split_tables_to_balance, costs, batch)

    replica_bytes = sum(s.footprint_bytes for s in replicas)
    device_cap = max(table_cap - replica_bytes, 0.0)
    # Tier choice: the most traffic per byte goes to HBM (the sort is stable: ties keep their order,
    # so sorting each size of piece once puts its pieces where sorting them one by one would).
    density = [c.lookups / (c.footprint if c.footprint > 1.0 else 1.0) for c, _ in pieces]
    by_density = [pieces[i] for i in sorted(range(len(pieces)), key=density.__getitem__, reverse=True)]
    budget = device_cap * (g - 1 if lead else g)
    hbm_set: list[_Cand] = []  # one entry a piece: the equal pieces of a split are one object
    host_set: list[_Cand] = []
    if sum([c.footprint * count for c, count in by_density]) <= budget * (1.0 - 1e-6):
        # All fit, with more room to spare than the rounding of the running budget below could eat.
        for c, count in by_density:
            hbm_set += [c] * count
    else:
        for c, count in by_density:
            for _ in range(count):
                if c.footprint <= budget:
                    hbm_set.append(c)
                    budget -= c.footprint
                else:
                    host_set.append(c)
    hbm_used = [dense + acts + replica_bytes] * g
    load_mem = [0.0] * g
    load_comm = [0.0] * g
    free = [device_cap] * g
    if lead:
        free[0] = 0.0
    devices, leftover = _assign_hbm(hbm_set, free, load_mem, load_comm, min(system.scaleup_domain, g))
    dev_load = load_mem
    host_set.extend(leftover)
    shards: list[Shard] = []
    for c, d in zip(hbm_set, devices, strict=True):
        if d >= 0:
            hbm_used[d] += c.footprint
            shards.append(_shard((c.table, c.sharding, c.rows, c.dim, c.lookups, c.out_rows, c.footprint,
                                  d, "hbm", c.traffic or traffic(c.lookups, c.dim, c.out_rows), 1.0,
                                  c.partial)))
    # Shards per kind and tier, keys in order of first appearance (a shard's kind before its tier).
    # The HBM shards come first, all in "hbm": it follows the first one's kind.
    counts: dict[str, int] = {}
    n_hbm = len(shards)
    if n_hbm:
        counts[shards[0].sharding] = 0
        counts["hbm"] = n_hbm
        counts.update(Counter(map(operator.attrgetter("sharding"), shards)))

    a = system.accelerators_per_node
    ddr_cap = system.ddr_bytes * (1.0 - HOST_RESERVE_FRACTION)
    ddr_used = [0.0] * system.nodes
    short = 0.0
    if host_set:
        host_costs = []
        for c in host_set:
            t = host_traffic(c.lookups, workload.row_bytes(c.dim),
                             workload.row_state_bytes(c.dim) - workload.row_bytes(c.dim),
                             c.out_rows * c.dim * s_c)
            host_costs.append(t.ddr_fwd + t.ddr_bwd + t.pcie_fwd + t.pcie_bwd)
        # Host memory is per node: place on nodes, then on the node's least-loaded device.
        node_of = lpt_assign(host_costs, [c.footprint for c in host_set],
                             [ddr_cap] * system.nodes)
        host_by_device: dict[int, list[_Cand]] = {}
        ranked = sorted(zip(host_set, host_costs, node_of, strict=True), key=lambda x: -x[1])
        for c, cost, node in ranked:
            if node is None:
                short += c.footprint
                continue
            devs = range(node * a, node * a + a)
            dev = min(devs, key=lambda d: dev_load[d])
            dev_load[dev] += cost
            ddr_used[node] += c.footprint
            host_by_device.setdefault(dev, []).append(c)
        shards.extend(_host_shards(host_by_device, hbm_used, hbm_cap, system, workload, s_c))
    shards += replicas

    reason = ""
    if table_cap < 0:
        short = max(short, -table_cap)
        reason = (f"dense model and activations need {(dense + acts) / GB:.1f} GB per accelerator "
                  f"but HBM has {hbm_cap / GB:.1f} GB usable")
    elif short > 0:
        need = workload.embedding_footprint_bytes() / GB
        reason = (f"embedding tables need {need:.1f} GB; HBM holds {device_cap * g / GB:.1f} GB "
                  f"and host DDR {ddr_cap * system.nodes / GB:.1f} GB: short by {short / GB:.1f} GB")
    for s in shards[n_hbm:]:  # host shards and replicas: those in HBM are counted above
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
        replicated_grad_elements=float(sum(s.rows * s.dim for s in replicas)),
        counts=counts,
    )


def _ranked(mem: Sequence[float], comm: Sequence[float], load_mem: Sequence[float],
            load_comm: Sequence[float]) -> tuple[float, float, list[float], list[int]]:
    """For :func:`balanced_assign`: the normalisers (1 / all HBM bytes, 1 / all all-to-all bytes),
    each item's key (its larger normalised load) and the items by key, largest first (the sort is
    stable: ties keep their order)."""
    inv_m = 1.0 / ((sum(mem) + sum(load_mem)) or 1.0)
    inv_c = 1.0 / ((sum(comm) + sum(load_comm)) or 1.0)
    keys = [m * inv_m if m * inv_m > c * inv_c else c * inv_c for m, c in zip(mem, comm, strict=True)]
    return inv_m, inv_c, keys, sorted(range(len(keys)), key=keys.__getitem__, reverse=True)


def balanced_assign(
    mem: Sequence[float],
    comm: Sequence[float],
    sizes: Sequence[float],
    capacities: Sequence[float],
    load_mem: list[float],
    load_comm: list[float],
) -> list[int | None]:
    """LPT on two loads at once: items (largest normalised load first) go to the device whose larger
    normalised load (HBM bytes / all HBM bytes, all-to-all bytes / all such bytes) is smallest and
    that has room. Updates ``load_mem`` and ``load_comm`` (non-negative); returns each item's device
    or ``None``."""
    inv_m, inv_c, _, order = _ranked(mem, comm, load_mem, load_comm)
    free = list(capacities)
    n = len(free)
    out: list[int | None] = [None] * len(mem)
    # A device without load has key 0.0, below every loaded device's: a heap of (key, device) would
    # yield the idle ones first, in index order. So while the next idle device has room and the last
    # placement left a key above 0.0, that device is the choice, and the heap is built only if items
    # are left then (usually none are: fewer items than idle devices).
    started_idle = not (any(load_mem) or any(load_comm))
    idle: Sequence[int] = range(n)
    if not started_idle:
        idle = ()
        if 0.0 in load_mem and 0.0 in load_comm and _keys_apart(load_mem, inv_m) and \
                _keys_apart(load_comm, inv_c):
            # The loads are non-negative (else the guard above fails), so a zero sum means no load.
            idle = list(itertools.compress(range(n), map(operator.not_, map(operator.add, load_mem,
                                                                            load_comm))))
    placed, n_idle = 0, len(idle)
    last = 1.0  # the key the last placement left
    for i in order:
        if placed == n_idle or not last > 0.0 or sizes[i] > free[idle[placed]]:
            break
        d = out[i] = idle[placed]
        free[d] -= sizes[i]
        lm = load_mem[d] = load_mem[d] + mem[i]
        lc = load_comm[d] = load_comm[d] + comm[i]
        lm *= inv_m
        lc *= inv_c
        last = lm if lm > lc else lc
        placed += 1
    if placed == len(order):
        return out
    # (key, device) of every device, a heap: the pairs are distinct (one per device), so the device
    # each pop yields does not depend on the heap's internal order, and replacing the top in place
    # picks the same devices as a pop followed by a push, with one sift instead of two.
    heap = [(m * inv_m if m * inv_m > c * inv_c else c * inv_c, d)
            for d, (m, c) in enumerate(zip(load_mem, load_comm, strict=True))]
    if started_idle:  # the devices not reached keep the key they started with (0 x inf is nan)
        heap[placed:] = zip([0.0] * (n - placed), range(placed, n), strict=True)
    heapq.heapify(heap)
    for i in order[placed:]:
        size = sizes[i]
        skipped: list[tuple[float, int]] = []
        while heap and size > free[heap[0][1]]:  # rare: the least-loaded device is full
            skipped.append(heapq.heappop(heap))
        if heap:
            d = out[i] = heap[0][1]
            free[d] -= size
            lm = load_mem[d] = load_mem[d] + mem[i]
            lc = load_comm[d] = load_comm[d] + comm[i]
            lm *= inv_m
            lc *= inv_c
            heapq.heapreplace(heap, (lm if lm > lc else lc, d))
        for entry in skipped:
            heapq.heappush(heap, entry)
    return out


def _least_loaded_first(loads: list[float]) -> Iterator[int]:
    """Indices of ``loads`` from the least (the first of equal ones first), sorting them only if the
    caller asks for more than the first (a group usually fits the least-loaded domain)."""
    first = loads.index(min(loads))
    yield first
    yield from (j for j in sorted(range(len(loads)), key=loads.__getitem__) if j != first)


def _keys_apart(loads: list[float], inv: float) -> bool:
    """Whether the normalised loads ``load x inv`` stay 0.0 for a zero load and are above 0.0 for the
    others: every load is non-negative, no product underflows, and ``inv`` is positive and finite."""
    return 0.0 < inv < math.inf and min(filter(None, loads), default=1.0) * inv > 0.0


def _place_group(mem: list[float], comm: list[float], sizes: list[float], room: list[float],
                 load_mem: list[float], load_comm: list[float]) -> list[int] | None:
    """:func:`balanced_assign` of a group's pieces on one domain's devices (``room`` and the loads
    are theirs, copies it may change), or ``None`` unless it places every piece.

    On devices without load it puts the j-th piece (by key) on the j-th device while that device has
    room and the piece before left a key above 0.0 (see there). Usually the group goes to an idle
    domain and every piece passes: that is then its answer, found without running it.
    """
    if len(mem) <= len(room) and not (any(load_mem) or any(load_comm)):
        _, _, keys, order = _ranked(mem, comm, load_mem, load_comm)
        got = [0] * len(order)
        for j, i in enumerate(order):
            if sizes[i] > room[j] or (j and not keys[order[j - 1]] > 0.0):
                break
            got[i] = j
        else:
            return got
    placed = balanced_assign(mem, comm, sizes, room, load_mem, load_comm)
    return None if None in placed else [d for d in placed if d is not None]


def _assign_hbm(
    cands: list[_Cand], free: list[float], load_mem: list[float], load_comm: list[float], domain: int
) -> tuple[list[int], list[_Cand]]:
    """Assign HBM shards to devices (updating the loads; ``free`` is used up): the device of each
    of ``cands`` (-1 where none has room) and those unplaced, in the order they were tried.

    Row-wise shards of one table are kept inside one scale-up domain when it has room (as TorchRec's
    table-wise-row-wise sharding), so their partial-sum reduce-scatter stays on the fabric.
    """
    # By index: the equal pieces of a split are one object.
    devices = [-1] * len(cands)
    groups: defaultdict[int, list[int]] = defaultdict(list)
    rest: list[int] = []
    for i, c in enumerate(cands):
        if c.sharding == "row_wise" and c.partial:
            groups[c.table].append(i)
        else:
            rest.append(i)
    mem, comm, size = [c.mem for c in cands], [c.comm for c in cands], [c.footprint for c in cands]
    n = len(free)

    def domain_load(lo: int) -> float:
        total: float = sum(map(operator.add, load_mem[lo:lo + domain], load_comm[lo:lo + domain]))
        return total

    def heaviest_first(group: list[int]) -> float:
        return -sum([mem[i] + comm[i] for i in group])

    # A group changes only the loads of the domain it lands in, so only that domain's sum is
    # taken again (the same sum as before, hence the same order of domains for the next group).
    loads = [domain_load(lo) for lo in range(0, n, domain)] if any(load_mem) or any(load_comm) \
        else [0.0] * len(range(0, n, domain))
    for group in sorted(groups.values(), key=heaviest_first):
        g_mem, g_comm, g_size = [mem[i] for i in group], [comm[i] for i in group], [size[i] for i in group]
        for j in _least_loaded_first(loads):
            lo = j * domain
            hi = lo + domain
            got = _place_group(g_mem, g_comm, g_size, free[lo:hi], load_mem[lo:hi], load_comm[lo:hi])
            if got is not None:
                for i, x in zip(group, got, strict=True):
                    d = devices[i] = lo + x
                    free[d] -= size[i]
                    load_mem[d] += mem[i]
                    load_comm[d] += comm[i]
                loads[j] = domain_load(lo)
                break
        else:
            rest.extend(group)
    last = balanced_assign([mem[i] for i in rest], [comm[i] for i in rest], [size[i] for i in rest], free,
                           load_mem, load_comm)
    unplaced: list[_Cand] = []
    for i, dev in zip(rest, last, strict=True):
        if dev is None:
            unplaced.append(cands[i])
        else:
            devices[i] = dev  # (no one reads ``free`` after this last batch)
    return devices, unplaced


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
                                 c.footprint, dev, "cache", traffic, hit, c.partial))
            else:
                traffic = host_traffic(c.lookups, rb, st, out_bytes)
                out.append(Shard(c.table, c.sharding, c.rows, c.dim, c.lookups, c.out_rows,
                                 c.footprint, dev, "host", traffic, 0.0, c.partial))
    return out


def with_device(shard: Shard, device: int) -> Shard:
    """A copy of ``shard`` on another device (for tests and what-if tools)."""
    return shard._replace(device=device)
