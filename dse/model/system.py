"""System specification (node + cluster) and its resolution against the hardware catalog.

A :class:`SystemSpec` is what a user writes (docs/design.md, section 7): ``nodes``, a ``[node]`` table, a
``[network]`` table and an optional ``[pod]`` (a scale-up domain spanning several nodes). Values left
out default from the accelerator's catalog entry. :func:`resolve_system` turns a spec into a
:class:`System` of plain numbers in SI-like units (bytes/s, watts, USD) that the model reads.

>>> s = load_system("dgx-a100")
>>> s.accelerators_total, s.scaleup
(8, 'switch')
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from dse.errors import DseInputError
from dse.limits import (
    MAX_ACCELERATORS_PER_NODE,
    MAX_ACCELERATORS_TOTAL,
    MAX_BANDWIDTH_GB_S,
    MAX_CPU_CORES,
    MAX_CPU_SOCKETS,
    MAX_DDR_CHANNELS_PER_SOCKET,
    MAX_LINK_GBIT_S,
    MAX_MEMORY_GB,
    MAX_MEMORY_MODULES_PER_NODE,
    MAX_NICS_PER_NODE,
    MAX_NODES,
    MAX_OVERSUBSCRIPTION,
    MAX_PRICE_USD,
    MAX_RACK_UNITS,
    MAX_RACK_W,
    MAX_ROWS_PER_TABLE,
    positive,
    upto,
)
from dse.model.catalog import Accelerator, Catalog, Cpu, PeakTflops, Topology, load_catalog
from dse.model.tiers import HBM_SECTOR_BYTES, MemoryTier, memory_tier
from dse.records import SYSTEM, apply_override, from_mapping, named_file, read_toml, source_name

NetworkTopology = Literal["fat_tree", "rail_optimized"]
HostServing = Literal["auto", "cache", "uvm", "cpu"]
"""How tables off the devices are served (:attr:`SoftwareSpec.host_tables`)."""
HostOrder = Literal["density", "largest"]
"""Which tables leave the devices first (:attr:`SoftwareSpec.host_table_order`)."""
NicAttach = Literal["accelerator", "cpu"]
InputSource = Literal["local", "network"]

GB = 1e9
"""Decimal gigabyte: capacities and bandwidths in this package are GB = 1e9 bytes."""
BITS_PER_BYTE = 8


_NO_ACCELERATOR = "required key is missing (or set accelerators = 0)"
"""A node of accelerators that names none: the schema's own check, since the field has a default
(``""``) for nodes without accelerators."""


def gbit_s_to_bytes_s(gbit_s: float) -> float:
    """Convert a link speed in Gb/s (decimal gigabits) to bytes/s: 400 Gb/s -> 50e9 B/s."""
    return gbit_s * 1e9 / BITS_PER_BYTE


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node; fields left ``None`` default from the accelerator's catalog entry."""

    accelerators: int = field(metadata=upto(MAX_ACCELERATORS_PER_NODE))
    """Accelerators per node; 0: the node trains on its CPU sockets (:func:`cpu_device`)."""
    cpu: str
    cpu_sockets: int = field(metadata=upto(MAX_CPU_SOCKETS, 1))
    ddr_gb: float = field(metadata=positive(MAX_MEMORY_GB))
    nics: int = field(metadata=upto(MAX_NICS_PER_NODE))
    nic_gbit_s: float = field(metadata=positive(MAX_LINK_GBIT_S))
    hbm_gb: float | None = field(default=None, metadata=positive(MAX_MEMORY_GB))
    hbm_gb_s: float | None = field(default=None, metadata=positive(MAX_BANDWIDTH_GB_S))
    pcie_gen: int | None = field(default=None, metadata={"min": 3, "max": 6})
    """PCIe generation of the node's links; the default of the three below. ``None``: the lower of
    the accelerator's and the CPU's catalog generations."""
    accelerator_pcie_gen: int | None = field(default=None, metadata={"min": 3, "max": 6})
    """Generation of each accelerator's x16 link (to its PCIe switch, or to a root port without
    one); ``None`` = ``pcie_gen``."""
    nic_pcie_gen: int | None = field(default=None, metadata={"min": 3, "max": 6})
    """Generation of each compute NIC's x16 link (to the switch beside the accelerators, or to the
    CPU for ``nic_attach = "cpu"``); ``None`` = ``pcie_gen``."""
    cpu_pcie_gen: int | None = field(default=None, metadata={"min": 3, "max": 6})
    """Generation of the links into the CPUs' root ports (PCIe switch uplinks); ``None`` =
    ``pcie_gen``. A generation other than the accelerators' states a PCIe switch between them:
    HGX B300's ConnectX-8 SuperNICs carry a Gen6 switch joining a GPU and its NIC at Gen6 to a
    Gen5 host (docs/design.md, section 4)."""
    pcie_switch_share: int = field(default=1, metadata=upto(MAX_ACCELERATORS_PER_NODE, 1))
    """Accelerators sharing one upstream x16 PCIe link to the host (1 = each has its own)."""
    scaleup: Topology | None = None
    scaleup_gb_s: float | None = field(default=None, metadata=positive(MAX_BANDWIDTH_GB_S))
    """Scale-up bandwidth per accelerator per direction (GB/s)."""
    nic_attach: NicAttach = "accelerator"
    """``accelerator``: NICs beside the accelerators on PCIe switches (GPUDirect, ZionEX/DGX);
    ``cpu``: NICs on the CPU sockets, traffic staged through host memory (Zion)."""
    frontend_nics: int = field(default=1, metadata=upto(MAX_NICS_PER_NODE))
    frontend_nic_gbit_s: float = field(default=100.0, metadata=positive(MAX_LINK_GBIT_S))
    """Front-end (data ingestion) NICs; they bound the input pipeline when ``input_source`` is
    ``network``."""
    input_source: InputSource = "local"
    """Where each step's input comes from. ``local`` (default): local NVMe storage or host memory,
    as MLPerf-class training reads its pre-processed dataset (every MLPerf Training DLRM submission
    stages it on the node), so each device's PCIe link bounds the input. ``network``: streamed from
    remote readers through the front-end NICs (the compute NICs when there are none), as
    production training with a separate data-ingestion tier does (Mudigere et al., "Software-
    hardware co-design for fast and scalable training of deep learning recommendation models",
    ISCA 2022: ZionEX reader tier); docs/design.md, section 5."""
    ddr_channels_per_socket: int | None = field(default=None,
                                                 metadata=upto(MAX_DDR_CHANNELS_PER_SOCKET, 1))
    cpu_compute_cores: int | None = field(default=None, metadata=upto(MAX_CPU_CORES, 1))
    """Cores of each socket that run the training math on a node without accelerators; the others
    run the communication library's workers (Intel's MLPerf DLRM runs pin oneCCL's
    ``CCL_WORKER_COUNT`` workers to physical cores and give the model ``OMP_NUM_THREADS`` of
    them: 20 or 24 of 28 on Cooper Lake; all 56 on Sapphire Rapids in v2.1, 52 in v3.1). ``None``:
    every core of the catalog's CPU. Only nodes with ``accelerators = 0`` read it."""
    hbm_cache_gb: float | None = field(default=None, metadata=upto(MAX_MEMORY_GB))
    """HBM per accelerator reserved as a cache over host-resident tables; ``None`` = all HBM the
    placement leaves free."""
    cxl_memory: str = ""
    """Catalog key of the CXL Type 3 memory expanders behind the CPUs (``dse list cxl``); empty:
    none. With ``cxl_modules`` they form the node's ``cxl`` memory tier, after host DDR."""
    cxl_modules: int = field(default=0, metadata=upto(MAX_MEMORY_MODULES_PER_NODE))
    """How many ``cxl_memory`` modules the node carries (0: no CXL tier)."""
    rack_units: int | None = field(default=None, metadata=upto(MAX_RACK_UNITS, 1))
    """Height of the node (U), which the facility's racks hold (``[facility] rack_units`` of the
    catalog; :func:`dse.model.cost.facility_racks`); ``None``: the catalog chassis' (8U, an
    8-GPU SXM server). A rack-scale system's nodes are in its own racks and never read it."""
    accelerator: str = field(default="", kw_only=True)
    """The accelerator's catalog key; required unless ``accelerators = 0``."""


@dataclass(frozen=True, slots=True)
class NetworkSpec:
    """Scale-out network among nodes."""

    topology: NetworkTopology = "fat_tree"
    oversubscription: float = field(default=1.0, metadata=upto(MAX_OVERSUBSCRIPTION, 1.0))


@dataclass(frozen=True, slots=True)
class PodSpec:
    """A scale-up domain spanning ``nodes`` nodes (NVL72-style); 1 = the fabric stays in the node."""

    nodes: int = field(default=1, metadata=upto(MAX_NODES, 1))


@dataclass(frozen=True, slots=True)
class RackSpec:
    """Nodes bought, powered and counted by the rack (NVL72-class rack-scale systems, :mod:`dse.model.racks`).

    ``nodes = 0`` (the default): nodes are bought one by one and no rack is counted. A rack's
    parts (NVLink switch trays, other shared gear) are priced and powered once per rack, never per
    node."""

    nodes: int = field(default=0, metadata=upto(MAX_NODES))
    """Nodes (compute trays) in a whole rack; NVL72: 18."""
    fractions: tuple[float, ...] = (1.0,)
    """Shares of a whole rack a vendor sells as one rack (NVL36: ``[0.5, 1]``); each unit is one rack."""
    switch_trays: int = field(default=0, metadata=upto(MAX_NODES))
    """Scale-up switch trays per rack; they replace the per-accelerator scale-up switch share."""
    switch_tray_w: float = field(default=0.0, metadata=upto(MAX_RACK_W))
    """Draw of one switch tray (W, DC side)."""
    switch_tray_usd: float = field(default=0.0, metadata=upto(MAX_PRICE_USD))
    """Price of one switch tray beyond what the accelerator's price already covers (USD)."""
    shared_w: float = field(default=0.0, metadata=upto(MAX_RACK_W))
    """Other rack-level draw (W, DC side): management switches."""
    shared_usd: float = field(default=0.0, metadata=upto(MAX_PRICE_USD))
    """Other rack-level parts not in the accelerator's price (USD): rack, bus bar."""
    liquid_kw: float = field(default=0.0, metadata=upto(MAX_RACK_W / 1000.0))
    """Heat the rack's liquid loop carries at full load (kW): the rack buys and powers that share
    of a coolant distribution unit (the catalog's ``[cdu]``); 0 for a rack cooled by air."""


@dataclass(frozen=True, slots=True)
class SoftwareSpec:
    """Software capabilities the model assumes (defaults: MLPerf-grade HugeCTR practice)."""

    hot_embedding_replication: bool = True
    """Replicate each table's most popular rows on every device (HugeCTR's hybrid embedding, NVIDIA
    MLPerf Training v1.0 onward); off reproduces plain model-parallel embeddings."""
    replicate_small_tables: bool = True
    """Keep tables with fewer rows than a device's local batch data-parallel, a copy on every device
    (TorchRec's data-parallel sharding; in HugeCTR's hybrid embedding every row of such a table is
    frequent). Off: every table is model-parallel (NVIDIA DeepLearningExamples DLRM)."""
    replicate_below_rows: int | None = field(default=None, metadata=upto(MAX_ROWS_PER_TABLE, 1))
    """With ``replicate_small_tables``: copy on every device the tables of fewer rows than this,
    in place of the batch rule above (Intel's MLPerf CPU DLRM: 2,048, its
    ``sparse_dense_boundary``). ``None``: the batch rule."""
    split_tables_to_balance: bool = True
    """Split a table column-wise when its load exceeds a device's fair share (TorchRec, HugeCTR).
    Off: whole tables, split only when one does not fit a device (NVIDIA DeepLearningExamples: "each
    smaller table is placed entirely on a single device")."""
    overlap_weight_gradients: bool = True
    """Compute the top part's weight gradients on a side stream while the all-to-all and the
    embedding update of the backward run. The reference software does (MLPerf Training v2.0
    HugeCTR: ``async_mlp_wgrad = True`` in NVIDIA's DLRM configuration,
    mlcommons/training_results_v2.0 ``NVIDIA/benchmarks/dlrm/implementations/hugectr/dgx_a100.py``,
    and v2.1's ``hugectr-preview/dgx_h100.py``; HugeCTR then puts each fused layer's weight GEMM
    on its ``comp_overlap_stream``), as does the
    DCNv2 reference (``DenseLayerComputeConfig(async_wgrad=True)``, MLPerf v3.0/v3.1 dlrm_dcnv2
    train.py). Off: the top part's whole backward precedes the all-to-all (HugeCTR before v3.3,
    DeepLearningExamples' framework autograd). A node without accelerators has no side stream
    whatever this says: the CPU class's measured software (Intel's DLRM on PyTorch) runs its
    backward in framework autograd."""
    flat_key_exchange: bool = False
    """Exchange every model-parallel key with its owner before the lookup by a flat all-to-all over
    all G devices, two rounds a step (a count per peer, then the keys), as HugeCTR 23.04/23.08's
    data distributor does (MLPerf Training v3.0/v3.1 DCNv2: ``ncclSend``/``ncclRecv`` per peer in
    ``HugeCTR/embedding/data_distributor/data_distributor.cu``, v23.04.00, and
    ``sparse_data_distribution_op_impl.cu``, v23.08.00; docs/sources.md). Off: the keys arrive with
    the input and only the embedding vectors are exchanged (HugeCTR's hybrid embedding, TorchRec)."""
    bottom_mlp_on_one_device: bool = False
    """Run the bottom MLP model-parallel on device 0 for the whole global batch, with no tables on
    that device; its output joins the all-to-all and its gradients skip the allreduce (NVIDIA
    DeepLearningExamples PyTorch DLRM, "Embedding table placement and load balancing")."""
    host_tables: HostServing = "auto"
    """How the tables that live off the devices (host DDR, CXL memory) are served:

    - ``auto``: behind a cache in the device's spare memory where it has some, else pooled by the
      CPUs (dse's placement before this setting);
    - ``cache``: behind a cache in the device's memory, misses read over the host link (TorchRec's
      ``FUSED_UVM_CACHING`` compute kernel, FBGEMM's ``EmbeddingLocation.MANAGED_CACHING``);
    - ``uvm``: read by the device over the host link with no cache (zero-copy UVM: TorchRec's
      ``FUSED_UVM``, FBGEMM's ``EmbeddingLocation.MANAGED``);
    - ``cpu``: gathered, pooled and updated by the host CPUs, pooled vectors and their gradients
      crossing the host link (Zion, Naumov et al. 2020; NVIDIA DeepLearningExamples TensorFlow2
      DLRM, whose ``DualEmbeddingGroup`` "will use CPU memory for the largest tables" and looks
      them up there)."""
    host_table_order: HostOrder = "density"
    """Which tables leave the devices when they do not all fit: ``density``, the fewest lookups per
    byte first (dse's planner, in the spirit of TorchRec's, which ranks by cost); ``largest``, the
    largest tables first (NVIDIA DeepLearningExamples TensorFlow2 DLRM, ``DualEmbeddingGroup``,
    its ``cpu_offloading_threshold_gb``)."""


@dataclass(frozen=True, slots=True)
class ConstraintsSpec:
    """Which parts a design may use (the buildability rules, docs/design.md, section 4)."""

    year: int | None = field(default=None, metadata={"min": 2000})
    """Only parts on sale by this year (accelerator, CPU, PCIe generation, NIC speed); ``None``:
    any catalogued part."""
    hypothetical: bool = False
    """Allow what-if parts the model can price but nobody sells (an HBM capacity or bandwidth the
    accelerator is not offered with); every output marks such a design as a what-if."""


@dataclass(frozen=True, slots=True)
class SystemSpec:
    """A cluster of identical nodes (the system file)."""

    nodes: int = field(metadata=upto(MAX_NODES, 1))
    node: NodeSpec
    network: NetworkSpec = NetworkSpec()
    pod: PodSpec = PodSpec()
    rack: RackSpec = RackSpec()
    racks: int | None = field(default=None, metadata=upto(MAX_NODES, 1))
    """Whole racks (rack-scale systems): sets ``nodes`` to ``racks x rack.nodes``, so a search
    space can vary racks instead of trays."""
    software: SoftwareSpec = SoftwareSpec()
    constraints: ConstraintsSpec = ConstraintsSpec()
    name: str = ""
    description: str = ""
    source: str = ""


@dataclass(frozen=True, slots=True)
class System:
    """A resolved system: every figure the model needs, as plain numbers.

    Bandwidths are bytes/s per direction; capacities bytes; powers watts; prices USD.
    """

    spec: SystemSpec
    accelerator: Accelerator
    cpu: Cpu
    nodes: int
    accelerators_per_node: int
    hbm_bytes: float
    """HBM per accelerator (0 on a node without accelerators)."""
    hbm_bytes_s: float
    peak_flops: dict[str, float]
    """Peak FLOP/s per precision name after fallbacks (e.g. tf32 on V100 runs at fp32 peak)."""
    precision_fallback: dict[str, str]
    scaleup: Topology
    scaleup_bytes_s: float
    scaleup_domain: int
    """Accelerators reachable over the scale-up fabric (a node, or a pod of nodes)."""
    pcie_bytes_s: float
    """Host-link bandwidth per accelerator per direction: the slowest link between it and the CPU
    (its own x16 link, or its share of the switch uplink at the CPU side's generation)."""
    pcie_gen: int
    """Generation of the accelerators' links (and of the PCIe switches they sit behind)."""
    cpu_pcie_gen: int
    """Generation of the links into the CPUs' root ports."""
    nic_pcie_gen: int
    """Generation of the compute NICs' links."""
    nic_path_bytes_s: float
    """Bandwidth per direction between an accelerator and its compute NIC: GPUDirect through the
    switch beside it (the slower of the accelerator's and the NIC's x16 links), or the accelerator's
    host link when the NICs sit on the CPUs. A node without accelerators is its own device: its
    path is its NICs' links (:attr:`nic_links_bytes_s`)."""
    nic_link_gen: int
    """PCIe generation a compute NIC's x16 link runs at (:func:`nic_link_generation`)."""
    nic_links_bytes_s: float
    """The compute NICs' own PCIe links together, per direction: ``node.nics`` x16 links at
    :attr:`nic_link_gen`, whatever shares them (infinite for on-die ports, which have no link)."""
    ddr_bytes: float
    """Host DDR of the whole node."""
    ddr_bytes_s: float
    """Host DDR bandwidth of the whole node."""
    socket_link_bytes_s: float
    nic_bytes_s: float
    """Scale-out bandwidth of the whole node per direction (all compute NICs)."""
    frontend_bytes_s: float
    """Front-end NIC bandwidth of the whole node per direction."""
    input_nic_bytes_s: float
    """Bandwidth of the NICs each step's input arrives through: the front-end NICs (or the compute
    NICs without them) when ``node.input_source = "network"``, 0 when the input is read locally."""
    network: NetworkSpec
    tiers: tuple[MemoryTier, ...]
    """Where embedding rows can live, fastest first (:mod:`dse.model.tiers`): the training
    device's own memory, then the node's pools behind its host link, in the order the placement
    fills them."""
    cpu_only: bool = False
    """The node has no accelerators (``node.accelerators = 0``): its CPU sockets are one training
    device (:func:`cpu_device`), so ``accelerators_per_node`` is 1, the "accelerator" is the sockets
    and the device's own memory (its first tier) is the node's DDR."""

    @property
    def tier_layout(self) -> tuple[tuple[str, float, int], ...]:
        """Each tier's name, capacity (bytes per device or node) and access unit (bytes): all a
        plan reads of the tiers (never their bandwidths)."""
        return tuple([(t.name, t.capacity_bytes, t.access_bytes) for t in self.tiers])

    @property
    def accelerators_total(self) -> int:
        """Accelerators in the cluster (G)."""
        return self.nodes * self.accelerators_per_node

    @property
    def on_die_nics(self) -> bool:
        """The compute NICs are the accelerator's own on-die Ethernet ports, not NIC cards: Gaudi 2
        and Gaudi 3 integrate 24 RoCE ports (100 and 200 GbE) on the die, ``nic_ports`` of which
        face scale-out in the 8-card servers (Intel Gaudi 2 and Gaudi 3 white papers,
        docs/sources.md#intel-gaudi-2). No card is bought or powered for them (their power is in
        the accelerator's TDP); the switch ports and optics they plug into still are."""
        return on_die_nics(self.accelerator, self.spec.node.nic_attach)


_FALLBACK: dict[str, tuple[str, ...]] = {
    "fp32": ("fp32",),
    "tf32": ("tf32", "fp32"),
    "amp": ("fp16", "bf16", "fp32"),
    "fp16": ("fp16", "bf16", "fp32"),
    "bf16": ("bf16", "fp16", "fp32"),
    "fp8": ("fp8",),
}
"""What a framework runs each precision at when the part lacks it (no tf32 on V100: fp32 math).
Each fallback keeps the precision's element widths (tf32 and fp32 store 4 bytes, bf16 and fp16 2),
so it changes the math peak only. fp8 has none: fp8 training stores 1-byte activations, and a part
without fp8 tensor cores (V100, A100: the A100 datasheet lists TF32, BF16, FP16, INT8 and INT4
tensor-core peaks, no FP8) cannot run it; NVIDIA's Transformer Engine refuses fp8 below compute
capability 8.9 (``check_fp8_support``). So fp8 there is infeasible, not fp16 math with fp8 bytes
(docs/sources.md#nvidia-a100)."""


def _peak_flops(acc: Accelerator) -> tuple[dict[str, float], dict[str, str]]:
    peaks: dict[str, float] = {}
    used: dict[str, str] = {}
    for precision, chain in _FALLBACK.items():
        for candidate in chain:
            value: float | None = getattr(acc.peak_tflops, candidate)
            if value:
                peaks[precision] = value * 1e12
                used[precision] = candidate
                break
        else:
            # No published peak for this precision (Gaudi2 fp32): the design is scored infeasible,
            # with the lowest published peak standing in for the estimate.
            peaks[precision] = min(v for v in (acc.peak_tflops.fp32, acc.peak_tflops.tf32,
                                               acc.peak_tflops.bf16, acc.peak_tflops.fp16,
                                               acc.peak_tflops.fp8) if v) * 1e12
            used[precision] = "unsupported"
    return peaks, used


def cpu_device(cpu: Cpu, sockets: int, compute_cores: int | None = None) -> Accelerator:
    """The training device of a node without accelerators: its ``sockets`` CPUs as one device.

    Its peaks are the sockets' summed (the catalog's per-socket ``peak_tflops``, for
    ``compute_cores`` of each socket's cores when given: the rest run no math); it has no memory of
    its own in this record (the node's DDR is its first memory tier, :attr:`System.tiers`, so the
    placement puts every table in DDR and the step reads them at DDR speed), no scale-up links (one
    device a node: every all-to-all and allreduce crosses the NICs) and no price or power of its own
    (the CPUs, DDR and NICs are costed as parts). The one device per node stands for the sockets
    working in shared memory (Intel's MLPerf CPU DLRM runs one rank a socket; their exchanges
    inside a node cross UPI, which this device does not time: the calibration's CPU efficiencies
    absorb it)."""
    peak = cpu.peak_tflops
    cores = cpu.cores if compute_cores is None else compute_cores
    scale = sockets * cores / cpu.cores
    # The socket and core counts in the name: designs that share a name share their step loads (a
    # sweep's memo, dse.model.timing.loads_key), and the peak grows with both.
    name = f"CPU device ({sockets} x {cpu.name}" + (")" if cores == cpu.cores else f", {cores} cores each)")
    return Accelerator(
        name=name,
        peak_tflops=PeakTflops(**{p: (v * scale if v else None) for p in PRECISIONS
                                  for v in (getattr(peak, p),)}),
        hbm_gb=0.0, hbm_gb_s=0.0, scaleup_gb_s=0.0, default_scaleup="none",
        scaleup_links=0, scaleup_link_gb_s=0.0, switch_domain_max=0, host_pcie_lanes=LANES_X16,
        available=cpu.available, pcie_gen=cpu.pcie_gen, tdp_w=0.0, price_usd=0.0, idle_w=0.0,
        memory_type="DDR", source=cpu.peak_source or cpu.source, price_source="costed as CPUs and DDR",
        vendor=cpu.vendor,
    )


PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8")
"""The fields of :class:`~dse.model.catalog.PeakTflops`."""
LANES_X16 = 16


def on_die_nics(accelerator: Accelerator, nic_attach: str) -> bool:
    """:attr:`System.on_die_nics` of a node of ``accelerator`` with its NICs at ``nic_attach``."""
    return accelerator.nic_ports > 0 and nic_attach == "accelerator"


def nic_link_generation(nic_attach: str, nic_gen: int, cpu_gen: int, cpu: Cpu) -> int:
    """The PCIe generation a compute NIC's x16 link runs at: ``nic_gen``; a NIC on the CPUs at the
    lowest of that, the CPU side's links and the CPU's own (a link trains at the slower end's)."""
    return min(nic_gen, cpu_gen, cpu.pcie_gen) if nic_attach == "cpu" else nic_gen


def cxl_tier(node: NodeSpec, cat: Catalog, source: str) -> tuple[MemoryTier, ...]:
    """The node's CXL memory tier (``node.cxl_modules`` of ``node.cxl_memory``), or none."""
    if not node.cxl_modules:
        return ()
    if not node.cxl_memory:
        raise DseInputError(source, "node.cxl_memory", "cxl_modules needs the module's catalog key "
                            "(dse list cxl)")
    part = cat.cxl_named(node.cxl_memory, source, "node.cxl_memory")
    return (memory_tier("cxl", "node", node.cxl_modules * part.capacity_gb * GB,
                        node.cxl_modules * part.gb_s * GB),)


def resolve_system(spec: SystemSpec, catalog: Catalog | None = None, source: str = "system") -> System:
    """Resolve ``spec`` against the catalog, validating combinations the schema cannot express."""
    cat = catalog or load_catalog()
    node = spec.node
    cpu = cat.cpu_named(node.cpu, source, "node.cpu")
    if node.accelerators == 0:
        return _resolve_cpu_only(spec, cat, cpu, source)
    if not node.accelerator:
        raise DseInputError(source, "node.accelerator", _NO_ACCELERATOR)
    acc = cat.accelerator_named(node.accelerator, source, "node.accelerator")
    scaleup: Topology = node.scaleup or acc.default_scaleup
    scaleup_gb_s = node.scaleup_gb_s if node.scaleup_gb_s is not None else acc.scaleup_gb_s
    if scaleup != "none" and scaleup_gb_s <= 0:
        raise DseInputError(
            source, "node.scaleup_gb_s", f"scale-up topology {scaleup!r} needs a positive bandwidth"
        )
    pcie_gen = node.pcie_gen or min(acc.pcie_gen, cpu.pcie_gen)
    acc_gen = node.accelerator_pcie_gen or pcie_gen
    cpu_gen = node.cpu_pcie_gen or pcie_gen
    nic_gen = node.nic_pcie_gen or pcie_gen
    link_gen = nic_link_generation(node.nic_attach, nic_gen, cpu_gen, cpu)
    acc_link = cat.pcie_gen(acc_gen).x16_gb_s * GB
    host_link = min(acc_link, cat.pcie_gen(cpu_gen).x16_gb_s * GB / node.pcie_switch_share)
    ddr = cat.ddr.get(cpu.ddr)
    if ddr is None:
        raise DseInputError(source, "node.cpu", f"cpu {node.cpu!r} names unknown ddr {cpu.ddr!r}")
    channels = node.ddr_channels_per_socket or cpu.ddr_channels
    domain_nodes = min(spec.pod.nodes, spec.nodes)
    if spec.pod.nodes > 1 and scaleup != "switch":
        raise DseInputError(source, "pod.nodes", "a multi-node scale-up pod needs scaleup = 'switch'")
    peaks, used = _peak_flops(acc)
    frontend = node.frontend_nics * gbit_s_to_bytes_s(node.frontend_nic_gbit_s)
    input_nics = frontend if node.input_source == "network" else 0.0
    if node.input_source == "network" and frontend <= 0:
        input_nics = node.nics * gbit_s_to_bytes_s(node.nic_gbit_s)
        if input_nics <= 0:
            raise DseInputError(source, "node.input_source",
                                "input_source = 'network' needs frontend_nics or nics")
    hbm_bytes, hbm_bytes_s = (node.hbm_gb or acc.hbm_gb) * GB, (node.hbm_gb_s or acc.hbm_gb_s) * GB
    ddr_bytes_s = node.cpu_sockets * channels * ddr.channel_gb_s * GB
    return System(
        spec=spec,
        accelerator=acc,
        cpu=cpu,
        nodes=spec.nodes,
        accelerators_per_node=node.accelerators,
        hbm_bytes=hbm_bytes,
        hbm_bytes_s=hbm_bytes_s,
        peak_flops=peaks,
        precision_fallback=used,
        scaleup=scaleup,
        scaleup_bytes_s=scaleup_gb_s * GB if scaleup != "none" else 0.0,
        scaleup_domain=node.accelerators * domain_nodes if scaleup != "none" else node.accelerators,
        pcie_bytes_s=host_link,
        pcie_gen=acc_gen,
        cpu_pcie_gen=cpu_gen,
        nic_pcie_gen=nic_gen,
        nic_path_bytes_s=(min(acc_link, cat.pcie_gen(nic_gen).x16_gb_s * GB)
                          if node.nic_attach == "accelerator" else host_link),
        nic_link_gen=link_gen,
        nic_links_bytes_s=(math.inf if on_die_nics(acc, node.nic_attach)
                           else node.nics * cat.pcie_gen(link_gen).x16_gb_s * GB),
        ddr_bytes=node.ddr_gb * GB,
        ddr_bytes_s=ddr_bytes_s,
        socket_link_bytes_s=cpu.socket_link_gb_s * GB,
        nic_bytes_s=node.nics * gbit_s_to_bytes_s(node.nic_gbit_s),
        frontend_bytes_s=frontend,
        input_nic_bytes_s=input_nics,
        network=spec.network,
        tiers=(memory_tier("hbm", "device", hbm_bytes, hbm_bytes_s),
               memory_tier("ddr", "node", node.ddr_gb * GB, ddr_bytes_s), *cxl_tier(node, cat, source)),
    )


def _resolve_cpu_only(spec: SystemSpec, cat: Catalog, cpu: Cpu, source: str) -> System:
    """:func:`resolve_system` for a node without accelerators: one :func:`cpu_device` a node.

    Its DDR is the device's own memory, its one tier, so no node tier is left behind it (a table
    that does not fit the DDR finds room nowhere, and the design is infeasible); DDR bandwidth also
    carries the NIC traffic staged in host memory. Input arrives in DDR: its "host link" is DDR
    bandwidth. The NICs hang off the CPUs, each on an x16 link of its own."""
    node = spec.node
    ddr = cat.ddr.get(cpu.ddr)
    if ddr is None:
        raise DseInputError(source, "node.cpu", f"cpu {node.cpu!r} names unknown ddr {cpu.ddr!r}")
    if spec.pod.nodes > 1:
        raise DseInputError(source, "pod.nodes", "a node without accelerators has no scale-up pod")
    channels = node.ddr_channels_per_socket or cpu.ddr_channels
    ddr_gb_s = node.cpu_sockets * channels * ddr.channel_gb_s
    if not any(getattr(cpu.peak_tflops, p) for p in PRECISIONS):
        raise DseInputError(source, "node.cpu", f"cpu {node.cpu!r} has no peak_tflops in the catalog, "
                            "so a node without accelerators cannot train on it")
    if node.cpu_compute_cores is not None and node.cpu_compute_cores > cpu.cores:
        raise DseInputError(source, "node.cpu_compute_cores",
                            f"{node.cpu_compute_cores} exceeds the {cpu.cores} cores of cpu {node.cpu!r}")
    device = cpu_device(cpu, node.cpu_sockets, node.cpu_compute_cores)
    peaks, used = _peak_flops(device)
    gen = node.pcie_gen or cpu.pcie_gen
    nic_gen = node.nic_pcie_gen or gen
    cpu_gen = node.cpu_pcie_gen or gen
    link_gen = nic_link_generation("cpu", nic_gen, cpu_gen, cpu)
    links = node.nics * cat.pcie_gen(link_gen).x16_gb_s * GB
    nics = node.nics * gbit_s_to_bytes_s(node.nic_gbit_s)
    frontend = node.frontend_nics * gbit_s_to_bytes_s(node.frontend_nic_gbit_s)
    input_nics = (frontend or nics) if node.input_source == "network" else 0.0
    if node.input_source == "network" and input_nics <= 0:
        raise DseInputError(source, "node.input_source",
                            "input_source = 'network' needs frontend_nics or nics")
    return System(
        spec=spec, accelerator=device, cpu=cpu, nodes=spec.nodes, accelerators_per_node=1,
        hbm_bytes=0.0, hbm_bytes_s=0.0, peak_flops=peaks,
        precision_fallback=used, scaleup="none", scaleup_bytes_s=0.0, scaleup_domain=1,
        pcie_bytes_s=ddr_gb_s * GB, pcie_gen=gen, cpu_pcie_gen=cpu_gen,
        nic_pcie_gen=nic_gen, nic_path_bytes_s=links, nic_link_gen=link_gen, nic_links_bytes_s=links,
        ddr_bytes=node.ddr_gb * GB, ddr_bytes_s=ddr_gb_s * GB, socket_link_bytes_s=cpu.socket_link_gb_s * GB,
        nic_bytes_s=nics, frontend_bytes_s=frontend, input_nic_bytes_s=input_nics, network=spec.network,
        # (The sector unit keeps the figures this node had when its DDR stood in for HBM.)
        tiers=(memory_tier("ddr", "device", node.ddr_gb * GB, ddr_gb_s * GB, HBM_SECTOR_BYTES),
               *cxl_tier(node, cat, source)),
        cpu_only=True,
    )


def system_presets() -> tuple[str, ...]:
    """Names of the system presets: ``./systems`` under the working directory and the packaged ones."""
    return SYSTEM.names()


def read_system_data(name_or_path: str) -> tuple[dict[str, Any], str]:
    """The raw table of a system preset or file, and the source name used in errors."""
    path = named_file(name_or_path, SYSTEM)
    return read_toml(path), source_name(path, SYSTEM)


def system_spec_from_mapping(data: dict[str, Any], source: str) -> SystemSpec:
    """Validate a system table (as read from TOML), including the cluster-size limit that no single
    field can express (:data:`~dse.limits.MAX_ACCELERATORS_TOTAL`)."""
    spec = with_racks(from_mapping(SystemSpec, data, source), source)
    if spec.node.accelerators and not spec.node.accelerator:
        raise DseInputError(source, "node.accelerator", _NO_ACCELERATOR)
    total = spec.nodes * spec.node.accelerators
    if total > MAX_ACCELERATORS_TOTAL:
        raise DseInputError(source, "nodes", f"{spec.nodes:,} nodes of {spec.node.accelerators:,} "
                            f"accelerators make {total:,}; at most {MAX_ACCELERATORS_TOTAL:,} "
                            "accelerators per cluster are supported")
    return spec


def with_racks(spec: SystemSpec, source: str) -> SystemSpec:
    """``spec`` with its rack fractions checked and ``racks`` turned into ``nodes``."""
    rack = spec.rack
    for i, share in enumerate(rack.fractions):
        units = share * rack.nodes
        if not 0 < share <= 1 or (rack.nodes and not float(units).is_integer()):
            raise DseInputError(source, f"rack.fractions[{i}]", f"{share:g} of a {rack.nodes}-node "
                                "rack must be a whole number of nodes, above 0 and at most 1")
    if spec.racks is None:
        return spec
    if rack.nodes == 0:
        raise DseInputError(source, "racks", "racks needs rack.nodes (nodes in a whole rack)")
    return dataclasses.replace(spec, nodes=spec.racks * rack.nodes)


def load_system_spec(
    name_or_path: str, overrides: tuple[tuple[str, Any], ...] = ()
) -> SystemSpec:
    """Load a system spec by preset name or TOML path with ``(dotted.key, value)`` overrides."""
    if not overrides:
        return _spec_cached(name_or_path)
    data, source = read_system_data(name_or_path)
    for key, value in overrides:
        data = apply_override(data, key, value)
    return system_spec_from_mapping(data, source)


@functools.lru_cache(maxsize=64)
def _spec_cached(name_or_path: str) -> SystemSpec:
    data, source = read_system_data(name_or_path)
    return system_spec_from_mapping(data, source)


def load_system(
    name_or_path: str,
    overrides: tuple[tuple[str, Any], ...] = (),
    catalog: Catalog | None = None,
) -> System:
    """Load and resolve a system by preset name or TOML path."""
    spec = load_system_spec(name_or_path, overrides)
    source = name_or_path if name_or_path.endswith(".toml") else f"system preset {name_or_path}"
    return resolve_system(spec, catalog, source)
