"""The four case studies: the Zion and ZionEX design questions, today's hardware, and growth.

Each analysis reads the study's scored designs and, where a question needs a controlled
comparison (one knob moved, everything else as built), scores a few designs directly with the
same model, catalog and calibration. Claims are sentences with the check that makes them true;
:mod:`dse.outputs.cases.framework` runs them, renders the pages and moves each case's most uncertain
assumption by ±30%.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from dse.errors import DseInputError
from dse.model.timing import alltoall_sends
from dse.model.workload import Workload, load_workload, repeat_tables
from dse.outputs.cases.framework import (
    CaseData,
    CaseStudy,
    Claim,
    Findings,
    Sensitivity,
    describe_bend,
    front_bend,
    markdown_table,
    scale_accelerator_prices,
    scale_network_prices,
    score_row,
)

THROUGHPUT = "throughput_samples_per_s"
NEAR_BEST = 0.95
"""A knob "stops paying" where throughput is within 5% of the best the knob can give."""


def _row(data: CaseData, design: Mapping[str, Any], base: str | None = None) -> dict[str, Any]:
    """Headline figures of one directly scored design."""
    ev = data.evaluate(design, base)
    m = ev.metrics()
    return {
        "throughput": float(m[THROUGHPUT]),
        "capex_usd": float(m["capex_usd"]),
        "power_w": float(m["power_w"]),
        "per_kusd": float(m[THROUGHPUT]) / float(m["capex_usd"]) * 1e3,
        "ddr_used_gb": float(m["ddr_used_gb"]),
        "bottleneck": str(m["bottleneck"]),
        "feasible": bool(m["feasible"]),
        "a2a_fabric_ms": ev.timing.stages_s.get("a2a_fabric", 0.0) * 1e3,
        "step_ms": ev.step_time_s * 1e3,
    }


def _with_workload(data: CaseData, workload: Workload) -> CaseData:
    return dataclasses.replace(data, workload=workload)


def _ksps(x: float) -> str:
    return f"{x / 1e3:,.0f} k samples/s" if x < 1e6 else f"{x / 1e6:,.2f} M samples/s"


def _usd(x: float) -> str:
    return f"${x / 1e6:,.2f} M" if x >= 1e6 else f"${x / 1e3:,.0f} k"


def _bottlenecks(frame: pd.DataFrame) -> str:
    counts = frame["bottleneck"].value_counts()
    return ", ".join(f"{k} ({v})" for k, v in counts.items())


# --- 1. Zion -----------------------------------------------------------------------------------

ZION_NODES = (1, 2, 3, 4, 6, 8)
FABRICS = ("ring", "hybrid_cube_mesh", "fully_connected", "switch")
LINK_GB_S = (25.0, 50.0, 100.0, 150.0, 300.0)
GROWTH = (1, 2, 4, 8)


def _zion_ddr_vs_hbm(data: CaseData) -> pd.DataFrame:
    rows = [{"nodes": n, "accelerators": 8 * n, **_row(data, {"nodes": n}, "zion")} for n in ZION_NODES]
    return pd.DataFrame(rows)


def _hbm_to_fit_gb(data: CaseData, accelerators: int) -> float:
    """HBM per accelerator that holds every table with 20% headroom (the tables-in-HBM variant)."""
    return math.ceil(1.2 * float(data.workload.summary()["footprint_gb"]) / accelerators)


HBM_GB = (16.0, 24.0, 32.0, 48.0, 64.0, 96.0, 128.0, 192.0)


def _zion_hbm_sizes(data: CaseData) -> pd.DataFrame:
    """Within one node: the HBM size per accelerator with the most samples/s per dollar, against the
    best size that holds every row in HBM, for 8 and 16 accelerators on PCIe 3, 4 and 5."""
    rows = []
    for gen in (3, 4, 5):
        for acc in (8, 16):
            scored = [{"hbm_gb": h, **_row(data, {"node.pcie_gen": gen, "node.accelerators": acc,
                                                   "node.hbm_gb": h}, "zion")} for h in HBM_GB]
            best = max(scored, key=lambda r: r["per_kusd"])
            in_hbm = [r for r in scored if r["ddr_used_gb"] <= 0.0]
            best_hbm = max(in_hbm, key=lambda r: r["per_kusd"]) if in_hbm else None
            rows.append({"pcie_gen": gen, "accelerators": acc, "best_hbm_gb": best["hbm_gb"],
                         "best_ddr_gb_used": best["ddr_used_gb"], "best_per_kusd": best["per_kusd"],
                         "all_in_hbm_gb": best_hbm["hbm_gb"] if best_hbm else math.nan,
                         "all_in_hbm_per_kusd": best_hbm["per_kusd"] if best_hbm else math.nan})
    return pd.DataFrame(rows)


def _zion_fabrics(data: CaseData) -> pd.DataFrame:
    rows = []
    hbm = _hbm_to_fit_gb(data, 8)
    for tables, extra in (("host DDR", {}), ("HBM", {"node.hbm_gb": hbm})):
        for fabric in FABRICS:
            for bw in LINK_GB_S:
                design = {"node.scaleup": fabric, "node.scaleup_gb_s": bw, **extra}
                rows.append({"tables in": tables, "fabric": fabric, "link_gb_s": bw,
                             **_row(data, design, "zion")})
    return pd.DataFrame(rows)


def _zion_growth(data: CaseData) -> pd.DataFrame:
    """All-to-all bytes per accelerator per step as the model gains sparse features, on a Zion node
    whose HBM holds it, and the link bandwidth that would keep the 1x model's step time."""
    rows = []
    base_step_s = None
    for k in GROWTH:
        wl = repeat_tables(data.workload, k)
        d = _with_workload(data, wl)
        ev = d.evaluate({"node.hbm_gb": _hbm_to_fit_gb(d, 8)}, "zion")
        same, _ = alltoall_sends(wl, ev.plan, ev.system)
        per_step = 2.0 * same  # forward exchange of pooled rows, backward exchange of their gradients
        if base_step_s is None:
            base_step_s = ev.step_time_s
        rows.append({"tables": len(wl.tables), "a2a_mb_per_step": per_step / 1e6,
                     "need_gb_s": per_step / base_step_s / 1e9, "step_ms": ev.step_time_s * 1e3,
                     "bottleneck": ev.bottleneck})
    return pd.DataFrame(rows)


def analyse_zion(data: CaseData) -> Findings:
    """Host DDR against more HBM, the fabrics at eight accelerators, and the bandwidth growth needs."""
    front = data.front()
    probe = _zion_ddr_vs_hbm(data)
    fit = probe[probe["ddr_used_gb"] <= 0.0]
    fabrics = _zion_fabrics(data)
    own = float(data.catalog.accelerator["zion-oam"].scaleup_gb_s)
    at_own = fabrics[fabrics["link_gb_s"] == own]
    spread = {t: float(g["throughput"].max() / g["throughput"].min() - 1.0)
              for t, g in at_own.groupby("tables in")}
    growth = _zion_growth(data)
    sizes = _zion_hbm_sizes(data)
    return {
        "bend": front_bend(front),
        "hbm_sizes": sizes,
        "cache_beats_all_hbm": bool((sizes["best_ddr_gb_used"] > 0).all()),
        "cache_margin": float((sizes["best_per_kusd"] / sizes["all_in_hbm_per_kusd"] - 1.0).max()),
        "front": front,
        "front_ddr_share": float((front["ddr_used_gb"] > 1.0).mean()) if len(front) else math.nan,
        "front_bottlenecks": _bottlenecks(front) if len(front) else "",
        "probe": probe,
        "one_node": probe.iloc[0].to_dict(),
        "fit": fit.iloc[0].to_dict() if len(fit) else {},
        "best_fit_per_kusd": float(fit["per_kusd"].max()) if len(fit) else math.nan,
        "fabrics": fabrics,
        "own_link_gb_s": own,
        "fabric_spread": spread,
        "fabric_order_holds": _fabric_order(fabrics),
        "switch_dominated": _switch_dominated(fabrics),
        "growth": growth,
        "growth_covered": int(growth[growth["need_gb_s"] <= own]["tables"].max()
                              // len(data.workload.tables)) if (growth["need_gb_s"] <= own).any() else 0,
    }


def _fabric_order(fabrics: pd.DataFrame) -> bool:
    """ring > hybrid cube mesh > fully connected == switch in all-to-all time, at every bandwidth."""
    for _, g in fabrics.groupby(["tables in", "link_gb_s"]):
        t = dict(zip(g["fabric"], g["a2a_fabric_ms"], strict=True))
        if not (t["ring"] > t["hybrid_cube_mesh"] > t["fully_connected"]
                and math.isclose(t["fully_connected"], t["switch"], rel_tol=1e-9)):
            return False
    return True


def _switch_dominated(fabrics: pd.DataFrame) -> bool:
    for _, g in fabrics.groupby(["tables in", "link_gb_s"]):
        fc = g[g["fabric"] == "fully_connected"].iloc[0]
        sw = g[g["fabric"] == "switch"].iloc[0]
        if not (fc["capex_usd"] < sw["capex_usd"] and fc["throughput"] >= sw["throughput"]):
            return False
    return True


def _zion_point(r: pd.Series) -> str:
    return (f"{int(r['param:node.accelerators'])} accelerators with {r['param:node.hbm_gb']:.0f} GB "
            f"of HBM each ({_usd(r['capex_usd'])}, {_ksps(r[THROUGHPUT])})")


def explain_zion(f: Findings) -> str:
    one, fit = f["one_node"], f["fit"]
    probe = f["probe"][["nodes", "accelerators", "throughput", "capex_usd", "per_kusd", "ddr_used_gb",
                        "bottleneck"]].rename(columns={"per_kusd": "samples/s per $1k"})
    own = f["own_link_gb_s"]
    fab = f["fabrics"]
    fab_own = fab[fab["link_gb_s"] == own][["tables in", "fabric", "a2a_fabric_ms", "throughput",
                                            "capex_usd", "bottleneck"]]
    growth = f["growth"].rename(columns={"need_gb_s": "GB/s to keep the 1x step"})
    spread = f["fabric_spread"]
    gain = f["best_fit_per_kusd"] / one["per_kusd"]
    return f"""
**Host DDR against more accelerators' HBM.** The 800 GB of tables do not fit the 8 x 32 GB of
HBM of one Zion, so one Zion keeps {one['ddr_used_gb']:,.0f} GB of them in its host DDR and
caches the hot rows in HBM. That node trains {_ksps(one['throughput'])} for
{_usd(one['capex_usd'])}, and its step is bound by `{one['bottleneck']}`: every lookup that misses
the HBM cache crosses the host's PCIe links. Adding Zion nodes spreads the tables over more HBM;
from {int(fit.get('nodes', 0))} nodes no row is left in DDR, and that cluster trains
{_ksps(fit.get('throughput', 0.0))} for {_usd(fit.get('capex_usd', 0.0))}: the best
HBM-resident cluster gives {gain:.1f}x the samples/s per dollar of the single DDR node. The DDR
node is the cheapest way to train the model at all, not the cheapest per sample.

{markdown_table(probe)}

Within one node the question is how much HBM to buy per accelerator. Scoring Zion with 8 and
16 accelerators on PCIe 3, 4 and 5 at HBM sizes from 16 to 192 GB, the size with the most
samples/s per dollar always leaves part of the tables in host DDR, by up to
{f['cache_margin']:.0%} over the best size that holds every row in HBM: the hot rows (the
lookups follow a power law) fit a cache-sized HBM, and HBM for the cold rows costs more than the
few lookups that reach them. The margin is thin, so the answer is "a cache-sized HBM", not "as
little HBM as possible": below it, misses make the host PCIe links the bottleneck.

{markdown_table(f['hbm_sizes'].rename(columns={"best_per_kusd": "best samples/s per $1k",
                                               "all_in_hbm_per_kusd": "all in HBM, per $1k"}))}

The study's own front (accelerators, HBM, DDR, PCIe, fabric and NICs searched together) agrees:
{f['front_ddr_share']:.0%} of its designs keep tables in host DDR. Front bottlenecks:
{f['front_bottlenecks']}. {describe_bend(f['bend'], _zion_point)}

**The fabric at eight accelerators.** At Zion's own {own:g} GB/s per accelerator, the all-to-all
takes longest on a ring, less on the hybrid cube mesh, and least on a fully connected mesh or a
switch (equal at eight accelerators, where every pair has its own link either way; the switch
costs more). With the tables in host DDR the fabric changes throughput by
{spread.get('host DDR', 0):.1%} across the four choices, because the host PCIe traffic bounds the
step; with the tables in HBM by {spread.get('HBM', 0):.1%}.

{markdown_table(fab_own)}

**Bandwidth as the model grows.** Repeating the tables (more sparse features, as production
models grew) multiplies the bytes each accelerator exchanges per step; to keep the 1x model's
step time, the exchange needs the per-accelerator bandwidth below. The grown models' own steps
are slower (the dot interaction grows with the square of the features), which is why a fixed
node trains them far more slowly rather than waiting on the fabric. Zion's {own:g} GB/s per
accelerator covers the need up to the {f['growth_covered']}x model.

{markdown_table(growth)}
"""


ZION = CaseStudy(
    name="zion",
    title="Zion (2019-2020): host DDR or more HBM, and which fabric",
    study="zion-2020",
    question=(
        "A Zion-era recommendation model (`zion-2019`: 80 tables, 800 GB of embeddings) does not "
        "fit in the HBM of one eight-accelerator node. Should its tables live in a large host DDR "
        "(Zion's idea) or be sharded over more accelerators' HBM? Which accelerator fabric (ring, "
        "hybrid cube mesh, fully connected, switch) serves the all-to-all at eight accelerators, and "
        "how much all-to-all bandwidth per accelerator does a step need as the model grows?"),
    analyse=analyse_zion,
    claims=(
        Claim("One Zion with its tables in host DDR is bound by host PCIe traffic.",
              lambda f: f["one_node"]["bottleneck"] == "host_pcie"),
        Claim("Sharding the tables over the HBM of enough Zion nodes that no row stays in host DDR "
              "gives more samples/s per dollar than one Zion with its tables in DDR.",
              lambda f: f["best_fit_per_kusd"] > f["one_node"]["per_kusd"]),
        Claim("Within one node (8 or 16 accelerators, PCIe 3 to 5), the HBM size with the most "
              "samples/s per dollar leaves part of the tables in host DDR: HBM sized as a cache "
              "for the hot rows beats HBM that holds every row.",
              lambda f: f["cache_beats_all_hbm"]),
        Claim("At equal link bandwidth per accelerator the all-to-all is slowest on the ring, faster "
              "on the hybrid cube mesh, and fastest on the fully connected mesh and the switch, "
              "which tie at eight accelerators.",
              lambda f: f["fabric_order_holds"]),
        Claim("At eight accelerators the fully connected mesh dominates the switch: as fast, and "
              "cheaper at every link bandwidth.",
              lambda f: f["switch_dominated"]),
        Claim("With the tables in host DDR the fabric matters less than with them in HBM: at "
              "Zion's own link bandwidth the four fabrics are within 5% of each other.",
              lambda f: f["fabric_spread"]["host DDR"] < min(0.05, f["fabric_spread"]["HBM"])),
        Claim("Each doubling of the sparse features multiplies the all-to-all bytes per "
              "accelerator per step by at least 1.7, so the bandwidth that keeps the step time "
              "grows almost in proportion to the model.",
              lambda f: _grows_by(f["growth"]["a2a_mb_per_step"].tolist(), 1.7)),
    ),
    explain=explain_zion,
    sensitivity=Sensitivity("accelerator prices (the Zion OAM has no public price)",
                            scale_accelerator_prices),
    reduced_trials=120,
)


def _grows_by(values: list[float], factor: float) -> bool:
    """Each value at least ``factor`` times the one before."""
    return all(b >= factor * a for a, b in itertools.pairwise(values))


# --- 2. ZionEX scale-out -------------------------------------------------------------------------

SCALE_NODES = (4, 8, 16)
NIC_GBIT_S = (25.0, 50.0, 100.0, 200.0, 400.0)


def _nic_per_accelerator(frame: pd.DataFrame, data: CaseData) -> pd.Series:
    """Scale-out NIC bandwidth per accelerator (Gb/s) of each row."""
    base = data.space.base_spec().node
    nics = frame.get("param:node.nics", pd.Series(base.nics, index=frame.index)).astype(float)
    speed = frame.get("param:node.nic_gbit_s", pd.Series(base.nic_gbit_s, index=frame.index)).astype(float)
    return nics * speed / float(base.accelerators)


def _zionex_nics(data: CaseData) -> pd.DataFrame:
    """Throughput against NIC speed (one NIC per accelerator's worth of ports), for each attachment,
    at 4, 8 and 16 nodes, with enough host DDR per node to hold the tables."""
    rows = []
    footprint = float(data.workload.summary()["footprint_gb"])
    for nodes in SCALE_NODES:
        ddr = max(1536.0, math.ceil(1.1 * footprint / nodes))
        for attach in ("cpu", "accelerator"):
            for gbit in NIC_GBIT_S:
                design = {"nodes": nodes, "node.ddr_gb": ddr, "node.nic_attach": attach,
                          "node.nics": 8, "node.nic_gbit_s": gbit}
                rows.append({"nodes": nodes, "attach": attach, "nic_gbit_s_per_accelerator": gbit,
                             **_row(data, design)})
    return pd.DataFrame(rows)


def _saturation(probe: pd.DataFrame) -> pd.DataFrame:
    """Per node count and attachment: the slowest NIC within 5% of the best throughput."""
    rows = []
    for (nodes, attach), g in probe.groupby(["nodes", "attach"], sort=False):
        best = g["throughput"].max()
        enough = g[g["throughput"] >= NEAR_BEST * best]["nic_gbit_s_per_accelerator"].min()
        rows.append({"nodes": nodes, "attach": attach, "enough_gbit_s": float(enough),
                     "best_throughput": float(best)})
    return pd.DataFrame(rows)


def analyse_zionex(data: CaseData) -> Findings:
    """NIC bandwidth per accelerator on the front, and CPU-attached against accelerator-attached."""
    front = data.front()
    front = front.assign(nic_gbit_s_per_accelerator=_nic_per_accelerator(front, data))
    probe = _zionex_nics(data)
    sat = _saturation(probe)
    at = probe.set_index(["nodes", "attach", "nic_gbit_s_per_accelerator"])["throughput"]
    feasible_nodes = sorted(int(n) for n in data.feasible()["nodes"].unique())
    return {
        "front": front,
        "bend": front_bend(front),
        "front_min_nic": float(front["nic_gbit_s_per_accelerator"].min()) if len(front) else math.nan,
        "best_per_usd_nic": float(front.loc[(front[THROUGHPUT] / front["capex_usd"]).idxmax(),
                                            "nic_gbit_s_per_accelerator"]) if len(front) else math.nan,
        "front_share_200": float((front["nic_gbit_s_per_accelerator"] >= 200.0).mean())
        if len(front) else math.nan,
        "front_max_nic": float(front["nic_gbit_s_per_accelerator"].max()) if len(front) else math.nan,
        "front_accel_share": float((front["param:node.nic_attach"] == "accelerator").mean())
        if len(front) else math.nan,
        "front_network_share": float((front["bottleneck"] == "alltoall_network").mean())
        if len(front) else math.nan,
        "front_bottlenecks": _bottlenecks(front) if len(front) else "",
        "smallest_feasible_nodes": feasible_nodes[0] if feasible_nodes else 0,
        "probe": probe,
        "saturation": sat,
        "cpu_enough": float(sat[sat["attach"] == "cpu"]["enough_gbit_s"].max()),
        "accel_enough": float(sat[sat["attach"] == "accelerator"]["enough_gbit_s"].min()),
        "gain_16": float(at[(16, "accelerator", 200.0)] / at[(16, "cpu", 200.0)]),
    }


def _nodes_point(r: pd.Series) -> str:
    system = f"{r['param:system']} " if "param:system" in r else ""
    return f"{int(r['nodes'])} {system}node(s) ({_usd(r['capex_usd'])}, {_ksps(r[THROUGHPUT])})"


def explain_zionex(f: Findings) -> str:
    front = f["front"]
    table = front.sort_values("capex_usd")[[
        "nodes", "param:node.ddr_gb", "param:node.nic_attach", "param:node.nics", "param:node.nic_gbit_s",
        "nic_gbit_s_per_accelerator", "throughput_samples_per_s", "capex_usd", "bottleneck"]].rename(
        columns=lambda c: c.removeprefix("param:node.")).drop_duplicates()
    probe = f["probe"].pivot_table(index=["nodes", "attach"], columns="nic_gbit_s_per_accelerator",
                                   values="throughput").reset_index()
    probe.columns = [c if isinstance(c, str) else f"{c:g} Gb/s" for c in probe.columns]
    return f"""
**How much NIC bandwidth the front needs.** The 12-trillion-parameter model needs about 24 TB for
its tables, so with at most 8 TB of host DDR per node the smallest feasible cluster in this space
has {f['smallest_feasible_nodes']} nodes ({8 * f['smallest_feasible_nodes']} accelerators); below
that no design fits. The front's designs give each accelerator between
{f['front_min_nic']:g} and {f['front_max_nic']:g} Gb/s of scale-out bandwidth, {f['front_share_200']:.0%}
of them at least 200 Gb/s, and its design with the most samples/s per dollar
{f['best_per_usd_nic']:g} Gb/s. {f['front_network_share']:.0%} of the front is bound by the
all-to-all over the network (front bottlenecks: {f['front_bottlenecks']}): the cheapest designs
save a few percent of capex on NICs and lose most of the throughput; past them the front buys
throughput with nodes while keeping the NIC bandwidth per accelerator near the most the
accelerator's own PCIe link can feed. {describe_bend(f['bend'], _nodes_point)}

{markdown_table(table)}

**CPU-attached NICs (Zion) against one NIC beside each accelerator (ZionEX).** Holding everything
else and moving only the NIC speed (eight NICs per node, enough DDR for the tables):

{markdown_table(probe)}

With the NICs on the CPUs, every byte of the all-to-all is staged through host memory and
crosses the host's shared PCIe uplinks, so throughput stops rising at
{f['cpu_enough']:g} Gb/s per accelerator (within 5% of its best) whatever the NIC speed. With a
NIC beside each accelerator (GPUDirect through the PCIe switch they share) it keeps rising to
{f['accel_enough']:g} Gb/s, where the accelerator's own PCIe 4 x16 link (about 25 GB/s) caps it;
at 16 nodes and 200 Gb/s per accelerator that is
{f['gain_16']:.2f}x the throughput of the CPU-attached design. This is the change from Zion to
ZionEX: {f['front_accel_share']:.0%} of the study's front attaches its NICs to the accelerators.
"""


ZIONEX = CaseStudy(
    name="zionex",
    title="ZionEX scale-out: NIC bandwidth per accelerator, and where the NICs attach",
    study="zionex-scale-out",
    question=(
        "For the 12-trillion-parameter production model (`synthetic-production-12t`) on 8 to 128 "
        "A100-class accelerators (ZionEX nodes), how much scale-out NIC bandwidth per accelerator "
        "does the throughput-capex front need, and does attaching the NICs to the CPUs (Zion) "
        "rather than one beside each accelerator (ZionEX) change the answer?"),
    analyse=analyse_zionex,
    claims=(
        Claim("The front's design with the most samples/s per dollar gives each accelerator at "
              "least 200 Gb/s of scale-out NIC bandwidth.",
              lambda f: f["best_per_usd_nic"] >= 200.0),
        Claim("Most designs on the front give each accelerator at least 200 Gb/s; those with less "
              "are the cheapest few, which starve the all-to-all.",
              lambda f: f["front_share_200"] > 0.5),
        Claim("Most designs on the front are bound by the all-to-all over the network.",
              lambda f: f["front_network_share"] > 0.5),
        Claim("With CPU-attached NICs throughput stops rising at 100 Gb/s per accelerator or "
              "below, at 4, 8 and 16 nodes.",
              lambda f: f["cpu_enough"] <= 100.0),
        Claim("With a NIC beside each accelerator throughput keeps rising to at least 200 Gb/s "
              "per accelerator, at 4, 8 and 16 nodes.",
              lambda f: f["accel_enough"] >= 200.0),
        Claim("At 16 nodes and 200 Gb/s per accelerator, NICs beside the accelerators give at least "
              "1.5x the throughput of CPU-attached NICs.",
              lambda f: f["gain_16"] >= 1.5),
        Claim("Most designs on the front attach their NICs to the accelerators.",
              lambda f: f["front_accel_share"] > 0.5),
    ),
    explain=explain_zionex,
    sensitivity=Sensitivity("NIC, switch-port and optics prices", scale_network_prices),
    reduced_trials=120,
)


# --- 3 and 4. Today's hardware, and growth ------------------------------------------------------

TODAY_SYSTEMS = ("dgx-h100", "hgx-h200", "dgx-b200", "mi300x-x8", "gaudi2-x8")
PROJECTIONS = {"capex": ("throughput_samples_per_s", "capex_usd"),
               "power": ("throughput_samples_per_s", "power_w")}
DISTINCT = ["throughput_samples_per_s", "capex_usd", "power_w"]


def _front_systems(front: pd.DataFrame) -> dict[str, list[int]]:
    """Node counts on a front, per vendor node."""
    out: dict[str, list[int]] = {}
    for system, g in front.groupby("param:system"):
        out[str(system)] = sorted({int(n) for n in g["nodes"]})
    return out


def _per_system(data: CaseData, feasible: pd.DataFrame) -> pd.DataFrame:
    """Per vendor node: the best throughput, samples/s per $1k and per W any of its designs
    reached, beside its accelerator's HBM and price (catalog) that explain them."""
    g = feasible.assign(per_kusd=feasible[THROUGHPUT] / feasible["capex_usd"] * 1e3,
                        per_w=feasible[THROUGHPUT] / feasible["power_w"])
    out = g.groupby("param:system").agg(
        best_throughput=(THROUGHPUT, "max"), samples_per_s_per_kusd=("per_kusd", "max"),
        samples_per_s_per_w=("per_w", "max")).reset_index().rename(columns={"param:system": "system"})
    parts = [data.system({}, str(s)).accelerator for s in out["system"]]
    return out.assign(hbm_gb=[a.hbm_gb for a in parts], hbm_tb_s=[a.hbm_gb_s / 1e3 for a in parts],
                      accelerator_usd=[a.price_usd for a in parts])


def analyse_today(data: CaseData) -> Findings:
    """Which vendor nodes, at how many nodes, make the throughput-capex and throughput-power fronts."""
    feasible = data.feasible()
    fronts = {k: data.front(metrics=m).drop_duplicates(DISTINCT) for k, m in PROJECTIONS.items()}
    front3 = data.front()
    per = _per_system(data, feasible)
    baselines = feasible[feasible["baseline"].astype(str) != ""] if "baseline" in feasible else feasible[:0]
    on3 = set(front3.index)
    base = baselines.assign(on_front=[i in on3 for i in baselines.index])[
        ["baseline", THROUGHPUT, "capex_usd", "power_w", "bottleneck", "on_front"]]
    one = feasible[feasible["nodes"] == 1]
    return {
        "bends": {"capex": front_bend(fronts["capex"]), "power": front_bend(fronts["power"], "power_w")},
        "fronts": fronts,
        "front_systems": {k: _front_systems(v) for k, v in fronts.items()},
        "front_max_nodes": int(front3["nodes"].max()) if len(front3) else 0,
        "large_front_systems": sorted({str(x) for x in
                                       fronts["capex"][fronts["capex"]["nodes"] > 6]["param:system"]}),
        "front_bottlenecks": _bottlenecks(front3) if len(front3) else "",
        "per_system": per,
        "best_per_kusd": str(per.loc[per["samples_per_s_per_kusd"].idxmax(), "system"]),
        "best_per_w": str(per.loc[per["samples_per_s_per_w"].idxmax(), "system"]),
        "best_throughput": str(per.loc[per["best_throughput"].idxmax(), "system"]),
        "cheapest_front": str(fronts["capex"].sort_values("capex_usd").iloc[0]["param:system"]),
        "baselines": base.reset_index(drop=True),
        "baseline_bottlenecks": _bottlenecks(base) if len(base) else "",
        "one_node_network_free": bool((one.groupby("param:system")[THROUGHPUT].nunique() == 1).all()),
    }


def _systems_list(systems: Mapping[str, list[int]]) -> str:
    return "; ".join(f"{s} at {', '.join(map(str, n))} node(s)" for s, n in sorted(systems.items()))


def explain_today(f: Findings) -> str:
    per = f["per_system"]
    by = per.set_index("system")

    def _hbm(system: str) -> str:
        return f"{by.loc[system, 'hbm_tb_s']:.2f} TB/s of HBM per accelerator"

    def _price(system: str) -> str:
        return f"${by.loc[system, 'accelerator_usd']:,.0f}"

    base = f["baselines"].rename(columns={THROUGHPUT: "throughput"})
    return f"""
**Who is on the front.** Throughput against capex: {_systems_list(f['front_systems']['capex'])}.
Throughput against power: {_systems_list(f['front_systems']['power'])}. The cheapest point is one
{f['cheapest_front']} node; the largest design on the front has {f['front_max_nodes']} nodes
(front bottlenecks: {f['front_bottlenecks']}). On one node the network choices (NIC speed,
topology, oversubscription) change nothing but the NIC price, which is why one-node designs
repeat on the front.

Against capex: {describe_bend(f['bends']['capex'], _nodes_point)} Against power:
{describe_bend(f['bends']['power'], _nodes_point, unit="kW")}

**Per vendor node** (the best over every node count and network the study tried):

{markdown_table(per)}

{f['best_per_kusd']} gives the most samples/s per dollar, {f['best_per_w']} the most per watt
and {f['best_throughput']} the highest throughput. On one node the vendor nodes' steps are
bound by {f['baseline_bottlenecks']}: the compute, and the HBM bandwidth that feeds the
embedding lookups beside it, per dollar decide: the MI300X brings {_hbm('mi300x-x8')}
at {_price('mi300x-x8')}, the H100 {_hbm('dgx-h100')} at {_price('dgx-h100')}, the B200
{_hbm('dgx-b200')} at {_price('dgx-b200')} (catalog prices per accelerator, estimates). The H100
and H200 nodes are dominated at every budget.

**The vendor nodes as sold** (one node each: the study's baselines, enqueued first; of these,
NVIDIA's nodes have published MLPerf Training DLRM-DCNv2 results, the others are their vendors'
reference platforms, modelled from datasheets):

{markdown_table(base)}

A vendor node as sold carries 400 Gb/s NICs (Gaudi2: 24 x 100 GbE) that one node does not use;
the same node with slower NICs costs less and trains as fast, which is why a baseline can sit just
off the front.
"""


TODAY = CaseStudy(
    name="today",
    title="Today's hardware: MLPerf DLRM-DCNv2 on H100, H200, B200, MI300X and Gaudi2 nodes",
    study="todays-hardware",
    question=(
        "For MLPerf's DLRM-DCNv2 (`mlperf-dlrm-dcnv2`), which of today's eight-accelerator nodes, "
        "at one to sixteen nodes, give the most training throughput for the money and for the "
        "power? The published MLPerf systems are the study's baselines."),
    analyse=analyse_today,
    claims=(
        Claim("No H100 or H200 design is on the throughput-capex or the throughput-power front.",
              lambda f: not ({"dgx-h100", "hgx-h200"} & (set(f["front_systems"]["capex"])
                                                         | set(f["front_systems"]["power"])))),
        Claim("The MI300X node gives the most samples/s per dollar.",
              lambda f: f["best_per_kusd"] == "mi300x-x8"),
        Claim("The B200 node gives the most samples/s per watt and the highest throughput.",
              lambda f: f["best_per_w"] == "dgx-b200" and f["best_throughput"] == "dgx-b200"),
        Claim("The cheapest design on the front is one Gaudi2 node.",
              lambda f: f["cheapest_front"] == "gaudi2-x8"),
        Claim("Beyond six nodes, only B200 clusters are on the throughput-capex front.",
              lambda f: f["large_front_systems"] == ["dgx-b200"]),
        Claim("On one node, the scale-out network does not change throughput.",
              lambda f: f["one_node_network_free"]),
    ),
    explain=explain_today,
    sensitivity=Sensitivity("accelerator prices", scale_accelerator_prices),
    reduced_trials=120,
)


GRID_NODES = (1, 2, 4, 8, 16)
GRID_NIC = (200.0, 400.0, 800.0)


def _grid(data: CaseData) -> list[dict[str, Any]]:
    return [{"system": s, "nodes": n, "node.nic_gbit_s": g, "network.topology": "rail_optimized",
             "network.oversubscription": 1.0}
            for s in TODAY_SYSTEMS for n in GRID_NODES for g in GRID_NIC]


def _grid_frame(data: CaseData, workload: Workload) -> pd.DataFrame:
    d = _with_workload(data, workload)
    return pd.DataFrame([score_row(d, design) for design in _grid(data)])


def analyse_growth(data: CaseData) -> Findings:
    """The 4x study's fronts, and which designs of one grid stay on the front when tables grow 4x."""
    findings = analyse_today(data)
    base_wl = load_workload(data.spec.workload, tuple(data.spec.workload_overrides.items()))
    before, after = _grid_frame(data, base_wl), _grid_frame(data, data.workload)
    key = ["param:system", "param:nodes", "param:node.nic_gbit_s"]
    moves = []
    for name, metrics in PROJECTIONS.items():
        on_before = set(map(tuple, data.front(before[before["feasible"]], metrics)[key].to_numpy()))
        on_after = set(map(tuple, data.front(after[after["feasible"]], metrics)[key].to_numpy()))
        for design in sorted(on_before | on_after):
            status = ("stays" if design in on_before and design in on_after else
                      "falls off" if design in on_before else "joins")
            moves.append({"front": f"throughput-{name}", "system": design[0], "nodes": design[1],
                          "nic_gbit_s": design[2], "change": status})
    moves_frame = pd.DataFrame(moves)
    one = ["param:system", "param:nodes"]
    def one_node(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[(frame["param:nodes"] == 1) & (frame["param:node.nic_gbit_s"] == 400.0)]

    single = pd.merge(one_node(before), one_node(after), on=one, suffixes=("_1x", "_4x"))
    slowdown = pd.DataFrame({
        "system": single["param:system"],
        "samples_per_s_1x": single[f"{THROUGHPUT}_1x"], "samples_per_s_4x": single[f"{THROUGHPUT}_4x"],
        "slowdown": single[f"{THROUGHPUT}_1x"] / single[f"{THROUGHPUT}_4x"],
        "bottleneck_4x": single["bottleneck_4x"], "host_ddr_gb_4x": single["ddr_used_gb_4x"]})
    h100 = slowdown.set_index("system").loc["dgx-h100"]
    by_system = moves_frame.groupby(["system", "change"]).size().unstack(fill_value=0)
    findings.update({
        "moves": moves_frame,
        "moves_by_system": by_system.reset_index(),
        "fell_off_systems": sorted(set(moves_frame[moves_frame["change"] == "falls off"]["system"])),
        "stayed_systems": sorted(set(moves_frame[moves_frame["change"] == "stays"]["system"])),
        "stay_share": float((moves_frame["change"] == "stays").sum()
                            / max(1, (moves_frame["change"] != "joins").sum())),
        "h100_bottleneck_4x": str(h100["bottleneck_4x"]),
        "h100_slowdown": float(h100["slowdown"]),
        "single_node": slowdown,
        "slowest_growth": str(slowdown.loc[slowdown["slowdown"].idxmax(), "system"]),
        "others_slowdown": float(slowdown[slowdown["system"] != "dgx-h100"]["slowdown"].max()),
        "grid_size": len(before),
    })
    return findings


def explain_growth(f: Findings) -> str:
    return f"""
**What 4x larger tables change.** The same study, with every table's rows multiplied by four.
Throughput against capex: {_systems_list(f['front_systems']['capex'])}. Throughput against power:
{_systems_list(f['front_systems']['power'])}. Front bottlenecks: {f['front_bottlenecks']}.
Against capex: {describe_bend(f['bends']['capex'], _nodes_point)}

**Which designs stay on the front.** One grid of {f['grid_size']} designs (each vendor node at
1-16 nodes and 200-800 Gb/s NICs, rail-optimised, non-blocking) scored with the tables as
published and 4x larger; per vendor node, how many of its designs stay on each front, fall off it
or join it:

{markdown_table(f['moves_by_system'])}

{f['stay_share']:.0%} of the designs on the published-size fronts stay on the 4x fronts. The
designs that fall off belong to {', '.join(f['fell_off_systems']) or 'no vendor node'}; those
that stay to {', '.join(f['stayed_systems']) or 'none'}.

**One node of each, tables as published and 4x larger** (400 Gb/s NICs):

{markdown_table(f['single_node'])}

A DGX H100 node's 8 x 80 GB of HBM no longer holds the grown tables: it spills them to host DDR,
becomes bound by `{f['h100_bottleneck_4x']}` and trains {f['h100_slowdown']:.1f}x slower, while
the other nodes spill little or nothing and slow down by at most {f['others_slowdown']:.2f}x.
(The MI300X node's figure a hair under 1 is the placement's granularity: its 4x tables are cut
into more pieces, which balance a little better.)

**Per vendor node, 4x tables:**

{markdown_table(f['per_system'])}
"""


GROWTH_CASE = CaseStudy(
    name="growth",
    title="Growth: today's hardware with embedding tables 4x larger",
    study="todays-hardware-4x",
    question=(
        "The today's-hardware study again with every embedding table 4x larger (rows x 4, the "
        "growth production models see between hardware generations): which designs stay on the "
        "front, and which fall off?"),
    analyse=analyse_growth,
    claims=(
        Claim("With 4x tables, one DGX H100 node no longer holds them in HBM and its step becomes "
              "bound by host PCIe traffic.",
              lambda f: f["h100_bottleneck_4x"] == "host_pcie"),
        Claim("Of the five vendor nodes, one DGX H100 node slows down the most when the tables "
              "grow 4x.",
              lambda f: f["slowest_growth"] == "dgx-h100"),
        Claim("No H100 or H200 design is on either front with 4x tables.",
              lambda f: not ({"dgx-h100", "hgx-h200"} & (set(f["front_systems"]["capex"])
                                                         | set(f["front_systems"]["power"])))),
        Claim("B200 designs stay on the front when the tables grow 4x.",
              lambda f: "dgx-b200" in f["stayed_systems"]),
        Claim("The MI300X node still gives the most samples/s per dollar, and the B200 node the "
              "most per watt.",
              lambda f: f["best_per_kusd"] == "mi300x-x8" and f["best_per_w"] == "dgx-b200"),
    ),
    explain=explain_growth,
    sensitivity=Sensitivity("accelerator prices", scale_accelerator_prices),
    reduced_trials=120,
)


# --- registry ----------------------------------------------------------------------------------

CASES: dict[str, CaseStudy] = {c.name: c for c in (ZION, ZIONEX, TODAY, GROWTH_CASE)}


def case_names() -> tuple[str, ...]:
    """The case studies, in the order their pages present them."""
    return tuple(CASES)


def get_case(name: str) -> CaseStudy:
    """The case study ``name``, or an error listing the known ones."""
    try:
        return CASES[name]
    except KeyError:
        raise DseInputError("case study", name, f"unknown case study (known: {', '.join(CASES)})") from None

