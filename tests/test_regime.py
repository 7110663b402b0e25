"""Intervals that widen outside the measured regime (issue 27 item 6): which designs lie outside,
how their intervals are built, and the leave-one-class-out coverage that judges the rule."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import dse
from dse.calibration.ensemble import (
    CalibrationEnsemble,
    ClassHoldout,
    EnsembleUnavailable,
    class_coverage_of,
    class_coverages,
    holdout_classes,
    interval_of_spread,
    load_ensemble,
    log_throughputs,
    prediction_interval,
    range_ends,
    read_ensemble,
    write_ensemble,
)
from dse.calibration.fit import fit, predict_full
from dse.calibration.measurements import fitted, load_measurements
from dse.calibration.regime import DesignClass, Regime, design_class, measurement_class
from dse.cli import app
from dse.model.parameters import fingerprint, load_calibration
from dse.model.system import SoftwareSpec
from dse.outputs.robust_page import robust_section
from dse.search.robust_front import RobustDesign, RobustFront

CALIB = load_calibration()
runner = CliRunner()


def _ev(workload: str, system: str, overrides: tuple[tuple[str, object], ...] = ()) -> dse.Evaluation:
    return dse.evaluate(dse.load_workload(workload), dse.load_system(system, overrides))


def _spread(ev: dse.Evaluation, ens: CalibrationEnsemble) -> np.ndarray:
    logs = log_throughputs(ev.workload, ev.system, ev.plan, ens.members)
    return logs - math.log(ev.throughput_samples_per_s)


# --- the rule -----------------------------------------------------------------------------------


def test_packaged_regime_is_what_the_measurements_span() -> None:
    ens = load_ensemble()
    assert ens.regime == Regime(("hbm",), ("nvidia",), ("ada", "ampere", "hopper", "volta"),
                                ("hugectr-2020", "hugectr-2021", "hugectr-2022", "hugectr-2022.11",
                                 "hugectr-2023.04", "hugectr-2023.09", "pytorch-2021",
                                 "tensorflow-2023"))
    # Every measured point is inside: the rule never widens a measured design.
    assert all(ens.outside(measurement_class(m)) == () for m in load_measurements())


def test_dgx_h100_is_inside_and_keeps_its_leave_one_out_interval() -> None:
    ens = load_ensemble()
    ev = _ev("mlperf-dlrm-dcnv2", "dgx-h100")
    iv = prediction_interval(ev, ens)
    assert iv is not None and iv.outside == ()
    plain = interval_of_spread(ev.throughput_samples_per_s, _spread(ev, ens), ens)
    assert plain is not None
    assert (iv.throughput_low, iv.throughput_high) == (plain.throughput_low, plain.throughput_high)


@pytest.mark.parametrize(("workload", "system", "reasons"), [
    ("mlperf-dlrm-dcnv2", "mi355x-x8", ("vendor: amd", "architecture: cdna4")),
    ("mlperf-dlrm-dcnv2", "gaudi3-x8", ("vendor: intel", "architecture: gaudi3")),
    ("zion-2019", "dgx-h100", ("placement: tables in host memory",)),
])
def test_rule_widens_outside_the_measured_regime(workload: str, system: str,
                                                 reasons: tuple[str, ...]) -> None:
    """Each bound is the further of the 10%-90% quantiles of (member deviation + r) over every
    member and every r of the leave-one-class-out residuals of the axes the design is outside on
    (every holdout's when those axes have none) with both signs, and of the
    same with the leave-one-out residuals: never narrower than inside the regime, and wider on
    at least one side."""
    ens = load_ensemble()
    ev = _ev(workload, system)
    iv = prediction_interval(ev, ens)
    assert iv is not None
    assert len(iv.outside) == len(reasons)
    assert all(got.startswith(want) for got, want in zip(iv.outside, reasons, strict=True))
    spread = _spread(ev, ens)
    # The holdouts of the axes the design is outside on; placement and vendor have none (one
    # measured class each), so an AMD or Intel part takes the architecture holdouts (the
    # leave-one-generation-out errors) and tables in host memory take every holdout.
    axes = {"architecture"} if system != "dgx-h100" else {h.axis for h in ens.holdouts}
    pooled = np.array([r for h in ens.holdouts if h.axis in axes for r in h.log_residuals])
    loo = np.array(ens.loo_log_residuals)
    lo, hi = np.quantile((spread[:, None] + np.concatenate([pooled, -pooled])[None, :]).ravel(), [0.1, 0.9])
    ilo, ihi = np.quantile((spread[:, None] + loo[None, :]).ravel(), [0.1, 0.9])
    lo, hi = min(lo, ilo), max(hi, ihi)
    point = ev.throughput_samples_per_s
    # ... and never narrower than the predictions at the ends of the unpinned parameters' ranges
    # (host_efficiency, for the design with tables in host memory; no change for the others).
    calib = load_calibration()
    ends = range_ends(ev.workload, ev.system, ev.plan, calib, point)
    no_skew = dataclasses.replace(calib, access_zipf_spread=0.0)
    host = range_ends(ev.workload, ev.system, ev.plan, no_skew, point)
    assert (host.low < 0.0) == (workload == "zion-2019")  # host_efficiency's range
    assert ends.low < 0.0 < ends.high  # the skew of every Criteo-like workload
    lo, hi = min(lo, ends.low), max(hi, ends.high)
    assert iv.throughput_low == pytest.approx(point * math.exp(min(lo, 0.0)))
    assert iv.throughput_high == pytest.approx(point * math.exp(max(hi, 0.0)))
    inside = interval_of_spread(point, spread, ens)
    assert inside is not None
    assert iv.throughput_low <= inside.throughput_low and iv.throughput_high >= inside.throughput_high
    assert (iv.throughput_low, iv.throughput_high) != (inside.throughput_low, inside.throughput_high)


def test_software_layout_of_no_measured_family_is_outside() -> None:
    ens = load_ensemble()
    assert ens.regime is not None
    ev = _ev("mlperf-dlrm-dcnv2", "dgx-h100")
    measured = design_class(ev.system, ev.plan)
    # DeepLearningExamples PyTorch's layout was measured; the bottom MLP on one device with
    # hot-row replication on was not.
    pytorch = dataclasses.replace(SoftwareSpec(), hot_embedding_replication=False,
                                  replicate_small_tables=False, split_tables_to_balance=False,
                                  overlap_weight_gradients=False, bottom_mlp_on_one_device=True)
    assert ens.regime.outside(dataclasses.replace(measured, layout=pytorch)) == ()
    odd = dataclasses.replace(SoftwareSpec(), bottom_mlp_on_one_device=True)
    assert ens.regime.outside(dataclasses.replace(measured, layout=odd)) == (
        "software: a [software] layout no measured software family used",)


def test_ensemble_without_a_regime_never_widens(tmp_path: Path) -> None:
    """A file written before the regime was recorded loads, and its intervals are the plain ones."""
    path = tmp_path / "old.json"
    write_ensemble(load_ensemble(), path)
    data = json.loads(path.read_text())
    for key in ("regime", "class_holdouts", "class_coverage"):
        del data[key]
    path.write_text(json.dumps(data))
    old = read_ensemble(path)
    assert old.regime is None and old.holdouts == ()
    iv = prediction_interval(_ev("mlperf-dlrm-dcnv2", "mi355x-x8"), old)
    assert iv is not None and iv.outside == ()


def test_malformed_regime_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    write_ensemble(load_ensemble(), path)
    data = json.loads(path.read_text())
    data["regime"] = {"vendor": ["nvidia"]}
    path.write_text(json.dumps(data))
    with pytest.raises(EnsembleUnavailable, match="regime needs exactly the keys") as err:
        read_ensemble(path)
    assert "\n" not in str(err.value)


# --- leave-one-class-out -----------------------------------------------------------------------


def _cls(placement: str, vendor: str, arch: str, software: str) -> DesignClass:
    return DesignClass(placement, vendor, arch, software)


def test_holdout_classes_skip_single_class_axes_and_the_reference_family() -> None:
    classes = [_cls("hbm", "nvidia", "ampere", "hugectr-2022"),
               _cls("hbm", "nvidia", "hopper", "pytorch-2021"),
               _cls("hbm", "nvidia", "ampere", "pytorch-2021")]
    assert holdout_classes(classes) == [("architecture", "ampere", (0, 2)), ("architecture", "hopper", (1,)),
                                        ("software", "pytorch-2021", (1, 2))]


def test_class_coverage_by_hand() -> None:
    """Holdouts A (a1 0.1, a2 -0.3), B (b1 0.2, b2 -0.05), C (c1 0.5) on one axis and D (a1 0.9)
    on another; spreads 0. A class's pool is every residual of points outside it on its own axis
    (the interval a design outside on that axis gets), both signs, or of every axis when its own
    has no other class:
    A: {±0.2, ±0.05, ±0.5} -> 10%/90% quantiles ±0.35, both covered;
    B: {±0.1, ±0.3, ±0.5} -> ±0.4, both covered;
    C: {±0.1, ±0.3, ±0.2, ±0.05} -> ±0.23, 0.5 not covered;
    D: alone on its axis, so every axis, a1 excluded: {±0.3, ±0.2, ±0.05, ±0.5} -> ±0.36, 0.9
    not covered."""
    holdouts = (ClassHoldout("architecture", "A", ("a1", "a2"), (0.1, -0.3)),
                ClassHoldout("architecture", "B", ("b1", "b2"), (0.2, -0.05)),
                ClassHoldout("architecture", "C", ("c1",), (0.5,)),
                ClassHoldout("software", "D", ("a1",), (0.9,)))
    ens = dataclasses.replace(CalibrationEnsemble.single(CALIB), holdouts=holdouts)
    got = [class_coverage_of(h, ens, {}) for h in holdouts]
    assert [(c.covered, c.points) for c in got] == [(2, 2), (2, 2), (0, 1), (0, 1)]
    for c, q in zip(got, (0.35, 0.4, 0.23, 0.36), strict=True):
        assert c.median_width_pct == pytest.approx((math.exp(q) - math.exp(-q)) * 100)
    # A spread shifts the band: with every member 0.3 above, B's band is [-0.1, 0.7] and b2
    # (-0.05) stays inside while A's becomes [-0.05, 0.65], leaving a2 (-0.3) out.
    shifted = {i: np.array([0.3]) for i in ("a1", "a2", "b1", "b2")}
    assert class_coverage_of(holdouts[0], ens, shifted).covered == 1
    assert class_coverage_of(holdouts[1], ens, shifted).covered == 2


@pytest.mark.slow
def test_packaged_class_coverage_is_recomputed_and_the_holdouts_are_refits() -> None:
    """The file states what its holdouts give; the Ada holdout's residuals are the errors of a
    refit without the two L40/L40S points (refitted here), over the fitted points (the state-change
    rule's exclusions are out of every refit)."""
    ens = load_ensemble()
    ms = fitted(load_measurements())
    assert class_coverages(ens, ms, CALIB) == ens.class_coverage
    axes = {c.axis for c in ens.class_coverage}
    assert axes == {"architecture", "software"}
    ada = next(h for h in ens.holdouts if h.value == "ada")
    assert set(ada.measurement_ids) == {"mlperf-v3.1-xfusion-g5500v7x8l40",
                                        "mlperf-v3.1-xfusion-g5500v7x8xl40s"}
    refit = fit([m for m in ms if m.id not in ada.measurement_ids], CALIB, max_iter=60).calibration
    by_id = {m.id: m for m in ms}
    for mid, r in zip(ada.measurement_ids, ada.log_residuals, strict=True):
        predicted = predict_full(by_id[mid], refit)
        assert r == pytest.approx(math.log(by_id[mid].samples_per_s / predicted), abs=1e-6)
    assert ens.calibration_fingerprint == fingerprint(CALIB)


# --- where it is said ---------------------------------------------------------------------------


def test_evaluate_json_and_text_say_outside() -> None:
    inside = runner.invoke(app, ["evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-dcnv2", "--json"])
    assert inside.exit_code == 0, inside.output
    assert json.loads(inside.stdout)["outside_measured_regime"] == []
    out = runner.invoke(app, ["evaluate", "-s", "mi355x-x8", "-w", "mlperf-dlrm-dcnv2", "--json"])
    reasons = json.loads(out.stdout)["outside_measured_regime"]
    assert [r.split(":")[0] for r in reasons] == ["vendor", "architecture"]
    text = runner.invoke(app, ["evaluate", "-s", "gaudi3-x8", "-w", "mlperf-dlrm-dcnv2"],
                         env={"COLUMNS": "200"})
    assert "outside the measured regime: vendor: intel accelerators were never measured" in text.stdout
    assert "leave-one-class-out errors" in text.stdout


def test_report_robust_table_says_outside() -> None:
    ens = load_ensemble()
    ev = _ev("mlperf-dlrm-dcnv2", "mi355x-x8")
    iv = prediction_interval(ev, ens)
    assert iv is not None
    span = iv.of("throughput_samples_per_s", ev.throughput_samples_per_s)
    design = RobustDesign((3,), {"nodes": 1}, (ev.throughput_samples_per_s,), (span,), 1.0, iv)
    front = RobustFront((("throughput_samples_per_s", "maximize"),), (design,), (), 100, 1,
                        CALIB.version, 0.8, 0.8, ())
    html = robust_section(front)
    assert "outside the measured regime: vendor: amd accelerators were never measured" in html


@pytest.mark.parametrize(("cpu", "widened"), [("xeon-8480p", False), ("xeon-8168", True)])
def test_cpu_node_interval_comes_from_the_cpu_class(cpu: str, widened: bool) -> None:
    """A node without accelerators is fitted apart: its interval is the 10%-90% quantiles of the
    CPU class's leave-one-out log residuals, not the accelerator ensemble's; a CPU the class never
    ran on takes the class's largest residual on each side and says why."""
    from dse.calibration.cpu import cpu_loo_log_residuals

    ev = _ev("mlperf-dlrm-v1", "dual-socket-cpu", (("node.cpu", cpu),))
    iv = prediction_interval(ev, load_ensemble())
    assert iv is not None and iv.basis == "cpu_class"
    assert iv.to_dict(ev.step_time_s)["interval_basis"] == "cpu_class"
    r = np.array(cpu_loo_log_residuals(load_calibration()))
    assert len(r) == 10
    lo, hi = np.quantile(r, [0.1, 0.9])
    if widened:
        lo, hi = min(lo, r.min()), max(hi, r.max())
        assert len(iv.outside) == 1 and iv.outside[0].startswith(f"cpu: {cpu} was never measured")
    else:
        assert iv.outside == ()
    point = ev.throughput_samples_per_s
    assert iv.throughput_low == pytest.approx(point * np.exp(min(lo, 0.0)), rel=1e-12)
    assert iv.throughput_high == pytest.approx(point * np.exp(max(hi, 0.0)), rel=1e-12)
