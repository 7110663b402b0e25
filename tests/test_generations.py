"""Pairwise ratios between measured systems and generations left out of the fit (issue 40):
hand-checked ratios, the pairing rule, and the leave-one-generation-out refit."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dse.calibration.fit import fit, generation_holdouts, predict_full
from dse.calibration.generations import (
    GenerationHoldout,
    architecture_of,
    generations,
    ratio_error_pct,
    ratio_report,
    spearman,
)
from dse.calibration.measurements import Measurement, load_measurements
from dse.model.parameters import load_calibration

MEASURED = {m.id: m for m in load_measurements()}


def _m(mid: str, samples_per_s: float) -> Measurement:
    return dataclasses.replace(MEASURED[mid], samples_per_s=samples_per_s)


def test_ratio_error_is_symmetric_and_zero_when_right() -> None:
    assert ratio_error_pct(1.0) == 0.0
    assert ratio_error_pct(1.25) == pytest.approx(25.0)
    assert ratio_error_pct(0.8) == pytest.approx(25.0)  # the same pair named the other way round


def test_pairs_share_workload_precision_and_batch() -> None:
    """Three points on one job give three pairs; a fourth at another batch pairs with none. With
    a 10% fast and a 10% slow, the ratio is off by 1.1 / 0.9 - 1 = 22.2%; with both 10% fast it
    is right."""
    a = _m("mlperf-v3.1-dell-xe9680x8h100-sxm-80gb", samples_per_s=10.0)
    b = _m("mlperf-v3.1-xfusion-g5500v7x8l40", samples_per_s=2.0)
    c = _m("mlperf-v3.1-xfusion-g5500v7x8xl40s", samples_per_s=4.0)
    d = _m("mlperf-v3.1-dell-xe9640x4h100-sxm-80gb", samples_per_s=5.0)  # batch 28,000
    r = ratio_report([(a, 11.0), (b, 1.8), (c, 4.4), (d, 9.0)])
    assert [(p.a, p.b) for p in r.pairs] == [(a.id, b.id), (a.id, c.id), (b.id, c.id)]
    errors = [p.error_pct for p in r.pairs]
    assert errors == pytest.approx([(1.1 / 0.9 - 1) * 100, 0.0, (1.1 / 0.9 - 1) * 100])
    assert r.median_pct == pytest.approx((1.1 / 0.9 - 1) * 100)
    assert r.worst is not None and r.worst.error_pct == pytest.approx(22.222, abs=1e-3)
    row = r.by_workload()["mlperf-dlrm-dcnv2"]
    assert (row["points"], row["pairs"]) == (4, 3)
    # Ranks: measured 10, 2, 4, 5 against predicted 11, 1.8, 4.4, 9: the same order.
    assert row["spearman"] == pytest.approx(1.0)


def test_spearman_by_hand() -> None:
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)  # 1 - 6*2/(4*15)
    assert spearman([1, 1, 1], [1, 2, 3]) == 0.0


def test_generation_holdout_statistics() -> None:
    a = _m("mlperf-v3.1-dell-xe9680x8h100-sxm-80gb", samples_per_s=10.0)
    b = _m("mlperf-v3.1-xfusion-g5500v7x8l40", samples_per_s=2.0)
    g = GenerationHoldout("test", ((a, 12.0), (b, 1.5)))
    assert g.errors == pytest.approx([20.0, 25.0])
    assert g.mean_log_error == pytest.approx((math.log(1.2) + math.log(0.75)) / 2)
    assert g.to_dict()["median_abs_pct_error"] == pytest.approx(22.5)


def test_every_measured_architecture_can_be_left_out() -> None:
    ms = list(MEASURED.values())
    assert generations(ms) == ["ada", "ampere", "hopper", "volta"]
    assert generations([m for m in ms if architecture_of(m) == "hopper"]) == []


def test_leave_one_generation_out_is_a_refit_without_it() -> None:
    """The Ada holdout's predictions are those of a refit on every point but the two L40/L40S."""
    calib = load_calibration()
    ms = [m for m in MEASURED.values() if not m.excluded]
    got = {g.architecture: g for g in generation_holdouts(ms, calib)}
    assert set(got) == {"ada", "ampere", "hopper", "volta"}
    ada = got["ada"]
    refit = fit([m for m in ms if architecture_of(m) != "ada"], calib, max_iter=60).calibration
    assert [p for _, p in ada.points] == pytest.approx([predict_full(m, refit) for m, _ in ada.points])
    assert np.isfinite(ada.mean_log_error)


def test_half_precision_math_runs_at_the_parts_measured_matmul_ceiling() -> None:
    """dse times half-precision GEMMs at peak x matmul_efficiency x dense_efficiency_half: a part
    whose measured ceiling is lower by a factor runs its compute-bound GEMMs that much slower,
    and its TF32 math (no per-part measurement) not at all."""
    from dse.model.system import load_system
    from dse.model.timing import dense_efficiency

    calib = load_calibration()
    h100 = load_system("dgx-h100")
    mi300x = load_system("mi300x-x8")
    assert h100.accelerator.matmul_efficiency == pytest.approx(794.5 / 989.4, abs=5e-4)
    assert mi300x.accelerator.matmul_efficiency == pytest.approx(668.4 / 1307.4, abs=5e-4)
    assert dense_efficiency(h100, calib, "bf16") == pytest.approx(calib.dense_efficiency_half * 0.803)
    assert dense_efficiency(mi300x, calib, "bf16") == pytest.approx(calib.dense_efficiency_half * 0.511)
    assert dense_efficiency(h100, calib, "tf32") == calib.dense_efficiency_tf32
    part = dataclasses.replace(h100.accelerator, matmul_efficiency=0.4015)
    halved = dataclasses.replace(h100, accelerator=part)
    assert dense_efficiency(halved, calib, "bf16") == pytest.approx(dense_efficiency(h100, calib, "bf16") / 2)
