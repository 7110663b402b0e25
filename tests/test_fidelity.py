"""Issue 13, first part: the DCNv2 measurements with sources and dates, the forward validation's
split by date, the input-source default, the defaults ``dse evaluate`` reports, and the fixed step
costs counted from the model's structure."""

from __future__ import annotations

from pathlib import Path

import pytest

from dse.calibration.fit import (
    AT_BOUND_REASONS,
    FIT_PARAMETERS,
    OVERHEAD_FLOORS_S,
    at_bound,
    forward_validate,
    split_by_date,
)
from dse.calibration.measurements import load_measurements, measurement_design
from dse.errors import DseInputError
from dse.model.defaults import sensitive_defaults
from dse.model.evaluate import evaluate
from dse.model.parameters import load_calibration
from dse.model.placement import plan_placement
from dse.model.system import load_system
from dse.model.timing import allreduce_bytes, kernel_count, step_time
from dse.model.workload import load_workload

ROUND_DATES = {"v0.7": "2020-07", "v1.0": "2021-06", "v2.0": "2022-06", "v2.1": "2022-11",
               "v3.0": "2023-06", "v3.1": "2023-11"}
"""MLPerf Training results publication months (MLCommons result announcements)."""


def test_dcnv2_measurements_load_with_sources_dates_and_results_paths() -> None:
    ms = load_measurements()
    dcn = [m for m in ms if m.workload == "mlperf-dlrm-dcnv2"]
    assert len(ms) == 58 and len(dcn) == 25
    for m in dcn:
        rnd = m.id.split("-")[1]
        assert m.published == ROUND_DATES[rnd]
        assert m.results.startswith(f"mlcommons/training_results_{rnd}:")
        assert m.results.endswith("/dlrm_dcnv2/result_*.txt")
        assert m.source.startswith(f"MLPerf Training {rnd} closed, ")
        assert m.metric == "net_of_eval" and m.gross_samples_per_s is not None
        assert m.gross_samples_per_s < m.samples_per_s  # evaluation time taken out
        assert m.family == ("hugectr-2023.09" if rnd == "v3.1" else "hugectr-2023.04")
        measurement_design(m)  # every row maps to a platform preset
    for m in ms:
        assert len(m.published) == 7 and m.published[4] == "-" and m.results
        if m.id.startswith("mlperf-"):
            assert m.published == ROUND_DATES[m.id.split("-")[1]]


def test_measurement_designs_match_the_measured_machines() -> None:
    by_id = {m.id: m for m in load_measurements()}
    _, two_boards = measurement_design(by_id["mlperf-v3.1-dell-2xxe8640x4h100-sxm-80gb"])
    assert (two_boards.nodes, two_boards.accelerators_per_node, two_boards.scaleup) == (
        2, 4, "fully_connected")
    assert two_boards.nic_bytes_s == pytest.approx(4 * 50e9)  # 4 x 400 Gb/s NDR
    _, eos = measurement_design(by_id["mlperf-v3.1-nvidia-eos_n16_ngc23.09_merlin_hugectr"])
    assert (eos.nodes, eos.accelerators_per_node) == (16, 8)
    assert eos.nic_bytes_s == pytest.approx(8 * 50e9)  # 8 x 400 Gb/s compute NICs per node
    _, pcie4 = measurement_design(by_id["mlperf-v3.1-quanta-d54u-3u"])
    assert (pcie4.accelerators_per_node, pcie4.scaleup) == (4, "none")
    _, l40 = measurement_design(by_id["mlperf-v3.1-xfusion-g5500v7x8l40"])
    assert l40.accelerator.name.startswith("NVIDIA L40 ")


def test_forward_split_is_by_publication_date() -> None:
    ms = load_measurements()
    before, after = split_by_date(ms, "2022-12")
    assert len(before) + len(after) == len(ms)
    assert all(m.published <= "2022-12" for m in before)
    assert all(m.published >= "2023-01" for m in after)
    assert {m.id for m in after} >= {m.id for m in ms if m.workload == "mlperf-dlrm-dcnv2"}
    assert all(m.workload != "mlperf-dlrm-dcnv2" for m in before)  # one-hot DLRM only


def test_forward_validation_fits_only_on_earlier_points() -> None:
    ms = [m for m in load_measurements()
          if m.id in ("mlperf-v2.0-nvidia-dgxa100", "mlperf-v2.0-h3c-a100sxm-x4",
                      "mlperf-v2.1-nvidia-dgxh100", "mlperf-v3.0-nvidia-dgxh100_ngc23.04_merlin_hugectr")]
    f = forward_validate(ms, "2022-12")
    assert set(f.fitted) == {m.id for m in ms if m.published <= "2022-12"}
    assert [m.id for m, _ in f.points] == ["mlperf-v3.0-nvidia-dgxh100_ngc23.04_merlin_hugectr"]
    assert f.max_abs_pct_error == pytest.approx(f.median_abs_pct_error)
    with pytest.raises(DseInputError):
        forward_validate(ms, "2030-01")  # nothing left to predict


SYSTEM_WITHOUT_FRONTEND = """
nodes = 1
[node]
accelerator = "h100-sxm5-80gb"
accelerators = 8
cpu = "xeon-8480p"
cpu_sockets = 2
ddr_gb = 2048
pcie_gen = 5
pcie_switch_share = 2
scaleup = "switch"
nics = 8
nic_gbit_s = 400
[network]
topology = "rail_optimized"
"""


def test_input_is_read_locally_by_default(tmp_path: Path) -> None:
    path = tmp_path / "h100.toml"
    path.write_text(SYSTEM_WITHOUT_FRONTEND, encoding="utf-8")
    wl = load_workload("mlperf-dlrm-dcnv2")
    stated = evaluate(wl, load_system(str(path))).throughput_samples_per_s
    preset = evaluate(wl, load_system("dgx-h100")).throughput_samples_per_s
    assert stated == pytest.approx(preset, rel=1e-9)  # no silent halving by a default NIC
    network = evaluate(wl, load_system(str(path), (("node.input_source", "network"),)))
    assert network.bottleneck == "input_exposed"  # one default 100 Gb/s front-end NIC
    assert network.throughput_samples_per_s < 0.6 * stated
    effects = {d.key: d for d in sensitive_defaults(wl, str(path))}
    assert effects["node.input_source"].alternative == "network"
    assert effects["node.input_source"].change < -0.4


def test_network_input_needs_a_nic() -> None:
    with pytest.raises(DseInputError) as err:
        load_system("dgx-h100", (("node.input_source", "network"), ("node.frontend_nics", 0),
                                 ("node.nics", 0)))
    assert err.value.key == "node.input_source"


def test_fixed_step_costs_are_counted_from_the_structure() -> None:
    wl, sysm = load_workload("mlperf-dlrm-v1"), load_system("dgx-a100")
    calib = load_calibration()
    plan = plan_placement(wl, sysm)
    nbytes, buckets = allreduce_bytes(wl, plan, sysm)
    # 2,368,897 dense parameters + 2,621,440 replicated hot-row elements at 2 bytes = 9.98 MB:
    # one 25 MB DDP bucket.
    assert nbytes == pytest.approx((2368897 + 2621440) * 2) and buckets == 1
    # 8 MLP layers x 4 kernels + 8 fixed (interaction, loss, optimizer, scaler) + 2 (one HBM tier,
    # forward and backward) + 2 all-to-alls + 1 bucket = 45.
    assert kernel_count(wl, plan, buckets) == 45
    st = step_time(wl, sysm, plan, calib)
    assert st.kernels == 45
    assert st.stages_s["overhead"] == pytest.approx(
        45 * calib.kernel_overhead_s + calib.step_overhead_s)


def test_fitted_overheads_respect_their_measured_floors() -> None:
    calib = load_calibration()
    for name, floor in OVERHEAD_FLOORS_S.items():
        assert name in FIT_PARAMETERS and floor > 0
        assert getattr(calib, name) >= floor * (1 - 1e-12)


def test_no_fitted_parameter_sits_at_a_bound_without_a_stated_reason() -> None:
    assert set(at_bound(load_calibration())) <= set(AT_BOUND_REASONS)
