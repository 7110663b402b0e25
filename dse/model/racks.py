"""Rack-scale systems: nodes bought, powered and counted by the rack (docs/design.md, section 6).

An NVL72-class system is sold as whole racks (GB200 NVL72: 18 compute trays, 9 NVLink switch
trays) or as the fractions of one a vendor sells (NVL36: half a rack), each unit occupying one
rack. :class:`~dse.model.system.RackSpec` states the rack; these pure functions count the racks a
node count makes, or say why it makes none.

>>> from dse.model.system import load_system
>>> racks_of(load_system("gb200-nvl72", (("nodes", 36),)).spec)
2
>>> racks_of(load_system("gb200-nvl72", (("nodes", 5),)).spec) is None
True
"""

from __future__ import annotations

from dse.model.system import SystemSpec


def rack_sizes(spec: SystemSpec) -> tuple[int, ...]:
    """Nodes in each unit a vendor sells, smallest first (``()`` when nodes are bought singly)."""
    rack = spec.rack
    if rack.nodes == 0:
        return ()
    return tuple(sorted({round(share * rack.nodes) for share in rack.fractions}))


def racks_of(spec: SystemSpec) -> int | None:
    """Racks ``spec.nodes`` fills: as many of the largest unit as fit, plus one smaller unit for the
    rest; ``None`` when the rest is no unit a vendor sells; 0 for a system bought node by node."""
    if rack_sizes(spec) and nearest_whole(spec) != spec.nodes:
        return None
    return rack_count(spec)


def rack_count(spec: SystemSpec) -> int:
    """Racks priced and powered for ``spec``: those of :func:`racks_of`, a node count that is not
    whole racks rounded up to the next one a vendor sells (that design is infeasible:
    :func:`dse.model.rules.check_whole_racks`); 0 for a system bought node by node."""
    sizes = rack_sizes(spec)
    if not sizes:
        return 0
    whole, rest = divmod(nearest_whole(spec), sizes[-1])
    return whole + (rest > 0)


def nearest_whole(spec: SystemSpec) -> int:
    """The smallest node count of whole units (see :func:`racks_of`) at or above ``spec.nodes``."""
    sizes = rack_sizes(spec)
    whole, rest = divmod(spec.nodes, sizes[-1])
    if rest == 0:
        return spec.nodes
    return whole * sizes[-1] + min((s for s in sizes if s >= rest), default=sizes[-1])


def rack_phrase(racks: int, nodes: int) -> str:
    """A rack-scale design's size in words: ``2 racks (36 trays)``."""
    return f"{racks} rack{'s' if racks != 1 else ''} ({nodes} tray{'s' if nodes != 1 else ''})"
