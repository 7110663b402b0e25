"""The placement's frozen data: a :class:`Shard` per placed piece and the :class:`Plan` of them all,
and :func:`plan_key`, everything of a system that a plan depends on."""

from __future__ import annotations

import functools
import itertools
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from dse.model.estimators import Traffic
from dse.model.system import System
from dse.model.tiers import MemoryTier, TierName

Tier = TierName
"""Where a shard's rows live: the name of a memory tier (:mod:`dse.model.tiers`)."""
Access = Literal["local", "cached", "direct", "pooled"]
"""How a shard's rows are served: from the device's own memory (``local``, its tier is the first);
from a node tier behind a cache in the device's memory, misses read over the host link
(``cached``: TorchRec/FBGEMM's UVM caching); read by the device over the host link with no cache
(``direct``: zero-copy UVM); or gathered and pooled by the host CPUs, pooled vectors crossing the
host link (``pooled``: Zion). :attr:`~dse.model.system.SoftwareSpec.host_tables` chooses."""
Sharding = Literal["table_wise", "row_wise", "column_wise", "grid", "replicated", "hot_rows"]
"""How a shard was cut from its table (a replicated table or its hot rows: a copy per device;
``grid``: a column piece of one row slice of the table, TorchRec's grid sharding, rows split across
scale-up domains and columns within one)."""


class Shard(NamedTuple):
    """One placed piece of a table.

    An immutable named tuple rather than a frozen dataclass: a plan builds one per piece (137 for
    DCNv2 on 16 DGX H100), and a frozen dataclass sets each of its 13 fields through
    ``object.__setattr__``, ~1.3 us a shard against ~0.2 us for a tuple (a sixth of an evaluation).
    Fields, attribute access, equality and repr are those of the dataclass (a Shard also equals the
    plain tuple of its fields); copy one with ``_replace``. Build one by keyword; the placement's
    hot loops alone build them from the tuple of their fields (:data:`new_shard`).
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
    access: Access
    traffic: Traffic
    hit_rate: float = 1.0
    partial_sums: bool = True
    """Row-wise only: the shard emits partial sums for every sample of ``out_rows``, reduced with its
    co-shards. False for a one-hot table, where each sample's single lookup lands on one shard and
    the shard sends just its own rows (``out_rows`` is then its share)."""

    @property
    def where(self) -> str:
        """The key :attr:`Plan.counts` counts this shard under (:func:`placement_key`)."""
        return placement_key(self.tier, self.access)


def placement_key(tier: str, access: str) -> str:
    """How the placement counts name a shard's place (the ``placement`` of ``dse evaluate
    --json``): its tier's name, but ``cache`` behind a cache, ``uvm`` read with no cache and
    ``host`` for host DDR pooled by the CPUs (the names those places had before tiers were data)."""
    if access == "cached":
        return "cache"
    if access == "direct":
        return "uvm"
    return "host" if access == "pooled" and tier == "ddr" else tier


DEVICE = Shard._fields.index("device")
"""Where a Shard's ``device`` sits among its fields: the fields before it and after it are what
equal pieces on several devices share (:func:`shards_grouped`, :func:`expand_groups`)."""

new_shard = functools.partial(tuple.__new__, Shard)
"""A Shard from the tuple of all its fields: skips the named tuple's ``__new__``, a Python function
that costs as much again (a plan builds one Shard per piece)."""


class ShardGroup(NamedTuple):
    """Equal pieces of one table, one a device: the :class:`Shard` of the first (on ``devices[0]``)
    and the devices of all, in plan order.

    A plan keeps the pieces of a split this way (the 80 row pieces of DCNv2's 100-hot table on 16
    DGX H100 are one group), so the passes that read a plan do per group what they would do per
    piece; :attr:`Plan.shards` lists every piece. A replica (device -1) is a group of its own.
    """

    shard: Shard
    devices: tuple[int, ...]


new_group = functools.partial(tuple.__new__, ShardGroup)
"""A ShardGroup from the tuple ``(shard, devices)``, without the named tuple's Python ``__new__``
(as :data:`new_shard`: a plan of a thousand whole tables builds a thousand groups)."""


def shards_grouped(shards: Iterable[Shard]) -> tuple[ShardGroup, ...]:
    """``shards`` as groups: each run of consecutive shards on devices (>= 0) that are equal but for
    their device is one group; a replica (device -1) is always one of its own."""
    out: list[ShardGroup] = []
    for s in shards:
        d = s.device
        if out and d >= 0:
            last, devices = out[-1]
            if last.device >= 0 and s[:DEVICE] == last[:DEVICE] and s[DEVICE + 1:] == last[DEVICE + 1:]:
                out[-1] = new_group((last, (*devices, d)))
                continue
        out.append(new_group((s, (d,))))
    return tuple(out)


def expand_groups(groups: Iterable[tuple[Shard, tuple[int, ...]]]) -> tuple[Shard, ...]:
    """Every piece of ``groups``, one :class:`Shard` a device, in order (as :attr:`Plan.shards`)."""
    out: list[Shard] = []
    for s, devices in groups:
        out.append(s)
        if len(devices) > 1:
            head, tail = s[:DEVICE], s[DEVICE + 1:]
            out += [new_shard((*head, d, *tail)) for d in devices[1:]]
    return tuple(out)


class TierUse(NamedTuple):
    """What a plan keeps in one memory tier (a named tuple: a plan builds one a tier)."""

    tier: MemoryTier
    used_bytes: tuple[float, ...]
    """Per device (the device's own memory: tables, cache, dense model, activations) or per node
    (a node tier: the tables that live there), as the tier's scope."""
    usable_bytes: float
    """Per device or per node: the tier's capacity after its reserve."""

    @property
    def max_used_bytes(self) -> float:
        """Bytes on the fullest device or node (0 when none)."""
        return max(self.used_bytes) if self.used_bytes else 0.0


@dataclass(frozen=True, slots=True)
class PlanMemory:
    """The memory a plan uses and the memory the system has for it, tier by tier."""

    tiers: tuple[TierUse, ...]
    """One a tier of the system, in its order (the device's own memory first)."""
    dense_bytes_per_device: float
    activation_bytes_per_device: float
    short_bytes: float = 0.0
    """How many bytes the design lacks to hold the model (0 when it holds it)."""

    def of(self, name: str) -> TierUse | None:
        """The use of the tier named ``name`` (``hbm``, ``ddr``, ...), None when the system has none."""
        for use in self.tiers:
            if use.tier.name == name:
                return use
        return None

    @property
    def device(self) -> TierUse:
        """The use of the device's own memory (the first tier)."""
        return self.tiers[0]

    @property
    def off_device_bytes(self) -> float:
        """Bytes of tables kept in node tiers, all nodes together."""
        return sum(sum(use.used_bytes) for use in self.tiers[1:])


@dataclass(frozen=True, slots=True, init=False)
class Plan:
    """A placement of every table of a workload on a system.

    Built from its pieces (``shards``) or, as the planner does, from their groups
    (``group_shards=`` and ``group_devices=``, see :class:`ShardGroup`); either way :attr:`shards`
    lists every piece and :attr:`groups` the same pieces grouped (equal plans have equal groups).
    """

    group_shards: tuple[Shard, ...]
    """Each group's shard (see :class:`ShardGroup`). The groups are kept as two tuples, read
    together with ``zip``: a loop unpacks zip's plain pairs faster than a named tuple's (a plan of
    a thousand whole tables has a thousand groups)."""
    group_devices: tuple[tuple[int, ...], ...]
    """Each group's devices."""
    devices: int
    memory: PlanMemory
    reason: str
    """Why the plan does not hold the model ("" when it does: :attr:`feasible`)."""
    replicated_grad_elements: float
    """Elements of replicated tables' gradients that join the dense allreduce."""
    local_groups: int = field(repr=False, compare=False)
    """How many of the first groups are in the device's own memory, for :attr:`counts` (-1: not
    known; then there are no counts)."""
    _counts: dict[str, int] | None = field(init=False, repr=False, compare=False)
    """:attr:`counts`, once asked for (a report reads them; a search never does)."""
    _shards: tuple[Shard, ...] | None = field(init=False, repr=False, compare=False)
    """:attr:`shards`, once asked for (most evaluations never list the pieces one by one)."""

    def __init__(
        self,
        shards: Iterable[Shard] = (),
        *,
        devices: int,
        memory: PlanMemory,
        reason: str = "",
        replicated_grad_elements: float = 0.0,
        local_groups: int | None = None,
        group_shards: tuple[Shard, ...] | None = None,
        group_devices: tuple[tuple[int, ...], ...] | None = None,
    ) -> None:
        """A plan of ``shards`` (every piece) or of ``group_shards`` and ``group_devices`` (the
        same, grouped): one of the two. ``local_groups``: how many of the first groups are in the
        device's own memory, to count shards per kind and place from when first asked
        (:func:`count_groups`; no counts without it)."""
        listed: tuple[Shard, ...] | None = None
        if group_shards is None or group_devices is None:
            if group_shards is not None or group_devices is not None:
                raise ValueError("a Plan takes group_shards and group_devices together")
            listed = tuple(shards)
            pairs = shards_grouped(listed)
            group_shards = tuple(g[0] for g in pairs)
            group_devices = tuple(g[1] for g in pairs)
        elif shards:
            raise ValueError("a Plan takes its pieces as shards or as group_shards and group_devices")
        elif len(group_shards) != len(group_devices):
            raise ValueError("a Plan needs as many group_devices as group_shards")
        setattr_ = object.__setattr__
        setattr_(self, "group_shards", group_shards)
        setattr_(self, "group_devices", group_devices)
        setattr_(self, "_shards", listed)
        setattr_(self, "devices", devices)
        setattr_(self, "memory", memory)
        setattr_(self, "reason", reason)
        setattr_(self, "replicated_grad_elements", replicated_grad_elements)
        setattr_(self, "local_groups", -1 if local_groups is None else local_groups)
        setattr_(self, "_counts", {} if local_groups is None else None)

    @property
    def feasible(self) -> bool:
        """Whether the plan holds the model (it has no :attr:`reason` not to)."""
        return not self.reason

    @property
    def counts(self) -> dict[str, int]:
        """Shards per sharding kind and place (``table_wise``, ``hbm``, ``host``, ``cache``, ...:
        :func:`placement_key`)."""
        counts = self._counts
        if counts is None:
            counts = count_groups(self.group_shards, self.group_devices, self.local_groups)
            object.__setattr__(self, "_counts", counts)
        return counts

    @property
    def groups(self) -> tuple[ShardGroup, ...]:
        """The pieces, equal ones on several devices as one group (see :class:`ShardGroup`)."""
        return tuple(map(ShardGroup, self.group_shards, self.group_devices))

    @property
    def shards(self) -> tuple[Shard, ...]:
        """Every placed piece, one :class:`Shard` a piece (a group's pieces one a device, in
        order)."""
        listed = self._shards
        if listed is None:
            listed = expand_groups(zip(self.group_shards, self.group_devices, strict=True))
            object.__setattr__(self, "_shards", listed)
        return listed


def plan_key(system: System) -> tuple[object, ...]:
    """Everything :func:`~dse.model.placement.plan_placement` reads from ``system``: designs with
    equal keys (for one workload) get the same plan. Bandwidths are absent by design (see
    :class:`~dse.model.placement.costs.ShardCosts`), so a sweep over link speeds places each workload
    once per key."""
    return (system.nodes, system.accelerators_per_node, system.tier_layout, system.scaleup_domain,
            system.scaleup == "none", system.spec.software, system.spec.node.hbm_cache_gb)


def count_groups(shards: Sequence[Shard], devices: Sequence[tuple[int, ...]], n_local: int) -> dict[str, int]:
    """Shards per sharding kind and per place (:func:`placement_key`), keys in order of first
    appearance (a shard's kind before its place), a group (``shards[i]`` on ``devices[i]``) counted
    at once; the first ``n_local`` groups are in the device's own memory (then all under its tier's
    name, which follows the first one's kind)."""
    counts: dict[str, int] = {}
    if n_local:
        local = devices[:n_local]
        counts[shards[0].sharding] = 0
        counts[shards[0].tier] = sum(map(len, local))
        # A group of one piece a kind (most are a whole table), then the rest of each larger group.
        counts.update(Counter([s.sharding for s in shards[:n_local]]))
        larger = [len(on) - 1 for on in local]
        for s, on in itertools.compress(zip(shards[:n_local], local, strict=True), larger):
            counts[s.sharding] += len(on) - 1
    get = counts.get
    rest = zip(shards[n_local:], devices[n_local:], strict=True)
    for s, on in rest:
        sharding, where, n = s.sharding, placement_key(s.tier, s.access), len(on)
        counts[sharding] = get(sharding, 0) + n
        counts[where] = get(where, 0) + n
    return counts


def with_device(shard: Shard, device: int) -> Shard:
    """A copy of ``shard`` on another device (for tests and what-if tools)."""
    return shard._replace(device=device)
