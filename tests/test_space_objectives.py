"""Search spaces, objective sets and study files: every shipped file loads; a bad file is refused
before any trial runs, with one line naming the file and the key; grids, baselines, encodings and
constraint values."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from study_helpers import CHEAP, GRID_PARAMS, SPACE_HEAD, write_study

from dse import evaluate, load_system, load_workload
from dse.errors import DseInputError
from dse.model.rules import RULE_NAMES
from dse.search.algorithms.samplers import make_sampler
from dse.search.study.encoding import decode_params, encode_design, grid_of
from dse.search.study.objective_sets import METRICS, Constraint, load_objectives, objective_names
from dse.search.study.search_space import load_space, preset_params, space_names
from dse.search.study.study_file import SAMPLERS, load_study_spec, study_names


def test_every_shipped_space_objective_set_and_study_loads() -> None:
    assert {"full", "scale-out", "zion-node"} <= set(space_names())
    for name in space_names():
        space = load_space(name)
        assert space.parameters, name
    for name in objective_names():
        assert load_objectives(name).objectives, name
    for name in study_names():
        spec = load_study_spec(name)
        assert spec.name == name and spec.sampler in SAMPLERS and spec.budget > 0


def test_objective_metrics_are_model_metrics() -> None:
    ev = evaluate(load_workload("mlperf-dlrm-v1"), load_system("dgx-a100"))
    assert set(METRICS) <= set(ev.metrics())


# --- refused files --------------------------------------------------------------------------------

BAD_SPACES = {
    "unknown parameter type": ('[parameters.nodes]\ntype = "integer"\nlow = 1\nhigh = 4\n',
                               "parameters.nodes.type"),
    "empty choice list": ('[parameters."network.topology"]\ntype = "categorical"\nchoices = []\n',
                          "parameters.network.topology.choices"),
    "low above high": ('[parameters.nodes]\ntype = "int"\nlow = 8\nhigh = 4\n',
                       "parameters.nodes.low"),
    "condition on a non-parameter": (
        '[parameters.nodes]\ntype = "int"\nlow = 1\nhigh = 4\n'
        'when = { "node.scaleup" = ["ring"] }\n', "parameters.nodes.when"),
    "not a system key": ('[parameters."node.nonsense"]\ntype = "int"\nlow = 1\nhigh = 4\n',
                         "parameters.node.nonsense"),
    "log scale from zero": ('[parameters."node.ddr_gb"]\ntype = "float"\nlow = 0.0\nhigh = 4.0\n'
                            'log = true\n', "parameters.node.ddr_gb.low"),
    "int with a fractional bound": ('[parameters.nodes]\ntype = "int"\nlow = 1.5\nhigh = 4\n',
                                    "parameters.nodes"),
    "repeated choice": ('[parameters."network.topology"]\ntype = "categorical"\n'
                        'choices = ["fat_tree", "fat_tree"]\n', "parameters.network.topology.choices"),
    "float with choices": ('[parameters.nodes]\ntype = "float"\nlow = 1.0\nhigh = 4.0\n'
                           'choices = [1.0]\n', "parameters.nodes.choices"),
    "unknown key": ('colour = "red"\n[parameters.nodes]\ntype = "int"\nlow = 1\nhigh = 4\n',
                    "colour"),
}


def _assert_one_line(exc: DseInputError, *names: str) -> None:
    text = str(exc)
    assert "\n" not in text
    for name in names:
        assert name in text, (name, text)


@pytest.mark.parametrize("case", sorted(BAD_SPACES))
def test_bad_space_is_refused_naming_file_and_key(tmp_path: Path, case: str) -> None:
    body, key = BAD_SPACES[case]
    space = tmp_path / "space.toml"
    space.write_text(f'name = "bad"\nbase_system = "dgx-h100"\n{body}', encoding="utf-8")
    study = write_study(tmp_path / "study.toml", name="bad", workload="mlperf-dlrm-v1",
                        space=str(space), objectives="throughput-vs-capex", budget=5,
                        storage=str(tmp_path / "bad.journal"))
    with pytest.raises(DseInputError) as info:
        load_study_spec(str(study))
    _assert_one_line(info.value, str(study), str(space), key)
    assert not (tmp_path / "bad.journal").exists()


BAD_OBJECTIVES = {
    "unknown metric": ('[[objectives]]\nmetric = "speed"\ndirection = "maximize"\n',
                       "objectives[0].metric"),
    "unknown direction": ('[[objectives]]\nmetric = "capex_usd"\ndirection = "down"\n',
                          "objectives[0].direction"),
    "no objective": ("objectives = []\n", "objectives"),
    "repeated objective": ('[[objectives]]\nmetric = "capex_usd"\ndirection = "minimize"\n'
                           '[[objectives]]\nmetric = "capex_usd"\ndirection = "minimize"\n',
                           "objectives[1].metric"),
    "constraint on an unknown metric": (
        '[[objectives]]\nmetric = "capex_usd"\ndirection = "minimize"\n'
        '[[constraints]]\nmetric = "weight"\nmax = 1.0\n', "constraints[0].metric"),
    "constraint without bound": (
        '[[objectives]]\nmetric = "capex_usd"\ndirection = "minimize"\n'
        '[[constraints]]\nmetric = "power_w"\n', "constraints[0]"),
}


@pytest.mark.parametrize("case", sorted(BAD_OBJECTIVES))
def test_bad_objective_set_is_refused_naming_file_and_key(tmp_path: Path, case: str) -> None:
    body, key = BAD_OBJECTIVES[case]
    obj = tmp_path / "obj.toml"
    obj.write_text(f'name = "bad"\n{body}', encoding="utf-8")
    study = write_study(tmp_path / "study.toml", name="bad", workload="mlperf-dlrm-v1",
                        space="scale-out", objectives=str(obj), budget=5)
    with pytest.raises(DseInputError) as info:
        load_study_spec(str(study))
    _assert_one_line(info.value, str(study), str(obj), key)


BAD_STUDIES = {
    "unknown sampler": ({"sampler": "cmaes"}, "sampler"),
    "unknown workload": ({"workload": "no-such-workload"}, "workload"),
    "unknown space": ({"space": "no-such-space"}, "space"),
    "unknown objective set": ({"objectives": "no-such-set"}, "objectives"),
    "unknown key": ({"trials": 5}, "trials"),
    "zero budget": ({"budget": 0}, "budget"),
    "grid over floats": ({"sampler": "grid", "space": "zion-node"}, "sampler"),
}


@pytest.mark.parametrize("case", sorted(BAD_STUDIES))
def test_bad_study_file_is_refused_naming_file_and_key(tmp_path: Path, case: str) -> None:
    change, key = BAD_STUDIES[case]
    fields = {"name": "bad", **CHEAP, "budget": 5, **change}
    study = write_study(tmp_path / "study.toml", **fields)
    with pytest.raises(DseInputError) as info:
        load_study_spec(str(study))
    _assert_one_line(info.value, str(study), f": {key}")


def test_study_files_find_their_space_and_objectives_beside_them(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "my-space.toml").write_text(
        SPACE_HEAD + '[parameters.nodes]\ntype = "int"\nlow = 1\nhigh = 2\n', encoding="utf-8")
    study = write_study(tmp_path / "sub" / "study.toml", name="rel", workload="mlperf-dlrm-v1",
                        space="my-space.toml", objectives="throughput-vs-capex", budget=3)
    spec = load_study_spec(str(study))
    assert Path(spec.space) == tmp_path / "sub" / "my-space.toml"


# --- spaces ---------------------------------------------------------------------------------------


def test_conditional_parameter_is_active_only_under_its_condition() -> None:
    space = load_space("zion-node")
    assert space.parameters["node.scaleup_gb_s"].when == {
        "node.scaleup": ("ring", "hybrid_cube_mesh", "fully_connected", "switch")}
    assert not space.active("node.scaleup_gb_s", {"node.scaleup": "none"})
    assert space.active("node.scaleup_gb_s", {"node.scaleup": "ring"})


def test_ordinals_are_searched_by_index_and_decoded() -> None:
    space = load_space("zion-node")
    design = {"node.accelerators": 4, "node.pcie_gen": 5, "node.nic_gbit_s": 400,
              "node.scaleup": "none"}
    params = encode_design(space, design)
    assert params["node.pcie_gen_index"] == 2 and params["node.nic_gbit_s_index"] == 2
    assert decode_params(space, params) == design


def test_baselines_are_the_presets_a_space_can_express() -> None:
    assert set(preset_params(load_space("zion-node"))) == {"zion"}
    assert set(preset_params(load_space("scale-out"))) == {"dgx-h100", "hgx-h200"}
    zion = preset_params(load_space("zion-node"))["zion"]
    assert zion["node.accelerators"] == 8 and zion["node.scaleup"] == "hybrid_cube_mesh"


def test_grid_of_a_discrete_unconditional_space(tmp_path: Path) -> None:
    path = tmp_path / "grid.toml"
    path.write_text(SPACE_HEAD + GRID_PARAMS, encoding="utf-8")
    grid = grid_of(load_space(str(path)))
    assert grid == {"nodes": [1, 2, 3], "network.topology": ["fat_tree", "rail_optimized"],
                    "network.oversubscription_index": [0, 1]}
    assert grid_of(load_space("zion-node")) is None  # floats and a condition
    with pytest.raises(DseInputError, match="discrete"):
        make_sampler("grid", 1, None, "study.toml")
    assert len(list(itertools.product(*grid.values()))) == load_space(str(path)).size()


# --- objectives and constraints -------------------------------------------------------------------


def test_memory_and_feasibility_are_always_constraints() -> None:
    obj = load_objectives("throughput-vs-power")  # names power_per_node_w <= 15 kW
    ev = evaluate(load_workload("mlperf-dlrm-v1"), load_system("dgx-a100"))
    violations = obj.violations(ev.metrics(), ev.rule_violations())
    # Memory, feasibility and every buildability rule, whatever the objective set names.
    assert set(violations) == {"memory", "feasible", "power_per_node_w",
                               *(f"rule:{name}" for name in RULE_NAMES)}
    assert all(violations[f"rule:{name}"] == 0 for name in RULE_NAMES)
    assert violations["memory"] <= 0 and violations["feasible"] <= 0
    too_big = evaluate(load_workload("zion-2019"),
                       load_system("dgx-a100", (("node.ddr_gb", 64.0), ("node.hbm_gb", 8.0))))
    assert not too_big.feasible
    assert obj.violations(too_big.metrics())["memory"] > 0


def test_constraint_violation_is_relative_and_signed() -> None:
    c = Constraint("power_w", max=1000.0)
    assert c.violation(1500.0) == pytest.approx(0.5)
    assert c.violation(500.0) == pytest.approx(-0.5)
    both = Constraint("capex_usd", max=10.0, min=5.0)
    assert both.violation(4.0) > 0 and both.violation(11.0) > 0 and both.violation(7.0) <= 0


def test_same_machine_fingerprint_compares_every_field() -> None:
    """A preset is a space's baseline only when the space rebuilds the same machine: stating the
    catalog's HBM capacity or renaming changes nothing, while any other field of the system file
    (PCIe switch sharing, a multi-node pod, software switches) makes another machine."""
    import dataclasses

    from dse.model.system import PodSpec, load_system_spec
    from dse.search.study.search_space import _fingerprint

    spec = load_system_spec("dgx-h100")
    node = spec.node
    same = [dataclasses.replace(spec, node=dataclasses.replace(node, hbm_gb=80.0), name="x",
                                description="y")]
    other = [dataclasses.replace(spec, node=dataclasses.replace(node, pcie_switch_share=4)),
             dataclasses.replace(spec, pod=PodSpec(nodes=2), nodes=2),
             dataclasses.replace(spec, software=dataclasses.replace(
                 spec.software, bottom_mlp_on_one_device=True)),
             dataclasses.replace(spec, node=dataclasses.replace(node, hbm_cache_gb=10.0))]
    assert all(_fingerprint(s) == _fingerprint(spec) for s in same)
    assert all(_fingerprint(s) != _fingerprint(spec) for s in other)
