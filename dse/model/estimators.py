"""Per-shard traffic estimators: the bytes an embedding shard moves per step in each resource.

Placement uses them to balance devices and timing sums them per device, node and tier, so each
traffic equation is written once, here (docs/design.md, section 5, "Embedding lookup, per tier").
A shard's bytes fall on three resources (:class:`Traffic`): the training device's own memory (the
first memory tier, :mod:`dse.model.tiers`), its host link, and the node tier that holds its rows
when they live off the device (the shard's ``tier``). Each function takes the access units of the
memories it touches, which their tiers state.

Notation per shard and step: ``L`` rows looked up (forward), ``d`` dim, ``r`` row bytes, ``st`` optimizer
state bytes per row, ``O`` pooled output rows produced, ``s_c`` bytes per communicated element.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

from dse.model.widths import INDEX_BYTES

PCIE_READ_BYTES = 64
"""Granularity of a GPU's zero-copy/UVM read of host memory over PCIe: one 64 B request per row
segment [A: matches the host cache line; PCIe TLP payloads are 64-256 B]."""


def granular(nbytes: float, unit: int) -> float:
    """Bytes actually moved when ``nbytes`` are read in units of ``unit`` bytes (at least one unit)."""
    if nbytes <= 0:
        return 0.0
    return math.ceil(nbytes / unit) * unit


class Traffic(NamedTuple):
    """Bytes moved per step by one shard, forward and backward+optimizer, per resource.

    ``local``: the training device's own memory (its first tier: HBM, or a CPU device's DDR);
    ``link``: the device's host link; ``far``: the node tier that holds the shard's rows when they
    live off the device (the shard's ``tier``: host DDR, CXL memory), zero otherwise.
    An immutable named tuple, as :class:`dse.model.placement.plan.Shard` (a plan builds one per shard size).
    """

    local_fwd: float = 0.0
    local_bwd: float = 0.0
    link_fwd: float = 0.0
    link_bwd: float = 0.0
    far_fwd: float = 0.0
    far_bwd: float = 0.0


new_traffic = functools.partial(tuple.__new__, Traffic)
"""A Traffic from the tuple of all its fields, in order: skips the named tuple's ``__new__``, a
Python function that costs as much again (placement builds one per piece)."""


def unique_rows(lookups: float, rows: float) -> float:
    """Expected distinct rows among ``lookups`` looked up in a shard of ``rows`` rows (``rows`` 0:
    unknown, every lookup counted): rows x (1 - exp(-lookups / rows)), the count for uniform access,
    which no skew exceeds (a skewed access repeats its popular rows more often). The synthetic
    multi-hot lookups of MLPerf DLRM-DCNv2 are drawn uniformly (mlcommons/training
    recommendation_v2/torchrec_dlrm README, ``--multi_hot_distribution_type uniform``), so for them
    it is the count itself.

    >>> round(unique_rows(1_000_000, 10), 6)
    10.0
    """
    if rows <= 0.0 or lookups <= 0.0:
        return lookups
    return rows * -math.expm1(-lookups / rows)


def local_traffic(
    lookups: float, row_bytes: int, state_bytes: int, out_bytes: float, update_rows: float = 0.0,
    rows: float = 0.0, *, unit: int,
) -> Traffic:
    """A shard resident in the device's own memory (HBM): gathers rows (forward), then reads the
    pooled gradient and reads/writes each distinct looked-up row and its optimizer state once
    (backward + fused optimizer update), in ``unit``-byte accesses (the tier's).

    ``out_bytes`` = pooled output rows x dim x s_c (written forward, read back as the gradient).
    ``rows``: the shard's rows; the backward sorts the step's indices (``INDEX_BYTES`` a lookup) and
    sums the gradients of repeated rows before the update, so each distinct row
    (:func:`unique_rows`) is read and written once, as FBGEMM's table-batched embedding backward
    (sort, then segment reduction per row) and HugeCTR's embedding collection (unique compression)
    do. ``update_rows``: rows updated densely (a replica whose gradient arrives allreduced); the
    backward then touches at least that many rows.
    """
    row = granular(row_bytes, unit)
    state = granular(state_bytes, unit)
    fwd = lookups * (row + INDEX_BYTES) + out_bytes
    touched = max(unique_rows(lookups, rows), update_rows)
    bwd = out_bytes + touched * 2.0 * (row + state) + lookups * INDEX_BYTES
    return Traffic(local_fwd=fwd, local_bwd=bwd)


def pooled_traffic(lookups: float, row_bytes: int, state_bytes: int, out_bytes: float,
                   rows: float = 0.0, *, unit: int) -> Traffic:
    """A shard resident in a node tier, pooled by the CPUs (Zion's large-memory design): the CPU
    gathers rows in ``unit``-byte lines (the tier's) and ships pooled vectors over the host
    link; backward ships gradients back and the CPU updates each distinct row (:func:`unique_rows`
    of ``rows``) and its state in place."""
    row = granular(row_bytes, unit)
    state = granular(state_bytes, unit)
    # (local_fwd, local_bwd, link_fwd, link_bwd, far_fwd, far_bwd): see new_traffic.
    return new_traffic((0.0, 0.0, out_bytes, out_bytes, lookups * (row + INDEX_BYTES),
                         unique_rows(lookups, rows) * 2.0 * (row + state)))


def cached_traffic(
    lookups: float, row_bytes: int, state_bytes: int, out_bytes: float, hit_rate: float,
    rows: float = 0.0, *, local_unit: int, far_unit: int,
) -> Traffic:
    """A shard resident in a node tier behind a cache in the device's own memory: hits are served
    there (``local_unit`` accesses), misses are gathered by the device over its host link from the
    node tier (UVM; ``far_unit`` accesses there) and written back on update (each distinct row once,
    :func:`unique_rows` of ``rows``, shared between hits and misses as the lookups are)."""
    dedup = unique_rows(lookups, rows) / lookups if lookups > 0.0 else 1.0
    hits = lookups * hit_rate
    row = granular(row_bytes, local_unit)
    state = granular(state_bytes, local_unit)
    hit_fwd = hits * (row + INDEX_BYTES) + out_bytes  # the hits' local traffic
    hit_bwd = out_bytes + hits * dedup * 2.0 * (row + state) + hits * INDEX_BYTES
    miss = lookups * (1.0 - hit_rate)
    update_miss = miss * dedup
    p_row = granular(row_bytes, PCIE_READ_BYTES)
    p_state = granular(state_bytes, PCIE_READ_BYTES)
    d_row = granular(row_bytes, far_unit)
    d_state = granular(state_bytes, far_unit)
    # (local_fwd, local_bwd, link_fwd, link_bwd, far_fwd, far_bwd): see new_traffic.
    return new_traffic((hit_fwd + miss * INDEX_BYTES, hit_bwd, miss * p_row,
                         update_miss * 2.0 * (p_row + p_state), miss * d_row,
                         update_miss * 2.0 * (d_row + d_state)))


@functools.lru_cache(maxsize=1 << 16)
def zipf_hit_rate(cached_rows: float, rows: int, exponent: float) -> float:
    """Share of lookups that fall on the ``cached_rows`` most popular of ``rows`` rows when
    popularity follows a Zipf law with ``exponent`` (continuous approximation of the harmonic sums).

    >>> round(zipf_hit_rate(1_000, 1_000_000, 1.0), 3)
    0.5
    """
    if rows <= 0 or cached_rows <= 0:
        return 0.0
    k = min(float(rows), max(1.0, cached_rows))
    n = float(rows)
    if abs(exponent - 1.0) < 1e-9:
        return math.log(k + 1.0) / math.log(n + 1.0)
    a = 1.0 - exponent
    hit: float = ((k + 1.0) ** a - 1.0) / ((n + 1.0) ** a - 1.0)
    return hit
