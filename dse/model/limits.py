"""Upper limits on every count and size a user may write (docs/design.md, section 7).

Each limit is far above any machine built or announced and any model trained, so no real design
is refused; it exists so that an absurd value (``nodes = 2**70``, a table of 10**18 rows) fails
at load time with one line naming the file and key, instead of exhausting memory or overflowing
in the model minutes later. The reason for each number stands beside it.
"""

from __future__ import annotations

from typing import Any

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
MAX_CPU_SOCKETS = 32
"""CPU sockets per node: the largest shared-memory x86 server (HPE Superdome Flex) has 32."""
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
MAX_TABLES = 1_000_000
"""Embedding tables per workload. Production DLRMs have about 1,000 (Mudigere et al., ISCA 2022:
"up to a thousand" sparse features); a thousand times that still fits in memory (100,000 tables
take about 150 MB and 10 s to evaluate; a million, minutes), where a billion would exhaust it."""
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
MAX_SEED = 2**32 - 1
"""Largest sampler seed: NumPy's random generators take seeds in [0, 2**32)."""


def upto(maximum: float, minimum: float = 0, exclusive: bool = False) -> dict[str, Any]:
    """Field metadata for :mod:`dse.records` bounds: ``minimum < value <= maximum`` with
    ``exclusive``, else ``minimum <= value <= maximum``."""
    return {"min": minimum, "min_exclusive": exclusive, "max": maximum}


def positive(maximum: float) -> dict[str, Any]:
    """Field metadata for a value that must be greater than zero and at most ``maximum``."""
    return upto(maximum, 0.0, exclusive=True)


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
