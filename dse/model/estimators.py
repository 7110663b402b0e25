"""Per-shard traffic estimators: the bytes an embedding shard moves per step in each tier.

Placement uses them to balance devices and timing sums them per device, so each traffic equation is
written once, here (docs/design.md, section 5, "Embedding lookup, per tier").

Notation per shard and step: ``L`` rows looked up (forward), ``d`` dim, ``r`` row bytes, ``st`` optimizer
state bytes per row, ``O`` pooled output rows produced, ``s_c`` bytes per communicated element.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

from dse.model.widths import INDEX_BYTES

HBM_SECTOR_BYTES = 32
"""GPU DRAM access granularity: 32-byte sectors (NVIDIA CUDA C++ Best Practices Guide, "Coalesced
Access to Global Memory")."""
HOST_LINE_BYTES = 64
"""x86 cache line: the unit a CPU gathers from DDR (Intel/AMD optimisation manuals)."""
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

    ``hbm``: accelerator memory; ``pcie``: the accelerator's host link; ``ddr``: host memory.
    An immutable named tuple, as :class:`dse.model.placement.plan.Shard` (a plan builds one per shard size).
    """

    hbm_fwd: float = 0.0
    hbm_bwd: float = 0.0
    pcie_fwd: float = 0.0
    pcie_bwd: float = 0.0
    ddr_fwd: float = 0.0
    ddr_bwd: float = 0.0


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


def hbm_traffic(
    lookups: float, row_bytes: int, state_bytes: int, out_bytes: float, update_rows: float = 0.0,
    rows: float = 0.0,
) -> Traffic:
    """A shard resident in HBM: gathers rows (forward), then reads the pooled gradient and
    reads/writes each distinct looked-up row and its optimizer state once (backward + fused
    optimizer update).

    ``out_bytes`` = pooled output rows x dim x s_c (written forward, read back as the gradient).
    ``rows``: the shard's rows; the backward sorts the step's indices (``INDEX_BYTES`` a lookup) and
    sums the gradients of repeated rows before the update, so each distinct row
    (:func:`unique_rows`) is read and written once, as FBGEMM's table-batched embedding backward
    (sort, then segment reduction per row) and HugeCTR's embedding collection (unique compression)
    do. ``update_rows``: rows updated densely (a replica whose gradient arrives allreduced); the
    backward then touches at least that many rows.
    """
    row = granular(row_bytes, HBM_SECTOR_BYTES)
    state = granular(state_bytes, HBM_SECTOR_BYTES)
    fwd = lookups * (row + INDEX_BYTES) + out_bytes
    touched = max(unique_rows(lookups, rows), update_rows)
    bwd = out_bytes + touched * 2.0 * (row + state) + lookups * INDEX_BYTES
    return Traffic(hbm_fwd=fwd, hbm_bwd=bwd)


def host_traffic(lookups: float, row_bytes: int, state_bytes: int, out_bytes: float,
                 rows: float = 0.0) -> Traffic:
    """A shard resident in host DDR, pooled by the CPU (Zion's large-memory design): the CPU gathers
    rows in 64 B lines and ships pooled vectors over PCIe; backward ships gradients back and the CPU
    updates each distinct row (:func:`unique_rows` of ``rows``) and its state in place."""
    row = granular(row_bytes, HOST_LINE_BYTES)
    state = granular(state_bytes, HOST_LINE_BYTES)
    # (hbm_fwd, hbm_bwd, pcie_fwd, pcie_bwd, ddr_fwd, ddr_bwd): see new_traffic.
    return new_traffic((0.0, 0.0, out_bytes, out_bytes, lookups * (row + INDEX_BYTES),
                         unique_rows(lookups, rows) * 2.0 * (row + state)))


def cached_traffic(
    lookups: float, row_bytes: int, state_bytes: int, out_bytes: float, hit_rate: float,
    rows: float = 0.0,
) -> Traffic:
    """A host-resident shard behind an HBM cache: hits are served from HBM, misses are gathered by
    the accelerator over PCIe from DDR (UVM) and written back on update (each distinct row once,
    :func:`unique_rows` of ``rows``, shared between hits and misses as the lookups are)."""
    dedup = unique_rows(lookups, rows) / lookups if lookups > 0.0 else 1.0
    hits = lookups * hit_rate
    row = granular(row_bytes, HBM_SECTOR_BYTES)
    state = granular(state_bytes, HBM_SECTOR_BYTES)
    hit_fwd = hits * (row + INDEX_BYTES) + out_bytes  # the hits' HBM traffic
    hit_bwd = out_bytes + hits * dedup * 2.0 * (row + state) + hits * INDEX_BYTES
    miss = lookups * (1.0 - hit_rate)
    update_miss = miss * dedup
    p_row = granular(row_bytes, PCIE_READ_BYTES)
    p_state = granular(state_bytes, PCIE_READ_BYTES)
    d_row = granular(row_bytes, HOST_LINE_BYTES)
    d_state = granular(state_bytes, HOST_LINE_BYTES)
    # (hbm_fwd, hbm_bwd, pcie_fwd, pcie_bwd, ddr_fwd, ddr_bwd): see new_traffic.
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
