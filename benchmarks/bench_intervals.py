"""Cost of the 80% prediction intervals (issue 14): `dse evaluate --json` with intervals for a
128-accelerator DCNv2 design (DGX H100, 16 nodes, mlperf-dlrm-dcnv2).

    python benchmarks/bench_intervals.py          # a table
    python benchmarks/bench_intervals.py --json

Figures: the plain evaluation; the interval alone (every bootstrap member retimes the step);
what `dse evaluate --json` does after its imports (evaluate, interval, the JSON text), once with
the ensemble file parsed as in a fresh process and then warm; and the whole command in a fresh
Python process, imports included, for reference. Target: the JSON result with intervals in under
50 ms.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from dse import evaluate, load_calibration, load_catalog, load_system, load_workload
from dse.calibration import ensemble as ensemble_module
from dse.calibration.ensemble import load_ensemble, prediction_interval
from dse.cli._app import to_json
from dse.cli.evaluate import interval_json

ROOT = Path(__file__).resolve().parents[1]
COMMAND = ["evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-dcnv2", "--set", "nodes=16", "--json"]


def best_ms(fn: Callable[[], object], repeat: int) -> float:
    """Best of ``repeat`` timings of ``fn`` in milliseconds (the machine is shared)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    wl = load_workload("mlperf-dlrm-dcnv2")
    sysm = load_system("dgx-h100", (("nodes", 16),))
    calib, cat = load_calibration(), load_catalog()

    def cold_ensemble() -> object:
        ensemble_module._CACHE.clear()
        return load_ensemble(calibration=calib)

    def result_json() -> str:
        ev = evaluate(wl, sysm, calib, cat)
        iv = prediction_interval(ev, calibration=calib)
        return to_json({**ev.to_dict(), **interval_json(ev, iv, "")})

    def cold_result() -> str:
        ensemble_module._CACHE.clear()
        return result_json()

    ev = evaluate(wl, sysm, calib, cat)
    result_json()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dse", *COMMAND], cwd=ROOT, check=True,
                   capture_output=True)
    command_ms = (time.perf_counter() - start) * 1e3
    figures = {
        "evaluate_ms": best_ms(lambda: evaluate(wl, sysm, calib, cat), args.repeat),
        "interval_ms": best_ms(lambda: prediction_interval(ev, calibration=calib), args.repeat),
        "ensemble_parse_ms": best_ms(cold_ensemble, max(3, args.repeat // 5)),
        "json_with_intervals_cold_ms": best_ms(cold_result, max(3, args.repeat // 5)),
        "json_with_intervals_warm_ms": best_ms(result_json, args.repeat),
        "command_with_imports_ms": command_ms,
        "members": len(load_ensemble(calibration=calib).members),
    }
    if args.json:
        print(json.dumps(figures))
        return
    for name, value in figures.items():
        print(f"{name:30s} {value:10.1f}")


if __name__ == "__main__":
    main()
