"""Coarse-to-fine sweeps (dse.search.algorithms.refine): on a small space swept whole, the refinement finds
the exact front the coarse grid misses; the design cap holds; the result is deterministic, holds
no design twice and agrees with the model; a new study's reference and warm start come from it."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import optuna
import pytest

from dse.model.evaluate import evaluate
from dse.model.workload import Workload, load_workload
from dse.search.algorithms.dedup import design_key
from dse.search.algorithms.reference import study_reference
from dse.search.algorithms.refine import METHOD, coarse_to_fine, seed_new_study
from dse.search.algorithms.sweep import WARM_START_KEY, SweepResult, coarse_front, explicit_grid, run_sweep
from dse.search.study.encoding import design_system
from dse.search.study.objective_sets import ObjectiveSet, load_objectives
from dse.search.study.search_space import SearchSpace, space_from_mapping

LINES = {
    "name": "lines",
    "base_system": "zion",
    "fixed": {"nodes": 1},
    "parameters": {
        "node.accelerators": {"type": "int", "low": 1, "high": 16},
        "node.scaleup": {"type": "categorical", "choices": ["none", "ring", "switch"]},
        "node.scaleup_gb_s": {"type": "ordinal", "choices": [50.0, 150.0, 400.0],
                              "when": {"node.scaleup": ["ring", "switch"]}},
        "node.nics": {"type": "ordinal", "choices": [1, 2, 4, 8]},
    },
}
"""448 combinations (16 accelerator counts x (no fabric + 2 fabrics x 3 bandwidths) x 4 NIC
counts), 424 designs: one accelerator has no fabric, so its 7 fabrics are one design (4 x 6
fewer). With at most 40 coarse designs the coarse grid keeps 2 levels: 1 or 16 accelerators,
50 or 400 GB/s, 1 or 8 NICs (20 combinations, 12 designs: one accelerator's 5 are one; 3 levels
would be 63 combinations, 45 designs)."""
COARSE_MAX = 40


def lines_space() -> SearchSpace:
    return space_from_mapping(json.loads(json.dumps(LINES)), "test space")


def front_points(losses: np.ndarray) -> set[tuple[float, ...]]:
    return {tuple(float(x) for x in row) for row in np.round(losses, 6)}


@dataclass(frozen=True)
class Swept:
    space: SearchSpace
    wl: Workload
    objectives: ObjectiveSet
    full: SweepResult
    coarse: SweepResult
    refined: SweepResult


@pytest.fixture(scope="module")
def swept() -> Swept:
    space = lines_space()
    wl = load_workload("zion-2019")
    objectives = load_objectives("throughput-vs-capex")
    return Swept(space, wl, objectives, run_sweep(space, wl, objectives, jobs=1),
                 coarse_front(space, wl, objectives, max_designs=COARSE_MAX),
                 coarse_to_fine(space, wl, objectives, coarse_max_designs=COARSE_MAX))


def test_refinement_finds_the_front_the_coarse_grid_misses(swept: Swept) -> None:
    full, coarse, refined = swept.full, swept.coarse, swept.refined
    assert len(full.frame) == 424 and len(coarse.frame) == 12
    exact = front_points(full.losses())
    found_coarse = exact & front_points(coarse.losses())
    found = exact & front_points(refined.losses())
    # The coarse grid has no 150 GB/s fabric and few accelerator counts: it holds few front points.
    assert len(exact) >= 8 and len(found_coarse) <= len(exact) // 4
    assert found == exact and front_points(refined.losses()) == exact
    # The fastest front design is the whole sweep's, and the coarse grid never scored it.
    fastest = refined.front_designs()[0]
    assert fastest == full.front_designs()[0] and fastest not in coarse.front_designs()
    assert fastest["node.scaleup_gb_s"] == 150.0
    # Fewer designs than the whole space: 12 coarse, the rest lines through the front.
    assert 12 < len(refined.frame) < 424
    assert refined.method == METHOD


def test_refined_designs_are_distinct_and_scored_as_the_model_scores_them(
        swept: Swept) -> None:
    refined, space = swept.refined, swept.space
    designs = [refined.grid.design(i) for i in range(len(refined.grid))]
    assert len({design_key(d) for d in designs}) == len(designs)
    frame = refined.frame
    for i in range(0, len(designs), 17):
        metrics = evaluate(swept.wl, design_system(space, designs[i])).metrics()
        for key in ("throughput_samples_per_s", "capex_usd"):
            assert frame[key].iloc[i] == pytest.approx(metrics[key], rel=1e-9)
        assert frame["node.accelerators"].iloc[i] == designs[i]["node.accelerators"]


def test_refinement_is_deterministic(swept: Swept) -> None:
    again = coarse_to_fine(swept.space, swept.wl, swept.objectives,
                           coarse_max_designs=COARSE_MAX)
    first = swept.refined
    assert [again.grid.design(i) for i in range(len(again.grid))] == \
        [first.grid.design(i) for i in range(len(first.grid))]
    assert again.front.tolist() == first.front.tolist()


def test_refinement_cap_is_honoured(swept: Swept) -> None:
    capped = coarse_to_fine(swept.space, swept.wl, swept.objectives,
                            coarse_max_designs=COARSE_MAX, max_designs=25)
    assert len(capped.frame) == 12 + 25
    none = coarse_to_fine(swept.space, swept.wl, swept.objectives,
                          coarse_max_designs=COARSE_MAX, max_designs=0)
    assert len(none.frame) == 12


def test_explicit_grid_orders_for_the_memo() -> None:
    space = lines_space()
    designs = [{"node.accelerators": 8, "node.scaleup": "none", "node.nics": 2},
               {"node.accelerators": 2, "node.scaleup": "ring", "node.scaleup_gb_s": 400.0,
                "node.nics": 1},
               {"node.accelerators": 2, "node.scaleup": "none", "node.nics": 4}]
    as_given = explicit_grid(space, designs)
    assert [as_given.design(i) for i in range(3)] == designs
    ordered = explicit_grid(space, designs, order=["node.accelerators", "node.nics",
                                                   "node.scaleup", "node.scaleup_gb_s"])
    # Slowest first: accelerators (2, 2, 8), then NICs within (1 before 4).
    assert [ordered.design(i) for i in range(3)] == [designs[1], designs[2], designs[0]]


def test_new_study_reference_and_warm_start_come_from_the_refinement() -> None:
    space = lines_space()
    wl = load_workload("zion-2019")
    objectives = load_objectives("throughput-vs-capex")
    study = optuna.create_study(directions=objectives.directions)
    enqueued = seed_new_study(study, space, wl, objectives, budget=100, warm=True)
    ref = study_reference(study)
    info = study.user_attrs[WARM_START_KEY]
    assert ref is not None and ref.method == METHOD and ref.designs == info["designs"]
    assert info["method"] == METHOD and info["seconds"] > 0 and 1 <= len(enqueued) <= 20
    # The coarse grid at 6 levels (6 x 7 x 4 = 168 combinations, 144 designs: one accelerator's
    # 7 fabrics are one), then lines through its front.
    assert 144 < info["designs"] < 424
    assert seed_new_study(study, space, wl, objectives, budget=100, warm=True) == []


def test_line_values_of_long_and_float_parameters() -> None:
    """A float knob is line-searched over FLOAT_LEVELS values on its scale (ends exact); a long
    log-scale int over LINE_MAX_VALUES spread values, plus the four nearest either side."""
    from dse.search.algorithms.refine import FLOAT_LEVELS, LINE_MAX_VALUES, _line_values, _near
    from dse.search.study.search_space import Parameter

    ddr = Parameter("node.ddr_gb", "float", low=1536.0, high=8192.0, log=True)
    values = _line_values(ddr)
    assert len(values) == FLOAT_LEVELS == 21
    assert values[0] == 1536.0 and values[-1] == 8192.0
    ratios = np.diff(np.log(np.array(values, dtype=float)))
    assert np.allclose(ratios, np.log(8192 / 1536) / 20)
    nodes = Parameter("nodes", "int", low=1, high=1024, log=True)
    line = _line_values(nodes)
    assert line[0] == 1 and line[-1] == 1024 and len(line) <= LINE_MAX_VALUES
    near = _near(nodes, 300, line)
    assert all(v in near for v in range(296, 305)) and set(line) <= set(near)


FIT = {"name": "fit", "base_system": "zionex",
       "fixed": {"node.nic_attach": "accelerator", "node.nics": 8, "node.nic_gbit_s": 200},
       "parameters": {"nodes": {"type": "int", "low": 3, "high": 8},
                      "node.ddr_gb": {"type": "float", "low": 1536.0, "high": 8192.0, "log": True}}}
"""The 12T model on ZionEX nodes: fewer nodes hold its tables only with more host DDR each."""


def test_repair_moves_pair_a_step_that_misses_a_constraint_with_a_line_along_another() -> None:
    from dse.search.algorithms.refine import _line_values, _State

    space = space_from_mapping(json.loads(json.dumps(FIT)), "test space")
    wl, objectives = load_workload("synthetic-production-12t"), load_objectives("throughput-vs-capex")
    ddr = _line_values(space.parameters["node.ddr_gb"])
    parent = {"nodes": 5, "node.ddr_gb": ddr[15]}
    fewer, more = {**parent, "nodes": 4}, {**parent, "nodes": 6}
    order = list(space.parameters)
    scored = run_sweep(space, wl, objectives, jobs=1,
                       grid=explicit_grid(space, [parent, fewer, more], order))
    fit = dict(zip(scored.frame["nodes"].astype(int), scored.frame["eligible"], strict=True))
    assert fit == {4: False, 5: True, 6: True}  # 4 nodes with 5.4 TB each cannot hold the tables
    repairs = list(_State(space, objectives, scored)._repairs(parent))
    # Only the step that missed the constraint is repaired, along every other DDR value.
    assert sorted(map(design_key, repairs)) == sorted(
        design_key({**fewer, "node.ddr_gb": v}) for v in ddr if v != parent["node.ddr_gb"])
    fits = run_sweep(space, wl, objectives, jobs=1, grid=explicit_grid(space, repairs, order))
    fit_ddr = fits.frame.loc[fits.frame["eligible"], "node.ddr_gb"]
    assert len(fit_ddr) and fit_ddr.min() > parent["node.ddr_gb"]


FABRIC = {"name": "fabric", "base_system": "dgx-h100",
          "fixed": {"node.accelerator": "b200-sxm-180gb", "nodes": 1},
          "parameters": {
              "node.accelerators": {"type": "ordinal", "choices": [8, 16]},
              "node.scaleup": {"type": "categorical",
                               "choices": ["hybrid_cube_mesh", "fully_connected"]},
              "node.scaleup_gb_s": {"type": "float", "low": 50.0, "high": 1800.0, "log": True,
                                    "when": {"node.scaleup": ["hybrid_cube_mesh",
                                                              "fully_connected"]}}}}
"""B200 (18 NVLink 5 links of 50 GB/s, the catalog): a hybrid cube mesh of 8 carries 900 GB/s per
accelerator, a full mesh of 8 only 7 x 2 x 50 = 700 (each peer gets 2 links), a full mesh of 16
15 x 50 = 750; a hybrid cube mesh of 16 cannot be built."""


def test_a_fabric_move_carries_its_bandwidth_along_its_line() -> None:
    """The full-dcnv2-3d case's two families (docs/benchmarks.md): from 8 B200 on a hybrid cube
    mesh at 879 GB/s, neither one-parameter step reaches 16 on a full mesh (a mesh of 8 at 879
    breaks the bandwidth rule, a hybrid cube mesh of 16 the arrangement rule). A move of the
    fabric also moves the bandwidth conditioned on it along its line, which reaches feasible
    full meshes of 8, and from the fastest of those 16 accelerators is one step."""
    from dse.search.algorithms.refine import _line_values, _State

    space = space_from_mapping(json.loads(json.dumps(FABRIC)), "test space")
    wl, objectives = load_workload("mlperf-dlrm-dcnv2"), load_objectives("throughput-vs-capex")
    order = list(space.parameters)
    parent = {"node.accelerators": 8, "node.scaleup": "hybrid_cube_mesh", "node.scaleup_gb_s": 879.0}
    first = run_sweep(space, wl, objectives, jobs=1, grid=explicit_grid(space, [parent], order))
    assert first.frame["eligible"].all()
    moves = list(_State(space, objectives, first)._lines(parent))
    band = _line_values(space.parameters["node.scaleup_gb_s"])
    full_mesh = {design_key({**parent, "node.scaleup": "fully_connected", "node.scaleup_gb_s": w})
                 for w in (879.0, *band)}
    assert full_mesh <= set(map(design_key, moves))
    scored = run_sweep(space, wl, objectives, jobs=1, grid=explicit_grid(space, moves, order))
    frame = scored.frame
    mesh8 = frame[(frame["node.scaleup"] == "fully_connected") & (frame["node.accelerators"] == 8)]
    ok = mesh8[mesh8["eligible"]]
    assert not mesh8.loc[mesh8["node.scaleup_gb_s"] == 879.0, "eligible"].any()  # the plain move
    assert len(ok) and ok["node.scaleup_gb_s"].max() <= 700.0 < mesh8["node.scaleup_gb_s"].max()
    assert not frame.loc[frame["node.accelerators"] == 16, "eligible"].any()  # hybrid mesh of 16
    fastest = ok.loc[ok["node.scaleup_gb_s"].idxmax()]
    step = {**parent, "node.scaleup": "fully_connected", "node.accelerators": 16,
            "node.scaleup_gb_s": float(fastest["node.scaleup_gb_s"])}
    sixteen = run_sweep(space, wl, objectives, jobs=1, grid=explicit_grid(space, [step], order))
    assert sixteen.frame["eligible"].all()


def test_a_fabric_chosen_takes_its_bandwidth_along_the_whole_line() -> None:
    """A float that becomes active with a choice (a fabric's bandwidth, from no fabric) is moved
    along its whole line, not only filled with its middle value."""
    from dse.search.algorithms.refine import FLOAT_LEVELS, _line_values, _State

    spec = json.loads(json.dumps(FABRIC))
    spec["parameters"]["node.scaleup"]["choices"] = ["none", "fully_connected"]
    spec["parameters"]["node.scaleup_gb_s"]["when"] = {"node.scaleup": ["fully_connected"]}
    space = space_from_mapping(spec, "test space")
    wl, objectives = load_workload("mlperf-dlrm-dcnv2"), load_objectives("throughput-vs-capex")
    parent = {"node.accelerators": 8, "node.scaleup": "none"}
    first = run_sweep(space, wl, objectives, jobs=1,
                      grid=explicit_grid(space, [parent], list(space.parameters)))
    moves = list(_State(space, objectives, first)._lines(parent))
    band = _line_values(space.parameters["node.scaleup_gb_s"])
    meshes = {m["node.scaleup_gb_s"] for m in moves if m["node.scaleup"] == "fully_connected"
              and m["node.accelerators"] == 8}
    assert len(band) == FLOAT_LEVELS and set(band) <= meshes
