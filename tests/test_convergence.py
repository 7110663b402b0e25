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
    none = training_samples("x", "", 1024, 0)
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
