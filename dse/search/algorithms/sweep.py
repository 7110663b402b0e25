"""Exhaustive sweeps: every design of a discrete search space (or a scrambled Sobol sample of a
space with float parameters), scored across the machine's cores, with the exact Pareto front.

A sweep builds each design's system with :func:`dse.search.study.encoding.design_system` and evaluates
it with :func:`dse.model.evaluate`, exactly as a study trial does, but shares what does not change
between designs through a :class:`dse.model.Memo`: a placement depends only on counts and
capacities (:func:`dse.model.placement.plan_key`), and the step's bandwidth-free loads only on those
and the accelerator (:func:`dse.model.timing.loads_key`), so a design that differs from an earlier
one only in its links (PCIe generation, fabric and its bandwidth, NICs, network) pays only for the
link-dependent stages, cost and power. Designs are enumerated with the parameters that change a
plan outermost, so consecutive designs share plans, and handed to worker processes in chunks.

Conditional parameters are respected: a parameter whose ``when`` does not hold is left out of the
design (the base system's value stands), so each combination of active parameters occurs once.

>>> from dse.search.study.search_space import load_space
>>> grid = design_grid(load_space("zion-node-grid"))
>>> len(grid) > 100_000
True
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
import os
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dse.errors import DseInputError
from dse.model.catalog import Catalog, load_catalog
from dse.model.equivalence import INERT_VALUES
from dse.model.evaluate import Memo, evaluate
from dse.model.metrics import METRICS
from dse.model.parameters import Calibration, load_calibration
from dse.model.placement import plan_key
from dse.model.system import resolve_system
from dse.model.timing import STAGES, loads_key
from dse.model.workload import Workload
from dse.safe_write import write_file
from dse.search._optuna import compute_hypervolume
from dse.search.algorithms.pareto import best_row, loss_box, non_dominated
from dse.search.algorithms.reference import REFERENCE_MAX_DESIGNS, REFERENCE_MIN_BUDGET, reference_from_front
from dse.search.study.attribute_keys import REFERENCE_KEY, WARM_START_KEY
from dse.search.study.encoding import (
    canonical_value,
    design_system,
    design_workload,
    encode_design,
    inert_keys,
)
from dse.search.study.objective_sets import UNSCORABLE_CONSTRAINTS, ObjectiveSet
from dse.search.study.search_space import Parameter, SearchSpace, probe_values
from dse.search.study.seeding import warm_start_trials
from dse.search.study.study_file import (
    StudySpec,
    study_calibration,
    study_catalog,
    study_objectives,
    study_space,
    study_workload,
)

CHUNK_DESIGNS = 4096
"""Designs per work item handed to a worker process."""


# --- the designs of a space --------------------------------------------------------------------


@dataclass(frozen=True)
class DesignGrid:
    """Designs of a space as codes: ``codes[i, j]`` indexes ``choices[j]`` for parameter
    ``names[j]`` of design ``i``, or is -1 where that parameter is inactive in design ``i``."""

    names: tuple[str, ...]
    choices: tuple[tuple[Any, ...], ...]
    codes: np.ndarray

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    def design(self, i: int) -> dict[str, Any]:
        """Design ``i`` as ``{parameter: value}`` (active parameters only, in space order)."""
        row = self.codes[i]
        return {n: self.choices[j][int(row[j])] for j, n in enumerate(self.names) if row[j] >= 0}

    def column(self, j: int) -> np.ndarray:
        """Values of parameter ``j`` over all designs (``None`` where inactive)."""
        values = np.empty(len(self.choices[j]) + 1, dtype=object)
        values[:-1] = list(self.choices[j])
        values[-1] = None
        out: np.ndarray = values[self.codes[:, j]]
        return out


def _conditions(space: SearchSpace) -> list[str]:
    """Parameters that others' ``when`` refers to, in space order."""
    used = {c for p in space.parameters.values() for c in p.when}
    return [n for n in space.parameters if n in used]


def _condition_combos(space: SearchSpace, cond: list[str],
                      choices: Mapping[str, Sequence[Any]]) -> Iterator[dict[str, Any]]:
    """Every assignment of the condition parameters (inactive ones left out), each once."""

    def walk(i: int, chosen: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if i == len(cond):
            yield dict(chosen)
            return
        name = cond[i]
        if not space.active(name, chosen):
            yield from walk(i + 1, chosen)
            return
        for v in choices[name]:
            chosen[name] = v
            yield from walk(i + 1, chosen)
            del chosen[name]

    yield from walk(0, {})


def _grid_choices(space: SearchSpace) -> dict[str, tuple[Any, ...]]:
    out: dict[str, tuple[Any, ...]] = {}
    for p in space.parameters.values():
        if p.type == "float":
            raise DseInputError(space.source or space.name, f"parameters.{p.name}",
                                "a float parameter cannot be swept exhaustively: give it choices "
                                "(type = \"ordinal\") or sample the space with --samples N")
        out[p.name] = tuple(p.grid())
    return out


def design_grid(space: SearchSpace, order: Sequence[str] | None = None) -> DesignGrid:
    """Every design of a discrete space, conditions respected (each active combination once).

    ``order``: parameters from slowest- to fastest-varying (default :func:`sweep_order`); the
    columns of the result stay in space order.
    """
    choices = _grid_choices(space)
    names = tuple(space.parameters)
    order = list(order) if order is not None else sweep_order(space)
    cond = _conditions(space)
    blocks: list[np.ndarray] = []
    for combo in _condition_combos(space, cond, choices):
        active = [n for n in order if n not in cond and space.active(n, combo)]
        # Condition parameters first (one value each in this block), then the rest in ``order``.
        axes = [n for n in order if n in combo] + active
        sizes = [1 if n in combo else len(choices[n]) for n in axes]
        total = math.prod(sizes)
        block = np.full((total, len(names)), -1, dtype=np.int32)
        idx = np.indices(sizes, dtype=np.int32).reshape(len(sizes), -1) if sizes else np.zeros((0, 1))
        for k, n in enumerate(axes):
            j = names.index(n)
            block[:, j] = choices[n].index(combo[n]) if n in combo else idx[k]
        blocks.append(block)
    codes = np.concatenate(blocks) if blocks else np.zeros((0, len(names)), dtype=np.int32)
    return canonical_grid(space, DesignGrid(names, tuple(choices[n] for n in names), codes))


def canonical_grid(space: SearchSpace, grid: DesignGrid) -> DesignGrid:
    """``grid`` with every design made canonical (:func:`~dse.search.study.encoding.canonical_design`:
    the parameters the model finds inert for a design at one value, and those that leaves
    inactive dropped) and each kept once, where it first occurs, so designs the model cannot tell
    apart are one row of a sweep and of its front. Which parameters are inert depends on the
    others only, so it is asked once per combination of them."""
    inertable = [j for j, n in enumerate(grid.names) if n in INERT_VALUES]
    if not inertable or not len(grid):
        return grid
    codes = grid.codes.copy()
    choices = [list(c) for c in grid.choices]
    others = [j for j in range(len(grid.names)) if j not in inertable]
    _, first, group = np.unique(codes[:, others], axis=0, return_index=True, return_inverse=True)
    order = np.argsort(group.reshape(-1), kind="stable")
    bounds = np.searchsorted(group.reshape(-1)[order], np.arange(len(first) + 1))
    for g, i in enumerate(first):
        rows = order[bounds[g]:bounds[g + 1]]
        for name in inert_keys(space, grid.design(int(i))):
            j = grid.names.index(name)
            value = canonical_value(space.parameters[name])
            if value not in choices[j]:
                choices[j].append(value)
            codes[rows[codes[rows, j] >= 0], j] = choices[j].index(value)
    _drop_inactive(space, grid.names, choices, codes)
    _, kept = np.unique(codes, axis=0, return_index=True)
    return DesignGrid(grid.names, tuple(tuple(c) for c in choices), codes[np.sort(kept)])


def _drop_inactive(space: SearchSpace, names: tuple[str, ...], choices: list[list[Any]],
                   codes: np.ndarray) -> None:
    """Mark inactive (-1), in place, every conditional parameter whose condition a canonical value
    no longer meets (no fabric: no fabric bandwidth), in space order (a condition may itself be
    conditional)."""
    for j, name in enumerate(names):
        when = space.parameters[name].when
        if not when or not any(c in INERT_VALUES for c in when):
            continue
        active = codes[:, j] >= 0
        for cond, values in when.items():
            c = names.index(cond)
            allowed = [k for k, v in enumerate(choices[c]) if v in values]
            active &= np.isin(codes[:, c], allowed)
        codes[~active, j] = -1


def sobol_designs(space: SearchSpace, n: int, seed: int | None = 0) -> DesignGrid:
    """``n`` designs drawn by a scrambled Sobol sequence over every parameter of ``space`` (floats
    on their linear or log scale, ints, choices by index); duplicates of a discrete combination
    are dropped. Needs scipy (``pip install scipy``; the ``gp`` extra has it)."""
    try:
        from scipy.stats import qmc  # type: ignore[import-untyped,unused-ignore]
    except ImportError:  # pragma: no cover - depends on the environment
        raise DseInputError("--samples", str(n), "Sobol sampling needs scipy: pip install scipy "
                            "(it comes with the gp extra: pip install 'dse[gp]')") from None
    names = tuple(space.parameters)
    if n < 1:
        raise DseInputError("--samples", str(n), "expected a positive number of designs")
    sampler = qmc.Sobol(d=max(len(names), 1), scramble=True, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # balance warnings for n that is not a power of 2
        u = sampler.random(n)
    values: list[list[Any]] = []
    for j, name in enumerate(names):
        values.append([from_unit(space.parameters[name], float(x)) for x in u[:, j]])
    choices: list[tuple[Any, ...]] = []
    codes = np.full((n, len(names)), -1, dtype=np.int32)
    for j in range(len(names)):
        distinct = tuple(dict.fromkeys(values[j]))
        choices.append(distinct)
        lookup = {v: k for k, v in enumerate(distinct)}
        codes[:, j] = [lookup[v] for v in values[j]]
    for i in range(n):  # drop inactive parameters (in space order, as a trial draws them)
        chosen: dict[str, Any] = {}
        for j, name in enumerate(names):
            if space.active(name, chosen):
                chosen[name] = choices[j][codes[i, j]]
            else:
                codes[i, j] = -1
    _, first = np.unique(codes, axis=0, return_index=True)
    return canonical_grid(space, DesignGrid(names, tuple(choices), codes[np.sort(first)]))


def from_unit(p: Parameter, u: float) -> Any:
    """The value of ``p`` at ``u`` in [0, 1): a choice by index, an int on its grid (or its log
    scale), a float on its linear or log scale (as a Sobol or Latin hypercube draw maps)."""
    if p.type in ("categorical", "ordinal"):
        return p.choices[min(int(u * len(p.choices)), len(p.choices) - 1)]
    assert p.low is not None and p.high is not None
    if p.type == "int":
        grid = p.grid()
        if p.log and len(grid) > 1:
            x = math.exp(math.log(p.low) + u * (math.log(p.high + 1) - math.log(p.low)))
            return min(max(int(x), int(p.low)), int(p.high))
        return grid[min(int(u * len(grid)), len(grid) - 1)]
    if p.log:
        return math.exp(math.log(p.low) + u * (math.log(p.high) - math.log(p.low)))
    return p.low + u * (p.high - p.low)


def sweep_order(space: SearchSpace) -> list[str]:
    """Parameters ordered for memoisation: those that change a placement or the step's loads
    (probed one at a time on the base system) vary slowest, link parameters fastest. Only speed
    depends on this; the memo is keyed on the resolved systems themselves."""
    base = space.base_spec()
    cat = load_catalog()
    structural: list[str] = []
    links: list[str] = []
    for name, p in space.parameters.items():
        probe = probe_values(p)
        keys: set[tuple[object, ...]] = set()
        for v in probe:
            try:
                spec = space.system_spec(space.base_system, (*space.fixed.items(), (name, v)))
                s = resolve_system(spec, cat)
                keys.add((plan_key(s), loads_key(s)))
            except DseInputError:
                keys.add(("invalid", v))
        (structural if len(keys) > 1 else links).append(name)
    del base
    return structural + links


# --- evaluating designs ------------------------------------------------------------------------


@dataclass
class _Context:
    """What every worker needs (inherited through fork, or pickled once per worker)."""

    workload: Workload
    space: SearchSpace
    objectives: ObjectiveSet
    grid: DesignGrid
    calibration: Calibration
    catalog: Catalog
    memo: Memo | None = None


_CTX: _Context | None = None


METRIC_COLUMNS: tuple[str, ...] = tuple(m.name for m in METRICS if m.numeric)
"""Numeric metrics of :meth:`dse.model.Evaluation.metrics` written per design."""


def _evaluate_chunk(bounds: tuple[int, int]) -> dict[str, np.ndarray]:
    """Score designs ``lo:hi`` of the context's grid: metric columns, breakdown, violations."""
    ctx = _CTX
    assert ctx is not None
    if ctx.memo is None:
        ctx.memo = Memo(ctx.workload, ctx.calibration)
    lo, hi = bounds
    constraint_names = list(ctx.objectives.violations(_nan_metrics()))
    cols: dict[str, list[Any]] = {k: [] for k in METRIC_COLUMNS}
    cols.update({f"breakdown_s:{s}": [] for s in STAGES})
    cols.update({"feasible": [], "bottleneck": [], "eligible": []})
    cols.update({f"constraint:{c}": [] for c in constraint_names})
    wl, calib, cat, memo, objectives = ctx.workload, ctx.calibration, ctx.catalog, ctx.memo, ctx.objectives
    for i in range(lo, hi):
        try:
            design = ctx.grid.design(i)
            ev = evaluate(design_workload(ctx.space, design, wl), design_system(ctx.space, design, cat),
                          calib, cat, memo)
        except DseInputError:
            ev = None
        if ev is None:
            # A combination the schema cannot express: infeasible, as in a study.
            for k in METRIC_COLUMNS:
                cols[k].append(math.nan)
            for s in STAGES:
                cols[f"breakdown_s:{s}"].append(math.nan)
            cols["feasible"].append(False)
            cols["bottleneck"].append("")
            cols["eligible"].append(False)
            for c in constraint_names:
                cols[f"constraint:{c}"].append(UNSCORABLE_CONSTRAINTS.get(c, math.nan))
            continue
        metrics = ev.metrics()
        for k in METRIC_COLUMNS:
            cols[k].append(metrics[k])
        for s, v in ev.timing.breakdown_s.items():
            cols[f"breakdown_s:{s}"].append(v)
        cols["feasible"].append(metrics["feasible"])
        cols["bottleneck"].append(metrics["bottleneck"])
        violations = objectives.violations(metrics, ev.rule_violations())
        ok = True
        for c in constraint_names:
            v = violations[c]
            cols[f"constraint:{c}"].append(v)
            ok = ok and v <= 0
        cols["eligible"].append(ok)
    out: dict[str, np.ndarray] = {}
    for k, col in cols.items():
        if k in ("feasible", "eligible"):
            out[k] = np.array(col, dtype=bool)
        elif k == "bottleneck":
            out[k] = np.array(col, dtype=object)
        else:
            out[k] = np.array(col, dtype=float)
    return out


def _nan_metrics() -> dict[str, Any]:
    m: dict[str, Any] = {k: math.nan for k in METRIC_COLUMNS}
    m.update({"feasible": False, "bottleneck": "", "memory_short_gb": 0.0})
    return m


# --- the sweep ---------------------------------------------------------------------------------


@dataclass
class SweepResult:
    """All designs and metrics of a sweep, and its exact front."""

    space: SearchSpace
    workload: Workload
    objectives: ObjectiveSet
    grid: DesignGrid
    frame: pd.DataFrame
    """One row per design: parameters (``None`` where inactive), metrics, ``breakdown_s:`` stages,
    ``constraint:`` values, ``eligible`` (every constraint met) and ``front``."""
    front: np.ndarray
    """Row indices of the exact Pareto front (eligible, non-dominated), by the first objective."""
    seconds: float
    jobs: int
    method: str = "sweep"
    """How the designs were chosen (``sweep``, ``coarse sweep``, ``coarse-to-fine sweep``): the
    label of a study reference taken from this front."""

    @property
    def designs_per_s(self) -> float:
        """Designs scored per second of wall time (enumeration and the front included)."""
        return len(self.frame) / self.seconds if self.seconds > 0 else math.inf

    def losses(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Objective values as losses (minimisation) of ``rows`` (default: the front)."""
        rows = self.front if rows is None else rows
        return objective_losses(self.frame.iloc[rows], self.objectives)

    def front_designs(self) -> list[dict[str, Any]]:
        """The front's designs as ``{parameter: value}``."""
        return [self.grid.design(int(i)) for i in self.front]


def objective_losses(frame: pd.DataFrame, objectives: ObjectiveSet) -> np.ndarray:
    """The objectives of ``frame``'s rows as losses (:meth:`ObjectiveSet.losses`)."""
    metrics = [o.metric for o in objectives.objectives]
    return objectives.losses(frame[metrics].to_numpy(dtype=float))


def run_sweep(
    space: SearchSpace,
    workload: Workload,
    objectives: ObjectiveSet,
    samples: int | None = None,
    seed: int | None = 0,
    jobs: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    calibration: Calibration | None = None,
    catalog: Catalog | None = None,
    grid: DesignGrid | None = None,
    memo: Memo | None = None,
) -> SweepResult:
    """Score every design of ``space`` (or ``samples`` Sobol designs, or ``grid``) with ``jobs``
    processes (default: every core) and find the exact front of ``objectives`` among the designs
    that meet every constraint. ``on_progress(done, total)`` is called as chunks finish. ``memo``
    (for the same workload and calibration) carries plans and loads over from earlier sweeps in
    this process (used with one job only: workers keep their own)."""
    global _CTX
    start = time.perf_counter()
    if grid is None:
        grid = sobol_designs(space, samples, seed) if samples is not None else design_grid(space)
    calib = calibration or load_calibration()
    cat = catalog or load_catalog()
    ctx = _Context(workload, space, objectives, grid, calib, cat,
                   memo if memo is not None and (jobs or 0) == 1 else None)
    total = len(grid)
    bounds = [(lo, min(lo + CHUNK_DESIGNS, total)) for lo in range(0, total, CHUNK_DESIGNS)]
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(bounds) or 1))
    chunks: list[dict[str, np.ndarray]] = []
    done = 0
    previous = _CTX
    _CTX = ctx
    try:
        if jobs == 1:
            results: Iterator[dict[str, np.ndarray]] = map(_evaluate_chunk, bounds)
            for chunk in results:
                chunks.append(chunk)
                done += len(chunk["feasible"])
                if on_progress is not None:
                    on_progress(done, total)
        else:
            mp = multiprocessing.get_context(_start_method())
            with mp.Pool(jobs, initializer=_init_worker, initargs=(ctx,)) as pool:
                for chunk in pool.imap(_evaluate_chunk, bounds, chunksize=1):
                    chunks.append(chunk)
                    done += len(chunk["feasible"])
                    if on_progress is not None:
                        on_progress(done, total)
                pool.close()  # the workers end on the queue's sentinels, not on SIGTERM
                pool.join()
    finally:
        _CTX = previous
    frame = _frame(grid, chunks)
    on = _mark_front(frame, objectives)
    return SweepResult(space, workload, objectives, grid, frame, on, time.perf_counter() - start, jobs)


def _start_method() -> str:
    """How a sweep starts its worker processes: ``fork`` (cheap: the context is inherited) only
    from a process with one thread. A process forked while another thread holds a lock (a test
    runner's I/O thread, a notebook's) inherits the lock held and can wait on it forever, and so
    does the pool that joins it (seen once in CI under pytest-xdist: the reduced benchmark's sweep
    hung); such a process, or a platform without fork, spawns its workers instead."""
    single = threading.active_count() == 1
    return "fork" if single and "fork" in multiprocessing.get_all_start_methods() else "spawn"


def _mark_front(frame: pd.DataFrame, objectives: ObjectiveSet) -> np.ndarray:
    """Rows of the exact front of ``frame`` (eligible, non-dominated; in lexicographic order of
    their losses: by the first objective), also marked in its ``front`` column."""
    rows = np.flatnonzero(frame["eligible"].to_numpy(dtype=bool))
    on = rows[non_dominated(objective_losses(frame.iloc[rows], objectives))]
    front = np.zeros(len(frame), dtype=bool)
    front[on] = True
    frame["front"] = front
    return on


def explicit_grid(space: SearchSpace, designs: Sequence[Mapping[str, Any]],
                  order: Sequence[str] | None = None) -> DesignGrid:
    """``designs`` (``{parameter: value}``, active parameters only) as a :class:`DesignGrid` of
    ``space``. With ``order`` (parameters from slowest- to fastest-varying, as
    :func:`sweep_order` gives) the rows are sorted on it, so that a sweep of the grid meets designs
    sharing a placement one after another (the memo's best case); without, they stay as given."""
    names = tuple(space.parameters)
    choices: list[list[Any]] = [[] for _ in names]
    lookups: list[dict[str, int]] = [{} for _ in names]
    codes = np.full((len(designs), len(names)), -1, dtype=np.int32)
    for i, design in enumerate(designs):
        for j, name in enumerate(names):
            if name not in design:
                continue
            value = design[name]
            key = repr(value)
            k = lookups[j].get(key)
            if k is None:
                k = lookups[j][key] = len(choices[j])
                choices[j].append(value)
            codes[i, j] = k
    if order is not None and len(designs):
        # Codes renumbered by value so that sorting them sorts the values (inactive first).
        ranks = np.zeros_like(codes)
        for j in range(len(names)):
            column = choices[j]
            by_value = sorted(range(len(column)), key=lambda k: _sort_key(column[k]))
            rank = np.empty(len(choices[j]) + 1, dtype=np.int32)
            rank[by_value] = np.arange(len(by_value), dtype=np.int32)
            rank[-1] = -1
            ranks[:, j] = rank[codes[:, j]]
        keys = [ranks[:, names.index(n)] for n in reversed(list(order)) if n in names]
        codes = codes[np.lexsort(keys)] if keys else codes
    return DesignGrid(names, tuple(tuple(c) for c in choices), codes)


def _sort_key(value: Any) -> tuple[int, Any]:
    return (0, float(value)) if isinstance(value, int | float) else (1, str(value))


def combine_sweeps(space: SearchSpace, parts: Sequence[SweepResult], seconds: float,
                   method: str) -> SweepResult:
    """One sweep of ``space`` holding every design of ``parts`` (sweeps of the same workload and
    objectives over disjoint designs of ``space`` or of a coarser cut of it), with the exact front
    among all of them."""
    designs = [part.grid.design(i) for part in parts for i in range(len(part.grid))]
    grid = explicit_grid(space, designs)
    skip = {*(n for part in parts for n in part.grid.names), "front"}
    frames = [part.frame[[c for c in part.frame.columns if c not in skip]] for part in parts]
    metrics = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if "bottleneck" in metrics:
        metrics["bottleneck"] = pd.Categorical(metrics["bottleneck"].astype(object))
    frame = pd.concat([_frame(grid, []), metrics], axis=1)
    objectives = parts[0].objectives
    on = _mark_front(frame, objectives)
    return SweepResult(space, parts[0].workload, objectives, grid, frame, on, seconds,
                       1, method)


def _init_worker(ctx: _Context) -> None:
    """A pool worker's start: the sweep's context, and the default signal handling. A forked
    worker inherits its parent's Python handlers: ``dse run``'s (stop after the running trial,
    :func:`dse.search.parallel.stop_gracefully`) would make it ignore the pool's SIGTERM, and the
    pool's join wait for it forever (a CI run hung so, a pool worker waiting on its task queue).
    Ctrl-C is the parent's to handle: it ends the pool."""
    global _CTX
    _CTX = ctx
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _frame(grid: DesignGrid, chunks: list[dict[str, np.ndarray]]) -> pd.DataFrame:
    data: dict[str, Any] = {}
    for j, name in enumerate(grid.names):
        col = grid.column(j)
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool)
                      for v in grid.choices[j])
        if numeric:
            values = np.array([math.nan if v is None else float(v) for v in grid.choices[j]] + [math.nan])
            data[name] = values[grid.codes[:, j]]
            if all(isinstance(v, int) for v in grid.choices[j]) and (grid.codes[:, j] >= 0).all():
                data[name] = data[name].astype(np.int64)
        else:
            data[name] = pd.Categorical(col)
    keys = list(chunks[0]) if chunks else []
    for k in keys:
        arr = np.concatenate([c[k] for c in chunks])
        data[k] = pd.Categorical(arr) if k == "bottleneck" else arr
    return pd.DataFrame(data)


def write_parquet(result: SweepResult, path: str, replace: bool = True) -> None:
    """Write every design and metric of ``result`` to a Parquet file (needs pyarrow), in one
    rename (:func:`dse.safe_write.write_file`; an existing file only with ``replace``)."""
    try:
        import pyarrow  # type: ignore[import-untyped,unused-ignore]  # noqa: F401
    except ImportError:  # pragma: no cover - depends on the environment
        raise DseInputError("--out", path, "writing Parquet needs pyarrow: pip install pyarrow "
                            "(or pip install 'dse[parquet]')") from None
    frame = result.frame.copy()
    for name in result.grid.names:
        if isinstance(frame[name].dtype, pd.CategoricalDtype):
            frame[name] = frame[name].astype(object).map(lambda v: None if v is None else str(v))
    frame.attrs = {}
    write_file(Path(path), frame.to_parquet(index=False), replace=replace)


# --- coarse sweeps and warm starts -------------------------------------------------------------


def coarse_space(space: SearchSpace, levels: int) -> SearchSpace:
    """``space`` with every parameter cut to at most ``levels`` values (ends included; floats and
    log-scale ints spaced on their scale), as ordinal choices: a grid a sweep covers quickly."""
    params: dict[str, Parameter] = {}
    for name, p in space.parameters.items():
        if p.type == "categorical":
            params[name] = p
            continue
        if p.type == "ordinal":
            picks = _spread(len(p.choices), levels)
            params[name] = dataclasses.replace(p, choices=tuple(p.choices[i] for i in picks))
            continue
        assert p.low is not None and p.high is not None
        if p.type == "int":
            grid = p.grid()
            if p.log:
                raw = np.exp(np.linspace(math.log(p.low), math.log(p.high), levels))
                values: tuple[Any, ...] = tuple(sorted({min(grid, key=lambda g: abs(g - x)) for x in raw}))
            else:
                values = tuple(grid[i] for i in _spread(len(grid), levels))
        else:
            raw = (np.exp(np.linspace(math.log(p.low), math.log(p.high), levels)) if p.log
                   else np.linspace(p.low, p.high, levels))
            values = tuple(dict.fromkeys(float(x) for x in raw))
            values = (p.low, *values[1:-1], p.high) if len(values) > 1 else (p.low,)
        params[name] = Parameter(name, "ordinal", choices=values, when=p.when, description=p.description)
    return dataclasses.replace(space, name=f"{space.name}-coarse{levels}", parameters=params)


def _spread(n: int, levels: int) -> list[int]:
    if n <= levels:
        return list(range(n))
    return sorted({round(i * (n - 1) / (levels - 1)) for i in range(levels)})


COARSE_MAX_LEVELS = 6
"""The most values per parameter a coarse grid keeps (fewer when the grid would be too large)."""


SWEEP_MIN_LEVELS = 3
"""The fewest levels a parameter keeps in the default sweep's coarse grid. A grid of two levels
(each parameter's ends) samples nothing between them: a space that fits only at two levels gets
the pre-screen instead (:mod:`dse.search.algorithms.prescreen`). Since equal one-node designs are counted
once, the ``full`` space fits at two levels (17,280 designs) but not at three (739,206)."""


def coarse_grid(space: SearchSpace, max_designs: int = REFERENCE_MAX_DESIGNS,
                min_levels: int = 2) -> tuple[SearchSpace, DesignGrid]:
    """The finest :func:`coarse_space` (:data:`COARSE_MAX_LEVELS` levels down to ``min_levels``)
    whose grid has at most ``max_designs`` designs; the ``min_levels`` grid when none has."""
    levels = COARSE_MAX_LEVELS
    while True:
        coarse = coarse_space(space, levels)
        # The size ignoring conditions bounds the grid from above: skip building hopeless ones.
        if levels <= min_levels or coarse.size() <= 8 * max_designs:
            grid = design_grid(coarse)
            if len(grid) <= max_designs or levels <= min_levels:
                return coarse, grid
        levels -= 1


def greedy_front(losses: np.ndarray, k: int, extremes: bool = False) -> list[int]:
    """``k`` indices of front rows chosen greedily by hypervolume contribution (each pick the row
    that adds the most hypervolume to those already picked, objectives scaled between the front's
    ideal point and its nadir pushed 10% out; ties: the lower index). Rows with the same values as
    a picked one add nothing, so a front whose cheap end is many equivalent designs (same cost,
    same throughput, different switches) is not enqueued many times over, as an even spread
    along the first objective would. With ``extremes``, each objective's best row (ties broken by
    the others) is picked first: its share of the hypervolume can be small (a 2% faster design
    at a quarter more capex), yet it is the design a study is most often asked for."""
    n = losses.shape[0]
    if n == 0 or k <= 0:
        return []
    _, first = np.unique(losses, axis=0, return_index=True)
    distinct = sorted(int(i) for i in first)
    lo, ref = loss_box(losses)
    scale = np.where(ref - lo > 0, ref - lo, 1.0)
    points = (losses - lo) / scale
    ones = np.ones(losses.shape[1])
    picked: list[int] = []
    if extremes:
        rows = losses[distinct]
        for j in range(losses.shape[1]):
            best = distinct[best_row(rows, j)]
            if best not in picked and len(picked) < k:
                picked.append(best)
    volume = float(compute_hypervolume(points[picked], ones)) if picked else 0.0
    while len(picked) < min(k, len(distinct)):
        best, gain = -1, -1.0
        for i in distinct:
            if i in picked:
                continue
            g = float(compute_hypervolume(points[[*picked, i]], ones)) - volume
            if g > gain + 1e-15:
                best, gain = i, g
        if best < 0:
            break
        picked.append(best)
        volume += gain
    return sorted(picked)


def coarse_front(space: SearchSpace, workload: Workload, objectives: ObjectiveSet,
                 max_designs: int = REFERENCE_MAX_DESIGNS, jobs: int | None = 1,
                 catalog: Catalog | None = None, calibration: Calibration | None = None) -> SweepResult:
    """The sweep of :func:`coarse_grid` (at most ``max_designs`` designs, or its 2-level grid)."""
    coarse, grid = coarse_grid(space, max_designs)
    result = run_sweep(coarse, workload, objectives, jobs=jobs, grid=grid, catalog=catalog,
                       calibration=calibration)
    result.method = "coarse sweep"
    return result


def record_reference(study: Any, result: SweepResult) -> None:
    """Store the box of ``result``'s front (a coarse or coarse-to-fine sweep) as the study's fixed
    hypervolume reference (once), labelled with its method and number of designs."""
    if REFERENCE_KEY in study.user_attrs or not len(result.front):
        return
    ref = reference_from_front(result.losses(), len(result.frame), result.method)
    study.set_user_attr(REFERENCE_KEY, ref.to_json())


def warm_start(
    study: Any,
    space: SearchSpace,
    workload: Workload,
    objectives: ObjectiveSet,
    max_trials: int | None = None,
    max_designs: int = REFERENCE_MAX_DESIGNS,
    jobs: int | None = 1,
    catalog: Catalog | None = None,
    result: SweepResult | None = None,
    calibration: Calibration | None = None,
) -> list[dict[str, Any]]:
    """Enqueue the exact front of a coarse sweep of ``space`` (at most ``max_designs`` designs,
    or ``result`` when already swept) into the Optuna ``study``: at most ``max_trials`` designs
    of distinct values, each objective's best first, then picked by hypervolume contribution
    (:func:`greedy_front`), so its sampler starts from good designs rather than random ones; the
    front also becomes the study's fixed hypervolume reference (:mod:`dse.search.algorithms.reference`) when
    it has none. Returns the enqueued designs. A study already seeded (attribute
    ``dse:warm_start``) is left alone, so resuming never enqueues twice."""
    if WARM_START_KEY in study.user_attrs:
        return []
    if result is None:
        result = coarse_front(space, workload, objectives, max_designs, jobs, catalog, calibration)
    record_reference(study, result)
    designs = result.front_designs()
    if max_trials is not None:
        designs = [designs[i] for i in greedy_front(result.losses(), max_trials, extremes=True)]
    for design in designs:
        study.enqueue_trial(encode_design(space, design), user_attrs={"warm_start": "sweep"})
    study.set_user_attr(WARM_START_KEY, {"designs": len(result.frame), "front": len(result.front),
                                         "enqueued": len(designs), "space": result.space.name,
                                         "method": result.method, "seconds": result.seconds})
    return designs


def warm_start_study(study: Any, spec: StudySpec, max_trials: int | None = None) -> list[dict[str, Any]]:
    """:func:`warm_start` for a study file's ``spec`` (``dse run --warm-start sweep``): at most a
    fifth of the budget (and at least one design, :func:`~dse.search.study.seeding.warm_start_trials`)
    is spent on the coarse front."""
    cap = max_trials if max_trials is not None else warm_start_trials(spec.budget)
    return warm_start(study, study_space(spec), study_workload(spec), study_objectives(spec),
                      max_trials=cap, catalog=study_catalog(spec).catalog,
                      calibration=study_calibration(spec))


def sweep_allowed(space: SearchSpace, budget: int) -> bool:
    """The rule for the default coarse sweep of a new study: a budget of at least
    :data:`~dse.search.algorithms.reference.REFERENCE_MIN_BUDGET` trials and a coarse grid of at most
    :data:`~dse.search.algorithms.reference.REFERENCE_MAX_DESIGNS` designs at :data:`SWEEP_MIN_LEVELS`
    levels or more."""
    if budget < REFERENCE_MIN_BUDGET:
        return False
    try:
        _, grid = coarse_grid(space, REFERENCE_MAX_DESIGNS, SWEEP_MIN_LEVELS)
    except DseInputError:
        return False
    return 0 < len(grid) <= REFERENCE_MAX_DESIGNS


__all__ = [
    "DesignGrid",
    "SweepResult",
    "coarse_front",
    "coarse_grid",
    "coarse_space",
    "combine_sweeps",
    "design_grid",
    "explicit_grid",
    "from_unit",
    "greedy_front",
    "objective_losses",
    "record_reference",
    "run_sweep",
    "sobol_designs",
    "sweep_allowed",
    "sweep_order",
    "warm_start",
    "warm_start_study",
    "write_parquet",
]
