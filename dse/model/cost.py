"""Capex, power and total cost of ownership of a system (docs/design.md, section 6).

Capex sums every part's catalog price; power sums every part's draw at its utilisation and divides
by the power-supply efficiency (wall power), and adds the scale-out network and, for liquid-cooled
racks, their share of a coolant distribution unit's pumps; TCO amortises capex and adds energy at
a PUE (the facility's own cooling) and price.
All figures are per cluster. Prices are estimates (see the catalog's ``price_source`` fields).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dse.model.catalog import Catalog, load_catalog
from dse.model.equivalence import switch_tiers
from dse.model.racks import rack_count
from dse.model.system import System

HOURS_PER_YEAR = 8766.0
"""365.25 days."""
CRITEO_EPOCH_SAMPLES = 4_195_197_692
"""Training samples in one epoch of the Criteo 1TB click logs (docs/sources.md#criteo-1tb-dataset):
the epoch of a workload whose file states no ``samples_per_epoch`` (docs/design.md, section 6)."""
ACCELERATOR_IDLE_FRACTION = 0.15
"""Idle draw as a share of TDP where the catalog gives none [A: an idle H100 SXM draws about
70-100 W of 700 W; the measured 8x H100 node idled at 2.3-2.7 kW at the wall]."""
CPU_TRAINING_UTILISATION = 0.5
"""Share of TDP the host CPUs draw while feeding training (data pipeline, framework threads) [A]."""
CPU_COMPUTE_UTILISATION = 1.0
"""Share of TDP the CPUs draw where they do the training themselves (a node without accelerators):
TDP is by Intel's definition the average power a socket dissipates at base frequency with all
cores active under an Intel-defined high-complexity workload (Intel ARK, "TDP" glossary entry),
which dense AVX-512/AMX training is."""
PRICE_FLOOR_FRACTION = 0.5
"""An accelerator with less HBM than its catalog part never costs below this share of its price [A]."""


@dataclass(frozen=True, slots=True)
class CostBreakdown:
    """Capex by part (USD) and its total."""

    parts_usd: dict[str, float]
    capex_usd: float
    network_capex_usd: float


@dataclass(frozen=True, slots=True)
class PowerBreakdown:
    """Power by part (W, at the wall after PSU losses) and its total."""

    parts_w: dict[str, float]
    power_w: float
    accelerator_utilisation: float


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


def capex(system: System, catalog: Catalog | None = None) -> CostBreakdown:
    """Capex of the cluster by part."""
    cat = catalog or load_catalog()
    node = system.spec.node
    acc = system.accelerator
    n, a = system.nodes, system.accelerators_per_node
    fac = cat.facility
    extra_gb = system.hbm_bytes / 1e9 - acc.hbm_gb
    extra_gb_s = system.hbm_bytes_s / 1e9 - acc.hbm_gb_s
    unit = acc.price_usd + extra_gb * fac.hbm_usd_per_gb + extra_gb_s * fac.hbm_usd_per_gb_s
    unit = max(unit, PRICE_FLOOR_FRACTION * acc.price_usd)
    nic_usd, _ = cat.nic_for(node.nic_gbit_s)
    fe_usd, _ = cat.nic_for(node.frontend_nic_gbit_s)
    ddr = cat.ddr[system.cpu.ddr]
    bundled = 0.0 if acc.price_includes_system else 1.0
    parts = {
        "accelerators": n * a * unit,
        "cpus": bundled * n * node.cpu_sockets * system.cpu.price_usd,
        "ddr": bundled * n * node.ddr_gb * ddr.usd_per_gb,
        "nics": n * (_nic_cards(system) * nic_usd + node.frontend_nics * fe_usd),
        "pcie_switches": n * _pcie_switches(system) * cat.pcie_gen(system.pcie_gen).switch_usd,
        "scaleup_switches": _scaleup_switches(system, bundled * cat.scaleup_switch.usd_per_accelerator,
                                              system.spec.rack.switch_tray_usd),
        # Accelerator slots: none on a node without accelerators (its one device is its CPUs).
        "chassis": bundled * n * (cat.chassis.usd_per_node
                                  + node.accelerators * cat.chassis.usd_per_accelerator),
    }
    parts.update(_rack_shared(system, system.spec.rack.shared_usd))
    parts.update(_cooling(system, cat.cdu.usd, cat))
    network = _network_capex(system, cat)
    parts["network"] = network
    return CostBreakdown(parts_usd=parts, capex_usd=sum(parts.values()), network_capex_usd=network)


def _scaleup_switches(system: System, per_accelerator: float, per_tray: float) -> float:
    """Scale-up switch silicon (USD or W): once per rack where a rack states its switch trays
    (NVL72: 9 NVLink switch trays), else a share per accelerator on a switched fabric."""
    trays = rack_count(system.spec) * system.spec.rack.switch_trays
    if trays:
        return trays * per_tray
    # A domain of one device has no scale-up traffic, so no switch (dse.model.equivalence).
    switched = system.scaleup == "switch" and system.scaleup_domain > 1
    return system.accelerators_total * per_accelerator if switched else 0.0


def _rack_shared(system: System, per_rack: float) -> dict[str, float]:
    """The ``rack`` part (USD or W) of a rack-scale system, once per rack; none for other systems
    (so their breakdowns keep their parts)."""
    racks = rack_count(system.spec)
    return {"rack": racks * per_rack} if racks else {}


def _cooling(system: System, per_cdu: float, cat: Catalog) -> dict[str, float]:
    """The ``cooling`` part (USD or W) of liquid-cooled racks: each rack's share of a coolant
    distribution unit, ``racks x liquid_kw / cdu.capacity_kw`` units (a row's CDU serves several
    racks); none for racks cooled by air or systems bought node by node."""
    units = rack_count(system.spec) * system.spec.rack.liquid_kw / cat.cdu.capacity_kw
    return {"cooling": units * per_cdu} if units else {}


def _nic_cards(system: System) -> int:
    """Compute NIC cards a node buys and powers: none when its scale-out rides on the accelerators'
    on-die ports (:attr:`System.on_die_nics`)."""
    return 0 if system.on_die_nics else system.spec.node.nics


def _pcie_switches(system: System) -> int:
    share = system.spec.node.pcie_switch_share
    return math.ceil(system.accelerators_per_node / share) if share > 1 else 0


def _network_ports_per_nic(system: System, cat: Catalog) -> tuple[float, float]:
    """Switch ports and optical link ends per compute NIC in a folded-Clos network: one leaf port and
    one NIC-leaf link, plus for each tier above the leaf an up and a down port and one more link,
    thinned by the oversubscription ratio."""
    tiers = scaleout_tiers(system, cat)
    if tiers == 0:
        return 0.0, 0.0
    over = system.network.oversubscription
    upper = (tiers - 1) / over
    return 1.0 + 2.0 * upper, 2.0 * (1.0 + upper)


def _network_capex(system: System, cat: Catalog) -> float:
    ports, ends = _network_ports_per_nic(system, cat)
    nic_count = system.nodes * system.spec.node.nics
    speed = system.spec.node.nic_gbit_s / 400.0
    sw = cat.network_switch
    return nic_count * speed * (ports * sw.usd_per_port_per_400g + ends * sw.optics_usd_per_end_per_400g)


def power(
    system: System,
    catalog: Catalog | None,
    accelerator_utilisation: float,
) -> PowerBreakdown:
    """Wall power of the cluster while training: every part at its training utilisation, PSU losses
    on the nodes, and the scale-out switches and optics. ``accelerator_utilisation``: the share of
    (TDP - idle) each accelerator draws, the calibration's ``accelerator_training_utilisation``
    (fitted to a wall-power measurement, :class:`~dse.model.parameters.Calibration`)."""
    cat = catalog or load_catalog()
    node = system.spec.node
    acc = system.accelerator
    n, a = system.nodes, system.accelerators_per_node
    fac = cat.facility
    util = min(max(accelerator_utilisation, 0.0), 1.0)
    idle = acc.idle_w if acc.idle_w is not None else ACCELERATOR_IDLE_FRACTION * acc.tdp_w
    extra_gb = max(system.hbm_bytes / 1e9 - acc.hbm_gb, 0.0)
    extra_gb_s = max(system.hbm_bytes_s / 1e9 - acc.hbm_gb_s, 0.0)
    per_acc = idle + (acc.tdp_w - idle) * util
    per_acc += extra_gb * fac.hbm_w_per_gb + extra_gb_s * fac.hbm_w_per_gb_s * util
    cpu_util = CPU_COMPUTE_UTILISATION if system.cpu_only else CPU_TRAINING_UTILISATION
    _, nic_w = cat.nic_for(node.nic_gbit_s)
    _, fe_w = cat.nic_for(node.frontend_nic_gbit_s)
    ports, ends = _network_ports_per_nic(system, cat)
    sw = cat.network_switch
    speed = node.nic_gbit_s / 400.0
    parts = {
        "accelerators": n * a * per_acc,
        # Drawn even where the accelerator's price covers the CPUs (GB200's Grace: catalog tdp_w).
        "cpus": n * node.cpu_sockets * system.cpu.tdp_w * cpu_util,
        "ddr": n * node.ddr_gb * cat.ddr[system.cpu.ddr].w_per_gb,
        "nics": n * (_nic_cards(system) * nic_w + node.frontend_nics * fe_w),
        "pcie_switches": n * _pcie_switches(system) * cat.pcie_gen(system.pcie_gen).switch_w,
        "scaleup_switches": _scaleup_switches(system, cat.scaleup_switch.w_per_accelerator,
                                              system.spec.rack.switch_tray_w),
        "chassis": n * cat.chassis.base_w,
    }
    parts.update(_rack_shared(system, system.spec.rack.shared_w))
    dc = sum(parts.values())
    parts["psu_loss"] = dc * (1.0 / cat.chassis.psu_efficiency - 1.0)
    nic_count = n * node.nics
    parts["network"] = nic_count * speed * (ports * sw.w_per_port_per_400g
                                            + ends * sw.optics_w_per_end_per_400g)
    # The CDU's pumps draw at the wall, past the nodes' power supplies; the facility's own cooling
    # (chillers, towers) is the PUE's, applied to the energy (economics).
    parts.update(_cooling(system, cat.cdu.pump_w, cat))
    return PowerBreakdown(parts_w=parts, power_w=sum(parts.values()), accelerator_utilisation=util)


@dataclass(frozen=True, slots=True)
class Economics:
    """Derived cost and energy metrics of a design at a given throughput."""

    tco_usd_per_year: float
    energy_usd_per_year: float
    usd_per_million_samples: float
    samples_per_s_per_kusd: float
    samples_per_s_per_w: float
    energy_per_sample_j: float
    epoch_time_s: float
    epoch_cost_usd: float


def economics(
    throughput: float, cost: CostBreakdown, pw: PowerBreakdown, catalog: Catalog | None = None,
    samples_per_epoch: int = CRITEO_EPOCH_SAMPLES,
) -> Economics:
    """TCO (capex amortised + energy at PUE and price) and per-sample figures.

    ``epoch_*`` are for one epoch of ``samples_per_epoch`` training samples: the workload's own
    dataset, or a Criteo 1TB epoch (4,195,197,692 samples) for a workload that states none.
    """
    fac = (catalog or load_catalog()).facility
    server = cost.capex_usd - cost.network_capex_usd
    energy = pw.power_w * fac.pue * HOURS_PER_YEAR / 1000.0 * fac.usd_per_kwh
    tco = (server / fac.server_amortisation_years
           + cost.network_capex_usd / fac.network_amortisation_years + energy)
    per_s = tco / (HOURS_PER_YEAR * 3600.0)
    if throughput <= 0:
        inf = math.inf
        return Economics(tco, energy, inf, 0.0, 0.0, inf, inf, inf)
    epoch_s = samples_per_epoch / throughput
    return Economics(
        tco_usd_per_year=tco,
        energy_usd_per_year=energy,
        usd_per_million_samples=per_s / throughput * 1e6,
        samples_per_s_per_kusd=throughput / cost.capex_usd * 1e3,
        samples_per_s_per_w=throughput / pw.power_w,
        energy_per_sample_j=pw.power_w / throughput,
        epoch_time_s=epoch_s,
        epoch_cost_usd=per_s * epoch_s,
    )


# --- time and cost to train (samples to converge, dse.model.convergence) -------------------------

def to_train(samples: float | None, throughput: float, eco: Economics) -> tuple[float, float]:
    """Seconds and TCO (USD) of a training run of ``samples`` at ``throughput`` samples/s:
    ``time_to_train_s = samples / throughput``, and ``cost_to_train_usd`` the TCO per second
    (capex amortised plus energy) over that time, as ``epoch_cost_usd`` is over one epoch.
    Infinite when there is no sample count or no throughput."""
    if samples is None or throughput <= 0:
        return math.inf, math.inf
    seconds = samples / throughput
    return seconds, eco.tco_usd_per_year / (HOURS_PER_YEAR * 3600.0) * seconds
