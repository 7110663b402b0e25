"""The bill of materials of a design: every part it buys, counted once (docs/design.md, section 6).

A :class:`Bill` is a tuple of :class:`Line`: which breakdown row a line adds to (:class:`Part`), the
catalog item and its vendor, what it is counted per (a node, a rack, the cluster) and how many, and
what one unit costs (USD) and draws (W). :mod:`dse.model.cost` prices that one list:
capex, wall power and a rack's draw are sums of ``quantity x figure`` over it. A further unit (embodied
kgCO2e) is a further per-unit figure on the lines, a further part a further :class:`Part` and line.

The records are named tuples, not frozen dataclasses: every evaluation builds a bill (as
:mod:`dse.model.stages` explains for its records).

>>> from dse.model.catalog import load_catalog
>>> from dse.model.system import load_system
>>> bill = bill_of_materials(load_system("dgx-h100", (("nodes", 2),)), load_catalog())
>>> [(str(line.part), line.item, line.quantity) for line in bill.lines][:3]
[('accelerators', 'h100-sxm5-80gb', 16), ('cpus', 'xeon-8480p', 4), ('ddr', 'ddr5-4800', 4096.0)]
"""

from __future__ import annotations

import functools
import math
from enum import IntEnum, StrEnum, auto
from typing import NamedTuple

from dse.model.catalog import Catalog, NodeQuote, vendor_of
from dse.model.equivalence import switch_tiers
from dse.model.racks import rack_count
from dse.model.system import System, load_system_spec

ACCELERATOR_IDLE_FRACTION = 0.15
"""Idle draw as a share of TDP where the catalog gives none [A: an idle H100 SXM draws about
70-100 W of 700 W; the measured 8x H100 node idled at 2.3-2.7 kW at the wall]."""
CPU_TRAINING_UTILISATION = 0.5
"""Share of TDP the host CPUs draw while feeding training (data pipeline, framework threads) [A]:
the prior of the calibration's ``cpu_feed_power``, and what :func:`dse.model.power.flat` draws."""
CPU_COMPUTE_UTILISATION = 1.0
"""Share of TDP the CPUs draw where they do the training themselves (a node without accelerators):
TDP is by Intel's definition the average power a socket dissipates at base frequency with all
cores active under an Intel-defined high-complexity workload (Intel ARK, "TDP" glossary entry),
which dense AVX-512/AMX training is."""
PRICE_FLOOR_FRACTION = 0.5
"""An accelerator with less HBM than its catalog part never costs below this share of its price [A]."""


class Part(StrEnum):
    """A row of the capex and power breakdowns, in the order capex adds them up. Each member is the
    string of its name, the key of ``capex_by_part_usd`` and ``power_by_part_w`` in ``dse evaluate
    --json`` (a contract)."""

    accelerators = auto()
    cpus = auto()
    ddr = auto()
    cxl = auto()
    """CXL memory expanders (a row only where a node has some)."""
    nics = auto()
    pcie_switches = auto()
    scaleup_switches = auto()
    chassis = auto()
    node_quote = auto()
    """A vendor's quote for a whole node (a user catalog's ``[node_price.SYSTEM]``), in place of
    the prices of the parts it covers (a row only where a quote applies)."""
    rack = auto()
    """The shared parts of a rack-scale system's racks (a row only where there are racks)."""
    cooling = auto()
    """Liquid-cooled racks' shares of coolant distribution units (a row only where there are any)."""
    network = auto()
    """Scale-out switch ports and optics."""
    psu_loss = auto()
    """The nodes' power-supply losses: a row of the power breakdown alone (no line buys it)."""


WALL_PARTS = (Part.network, Part.cooling)
"""Parts drawn at the wall rather than through the nodes' power supplies, in the order the power
breakdown adds them after the PSU losses (switches and coolant distribution units sit outside the
nodes and the racks' feeds)."""


class Load(IntEnum):
    """What a line's active span (:attr:`Line.w_active`) follows: the index of the share of it a
    unit draws in a :class:`dse.model.power.Activity`."""

    constant = 0
    """No active span: the line draws :attr:`Line.w` (DDR, chassis, a rack's shared parts, CDUs,
    the CPUs of a node without accelerators, which are its device)."""
    accelerator = 1
    cpu = 2
    network = 3
    """Compute and front-end NICs, scale-out switch ports and optics."""
    fabric = 4
    """Scale-up switches (a share per accelerator, or a rack's switch trays)."""
    host = 5
    """PCIe switches."""


class Per(StrEnum):
    """What a line's :attr:`Line.each` is counted per."""

    node = auto()
    rack = auto()
    cluster = auto()


class Line(NamedTuple):
    """``quantity`` units of one item in the cluster, and one unit's price and draw.

    One unit draws ``w + w_active x a`` watts where ``a`` is the share of its active span the
    kind of work it follows (:attr:`load`) draws over the step (:class:`dse.model.power.Activity`:
    an accelerator's share of TDP - idle, the CPUs' of TDP, a link's of its draw), plus
    ``w_added + w_added_active x a`` for HBM added beyond an accelerator's catalog part (its
    capacity draws at idle, its bandwidth with ``a``) (:meth:`w_at`). The bill holds no activity:
    the step's is applied when the bill is priced (:func:`dse.model.cost.priced`)."""

    part: Part
    item: str
    """Its key in its catalog table (``h100-sxm5-80gb``, ``400g``, ``gen5``), or the table of a
    single-entry one (``chassis``, ``cdu``, ``network_switch``)."""
    vendor: str
    """Vendor key (:func:`~dse.model.catalog.vendor_of`; empty for parts of any vendor)."""
    per: Per
    each: float
    """Units per node, per rack or in the cluster (:attr:`per`)."""
    quantity: float
    """Units in the cluster: pieces, GB of DDR, shares of a coolant distribution unit, or
    400G-equivalent compute NIC ports the network serves."""
    usd: float
    """Price of one unit (USD; 0 where another part's price covers it)."""
    w: float
    """Draw of one unit that no activity moves (W): an accelerator's idle draw, DDR's, a
    chassis'; 0 for a part whose whole draw follows its work (CPUs, NICs, switches)."""
    w_active: float = 0.0
    """Further draw of one unit at full activity (W): an accelerator's TDP - idle, a CPU's TDP, a
    NIC's or switch's draw."""
    w_added: float = 0.0
    """Draw of the HBM capacity an accelerator has beyond its catalog part's (W)."""
    w_added_active: float = 0.0
    """Draw of the HBM bandwidth an accelerator has beyond its catalog part's, at full
    utilisation (W)."""
    load: Load = Load.constant
    """What :attr:`w_active` follows."""

    def w_at(self, a: float) -> float:
        """Watts one unit draws when its kind of work draws share ``a`` (0-1) of its span."""
        return self.w + self.w_active * a + (self.w_added + self.w_added_active * a)


new_line = functools.partial(tuple.__new__, Line)
"""A Line from the tuple of all its fields, in order: skips the named tuple's ``__new__``, a Python
function that costs as much again (every evaluation of a new system counts its parts)."""


class Bill(NamedTuple):
    """Every part a design buys, counted once, in :class:`Part` order."""

    lines: tuple[Line, ...]
    nodes: int
    racks: int
    """Racks priced and powered (:func:`~dse.model.racks.rack_count`; 0 when bought by the node)."""
    psu_efficiency: float
    """Of the nodes' power supplies: what the parts behind them draw from the wall is their draw
    over this."""
    node_units: int = 0
    """Height of one node (U) of a system bought node by node, which the facility's racks hold
    (:func:`dse.model.cost.facility_racks`); 0 for a rack-scale system (its racks are its own)."""
    rack_w: float = 0.0
    """Power the facility feeds one rack (W; the catalog's ``facility.rack_kw``)."""
    rack_units: int = 0
    """Space of one of the facility's racks (U)."""


BILLS_REMEMBERED = 64
"""Bills :func:`bill_of_materials` keeps, by the identity of their system and catalog (both frozen
data): a bill depends on them alone, and one system is often evaluated again and again (the
calibration's fits, a benchmark), each time under another calibration or with another memo."""
_BILLS: dict[tuple[int, int], tuple[System, Catalog, Bill]] = {}


def bill_of_materials(system: System, catalog: Catalog) -> Bill:
    """Every part of ``system`` with its count, price and draw from ``catalog``
    (:func:`count_parts`), remembered for the last :data:`BILLS_REMEMBERED` pairs."""
    key = (id(system), id(catalog))
    known = _BILLS.get(key)
    # The entry holds both objects, so their ids cannot be reused while it stands.
    if known is not None and known[0] is system and known[1] is catalog:
        return known[2]
    bill = count_parts(system, catalog)
    if len(_BILLS) >= BILLS_REMEMBERED:
        _BILLS.clear()
    _BILLS[key] = (system, catalog, bill)
    return bill


def count_parts(system: System, catalog: Catalog) -> Bill:
    """Every part of ``system`` with its count, price and draw from ``catalog``. A part whose price
    an accelerator's covers (GB200 NVL72: the rack's CPUs, DDR, switches and chassis) is listed at
    0 USD, and still draws its power."""
    node, cpu, cat = system.spec.node, system.cpu, catalog
    n = system.nodes
    racks = rack_count(system.spec)
    bundled = not system.accelerator.price_includes_system
    ddr = cat.ddr[cpu.ddr]
    cpu_w = cpu.tdp_w * CPU_COMPUTE_UTILISATION if system.cpu_only else 0.0
    cpu_load = Load.constant if system.cpu_only else Load.cpu
    pcie_key = f"gen{system.pcie_gen}"
    pcie = cat.pcie[pcie_key]
    switches = _pcie_switches(system)
    chassis = cat.chassis
    lines = [
        _accelerators(system, cat),
        # The CPUs of a node with accelerators draw by their work (dse.model.power); a node
        # without is trained by its CPUs, at TDP.
        new_line((Part.cpus, node.cpu, vendor_of(cpu), Per.node, node.cpu_sockets, n * node.cpu_sockets,
                  cpu.price_usd if bundled else 0.0, cpu_w, cpu.tdp_w - cpu_w, 0.0, 0.0, cpu_load)),
        new_line((Part.ddr, cpu.ddr, "", Per.node, node.ddr_gb, n * node.ddr_gb,
                  ddr.usd_per_gb if bundled else 0.0, ddr.w_per_gb, 0.0, 0.0, 0.0, Load.constant)),
        *_cxl(system, cat, bundled),
        *_nics(system, cat),
        new_line((Part.pcie_switches, pcie_key, "", Per.node, switches, n * switches,
                  pcie.switch_usd, 0.0, pcie.switch_w, 0.0, 0.0, Load.host)),
        _scaleup_switches(system, cat, racks, bundled),
        # Accelerator slots: none on a node without accelerators (its one device is its CPUs).
        new_line((Part.chassis, "chassis", "", Per.node, 1, n,
                  chassis.usd_per_node + node.accelerators * chassis.usd_per_accelerator if bundled else 0.0,
                  chassis.base_w, 0.0, 0.0, 0.0, Load.constant)),
    ]
    quote = node_quote(system, cat)
    if quote is not None:
        lines = _quoted(lines, quote, n)
    rack = system.spec.rack
    if racks:
        lines.append(new_line((Part.rack, "rack", "", Per.rack, 1, racks, rack.shared_usd, rack.shared_w,
                               0.0, 0.0, 0.0, Load.constant)))
    # Each rack's share of a coolant distribution unit (a row's CDU serves several racks); none
    # for racks cooled by air or systems bought node by node.
    cdus = racks * rack.liquid_kw / cat.cdu.capacity_kw
    if cdus:
        lines.append(new_line((Part.cooling, "cdu", "", Per.rack, rack.liquid_kw / cat.cdu.capacity_kw, cdus,
                               cat.cdu.usd, cat.cdu.pump_w, 0.0, 0.0, 0.0, Load.constant)))
    lines.append(_network(system, cat))
    units = 0 if racks else node.rack_units or chassis.rack_units
    return Bill(tuple(lines), n, racks, chassis.psu_efficiency, units, cat.facility.rack_kw * 1e3,
                cat.facility.rack_units)


NODE_PARTS = (Part.accelerators, Part.cpus, Part.ddr, Part.cxl, Part.nics, Part.pcie_switches,
              Part.scaleup_switches, Part.chassis)
"""The parts a node is bought with, which a quote for the whole node covers unless it lists
fewer (:attr:`~dse.model.catalog.NodeQuote.covers`)."""


def node_quote(system: System, cat: Catalog) -> NodeQuote | None:
    """The catalog's quote for ``system``'s nodes (:attr:`~dse.model.catalog.Catalog.node_price`):
    one stated for the system ``system`` was loaded from (a preset's name or a file), while its
    node is as that system states it; None otherwise (a design that changes the node's parts is
    priced by its parts)."""
    for name, quote in cat.node_price.items():
        quoted = load_system_spec(name)
        if quoted.name == system.spec.name and quoted.node == system.spec.node:
            return quote
    return None


def _quoted(lines: list[Line], quote: NodeQuote, nodes: int) -> list[Line]:
    """``lines`` with the parts ``quote`` covers at 0 USD (still drawing their power) and the
    quote's own line after the chassis, one a node."""
    covers = set(quote.covers) or {str(p) for p in NODE_PARTS}
    out = [line._replace(usd=0.0) if line.per == Per.node and line.part in covers else line
           for line in lines]
    out.append(new_line((Part.node_quote, "node_quote", "", Per.node, 1, nodes, quote.price_usd, 0.0,
                         0.0, 0.0, 0.0, Load.constant)))
    return out


def _cxl(system: System, cat: Catalog, bundled: bool) -> tuple[Line, ...]:
    """The node's CXL memory expanders (none without: no row), each priced and drawn as the
    catalog's part (``[cxl.*]``, docs/sources.md#cxl-memory)."""
    node = system.spec.node
    if not node.cxl_modules:
        return ()
    part = cat.cxl_named(node.cxl_memory)
    return (new_line((Part.cxl, node.cxl_memory, vendor_of(part), Per.node, node.cxl_modules,
                      system.nodes * node.cxl_modules, part.price_usd if bundled else 0.0, part.w,
                      0.0, 0.0, 0.0, Load.constant)),)


def _accelerators(system: System, cat: Catalog) -> Line:
    """The accelerators: HBM capacity and bandwidth beyond (or, for the price, below) the catalog
    part's priced per GB and per GB/s, never below :data:`PRICE_FLOOR_FRACTION` of its price;
    each draws idle + (TDP - idle) x u, and added HBM its capacity's idle draw and its
    bandwidth's x u."""
    acc, fac = system.accelerator, cat.facility
    a = system.accelerators_per_node
    extra_gb = system.hbm_bytes / 1e9 - acc.hbm_gb
    extra_gb_s = system.hbm_bytes_s / 1e9 - acc.hbm_gb_s
    usd = acc.price_usd + extra_gb * fac.hbm_usd_per_gb + extra_gb_s * fac.hbm_usd_per_gb_s
    idle = acc.idle_w if acc.idle_w is not None else ACCELERATOR_IDLE_FRACTION * acc.tdp_w
    return new_line((Part.accelerators, system.spec.node.accelerator or acc.name, vendor_of(acc), Per.node,
                     a, system.nodes * a, max(usd, PRICE_FLOOR_FRACTION * acc.price_usd), idle,
                     acc.tdp_w - idle, max(extra_gb, 0.0) * fac.hbm_w_per_gb,
                     max(extra_gb_s, 0.0) * fac.hbm_w_per_gb_s, Load.accelerator))


def _nics(system: System, cat: Catalog) -> tuple[Line, Line]:
    """Compute NIC cards (none when scale-out rides on the accelerators' on-die ports,
    :attr:`System.on_die_nics`) and front-end NICs, one port each."""
    node = system.spec.node
    return (_nic_line(cat, system.nodes, 0 if system.on_die_nics else node.nics, node.nic_gbit_s),
            _nic_line(cat, system.nodes, node.frontend_nics, node.frontend_nic_gbit_s))


def _nic_line(cat: Catalog, nodes: int, per_node: int, gbit_s: float) -> Line:
    """``per_node`` NICs of ``gbit_s`` a node (:func:`nic_grade`)."""
    usd, w, key, vendor = nic_grade(cat, gbit_s)
    return new_line((Part.nics, key, vendor, Per.node, per_node, nodes * per_node, usd, 0.0, w, 0.0, 0.0,
                     Load.network))


NIC_GRADES_REMEMBERED = 256
"""(catalog, speed) pairs :func:`nic_grade` keeps: a search meets a few NIC speeds, and every
evaluation prices its NICs."""
_NIC_GRADES: dict[tuple[int, float], tuple[Catalog, tuple[float, float, str, str]]] = {}


def nic_grade(cat: Catalog, gbit_s: float) -> tuple[float, float, str, str]:
    """Price (USD), draw (W), catalog key (``400g``; a name for a speed between grades) and vendor
    of one NIC port of ``gbit_s`` (:meth:`~dse.model.catalog.Catalog.nic_for`: between grades,
    interpolated), remembered by the catalog's identity, as :func:`bill_of_materials` remembers
    bills."""
    known = _NIC_GRADES.get((id(cat), gbit_s))
    if known is not None and known[0] is cat:
        return known[1]
    usd, w = cat.nic_for(gbit_s)
    key = f"{gbit_s:g}g"
    grade = cat.nic.get(key)
    facts = (usd, w, key, vendor_of(grade) if grade is not None else "")
    if len(_NIC_GRADES) >= NIC_GRADES_REMEMBERED:
        _NIC_GRADES.clear()
    _NIC_GRADES[id(cat), gbit_s] = (cat, facts)
    return facts


def _pcie_switches(system: System) -> int:
    """PCIe switches a node buys: one per ``pcie_switch_share`` accelerators where they share one."""
    share = system.spec.node.pcie_switch_share
    return math.ceil(system.accelerators_per_node / share) if share > 1 else 0


def _scaleup_switches(system: System, cat: Catalog, racks: int, bundled: bool) -> Line:
    """Scale-up switch silicon: the switch trays of each rack where a rack states them (NVL72: 9
    NVLink switch trays), else a share per accelerator on a switched fabric, else none."""
    rack = system.spec.rack
    if racks * rack.switch_trays:
        return new_line((Part.scaleup_switches, "switch_tray", cat.scaleup_switch.vendor, Per.rack,
                         rack.switch_trays, racks * rack.switch_trays, rack.switch_tray_usd, 0.0,
                         rack.switch_tray_w, 0.0, 0.0, Load.fabric))
    switch = cat.scaleup_switch
    # A domain of one device has no scale-up traffic, so no switch (dse.model.equivalence).
    shares = system.accelerators_total if system.scaleup == "switch" and system.scaleup_domain > 1 else 0
    return new_line((Part.scaleup_switches, "scaleup_switch", switch.vendor, Per.node,
                     system.accelerators_per_node if shares else 0, shares,
                     switch.usd_per_accelerator if bundled else 0.0, 0.0, switch.w_per_accelerator, 0.0, 0.0,
                     Load.fabric))


def scaleout_tiers(system: System, catalog: Catalog) -> int:
    """Switch tiers the scale-out network needs for all compute NIC ports (0 for one node).

    A fat tree joins every NIC port in one folded Clos. A rail-optimised network joins NIC ``i`` of
    every node in rail ``i`` (NVIDIA DGX SuperPOD reference architecture), traffic between rails
    crossing the node's scale-up fabric, so each rail is a Clos of one port per node: with
    rails of at most ``radix`` nodes one leaf tier serves them all (16 DGX nodes: 8 rails of 16
    ports, 128 ports, two 64-port switches carrying 4 rails each), where a fat tree of the same
    128 ports needs a spine. The switch radix is the catalog's (``network_switch.radix``, 64 ports
    of a 51.2 Tb/s ASIC, docs/sources.md#scale-out-switches-and-optics)."""
    return switch_tiers(system.nodes, system.spec.node.nics, system.network.topology,
                        catalog.network_switch.radix)  # the rule, as dse.model.equivalence reads it


def _network(system: System, cat: Catalog) -> Line:
    """The scale-out network, counted in 400G-equivalent compute NIC ports (on-die ones included:
    they plug into it too). Per port, in a folded Clos: one leaf port and one NIC-leaf link, plus
    for each tier above the leaf an up and a down port and one more link, thinned by the
    oversubscription ratio; switch ports and optics are priced and powered per 400G."""
    tiers = scaleout_tiers(system, cat)
    ports, ends = 0.0, 0.0
    if tiers:
        upper = (tiers - 1) / system.network.oversubscription
        ports, ends = 1.0 + 2.0 * upper, 2.0 * (1.0 + upper)
    nic_ports = system.nodes * system.spec.node.nics * (system.spec.node.nic_gbit_s / 400.0)
    sw = cat.network_switch
    return new_line((Part.network, "network_switch", sw.vendor, Per.cluster, nic_ports, nic_ports,
                     ports * sw.usd_per_port_per_400g + ends * sw.optics_usd_per_end_per_400g, 0.0,
                     ports * sw.w_per_port_per_400g + ends * sw.optics_w_per_end_per_400g, 0.0, 0.0,
                     Load.network))
