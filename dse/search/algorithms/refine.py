"""Coarse-to-fine sweeps: the exact front of a coarse grid, then the full-resolution neighbourhood
of that front swept until the front stops changing.

A coarse grid (:func:`dse.search.algorithms.sweep.coarse_grid`: 3 to 6 values per parameter) misses the
designs between its levels, and on spaces whose front is made of such designs its front is a poor
start: measured against the exact front (docs/benchmarks.md), the coarse front of zion-2020 holds
0.57 of its hypervolume and production-12t's 0.69. A front is mostly made of near neighbours of
front designs, so :func:`coarse_to_fine` expands parents drawn from two groups:

- the extremes: each objective's best design, and its best design with each choice of each
  categorical parameter (so an objective's extreme is searched for directly, from every fabric
  or accelerator: zion-2020's fastest design has 14 accelerators on a ring, while its fastest on
  the coarse grid's fabrics has 8 fully connected),
- the front, by the first objective,

and sweeps every design one parameter away from a parent (a line search along each parameter
over its whole grid, or over :data:`LINE_MAX_VALUES` values spread over a longer one, its nearest
values included; a float parameter over :data:`FLOAT_LEVELS` values). A move of a categorical
parameter also moves the parameters conditioned on it (``when``) along their lines, whether they
become active (a fabric's bandwidth when a fabric is chosen) or stay so (the bandwidth of a
hybrid cube mesh is rarely one a full mesh can carry): :meth:`_State._with_children`. Each
round expands two parents, best-first: the first not yet expanded of the extremes and the first
other of the front, both groups recomputed from every design scored so far, so the
round after one that found a faster (or cheaper) design climbs on from it. A CPU budget that
stops the refinement (:func:`screen_to_fine`) has then spent it where the front moved: on the
Model-A stand-in, whose line searches cost a new placement of 1,000 tables each, one round over a
front of 60 designs used to take more than the whole budget, and the fastest design of a study
reached 92-100% of the best known, against 100% in every seed since (docs/benchmarks.md).
Designs already swept are skipped, a round is scored in one batch ordered for the memo
(:func:`dse.search.algorithms.sweep.explicit_grid`) and the front updated; a parent is expanded once. The
sweep stops when no parent is left (the front and every per-choice best expanded) or when
:data:`REFINE_MAX_DESIGNS` designs beyond the coarse grid have been scored. When no parent
is left to line-search, every parent gets repair moves (:meth:`_State._repairs`): a parameter
stepped to a value that made the design miss a constraint, with another along its whole line
(fewer nodes fit the tables only with more memory per node), and line searches resume from any
new front design.

It is deterministic: no random draw, parents and candidates in a fixed order.

A space too large for a coarse grid (more than
:data:`~dse.search.algorithms.reference.REFERENCE_MAX_DESIGNS` designs even at 2 values per parameter, or
one whose float parameters make a grid meaningless) starts instead from the front of a
space-filling pre-screen (:mod:`dse.search.algorithms.prescreen`, a budget of CPU seconds) and is refined
the same way, for at most :data:`~dse.search.algorithms.prescreen.REFINE_SHARE` times that budget more
(:func:`screen_to_fine`; its design cap, :data:`PRESCREEN_REFINE_MAX_DESIGNS`, only bounds
memory).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.model.catalog import Catalog, load_catalog
from dse.model.evaluate import Memo
from dse.model.parameters import Calibration, load_calibration
from dse.model.workload import Workload
from dse.search.algorithms.dedup import design_key
from dse.search.algorithms.pareto import best_row, non_dominated
from dse.search.algorithms.prescreen import BATCH_DESIGNS, REFINE_SHARE, prescreen
from dse.search.algorithms.prescreen import METHOD as SCREEN_METHOD
from dse.search.algorithms.reference import REFERENCE_MAX_DESIGNS, REFERENCE_MIN_BUDGET
from dse.search.algorithms.sweep import (
    SweepResult,
    coarse_grid,
    combine_sweeps,
    explicit_grid,
    objective_losses,
    record_reference,
    run_sweep,
    sweep_allowed,
    sweep_order,
    warm_start,
)
from dse.search.study.attribute_keys import PRESCREEN_KEY, REFERENCE_KEY
from dse.search.study.encoding import canonical_design
from dse.search.study.objective_sets import ObjectiveSet
from dse.search.study.search_space import Parameter, SearchSpace
from dse.search.study.seeding import PRESCREEN_S, WARM_MAX_TRIALS, warm_start_trials

REFINE_MAX_DESIGNS = REFERENCE_MAX_DESIGNS
"""Designs a coarse-to-fine sweep scores beyond its coarse grid, at most: the coarse grid's own
bound (:data:`~dse.search.algorithms.reference.REFERENCE_MAX_DESIGNS`), so refining costs at most as much
as the coarse sweep. Measured on the benchmark spaces (docs/benchmarks.md, one core, through the
memo, repair moves included, light load), no round stopped by it: zion-2020 6,318 coarse + 7,149
refined designs in 3.7 s, production-12t 6,912 + 4,995 in 6.1 s, issue-mixed 6,912 + 3,031 in
2.4 s, todays-nodes-3d 720 + 1,238 in 0.5 s, each finding the whole exact front. On the study
files' spaces: zionex-scale-out's 3,177 in 7.3 s (the 12T model on up to 128 accelerators: a new
placement costs tens of ms). The cap bounds spaces with many more parameters."""
PRESCREEN_REFINE_MAX_DESIGNS = 10 * REFINE_MAX_DESIGNS
"""Designs the refinement after a pre-screen scores at most: a bound on memory only, as its CPU
budget (:data:`~dse.search.algorithms.prescreen.REFINE_SHARE` times the pre-screen's) is what stops it on
the large benchmark cases. Capped at :data:`REFINE_MAX_DESIGNS`, full-dcnv2's refinement stopped
at it after 10-20 of its 45 CPU seconds, and two of five pre-screens never reached
the 16-accelerator full meshes on its front (sweep front 0.982 of the known front's hypervolume);
run to its budget (about 55,000 designs) they reach 0.999 (docs/benchmarks.md)."""
LINE_MAX_VALUES = 32
"""A parameter with more values than this is line-searched over this many (spread on its scale,
log for a log-scale int) plus the four nearest either side of the parent's value."""
FLOAT_LEVELS = 21
"""Values a float parameter is line-searched over (ends included, spaced on its scale): the fine
grid of a space with float knobs, so that refining them ends (each new value of a capacity is a
new placement, the costly part of a design)."""
FILL_MAX_DESIGNS = 64
"""Parameters that become active in a line-search move take every combination of their values up
to this many designs (beyond, their middle value)."""
METHOD = "coarse-to-fine sweep"
"""The label of a reference fixed on such a sweep's front (``coarse-to-fine sweep of N designs``)."""


def coarse_to_fine(
    space: SearchSpace,
    workload: Workload,
    objectives: ObjectiveSet,
    coarse_max_designs: int = REFERENCE_MAX_DESIGNS,
    max_designs: int = REFINE_MAX_DESIGNS,
    catalog: Catalog | None = None,
    calibration: Calibration | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> SweepResult:
    """The sweep of :func:`~dse.search.algorithms.sweep.coarse_grid` (at most ``coarse_max_designs``
    designs) refined as the module describes (at most ``max_designs`` more), on one core with
    one memo. The result holds every design scored (``method`` :data:`METHOD`, ``seconds`` the
    whole time) and the exact front among them. ``on_progress(done, total)``: designs scored of
    at most ``total`` (the coarse grid and the refinement's limit; equal at the end)."""
    start = time.perf_counter()
    calib, cat, memo = _scoring(workload, calibration, catalog)
    coarse, grid = coarse_grid(space, coarse_max_designs)
    first = run_sweep(coarse, workload, objectives, jobs=1, grid=grid, calibration=calib,
                      catalog=cat, memo=memo,
                      on_progress=lambda done, total: _tell(on_progress, done, total + max_designs))
    parts = refine(space, first, workload, objectives, max_designs, calib, cat, memo, on_progress)
    result = combine_sweeps(space, parts, time.perf_counter() - start, METHOD)
    _tell(on_progress, len(result.frame), len(result.frame))
    return result


@dataclass(frozen=True, slots=True)
class Screened:
    """A pre-screened sweep (:func:`screen_to_fine`) and what each stage cost."""

    result: SweepResult
    """Every design scored (``method`` :data:`dse.search.algorithms.prescreen.METHOD`) and their front."""
    screened: int
    """Designs the pre-screen scored."""
    screen_cpu_s: float
    """CPU seconds of the pre-screen (this process)."""
    refined: int
    """Designs the refinement scored after it."""
    refine_cpu_s: float
    """CPU seconds of the refinement."""
    seed: int = 0
    """The pre-screen's random seed."""

    def record(self, budget_s: float) -> dict[str, Any]:
        """The study attribute ``dse:prescreen`` (``budget_s``: the pre-screen's budget)."""
        return {"designs": self.screened, "cpu_s": round(self.screen_cpu_s, 3),
                "budget_s": budget_s, "refined": self.refined,
                "refine_cpu_s": round(self.refine_cpu_s, 3), "front": len(self.result.front),
                "method": "latin hypercube", "seed": self.seed}


def screen_to_fine(
    space: SearchSpace,
    workload: Workload,
    objectives: ObjectiveSet,
    seconds: float = PRESCREEN_S,
    max_designs: int = PRESCREEN_REFINE_MAX_DESIGNS,
    catalog: Catalog | None = None,
    calibration: Calibration | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    seed: int = 0,
) -> Screened:
    """:func:`coarse_to_fine` for a space too large for a coarse grid: the front of a
    :func:`~dse.search.algorithms.prescreen.prescreen` of ``seconds`` CPU seconds refined as the module
    describes (float parameters along :data:`FLOAT_LEVELS` values), up to ``max_designs`` more
    designs or :data:`~dse.search.algorithms.prescreen.REFINE_SHARE` times ``seconds`` of CPU, on one core
    with one memo. ``on_progress(done, total)``: designs scored and the number the budgets are
    projected to allow at the rate so far (:func:`_projected`; exact at the end)."""
    start, cpu0 = time.perf_counter(), time.process_time()
    calib, cat, memo = _scoring(workload, calibration, catalog)

    def screening(done: int) -> None:
        rate = _rate(done, cpu0)
        _tell(on_progress, done, max(done, round(rate * seconds))
              + _projected(0, rate, REFINE_SHARE * seconds, max_designs))

    screened = prescreen(space, workload, objectives, seconds, calib, cat, memo, seed,
                         on_progress=screening)
    first = combine_sweeps(space, screened, 0.0, SCREEN_METHOD)
    cpu1 = time.process_time()
    parts = refine(space, first, workload, objectives, max_designs, calib, cat, memo, on_progress,
                   cpu_s=REFINE_SHARE * seconds)
    result = combine_sweeps(space, parts, time.perf_counter() - start, SCREEN_METHOD)
    _tell(on_progress, len(result.frame), len(result.frame))
    return Screened(result, len(first.frame), cpu1 - cpu0, len(result.frame) - len(first.frame),
                    time.process_time() - cpu1, seed)


def refine(space: SearchSpace, first: SweepResult, workload: Workload, objectives: ObjectiveSet,
           max_designs: int, calibration: Calibration, catalog: Catalog, memo: Memo,
           on_progress: Callable[[int, int], None] | None = None,
           cpu_s: float = math.inf) -> list[SweepResult]:
    """``first`` and the rounds of the module's refinement from its front: at most
    ``max_designs`` designs more, and none scored after ``cpu_s`` CPU seconds (a round is scored
    in slices of :data:`~dse.search.algorithms.prescreen.BATCH_DESIGNS` and the rest of it dropped then: a
    round on a front of hundreds of float designs can hold thousands)."""
    cpu0 = time.process_time()
    parts = [first]
    state = _State(space, objectives, first)
    order = sweep_order(space)
    scored = 0

    def late() -> bool:
        return time.process_time() - cpu0 >= cpu_s

    while scored < max_designs and not late():
        batch = state.next_round(max_designs - scored)
        if batch is None:
            break
        if not batch:  # every candidate of this round's parents was scored before
            continue
        step = len(batch) if math.isinf(cpu_s) else BATCH_DESIGNS
        for lo in range(0, len(batch), step):
            if lo and late():
                break
            part = run_sweep(space, workload, objectives, jobs=1, calibration=calibration,
                             grid=explicit_grid(space, batch[lo:lo + step], order),
                             catalog=catalog, memo=memo)
            parts.append(part)
            state.add(part)
            scored += len(part.frame)
            _tell(on_progress, len(first.frame) + scored,
                  len(first.frame) + _projected(scored, _rate(scored, cpu0), cpu_s, max_designs))
    return parts


def _rate(done: int, cpu0: float) -> float:
    """Designs per CPU second: ``done`` of them since the process time was ``cpu0``."""
    return done / max(time.process_time() - cpu0, 1e-9)


def _projected(scored: int, rate: float, cpu_s: float, max_designs: int) -> int:
    """Designs a refinement of ``cpu_s`` CPU seconds and at most ``max_designs`` designs is
    expected to score, ``scored`` of them done, at ``rate`` designs per CPU second: what a
    progress bar can end at (a CPU budget is not a design count)."""
    if math.isinf(cpu_s):
        return max_designs
    return max(scored, min(max_designs, round(rate * cpu_s)))


def _scoring(workload: Workload, calibration: Calibration | None,
             catalog: Catalog | None) -> tuple[Calibration, Catalog, Memo]:
    """The calibration and catalog a sweep scores with (the packaged ones by default) and the one
    memo its stages share."""
    calib = calibration or load_calibration()
    return calib, catalog or load_catalog(), Memo(workload, calib)


def _tell(on_progress: Callable[[int, int], None] | None, done: int, total: int) -> None:
    if on_progress is not None:
        on_progress(done, total)


def seed_new_study(study: Any, space: SearchSpace, workload: Workload, objectives: ObjectiveSet,
                   budget: int, warm: bool, catalog: Catalog | None = None,
                   max_trials: int | None = None,
                   on_progress: Callable[[int, int], None] | None = None,
                   prescreen_s: float = PRESCREEN_S,
                   keep: list[SweepResult] | None = None,
                   seed: int = 0) -> list[dict[str, Any]]:
    """What a new study gets by default with a budget of at least
    :data:`~dse.search.algorithms.reference.REFERENCE_MIN_BUDGET`: one :func:`coarse_to_fine` sweep when
    :func:`~dse.search.algorithms.sweep.sweep_allowed`, else (a space too large for a coarse grid) one
    :func:`screen_to_fine` of ``prescreen_s`` CPU seconds (0: none), recorded as
    ``dse:prescreen`` (designs scored and CPU seconds, :meth:`Screened.record`). Its front is the
    study's fixed hypervolume reference (``coarse-to-fine sweep of N designs``) and, when
    ``warm`` (the default sampler), is enqueued as a warm start
    (:func:`~dse.search.algorithms.sweep.warm_start`: at most ``max_trials``, by default
    :data:`~dse.search.study.seeding.WARM_MAX_TRIALS`, and a fifth of the budget). The sweep's designs
    are not trials. A study that already has its reference (another process swept) is left
    alone. Returns the enqueued designs; ``on_progress``: the sweep's; ``keep``: the sweep's
    result is appended to it (for a benchmark that measures the sweep's front itself);
    ``seed``: the pre-screen's (the study's seed, so that studies differing only in their seed
    start from different samples)."""
    if REFERENCE_KEY in study.user_attrs:
        return []
    if sweep_allowed(space, budget):
        result = coarse_to_fine(space, workload, objectives, catalog=catalog, on_progress=on_progress)
    elif budget >= REFERENCE_MIN_BUDGET and prescreen_s > 0:
        screened = screen_to_fine(space, workload, objectives, prescreen_s, catalog=catalog,
                                  on_progress=on_progress, seed=seed)
        study.set_user_attr(PRESCREEN_KEY, screened.record(prescreen_s))
        result = screened.result
    else:
        return []
    if keep is not None:
        keep.append(result)
    if not warm:
        record_reference(study, result)
        return []
    cap = WARM_MAX_TRIALS if max_trials is None else max_trials
    return warm_start(study, space, workload, objectives, max_trials=warm_start_trials(budget, cap),
                      result=result)


class _State:
    """The designs scored so far, their losses, and which parents have been expanded."""

    def __init__(self, space: SearchSpace, objectives: ObjectiveSet, first: SweepResult) -> None:
        self.space = space
        self.objectives = objectives
        self.designs: list[dict[str, Any]] = []
        self.keys: list[str] = []
        """Each row's :func:`~dse.search.algorithms.dedup.design_key`."""
        self.losses = np.zeros((0, len(objectives.objectives)))
        self.eligible = np.zeros(0, dtype=bool)
        self.seen: set[str] = set()
        self.row: dict[str, int] = {}
        """Design key -> its row in ``designs``."""
        self.expanded: set[str] = set()
        self.paired: set[str] = set()
        self.values = {name: _line_values(p) for name, p in space.parameters.items()}
        self.categorical = [p for p in space.parameters.values() if p.type == "categorical"]
        self.choice = {p.name: np.zeros(0, dtype=np.int64) for p in self.categorical}
        """Each categorical parameter's choice (its index, -1 where inactive) by row."""
        self.add(first)

    def add(self, part: SweepResult) -> None:
        """Take in the designs of a scored batch."""
        designs = [part.grid.design(i) for i in range(len(part.grid))]
        keys = [design_key(d) for d in designs]
        for key in keys:
            self.row[key] = len(self.row)
        self.keys += keys
        self.designs += designs
        for p in self.categorical:
            codes = [p.choices.index(d[p.name]) if p.name in d else -1 for d in designs]
            self.choice[p.name] = np.concatenate([self.choice[p.name], np.array(codes, dtype=np.int64)])
        self.seen.update(keys)
        self.losses = np.vstack([self.losses, objective_losses(part.frame, self.objectives)])
        self.eligible = np.concatenate([self.eligible, part.frame["eligible"].to_numpy(dtype=bool)])

    def parents(self, done: set[str] | None = None) -> list[dict[str, Any]]:
        """Designs to expand, not in ``done`` (default: those line-searched before): the
        extremes of :meth:`groups` then the front."""
        extremes, front = self.groups(self.expanded if done is None else done)
        return [self.designs[i] for i in dict.fromkeys(extremes + front)]

    def groups(self, done: set[str]) -> tuple[list[int], list[int]]:
        """The rows of the parents not in ``done``, in two groups: the extremes (each
        objective's best, then its best with each choice of each categorical parameter) and the
        front (by the first objective)."""
        rows = np.flatnonzero(self.eligible)
        if not len(rows):
            return [], []
        loss = self.losses[rows]
        k = loss.shape[1]
        picks = [int(rows[best_row(loss, j)]) for j in range(k)]
        for p in self.categorical:
            codes = self.choice[p.name][rows]
            for c in range(len(p.choices)):
                mine = np.flatnonzero(codes == c)
                if len(mine):
                    picks += [int(rows[mine[best_row(loss[mine], j)]]) for j in range(k)]
        ordered = [int(rows[i]) for i in non_dominated(loss)]
        return self._unexpanded(picks, done), self._unexpanded(ordered, done)

    def _unexpanded(self, rows: list[int], done: set[str]) -> list[int]:
        """``rows`` whose designs are not in ``done``, each once, in order (a row's design is
        scored once, so its key is its own)."""
        return [i for i in dict.fromkeys(rows) if self.keys[i] not in done]

    def next_round(self, room: int) -> list[dict[str, Any]] | None:
        """The unseen designs one parameter away from two parents (at most ``room``), taken
        best-first: the first of the extremes and the first other design of the front, both
        groups recomputed from every design scored so far, so a budget that stops the refinement
        has spent it where the front moved (a new fastest design is the next extreme expanded: a
        hill climb) rather than on one round spread thinly over a front of hundreds of designs.
        When every parent has been line-searched, those of :meth:`_repairs` from every parent at
        once; ``None`` when no parent is left to expand either way."""
        extremes, front = self.groups(self.expanded)
        if extremes or front:
            rows = extremes[:1] + [i for i in front if i not in extremes[:1]][:1]
            parents, moves, done = [self.designs[i] for i in rows], self._lines, self.expanded
        else:
            parents, moves, done = self.parents(self.paired), self._repairs, self.paired
            if not parents:
                return None
        batch: list[dict[str, Any]] = []
        for parent in parents:
            done.add(design_key(parent))
            for cand in moves(parent):
                key = design_key(cand)
                if key in self.seen:
                    continue
                self.seen.add(key)
                batch.append(cand)
                if len(batch) >= room:
                    return batch
        return batch

    def _lines(self, parent: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """Designs one parameter away from ``parent``, parameter by parameter in space order."""
        for name, p in self.space.parameters.items():
            if name not in parent:
                continue
            value = parent[name]
            moves = list(self.values[name]) if p.type == "float" else _near(p, value, self.values[name])
            for v in moves:
                if v == value:
                    continue
                yield from self._complete({**parent, name: v})
                if p.type == "categorical":
                    yield from self._with_children(parent, name, v)

    def _with_children(self, parent: Mapping[str, Any], name: str,
                       value: Any) -> Iterator[dict[str, Any]]:
        """``parent`` with categorical ``name`` moved to ``value`` and each parameter conditioned
        on it (``when``) along its line. A choice changes what its children mean: the fabric
        bandwidth of a hybrid cube mesh of 8 B200 (879 GB/s) breaks the bandwidth rule on a full
        mesh of 8 (700 GB/s), so the move that keeps the child's value is infeasible and the
        feasible designs of the new choice were two moves away. On full-dcnv2 this move took the
        pre-screens that stayed on 8-accelerator hybrid cube meshes to the 16-accelerator full
        meshes the others found (docs/benchmarks.md)."""
        moved = {**parent, name: value}
        for child, q in self.space.parameters.items():
            if name not in q.when or not self.space.active(child, moved):
                continue
            for w in self.values[child]:
                if w != moved.get(child):
                    yield from self._complete({**moved, child: w})

    def _repairs(self, parent: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """Designs two parameters away from ``parent``: one moved a step to a value that made the
        design miss a constraint, another along its whole line. A front is often bounded by
        feasibility: fewer nodes fit the tables only with more host DDR per node (the ZionEX
        space's cheapest designs: 4 nodes with 6.4 TB each, where 4 nodes with the 5 TB of the
        5-node designs do not fit), a move no single-parameter line search makes."""
        for name, p in self.space.parameters.items():
            if name not in parent or p.type == "categorical":
                continue
            i = _position(list(self.values[name]), parent[name])
            if i is None:
                continue
            line = self.values[name]
            for v in [line[k] for k in (i - 1, i + 1) if 0 <= k < len(line) and line[k] != parent[name]]:
                for moved in self._complete({**parent, name: v}):
                    row = self.row.get(design_key(moved))
                    if row is None or self.eligible[row]:
                        continue
                    for other in self.space.parameters:
                        if other != name and other in moved:
                            for w in self.values[other]:
                                if w != moved[other]:
                                    yield from self._complete({**moved, other: w})

    def _complete(self, design: dict[str, Any]) -> list[dict[str, Any]]:
        """``design`` with inactive parameters dropped and newly active ones filled in (every
        combination of their values, or their middle values beyond :data:`FILL_MAX_DESIGNS`), each
        made canonical (:func:`~dse.search.study.encoding.canonical_design`), so that a one-node design
        moved along oversubscription or topology is the design already scored, not a new row."""
        out = _fill(self.space, design, lambda n: self._options(n, False))
        if len(out) > FILL_MAX_DESIGNS:
            out = _fill(self.space, design, lambda n: self._options(n, True))
        return [canonical_design(self.space, d) for d in out]

    def _options(self, name: str, middle: bool) -> tuple[Any, ...]:
        p = self.space.parameters[name]
        if p.type == "float":
            assert p.low is not None and p.high is not None
            return (math.sqrt(p.low * p.high) if p.log else (p.low + p.high) / 2,)
        values = self.values[name]
        return (values[len(values) // 2],) if middle else values


def _fill(space: SearchSpace, design: Mapping[str, Any],
          options: Callable[[str], tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Every completion of ``design``: parameters in space order, an inactive one dropped, an
    active one absent from ``design`` taking each of its ``options`` (a filled parameter may
    switch another on)."""
    names = list(space.parameters)
    out: list[dict[str, Any]] = []

    def walk(i: int, chosen: dict[str, Any]) -> None:
        if i == len(names):
            out.append(dict(chosen))
            return
        n = names[i]
        if not space.active(n, chosen):
            walk(i + 1, chosen)
        elif n in design:
            walk(i + 1, {**chosen, n: design[n]})
        else:
            for v in options(n):
                walk(i + 1, {**chosen, n: v})

    walk(0, {})
    return out


def _position(line: list[Any], value: Any) -> int | None:
    """Index of ``value`` on a parameter's ``line``, else of the nearest numeric value there
    (a float knob's value off its line), else ``None``."""
    if value in line:
        return line.index(value)
    if not isinstance(value, int | float) or not all(isinstance(v, int | float) for v in line):
        return None
    return min(range(len(line)), key=lambda k: abs(float(line[k]) - float(value)))


def _line_values(p: Parameter) -> tuple[Any, ...]:
    """The values a line search along ``p`` visits (a float: :data:`FLOAT_LEVELS` on its scale)."""
    if p.type == "float":
        assert p.low is not None and p.high is not None
        raw = (np.exp(np.linspace(math.log(p.low), math.log(p.high), FLOAT_LEVELS)) if p.log
               else np.linspace(p.low, p.high, FLOAT_LEVELS))
        return (p.low, *(float(x) for x in raw[1:-1]), p.high)
    values = p.grid()
    if len(values) <= LINE_MAX_VALUES:
        return values
    if p.type == "int" and p.log:
        assert p.low is not None and p.high is not None
        raw = np.exp(np.linspace(math.log(max(p.low, 1e-9)), math.log(p.high), LINE_MAX_VALUES))
    else:
        raw = np.linspace(0, len(values) - 1, LINE_MAX_VALUES)
        return tuple(dict.fromkeys(values[round(x)] for x in raw))
    return tuple(sorted({min(values, key=lambda v: abs(float(v) - x)) for x in raw}, key=float))


def _near(p: Parameter, value: Any, line: tuple[Any, ...]) -> list[Any]:
    """The line-search values of ``p`` and, on a long grid, the four nearest either side."""
    values = p.grid()
    if len(values) <= LINE_MAX_VALUES or value not in values:
        return list(line)
    i = values.index(value)
    near = [values[k] for k in range(max(0, i - 4), min(len(values), i + 5))]
    return list(dict.fromkeys([*near, *line]))


__all__ = ["FILL_MAX_DESIGNS", "FLOAT_LEVELS", "LINE_MAX_VALUES", "METHOD",
           "PRESCREEN_REFINE_MAX_DESIGNS", "REFINE_MAX_DESIGNS",
           "Screened", "coarse_to_fine", "refine", "screen_to_fine", "seed_new_study"]
