"""Memory tiers as data (dse/model/tiers.py): what each system lists, the placement's cascade over
them, the host-side time they bound, and CXL memory, the tier added on top of them."""

from __future__ import annotations

import itertools
import typing

import pytest

from dse.calibration.regime import design_class, placement_class
from dse.errors import DseInputError
from dse.model.cost import power
from dse.model.evaluate import evaluate
from dse.model.parameters import load_calibration
from dse.model.placement.candidates import Candidate
from dse.model.placement.tiers import split_by_density
from dse.model.rules import check_rules
from dse.model.system import load_system
from dse.model.tiers import TIER_KINDS, TierName
from dse.model.timing import EmbeddingLoads, embedding_seconds
from dse.model.workload import load_workload

CALIB = load_calibration()
CZ120 = (("node.cxl_memory", "micron-cz120-256gb"),)
# A Zion-era node on Sapphire Rapids hosts (CXL ports) with too little DDR for zion-2019's rows.
ZION_SPR = (("node.cpu", "xeon-8480p"), ("node.ddr_gb", 256), ("constraints.year", 2026))


def test_the_kinds_of_memory_are_written_once() -> None:
    assert tuple(TIER_KINDS) == typing.get_args(TierName)
    assert all(name == kind.name for name, kind in TIER_KINDS.items())


def test_each_system_lists_its_tiers_fastest_first() -> None:
    dgx = load_system("dgx-h100")
    assert [(t.name, t.scope) for t in dgx.tiers] == [("hbm", "device"), ("ddr", "node")]
    assert dgx.tiers[0].capacity_bytes == dgx.hbm_bytes and dgx.tiers[1].capacity_bytes == dgx.ddr_bytes
    cpu = load_system("dual-socket-cpu")
    # A node without accelerators: its DDR is its device's own memory, its one tier; no HBM.
    assert [(t.name, t.scope) for t in cpu.tiers] == [("ddr", "device")] and cpu.hbm_bytes == 0.0
    cxl = load_system("zion", (*CZ120, ("node.cxl_modules", 8)))
    # 8 x 256 GB modules at 36 GB/s each, after host DDR; no reserve of their own.
    assert [t.name for t in cxl.tiers] == ["hbm", "ddr", "cxl"]
    assert (cxl.tiers[2].capacity_bytes, cxl.tiers[2].bytes_s) == (2048e9, 288e9)
    assert cxl.tiers[2].usable_bytes == 2048e9
    assert cxl.tiers[1].usable_bytes == pytest.approx(0.9 * cxl.ddr_bytes)


def _piece(lookups: float, footprint: float) -> Candidate:
    return Candidate(0, "table_wise", 1000, 16, lookups, 1.0, footprint, 0.0, 0.0, True, None, lookups)


def test_node_tiers_fill_densest_first_by_hand() -> None:
    a, b, c = _piece(100, 10), _piece(50, 10), _piece(10, 4)  # 10, 5 and 2.5 lookups a byte
    # DDR has room for 15 bytes: the densest (a) goes there, b (10 bytes) no longer fits and goes on
    # to CXL, c (4 bytes) still fits the 5 left. The last tier takes what is left, room or not.
    assert split_by_density([c, b, a], [15.0, 100.0]) == [[a, c], [b]]
    assert split_by_density([c, b, a], [0.0, 1.0]) == [[], [a, b, c]]
    assert split_by_density([c, b], [100.0]) == [[c, b]]  # one tier: as given


def test_host_time_is_the_slowest_of_the_link_and_every_node_tier_by_hand() -> None:
    system = load_system("zion", (*CZ120, ("node.cxl_modules", 1)))
    calib = CALIB.with_values(host_efficiency=0.5, cxl_efficiency=0.25)
    link = system.pcie_bytes_s * 0.5
    ddr = system.ddr_bytes_s * 0.5
    cxl = 36e9 * 0.25  # one module
    for link_b, ddr_b, cxl_b in ((1e9, 1e9, 1e6), (1e6, 1e11, 1e6), (1e6, 1e6, 1e10)):
        loads = EmbeddingLoads(local_fwd=0.0, local_bwd=0.0, link=(link_b, 2 * link_b),
                               far=((ddr_b, ddr_b), (cxl_b, 3 * cxl_b)), host=True)
        t = embedding_seconds(loads, system, calib)
        assert t.host_fwd == pytest.approx(max(link_b / link, ddr_b / ddr, cxl_b / cxl), rel=1e-12)
        assert t.host_bwd == pytest.approx(max(2 * link_b / link, ddr_b / ddr, 3 * cxl_b / cxl), rel=1e-12)


def test_cxl_memory_holds_what_ddr_cannot() -> None:
    wl = load_workload("zion-2019")  # 807 GB of rows
    without = evaluate(wl, load_system("zion", ZION_SPR), CALIB)
    assert not without.feasible and without.metrics()["memory_short_gb"] > 300
    two = evaluate(wl, load_system("zion", (*ZION_SPR, *CZ120, ("node.cxl_modules", 2))), CALIB)
    m = two.metrics()
    assert two.feasible, two.reasons
    # DDR fills first (90% of 256 GB usable), then the two modules take the rest.
    assert m["ddr_used_gb"] == pytest.approx(230.4, abs=1.0) and m["cxl_capacity_gb"] == 512.0
    assert 0 < m["cxl_used_gb"] <= 512.0 and m["memory_short_gb"] == 0.0
    assert {s.tier for s in two.plan.shards} == {"hbm", "ddr", "cxl"}
    # Nothing measured keeps tables in CXL memory: the design lies outside the measured regime.
    assert placement_class(two.plan) == "cxl"
    assert design_class(two.system, two.plan).placement == "cxl"


def test_more_cxl_memory_never_hurts() -> None:
    wl = load_workload("zion-2019")
    evs = [evaluate(wl, load_system("zion", (*ZION_SPR, *CZ120, ("node.cxl_modules", n))), CALIB)
           for n in (1, 2, 4, 8)]
    shorts = [ev.metrics()["memory_short_gb"] for ev in evs]
    assert shorts == sorted(shorts, reverse=True)
    steps = [ev.step_time_s for ev in evs if ev.feasible]
    assert steps and all(b <= a * (1 + 1e-12) for a, b in itertools.pairwise(steps))


def test_a_slower_cxl_tier_never_speeds_a_step() -> None:
    wl = load_workload("zion-2019")
    system = load_system("zion", (*ZION_SPR, *CZ120, ("node.cxl_modules", 2)))
    times = [evaluate(wl, system, CALIB.with_values(cxl_efficiency=e)).step_time_s for e in (0.7, 0.5, 0.25)]
    assert times == sorted(times)


def test_the_cxl_rule_checks_ports_lanes_and_era() -> None:
    def broken(overrides: tuple[tuple[str, object], ...]) -> dict[str, str]:
        return {c.name: c.message for c in check_rules(load_system("zion", overrides)) if c.broken}

    # Zion's Skylake hosts have no CXL ports.
    assert "no CXL memory ports" in broken((*CZ120, ("node.cxl_modules", 1)))["cxl_memory"]
    # 8 Sapphire Rapids sockets carry 8 x 64 CXL lanes: 64 x8 modules fit, 65 do not.
    assert "cxl_memory" not in broken((*ZION_SPR, *CZ120, ("node.cxl_modules", 64)))
    assert "need 520 CXL lanes" in broken((*ZION_SPR, *CZ120, ("node.cxl_modules", 65)))["cxl_memory"]
    # The modules went on sale in 2024.
    era = broken((*ZION_SPR[:2], ("constraints.year", 2023), *CZ120, ("node.cxl_modules", 1)))["era"]
    assert "Micron CZ120 256 GB" in era and "(2024)" in era


def test_a_cxl_tier_needs_its_part() -> None:
    with pytest.raises(DseInputError, match=r"node\.cxl_memory.*cxl_modules needs"):
        load_system("zion", (("node.cxl_modules", 2),))
    with pytest.raises(DseInputError, match=r"node\.cxl_memory.*unknown cxl memory 'nope'"):
        load_system("zion", (("node.cxl_memory", "nope"), ("node.cxl_modules", 2)))


def test_a_cpu_node_can_spill_to_cxl_memory() -> None:
    wl = load_workload("zion-2019")
    spr = (("node.cpu", "xeon-8480p"), ("constraints.year", 2026))
    plain = evaluate(wl, load_system("dual-socket-cpu", spr), CALIB)
    assert not plain.feasible
    more = evaluate(wl, load_system("dual-socket-cpu", (*spr, *CZ120, ("node.cxl_modules", 4))), CALIB)
    assert more.feasible, more.reasons
    # The CPUs' DDR is their device's own memory; the modules are the node tier behind it.
    assert [t.name for t in more.system.tiers] == ["ddr", "cxl"]
    assert more.metrics()["ddr_used_gb"] > 300 and more.metrics()["cxl_used_gb"] > 0


def test_cxl_modules_are_bought_and_powered_by_hand() -> None:
    wl = load_workload("zion-2019")
    base = evaluate(wl, load_system("zion", ZION_SPR), CALIB)
    assert "cxl" not in base.cost.parts_usd  # no row where a node has none
    for n in (1, 4, 8):
        ev = evaluate(wl, load_system("zion", (*ZION_SPR, *CZ120, ("node.cxl_modules", n))), CALIB)
        # 1,420 USD and 25 W a 256 GB CZ120 (catalog estimates); the draw passes the node's PSUs.
        assert ev.cost.parts_usd["cxl"] == n * 1420.0
        assert ev.cost.capex_usd == pytest.approx(base.cost.capex_usd + n * 1420.0)
        assert ev.power.parts_w["cxl"] == n * 25.0
        # The modules change the step, and so what the other parts draw (dse.model.power): at
        # this step's activity, the node without them draws the modules' 25 W and their PSU loss less.
        assert ev.power.activity is not None
        without = power(base.system, None, ev.power.activity)
        psu = ev.power.parts_w["psu_loss"] - without.parts_w["psu_loss"]
        assert ev.power.power_w == pytest.approx(without.power_w + n * 25.0 + psu)
        assert psu == pytest.approx(n * 25.0 * (1 / 0.94 - 1), rel=1e-9)
