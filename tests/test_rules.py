"""Buildability rules (issue 19): link budgets, host rules, era, each a named constraint.

Every preset and calibration machine keeps every rule (they were built); a design that breaks a
rule is infeasible with the rule named; no front of a shipped study holds a design that breaks one.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from study_helpers import complete, storage_for
from typer.testing import CliRunner

from dse.calibration.measurements import load_measurements, measurement_design
from dse.cli import app
from dse.model.catalog import load_catalog
from dse.model.evaluate import evaluate
from dse.model.rules import RULE_NAMES, check_rules, fabric_capacity_gb_s
from dse.model.system import load_system, system_presets
from dse.model.workload import load_workload
from dse.outputs.report import render_report
from dse.search.algorithms.pareto import pareto_trials
from dse.search.runner import run_study
from dse.search.study.encoding import design_system
from dse.search.study.objective_sets import load_objectives
from dse.search.study.search_space import load_space
from dse.search.study.study_file import load_study_spec, study_names


def broken(system: Any) -> dict[str, str]:
    return {c.name: c.message for c in check_rules(system) if c.broken}


@pytest.mark.parametrize("preset", system_presets())
def test_every_system_preset_keeps_every_rule(preset: str) -> None:
    assert broken(load_system(preset)) == {}


def test_every_calibration_machine_keeps_every_rule() -> None:
    # Their machines were built: `dse validate` scores every point.
    for m in load_measurements():
        _, system = measurement_design(m)
        assert broken(system) == {}, m.id


def test_check_rules_names_every_rule_once() -> None:
    assert tuple(c.name for c in check_rules(load_system("zion"))) == RULE_NAMES


# --- the examples -------------------------------------------------------------------------


def test_full_mesh_past_the_link_count_is_infeasible() -> None:
    mi300x = load_catalog().accelerator["mi300x"]
    assert fabric_capacity_gb_s(mi300x, "fully_connected", 8) == (448.0, "")
    capacity, why = fabric_capacity_gb_s(mi300x, "fully_connected", 15)
    assert capacity == 0 and "14 links" in why and "has 7" in why
    ev = evaluate(load_workload("zion-2019"), load_system("zion", (
        ("node.accelerators", 15), ("node.scaleup", "fully_connected"))))
    assert not ev.feasible
    assert any(r.startswith("fabric_arrangement:") and "14 links" in r for r in ev.reasons)


def test_hybrid_cube_mesh_of_three_is_infeasible() -> None:
    system = load_system("zion", (("node.scaleup", "hybrid_cube_mesh"), ("node.accelerators", 3)))
    assert "fabric_arrangement" in broken(system)
    for n in (2, 4, 8):
        ok = load_system("zion", (("node.scaleup", "hybrid_cube_mesh"), ("node.accelerators", n)))
        assert "fabric_arrangement" not in broken(ok)


def test_stated_fabric_bandwidth_beyond_the_links_is_infeasible_with_the_numbers() -> None:
    system = load_system("zion", (("node.scaleup_gb_s", 400.0),))
    message = broken(system)["fabric_bandwidth"]
    assert "400 GB/s" in message and "7 links x 25 GB/s give 175" in message


def test_ring_uses_two_neighbours_and_switch_its_radix() -> None:
    h100 = load_catalog().accelerator["h100-sxm5-80gb"]
    assert fabric_capacity_gb_s(h100, "ring", 8)[0] == 2 * 9 * 25.0
    assert fabric_capacity_gb_s(h100, "switch", 8)[0] == 450.0
    assert fabric_capacity_gb_s(h100, "switch", 16)[0] == 0
    assert "no scale-up switch" in fabric_capacity_gb_s(load_catalog().accelerator["zion-oam"],
                                                        "switch", 8)[1]


def test_fast_nic_behind_a_slow_link_is_infeasible() -> None:
    message = broken(load_system("zion", (("node.nic_gbit_s", 400),)))["nic_link"]
    assert "50 GB/s" in message and "Gen3 x16" in message and "15.75" in message


def test_host_pcie_beyond_cpu_and_accelerator_is_infeasible() -> None:
    found = broken(load_system("zion", (("node.pcie_gen", 6),)))
    assert "Gen6" in found["pcie_generation"]
    assert "PCIe Gen6 (2025)" in found["era"]  # and it did not exist in 2020


def test_lanes_and_ddr_slots_bound_the_node() -> None:
    found = broken(load_system("zion", (("node.accelerators", 16), ("node.nics", 16))))
    assert "512 PCIe lanes" in found["pcie_lanes"] and "have 384" in found["pcie_lanes"]
    assert "ddr_capacity" in broken(load_system("dgx-h100", (("node.ddr_gb", 16384.0),)))


def test_hbm_is_an_offered_capacity_unless_the_design_is_a_what_if() -> None:
    wl = load_workload("zion-2019")
    ev = evaluate(wl, load_system("zion", (("node.hbm_gb", 64.0),)))
    assert not ev.feasible and any(r.startswith("hbm_capacity:") for r in ev.reasons)
    what_if = evaluate(wl, load_system("zion", (("node.hbm_gb", 64.0),
                                                ("constraints.hypothetical", True))))
    assert "hbm_capacity" not in {c.name for c in what_if.rules if c.broken}
    assert what_if.what_if and "64 GB HBM" in what_if.what_if[0]
    assert what_if.to_dict()["what_if"] == list(what_if.what_if)
    # The same design scores the same: a rule never changes a score.
    assert what_if.step_time_s == ev.step_time_s and what_if.cost == ev.cost


def test_era_keeps_zion_to_2020_parts_and_todays_nodes_to_2026() -> None:
    assert load_space("zion-node").base_spec().constraints.year == 2020
    assert "era" in broken(load_system("zion", (("node.accelerator", "h100-sxm5-80gb"),
                                                ("node.cpu", "xeon-8480p"))))
    space = load_space("todays-nodes")
    assert space.base_spec().constraints.year == 2026
    for base in space.bases():
        assert broken(design_system(space, {"system": base}, base=base)) == {}, base


def test_cli_evaluate_names_the_rule_and_the_numbers() -> None:
    out = CliRunner().invoke(app, ["evaluate", "--system", "zion", "--workload", "zion-2019", "--json",
                                   "--set", "node.nic_gbit_s=200"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["feasible"] is False and data["rules_broken"] == ["nic_link"]
    assert any("nic_link" in r and "15.75" in r for r in data["infeasible_reasons"])


# --- property: a broken rule is an infeasible design with the rule named --------------------------

PRESETS = ("zion", "zionex", "dgx-1", "dgx-a100", "dgx-h100", "mi300x-x8", "gaudi2-x8")


@st.composite
def random_designs(draw: st.DrawFn) -> Any:
    preset = draw(st.sampled_from(PRESETS))
    acc = load_system(preset).accelerator
    overrides: tuple[tuple[str, Any], ...] = (
        ("node.accelerators", draw(st.integers(1, 16))),
        ("node.scaleup", draw(st.sampled_from(["none", "ring", "hybrid_cube_mesh",
                                               "fully_connected", "switch"]))),
        ("node.scaleup_gb_s", draw(st.sampled_from([25.0, 150.0, 300.0, 450.0, 900.0]))),
        ("node.pcie_gen", draw(st.integers(3, 6))),
        ("node.nics", draw(st.integers(0, 16))),
        ("node.nic_gbit_s", draw(st.sampled_from([100, 200, 400, 800]))),
        ("node.ddr_gb", draw(st.sampled_from([256.0, 2048.0, 16384.0, 65536.0]))),
        ("node.hbm_gb", acc.hbm_gb * draw(st.sampled_from([0.5, 1.0, 2.0]))),
        ("constraints.year", draw(st.sampled_from([2019, 2020, 2023, 2026]))),
        ("constraints.hypothetical", draw(st.booleans())),
    )
    return preset, overrides


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=random_designs())
def test_a_design_that_breaks_a_rule_is_infeasible_with_the_rule_named(d: Any) -> None:
    preset, overrides = d
    system = load_system(preset, overrides)
    ev = evaluate(load_workload("criteo-1tb-small"), system)
    violations = load_objectives("throughput-vs-capex").violations(ev.metrics(), ev.rule_violations())
    for check in ev.rules:
        assert violations[f"rule:{check.name}"] == check.violation
        if check.broken:
            assert not ev.feasible
            assert f"{check.name}: {check.message}" in ev.reasons
    # Rules never change the model's numbers: the same design without them scores the same.
    assert ev.feasible == (ev.feasible_without_rules and not any(c.broken for c in ev.rules))
    relaxed = dataclasses.replace(system.spec, constraints=dataclasses.replace(
        system.spec.constraints, year=None, hypothetical=True))
    again = evaluate(load_workload("criteo-1tb-small"), dataclasses.replace(system, spec=relaxed))
    assert again.timing == ev.timing and again.cost == ev.cost


# --- fronts of the shipped studies ----------------------------------------------------------------


@pytest.mark.parametrize("name", study_names())
def test_no_front_of_a_shipped_study_breaks_a_rule(name: str, tmp_path: Path) -> None:
    spec = dataclasses.replace(load_study_spec(name), budget=24, sampler="random",
                               storage=storage_for(tmp_path, "journal", name))
    study = run_study(spec)
    space = load_space(spec.space)
    assert complete(study)
    front = pareto_trials(study)
    assert front, name
    for t in front:
        system = design_system(space, t.user_attrs["design"])
        assert broken(system) == {}, (name, t.user_attrs["design"])
        assert all(t.constraints[f"rule:{r}"] <= 0 for r in RULE_NAMES)


def test_catalog_links_carry_each_parts_own_scaleup_bandwidth() -> None:
    for key, acc in load_catalog().accelerator.items():
        assert acc.scaleup_links * acc.scaleup_link_gb_s >= acc.scaleup_gb_s, key
        assert acc.scaleup_links or acc.default_scaleup == "none", key


def test_report_says_when_a_space_allows_hypothetical_parts(tmp_path: Path) -> None:
    spec = dataclasses.replace(load_study_spec("mlperf-dcnv2"), space="full", budget=8,
                               sampler="random", storage=storage_for(tmp_path, "journal"))
    study = run_study(spec)
    page = render_report(study, spec, load_objectives(spec.objectives), plotlyjs="cdn")
    assert "hypothetical parts allowed" in page
    plain = render_report(run_study(dataclasses.replace(
        load_study_spec("zion-2020"), budget=4, storage=storage_for(tmp_path, "journal", "z"))),
        load_study_spec("zion-2020"), load_objectives("throughput-vs-capex"), plotlyjs="cdn")
    assert "parts on sale by 2020" in plain and "hypothetical parts allowed" not in plain
