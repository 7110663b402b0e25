"""Which device serves a table that lives in a node tier (dse.model.placement.partitioning.assign_host):
behind a cache, the one whose misses after taking it are fewest, so tables go where spare memory
can cache them; without one, the least-loaded device."""

from __future__ import annotations

import itertools
import random

import pytest

from dse import evaluate, load_system, load_workload
from dse.model.estimators import Traffic, zipf_hit_rate
from dse.model.placement.candidates import Candidate
from dse.model.placement.costs import ShardCosts
from dse.model.placement.partitioning import CacheShares, _serving_device, assign_host, cache_shares
from dse.model.placement.tiers import place_node_tiers
from dse.model.tiers import memory_tier

GB = 1e9
WL = load_workload("zion-2019")
COSTS = ShardCosts(WL, 8, 16_384.0, 32)  # the planner's row figures of WL (g, batch, unit unused)


def piece(table: int, rows: int = 10_000_000, lookups: float = 100_000.0) -> Candidate:
    row = WL.row_state_bytes(64)
    return Candidate(table, "table_wise", rows, 64, lookups, 16_384.0, rows * row, 0.0, 0.0,
                     True, None, lookups)


def devices_of(result) -> dict[int, list[int]]:  # type: ignore[no-untyped-def]
    return {dev: sorted(c.table for c, _ in group) for dev, group in result.by_device.items()}


def test_a_cached_table_goes_where_memory_can_cache_it() -> None:
    # Device 0 is less loaded but its memory is full; device 1 has 1 GB to spare for the table's
    # 2.6 GB. Least load would send the table to device 0, where every lookup misses; its misses are
    # fewer on device 1, whose cache holds its most popular rows.
    c = piece(0)
    hit = zipf_hit_rate(1 * GB / c.footprint * c.rows, c.rows, WL.access_zipf)
    assert 0.5 < hit < 1.0
    cached = assign_host([c], [0.0, 1e9], 1e15, 1, 2, COSTS, 64, cache_shares([0.0, 1 * GB]))
    assert devices_of(cached) == {1: [0]}
    plain = assign_host([c], [0.0, 1e9], 1e15, 1, 2, COSTS, 64)
    assert devices_of(plain) == {0: [0]}


def test_equal_tables_spread_over_equal_caches() -> None:
    # Eight equal tables (2.6 GB each), four devices with 5 GB to spare each: two each (a device's
    # cache shared by more tables holds less of each, so its misses grow with every table it takes).
    pieces = [piece(t) for t in range(8)]
    got = assign_host(pieces, [0.0] * 4, 1e15, 1, 4, COSTS, 64, cache_shares([5 * GB] * 4))
    assert sorted(len(v) for v in devices_of(got).values()) == [2, 2, 2, 2]


def test_a_zion_cluster_never_trains_slower_than_fewer_nodes() -> None:
    # With the tables spread by their misses, each node added spreads them over more accelerators'
    # memory: one node 0.58 M, two 1.23 M samples/s (2026.12-10), never fewer with more.
    rates = [evaluate(WL, load_system("zion", (("nodes", n),))).throughput_samples_per_s
             for n in (1, 2, 3, 4)]
    assert all(a <= b for a, b in itertools.pairwise(rates))
    assert rates[1] > 1.5 * rates[0]


@pytest.mark.parametrize("zipf", [0.0, 0.6, 1.0, 1.05, 1.3])
def test_the_serving_device_has_the_fewest_misses_by_the_zipf_law(zipf: float) -> None:
    # _serving_device writes the miss share out (a call a device was 8% of a Zion evaluation); its
    # choice must be the device whose misses, by zipf_hit_rate, are fewest, the first of equals (as
    # when caches hold the whole table: no miss), with caches of under one row too (k clamped to 1).
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(1, 8)
        c = piece(0, rows=rng.choice([10, 10_000, 40_000_000]))
        row = c.footprint / c.rows
        sizes = (0.0, rng.uniform(0, 8) * GB, rng.uniform(0, 1) * row, 1e6 * GB)  # none, some, < 1 row, all
        spare = [rng.choice(sizes) for _ in range(n)]
        fp = [rng.choice([0.0, rng.uniform(0, 40) * GB]) for _ in range(n)]
        traffic = [rng.uniform(0, 5e9) for _ in range(n)]
        cost = rng.uniform(1e6, 1e9)
        misses = [(traffic[d] + cost) * (1.0 - zipf_hit_rate(spare[d] / (fp[d] + c.footprint) * c.rows,
                                                              c.rows, zipf)) for d in range(n)]
        state = CacheShares(spare, list(fp), list(traffic))
        got = _serving_device(range(n), c, cost, [0.0] * n, state, zipf)
        assert got == misses.index(min(misses))  # the same figures to the bit, the first of equals
        assert state.footprint[got] == fp[got] + c.footprint and state.traffic[got] == traffic[got] + cost


def devices_of_pieces(by_device: dict[int, list[tuple[Candidate, Traffic]]]) -> dict[int, list[int]]:
    return {dev: sorted(c.table for c, _ in group) for dev, group in by_device.items()}


def test_a_device_cache_is_shared_by_the_pieces_of_every_node_tier() -> None:
    # Two devices with 1 GB each to spare for a cache, two equal tables: the denser in host DDR
    # (room for one), the other in CXL memory. The DDR table takes device 0's cache; the CXL table
    # then finds device 0's cache already shared and goes to device 1, where its hits are more.
    # (Each tier weighing the caches afresh sent both to device 0, whose cache then held half of
    # each.)
    ddr = memory_tier("ddr", "node", 3 * GB / 0.9, 100 * GB)
    cxl = memory_tier("cxl", "node", 100 * GB, 50 * GB)
    dense, sparse = piece(0, lookups=200_000.0), piece(1)
    placed, _, unplaced = place_node_tiers([dense, sparse], (ddr, cxl), (ddr.usable_bytes, cxl.usable_bytes),
                                           [0.0, 0.0], 1, 2, COSTS, [1 * GB, 1 * GB])
    assert not unplaced
    assert [(tier.name, devices_of_pieces(by_device)) for tier, by_device in placed] == \
        [("ddr", {0: [0]}), ("cxl", {1: [1]})]
