"""Designs the default sampler proposes itself, beside TPE's and NSGA-II's.

Measured on mixed spaces (docs/benchmarks.md), TPE alone starves a categorical choice that was
unlucky early (the accelerator that is best at scale gets a few percent of the trials) and creeps
along wide integer ranges; the front of a discrete space, on the other hand, is mostly made of
near neighbours of good designs. :class:`Proposer` therefore adds:

- a **stratified start**: the first :data:`START_PER_CHOICE` x (most choices of a categorical
  parameter) designs it draws cycle through every choice of every categorical parameter and
  spread every other parameter over its range (a Latin hypercube by value index);
- **local moves** (:data:`LOCAL_SHARE` of the trials after the first :data:`LOCAL_AFTER`): an
  unevaluated neighbour (:func:`dse.search.algorithms.dedup.fresh_neighbour`) of a design on the current
  feasible front, of the best design of one objective (the extreme points, searched for
  directly, :data:`EXTREME_SHARE` of the moves), or of the best design of the least-tried choice
  of a categorical parameter (so no choice is starved).

Every proposal is a design no trial of the study holds (:class:`~dse.search.algorithms.dedup.DesignIndex`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Set
from typing import Any

import numpy as np
import optuna

from dse.search.algorithms.dedup import (
    DesignIndex,
    Tiers,
    design_key,
    fresh_neighbour,
    keyed_neighbourhood,
    neighbour,
    shared_index,
)
from dse.search.algorithms.pareto import GrowingFront, is_feasible
from dse.search.study.encoding import encode_design
from dse.search.study.search_space import Parameter, SearchSpace

START_PER_CHOICE = 2
"""Stratified-start designs per choice of the categorical parameter with the most choices (at
least :data:`START_MIN`)."""
START_MIN = 10
LOCAL_AFTER = 40
"""Completed trials before local moves begin: until then the warm start, the stratified start and
TPE explore. Measured (docs/benchmarks.md, 5 seeds, with extreme moves ordered by parameter
importance): 40 against 100 raised zion-2020 from 0.85 to 0.91 at 100 trials and from 0.89 to 0.99
at 200 (its extreme design found in 4 of 5 seeds, from 0); 30 with a larger local share did better
still on zion-2020 but cost 0.07 at 100 trials on production-12t and 0.025 on todays-nodes-3d."""
LOCAL_SHARE = 0.5
"""Share of the trials after :data:`LOCAL_AFTER` that are local moves (the rest are TPE's or
NSGA-II's)."""
EXTREME_SHARE = 0.5
"""Share of the local moves that search an objective's extreme directly (cycling over objectives;
:meth:`Proposer._extreme_move`)."""
COVERAGE_SHARE = 0.15
"""Share of the local moves made from the best design of the least-tried categorical choice."""


class Proposer:
    """Proposes designs (as Optuna fixed parameters) for the default sampler."""

    def __init__(self, space: SearchSpace, seed: int | None) -> None:
        self.space = space
        self.rng = random.Random(seed)
        self.index = DesignIndex(space)
        categorical = [p for p in space.parameters.values() if p.type == "categorical" and not p.when]
        self.categorical = categorical
        self.start = max(START_MIN, START_PER_CHOICE * max((len(p.choices) for p in categorical),
                                                           default=0))
        self._perms: dict[str, list[int]] = {}
        self._started = 0
        self._extreme = 0
        self._ranked = {name: _values(p) for name, p in space.parameters.items()
                        if p.type not in ("categorical", "float")}
        """The parameters :meth:`_importance` ranks, with their values."""
        self._reset()

    def _reset(self) -> None:
        """Forget the study read so far. What is kept per feasible row is kept as rows arrive
        (the front, the best rows, the value indices), so that a proposal costs the same at
        trial 5,000 as at trial 500 and chooses as a pass over every row would."""
        self._read = 0
        """Completed trials read (a cursor into the index's ``completed_trials``)."""
        self._rows: list[tuple[np.ndarray, dict[str, Any]]] = []
        """(losses, design) of each feasible completed trial."""
        self._tried: dict[tuple[str, Any], int] = {}
        self._loss_buf = np.zeros((0, 0))
        """The rows' losses (the first ``len(self._rows)`` rows; grown by doubling)."""
        self._front = GrowingFront()
        self._best_rows: list[int] = []
        """Per objective: the row :meth:`_best` returns."""
        self._choice_best: dict[tuple[str, Any], list[int]] = {}
        """Per (categorical parameter, choice): the first row of the least loss of each objective
        among the rows with that choice."""
        self._value_index: dict[str, list[int]] = {name: [] for name in self._ranked}
        """Per ranked parameter: each row's index of its value (-1: absent)."""
        self._importance_cache: dict[int, tuple[int, dict[str, int]]] = {}
        self._neighbours: dict[str, Tiers] = {}
        """Extreme moves' parents' neighbourhoods
        (:func:`~dse.search.algorithms.dedup.keyed_neighbourhood`)."""

    # --- reading the study -----------------------------------------------------------------

    def _update(self, study: optuna.Study) -> None:
        """Read the trials completed since the last call (through the study's shared index)."""
        index = shared_index(study, self.space)
        if index is not self.index:  # a new study object: read it from the start
            self.index = index
            self._reset()
        self.index.refresh_study(study)
        signs = np.array([-1.0 if d == optuna.study.StudyDirection.MAXIMIZE else 1.0
                          for d in study.directions])
        fresh = self.index.completed_trials[self._read:]
        self._read += len(fresh)
        for t in fresh:
            design = t.user_attrs.get("design")
            if not isinstance(design, dict):
                continue
            for p in self.categorical:
                if p.name in design:
                    key = (p.name, design[p.name])
                    self._tried[key] = self._tried.get(key, 0) + 1
            if t.values is not None and is_feasible(t):
                self._add_row(np.asarray(t.values, dtype=float) * signs, design)

    def _add_row(self, loss: np.ndarray, design: dict[str, Any]) -> None:
        """Add a feasible row and bring what is kept per row up to date."""
        i = len(self._rows)
        self._rows.append((loss, design))
        if i == len(self._loss_buf):
            grown = np.zeros((max(64, 2 * i), len(loss)))
            if i:
                grown[:i] = self._loss_buf[:i]
            self._loss_buf = grown
        self._loss_buf[i] = loss
        self._front.add(i, loss)
        # pareto.best_row's order: the objective, then the others in order, then the row (a
        # later row replaces the best only when strictly before it), so the best is a front member.
        for j in range(len(loss)):
            if i == 0:
                self._best_rows.append(0)
                continue
            if _tie_key(loss, j) < _tie_key(self._loss_buf[self._best_rows[j]], j):
                self._best_rows[j] = i
        for p in self.categorical:
            if p.name in design and design[p.name] in p.choices:
                kept = self._choice_best.setdefault((p.name, design[p.name]), [i] * len(loss))
                for j, r in enumerate(kept):
                    if loss[j] < self._loss_buf[r, j]:
                        kept[j] = i
        for name, values in self._ranked.items():
            self._value_index[name].append(values.index(design[name]) if design.get(name) in values
                                           else -1)

    # --- proposing -------------------------------------------------------------------------

    def propose(self, study: optuna.Study) -> tuple[str, dict[str, Any]] | None:
        """``(kind, Optuna parameters)`` of a design to evaluate next, or ``None`` (the inner
        sampler draws the trial)."""
        self._update(study)
        taken = self.index.taken()
        if self._started < self.start:
            self._started += 1
            design = self._stratified(self._started - 1)
            if design_key(design) not in taken:
                return "stratified", encode_design(self.space, design)
            return None
        if (not self._rows or self._read < LOCAL_AFTER
                or self.rng.random() >= LOCAL_SHARE):
            return None
        r = self.rng.random()
        if r < EXTREME_SHARE:
            found = self._extreme_move(taken)
            if found is not None:
                return "extreme", encode_design(self.space, found)
            kind, parent = "neighbour", self._front_member()
        elif r < EXTREME_SHARE + COVERAGE_SHARE and self.categorical:
            kind, parent = "coverage", self._coverage()
        else:
            kind, parent = "neighbour", self._front_member()
        if parent is None:
            return None
        fresh = fresh_neighbour(self.space, parent, taken, self.rng, weights=self._front_weights())
        if fresh is None:
            return None
        return kind, encode_design(self.space, fresh)

    def _extreme_move(self, taken: Set[str]) -> dict[str, Any] | None:
        """An unevaluated design one parameter away from an objective's best design or from its
        best design with one choice of a categorical parameter (objectives in turn, these parents
        in turn), moving the parameters that go most with the objective first
        (:meth:`_importance`), nearest values first, then along their whole range. The best
        design alone is often a local optimum one parameter away from a better design two
        parameters away (more accelerators need another scale-up fabric: zion-2020's extreme has
        14 accelerators on a ring, its best fully-connected design 8), which the best design with
        the other fabric reaches in one. When every parent is exhausted, a design two parameters
        away from the objective's best."""
        objectives = self._rows[0][0].shape[0]
        move = self._extreme
        self._extreme += 1
        objective = move % objectives
        parents = self._extreme_parents(objective)
        turn = (move // objectives) % len(parents)
        rank = self._importance(objective)
        for parent in parents[turn:] + parents[:turn]:
            cands = keyed_neighbourhood(self.space, parent, self.rng, self._neighbours)
            # The parameters that move the objective most first (stable: nearest first within).
            cands.sort(key=lambda c: rank.get(_changed(parent, c[0]), len(rank)))
            for cand, key in cands:
                if key not in taken:
                    return cand
        best = self._best(objective)
        for _ in range(24):
            cand = neighbour(self.space, best, self.rng, changes=2)
            if design_key(cand) not in taken:
                return cand
        return None

    def _importance(self, objective: int) -> dict[str, int]:
        """Parameters ranked by how strongly they go with ``objective`` over the feasible
        designs (absolute rank correlation of the value index, largest first)."""
        cached = self._importance_cache.get(objective)
        if cached is not None and cached[0] == len(self._rows):
            return cached[1]
        loss = self._losses()[:, objective]
        if len(loss) < 3:
            return {}
        target = np.argsort(np.argsort(loss))
        scores: dict[str, float] = {}
        for name in self._ranked:
            x = np.array(self._value_index[name], dtype=float)
            if np.ptp(x) == 0:
                continue
            scores[name] = abs(float(np.corrcoef(np.argsort(np.argsort(x)), target)[0, 1]))
        ordered = sorted(scores, key=lambda n: -scores[n])
        rank = {n: i for i, n in enumerate(ordered)}
        self._importance_cache[objective] = (len(self._rows), rank)
        return rank

    def _extreme_parents(self, objective: int) -> list[dict[str, Any]]:
        """Where extreme moves of ``objective`` start: its best design, then its best design with
        each choice of each categorical parameter (distinct designs)."""
        out = {design_key(self._best(objective)): self._best(objective)}
        for p in self.categorical:
            for choice in p.choices:
                best = self._choice_best.get((p.name, choice))
                if best is not None:
                    d = self._rows[best[objective]][1]
                    out.setdefault(design_key(d), d)
        return list(out.values())

    def _stratified(self, k: int) -> dict[str, Any]:
        """Design ``k`` of the start: each parameter's values visited in a shuffled cycle (a
        categorical's choices; other parameters' values in ``self.start`` strata)."""
        out: dict[str, Any] = {}
        for name, p in self.space.parameters.items():
            if not self.space.active(name, out):
                continue
            values = _values(p)
            strata = len(values) if p.type == "categorical" else min(len(values), self.start)
            cycle, pos = divmod(k, strata)
            perm = self._perms.get(f"{name}/{cycle}")
            if perm is None:
                perm = list(range(strata))
                self.rng.shuffle(perm)
                self._perms[f"{name}/{cycle}"] = perm
            s = perm[pos]
            u = (s + self.rng.random()) / strata
            if p.type == "float" or (p.type == "int" and p.log):
                assert p.low is not None and p.high is not None
                x = (math.exp(math.log(p.low) + u * (math.log(p.high) - math.log(p.low))) if p.log
                     else p.low + u * (p.high - p.low))
                out[name] = x if p.type == "float" else min(values, key=lambda v: abs(v - x))
            else:
                lo = s * len(values) // strata
                hi = max(lo + 1, (s + 1) * len(values) // strata)
                out[name] = values[self.rng.randrange(lo, hi)]
        return out

    def _losses(self) -> np.ndarray:
        """The rows' losses (a view: not to be changed)."""
        return self._loss_buf[:len(self._rows)]

    def _best(self, objective: int) -> dict[str, Any]:
        """The best design of ``objective``, ties broken by the others (a front member)."""
        return self._rows[self._best_rows[objective]][1]

    def _front_member(self) -> dict[str, Any] | None:
        """A front design, drawn by its crowding distance (the gap it sits in, objectives scaled
        to the front's range; the ends count as the widest gap): moves fill the front's gaps,
        where the hypervolume is lost."""
        loss = self._losses()
        front = np.array(self._front.rows, dtype=int)
        if not len(front):
            return None
        points = loss[front]
        span = np.where(np.ptp(points, axis=0) > 0, np.ptp(points, axis=0), 1.0)
        scaled = (points - points.min(axis=0)) / span
        crowd = np.zeros(len(front))
        for j in range(scaled.shape[1]):
            order = np.argsort(scaled[:, j], kind="stable")
            gaps = np.diff(scaled[order, j])
            inner = np.zeros(len(front))
            if len(front) > 2:
                inner[order[1:-1]] = gaps[:-1] + gaps[1:]
            inner[order[[0, -1]]] = 2.0 * (gaps.max() if len(gaps) else 1.0)
            crowd += inner
        weights = crowd + 1e-3
        pick = self.rng.choices(range(len(front)), weights=weights.tolist())[0]
        return self._rows[int(front[pick])][1]

    def _front_weights(self) -> dict[str, float]:
        """How likely a local move changes each parameter: more for those the front varies
        (0.5 + the square root of the number of extra values a parameter takes on the front), so
        moves go along the front rather than across parameters every front design agrees on."""
        front = self._front.rows
        out: dict[str, float] = {}
        for name in self.space.parameters:
            values = {repr(self._rows[int(i)][1].get(name)) for i in front}
            out[name] = 0.5 + math.sqrt(max(len(values) - 1, 0))
        return out

    def _coverage(self) -> dict[str, Any] | None:
        """The best design (by a random objective) with the least-tried choice of a random
        categorical parameter; without one, a front design switched to that choice."""
        p = self.rng.choice(self.categorical)
        choice = min(p.choices, key=lambda c: (self._tried.get((p.name, c), 0), self.rng.random()))
        best = self._choice_best.get((p.name, choice))
        if best is None:
            member = self._front_member()
            return None if member is None else {**member, p.name: choice}
        j = self.rng.randrange(len(best))
        return self._rows[best[j]][1]


def _changed(a: dict[str, Any], b: dict[str, Any]) -> str:
    """The first parameter whose value differs between designs ``a`` and ``b``."""
    return next((k for k in b if a.get(k) != b[k]), "")


def _values(p: Parameter) -> tuple[Any, ...]:
    if p.type in ("categorical", "ordinal"):
        return p.choices
    if p.type == "int":
        return p.grid()
    return (p.low, p.high)


def start_size(space: SearchSpace) -> int:
    """Designs of the stratified start for ``space``."""
    return Proposer(space, 0).start


__all__ = ["Proposer", "start_size"]


def _tie_key(loss: np.ndarray, j: int) -> tuple[float, ...]:
    """Objective ``j`` of a loss row, then the other objectives in order (``pareto.best_row``)."""
    return (loss[j], *(loss[c] for c in range(len(loss)) if c != j))
