"""Evaluations per second of the full model (placement included) on one core.

    python benchmarks/bench_evaluate.py            # a table
    python benchmarks/bench_evaluate.py --json     # {"case": {"evaluations_per_s": N}, ...}

Targets (issue "The DLRM system model"): at least 2,000 evaluations/s for the 26-table models and
100/s for the 1,000-table model on one core of this 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import time

from dse import evaluate, load_calibration, load_catalog, load_system, load_workload

CASES: dict[str, tuple[str, str, tuple[tuple[str, object], ...]]] = {
    "mlperf-dlrm-dcnv2@dgx-h100x16": ("mlperf-dlrm-dcnv2", "dgx-h100", (("nodes", 16),)),
    "mlperf-dlrm-v1@dgx-a100": ("mlperf-dlrm-v1", "dgx-a100", ()),
    "synthetic-production-a@dgx-h100x16": ("synthetic-production-a", "dgx-h100", (("nodes", 16),)),
}


def rate(workload: str, system: str, overrides: tuple[tuple[str, object], ...], seconds: float) -> float:
    """Evaluations per second, timed over at least ``seconds`` after one warm-up call."""
    wl = load_workload(workload)
    sysm = load_system(system, overrides)
    calib, cat = load_calibration(), load_catalog()
    evaluate(wl, sysm, calib, cat)
    n = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        evaluate(wl, sysm, calib, cat)
        n += 1
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--seconds", type=float, default=3.0, help="timing window per case")
    args = parser.parse_args()
    results = {name: {"evaluations_per_s": rate(*case, args.seconds)} for name, case in CASES.items()}
    if args.json:
        print(json.dumps(results))
        return
    for name, r in results.items():
        print(f"{name:40s} {r['evaluations_per_s']:10.1f} evaluations/s")


if __name__ == "__main__":
    main()
