"""The calibration ensemble, prediction intervals, robust fronts and claims under the model's
error (issue 14: "Decisions that survive the model's error").

The packaged ensemble (``dse/data/calibration_ensemble.json``) is checked against the packaged
calibration and its coverage is recomputed from its members here, not read back; the
mechanisms (interval arithmetic, coverage, robust fronts, claim shares) are checked on small
hand-made ensembles whose answers follow by hand.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
import pytest
from study_helpers import random_dcnv2_study
from typer.testing import CliRunner

import dse
from dse.calibration.ensemble import (
    ENSEMBLE_FILE,
    CalibrationEnsemble,
    EnsembleMismatch,
    EnsembleUnavailable,
    PredictionInterval,
    coverage,
    load_ensemble,
    prediction_interval,
    range_ends,
    read_ensemble,
    write_ensemble,
)
from dse.calibration.measurements import fitted, load_measurements, measurement_design
from dse.cli import app
from dse.model.parameters import DEFAULT_RANGES, Calibration, fingerprint, load_calibration
from dse.model.placement import plan_placement
from dse.model.system import load_system
from dse.model.timing import recalibrated_loads, step_loads, step_time
from dse.model.workload import load_workload
from dse.outputs.cases.framework import CaseData, CaseStudy, Claim, Sensitivity, study_data
from dse.outputs.cases.pipeline import case_uncertainty
from dse.outputs.cases.uncertainty import claims_under_ensemble, uncertainty_lines
from dse.outputs.intervals_doc import EXAMPLES
from dse.outputs.report import render_report
from dse.search.robust_front import robust_front
from dse.search.storage.journal_writing import journal_storage
from dse.search.study.objective_sets import load_objectives
from dse.search.study.study_file import StudySpec

runner = CliRunner()
CALIB = load_calibration()


def _measured() -> dse.Evaluation:
    """DGX H100, one node, MLPerf DLRM-DCNv2: a design measured in MLPerf Training v3.x."""
    return dse.evaluate(dse.load_workload("mlperf-dlrm-dcnv2"), dse.load_system("dgx-h100"))


def _distorted(calib: Calibration, scale: float) -> Calibration:
    """``calib`` with every fitted efficiency times ``scale``: every stage but the fixed
    overheads slows down by ``1 / scale``."""
    names = ("dense_efficiency_simt", "dense_efficiency_tf32", "dense_efficiency_half",
             "memory_efficiency", "host_efficiency", "fabric_efficiency", "network_efficiency")
    return dataclasses.replace(calib, **{n: getattr(calib, n) * scale for n in names})


# --- the packaged ensemble ---------------------------------------------------------------------


def test_packaged_ensemble_belongs_to_the_packaged_calibration() -> None:
    ens = load_ensemble()
    assert ens.calibration_version == CALIB.version
    assert ens.calibration_fingerprint == fingerprint(CALIB)
    assert len(ens.members) >= 100
    ids = [m.id for m in fitted(load_measurements())]  # the excluded point is not fitted
    assert list(ens.measurement_ids) == ids
    assert len(ens.leave_one_out) == len(ens.loo_log_residuals) == len(ids)
    # Each bootstrap member was fitted on a resample of as many points as there are.
    assert all(sum(counts) == len(ids) for counts in ens.bootstrap_counts)


def test_leave_one_out_residuals_are_the_refits_errors() -> None:
    """Residual i is log(measured) - log(predicted by the fit without point i), checked on three
    points by predicting them again."""
    from dse.calibration.fit import predict_full

    ens = load_ensemble()
    measurements = fitted(load_measurements())
    for i in (0, 20, len(measurements) - 1):
        m = measurements[i]
        predicted = predict_full(m, ens.leave_one_out[i])
        assert ens.loo_log_residuals[i] == pytest.approx(math.log(m.samples_per_s / predicted), abs=1e-9)


def test_coverage_is_recomputed_from_the_members_and_lands_in_the_target() -> None:
    """Computed here from the members, the residuals and the measurements (not read back)."""
    ens = load_ensemble()
    got = coverage(ens, load_measurements())
    assert got.points == 57
    assert got == ens.coverage  # the file states what its members give
    assert 0.7 <= got.share <= 0.9, got
    # The bootstrap spread alone under-covers: why the residual term is there.
    assert got.spread_covered < got.covered
    assert got.median_spread_width_pct < got.median_width_pct


def test_coverage_by_hand_on_three_points() -> None:
    """No out-of-bag member (spread 0): point i's interval is the 10%-90% quantiles of the
    other two residuals (linear interpolation), so r = (0, 0.1, -0.5) gives [-0.44, 0.04] for
    point 0 (covered), [-0.45, -0.05] for point 1 and [0.01, 0.09] for point 2 (both not); as
    shown, an interval always holds its point, so those two become [-0.45, 0] and [0, 0.09]."""
    ms = load_measurements()[:3]
    ens = CalibrationEnsemble(CALIB.version, fingerprint(CALIB), 0, tuple(m.id for m in ms), (CALIB,),
                              ((1, 1, 1),), (CALIB, CALIB, CALIB), (0.0, 0.1, -0.5))
    got = coverage(ens, ms)
    assert (got.covered, got.points) == (1, 3)
    widths = sorted([(math.exp(0.04) - math.exp(-0.44)) * 100, (1 - math.exp(-0.45)) * 100,
                     (math.exp(0.09) - 1) * 100])
    assert got.median_width_pct == pytest.approx(widths[1])
    assert got.median_spread_width_pct == 0.0


# --- intervals ---------------------------------------------------------------------------------


def test_interval_contains_the_point_and_scales_every_derived_metric() -> None:
    ev = _measured()
    iv = prediction_interval(ev)
    assert iv is not None
    point = ev.throughput_samples_per_s
    assert iv.throughput_low < point < iv.throughput_high
    assert iv.spread_low <= point <= iv.spread_high
    # The residual term widens the band beyond the parameter spread.
    assert iv.throughput_high - iv.throughput_low > iv.spread_high - iv.spread_low
    lo, hi = iv.relative
    step = iv.of("step_time_s", ev.step_time_s)
    assert step == pytest.approx((ev.step_time_s / hi, ev.step_time_s / lo))
    usd = iv.of("usd_per_billion_samples", ev.usd_per_billion_samples)
    # Cost per sample is TCO over throughput: TCO's energy share moves with the power levels.
    share = ev.economics.energy_usd_per_year / ev.economics.tco_usd_per_year
    assert iv.tco_energy_share == pytest.approx(share) and 0.0 < share < 0.2
    tco_low, tco_high = (1 - share + share * iv.power_low), (1 - share + share * iv.power_high)
    assert usd == pytest.approx((ev.usd_per_billion_samples / hi * tco_low,
                                 ev.usd_per_billion_samples / lo * tco_high))
    assert iv.of("capex_usd", ev.cost.capex_usd) is None  # the calibration does not move capex


def test_interval_by_hand_on_a_two_member_ensemble() -> None:
    """Members: the calibration (deviation 0) and one with every efficiency halved (deviation
    log(T_half / T)); residuals (-0.1, 0.2). The band is the 10%-90% quantiles of the four sums."""
    ev = _measured()
    half = _distorted(CALIB, 0.5)
    t_half = ev.workload.global_batch / step_time(ev.workload, ev.system, ev.plan, half).step_s
    d = math.log(t_half / ev.throughput_samples_per_s)
    ens = CalibrationEnsemble(CALIB.version, fingerprint(CALIB), 0, (), (CALIB, half), ((), ()),
                              (CALIB, CALIB), (-0.1, 0.2))
    iv = prediction_interval(ev, ens)
    assert iv is not None
    lo, hi = np.quantile([-0.1, 0.2, d - 0.1, d + 0.2], [0.1, 0.9])
    point = ev.throughput_samples_per_s
    assert iv.throughput_low == pytest.approx(point * math.exp(min(lo, 0.0)))
    assert iv.throughput_high == pytest.approx(point * math.exp(max(hi, 0.0)))
    assert d < -0.5  # halving every efficiency roughly halves throughput


def test_a_band_off_the_point_is_pulled_back_to_it() -> None:
    """Log bounds both above zero (every residual says the model is slow) keep the point as the
    low end; both below keep it as the high end; the spread's own bounds follow the same rule."""
    up = PredictionInterval.around(0.8, 100.0, (0.1, 0.3), (0.05, 0.2), 3)
    assert (up.throughput_low, up.throughput_high) == pytest.approx((100.0, 100.0 * math.exp(0.3)))
    assert (up.spread_low, up.spread_high) == pytest.approx((100.0, 100.0 * math.exp(0.2)))
    down = PredictionInterval.around(0.8, 100.0, (-0.4, -0.1), (-0.2, 0.1), 3, basis="cpu_class")
    assert (down.throughput_low, down.throughput_high) == pytest.approx((100.0 * math.exp(-0.4), 100.0))
    spread = (100.0 * math.exp(-0.2), 100.0 * math.exp(0.1))
    assert (down.spread_low, down.spread_high) == pytest.approx(spread)
    assert down.basis == "cpu_class" and up.basis == "ensemble"


def test_ensemble_of_one_calibration_gives_only_the_width_of_its_ranges() -> None:
    # No spread and no residual: what is left is what the unpinned inputs do (here the skew of
    # the data's row popularity, access_zipf_spread; with it shut, nothing).
    ev = _measured()
    point = ev.throughput_samples_per_s
    iv = prediction_interval(ev, CalibrationEnsemble.single(CALIB))
    ends = range_ends(ev.workload, ev.system, ev.plan, CALIB, point)
    assert iv is not None and ends.moved == ("access_zipf 0.8-1.3",)
    assert iv.throughput_low == pytest.approx(point * math.exp(ends.low))
    assert iv.throughput_high == pytest.approx(point * math.exp(ends.high))
    shut = dataclasses.replace(CALIB, access_zipf_spread=0.0)
    none = prediction_interval(ev, CalibrationEnsemble.single(shut), shut)
    assert none is not None and none.throughput_low == none.throughput_high == point


def test_recalibrated_loads_time_the_step_as_fresh_loads_do() -> None:
    """On every measured design (one-hot and multi-hot, 1-16 nodes, weight gradients on a side
    stream or not): the retiming the ensemble uses equals a fresh timing."""
    other = _distorted(CALIB, 0.7)
    for m in load_measurements():
        wl, sysm = measurement_design(m)
        plan = plan_placement(wl, sysm)
        fresh = step_time(wl, sysm, plan, other, step_loads(wl, sysm, plan, other))
        reused = step_time(wl, sysm, plan, other,
                           recalibrated_loads(step_loads(wl, sysm, plan, CALIB), wl, sysm, other))
        assert reused == fresh, m.id


# --- error paths -------------------------------------------------------------------------------


def _packaged_copy(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    path = tmp_path / ENSEMBLE_FILE
    write_ensemble(load_ensemble(), path)
    return path, json.loads(path.read_text())


def test_mismatched_version_is_refused_in_one_line(tmp_path: Path) -> None:
    path, data = _packaged_copy(tmp_path)
    data["calibration_version"] = "2026.12-0"
    path.write_text(json.dumps(data))
    with pytest.raises(EnsembleMismatch, match=r"built for calibration 2026\.12-0") as err:
        load_ensemble(path)
    assert "\n" not in str(err.value) and "dse calibrate --ensemble" in str(err.value)


def test_refit_with_the_same_version_label_is_refused() -> None:
    moved = dataclasses.replace(CALIB, fabric_efficiency=CALIB.fabric_efficiency * 0.99)
    with pytest.raises(EnsembleMismatch, match="refitted since"):
        load_ensemble(calibration=moved)


def test_other_parameter_names_are_a_mismatch(tmp_path: Path) -> None:
    path, data = _packaged_copy(tmp_path)
    members = data["bootstrap"]
    assert isinstance(members, list)
    members[0]["scaleout_efficiency"] = 0.9
    path.write_text(json.dumps(data))
    with pytest.raises(EnsembleMismatch, match=r"bootstrap\[0\].scaleout_efficiency: unknown key"):
        read_ensemble(path)


@pytest.mark.parametrize(("text", "message"), [
    (None, "file not found"),
    ("{not json", "not JSON"),
    ('{"calibration_version": "x"}', "bootstrap: required key is missing"),
])
def test_missing_or_malformed_ensemble_file(tmp_path: Path, text: str | None, message: str) -> None:
    path = tmp_path / "e.json"
    if text is not None:
        path.write_text(text)
    with pytest.raises(EnsembleUnavailable, match=message):
        load_ensemble(path)


def test_evaluation_scored_with_another_calibration_gets_no_interval() -> None:
    ev = dataclasses.replace(_measured(), calibration_version="prior")
    with pytest.raises(EnsembleMismatch, match="scored with calibration prior"):
        prediction_interval(ev)


# --- dse evaluate ------------------------------------------------------------------------------

DCNV2_16 = ["evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-dcnv2", "--set", "nodes=16"]


def test_evaluate_json_has_the_interval_keys() -> None:
    result = runner.invoke(app, [*DCNV2_16, "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    lo, hi = out["throughput_interval_samples_per_s"]
    assert lo < out["throughput_samples_per_s"] < hi
    slo, shi = out["step_time_interval_s"]
    assert slo < out["step_time_s"] < shi
    assert slo * hi == pytest.approx(out["step_time_s"] * out["throughput_samples_per_s"])
    assert out["metric_intervals"]["usd_per_billion_samples"][0] < out["usd_per_billion_samples"]
    # TCO moves with the power levels' ranges through its energy share, not with throughput.
    tlo, thi = out["metric_intervals"]["tco_usd_per_year"]
    assert tlo < out["tco_usd_per_year"] < thi and thi / tlo < 1.1
    assert out["interval_level"] == 0.8 and out["interval_members"] >= 100


def test_evaluate_text_shows_intervals() -> None:
    result = runner.invoke(app, DCNV2_16, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "(80%: " in result.stdout
    assert "interval: 80% prediction interval" in result.stdout


def test_evaluate_with_a_mismatched_ensemble_shows_no_interval(tmp_path: Path) -> None:
    path, data = _packaged_copy(tmp_path)
    data["calibration_version"] = "2026.12-0"
    path.write_text(json.dumps(data))
    result = runner.invoke(app, [*DCNV2_16, "--json", "--ensemble", str(path)])
    assert result.exit_code == 0
    out = json.loads(result.stdout)
    assert out["throughput_interval_samples_per_s"] is None and out["step_time_interval_s"] is None
    assert "built for calibration 2026.12-0" in out["interval_note"]
    text = runner.invoke(app, [*DCNV2_16, "--ensemble", str(tmp_path / "missing.json")])
    assert text.exit_code == 0
    assert "(80%: " not in text.stdout
    assert "file not found" in text.stderr


# --- robust fronts -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_study(tmp_path_factory: pytest.TempPathFactory) -> tuple[optuna.Study, StudySpec]:
    return random_dcnv2_study(tmp_path_factory.mktemp("robust"), "robust", budget=120, seed=5)


def test_robust_front_is_a_subset_of_the_front(small_study: tuple[optuna.Study, StudySpec]) -> None:
    study, spec = small_study
    result = robust_front(study, spec, load_objectives(spec.objectives))
    front = {t.number for t in study.best_trials}
    listed = {n for d in result.designs for n in d.trials}
    assert listed <= front
    assert {d.trial for d in result.robust} <= {d.trial for d in result.designs}
    assert all(0.0 <= d.probability <= 1.0 for d in result.designs)
    assert result.members >= 100 and result.candidates >= len(result.designs)
    for d in result.designs:
        for (metric, _), value, span in zip(result.objectives, d.values, d.intervals, strict=True):
            if metric in ("throughput_samples_per_s", "power_w"):
                # Throughput moves with the calibration, power with the power levels' ranges.
                assert span is not None and span[0] <= value <= span[1]
            else:
                assert span is None  # capex depends on neither
    # The power objective moves under each member's drawn power levels too (dse.model.power).
    assert "power levels drawn within their ranges under each member (dse.model.power)" in result.notes


def test_robust_front_of_cpu_nodes_takes_the_cpu_class_intervals(tmp_path: Path) -> None:
    """Designs without accelerators on a front get the interval ``dse evaluate`` gives them (the
    CPU class's leave-one-out errors), not the accelerator ensemble's."""
    from dse.calibration.ensemble import cpu_prediction_interval
    from dse.search.runner import run_study

    space = tmp_path / "cpu.toml"
    space.write_text('name = "cpu"\nbase_system = "dual-socket-cpu"\n'
                     '[parameters."nodes"]\ntype = "int"\nlow = 1\nhigh = 6\n', encoding="utf-8")
    spec = StudySpec(name="cpu", workload="mlperf-dlrm-v1", space=str(space),
                     objectives="throughput-vs-capex", budget=6, sampler="random", seed=1,
                     storage=str(tmp_path / "cpu.journal"), prescreen_s=0.0)
    run_study(spec)
    study = optuna.load_study(study_name="cpu", storage=journal_storage(tmp_path / "cpu.journal"))
    result = robust_front(study, spec, load_objectives(spec.objectives))
    assert result.designs
    wl = load_workload("mlperf-dlrm-v1")
    for d in result.designs:
        assert d.throughput is not None and d.throughput.basis == "cpu_class"
        ev = dse.evaluate(wl, load_system("dual-socket-cpu", (("nodes", d.design["nodes"]),)), CALIB)
        direct = cpu_prediction_interval(ev, CALIB)
        assert direct is not None
        assert d.throughput.relative == pytest.approx(direct.relative)


def test_ensemble_of_one_keeps_every_front_design(small_study: tuple[optuna.Study, StudySpec]) -> None:
    study, spec = small_study
    # One calibration and no uncertainty: the unpinned parameters' ranges shut to their values too.
    shut = dataclasses.replace(CALIB, ranges={n: (getattr(CALIB, n),) * 2 for n in DEFAULT_RANGES},
                               access_zipf_spread=0.0)
    result = robust_front(study, spec, load_objectives(spec.objectives), CalibrationEnsemble.single(shut),
                          shut)
    assert result.designs and all(d.probability == 1.0 for d in result.designs)
    assert len(result.robust) == len(result.designs)
    for d in result.designs:
        assert all(span is None or span[0] == span[1] for span in d.intervals)
    # With the ranges open, a design that keeps tables in host memory spans its range's ends.
    opened = robust_front(study, spec, load_objectives(spec.objectives), CalibrationEnsemble.single(CALIB))
    assert any(span is not None and span[0] < span[1] for d in opened.designs for span in d.intervals)


def test_a_slower_member_drops_designs_it_slows_most(small_study: tuple[optuna.Study, StudySpec]) -> None:
    """Two members, the calibration and one at half the efficiencies: a design is on the front
    under both or under one, so every probability is 1 or 0.5."""
    study, spec = small_study
    ens = CalibrationEnsemble(CALIB.version, fingerprint(CALIB), 0, (), (CALIB, _distorted(CALIB, 0.5)),
                              ((), ()), (), ())
    result = robust_front(study, spec, load_objectives(spec.objectives), ens)
    assert {d.probability for d in result.designs} <= {0.5, 1.0}


def test_study_of_another_calibration_is_refused(tmp_path: Path,
                                                 small_study: tuple[optuna.Study, StudySpec]) -> None:
    study, spec = small_study
    other = dataclasses.replace(CALIB, version="2026.12-0")
    ens = CalibrationEnsemble.single(other)
    with pytest.raises(EnsembleMismatch, match=f"scored with calibration {re.escape(CALIB.version)}"):
        robust_front(study, spec, load_objectives(spec.objectives), ens, other)


def test_pareto_robust_cli(tmp_path: Path, small_study: tuple[optuna.Study, StudySpec]) -> None:
    _, spec = small_study
    study_file = tmp_path / "robust.toml"
    study_file.write_text(
        f'name = "robust"\nworkload = "mlperf-dlrm-dcnv2"\nspace = "full"\n'
        f'objectives = "throughput-capex-power"\nbudget = 120\nsampler = "random"\nseed = 5\n'
        f'storage = "{spec.storage}"\n')
    out = runner.invoke(app, ["pareto", str(study_file), "--robust", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert set(data["robust_front"]) <= {row["trial"] for row in data["front"]}
    row = data["front"][0]
    assert row["throughput_samples_per_s_low"] <= row["throughput_samples_per_s"]
    assert 0 <= row["probability_on_front"] <= 1
    csv = tmp_path / "robust.csv"
    assert runner.invoke(app, ["pareto", str(study_file), "--robust", "--csv", str(csv)]).exit_code == 0
    assert len(pd.read_csv(csv)) == len(data["front"])
    table = runner.invoke(app, ["pareto", str(study_file), "--robust"])
    assert table.exit_code == 0 and "robust front:" in table.stdout


def test_report_has_the_robust_section(small_study: tuple[optuna.Study, StudySpec]) -> None:
    study, spec = small_study
    page = render_report(study, spec, load_objectives(spec.objectives))
    assert "the front under the model's error" in page
    assert "id=\"robust-front\"" in page or "id='robust-front'" in page
    assert "<table id='robust-front'>" in page


# --- case-study claims -------------------------------------------------------------------------


def _capex_case(bound: float) -> CaseStudy[float]:
    """A case whose finding is the cheapest feasible capex and whose claims compare it with
    ``bound`` times the catalogued cheapest, and a throughput claim."""

    def analyse(data: CaseData) -> float:
        return float(data.feasible()["capex_usd"].min())

    claims = (Claim("cheap <= 1.3 x", lambda f: f <= 1.3 * bound),
              Claim("cheap <= 0.7 x", lambda f: f <= 0.7 * bound))
    return CaseStudy("t", "t", "t", "q", analyse, claims, lambda f: "",
                     Sensitivity("prices", lambda c, s: c))


def test_claim_shares_under_one_calibration_and_price_draws(
        small_study: tuple[optuna.Study, StudySpec]) -> None:
    """Prices move by at most ±30% and nothing else in capex moves up, so the cheapest capex stays
    within [0.7, 1.3] of today's and strictly above 0.7 x (only some parts are priced by the draw):
    the first claim holds under every draw and the second under none."""
    study, spec = small_study
    data = study_data(spec, study)
    case = _capex_case(float(data.feasible()["capex_usd"].min()))
    shares = claims_under_ensemble(case, data, CalibrationEnsemble.single(CALIB), draws=4)
    assert [(s.calibrations, s.joint, s.draws) for s in shares] == [(1.0, 1.0, 4), (0.0, 0.0, 4)]
    lines = uncertainty_lines(shares)
    assert "| cheap <= 1.3 x | 100% | 100% |" in lines
    assert uncertainty_lines((), "no ensemble")[-2] == "Not checked: no ensemble"


def test_claim_share_counts_the_calibrations_it_holds_under(
        small_study: tuple[optuna.Study, StudySpec]) -> None:
    study, spec = small_study
    data = study_data(spec, study)
    best = float(data.feasible()["throughput_samples_per_s"].max())
    case = CaseStudy("t", "t", "t", "q", lambda d: float(d.feasible()["throughput_samples_per_s"].max()),
                     (Claim("fast", lambda f: f >= 0.9 * best),), lambda f: "",
                     Sensitivity("prices", lambda c, s: c))
    ens = CalibrationEnsemble(CALIB.version, fingerprint(CALIB), 0, (), (CALIB, _distorted(CALIB, 0.5)),
                              ((), ()), (), ())
    (share,) = claims_under_ensemble(case, data, ens, draws=4)
    assert share.calibrations == 0.5  # members alternate: holds under the calibration only
    assert share.joint == 0.5  # prices do not move throughput


def test_case_uncertainty_says_why_without_an_ensemble(small_study: tuple[optuna.Study, StudySpec]) -> None:
    study, spec = small_study
    data = study_data(spec, study)
    case = _capex_case(1.0)
    other = dataclasses.replace(data, calibration=dataclasses.replace(CALIB, version="2026.12-0"))
    shares, note = case_uncertainty(case, other, draws=2)
    assert shares == () and f"built for calibration {CALIB.version}" in note


# --- dse validate ------------------------------------------------------------------------------


def test_validate_reports_the_intervals_coverage(tmp_path: Path) -> None:
    doc = tmp_path / "validation.md"
    result = runner.invoke(app, ["validate", "--no-loo", "--json", "--markdown", str(doc)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["intervals"]
    expected = coverage(load_ensemble(), load_measurements())
    assert (summary["covered"], summary["points"]) == (expected.covered, expected.points)
    assert len(summary["examples"]) == len(EXAMPLES)
    assert [(c["axis"], c["class"], c["covered"]) for c in summary["class_coverage"]] == [
        (c.axis, c.value, c.covered) for c in load_ensemble().class_coverage]
    for example in summary["examples"]:
        low, high = example["interval"]
        assert low <= example["predicted"] <= high
        assert low <= example["spread"][0] and example["spread"][1] <= high
    text = doc.read_text()
    assert "## Prediction intervals" in text
    assert f"{expected.covered} of {expected.points} measured values inside" in text
    assert "### Outside the measured regime" in text


def test_retimings_are_cached_and_read_back_only_in_their_context(
        tmp_path: Path, small_study: tuple[optuna.Study, StudySpec]) -> None:
    """A robust front made with the cache equals one made without it, before and after the cache
    is filled; a cache of another ensemble, or a damaged one, is not read (and is rewritten)."""
    study, spec = small_study
    objectives = load_objectives(spec.objectives)
    cache = tmp_path / "robust.journal.retiming"
    plain = robust_front(study, spec, objectives)
    first = robust_front(study, spec, objectives, cache=cache)
    stored = json.loads(cache.read_text(encoding="utf-8"))
    assert len(stored["designs"]) == plain.candidates
    again = robust_front(study, spec, objectives, cache=cache)
    assert plain == first == again
    # A cached value is what is used: doctored, it shows (so the second read did read it).
    key = next(iter(stored["designs"]))
    stored["designs"][key][1] = [0.0] * len(stored["designs"][key][1])
    cache.write_text(json.dumps(stored), encoding="utf-8")
    doctored = robust_front(study, spec, objectives, cache=cache)
    assert doctored != plain
    # Another ensemble (one member) is another context: the cache is not read, then replaced.
    single = robust_front(study, spec, objectives, CalibrationEnsemble.single(CALIB), cache=cache)
    assert single == robust_front(study, spec, objectives, CalibrationEnsemble.single(CALIB))
    assert json.loads(cache.read_text(encoding="utf-8"))["context"] != stored["context"]
    cache.write_text("{not json", encoding="utf-8")
    assert robust_front(study, spec, objectives, cache=cache) == plain
