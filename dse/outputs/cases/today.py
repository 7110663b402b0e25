"""Case study 3, today's hardware: for MLPerf's DLRM-DCNv2, which of today's eight-accelerator
vendor nodes, at one to sixteen nodes, give the most training throughput for the money and for the
power (the published MLPerf systems are the study's baselines).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dse.outputs.cases.common import THROUGHPUT, bottlenecks, nodes_point
from dse.outputs.cases.framework import (
    CaseData,
    CaseStudy,
    Claim,
    Sensitivity,
    describe_bend,
    front_bend,
    markdown_table,
    scale_accelerator_prices,
)

TODAY_SYSTEMS = ("dgx-h100", "hgx-h200", "dgx-b200", "mi300x-x8", "gaudi2-x8")
LARGE_NODES = 8
"""Node count beyond which the claim on large clusters looks at the throughput-capex front."""
PROJECTIONS = {"capex": ("throughput_samples_per_s", "capex_usd"),
               "power": ("throughput_samples_per_s", "power_w")}
DISTINCT = ["throughput_samples_per_s", "capex_usd", "power_w"]


HOPPER_SYSTEMS = ("dgx-h100", "hgx-h200")
"""The vendor nodes of the previous generation, whose place on the fronts two claims state."""


def hopper_off_the_fronts(front_systems: Mapping[str, Mapping[str, list[int]]]) -> bool:
    """No Hopper node on the throughput-capex front, and none of more than one node on the
    throughput-power front (``front_systems``: :attr:`TodayFindings.front_systems`)."""
    return (not set(HOPPER_SYSTEMS) & set(front_systems["capex"])
            and all(front_systems["power"].get(s, [1]) == [1] for s in HOPPER_SYSTEMS))


def hopper_single_nodes(front_systems: Mapping[str, Mapping[str, list[int]]]) -> bool:
    """No DGX H100 on the throughput-capex front, and no Hopper design of more than one node on
    either front (``front_systems``: :attr:`TodayFindings.front_systems`)."""
    return ("dgx-h100" not in front_systems["capex"]
            and all(front_systems[f].get(s, [1]) == [1] for f in ("capex", "power")
                    for s in HOPPER_SYSTEMS))


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


@dataclass(frozen=True)
class TodayFindings:
    """What the today's-hardware analysis measured; ``capex`` and ``power`` name the two 2-D
    fronts (throughput against capex, throughput against power)."""

    bends: dict[str, Mapping[str, Any]]
    """Where each 2-D front bends (:func:`~dse.outputs.cases.framework.front_bend`)."""
    fronts: dict[str, pd.DataFrame]
    """The 2-D fronts, one row per distinct (throughput, capex, power)."""
    front_systems: dict[str, dict[str, list[int]]]
    """Per 2-D front: the node counts on it, per vendor node."""
    front_max_nodes: int
    """Most nodes of a design on the study's own front."""
    large_front_systems: list[str]
    """Vendor nodes on the throughput-capex front with more than :data:`LARGE_NODES` nodes."""
    front_bottlenecks: str
    per_system: pd.DataFrame
    """Per vendor node: the best throughput, samples/s per $1k and per W, HBM and price."""
    best_per_kusd: str
    best_per_w: str
    best_throughput: str
    cheapest_front: str
    """Vendor node of the cheapest design on the throughput-capex front."""
    baselines: pd.DataFrame
    """The vendor nodes as sold (the study's baselines), and whether each is on the front."""
    baseline_bottlenecks: str
    one_node_network_free: bool
    """On one node, every network choice of a vendor node gives the same throughput."""


def analyse_today(data: CaseData) -> TodayFindings:
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
    return TodayFindings(
        bends={"capex": front_bend(fronts["capex"]), "power": front_bend(fronts["power"], "power_w")},
        fronts=fronts,
        front_systems={k: _front_systems(v) for k, v in fronts.items()},
        front_max_nodes=int(front3["nodes"].max()) if len(front3) else 0,
        large_front_systems=sorted({str(x) for x in
                                    fronts["capex"][fronts["capex"]["nodes"] > LARGE_NODES]["param:system"]}),
        front_bottlenecks=bottlenecks(front3) if len(front3) else "",
        per_system=per,
        best_per_kusd=str(per.loc[per["samples_per_s_per_kusd"].idxmax(), "system"]),
        best_per_w=str(per.loc[per["samples_per_s_per_w"].idxmax(), "system"]),
        best_throughput=str(per.loc[per["best_throughput"].idxmax(), "system"]),
        cheapest_front=str(fronts["capex"].sort_values("capex_usd").iloc[0]["param:system"]),
        baselines=base.reset_index(drop=True),
        baseline_bottlenecks=bottlenecks(base) if len(base) else "",
        one_node_network_free=bool((one.groupby("param:system")[THROUGHPUT].nunique() == 1).all()),
    )


def systems_list(systems: Mapping[str, list[int]]) -> str:
    """Vendor nodes with the node counts at which they are on a front, for the page's prose."""
    return "; ".join(f"{s} at {', '.join(map(str, n))} {'node' if list(n) == [1] else 'nodes'}"
                     for s, n in sorted(systems.items()))


def explain_today(f: TodayFindings) -> str:
    per = f.per_system
    by = per.set_index("system")

    def _hbm(system: str) -> str:
        return f"{by.loc[system, 'hbm_tb_s']:.2f} TB/s of HBM per accelerator"

    def _price(system: str) -> str:
        return f"${by.loc[system, 'accelerator_usd']:,.0f}"

    base = f.baselines.rename(columns={THROUGHPUT: "throughput"})
    return f"""
**Who is on the front.** Throughput against capex: {systems_list(f.front_systems['capex'])}.
Throughput against power: {systems_list(f.front_systems['power'])}. The cheapest point is one
{f.cheapest_front} node; the largest design on the front has {f.front_max_nodes} nodes
(front bottlenecks: {f.front_bottlenecks}). On one node the network choices (NIC speed,
topology, oversubscription) change nothing but the NIC price, which is why one-node designs
repeat on the front.

Against capex: {describe_bend(f.bends['capex'], nodes_point)} Against power:
{describe_bend(f.bends['power'], nodes_point, unit="kW")}

**Per vendor node** (the best over every node count and network the study tried):

{markdown_table(per)}

{f.best_per_kusd} gives the most samples/s per dollar, {f.best_per_w} the most per watt
and {f.best_throughput} the highest throughput. On one node the vendor nodes' steps are
bound by {f.baseline_bottlenecks}: the compute, and the HBM bandwidth that feeds the
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


TODAY: CaseStudy[TodayFindings] = CaseStudy(
    name="today",
    title="Today's hardware: MLPerf DLRM-DCNv2 on H100, H200, B200, MI300X and Gaudi2 nodes",
    study="todays-hardware",
    question=(
        "For MLPerf's DLRM-DCNv2 (`mlperf-dlrm-dcnv2`), which of today's eight-accelerator nodes, "
        "at one to sixteen nodes, give the most training throughput for the money and for the "
        "power? The published MLPerf systems are the study's baselines."),
    analyse=analyse_today,
    claims=(
        Claim("No DGX H100 is on the throughput-capex front, and no H100 or H200 design of more "
              "than one node is on either front. (Changed with calibration 2026.12-10, which counts "
              "DCNv2's distinct rows under the data's skew and speeds Hopper nodes up by 9%: one "
              "HGX H200 node joined the capex front, where it said no H100 or H200 design was. "
              "Changed with 2026.12-9, power by activity: one node of each is on the power front.)",
              lambda f: hopper_single_nodes(f.front_systems)),
        Claim("The MI300X node gives the most samples/s per dollar.",
              lambda f: f.best_per_kusd == "mi300x-x8"),
        Claim("The B200 node gives the most samples/s per watt and the highest throughput.",
              lambda f: f.best_per_w == "dgx-b200" and f.best_throughput == "dgx-b200"),
        Claim("The cheapest design on the front is one Gaudi2 node.",
              lambda f: f.cheapest_front == "gaudi2-x8"),
        Claim("Beyond eight nodes, only B200 clusters are on the throughput-capex front. (Changed "
              "with calibration 2026.12-5: it was six; MI300X clusters of seven and eight nodes "
              "joined the front.)",
              lambda f: f.large_front_systems == ["dgx-b200"]),
        Claim("On one node, the scale-out network does not change throughput.",
              lambda f: f.one_node_network_free),
    ),
    explain=explain_today,
    sensitivity=Sensitivity("accelerator prices", scale_accelerator_prices),
    reduced_trials=120,
)
