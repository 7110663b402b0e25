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
from typing import Literal, NamedTuple

from dse.model.widths import INDEX_BYTES

PCIE_READ_BYTES = 64
"""Granularity of a GPU's zero-copy/UVM read of host memory over PCIe: one 64 B request per row
segment [A: matches the host cache line; PCIe TLP payloads are 64-256 B]."""


@functools.lru_cache(maxsize=1024)
def granular(row_bytes: int, state_bytes: int, unit: int) -> tuple[int, int]:
    """Bytes actually moved when a row of ``row_bytes`` and its optimizer state of ``state_bytes``
    are read in accesses of ``unit`` bytes: each rounded up to whole accesses (none for none).
    Remembered: a design asks it for every shard, of a few row sizes."""
    return -(-row_bytes // unit) * unit, -(-state_bytes // unit) * unit


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
    """Expected distinct rows among ``lookups`` drawn uniformly from a shard of ``rows`` rows
    (``rows`` 0: unknown, every lookup counted): rows x (1 - exp(-lookups / rows)).

    >>> round(unique_rows(1_000_000, 10), 6)
    10.0
    """
    if rows <= 0.0 or lookups <= 0.0:
        return lookups
    return rows * -math.expm1(-lookups / rows)


MultiHotIds = Literal["drawn", "derived"]
"""How the lookups of one multi-hot feature of a sample are chosen: ``drawn``, each an independent
draw from the table's popularity; ``derived``, a fixed function of one drawn id, the id itself and
pooling - 1 partners fixed once per id, uniformly at random over the table (MLPerf Training
DLRM-DCNv2's synthetic multi-hot Criteo: ``Multihot.__make_multi_hot_indices_tables`` in
facebookresearch/dlrm ``torchrec_dlrm/multi_hot.py``, ``--multi_hot_distribution_type uniform``)."""

_DISTINCT_NODES = 96
"""Simpson intervals of :func:`zipf_distinct`'s integral over log rank (its integrand changes over
a few e-folds of rank: 96 over the 17.5 of a 40M-row table keep it within 0.1%)."""


@functools.lru_cache(maxsize=1 << 14)
def zipf_distinct(draws: float, rows: float, exponent: float, skip: float = 0.0) -> float:
    """Expected distinct rows among ``draws`` independent lookups of a table of ``rows`` rows whose
    popularity follows the Zipf law of :func:`zipf_hit_rate` (density proportional to
    (x + 1)^-exponent over rank x in [0, rows]), counting only ranks past ``skip`` (the rows a hot
    set serves): the integral over those ranks of 1 - exp(-draws x p(x)), by Simpson's rule in log
    rank. Exponent 0 is uniform access, :func:`unique_rows`.

    >>> round(zipf_distinct(1e6, 10, 1.05), 3)
    10.0
    >>> zipf_distinct(55_296, 40e6, 0.0) == unique_rows(55_296, 40e6)
    True
    """
    if rows <= 0.0 or draws <= 0.0:
        return draws
    if exponent <= 0.0 and skip <= 0.0:
        return unique_rows(draws, rows)
    a, den = zipf_norm(rows, exponent)
    scale = draws / (den / a if a else den)  # draws over the law's total mass
    lo, hi = math.log(skip + 1.0), math.log(rows + 1.0)
    if hi <= lo:
        return 0.0
    step = (hi - lo) / _DISTINCT_NODES
    total = 0.0
    for i in range(_DISTINCT_NODES + 1):
        y = math.exp(lo + i * step)  # rank + 1
        f = -math.expm1(-scale * y ** -exponent) * y  # dx = y du
        total += f * (1 if i in (0, _DISTINCT_NODES) else 4 if i % 2 else 2)
    return total * step / 3.0


def distinct_rows(samples: float, rows: float, pooling: float, exponent: float,
                  ids: MultiHotIds = "drawn", skip: float = 0.0) -> float:
    """Expected distinct rows a step of ``samples`` samples touches in a table of R = ``rows`` rows
    with ``pooling`` lookups a sample, popularity Zipf(``exponent``), on ranks past ``skip`` only
    (the rows a hot set does not serve; :func:`zipf_distinct`). ``drawn`` ids: samples x pooling
    independent lookups. ``derived`` ids (:data:`MultiHotIds`): each distinct id drawn brings
    pooling - 1 fixed partners drawn uniformly over the table, so D, the distinct ids drawn past the
    skipped ranks, are touched, and the partners of all D' ids drawn (a hot id's too) land on the
    R - skip - D rows left as (R - skip - D)(1 - exp(-(pooling - 1) D' / R)) distinct rows. The
    popularity of the drawn id carries over to its partners, which uniform access (exponent 0)
    would miss by touching almost every lookup's row. The backward reads and writes each distinct
    row once (:func:`local_traffic`)."""
    if ids == "drawn" or pooling <= 1.0:
        return zipf_distinct(samples * pooling, rows, exponent, skip)
    drawn = zipf_distinct(samples, rows, exponent, skip)
    every = zipf_distinct(samples, rows, exponent) if skip > 0.0 else drawn
    return drawn + unique_rows((pooling - 1.0) * every, rows) * (rows - skip - drawn) / rows


def local_traffic(
    lookups: float, row_bytes: int, state_bytes: int, out_bytes: float, update_rows: float = 0.0,
    touched: float | None = None, *, unit: int,
) -> Traffic:
    """A shard resident in the device's own memory (HBM): gathers rows (forward), then reads the
    pooled gradient and reads/writes each distinct looked-up row and its optimizer state once
    (backward + fused optimizer update), in ``unit``-byte accesses (the tier's).

    ``out_bytes`` = pooled output rows x dim x s_c (written forward, read back as the gradient).
    ``touched``: the distinct rows among the lookups (:func:`distinct_rows`; None: every lookup's
    row); the backward sorts the step's indices (``INDEX_BYTES`` a lookup) and sums the gradients of
    repeated rows before the update, so each distinct row is read and written once, as FBGEMM's
    table-batched embedding backward (sort, then segment reduction per row) and HugeCTR's embedding
    collection (unique compression) do. ``update_rows``: rows updated densely (a replica whose
    gradient arrives allreduced); the backward then touches at least that many rows.
    """
    row, state = granular(row_bytes, state_bytes, unit)
    fwd = lookups * (row + INDEX_BYTES) + out_bytes
    updated = max(lookups if touched is None else touched, update_rows)
    bwd = out_bytes + updated * 2.0 * (row + state) + lookups * INDEX_BYTES
    return Traffic(local_fwd=fwd, local_bwd=bwd)


def pooled_traffic(lookups: float, row_bytes: int, state_bytes: int, out_bytes: float,
                   touched: float | None = None, *, unit: int) -> Traffic:
    """A shard resident in a node tier, pooled by the CPUs (Zion's large-memory design): the CPU
    gathers rows in ``unit``-byte lines (the tier's) and ships pooled vectors over the host
    link; backward ships gradients back and the CPU updates each distinct row (``touched``, as in
    :func:`local_traffic`) and its state in place."""
    row, state = granular(row_bytes, state_bytes, unit)
    # (local_fwd, local_bwd, link_fwd, link_bwd, far_fwd, far_bwd): see new_traffic.
    return new_traffic((0.0, 0.0, out_bytes, out_bytes, lookups * (row + INDEX_BYTES),
                         (lookups if touched is None else touched) * 2.0 * (row + state)))


def cached_traffic(
    lookups: float, row_bytes: int, state_bytes: int, out_bytes: float, hit_rate: float,
    touched: float | None = None, *, local_unit: int, far_unit: int,
) -> Traffic:
    """A shard resident in a node tier behind a cache in the device's own memory: hits are served
    there (``local_unit`` accesses), misses are gathered by the device over its host link from the
    node tier (UVM; ``far_unit`` accesses there) and written back on update, each distinct row once
    (``touched``, as in :func:`local_traffic`). The cache holds the popular rows, so the misses fall
    on the tail, whose rows rarely repeat within a step: each miss counts as a distinct row (at most
    ``touched`` of them), and the hits update the distinct rows left."""
    hits = lookups * hit_rate
    miss = lookups - hits
    distinct = lookups if touched is None else touched
    update_miss = miss if miss < distinct else distinct  # min(), without its call
    row, state = granular(row_bytes, state_bytes, local_unit)
    hit_fwd = hits * (row + INDEX_BYTES) + out_bytes  # the hits' local traffic
    hit_bwd = out_bytes + (distinct - update_miss) * 2.0 * (row + state) + hits * INDEX_BYTES
    p_row, p_state = granular(row_bytes, state_bytes, PCIE_READ_BYTES)
    d_row, d_state = granular(row_bytes, state_bytes, far_unit)
    # (local_fwd, local_bwd, link_fwd, link_bwd, far_fwd, far_bwd): see new_traffic.
    return new_traffic((hit_fwd + miss * INDEX_BYTES, hit_bwd, miss * p_row,
                         update_miss * 2.0 * (p_row + p_state), miss * d_row,
                         update_miss * 2.0 * (d_row + d_state)))


@functools.lru_cache(maxsize=1 << 16)
def zipf_hit_rate(cached_rows: float, rows: int, exponent: float) -> float:
    """Share of lookups that fall on the ``cached_rows`` most popular of ``rows`` rows when
    popularity follows a Zipf law with ``exponent`` (continuous approximation of the harmonic sums;
    :func:`zipf_share`).

    >>> round(zipf_hit_rate(1_000, 1_000_000, 1.0), 3)
    0.5
    """
    if rows <= 0:
        return 0.0
    return zipf_share(cached_rows, float(rows), *zipf_norm(float(rows), exponent))


@functools.lru_cache(maxsize=1 << 14)
def zipf_norm(rows: float, exponent: float) -> tuple[float, float]:
    """(1 - s, the denominator of :func:`zipf_share`) for a table of ``rows`` rows: computed once
    for many shares of one table, and remembered (the host placement asks it for every host piece
    of every design, of the same few tables)."""
    a = 1.0 - exponent
    if abs(a) < 1e-9:
        return 0.0, math.log(rows + 1.0)
    return a, (rows + 1.0) ** a - 1.0


def zipf_share(cached_rows: float, rows: float, a: float, den: float) -> float:
    """The share of lookups on the k = ``cached_rows`` most popular of n = ``rows`` rows under a
    Zipf law of exponent s, ((k + 1)^(1 - s) - 1) / ((n + 1)^(1 - s) - 1), or
    ln(k + 1) / ln(n + 1) at s = 1, with k at least one row and at most n (0 for none cached);
    ``a`` and ``den`` from :func:`zipf_norm`."""
    if cached_rows <= 0.0:
        return 0.0
    k = rows if cached_rows > rows else 1.0 if cached_rows < 1.0 else cached_rows
    if a == 0.0:
        return math.log(k + 1.0) / den
    share: float = ((k + 1.0) ** a - 1.0) / den
    return share
