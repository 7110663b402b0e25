"""Capex, power and total cost of ownership of a system (docs/design.md, section 6).

The parts are counted once, in the design's bill of materials (:mod:`dse.model.bom`); this prices
that one list. Capex sums every line's quantity times its price; power sums every line's quantity
times its draw at the step's activity (:mod:`dse.model.power`: what each kind of part draws of its
active span while it trains), divides the nodes' parts by the power-supply efficiency (wall power)
and adds the parts drawn at the wall (the scale-out network and, for liquid-cooled racks, their
share of a coolant distribution unit's pumps); a rack's draw is the same sum with every
accelerator at TDP, over the racks: a rack-scale system's own, or the facility's racks that hold a
system bought node by node (:func:`facility_racks`). TCO amortises capex and adds energy at a PUE
(the facility's own cooling) and price.
All figures are per cluster. Prices are estimates (see the catalog's ``price_source`` fields).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from dse.model.bom import WALL_PARTS, Bill, Load, Part, bill_of_materials
from dse.model.catalog import Catalog, load_catalog
from dse.model.power import Activity, flat
from dse.model.system import System

HOURS_PER_YEAR = 8766.0
"""365.25 days."""
CRITEO_EPOCH_SAMPLES = 4_195_197_692
"""Training samples in one epoch of the Criteo 1TB click logs (docs/sources.md#criteo-1tb-dataset):
the epoch of a workload whose file states no ``samples_per_epoch`` (docs/design.md, section 6)."""


@dataclass(frozen=True, slots=True)
class CostBreakdown:
    """Capex by part (USD) and its total."""

    parts_usd: Mapping[Part, float]
    """In :class:`~dse.model.bom.Part` order, the parts the bill has lines of."""
    capex_usd: float
    network_capex_usd: float


@dataclass(frozen=True, slots=True)
class PowerBreakdown:
    """Power by part (W, at the wall after PSU losses) and its total."""

    parts_w: Mapping[Part, float]
    """The parts behind the nodes' power supplies, their losses (``psu_loss``), then the parts
    drawn at the wall (:data:`~dse.model.bom.WALL_PARTS`): the order they add up in."""
    power_w: float
    accelerator_utilisation: float
    """Share of TDP - idle each accelerator draws over the step (:attr:`activity`)."""
    activity: Activity | None = None
    """What every kind of part drew of its active span (:class:`~dse.model.power.Activity`)."""


class Priced(NamedTuple):
    """A bill of materials priced in USD and W."""

    cost: CostBreakdown
    power: PowerBreakdown
    """At the accelerators' training utilisation."""
    rack_kw: float
    """Wall draw of the fullest rack with every accelerator at TDP and the other parts as they
    draw training (kW): what a facility's per-rack power feed must carry (GB200 NVL72: 120-132 kW
    a rack, NVIDIA datasheet). Nodes, rack parts and their PSU losses; the parts drawn at the wall
    (the scale-out switches and the coolant distribution units, in the row on feeds of their own)
    stand outside the racks."""
    racks: int = 0
    """Racks: a rack-scale system's own (:func:`~dse.model.racks.rack_count`), or the facility's
    that hold a system bought node by node (:func:`facility_racks`)."""


def priced(bill: Bill, activity: Activity | float) -> Priced:
    """Capex, wall power and a rack's draw of ``bill``, in one walk of its lines. ``activity``:
    what each kind of part draws of its active span over the step (:func:`dse.model.power.activity`);
    a number ``u`` prices every accelerator at ``u`` of TDP - idle, the CPUs at their feeding prior
    and the links at full draw (:func:`dse.model.power.flat`)."""
    shares = activity if isinstance(activity, tuple) else flat(activity)
    accelerator = Load.accelerator
    usd: dict[Part, float] = {}
    w: dict[Part, float] = {}
    to_tdp = 0.0
    """What the accelerators would draw beyond their step's at TDP (W, behind the PSUs)."""
    # Unpacked rather than read field by field, and Line.w_at inlined: every evaluation walks
    # every line, and this is the cheapest walk (mypy checks the unpacking against Line's fields).
    for (part, _item, _vendor, _per, _each, quantity, usd_each, w_each, w_active, w_added,
         w_added_active, load) in bill.lines:
        a = shares[load]
        amount = quantity * usd_each
        drawn = quantity * (w_each + w_active * a + (w_added + w_added_active * a))
        if part in usd:  # a part's second line (the front-end NICs after the compute NICs)
            usd[part] += amount
            w[part] += drawn
        else:
            usd[part], w[part] = amount, drawn
        if load == accelerator:
            to_tdp += quantity * (w_active + w_added_active) * (1.0 - a)
    w.pop(Part.node_quote, None)  # a row of the capex breakdown alone: a quote draws nothing
    parts_w, behind = _at_the_wall(w, bill.psu_efficiency)
    racks, rack_kw = rack_draw(bill, (behind + to_tdp) / bill.psu_efficiency)
    return Priced(CostBreakdown(usd, sum(usd.values()), usd[Part.network]),
                  PowerBreakdown(parts_w, sum(parts_w.values()), shares.accelerator, shares),
                  rack_kw, racks)


def rack_draw(bill: Bill, full_w: float) -> tuple[int, float]:
    """Racks and the fullest one's draw (kW) of ``bill``, whose nodes and rack parts draw
    ``full_w`` at the wall with every accelerator at TDP: a rack-scale system's own racks share
    it; nodes bought one by one fill the facility's racks (:func:`facility_racks`)."""
    if bill.racks:
        return bill.racks, full_w / bill.racks / 1e3
    node_w = full_w / bill.nodes
    per_rack = facility_racks(node_w, bill.node_units, bill.rack_w, bill.rack_units)
    return math.ceil(bill.nodes / per_rack), min(bill.nodes, per_rack) * node_w / 1e3


def facility_racks(node_w: float, node_units: int, rack_w: float, rack_units: int) -> int:
    """Nodes one of the facility's racks holds: as many as its space (``rack_units`` over
    ``node_units``) and its power feed (``rack_w`` over a node's ``node_w`` with every accelerator
    at TDP) both allow, and never fewer than one: a node drawing more than a rack is fed stands
    alone in one, and its ``rack_kw`` above the feed is what a facility limit
    (``rack_kw <= ...`` in an objective file) refuses."""
    by_space = rack_units // node_units if node_units > 0 else rack_units
    by_power = math.floor(rack_w / node_w) if node_w > 0 else by_space
    return max(1, min(by_space, by_power))


def _at_the_wall(w: Mapping[Part, float], psu_efficiency: float) -> tuple[dict[Part, float], float]:
    """Draw by part at the wall: the parts behind the nodes' power supplies, the supplies' losses,
    then the parts drawn at the wall (:data:`~dse.model.bom.WALL_PARTS`); and what the parts
    behind the supplies draw together (W, before their losses)."""
    parts = dict(w)
    wall = [(p, parts.pop(p)) for p in WALL_PARTS if p in parts]
    behind = sum(parts.values())
    parts[Part.psu_loss] = behind * (1.0 / psu_efficiency - 1.0)
    parts.update(wall)
    return parts, behind


def capex(system: System, catalog: Catalog | None = None) -> CostBreakdown:
    """Capex of the cluster by part (:func:`priced`)."""
    return priced(bill_of_materials(system, catalog or load_catalog()), 0.0).cost


def power(system: System, catalog: Catalog | None, activity: Activity | float) -> PowerBreakdown:
    """Wall power of the cluster while training, by part (:func:`priced`)."""
    return priced(bill_of_materials(system, catalog or load_catalog()), activity).power


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

    @property
    def energy_share(self) -> float:
        """Share of TCO that is energy (0 where TCO is not finite and positive): the part of it
        wall power moves."""
        tco = self.tco_usd_per_year
        return self.energy_usd_per_year / tco if 0 < tco < math.inf else 0.0


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
