"""Hardware catalog: accelerators, CPUs, memory, PCIe, NICs, switches, chassis and facility figures.

The numbers live in ``dse/data/catalog.toml``; every entry carries a ``source`` and lists which of its
values are assumptions (``assumed``) or estimates (prices are estimates and say so). Units are in the
field names: GB = 1e9 bytes, ``_gb_s`` = GB/s per direction, ``_gbit_s`` = Gb/s, ``_w`` = watts.
"""

from __future__ import annotations

import functools
import itertools
import operator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Literal

from dse.errors import DseInputError
from dse.limits import (
    MAX_AMORTISATION_YEARS,
    MAX_BANDWIDTH_GB_S,
    MAX_LATENCY_S,
    MAX_LINK_GBIT_S,
    MAX_MEMORY_GB,
    MAX_PRICE_USD,
    MAX_PUE,
    MAX_RACK_UNITS,
    MAX_RACK_W,
    MAX_TFLOPS,
    positive,
    upto,
)
from dse.records import from_mapping, read_toml

Precision = Literal["fp32", "tf32", "amp", "bf16", "fp16", "fp8"]
"""Public precision names. ``amp`` is mixed precision: fp16/bf16 tensor-core math."""

Topology = Literal["none", "ring", "hybrid_cube_mesh", "fully_connected", "switch"]
"""Scale-up fabric among a node's accelerators (``none``: through PCIe and the host)."""

POSITIVE = {"min": 0.0, "min_exclusive": True}
NON_NEGATIVE = {"min": 0.0}
"""Bounds of a figure with no unit of its own below (every other figure names its physical limit,
:mod:`dse.limits`); :func:`dse.records.convert` keeps such a figure within
:data:`~dse.limits.MAX_QUANTITY`."""
PRICE = positive(MAX_PRICE_USD)
PRICE_OR_FREE = upto(MAX_PRICE_USD)
"""Bounds of every price and USD rate: an absurd one (1e308) would make capex ``inf``."""


@dataclass(frozen=True, slots=True)
class PeakTflops:
    """Dense peak tensor throughput per precision (TFLOP/s, no sparsity). Absent = unsupported."""

    fp32: float | None = field(default=None, metadata=positive(MAX_TFLOPS))
    tf32: float | None = field(default=None, metadata=positive(MAX_TFLOPS))
    bf16: float | None = field(default=None, metadata=positive(MAX_TFLOPS))
    fp16: float | None = field(default=None, metadata=positive(MAX_TFLOPS))
    fp8: float | None = field(default=None, metadata=positive(MAX_TFLOPS))

    def for_precision(self, precision: Precision) -> float | None:
        """Peak TFLOP/s the dense math of ``precision`` runs at (``amp`` uses fp16, else bf16)."""
        if precision == "amp":
            return self.fp16 or self.bf16
        value: float | None = getattr(self, precision)
        return value


@dataclass(frozen=True, slots=True)
class Accelerator:
    """One accelerator type (GPU or OAM module)."""

    name: str
    peak_tflops: PeakTflops
    hbm_gb: float = field(metadata=positive(MAX_MEMORY_GB))
    hbm_gb_s: float = field(metadata=positive(MAX_BANDWIDTH_GB_S))
    scaleup_gb_s: float = field(metadata=upto(MAX_BANDWIDTH_GB_S))
    """Scale-up link bandwidth per accelerator per direction (vendor bidirectional figure halved)."""
    default_scaleup: Topology
    scaleup_links: int = field(metadata={"min": 0})
    """Scale-up links per accelerator (NVLink, Infinity Fabric, on-die Ethernet ports); 0 = none."""
    scaleup_link_gb_s: float = field(metadata=upto(MAX_BANDWIDTH_GB_S))
    """Bandwidth of one scale-up link per direction (GB/s); links x this bounds any fabric."""
    switch_domain_max: int = field(metadata={"min": 0})
    """Most accelerators one switched scale-up fabric of this part joins (the switch generation's
    ports and radix: DGX-2 16, HGX H100 8, NVL72 72); 0 = no scale-up switch exists for the part."""
    host_pcie_lanes: int = field(metadata={"min": 1})
    """Width of the host link (PCIe lanes)."""
    available: int = field(metadata={"min": 2000})
    """Year the part was first on sale (era rules: ``[constraints] year``)."""
    pcie_gen: int = field(metadata={"min": 3, "max": 6})
    tdp_w: float = field(metadata=positive(MAX_RACK_W))
    price_usd: float = field(metadata=PRICE)
    memory_type: str
    source: str
    price_source: str
    vendor: str = ""
    """Vendor key a user catalog's ``[discounts]`` names (lower case); empty: the first word of
    ``name`` (NVIDIA, AMD, Intel)."""
    architecture: str = ""
    """The part's architecture generation as its vendor names it (``volta``, ``ampere``, ``ada``,
    ``hopper``, ``blackwell``, ``cdna3``, ``gaudi3``...), lower case: what tells the calibration's
    measured regime apart from a generation it never saw (:mod:`dse.calibration.regime`); empty:
    not stated, which counts as never measured."""
    price_low_usd: float | None = field(default=None, metadata=PRICE)
    price_high_usd: float | None = field(default=None, metadata=PRICE)
    """Range of ``price_usd`` a user catalog states (a quote's spread); the robust front and the
    case studies draw the price within it. ``None``: no range (their default spread)."""
    idle_w: float | None = field(default=None, metadata=upto(MAX_RACK_W))
    """Idle power; when absent the power model uses its idle fraction of TDP."""
    compute_units: int = field(default=0, metadata={"min": 0})
    """Streaming multiprocessors (NVIDIA), compute units (AMD) or equivalent 128x128-tile engines:
    how many GEMM output tiles run at once (wave quantisation of small GEMMs); 0 = not modelled."""
    scaleup_domain: int = 0
    """Largest scale-up domain the part supports across nodes (NVL72: 72); 0 = within a node."""
    form_factor: Literal["sxm", "oam", "pcie", "superchip"] = "sxm"
    price_includes_system: bool = False
    """True when ``price_usd`` is a share of a whole-rack price that already covers host CPUs, DDR,
    scale-up switches and chassis (GB200 NVL72): those parts are then not priced again."""
    hbm_gb_options: tuple[float, ...] = ()
    """HBM capacities the part is offered with (GB); empty = only ``hbm_gb``."""
    nic_ports: int = field(default=0, metadata={"min": 0})
    """Scale-out Ethernet ports on the die (Gaudi 2); NICs attached to the accelerator then use
    these ports and no PCIe lanes. 0 = NICs are separate PCIe cards."""
    nic_port_gbit_s: float = field(default=0.0, metadata=upto(MAX_LINK_GBIT_S))
    """Speed of one on-die scale-out port (Gb/s)."""
    matmul_efficiency: float = field(default=0.80, metadata={"min": 0.0, "min_exclusive": True, "max": 1.0})
    """Share of the half-precision tensor peak (``peak_tflops.bf16``) a vendor library's matmul
    reaches at its best shape: the part's maximum achievable matmul FLOP/s, measured, over that
    peak (docs/sources.md, "Achieved matmul rates by part"). dse times half-precision dense math at
    this share of peak times the calibration's ``dense_efficiency_half``, the share of that ceiling
    DLRM's layers reach: parts differ by what a microbenchmark measured on each, not by their peak
    alone (a B200 reaches 0.78 of its peak, an H100 0.80, an MI300X 0.51). Default: the H100 SXM's
    0.80, for a part no such measurement lists (its entry then names the field in ``assumed``)."""
    assumed: tuple[str, ...] = ()
    """Names of fields whose values are assumptions rather than published figures."""

    def offered_hbm_gb(self) -> tuple[float, ...]:
        """HBM capacities (GB) the part is sold with."""
        return self.hbm_gb_options or (self.hbm_gb,)


@dataclass(frozen=True, slots=True)
class Cpu:
    """One CPU socket type."""

    name: str
    cores: int = field(metadata={"min": 1})
    tdp_w: float = field(metadata=positive(MAX_RACK_W))
    ddr: str
    """Key into the ``ddr`` catalog (``ddr4-3200``, ``ddr5-4800``...)."""
    ddr_channels: int = field(metadata={"min": 1})
    pcie_gen: int = field(metadata={"min": 3, "max": 6})
    pcie_lanes: int = field(metadata={"min": 1})
    available: int = field(metadata={"min": 2000})
    """Year the part was first on sale."""
    dimms_per_channel: int = field(metadata={"min": 1})
    """DIMM slots per memory channel the platform supports (DDR capacity = channels x this x the
    largest DIMM of the DDR generation)."""
    socket_link_gb_s: float = field(metadata=positive(MAX_BANDWIDTH_GB_S))
    """Socket-to-socket bandwidth per direction (UPI / Infinity Fabric), for traffic crossing sockets."""
    price_usd: float = field(metadata=PRICE)
    source: str
    price_source: str
    vendor: str = ""
    """Vendor key a user catalog's ``[discounts]`` names (lower case); empty: the first word of
    ``name`` (NVIDIA, AMD, Intel)."""
    price_low_usd: float | None = field(default=None, metadata=PRICE)
    price_high_usd: float | None = field(default=None, metadata=PRICE)
    """Range of ``price_usd`` a user catalog states (a quote's spread); the robust front and the
    case studies draw the price within it. ``None``: no range (their default spread)."""
    assumed: tuple[str, ...] = ()
    peak_tflops: PeakTflops = PeakTflops()
    """Dense peak of one socket per precision (TFLOP/s: cores x base GHz x FLOP per cycle and core
    of its vector or matrix units), what a node without accelerators trains at
    (``node.accelerators = 0``); absent = the socket cannot train at that precision."""
    peak_source: str = ""
    """Where each of ``peak_tflops``'s figures comes from."""
    matrix_precisions: tuple[Precision, ...] = ()
    """Precisions whose ``peak_tflops`` figure is a matrix engine's (AMX tile units) rather than
    the vector units' (AVX-512 FMAs): the model times them at the calibration's
    ``cpu_matrix_efficiency`` instead of ``cpu_dense_efficiency``, as it times an accelerator's
    tensor cores and SIMT units at efficiencies of their own."""
    cxl_lanes: int = field(default=0, metadata={"min": 0})
    """PCIe lanes of one socket that can run CXL.mem for Type 3 memory expanders (0: none; the
    CPU carries no CXL memory)."""


@dataclass(frozen=True, slots=True)
class Ddr:
    """One DDR generation and speed."""

    channel_gb_s: float = field(metadata=positive(MAX_BANDWIDTH_GB_S))
    max_dimm_gb: float = field(metadata=positive(MAX_MEMORY_GB))
    """Largest DIMM (or soldered device per channel) of this generation on sale (GB)."""
    usd_per_gb: float = field(metadata=PRICE)
    w_per_gb: float = field(metadata=positive(MAX_RACK_W))
    source: str
    assumed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CxlMemory:
    """One CXL Type 3 memory expander (a module or add-in card of DRAM behind a CXL controller):
    the parts of a node's ``cxl`` memory tier (:mod:`dse.model.tiers`)."""

    name: str
    capacity_gb: float = field(metadata=positive(MAX_MEMORY_GB))
    gb_s: float = field(metadata=positive(MAX_BANDWIDTH_GB_S))
    """Read+write bandwidth of one module as its vendor measures it (GB/s)."""
    lanes: int = field(metadata={"min": 1})
    """Width of its link (PCIe lanes it takes from the CPUs' CXL-capable ones)."""
    pcie_gen: int = field(metadata={"min": 5, "max": 6})
    """Generation of its link (CXL 1.1-2.0 run on PCIe 5.0)."""
    added_latency_ns: float = field(metadata=positive(MAX_LATENCY_S * 1e9))
    """A load's latency beyond local DDR (ns); not timed, the reason ``cxl_efficiency`` is a range."""
    available: int = field(metadata={"min": 2000})
    price_usd: float = field(metadata=PRICE)
    w: float = field(metadata=positive(MAX_RACK_W))
    """Draw of one module under load (W)."""
    source: str
    vendor: str = ""
    """Vendor key a user catalog's ``[discounts]`` names; empty: the first word of ``name``."""
    price_low_usd: float | None = field(default=None, metadata=PRICE)
    price_high_usd: float | None = field(default=None, metadata=PRICE)
    """Range of ``price_usd`` (no list prices are published for these parts)."""
    assumed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Pcie:
    """One PCIe generation: usable bandwidth of an x16 link per direction."""

    x16_gb_s: float = field(metadata=positive(MAX_BANDWIDTH_GB_S))
    latency_s: float = field(metadata=positive(MAX_LATENCY_S))
    switch_usd: float = field(metadata=PRICE_OR_FREE)
    """Price of one PCIe switch chip of this generation (for boxes with shared switches)."""
    switch_w: float = field(metadata=upto(MAX_RACK_W))
    available: int = field(metadata={"min": 2000})
    """Year the first hosts and switches of this generation were on sale."""
    switch_lanes: int = field(metadata={"min": 32})
    """Lanes of one PCIe switch chip of this generation (an x16 uplink and x16 downstream ports)."""
    source: str
    assumed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Nic:
    """One NIC speed grade (price and power of one port, optics excluded)."""

    gbit_s: float = field(metadata=positive(MAX_LINK_GBIT_S))
    price_usd: float = field(metadata=PRICE)
    tdp_w: float = field(metadata=positive(MAX_RACK_W))
    available: int = field(metadata={"min": 2000})
    """Year NICs of this speed were first on sale."""
    source: str
    vendor: str = ""
    """Vendor key a user catalog's ``[discounts]`` names (lower case): the packaged grades are
    NVIDIA ConnectX cards (their sources), so ``nvidia``; empty: none (a grade a user adds for
    any vendor's card of its speed)."""
    price_low_usd: float | None = field(default=None, metadata=PRICE)
    price_high_usd: float | None = field(default=None, metadata=PRICE)
    """Range of ``price_usd`` a user catalog states (a quote's spread); the robust front and the
    case studies draw the price within it. ``None``: no range (their default spread)."""
    assumed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NetworkSwitch:
    """Scale-out switch ports and optics, priced per port of a given speed."""

    radix: int = field(metadata={"min": 2})
    usd_per_port_per_400g: float = field(metadata=PRICE)
    w_per_port_per_400g: float = field(metadata=positive(MAX_RACK_W))
    optics_usd_per_end_per_400g: float = field(metadata=PRICE_OR_FREE)
    optics_w_per_end_per_400g: float = field(metadata=upto(MAX_RACK_W))
    hop_latency_s: float = field(metadata=positive(MAX_LATENCY_S))
    nic_latency_s: float = field(metadata=positive(MAX_LATENCY_S))
    source: str
    assumed: tuple[str, ...] = ()
    vendor: str = ""
    """Vendor key of the switches (``[discounts]``): empty in the packaged catalog, whose figures
    are any 51.2 Tb/s switch's; a user catalog names the vendor it buys from
    (``[network_switch] vendor = "nvidia"``)."""
    optics_vendor: str = ""
    """Vendor key of the optics and cables, likewise (NVIDIA LinkX, say)."""


@dataclass(frozen=True, slots=True)
class ScaleupSwitch:
    """Scale-up switch silicon (NVSwitch-class), priced and powered per attached accelerator."""

    usd_per_accelerator: float = field(metadata=PRICE_OR_FREE)
    w_per_accelerator: float = field(metadata=upto(MAX_RACK_W))
    latency_s: float = field(metadata=positive(MAX_LATENCY_S))
    source: str
    assumed: tuple[str, ...] = ()
    vendor: str = ""
    """Vendor key of the switch silicon (``[discounts]``; the packaged entry is NVSwitch:
    ``nvidia``)."""


@dataclass(frozen=True, slots=True)
class Chassis:
    """Per-node baseboard, chassis, fans, power supplies, boot storage."""

    usd_per_node: float = field(metadata=PRICE_OR_FREE)
    usd_per_accelerator: float = field(metadata=PRICE_OR_FREE)
    """Baseboard/riser cost that grows with the number of accelerator slots."""
    base_w: float = field(metadata=upto(MAX_RACK_W))
    """Fans, storage, BMC and board power per node."""
    psu_efficiency: float = field(metadata={"min": 0.5, "max": 1.0})
    source: str
    assumed: tuple[str, ...] = ()
    rack_units: int = field(default=8, metadata=upto(MAX_RACK_UNITS, 1))
    """Height of a node (U) where its system file states none (``node.rack_units``): how many fit
    the facility's rack (:class:`Facility`)."""


@dataclass(frozen=True, slots=True)
class Cdu:
    """A coolant distribution unit: the pumps and heat exchanger between a liquid-cooled rack's
    loop and the facility's water. A rack that states the heat its loop carries
    (:attr:`~dse.model.system.RackSpec.liquid_kw`) buys and powers that share of one
    (:mod:`dse.model.cost`)."""

    capacity_kw: float = field(metadata=positive(MAX_RACK_W / 1e3))
    """Heat one unit moves to the facility's water (kW)."""
    usd: float = field(metadata=PRICE_OR_FREE)
    """Price of one unit (USD)."""
    pump_w: float = field(metadata=upto(MAX_RACK_W))
    """Draw of its pumps at full flow (W, at the wall)."""
    source: str
    assumed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Facility:
    """Data-centre and finance defaults for TCO."""

    pue: float = field(metadata=upto(MAX_PUE, 1.0))
    usd_per_kwh: float = field(metadata=PRICE_OR_FREE)
    server_amortisation_years: float = field(metadata=positive(MAX_AMORTISATION_YEARS))
    network_amortisation_years: float = field(metadata=positive(MAX_AMORTISATION_YEARS))
    hbm_usd_per_gb: float = field(metadata=PRICE_OR_FREE)
    """Price of HBM capacity beyond (or below) an accelerator's catalog figure, when it is a knob."""
    hbm_usd_per_gb_s: float = field(metadata=PRICE_OR_FREE)
    """Price of HBM bandwidth beyond an accelerator's catalog figure, when it is a knob."""
    hbm_w_per_gb: float = field(metadata=upto(MAX_RACK_W))
    hbm_w_per_gb_s: float = field(metadata=upto(MAX_RACK_W))
    source: str
    assumed: tuple[str, ...] = ()
    rack_kw: float = field(default=41.0, metadata=positive(MAX_RACK_W / 1e3))
    """Power one of the facility's racks is fed (kW): nodes bought one by one are placed in as
    many of them as their draw and height need (:func:`dse.model.cost.facility_racks`), so a
    system of nodes has ``racks`` and ``rack_kw`` as a rack-scale one does."""
    rack_units: int = field(default=42, metadata=upto(MAX_RACK_UNITS, 1))
    """Space of one of the facility's racks (U)."""


@dataclass(frozen=True, slots=True)
class NodeQuote:
    """A vendor's quote for a whole node (``[node_price.SYSTEM]`` of a user catalog): it replaces
    the sum of the parts it covers for every node of a design whose system is ``SYSTEM`` (a
    preset's name or a system file) and whose node is as that system states it
    (:func:`dse.model.bom.count_parts`); a design that changes the node's parts is priced by its
    parts. Its range is drawn as a part's is."""

    price_usd: float = field(metadata=PRICE)
    price_low_usd: float | None = field(default=None, metadata=PRICE)
    price_high_usd: float | None = field(default=None, metadata=PRICE)
    """Range of ``price_usd`` (a quote's spread); the robust front and the case studies draw the
    price within it. ``None``: no range."""
    covers: tuple[str, ...] = ()
    """The breakdown rows (``dse.model.bom.Part`` names of parts bought per node) the quote
    covers; empty: every one (accelerators, CPUs, DDR, CXL memory, NICs, PCIe and scale-up
    switches, chassis)."""
    source: str = ""
    vendor: str = ""
    """Never discounted (a quote is the price paid): always empty."""


@dataclass(frozen=True, slots=True)
class Catalog:
    """The whole catalog; see ``dse/data/catalog.toml``."""

    version: str
    accelerator: dict[str, Accelerator]
    cpu: dict[str, Cpu]
    ddr: dict[str, Ddr]
    cxl: dict[str, CxlMemory]
    pcie: dict[str, Pcie]
    nic: dict[str, Nic]
    network_switch: NetworkSwitch
    scaleup_switch: ScaleupSwitch
    chassis: Chassis
    facility: Facility
    cdu: Cdu
    node_price: dict[str, NodeQuote] = field(default_factory=dict)
    """Quotes for whole nodes by system (a user catalog's ``[node_price.SYSTEM]``; none packaged)."""

    def accelerator_named(self, key: str, source: str = "catalog", field_key: str = "") -> Accelerator:
        """The accelerator ``key``, or an error listing the known keys."""
        try:
            return self.accelerator[key]
        except KeyError:
            known = ", ".join(sorted(self.accelerator))
            raise DseInputError(source, field_key, f"unknown accelerator {key!r} (known: {known})") from None

    def cpu_named(self, key: str, source: str = "catalog", field_key: str = "") -> Cpu:
        """The CPU ``key``, or an error listing the known keys."""
        try:
            return self.cpu[key]
        except KeyError:
            known = ", ".join(sorted(self.cpu))
            raise DseInputError(source, field_key, f"unknown cpu {key!r} (known: {known})") from None

    def cxl_named(self, key: str, source: str = "catalog", field_key: str = "") -> CxlMemory:
        """The CXL memory part ``key``, or an error listing the known keys."""
        try:
            return self.cxl[key]
        except KeyError:
            known = ", ".join(sorted(self.cxl))
            raise DseInputError(source, field_key, f"unknown cxl memory {key!r} (known: {known})") from None

    def pcie_gen(self, gen: int) -> Pcie:
        """PCIe generation ``gen`` (3-6)."""
        return self.pcie[f"gen{gen}"]

    def nic_for(self, gbit_s: float) -> tuple[float, float]:
        """Price (USD) and power (W) of one NIC port of ``gbit_s``, interpolated between catalog grades.

        Speeds between grades are interpolated linearly; beyond the ends the per-Gb/s figure of the
        nearest grade is used, so price and power never fall as speed rises.
        """
        grades = sorted(self.nic.values(), key=_SPEED)
        if gbit_s <= grades[0].gbit_s:
            g = grades[0]
            return g.price_usd, g.tdp_w
        for lo, hi in itertools.pairwise(grades):
            if gbit_s <= hi.gbit_s:
                t = (gbit_s - lo.gbit_s) / (hi.gbit_s - lo.gbit_s)
                return (
                    lo.price_usd + t * (hi.price_usd - lo.price_usd),
                    lo.tdp_w + t * (hi.tdp_w - lo.tdp_w),
                )
        g = grades[-1]
        scale = gbit_s / g.gbit_s
        return g.price_usd * scale, g.tdp_w * scale


_SPEED = operator.attrgetter("gbit_s")
"""A NIC grade's speed (the sort key of :meth:`Catalog.nic_for`, which every evaluation calls)."""

PricedPart = Accelerator | Cpu | Nic | CxlMemory | NodeQuote
"""The parts with a price of their own (the sections a user catalog's ``[price]`` reaches)."""
PRICED_SECTIONS = ("accelerator", "cpu", "nic", "cxl", "node_price")
"""The :class:`Catalog` tables of :data:`PricedPart` parts, by key (a user catalog's ``[price]``,
``[price_range]`` and ``[discounts]`` reach them)."""
PART_SECTIONS = (*PRICED_SECTIONS, "ddr")
"""The :class:`Catalog` tables of parts by key a user catalog may change or add to."""
LISTED_SECTIONS = {"accelerators": "accelerator", "cpus": "cpu", "nics": "nic", "cxl": "cxl"}
"""``dse list`` kinds of parts by key, and the :class:`Catalog` table each lists."""


def vendor_of(part: PricedPart) -> str:
    """The vendor key of ``part`` (lower case): its ``vendor`` field, else the first word of its
    ``name`` (``NVIDIA A100 ...`` -> ``nvidia``); empty for a NIC grade without one."""
    if part.vendor:
        return part.vendor.lower()
    name = "" if isinstance(part, Nic | NodeQuote) else part.name
    return name.split()[0].lower() if name else ""


CATALOG_FILE = "catalog.toml"


def load_catalog(path: Path | None = None) -> Catalog:
    """Load and validate the catalog (the packaged one by default).

    >>> cat = load_catalog()
    >>> cat.accelerator["a100-sxm4-80gb"].hbm_gb
    80.0
    """
    if path is None:
        return _packaged_catalog()
    return from_mapping(Catalog, read_toml(path), str(path))


@functools.cache
def _packaged_catalog() -> Catalog:
    ref = resources.files("dse") / "data" / CATALOG_FILE
    with resources.as_file(ref) as p:
        return from_mapping(Catalog, read_toml(p), f"dse/data/{CATALOG_FILE}")
