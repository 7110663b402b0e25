"""The split rules: how many pieces each whole table is cut into, for capacity and for load, and
how (column-wise, row-wise, or row-wise within one scale-up domain: TorchRec's table-row-wise)."""

from __future__ import annotations

import math

from dse.model.placement.candidates import Candidate, TableFigures
from dse.model.placement.costs import ShardCosts
from dse.model.placement.plan import Sharding

MIN_COLUMN_DIM = 32
"""Smallest column-wise shard width (elements): narrower rows waste DRAM sectors (32 B) in fp32/fp16
[A: TorchRec's planner uses similar minimum column-shard sizes]."""
SPLIT_RATIO_TOLERANCE = 1e-9
"""Relative tolerance on a shard's cost over the ideal per-device cost before rounding up the
column-wise split count (float sums of equal costs are not exact)."""


def split(cand: Candidate, k: int, sharding: Sharding, one_hot: bool, costs: ShardCosts,
          batch: float) -> list[tuple[Candidate, int]]:
    """``cand`` in ``k`` pieces of (near-)equal width or rows: the first ``extra`` pieces get one
    more. Pieces come in at most two sizes: each size once, with its count (building a piece and
    its Traffic costs more than the arithmetic)."""
    out: list[tuple[Candidate, int]] = []
    table = cand.table
    if sharding == "column_wise":
        base, extra = divmod(cand.dim, k)
        rows, lk, o = cand.rows, cand.lookups, cand.out_rows
        for d, n in ((base + 1, extra), (base, k - extra)):
            if n:
                mem, comm, traffic = costs.piece(lk, d, o, batch, cand.touched)
                out.append((Candidate(table, sharding, rows, d, lk, o, rows * sum(costs.row(d)), mem, comm,
                                      True, traffic, cand.touched), n))
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
                touched = cand.touched * r / cand.rows
                mem, comm, traffic = costs.piece(lk, dim, o, batch, touched)
                out.append((Candidate(table, sharding, r, dim, lk, o, r * row_bytes, mem, comm, not one_hot,
                                      traffic, touched), n))
    return out


def slice_columns(cand: Candidate, slices: int, columns: int, costs: ShardCosts,
                  batch: float) -> list[tuple[Candidate, int]]:
    """``cand`` cut row-wise into ``slices`` slices of (near-)equal rows, each split column-wise
    into ``columns`` pieces: grid sharding (TorchRec's ``ShardingType.GRID_SHARD``: rows across
    nodes, columns within a node). A piece holds ``1 / slices`` of the rows and lookups and emits
    partial sums for every output row of its columns, so for the all-to-all it is a column-wise piece
    (:func:`~dse.model.timing.alltoall_elements`); each size of piece is returned once, with its
    count."""
    base, extra = divmod(cand.rows, slices)
    row_bytes = sum(costs.row(cand.dim))
    out: list[tuple[Candidate, int]] = []
    for r, n in ((base + 1, extra), (base, slices - extra)):
        if n:
            lk = cand.lookups * r / cand.rows
            piece = Candidate(cand.table, "row_wise", r, cand.dim, lk, cand.out_rows, r * row_bytes, 0.0, 0.0,
                              True, None, cand.touched * r / cand.rows)
            for c, count in split(piece, columns, "column_wise", False, costs, batch):
                c.sharding = "grid"
                out.append((c, count * n))
    return out


def _past_columns(k_load: int, ratio_mem: float, ratio_comm: float, columns: int, domain: int,
                  domains: int) -> tuple[int, int, int]:
    """For :func:`shard_tables`: how a multi-hot table whose load asks for more pieces than its
    column pieces (``k_load > columns``) is cut. Returns (pieces, row pieces per domain, row slices
    of a grid): row pieces spread over domains (``per_domain`` > 0), a grid of ``slices`` row slices
    each split column-wise (``slices`` > 1; the caller checks it holds the capacity pieces), or a
    count of pieces for one domain."""
    # Row pieces of a multi-hot table each send partial sums for every output row: inside
    # a domain they divide its HBM traffic, not its all-to-all bytes, which they multiply.
    # So split past the column pieces only while a piece's HBM share stays above its
    # all-to-all share (a lookup-heavy table, like DCNv2's 100-hot one), n pieces a domain.
    k_rows = math.floor(ratio_mem / ratio_comm) if ratio_comm > 0.0 else domain
    n = min(k_load, k_rows, domain)
    # Across domains the partial sums are reduced hierarchically (fabric first, then one
    # sum a domain over the network: :func:`~dse.model.timing.alltoall_elements`), so each
    # further domain's n pieces send what the first domain's do: no piece's all-to-all
    # grows, and every piece's HBM share falls. Spread over as many domains as the load
    # needs (NVIDIA's multi-node MLPerf Training v3.0/v3.1 DCNv2 runs plan their sharding
    # across nodes, ``SHARDING_PLAN=hier_auto`` in config_DGXH100_8x8x2112.sh, with
    # hierarchical communication).
    spread = min(domains, math.ceil(k_load / n)) if n > columns else 1
    if spread > 1:
        # As many pieces as the load needs, evenly over the domains (at most n each).
        per_domain = math.ceil(k_load / spread)
        return per_domain * spread, per_domain, 0
    if columns and domains > 1:
        # A table whose rows may not split further inside a domain (its all-to-all share
        # is too large for that) is cut in row slices, one a domain, each split column-wise
        # there: a slice's column pieces send their partial sums for every sample, reduced
        # by the receiving device, so each piece's all-to-all stays what it is whole while
        # its HBM share falls with the slices. At most as many slices as keep a piece's
        # HBM share above its all-to-all share (``k_rows``, as for row pieces above), and
        # enough for the load.
        return columns, 0, min(domains, math.ceil(k_load / columns), k_rows)
    return max(columns, n), 0, 0


def shard_tables(whole: tuple[Candidate, ...], tables: tuple[TableFigures, ...], g: int, domain: int,
                 limit: float, balance: bool, costs: ShardCosts,
                 batch: float) -> list[tuple[Candidate, int]]:
    """Split each whole table into as many pieces as its capacity needs and, for software that
    splits to balance, as its load needs: one count from both. (Split for capacity first and for
    load only if still whole, a large table escaped the balance rule, so a model whose tables grew
    4x could train faster than the original on the same machine.)

    Capacity: no piece above ``limit`` bytes. Load (``balance``): a table heavier than a device's
    fair share (1/G of all HBM traffic or of all all-to-all bytes) is split into that many pieces,
    at most G. A one-hot table split for load goes row-wise (no partial sums to reduce: HugeCTR
    spreads one-hot tables' rows over all GPUs); otherwise column-wise down to MIN_COLUMN_DIM and
    row-wise, with partial sums, beyond, for a table whose HBM traffic outweighs its all-to-all
    bytes: into at most ``domain`` pieces a scale-up domain, as those stay in one domain
    (:func:`~dse.model.placement.partitioning.assign_hbm`) and more would only share its devices,
    over as many domains as its load needs (TorchRec's table-row-wise sharding, HugeCTR's
    hierarchical embedding collection). A multi-hot table whose rows may not split further inside
    a domain but whose load exceeds its column pieces is cut into row slices across domains, each
    split column-wise (:func:`slice_columns`, grid sharding).
    Returns each size of piece once, with the number of its pieces.
    """
    balance = balance and g > 1 and bool(whole)
    domains = -(-g // domain)  # ceil
    share_mem = g / (sum([c.mem for c in whole]) or 1.0)
    share_comm = g / (sum([c.comm for c in whole]) or 1.0)
    out: list[tuple[Candidate, int]] = []
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
        per_domain = 0  # row pieces of one table per scale-up domain; 0: all in one domain
        if balance and not hot and k_load > columns:
            # Only when splitting for load (else the load ratios are not computed, and k_load = 1
            # could only matter through row_wise below, where k > columns already decides).
            k_load, per_domain, slices = _past_columns(k_load, ratio_mem, ratio_comm, columns, domain,
                                                       domains)
            if slices > 1 and slices * columns >= k_cap:
                out.extend(slice_columns(c, slices, columns, costs, batch))
                continue
        k = k_cap if k_cap > k_load else k_load
        if k < 2:
            out.append((c, 1))
            continue
        row_wise = (hot and k_load >= k_cap) or k > columns
        pieces = split(c, k, "row_wise" if row_wise else "column_wise", hot, costs, batch)
        if per_domain and k == k_load:
            for piece, _ in pieces:
                # What a piece sends to its peers: 1/n of its domain's sum. Its reduce-scatter
                # stays on the fabric, which the pieces of one domain share alike, so the balance
                # across devices weighs the bytes to the peers.
                piece.per_domain, piece.comm = per_domain, piece.comm / per_domain
        out.extend(pieces)
    return out
