"""The section "CPU-only class" of ``docs/validation.md`` (and its line in ``dse validate``): the
fit of ``cpu_dense_efficiency`` to the CPU-only measurements, each point's error in sample and
left out, the class target and, for each point outside it, why (:mod:`dse.calibration.cpu`)."""

from __future__ import annotations

import statistics
from typing import Any

from dse.calibration.cpu import TARGET_ABS_PCT, CpuReport

MISS_REASONS: dict[str, str] = {
    "mlperf-v1.0-intel-": (
        "the model's step is bound by the all-to-all over the one 100 GbE NIC a node assumed for "
        "these eight-socket nodes (their network is not published), so the assumption decides "
        "them"),
    "mlperf-v2.1-intel-": (
        "Sapphire Rapids with AMX: its bf16 peak is 8x Cooper Lake's AVX512_BF16 peak a cycle and "
        "core (1,024 against 128 FLOP) and one efficiency cannot be both the share the Cooper "
        "Lake runs reach and the far lower one these runs reach; the rest of their step "
        "(DDR-bound element-wise work, the framework) is what the model under-counts"),
    "mlperf-v3.1-intel-": "as v2.1 (Sapphire Rapids with AMX), with DCNv2's multi-hot lookups in DDR",
}
"""Why a point of the class may miss the target, by id prefix (stated, not fitted)."""


def _pct(x: float) -> str:
    return f"{x:+.1f}%"


def cpu_class_lines(report: CpuReport) -> list[str]:
    """The Markdown section: method, table and target."""
    ins = CpuReport.errors(report.in_sample, report.measured)
    loo = CpuReport.errors(report.left_out, report.measured)
    rows = [f"| {i} | {m / 1e3:,.0f} | {p / 1e3:,.0f} | {_pct(a)} | {_pct(b)} |"
            for i, m, p, a, b in zip(report.ids, report.measured, report.in_sample, ins, loo, strict=True)]
    misses = [(i, a, b) for i, a, b in zip(report.ids, ins, loo, strict=True)
              if max(abs(a), abs(b)) > TARGET_ABS_PCT]
    met = "met" if not misses else "**not met**"
    why = [f"- {i} ({_pct(a)} in sample, {_pct(b)} left out): "
           + next((r for k, r in MISS_REASONS.items() if i.startswith(k)), "no reason recorded")
           for i, a, b in misses]
    return [
        "## CPU-only class",
        "",
        "Nodes without accelerators (`node.accelerators = 0`, docs/design.md section 7) are fitted on "
        "their own class, `dse/data/cpu_measurements.csv`: Intel's MLPerf Training DLRM runs on Xeon "
        "CPUs up to v3.1, each the median over its runs of the samples/s between in-run evaluations "
        "(net of evaluation) from the round's `result_*.txt` MLLOG timestamps, with the parts the "
        "submission does not state in its `assumed` column. One parameter, `cpu_dense_efficiency`, "
        "is fitted to them (`dse.calibration.cpu.fit_cpu`, run by `dse calibrate`), "
        f"{report.efficiency:.3g} of the CPUs' base-clock peak; their DDR is read at "
        "`host_efficiency`, not fitted here. The accelerator fit never sees these points.",
        "",
        "| point | measured k samples/s | predicted | in sample | left out |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"Median |error| {statistics.median(map(abs, ins)):.1f}% in sample, "
        f"{statistics.median(map(abs, loo)):.1f}% left out. Target (every point within "
        f"{TARGET_ABS_PCT:g}%): {met}." + (" Outside it:" if misses else ""),
        *(["", *why] if why else []),
        "",
    ]


def cpu_class_summary(report: CpuReport) -> dict[str, Any]:
    """``dse validate --json``'s ``cpu_class``."""
    return {**report.to_dict(), "target_abs_pct": TARGET_ABS_PCT}


def cpu_class_line(report: CpuReport) -> str:
    """``dse validate``'s line on the class."""
    d = report.to_dict()
    return (f"CPU-only class ({len(report.ids)} points): cpu_dense_efficiency {report.efficiency:.3g}; "
            f"max |error| {d['max_abs_pct_in_sample']:.1f}% in sample, "
            f"{d['max_abs_pct_leave_one_out']:.1f}% left out (target {TARGET_ABS_PCT:g}%)")
