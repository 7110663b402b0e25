"""Tier choice: the pieces with the most traffic per byte fill HBM, the rest live in host DDR, where
leftover HBM serves as a cache with a Zipf hit rate."""

from __future__ import annotations

from dse.model.estimators import Traffic, cached_traffic, zipf_hit_rate
from dse.model.placement.candidates import Candidate
from dse.model.placement.plan import Shard, new_shard
from dse.model.system import GB
from dse.model.workload import Workload


def choose_tiers(pieces: list[tuple[Candidate, int]],
                 budget: float) -> tuple[list[tuple[Candidate, int]], list[Candidate]]:
    """(pieces for HBM, pieces for host DDR), densest first: each piece goes to HBM while the
    ``budget`` bytes (all table-holding devices together) have room for it. ``pieces`` holds each
    size of piece once with the number of its pieces; so do the HBM pieces returned (a run of equal
    pieces, in order), while the host pieces come one entry a piece (the equal pieces of a split
    are one object).

    The sort is stable: ties keep their order, so sorting each size of piece once puts its pieces
    where sorting them one by one would.
    """
    density = [c.lookups / (c.footprint if c.footprint > 1.0 else 1.0) for c, _ in pieces]
    by_density = [pieces[i] for i in sorted(range(len(pieces)), key=density.__getitem__, reverse=True)]
    if sum([c.footprint * count for c, count in by_density]) <= budget * (1.0 - 1e-6):
        # All fit, with more room to spare than the rounding of the running budget below could eat.
        return by_density, []
    hbm_set: list[tuple[Candidate, int]] = []
    host_set: list[Candidate] = []
    for c, count in by_density:
        # Equal pieces: once one does not fit, none of the rest does (the budget only shrinks).
        fit = 0
        footprint = c.footprint
        while fit < count and footprint <= budget:
            budget -= footprint
            fit += 1
        if fit:
            hbm_set.append((c, fit))
        host_set += [c] * (count - fit)
    return hbm_set, host_set


def host_shards(
    by_device: dict[int, list[tuple[Candidate, Traffic]]],
    hbm_used: list[float],
    hbm_cap: float,
    hbm_cache_gb: float | None,
    wl: Workload,
    s_c: int,
) -> tuple[list[Shard], dict[int, float]]:
    """Host-resident shards, each with its host traffic, behind an HBM cache where its device has
    HBM to spare (``hbm_used`` per device, before any cache; at most ``hbm_cache_gb`` when set).
    Returns the shards and the cache bytes taken on each device."""
    out: list[Shard] = []
    caches: dict[int, float] = {}
    for dev, group in by_device.items():
        spare = max(hbm_cap - hbm_used[dev], 0.0)
        cache = caches[dev] = spare if hbm_cache_gb is None else min(spare, hbm_cache_gb * GB)
        total = sum(c.footprint for c, _ in group)
        # (Each Shard from the tuple of its fields, in order: see new_shard.)
        for c, host in group:
            if cache > 0:
                rb, state = _row_bytes(wl, c.dim)
                rows_cached = cache * (c.footprint / total) / state
                hit = zipf_hit_rate(rows_cached, c.rows, wl.access_zipf)
                traffic = cached_traffic(c.lookups, rb, state - rb, c.out_rows * c.dim * s_c, hit, c.rows)
                out.append(new_shard((c.table, c.sharding, c.rows, c.dim, c.lookups, c.out_rows, c.footprint,
                                      dev, "cache", traffic, hit, c.partial)))
            else:
                out.append(new_shard((c.table, c.sharding, c.rows, c.dim, c.lookups, c.out_rows, c.footprint,
                                      dev, "host", host, 0.0, c.partial)))
    return out, caches


def _row_bytes(wl: Workload, dim: int) -> tuple[int, int]:
    """(row bytes, row bytes with optimizer state) of ``dim`` in ``wl``."""
    return wl.row_bytes(dim), wl.row_state_bytes(dim)
