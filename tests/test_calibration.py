"""The calibration fitter, the measurement loader, the calibration file and the ``dse calibrate`` /
``dse validate`` commands (issue "Calibrate and validate the model against published DLRM training
measurements").

The fitter is checked on synthetic data: every real measured design is predicted with a known
calibration, and the fit must recover it. Leave-one-out refits run on a small subset only.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dse.calibration.fit import (
    FIT_PARAMETERS,
    fit,
    fit_power,
    levenberg_marquardt,
    power_fit,
    predict_full,
    spearman,
    validate,
)
from dse.calibration.measurements import (
    COLUMNS,
    POWER_MEASUREMENTS,
    REFERENCE_FAMILY,
    SOFTWARE_CAPABILITIES,
    SOFTWARE_FAMILIES,
    fitted,
    load_measurements,
    measurement_design,
)
from dse.cli import app
from dse.errors import DseInputError
from dse.model.parameters import Calibration, load_calibration, unpinned, write_calibration

runner = CliRunner()
WIDE = {"COLUMNS": "250"}

TRUTH = Calibration(
    version="synthetic",
    dense_efficiency_simt=0.75,
    dense_efficiency_tf32=0.55,
    dense_efficiency_half=0.45,
    memory_efficiency=0.7,
    fabric_efficiency=0.6,
    network_efficiency=0.8,
    kernel_overhead_s=3e-6,
    software_factor={REFERENCE_FAMILY: 1.0, "hugectr-2020": 0.7, "hugectr-2021": 0.9,
                     "hugectr-2022.11": 0.95, "pytorch-2021": 0.8, "tensorflow-2023": 1.25,
                     "hugectr-2023.04": 1.1, "hugectr-2023.09": 1.05},
)
"""A known calibration: efficiencies 0.45-0.8, overheads of microseconds, factors 0.7-1.25."""


def synthetic(calib: Calibration) -> list:  # type: ignore[type-arg]
    """The 58 real designs, their throughput replaced by what ``calib`` predicts."""
    return [dataclasses.replace(m, samples_per_s=predict_full(m, calib)) for m in load_measurements()]


# --- the fitter ------------------------------------------------------------------------------------


def test_fit_recovers_known_parameters_from_synthetic_measurements() -> None:
    result = fit(synthetic(TRUTH), Calibration())  # starts from the priors
    got = result.calibration
    for name in FIT_PARAMETERS:
        assert getattr(got, name) == pytest.approx(getattr(TRUTH, name), rel=0.03), name
    for family, factor in TRUTH.software_factor.items():
        assert got.software_factor[family] == pytest.approx(factor, rel=0.03), family
    assert max(abs(r) for r in result.log_residuals) < 1e-3
    assert result.free_parameters == len(FIT_PARAMETERS) + len(TRUTH.software_factor) - 1


POINTS_PER_PARAMETER = 3
"""At least this many fitted measurements for every free parameter (57 points, 15 parameters)."""


def test_free_parameters_stay_well_below_the_points() -> None:
    ms = [m for m in load_measurements() if not m.excluded]
    n_free = len(FIT_PARAMETERS) + len({m.family for m in ms}) - 1
    assert n_free == 15
    assert POINTS_PER_PARAMETER * n_free <= len(ms)


def test_fit_keeps_efficiencies_physical() -> None:
    # Data that want more than 100% of peak: every throughput 5x the truth. Efficiencies stay in
    # (0, 1] and overheads >= 0 whatever the data ask.
    data = [dataclasses.replace(m, samples_per_s=m.samples_per_s * 5.0) for m in synthetic(TRUTH)]
    got = fit(data, Calibration(), max_iter=40).calibration
    for name in FIT_PARAMETERS:
        value = getattr(got, name)
        if name.endswith("efficiency") or "_efficiency_" in name:
            assert 0.0 < value <= 1.0, name
        else:
            assert value >= 0.0, name


def test_levenberg_marquardt_solves_a_known_problem() -> None:
    # y = a * exp(b x) sampled without noise at a = 2, b = -0.5; start far away.
    x = np.linspace(0.0, 4.0, 20)
    y = 2.0 * np.exp(-0.5 * x)

    def residuals(z: np.ndarray) -> np.ndarray:
        out: np.ndarray = z[0] * np.exp(z[1] * x) - y
        return out

    z, iterations = levenberg_marquardt(residuals, np.array([0.5, 0.5]))
    assert z == pytest.approx([2.0, -0.5], rel=1e-6)
    assert 1 <= iterations < 200


def test_spearman_on_known_vectors() -> None:
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # Ranks (1, 2, 3, 4, 5) against (5, 6, 7, 8, 7): ties take average ranks (3.5, 3.5); by hand
    # rho = cov / sd: x ranks 1..5, y ranks 1, 2, 3.5, 5, 3.5 (both of mean 3), so dx = -2 -1 0 1 2,
    # dy = -2 -1 0.5 2 0.5: sum dx dy = 4 + 1 + 0 + 2 + 1 = 8, sum dx^2 = 10, sum dy^2 = 9.5.
    assert spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / math.sqrt(10 * 9.5))
    assert spearman([1, 1, 1], [1, 2, 3]) == 0.0


def test_leave_one_out_on_a_subset_refits_without_the_point() -> None:
    # Three MLPerf points through the library API (LOO for all 33 runs in `dse validate`).
    ms = [m for m in load_measurements() if m.id.startswith("mlperf-v2.0")][:3]
    calib = load_calibration()
    report = validate(ms, calib, leave_one_out=True)
    assert len(report.points) == 3
    for p in report.points:
        assert p.loo_predicted is not None and p.loo_predicted > 0
        assert p.loo_abs_pct_error is not None
    assert report.loo_median_abs_pct_error is not None


# --- the measurement loader ------------------------------------------------------------------------


GOOD_ROW = ("x1,test source,2022-06,mlperf-dlrm-v1,amp,55296,a100-sxm4-80gb,8,1,switch,40000000,"
            "net_of_eval,HugeCTR 2022-04,mlcommons/training_results_v2.0:x")


def write_csv(tmp_path: Path, *rows: str, header: str = ",".join(COLUMNS)) -> Path:
    path = tmp_path / "m.csv"
    path.write_text("\n".join((header, *rows)) + "\n", encoding="utf-8")
    return path


def test_loader_reads_a_good_file(tmp_path: Path) -> None:
    (m,) = load_measurements(write_csv(tmp_path, GOOD_ROW))
    assert m.id == "x1" and m.accelerators == 8 and m.family == "hugectr-2022"


def test_packaged_measurements_load_and_name_their_sources() -> None:
    ms = load_measurements()
    assert len(ms) == 58
    assert all(m.source and m.published and m.results for m in ms)
    for m in ms:
        measurement_design(m)  # every row maps to a workload and system preset


@pytest.mark.parametrize(
    ("column", "bad"),
    [
        ("workload", "no-such-workload"),
        ("accelerator", "no-such-gpu"),
        ("precision", "fp64"),
        ("scaleup", "torus"),
        ("metric", "peak"),
        ("samples_per_s", "0"),
        ("samples_per_s", "-5"),
        ("global_batch", "many"),
        ("nodes", "0"),
        ("software", "MXNet 2019"),
        ("published", "2023"),
        ("published", "2023-13"),
    ],
)
def test_loader_names_file_line_and_column(tmp_path: Path, column: str, bad: str) -> None:
    fields = GOOD_ROW.split(",")
    fields[COLUMNS.index(column)] = bad
    path = write_csv(tmp_path, GOOD_ROW.replace("x1,", "x0,"), ",".join(fields))
    with pytest.raises(DseInputError) as err:
        load_measurements(path)
    assert err.value.source == f"{path}:3"  # header is line 1, the good row line 2
    assert err.value.key == column


def test_loader_rejects_a_bad_header(tmp_path: Path) -> None:
    header = ",".join(c if c != "nodes" else "node_count" for c in COLUMNS)
    with pytest.raises(DseInputError) as err:
        load_measurements(write_csv(tmp_path, GOOD_ROW, header=header))
    assert err.value.key == "header"
    assert "nodes" in err.value.message and "node_count" in err.value.message


def test_loader_rejects_a_duplicate_id(tmp_path: Path) -> None:
    with pytest.raises(DseInputError) as err:
        load_measurements(write_csv(tmp_path, GOOD_ROW, GOOD_ROW))
    assert err.value.source.endswith("m.csv:3") and err.value.key == "id"


def test_loader_rejects_a_short_row_and_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DseInputError) as err:
        load_measurements(write_csv(tmp_path, "x1,only,three"))
    assert err.value.source.endswith("m.csv:2")
    with pytest.raises(DseInputError):
        load_measurements(tmp_path / "absent.csv")


def test_every_family_has_its_capabilities() -> None:
    assert set(SOFTWARE_CAPABILITIES) == {family for _, family in SOFTWARE_FAMILIES}
    assert SOFTWARE_CAPABILITIES[REFERENCE_FAMILY] == ()  # the defaults are the reference's


# --- the calibration file --------------------------------------------------------------------------


def test_write_and_load_calibration_round_trip(tmp_path: Path) -> None:
    calib = dataclasses.replace(TRUTH, fit={"points": 58.0, "median_abs_pct_error": 7.5})
    path = tmp_path / "c" / "calibration.toml"
    write_calibration(calib, path)
    # Every unpinned parameter's range is written out, the defaults' too (with their sources).
    assert load_calibration(path) == dataclasses.replace(calib, ranges=unpinned(calib))
    assert "# host_efficiency: low:" in path.read_text(encoding="utf-8")
    stated = dataclasses.replace(calib, ranges={"host_efficiency": (0.4, 0.6)})
    write_calibration(stated, path)
    assert load_calibration(path).ranges["host_efficiency"] == (0.4, 0.6)
    assert "# host_efficiency: stated by the user" in path.read_text(encoding="utf-8")


def test_packaged_calibration_is_a_fitted_version() -> None:
    calib = load_calibration()
    assert calib.version != "prior"
    assert calib.fit["points"] == len(fitted(load_measurements())) == 57.0  # one excluded
    assert calib.software_factor[REFERENCE_FAMILY] == 1.0


def test_power_utilisation_is_a_calibration_parameter_in_the_packaged_file() -> None:
    # Fitted to a wall-power measurement, so it lives in the calibration (its file, its version),
    # not in the model's code: the exact fit to two decimals (0.6176 -> 0.62 under 2026.12-9).
    import dse.model.cost as cost

    assert not hasattr(cost, "ACCELERATOR_TRAINING_UTILISATION")
    calib = load_calibration()
    assert calib.accelerator_training_utilisation == 0.62
    assert fit_power(calib) == calib
    exact = power_fit(calib).exact_utilisation
    assert abs(exact - 0.62) <= 0.005 and power_fit(calib).within_range
    assert calib.fit["power_points"] == float(len(POWER_MEASUREMENTS)) == 1.0
    assert calib.fit["power_abs_pct_error"] == pytest.approx(power_fit(calib).abs_pct_error)
    # The throughput fit does not move it.
    assert "accelerator_training_utilisation" not in FIT_PARAMETERS


def test_power_fit_by_hand_and_the_evaluation_uses_the_calibration() -> None:
    from dse.model.cost import power
    from dse.model.evaluate import evaluate
    from dse.model.system import load_system
    from dse.model.workload import load_workload

    m = POWER_MEASUREMENTS[0]
    system = load_system(m.system)
    wl = load_workload(m.workload)
    act = evaluate(wl, system).power.activity
    assert act is not None and act.accelerator == pytest.approx(0.62, rel=1e-12)
    idle_w = power(system, None, act._replace(accelerator=0.0)).power_w
    full_w = power(system, None, act.at_tdp()).power_w
    p = power_fit(load_calibration())
    # Wall power is linear in the utilisation: idle + (full - idle) u, the node's other parts
    # drawing by its step's activity (its links 5% under their full draw: 7,097 W at 0.62, 0.2%
    # over the measured range's middle; 0.61 would draw 7,047 W, under the range).
    assert p.predicted_w == pytest.approx(idle_w + (full_w - idle_w) * 0.62, rel=1e-12)
    assert abs(p.predicted_w - 7085.0) < 0.01 * 7085.0
    assert p.abs_pct_error == pytest.approx(abs(p.predicted_w - 7085.0) / 7085.0 * 100)
    exact = dataclasses.replace(load_calibration(), accelerator_training_utilisation=p.exact_utilisation)
    assert power_fit(exact).predicted_w == pytest.approx(7085.0, rel=1e-12) and power_fit(exact).within_range
    lower = dataclasses.replace(load_calibration(), accelerator_training_utilisation=0.3)
    assert evaluate(wl, system, lower).power.power_w == pytest.approx(
        power(system, None, act._replace(accelerator=0.3)).power_w, rel=1e-12)
    assert evaluate(wl, system).power.power_w == pytest.approx(p.predicted_w, rel=1e-12)


# --- the commands ----------------------------------------------------------------------------------


def test_validate_json_has_the_required_keys() -> None:
    result = runner.invoke(app, ["validate", "--json", "--no-loo"], env=WIDE)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    for key in ("median_abs_pct_error", "loo_median_abs_pct_error", "spearman", "points",
                "mean_abs_pct_error", "worst", "calibration_version"):
        assert key in report
    assert len(report["points"]) == 57  # the 58th is listed as excluded
    assert report["loo_median_abs_pct_error"] is None  # --no-loo
    point = report["points"][0]
    for key in ("id", "measured", "predicted", "abs_pct_error", "bottleneck"):
        assert key in point
    assert report["median_abs_pct_error"] == pytest.approx(
        float(np.median([p["abs_pct_error"] for p in report["points"]])))
    power = report["power"]
    assert power["parameter"] == "accelerator_training_utilisation" and power["value"] == 0.62
    assert abs(power["predicted_w"] - 7085.0) < 0.01 * 7085.0 and power["workload"] == "mlperf-dlrm-dcnv2"
    assert power["id"] == POWER_MEASUREMENTS[0].id and power["within_range"] is (
        power["measured_low_w"] <= power["predicted_w"] <= power["measured_high_w"])


def test_validate_table_lists_every_point_and_the_summary() -> None:
    result = runner.invoke(app, ["validate", "--no-loo"], env=WIDE)
    assert result.exit_code == 0, result.output
    for m in load_measurements():
        assert m.id in result.stdout
    for words in ("median |error|", "mean |error|", "Spearman", "worst point", "leave-one-out",
                  "power: accelerator_training_utilisation 0.62"):
        assert words in result.stdout


def test_validate_html_is_a_self_contained_plotly_page(tmp_path: Path) -> None:
    page = tmp_path / "v.html"
    result = runner.invoke(app, ["validate", "--no-loo", "--html", str(page)], env=WIDE)
    assert result.exit_code == 0, result.output
    html = page.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<html") or "<!doctype html" in html.lower()
    assert "plotly" in html.lower() and "<script src=\"http" not in html  # plotly.js inlined
    for m in load_measurements():
        assert m.id in html


def test_validate_markdown_writes_the_doc(tmp_path: Path) -> None:
    doc = tmp_path / "docs" / "validation.md"
    result = runner.invoke(app, ["validate", "--no-loo", "--markdown", str(doc)], env=WIDE)
    assert result.exit_code == 0, result.output
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("# Model validation")
    for section in ("## Summary", "## Fitted parameters", "## Error by group", "## Analysis",
                    "## Every point"):
        assert section in text
    assert all(m.id in text for m in load_measurements())


def test_validate_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("id,source\nx,y\n", encoding="utf-8")
    result = runner.invoke(app, ["validate", "--no-loo", "--data", str(bad)])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "header" in result.stderr
    result = runner.invoke(app, ["validate", "--no-loo", "--calibration", str(tmp_path / "no.toml")])
    assert result.exit_code == 2


def test_calibrate_writes_a_loadable_file(tmp_path: Path) -> None:
    out = tmp_path / "calibration.toml"
    result = runner.invoke(app, ["calibrate", "--out", str(out), "--version", "test-1"], env=WIDE)
    assert result.exit_code == 0, result.output
    calib = load_calibration(out)
    assert calib.version == "test-1"
    assert calib.fit["points"] == 57.0 and calib.fit["free_parameters"] == 15.0
    assert calib.accelerator_training_utilisation == 0.62  # fitted to the wall power (fit_power)
    # (The measured node's links and CPUs draw by its step, which the refit moves a hair.)
    assert calib.fit["power_abs_pct_error"] == pytest.approx(load_calibration().fit["power_abs_pct_error"],
                                                             rel=1e-6)
    for name in FIT_PARAMETERS:
        assert name in result.stdout
    # The packaged file was fitted by this command from the same data: the same fit.
    packaged = load_calibration()
    for name in FIT_PARAMETERS:
        assert getattr(calib, name) == pytest.approx(getattr(packaged, name), rel=1e-3, abs=1e-9)


def test_only_the_2023_embedding_collection_exchanges_keys_flat() -> None:
    # HugeCTR 23.04/23.08's data distributor (MLPerf v3.0/v3.1 DCNv2) sends keys with a flat
    # all-to-all; the one-hot HugeCTR of 2020-2022 (hybrid embedding, no data distributor), PyTorch
    # and TensorFlow do not, and their multi-device steps carry no key exchange.
    from dse.model.evaluate import evaluate

    flat = {"hugectr-2023.04", "hugectr-2023.09"}
    for family, caps in SOFTWARE_CAPABILITIES.items():
        assert (("software.flat_key_exchange", True) in caps) == (family in flat)
    calib = Calibration(collective_latency_s=15e-6, key_peer_latency_s=1e-6)
    seen = set()
    for m in load_measurements():
        if m.accelerators_per_node * m.nodes < 8 or m.family in seen:
            continue
        seen.add(m.family)
        wl, sysm = measurement_design(m)
        assert sysm.spec.software.flat_key_exchange == (m.family in flat)
        st = evaluate(wl, sysm, calib).timing.stages_s
        keys = st["keys_fabric"] + st["keys_network"]
        if m.family in flat:
            g = m.accelerators_per_node * m.nodes
            # 2 rounds x (15 us + (G - 1) x 1 us).
            assert keys == pytest.approx(2 * (15e-6 + (g - 1) * 1e-6), rel=1e-12)
        else:
            assert keys == 0.0
    assert flat <= seen and REFERENCE_FAMILY in seen


def test_key_peer_latency_stays_between_its_nccl_bounds() -> None:
    # Fitted through a logistic onto (0.6 us, 14 us): NCCL 2.18.5's NVLink LL hop and network
    # Simple hop latencies (dse.calibration.fit.OVERHEAD_FLOORS_S, CEILINGS_S).
    from dse.calibration.fit import _decode, _encode, at_bound, parameter_bounds

    assert parameter_bounds("key_peer_latency_s") == (0.6e-6, 14e-6)
    i = FIT_PARAMETERS.index("key_peer_latency_s")
    base = Calibration()
    for zi in (-700.0, -5.0, 0.0, 5.0, 700.0):
        z = _encode(base, [])
        z[i] = zi
        v = _decode(z, base, []).key_peer_latency_s
        assert 0.6e-6 <= v <= 14e-6
    # z = 0 is the middle of the range: 0.6 + 13.4 / 2 = 7.3 us; the encoding inverts the decoding.
    z = _encode(base, [])
    z[i] = 0.0
    mid = _decode(z, base, [])
    assert mid.key_peer_latency_s == pytest.approx(7.3e-6, rel=1e-12)
    assert _encode(mid, [])[i] == pytest.approx(0.0, abs=1e-9)
    assert "key_peer_latency_s" in at_bound(base.with_values(key_peer_latency_s=14e-6))
    assert "key_peer_latency_s" in at_bound(base.with_values(key_peer_latency_s=0.6e-6))
    assert "key_peer_latency_s" not in at_bound(base.with_values(key_peer_latency_s=3e-6))
