"""The calibration's robust loss (issue 13, accuracy): Huber's M-estimator by iteratively
reweighted least squares (``dse.calibration.fit.irls``), checked on problems whose answers follow
by hand, and the one code path every refit (forward, leave-one-out, the ensemble) goes through.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from typer.testing import CliRunner

from dse.calibration.ensemble import LOO_MAX_ITERATIONS, build_ensemble
from dse.calibration.fit import (
    FIT_LOSS,
    HUBER_K,
    LOSSES,
    MAD_TO_SIGMA,
    fit,
    huber_weights,
    irls,
    loss_of,
    loss_record,
    validate,
)
from dse.calibration.measurements import load_measurements
from dse.cli import app
from dse.model.parameters import Calibration, load_calibration

runner = CliRunner()


def test_huber_weights_by_hand() -> None:
    # r = (-1, 0, 1, 2, 10): median 1, |r - 1| = (2, 1, 0, 1, 9), median 1, so s = 1.4826 and
    # k s = 1.345 * 1.4826 = 1.99410; |r| <= k s keeps weight 1, beyond it k s / |r|.
    w = huber_weights(np.array([-1.0, 0.0, 1.0, 2.0, 10.0]))
    ks = HUBER_K * MAD_TO_SIGMA
    assert ks == pytest.approx(1.994097, rel=1e-6)
    assert w == pytest.approx([1.0, 1.0, 1.0, ks / 2.0, ks / 10.0])
    assert w[3] == pytest.approx(0.99705, abs=1e-5) and w[4] == pytest.approx(0.19941, abs=1e-5)
    # No spread (more than half the residuals equal): nothing to call an outlier by.
    assert huber_weights(np.array([0.0, 0.0, 0.0, 5.0])) == pytest.approx([1.0] * 4)


def _line_problem() -> tuple[np.ndarray, np.ndarray, int]:
    """y = 1 + 2 x at x = 0..9 with a deterministic +-0.1 wobble, and one gross outlier (+20 at
    x = 9)."""
    x = np.arange(10.0)
    y = 1.0 + 2.0 * x + 0.1 * np.array([1, -1, 1, -1, 1, -1, 1, -1, 1, -1])
    outlier = 9
    y[outlier] += 20.0
    return x, y, outlier


def test_irls_on_a_line_with_one_gross_outlier() -> None:
    x, y, outlier = _line_problem()
    clean = np.delete(np.arange(10), outlier)
    # The clean fit: ordinary least squares without the outlier (numpy's lstsq).
    design = np.column_stack([np.ones(10), x])
    clean_ab = np.linalg.lstsq(design[clean], y[clean], rcond=None)[0]
    squares_ab = np.linalg.lstsq(design, y, rcond=None)[0]

    def residuals(z: np.ndarray) -> np.ndarray:
        out: np.ndarray = z[0] + z[1] * x - y
        return out

    z_sq, w_sq, _ = irls(residuals, np.zeros(2), "squares")
    z_hu, w_hu, _ = irls(residuals, np.zeros(2), "huber")
    # Squares is ordinary least squares, pulled by the outlier: against the same ten points
    # without the +20, OLS moves the slope by 20 (x_9 - mean x) / sum (x - mean x)^2
    # = 20 * 4.5 / 82.5 = 1.09 and the intercept by 20 (1/10 - 4.5 * 4.5 / 82.5) = -2.91.
    without = y.copy()
    without[outlier] -= 20.0
    base_ab = np.linalg.lstsq(design, without, rcond=None)[0]
    assert z_sq == pytest.approx(squares_ab, abs=1e-6)
    assert z_sq - base_ab == pytest.approx([20 * (0.1 - 4.5 * 4.5 / 82.5), 20 * 4.5 / 82.5], abs=1e-6)
    assert np.all(w_sq == 1.0)
    # Huber's estimate stays near the clean fit: within 0.06 in intercept and 0.03 in slope,
    # where squares is off by more than 2 and 1.
    assert abs(z_hu[0] - clean_ab[0]) < 0.06 and abs(z_hu[1] - clean_ab[1]) < 0.03
    assert abs(z_sq[0] - clean_ab[0]) > 2.0 and abs(z_sq[1] - clean_ab[1]) > 1.0
    # What is left of the pull is bounded, as Huber's estimating equation says: the estimate is
    # ordinary least squares with the outlier replaced by its fitted value plus k s (its psi).
    r = residuals(z_hu)
    ks = HUBER_K * MAD_TO_SIGMA * float(np.median(np.abs(r - np.median(r))))
    pseudo = y.copy()
    pseudo[outlier] = z_hu[0] + z_hu[1] * x[outlier] + ks
    assert z_hu == pytest.approx(np.linalg.lstsq(design, pseudo, rcond=None)[0], abs=2e-3)
    # The clean points keep weight 1 (their residuals, about 0.1, are inside k s with s about
    # 1.4826 * 0.1); the outlier's weight is k s / 20, about 0.01.
    assert w_hu[clean] == pytest.approx([1.0] * 9)
    assert 0.0 < w_hu[outlier] < 0.02


def test_losses_and_their_record() -> None:
    assert set(LOSSES) == {"huber", "squares"} and FIT_LOSS in LOSSES
    assert loss_record("huber") == {"huber_k": HUBER_K} and loss_record("squares") == {}
    fitted = Calibration(fit={"points": 58.0})
    assert loss_of(dataclasses.replace(fitted, fit={**fitted.fit, **loss_record("huber")})) == "huber"
    assert loss_of(fitted) == "squares"  # fitted before the loss was recorded: squares
    assert loss_of(Calibration()) == FIT_LOSS  # never fitted
    assert loss_of(load_calibration()) == FIT_LOSS  # the packaged calibration uses the default


def test_ensemble_refits_with_the_calibrations_loss() -> None:
    """A leave-one-out member of the ensemble is the refit :func:`fit` gives with the loss the
    calibration records (Huber's), not with squares."""
    # Five DCNv2 points and the one the state-change rule excludes from the packaged fit: here its
    # 3.6x residual is what makes Huber's refit differ from squares' (the five alone fit exactly).
    dcn = [m for m in load_measurements() if m.workload == "mlperf-dlrm-dcnv2"]
    ms = dcn[:5] + [m for m in dcn if m.excluded]
    calib = dataclasses.replace(load_calibration(), fit={"points": 6.0, **loss_record("huber")})
    ens = build_ensemble(ms, calib, members=1, seed=0)
    rest = ms[1:]
    huber = fit(rest, calib, max_iter=LOO_MAX_ITERATIONS, loss="huber").calibration
    squares = fit(rest, calib, max_iter=LOO_MAX_ITERATIONS, loss="squares").calibration
    member = ens.leave_one_out[0]
    assert member.memory_efficiency == pytest.approx(huber.memory_efficiency, rel=1e-9)
    assert member.software_factor == pytest.approx(huber.software_factor, rel=1e-9)
    assert abs(huber.memory_efficiency - squares.memory_efficiency) > 1e-6 or \
        huber.software_factor != pytest.approx(squares.software_factor, rel=1e-6)


def test_validation_reports_the_loss_and_the_weights() -> None:
    ms = load_measurements()
    report = validate(ms, load_calibration(), leave_one_out=False)
    assert report.loss == FIT_LOSS
    data = report.to_dict()
    assert data["loss"] == FIT_LOSS
    assert len(report.weights) == len([m for m in ms if not m.excluded])
    assert all(0.0 < w <= 1.0 for w in report.weights)
    listed = {d["id"]: d["weight"] for d in data["downweighted"]}
    assert listed == {p["id"]: p["fit_weight"] for p in data["points"] if p["fit_weight"] < 1}
    if FIT_LOSS == "squares":
        assert all(w == 1.0 for w in report.weights) and data["downweighted"] == []
    # Under Huber's loss each fitted point weighs min(1, k s / |r|) of its residual; the point
    # whose machine changed state mid-run is excluded by rule, not weighed.
    huber = validate(ms, load_calibration(), leave_one_out=False, loss="huber")
    assert huber.to_dict()["loss"] == "huber" and huber.to_dict()["huber_k"] == HUBER_K
    assert "mlperf-v3.1-quanta-d54u-3u" not in {p.measurement.id for p in huber.points}
    residuals = np.log([p.predicted / p.measurement.samples_per_s for p in huber.points])
    assert huber.weights == pytest.approx(tuple(huber_weights(residuals)))
    assert huber.downweighted[0][1] == min(huber.weights) < 1.0
    assert all(w == 1.0 for p, w in zip(huber.points, huber.weights, strict=True)
               if abs(np.log(p.predicted / p.measurement.samples_per_s)) <= 0.01)


def test_calibrate_rejects_an_unknown_loss() -> None:
    result = runner.invoke(app, ["calibrate", "--loss", "cauchy", "--out", "/nonexistent/x.toml"])
    assert result.exit_code == 2
    assert "unknown loss 'cauchy'" in result.output and "Traceback" not in result.output
