"""The placement's frozen data: a :class:`Shard` per placed piece and the :class:`Plan` of them all,
and :func:`plan_key`, everything of a system that a plan depends on."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from dse.model.estimators import Traffic
from dse.model.system import System

Tier = Literal["hbm", "host", "cache"]
"""Where a shard's rows live: accelerator HBM, host DDR, or host DDR behind an HBM cache."""
Sharding = Literal["table_wise", "row_wise", "column_wise", "grid", "replicated", "hot_rows"]
"""How a shard was cut from its table (a replicated table or its hot rows: a copy per device;
``grid``: a column piece of one row slice of the table, TorchRec's grid sharding, rows split across
scale-up domains and columns within one)."""


class Shard(NamedTuple):
    """One placed piece of a table.

    An immutable named tuple rather than a frozen dataclass: a plan builds one per piece (137 for
    DCNv2 on 16 DGX H100), and a frozen dataclass sets each of its 12 fields through
    ``object.__setattr__``, ~1.3 us a shard against ~0.2 us for a tuple (a sixth of an evaluation).
    Fields, attribute access, equality and repr are those of the dataclass (a Shard also equals the
    plain tuple of its fields); copy one with ``_replace``.
    """

    table: int
    sharding: Sharding
    rows: int
    dim: int
    lookups: float
    """Rows this shard gathers per step (forward)."""
    out_rows: float
    """Pooled output rows this shard produces per step (global batch, or local for replicas)."""
    footprint_bytes: float
    device: int
    """Owning device; -1 for a replicated table or hot rows (a copy on every device)."""
    tier: Tier
    traffic: Traffic
    hit_rate: float = 1.0
    partial_sums: bool = True
    """Row-wise only: the shard emits partial sums for every sample of ``out_rows``, reduced with its
    co-shards. False for a one-hot table, where each sample's single lookup lands on one shard and
    the shard sends just its own rows (``out_rows`` is then its share)."""


new_shard = functools.partial(tuple.__new__, Shard)
"""A Shard from the tuple of all its fields: skips the named tuple's ``__new__``, a Python function
that costs as much again (a plan builds one Shard per piece)."""
new_traffic = functools.partial(tuple.__new__, Traffic)
"""A Traffic from the tuple of all its fields (as :data:`new_shard`)."""


@dataclass(frozen=True, slots=True)
class Plan:
    """A placement of every table of a workload on a system."""

    shards: tuple[Shard, ...]
    devices: int
    hbm_used_bytes: tuple[float, ...]
    """Per device: tables, cache, dense model, activations."""
    hbm_capacity_bytes: float
    ddr_used_bytes: tuple[float, ...]
    """Per node: host-resident tables."""
    ddr_capacity_bytes: float
    dense_bytes_per_device: float
    activation_bytes_per_device: float
    feasible: bool
    reason: str = ""
    memory_short_bytes: float = 0.0
    """How many bytes the design lacks to hold the model (0 when feasible)."""
    replicated_grad_elements: float = 0.0
    """Elements of replicated tables' gradients that join the dense allreduce."""
    counts: dict[str, int] = field(default_factory=dict)
    """Shards per sharding kind and tier (``table_wise``, ``hbm``, ...)."""


def plan_key(system: System) -> tuple[object, ...]:
    """Everything :func:`~dse.model.placement.plan_placement` reads from ``system``: designs with
    equal keys (for one workload) get the same plan. Bandwidths are absent by design (see
    :class:`~dse.model.placement.costs.ShardCosts`), so a sweep over link speeds places each workload
    once per key."""
    return (system.nodes, system.accelerators_per_node, system.hbm_bytes, system.ddr_bytes,
            system.scaleup_domain, system.scaleup == "none", system.spec.software,
            system.spec.node.hbm_cache_gb)


def count_shards(shards: Sequence[Shard], n_hbm: int) -> dict[str, int]:
    """Shards per sharding kind and per tier, keys in order of first appearance (a shard's kind
    before its tier); the first ``n_hbm`` shards are the HBM ones (then all in "hbm", which follows
    the first one's kind)."""
    counts: dict[str, int] = {}
    if n_hbm:
        counts[shards[0].sharding] = 0
        counts["hbm"] = n_hbm
        # A list comprehension, not map(attrgetter): Python 3.11 reads a named tuple's field
        # inline in a loop, while attrgetter goes through its descriptor (~1.3x slower).
        counts.update(Counter([s.sharding for s in shards[:n_hbm]]))
    for s in shards[n_hbm:]:
        counts[s.sharding] = counts.get(s.sharding, 0) + 1
        counts[s.tier] = counts.get(s.tier, 0) + 1
    return counts


def with_device(shard: Shard, device: int) -> Shard:
    """A copy of ``shard`` on another device (for tests and what-if tools)."""
    return shard._replace(device=device)
