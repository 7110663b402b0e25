"""Epoch and dataset metrics from the workload's own dataset, usable as objectives and constraints
(issue 28 item 4), and the numbers an engineer would question (issue 28 item 6)."""

from __future__ import annotations

import dataclasses
import itertools
import math
import shutil
from pathlib import Path

import pytest
from study_helpers import GRID_PARAMS, SPACE_HEAD, run_cli

from dse import evaluate, load_system, load_workload
from dse.errors import DseInputError
from dse.model.bom import scaleout_tiers
from dse.model.catalog import load_catalog
from dse.model.cost import CRITEO_EPOCH_SAMPLES, capex, power
from dse.model.system import System, read_system_data, resolve_system, system_spec_from_mapping
from dse.records import apply_override
from dse.search.algorithms.dedup import design_key
from dse.search.results import load_stored_study, trial_rows
from dse.search.study.encoding import canonical_design, decode_params, grid_designs, grid_of
from dse.search.study.objective_sets import METRICS, load_objectives
from dse.search.study.search_space import load_space
from dse.search.study.study_file import load_study_spec

SYSTEMS = Path(__file__).resolve().parents[1] / "dse" / "data" / "systems"

# --- item 4: the workload's own dataset ----------------------------------------------------------

TWENTY_BILLION = 20_000_000_000


def test_epoch_metrics_count_the_workloads_own_samples() -> None:
    criteo = load_workload("mlperf-dlrm-dcnv2")
    own = dataclasses.replace(criteo, samples_per_epoch=TWENTY_BILLION)
    system = load_system("dgx-h100")
    a, b = evaluate(criteo, system), evaluate(own, system)
    assert a.throughput_samples_per_s == b.throughput_samples_per_s
    thr = b.throughput_samples_per_s
    m = b.metrics()
    assert m["epoch_time_s"] == pytest.approx(TWENTY_BILLION / thr, rel=1e-12)
    assert m["dataset_time_s"] == m["epoch_time_s"]
    per_s = b.economics.tco_usd_per_year / (8766.0 * 3600.0)
    assert m["epoch_cost_usd"] == pytest.approx(per_s * TWENTY_BILLION / thr, rel=1e-12)
    assert m["dataset_cost_usd"] == m["epoch_cost_usd"]
    # 20 B against Criteo's 4,195,197,692: the epoch is 4.767x longer and dearer.
    ratio = TWENTY_BILLION / 4_195_197_692
    assert m["epoch_time_s"] / a.metrics()["epoch_time_s"] == pytest.approx(ratio, rel=1e-12)
    assert m["epoch_cost_usd"] / a.metrics()["epoch_cost_usd"] == pytest.approx(ratio, rel=1e-12)


def test_a_workload_without_a_dataset_keeps_a_criteo_epoch_and_no_dataset_pass() -> None:
    ev = evaluate(load_workload("zion-2019"), load_system("zion"))
    m = ev.metrics()
    assert m["epoch_time_s"] == pytest.approx(CRITEO_EPOCH_SAMPLES / ev.throughput_samples_per_s)
    assert math.isinf(m["dataset_time_s"]) and math.isinf(m["dataset_cost_usd"])
    assert ev.to_dict()["dataset_time_s"] is None


def test_every_epoch_and_dataset_metric_is_an_objective_metric() -> None:
    assert {"epoch_time_s", "epoch_cost_usd", "dataset_time_s", "dataset_cost_usd"} <= set(METRICS)


SHIPPED_OBJECTIVES = Path(__file__).resolve().parents[1] / "objectives" / "epoch-in-30-min.toml"
"""Throughput against capex with an epoch of the dataset in at most 30 minutes and capex at most
10 M USD: copied into each test's folder, a real file beside the study."""


def _study(folder: Path, workload: str, overrides: str = "") -> Path:
    shutil.copy(SHIPPED_OBJECTIVES, folder / "epoch-and-capex.toml")
    study = folder / "s.toml"
    study.write_text(f'name = "s"\nworkload = "{workload}"\nspace = "scale-out"\n'
                     'objectives = "epoch-and-capex.toml"\nsampler = "random"\nbudget = 24\n'
                     f'seed = 3\nstorage = "s.journal"\n{overrides}', encoding="utf-8")
    return study


def test_epoch_and_capex_constraints_load_and_constrain_a_study(tmp_path: Path) -> None:
    study = _study(tmp_path, "mlperf-dlrm-v1",
                   f"[workload_overrides]\nsamples_per_epoch = {TWENTY_BILLION}\n")
    objectives = load_objectives(str(tmp_path / "epoch-and-capex.toml"))
    assert [(c.metric, c.max) for c in objectives.constraints] == [
        ("dataset_time_s", 1800.0), ("capex_usd", 1e7)]
    result = run_cli("run", str(study), "--quiet", "--no-report")
    assert result.exit_code == 0, result.output
    rows = trial_rows(load_stored_study(load_study_spec(str(study))), distinct=False)
    scored = [r for r in rows if r.get("dataset_time_s") is not None]
    assert len(scored) >= 10
    for r in scored:
        # A pass over 20 B samples at the design's throughput, and the verdict follows both bounds.
        assert r["dataset_time_s"] == pytest.approx(TWENTY_BILLION / r["throughput_samples_per_s"],
                                                    rel=1e-9)
        within = r["dataset_time_s"] <= 1800.0 and r["capex_usd"] <= 1e7
        assert r["feasible"] == (within and r["model_feasible"])
    # The bounds bite both ways in this space: some designs meet them, some do not.
    assert any(r["feasible"] for r in scored)
    assert any(r["model_feasible"] and not r["feasible"] for r in scored)


def test_a_dataset_constraint_without_a_dataset_is_refused(tmp_path: Path) -> None:
    study = _study(tmp_path, "zion-2019")
    with pytest.raises(DseInputError, match="dataset_time_s needs the workload's dataset size"):
        load_study_spec(str(study))
    result = run_cli("run", str(study), "--quiet", "--no-report")
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0, result.output
    assert "objectives: dataset_time_s needs the workload's dataset size, and workload " \
        "'zion-2019' states no samples_per_epoch" in result.output


# --- item 6: fp8 on a part without fp8 ------------------------------------------------------------


def test_fp8_on_a100_is_infeasible_not_faster_than_fp16() -> None:
    """A100 has no fp8 tensor cores (its datasheet lists TF32, BF16, FP16, INT8, INT4 peaks): fp8
    there is refused with a reason, where it used to run fp16 math with fp8's 1-byte activations
    and come out 5% faster than fp16 (9.107 ms fp16, 8.651 ms "fp8")."""
    wl = load_workload("mlperf-dlrm-dcnv2")
    a100 = load_system("dgx-a100")
    fp16 = evaluate(dataclasses.replace(wl, precision="fp16"), a100)
    fp8 = evaluate(dataclasses.replace(wl, precision="fp8"), a100)
    assert fp16.feasible
    assert not fp8.feasible
    assert fp8.reasons == ("NVIDIA A100 SXM4 80 GB has no published fp8 peak in the catalog (no fp8 "
                           "math: fp8 training needs fp8 tensor cores)",)
    assert fp8.step_time_s > fp16.step_time_s  # scored at the lowest published peak, never faster
    # On a part with fp8 (H100: 1,978.9 against 989.4 TFLOP/s) fp8 stays feasible and faster.
    h100 = load_system("dgx-h100")
    h16 = evaluate(dataclasses.replace(wl, precision="fp16"), h100)
    h8 = evaluate(dataclasses.replace(wl, precision="fp8"), h100)
    assert h8.feasible and h8.step_time_s < h16.step_time_s


def test_fp8_is_feasible_exactly_where_the_catalog_has_an_fp8_peak() -> None:
    wl = dataclasses.replace(load_workload("mlperf-dlrm-v1"), precision="fp8")
    cat = load_catalog()
    for name in ("dgx-1", "dgx-a100", "a100-pcie-x8", "a30-pcie-x8", "dgx-h100", "gaudi2-x8",
                 "mi300x-x8", "l40s-pcie-x8"):
        system = load_system(name)
        has_fp8 = cat.accelerator_named(system.spec.node.accelerator, "t", "t").peak_tflops.fp8
        refused = any("fp8" in r for r in evaluate(wl, system).reasons)
        assert refused == (not has_fp8), name


# --- item 6: Gaudi's on-die RoCE ports are no NIC cards -------------------------------------------


def _gaudi(nodes: int = 1, **node: object) -> System:
    data, _ = read_system_data("gaudi2-x8")
    data = apply_override(data, "nodes", nodes)
    for key, value in node.items():
        data = apply_override(data, f"node.{key}", value)
    return resolve_system(system_spec_from_mapping(data, "gaudi"), load_catalog())


def test_gaudi_node_capex_and_power_are_the_catalog_sum_without_nic_cards() -> None:
    cat = load_catalog()
    system = _gaudi()
    assert system.on_die_nics and system.spec.node.nics == 24
    cost = capex(system, cat)
    # Hand sum from the catalog: 8 Gaudi2 at 8,125 USD, 2 Xeon 8380 at 8,100, 1,024 GB DDR4 at
    # 2.5 USD/GB, two 100G front-end NICs at 800 (no compute NIC card: the 24 ports are on the
    # dies), chassis 10,000 + 8 x 1,000; one node buys no switch.
    assert cost.parts_usd["nics"] == 2 * 800.0
    assert cost.capex_usd == pytest.approx(8 * 8125 + 2 * 8100 + 1024 * 2.5 + 2 * 800 + 10000
                                           + 8 * 1000, rel=1e-12)
    assert cost.capex_usd == pytest.approx(103_360.0, rel=1e-12)
    pw = power(system, cat, 0.61)
    assert pw.parts_w["nics"] == 2 * 15.0  # the two front-end cards only
    # The cards the node used to be charged: 24 x 800 USD and 24 x 15 W.
    cards = _gaudi(nic_attach="cpu")
    assert capex(cards, cat).parts_usd["nics"] == 26 * 800.0
    assert power(cards, cat, 0.61).parts_w["nics"] == 26 * 15.0


def test_gaudi_scale_out_still_pays_switch_ports_and_optics() -> None:
    cat = load_catalog()
    system = _gaudi(nodes=2)
    # 2 nodes x 24 ports of 100 Gb/s = 48 ports <= 64: one tier, one switch port and two optical
    # ends per port, at 100/400 of the 400G prices (525 USD a port, 1,000 USD an end) and powers
    # (6.25 W a port, 9 W an end).
    assert capex(system, cat).parts_usd["network"] == pytest.approx(48 * 0.25 * (525 + 2 * 1000))
    assert power(system, cat, 0.61).parts_w["network"] == pytest.approx(48 * 0.25 * (6.25 + 2 * 9))
    assert capex(system, cat).parts_usd["nics"] == 2 * 2 * 800.0


# --- item 6: a rail-optimised network is one tier per rail ------------------------------------------


def _dgx_h100(nodes: int, topology: str) -> System:
    data, _ = read_system_data("dgx-h100")
    data = apply_override(apply_override(data, "nodes", nodes), "network.topology", topology)
    return resolve_system(system_spec_from_mapping(data, "dgx"), load_catalog())


def test_sixteen_node_rail_optimised_network_by_hand() -> None:
    cat = load_catalog()
    rail, fat = _dgx_h100(16, "rail_optimized"), _dgx_h100(16, "fat_tree")
    # 16 DGX H100 x 8 NICs of 400 Gb/s. Rail-optimised: 8 rails of 16 ports fit one tier of
    # 64-port switches (two switches of 4 rails each: 128 ports); every NIC buys one leaf port and
    # two optical ends: 128 x (525 + 2 x 1,000) = 323,200 USD, 128 x (6.25 + 2 x 9) = 3,104 W.
    assert scaleout_tiers(rail, cat) == 1
    assert capex(rail, cat).parts_usd["network"] == pytest.approx(323_200.0)
    assert power(rail, cat, 0.61).parts_w["network"] == pytest.approx(3_104.0)
    # A fat tree of the same 128 ports outgrows one 64-port switch: a leaf and a spine tier, three
    # ports and four ends a NIC: 128 x (3 x 525 + 4 x 1,000) = 713,600 USD.
    assert scaleout_tiers(fat, cat) == 2
    assert capex(fat, cat).parts_usd["network"] == pytest.approx(713_600.0)


def test_rail_tiers_count_one_port_per_node() -> None:
    cat = load_catalog()
    assert [scaleout_tiers(_dgx_h100(n, "rail_optimized"), cat) for n in (1, 2, 64, 65, 2048, 2049)] \
        == [0, 1, 1, 2, 2, 3]
    assert [scaleout_tiers(_dgx_h100(n, "fat_tree"), cat) for n in (1, 8, 9, 256, 257)] \
        == [0, 1, 2, 2, 3]
    for n in range(1, 80, 3):  # never dearer than the fat tree of the same ports
        assert (capex(_dgx_h100(n, "rail_optimized"), cat).capex_usd
                <= capex(_dgx_h100(n, "fat_tree"), cat).capex_usd)


# --- item 6: parameters that change nothing on one node are canonical -------------------------------


@pytest.mark.parametrize("name", sorted(p.stem for p in SYSTEMS.glob("*.toml")))
def test_one_node_network_parameters_change_nothing(name: str) -> None:
    """What makes a one-node network inert (:func:`dse.model.equivalence.inert_at`) safe: on one
    node of every preset, oversubscription and topology leave the whole evaluation unchanged."""
    data, _ = read_system_data(name)
    wl = load_workload("mlperf-dlrm-dcnv2")
    results = []
    for over, topology in ((1.0, "fat_tree"), (4.0, "rail_optimized"), (2.0, "fat_tree")):
        d = apply_override(apply_override(apply_override(data, "nodes", 1),
                                          "network.oversubscription", over),
                           "network.topology", topology)
        results.append(evaluate(wl, resolve_system(system_spec_from_mapping(d, name),
                                                   load_catalog())).to_dict())
    assert results[0] == results[1] == results[2]


_SPACE = SPACE_HEAD + (GRID_PARAMS.replace('type = "int"\nlow = 1\nhigh = 3', 'type = "ordinal"\n'
                                           'choices = [1, 16]')
                       .replace('["fat_tree", "rail_optimized"]', '["rail_optimized", "fat_tree"]')
                       .replace("[1.0, 2.0]", "[2.0, 3.0, 1.0]"))
"""1 or 16 DGX H100 nodes (16 x 8 = 128 NIC ports: a fat tree of two tiers, rails of one, so
the topology counts), both topologies (the schema's default last) and oversubscription 2, 3 or 1
(the default last): 12 points, 7 designs."""


def test_canonical_design_on_one_node_only(tmp_path: Path) -> None:
    (tmp_path / "net.toml").write_text(_SPACE, encoding="utf-8")
    space = load_space(str(tmp_path / "net.toml"))
    one = {"nodes": 1, "network.topology": "rail_optimized", "network.oversubscription": 3.0}
    assert canonical_design(space, one) == {"nodes": 1, "network.topology": "fat_tree",
                                            "network.oversubscription": 1.0}
    two = {**one, "nodes": 16}
    assert canonical_design(space, two) == two
    # A range without the schema's default canonicalises to its low end (a value it can enqueue).
    narrow = tmp_path / "narrow.toml"
    narrow.write_text(_SPACE.replace("[2.0, 3.0, 1.0]", "[3.0, 2.0]")
                      .replace('["rail_optimized", "fat_tree"]', '["rail_optimized"]'), encoding="utf-8")
    assert canonical_design(load_space(str(narrow)), one) == {
        "nodes": 1, "network.topology": "rail_optimized", "network.oversubscription": 3.0}


def test_equal_one_node_designs_are_one_row_of_a_study(tmp_path: Path) -> None:
    (tmp_path / "net.toml").write_text(_SPACE, encoding="utf-8")
    study = tmp_path / "s.toml"
    study.write_text('name = "s"\nworkload = "mlperf-dlrm-v1"\nspace = "net.toml"\n'
                     'objectives = "throughput-vs-capex"\nsampler = "random"\nbudget = 40\n'
                     'seed = 5\nstorage = "s.journal"\n', encoding="utf-8")
    result = run_cli("run", str(study), "--quiet", "--no-report")
    assert result.exit_code == 0, result.output
    stored = load_stored_study(load_study_spec(str(study)))
    rows = trial_rows(stored, distinct=True)
    designs = [(r["param:nodes"], r["param:network.topology"], r["param:network.oversubscription"])
               for r in rows if r.get("state", "COMPLETE") == "COMPLETE" and "param:nodes" in r]
    # 1 one-node design + 2 x 3 16-node designs: the space is done at 7, each once.
    assert sorted(designs) == sorted([(1, "fat_tree", 1.0)] + [
        (16, t, o) for t in ("rail_optimized", "fat_tree") for o in (2.0, 3.0, 1.0)])


def test_grid_designs_counts_canonical_designs(tmp_path: Path) -> None:
    """A grid study is covered at its distinct canonical designs: by hand, and by brute force."""
    (tmp_path / "net.toml").write_text(_SPACE, encoding="utf-8")
    (tmp_path / "grid.toml").write_text(SPACE_HEAD + GRID_PARAMS, encoding="utf-8")
    # grid: 1-3 DGX H100 nodes (at most 24 NIC ports: one leaf either way, so the topology
    # counts on none of them) and oversubscription 1 or 2.
    for name, by_hand in (("net", 1 + 2 * 3), ("grid", 1 + 2 * 2)):
        space = load_space(str(tmp_path / f"{name}.toml"))
        grid = grid_of(space)
        assert grid is not None
        keys = {design_key(canonical_design(space, decode_params(space, dict(zip(grid, point,
                                                                                 strict=True)))))
                for point in itertools.product(*grid.values())}
        assert grid_designs(space, grid) == len(keys) == by_hand, name


def test_equal_one_node_designs_are_one_row_of_a_sweep_and_a_refinement(tmp_path: Path) -> None:
    """``dse sweep`` and the coarse-to-fine refinement a study starts with score each canonical
    design once, so their fronts hold each design once (before, the one-node design came six
    times, in every topology and oversubscription, each a front row of equal objectives)."""
    import json

    from dse.search.algorithms.refine import coarse_to_fine

    (tmp_path / "net.toml").write_text(_SPACE, encoding="utf-8")
    space = load_space(str(tmp_path / "net.toml"))
    canonical = sorted([(1, "fat_tree", 1.0)] + [
        (16, t, o) for t in ("rail_optimized", "fat_tree") for o in (2.0, 3.0, 1.0)])
    result = run_cli("sweep", str(tmp_path / "net.toml"), "-w", "mlperf-dlrm-v1", "--jobs", "1",
                     "--json", "--quiet")
    assert result.exit_code == 0, result.output
    swept = json.loads(result.output)
    assert swept["designs"] == len(canonical)  # 12 points, 7 designs
    rows = [(r["nodes"], r["network.topology"], r["network.oversubscription"]) for r in swept["front"]]
    assert len(rows) == len(set(rows)) and (1, "fat_tree", 1.0) in rows
    refined = coarse_to_fine(space, load_workload("mlperf-dlrm-v1"), load_objectives("throughput-vs-capex"))
    scored = [design_key(refined.grid.design(i)) for i in range(len(refined.grid))]
    assert len(scored) == len(set(scored))
    assert sorted(tuple(refined.grid.design(i).values()) for i in range(len(refined.grid))) == canonical
    front = [refined.grid.design(int(i)) for i in refined.front]
    assert sum(d["nodes"] == 1 for d in front) == 1
