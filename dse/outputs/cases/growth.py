"""Case study 4, growth: the today's-hardware study again with every embedding table 4x larger
(rows x 4, the growth production models see between hardware generations): which designs stay on
the front, and which fall off.

Beside the 4x study's own fronts (read as :mod:`dse.outputs.cases.today` reads them), one grid of
vendor-node designs is scored with the tables as published and 4x larger, so the comparison moves
the tables only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dse.model.stages import Stage
from dse.model.workload import Workload
from dse.outputs.cases.common import THROUGHPUT, nodes_point, with_workload
from dse.outputs.cases.framework import (
    CaseData,
    CaseStudy,
    Claim,
    Sensitivity,
    describe_bend,
    markdown_table,
    scale_accelerator_prices,
    score_row,
)
from dse.outputs.cases.today import (
    PROJECTIONS,
    TODAY_SYSTEMS,
    TodayFindings,
    analyse_today,
    hopper_off_the_fronts,
    systems_list,
)
from dse.search.study.study_file import study_workload

GRID_NODES = (1, 2, 4, 8, 16)
GRID_NIC = (200.0, 400.0, 800.0)


@dataclass(frozen=True)
class GrowthFindings:
    """What the growth analysis measured: the 4x study read as the today's-hardware case reads its
    study (``today``), and how the grid's fronts change when the tables grow 4x."""

    today: TodayFindings
    """The 4x study's fronts, per vendor node figures and baselines."""
    moves: pd.DataFrame
    """Each grid design on a published-size or 4x front: whether it stays, falls off or joins."""
    moves_by_system: pd.DataFrame
    """Per vendor node, how many of its designs stay, fall off or join."""
    fell_off_systems: list[str]
    stayed_systems: list[str]
    stay_share: float
    """Share of the designs on the published-size fronts that stay on the 4x fronts."""
    h100_bottleneck_4x: str
    h100_slowdown: float
    """One DGX H100 node's throughput with the published tables / with the 4x tables."""
    h100_power_ratio: float
    """One DGX H100 node's power with the 4x tables / with the published tables."""
    single_node: pd.DataFrame
    """One node of each vendor (400 Gb/s NICs): throughput as published and 4x, and the slowdown."""
    slowest_growth: str
    """The vendor node that slows down the most."""
    others_slowdown: float
    """The largest slowdown of the vendor nodes other than the DGX H100."""
    grid_size: int


def _grid(data: CaseData) -> list[dict[str, Any]]:
    return [{"system": s, "nodes": n, "node.nic_gbit_s": g, "network.topology": "rail_optimized",
             "network.oversubscription": 1.0}
            for s in TODAY_SYSTEMS for n in GRID_NODES for g in GRID_NIC]


def _grid_frame(data: CaseData, workload: Workload) -> pd.DataFrame:
    d = with_workload(data, workload)
    return pd.DataFrame([score_row(d, design) for design in _grid(data)])


def _front_moves(data: CaseData, before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """Per 2-D front, each grid design on it before or after: stays, falls off or joins."""
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
    return pd.DataFrame(moves)


def _single_node_slowdown(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """One node of each vendor with 400 Gb/s NICs, before and after: throughput, slowdown and
    power (W; power follows the step, so a node whose step is less dense compute draws less)."""
    def one_node(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[(frame["param:nodes"] == 1) & (frame["param:node.nic_gbit_s"] == 400.0)]

    single = pd.merge(one_node(before), one_node(after), on=["param:system", "param:nodes"],
                      suffixes=("_1x", "_4x"))
    return pd.DataFrame({
        "system": single["param:system"],
        "samples_per_s_1x": single[f"{THROUGHPUT}_1x"], "samples_per_s_4x": single[f"{THROUGHPUT}_4x"],
        "slowdown": single[f"{THROUGHPUT}_1x"] / single[f"{THROUGHPUT}_4x"],
        "bottleneck_4x": single["bottleneck_4x"], "host_ddr_gb_4x": single["ddr_used_gb_4x"],
        "power_w_1x": single["power_w_1x"], "power_w_4x": single["power_w_4x"]})


def _h100_spills(f: GrowthFindings) -> bool:
    """One DGX H100 node keeps part of the 4x tables in host DDR."""
    return bool(f.single_node.set_index("system").loc["dgx-h100", "host_ddr_gb_4x"] > 0)


def analyse_growth(data: CaseData) -> GrowthFindings:
    """The 4x study's fronts, and which designs of one grid stay on the front when tables grow 4x."""
    today = analyse_today(data)
    base_wl = study_workload(dataclasses.replace(data.spec, table_scale=1.0))
    before, after = _grid_frame(data, base_wl), _grid_frame(data, data.workload)
    moves_frame = _front_moves(data, before, after)
    slowdown = _single_node_slowdown(before, after)
    h100 = slowdown.set_index("system").loc["dgx-h100"]
    by_system = moves_frame.groupby(["system", "change"]).size().unstack(fill_value=0)
    return GrowthFindings(
        today=today,
        moves=moves_frame,
        moves_by_system=by_system.reset_index(),
        fell_off_systems=sorted(set(moves_frame[moves_frame["change"] == "falls off"]["system"])),
        stayed_systems=sorted(set(moves_frame[moves_frame["change"] == "stays"]["system"])),
        stay_share=float((moves_frame["change"] == "stays").sum()
                         / max(1, (moves_frame["change"] != "joins").sum())),
        h100_bottleneck_4x=str(h100["bottleneck_4x"]),
        h100_slowdown=float(h100["slowdown"]),
        h100_power_ratio=float(h100["power_w_4x"] / h100["power_w_1x"]),
        single_node=slowdown,
        slowest_growth=str(slowdown.loc[slowdown["slowdown"].idxmax(), "system"]),
        others_slowdown=float(slowdown[slowdown["system"] != "dgx-h100"]["slowdown"].max()),
        grid_size=len(before),
    )


def explain_growth(f: GrowthFindings) -> str:
    t = f.today
    return f"""
**What 4x larger tables change.** The same study, with every table's rows multiplied by four.
Throughput against capex: {systems_list(t.front_systems['capex'])}. Throughput against power:
{systems_list(t.front_systems['power'])}. Front bottlenecks: {t.front_bottlenecks}.
Against capex: {describe_bend(t.bends['capex'], nodes_point)}

**Which designs stay on the front.** One grid of {f.grid_size} designs (each vendor node at
1-16 nodes and 200-800 Gb/s NICs, rail-optimised, non-blocking) scored with the tables as
published and 4x larger; per vendor node, how many of its designs stay on each front, fall off it
or join it:

{markdown_table(f.moves_by_system)}

{f.stay_share:.0%} of the designs on the published-size fronts stay on the 4x fronts. The
designs that fall off belong to {', '.join(f.fell_off_systems) or 'no vendor node'}; those
that stay to {', '.join(f.stayed_systems) or 'none'}.

**One node of each, tables as published and 4x larger** (400 Gb/s NICs):

{markdown_table(f.single_node)}

A DGX H100 node's 8 x 80 GB of HBM no longer holds the grown tables: it spills them to host DDR
behind a cache of their popular rows in HBM, is bound by `{f.h100_bottleneck_4x}` and trains
{f.h100_slowdown:.2f}x slower, drawing {1 - f.h100_power_ratio:.0%} less power (less of its longer
step is dense compute), while the other nodes spill little or nothing and slow down by at most
{f.others_slowdown:.2f}x.
(The MI300X node's figure a hair under 1 is the placement's granularity: its 4x tables are cut
into more pieces, which balance a little better.)

**Per vendor node, 4x tables:**

{markdown_table(t.per_system)}
"""


GROWTH: CaseStudy[GrowthFindings] = CaseStudy(
    name="growth",
    title="Growth: today's hardware with embedding tables 4x larger",
    study="todays-hardware-4x",
    question=(
        "The today's-hardware study again with every embedding table 4x larger (rows x 4, the "
        "growth production models see between hardware generations): which designs stay on the "
        "front, and which fall off?"),
    analyse=analyse_growth,
    claims=(
        Claim("With 4x tables, one DGX H100 node no longer holds them in HBM: it keeps part in host "
              "DDR behind a cache in HBM, stays bound by dense compute and slows down by under 1.2x. "
              "(Changed with calibration 2026.12-10: it said its step becomes bound by host PCIe "
              "traffic, 3.0x slower; the placement then put the spilled tables on three of the "
              "eight accelerators, whose caches missed, and now spreads them by their misses.)",
              lambda f: f.h100_bottleneck_4x == Stage.dense_compute and f.h100_slowdown < 1.2
              and _h100_spills(f)),
        Claim("Of the five vendor nodes, one DGX H100 node slows down the most when the tables "
              "grow 4x.",
              lambda f: f.slowest_growth == "dgx-h100"),
        Claim("With 4x tables no H100 or H200 design is on the capex front, and none of more than "
              "one node is on the power front. (Changed with calibration 2026.12-9: it said one "
              "DGX H100 node joins the power front, which it does under some calibrations only.)",
              lambda f: hopper_off_the_fronts(f.today.front_systems)),
        # Since power follows the step (dse.model.power, issue 41): a node bound by its host
        # links draws less while its accelerators wait.
        Claim("With 4x tables one DGX H100 node draws less power than with the tables as published: "
              "less of its longer step is dense compute. (Changed with calibration 2026.12-10: it "
              "said so of a step bound by host PCIe, 24% less; now 4% less.)",
              lambda f: f.h100_power_ratio < 1.0),
        Claim("B200 designs stay on the front when the tables grow 4x.",
              lambda f: "dgx-b200" in f.stayed_systems),
        Claim("The MI300X node still gives the most samples/s per dollar, and the B200 node the "
              "most per watt.",
              lambda f: f.today.best_per_kusd == "mi300x-x8" and f.today.best_per_w == "dgx-b200"),
    ),
    explain=explain_growth,
    sensitivity=Sensitivity("accelerator prices", scale_accelerator_prices),
    reduced_trials=120,
)
