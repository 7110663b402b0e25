"""Report generation time and size for a large study.

    python benchmarks/bench_report.py                 # builds a 5,000-trial study first (NSGA-II)
    python benchmarks/bench_report.py --trials 1000
    python benchmarks/bench_report.py --json

Targets (report issue): a 5,000-trial study's report in under 10 s, the file under 15 MB.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import optuna

from dse.outputs.report import render_report
from dse.search.objectives import load_objectives
from dse.search.runner import run_study
from dse.search.spec import StudySpec
from dse.search.storage import open_storage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=5000)
    parser.add_argument("--journal", type=Path, default=None,
                        help="reuse this journal (built on first use)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    journal = args.journal or Path(tempfile.mkdtemp()) / "bench-report.journal"
    spec = StudySpec(name=f"bench-report-{args.trials}", workload="mlperf-dlrm-dcnv2", space="full",
                     objectives="throughput-capex-power", budget=args.trials, sampler="nsga2",
                     seed=3, storage=str(journal))
    start = time.perf_counter()
    run_study(spec)
    build_s = time.perf_counter() - start
    study = optuna.load_study(study_name=spec.name, storage=open_storage(None, spec))
    start = time.perf_counter()
    page = render_report(study, spec, load_objectives(spec.objectives))
    report_s = time.perf_counter() - start
    out = journal.with_suffix(".html")
    out.write_text(page, encoding="utf-8")
    result = {"trials": len(study.trials), "front": len(study.best_trials),
              "report_s": round(report_s, 2), "size_mb": round(out.stat().st_size / 1e6, 2),
              "study_build_s": round(build_s, 1)}
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:15s} {v}")


if __name__ == "__main__":
    main()
