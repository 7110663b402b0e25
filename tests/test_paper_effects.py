"""The effects the published measurements show (docs/design.md, section 5), reproduced by the model with
its default (packaged, fitted) calibration.

Designs are the presets the MLPerf and DeepLearningExamples systems correspond to; the V100 precision
effect uses the measured designs themselves (DeepLearningExamples PyTorch on one V100 and on a DGX-1,
with that software's layout; see ``dse.calibration.measurements.SOFTWARE_CAPABILITIES``).
"""

from __future__ import annotations

import dataclasses

from dse import evaluate, load_system, load_workload
from dse.calibration.measurements import load_measurements, measurement_design
from dse.model.workload import with_batch


def throughput(system: str, nodes: int = 1, batch: int | None = None) -> float:
    wl = load_workload("mlperf-dlrm-v1")
    if batch is not None:
        wl = with_batch(wl, batch)
    ev = evaluate(wl, load_system(system, (("nodes", nodes),) if nodes > 1 else ()))
    assert ev.feasible, ev.reasons
    return ev.throughput_samples_per_s


def measured_design_throughput(measurement_id: str) -> float:
    (m,) = [m for m in load_measurements() if m.id == measurement_id]
    wl, sysm = measurement_design(m)
    return evaluate(wl, sysm).throughput_samples_per_s


def test_nvswitch_a100_at_least_2_5x_pcie_a100() -> None:
    # Measured (MLPerf v2.0): 40.4M samples/s on a DGX A100 against 12.7M on 8 A100 PCIe: 3.2x.
    assert throughput("dgx-a100") >= 2.5 * throughput("a100-pcie-x8")


def test_eight_pcie_a100_no_more_than_1_3x_four() -> None:
    # Measured: 12.7M on 8 against 13.5M on 4 (0.94x).
    assert throughput("a100-pcie-x8") <= 1.3 * throughput("a100-pcie-x4")


def test_per_gpu_throughput_at_112_gpus_at_most_a_third_of_8() -> None:
    # Measured (MLPerf v2.0, NVIDIA): 40.4M on 8 GPUs (5.0M per GPU) against 124.6M on 112 GPUs
    # (1.1M per GPU) at the 71,680 batch NVIDIA runs at 8+ nodes: 0.22x.
    per_gpu_8 = throughput("dgx-a100") / 8
    per_gpu_112 = throughput("dgx-a100", nodes=14, batch=71680) / 112
    assert per_gpu_112 <= per_gpu_8 / 3


def test_v100_mixed_precision_gains_less_on_eight_gpus_than_on_one() -> None:
    # Measured (DeepLearningExamples PyTorch): amp over fp32 is 3.1x on one V100, 2.4x on a DGX-1.
    one = (measured_design_throughput("dle-pyt-v100-x1-amp")
           / measured_design_throughput("dle-pyt-v100-x1-fp32"))
    eight = (measured_design_throughput("dle-pyt-dgx1-x8-amp")
             / measured_design_throughput("dle-pyt-dgx1-x8-fp32"))
    assert one > 1.0 and eight > 1.0
    assert eight < one


def test_effects_use_the_packaged_calibration() -> None:
    from dse.model.parameters import load_calibration

    wl = load_workload("mlperf-dlrm-v1")
    ev = evaluate(wl, load_system("dgx-a100"))
    assert ev.calibration_version == load_calibration().version != "prior"
    assert dataclasses.is_dataclass(ev)
