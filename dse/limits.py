"""Upper limits on every count and size a user may write (docs/design.md, section 7).

Each limit is far above any machine built or announced and any model trained, so no real design
is refused; it exists so that an absurd value (``nodes = 2**70``, a table of 10**18 rows) fails
at load time with one line naming the file and key, instead of exhausting memory or overflowing
in the model minutes later. The reason for each number stands beside it.
"""

from __future__ import annotations

from typing import Any

from dse.errors import DseInputError

MAX_NODES = 100_000
"""Nodes per cluster. The largest training clusters announced hold about 100,000 accelerators
(xAI Colossus, 100,000 H100 in 2024, i.e. 12,500 nodes of 8); a node count of 100,000 leaves
eight times that headroom."""
MAX_ACCELERATORS_PER_NODE = 1_024
"""Accelerators per node (or per NIC/PCIe grouping). Today's densest node is a 72-GPU NVL72 rack
(NVIDIA GB200 NVL72) and the largest announced scale-up domain 576 GPUs (NVL576)."""
MAX_ACCELERATORS_TOTAL = 2**20
"""Accelerators of a whole cluster (nodes x accelerators per node): ten times the largest cluster
announced (about 100,000 GPUs, above). The model's placement and timing are linear in devices, so
at this limit one evaluation still takes about a second; 100,000 nodes of 1,024 would take minutes
and gigabytes."""
MAX_NICS_PER_NODE = 1_024
"""NICs of either kind per node: at most one or two per accelerator in every shipping design."""
MAX_MEMORY_MODULES_PER_NODE = 1_024
"""Modules of a memory tier beside the CPUs' DIMMs per node (CXL expanders): a 2U server has 16-32
E3.S bays; ample headroom."""
MAX_CPU_SOCKETS = 32
"""CPU sockets per node: the largest shared-memory x86 server (HPE Superdome Flex) has 32."""
MAX_CPU_CORES = 1_024
"""Cores of one CPU socket: 192 on AMD EPYC 9965 and 288 on Intel Xeon 6900E; ample headroom."""
MAX_DDR_CHANNELS_PER_SOCKET = 64
"""DDR channels per socket: 12 on AMD EPYC 9004 and Intel Xeon 6; 64 leaves ample headroom."""
MAX_MEMORY_GB = 1e6
"""Host DDR or HBM capacity of one node or device in GB (1 PB). HPE Superdome Flex holds 48 TB of
DDR; an accelerator holds at most a few hundred GB of HBM (B200: 192 GB)."""
MAX_BANDWIDTH_GB_S = 1e6
"""A memory or scale-up bandwidth in GB/s (1 PB/s). B200 HBM3e is 8 TB/s, NVLink 5 900 GB/s per
direction: the limit is two orders of magnitude above today."""
MAX_LINK_GBIT_S = 1e6
"""A NIC's speed in Gb/s (1 Pb/s); the fastest shipping NICs run at 800 Gb/s."""
MAX_OVERSUBSCRIPTION = 1_000.0
"""Network oversubscription ratio; real fabrics are 1:1 to about 1:8."""
MAX_TABLES = 10_000
"""Embedding tables per workload. The largest production DLRMs published have about a thousand
(Mudigere et al., ISCA 2022: Meta's models have "up to a thousand" sparse features, each with its
table; their Model-A about 1,000, dse/data/workloads/synthetic-production-a.toml); ten times that
leaves headroom for any real model. The bound is set by time, not memory: placement and timing
walk every table of every device's shard list, about 0.5 ms per table per evaluation on one core,
and ``dse evaluate`` scores 11 designs (the design and its sensitive defaults), so 10,000 tables
take about 6 s and 90 MB (100,000 tables took 58 s, a million over 10 minutes at 1.3 GB; issue
30). benchmarks/bench_limits.py measures a workload at this limit."""
MAX_ROWS_PER_TABLE = 10**13
"""Rows of one embedding table. The largest published DLRM has 12 trillion parameters in total
(Mudigere et al., ISCA 2022), about 10**11 rows at dim 128; 10**13 is a hundredfold."""
MAX_EMBEDDING_DIM = 65_536
"""Elements per embedding row; published models use 16 to 512."""
MAX_POOLING = 1e6
"""Average lookups per sample per table; production features pool tens to hundreds of rows."""
MAX_MLP_WIDTH = 1_048_576
"""Units of one MLP layer (and input dense features, DCN rank); published DLRMs stay below 10,000."""
MAX_MLP_LAYERS = 1_000
"""Layers of one MLP and of the DCNv2 cross network; published DLRMs have fewer than 20."""
MAX_GLOBAL_BATCH = 2**30
"""Samples per step; MLPerf DLRM runs at up to 2**16 (DCNv2 at 2**17 samples)."""
MAX_EMBEDDING_PARAMS = 1e16
"""Embedding parameters of a synthetic population (a thousand times the 12-trillion-parameter
model of Mudigere et al., ISCA 2022)."""
MAX_SIZE_SIGMA = 10.0
"""Log-normal spread of synthetic table sizes; 1.5 matches production spreads, and beyond about 10
the draws overflow a float."""
MAX_ZIPF = 100.0
"""Zipf exponent of row popularity; measured click logs sit near 1."""
MAX_TABLE_SCALE = 1e6
"""A study's table-row multiplier; the growth question asks about 2x to 10x."""
MAX_QUANTITY = 1e18
"""Size of any number a file states whose field names no tighter limit (a count, a constraint's
bound, a catalog figure). Far above every real figure in dse's units (the largest shipped:
1.2e13 embedding parameters, 4.2e9 samples an epoch, 8,000 GB/s of HBM) and above every product
the model forms with :data:`MAX_ACCELERATORS_TOTAL` parts at :data:`MAX_PRICE_USD` (about 1e15
USD), yet finite through every such product: ``tdp_w = 1e308`` printed "inf W" in text,
``null`` in JSON and a blank in ``status`` with a numpy overflow warning (issue 42)."""
MAX_LATENCY_S = 1.0
"""A latency of the catalog (a switch hop, a NIC, a PCIe link, a CXL expander's added latency) in
seconds: real ones are 0.1 to 10 us (the catalog's largest, PCIe gen 3, is 1 us), so a second is
a hundred thousand times any of them (a value in ns or us written as seconds stays below it)."""
MAX_AMORTISATION_YEARS = 100.0
"""Years a facility amortises servers or network over: 3 to 6 in practice (the catalog: 5 and 6)."""
MAX_PUE = 10.0
"""Power usage effectiveness: about 1.1 to 2.5 in surveys, 1.58 in the catalog; at 10 a site would
spend nine times the IT power on cooling and distribution, which none does (above 3 warns:
:data:`MAX_PLAUSIBLE_PUE`)."""
MAX_TFLOPS = 1e6
"""A part's peak TFLOP/s at one precision: the catalog's largest is 5,033 (MI355X, fp8), so this
is 200 times any accelerator shipped."""
MAX_BUDGET = 10_000_000
"""Trials of one study: a journal of 3,000 trials is 22 MB, so ten million would be 70 GB."""
MAX_PRICE_USD = 1e9
"""Any price or USD rate of the catalog (a part, a port, a GB, a kWh): a GB200 NVL72 rack, the
dearest single item priced, costs about $3 M, so $1 billion is over 300 of them. Bounded so that
capex (at most :data:`MAX_ACCELERATORS_TOTAL` parts, about 1e6) and TCO stay finite: a price of
1e308 printed ``inf`` (issue 30)."""
MAX_RACK_W = 10e6
"""Draw of one rack-level part (W): the densest rack announced (NVIDIA Kyber NVL576) is about
600 kW, so 10 MW is over 16 of them."""
MAX_RACK_UNITS = 1_000
"""Height of a rack or of one node in rack units (U): the tallest racks sold are 52-58U and the
tallest server 10U (NVIDIA DGX B200), so 1,000 is far beyond any."""
MAX_SEED = 2**32 - 1
"""Largest sampler seed: NumPy's random generators take seeds in [0, 2**32)."""
MAX_CHOICES = 1_000
"""Choices of one categorical or ordinal parameter of a search space. Choices are written out by
hand: the shipped spaces have at most 6, the catalog 23 accelerators, and a range of
integers is an ``int`` parameter (``low``, ``high``, ``step``). Loading a space probes every
choice on its base system and the sweep probes them again (1-3 ms each: the base system is read
and validated per choice), samplers hold one index per choice; 1,000 choices load in 1-3 s, where
100,000 took 70 s before ``dse status`` printed a line and left ``dse run`` with no trial after
23 CPU minutes (issue 30)."""
MAX_GRID_VALUES = 1_000_000
"""Values of one ``int`` parameter's grid (``(high - low) / step + 1``). Grid and line searches
materialise a parameter's grid (a tuple of ints, 40 bytes a value), so a million values cost
40 MB and tens of ms each time; every count a system holds (nodes, NICs, GB of memory) fits at
a step of 1 up to its own limit above or at a coarser step."""
MAX_OBJECTIVES = 4
"""Objectives of one study. Every shipped objective set has 2 or 3, and users run four (throughput,
capex, power and TCO: issue 28 saw a study shown as "Objective 0..3"), so four stay allowed. The
hypervolume a study's status, report and warm start compute grows exponentially with objectives:
one volume of a 200-design front took 0.05 s with 3 objectives, 5.3 s with 4 and 114 s with 6
(optuna's WFG, this machine under load), and a report computes one per point of its convergence
curve, so five or more would make a report take hours."""
MAX_CONSTRAINTS = 100
"""Constraints of one objective set: each metric once with a ``min`` and a ``max`` needs 18; every
design checks every constraint, so a list of thousands would slow every sweep for nothing."""
MAX_NAME_CHARS = 200
"""Characters of a name read from a file or ``--set``: a ``name`` (of a system, workload, part,
space, objective set) and the key of every table (a catalog part's key, a price's). The longest
shipped is 78 (a catalog part's display name), keys at most 32. Names are printed in every
table, page and error: a 100 kB system name made ``dse evaluate``'s text output run past 120 s
and a 3 MiB workload name likewise (issue 42)."""
MAX_TEXT_CHARS = 4_096
"""Characters of any other string of a file: a description, a source, a part or file named by
name or path (a path fits: Linux's PATH_MAX is 4,096 bytes). The longest shipped is a system's
``source`` of 416 characters."""
MAX_PATH_BYTES = 4_096
"""Bytes of a file's name or path given on the command line or in a file (Linux's PATH_MAX)."""
MAX_FILE_NAME_BYTES = 255
"""Bytes of one component of such a path (NAME_MAX of ext4, XFS, tmpfs): a longer name names no
file, and asking the file system about it failed with ``OSError: File name too long``."""
MAX_SPEC_FILE_BYTES = 4 * 2**20
"""Largest TOML spec read (workload, system, catalog, space, objectives, study), 4 MiB. The largest
shipped spec, dse/data/catalog.toml, is 48 kB; a workload at :data:`MAX_TABLES` written in full
(13-digit rows, dims and fractional poolings, about 45 bytes a table) is about 0.5 MB. Anything
larger is a mistaken path (a journal, a dataset) and is refused before it is parsed; parsing a
spec at the limit (a list of 280,000 integers) holds about 3 times its size, 11 MB."""
MAX_DATA_FILE_BYTES = 64 * 2**20
"""Largest CSV or JSON data file read (the calibration measurements, a calibration ensemble,
caches dse writes beside a study), 64 MiB. The shipped ensemble of 100 fits is 128 kB and the
measurements 13 kB; an ensemble of 10,000 bootstrap fits would be about 13 MB."""
MAX_MEMO_PLAN_GROUPS = 1_500_000
"""Placed table groups a sweep's memo of placements (:class:`dse.model.evaluate.Memo`) holds
before it drops its least recently used plans. A plan holds about 0.8 kB a group (a 10,000-table
plan on 16 DGX H100 nodes: 11,759 groups, 10 MB), so the memo stays under about 1.2 GB: creating
a study of a 10,000-table workload on the scale-out space peaked at 1.7 GB with no bound (127 CPU
s); with 1,000,000 groups dropped oldest first it peaked at 0.67 GB but took 423 CPU s, and
with this bound (least recently used dropped) 0.88 GB and 377 CPU s: the refinement revisits
placements, so the bound trades CPU for memory at the table limit. The shipped studies'
sweeps stay far below it (mlperf-dcnv2: 10,984 designs, 133 plans, 4,790 groups; zion-2020:
26,318 designs, 676 plans, 75,589 groups), so their reuse is unchanged."""

MAX_TABLE_ACCELERATORS = 10**9
"""Tables times accelerators of one design. Placement ranks the scale-up domains once for every
table group, so its time grows with the product: 10,000 tables took 0.4 s an evaluation on 4,000
DGX H100 nodes, 3.0 s on 16,000 and 11.6 s on 32,000 (about 110 s on 100,000, where one ``dse
evaluate``, 11 designs, ran over 7 CPU minutes). 10**9 is a thousand times any real design (about
1,000 tables on 100,000 accelerators is 10**8); at it an evaluation takes about 3 s (10,000
tables on 100,000 accelerators: one ``dse evaluate`` 32.5 CPU s and 0.12 GB; 1,000 tables on
800,000: 2.9 s), and a 26-table workload still reaches :data:`MAX_ACCELERATORS_TOTAL`."""


def upto(maximum: float, minimum: float = 0, exclusive: bool = False) -> dict[str, Any]:
    """Field metadata for :mod:`dse.records` bounds: ``minimum < value <= maximum`` with
    ``exclusive``, else ``minimum <= value <= maximum``."""
    return {"min": minimum, "min_exclusive": exclusive, "max": maximum}


def positive(maximum: float) -> dict[str, Any]:
    """Field metadata for a value that must be greater than zero and at most ``maximum``."""
    return upto(maximum, 0.0, exclusive=True)


def check_placement_work(tables: int, accelerators: int, source: str, key: str = "tables") -> None:
    """Refuse a design whose tables times accelerators exceed :data:`MAX_TABLE_ACCELERATORS`."""
    if tables * accelerators > MAX_TABLE_ACCELERATORS:
        raise DseInputError(source, key, f"{tables:,} tables on {accelerators:,} accelerators make "
                            f"{tables * accelerators:,} table-accelerators; at most "
                            f"{MAX_TABLE_ACCELERATORS:,} are supported (placement time grows with "
                            "their product)")


# Plausibility: values that are possible but almost surely a slip (a unit or a digit), so they are
# accepted with a warning (dse.model.plausible), not refused like the limits above.

MAX_PLAUSIBLE_USD_PER_KWH = 1.0
"""Electricity price above which ``facility.usd_per_kwh`` is warned about. The 2023 US averages
were 8.0 US cents/kWh industrial and 12.7 commercial (EIA, Electric Power Monthly, table 5.3);
European business tariffs at their 2022 peak stayed under half a dollar. A figure above $1 is
most likely cents written as dollars (``12`` for 12 cents), and would make energy dominate TCO a
hundredfold; it is not impossible (an island grid, a diesel site), hence a warning."""
MIN_PLAUSIBLE_USD_PER_KWH = 0.01
"""Below one US cent per kWh (and above 0, which states free power) is most likely dollars per
MWh or a dropped digit: no grid sells at a tenth of the US industrial average."""
MAX_PLAUSIBLE_PUE = 3.0
"""Power usage effectiveness above which a warning is given: the Uptime Institute's surveys found
an average of 2.5 in 2007 and about 1.6 since 2014; above 3 is likely a typo."""
MIN_PLAUSIBLE_ACCELERATOR_USD = 1_000.0
"""An accelerator price below this is warned about: the cheapest data-centre accelerator of the
catalog (A30) is $4,500; a few hundred dollars is most likely a price in thousands."""
MIN_DIMM_GB = 8.0
"""The smallest registered DIMM of DDR4 (8 GB; DDR5's is 16 GB). Host DDR below one of them per
channel of every socket means channels left empty, yet the model gives the node the bandwidth of
all of them (``ddr_channels``), so its host-memory figures would be too high: a warning, since such
a node can be built."""
