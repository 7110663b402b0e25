"""Search quality: each sampler's hypervolume against the exact front of an exhaustive sweep.

    python benchmarks/search_quality.py --quick          # the reduced form CI runs (seconds)
    # the full run behind docs/benchmarks.md (about 25 minutes on this 2-core machine, most of it
    # sweeping; --front-cache keeps exact fronts between runs):
    python benchmarks/search_quality.py --front-cache /tmp/fronts --json main.json
    python benchmarks/search_quality.py --front-cache /tmp/fronts --samplers gp \
        --budgets 50,100,200 --seeds 3 --json gp.json            # gp apart: ~1-5 min per run
    python benchmarks/search_quality.py --front-cache /tmp/fronts --cases zion-2020-categorical \
        --samplers auto --json cat.json                          # ordinal-encoding ablation
    python benchmarks/search_quality.py --front-cache /tmp/fronts --cases '' --samplers '' \
        --long 5000 --json long.json                             # per-trial cost of a long study
    python benchmarks/search_quality.py --cases '' --samplers '' --rates --json rates.json
    python benchmarks/search_quality.py --merge main.json gp.json cat.json long.json rates.json \
        --markdown docs/benchmarks.md --html docs/benchmarks.html

For each case (a workload on a discrete space whose every design `dse sweep` scores) the exact front
is computed once; then every sampler runs an in-memory study per seed, exactly as `dse run` does
(the same objective, the baselines enqueued first), up to the largest budget. Samplers do not know
the budget, so the first N trials of one run are what a run of budget N does. The hypervolume
ratio of the first N trials is their hypervolume over the exact front's, both with the objectives
scaled between the exact front's ideal point and its nadir pushed 10% out (the reference point,
the same for every run); a design that misses a constraint does not count.

``--long N`` also runs an N-trial study of the default sampler through `dse run`'s own code path
(journal storage on disk) and records the cost of each trial against the trial count.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import itertools
import json
import math
import multiprocessing
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState

from dse.model.workload import load_workload
from dse.search.algorithms.pareto import non_dominated
from dse.search.algorithms.reference import REFERENCE_MAX_DESIGNS
from dse.search.algorithms.refine import coarse_to_fine, seed_new_study
from dse.search.algorithms.samplers import make_sampler
from dse.search.algorithms.sweep import SweepResult, coarse_grid, coarse_space, greedy_front, run_sweep
from dse.search.runner import enqueue_baselines, run_study
from dse.search.study.attribute_keys import PRESCREEN_KEY, WARM_START_KEY
from dse.search.study.objective_sets import ObjectiveSet, load_objectives
from dse.search.study.search_space import SearchSpace, load_space
from dse.search.study.seeding import PRESCREEN_S, WARM_MAX_TRIALS, warm_start_trials
from dse.search.study.study_file import load_study_spec
from dse.search.trial_objective import DesignObjective

ROOT = Path(__file__).resolve().parent.parent
optuna.logging.set_verbosity(optuna.logging.ERROR)  # GPSampler warns on every conditional parameter
SAMPLERS = ("auto", "auto-0.1", "tpe", "nsga2", "random", "gp")
COLORS = {"auto": "#1f77b4", "auto-0.1": "#d62728", "auto+warm": "#d62728", "tpe": "#9467bd",
          "nsga2": "#2ca02c", "random": "#7f7f7f", "gp": "#ff7f0e"}
LABELS = {"auto": "default (auto)", "auto-0.1": "previous default (TPE then NSGA-II)",
          "auto+warm": "default + warm start", "tpe": "tpe", "nsga2": "nsga2", "random": "random",
          "gp": "gp", "auto-w40": "default, warm start of 40",
          "auto-w20": "default, warm start of 20 (before)",
          "default, before the fabric move (refinement capped at 20,000 designs, pre-screen seed 0)":
              "default, before the fabric move"}


@dataclass(frozen=True)
class Case:
    """A workload on a discrete space, against an objective set."""

    name: str
    workload: str
    space: str
    objectives: str
    coarse_levels: int = 0
    """Cut the space to this many values per parameter (0: the space as it is)."""
    categorical: bool = False
    """Search ordered choices as unordered categories (an ablation of ordinal encodings; the
    designs and so the exact front are the same)."""
    nodes_high: int = 0
    """Widen (or cut) the space's ``nodes`` range to 1..this (0: as the space has it)."""

    @property
    def key(self) -> str:
        """What the exact front depends on."""
        nodes = f"-n{self.nodes_high}" if self.nodes_high else ""
        return f"{self.workload}@{self.space}{nodes}-{self.coarse_levels}-{self.objectives}"


CASES = {
    "zion-2020": Case("zion-2020", "zion-2019", "zion-node-grid", "throughput-vs-capex"),
    "production-12t": Case("production-12t", "synthetic-production-12t", "scale-out",
                           "throughput-vs-capex"),
    "ci": Case("ci", "zion-2019", "zion-node-grid", "throughput-vs-capex", coarse_levels=3),
    "todays-nodes": Case("todays-nodes", "mlperf-dlrm-dcnv2", "todays-nodes",
                         "throughput-vs-capex", nodes_high=32),
    "todays-nodes-3d": Case("todays-nodes-3d", "mlperf-dlrm-dcnv2", "todays-nodes",
                            "throughput-capex-power", nodes_high=32),
    "issue-mixed": Case("issue-mixed", "mlperf-dlrm-v1", "scale-out", "throughput-capex-power",
                        nodes_high=32),
    "zion-2020-categorical": Case("zion-2020-categorical", "zion-2019", "zion-node-grid",
                                  "throughput-vs-capex", categorical=True),
}


def case_space(case: Case) -> SearchSpace:
    space = load_space(case.space)
    if case.nodes_high:
        nodes = dataclasses.replace(space.parameters["nodes"], low=1.0, high=float(case.nodes_high))
        space = dataclasses.replace(space, parameters={**space.parameters, "nodes": nodes})
    space = coarse_space(space, case.coarse_levels) if case.coarse_levels else space
    if case.categorical:
        params = {n: dataclasses.replace(p, type="categorical") if p.type == "ordinal" else p
                  for n, p in space.parameters.items()}
        space = dataclasses.replace(space, parameters=params)
    return space


@dataclass
class Exact:
    """The exact front of a case and the box hypervolumes are measured in."""

    designs: int
    seconds: float
    front: np.ndarray
    lo: np.ndarray
    ref: np.ndarray
    hypervolume: float


_EXACT: dict[str, Exact] = {}
FRONT_CACHE: Path | None = None
"""Directory keeping exact fronts between runs (``--front-cache``); none by default."""


def exact_front(case: Case, jobs: int | None = None) -> Exact:
    """Sweep the case's space and fix the hypervolume box on its exact front (once per process)."""
    if case.key in _EXACT:
        return _EXACT[case.key]
    cached = FRONT_CACHE / f"{case.key}.json" if FRONT_CACHE else None
    if cached is not None and cached.exists():
        data = json.loads(cached.read_text())
        exact = Exact(data["designs"], data["seconds"], np.array(data["front"]), np.array(data["lo"]),
                      np.array(data["ref"]), data["hypervolume"])
        _EXACT[case.key] = exact
        return exact
    space = case_space(case)
    objectives = load_objectives(case.objectives)
    result = run_sweep(space, load_workload(case.workload), objectives, jobs=jobs)
    front = result.losses()
    lo = front.min(axis=0)
    worst = front.max(axis=0)
    ref = worst + 0.1 * np.maximum(worst - lo, np.abs(worst) * 1e-9 + 1e-12)
    exact = Exact(len(result.frame), result.seconds, front, lo, ref, 0.0)
    exact.hypervolume = hypervolume(front, exact)
    _EXACT[case.key] = exact
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps({"designs": exact.designs, "seconds": exact.seconds,
                                      "front": front.tolist(), "lo": lo.tolist(), "ref": ref.tolist(),
                                      "hypervolume": exact.hypervolume}))
    return exact


def hypervolume(loss: np.ndarray, exact: Exact) -> float:
    """Hypervolume of ``loss`` rows (minimisation) in the case's normalised box."""
    if len(loss) == 0:
        return 0.0
    from optuna._hypervolume import compute_hypervolume

    points = (loss - exact.lo) / (exact.ref - exact.lo)
    points = points[np.all(points < 1.0, axis=1)]
    if len(points) == 0:
        return 0.0
    return float(compute_hypervolume(points, np.ones(loss.shape[1])))


def losses_of(trials: Sequence[optuna.trial.FrozenTrial], objectives: ObjectiveSet) -> np.ndarray:
    """Losses of the trials that meet every constraint (maximised objectives negated)."""
    signs = np.array([-1.0 if o.direction == "maximize" else 1.0 for o in objectives.objectives])
    rows = [np.array(t.values, dtype=float) * signs for t in trials
            if t.state == TrialState.COMPLETE and all(v <= 0 for v in t.constraints.values())]
    return np.array(rows) if rows else np.zeros((0, len(signs)))


def warm_cap(sampler: str) -> int | None:
    """The warm start's cap of an ``auto-wN`` variant (the default sampler enqueueing at most N
    designs of the sweep's front instead of ``WARM_MAX_TRIALS``), else ``None``."""
    match = re.fullmatch(r"auto-w(\d+)", sampler)
    return int(match.group(1)) if match else None


def enqueued(sampler: str, budget: int) -> int:
    """Designs of the sweep's front a default study of ``budget`` trials enqueues at most (none
    for the other samplers): what makes a default run of a smaller budget differ from the first
    trials of a larger one."""
    cap = warm_cap(sampler)
    if sampler != "auto" and cap is None:
        return 0
    return warm_start_trials(budget, WARM_MAX_TRIALS if cap is None else cap)


def run_sampler(case: Case, sampler: str, seed: int, budget: int, prescreen_s: float = PRESCREEN_S,
                keep: list[SweepResult] | None = None) -> dict[str, Any]:
    """One in-memory study of ``budget`` trials; the trials in order and their timings (a default
    study's pre-trial sweep appended to ``keep``; ``prescreen_s``: its pre-screen's budget where
    the space is too large for a coarse grid)."""
    space = case_space(case)
    workload = load_workload(case.workload)
    objectives = load_objectives(case.objectives)
    cap = warm_cap(sampler)
    default = sampler == "auto" or cap is not None
    # "auto-0.1": the default sampler as it was (TPE then NSGA-II, no proposals, no warm start).
    inner = (make_sampler("auto", seed) if sampler == "auto-0.1"
             else make_sampler("auto" if default else sampler, seed, space=space))
    study = optuna.create_study(storage=optuna.storages.InMemoryStorage(), sampler=inner,
                                directions=objectives.directions)
    enqueue_baselines(study, space)
    start = time.perf_counter()
    warm = 0
    if default:
        # What `dse run` does for a new study (`dse.search.runner._record_new`).
        warm = len(seed_new_study(study, space, workload, objectives, budget, warm=True,
                                  max_trials=cap, prescreen_s=prescreen_s, keep=keep, seed=seed))
    warm_s = time.perf_counter() - start
    swept = study.user_attrs.get(WARM_START_KEY, {})
    objective = DesignObjective(workload, space, objectives, budget)
    # Repeats of an evaluated design are pruned and not counted: run to `budget` completed trials.
    while not objective.exhausted:
        done = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
        if done >= budget:
            break
        study.optimize(objective, n_trials=budget - done, gc_after_trial=False)
    elapsed = time.perf_counter() - start
    trials = sorted(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)),
                    key=lambda t: t.number)
    return {"trials": trials, "seconds": elapsed, "warm_start_s": warm_s, "warm_trials": warm,
            "sweep_designs": int(swept.get("designs", 0)),
            "prescreen": study.user_attrs.get(PRESCREEN_KEY)}


def ratios(case: Case, exact: Exact, sampler: str, seed: int, budgets: Sequence[int]) -> dict[str, Any]:
    run = run_sampler(case, sampler, seed, max(budgets))
    objectives = load_objectives(case.objectives)
    trials = run["trials"]
    out = {str(b): hypervolume(losses_of(trials[:b], objectives), exact) / exact.hypervolume
           for b in budgets}
    for b in budgets:
        if enqueued(sampler, b) != enqueued(sampler, max(budgets)):
            # A smaller study enqueues fewer designs of the sweep's front: run it apart.
            alone = run_sampler(case, sampler, seed, b)["trials"]
            out[str(b)] = hypervolume(losses_of(alone[:b], objectives), exact) / exact.hypervolume
    designs = [json.dumps(t.user_attrs.get("design"), sort_keys=True) for t in trials]
    first = losses_of(trials[:EXTREME_WITHIN], objectives)
    best = float(first[:, 0].min()) if len(first) else math.inf
    target = float(exact.front[:, 0].min())
    space = case_space(case)
    choice = next((n for n, p in space.parameters.items() if p.type == "categorical"
                   and len(p.choices) > 2), None)
    counts: dict[str, int] = {}
    if choice is not None:
        for t in trials[:EXTREME_WITHIN]:
            value = str(t.user_attrs.get("design", {}).get(choice))
            counts[value] = counts.get(value, 0) + 1
    return {"ratios": out, "seconds": run["seconds"], "warm_start_s": run["warm_start_s"],
            "warm_trials": run["warm_trials"], "sweep_designs": run["sweep_designs"],
            "duplicates": len(designs) - len(set(designs)),
            "extreme_found": bool(best <= target + abs(target) * 1e-9),
            "best_first_objective": -best if objectives.objectives[0].direction == "maximize" else best,
            "exact_best_first_objective": (-target if objectives.objectives[0].direction == "maximize"
                                           else target),
            "choice": choice, "choice_counts": counts}


EXTREME_WITHIN = 200
"""The extreme design of the first objective counts as found when one of this many trials is it."""


def long_study(trials: int, case: Case) -> dict[str, Any]:
    """An ``trials``-trial study of the default sampler through `dse run`'s own path (journal
    file, the progress callback `dse run` shows): wall and CPU seconds per trial against the trial
    count (sampled at every progress update, about twice a second), and the hypervolume ratio."""
    spec = load_study_spec("zion-2020-grid")
    samples: list[tuple[int, float, float]] = []

    def record(p: Any) -> None:
        samples.append((p.complete, time.perf_counter(), time.process_time()))

    with tempfile.TemporaryDirectory() as tmp:
        spec = dataclasses.replace(spec, name="long", budget=trials, storage=f"{tmp}/long.journal")
        start, cpu0 = time.perf_counter(), time.process_time()
        samples.append((0, start, cpu0))
        study = run_study(spec, on_trial=record)
        total, cpu = time.perf_counter() - start, time.process_time() - cpu0
        done = sorted(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)),
                      key=lambda t: t.number)
    samples.append((len(done), start + total, cpu0 + cpu))
    edges = [0, 100, 250, 500, 1000, 2000, 3000, 4000, 5000, 10000, 20000]
    curve = []
    for a, b in itertools.pairwise(edges):
        seg = [(n1 - n0, w1 - w0, c1 - c0) for (n0, w0, c0), (n1, w1, c1)
               in itertools.pairwise(samples) if a < n1 <= b and n1 > n0]
        n = sum(x[0] for x in seg)
        if n == 0:
            continue
        curve.append({"trials": f"{a + 1}-{min(b, len(done))}",
                      "ms_per_trial": 1e3 * sum(x[1] for x in seg) / n,
                      "cpu_ms_per_trial": 1e3 * sum(x[2] for x in seg) / n})
    exact = exact_front(case)
    objectives = load_objectives(case.objectives)
    hv = {str(n): hypervolume(losses_of(done[:n], objectives), exact) / exact.hypervolume
          for n in (200, 500, 1000, 2000, trials) if n <= len(done)}
    return {"trials": len(done), "seconds": total, "cpu_seconds": cpu, "curve": curve, "ratios": hv}


RATE_CASES = (("mlperf-dlrm-v1", "zion-node-grid"), ("criteo-1tb-small", "zion-node-grid"),
              ("zion-2019", "zion-node-grid"), ("synthetic-production-12t", "scale-out"))


def sweep_rates(jobs: Sequence[int]) -> list[dict[str, Any]]:
    """Designs per second of `dse sweep` (enumeration, scoring, the frame and the front; no
    Parquet) on whole spaces: the first case with each process count in ``jobs``, the others with
    the first."""
    out = []
    objectives = load_objectives("throughput-vs-capex")
    for k, (workload, space_name) in enumerate(RATE_CASES):
        space = load_space(space_name)
        wl = load_workload(workload)
        for n in jobs if k == 0 else jobs[:1]:
            result = run_sweep(space, wl, objectives, jobs=n)
            out.append({"workload": workload, "tables": len(wl.tables), "space": space_name,
                        "jobs": n, "designs": len(result.frame), "seconds": result.seconds,
                        "designs_per_s": result.designs_per_s})
            print(f"sweep {workload} on {space_name}, {n} processes: {result.designs_per_s:,.0f} "
                  f"designs/s", file=sys.stderr)
    return out


def pre_sweep(case: Case, exact: Exact) -> dict[str, Any]:
    """The sweep a new default study runs before its first trial (`dse.search.algorithms.refine`): designs
    scored (the coarse grid's and the refinement's), seconds on one core, its front and that
    front's hypervolume ratio, alone and as enqueued (at most ``WARM_MAX_TRIALS`` designs)."""
    space = case_space(case)
    objectives = load_objectives(case.objectives)
    coarse = len(coarse_grid(space, REFERENCE_MAX_DESIGNS)[1])
    result = coarse_to_fine(space, load_workload(case.workload), objectives)
    loss = result.losses()
    warm = loss[greedy_front(loss, WARM_MAX_TRIALS, extremes=True)]
    return {"designs": len(result.frame), "coarse_designs": coarse, "seconds": result.seconds,
            "front": len(loss), "ratio": hypervolume(loss, exact) / exact.hypervolume,
            "warm_ratio": hypervolume(warm, exact) / exact.hypervolume}


LARGE_CASES = {
    "full-dcnv2": Case("full-dcnv2", "mlperf-dlrm-dcnv2", "full", "throughput-vs-capex"),
    "production-a-full": Case("production-a-full", "synthetic-production-a", "full",
                              "throughput-vs-capex"),
    "full-dcnv2-3d": Case("full-dcnv2-3d", "mlperf-dlrm-dcnv2", "full", "throughput-capex-power"),
}
"""Spaces too large to sweep (issue 29): the shipped ``full`` space (6 accelerators, 1-16 of
them, HBM and DDR per node and fabric bandwidth as log-scale floats, PCIe, 5 fabrics, 1-64 nodes,
1-16 NICs of 4 speeds, 2 topologies, 4 oversubscriptions: above 10^6 designs on any grid of its
floats) on MLPerf DLRM-DCNv2 against throughput and capex, and against throughput, capex and
power; and on the ~1,000-table, 3.2 TB ZionEX Model-A stand-in (``synthetic-production-a``),
whose tables need host DDR on most designs."""
LARGE_SAMPLES = {"full-dcnv2": 20_000, "production-a-full": 4_000, "full-dcnv2-3d": 20_000}
"""Designs of each large case's Sobol reference sweep: what fits this shared 2-core machine
(about 1.1 ms per design on DLRM-DCNv2, 27 ms on Model-A, whose 1,000 tables make each new
placement costly)."""
REFERENCE_DIR = ROOT / "benchmarks" / "reference_fronts"
"""Where the large cases' Sobol fronts are cached (committed: minutes each to recompute)."""


def sobol_front(case: Case, samples: int) -> dict[str, Any]:
    """The front (losses) of a ``samples``-design Sobol sweep of the case's space (seed 0, one
    process), cached in :data:`REFERENCE_DIR`."""
    path = REFERENCE_DIR / f"{case.key}-sobol{samples}.json"
    if path.exists():
        cached: dict[str, Any] = json.loads(path.read_text())
        return cached
    cpu = time.process_time()
    result = run_sweep(case_space(case), load_workload(case.workload), load_objectives(case.objectives),
                       samples=samples, seed=0, jobs=1)
    out = {"samples": samples, "designs": len(result.frame), "seconds": result.seconds,
           "cpu_s": time.process_time() - cpu, "front": result.losses().tolist()}
    REFERENCE_DIR.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out))
    return out


def large_run(case: Case, sampler: str, seed: int, budget: int, prescreen_s: float) -> dict[str, Any]:
    """One study of ``budget`` trials on a large case: its feasible trials' losses, the front of
    the default study's pre-trial sweep (pre-screen and refinement; not trials) and its costs."""
    keep: list[SweepResult] = []
    cpu = time.process_time()
    run = run_sampler(case, sampler, seed, budget, prescreen_s, keep)
    objectives = load_objectives(case.objectives)
    return {"losses": front_rows(losses_of(run["trials"][:budget], objectives)),
            "sweep_front": front_rows(keep[0].losses()) if keep else [],
            "seconds": run["seconds"], "cpu_s": time.process_time() - cpu,
            "warm_start_s": run["warm_start_s"], "warm_trials": run["warm_trials"],
            "prescreen": run["prescreen"]}


def front_rows(losses: np.ndarray) -> list[list[float]]:
    """The distinct non-dominated rows of ``losses``: all that a run's hypervolume and fastest
    design depend on, so the kept runs (large-results.json) stay small."""
    if not len(losses):
        return []
    front = np.unique(losses[non_dominated(losses)], axis=0)
    return [[float(x) for x in row] for row in front]


def run_large(cases: Sequence[str], samplers: Sequence[str], budget: int, seeds: dict[str, int],
              prescreen_s: float, log: bool = True) -> dict[str, Any]:
    """The large cases: each sampler's runs (``seeds[sampler]`` seeds) and the Sobol reference."""
    out: dict[str, Any] = {"budget": budget, "prescreen_s": prescreen_s, "cases": {}}
    for name in cases:
        case = LARGE_CASES[name]
        ref = sobol_front(case, LARGE_SAMPLES[name])
        if log:
            print(f"{name}: Sobol front of {len(ref['front'])} among {ref['designs']:,} designs "
                  f"({ref['cpu_s']:.0f} s CPU)", file=sys.stderr)
        runs: dict[str, list[dict[str, Any]]] = {}
        for sampler in samplers:
            for seed in range(seeds.get(sampler, 1)):
                r = large_run(case, sampler, seed, budget, prescreen_s)
                runs.setdefault(sampler, []).append(r)
                if log:
                    print(f"  {sampler:8s} seed {seed}: {r['cpu_s']:.0f} s CPU, prescreen "
                          f"{r['prescreen']}", file=sys.stderr)
        out["cases"][name] = {"workload": case.workload, "space": case.space,
                              "objectives": case.objectives, "reference": ref, "runs": runs}
    return score_large(out)


def score_large(results: dict[str, Any]) -> dict[str, Any]:
    """Each large case's known front (the Sobol front, every run's trials and every pre-trial
    sweep's front together) and each run's hypervolume ratio and fastest design against it."""
    for entry in results["cases"].values():
        parts = [np.array(entry["reference"]["front"])]
        for runs in entry["runs"].values():
            for r in runs:
                parts += [np.array(x) for x in (r["losses"], r["sweep_front"]) if len(x)]
        union = np.vstack(parts)
        front = np.unique(union[non_dominated(union)], axis=0)  # distinct points
        lo, worst = front.min(axis=0), front.max(axis=0)
        box = worst + 0.1 * np.maximum(worst - lo, np.abs(worst) * 1e-9 + 1e-12)
        known = Exact(0, 0.0, front, lo, box, 0.0)
        known.hypervolume = hypervolume(front, known)
        fastest = -float(front[:, 0].min())
        sobol = np.array(entry["reference"]["front"])
        entry["known_front"] = len(front)
        entry["fastest_known"] = fastest
        entry["sobol_ratio"] = hypervolume(sobol, known) / known.hypervolume
        entry["sobol_fastest"] = -float(sobol[:, 0].min()) / fastest
        for runs in entry["runs"].values():
            for r in runs:
                loss = np.array(r["losses"]).reshape(-1, front.shape[1])
                both = np.vstack([loss, np.array(r["sweep_front"]).reshape(-1, front.shape[1])])
                r["ratio"] = hypervolume(loss, known) / known.hypervolume
                r["ratio_with_sweep"] = hypervolume(both, known) / known.hypervolume
                r["fastest_share"] = -float(loss[:, 0].min()) / fastest if len(loss) else 0.0
    return results


def large_lines(results: dict[str, Any]) -> list[str]:
    """docs/benchmarks.md's section on the spaces too large to sweep."""
    lines = ["## Spaces too large to sweep", "", LARGE_METHOD.format(budget=results["budget"],
                                                                     prescreen=results["prescreen_s"]), ""]
    for name, entry in results["cases"].items():
        ref = entry["reference"]
        lines += [f"### {name}: `{entry['workload']}` on `{entry['space']}`, {entry['objectives']}", "",
                  f"Known front: {entry['known_front']} designs; the {ref['designs']:,}-design Sobol "
                  f"sweep alone ({ref['cpu_s']:.0f} s CPU) holds {entry['sobol_ratio']:.3f} of its "
                  f"hypervolume and {entry['sobol_fastest']:.1%} of its fastest design "
                  f"({entry['fastest_known']:,.0f} samples/s). Median over seeds (min-max):", "",
                  f"| sampler | hypervolume ratio at {results['budget']} trials | with the pre-trial "
                  "sweep's front | fastest / fastest known | CPU s per run | seeds |",
                  "|---|---|---|---|---|---|"]
        for sampler, runs in entry["runs"].items():
            cells = [_median_range([r[k] for r in runs], pct=k == "fastest_share")
                     for k in ("ratio", "ratio_with_sweep", "fastest_share")]
            cpu = statistics.median(r["cpu_s"] for r in runs)
            lines.append(f"| {LABELS.get(sampler, sampler)} | " + " | ".join(cells)
                         + f" | {cpu:.0f} | {len(runs)} |")
        pre = [r["prescreen"] for r in entry["runs"].get("auto", []) if r.get("prescreen")]
        if pre:
            lines += ["", "Default study's pre-trial sweep (not trials): pre-screen "
                      + ", ".join(f"{p['designs']:,} designs in {p['cpu_s']:.0f} s CPU" for p in pre)
                      + "; refinement " + ", ".join(f"{p['refined']:,} designs in "
                                                    f"{p['refine_cpu_s']:.0f} s CPU" for p in pre) + "."]
        lines.append("")
    return lines


def _median_range(values: list[float], pct: bool) -> str:
    med, lo, hi = statistics.median(values), min(values), max(values)
    fmt = "{:.1%}" if pct else "{:.3f}"
    return f"**{fmt.format(med)}** ({fmt.format(lo)}-{fmt.format(hi)})"


LARGE_METHOD = """\
Each case's known front is the non-dominated set of a scrambled Sobol sweep of the space (its size
is given per case; cached in `benchmarks/reference_fronts/`), of every run's feasible trials and of
every default study's pre-trial sweep. The hypervolume ratio is a run's first {budget} trials'
hypervolume over the known front's, in the box between the known front's ideal point and its nadir
pushed 10% out; *with the pre-trial sweep's front* adds the designs the default study scored before
its first trial (its pre-screen of {prescreen:g} CPU seconds and the refinement, which are not
trials but are what the study knows). *Fastest*: the highest throughput among a run's feasible
trials over the known front's. Every run is one process; CPU seconds include the pre-trial sweep."""


def summarise(values: list[float]) -> dict[str, float]:
    q = np.percentile(values, [25, 75]) if len(values) > 1 else [values[0], values[0]]
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "q1": float(q[0]), "q3": float(q[1])}


def _task(task: tuple[str, str, int, tuple[int, ...]]) -> dict[str, Any]:
    name, sampler, seed, budgets = task
    case = CASES[name]
    return ratios(case, exact_front(case), sampler, seed, budgets)


def run(cases: Sequence[str], samplers: Sequence[str], budgets: Sequence[int], seeds: int,
        jobs: int | None, log: bool = True, processes: int = 1) -> dict[str, Any]:
    out: dict[str, Any] = {"budgets": list(budgets), "seeds": seeds, "cases": {}}
    done: dict[tuple[str, str, int], dict[str, Any]] = {}
    if processes > 1:
        for name in cases:
            exact_front(CASES[name], jobs)  # swept once, before the runs fork
        tasks = [(n, s, seed, tuple(budgets)) for n in cases for s in samplers for seed in range(seeds)]
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            for task, r in zip(tasks, pool.imap(_task, tasks), strict=True):
                done[task[:3]] = r
                if log:
                    print(f"{task[0]} {task[1]:10s} seed {task[2]}: {r['ratios']} "
                          f"({r['seconds']:.1f} s)", file=sys.stderr)
    for name in cases:
        case = CASES[name]
        exact = exact_front(case, jobs)
        entry: dict[str, Any] = {
            "workload": case.workload, "space": case.space, "coarse_levels": case.coarse_levels,
            "objectives": case.objectives, "designs": exact.designs, "sweep_s": exact.seconds,
            "front_size": len(exact.front), "samplers": {},
        }
        if log:
            print(f"{name}: exact front of {len(exact.front)} among {exact.designs:,} designs "
                  f"({exact.seconds:.1f} s)", file=sys.stderr)
        if any(s == "auto" or warm_cap(s) is not None for s in samplers):
            entry["pre_sweep"] = pre_sweep(case, exact)
            if log:
                print(f"{name}: pre-trial sweep {entry['pre_sweep']}", file=sys.stderr)
        for sampler in samplers:
            runs = []
            for seed in range(seeds):
                if (name, sampler, seed) in done:
                    runs.append(done[(name, sampler, seed)])
                    continue
                r = ratios(case, exact, sampler, seed, budgets)
                runs.append(r)
                if log:
                    print(f"  {sampler:10s} seed {seed}: {r['ratios']} ({r['seconds']:.1f} s)",
                          file=sys.stderr)
            entry["samplers"][sampler] = {
                "runs": runs,
                "summary": {str(b): summarise([r["ratios"][str(b)] for r in runs]) for b in budgets},
                "seconds_per_run": statistics.median(r["seconds"] for r in runs),
            }
        out["cases"][name] = entry
    return out


def merge(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Results of several runs (for example gp run apart with fewer seeds) in one."""
    out: dict[str, Any] = {"cases": {}}
    for part in parts:
        for key in ("long", "sweep_rates"):
            if key in part:
                out[key] = part[key]
        if "large" in part:
            # Large cases run in separate processes (one per case) come together, each case's
            # runs per sampler appended, and are scored again on the union of every part's runs.
            large = out.setdefault("large", {**part["large"], "cases": {}})
            for name, entry in part["large"]["cases"].items():
                got = large["cases"].setdefault(name, {**entry, "runs": {}})
                for sampler, runs in entry["runs"].items():
                    got["runs"].setdefault(sampler, []).extend(runs)
        for name, entry in part.get("cases", {}).items():
            got = out["cases"].setdefault(name, {})
            for k, v in entry.items():
                if k != "samplers":
                    got.setdefault(k, v)
            got.setdefault("samplers", {}).update(entry["samplers"])
    if "large" in out:
        score_large(out["large"])
    return out


def markdown(results: dict[str, Any]) -> str:
    """docs/benchmarks.md: sweep speed, the sampler tables, the targets and the per-trial cost."""
    lines = [
        "# Search quality and speed",
        "",
        "Generated by `python benchmarks/search_quality.py` (see its docstring for the commands; "
        "gp runs apart, with fewer trials and seeds, and the parts are merged with `--merge`). "
        "On this 2-core machine.",
        "",
    ]
    rates = results.get("sweep_rates")
    if rates:
        lines += [
            "## Exhaustive sweeps: `dse sweep`",
            "",
            "Every design of a whole space, end to end (enumeration, scoring, the table and the "
            "exact front; writing Parquet adds a few seconds), objectives throughput-vs-capex:",
            "",
            "| workload | tables | space | designs | processes | seconds | designs/s |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in rates:
            lines.append(f"| `{r['workload']}` | {r['tables']} | `{r['space']}` | {r['designs']:,} | "
                         f"{r['jobs']} | {r['seconds']:.1f} | **{r['designs_per_s']:,.0f}** |")
        lines += ["", SWEEP_NOTES, ""]
    lines += ["## Samplers against the exact front", "", METHOD, ""]
    for name, entry in results["cases"].items():
        lines.append(f"### {name}: `{entry['workload']}` on `{entry['space']}`"
                     + (f" cut to {entry['coarse_levels']} levels" if entry.get("coarse_levels") else "")
                     + f", {entry['objectives']}")
        lines.append("")
        lines.append(f"Exact front: {entry['front_size']} designs among {entry['designs']:,} "
                     f"(swept in {entry['sweep_s']:.0f} s). Median hypervolume ratio "
                     "(min-max over seeds; seeds per sampler in the last column):")
        lines.append("")
        budgets = sorted({int(b) for s in entry["samplers"].values() for b in s["summary"]})
        lines.append("| sampler | " + " | ".join(f"{b} trials" for b in budgets)
                     + " | s per run | seeds |")
        lines.append("|---|" + "---|" * (len(budgets) + 2))
        for sampler, s in entry["samplers"].items():
            cells = []
            for b in budgets:
                got = s["summary"].get(str(b))
                cells.append("-" if got is None else
                             f"**{got['median']:.3f}** ({got['min']:.3f}-{got['max']:.3f})")
            lines.append(f"| {LABELS.get(sampler, sampler)} | " + " | ".join(cells)
                         + f" | {s['seconds_per_run']:.0f} | {len(s['runs'])} |")
        lines.append("")
        lines += pre_sweep_lines(entry)
        base = results["cases"].get(name.removesuffix("-categorical"))
        if name.endswith("-categorical") and base and "auto" in base["samplers"]:
            ordinal = base["samplers"]["auto"]["summary"]
            cat = entry["samplers"]["auto"]["summary"]
            lines += ["The same designs with ordered choices (HBM, DDR, fabric bandwidth, NIC count, "
                      "PCIe generation, NIC speed) searched as unordered categories. Default "
                      "sampler, median, ordinal -> categorical: "
                      + ", ".join(f"{b}: {ordinal[b]['median']:.3f} -> {cat[b]['median']:.3f}"
                                  for b in sorted(cat, key=int) if b in ordinal) + ".", ""]
        else:
            lines += targets(entry)
    if results.get("large"):
        lines += large_lines(results["large"])
    long = results.get("long")
    if long:
        lines += [
            "## Long studies: cost per trial",
            "",
            f"A {long['trials']:,}-trial study of the default sampler on zion-2020-grid through "
            f"`dse run`'s own code (`run_study`, journal file on disk, one process) took "
            f"**{long['seconds']:.0f} s** ({long['seconds'] / 60:.1f} min; "
            f"{long['cpu_seconds']:.0f} s of CPU), against a 5-minute target; before issue 15's "
            "proposals the same study took 113 s of CPU (22.6 ms per trial). Cost per trial by "
            "trial count (the sampler, the model, the journal and the progress display together; "
            "wall time inflated when other processes share the machine, CPU time much less):",
            "",
            "| trials | wall ms per trial | CPU ms per trial |",
            "|---|---|---|",
        ]
        for c in long["curve"]:
            lines.append(f"| {c['trials']} | {c['ms_per_trial']:.1f} | {c['cpu_ms_per_trial']:.1f} |")
        lines += ["", "Hypervolume ratio of the same study after N trials: "
                  + ", ".join(f"{n}: **{r:.3f}**" for n, r in long["ratios"].items()) + ".", ""]
    lines += [NOTES, ""]
    return "\n".join(lines)


def pre_sweep_lines(entry: dict[str, Any]) -> list[str]:
    """What the default sampler's study scored before its first trial (not counted as trials)."""
    pre = entry.get("pre_sweep")
    if not pre:
        return []
    return [f"Before its first trial, a default study of this space scores **{pre['designs']:,} "
            f"designs** in a coarse-to-fine sweep ({pre['coarse_designs']:,} of the coarse grid, "
            f"{pre['designs'] - pre['coarse_designs']:,} refining its front) in **{pre['seconds']:.1f} s** "
            "of wall time on one core of this shared machine; these are not trials and are not in "
            "the trial counts above. The sweep's "
            f"front ({pre['front']} designs) alone holds **{pre['ratio']:.3f}** of the exact front's "
            f"hypervolume; the at most {WARM_MAX_TRIALS} of them enqueued as the warm start "
            f"{pre['warm_ratio']:.3f}.", ""]


def targets(entry: dict[str, Any]) -> list[str]:
    """The issue's targets, checked on one case."""
    got = entry["samplers"]
    if "auto" not in got:
        return []
    out = []
    auto = got["auto"]["summary"]
    for budget, goal in (("100", 0.95), ("200", 0.98)):
        if budget in auto:
            med = auto[budget]["median"]
            out.append(f"- Default sampler at {budget} trials: median {med:.3f} "
                       f"({'meets' if med >= goal else '**misses**'} the {goal} target).")
    others = [s for s in got if s not in ("auto", "auto-0.1", "auto+warm") and warm_cap(s) is None]
    for budget in ("100", "200"):
        if budget not in auto:
            continue
        beaten = [s for s in others if budget in got[s]["summary"]
                  and auto[budget]["median"] > got[s]["summary"][budget]["median"]]
        rest = [s for s in others if s not in beaten and budget in got[s]["summary"]]
        out.append(f"- At {budget} trials the default beats {', '.join(beaten) or 'none'}"
                   + (f"; not {', '.join(rest)}" if rest else "") + ".")
    runs = [r for s in got.values() for r in s["runs"]]
    if runs and "duplicates" in runs[0]:
        dups = sum(int(r.get("duplicates", 0)) for r in runs)
        out.append(f"- Duplicate design evaluations: {dups} in {len(runs)} runs (every sampler; a "
                   "repeat is pruned without running the model and does not count as a trial).")
    for name, s in got.items():
        found = [r.get("extreme_found") for r in s["runs"] if "extreme_found" in r]
        if found and name in ("auto", "auto-0.1"):
            out.append(f"- Extreme design of the first objective found within {EXTREME_WITHIN} "
                       f"trials by {LABELS.get(name, name)}: {sum(found)} of {len(found)} seeds.")
    counts = [r.get("choice_counts") for r in got["auto"]["runs"] if r.get("choice_counts")]
    if counts:
        choice = got["auto"]["runs"][0]["choice"]
        line = []
        for name in ("auto", "auto-0.1", "tpe"):
            if name not in got:
                continue
            per = [r["choice_counts"] for r in got[name]["runs"] if r.get("choice_counts")]
            keys = sorted({k for c in per for k in c})
            low = min(statistics.median(c.get(k, 0) for c in per) for k in keys)
            line.append(f"{LABELS.get(name, name)}: least-tried {choice} choice median {low:.0f} "
                        f"of {EXTREME_WITHIN}")
        out.append("- Coverage: " + "; ".join(line) + ".")
    return [*out, ""]


METHOD = """\
Each case is a workload on a discrete space whose every design `dse sweep` scores. The exact front
is the non-dominated set of the designs that meet every constraint. Every sampler then runs an
in-memory study per seed exactly as `dse run` does (the same objective function, constraints through
`trial.set_constraint`, the space's baseline presets enqueued first). *default (auto)* is what `dse
run` does for a new study: before its first trial, a coarse-to-fine sweep (`dse.search.algorithms.refine`, one
core): the exact front of a coarse grid of the space (at most 20,000 designs, 3 to 6 values per
parameter), then rounds that each sweep every design one parameter away from two parents taken
best-first, the next of each objective's best designs (also with each categorical choice) and the
next of the front, both recomputed after every round (line searches over each parameter's whole
grid, at most 20,000 designs more), until every such design has been expanded. That front fixes the
study's hypervolume reference and at most 40 of its designs (a fifth of the budget at most: each
objective's best, then by hypervolume contribution) are enqueued; then the auto sampler runs with
its own proposals (`dse.search.algorithms.proposals`: a stratified start, then from 40 completed trials
neighbours of the front, each objective's extreme searched for directly, and the least-tried
choices). The enqueued designs count as trials; **the sweep's designs do not**: how many it scored
and how long it took is given under each table. `auto-wN` is the default with at most N designs
enqueued. The previous default (TPE, then NSGA-II at 250 trials; no proposals, no warm start) is
`tpe` itself up to 200 trials and is not run again. Every run prunes a repeat of an evaluated design
without running the model (`dse.search.algorithms.dedup`), so N trials are N distinct designs for every
sampler. Samplers do not know the budget, so the first N completed trials of one run of the largest
budget are what a run of budget N does; except that a default study of fewer than 100 trials
enqueues fewer designs (a fifth of its budget), so its column comes from a run of its own budget.
The hypervolume ratio is the hypervolume of those trials' feasible designs over the exact front's,
both with the objectives scaled between the exact front's ideal point and its nadir pushed 10%
further out (one reference point per case). `gp` (Optuna's GPSampler) runs one seed only: it
costs seconds per trial on these spaces, more as trials accumulate (a 50-trial zion-2020 run took
38 minutes on this shared machine, 200 trials of todays-nodes-3d 42 minutes, of issue-mixed
28 and of production-12t 20); `--all` runs it to 50 trials, the 200-trial rows were run apart
(`--samplers gp --budgets 50,100,200 --seeds 1`) and merged; a case without a `gp` row is one
whose gp run did not finish in the time the run had."""

SWEEP_NOTES = """\
How: a placement depends only on counts and capacities (`dse.model.placement.plan_key`), and the step's
bandwidth-free loads (bytes per device and link, dense-layer times, kernel counts) only on those and
the accelerator (`dse.model.timing.loads_key`). `dse.model.Memo` keeps both, so a design that differs from
an earlier one only in its links (PCIe generation, fabric and its bandwidth, NICs, network) pays for
the link stages, the overlap tree, cost and power only, about 50 us instead of 0.4-4 ms. Designs
are enumerated with the plan-changing parameters outermost and scored in chunks of 4,096 by one
process per core. The model code is the same as `dse evaluate`'s (the step time was split into
`step_loads` and the link stages; `evaluate(..., memo=)` returns identical metrics, tested on a
sample of 300 designs to 1e-9 and against a brute-force loop for the front). What remains per design
is Python: building and resolving the system (~10 us), the link stages and the overlap tree
(~20 us), capex and power (~10 us) and the metrics (~5 us)."""

NOTES = """\
## Notes

- The cases: `zion-2020` is `zion-2019` on `zion-node-grid` (HBM, DDR, fabric bandwidth and NIC
  count as ordered choices); `todays-nodes-3d` is MLPerf DLRM-DCNv2 on today's vendor nodes
  (`todays-nodes` widened to 1-32 nodes, NIC speeds 100-800 Gb/s, network) against throughput,
  capex and power; `production-12t` is the 12T-parameter model on `scale-out` (accelerator
  choice, 1-64 nodes, 1-16 NICs); `issue-mixed` is the mixed space of issue 15 (`scale-out` cut to
  1-32 nodes, accelerator choice including B200 and MI300X, three objectives, MLPerf DLRM v1).
- Coverage counts the trials of each choice of the space's main categorical parameter (the
  accelerator or the vendor node) among the first 200; issue 15 saw B200 get 73 of 1,500 trials.
- The coarse grid alone (before the refinement) held 0.573 of the exact front's hypervolume on
  zion-2020 (3 values per parameter), 0.690 on production-12t, 0.958 on issue-mixed and 0.910 on
  todays-nodes-3d; the default sampler then reached 0.911 and 0.876 at 100 trials on the first two.
- issue-mixed's fastest design (B200, 20 nodes, 16 NICs of 400 Gb/s, rail-optimised, no
  oversubscription: 220 M samples/s) is off the coarse grid (its best has 16 nodes, 215 M) and, once
  the refinement found it, was not among the 20 designs picked by hypervolume contribution alone (2%
  more throughput for 25% more capex adds little area); the proposals' extreme moves, shared among
  three objectives and nine parents, reached it in 1 of 5 seeds. The warm start now enqueues each
  objective's best design first.
- `nsga2` and `random` coincide at 50 trials: NSGA-II's first generation (population 50) is random
  with the same seed.
- The exact fronts depend on the model and its calibration: rerun the whole benchmark after either
  changes (`python benchmarks/search_quality.py --all DIR --processes 2 --markdown
  docs/benchmarks.md`)."""


def html(results: dict[str, Any]) -> str:
    """A self-contained page: median ratio against budget per sampler (bars: min-max)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    names = list(results["cases"])
    extra = 1 if "long" in results else 0
    fig = make_subplots(rows=1, cols=len(names) + extra,
                        subplot_titles=[*names, *(["per-trial cost, default sampler"] if extra else [])])
    shown: set[str] = set()
    for col, name in enumerate(names, start=1):
        for sampler, s in results["cases"][name]["samplers"].items():
            budgets = sorted(int(b) for b in s["summary"])
            med = [s["summary"][str(b)]["median"] for b in budgets]
            lo = [s["summary"][str(b)]["median"] - s["summary"][str(b)]["min"] for b in budgets]
            hi = [s["summary"][str(b)]["max"] - s["summary"][str(b)]["median"] for b in budgets]
            fig.add_trace(go.Scatter(x=budgets, y=med, name=f"{LABELS.get(sampler, sampler)}",
                                     legendgroup=sampler, showlegend=sampler not in shown,
                                     mode="lines+markers",
                                     line={"color": COLORS.get(sampler, "#7f7f7f")},
                                     error_y={"type": "data", "symmetric": False, "array": hi,
                                              "arrayminus": lo}), row=1, col=col)
            shown.add(sampler)
        ticks = sorted({int(b) for s in results["cases"][name]["samplers"].values() for b in s["summary"]})
        fig.update_xaxes(title_text="trials", type="log", tickvals=ticks, row=1, col=col)
        fig.update_yaxes(title_text="hypervolume / exact", row=1, col=col)
    if extra:
        curve = results["long"]["curve"]
        for key, label, color in (("ms_per_trial", "wall ms per trial", COLORS["auto"]),
                                  ("cpu_ms_per_trial", "CPU ms per trial", COLORS["random"])):
            fig.add_trace(go.Bar(x=[c["trials"] for c in curve], y=[c.get(key, 0.0) for c in curve],
                                 name=label, marker={"color": color}),
                          row=1, col=len(names) + 1)
        fig.update_xaxes(title_text="trials", row=1, col=len(names) + 1)
        fig.update_yaxes(title_text="ms per trial", row=1, col=len(names) + 1)
    fig.update_layout(title="dse search quality: hypervolume ratio to the exact front", height=480)
    page: str = fig.to_html(include_plotlyjs=True, full_html=True)
    return page


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="reduced CI form: the small case, one seed, budgets 20 and 60, "
                        "auto and random; checks that the default sampler beats random")
    parser.add_argument("--all", type=Path, metavar="DIR",
                        help="the whole benchmark behind docs/benchmarks.md in one command: every "
                        "case and sampler (gp too when torch is installed, 3 seeds), the long "
                        "study, merged into --markdown; parts are kept in DIR as JSON")
    parser.add_argument("--processes", type=int, default=1, help="sampler runs in parallel")
    parser.add_argument("--cases", default=",".join(MAIN_CASES))
    parser.add_argument("--samplers", default="auto,auto-0.1,tpe,nsga2,random")
    parser.add_argument("--budgets", default="50,100,200")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=None, help="sweep processes")
    parser.add_argument("--long", type=int, default=0, help="also time an N-trial default study")
    parser.add_argument("--rates", action="store_true", help="also measure sweep designs/s")
    parser.add_argument("--front-cache", type=Path, help="keep exact fronts in this directory")
    parser.add_argument("--large", action="store_true",
                        help="run the spaces too large to sweep (LARGE_CASES) instead")
    parser.add_argument("--large-cases", default=",".join(LARGE_CASES))
    parser.add_argument("--large-samplers", default="auto,tpe,nsga2,random")
    parser.add_argument("--large-seeds", default="1",
                        help="seeds per sampler: N, or sampler=N,... (default 1 each)")
    parser.add_argument("--large-budget", type=int, default=300)
    parser.add_argument("--prescreen-s", type=float, default=PRESCREEN_S,
                        help="the default study's pre-screen budget on the large cases")
    parser.add_argument("--json", type=Path, help="write the results as JSON")
    parser.add_argument("--merge", type=Path, nargs="*", help="merge JSON results instead of running")
    parser.add_argument("--markdown", type=Path, help="write the tables (Markdown) here")
    parser.add_argument("--html", type=Path, help="write the chart page here")
    args = parser.parse_args(argv)
    global FRONT_CACHE
    FRONT_CACHE = args.front_cache
    if args.all:
        results = run_all(args.all, args.processes, args.jobs, args.long or 5000)
    elif args.merge:
        results = merge([json.loads(p.read_text()) for p in args.merge])
    elif args.large:
        samplers = [x for x in args.large_samplers.split(",") if x]
        results = {"cases": {}, "large": run_large(
            [c for c in args.large_cases.split(",") if c], samplers, args.large_budget,
            _seeds(args.large_seeds, samplers), args.prescreen_s)}
    elif args.quick:
        results = run(["ci"], ["auto", "random"], [20, 60], 1, args.jobs, log=False)
    else:
        results = run([c for c in args.cases.split(",") if c], [s for s in args.samplers.split(",") if s],
                      [int(b) for b in args.budgets.split(",")], args.seeds, args.jobs,
                      processes=args.processes)
        if args.long:
            results["long"] = long_study(args.long, CASES["zion-2020"])
        if args.rates:
            results["sweep_rates"] = sweep_rates([2, 1])
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=_plain))
    if args.markdown:
        args.markdown.write_text(markdown(results))
    if args.html:
        args.html.write_text(html(results))
    if not (args.json or args.markdown or args.html):
        print(markdown(results))
    if args.quick:
        got = results["cases"]["ci"]["samplers"]
        top = str(max(int(b) for b in got["auto"]["summary"]))
        default, random = got["auto"]["summary"][top]["median"], got["random"]["summary"][top]["median"]
        print(f"budget {top}: default {default:.3f}, random {random:.3f}")
        if not default > random:
            raise SystemExit("the default sampler did not beat random search")
    return results


GP_SEEDS = 1
"""Seeds of the gp runs of ``--all``: Optuna's GPSampler costs seconds per trial on these mixed
spaces (a 50-trial zion-2020 run took 38 minutes on this shared machine)."""
GP_BUDGETS = (50,)
"""Budgets of the gp runs of ``--all`` (see :data:`GP_SEEDS`)."""
MAIN_CASES = ("zion-2020", "todays-nodes-3d", "production-12t", "issue-mixed")
"""The benchmark spaces of docs/benchmarks.md."""


def run_all(folder: Path, processes: int, jobs: int | None, long: int) -> dict[str, Any]:
    """Every part of docs/benchmarks.md, each kept in ``folder`` as JSON (a part already there is
    reused, so an interrupted run resumes)."""
    folder.mkdir(parents=True, exist_ok=True)
    parts = []

    def part(name: str, make: Any) -> None:
        path = folder / f"{name}.json"
        if not path.exists():
            print(f"== {name}", file=sys.stderr)
            path.write_text(json.dumps(make(), indent=1, default=_plain))
        parts.append(json.loads(path.read_text()))

    # "auto-0.1" (TPE, then NSGA-II at 250 trials) is TPE itself up to 200 trials: not run again.
    part("main", lambda: run(MAIN_CASES, ("auto", "tpe", "nsga2", "random"),
                             (50, 100, 200), 5, jobs, processes=processes))
    if all(importlib.util.find_spec(m) is not None for m in ("torch", "scipy", "greenlet")):
        part("gp", lambda: run(MAIN_CASES, ("gp",), GP_BUDGETS, GP_SEEDS, jobs, processes=processes))
    part("long", lambda: {"long": long_study(long, CASES["zion-2020"])})
    return merge(parts)


def _seeds(given: str, samplers: Sequence[str]) -> dict[str, int]:
    """``--large-seeds``: one count for every sampler, or ``sampler=N`` pairs (others 1)."""
    if "=" not in given:
        return dict.fromkeys(samplers, int(given))
    pairs = dict(p.split("=") for p in given.split(","))
    return {s: int(pairs.get(s, 1)) for s in samplers}


def _plain(value: Any) -> Any:
    if isinstance(value, optuna.trial.FrozenTrial):
        return None
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    raise TypeError(type(value))


if __name__ == "__main__":
    main()
