"""Report generation time and size for a large study.

    python benchmarks/bench_report.py                 # builds a 5,000-trial study first (NSGA-II)
    python benchmarks/bench_report.py --trials 1000
    python benchmarks/bench_report.py --json

Targets (report issue): a 5,000-trial study's report in under 10 s, the file under 15 MB; with
the front under the model's error (issue 14), within 2x of the report without it
(``report_without_robust_s``, what the page cost before; ``robust_ratio``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import optuna

from dse.outputs.report import render_report
from dse.search.runner import run_study
from dse.search.storage.opening import open_storage
from dse.search.study.objective_sets import load_objectives
from dse.search.study.study_file import StudySpec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=5000)
    parser.add_argument("--journal", type=Path, default=None,
                        help="reuse this journal (built on first use)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="renders of each page (best kept)")
    args = parser.parse_args()
    journal = args.journal or Path(tempfile.mkdtemp()) / "bench-report.journal"
    spec = StudySpec(name=f"bench-report-{args.trials}", workload="mlperf-dlrm-dcnv2", space="full",
                     objectives="throughput-capex-power", budget=args.trials, sampler="nsga2",
                     seed=3, storage=str(journal))
    start = time.perf_counter()
    run_study(spec)
    build_s = time.perf_counter() - start
    study = optuna.load_study(study_name=spec.name, storage=open_storage(None, spec))
    # Both pages rendered in turn, best of --repeat each: on a shared machine the load moves
    # between two timings more than the section costs.
    timings: dict[bool, list[float]] = {False: [], True: []}
    page = ""
    for _ in range(args.repeat):
        for robust in (False, True):
            start = time.perf_counter()
            page = render_report(study, spec, load_objectives(spec.objectives), robust=robust)
            timings[robust].append(time.perf_counter() - start)
    report_s, without_robust_s = min(timings[True]), min(timings[False])
    out = journal.with_suffix(".html")
    out.write_text(page, encoding="utf-8")
    result = {"trials": len(study.trials), "front": len(study.best_trials),
              "report_s": round(report_s, 2),
              "report_without_robust_s": round(without_robust_s, 2),
              "robust_ratio": round(report_s / without_robust_s, 2),
              "size_mb": round(out.stat().st_size / 1e6, 2),
              "study_build_s": round(build_s, 1)}
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:15s} {v}")


if __name__ == "__main__":
    main()
