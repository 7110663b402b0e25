"""Wall time of whole studies, and where each trial's time goes.

    python benchmarks/bench_study.py                     # 1,000 and 5,000 trials, then SQLite vs journal
    python benchmarks/bench_study.py --trials 1000 --json
    python benchmarks/bench_study.py --trials 300 --storage-trials 100   # a quick look

Each study is fresh, with the default sampler (``auto``: TPE, then NSGA-II after 250 trials) and the
default storage (Optuna's journal file, here in a temporary folder) on the default study's workload,
space and objectives (``zion-2020``: zion-2019 on zion-node, throughput against capex). Per trial:

- model: ``evaluate()`` alone, timed again afterwards over the same designs (no storage, no sampler);
- dse: the rest of dse's work inside a trial: recording its worker, the budget check, building the
  system from the design, writing its metrics, breakdown, design and constraints (``write_trial_attrs``);
- Optuna: everything else (``ask``/``tell``, the sampler's suggestions, the journal's reads and
  writes of parameters and states).

Then the per-trial cost of SQLite against the journal on a short study of the same kind.

Targets (the studies issue): 1,000 trials in under 60 s, 5,000 in under 5 minutes on this 2-core
machine.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import optuna

import dse.search.trial_objective as objective_mod
from dse.errors import DseInputError
from dse.model.evaluate import evaluate
from dse.search.runner import run_study
from dse.search.study.encoding import design_system
from dse.search.study.study_file import (
    DEFAULT_STUDY,
    StudySpec,
    load_study_spec,
    study_objectives,
    study_space,
    study_workload,
)
from dse.search.trial_objective import DesignObjective

TARGETS_S = {1000: 60.0, 5000: 300.0}


class Timers:
    """Seconds spent in the wrapped functions, and their call counts."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
                self.calls[name] = self.calls.get(name, 0) + 1

        return timed


@contextmanager
def instrumented(timers: Timers) -> Iterator[None]:
    """Time dse's parts of a trial by wrapping them where dse.search.trial_objective calls them."""
    names = ("evaluate", "suggest_design", "write_trial_attrs", "over_budget")
    saved = {n: getattr(objective_mod, n) for n in names}
    saved_call = DesignObjective.__call__
    try:
        for n in names:
            setattr(objective_mod, n, timers.wrap(n, saved[n]))
        DesignObjective.__call__ = timers.wrap("objective", saved_call)  # type: ignore[method-assign]
        yield
    finally:
        for n, fn in saved.items():
            setattr(objective_mod, n, fn)
        DesignObjective.__call__ = saved_call  # type: ignore[method-assign]


def study_spec(trials: int, storage: str, name: str) -> StudySpec:
    base = load_study_spec(DEFAULT_STUDY)
    return StudySpec(name=name, workload=base.workload, space=base.space, objectives=base.objectives,
                     budget=trials, sampler="auto", seed=base.seed, storage=storage,
                     workload_overrides=base.workload_overrides)


def model_alone(spec: StudySpec, study: optuna.Study) -> float:
    """Seconds of evaluate() alone over the designs of ``study``'s completed trials."""
    objective = DesignObjective(study_workload(spec), study_space(spec), study_objectives(spec),
                                spec.budget)
    systems = []
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
        try:
            systems.append(design_system(objective.space, t.user_attrs["design"], objective.catalog))
        except DseInputError:
            continue  # a design the schema cannot express: never evaluated
    start = time.perf_counter()
    for system in systems:
        evaluate(objective.workload, system, objective.calibration, objective.catalog)
    return time.perf_counter() - start


def bench_study(trials: int, folder: Path) -> dict[str, Any]:
    """One fresh study of ``trials`` trials on the default storage, timed part by part."""
    spec = study_spec(trials, str(folder / f"bench-{trials}.journal"), f"bench-{trials}")
    timers = Timers()
    with instrumented(timers):
        start = time.perf_counter()
        study = run_study(spec)
        wall = time.perf_counter() - start
    done = len(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))
    assert done == trials, (done, trials)
    s = timers.seconds
    model = model_alone(spec, study)
    dse_s = s["objective"] - s["suggest_design"] - s["evaluate"]
    optuna_s = wall - s["objective"] + s["suggest_design"]
    ms = 1000.0 / trials
    return {
        "trials": trials,
        "wall_s": wall,
        "target_s": TARGETS_S.get(trials),
        "per_trial_ms": wall * ms,
        "model_ms": model * ms,
        "model_in_run_ms": s["evaluate"] * ms,
        "dse_ms": dse_s * ms,
        "dse_attrs_ms": s["write_trial_attrs"] * ms,
        "dse_budget_check_ms": s["_over_budget"] * ms,
        "optuna_ms": optuna_s * ms,
        "optuna_suggest_ms": s["suggest_design"] * ms,
        "journal_mb": (folder / f"bench-{trials}.journal").stat().st_size / 1e6,
    }


def bench_storage(trials: int, folder: Path) -> dict[str, Any]:
    """Per-trial wall time of the same short study on the journal and on SQLite."""
    out: dict[str, Any] = {"trials": trials}
    for kind, url in (("journal", str(folder / "cmp.journal")),
                      ("sqlite", f"sqlite:///{folder / 'cmp.db'}")):
        spec = study_spec(trials, url, f"cmp-{kind}")
        start = time.perf_counter()
        run_study(spec)
        out[f"{kind}_ms_per_trial"] = (time.perf_counter() - start) * 1000.0 / trials
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--trials", default="1000,5000", help="study sizes, comma-separated")
    parser.add_argument("--storage-trials", type=int, default=200,
                        help="trials of the SQLite-versus-journal comparison (0: skip)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    sizes = [int(x) for x in args.trials.split(",") if x]
    with tempfile.TemporaryDirectory(prefix="dse-bench-") as tmp:
        folder = Path(tmp)
        studies = [bench_study(n, folder) for n in sizes]
        storage = bench_storage(args.storage_trials, folder) if args.storage_trials else None
    result = {"cpus": os.cpu_count(), "optuna": optuna.__version__, "studies": studies,
              "storage": storage}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"default study's workload and space, sampler auto, journal storage; optuna {optuna.__version__}")
    print(f"{'trials':>7} {'wall s':>8} {'target s':>8} {'ms/trial':>8} | {'model':>6} {'dse':>6} "
          f"{'(attrs':>6} {'budget)':>7} {'optuna':>7} {'(suggest)':>9}   ms per trial")
    for r in studies:
        target = f"{r['target_s']:.0f}" if r["target_s"] else "-"
        print(f"{r['trials']:>7} {r['wall_s']:>8.1f} {target:>8} {r['per_trial_ms']:>8.2f} | "
              f"{r['model_ms']:>6.2f} {r['dse_ms']:>6.2f} {r['dse_attrs_ms']:>6.2f} "
              f"{r['dse_budget_check_ms']:>7.2f} {r['optuna_ms']:>7.2f} {r['optuna_suggest_ms']:>9.2f}")
    if storage:
        print(f"storage, {storage['trials']} trials: journal {storage['journal_ms_per_trial']:.1f} ms/trial, "
              f"SQLite {storage['sqlite_ms_per_trial']:.1f} ms/trial")


if __name__ == "__main__":
    main()
