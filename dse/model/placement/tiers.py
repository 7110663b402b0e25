"""Tier choice, a cascade over the system's memory tiers: the pieces with the most traffic per byte
fill the device's own memory; the rest fill the node tiers in their order (host DDR, then the tiers
after it), each node tier a node at a time; where a device has its own memory to spare, it serves
as a cache with a Zipf hit rate in front of that device's off-device pieces."""

from __future__ import annotations

import math

from dse.model.estimators import Traffic, cached_traffic, zipf_hit_rate
from dse.model.placement.candidates import Candidate
from dse.model.placement.costs import ShardCosts
from dse.model.placement.partitioning import assign_host, cache_shares
from dse.model.placement.plan import Access, Shard, new_shard
from dse.model.system import GB, HostOrder, HostServing
from dse.model.tiers import MemoryTier


def choose_tiers(pieces: list[tuple[Candidate, int]], budget: float,
                 order: HostOrder = "density") -> tuple[list[tuple[Candidate, int]], list[Candidate]]:
    """(pieces for the device's own memory, pieces for the node tiers), densest first (``order =
    "largest"``: smallest first, the largest tables leaving the devices): each piece goes to the
    devices while the ``budget`` bytes (all table-holding devices together) have room for it.
    ``pieces`` holds each size of piece once with the number of its pieces; so do the device pieces
    returned (a run of equal pieces, in order), while the others come one entry a piece (the equal
    pieces of a split are one object).

    The sort is stable: ties keep their order, so sorting each size of piece once puts its pieces
    where sorting them one by one would.
    """
    if order == "largest":
        density = [-c.footprint for c, _ in pieces]
    else:  # _density, inlined: this runs for every piece of every placement
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


def split_by_density(pieces: list[Candidate], budgets: list[float]) -> list[list[Candidate]]:
    """``pieces`` shared out over tiers of ``budgets`` bytes each (all nodes together), densest
    first: a piece goes to the first tier with room left for it, the last tier takes the rest
    (its nodes' room is checked when they are filled). One tier takes every piece as given."""
    if len(budgets) <= 1:
        return [pieces]
    left = list(budgets[:-1])
    out: list[list[Candidate]] = [[] for _ in budgets]
    for c in sorted(pieces, key=_density, reverse=True):
        i = next((i for i, room in enumerate(left) if c.footprint <= room), len(left))
        if i < len(left):
            left[i] -= c.footprint
        out[i].append(c)
    return out


NodePieces = list[tuple[MemoryTier, dict[int, list[tuple[Candidate, Traffic]]]]]
"""Per node tier, in order: its pieces by serving device, each with its CPU-pooled traffic."""


def place_node_tiers(pieces: list[Candidate], tiers: tuple[MemoryTier, ...], capacities: tuple[float, ...],
                     load: list[float], nodes: int, per_node: int, costs: ShardCosts,
                     spare: list[float] | None = None
                     ) -> tuple[NodePieces, list[tuple[float, ...]], list[Candidate]]:
    """The pieces that live off the devices, tier after tier (``tiers``: the node tiers, each with
    ``capacities`` bytes a node): each tier takes its densest share (:func:`split_by_density`) and
    what the tier before had no node for. Returns the pieces of each tier by serving device, each
    tier's bytes per node, and the pieces no tier had room for. ``load``: each device's load,
    updated; ``spare``: each device's own memory left for a cache of its host pieces (None: not
    served from one; :func:`~dse.model.placement.partitioning.assign_host`)."""
    if not pieces:  # everything fits the devices (as a rule)
        return [], [(0.0,) * nodes for _ in tiers], []
    shares = split_by_density(pieces, [cap * nodes for cap in capacities]) if tiers else []
    placed: NodePieces = []
    used: list[tuple[float, ...]] = []
    carried: list[Candidate] = [] if tiers else pieces
    cached = cache_shares(spare)  # one cache a device, for its pieces of every tier (host_shards)
    for tier, capacity, share in zip(tiers, capacities, shares, strict=True):
        got = assign_host(share + carried, load, capacity, nodes, per_node, costs, tier.access_bytes, cached)
        placed.append((tier, got.by_device))
        used.append(tuple(got.used_bytes))
        carried = got.unplaced
    return placed, used, carried


def cache_room(own_used: list[float], own_cap: float, cache_gb: float | None,
               serving: HostServing) -> list[float] | None:
    """Each device's own memory a cache of its host pieces may take: what its own pieces leave of
    ``own_cap`` (at most ``cache_gb`` when set), or None when ``serving`` uses no cache."""
    if serving not in ("auto", "cache"):
        return None
    cap = math.inf if cache_gb is None else cache_gb * GB
    left = [own_cap - used for used in own_used]
    return [0.0 if x < 0.0 else cap if x > cap else x for x in left]


def host_shards(placed: NodePieces, room: list[float] | None, own_tier: MemoryTier,
                serving: HostServing, costs: ShardCosts) -> tuple[list[Shard], dict[int, float]]:
    """The shards of the pieces in node tiers, each with its traffic, served as ``serving`` says
    (:attr:`~dse.model.system.SoftwareSpec.host_tables`): behind a cache in the device's own
    memory (``room`` per device, :func:`cache_room`; shared by the device's pieces of every tier in
    proportion to their bytes), read over the host link without one, or pooled by the CPUs;
    ``auto`` caches where the device has room to spare and pools elsewhere. Returns the shards and
    the cache bytes taken on each device."""
    caches: dict[int, float] = {}
    totals: dict[int, float] = {}
    for _, by_device in placed:
        for dev, group in by_device.items():
            caches[dev] = room[dev] if room else 0.0
            totals[dev] = totals.get(dev, 0.0) + sum(c.footprint for c, _ in group)
    out: list[Shard] = []
    local_unit, row, s_c, zipf = own_tier.access_bytes, costs.row, costs.s_c, costs.wl.access_zipf
    for tier, by_device in placed:
        name, far_unit = tier.name, tier.access_bytes
        for dev, group in by_device.items():
            cache, total = caches[dev], totals[dev]
            access: Access = _access(serving, cache)
            for c, traffic in group:
                hit = 0.0
                if access != "pooled":  # the device gathers: its cache's hits, or none
                    rb, state = row(c.dim)
                    if cache > 0:
                        hit = zipf_hit_rate(cache * (c.footprint / total) / (rb + state), c.rows, zipf)
                    traffic = cached_traffic(c.lookups, rb, state, c.out_rows * c.dim * s_c, hit,
                                             c.touched, local_unit=local_unit, far_unit=far_unit)
                # (From the tuple of its fields, see new_shard: one a piece, hot for host-bound designs.)
                out.append(new_shard((c.table, c.sharding, c.rows, c.dim, c.lookups, c.out_rows, c.footprint,
                                      dev, name, access, traffic, hit, c.partial)))
    return out, caches


_SERVED: dict[str, Access] = {"cache": "cached", "uvm": "direct", "cpu": "pooled"}
"""How each way of serving off-device tables (but ``auto``) serves them."""


def _density(c: Candidate) -> float:
    """Lookups a piece takes per byte it holds (its footprint, at least one byte): the order in
    which pieces claim the faster tiers."""
    return c.lookups / (c.footprint if c.footprint > 1.0 else 1.0)


def _access(serving: HostServing, cache: float) -> Access:
    """How a device with ``cache`` bytes of cache serves its off-device pieces under ``serving``."""
    if serving == "auto":
        return "cached" if cache > 0 else "pooled"
    return _SERVED[serving]
