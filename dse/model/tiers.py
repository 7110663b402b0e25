"""Memory tiers as data: where embedding rows can live, each a value the placement cascades over.

A node lists its tiers fastest first (:attr:`dse.model.system.System.tiers`). The first is the
training device's own memory (an accelerator's HBM; a node without accelerators trains on its CPU
sockets, whose own memory is the node's DDR); the rest are pools of the node that the device reaches
over its host link (host DDR, CXL-attached memory), filled in order once the tiers before them are
full. What a kind of memory is (its access unit, its reserve, which calibration efficiency scales
its bandwidth, who gathers its rows, its words) is written once, in :data:`TIER_KINDS`; a tier adds
the figures of one design (capacity and bandwidth, per device or per node). Adding a kind of memory
is one row there, one field of the system file that sizes it, and its catalog part
(docs/design.md, section 4, "Memory tiers").

The placement reads each tier's kind, capacity and access unit (:attr:`MemoryTier.usable_bytes`,
:attr:`MemoryTier.access_bytes`), never its bandwidth; the timing reads the bandwidths and
efficiencies (:func:`dse.model.timing.embedding_seconds`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

TierName = Literal["hbm", "ddr", "cxl"]
"""The kinds of memory a row can live in (keys of :data:`TIER_KINDS`)."""
Scope = Literal["device", "node"]
"""Whether a tier's capacity and bandwidth are per training device (its own memory) or per node (a
pool the node's devices share, reached over their host links)."""
Pooler = Literal["device", "cpu"]
"""Who gathers and pools a tier's rows when no cache stands in front of it: the training device
itself, or the host CPUs (which then ship pooled vectors over the host link: Zion's design)."""

HBM_SECTOR_BYTES = 32
"""GPU DRAM access granularity: 32-byte sectors (NVIDIA CUDA C++ Best Practices Guide, "Coalesced
Access to Global Memory")."""
HOST_LINE_BYTES = 64
"""x86 cache line: the unit a CPU gathers from DDR, and from CXL.mem, whose transactions move 64 B
lines (Intel/AMD optimisation manuals; CXL 2.0 specification, section 3.3)."""
HBM_RESERVE_FRACTION = 0.10
"""HBM kept free for the CUDA context, library workspaces and allocator fragmentation [A: PyTorch's
caching allocator typically leaves 5-15% unusable]."""
HOST_RESERVE_FRACTION = 0.10
"""Host DDR kept for the OS, the data pipeline and pinned buffers [A]."""
CXL_RESERVE_FRACTION = 0.0
"""CXL memory kept from the tables: none of what host DDR's reserve is for lives there [A: Linux
onlines CXL Type 3 memory as a CPU-less NUMA node, usually ZONE_MOVABLE, which holds user pages
only (kernel documentation, admin-guide/mm/memory-hotplug)]."""


@dataclass(frozen=True, slots=True)
class TierKind:
    """What one kind of memory is, whatever its size in a design."""

    name: TierName
    label: str
    """How a sentence names it ("HBM", "host DDR")."""
    access_bytes: int
    """Smallest unit a read or write of it moves (bytes): rows are rounded up to it."""
    reserve_fraction: float
    """Share of its capacity kept from the tables (runtime, OS, allocator)."""
    efficiency: str
    """The :class:`~dse.model.parameters.Calibration` field that scales its peak bandwidth
    for embedding traffic (and, for a device's own memory, for element-wise work)."""
    pooled_by: Pooler
    """Who gathers its rows without a cache in front (a node pool: the CPUs)."""


TIER_KINDS: dict[TierName, TierKind] = {
    kind.name: kind for kind in (
        TierKind("hbm", "HBM", HBM_SECTOR_BYTES, HBM_RESERVE_FRACTION, "memory_efficiency", "device"),
        TierKind("ddr", "host DDR", HOST_LINE_BYTES, HOST_RESERVE_FRACTION, "host_efficiency", "cpu"),
        TierKind("cxl", "CXL memory", HOST_LINE_BYTES, CXL_RESERVE_FRACTION, "cxl_efficiency", "cpu"),
    )
}
"""Every kind of memory, written once: the tiers, the placement counts and the outputs derive from
it."""


@dataclass(frozen=True, slots=True)
class MemoryTier:
    """One tier of one design: a kind of memory with its capacity and bandwidth (build one with
    :func:`memory_tier`, which derives the kind's figures; they are fields, not properties, as the
    placement and timing read them for every design).

    ``scope = "device"``: per training device, its own memory (the first tier). ``"node"``: per
    node, a pool its devices reach over their host links (bounded by
    :attr:`~dse.model.system.System.pcie_bytes_s`) and share.
    """

    name: TierName
    """The kind's name (``hbm``, ``ddr``)."""
    kind: TierKind
    scope: Scope
    capacity_bytes: float
    """Bytes per device or per node (``scope``), before the reserve."""
    usable_bytes: float
    """Bytes per device or node left for the model after the kind's reserve."""
    bytes_s: float
    """Peak bandwidth per device or per node (bytes/s)."""
    access_bytes: int
    """Smallest unit moved (bytes): the kind's (:attr:`TierKind.access_bytes`), except a CPU
    device's own DDR, which keeps the 32 B sector the CPU class was fitted with when its DDR stood
    in for HBM (:func:`dse.model.system.resolve_system`)."""


def memory_tier(name: TierName, scope: Scope, capacity_bytes: float, bytes_s: float,
                access_bytes: int | None = None) -> MemoryTier:
    """A tier of kind ``name`` (:data:`TIER_KINDS`), at the kind's access unit unless given."""
    kind = TIER_KINDS[name]
    return MemoryTier(name, kind, scope, capacity_bytes, capacity_bytes * (1.0 - kind.reserve_fraction),
                      bytes_s, kind.access_bytes if access_bytes is None else access_bytes)
