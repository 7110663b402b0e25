"""Rack-scale systems bought, priced, powered and counted by the rack (issue 28, item 2).

GB200/GB300 NVL72 come as racks of 18 compute trays (4 GPUs + 2 Grace each) and 9 NVLink switch
trays: a tray count that is not whole racks is infeasible, the rack's own parts are priced and
powered once per rack, the Grace CPUs draw power, ``racks`` and ``rack_kw`` are metrics a facility
limit can constrain, and designs read ``2 racks (36 trays)``.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from rich.console import Console
from study_helpers import complete, run_cli, storage_for

from dse.cli.tables import distinct_designs, print_designs
from dse.errors import DseInputError
from dse.model.bom import CPU_TRAINING_UTILISATION
from dse.model.catalog import load_catalog
from dse.model.cost import capex, power
from dse.model.evaluate import evaluate
from dse.model.racks import racks_of
from dse.model.system import System, load_system
from dse.model.workload import load_workload
from dse.outputs.labels import design_phrase
from dse.search.results import load_stored_study, trial_rows
from dse.search.runner import run_study
from dse.search.study.encoding import design_system
from dse.search.study.objective_sets import METRICS
from dse.search.study.search_space import load_space
from dse.search.study.study_file import StudySpec, load_study_spec

WORKLOAD = "mlperf-dlrm-dcnv2"

RACK_FILE = """
name = "test-nvl"
nodes = 18
[node]
accelerator = "gb200"
accelerators = 4
cpu = "grace"
cpu_sockets = 2
ddr_gb = 960
nics = 4
nic_gbit_s = 400
scaleup = "switch"
[pod]
nodes = 18
[rack]
nodes = 18
fractions = [0.5, 1.0]
switch_trays = 9
switch_tray_w = 400
switch_tray_usd = 5000
shared_w = 1000
shared_usd = 20000
liquid_kw = 120
"""


def _system(path: Path, nodes: int) -> System:
    return load_system(str(path), (("nodes", nodes),))


@pytest.fixture
def rack_file(tmp_path: Path) -> Path:
    path = tmp_path / "test-nvl.toml"
    path.write_text(RACK_FILE, encoding="utf-8")
    return path


def test_five_trays_of_an_nvl72_are_infeasible_naming_the_rack() -> None:
    ev = evaluate(load_workload(WORKLOAD), load_system("gb200-nvl72", (("nodes", 5),)))
    assert not ev.feasible
    assert ev.rule_violations()["whole_racks"] == pytest.approx(13 / 18)
    reason = next(r for r in ev.reasons if r.startswith("whole_racks"))
    assert "5 nodes are not whole racks of 18 nodes" in reason and "18 would be" in reason


@pytest.mark.parametrize("preset", ["gb200-nvl72", "gb300-nvl72"])
def test_whole_racks_are_feasible_and_two_cost_twice_one(preset: str) -> None:
    wl = load_workload(WORKLOAD)
    one = evaluate(wl, load_system(preset, (("nodes", 18),)))
    two = evaluate(wl, load_system(preset, (("nodes", 36),)))
    assert one.feasible and two.feasible
    assert (one.metrics()["racks"], two.metrics()["racks"]) == (1, 2)
    acc = one.system.accelerator
    # By hand: 72 GPUs a rack at the rack-share price; the switch trays are in that price.
    assert one.cost.parts_usd["accelerators"] == 72 * acc.price_usd
    for part, usd in one.cost.parts_usd.items():
        if part != "network":
            assert two.cost.parts_usd[part] == pytest.approx(2 * usd), part


def test_rack_parts_are_priced_and_powered_once_per_rack(rack_file: Path) -> None:
    cat = load_catalog()
    one, two = _system(rack_file, 18), _system(rack_file, 36)
    # 9 switch trays x 5,000 USD and 20,000 USD of shared parts per rack, whatever the GPU count.
    assert capex(one, cat).parts_usd["scaleup_switches"] == 9 * 5000
    assert capex(two, cat).parts_usd["scaleup_switches"] == 2 * 9 * 5000
    assert capex(two, cat).parts_usd["rack"] == 2 * 20000
    pw = power(two, cat, 0.61).parts_w
    assert pw["scaleup_switches"] == 2 * 9 * 400
    assert pw["rack"] == 2 * 1000
    total = capex(one, cat).capex_usd - capex(one, cat).network_capex_usd
    assert capex(two, cat).capex_usd - capex(two, cat).network_capex_usd == pytest.approx(2 * total)


def test_fractions_a_vendor_sells(rack_file: Path) -> None:
    assert [racks_of(_system(rack_file, n).spec) for n in (9, 18, 27, 36, 45)] == [1, 1, 2, 2, 3]
    assert [racks_of(_system(rack_file, n).spec) for n in (5, 10, 20)] == [None, None, None]
    half = _system(rack_file, 9)
    assert capex(half, load_catalog()).parts_usd["rack"] == 20000  # a half rack is a rack


def test_a_fraction_that_is_not_whole_trays_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(RACK_FILE.replace("[0.5, 1.0]", "[0.3, 1.0]"), encoding="utf-8")
    with pytest.raises(DseInputError, match=r"rack\.fractions\[0\]"):
        load_system(str(path))


def test_racks_key_sets_whole_racks_and_needs_a_rack() -> None:
    assert load_system("gb300-nvl72", (("racks", 3),)).nodes == 54
    with pytest.raises(DseInputError, match=r"racks needs rack\.nodes"):
        load_system("dgx-h100", (("racks", 2),))


def test_grace_cpus_draw_power() -> None:
    system = load_system("gb200-nvl72")
    cpu_w = power(system, load_catalog(), 0.61).parts_w["cpus"]
    # 18 trays x 2 Grace x 250 W (catalog cpu.grace tdp_w) x the training share of TDP.
    assert cpu_w == 18 * 2 * 250 * CPU_TRAINING_UTILISATION == 4500
    assert capex(system).parts_usd["cpus"] == 0  # their price is in the rack share


def test_rack_kw_is_one_rack_at_full_draw_within_the_datasheet() -> None:
    wl = load_workload(WORKLOAD)
    one = evaluate(wl, load_system("gb200-nvl72"))
    two = evaluate(wl, load_system("gb200-nvl72", (("nodes", 36),)))
    # Every accelerator at TDP, the other parts as they draw over the step.
    assert one.power.activity is not None
    full = power(one.system, load_catalog(), one.power.activity.at_tdp())
    # The scale-out network and the coolant distribution units stand outside the rack's feed.
    outside = full.parts_w["network"] + full.parts_w["cooling"]
    assert one.rack_kw == pytest.approx((full.power_w - outside) / 1e3)
    # Two racks draw a hair more a rack: their NICs carry the network's traffic.
    assert one.rack_kw < two.rack_kw < 1.002 * one.rack_kw
    assert 120 <= one.rack_kw <= 132  # NVIDIA GB200 NVL72 datasheet: 120-132 kW a rack
    assert (one.racks, two.racks, one.metrics()["rack_nodes"]) == (1, 2, 18)
    # A system bought node by node stands in the facility's racks (dse.model.cost.facility_racks).
    dgx = evaluate(wl, load_system("dgx-h100"))
    assert dgx.power.activity is not None
    node = power(dgx.system, load_catalog(), dgx.power.activity.at_tdp())
    assert (dgx.racks, dgx.metrics()["rack_nodes"]) == (1, 0)
    assert dgx.rack_kw == pytest.approx((node.power_w - node.parts_w["network"]) / 1e3)
    assert {"racks", "rack_kw", "rack_nodes"} <= set(METRICS)


def test_labels_say_racks() -> None:
    assert design_phrase({"param:nodes": 36, "param:node.nics": 4}, 2) == "2 racks (36 trays), 4 NICs"
    assert design_phrase({"param:nodes": 18}, 1) == "1 rack (18 trays)"
    assert design_phrase({"param:nodes": 16}, 0) == "16 nodes"

    rows = [{"number": 3, "param:nodes": 36, "param:node.nic_gbit_s": 800, "racks": 2, "capex_usd": 1.0},
            {"number": 4, "param:nodes": 18, "param:node.nic_gbit_s": 400, "racks": 1, "capex_usd": 2.0}]
    console = Console(width=80, record=True)
    print_designs(console, distinct_designs(rows, [("capex_usd", "minimize")]), ["trials", "design"],
                  "front")
    text = console.export_text()
    assert "2 racks (36 trays)" in text and "1 rack (18 trays)" in text and "nodes" not in text


def test_a_study_limited_to_one_rack_has_no_design_above_one(tmp_path: Path) -> None:
    (tmp_path / "racks.toml").write_text("""
name = "racks"
base_system = "gb200-nvl72"
[parameters.racks]
type = "int"
low = 1
high = 3
[parameters."node.nic_gbit_s"]
type = "ordinal"
choices = [400, 800]
""", encoding="utf-8")
    (tmp_path / "limit.toml").write_text("""
name = "limit"
[[objectives]]
metric = "throughput_samples_per_s"
direction = "maximize"
[[objectives]]
metric = "usd_per_million_samples"
direction = "minimize"
[[constraints]]
metric = "racks"
max = 1
[[constraints]]
metric = "rack_kw"
max = 132
""", encoding="utf-8")
    spec = StudySpec(name="racks", workload=WORKLOAD, space=str(tmp_path / "racks.toml"),
                     objectives=str(tmp_path / "limit.toml"), budget=12, sampler="random", seed=1,
                     storage=storage_for(tmp_path, "journal", "racks"))
    study = run_study(spec)
    trials = complete(study)
    assert {t.user_attrs["racks"] for t in trials} >= {1, 2}  # the limit had something to refuse
    feasible = [t for t in trials if t.user_attrs["feasible"]]
    assert feasible and all(t.user_attrs["racks"] == 1 for t in feasible)
    for t in trials:
        if t.user_attrs["racks"] > 1:
            assert f"racks = {t.user_attrs['racks']} outside max 1" in t.user_attrs["infeasible_reasons"]


def test_a_space_searches_racks_of_rack_scale_systems_and_nodes_of_others(tmp_path: Path) -> None:
    path = tmp_path / "mixed.toml"
    path.write_text("""
name = "mixed"
base_system = "dgx-b200"
[parameters.system]
type = "categorical"
choices = ["dgx-b200", "gb200-nvl72", "gb300-nvl72"]
[parameters.nodes]
type = "int"
low = 1
high = 16
when = { system = ["dgx-b200"] }
[parameters.racks]
type = "int"
low = 1
high = 4
when = { system = ["gb200-nvl72", "gb300-nvl72"] }
""", encoding="utf-8")
    space = load_space(str(path))
    assert design_system(space, {"system": "gb300-nvl72", "racks": 3}).nodes == 54
    assert design_system(space, {"system": "dgx-b200", "nodes": 3}).nodes == 3
    assert design_phrase({"param:system": "gb200-nvl72", "param:racks": 1}) == "gb200-nvl72, 1 rack"
    # A parameter inactive in a design (a study's rows hold it as NaN) is left out.
    assert design_phrase({"param:system": "gb300-nvl72", "param:nodes": float("nan"),
                          "param:racks": 2}) == "gb300-nvl72, 2 racks"


# --- coolant distribution units (liquid-cooled racks) ----------------------------------------------


@pytest.mark.parametrize("preset", ["gb200-nvl72", "gb300-nvl72"])
def test_an_nvl72_rack_buys_and_powers_its_share_of_a_cdu(preset: str) -> None:
    """The NVL72 rack's breakdown shows its coolant distribution unit: 132 kW of the rack's heat
    over a CDU of the catalog's capacity, its price and its pumps' draw in that share."""
    cat = load_catalog()
    system = load_system(preset)
    share = 132 / cat.cdu.capacity_kw
    assert cat.cdu.capacity_kw == 600 and share == pytest.approx(0.22)
    assert capex(system, cat).parts_usd["cooling"] == pytest.approx(share * cat.cdu.usd)
    assert power(system, cat, 0.61).parts_w["cooling"] == pytest.approx(share * cat.cdu.pump_w)
    # By hand: 0.22 x 29,300 USD = 6,446 USD; 0.22 x 6,700 W = 1,474 W.
    assert capex(system, cat).parts_usd["cooling"] == pytest.approx(6446)
    assert power(system, cat, 0.61).parts_w["cooling"] == pytest.approx(1474)
    two = load_system(preset, (("racks", 2),))
    assert capex(two, cat).parts_usd["cooling"] == pytest.approx(2 * 6446)
    # An air-cooled node and a rack that states no liquid loop buy none.
    assert "cooling" not in capex(load_system("dgx-b200"), cat).parts_usd
    assert "cooling" not in power(load_system("dgx-b200"), cat, 0.61).parts_w


def test_cost_and_power_grow_with_every_added_part(rack_file: Path) -> None:
    """Each rack part added to a rack file (switch-tray price and draw, shared parts, the liquid
    loop's CDU share) raises capex or power by that part alone, once per rack."""
    cat = load_catalog()
    steps = [("switch_tray_usd = 5000", "switch_tray_usd = 0"), ("switch_tray_w = 400", "switch_tray_w = 0"),
             ("shared_w = 1000", "shared_w = 0"), ("shared_usd = 20000", "shared_usd = 0"),
             ("liquid_kw = 120", "liquid_kw = 0")]
    text = RACK_FILE
    for full, none in steps:
        text = text.replace(full, none)
    systems = []
    for full, none in [("", ""), *steps]:
        text = text.replace(none, full) if full else text
        rack_file.write_text(text, encoding="utf-8")
        systems.append(_system(rack_file, 36))
    usd = [capex(s, cat).capex_usd for s in systems]
    watts = [power(s, cat, 0.61).power_w for s in systems]
    psu = 1.0 / cat.chassis.psu_efficiency
    share = 2 * 120 / cat.cdu.capacity_kw
    assert [b - a for a, b in itertools.pairwise(usd)] == pytest.approx(
        [2 * 9 * 5000, 0.0, 0.0, 2 * 20000, share * cat.cdu.usd])
    assert [b - a for a, b in itertools.pairwise(watts)] == pytest.approx(
        [0.0, 2 * 9 * 400 * psu, 2 * 1000 * psu, 0.0, share * cat.cdu.pump_w])


# --- the shipped space of today's systems, nodes and racks -----------------------------------------


def test_the_todays_racks_study_buys_whole_racks_and_its_front_mixes_systems(tmp_path: Path) -> None:
    """``dse init --from todays-racks`` and 40 trials of it: every NVL72 design is whole racks
    (and counted as such), every node system's design is nodes, and the front holds designs of
    more than one system (racks against nodes is the question the space asks)."""
    made = run_cli("init", str(tmp_path / "racks"), "--from", "todays-racks")
    assert made.exit_code == 0, made.output
    study = tmp_path / "racks" / "my-study.toml"
    ran = run_cli("run", str(study), "--trials", "40", "--quiet", "--no-report")
    assert ran.exit_code == 0, ran.output
    stored = load_stored_study(load_study_spec(str(study)))
    rows = [r for r in trial_rows(stored) if r.get("state", "COMPLETE") == "COMPLETE"]
    assert len(rows) >= 30
    nvl = [r for r in rows if str(r["param:system"]).endswith("nvl72")]
    nodes = [r for r in rows if not str(r["param:system"]).endswith("nvl72")]
    assert nvl and nodes
    for r in nvl:
        assert 1 <= r["param:racks"] <= 4 and r["racks"] == r["param:racks"] and r["rack_nodes"] == 18
        assert r["feasible"]  # whole racks: no whole_racks violation
    # Node systems fill the facility's racks: at least one, never bought by the rack.
    assert all(r["racks"] >= 1 and r["rack_nodes"] == 0 for r in nodes)
    front = {r["param:system"] for r in trial_rows(stored, only_front=True)}
    assert len(front) >= 2, front
    # The front's table names each design by what it has: racks for an NVL72 (whose node count
    # is no parameter of its own: it crashed dse pareto as NaN nodes), nodes for the others.
    pareto = run_cli("pareto", str(study))
    assert pareto.exit_code == 0, pareto.output
