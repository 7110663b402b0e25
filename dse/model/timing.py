"""Step-time model: every stage of a training step, their overlaps, the critical path and the bound.

Inputs are plain data (workload, resolved system, placement plan, calibration); the output is a
:class:`StepTime`. The overlaps are written as an explicit tree of sequential and parallel parts
(:func:`step_tree`), so "which stage hides behind which" is read off one function:

    forward   = max( [embedding lookup (HBM || host CPUs -> host link)] -> [all-to-all (fabric || network)],
                     bottom-MLP forward )
    middle    = interaction + top-MLP forward, then top-MLP + interaction backward
                || the next step's flat key all-to-all (software.flat_key_exchange only)
    backward  = max( [all-to-all (fabric || network)]
                       -> [embedding backward+update (HBM || host link -> host CPUs)],
                     bottom-MLP backward,
                     dense-gradient allreduce )  # beside the all-to-all too (overlap_ar_a2a)
    optimizer = dense optimizer update (memory bound)
    overhead  = kernel launches counted from the model's structure + a fixed per-step cost
    step      = max(sum of the above, input pipeline)   # input for step i+1 overlaps step i

Notation (docs/design.md, section 5): G accelerators, a per node, b = B/G local batch, s_c bytes per
communicated element.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from dse.model.catalog import Catalog
from dse.model.equivalence import switch_hops
from dse.model.parameters import Calibration
from dse.model.placement import Plan
from dse.model.stages import STAGES as STAGES
from dse.model.stages import Breakdown, DenseTimes, EmbeddingTimes, LinkTimes, Stage, StageCosts
from dse.model.system import System
from dse.model.tiers import HOST_LINE_BYTES
from dse.model.widths import ACTIVATION_BYTES, COMM_BYTES
from dse.model.workload import Workload, derived

GEMM_TILE = 128
"""Output tile edge of a large-GEMM kernel (cuBLAS/CUTLASS 128x128 tiles; NVIDIA "Matrix
Multiplication Background" guide, wave quantisation)."""
SPLIT_K_MIN = 512
"""Shortest reduction chunk of a split-K GEMM [A: CUTLASS split-K kernels use K slices of a few
hundred elements or more]."""
DDP_BUCKET_BYTES = 25e6
"""Gradient bucket size of PyTorch DistributedDataParallel (default bucket_cap_mb=25)."""
KERNELS_PER_GEMM = 4
"""One fused forward GEMM (bias + activation), two backward GEMMs (data and weight gradient) and
one bias-gradient reduction."""
ACTIVATION_PASSES_FORWARD = 2
"""Memory passes over a layer's m x n output besides its GEMM, forward: the bias + activation
kernel reads the GEMM output and writes the activation (frameworks without epilogue fusion)."""
ACTIVATION_PASSES_BACKWARD = 4
"""Backward: the activation gradient reads the incoming gradient and the saved activation and writes
the gradient (3); the bias-gradient reduction reads the gradient again (1)."""
KERNELS_PER_STEP_FIXED = 8
"""Interaction forward and backward (2 + 2), loss forward and backward (2), optimizer (1) and the
gradient-scaler check (1)."""


@dataclass(frozen=True, slots=True)
class StepTime:
    """The step time and how it arises."""

    step_s: float
    breakdown: Breakdown
    """Critical-path seconds per stage (sums to ``step_s``)."""
    stages: StageCosts
    """Raw duration of every stage before overlaps."""
    bottleneck: str
    critical_path: tuple[str, ...]
    kernels: int
    notes: tuple[str, ...] = field(default=())

    @property
    def breakdown_s(self) -> dict[str, float]:
        """:attr:`breakdown` by stage name (``breakdown_s`` of ``dse evaluate --json``)."""
        return self.breakdown.as_dict()

    @property
    def stages_s(self) -> dict[str, float]:
        """:attr:`stages` by name (``stages_s`` of ``dse evaluate --json``)."""
        return self.stages.as_dict()


# --- a tiny overlap algebra ---------------------------------------------------------------------


class Leaf(NamedTuple):
    stage: str
    seconds: float
    label: str = ""


class Seq(NamedTuple):
    parts: tuple[Node, ...]


class Par(NamedTuple):
    parts: tuple[Node, ...]


Node = Leaf | Seq | Par


def critical(node: Node) -> tuple[float, dict[str, float], list[str]]:
    """Duration of ``node``, the seconds each stage contributes on its critical path, and the path.

    A sequence takes the sum of its parts; a parallel block its longest part (the first of equal
    ones), and only that part's stages count."""
    total, leaves = _longest(node)
    attr: dict[str, float] = {}
    for leaf in leaves:
        attr[leaf.stage] = attr.get(leaf.stage, 0.0) + leaf.seconds
    return total, attr, [leaf.label or leaf.stage for leaf in leaves]


def _longest(node: Node) -> tuple[float, list[Leaf]]:
    """Duration of ``node`` and the leaves on its critical path, in order."""
    if isinstance(node, Leaf):
        return node.seconds, [node]
    if isinstance(node, Seq):
        total = 0.0
        leaves: list[Leaf] = []
        for part in node.parts:
            t, p = _longest(part)
            total += t
            leaves += p
        return total, leaves
    best = _longest(node.parts[0])
    for part in node.parts[1:]:
        got = _longest(part)
        if got[0] > best[0]:  # the first of equal parts stays, as max() keeps it
            best = got
    return best


def _labels(node: Node) -> Iterable[str]:
    if isinstance(node, Leaf):
        yield node.label or node.stage
    else:
        for part in node.parts:
            yield from _labels(part)


# --- stage equations ----------------------------------------------------------------------------


def gemm_time(m: float, k: float, n: float, peak: float, eff: float, units: int,
              mem_bytes_s: float, elem: int) -> float:
    """Time of one (m x k) @ (k x n) GEMM: the slower of compute and memory rooflines.

    Compute runs at ``peak x eff`` scaled by wave quantisation: the kernel computes
    ceil(m/T) x ceil(n/T) output tiles on ``units`` compute units in whole waves, so small GEMMs
    leave units idle. When there are fewer tiles than units and k is long, the reduction is split
    (split-K, as cuBLAS does for weight gradients) in chunks of at least ``SPLIT_K_MIN``.
    ``units = 0`` disables quantisation.
    """
    # min() and max() are spelled out: the model calls this ~40 times per evaluation and the
    # builtins' call overhead is a measurable share of it.
    flops = 2.0 * m * k * n
    util = 1.0
    if units > 0:
        tiles = math.ceil(m / GEMM_TILE) * math.ceil(n / GEMM_TILE)
        by_units, by_k = units // tiles, int(k // SPLIT_K_MIN)
        splits = by_k if by_k < by_units else by_units
        if splits < 1:
            splits = 1
        tasks = tiles * splits
        fill = (m * n) / (tiles * GEMM_TILE * GEMM_TILE)
        util = fill * tasks / (math.ceil(tasks / units) * units)
        if util > 1.0:
            util = 1.0
    t_compute = flops / (peak * eff * util)
    t_memory = (m * k + k * n + m * n) * elem / mem_bytes_s
    return t_memory if t_memory > t_compute else t_compute


DENSE_CACHE_SIZE = 4096
"""Most :func:`dense_times` results kept with one workload (a search over float bandwidths would
otherwise grow its cache without bound; it starts afresh when full)."""


def _dense_caches(wl: Workload) -> dict[tuple[float, ...], DenseTimes]:
    """An empty cache of :func:`dense_times` results, kept with ``wl`` (see :func:`derived`)."""
    return {}


def cpu_efficiency_of(system: System, precision: str) -> str:
    """The calibration parameter a node without accelerators times ``precision``'s dense math at:
    ``cpu_matrix_efficiency`` when it runs on the CPU's matrix engine (``Cpu.matrix_precisions``,
    AMX), else ``cpu_dense_efficiency`` (the vector units)."""
    matrix = system.precision_fallback[precision] in system.cpu.matrix_precisions
    return "cpu_matrix_efficiency" if matrix else "cpu_dense_efficiency"


def dense_efficiency_of(system: System, precision: str) -> str:
    """The calibration parameter the training device times ``precision``'s dense math at: by the
    unit it runs on, an accelerator's SIMT (fp32), TF32 or half-precision tensor cores, or the
    CPU sockets' vector or matrix units (:func:`cpu_efficiency_of`)."""
    if system.cpu_only:
        return cpu_efficiency_of(system, precision)
    math_at = system.precision_fallback[precision]
    return ("dense_efficiency_simt" if math_at == "fp32" else
            "dense_efficiency_tf32" if math_at == "tf32" else "dense_efficiency_half")


def dense_efficiency(system: System, calib: Calibration, precision: str) -> float:
    """The share of ``precision``'s peak the device's dense math runs at: the calibration's
    efficiency of the unit it runs on (:func:`dense_efficiency_of`), and for half-precision tensor
    math also the part's measured matmul ceiling (``Accelerator.matmul_efficiency``), so that
    generations differ by what a matmul reaches on each, not by their peak alone."""
    name = dense_efficiency_of(system, precision)
    eff: float = getattr(calib, name)
    return eff * system.accelerator.matmul_efficiency if name == "dense_efficiency_half" else eff


def own_memory_bytes_s(system: System, calib: Calibration) -> float:
    """Bandwidth the training device reaches in its own memory (its first tier: HBM, or a CPU
    device's DDR) for embedding and element-wise work: the tier's peak at its calibrated
    efficiency."""
    own = system.tiers[0]
    eff: float = getattr(calib, own.kind.efficiency)
    return own.bytes_s * eff


def dense_times(wl: Workload, system: System, calib: Calibration, b: float,
                b_bottom: float | None = None) -> DenseTimes:
    """Forward/backward seconds of the bottom MLP, the top part (DCN + interaction + top MLP) and
    the dense optimizer, per device. ``b_bottom``: the bottom MLP's batch when it differs from ``b``
    (the whole global batch when it runs model-parallel on one device).

    The times depend on the workload and seven numbers alone (peak, efficiency, compute units, the
    bandwidth of the device's own memory, element bytes and the two batches): designs that share
    them (the same accelerator and device count, any links) share one computation, kept with the
    workload."""
    b_bottom = b if b_bottom is None else b_bottom
    precision = wl.precision
    peak = system.peak_flops[precision]
    eff = dense_efficiency(system, calib, precision)
    units = system.accelerator.compute_units
    mem = own_memory_bytes_s(system, calib)
    elem = ACTIVATION_BYTES[precision]
    cache = derived(wl, "timing.dense_times", _dense_caches)
    key = (peak, eff, units, mem, elem, b, b_bottom)
    got = cache.get(key)
    if got is None:
        if len(cache) >= DENSE_CACHE_SIZE:
            cache.clear()
        got = cache[key] = _dense_times(wl, peak, eff, units, mem, elem, b, b_bottom)
    return got


def _dense_times(wl: Workload, peak: float, eff: float, units: int, mem: float, elem: int, b: float,
                 b_bottom: float) -> DenseTimes:
    """:func:`dense_times` from its numbers."""
    n_bottom = len(wl.bottom_mlp)
    fwd = [0.0, 0.0]  # bottom, top
    bwd = [0.0, 0.0]
    wgrad = [0.0, 0.0]
    layers: dict[tuple[float, int, int], tuple[float, float, float, float]] = {}
    for i, (k, n) in enumerate(wl.mlp_layers()):
        part = 0 if i < n_bottom else 1
        m = b_bottom if i < n_bottom else b
        # DCNv2's cross layers repeat one shape: each shape is timed once.
        times = layers.get((m, k, n))
        if times is None:
            times = layers[m, k, n] = (
                gemm_time(m, k, n, peak, eff, units, mem, elem),
                gemm_time(m, n, k, peak, eff, units, mem, elem),  # data gradient
                gemm_time(k, m, n, peak, eff, units, mem, elem),  # weight gradient
                # Element-wise work around the GEMMs, memory bound (m x n activations per pass).
                m * n * elem / mem,
            )
        forward, data_grad, weight_grad, act = times
        fwd[part] += forward
        bwd[part] += data_grad
        bwd[part] += weight_grad
        wgrad[part] += weight_grad
        fwd[part] += ACTIVATION_PASSES_FORWARD * act
        bwd[part] += ACTIVATION_PASSES_BACKWARD * act
    top_fwd, top_bwd = fwd[1], bwd[1]
    if wl.interaction == "dot":
        f = wl.interaction_features()
        pairs = f * (f - 1) // 2
        flops = b * wl.interaction_flops_per_sample()
        nbytes = b * (f * wl.interaction_dim() + pairs) * elem
        t = max(flops / (peak * eff), nbytes / mem)
        top_fwd += t
        top_bwd += 2.0 * t
    # Dense optimizer: read weight, gradient and state, write weight and state (fp32).
    state = wl.dense_optimizer_state_per_param()
    return DenseTimes(bottom_fwd=fwd[0], bottom_bwd=bwd[0], top_fwd=top_fwd, top_bwd=top_bwd,
                      top_wgrad=wgrad[1], optimizer=wl.dense_params() * 4.0 * (3 + 2 * state) / mem)


@dataclass(frozen=True, slots=True)
class EmbeddingLoads:
    """Embedding bytes per step on the busiest device, before any bandwidth (see
    :func:`embedding_seconds`)."""

    local_fwd: float
    """Bytes in the device's own memory (its first tier) of the busiest device's own shards plus
    every device's replicas, forward."""
    local_bwd: float
    link: tuple[float, float]
    """Host-link bytes of the busiest device (forward, backward); zero without off-device shards."""
    far: tuple[tuple[float, float], ...]
    """Per node tier (the system's tiers after the first, in order): the bytes (forward, backward)
    the devices move there (cached and direct reads, and their updates) on the busiest node."""
    host: bool
    """Whether any shard lives off the devices."""
    pooled: tuple[tuple[float, float], ...] = ()
    """Per node tier: the bytes the host CPUs of the busiest node move there for the tables they
    pool (gathers forward; the read-modify-write of each touched row and its state backward)."""
    pooled_tables: int = 0
    """Tables (or their pieces) the host CPUs of the busiest node pool: each costs framework
    operations on the CPU every step (:data:`CPU_OPS_PER_TABLE`)."""


def embedding_loads(plan: Plan, accelerators_per_node: int,
                    node_tiers: tuple[str, ...] = ()) -> EmbeddingLoads:
    """The bandwidth-free part of :func:`embedding_seconds`: per-device and per-node byte maxima.
    ``node_tiers``: the names of the system's node tiers, in order (:attr:`EmbeddingLoads.far`)."""
    a = accelerators_per_node
    # Per device; byte counts are never negative, so a device without shards (0.0) cannot change
    # the maximum.
    local_f = [0.0] * plan.devices
    local_b = [0.0] * plan.devices
    link: dict[int, list[float]] = {}
    far: dict[tuple[str, int], list[float]] = {}  # (tier, node): bytes the devices move
    pooled: dict[tuple[str, int], list[float]] = {}  # (tier, node): bytes the CPUs move
    pooled_tables: dict[int, int] = {}  # node: tables its CPUs pool
    rep_f = rep_b = 0.0
    # Each group's traffic added to each of its devices in turn: a device's sum takes its shards in
    # plan order, as it would one shard at a time (a plan has a group per size of piece: 34 for the
    # 175 pieces of DCNv2 on 16 DGX H100).
    for shard, devices in zip(plan.group_shards, plan.group_devices, strict=True):
        traffic = shard.traffic
        f, bw = traffic.local_fwd, traffic.local_bwd
        d = shard.device
        if d < 0:
            rep_f += f
            rep_b += bw
            continue
        if len(devices) == 1:  # most groups are one whole table
            local_f[d] += f
            local_b[d] += bw
        else:
            for d in devices:
                local_f[d] += f
                local_b[d] += bw
        if traffic.link_fwd or traffic.link_bwd:
            tier = shard.tier
            by_cpu = shard.access == "pooled"
            into = pooled if by_cpu else far
            for d in devices:
                p = link.setdefault(d, [0.0, 0.0])
                p[0] += traffic.link_fwd
                p[1] += traffic.link_bwd
                n = into.setdefault((tier, d // a), [0.0, 0.0])
                n[0] += traffic.far_fwd
                n[1] += traffic.far_bwd
                if by_cpu:
                    pooled_tables[d // a] = pooled_tables.get(d // a, 0) + 1
    # (max(x) if x else 0.0 rather than max(x, default=0.0): a keyword makes max() parse its
    # arguments the slow way, ~1,000 instructions a call.)
    return EmbeddingLoads(
        local_fwd=(max(local_f) if local_f else 0.0) + rep_f,
        local_bwd=(max(local_b) if local_b else 0.0) + rep_b,
        link=(max([p[0] for p in link.values()]), max([p[1] for p in link.values()])) if link else (0.0, 0.0),
        far=tuple([_busiest_node(far, name) for name in node_tiers]) if far else _NO_FAR[len(node_tiers)],
        host=bool(link),
        pooled=tuple([_busiest_node(pooled, name) for name in node_tiers]) if pooled else (),
        pooled_tables=max(pooled_tables.values()) if pooled_tables else 0,
    )


_NO_FAR = [((0.0, 0.0),) * n for n in range(8)]
"""``EmbeddingLoads.far`` of a plan with nothing off the devices, by the number of node tiers."""


def _busiest_node(far: dict[tuple[str, int], list[float]], tier: str) -> tuple[float, float]:
    """The largest forward and backward bytes of any node in node tier ``tier`` (0 without any)."""
    fwd = [n[0] for (name, _), n in far.items() if name == tier]
    bwd = [n[1] for (name, _), n in far.items() if name == tier]
    return (max(fwd), max(bwd)) if fwd else (0.0, 0.0)


def embedding_seconds(loads: EmbeddingLoads, system: System, calib: Calibration) -> EmbeddingTimes:
    """Seconds of embedding work: the slowest device's bytes in its own memory over that tier's
    bandwidth (``emb_*``); its off-device traffic (``host_*``) bounded by its host link or by the
    busiest node of each node tier, whichever is slowest, each at its tier's efficiency (the host
    link at the host path's, ``host_efficiency``); and the host CPUs' work on the tables they pool
    (``cpu_*``, :func:`cpu_pooling_seconds`)."""
    mem = own_memory_bytes_s(system, calib)
    link = system.pcie_bytes_s * calib.host_efficiency
    worst = [0.0, 0.0]  # forward, backward
    cpu = (0.0, 0.0)
    if loads.host:
        tiers = system.tiers[1:]
        rates = [t.bytes_s * getattr(calib, t.kind.efficiency) for t in tiers]
        for i in (0, 1):
            t = loads.link[i] / link
            for rate, far in zip(rates, loads.far, strict=True):
                tier_s = far[i] / rate if rate else math.inf
                if tier_s > t:
                    t = tier_s
            worst[i] = max(0.0, t)
        if loads.pooled_tables:
            cpu = cpu_pooling_seconds(loads, rates, system, calib)
    return EmbeddingTimes(emb_fwd=loads.local_fwd / mem, emb_bwd=loads.local_bwd / mem,
                          host_fwd=worst[0], host_bwd=worst[1], cpu_fwd=cpu[0], cpu_bwd=cpu[1])


CPU_OPS_PER_TABLE = (1, 2)
"""Framework operations the host CPUs run a step for each table they pool: the lookup forward;
the gradient's scatter and the optimizer's update backward (PyTorch's ``EmbeddingBag`` on the CPU:
``embedding_bag`` forward, ``_embedding_bag_backward`` and the optimizer step; TensorFlow's CPU
embedding lookup and its sparse apply, as NVIDIA DeepLearningExamples TensorFlow2 DLRM runs them for
the tables ``DualEmbeddingGroup`` keeps on the CPU)."""
CPU_LINES_IN_FLIGHT = 10
"""Cache-line misses one core keeps in flight: its L1 data cache's fill buffers, 10 on Intel
Skylake/Cascade Lake (Intel 64 and IA-32 Architectures Optimization Reference Manual) and more on
later cores (16 from Ice Lake); the fewest, so that the bound below is the loosest a core keeps."""
DRAM_LOAD_LATENCY_S = 90e-9
"""Latency of a random load that misses every cache, on a loaded two-socket server [S: 80-100 ns
by Intel Memory Latency Checker on Skylake-SP to Sapphire Rapids, vendor and press measurements]."""


def cpu_pooling_seconds(loads: EmbeddingLoads, tier_rates: list[float], system: System,
                        calib: Calibration) -> tuple[float, float]:
    """Seconds (forward, backward) the host CPUs of the busiest node spend on the tables they pool
    (:attr:`EmbeddingLoads.pooled`), one after another with the host-link copy of their output in
    the step (:func:`step_tree`): the node tiers' bytes they gather (forward) and read, update and
    write back (backward), at the slower of the tiers' rates (DDR channels at ``host_efficiency``,
    as the CPU-only class times its own gathers) and the cores' (every core of every socket with
    :data:`CPU_LINES_IN_FLIGHT` random 64 B lines in flight over :data:`DRAM_LOAD_LATENCY_S`);
    then a framework operation cost per table and operation (:data:`CPU_OPS_PER_TABLE`,
    ``cpu_op_overhead_s``: a range, no measurement pins it)."""
    cores = system.spec.node.cpu_sockets * system.cpu.cores
    core_rate = cores * CPU_LINES_IN_FLIGHT * HOST_LINE_BYTES / DRAM_LOAD_LATENCY_S
    out = []
    for i, ops in enumerate(CPU_OPS_PER_TABLE):
        memory = 0.0
        total = 0.0
        for rate, bytes_ in zip(tier_rates, loads.pooled, strict=False):
            total += bytes_[i]
            t = bytes_[i] / rate if rate else math.inf
            if t > memory:
                memory = t
        gather = total / core_rate
        out.append((memory if memory > gather else gather)
                   + ops * loads.pooled_tables * calib.cpu_op_overhead_s)
    return out[0], out[1]


def topology_factor(topology: str, n: int) -> float:
    """Slow-down of an all-to-all among ``n`` devices on a scale-up topology, relative to a fabric
    that reaches every device's injection bandwidth.

    - ``switch``: 1 (non-blocking crossbar).
    - ``fully_connected``: 1 while every peer has a direct link (n <= 8, seven links per part as in
      OAM/MI300X); beyond that the extra peers are relayed over 2 hops.
    - ``ring`` (bidirectional): the mean hop distance, sum(min(j, n - j)) / (n - 1): 16/7 = 2.29 at 8.
    - ``hybrid_cube_mesh``: 1 up to 4 devices (a fully connected quad); 1.55 at 8 (1.4-1.7 measured
      on DGX-1-class boards: docs/design.md, section 5); growing with hypercube distance beyond.
    - ``none``: 1 here; the PCIe/host bandwidth itself is applied by the caller.
    """
    if n <= 2 or topology in ("switch", "none"):
        return 1.0
    if topology == "fully_connected":
        return 1.0 if n <= 8 else 2.0 - 7.0 / (n - 1)
    if topology == "ring":
        return sum(min(j, n - j) for j in range(1, n)) / (n - 1)
    if n <= 4:
        return 1.0
    if n <= 8:
        return 1.0 + 0.55 * (n - 4) / 4
    return 1.55 * math.log2(n) / 3.0


def network_hops(system: System, catalog: Catalog) -> int:
    """Switch hops between two nodes (:func:`dse.model.equivalence.switch_hops`): 1 through a
    single switch, 3 leaf-spine-leaf, 5 with a third tier (radix from ``catalog``); a
    rail-optimised network keeps rail traffic on one switch tier."""
    return switch_hops(system.nodes, system.spec.node.nics, system.network.topology,
                       catalog.network_switch.radix)


KEY_EXCHANGE_ROUNDS = 2
"""Grouped send/recv rounds of HugeCTR 23.04/23.08's key exchange a step: the keys' counts per
bucket (``all2all_keys_per_bucket``), then the keys (``all2all_keys``), the host waiting for the
first (``cudaStreamSynchronize``) to size the second (``data_distributor.cu``, v23.04.00, lines
443-530; ``sparse_data_distribution_op_impl.cu``, v23.08.00, lines 231-338)."""


def key_exchange_seconds(g: int, system: System, calib: Calibration) -> LinkTimes:
    """Seconds of the flat key all-to-all of ``software.flat_key_exchange`` (zero without it or on
    one device), as (fabric, network): the part that stays in the scale-up domain, or crosses the
    network when there are several domains.

    Each of :data:`KEY_EXCHANGE_ROUNDS` rounds is one ``ncclGroupStart``/``ncclGroupEnd`` with a
    ``ncclSend``/``ncclRecv`` pair to every one of the G global devices (``for (size_t peer = 0;
    peer < num_global_gpus_; ++peer)``): flat, unlike the embedding vectors' hierarchical
    all-to-all, so every device pays one message latency per other device. The payload is a few
    bytes per key (b x hotness keys a device), small beside the vectors; latency bounds it, and
    no bandwidth enters (the placement stays free of it)."""
    if g <= 1 or not system.spec.software.flat_key_exchange:
        return LinkTimes(fabric=0.0, network=0.0)
    t = KEY_EXCHANGE_ROUNDS * (calib.collective_latency_s + calib.key_peer_latency_s * (g - 1))
    return LinkTimes(fabric=0.0, network=t) if g > system.scaleup_domain else LinkTimes(fabric=t, network=0.0)


def alltoall_sends(wl: Workload, plan: Plan, system: System) -> tuple[float, float]:
    """Bytes the busiest device sends per all-to-all inside and outside its scale-up domain (the
    bandwidth-free part of :func:`alltoall_times`)."""
    g = plan.devices
    if g <= 1:
        return 0.0, 0.0
    b = wl.global_batch / g
    s_c = COMM_BYTES[wl.precision]
    domain = min(system.scaleup_domain, g)
    lead_dim = wl.interaction_dim() if system.spec.software.bottom_mlp_on_one_device else 0
    same_elems, cross_elems = alltoall_elements(plan, domain, b, wl.global_batch, lead_dim)
    return max(same_elems) * s_c, max(cross_elems) * s_c


def node_network_bytes_s(system: System, calib: Calibration) -> float:
    """Bytes a second one node moves to other nodes, the slowest of: its compute NICs (at the
    network efficiency, over the network's oversubscription); their own PCIe x16 links together
    (however many accelerators share a NIC; at the fabric efficiency, as every PCIe link); and,
    for NICs on the CPUs, host DDR, which each byte crosses twice (staged in, read out). Zero
    when the node has no compute NICs."""
    nic = system.nic_bytes_s * calib.network_efficiency / system.network.oversubscription
    rate = min(nic, system.nic_links_bytes_s * calib.fabric_efficiency)
    if system.spec.node.nic_attach == "cpu":
        rate = min(rate, system.ddr_bytes_s * calib.host_efficiency / 2.0)
    return rate


def alltoall_seconds(send_same: float, send_cross: float, g: int, system: System,
                     calib: Calibration) -> LinkTimes:
    """:func:`alltoall_times` from the bytes of :func:`alltoall_sends` and ``g`` devices."""
    if g <= 1:
        return LinkTimes(fabric=0.0, network=0.0)
    from dse.model.catalog import load_catalog

    cat = load_catalog()
    a = system.accelerators_per_node
    domain = min(system.scaleup_domain, g)
    # Latency per level: the fabric exchanges one message with each of the domain's other devices;
    # across domains the all-to-all is hierarchical, a node's messages for one remote node gathered
    # over the fabric and sent as one (HugeCTR since v3.1, used from MLPerf Training v1.0 on:
    # "Hierarchical multi-node all-to-all for NVLINK aggregation", HugeCTR v3.1 release notes;
    # ``CommunicationStrategy.Hierarchical`` in the MLPerf v3.0/v3.1 DCNv2 train.py), so the
    # network pays one message latency per other domain.
    fabric_latency = calib.collective_latency_s + calib.peer_latency_s * (domain - 1)
    network_latency = calib.collective_latency_s + calib.peer_latency_s * (math.ceil(g / domain) - 1)
    fabric = 0.0
    if send_same > 0:
        if system.scaleup == "none":
            t_link = send_same / (system.pcie_bytes_s * calib.fabric_efficiency)
            sockets = system.spec.node.cpu_sockets
            cross_socket = a * send_same * (1.0 - 1.0 / sockets) / 2.0
            t_socket = cross_socket / (system.socket_link_bytes_s * calib.fabric_efficiency)
            fabric = max(t_link, t_socket) + cat.pcie_gen(system.pcie_gen).latency_s
        else:
            bw = system.scaleup_bytes_s * calib.fabric_efficiency / topology_factor(system.scaleup, domain)
            fabric = send_same / bw + cat.scaleup_switch.latency_s
        fabric += fabric_latency
    network = 0.0
    if send_cross > 0:
        cross = send_cross
        per_node = cross * a
        rate = node_network_bytes_s(system, calib)
        # GPUDirect: a device reaches the NIC beside it on its own x16 link (DGX/ZionEX PCIe
        # switches pair GPUs with NICs); a CPU-attached NIC is reached over the shared host uplink.
        path = system.nic_path_bytes_s * calib.fabric_efficiency
        t = max(per_node / rate, cross / path) if rate > 0 and path > 0 else math.inf
        sw = cat.network_switch
        network = t + network_latency + 2 * sw.nic_latency_s + network_hops(system, cat) * sw.hop_latency_s
    return LinkTimes(fabric=fabric, network=network)


def alltoall_times(wl: Workload, plan: Plan, system: System, calib: Calibration) -> LinkTimes:
    """Seconds of one all-to-all (forward; backward mirrors it) on the fabric and on the network.

    Each device's sends (:func:`alltoall_elements`) to peers in its scale-up domain cross the fabric
    (the busiest device bounds it); the rest leave through its node's NICs (the busiest device times
    the devices per node bounds the node's egress), its own PCIe link and, for CPU-attached NICs,
    host memory.
    """
    return alltoall_seconds(*alltoall_sends(wl, plan, system), plan.devices, system, calib)


def alltoall_elements(
    plan: Plan, domain: int, b: float, batch: float | None = None, lead_dim: int = 0
) -> tuple[list[float], list[float]]:
    """Elements each device sends per all-to-all to peers inside and outside its scale-up domain.

    A table-wise or column-wise shard sends its pooled output for every other device's local batch:
    b x dim to each of G - 1 peers. The k row-wise shards of one table first reduce-scatter their
    partial sums among themselves (B x dim / k to each co-shard), then each sends its 1/k of the
    result to the G - 1 peers; across domains, the reduce-scatter stays within each domain and
    each domain's sum goes to the peers (hierarchical: the peers add one sum a domain).
    A row-wise shard of a one-hot table (no partial sums) sends like a
    table-wise one, for its share of the samples. A shard whose hot rows are replicated sends only
    for the samples that need it (``out_rows`` of the global ``batch``). ``lead_dim``: width of the bottom-MLP
    output device 0 sends like a table-wise shard when the bottom MLP runs model-parallel there.
    """
    g = plan.devices
    batch = batch if batch is not None else g * b
    same = [0.0] * g
    cross = [0.0] * g
    to_same, to_cross = (domain - 1) * b, (g - domain) * b  # elements per output column
    same[0] += to_same * lead_dim
    cross[0] += to_cross * lead_dim
    groups: defaultdict[int, list[int]] = defaultdict(list)
    last: dict[int, tuple[int, float]] = {}  # a row-wise table's last shard: its width, samples
    # Each group's sends added to each of its devices (see :func:`embedding_loads`).
    for shard, on in zip(plan.group_shards, plan.group_devices, strict=True):
        d = shard.device
        if d < 0:
            continue
        table, width, out_rows = shard.table, shard.dim, shard.out_rows
        if shard.sharding == "row_wise" and shard.partial_sums:
            groups[table] += on
            last[table] = width, out_rows
        else:
            share = out_rows / batch
            if len(on) == 1:  # most groups are one whole table
                same[d] += to_same * width * share
                cross[d] += to_cross * width * share
                continue
            to_peers, to_others = to_same * width * share, to_cross * width * share
            for d in on:
                same[d] += to_peers
                cross[d] += to_others
    if groups:
        _add_row_wise_sends(groups, last, domain, g * b, (to_same, to_cross), batch, same, cross)
    return same, cross


def _add_row_wise_sends(groups: dict[int, list[int]], last: dict[int, tuple[int, float]], domain: int,
                        all_samples: float, to: tuple[float, float], batch: float, same: list[float],
                        cross: list[float]) -> None:
    """For :func:`alltoall_elements`: the sends of the row-wise pieces of multi-hot tables (their
    partial sums, reduce-scattered, then sent; hierarchically across domains), added to ``same`` and
    ``cross``. ``groups``: each table's devices; ``last``: its pieces' width and output rows;
    ``all_samples``: G x b; ``to``: the elements per output column to the domain's peers and to the
    others."""
    to_same, to_cross = to
    for table, devices in groups.items():
        k = len(devices)
        width, out_rows = last[table]
        dim = width * out_rows / batch
        per_domain: dict[int, int]
        lo = devices[0]
        consecutive = devices == list(range(lo, lo + k))  # as the planner puts them, as a rule
        if min(devices) // domain == max(devices) // domain:  # the usual case: all in one domain
            per_domain = {lo // domain: k}
        elif consecutive:  # each domain's share of lo .. lo + k - 1, in order
            per_domain = {dom: min(lo + k, dom * domain + domain) - max(lo, dom * domain)
                          for dom in range(lo // domain, (lo + k - 1) // domain + 1)}
        else:  # counts in order of first appearance, as a dict of running counts would have them
            per_domain = Counter(map(domain.__rfloordiv__, devices))
        if len(per_domain) == 1:
            chunk = all_samples * dim / k
            sends = {dom: ((n - 1) * chunk + to_same * dim / k, (k - n) * chunk + to_cross * dim / k)
                     for dom, n in per_domain.items()}
        else:
            # Hierarchical: the n co-shards of a domain reduce-scatter their partial sums on the
            # fabric ((n - 1) / n of B x dim each), and each sends its 1/n of its domain's sum to
            # every peer, which adds the domains' sums: one partial sum a domain crosses the
            # network, as HugeCTR's hierarchical embedding collection and TorchRec's
            # table-row-wise sharding exchange them.
            sends = {dom: ((n - 1) * (all_samples * dim / n) + to_same * dim / n, to_cross * dim / n)
                     for dom, n in per_domain.items()}
        if consecutive:  # a domain's devices at a time, without a look-up a device
            for dom, n in per_domain.items():
                to_peers, to_others = sends[dom]
                for d in range(lo, lo + n):
                    same[d] += to_peers
                    cross[d] += to_others
                lo += n
            continue
        for d in devices:
            to_peers, to_others = sends[d // domain]
            same[d] += to_peers
            cross[d] += to_others


def allreduce_bytes(wl: Workload, plan: Plan, system: System) -> tuple[float, int]:
    """Bytes of the dense (and replicated-table) gradient allreduce and its bucket count (0 on one
    device): the bandwidth-free part of :func:`allreduce_time`."""
    params = float(wl.dense_params())
    if system.spec.software.bottom_mlp_on_one_device:
        # A model-parallel bottom MLP lives on one device: its gradients are not exchanged.
        params -= sum(i * o + o for i, o in wl.mlp_layers()[:len(wl.bottom_mlp)])
    nbytes = (params + plan.replicated_grad_elements) * COMM_BYTES[wl.precision]
    buckets = max(1, math.ceil(nbytes / DDP_BUCKET_BYTES))
    if plan.devices <= 1:
        return nbytes, 0
    return nbytes, buckets


def allreduce_seconds(nbytes: float, buckets: int, g: int, system: System, calib: Calibration) -> float:
    """:func:`allreduce_time` from the bytes and buckets of :func:`allreduce_bytes`."""
    if g <= 1:
        return 0.0
    domain = min(system.scaleup_domain, g)
    t = 0.0
    if domain > 1:
        link = system.scaleup_bytes_s if system.scaleup != "none" else system.pcie_bytes_s
        t += 2.0 * (domain - 1) / domain * nbytes / (link * calib.fabric_efficiency)
    groups = g // domain
    if groups > 1:
        per_device_nic = (system.nic_bytes_s / system.accelerators_per_node) * calib.network_efficiency
        per_device_nic /= system.network.oversubscription
        # node.nics = 0: the nodes cannot exchange gradients (evaluate() reports it infeasible).
        t += (2.0 * (groups - 1) / groups * (nbytes / domain) / per_device_nic
              if per_device_nic > 0 else math.inf)
    t += buckets * calib.collective_latency_s
    return t


def allreduce_time(wl: Workload, plan: Plan, system: System, calib: Calibration) -> tuple[float, int]:
    """Seconds of the hierarchical ring allreduce of dense (and replicated-table) gradients, and the
    number of buckets: reduce-scatter and all-gather on the fabric, allreduce across domains on the
    NICs (each device carries 1/domain of the bytes over its share of the node's NICs)."""
    nbytes, buckets = allreduce_bytes(wl, plan, system)
    return allreduce_seconds(nbytes, buckets, plan.devices, system, calib), buckets


def input_seconds(per_device: float, system: System, calib: Calibration) -> float:
    """Seconds to ship one step's input (dense features, indices, labels: ``per_device`` bytes a
    device) to every device: each device's PCIe link and, when ``node.input_source = "network"``,
    the node's front-end NICs."""
    t = per_device / (system.pcie_bytes_s * calib.host_efficiency)
    if system.input_nic_bytes_s > 0:
        node = per_device * system.accelerators_per_node
        t = max(t, node / (system.input_nic_bytes_s * calib.network_efficiency))
    return t


def kernel_count(wl: Workload, plan: Plan, buckets: int) -> int:
    """Kernels on the critical path of one step, counted from the model's structure: per GEMM, per
    embedding place and direction (one fused kernel per tier and way of serving it), per collective
    and per bucket."""
    shards, n_local = plan.group_shards, plan.local_groups
    # The first n_local groups are all in the device's own memory: one place, read off the first
    # (a plan of a thousand whole tables need not be walked for it).
    tiers = {(s.tier, s.access) for s in (shards[n_local:] if n_local > 0 else shards)}
    if n_local > 0:
        tiers.add((shards[0].tier, shards[0].access))
    collectives = 2 if plan.devices > 1 else 0
    return (
        KERNELS_PER_GEMM * len(wl.mlp_layers())
        + KERNELS_PER_STEP_FIXED
        + 2 * len(tiers)
        + collectives
        + buckets
    )


def step_tree(t: StageCosts, lead: bool = False, phase: Node | None = None) -> Seq:
    """The overlap structure of one step (see the module docstring). ``lead``: the bottom MLP runs
    model-parallel on device 0, so its output enters the all-to-all (forward) and its gradient
    leaves it (backward) instead of overlapping it. ``t.top_wgrad`` (part of ``top_bwd``; None
    unless the software computes weight gradients on a side stream): the top part's weight
    gradients run beside the backward all-to-all and embedding update, before the bottom MLP's
    backward, instead of before the all-to-all. ``t.keys_fabric``/``t.keys_network`` (0 unless
    ``software.flat_key_exchange``, :func:`key_exchange_seconds`): the next step's key all-to-all,
    beside the middle. The dense-gradient allreduce (``t.allreduce``) runs beside the whole
    backward phase, all-to-all included: the reference software overlaps the two
    (``overlap_ar_a2a = True`` in NVIDIA's MLPerf Training v2.0 DLRM configuration,
    mlcommons/training_results_v2.0 ``NVIDIA/benchmarks/dlrm/implementations/hugectr/dgx_a100.py``),
    so the phase lasts as long as the longer of them. The host side of an embedding pass is the
    host CPUs' work on the tables they pool and the host link's traffic, one after the other
    (forward: the CPUs pool, then the pooled vectors cross the link; backward: the gradients cross,
    then the CPUs update), as the reference software runs a CPU embedding operator before or after
    its copy; just the link where the CPUs pool nothing. ``phase``: :func:`backward_phase` of ``t``
    when the caller has it already (it does not read ``t.allreduce_exposed``)."""
    host: Node = Leaf(Stage.host_pcie, t.host_fwd, "embedding forward (host)")
    if t.cpu_fwd:  # (the CPUs pool, then the link copies; see step_tree)
        host = Seq((Leaf(Stage.cpu_pooling, t.cpu_fwd, "embedding forward (host CPUs pooling)"), host))
    fwd_lookup = Par((Leaf(Stage.embedding_memory, t.emb_fwd, "embedding forward (HBM)"), host))
    a2a_fwd = Par((Leaf(Stage.alltoall_fabric, t.a2a_fabric, "all-to-all forward (fabric)"),
                   Leaf(Stage.alltoall_network, t.a2a_network, "all-to-all forward (network)")))
    bottom_fwd = Leaf(Stage.dense_compute, t.bottom_fwd, "bottom MLP forward")
    wgrad = t.top_wgrad or 0.0
    middle: Node = Leaf(Stage.dense_compute, t.top_fwd + t.top_bwd - wgrad, "interaction + top MLP fwd/bwd")
    keys = t.keys_fabric + t.keys_network
    if keys > 0.0:
        # HugeCTR 23.04/23.08 (model_pipeline.cpp, create_train_pipeline_with_ebc, inter-iteration
        # overlap): the host thread of each device issues the next step's key exchange on its
        # "prefetch" stream after the dense graph's launch and before the backward all-to-all, on
        # the communicator both all-to-alls use (core->get_nccl()), whose kernels NCCL runs in the
        # order issued (NVIDIA/nccl src/enqueue.cc, v2.18.5-1, lines 981-988 and 1119-1130): the
        # exchange runs between the forward and the backward all-to-all, beside the middle's dense
        # compute, and delays the backward all-to-all where it is the longer. The host thread's
        # cudaStreamSynchronize between the rounds does not stall the device: the dense graph is
        # queued before it (docs/sources.md, "What the MLPerf v3.0/v3.1 DCNv2 runs did").
        stage = Stage.alltoall_network if t.keys_network > 0.0 else Stage.alltoall_fabric
        middle = Par((middle, Leaf(stage, keys, "key all-to-all, next step (prefetch stream)")))
    if lead:
        forward: Node = Seq((Par((fwd_lookup, bottom_fwd)), a2a_fwd))
    else:
        forward = Par((Seq((fwd_lookup, a2a_fwd)), bottom_fwd))
    backward = Par((backward_phase(t, lead) if phase is None else phase,
                    Leaf(Stage.allreduce_exposed, t.allreduce, "dense-gradient allreduce")))
    return Seq((
        forward,
        middle,
        backward,
        Leaf(Stage.dense_compute, t.optimizer, "dense optimizer"),
        Leaf(Stage.overhead, t.overhead, "kernel launches + per-step overhead"),
    ))


def backward_phase(t: StageCosts, lead: bool = False) -> Node:
    """The backward phase of :func:`step_tree` without the allreduce beside it: the backward
    all-to-all, then the embedding update, beside the dense backward (the top part's weight
    gradients on their side stream, then the bottom MLP's); with ``lead`` the bottom MLP's
    backward follows the all-to-all instead."""
    a2a_bwd = Par((Leaf(Stage.alltoall_fabric, t.a2a_fabric, "all-to-all backward (fabric)"),
                   Leaf(Stage.alltoall_network, t.a2a_network, "all-to-all backward (network)")))
    host: Node = Leaf(Stage.host_pcie, t.host_bwd, "embedding backward+update (host)")
    if t.cpu_bwd:  # (the CPUs pool, then the link copies; see step_tree)
        host = Seq((host, Leaf(Stage.cpu_pooling, t.cpu_bwd, "embedding update (host CPUs pooling)")))
    bwd_update = Par((Leaf(Stage.embedding_memory, t.emb_bwd, "embedding backward+update (HBM)"), host))
    bottom_bwd: Node = Leaf(Stage.dense_compute, t.bottom_bwd, "bottom MLP backward")
    wgrad = t.top_wgrad or 0.0
    if wgrad > 0.0:
        side = Leaf(Stage.dense_compute, wgrad, "top MLP weight gradients (side stream)")
        bottom_bwd = Seq((side, bottom_bwd))
    if lead:
        return Seq((a2a_bwd, Par((bwd_update, bottom_bwd))))
    return Par((Seq((a2a_bwd, bwd_update)), bottom_bwd))


@dataclass(frozen=True, slots=True)
class StepLoads:
    """What one step computes and moves before any link speed: fixed by the workload, the plan and
    the parts of the system named by :func:`loads_key` (counts, the scale-up domain, the
    accelerator and its HBM). One StepLoads serves every design that differs only in link speeds
    (PCIe generation, fabric, NICs, network), which is what a sweep memoises."""

    devices: int
    local_batch: float
    lead: bool
    """The bottom MLP runs model-parallel on device 0 (see :func:`step_tree`)."""
    dense: DenseTimes
    """:func:`dense_times` (depends on the device and its own memory's bandwidth, not on links)."""
    embedding: EmbeddingLoads
    send_same: float
    send_cross: float
    allreduce_bytes: float
    buckets: int
    kernels: int
    input_bytes: float
    """Input bytes one device receives per step."""


def loads_key(system: System) -> tuple[object, ...]:
    """Everything :func:`step_loads` reads from ``system`` besides what the plan already fixes (see
    :func:`dse.model.placement.plan_key`): designs with equal keys share their loads."""
    return (system.accelerator.name, system.tiers[0].bytes_s, system.scaleup_domain,
            system.accelerators_per_node, system.spec.software.bottom_mlp_on_one_device,
            system.spec.software.overlap_weight_gradients)


def step_loads(wl: Workload, system: System, plan: Plan, calib: Calibration) -> StepLoads:
    """The bandwidth-free part of :func:`step_time`."""
    g = plan.devices
    b = wl.global_batch / g
    lead = g > 1 and system.spec.software.bottom_mlp_on_one_device
    same, cross = alltoall_sends(wl, plan, system)
    nbytes, buckets = allreduce_bytes(wl, plan, system)
    return StepLoads(
        devices=g,
        local_batch=b,
        lead=lead,
        dense=_step_dense(wl, system, calib, g, lead),
        embedding=embedding_loads(plan, system.accelerators_per_node,
                                  tuple([t.name for t in system.tiers[1:]])),
        send_same=same,
        send_cross=cross,
        allreduce_bytes=nbytes,
        buckets=buckets,
        kernels=kernel_count(wl, plan, buckets),
        input_bytes=b * wl.input_bytes_per_sample(),
    )


def recalibrated_loads(loads: StepLoads, wl: Workload, system: System, calib: Calibration) -> StepLoads:
    """``loads`` (from :func:`step_loads` of this design) under another calibration: only the dense
    stage times read the calibration, so only they are recomputed. The calibration ensemble
    retimes one design under a hundred calibrations this way (:mod:`dse.calibration.ensemble`)."""
    return replace(loads, dense=_step_dense(wl, system, calib, loads.devices, loads.lead))


def _step_dense(wl: Workload, system: System, calib: Calibration, devices: int, lead: bool) -> DenseTimes:
    """The dense stage times one step of ``devices`` runs: :func:`dense_times` at the local batch
    (the whole batch on the lead device), without the weight-gradient side stream where the
    software has none, there is no all-to-all for it to hide behind, or the node has no
    accelerator (the CPU class's measured software runs its backward in framework autograd)."""
    b = wl.global_batch / devices
    dense = dense_times(wl, system, calib, b, wl.global_batch if lead else b)
    if not (devices > 1 and system.spec.software.overlap_weight_gradients and not system.cpu_only):
        return DenseTimes(bottom_fwd=dense.bottom_fwd, bottom_bwd=dense.bottom_bwd, top_fwd=dense.top_fwd,
                          top_bwd=dense.top_bwd, top_wgrad=None, optimizer=dense.optimizer)
    return dense


def exposed_allreduce(t: StageCosts, phase: Node) -> float:
    """Seconds of the allreduce beyond the backward phase it runs beside (``phase``,
    :func:`backward_phase` of ``t``): ``stages_s["allreduce_exposed"]``; ``t.allreduce_exposed``
    is not read."""
    return max(0.0, t.allreduce - _longest(phase)[0])


def step_time(wl: Workload, system: System, plan: Plan, calib: Calibration,
              loads: StepLoads | None = None) -> StepTime:
    """Time one training step of ``wl`` on ``system`` with placement ``plan``. ``loads``: the
    result of :func:`step_loads` for this design (or one with equal :func:`loads_key` and plan),
    when the caller has it already."""
    ld = step_loads(wl, system, plan, calib) if loads is None else loads
    embedding = embedding_seconds(ld.embedding, system, calib)
    dense = ld.dense
    allreduce = allreduce_seconds(ld.allreduce_bytes, ld.buckets, ld.devices, system, calib)
    kernels = ld.kernels
    t = StageCosts.of(
        dense, embedding, alltoall_seconds(ld.send_same, ld.send_cross, ld.devices, system, calib),
        key_exchange_seconds(ld.devices, system, calib), allreduce, 0.0,
        overhead=kernels * calib.kernel_overhead_s + calib.step_overhead_s,
        input_s=input_seconds(ld.input_bytes, system, calib))
    phase = backward_phase(t, ld.lead)
    t = t._replace(allreduce_exposed=exposed_allreduce(t, phase))
    tree = step_tree(t, ld.lead, phase)
    compute, attribution, path = critical(tree)
    step = compute
    input_exposed = max(0.0, t.input - compute)
    if input_exposed > 0:
        step = t.input
        path.append("input pipeline (exposed)")
    breakdown = Breakdown.of(attribution, input_exposed)
    notes = tuple(
        f"{p} runs at {system.precision_fallback[p]} peak on {system.accelerator.name}"
        for p in (wl.precision,)
        if system.precision_fallback[p] not in (p, "fp16", "bf16") or (p == "fp8" and
                                                                     system.precision_fallback[p] != p)
    )
    return StepTime(step_s=step, breakdown=breakdown, stages=t, bottleneck=breakdown.bottleneck,
                    critical_path=tuple(path), kernels=kernels, notes=notes)
