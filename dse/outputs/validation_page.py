"""Renderings of a :class:`~dse.calibration.fit.Validation`: terminal table, Markdown and a Plotly page."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots
from rich.console import Console
from rich.table import Table

from dse.calibration.fit import FIT_PARAMETERS, Validation

TARGETS = {"median_abs_pct_error": 15.0, "loo_median_abs_pct_error": 25.0, "spearman": 0.9}
"""Accuracy targets (issue "Calibrate and validate the model")."""


def _fmt(value: float | None, suffix: str = "%") -> str:
    return "n/a" if value is None else f"{value:.1f}{suffix}"


def summary_lines(v: Validation) -> list[str]:
    """The headline figures, each with its target and whether it is met."""
    loo = v.loo_median_abs_pct_error
    return [
        f"median |error| {v.median_abs_pct_error:.1f}% (target <= 15%: "
        f"{'met' if v.median_abs_pct_error <= 15 else 'NOT met'})",
        f"mean |error| {v.mean_abs_pct_error:.1f}%",
        f"leave-one-out median |error| {_fmt(loo)} (target <= 25%: "
        f"{'n/a' if loo is None else 'met' if loo <= 25 else 'NOT met'})",
        f"Spearman rank correlation {v.spearman:.3f} (target >= 0.9: "
        f"{'met' if v.spearman >= 0.9 else 'NOT met'})",
        f"worst point {v.worst.measurement.id}: {v.worst.abs_pct_error:.1f}%",
    ]


def by_group(v: Validation, key: str) -> dict[str, float]:
    """Median |error| per group (``family``, ``accelerator`` or ``workload``)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for p in v.points:
        groups[str(getattr(p.measurement, key))].append(p.abs_pct_error)
    return {k: float(np.median(e)) for k, e in sorted(groups.items())}


def render_table(v: Validation, console: Console) -> None:
    """Every point with predicted and measured throughput, then the summary."""
    table = Table("id", "system", "workload", "prec", "measured M/s", "predicted M/s", "|err| %",
                  "LOO |err| %", "bound", title=f"validation (calibration {v.calibration.version})")
    for p in v.points:
        m = p.measurement
        table.add_row(m.id, f"{m.accelerators} x {m.accelerator} ({m.scaleup})", m.workload,
                      m.precision, f"{m.samples_per_s / 1e6:.2f}", f"{p.predicted / 1e6:.2f}",
                      f"{p.abs_pct_error:.1f}", _fmt(p.loo_abs_pct_error, ""), p.bottleneck)
    console.print(table)
    for line in summary_lines(v):
        console.print(line)


ANALYSIS = """\
What changed in the model for this calibration, and where it still misses and why.

Physics added (no per-point parameter; 12 free parameters on 33 points):

- **Software layouts, not only software speed.** Each measurement source lays the model out its own
  way, and the model scores that layout (`dse.calibration.measurements.SOFTWARE_CAPABILITIES`, applied as
  `[software]` switches of the system). DeepLearningExamples PyTorch runs the bottom MLP on GPU 0 for
  the whole global batch, with no tables there, and keeps every table whole on one of the other GPUs
  (its README, "Embedding table placement and load balancing"); that layout is why its 8- and
  16-GPU runs scale about 4x, not 8x, from one GPU, and why mixed precision gains less on 8 V100s
  than on one (model 2.6x against 2.7x; measured 2.4x against 3.1x). DeepLearningExamples
  TensorFlow2 and HugeCTR 2020 (MLPerf v0.7) keep whole tables too; only HugeCTR 2021+ (MLPerf v1.0
  onward) replicates hot rows and small tables (hybrid embedding).
- **One-hot tables have no partial sums.** A one-hot table split row-wise sends each sample's single
  row from the one shard that holds it (HugeCTR spreads one-hot rows over all GPUs), so heavy
  one-hot tables are split row-wise as finely as balance needs instead of column-wise into at most
  4 pieces of 32 columns.
- **Hot rows sized for the links that carry them.** Across scale-up domains joined by a fabric, the
  hot set is sized against one node's batch (a node's all-to-all and the inter-node step of its
  hierarchical allreduce leave through the same NICs), not against one GPU's.
- **GPU-NIC traffic on the GPU's own x16 link** (DGX and ZionEX pair GPUs and NICs on PCIe switches),
  not on the uplink to the host that two GPUs share.
- **Dense efficiency per precision class** (fp32 SIMT, TF32, half precision), and the memory-bound
  element-wise passes around every GEMM (bias and activation forward, activation and bias gradients
  backward), counted from the MLP's structure.

Where it still misses:

- **fp32 SIMT efficiency fits at its bound (1.0).** The only fp32-SIMT points are DeepLearningExamples
  PyTorch on V100; they share one software factor with the TF32 and mixed-precision runs of the same
  source, and fp32 runs lose less to that software (long GEMMs, short remainder) than tensor-core
  runs do, which one factor per source cannot express. cuBLAS SGEMM reaches 85-95% of fp32 peak on
  large GEMMs, so the bound is not far from physics.
- **MLPerf v2.0 on 8 and 14 DGX A100 nodes is under-predicted by 20-26%, and network efficiency fits
  at its bound (1.0).** HugeCTR 2022 ran the same 64- and 112-GPU designs 1.6x faster than HugeCTR
  2021 (MLPerf v1.0, fitted within 2%), while its one-node result is fitted within 7%: the software
  factor is one per source, so a multi-node-only gain of the 2022 software (hierarchical all-to-all
  with fewer, larger messages) cannot be separated from its single-node speed. The real skew of
  Criteo's categories is also stronger than the Zipf exponent 1.05 the presets assume
  (`Workload.access_zipf`, an assumption), which would shrink the all-to-all at scale. Per-kernel and
  per-step overheads fit at zero for the same reason: any fixed per-step cost widens this gap on the
  0.6 ms multi-node steps.
- **8x A30 PCIe (MLPerf v2.0) is over-predicted by about 38%, DGX H100 (v2.1 preview) by about 29%.**
  The A30 box is bound by the exposed allreduce of replicated rows over shared PCIe; how the Nettrix
  box wires its PCIe switches is not published (`pcie_switch_share` is an assumption). The H100 run
  was a preview submission on pre-release software; its 1.6x over the DGX A100 matches the HBM
  bandwidth ratio (1.64x) better than the compute ratio (3.2x), which the element-wise passes
  reproduce only in part.
- **DeepLearningExamples TensorFlow2 DCNv2** spreads from 0.75x (one GPU, mixed precision) to 1.22x
  (8 GPUs, mixed precision); XLA's fusion of the cross layers is not modelled.

All three targets are met without a per-point parameter and without changing the data."""


def render_markdown(v: Validation) -> str:
    """``docs/validation.md``: generated by ``dse validate --markdown docs/validation.md``."""
    c = v.calibration
    out = [
        "# Model validation against published DLRM training measurements",
        "",
        "Generated by `dse validate --markdown docs/validation.md` (do not edit by hand). Data:",
        "`dse/data/dlrm_measurements.csv` (NVIDIA DeepLearningExamples tables and MLPerf Training",
        "DLRM results; every row names its source). Calibration version "
        f"`{c.version}`, fitted by `dse calibrate`.",
        "",
        "## Summary",
        "",
        *[f"- {line}" for line in summary_lines(v)],
        "",
        "## Fitted parameters",
        "",
        "| parameter | value |",
        "|---|---|",
        *[f"| `{name}` | {getattr(c, name):.4g} |" for name in FIT_PARAMETERS],
        *[f"| software factor `{k}` | {f:.3f} |" for k, f in sorted(c.software_factor.items())],
        "",
        "## Error by group (median |error|)",
        "",
        "| group | value | median abs error |",
        "|---|---|---|",
    ]
    for key in ("family", "accelerator", "workload"):
        out.extend(f"| {key} | {k} | {e:.1f}% |" for k, e in by_group(v, key).items())
    out += ["", "## Analysis", "", ANALYSIS]
    out += [
        "",
        "## Every point",
        "",
        "| id | system | workload | precision | measured (M samples/s) | predicted | abs error | "
        "LOO abs error | bound by |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for p in v.points:
        m = p.measurement
        out.append(
            f"| {m.id} | {m.accelerators} x {m.accelerator} ({m.scaleup}) | {m.workload} | "
            f"{m.precision} | {m.samples_per_s / 1e6:.2f} | {p.predicted / 1e6:.2f} | "
            f"{p.abs_pct_error:.1f}% | {_fmt(p.loo_abs_pct_error)} | {p.bottleneck} |"
        )
    return "\n".join(out) + "\n"


def render_html(v: Validation) -> str:
    """A standalone Plotly page: predicted against measured on log axes with the identity line
    (hover: system and workload), and the median error by group."""
    fig = make_subplots(rows=1, cols=2, column_widths=[0.6, 0.4],
                        subplot_titles=("predicted vs measured (samples/s)",
                                        "median |error| by software family"))
    families = sorted({p.measurement.family for p in v.points})
    for fam in families:
        pts = [p for p in v.points if p.measurement.family == fam]
        fig.add_trace(go.Scatter(
            x=[p.measurement.samples_per_s for p in pts], y=[p.predicted for p in pts],
            mode="markers", name=fam,
            text=[f"{p.measurement.id}<br>{p.measurement.accelerators} x {p.measurement.accelerator}"
                  f" ({p.measurement.scaleup})<br>{p.measurement.workload} {p.measurement.precision}"
                  f"<br>error {p.abs_pct_error:.1f}%" for p in pts],
            hovertemplate="%{text}<br>measured %{x:.3s}<br>predicted %{y:.3s}<extra></extra>",
        ), row=1, col=1)
    values = [p.measurement.samples_per_s for p in v.points] + [p.predicted for p in v.points]
    lo, hi = min(values) * 0.8, max(values) * 1.25
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="identity",
                             line={"dash": "dash", "color": "gray"}), row=1, col=1)
    groups = by_group(v, "family")
    fig.add_trace(go.Bar(x=list(groups), y=list(groups.values()), name="median |error| %",
                         showlegend=False), row=1, col=2)
    fig.update_xaxes(type="log", title_text="measured", row=1, col=1)
    fig.update_yaxes(type="log", title_text="predicted", row=1, col=1)
    fig.update_yaxes(title_text="%", row=1, col=2)
    fig.update_layout(title=f"dse validation, calibration {v.calibration.version}: "
                      + "; ".join(summary_lines(v)[:4]), height=650)
    html: str = fig.to_html(include_plotlyjs=True, full_html=True)
    return html
