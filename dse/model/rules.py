"""Buildability rules: whether a design is a machine someone could have built (docs/design.md, section 4).

Each rule is a pure function of a resolved :class:`~dse.model.system.System` and the
:class:`~dse.model.catalog.Catalog`, returning a :class:`RuleCheck`: the rule's name, a violation
(0 when the design keeps the rule, > 0 when it breaks it, relative to the limit so a sampler can
tell "slightly over" from "far over") and a one-line message naming the numbers. The search layer
turns every rule into a named constraint (``rule:<name>``), so samplers learn from it and no front
holds a design that breaks one; :func:`dse.model.evaluate.evaluate` adds the messages to the design's
infeasible reasons.

The rules read link counts and limits, never the model's step loads: the placement stays
bandwidth-blind and a rule never changes a feasible design's score.

>>> from dse.model.system import load_system
>>> [c.name for c in check_rules(load_system("dgx-h100")) if c.broken]
[]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from dse.model.catalog import Accelerator, Catalog, Topology, load_catalog
from dse.model.racks import nearest_whole, rack_sizes, racks_of
from dse.model.system import GB, System, gbit_s_to_bytes_s

LANES_PER_DEVICE = 16
"""PCIe lanes one NIC card or PCIe switch uplink takes ([A] ConnectX cards and switch uplinks are x16)."""
HCM_SIZES = (2, 4, 8)
"""Accelerator counts a hybrid cube mesh comes in: the 8-module board (DGX-1, Zion's OAM baseboard),
one fully connected quad of it, or a linked pair ([D] DGX-1 topology, NVIDIA DGX-1 whitepaper)."""
HCM_PEERS = 4
"""Direct peers of each module in the 8-module hybrid cube mesh: 3 in its quad, 1 in the other
([D] DGX-1 whitepaper)."""
TOLERANCE = 1e-9
"""Relative slack below which a limit counts as met (catalog figures are decimals)."""


@dataclass(frozen=True, slots=True)
class RuleCheck:
    """The verdict of one rule on one design."""

    name: str
    violation: float
    """0 when the rule holds; > 0 when broken (relative excess over the limit)."""
    message: str = ""
    """Why the rule is broken, with the numbers (empty when it holds)."""

    @property
    def broken(self) -> bool:
        """Whether the design breaks this rule."""
        return self.violation > 0


def _check(name: str, excess: float, message: str) -> RuleCheck:
    """A check that is broken when ``excess`` (relative) exceeds the tolerance."""
    if excess > TOLERANCE:
        return RuleCheck(name, float(excess), message)
    return RuleCheck(name, 0.0)


def fabric_capacity_gb_s(acc: Accelerator, topology: Topology, n: int) -> tuple[float, str]:
    """Scale-up bandwidth per accelerator per direction (GB/s) that ``acc``'s links give in a
    ``topology`` of ``n`` accelerators, or 0 and why that arrangement cannot be built.

    Full mesh: the links split evenly among the n-1 peers (the thinnest pair bounds an all-to-all).
    Hybrid cube mesh: the 8-module board or a documented part of it (``HCM_SIZES``). Ring: the links
    split between the two neighbours. Switch: every link to the switch planes, within the switch's
    domain (``Accelerator.switch_domain_max``).
    """
    links, per_link = acc.scaleup_links, acc.scaleup_link_gb_s
    if links == 0:
        return 0.0, f"{acc.name} has no scale-up links"
    if topology == "fully_connected" or (topology == "hybrid_cube_mesh" and n == 4):
        peers = n - 1
        if peers > links:
            return 0.0, f"a full mesh of {n} needs {peers} links per accelerator; {acc.name} has {links}"
        return peers * (links // peers) * per_link, ""
    if topology == "hybrid_cube_mesh":
        if n not in HCM_SIZES:
            return 0.0, (f"a hybrid cube mesh joins 8 accelerators (or a quad of 4, or a pair); "
                         f"not {n}")
        if n == 8 and links < HCM_PEERS:
            return 0.0, (f"a hybrid cube mesh of 8 needs {HCM_PEERS} links per accelerator; "
                         f"{acc.name} has {links}")
        return links * per_link, ""
    if topology == "ring":
        if n == 2:
            return links * per_link, ""
        if links < 2:
            return 0.0, f"a ring needs 2 links per accelerator; {acc.name} has {links}"
        return 2 * (links // 2) * per_link, ""
    if topology == "switch":
        if acc.switch_domain_max == 0:
            return 0.0, f"no scale-up switch exists for {acc.name}"
        if n > acc.switch_domain_max:
            return 0.0, (f"a switched fabric of {acc.name} joins at most {acc.switch_domain_max} "
                         f"accelerators; the design has {n}")
        return links * per_link, ""
    return math.inf, ""  # "none": no fabric, nothing to bound


def check_fabric(system: System, catalog: Catalog) -> tuple[RuleCheck, RuleCheck]:
    """``fabric_arrangement`` (the topology can join this many accelerators with the part's links)
    and ``fabric_bandwidth`` (the stated per-accelerator bandwidth is within what the links give)."""
    del catalog  # the link budget lives on the accelerator
    n, acc = system.scaleup_domain, system.accelerator
    ok = (RuleCheck("fabric_arrangement", 0.0), RuleCheck("fabric_bandwidth", 0.0))
    if system.scaleup == "none" or n < 2:
        return ok  # no fabric, or no peer to reach over it
    capacity, why = fabric_capacity_gb_s(acc, system.scaleup, n)
    if why:
        excess = 1.0
        if acc.switch_domain_max and system.scaleup == "switch":
            excess = n / acc.switch_domain_max - 1
        elif acc.scaleup_links and system.scaleup == "fully_connected":
            excess = (n - 1) / acc.scaleup_links - 1
        return _check("fabric_arrangement", max(excess, 1e-6), why), ok[1]
    stated = system.scaleup_bytes_s / GB
    return ok[0], _check(
        "fabric_bandwidth", stated / capacity - 1,
        f"{system.scaleup} of {n} x {acc.name}: {stated:.6g} GB/s per accelerator stated, the "
        f"{acc.scaleup_links} links x {acc.scaleup_link_gb_s:.6g} GB/s give {capacity:.6g}")


def _behind_switches(system: System) -> bool:
    """Accelerators reach the CPUs through PCIe switches: they share upstream links
    (``node.pcie_switch_share`` > 1), or their links run at another generation than the CPU side's
    (a switch per accelerator, as ConnectX-8's in HGX B300)."""
    return system.spec.node.pcie_switch_share > 1 or system.cpu_pcie_gen != system.pcie_gen


def check_pcie_generation(system: System, catalog: Catalog) -> RuleCheck:
    """``pcie_generation``: the host link's PCIe generation is one the accelerator supports and, for
    an accelerator on the CPU's root ports, the CPU too. Behind a PCIe switch the accelerator's
    link runs at the switch's generation (ZionEX: Gen4 switches joining A100s and NICs under Gen3
    hosts); a superchip's host link is not PCIe (GB200: NVLink-C2C, see the catalog). A stated
    ``node.cpu_pcie_gen`` (the switch uplinks) is at most the CPU's generation; unstated behind
    switches, the uplinks are not checked (the ZionEX preset's Gen4 switches under Gen3 hosts)."""
    del catalog
    acc, cpu, gen = system.accelerator, system.cpu, system.pcie_gen
    limit, by = acc.pcie_gen, acc.name
    superchip = acc.form_factor == "superchip"
    if not _behind_switches(system) and not superchip and cpu.pcie_gen < limit:
        limit, by = cpu.pcie_gen, cpu.name
    link = _check("pcie_generation", (gen - limit) / limit,
                  f"PCIe Gen{gen} host links, but {by} supports at most Gen{limit}")
    up = system.cpu_pcie_gen
    up_excess = (up - cpu.pcie_gen) / cpu.pcie_gen
    if system.spec.node.cpu_pcie_gen is None or superchip or link.violation >= up_excess:
        return link
    return _check("pcie_generation", up_excess,
                  f"PCIe Gen{up} links into the CPUs, but {cpu.name} supports at most Gen{cpu.pcie_gen}")


def pcie_lanes_needed(system: System, catalog: Catalog) -> int:
    """CPU root-port lanes a node needs: accelerators on root ports take their host-link width,
    NIC cards x16 each, and devices behind PCIe switches one x16 uplink per switch (a switch of the
    node's generation has ``switch_lanes / 16 - 1`` downstream x16 ports; a switch per accelerator,
    as ConnectX-8's, one uplink each). Front-end NICs are not counted ([A] they sit on the board's
    OCP or LOM slot)."""
    node = system.spec.node
    a = node.accelerators  # 0 on a node without accelerators (its one device is its CPUs)
    behind = 0
    root = 0
    if _behind_switches(system):
        behind += a
    else:
        root += a * system.accelerator.host_pcie_lanes
    if node.nics and not system.on_die_nics:
        if node.nic_attach == "accelerator" and _behind_switches(system):
            behind += node.nics
        else:
            root += node.nics * LANES_PER_DEVICE
    ports = catalog.pcie_gen(system.pcie_gen).switch_lanes // LANES_PER_DEVICE - 1
    switches = math.ceil(behind / ports)
    if behind and node.pcie_switch_share == 1:
        switches = max(switches, a)  # behind switches unshared: each accelerator has its own uplink
    root += switches * LANES_PER_DEVICE
    if node.cxl_modules:  # CXL memory expanders sit on root ports (CXL has no switch before 2.0 pooling)
        root += node.cxl_modules * catalog.cxl_named(node.cxl_memory).lanes
    return root


def check_pcie_lanes(system: System, catalog: Catalog) -> RuleCheck:
    """``pcie_lanes``: accelerators, NICs and PCIe switch uplinks fit the CPUs' lanes."""
    need = pcie_lanes_needed(system, catalog)
    node = system.spec.node
    have = node.cpu_sockets * system.cpu.pcie_lanes
    cxl = f", {node.cxl_modules} CXL modules" if node.cxl_modules else ""
    return _check("pcie_lanes", need / have - 1,
                  f"{node.accelerators} accelerators and {node.nics} NICs{cxl} need {need} "
                  f"PCIe lanes; {node.cpu_sockets} x {system.cpu.name} have {have}")


_NO_CXL = RuleCheck("cxl_memory", 0.0)
"""The verdict on a node without CXL memory (one record, built once)."""


def check_cxl_memory(system: System, catalog: Catalog) -> RuleCheck:
    """``cxl_memory``: the node's CXL memory expanders are ones its CPUs carry: CXL.mem ports
    (``Cpu.cxl_lanes`` a socket) wide enough for every module's link, at the module's PCIe
    generation."""
    node = system.spec.node
    if not node.cxl_modules:
        return _NO_CXL
    part, cpu = catalog.cxl_named(node.cxl_memory), system.cpu
    have = node.cpu_sockets * cpu.cxl_lanes
    if not have or cpu.pcie_gen < part.pcie_gen:
        why = ("no CXL memory ports" if not have else
               f"PCIe Gen{cpu.pcie_gen} (the module needs Gen{part.pcie_gen})")
        return _check("cxl_memory", 1.0, f"{cpu.name} has {why}: {part.name} cannot attach")
    need = node.cxl_modules * part.lanes
    return _check("cxl_memory", need / have - 1,
                  f"{node.cxl_modules} x {part.name} need {need} CXL lanes; {node.cpu_sockets} x "
                  f"{cpu.name} have {have}")


def check_nic_link(system: System, catalog: Catalog) -> RuleCheck:
    """``nic_link``: each NIC's line rate fits its x16 PCIe link at the generation it runs at
    (:func:`~dse.model.system.nic_link_generation`), or, for on-die ports, the ports exist at that
    speed."""
    node = system.spec.node
    if node.nics == 0:
        return RuleCheck("nic_link", 0.0)
    acc = system.accelerator
    if system.on_die_nics:
        ports = acc.nic_ports * system.accelerators_per_node
        excess = max(node.nics / ports, node.nic_gbit_s / acc.nic_port_gbit_s) - 1
        return _check("nic_link", excess,
                      f"{node.nics} NICs at {node.nic_gbit_s:.6g} Gb/s on {acc.name}'s on-die ports: "
                      f"{ports} ports of {acc.nic_port_gbit_s:.6g} Gb/s")
    gen = system.nic_link_gen
    link = catalog.pcie_gen(gen).x16_gb_s
    need = gbit_s_to_bytes_s(node.nic_gbit_s) / GB
    return _check("nic_link", need / link - 1,
                  f"a {node.nic_gbit_s:.6g} Gb/s NIC moves {need:.6g} GB/s; its PCIe Gen{gen} x16 "
                  f"link carries {link:.6g}")


def ddr_limit_gb(system: System, catalog: Catalog) -> float:
    """Most host DDR a node holds (GB): sockets x the CPU's channels x DIMMs per channel x the
    largest DIMM of its DDR generation. The CPU's physical channels count, not
    ``node.ddr_channels_per_socket`` (which states the channels' effective bandwidth)."""
    cpu = system.cpu
    return (system.spec.node.cpu_sockets * cpu.ddr_channels * cpu.dimms_per_channel
            * catalog.ddr[cpu.ddr].max_dimm_gb)


def check_ddr_capacity(system: System, catalog: Catalog) -> RuleCheck:
    """``ddr_capacity``: host DDR within the DIMM slots of the node's sockets."""
    limit = ddr_limit_gb(system, catalog)
    ddr = system.spec.node.ddr_gb
    cpu = system.cpu
    return _check("ddr_capacity", ddr / limit - 1,
                  f"{ddr:.6g} GB of DDR, but {system.spec.node.cpu_sockets} x {cpu.name} hold at most "
                  f"{limit:.6g} GB ({cpu.ddr_channels} channels x {cpu.dimms_per_channel} DIMMs x "
                  f"{catalog.ddr[cpu.ddr].max_dimm_gb:.6g} GB per socket)")


def what_if_parts(system: System) -> tuple[str, ...]:
    """What-if parts in a design: an HBM capacity or bandwidth the accelerator is not sold with."""
    acc, node = system.accelerator, system.spec.node
    out = []
    hbm = system.hbm_bytes / GB
    if not any(abs(hbm - o) <= TOLERANCE * o for o in acc.offered_hbm_gb()):
        offers = ", ".join(f"{o:.6g}" for o in acc.offered_hbm_gb())
        out.append(f"{hbm:.6g} GB HBM per {acc.name} (offered: {offers} GB)")
    if node.hbm_gb_s is not None and abs(node.hbm_gb_s - acc.hbm_gb_s) > TOLERANCE * acc.hbm_gb_s:
        out.append(f"{node.hbm_gb_s:.6g} GB/s HBM on {acc.name} (offered: {acc.hbm_gb_s:.6g} GB/s)")
    return tuple(out)


def check_hbm(system: System, catalog: Catalog) -> RuleCheck:
    """``hbm_capacity``: HBM capacity and bandwidth are ones the accelerator is offered with,
    unless the design opts into what-if parts (``[constraints] hypothetical = true``)."""
    del catalog
    parts = what_if_parts(system)
    if not parts or system.spec.constraints.hypothetical:
        return RuleCheck("hbm_capacity", 0.0)
    hbm = system.hbm_bytes / GB
    offers = system.accelerator.offered_hbm_gb()
    excess = min(abs(hbm - o) / o for o in offers)
    return _check("hbm_capacity", max(excess, 1e-6),
                  "not a part on sale: " + "; ".join(parts)
                  + " (set [constraints] hypothetical = true for a what-if)")


def check_era(system: System, catalog: Catalog) -> RuleCheck:
    """``era``: every part was on sale by ``[constraints] year``: accelerator, CPU, the PCIe
    generation and the NIC speeds (the slowest catalog grade that carries each NIC)."""
    year = system.spec.constraints.year
    if year is None:
        return RuleCheck("era", 0.0)
    node = system.spec.node
    parts = [(system.accelerator.available, system.accelerator.name),
             (system.cpu.available, system.cpu.name)]
    parts += [(catalog.pcie_gen(gen).available, f"PCIe Gen{gen}")
              for gen in sorted({system.pcie_gen, system.cpu_pcie_gen, system.nic_pcie_gen})]
    grades = sorted(catalog.nic.values(), key=lambda g: g.gbit_s)
    for count, speed in ((node.nics, node.nic_gbit_s), (node.frontend_nics, node.frontend_nic_gbit_s)):
        if count and not (system.on_die_nics and speed == node.nic_gbit_s):
            grade = next((g for g in grades if g.gbit_s >= speed), grades[-1])
            parts.append((grade.available, f"{speed:.6g} Gb/s NICs"))
    if node.cxl_modules:
        cxl = catalog.cxl_named(node.cxl_memory)
        parts.append((cxl.available, cxl.name))
    late = [(y, name) for y, name in parts if y > year]
    if not late:
        return RuleCheck("era", 0.0)
    return RuleCheck("era", float(max(y for y, _ in late) - year),
                     f"parts not on sale by {year}: "
                     + ", ".join(f"{name} ({y})" for y, name in late))


def check_whole_racks(system: System, catalog: Catalog) -> RuleCheck:
    """``whole_racks``: a rack-scale system's nodes fill whole racks or a fraction a vendor sells
    (:mod:`dse.model.racks`); the violation is the nodes short of the next such count, per rack."""
    del catalog  # the rack is the system's
    spec = system.spec
    if racks_of(spec) is not None:
        return RuleCheck("whole_racks", 0.0)
    sizes = rack_sizes(spec)
    short = nearest_whole(spec) - spec.nodes
    sold = " or ".join(str(s) for s in sizes)
    return _check("whole_racks", short / spec.rack.nodes,
                  f"{spec.nodes} nodes are not whole racks of {spec.rack.nodes} nodes "
                  f"(sold as {sold} nodes a rack); {nearest_whole(spec)} would be")


RuleFn = Callable[[System, Catalog], RuleCheck]
_SINGLE_RULES: tuple[RuleFn, ...] = (check_pcie_generation, check_pcie_lanes, check_nic_link,
                                     check_ddr_capacity, check_hbm, check_era, check_whole_racks,
                                     check_cxl_memory)
RULE_NAMES = ("fabric_arrangement", "fabric_bandwidth", "pcie_generation", "pcie_lanes", "nic_link",
              "ddr_capacity", "hbm_capacity", "era", "whole_racks", "cxl_memory")
"""Every rule, in the order :func:`check_rules` returns them (constraint ``rule:<name>``)."""


def check_rules(system: System, catalog: Catalog | None = None) -> tuple[RuleCheck, ...]:
    """Every buildability rule's verdict on ``system`` (one :class:`RuleCheck` per ``RULE_NAMES``)."""
    cat = catalog or load_catalog()
    return (*check_fabric(system, cat), *(rule(system, cat) for rule in _SINGLE_RULES))
