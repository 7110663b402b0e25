"""The enumerator: the options of each table before sharding. A small table is replicated on every
device; otherwise its hot rows may be replicated (hybrid embedding) and the rest stays one whole
table-wise candidate for :mod:`~dse.model.placement.sharding` to split."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from dse.model.estimators import Traffic, distinct_rows, zipf_hit_rate
from dse.model.placement.budgets import Budgets
from dse.model.placement.costs import ShardCosts, alltoall_bytes
from dse.model.placement.plan import Shard, Sharding, new_shard
from dse.model.system import System
from dse.model.workload import EmbeddingTable, Workload, derived

HOT_ROWS_MIN = 1024
"""Smallest hot-row set considered; candidates grow by 4x [A: HugeCTR sizes its frequent set in
thousands of rows]."""

FEW_TABLES = 64
"""Below this many tables, :func:`enumerate_candidates` looks at each rather than testing arrays
(numpy's call overhead outweighs a Python loop over a few dozen; either way gives the same)."""


@dataclass(slots=True)
class Candidate:
    """A whole table or one piece of a split, before placement. Never changed once built, so the
    equal pieces of a split are one object (see :func:`~dse.model.placement.sharding.split`), and a
    plain whole table's is shared by the designs on as many devices (:func:`_plain_candidates`;
    only the pieces of a split are adjusted, as :func:`~dse.model.placement.sharding.shard_tables`
    builds them); not frozen, as a frozen dataclass sets each field through ``object.__setattr__``
    (one per piece)."""

    table: int
    sharding: Sharding
    rows: int
    dim: int
    lookups: float
    out_rows: float
    footprint: float
    mem: float
    """Bytes per step in the owning device's own memory."""
    comm: float
    """All-to-all bytes per step the owning device sends."""
    partial: bool
    """Row-wise only: it emits partial sums for every sample (a row piece of a multi-hot table), as
    the shard's ``partial_sums`` (:class:`~dse.model.placement.plan.Shard`); true elsewhere."""
    traffic: Traffic | None
    """Traffic in the device's own memory, when known already: a whole table's, and the pieces of a
    split (they share one)."""
    touched: float
    """Distinct rows its lookups touch a step (:func:`~dse.model.estimators.distinct_rows`): the
    rows its backward reads and writes. A piece's share is its share of the table's lookups, as
    rows spread over the pieces of a split whatever their popularity. (No default: a default of
    none touched would silently drop a piece's backward.)"""
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
    touched: float
    """Distinct rows the global batch's lookups touch in a step (:func:`distinct_rows` at the
    workload's skew): what the backward reads and writes."""


def table_figures(wl: Workload) -> tuple[TableFigures, ...]:
    """What placement reads of each table, computed once per workload (see :func:`derived`)."""
    batch = float(wl.global_batch)
    return tuple(TableFigures(t.rows, t.dim, t.pooling, wl.row_state_bytes(t.dim),
                              float(wl.table_bytes(t)),
                              distinct_rows(batch, t.rows, t.pooling, wl.access_zipf, wl.multi_hot_ids))
                 for t in wl.tables)


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


class TableArrays(NamedTuple):
    """Every table's figures as arrays (float64: exact, as rows stay below 2**53), to find with a few
    elementwise comparisons the tables the per-design rules touch: few are (of production-a's
    thousand tables, a few dozen are replicated or get hot rows), and the others stay one whole
    candidate each, the same for every design with as many devices (:func:`_plain_candidates`)."""

    rows: npt.NDArray[np.float64]
    half_rows: npt.NDArray[np.float64]
    """rows / 2, a limit of :func:`_hot_rows`."""
    row_bytes: npt.NDArray[np.float64]
    footprint: npt.NDArray[np.float64]
    first_miss: npt.NDArray[np.float64]
    """1 - h^pooling for the first candidate of :func:`_hot_rows` (h: the hit rate of its 1,024
    rows, as it computes them; 1.0 where half the rows are fewer, as it never tries them then)."""


def table_arrays(wl: Workload) -> TableArrays:
    """:class:`TableArrays` of ``wl``, computed once per workload (see :func:`derived`)."""
    tables = derived(wl, "placement.tables", table_figures)
    rows = np.array([t.rows for t in tables], dtype=np.float64)
    first_miss = [1.0 - zipf_hit_rate(HOT_ROWS_MIN, t.rows, wl.access_zipf) ** t.pooling
                  if t.rows / 2 >= HOT_ROWS_MIN else 1.0 for t in tables]
    return TableArrays(rows, rows / 2, np.array([t.row_bytes for t in tables], dtype=np.float64),
                       np.array([t.footprint for t in tables], dtype=np.float64),
                       np.array(first_miss, dtype=np.float64))


@dataclass(frozen=True, eq=False)
class PlainFigures:
    """Per workload: what each table's plain whole candidate (:func:`_plain_candidates`) holds
    whatever the design, in table order (the all-to-all bytes alone depend on the device count).
    Compared and hashed by identity (``eq=False``), as a cache key: one a workload, never changed."""

    tables: tuple[TableFigures, ...]
    batch: float
    """The global batch, every plain candidate's output rows."""
    lookups: tuple[float, ...]
    mem: tuple[float, ...]
    traffic: tuple[Traffic, ...]


def plain_figures(wl: Workload, unit: int) -> PlainFigures:
    """:class:`PlainFigures` of ``wl`` on devices whose own memory moves ``unit``-byte accesses,
    from :meth:`ShardCosts.piece` (its bytes and traffic do not depend on the device count or batch
    given). Computed once per workload and unit (:func:`plain_figures_at`)."""
    costs = ShardCosts(wl, 1, 1.0, unit)
    batch = float(wl.global_batch)
    tables = derived(wl, "placement.tables", table_figures)
    pieces = [costs.piece(batch * t.pooling, t.dim, batch, batch, t.touched) for t in tables]
    return PlainFigures(tables, batch, tuple([batch * t.pooling for t in tables]),
                        tuple([m for m, _, _ in pieces]), tuple([t for _, _, t in pieces]))


def _by_unit(wl: Workload) -> dict[int, PlainFigures]:
    """An empty cache of :func:`plain_figures` by access unit, kept with ``wl``."""
    return {}


def plain_figures_at(wl: Workload, unit: int) -> PlainFigures:
    """:func:`plain_figures`, computed once per workload and unit (see :func:`derived`)."""
    cache = derived(wl, "placement.plain_figures", _by_unit)
    got = cache.get(unit)
    if got is None:
        got = cache[unit] = plain_figures(wl, unit)
    return got


@functools.lru_cache(maxsize=16)
def _plain_candidates(fig: PlainFigures, per_elem: float) -> tuple[Candidate, ...]:
    """Each table as one whole table-wise candidate, neither replicated nor with hot rows, with
    ``per_elem`` all-to-all bytes per element (:attr:`ShardCosts.comm_per_elem`, which the device
    count sets): what :func:`enumerate_candidates` makes of most tables, with the figures of
    :meth:`ShardCosts.piece` (its traffic too, from the same count of distinct rows: the partitioner
    would otherwise compute it again for each). Cached, for a search revisits device counts: the
    candidates are shared by the designs with the same count, as no pass changes a whole table's
    (see :class:`Candidate`)."""
    batch = fig.batch
    return tuple([Candidate(ti, "table_wise", t.rows, t.dim, lk, batch, t.footprint, mem,
                            alltoall_bytes(per_elem, t.dim, batch, batch), True, traffic, t.touched)
                  for ti, (t, lk, mem, traffic)
                  in enumerate(zip(fig.tables, fig.lookups, fig.mem, fig.traffic, strict=True))])


def _touched_tables(arrays: TableArrays, replicate: bool, rep_rows: float, rep_limit: float,
                    hybrid: bool, hot_batch: float, hot_limit: float) -> list[int]:
    """The tables, in order, that :func:`enumerate_candidates` may replicate or give hot rows: the
    others are plain whole tables. A table gets hot rows only if :func:`_hot_rows` takes its first
    candidate, 1,024 rows: they are within every limit and cost less than none (the same
    comparisons and float operations, elementwise, so the same answer for every table)."""
    touched = np.zeros(len(arrays.rows), dtype=np.bool_)
    if replicate:
        touched |= (arrays.rows <= rep_rows) & (arrays.footprint <= rep_limit)
    if hybrid and hot_batch >= HOT_ROWS_MIN:
        # (~(cost >= b) rather than cost < b: _hot_rows stops on cost >= b, so a nan goes on.)
        touched |= ((arrays.half_rows >= HOT_ROWS_MIN) & (hot_limit / arrays.row_bytes >= HOT_ROWS_MIN)
                    & ~(hot_batch * arrays.first_miss + HOT_ROWS_MIN >= hot_batch))
    return [int(i) for i in np.flatnonzero(touched)]


def enumerate_candidates(workload: Workload, system: System, budgets: Budgets,
                         costs: ShardCosts) -> Candidates:
    """Each table's option: replicate it, replicate its hot rows and keep the rest whole, or keep
    it whole.

    Replicate when the gradient allreduce (every device moves ~2 x rows x dim) is cheaper than the
    all-to-all (all devices together move ~2 x B x dim): rows <= B / G, or below the software's
    fixed bound (``replicate_below_rows``). A replica's gradient
    arrives allreduced and dense: every one of its rows is updated.
    """
    g, b, batch = budgets.devices, budgets.local_batch, budgets.global_batch
    software = system.spec.software
    hybrid = g > 1 and software.hot_embedding_replication
    replicate = g > 1 and software.replicate_small_tables
    # The most rows a replicated table may have: a device's batch, or the software's fixed bound.
    below = software.replicate_below_rows
    rep_rows = b if below is None else below - 1
    hot_batch = hot_rows_batch(budgets, system)
    rep_limit, hot_limit = budgets.replicate_bytes, budgets.hot_bytes
    zipf = workload.access_zipf
    traffic = costs.traffic
    own = budgets.tiers[0].name  # replicas live in the device's own memory
    tables = derived(workload, "placement.tables", table_figures)
    plain = _plain_candidates(plain_figures_at(workload, costs.unit), costs.comm_per_elem)
    # Any table may go through the loop below (an untouched one comes out plain): for a few dozen
    # tables, looping over all costs less than the array test.
    touched: Sequence[int] = range(len(tables)) if len(tables) < FEW_TABLES else _touched_tables(
        derived(workload, "placement.table_arrays", table_arrays), replicate, rep_rows, rep_limit,
        hybrid, hot_batch, hot_limit)
    if not touched:
        return Candidates((), plain, tables)
    whole: list[Candidate] = []
    replicas: list[Shard] = []
    done = 0  # the tables before it are in ``whole`` or ``replicas``
    for ti in touched:
        whole += plain[done:ti]
        done = ti + 1
        rows, dim, pooling, row_bytes, fp, _ = tables[ti]
        if replicate and rows <= rep_rows and fp <= rep_limit:
            lk = b * pooling
            replicas.append(new_shard((ti, "replicated", rows, dim, lk, b, fp, -1, own, "local",
                                       traffic(lk, dim, b, float(rows)), 1.0, True)))
            continue
        # (see hot_rows)
        h_rows, hit = _hot_rows(rows, pooling, zipf, hot_batch, hot_limit / row_bytes) if hybrid else (0, 0.0)
        if not h_rows:
            whole.append(plain[ti])
            continue
        hot_lk = b * pooling * hit
        replicas.append(new_shard((ti, "hot_rows", h_rows, dim, hot_lk, b, h_rows * row_bytes, -1,
                                   own, "local", traffic(hot_lk, dim, b, float(h_rows)), 1.0, True)))
        lk = batch * pooling * (1.0 - hit)
        out_rows = batch * (1.0 - hit ** pooling)
        # The cold rows' lookups fall past the hot set's ranks: fewer repeat.
        distinct = distinct_rows(batch, rows, pooling, zipf, workload.multi_hot_ids, h_rows)
        mem, comm, t = costs.piece(lk, dim, out_rows, batch, distinct)
        whole.append(Candidate(ti, "table_wise", rows, dim, lk, out_rows, fp, mem, comm, True, t, distinct))
    whole += plain[done:]
    return Candidates(tuple(replicas), tuple(whole), tables)
