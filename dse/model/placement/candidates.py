"""The enumerator: the options of each table before sharding. A small table is replicated on every
device; otherwise its hot rows may be replicated (hybrid embedding) and the rest stays one whole
table-wise candidate for :mod:`~dse.model.placement.sharding` to split."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import NamedTuple

from dse.model.estimators import Traffic, zipf_hit_rate
from dse.model.placement.budgets import Budgets
from dse.model.placement.costs import ShardCosts
from dse.model.placement.plan import Shard, Sharding, new_shard
from dse.model.system import System
from dse.model.workload import EmbeddingTable, Workload, derived

HOT_ROWS_MIN = 1024
"""Smallest hot-row set considered; candidates grow by 4x [A: HugeCTR sizes its frequent set in
thousands of rows]."""


@dataclass(slots=True)
class Candidate:
    """A whole table or one piece of a split, before placement. Never changed once built, so the
    equal pieces of a split are one object (see :func:`~dse.model.placement.sharding.split`); not
    frozen, as a frozen dataclass sets each field through ``object.__setattr__`` (one per piece)."""

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
    """HBM traffic, when known already: a whole table's, and the pieces of a split (they share one)."""
    per_domain: int = 0
    """Row-wise pieces of one table spread over several scale-up domains: how many go to each
    (0: the whole group in one domain, when it has room)."""


class TableFigures(NamedTuple):
    """What placement reads of one table."""

    rows: int
    dim: int
    pooling: float
    row_bytes: int
    """Bytes per row with its optimizer state."""
    footprint: float


def table_figures(wl: Workload) -> tuple[TableFigures, ...]:
    """What placement reads of each table, computed once per workload (see :func:`derived`)."""
    return tuple(TableFigures(t.rows, t.dim, t.pooling, wl.row_state_bytes(t.dim),
                              float(wl.table_bytes(t))) for t in wl.tables)


class Candidates(NamedTuple):
    """The enumerator's answer: copies on every device, and the whole tables left to shard."""

    replicas: tuple[Shard, ...]
    """Replicated tables and hot rows, in table order (device -1: a copy on every device)."""
    whole: tuple[Candidate, ...]
    """One table-wise candidate per table not replicated, in table order."""
    tables: tuple[TableFigures, ...]
    """Every table's figures, by table index."""


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


def hot_rows_batch(budgets: Budgets, system: System) -> float:
    """The batch behind the scarcest links, that hot rows are sized against (see :func:`hot_rows`):
    a device's own, or, across scale-up domains joined by a fabric, the NICs of a whole domain."""
    domains = math.ceil(budgets.devices / budgets.domain)
    if domains == 1 or system.scaleup == "none":
        return budgets.local_batch
    return budgets.global_batch / domains


def enumerate_candidates(workload: Workload, system: System, budgets: Budgets,
                         costs: ShardCosts) -> Candidates:
    """Each table's option: replicate it, replicate its hot rows and keep the rest whole, or keep
    it whole.

    Replicate when the gradient allreduce (every device moves ~2 x rows x dim) is cheaper than the
    all-to-all (all devices together move ~2 x B x dim): rows <= B / G. A replica's gradient
    arrives allreduced and dense: every one of its rows is updated.
    """
    g, b, batch = budgets.devices, budgets.local_batch, budgets.global_batch
    software = system.spec.software
    hybrid = g > 1 and software.hot_embedding_replication
    replicate = g > 1 and software.replicate_small_tables
    hot_batch = hot_rows_batch(budgets, system)
    rep_limit, hot_limit = budgets.replicate_bytes, budgets.hot_bytes
    zipf = workload.access_zipf
    traffic = costs.traffic
    tables = derived(workload, "placement.tables", table_figures)
    whole: list[Candidate] = []
    replicas: list[Shard] = []
    for ti, (rows, dim, pooling, row_bytes, fp) in enumerate(tables):
        if replicate and rows <= b and fp <= rep_limit:
            lk = b * pooling
            replicas.append(new_shard((ti, "replicated", rows, dim, lk, b, fp, -1, "hbm",
                                       traffic(lk, dim, b, float(rows)), 1.0, True)))
            continue
        lk = batch * pooling
        out_rows = batch
        if hybrid:
            h_rows, hit = _hot_rows(rows, pooling, zipf, hot_batch, hot_limit / row_bytes)  # see hot_rows
            if h_rows:
                hot_lk = b * pooling * hit
                replicas.append(new_shard((ti, "hot_rows", h_rows, dim, hot_lk, b, h_rows * row_bytes, -1,
                                           "hbm", traffic(hot_lk, dim, b, float(h_rows)), 1.0, True)))
                lk *= 1.0 - hit
                out_rows *= 1.0 - hit ** pooling
        # Its traffic too, from the same count of distinct rows: most tables stay whole, and the
        # partitioner would otherwise compute it again for each (a thousand for production-a).
        mem, comm, t = costs.piece(lk, dim, out_rows, batch, rows)
        whole.append(Candidate(ti, "table_wise", rows, dim, lk, out_rows, fp, mem, comm, True, t))
    return Candidates(tuple(replicas), tuple(whole), tables)
