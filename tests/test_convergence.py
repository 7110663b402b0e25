"""Samples to converge by global batch (MLPerf reference convergence points), time and cost to
train, and the global batch as a search-space parameter."""

from __future__ import annotations

import dataclasses
import itertools
import math
from pathlib import Path

import pytest
from study_helpers import complete, storage_for
from typer.testing import CliRunner

from dse.cli import app
from dse.errors import DseInputError
from dse.model.convergence import (
    beyond_curve,
    curve_names,
    load_curve,
    samples_to_converge,
    training_samples,
)
from dse.model.cost import HOURS_PER_YEAR
from dse.model.evaluate import evaluate
from dse.model.system import load_system
from dse.model.workload import load_workload, workload_from_mapping
from dse.records import read_toml
from dse.search.algorithms.pareto import pareto_trials
from dse.search.runner import run_study
from dse.search.study.encoding import design_system, design_workload
from dse.search.study.objective_sets import TO_TRAIN_CONSTRAINT, load_objectives, objectives_from_mapping
from dse.search.study.search_space import space_from_mapping
from dse.search.study.study_file import StudySpec, load_study_spec

CRITEO = 4_195_197_692
"""Criteo 1TB training samples, the epoch of both curves."""
# Olympic means of the RCP files' runs, by hand from dse/data/convergence.toml (sorted, the
# lowest and highest run dropped):
DLRM_32768 = (7 * 1.75 + 1.8) / 8            # 1.7 1.75x7 1.8 1.8 -> drop 1.7, one 1.8
DLRM_55296 = (26 * 1.9 + 1.95) / 27           # 1.85 1.9x26 1.95x2 -> drop 1.85, one 1.95
DLRM_71680 = (22 * 2.0) / 22                  # 1.95 2.0x23 -> drop 1.95, one 2.0
DCNV2_102400 = (0.8 * 2 + 0.85 * 10 + 0.9 * 31 + 0.95 * 5) / 48  # 0.8x3 0.85x10 0.9x31 0.95x6
DCNV2_135168 = (0.85 * 4 + 0.9 * 35 + 0.95 * 42 + 1.0 * 5) / 86  # 0.85x5 0.9x35 0.95x42 1.0x6
runner = CliRunner()
SPACE_HEAD_DICT = {"name": "small", "base_system": "dgx-h100"}


def test_olympic_means_at_the_rcp_batches() -> None:
    v1 = load_curve("mlperf-dlrm-v1")
    assert samples_to_converge(v1, 32768) == pytest.approx(DLRM_32768 * CRITEO, rel=1e-12)
    assert round(DLRM_32768, 5) == 1.75625
    assert samples_to_converge(v1, 55296) == pytest.approx(DLRM_55296 * CRITEO, rel=1e-12)
    assert samples_to_converge(v1, 71680) == pytest.approx(DLRM_71680 * CRITEO, rel=1e-12)
    dcn = load_curve("mlperf-dlrm-dcnv2")
    assert samples_to_converge(dcn, 102400) == pytest.approx(DCNV2_102400 * CRITEO, rel=1e-12)
    assert samples_to_converge(dcn, 135168) == pytest.approx(DCNV2_135168 * CRITEO, rel=1e-12)
    assert (round(DCNV2_102400, 6), round(DCNV2_135168, 6)) == (0.890625, 0.927907)


def test_linear_in_batch_between_points() -> None:
    v1 = load_curve("mlperf-dlrm-v1")
    mid = (32768 + 55296) // 2  # 44,032: halfway
    assert samples_to_converge(v1, mid) == pytest.approx((DLRM_32768 + DLRM_55296) / 2 * CRITEO)
    quarter = 102400 + (135168 - 102400) // 4  # 110,592
    dcn = load_curve("mlperf-dlrm-dcnv2")
    expected = DCNV2_102400 + (DCNV2_135168 - DCNV2_102400) / 4
    assert samples_to_converge(dcn, quarter) == pytest.approx(expected * CRITEO, rel=1e-12)


def test_flat_below_and_refused_above() -> None:
    dcn = load_curve("mlperf-dlrm-dcnv2")
    assert samples_to_converge(dcn, 1024) == samples_to_converge(dcn, 32768)
    assert samples_to_converge(dcn, 135169) is None
    assert "135,168" in beyond_curve(dcn, 135169) and beyond_curve(dcn, 135168) == ""


@pytest.mark.parametrize("name", curve_names())
def test_larger_batch_needs_more_samples(name: str) -> None:
    curve = load_curve(name)
    batches = range(curve.points[0].global_batch, curve.max_batch + 1, 1024)
    samples = [samples_to_converge(curve, b) or math.nan for b in batches]
    assert all(a <= b for a, b in itertools.pairwise(samples))  # NaN (no value) fails too
    assert samples[-1] > 1.1 * samples[0]


def test_data_file_cites_rounds_up_to_training_3_1() -> None:
    for name in curve_names():
        c = load_curve(name)
        assert c.repository == "mlcommons/logging" and len(c.commit) == 40
        assert c.path.split("/")[-2] in ("training_2.1.0", "training_3.1.0"), c.path
        assert c.samples_per_epoch == CRITEO


def test_time_and_cost_to_train_are_samples_over_throughput() -> None:
    wl = load_workload("mlperf-dlrm-dcnv2", (("global_batch", 102400),))
    ev = evaluate(wl, load_system("dgx-h100"))
    m = ev.metrics()
    samples = DCNV2_102400 * CRITEO
    assert m["time_to_train_s"] == pytest.approx(samples / ev.throughput_samples_per_s, rel=1e-12)
    per_s = ev.economics.tco_usd_per_year / (HOURS_PER_YEAR * 3600.0)
    assert m["cost_to_train_usd"] == pytest.approx(per_s * float(m["time_to_train_s"]), rel=1e-12)
    # The same TCO rate as one epoch: the ratio of costs is the ratio of samples.
    assert float(m["cost_to_train_usd"]) / float(m["epoch_cost_usd"]) == pytest.approx(DCNV2_102400)


def test_beyond_the_curve_no_time_to_train() -> None:
    wl = load_workload("mlperf-dlrm-dcnv2", (("global_batch", 200_000),))
    ev = evaluate(wl, load_system("dgx-h100"))
    assert math.isinf(float(ev.metrics()["time_to_train_s"]))
    assert ev.feasible  # only a study that names a to-train metric refuses it
    objectives = load_objectives("time-to-train-capex")
    assert objectives.violations(ev.metrics())[TO_TRAIN_CONSTRAINT] == 1.0
    assert any("convergence curve" in r for r in objectives.violated(ev.metrics()))
    plain = load_objectives("throughput-vs-capex")
    assert TO_TRAIN_CONSTRAINT not in plain.violations(ev.metrics())


def test_workload_without_a_curve_says_so_and_uses_one_epoch() -> None:
    ev = evaluate(load_workload("criteo-1tb-large"), load_system("dgx-h100"))
    need = ev.training_samples()
    assert need.samples == CRITEO and not need.on_curve
    assert "no convergence curve" in need.basis
    assert ev.metrics()["time_to_train_s"] == pytest.approx(float(ev.metrics()["epoch_time_s"]))
    none = training_samples("x", None, 1024, 0)
    assert none.samples is None and "no dataset size" in none.basis
    result = runner.invoke(app, ["evaluate", "-w", "criteo-1tb-large", "-s", "dgx-h100"],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "criteo-1tb-large has no convergence curve: one epoch" in result.output
    result = runner.invoke(app, ["evaluate", "-w", "mlperf-dlrm-dcnv2", "-s", "dgx-h100", "--set",
                                 "workload.global_batch=200000"], env={"COLUMNS": "200"})
    assert "no time to train: global batch 200,000 is above" in result.output


def test_unknown_curve_in_a_workload_file_names_file_and_key() -> None:
    data = read_toml(Path(__file__).parents[1] / "dse/data/workloads/mlperf-dlrm-v1.toml")
    with pytest.raises(DseInputError) as err:
        workload_from_mapping({**data, "convergence": "mlperf-bert"}, "my.toml")
    assert err.value.source == "my.toml" and err.value.key == "convergence"
    assert "mlperf-dlrm-v1" in err.value.message


# --- batch as a space parameter -------------------------------------------------------------------

BATCH_SPACE = {"name": "b", "base_system": "dgx-h100", "parameters": {
    "nodes": {"type": "int", "low": 1, "high": 4},
    "workload.global_batch": {"type": "ordinal", "choices": [32768, 135168]}}}


def test_batch_parameter_sets_the_workload_not_the_system() -> None:
    space = space_from_mapping(BATCH_SPACE, "b.toml")
    design = {"nodes": 2, "workload.global_batch": 135168}
    wl = design_workload(space, design, load_workload("mlperf-dlrm-dcnv2"))
    assert wl.global_batch == 135168 and wl.convergence == "mlperf-dlrm-dcnv2"
    assert design_system(space, design).nodes == 2
    assert space.overrides(design) == (("nodes", 2),)
    base = load_workload("mlperf-dlrm-dcnv2")
    assert design_workload(space, {"nodes": 2}, base) is base


@pytest.mark.parametrize(("param", "message"), [
    ({"type": "ordinal", "choices": [0, 1024]}, "must be at least 1"),
    ({"type": "float", "low": 1024.0, "high": 4096.0}, "expected an integer"),
    ({"type": "categorical", "choices": ["fp9"]}, "expected"),
])
def test_bad_batch_or_precision_refused(param: dict[str, object], message: str) -> None:
    key = "workload.precision" if param.get("choices") == ["fp9"] else "workload.global_batch"
    data = {**SPACE_HEAD_DICT, "parameters": {key: param}}
    with pytest.raises(DseInputError) as err:
        space_from_mapping(data, "s.toml")
    assert err.value.key == f"parameters.{key}" and message in err.value.message


def test_unsearchable_workload_field_refused() -> None:
    data = {**SPACE_HEAD_DICT, "parameters": {
        "workload.embedding_optimizer": {"type": "categorical", "choices": ["sgd", "adam"]}}}
    with pytest.raises(DseInputError) as err:
        space_from_mapping(data, "s.toml")
    assert "not a searchable workload field" in err.value.message
    assert "workload.global_batch" in err.value.message


def test_time_to_train_study_front_has_several_batches(tmp_path: Path) -> None:
    spec: StudySpec = dataclasses.replace(load_study_spec("time-to-train"), budget=40,
                                          storage=storage_for(tmp_path, "journal", "ttt"))
    study = run_study(spec)
    assert len(complete(study)) >= 30
    front = pareto_trials(study)
    batches = {t.user_attrs["design"]["workload.global_batch"] for t in front}
    assert len(batches) > 1, front
    for t in front:  # each front value is the curve at the design's batch over its throughput
        batch = t.user_attrs["design"]["workload.global_batch"]
        samples = samples_to_converge(load_curve("mlperf-dlrm-dcnv2"), batch)
        assert samples is not None
        assert t.values[0] == pytest.approx(samples / t.user_attrs["throughput_samples_per_s"])


def test_objectives_accept_the_to_train_metrics() -> None:
    objectives = objectives_from_mapping({
        "name": "o", "objectives": [{"metric": "cost_to_train_usd", "direction": "minimize"}],
        "constraints": [{"metric": "time_to_train_s", "max": 1800.0}]}, "o.toml")
    ev = evaluate(load_workload("mlperf-dlrm-v1"), load_system("dgx-a100"))
    violations = objectives.violations(ev.metrics())
    assert violations[TO_TRAIN_CONSTRAINT] == 0.0
    seconds = float(ev.metrics()["time_to_train_s"])
    assert violations["time_to_train_s"] == pytest.approx((seconds - 1800.0) / 1800.0)


# --- a workload's own curve, the batch at scale, the batch per accelerator (issue 41 item 2) -------

OWN = {"source": "our runs to AUC 0.80 (report R-1)", "samples_per_epoch": 10_000_000_000,
       "points": [{"global_batch": 32768, "samples_to_converge": 1.6e10},
                  {"global_batch": 131072, "epochs_to_converge": [2.3, 2.4, 2.6, 3.9]}]}
"""Two points: samples at 32,768; four runs at 131,072 (olympic mean 2.5 epochs of 1e10)."""


def _own(curve: dict[str, object]) -> object:
    data = read_toml(Path(__file__).parents[1] / "dse/data/workloads/criteo-1tb-large.toml")
    return workload_from_mapping({**data, "convergence_curve": curve}, "mine.toml")


def test_a_workload_carries_its_own_curve_with_its_source() -> None:
    wl = _own(OWN)
    curve = wl.curve()  # type: ignore[attr-defined]
    assert curve is not None and curve.source == OWN["source"]
    assert samples_to_converge(curve, 32768) == pytest.approx(1.6e10)
    assert samples_to_converge(curve, 131072) == pytest.approx(2.5e10)  # olympic: 2.4 and 2.6
    assert samples_to_converge(curve, 81920) == pytest.approx((1.6e10 + 2.5e10) / 2)
    assert samples_to_converge(curve, 16384) == pytest.approx(1.6e10)  # flat below
    assert samples_to_converge(curve, 131073) is None  # none beyond
    ev = evaluate(wl, load_system("dgx-h100"))  # type: ignore[arg-type]
    need = ev.training_samples()
    assert need.on_curve and need.samples == pytest.approx(samples_to_converge(curve, 65536))
    assert "report R-1" in need.basis
    assert ev.metrics()["time_to_train_s"] == pytest.approx(need.samples / ev.throughput_samples_per_s)


@pytest.mark.parametrize(("change", "key", "words"), [
    ({"source": ""}, "convergence_curve.source", "say where"),
    ({"points": []}, "convergence_curve.points", "at least one point"),
    ({"points": [{"global_batch": 1024}]}, "convergence_curve.points[0]", "one of them"),
    ({"points": [{"global_batch": 1024, "samples_to_converge": 1e9, "epochs_to_converge": [1.0]}]},
     "convergence_curve.points[0]", "one of them"),
    ({"points": [{"global_batch": 8, "samples_to_converge": 1.0},
                 {"global_batch": 8, "samples_to_converge": 2.0}]}, "convergence_curve.points",
     "one global_batch"),
])
def test_a_bad_own_curve_names_the_file_and_key(change: dict[str, object], key: str,
                                                 words: str) -> None:
    with pytest.raises(DseInputError) as err:
        _own({**OWN, **change})
    assert (err.value.source, err.value.key) == ("mine.toml", key) and words in err.value.message


def test_a_packaged_and_an_own_curve_are_refused_together() -> None:
    data = read_toml(Path(__file__).parents[1] / "dse/data/workloads/mlperf-dlrm-v1.toml")
    with pytest.raises(DseInputError) as err:
        workload_from_mapping({**data, "convergence_curve": OWN}, "mine.toml")
    assert err.value.key == "convergence_curve" and "not both" in err.value.message


def test_a_preset_at_more_nodes_than_its_batch_serves_gets_a_note() -> None:
    """``--set nodes=16`` ran one node's batch (55,296) without a word: 128 GPUs get the note
    with the batch the curve reaches (135,168) and the throughput there; 8 GPUs get none."""
    import json

    result = runner.invoke(app, ["evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-dcnv2", "--set",
                                 "nodes=16", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    at_scale = evaluate(load_workload("mlperf-dlrm-dcnv2", (("global_batch", 135168),)),
                        load_system("dgx-h100", (("nodes", 16),)))
    assert out["larger_batch"]["global_batch"] == 135168
    assert out["larger_batch"]["throughput_samples_per_s"] == pytest.approx(
        at_scale.throughput_samples_per_s, rel=1e-12)
    assert out["larger_batch"]["throughput_samples_per_s"] > 1.4 * out["throughput_samples_per_s"]
    shown = runner.invoke(app, ["evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-dcnv2", "--set",
                                "nodes=16"], env={"COLUMNS": "300"})
    assert ("note: global batch 55,296 is mlperf-dlrm-dcnv2's batch on 8 accelerators; on 128 "
            "its convergence curve") in shown.output
    one = runner.invoke(app, ["evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-dcnv2", "--json"])
    assert json.loads(one.output)["larger_batch"] is None


def test_batch_per_accelerator_scales_with_the_design() -> None:
    space = space_from_mapping({**SPACE_HEAD_DICT, "parameters": {
        "nodes": {"type": "int", "low": 1, "high": 4},
        "workload.batch_per_accelerator": {"type": "ordinal", "choices": [2048, 4096]}}}, "s.toml")
    base = load_workload("mlperf-dlrm-dcnv2")
    for nodes, per, total in ((1, 4096, 32768), (4, 4096, 131072), (3, 2048, 49152)):
        wl = design_workload(space, {"nodes": nodes, "workload.batch_per_accelerator": per}, base)
        assert wl.global_batch == total == nodes * 8 * per
    with pytest.raises(DseInputError) as err:
        space_from_mapping({**SPACE_HEAD_DICT, "parameters": {
            "workload.global_batch": {"type": "ordinal", "choices": [2048]},
            "workload.batch_per_accelerator": {"type": "ordinal", "choices": [2048]}}}, "s.toml")
    assert "sets global_batch too" in err.value.message


def test_a_study_searching_batch_without_a_curve_says_so(tmp_path: Path) -> None:
    """Without a curve the samples to train stay one epoch whatever the batch: ``dse run`` says so
    in one line (the report too), and with a curve it says nothing."""
    (tmp_path / "b.toml").write_text(
        'name = "b"\nbase_system = "dgx-h100"\n[parameters.nodes]\ntype = "int"\nlow = 1\nhigh = 2\n'
        '[parameters."workload.batch_per_accelerator"]\ntype = "ordinal"\nchoices = [1024, 8192]\n',
        encoding="utf-8")
    for workload, said in (("criteo-1tb-large", True), ("mlperf-dlrm-v1", False)):
        study = tmp_path / f"{workload}.toml"
        study.write_text(f'name = "s-{workload}"\nworkload = "{workload}"\nspace = "b.toml"\n'
                         'objectives = "time-to-train-capex"\nsampler = "random"\nbudget = 4\n'
                         'seed = 1\n', encoding="utf-8")
        result = runner.invoke(app, ["run", str(study), "--quiet"], env={"COLUMNS": "400"})
        assert result.exit_code == 0, result.output
        line = (f"workload.batch_per_accelerator is searched, but workload {workload} has no "
                "convergence curve: time to train holds the samples to train at one epoch "
                "(4,195,197,692 samples) whatever the batch")
        assert (line in result.output) == said
        page = (tmp_path / f"s-{workload}.html").read_text(encoding="utf-8")
        assert (line in page) == said and "batch searched (workload.batch_per_accelerator)" in page
