"""Placement: which embedding shard lives on which accelerator, in which memory tier.

The planner follows TorchRec's split into enumerator, estimator, proposer and partitioner, as plain
functions over frozen data, one module a pass (docs/design.md, section 5, "Placement"):

- :mod:`~dse.model.placement.budgets`: what each device can hold, after reserves, the dense model
  and activations;
- :mod:`~dse.model.placement.candidates` (enumerator): a small table whose gradient allreduce moves
  fewer bytes than its all-to-all is replicated; with hot-embedding replication (HugeCTR's hybrid
  embedding, on by default), each table's most popular rows are replicated when that saves more
  all-to-all bytes than their gradient allreduce adds (:func:`hot_rows`);
- :mod:`~dse.model.placement.costs` (estimator): each piece's HBM bytes and all-to-all bytes per
  step, never its bandwidths;
- :mod:`~dse.model.placement.sharding`: a table larger than half a device's free HBM is split
  column-wise when its dim allows chunks of at least ``MIN_COLUMN_DIM``, otherwise row-wise; a table
  whose load alone exceeds the ideal per-device load is split to balance, across scale-up domains
  when one domain cannot take its load (row pieces in several domains, or grid pieces: row slices
  across domains, cut column-wise within one);
- :mod:`~dse.model.placement.tiers` (proposer): a cascade over the system's memory tiers
  (:mod:`dse.model.tiers`): pieces are ranked by traffic per byte; the hottest fill the devices' own
  memory (HBM), the rest the node tiers in order (host DDR, ...), where leftover device memory
  serves as a cache with a Zipf hit rate;
- :mod:`~dse.model.placement.partitioning`: pieces are assigned largest load first to the
  least-loaded device that has room (LPT), those of a node tier to the least-loaded node first.

One :class:`Plan` passes to the timing model.
"""

from __future__ import annotations

from dse.model.placement.budgets import (
    HBM_RESERVE_FRACTION,
    HOST_RESERVE_FRACTION,
    activation_bytes_per_device,
    dense_bytes_per_device,
    device_budgets,
    shortfall,
)
from dse.model.placement.candidates import enumerate_candidates, hot_rows
from dse.model.placement.costs import ShardCosts
from dse.model.placement.partitioning import balanced_assign, lpt_assign, place_hbm
from dse.model.placement.plan import (
    Access,
    Plan,
    PlanMemory,
    Shard,
    ShardGroup,
    Sharding,
    Tier,
    TierUse,
    placement_key,
    plan_key,
    shards_grouped,
    with_device,
)
from dse.model.placement.sharding import shard_tables
from dse.model.placement.tiers import cache_room, choose_tiers, host_shards, place_node_tiers
from dse.model.system import System
from dse.model.workload import Workload

__all__ = [
    "HBM_RESERVE_FRACTION",
    "HOST_RESERVE_FRACTION",
    "Access",
    "Plan",
    "PlanMemory",
    "Shard",
    "ShardGroup",
    "Sharding",
    "Tier",
    "TierUse",
    "activation_bytes_per_device",
    "balanced_assign",
    "dense_bytes_per_device",
    "hot_rows",
    "lpt_assign",
    "placement_key",
    "plan_key",
    "plan_placement",
    "with_device",
]


def plan_placement(workload: Workload, system: System) -> Plan:
    """Shard and place every table of ``workload`` on ``system``: budget each device, enumerate each
    table's option (replicas, hot rows, whole table), shard the whole tables for capacity and load,
    choose their tiers, then partition the pieces in the devices' own memory over devices and the
    others over the nodes of each node tier.

    The plan depends on capacities, counts and the workload, never on bandwidths (see
    :class:`~dse.model.placement.costs.ShardCosts`).
    """
    budgets = device_budgets(workload, system)
    own = budgets.tiers[0]
    costs = ShardCosts(workload, budgets.devices, budgets.local_batch, own.access_bytes)
    options = enumerate_candidates(workload, system, budgets, costs)
    pieces = shard_tables(options.whole, options.tables, budgets.devices, budgets.domain,
                          budgets.shard_bytes, system.spec.software.split_tables_to_balance, costs,
                          budgets.global_batch)
    replicas = options.replicas
    replica_bytes = sum(s.footprint_bytes for s in replicas)
    device_cap = budgets.device_table_bytes(replica_bytes)
    local_set, off_device = choose_tiers(pieces, device_cap * budgets.table_devices(),
                                         system.spec.software.host_table_order)

    local = place_hbm(local_set, budgets, device_cap, replica_bytes, costs)
    own_used = local.hbm_used_bytes
    off_device = off_device + local.unplaced
    room = cache_room(own_used, budgets.device_capacity_bytes, system.spec.node.hbm_cache_gb,
                      system.spec.software.host_tables) if off_device else None
    off_device_pieces, node_used, unplaced = place_node_tiers(
        off_device, budgets.tiers[1:], budgets.node_capacity_bytes, list(local.loads),
        system.nodes, system.accelerators_per_node, costs, room)
    off_shards, caches = host_shards(off_device_pieces, room, own, system.spec.software.host_tables, costs)
    for dev, cache in caches.items():
        own_used[dev] += cache

    # Equal pieces stay one group each (see ShardGroup); a replica is on every device (-1).
    off_groups = shards_grouped(off_shards)
    shards = (*local.shards, *[s for s, _ in off_groups], *replicas)
    devices = (*local.devices, *[on for _, on in off_groups], *[(-1,)] * len(replicas))
    short, reason = shortfall(budgets, workload, system.nodes, replica_bytes,
                              sum([c.footprint for c in unplaced], 0.0))
    uses = (TierUse(own, tuple(own_used), budgets.device_capacity_bytes),
            *[TierUse(tier, used, cap) for tier, used, cap
              in zip(budgets.tiers[1:], node_used, budgets.node_capacity_bytes, strict=True)])
    return Plan(
        group_shards=shards,
        group_devices=devices,
        devices=budgets.devices,
        memory=PlanMemory(
            tiers=uses,
            dense_bytes_per_device=budgets.dense_bytes,
            activation_bytes_per_device=budgets.activation_bytes,
            short_bytes=short,
        ),
        reason=reason,
        replicated_grad_elements=float(sum(s.rows * s.dim for s in replicas)),
        local_groups=len(local.shards),  # (counted when first asked: Plan.counts)
    )
