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


@dataclass(frozen=True, slots=True)
class PlanMemory:
    """The memory a plan uses and the memory the system has for it."""

    hbm_used_bytes: tuple[float, ...]
    """Per device: tables, cache, dense model, activations."""
    hbm_capacity_bytes: float
    ddr_used_bytes: tuple[float, ...]
    """Per node: host-resident tables."""
    ddr_capacity_bytes: float
    dense_bytes_per_device: float
    activation_bytes_per_device: float
    short_bytes: float = 0.0
    """How many bytes the design lacks to hold the model (0 when it holds it)."""


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
    hbm_groups: int = field(repr=False, compare=False)
    """How many of the first groups are the HBM ones, for :attr:`counts` (-1: not known; then there
    are no counts)."""
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
        hbm_groups: int | None = None,
        group_shards: tuple[Shard, ...] | None = None,
        group_devices: tuple[tuple[int, ...], ...] | None = None,
    ) -> None:
        """A plan of ``shards`` (every piece) or of ``group_shards`` and ``group_devices`` (the
        same, grouped): one of the two. ``hbm_groups``: how many of the first groups are in HBM,
        to count shards per kind and tier from when first asked (:func:`count_groups`; no counts
        without it)."""
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
        setattr_(self, "hbm_groups", -1 if hbm_groups is None else hbm_groups)
        setattr_(self, "_counts", {} if hbm_groups is None else None)

    @property
    def feasible(self) -> bool:
        """Whether the plan holds the model (it has no :attr:`reason` not to)."""
        return not self.reason

    @property
    def counts(self) -> dict[str, int]:
        """Shards per sharding kind and tier (``table_wise``, ``hbm``, ...)."""
        counts = self._counts
        if counts is None:
            counts = count_groups(self.group_shards, self.group_devices, self.hbm_groups)
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
    return (system.nodes, system.accelerators_per_node, system.hbm_bytes, system.ddr_bytes,
            system.scaleup_domain, system.scaleup == "none", system.spec.software,
            system.spec.node.hbm_cache_gb)


def count_groups(shards: Sequence[Shard], devices: Sequence[tuple[int, ...]], n_hbm: int) -> dict[str, int]:
    """Shards per sharding kind and per tier, keys in order of first appearance (a shard's kind
    before its tier), a group (``shards[i]`` on ``devices[i]``) counted at once; the first ``n_hbm``
    groups are the HBM ones (then all in "hbm", which follows the first one's kind)."""
    counts: dict[str, int] = {}
    if n_hbm:
        hbm = devices[:n_hbm]
        counts[shards[0].sharding] = 0
        counts["hbm"] = sum(map(len, hbm))
        # A group of one piece a kind (most are a whole table), then the rest of each larger group.
        counts.update(Counter([s.sharding for s in shards[:n_hbm]]))
        for s, on in itertools.compress(zip(shards[:n_hbm], hbm, strict=True), [len(on) - 1 for on in hbm]):
            counts[s.sharding] += len(on) - 1
    get = counts.get
    rest = zip(shards[n_hbm:], devices[n_hbm:], strict=True)
    for s, on in rest:
        sharding, tier, n = s.sharding, s.tier, len(on)
        counts[sharding] = get(sharding, 0) + n
        counts[tier] = get(tier, 0) + n
    return counts


def with_device(shard: Shard, device: int) -> Shard:
    """A copy of ``shard`` on another device (for tests and what-if tools)."""
    return shard._replace(device=device)
