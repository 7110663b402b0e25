"""Renderings of a :class:`~dse.calibration.fit.Validation`: terminal table, Markdown and a Plotly page."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots
from rich.table import Table

from dse.calibration.fit import (
    AT_BOUND_REASONS,
    FIT_PARAMETERS,
    HUBER_K,
    MAD_TO_SIGMA,
    PRIOR_REASONS,
    PointReport,
    PowerFit,
    Validation,
    at_bound,
)
from dse.calibration.generations import RatioReport, ratio_report
from dse.calibration.state_change import MIN_CHANGED_STEPS, RATE_CHANGE
from dse.outputs.markup import plot_text

TARGETS = {
    "median_abs_pct_error": 6.0, "loo_median_abs_pct_error": 8.0, "spearman": 0.97,
    "dcnv2_max_abs_pct_error": 20.0, "dcnv2_multinode_max_abs_pct_error": 15.0,
    "forward_median_abs_pct_error": 8.0, "forward_max_abs_pct_error": 20.0, "forward_spearman": 0.9,
    "generation_median_abs_pct_error": 12.0,
    "ratio_median_pct": 6.0, "ratio_max_pct": 25.0,
}
"""Accuracy targets (issue 13, "Fidelity on today's workload at scale"; the forward median
tightened from 15% to 12% by issue 27; issue 40, "Fidelity across accelerator generations": the
all-point, leave-one-out and forward medians to 6%, 8% and 8%, the forward maximum 20%, Hopper
left out of the fit and predicted within a 12% median, pairwise ratios within a 6% median and
25% at worst)."""
TARGET_GENERATION = "hopper"
"""The generation issue 40's leave-one-generation-out target names (the others are reported)."""
HOST_TARGETS = {"max_abs_pct_error": 25.0, "loo_median_abs_pct_error": 15.0}
"""Targets of the host-memory class (issue 27)."""
DCNV2 = "mlperf-dlrm-dcnv2"


def _fmt(value: float | None, suffix: str = "%") -> str:
    return "n/a" if value is None else f"{value:.1f}{suffix}"


def _met(ok: bool | None) -> str:
    return "n/a" if ok is None else "met" if ok else "NOT met"


def summary_lines(v: Validation) -> list[str]:
    """The headline figures, each with its target and whether it is met."""
    loo = v.loo_median_abs_pct_error
    t = TARGETS
    dcn = [p for p in v.points if p.measurement.workload == DCNV2]
    multi = [p for p in dcn if p.measurement.nodes >= 8]
    lines = [
        f"median |error| {v.median_abs_pct_error:.1f}% over {len(v.points)} points (target <= "
        f"{t['median_abs_pct_error']:.0f}%: {_met(v.median_abs_pct_error <= t['median_abs_pct_error'])})",
        f"mean |error| {v.mean_abs_pct_error:.1f}%",
        f"leave-one-out median |error| {_fmt(loo)} (target <= {t['loo_median_abs_pct_error']:.0f}%: "
        f"{_met(None if loo is None else loo <= t['loo_median_abs_pct_error'])})",
        f"Spearman rank correlation {v.spearman:.3f} (target >= {t['spearman']}: "
        f"{_met(v.spearman >= t['spearman'])})",
    ]
    if dcn:
        worst = max(p.abs_pct_error for p in dcn)
        within = sum(p.abs_pct_error <= t["dcnv2_max_abs_pct_error"] for p in dcn)
        lines.append(f"DCNv2 (MLPerf v3.0/v3.1): {within} of {len(dcn)} within "
                     f"{t['dcnv2_max_abs_pct_error']:.0f}%, worst {worst:.1f}% (target: all: "
                     f"{_met(within == len(dcn))})")
    if multi:
        worst = max(p.abs_pct_error for p in multi)
        lines.append(f"DCNv2 on 8 and 16 nodes: worst {worst:.1f}% (target <= "
                     f"{t['dcnv2_multinode_max_abs_pct_error']:.0f}%: "
                     f"{_met(worst <= t['dcnv2_multinode_max_abs_pct_error'])})")
    if v.power is not None:
        lines.append(power_line(v.power))
    f = v.forward
    if f is not None:
        lines.append(
            f"forward (fit on {len(f.fitted)} points published through {f.cut}, predict "
            f"{len(f.points)} later): median |error| {f.median_abs_pct_error:.1f}% (target <= "
            f"{t['forward_median_abs_pct_error']:.0f}%: "
            f"{_met(f.median_abs_pct_error <= t['forward_median_abs_pct_error'])}), max "
            f"{f.max_abs_pct_error:.1f}% (target <= {t['forward_max_abs_pct_error']:.0f}%: "
            f"{_met(f.max_abs_pct_error <= t['forward_max_abs_pct_error'])}), Spearman "
            f"{f.spearman:.3f} (target >= {t['forward_spearman']}: "
            f"{_met(f.spearman >= t['forward_spearman'])})")
    lines += ratio_lines(v)
    lines.append(f"worst point {v.worst.measurement.id}: {v.worst.abs_pct_error:.1f}%")
    lines += class_lines(v)
    lines += [f"excluded (machine changed state during the run): {p.measurement.id}, |error| "
              f"{p.abs_pct_error:.1f}% (measured {p.measurement.samples_per_s / 1e6:.2f} M, "
              f"predicted {p.predicted / 1e6:.2f} M samples/s)" for p in v.excluded]
    return lines


def _ratio_line(name: str, r: RatioReport, targets: bool) -> str:
    """One line on a set of pairwise ratios: pairs, median and worst ratio error (with issue 40's
    targets when ``targets``)."""
    worst = r.worst
    if worst is None or r.median_pct is None:
        return f"{name}: no two points on the same job"
    med, top = r.median_pct, worst.error_pct
    t = TARGETS
    return (f"{name}: {len(r.pairs)} pairs of systems on the same job, median ratio error "
            f"{med:.1f}%" + (f" (target <= {t['ratio_median_pct']:.0f}%: "
                             f"{_met(med <= t['ratio_median_pct'])})" if targets else "")
            + f", worst {top:.1f}% ({worst.a} / {worst.b})"
            + (f" (target <= {t['ratio_max_pct']:.0f}%: {_met(top <= t['ratio_max_pct'])})"
               if targets else ""))


def ratio_lines(v: Validation) -> list[str]:
    """The pairwise ratios (in sample, leave-one-out, forward) and the leave-one-generation-out
    errors, with issue 40's targets."""
    lines = [_ratio_line("pairwise ratios", v.ratios, True)]
    if v.loo_ratios is not None:
        lines.append(_ratio_line("pairwise ratios, each point left out of the fit", v.loo_ratios, False))
    if v.forward is not None:
        lines.append(_ratio_line("pairwise ratios of the forward predictions", v.forward.ratios, False))
    target = TARGETS["generation_median_abs_pct_error"]
    for g in v.generations:
        med = float(np.median(g.errors))
        goal = (f" (target <= {target:.0f}%: {_met(med <= target)})"
                if g.architecture == TARGET_GENERATION else "")
        lines.append(f"{g.architecture} left out of the fit ({len(g.points)} points): median "
                     f"|error| {med:.1f}%{goal}, max {max(g.errors):.1f}%, mean log error "
                     f"{g.mean_log_error:+.3f} ({'over' if g.mean_log_error > 0 else 'under'}-rated)")
    return lines


def ratio_section(v: Validation) -> list[str]:
    """``docs/validation.md``'s section on ratios between systems and on generations left out."""
    out = ["## Ratios between systems and generations left out", "",
           "A buyer choosing between generations acts on the ratio of two systems' throughputs on "
           "the same job, so every pair of measured systems on the same workload, precision and "
           "global batch is compared: predicted ratio over measured ratio, its error "
           "max(q, 1/q) - 1 (`dse.calibration.generations`). Spearman is over each workload's "
           "points.", "",
           "| workload | points | pairs | median ratio error | worst | worst pair | Spearman |",
           "|---|---|---|---|---|---|---|"]
    for name, r in (("in sample", v.ratios), ("leave-one-out", v.loo_ratios),
                    ("forward", None if v.forward is None else v.forward.ratios)):
        if r is None:
            continue
        for w, row in r.by_workload().items():
            med, top = row["median_ratio_error_pct"], row["max_ratio_error_pct"]
            pair = " / ".join(row["worst_pair"]) if row["worst_pair"] else "-"
            out.append(f"| {w} ({name}) | {row['points']} | {row['pairs']} | {_fmt(med)} | "
                       f"{_fmt(top)} | {pair} | {row['spearman']:.3f} |")
    if v.generations:
        out += ["", "Each architecture left out of the fit whole (refitted from this calibration "
                "without its points; a software family measured only on it runs at the "
                "reference family's speed) and its points predicted: the error on a generation "
                "dse has never seen, from which the interval of an unmeasured generation "
                "(Blackwell, CDNA, Gaudi) is built.", "",
                "| architecture left out | points | median abs error | max | mean log error | "
                "median ratio error among its points |", "|---|---|---|---|---|---|"]
        for g in v.generations:
            rr = ratio_report(g.points).median_pct
            out.append(f"| {g.architecture} | {len(g.points)} | {np.median(g.errors):.1f}% | "
                       f"{max(g.errors):.1f}% | {g.mean_log_error:+.3f} | {_fmt(rr)} |")
    return out


def class_lines(v: Validation) -> list[str]:
    """Each measurement class's in-sample and leave-one-out errors, apart; the host-memory class
    with its targets (issue 27: every point within 25%, leave-one-out median <= 15%)."""
    out = []
    for name, c in v.classes().items():
        line = (f"class {name}: {c['points']} points, median |error| "
                f"{c['median_abs_pct_error']:.1f}%, max {c['max_abs_pct_error']:.1f}%, "
                f"leave-one-out median {_fmt(c['loo_median_abs_pct_error'])}")
        if name == "host_memory":
            loo = c["loo_median_abs_pct_error"]
            line += (f" (targets: every point within {HOST_TARGETS['max_abs_pct_error']:.0f}%: "
                     f"{_met(c['max_abs_pct_error'] <= HOST_TARGETS['max_abs_pct_error'])}; "
                     f"leave-one-out median <= {HOST_TARGETS['loo_median_abs_pct_error']:.0f}%: "
                     f"{_met(None if loo is None else loo <= HOST_TARGETS['loo_median_abs_pct_error'])})")
        out.append(line)
    if "host_memory" not in v.classes():
        out.append("class host_memory: no point fitted (docs/host_memory_data.md says why)")
    return out


def exclusion_lines(v: Validation) -> list[str]:
    """The state-change rule in words, and every point it excludes with its evidence and error."""
    rule = (f"A run trips when its logged per-window step rate differs from the run's own median "
            f"window rate by a factor of more than {1 + RATE_CHANGE:g} (either way) over "
            f"consecutive windows covering at least {MIN_CHANGED_STEPS:,} training steps; a "
            "measurement is excluded from the fit, and from every statistic above, when at least "
            "one of its runs trips. The rule reads the per-window times HugeCTR prints "
            "(`Iter: N Time(K iters)`), the same way for every log "
            "(`benchmarks/state_change_scan.py`; the constants and why: "
            "`dse/calibration/state_change.py`). Each row's verdict and evidence are the "
            "`state_check` and `state_evidence` columns of the measurement files: `steady` (every "
            "run logged, none trips), `changed` (excluded), `unlogged` (no per-step times: "
            "fitted, unchecked).")
    rows = [f"| {p.measurement.id} | {p.measurement.samples_per_s / 1e6:.2f} | "
            f"{p.predicted / 1e6:.2f} | {p.abs_pct_error:.1f}% | {p.measurement.state_evidence} |"
            for p in v.excluded]
    table = ["| id | measured (M samples/s) | predicted | abs error | evidence |",
             "|---|---|---|---|---|", *rows]
    return [rule, "", *(table if rows else ["No point is excluded."])]


def bound_lines(v: Validation) -> list[str]:
    """Every fitted parameter at a bound of its range, with the stated reason."""
    return [f"`{name}` = {getattr(v.calibration, name):.4g}: "
            f"{AT_BOUND_REASONS.get(name, 'NO STATED REASON')}" for name in at_bound(v.calibration)]


def loss_lines(v: Validation) -> list[str]:
    """The fit's loss, its constants, and every point it weighs below 1 with its weight."""
    if v.loss == "huber":
        head = (f"Huber's M-estimator on the log residuals by iteratively reweighted least squares "
                f"(`dse calibrate --loss huber`): weight min(1, k s / |r|) with k = {HUBER_K} and s "
                f"= {MAD_TO_SIGMA} median(|r - median(r)|), re-estimated each round; the "
                "leave-one-out and forward refits use the same loss.")
    else:
        head = ("Least squares on the log residuals (`dse calibrate --loss squares`): every point "
                "weighs 1; the leave-one-out and forward refits use the same loss.")
    rows = [f"- `{p.measurement.id}`: weight {w:.2f} (|error| {p.abs_pct_error:.0f}%)"
            for p, w in v.downweighted]
    return [head, "", *(["Points weighed below 1:", "", *rows] if rows else
                        ["No point weighs below 1."])]


def by_group(v: Validation, key: str) -> dict[str, float]:
    """Median |error| per group (``family``, ``accelerator`` or ``workload``)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for p in v.points:
        groups[str(getattr(p.measurement, key))].append(p.abs_pct_error)
    return {k: float(np.median(e)) for k, e in sorted(groups.items())}


def power_line(p: PowerFit) -> str:
    """The wall-power parameter against its measurement, in one line."""
    m = p.measurement
    return (f"power: accelerator_training_utilisation {p.utilisation:.4g} gives {m.system} "
            f"{p.predicted_w:,.0f} W at the wall against {m.low_w:,.0f}-{m.high_w:,.0f} W measured "
            f"({m.id}): |error| {p.abs_pct_error:.1f}% from the middle, "
            f"{'inside' if p.within_range else 'outside'} the range (exact fit "
            f"{p.exact_utilisation:.4g})")


def validation_table(v: Validation) -> Table:
    """Every point with predicted and measured throughput (``dse validate`` prints it fitted to
    the terminal, then :func:`summary_lines`)."""
    table = Table("id", "system", "workload", "prec", "measured M/s", "predicted M/s", "|err| %",
                  "LOO |err| %", "bound", title=f"validation (calibration {v.calibration.version})")
    for p in v.points:
        m = p.measurement
        table.add_row(m.id, f"{m.accelerators} x {m.accelerator} ({m.scaleup})", m.workload,
                      m.precision, f"{m.samples_per_s / 1e6:.2f}", f"{p.predicted / 1e6:.2f}",
                      f"{p.abs_pct_error:.1f}", _fmt(p.loo_abs_pct_error, ""), p.bottleneck)
    return table


ANALYSIS = """\
What the model contains, what this calibration adds, and where it still misses and why.

Physics added before this calibration (no per-point parameter):

- **Software layouts, not only software speed.** Each measurement source lays the model out its own
  way, and the model scores that layout (`dse.calibration.measurements.SOFTWARE_CAPABILITIES`, applied as
  `[software]` switches of the system). DeepLearningExamples PyTorch runs the bottom MLP on GPU 0 for
  the whole global batch, with no tables there, and keeps every table whole on one of the other GPUs
  (its README, "Embedding table placement and load balancing"); that layout is why its 8- and
  16-GPU runs scale about 4x, not 8x, from one GPU, and why mixed precision gains less on 8 V100s
  than on one (model 2.9x against 3.2x; measured 2.4x against 3.1x). DeepLearningExamples
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

What calibration 2026.12-1 added (issue 13, first part):

- **25 MLPerf Training v3.0/v3.1 DLRM-DCNv2 points** (`dse/data/mlperf_dcnv2_2023.csv`): 1-16 nodes,
  H100 SXM on 8-GPU NVSwitch and 4-GPU NVLink boards, A100, H100 PCIe, A40, L40 and L40S, fitted
  to samples/s net of the in-run evaluations. Each round's HugeCTR is its own software family.
- **Fixed step costs with measured floors.** The per-kernel overhead may not fall below a
  CUDA-graph-launched kernel (0.5 us) nor the per-step cost below one host synchronisation (5 us);
  the kernels, all-to-alls and allreduce buckets of a step are counted from the model's structure.
- **Input read locally by default** (`node.input_source`), so a system file without front-end NICs
  no longer comes out input-bound.

What calibration 2026.12-2 adds (issue 13, scale-out placement):

- **Embedding work spread across nodes.** A lookup-heavy multi-hot table is split row-wise over as
  many scale-up domains as its load needs (at most a domain's devices in each), its partial sums
  reduced hierarchically (reduce-scatter on the fabric, one sum a domain over the network); a heavy
  table whose rows may not split further inside a domain is cut into row slices across domains,
  each split column-wise there (grid sharding, TorchRec's `GRID_SHARD`). DCNv2 on DGX H100 at the
  MLPerf batch of 135,168: the busiest device's embedding time falls from 3.8 ms on one node to
  0.5 ms on 16, never rising as nodes are added (`tests/test_model_properties.py`). The plan still
  reads no bandwidth.
- **Distinct rows updated once.** The embedding backward sorts its indices and sums the gradients
  of repeated rows before the optimizer touches each distinct row once (FBGEMM's and HugeCTR's
  embedding backward); the count was R (1 - exp(-L/R)) for L lookups into R rows, the uniform
  count; calibration 2026.12-10 counts them under the workload's skew (below).
- **All-to-all latency per level.** The fabric pays one message per peer in its domain; across
  domains the all-to-all is hierarchical (HugeCTR v3.1 release notes: "Hierarchical multi-node
  all-to-all for NVLINK aggregation"), one message per other domain.
- **The 2023 HugeCTR layouts.** The DCNv2 reference builds an embedding collection (tables
  model- or data-parallel as a whole, no frequent-row hybrid) and computes weight gradients on a
  side stream beside the backward all-to-all (`async_wgrad=True`); v3.1's multi-node runs make
  small tables data-parallel (`DP_SHARDING_THRESHOLD`), v3.0's configuration sets no such threshold
  (`dse.calibration.measurements.SOFTWARE_CAPABILITIES`).
- **Every efficiency off its bound but one** (in 2026.12-2): memory 0.75, network 0.79, fabric
  0.66, TF32 0.59, half precision 0.48; the fit was worse in its median (10.4% against 9.4%) and
  leave-one-out (12.5% against 10.1%) than 2026.12-1's, whose memory and network efficiencies at 1
  compensated for the missing placement.

What calibration 2026.12-3 adds (issue 13, the fixed costs of the 2023 multi-node runs):

- **HugeCTR 2023's flat key exchange, counted.** The data distributor of HugeCTR 23.04/23.08 sends
  each device's keys of model-parallel tables to their owners with one `ncclSend`/`ncclRecv` pair
  per peer over all global GPUs, a count round and then a key round with a host synchronisation
  between them (`docs/sources.md#what-the-mlperf-v30v31-dcnv2-runs-did`). It is issued eagerly,
  outside the CUDA graph, on the same NCCL communicator as the embedding all-to-alls and the
  allreduce, after the dense graph is queued and before the backward all-to-all, so it hides
  behind the middle of the step (interaction and top MLP) and costs only what it takes beyond it:
  2 rounds x (one collective's latency + (G - 1) x `key_peer_latency_s`) for G GPUs
  (`software.flat_key_exchange`, set for the two 2023 HugeCTR families only; one-hot HugeCTR has no
  data distributor). The per-peer cost is fitted between NCCL 2.18.5's own latencies of an NVLink
  hop (0.6 us) and of a network hop with its slowest protocol (14 us); it comes out at 3.3 us
  (NCCL's low-latency network hop: 2.7 us), the same from any start between 1.5 and 6 us. At 128
  GPUs the exchange takes 0.86 ms against 0.28 ms of the step's middle; at 8 GPUs it hides.
- **The per-step overhead a physical quantity.** `step_overhead_s`, one host synchronisation (5 us),
  is no longer fitted: every earlier fit left it at that floor, and the fitted per-peer latency
  would otherwise be a 15th free parameter on 58 points.
- **What moved.** v3.1 on 16 nodes from +16.5% to -11.3%, v3.0 on 16 nodes from +37.3% to +15.0%;
  the 2023 software factors rise from 0.86-0.88 to 0.93-0.95; the median of all 58 points falls
  from 10.4% to 10.2%, leave-one-out from 12.5% to 11.6%, the forward figures are unchanged
  (fitted on the one-hot points alone, the per-peer latency keeps its prior). The network
  efficiency goes to its bound of 1 (the reason is stated above), the memory efficiency from 0.75
  to 0.66. The adoption rule was fixed before the measurement: adopted only if the all-58,
  leave-one-out and forward medians are each no worse than 2026.12-2's; they are not worse.

What calibration 2026.12-4 changes (issue 27, item 1: runs whose machine changed state):

- **An exclusion rule, applied to every log the same way.** A run trips when its logged per-window
  step rate differs from its own median window rate by a factor of more than 1.5, either way, over
  consecutive windows covering at least 5,000 training steps; a measurement is excluded from the
  fit when any of its runs trips (`dse/calibration/state_change.py` states why these constants;
  the section "Excluded" above lists every excluded point with its evidence and error).
  `benchmarks/state_change_scan.py` applied it to every MLPerf Training DLRM submission of v0.7-v3.1
  whose logs print HugeCTR's per-window times: of the 38 MLPerf points in the data, 19 are `steady`
  (longest changed stretch 4,000 steps, the v0.7 DGX A100 warm-up; all others 1,000 steps or less,
  single evaluation windows), 18 print no per-step times (`unlogged`: NVIDIA's own and some
  partners' logs; the 20 DeepLearningExamples points are published tables, `unlogged` too) and
  one trips: the Quanta D54U-3U (v3.1, 4x H100 PCIe), whose run 0 trained at
  2.03x its median rate for steps 101-12,600 and then at the median (1.19 M samples/s, the
  published figure) to its end, runs 1-9 at that rate throughout
  (`docs/sources.md#what-the-mlperf-v30v31-dcnv2-runs-did`). Among the submissions not in the data,
  one more trips (MLPerf v1.0 Supermicro AS-4124GO-NART_pytorch, run 1: steps 3,001-12,000 at 0.59x
  its median rate). The point stays in the data with its published figure and evidence
  (`state_check = changed`), outside every statistic above.
- **What moved.** With that point out, the shared HBM efficiency it held down rises from 0.66 to
  0.85, TF32 and half-precision efficiencies fall from 0.62 and 0.49 to 0.52 and 0.42, fabric 0.67
  to 0.68, the per-peer key-exchange cost 3.26 to 3.42 us; software factors: HugeCTR 2023.04 0.933
  to 0.873, 2023.09 0.947 to 0.944, TF2 0.862 to 0.933, PyTorch 0.852 to 0.840, HugeCTR 2020 and
  2021 0.766 and 0.715 to 0.760 and 0.708. The median error falls from 10.2% (58 points) to 6.0%
  (57), leave-one-out from 11.6% to 7.6% (mean 16.8% to 10.8%), Spearman rises from 0.985 to 0.994,
  the forward median moves from 12.8% to 12.1% (max 306% to 45.5%; the fit through 2022 is the same,
  the point left the predicted set; issue 27's forward target of 12% is missed by 0.1 point); the 8-
  and 16-node DCNv2 points are within 9.9% (were 15.0%); the 8-GPU H100 v3.1 boxes from 13% under to
  4% under. The calibration version changes with the values (2026.12-3 to 2026.12-4): a study scored
  under 2026.12-3 and resumed under 2026.12-4 records the change with the trial it starts from
  (`dse:changes`), and until it is resumed (or rerun) `dse pareto --robust` refuses it, since its
  scores and the new ensemble belong to different calibrations.

What calibration 2026.12-5 changes (issue 27, item 5: the single-node H100 under-rating):

- **Two overlaps of the reference software, granted.** The MLPerf v2.0 HugeCTR runs the model is
  calibrated to computed the top MLP's weight gradients on a side stream beside the backward
  all-to-all (`async_mlp_wgrad = True`) and ran the allreduce beside the all-to-all
  (`overlap_ar_a2a = True`); the model charged the first on the critical path and hid the
  allreduce only behind the compute after the all-to-all. `software.overlap_weight_gradients` now
  defaults to true (false only for the families whose software had no side stream), and the
  allreduce runs beside the whole backward phase, which also makes the step monotone in every
  stage again.
- **One software family per MLPerf round, for 2022 too.** The two MLPerf v2.1 DGX H100 points ran
  a pre-release HugeCTR build (`hugectr-preview`, status preview), not v2.0's 22.04 release, yet
  shared its family and so its factor of 1 with the reference; they are now their own family,
  `hugectr-2022.11` (factor 0.920), as each 2023 round already was. One more free parameter (15).
- **What moved.** HBM efficiency 0.85 to 0.70, fabric 0.68 to 0.49, network 1 (its bound) to
  0.84, TF32 0.525 to 0.515, half precision 0.416 to 0.407, per-peer key exchange 3.42 to 3.68 us;
  software factors: HugeCTR 2023.04 0.873 to 1.019, 2023.09 0.944 to 1.096, TF2 0.933 to 0.986,
  PyTorch 0.840 to 0.931, HugeCTR 2020 and 2021 0.760 and 0.708 to 0.883 and 0.732. Median 6.0%
  to 4.8%, leave-one-out 7.6% to 6.1% (mean 10.8% to 10.0%), Spearman 0.994 to 0.996; forward
  median 12.1% to 10.3% (mean 15.2% to 9.4%, max 45.5% to 25.2%; issue 27's forward target of 12%
  is met). The one-hot HugeCTR 2022 runs on 8 and 14 nodes, which held the network efficiency at
  its bound while they were 9-15% under even at line rate, are within 6% at 0.84 of it: the
  allreduce they were charged for ran beside their all-to-all. 80% intervals cover 47 of 57
  left-out points (was 46), 84% of the points whose software family is left out (was 65%; the
  70-90% target is now met on that axis, with the widened rule of "Outside the measured
  regime") and 77% when their architecture is (was 84%). Designs (DLRM-DCNv2, one node): DGX
  H100 13.1 to 13.5 M samples/s, HGX H200 15.3 to 16.4 M, DGX A100 6.2 to 6.8 M, DGX B200 28.9 to
  30.3 M.
- **The CPU peaks, corrected.** The catalog counted an AVX FMA as one FLOP: two AVX-512 FMA units
  give 64 fp32 FLOP a cycle and core (16 lanes, a multiply and an add each), not 32, and AVX2's
  two 256-bit units 32, not 16; AMX's 1,024 bf16 FLOP were counted right. The Xeon 8480+, 8380H,
  8376H, 8168 and E5-2698 v4 peaks doubled, `cpu_dense_efficiency` went from 0.325 (of the halved
  peaks) to 0.171, and the Sapphire Rapids (AMX) points from +102% and +177% to +54% and +117%.
  The v1.0 eight-socket points, bound by an assumed NIC, move with the shared network and fabric
  efficiencies (-40% and -29% to -48% and -40%). The class's median: 19.8% to 27.2% in sample,
  22.4% to 28.9% left out.

What calibration 2026.12-6 changes (issue 27, item 3: the CPU-only class; the accelerator fit,
its figures and its ensemble are 2026.12-5's):

- **Two more points.** MLPerf v2.1's Intel results also hold the same Sapphire Rapids DLRM on 2
  and 4 nodes (`2-nodes-SPR-pytorch`, `4-nodes-SPR-pytorch`, 1.53 M and 2.14 M samples/s net of
  evaluation, median of five runs each), which the class had left out; issue 27 names Sapphire
  Rapids on 1-4 nodes. Ten points now.
- **Facts of the measured runs, read from Intel's published scripts and code, none fitted.**
  (1) Each socket computed on `OMP_NUM_THREADS` of its cores, the rest running oneCCL's workers:
  24 of 28 on the v0.7 four-socket and v1.0 nodes, 20 of 28 on the v0.7 eight-socket node, all 56
  on v2.1's Sapphire Rapids (its workers on the second hyperthreads), 52 of 56 on v3.1
  (`compute_cores`, `node.cpu_compute_cores`). The eight-socket node's 20 cores were the one
  difference between the two single-node Cooper Lake points the model did not know: they were
  +11.8% and -6.4% apart and are +7.3% and +5.2% now. (2) Intel's DLRM copies the tables of
  fewer than 2,048 rows on every rank and shares out the other 16 (`sparse_dense_boundary`,
  intel-extension-for-pytorch's v0.7 patch and v1.0 diff, and v2.1's `dlrm_s_pytorch.py`;
  `software.replicate_below_rows`); the model had kept all 26 model-parallel, so a node's
  all-to-all carried up to 7 tables where 4 ran (four nodes), or 4 where 2 ran (eight). The v1.0 runs go from
  -48.5% and -40.2% to -28.8% and -8.7%. (3) The Sapphire Rapids nodes reach four 100 GbE RDMA
  ports (the v2.1 and v3.1 run scripts name four, two a rank); one was assumed.
- **AMX gets its own efficiency.** Sapphire Rapids' bf16 runs on the AMX tile unit, 1,024 FLOP a
  cycle and core against AVX512_BF16's 128 on Cooper Lake, and reaches a far lower share of it:
  `cpu_matrix_efficiency` (0.061, on the four AMX points) beside `cpu_dense_efficiency` (0.228,
  on the six vector points), as the accelerator fit keeps tensor-core and SIMT efficiencies
  apart (catalog `matrix_precisions`). One more parameter, for four points.
- **What moved.** The class's median from 27.2% to 11.5% in sample and from 28.9% to 13.8% left
  out; 9 of 10 points are within 25% in sample (the target is every one): the v1.0 four-node run,
  -28.8%, is the one whose assumed network still decides it (its 201 MB of all-to-all a
  direction and node cross one assumed 100 GbE NIC on a PCIe Gen3 x16 link taken at the fitted
  fabric efficiency, 0.49, i.e. 7.7 GB/s). Left out, three of the four AMX points miss by 27-30%:
  the measured Sapphire Rapids steps shrink less with the nodes than the model's (32.9, 21.4 and
  15.3 ms on 1, 2 and 4 nodes), which points at a cost that grows as each core's rows shrink, a
  term the model does not have (see "CPU-only class"). Forward in time (`dse validate --forward`,
  the class fitted on its 9 points up to 2022-12): the v3.1 DCNv2 run is +26.9%; a cut before
  2022 leaves AMX with no point, and its efficiency at the prior. The Kalamkar single-socket breakdown moves
  from a 61 ms to a 51 ms step (still against 38 ms published), and the Zion case study's CPU
  cluster speeds up with the higher vector efficiency (its page says by how much).

What calibration 2026.12-7 changes (a fix of the CPU-only path; the accelerator fit, its figures
and its members' accelerator parameters are 2026.12-5's):

- **Every compute NIC has a PCIe link of its own, which the devices sharing the NIC share**
  (`timing.node_network_bytes_s`: a node's cross-node all-to-all moves at the slowest of its NICs,
  their links together and, for NICs on the CPUs, host DDR crossed twice). The model sent a
  node without accelerators' whole all-to-all through one x16 link whatever `node.nics` said,
  although its own description of these nodes gives each NIC its link; with four 100 GbE ports
  (the Sapphire Rapids runs) that link, at the fitted fabric efficiency, was slower than the NICs.
  And where fewer NICs than accelerators serve a node (a `zionex-scale-out` design with 2 or 4),
  nothing charged the NICs' own links. A NIC on the CPUs runs its link at the lowest of its, the
  CPU side's and the CPU's generation, as the `nic_link` rule already said. No accelerator
  measurement has fewer NICs than accelerators, so the accelerator fit does not move; a node with
  one NIC (the Cooper Lake runs, the `dual-socket-cpu` preset) is unchanged. The dense-gradient
  allreduce was not given the same bound: with it, the accelerator fit's median error went from
  4.8% to 5.3% and its leave-one-out median from 6.1% to 6.3% (forward 10.3% to 9.9%).
- **What moved.** `cpu_matrix_efficiency` 0.0606 to 0.0592. The class's median from 11.5% to 11.3% in
  sample and from 13.8% to 13.3% left out, the forward error of v3.1 DCNv2 from +26.9% to +24.4%;
  the four-node Sapphire Rapids run from +22.8% to +25.4%, so 8 of 10 points are within 25% in
  sample where 9 were. Not taken: giving that link a PCIe protocol efficiency of its own (0.92 for
  256 B payloads, Intel AN 456) instead of the fabric's would bring the v1.0 four-node run to
  -22.6% but moves the medians to 12.9% and 15.9%.

Where it still misses (reported, not tuned away):

- **v3.0 on 16 DGX H100 nodes is over-predicted by 9.3% and v3.1 on 16 under by 7.0%.** MLPerf v3.0
  scaled from 45.3 M to 46.0 M samples/s going from 8 to 16 nodes (+1.6%; 2.96 and 2.93 ms a step
  between evaluations), v3.1 on the same machines from 54.3 M to 70.6 M (+30%; 2.48 and 1.91 ms);
  with one throughput factor per software release and the same key exchange in both, no model can
  match both. What was checked (`docs/sources.md#what-the-mlperf-v30v31-dcnv2-runs-did`): the two
  rounds' 8- and 16-node configurations differ only in v3.1's data-parallel threshold for small
  tables, which the model represents; batch, optimizer, `hier_auto` sharding, hierarchical
  embedding all-to-all, SHARP allreduce, overlap flags and data reader are the same; NVIDIA's own
  planner, rerun on the published arguments, expects both rounds to shed a third of a step from 8
  to 16 nodes. The model puts v3.0 at +0.1% on 8 nodes and v3.1 at +4.4% on 8.
- **4x H100 SXM on one board (Supermicro SYS-421GU-TNXR, v3.1) is +31%**, the largest error in the
  fit, while the same board's v3.0 submission (SYS-421GU-TNX) is +4.8% and Dell's XE9640 4x H100
  (v3.1) is within 2%.
- **8x A40 (IEI NF5468M6, v3.0) is +11% and 8x A30 +26%**: the PCIe boxes' switch wiring is not
  published (`pcie_switch_share` is an assumption; the NF5468M6 description names no GPU
  interconnect).
- **The v2.1 DGX H100 preview: one node +15%, four nodes -13%**, with their own family's factor
  (0.920): one factor cannot serve both, as the preview scaled from one node to four better than
  the model has it. MLPerf v2.0 on 8 and 14 DGX A100 nodes is -6% and -1% (9-15% under at line
  rate before the allreduce ran beside the all-to-all, 2026.12-5).

Robust loss (measured on calibration 2026.12-3, with the 4x H100 PCIe point still fitted, and
remeasured on 2026.12-5's model: `dse calibrate --loss huber` gives a median of 4.7%, leave-one-out
6.4% and forward 10.5% against least squares' 4.8%, 6.1% and 10.3%, so by the same rule least
squares stays the loss):

- **Huber's M-estimator against least squares.** Least squares lets the 4x H100 PCIe point, the
  fit's largest residual, move the shared HBM efficiency by 0.1, so a robust loss was built and
  measured (`dse calibrate --loss huber`: iteratively reweighted least squares, weight
  min(1, k s / |r|), k = 1.345 for 95% efficiency under normal errors (Huber 1964; Holland and
  Welsch 1977), s the normalised median absolute deviation, 1.4826 median(|r - median(r)|), no
  tuned constant). Its rule of adoption was fixed before the measurement: the default only if
  both the leave-one-out and the forward median are no worse than least squares'. They are not
  both: on the 58 points

  | | least squares (default) | Huber |
  |---|---|---|
  | median abs error, all 58 (max) | 10.2% (218%) | 5.8% (264%) |
  | Spearman | 0.985 | 0.990 |
  | leave-one-out median (mean) | 11.6% (16.8%) | 8.4% (15.4%) |
  | DCNv2 within 20% | 24 of 25 | 23 of 25 |
  | DCNv2 v3.0 / v3.1 on 8 nodes | +6.8% / +2.2% | +5.4% / +9.4% |
  | DCNv2 v3.0 / v3.1 on 16 nodes | +15.0% / -11.3% | +9.8% / -7.5% |
  | forward median (max), Spearman | 12.8% (306%), 0.923 | 14.3% (312%), 0.923 |
  | memory / fabric / network efficiency | 0.66 / 0.67 / 1 (bound) | 0.93 / 0.71 / 1 (bound) |
  | TF32 / half-precision efficiency | 0.62 / 0.49 | 0.55 / 0.42 |

  (measured on calibration 2026.12-3's model; on 2026.12-2's the same comparison gave 10.4% /
  4.6% all-58, 12.5% / 7.3% leave-one-out and 12.8% / 14.3% forward.) Huber's fit gives the 4x
  H100 PCIe point weight 0.10 and ten others weights 0.37-0.92 (the DeepLearningExamples TF2 DCNv2
  on one A100 in mixed precision 0.37, the 8x A30 0.44, the 4x H100 SXM Supermicro 0.46, the DGX
  H100 v2.1 preview 0.47, ...); with them it lifts the HBM efficiency to 0.93, which brings the
  8-GPU H100 v3.1 boxes to within 4% but pushes the points it weighs down further out (A30 +33%,
  the Supermicro +31%, the v2.1 preview +31%). Out of sample it predicts the left-out point better
  (leave-one-out median 8.4% against 11.6%) but the later DCNv2 points from the one-hot points
  worse (forward median 14.3% against 12.8%), so by the rule fixed before it was first measured
  (both no worse) least squares stays the calibration's loss. Huber's fit meets every target of
  issue 13 but one (every DCNv2 point within 20%: the 4x H100 PCIe and the 4x H100 SXM Supermicro
  miss it); choosing it would trade the forward figure, the test of hardware not yet measured,
  for the in-sample and leave-one-out ones.

Targets not met are listed as such in the summary above; no efficiency was set by hand."""

GENERATIONS = """\
What calibration 2026.12-8 changes (issue 40, "Fidelity across accelerator generations"):

- **Half-precision math runs at each part's measured matmul ceiling.** The model scaled dense
  compute with the catalog's peak times one fitted efficiency per precision, the same for every
  generation and vendor. Each accelerator entry now carries `matmul_efficiency`, the maximum
  achievable BF16 matmul FLOP/s measured on that part over its peak (docs/sources.md, "Achieved
  matmul rates by part": A100 SXM 0.869, H100/H200 0.803, B200 0.776, B300 0.786, GB200 0.729,
  MI300X 0.511, MI325X 0.600, MI355X 0.622, Gaudi 2 0.969, Gaudi 3 0.677; 0.80 where no measurement
  exists, named in `assumed`), and `dense_efficiency_half` is the share of that ceiling DLRM's
  layers reach (0.494). Every other part of the step was already per layer: each GEMM of the bottom
  MLP, the DCNv2 cross layers and the top MLP by its own roofline with wave quantisation over the
  part's SMs, its element-wise passes and the interaction at HBM bandwidth, and a per-kernel cost
  that does not scale with the peak (`kernel_overhead_s`, at its measured floor of 0.5 us, the
  CUDA-graph gap measured on Volta and again on Blackwell).
- **The ratio a buyer acts on** is now reported (`dse.calibration.generations`): every pair of
  measured systems on the same job, the error of their predicted over measured ratio, and each
  architecture left out of the fit and predicted. A generation no measurement has takes the
  leave-one-generation-out errors for its interval (`dse.calibration.ensemble`).

| figure (issue 40's target) | 2026.12-7 | 2026.12-8 |
|---|---|---|
| median abs error, 57 points (<= 6%) | 4.8% | 5.3% |
| leave-one-out median (<= 8%) | 6.1% | 6.3% |
| forward median, fit through 2022 (<= 8%); max (<= 20%) | 10.3%; 25.2% | 13.2%; 22.9% |
| Hopper left out, median (<= 12%); max; mean log error | 6.8%; 47.1%; +0.078 | 5.0%; 44.3%; +0.060 |
| pairwise ratios, 174 pairs: median (<= 6%); worst (<= 25%) | 4.8%; 32.1% | 3.6%; 29.5% |
| the same, each point left out of the fit | 5.7%; 60.9% | 4.1%; 55.7% |
| the same among the forward predictions | 5.9%; 29.8% | 6.5%; 30.8% |
| DCNv2 pairs (128): median; worst | 4.4%; 25.2% | 2.6%; 25.6% |
| Spearman, all points; DCNv2 | 0.996; 0.975 | 0.996; 0.976 |
| Ampere / Volta / Ada left out, median | 13.9% / 3.4% / 7.1% | 15.1% / 7.4% / 6.1% |
| leave-one-out coverage of the 80% intervals | 47 of 57 | 48 of 57 |
| evaluation, M instructions: dcnv2 / v1 / proda | 3.612 / 1.929 / 34.11 | 3.613 / 1.931 / 34.11 |
| evaluation, M instructions: zion / cpu | 7.877 / 1.439 | 7.878 / 1.438 |

**Adopted as the price of a defect fixed, not by the rule.** All three medians are worse (in
sample by 0.5 points, left out by 0.2, forward by 3.0), so by the rule every calibration since
2026.12-3 has used this change would not pass; it is adopted because the defect it fixes is the one
issue 40 is about, and is larger than what it costs here: with peak alone, dse rated an MI300X node
38% faster than a DGX H100 on DCNv2 and an MI300X's dense math 32% faster than an H100's, where the
measured matmul ceilings (668 against 795 TFLOP/s) put it 16% slower; Gaudi 3, MI355X and GB200
were over-rated by their peak in the same way. What the data here can judge moves the right way:
the ratios between measured systems (median 4.8% to 3.6%, each point left out 5.7% to 4.1%; the
v3.0 DGX H100 over the Dell 8x A100 box, same software, from 4.8% to 1.1% off), and Hopper predicted by
a fit that never saw it (median 6.8% to 5.0%, its over-rating from 8% to 6%). The forward figure
is worse for a reason the data show: fitted on the one-hot points, the model scores 2023's
software at the reference release's speed and so under-predicts every v3.x point by about 10%,
which a 5% over-rating of H100 against A100 used to offset in part; with H100's lower measured
ceiling the two no longer cancel. The forward fit from the priors is also not sharply determined:
started from other half-precision efficiencies it lands between 8.9% and 11.4% on 2026.12-7's model
and between 11.8% and 13.3% on this one, so differences under about 2.5 points there are not
resolved. Volta and Ampere left out get worse (3.4% to 7.4%, 13.9% to 15.1%): V100 has no measured
ceiling and takes the 0.80 default against A100's measured 0.87, which the DeepLearningExamples
V100/A100 points do not bear out (the one-GPU A100/V100 mixed-precision pair is the worst pair,
29.5% off, 22.7% before). Whether 0.80 is right for V100 is not known; choosing it by its effect
would be tuning (with A100's 0.869 for V100: in-sample 4.9%, ratios 4.6%, forward 11.8%).

**What it does to the question issue 40 asks.** At the reference software on one node
(`dse evaluate -w mlperf-dlrm-dcnv2`): DGX H100 13.46 to 12.88 M samples/s, HGX H200 16.37 to
15.71, DGX B200 30.31 to 28.75, MI300X 18.57 to 14.90, MI355X 29.96 to 26.73, Gaudi 2 8.52 to
8.74, Gaudi 3 17.25 to 15.90. The B200/H100 ratio moves from 2.25 to 2.23 only: B200's measured
matmul ceiling is 3% below H100's, and no published microbenchmark found puts B200's HBM, gather
or kernel costs further below H100's (docs/sources.md, "Fixed costs per kernel", "Embedding gathers
by generation"). What the data hold about an unmeasured generation is in its interval instead:
built from the Hopper, Ampere, Volta and Ada holdouts' errors, it runs from -18% to +28% around the
B200 node's point.

**Tried and not adopted** (each measured with the same fit on the same 57 points, the matmul
ceilings in place):

- A fixed time inside every dense kernel beyond `kernel_overhead_s` (a tile-sized cuBLAS GEMM takes
  2.1-2.9 us end to end): fitted, the data drive it to 0; held at 1, 2 and 3 us, in-sample 5.3%,
  5.6% and 5.4%, ratio median 3.9%, 4.8% and 3.9%, Hopper left out 4.6%, 4.7% and 4.4%: no
  consistent gain, a cost the data do not ask for.
- The DCNv2 cross layer's element-wise work as the layer does it (x0 * (W v + b) + x: 4 passes
  forward and 6-8 backward over the 3,456-wide output, none after the low-rank projection, against
  2 and 4 after each GEMM): in-sample 5.5-5.8%, forward 16.0-18.2%.
- Embedding gathers by generation: the one published gather microbenchmark is H100's (0.79 of
  peak), none for Blackwell, CDNA or Gaudi; `memory_efficiency` stays one parameter.

**Calibration 2026.12-9** is 2026.12-8 with `accelerator_training_utilisation` refitted, 0.61 to
0.62 (exact 0.6176), after power came to follow the step (issue 41): the measured node's links now
draw 5% under full while they idle, so 0.61 drew 7,047 W, under the measured 7.06-7.11 kW, and 0.62
draws 7,097 W, inside it. `dse calibrate` now fits it (to two decimals, the precision the measured
range holds) after the throughput fit; it moves no step, so every throughput figure above holds.

**Calibration 2026.12-10 counts the distinct rows a step touches under the workload's skew.** The
embedding backward reads and writes each distinct row once, with its optimizer state; the model
counted them as if the lookups were drawn uniformly, R (1 - exp(-L/R)), which it called exact for
DCNv2's multi-hot lookups. It is not: MLPerf's synthetic multi-hot maps each Criteo one-hot id to
itself and fixed partners drawn once (facebookresearch/dlrm `torchrec_dlrm/multi_hot.py`), so a
popular id brings its partners along and the skew of the one-hot data carries over to every lookup
(docs/sources.md, "mlperf-dlrm-dcnv2"). Under the workload's Zipf exponent (`access_zipf`, 1.05, an
assumption) 44% of a 40M-row table's ids are distinct at the one-node batch, and DCNv2's Adagrad
backward (row and per-element state, read and written) moves about half the bytes it did on the big
tables. One-hot lookups are counted under the same law, the cold part of a table with hot rows over
the ranks past its hot set. The refit (least squares, the same 57 points):

| figure | 2026.12-9 | 2026.12-10 | target |
|---|---|---|---|
| median, in sample | 5.3% | 5.6% | <= 6% |
| leave-one-out median | 6.3% | 6.6% | <= 8% |
| forward median (fit through 2022, predict 2023) | 13.2% | 5.0% | <= 8% |
| forward max | 22.9% | 34.5% | <= 20% |
| ratio median / worst | 3.6% / 29.5% | 4.0% / 28.2% | <= 6% / <= 25% |
| Hopper left out, median | 5.0% | 9.2% | <= 12% |
| HugeCTR 23.04 / 23.09 software factors | 1.053 / 1.139 | 0.976 / 1.049 | |

The 2023 HugeCTR releases no longer need a speed-up of 5-14% over the reference release to be
fitted: the model's own count of the backward's bytes explains most of it, and the forward test,
which runs them at the reference speed, falls from 13.2% to 5.0%. Its maximum rises: it is the
v3.1 Supermicro 4x H100 SXM board (5.84 M samples/s measured, 18% under the same board's v3.0
submission with older software, which no model of the hardware reproduces; +35% forward) and
v3.0's 16-node DGX H100 (no faster than its 8-node run; +31%); the DeepLearningExamples TF2 DCNv2
points on one and eight A100s stay about 22% off, one under and one over, as before. The worst
ratio is the one-GPU A100-80/V100 mixed-precision pair (V100's matmul ceiling, above). At the
reference software one DGX H100 node runs DCNv2 at 14.06 M samples/s (12.88 under 2026.12-9; 14.50
and 15.24 measured in v3.0 and v3.1), an HGX H200 at 17.18 and a DGX B200 at 31.41: B200/H100 stays
2.23, as both are bound by dense compute, which this change does not touch.

The exponent is an assumption no measurement of Criteo 1TB pins, and the fit leans on it: refitted
with every measured workload at 0.9, 1.0, 1.1 and 1.2 (1.05 packaged), the in-sample median is
6.4%, 5.7%, 4.7% and 4.3%, the forward median 7.6%, 5.1%, 5.7% and 4.9% and its maximum 35-43%, the
ratio median 4.7%, 5.2%, 6.4% and 5.5% (at 0.8 and 1.3: in sample 7.0% and 4.0%, forward 7.0% and
2.9%). The data do not pin it, so it is a range every interval takes in, 0.25 either side of the
workload's exponent (`access_zipf_spread` in the calibration; `dse.calibration.ensemble.skew_ends`
places and times the design again at both ends): one DGX H100 on DCNv2 runs 12.2 M samples/s at
0.8 and 14.7 M at 1.3 (14.1 M at 1.05), inside its interval (-16% to +26%); designs whose tables
sit behind a cache in HBM widen most, as the skew sets the cache's hits (the Zion preset: -65% to
+50%). A calibration fitted to your own rows keeps no such range: they were measured on your data.

With fewer distinct rows the embedding bytes of a table in HBM fall, and with them the load the
placement balances; the host tables of a node whose accelerators' memory is full then went to the
devices with the least load, whose memory was the fullest, and every lookup of theirs missed the
cache: one Zion on `zion-2019` fell from 481 k to 302 k samples/s (and under 2026.12-9 two Zion
nodes ran slower than one, 412 k, for the same reason). The placement now sends a host table served
from a cache to the device whose misses after taking it are fewest
(`dse.model.placement.partitioning`, `_serving_device`): one Zion trains 582 k samples/s, two
1.23 M.

**Calibration 2026.12-11** mends that count for derived multi-hot ids. The D distinct ids drawn are
rows of their own, and only their pooling - 1 partners land uniformly; 2026.12-10 threw all
pooling x D rows uniformly, so a drawn id could collide with itself, and on DCNv2's mid-size tables
of low pooling (39,060 rows, two-hot, at the one-node batch) it counted 6% fewer rows than a
simulation of the same draws gives for the simulation's own distinct ids; now D + (R - D)(1 -
exp(-(pooling - 1) D / R)), within 1% of it (`tests/test_distinct_rows.py`; the cold part of a
table with a hot set also takes the partners of the hot ids drawn). D itself comes from the
model's continuous Zipf law, whose normalisation puts 4.5% more distinct ids on that table than the
discrete law p(r) ~ r^-1.05 does, so end to end the count is 3.9% over the simulation (2026.12-10's:
2.5% under, two errors that partly cancelled); the exponent's own range (0.8-1.3, below) is far
wider than that difference. The refit moves the fitted parameters in the fourth digit and every
point by under 0.1%: in sample 5.6%, left out 6.6%, forward 5.0% (max 34.5%), ratios 4.0% (worst
28.2%), as under 2026.12-10 (the forward ratios 6.3% to 6.2%), and one DGX H100 still trains DCNv2
at 14.06 M samples/s. The leave-one-out Spearman of the DCNv2 points falls from 0.972 to 0.933:
the seven 8x H100 boxes of v3.1 share one predicted figure (14.65 M, one software, one system), and
among ties a change in the fourth digit reorders the ranks. Hopper left out moves from 9.2% to
11.2%: the refit without Hopper rates every H100 point about 2% faster than before, which takes
most of them from 9-11% over to 11-12% over; its 22 points share one direction
of error (mean log error +0.108), so its median moves with any shift of that size.

**Tried on 2026.12-11 and not adopted** (the same fit on the same 57 points):

- A replica's backward updates each of its rows once (its gradient arrives reduced and dense),
  where the model charges it a row update per lookup (`max(lookups, rows)`, replicated tables and
  hot rows alike): in sample 5.6% to 5.2%, but forward 5.0% to 8.1% (max 46%), ratio median 4.0%
  to 6.4% and Hopper left out 11.2% to 14.2%; with a read-modify-write of a gradient row per
  lookup on top (the dense gradient buffer's accumulation): in sample 5.4%, forward 5.5% (max
  37%), ratios 5.5%, Hopper left out 12.1%. Both are worse out of sample than the charge kept.
- Hot rows of derived multi-hot ids by their own statistics: the hottest H rows are the hottest
  H / pooling ids with their partners, so they serve zipf_hit_rate(H / pooling) of the lookups and
  of the samples, where the model takes h and h^pooling of independent draws. No measured point
  uses hot rows on multi-hot tables (HugeCTR's hybrid embedding reads one-hot data only), so the
  fit cannot judge it; with the replica charge kept, the hot rows it then picks on 15 of DCNv2's
  tables slow one DGX H100 from 14.06 to 13.47 M samples/s (14.17 M with no hot rows on multi-hot
  tables): the two belong together.
"""

UNDER_RATING = """\
**Status under calibration 2026.12-5.** Every single-node H100 SXM DCNv2 point but one is
predicted within 5% with its software family's factor (the seven 8-GPU v3.1 boxes 3.0-3.9% under,
v3.0's DGX H100 4.4% under, the 4-GPU Dell boxes within 4%); the exception is the v3.1 Supermicro
4x H100 SXM board (+31%), whose own v3.0 submission is +4.8%, and the 8x H100 PCIe box is +8.0%.
A *design* is scored at the reference software's speed (MLPerf v2.0 HugeCTR), and there
`-s dgx-h100` gives 13.5 M samples/s against 14.50 M (v3.0, -7%) and 15.24 M (v3.1, -12%)
measured (12.3 M under 2026.12-3, 13.1 M under 2026.12-4); `-s hgx-h200` 16.4 M. The rest is the
2023 software's speed: the fit puts HugeCTR 23.04 and 23.09 at 1.02 and 1.10 times the reference,
which a design does not get. Which share of that gap is software and which is hardware the
measurements cannot tell for certain: every DCNv2 point ran 2023 software, so the split between
the shared efficiencies and the 2023 factors is set by the one-hot points. The forward test is the
check: fitted through 2022 only, the model predicts the later points at the reference software's
speed with a median error of 10.3%, and 3.3% once each later family's fitted factor is applied.

The issue (27, item 5): single-node H100/H200-class systems on DLRM-DCNv2 came out 13-25% under
what they measure (calibration 2026.12-3). Reproduced on the published v3.0/v3.1 points only,
never on later rounds. Four causes, each with its evidence; no factor was added for any of them
but the preview family's, which applies a rule the 2023 rounds already followed.

- **The Quanta point held the shared HBM efficiency down** (removed by item 1's rule in 2026.12-4).
  The 4x H100 PCIe Quanta D54U-3U (+218%, its logs show the machine slowing in mid-run) was the
  fit's largest residual and HBM-bound, so least squares lowered `memory_efficiency` for every
  design. Its exclusion took the 8-GPU v3.1 H100 boxes from -13% to -4% with their factors.
- **The reference software's weight-gradient side stream, not granted** (granted in 2026.12-5).
  A design is scored with the reference family's layout, whose `[software]` default put the top
  MLP's whole backward before the backward all-to-all. That software overlaps it: NVIDIA's
  MLPerf Training v2.0 DLRM configuration sets `async_mlp_wgrad = True`
  (mlcommons/training_results_v2.0 `NVIDIA/benchmarks/dlrm/implementations/hugectr/dgx_a100.py`),
  as does v2.1's (`hugectr-preview/dgx_h100.py`), and HugeCTR issues each fused layer's weight
  GEMM on `comp_overlap_stream` when it is set (NVIDIA-Merlin/HugeCTR v3.5
  `src/layers/fused_relu_bias_fully_connected_layer.cu`, `bprop`). The option first appears in
  v3.3, so the v0.7 (HugeCTR 2.2) and v1.0 (3.1, `"enable_overlap"` only) runs had none; the 2023
  DCNv2 runs carry it (`async_wgrad=True`). On one DGX H100 the top MLP's weight gradients were
  0.55 ms of a 3.97 ms modelled step, charged on the critical path though the software hid them.
  `software.overlap_weight_gradients` now defaults to true, and is false for the families whose
  software had none (`hugectr-2020`, `hugectr-2021`, and the two DeepLearningExamples families,
  whose backward is framework autograd on one stream;
  `dse.calibration.measurements.SOFTWARE_CAPABILITIES`). A node without accelerators never
  overlaps it: the CPU class's measured software (Intel's DLRM on PyTorch) runs its backward in
  framework autograd, as DeepLearningExamples does.
- **The allreduce beside the all-to-all, not granted** (granted in 2026.12-5). The same v2.0
  configuration sets `overlap_ar_a2a = True`: the allreduce runs beside the backward all-to-all,
  not only beside the compute after it, as the model had it (it hid the allreduce behind the
  embedding update or the bottom MLP's backward, whichever was longer). Granting the side stream
  made that rule non-monotone: with the weight gradients beside the all-to-all, a faster
  embedding update shortened the allreduce's cover while the phase stayed as long, and halving
  `embedding_memory` lengthened the step by up to 6% on 2 A100 PCIe x4 nodes (the what-if test
  caught it). The allreduce now runs beside the whole backward phase, so the phase lasts
  max(all-to-all and update, dense backward, allreduce), and no stage made faster lengthens the
  step. Measured and not taken: the allreduce after the all-to-all on the links they share (the
  phase lasts max(phase, all-to-all + allreduce)), monotone too, but the configuration overlaps
  them and it fits worse on every figure.
- **The v2.1 preview's pre-release software, counted as the reference** (its own family in
  2026.12-5). The two v2.1 DGX H100 points ran `hugectr-preview`, status preview, and shared the
  reference family (v2.0's 22.04 release) and so a factor of exactly 1; the one-node point sat
  15-29% over its measurement in every fit, and in the fit through 2022 it is the only
  single-node H100, so it set what every later H100 was predicted at (fitted through 2022 without
  it, with the side stream granted, the HBM efficiency went to its bound of 1). One family per
  MLPerf round, as the 2023 rounds already had, gives it its own factor (0.920).

Measured in this order (`dse calibrate`, fitted from the priors; design = `dse evaluate` on the
preset, in M samples/s; forward: fit through 2022, predict the 28 later points):

| | median | leave-one-out | forward median / mean / max | DGX H100 design | HGX H200 design |
|---|---|---|---|---|---|
| 2026.12-3 (58 points) | 10.2% | 11.6% | 12.8% / - / 306% | 12.28 | 14.80 |
| side stream, Quanta fitted (58; not adopted) | 9.9% | 10.9% | 12.9% / - / - | 11.07 | 14.36 |
| 2026.12-4: Quanta excluded (57) | 6.0% | 7.6% | 12.1% / 15.2% / 45.5% | 13.11 | 15.29 |
| + side stream, old allreduce rule (not monotone) | 5.6% | 6.6% | 12.5% / 12.2% / 28.8% | 13.88 | 16.86 |
| + side stream, allreduce after the all-to-all | 5.9% | 7.3% | 13.3% / 13.6% / 27.8% | - | - |
| + side stream, allreduce beside the phase | 5.0% | 6.4% | 13.3% / 12.6% / 25.4% | 12.86 | 15.78 |
| 2026.12-5: the last + the preview family | 4.8% | 6.1% | 10.3% / 9.4% / 25.2% | 13.46 | 16.37 |

**Adopted by the rule every calibration since 2026.12-3 has used**: all-point, leave-one-out and
forward medians each no worse than the calibration before (6.0% to 4.8%, 7.6% to 6.1%, 12.1% to
10.3%). Of its parts, the overlaps alone raised the forward median (to 13.3%) while lowering its
mean (to 12.6%) and max (to 25.4%); the preview family was measured only on top of them. A paired
bootstrap of the 28 later points (10,000 resamples) puts the median's change from 2026.12-4
between -9.6 and +2.1 points at 90%: the forward figure improved, but by less than its noise. The
forward errors also change sign: 2026.12-4 over-predicted 24 of the 28 later points, 2026.12-5
under-predicts 20, and later software running faster than the reference is the sign to expect."""


def render_markdown(v: Validation, intervals: Sequence[str] = ()) -> str:
    """``docs/validation.md``: generated by ``dse validate --markdown docs/validation.md``;
    ``intervals``: the section on the prediction intervals (:mod:`dse.outputs.intervals_doc`),
    before the analysis."""
    c = v.calibration
    out = [
        "# Model validation against published DLRM training measurements",
        "",
        "Generated by `dse validate --forward --markdown docs/validation.md` (do not edit by hand).",
        "Data: `dse/data/dlrm_measurements.csv` (NVIDIA DeepLearningExamples tables and MLPerf",
        "Training DLRM v0.7-v2.1 results) and `dse/data/mlperf_dcnv2_2023.csv` (MLPerf Training",
        "v3.0/v3.1 DLRM-DCNv2, net of evaluation); every row names its source, publication month and",
        f"results path. Calibration version `{c.version}`, fitted by `dse calibrate`.",
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
        f"| `accelerator_training_utilisation` (fitted to wall power, not throughput) | "
        f"{c.accelerator_training_utilisation:.4g} |",
        "",
        "### Parameters at a bound of their range",
        "",
        *([f"- {line}" for line in bound_lines(v)] or ["- none"]),
        "",
        "### Loss",
        "",
        *loss_lines(v),
        "",
        "### Parameters kept at their priors",
        "",
        *[f"- `{name}` = {getattr(c, name):.4g}: {why}" for name, why in PRIOR_REASONS.items()],
        "",
        "## Error by group (median |error|)",
        "",
        "| group | value | median abs error |",
        "|---|---|---|",
    ]
    for key in ("family", "accelerator", "workload"):
        out.extend(f"| {key} | {k} | {e:.1f}% |" for k, e in by_group(v, key).items())
    out += ["", "## Excluded: the machine changed state during the run", "", *exclusion_lines(v)]
    if v.forward is not None:
        f = v.forward
        out += ["", "## Forward validation", "",
                f"Fitted from the priors on the {len(f.fitted)} measurements published through "
                f"{f.cut}, then used to predict the {len(f.points)} published later (software "
                "families unseen at the cut run at the reference family's speed, as a new design "
                "would).", "",
                "| id | published | measured (M samples/s) | predicted | abs error |",
                "|---|---|---|---|---|"]
        out += [f"| {m.id} | {m.published} | {m.samples_per_s / 1e6:.2f} | {p / 1e6:.2f} | "
                f"{abs(p - m.samples_per_s) / m.samples_per_s * 100:.1f}% |" for m, p in f.points]
    out += ["", *ratio_section(v), "", GENERATIONS]
    out += ["", *intervals, "## Analysis", "", ANALYSIS, "",
            "## The single-node H100/H200 under-rating", "", UNDER_RATING]
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


def _hover(p: PointReport) -> str:
    """A measured point's hover text (the measurement file may be the user's: escaped)."""
    m = p.measurement
    return (f"{plot_text(m.id)}<br>{m.accelerators} x {plot_text(m.accelerator)} "
            f"({plot_text(m.scaleup)})<br>{plot_text(m.workload)} {plot_text(m.precision)}"
            f"<br>error {p.abs_pct_error:.1f}%")


def render_html(v: Validation) -> str:
    """A standalone Plotly page: predicted against measured on log axes with the identity line
    (hover: system and workload), the median error by group, and every pair of systems on the
    same job, predicted ratio against measured ratio (:func:`add_ratio_plot`)."""
    fig = make_subplots(rows=2, cols=2, column_widths=[0.6, 0.4], row_heights=[0.55, 0.45],
                        specs=[[{}, {}], [{"colspan": 2}, None]],
                        subplot_titles=("predicted vs measured (samples/s)",
                                        "median |error| by software family",
                                        "ratio of two systems on the same job: predicted vs measured"))
    families = sorted({p.measurement.family for p in v.points})
    for fam in families:
        pts = [p for p in v.points if p.measurement.family == fam]
        fig.add_trace(go.Scatter(
            x=[p.measurement.samples_per_s for p in pts], y=[p.predicted for p in pts],
            mode="markers", name=plot_text(fam),
            text=[_hover(p) for p in pts],
            hovertemplate="%{text}<br>measured %{x:.3s}<br>predicted %{y:.3s}<extra></extra>",
        ), row=1, col=1)
    if v.excluded:  # shown, apart: the fit never saw them
        fig.add_trace(go.Scatter(
            x=[p.measurement.samples_per_s for p in v.excluded], y=[p.predicted for p in v.excluded],
            mode="markers", marker={"symbol": "x", "color": "black"},
            name="excluded (machine changed state)", text=[_hover(p) for p in v.excluded],
            hovertemplate="%{text}<br>measured %{x:.3s}<br>predicted %{y:.3s}<extra></extra>",
        ), row=1, col=1)
    shown = (*v.points, *v.excluded)
    values = [p.measurement.samples_per_s for p in shown] + [p.predicted for p in shown]
    lo, hi = min(values) * 0.8, max(values) * 1.25
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="identity",
                             line={"dash": "dash", "color": "gray"}), row=1, col=1)
    groups = by_group(v, "family")
    fig.add_trace(go.Bar(x=[plot_text(g) for g in groups], y=list(groups.values()), name="median |error| %",
                         showlegend=False), row=1, col=2)
    add_ratio_plot(fig, v.ratios, row=2, col=1)
    fig.update_xaxes(type="log", title_text="measured", row=1, col=1)
    fig.update_yaxes(type="log", title_text="predicted", row=1, col=1)
    fig.update_yaxes(title_text="%", row=1, col=2)
    fig.update_layout(title=plot_text(f"dse validation, calibration {v.calibration.version}: "
                                      + "; ".join(summary_lines(v)[:4])), height=1100)
    html: str = fig.to_html(include_plotlyjs=True, full_html=True)
    return html


def add_ratio_plot(fig: go.Figure, ratios: RatioReport, row: int, col: int) -> None:
    """Every pair of ``ratios`` as a point (measured ratio, predicted ratio) on log axes, one trace
    per workload, with the identity line and the +-25% band of issue 40's worst-pair target
    (hover: the pair, both ratios and the ratio error)."""
    pairs = ratios.pairs
    if not pairs:
        return
    for workload in sorted({p.workload for p in pairs}):
        got = [p for p in pairs if p.workload == workload]
        fig.add_trace(go.Scatter(
            x=[p.measured for p in got], y=[p.predicted for p in got], mode="markers",
            marker={"size": 6, "opacity": 0.7}, name=plot_text(f"pairs: {workload}"),
            text=[plot_text(f"{p.a} / {p.b}") + f"<br>ratio error {p.error_pct:.1f}%" for p in got],
            hovertemplate="%{text}<br>measured ratio %{x:.3f}<br>predicted ratio %{y:.3f}<extra></extra>",
        ), row=row, col=col)
    values = [x for p in pairs for x in (p.measured, p.predicted)]
    lo, hi = min(values) * 0.8, max(values) * 1.25
    band = 1.0 + TARGETS["ratio_max_pct"] / 100.0
    for factor, name, dash in ((1.0, "identity (right ratio)", "dash"), (band, "ratio off by 25%", "dot"),
                               (1.0 / band, "ratio off by 25%", "dot")):
        fig.add_trace(go.Scatter(x=[lo, hi], y=[lo * factor, hi * factor], mode="lines", name=name,
                                 showlegend=factor != band,
                                 line={"dash": dash, "color": "gray"}), row=row, col=col)
    fig.update_xaxes(type="log", title_text="measured ratio", row=row, col=col)
    fig.update_yaxes(type="log", title_text="predicted ratio", row=row, col=col)
