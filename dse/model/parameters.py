"""Named calibration parameters of the step-time model.

Efficiencies are the fraction of a datasheet peak that DLRM kernels reach; overheads are per kernel and
per collective. They are *calibration parameters*: their defaults below are literature priors, and
``dse calibrate`` fits them to published measurements and writes ``dse/data/calibration.toml``, which
:func:`load_calibration` reads by default. Nothing in the model is tuned outside this file: every
number fitted to a measurement is a field here (the step-time efficiencies and overheads to
throughput, ``accelerator_training_utilisation`` to wall power), so it is in the calibration file
and under its version.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from dataclasses import dataclass, field, fields, replace
from importlib import resources
from pathlib import Path
from typing import Any

from dse.errors import DseInputError
from dse.records import from_mapping, read_toml
from dse.safe_write import write_file

EFF = {"min": 0.0, "min_exclusive": True, "max": 1.0}
NONNEG = {"min": 0.0}


@dataclass(frozen=True, slots=True)
class Calibration:
    """Calibration parameters; see each field for its prior's source."""

    version: str = "prior"
    based_on: str = ""
    """The version of the calibration a user's own fit started from (``dse calibrate --data``,
    :mod:`dse.calibration.own`); empty for a fit to the published measurements."""
    own_fitted: tuple[str, ...] = ()
    """The parameters fitted to a user's own measurements; every other parameter keeps the value
    of the calibration ``based_on`` names. One stated as a range by default
    (:data:`DEFAULT_RANGES`) is pinned by those measurements, so it is no range of this
    calibration (:func:`unpinned`)."""
    dense_efficiency_simt: float = field(default=0.70, metadata=EFF)
    """fp32 (non tensor-core) GEMM efficiency at large sizes. Prior: cuBLAS SGEMM reaches 70-90% of
    fp32 peak on large square GEMMs (NVIDIA GEMM performance guide)."""
    dense_efficiency_tf32: float = field(default=0.60, metadata=EFF)
    """TF32 tensor-core GEMM efficiency at large sizes. Prior: as for half precision; TF32 GEMMs
    reach a similar share of their (half as high) peak (NVIDIA A100 whitepaper, cuBLAS TF32)."""
    dense_efficiency_half: float = field(default=0.75, metadata=EFF)
    """Half-precision (fp16/bf16/fp8) tensor-core GEMM efficiency at large sizes, as a share of
    the part's measured matmul ceiling (``Accelerator.matmul_efficiency`` x peak: what a vendor
    library's best matmul reaches on that part), so one fitted value serves every generation while
    each keeps its own measured ceiling. Prior: MLPerf DLRM MLP layers reach about 50-70% of tensor
    peak (NVIDIA HugeCTR/DLRM blog posts, 2021-2022), on parts whose matmul ceiling is about 0.8 of
    peak: 0.75 of the ceiling."""
    memory_efficiency: float = field(default=0.60, metadata=EFF)
    """Fraction of HBM peak that embedding gathers and element-wise kernels reach. Prior: FBGEMM
    table-batched embedding kernels reach 60-80% of HBM bandwidth (FBGEMM GPU docs)."""
    host_efficiency: float = field(default=0.50, metadata={**EFF, "range": (0.25, 0.82), "range_source": (
        "low: random 64 B gathers, per-row overheads on the host link and DDR row misses, half the "
        "prior [A]; high: TorchRec PR #4099 (meta-pytorch/torchrec commit 6a2d4be), UVM over "
        "PCIe Gen5 x16 with 2 KB rows, 0.68 of the link read and written, 0.82 read alone "
        "(docs/host_memory_data.md, section 5)")})
    """Fraction of host DDR and PCIe peak reached by host-resident embedding traffic (random 64 B
    accesses). Prior: CPU random-gather bandwidth is about half of stream bandwidth [A]. No
    fitted measurement holds tables in host memory, so it is a range (:func:`unpinned`), which
    every interval of a design that reads host memory takes in."""
    cxl_efficiency: float = field(default=0.50, metadata={**EFF, "range": (0.25, 0.70), "range_source": (
        "low: CXL expanders answer loads 2-5x slower than local DDR (Liu et al., arXiv "
        "2405.14209, 2024), which at a fixed number of loads in flight halves the DDR prior; "
        "high: the best host-path efficiency measured for embedding traffic, TorchRec UVM 0.68 "
        "(docs/host_memory_data.md) [A]")})
    """Fraction of a CXL memory tier's bandwidth (its modules' vendor-measured read+write figure)
    that host-resident embedding traffic reaches there (random 64 B gathers and updates). Prior:
    ``host_efficiency``'s, 0.5, as no training measurement holds tables in CXL memory; it is not
    fitted (``dse.calibration.fit.PRIOR_REASONS``) and stands for a range, 0.25-0.7 [A]: CXL
    expanders answer a load 2-5x slower than local DDR (Liu et al., "Exploring and Evaluating
    Real-world CXL", arXiv 2405.14209, 2024), which at a fixed number of loads in flight takes up
    to half the DDR prior; the top is the best host-path efficiency measured for embedding traffic
    (TorchRec UVM rows, docs/host_memory_data.md)."""
    fabric_efficiency: float = field(default=0.70, metadata=EFF)
    """Fraction of scale-up bandwidth an all-to-all/allreduce reaches. Prior: NCCL all-to-all bus
    bandwidth on DGX A100 about 70% of NVLink per-direction peak (nccl-tests reports)."""
    network_efficiency: float = field(default=0.80, metadata=EFF)
    """Fraction of NIC line rate reached by collectives across nodes. Prior: nccl-tests across IB HDR
    reach about 80% of line rate [A]."""
    kernel_overhead_s: float = field(default=5e-6, metadata=NONNEG)
    """Launch and scheduling cost per kernel on the critical path. Prior: CUDA kernel launch latency
    is about 3-10 us (NVIDIA CUDA best-practice guide). The fit keeps it above a measured floor,
    a CUDA-graph-launched kernel (``dse.calibration.fit.OVERHEAD_FLOORS_S``)."""
    collective_latency_s: float = field(default=15e-6, metadata=NONNEG)
    """Fixed latency of one collective (launch, synchronisation). Prior: NCCL small-message latency
    on one node is about 10-20 us (nccl-tests)."""
    peer_latency_s: float = field(default=1e-6, metadata=NONNEG)
    """Extra latency per peer of an all-to-all (one message per peer) [A]."""
    key_peer_latency_s: float = field(default=2.7e-6, metadata=NONNEG)
    """Cost per peer of each round of a flat key all-to-all (``software.flat_key_exchange``: one
    ``ncclSend``/``ncclRecv`` pair to every device, HugeCTR 23.04/23.08's data distributor). Prior:
    NCCL 2.18.5's latency of one network hop with its low-latency protocol, 2.7 us (``hwLat`` NET,
    Ring/LL, NVIDIA/nccl ``src/graph/tuning.cc`` line 75, tag v2.18.5-1, the NCCL of MLPerf v3.1's
    DGX H100 runs). Fitted between the bounds in ``dse.calibration.fit.OVERHEAD_FLOORS_S`` and
    ``CEILINGS_S``."""
    cpu_op_overhead_s: float = field(default=10e-6, metadata={
        **NONNEG, "range": (1e-6, 50e-6), "range_source": (
        "low: a table-batched CPU kernel (FBGEMM's CPU embedding runs many tables in one operator), "
        "a microsecond a table; high: an eager framework operator with its dispatch, autograd and "
        "OpenMP fork-join on a many-core socket, tens of microseconds [A]; no measurement of "
        "CPU-pooled training pins it (docs/host_memory_data.md)")})
    """Framework cost on the host CPUs per operation of a table they pool (its lookup, gradient and
    update: ``dse.model.timing.CPU_OPS_PER_TABLE``), seconds. Prior 10 us [A]; a range, drawn by
    the ensemble and taken in by every interval of a design whose CPUs pool tables."""
    step_overhead_s: float = field(default=5e-6, metadata=NONNEG)
    """Fixed per-step cost outside kernels: one host synchronisation (loss and gradient-scaler
    check, data hand-off), about 5 us (NVIDIA technical blog "Getting Started with CUDA Graphs",
    2019: 9.6 us per kernel with a stream synchronisation after each launch, 3.8 us without). Not
    fitted (``dse.calibration.fit.PRIOR_REASONS``)."""
    accelerator_training_utilisation: float = field(default=0.61, metadata=EFF)
    """Share of (TDP - idle) an accelerator of the measured node draws on average while training
    DLRM-DCNv2 (``dse.model.power``). Fitted, not to throughput but to the one published
    wall-power measurement (``dse.calibration.measurements.POWER_MEASUREMENTS``): an 8x H100 SXM
    node (MLPerf Training v4.0 DLRM-DCNv2, ``smc-ac-power`` logs) drew 7.06-7.11 kW at the wall.
    One point, so its error is that of the measurement's range (+-0.4%) plus the catalog's
    estimates; ``dse validate`` reports it (``dse.calibration.fit.power_fit``), and ``dse
    calibrate`` fits it after the throughput fit, to two decimals (``fit_power``), and records its
    error in ``[fit]``. This default, 0.61, is the prior: the fit when every part drew flat; under
    power by activity calibrations 2026.12-9 and -10 fit 0.62 (exact 0.6176 and 0.6175).
    Every other design's accelerators draw by their step's activity (``dse.model.power``): the
    level of their dense kernels is the one that makes the measured node's average this value,
    with the stated levels of its embedding kernels and waits, so a design waiting on its host or
    its network draws less than one computing."""
    accelerator_memory_power: float = field(default=0.2, metadata={
        **EFF, "range": (0.05, 0.35), "range_source": (
        "Ma, Afzal, Eitzinger, Wellein, 'The Illusion of Power Capping in LLM Decode', arXiv "
        "2605.11999 (2026): memory-bound decode that saturates HBM draws 137-300 W on a 700 W "
        "H200, (137 - 105) / (700 - 105) = 0.05 to (300 - 105) / 595 = 0.33 of TDP - idle at the "
        "catalog's idle (15% of TDP); the top rounded up for the sparse updates' atomics"),
        "moves": "power"})
    """Share of (TDP - idle) an accelerator draws while its embedding kernels (HBM gathers and
    updates, bound by memory bandwidth) run and no dense kernel does. A range (:func:`unpinned`):
    no measurement of DLRM's power pins it; drawn by the ensemble and taken in by the interval of
    every power metric of a design whose step has such time (``dse.calibration.ensemble``)."""
    accelerator_wait_power: float = field(default=0.1, metadata={
        **EFF, "min_exclusive": False, "range": (0.0, 0.2), "range_source": (
        "low: with nothing to compute an accelerator draws its static power (ML.ENERGY Leaderboard "
        "v3.0, 'Static Power Wastage', ml.energy/blog 2026: a GPU waiting on the CPU or the "
        "network sits at static power); high: a copy or collective kernel streams through HBM at "
        "a fraction of its bandwidth, at most about the middle of the memory-bound range [A]"),
        "moves": "power"})
    """Share of (TDP - idle) an accelerator draws while it waits on a transfer it takes part in
    (the host link, the scale-up fabric, the network: copy engines and communication kernels)
    with no kernel of its own to run. A range, as ``accelerator_memory_power``."""
    cpu_feed_power: float = field(default=0.5, metadata={**EFF, "range": (0.3, 0.7), "range_source": (
        "no measurement of a host's draw while it feeds accelerators was found: a few cores per "
        "device launch kernels and run the input pipeline, the rest idle in C-states; the prior "
        "is the model's earlier half of TDP and the range +-0.2 around it [A]"), "moves": "power"})
    """Share of TDP the host CPUs of a node with accelerators draw while they feed the devices
    (kernel launches, synchronisation, the input pipeline)."""
    cpu_pool_power: float = field(default=0.85, metadata={**EFF, "range": (0.7, 1.0), "range_source": (
        "high: TDP is the power a socket dissipates with every core active under a "
        "high-complexity workload (Intel ARK, 'TDP'), which all cores gathering and pooling rows "
        "are; low: the cores stall on DDR for most of a random gather, 30% below [A]"),
        "moves": "power"})
    """Share of TDP the host CPUs draw while they gather, pool and update the tables they serve
    (the step's ``cpu_pooling`` stages)."""
    link_idle_power: float = field(default=0.95, metadata={**EFF, "range": (0.9, 1.0), "range_source": (
        "Mahadevan, Sharma, Banerjee, Ranganathan, 'A Power Benchmarking Framework for Network "
        "Devices', IFIP Networking 2009 (HP Labs): a switch's power is set by its enabled ports and "
        "their line rates, traffic moving it by a few percent; NICs keep their SerDes and optics "
        "lit idle or not [A]"), "moves": "power"})
    """Share of its draw a NIC, a PCIe or scale-up switch or a scale-out switch port draws with no
    traffic; it draws all of it while it carries the step's traffic."""
    access_zipf_spread: float = field(default=0.25, metadata=NONNEG)
    """How far a skewed workload's Zipf exponent of row popularity (``Workload.access_zipf``) may
    lie either side of its stated value; every interval takes in the prediction at both ends
    (``dse.calibration.ensemble.skew_ends``). No measurement of Criteo 1TB's popularity was found,
    and the throughput data do not pin it either: calibration 2026.12-10 refitted with every
    measured workload's exponent at 0.8 and at 1.3 reproduces the measurements with median errors
    of 7.0% and 4.0% (5.6% at the packaged 1.05; docs/validation.md) [A]. 0 in a calibration of
    your own when you measured your data's popularity. Not a fitted parameter: it moves no step."""
    cpu_dense_efficiency: float = field(default=0.50, metadata=EFF)
    """Share of a CPU socket's vector peak (``Cpu.peak_tflops``: AVX-512 or AVX2 FMAs, AVX512_BF16
    dot products) that DLRM's MLPs reach on a node without accelerators. Prior: oneDNN bf16/fp32
    GEMMs reach about half of AVX-512 peak on DLRM-sized layers [A]. Fitted, not in the
    accelerator fit but to the CPU-only measurements alone (:mod:`dse.calibration.cpu`), and
    carried through that fit unchanged."""
    cpu_matrix_efficiency: float = field(default=0.50, metadata=EFF)
    """Share of a CPU socket's matrix-engine peak (AMX tiles: the precisions a catalog CPU lists
    in ``matrix_precisions``) that DLRM's MLPs reach on a node without accelerators; apart from
    ``cpu_dense_efficiency`` for the reason an accelerator's tensor cores and SIMT units have
    efficiencies of their own: the tile unit multiplies 8x faster a cycle than AVX-512's bf16
    dot products while the loads, format conversions and element-wise work around it run on the
    same cores at vector speed. Prior: the vector units' prior [A]. Fitted with
    ``cpu_dense_efficiency`` to the CPU-only measurements alone (:mod:`dse.calibration.cpu`), on
    the points whose dense math runs on a matrix engine."""
    software_factor: dict[str, float] = field(default_factory=dict)
    """Throughput factor per software generation (measurement source label -> factor), fitted;
    used only when a measurement names its software. Designs are scored with factor 1."""
    fit: dict[str, float] = field(default_factory=dict)
    """Fit statistics recorded by ``dse calibrate`` (errors, point count)."""
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    """The calibration file's ``[ranges]``: for a parameter no measurement pins down, the
    ``[low, high]`` its value may lie in (:func:`unpinned` adds the stated defaults)."""

    def with_values(self, **values: float) -> Calibration:
        """A copy with some parameters changed (for fitting and sensitivity studies)."""
        return replace(self, **values)  # type: ignore[arg-type]


NOT_SCALARS = ("version", "based_on", "own_fitted", "software_factor", "fit", "ranges")
"""The :class:`Calibration` fields that are not one number each."""
FITTED_PARAMETERS: tuple[str, ...] = tuple(f.name for f in fields(Calibration) if f.name not in NOT_SCALARS)
"""Names of the scalar calibration parameters."""
DEFAULT_RANGES: dict[str, tuple[tuple[float, float], str]] = {
    f.name: (f.metadata["range"], f.metadata["range_source"])
    for f in fields(Calibration) if "range" in f.metadata}
"""The parameters no measurement pins down, each with its default range and the range's source."""
POWER_LEVELS: tuple[str, ...] = tuple(f.name for f in fields(Calibration)
                                      if f.metadata.get("moves") == "power")
"""The unpinned parameters that move power alone, never the step (``dse.model.power``): the
throughput intervals' range ends leave them out, the power intervals take them in."""


def unpinned(calib: Calibration) -> dict[str, tuple[float, float]]:
    """Every parameter no measurement pins down, with the range its value may lie in: the
    calibration file's ``[ranges]`` over the defaults (:data:`DEFAULT_RANGES`). Their point values
    are priors; the ensemble draws them across their ranges and every interval takes in the
    prediction at both ends (:mod:`dse.calibration.ensemble`), so a design shows exactly as much
    more uncertainty as its step depends on them. A parameter fitted to a user's own measurements
    (:attr:`Calibration.own_fitted`) is pinned: no range."""
    out = {name: rng for name, (rng, _) in DEFAULT_RANGES.items() if name not in calib.own_fitted}
    out.update(calib.ranges)
    return out


FITTED_APART = ("cpu_dense_efficiency", "cpu_matrix_efficiency")
"""Parameters fitted on a class of their own (:mod:`dse.calibration.cpu`, each on its own points)
that the ensemble's refits never move: outside the :func:`fingerprint`, and every member of the
ensemble takes the calibration's value, so refitting them (or adding one) keeps the ensemble of the
accelerator fit valid."""


INTERVAL_ONLY = ("access_zipf_spread",)
"""The scalar parameters that move no step and no member, only the intervals' ends."""


def fingerprint(calib: Calibration) -> str:
    """A short hash of a calibration's values (every scalar parameter but :data:`FITTED_APART`,
    :data:`INTERVAL_ONLY` and the unpinned ones, :func:`unpinned`, which no refit moves either,
    and every software factor), so a refit that kept its version label still invalidates its
    ensemble (:mod:`dse.calibration.ensemble`) and the memos keyed by it."""
    ranged = unpinned(calib)
    parts = [f"{name}={float(getattr(calib, name))!r}" for name in FITTED_PARAMETERS
             if name not in FITTED_APART and name not in INTERVAL_ONLY and name not in ranged]
    parts += [f"software_factor.{k}={v!r}" for k, v in sorted(calib.software_factor.items())]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def load_calibration(path: Path | None = None) -> Calibration:
    """The calibration in ``path``, or the packaged one (priors when none has been fitted yet)."""
    if path is not None:
        return calibration_from(read_toml(path), str(path))
    return _packaged()


def calibration_from(data: dict[str, Any], source: str) -> Calibration:
    """A calibration from its file's table (``source`` names it in errors), strictly."""
    return checked_ranges(from_mapping(Calibration, data, source), source)


def checked_ranges(calib: Calibration, source: str) -> Calibration:
    """``calib``, once every stated range names an unpinned parameter and holds its value
    within the parameter's own bounds, and every parameter ``own_fitted`` names is one (one-line
    errors naming the file and ``ranges.NAME`` or ``own_fitted``)."""
    bounds = {f.name: f.metadata for f in fields(Calibration)}
    for name in calib.own_fitted:
        if name not in FITTED_PARAMETERS:
            raise DseInputError(source, "own_fitted", f"unknown parameter {name!r} (known: "
                                f"{', '.join(FITTED_PARAMETERS)})")
    for name, rng in calib.ranges.items():
        where = f"ranges.{name}"
        if name not in DEFAULT_RANGES:
            known = ", ".join(DEFAULT_RANGES)
            raise DseInputError(source, where, f"not a parameter stated as a range (those are: {known})")
        if name in calib.own_fitted:
            raise DseInputError(source, where, "fitted to your own measurements (own_fitted), so "
                                "not a range")
        if len(rng) != 2 or not all(isinstance(x, int | float) for x in rng):
            raise DseInputError(source, where, "needs [low, high]")
        lo, hi = float(rng[0]), float(rng[1])
        meta = bounds[name]
        floor = meta.get("min", -math.inf)
        above_floor = lo > floor if meta.get("min_exclusive", False) else lo >= floor
        if not (above_floor and lo <= getattr(calib, name) <= hi <= meta.get("max", math.inf)):
            raise DseInputError(source, where, f"[{lo:g}, {hi:g}] must hold the value "
                                f"{getattr(calib, name):g} within ({meta.get('min', '-inf')}, "
                                f"{meta.get('max', 'inf')}]")
    return calib


@functools.cache
def _packaged() -> Calibration:
    ref = resources.files("dse") / "data" / "calibration.toml"
    if not ref.is_file():
        return Calibration()
    with resources.as_file(ref) as p:
        return calibration_from(read_toml(p), "dse/data/calibration.toml")


def write_calibration(calib: Calibration, path: Path) -> None:
    """Write ``calib`` as TOML (the format :func:`load_calibration` reads)."""
    lines = [
        "# dse calibration: written by `dse calibrate`; dse/model/parameters.py documents each value.",
        f'version = "{calib.version}"',
    ]
    if calib.based_on or calib.own_fitted:
        lines.append(f"based_on = {json.dumps(calib.based_on)}  # the calibration the own fit "
                     "started from")
        lines.append(f"own_fitted = {json.dumps(list(calib.own_fitted))}  # fitted to your own "
                     "measurements; the rest keep based_on's values")
    for f in fields(Calibration):
        if f.name in NOT_SCALARS:
            continue
        lines.append(f"{f.name} = {float(getattr(calib, f.name))!r}")
    lines.append("")
    lines.append("[ranges]  # parameters no measurement pins down: [low, high], drawn by the ensemble")
    for name, (lo, hi) in unpinned(calib).items():
        default, source = DEFAULT_RANGES[name]
        why = source if tuple(calib.ranges.get(name, default)) == tuple(default) else "stated by the user"
        lines.append(f"# {name}: {why}")
        lines.append(f"{name} = [{lo!r}, {hi!r}]")
    lines.append("")
    lines.append("[software_factor]")
    lines.extend(f'"{k}" = {v!r}' for k, v in sorted(calib.software_factor.items()))
    lines.append("")
    lines.append("[fit]")
    lines.extend(f"{k} = {v!r}" for k, v in calib.fit.items())
    write_file(path, "\n".join(lines) + "\n")
