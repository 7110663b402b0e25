"""Epoch and dataset metrics from the workload's own dataset, usable as objectives and constraints
(issue 28 item 4), and the numbers an engineer would question (issue 28 item 6)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from study_helpers import run_cli

from dse import evaluate, load_system, load_workload
from dse.errors import DseInputError
from dse.model.cost import CRITEO_EPOCH_SAMPLES
from dse.search.objectives import METRICS, load_objectives
from dse.search.results import trial_rows
from dse.search.spec import load_study_spec

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


_OBJECTIVES = """name = "epoch-and-capex"
description = "An epoch of our dataset within 30 minutes for at most 10 M USD."
[[objectives]]
metric = "throughput_samples_per_s"
direction = "maximize"
[[objectives]]
metric = "capex_usd"
direction = "minimize"
[[constraints]]
metric = "dataset_time_s"
max = 1800.0
[[constraints]]
metric = "capex_usd"
max = 10000000.0
"""


def _study(folder: Path, workload: str, overrides: str = "") -> Path:
    (folder / "epoch-and-capex.toml").write_text(_OBJECTIVES, encoding="utf-8")
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
    from dse.search.results import load_stored_study

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
