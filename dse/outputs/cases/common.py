"""What the case studies share: the headline figures of a directly scored design, and the
formatting of throughput, dollars, bottlenecks and front points in their pages' prose."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pandas as pd

from dse.model.workload import Workload
from dse.outputs.cases.framework import CaseData

THROUGHPUT = "throughput_samples_per_s"


def headline(data: CaseData, design: Mapping[str, Any], base: str | None = None) -> dict[str, Any]:
    """Headline figures of one directly scored design (a controlled comparison: one knob moved,
    everything else as the base system ``base`` is built)."""
    ev = data.evaluate(design, base)
    m = ev.metrics()
    return {
        "throughput": float(m[THROUGHPUT]),
        "capex_usd": float(m["capex_usd"]),
        "power_w": float(m["power_w"]),
        "per_kusd": float(m[THROUGHPUT]) / float(m["capex_usd"]) * 1e3,
        "ddr_used_gb": float(m["ddr_used_gb"]),
        "bottleneck": str(m["bottleneck"]),
        "feasible": bool(m["feasible"]),
        "a2a_fabric_ms": ev.timing.stages.a2a_fabric * 1e3,
        "step_ms": ev.step_time_s * 1e3,
    }


def with_workload(data: CaseData, workload: Workload) -> CaseData:
    """``data`` with designs scored on ``workload`` instead of the study's."""
    return dataclasses.replace(data, workload=workload)


def ksps(x: float) -> str:
    """Samples/s in thousands, or in millions from one million."""
    return f"{x / 1e3:,.0f} k samples/s" if x < 1e6 else f"{x / 1e6:,.2f} M samples/s"


def usd(x: float) -> str:
    """Dollars in thousands, or in millions from one million."""
    return f"${x / 1e6:,.2f} M" if x >= 1e6 else f"${x / 1e3:,.0f} k"


def bottlenecks(frame: pd.DataFrame) -> str:
    """The bottlenecks of ``frame``'s rows with their counts, most common first."""
    counts = frame["bottleneck"].value_counts()
    return ", ".join(f"{k} ({v})" for k, v in counts.items())


def count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is one (``count(1, "node")``: ``1 node``)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def nodes_point(r: pd.Series) -> str:
    """A front point of a study over node counts (and vendor nodes, if the space has them)."""
    system = f"{r['param:system']} " if "param:system" in r else ""
    return f"{count(int(r['nodes']), system + 'node')} ({usd(r['capex_usd'])}, {ksps(r[THROUGHPUT])})"
