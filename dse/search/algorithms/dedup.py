"""One evaluation per design: which trials of a study hold the same design, and fresh designs near
a given one.

A design is identified by its decoded parameter values (:func:`design_key`), so two trials that
drew the same ordinal index, the same node count and the same accelerator are the same design
whatever sampler drew them. :class:`DesignIndex` keeps the keys of a study's trials as they
accumulate (a finished trial's key is read once); the objective asks it whether a trial repeats an
earlier design (:meth:`DesignIndex.duplicate_of`) and then prunes the trial without running the
model (a pruned trial does not count against the budget), and the default sampler asks it which
designs are taken before it proposes one (:meth:`DesignIndex.taken`).

Across workers on shared storage the check reads the other workers' trials: a trial repeats an
earlier *completed* trial, or a *running* one with a lower number (the lower number keeps the
design). A race remains only while another worker is still writing its parameters one by one
(a few milliseconds): both trials are then evaluated, and the tables still show the design once.
"""

from __future__ import annotations

import bisect
import json
import math
import random
import weakref
from collections.abc import Iterable, Iterator, Mapping, Set
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from dse.search import _optuna
from dse.search.study.encoding import canonical_design, decode_params
from dse.search.study.search_space import Parameter, SearchSpace

DUPLICATE_KEY = "duplicate_of"
"""Trial user attribute: the number of the earlier trial whose design a pruned trial repeats."""


_KEY_ENCODER = json.JSONEncoder(sort_keys=True)
"""What ``json.dumps(..., sort_keys=True)`` builds on every call (the same text), built once: a
design key is asked for some hundred times per trial."""


def _norm(v: Any) -> Any:
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    return v


def design_key(design: Mapping[str, Any]) -> str:
    """A design's identity: its parameters and values as canonical JSON (an integral float and an
    int are the same value, as they are for the model)."""
    return _KEY_ENCODER.encode({k: _norm(v) for k, v in design.items()})


def trial_design(space: SearchSpace, trial: FrozenTrial) -> dict[str, Any]:
    """The decoded design of a trial: its ``design`` attribute, else its parameters so far (a
    running trial), else its fixed parameters (a waiting one)."""
    design = trial.user_attrs.get("design")
    if isinstance(design, dict):
        return design
    if trial.params:
        return canonical_design(space, decode_params(space, trial.params))
    fixed = trial.system_attrs.get("fixed_params")
    return canonical_design(space, decode_params(space, fixed)) if isinstance(fixed, dict) else {}


def group_by_design(trials: Iterable[FrozenTrial]) -> list[list[FrozenTrial]]:
    """``trials`` grouped by design (the ``design`` attribute, else the raw parameters), groups in
    order of their first trial and trials in order within each."""
    groups: dict[str, list[FrozenTrial]] = {}
    for t in trials:
        design = t.user_attrs.get("design")
        key = design_key(design if isinstance(design, dict) else t.params)
        groups.setdefault(key, []).append(t)
    return list(groups.values())


def trial_numbers(group: Iterable[FrozenTrial]) -> str:
    """The trial numbers of one design's trials, as a table cell: ``"12, 40, 77"``."""
    return ", ".join(str(t.number) for t in sorted(group, key=lambda t: t.number))


_FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
_OPEN = (TrialState.RUNNING, TrialState.WAITING)


class DesignIndex:
    """The design keys of a study's trials, refreshed incrementally: :meth:`refresh_study` reads
    only the trials numbered past the last one read and those last seen running or waiting (a
    finished trial never changes), so a refresh costs what changed, not the study's size."""

    def __init__(self, space: SearchSpace) -> None:
        self.space = space
        self._finished: dict[int, tuple[TrialState, str]] = {}
        self._first_complete: dict[str, int] = {}
        self._open: dict[int, tuple[TrialState, str]] = {}
        self._next = 0
        """Every trial numbered below this has been read at least once."""
        self._complete_numbers: list[int] = []
        """Numbers of the completed trials, sorted."""
        self.completed_trials: list[FrozenTrial] = []
        """The completed trials in the order they were read as complete (readers keep a cursor
        into it and read only the trials past it)."""

    def refresh(self, trials: Iterable[FrozenTrial]) -> None:
        """Read the keys of trials not yet known (``study.get_trials(deepcopy=False)``: every
        trial of the study; :meth:`refresh_study` reads only what changed)."""
        self._open = {}
        for t in trials:
            self._read(t)
            self._next = max(self._next, t.number + 1)

    def refresh_study(self, study: optuna.Study) -> None:
        """Read the trials of ``study`` created or changed since the last refresh."""
        for t in _optuna.trials_since(study, self._next, list(self._open)):
            self._read(t)
            self._next = max(self._next, t.number + 1)

    def _read(self, t: FrozenTrial) -> None:
        if t.number in self._finished:
            return
        if t.state in _FINISHED:
            self._open.pop(t.number, None)
            key = design_key(trial_design(self.space, t))
            self._finished[t.number] = (t.state, key)
            if t.state == TrialState.COMPLETE:
                if t.number < self._first_complete.get(key, 1 << 62):
                    self._first_complete[key] = t.number
                bisect.insort(self._complete_numbers, t.number)
                self.completed_trials.append(t)
        elif t.state in _OPEN:
            self._open[t.number] = (t.state, design_key(trial_design(self.space, t)))
        else:
            self._open.pop(t.number, None)

    def duplicate_of(self, number: int, design: Mapping[str, Any]) -> int | None:
        """The trial whose design trial ``number`` repeats: the first completed trial with the
        same design, else a running trial numbered before it with the same design."""
        key = design_key(design)
        done = self._first_complete.get(key)
        if done is not None and done != number:
            return done
        running = [n for n, (state, k) in self._open.items()
                   if k == key and n < number and state == TrialState.RUNNING]
        return min(running) if running else None

    def taken(self) -> Set[str]:
        """Keys of the designs evaluated, being evaluated or queued: a view of the index (not a
        copy of every key, which would cost O(trials) per question), whose completed part
        follows later refreshes."""
        return _Taken(self._first_complete, {k for _, k in self._open.values()})

    def completed(self) -> int:
        """Distinct designs completed."""
        return len(self._first_complete)

    def waiting(self) -> int:
        """Trials waiting to run (as of the last refresh)."""
        return sum(1 for state, _ in self._open.values() if state == TrialState.WAITING)

    def live_below(self, number: int) -> int:
        """Trials numbered below ``number`` that are complete, running or waiting (as of the last
        refresh)."""
        return (bisect.bisect_left(self._complete_numbers, number)
                + sum(1 for n in self._open if n < number))


class _Taken(Set[str]):
    """The keys of completed designs (a live mapping) and of open trials (a set)."""

    def __init__(self, done: Mapping[str, int], open_keys: set[str]) -> None:
        self._done, self._open = done, open_keys

    def __contains__(self, key: object) -> bool:
        return key in self._done or key in self._open

    def __iter__(self) -> Iterator[str]:
        yield from self._done
        yield from (k for k in self._open if k not in self._done)

    def __len__(self) -> int:
        return len(self._done) + sum(1 for k in self._open if k not in self._done)


_SHARED: weakref.WeakKeyDictionary[optuna.Study, DesignIndex] = weakref.WeakKeyDictionary()


def shared_index(study: optuna.Study, space: SearchSpace) -> DesignIndex:
    """The one :class:`DesignIndex` of ``study`` in this process (the objective, the budget check
    and the default sampler's proposals all read it), made on first use; refresh it with
    :meth:`DesignIndex.refresh_study` before reading. A cache of what the storage holds, tied to
    the study object's life: it never decides anything the storage does not say."""
    index = _SHARED.get(study)
    if index is None or (index.space is not space and index.space != space):
        index = DesignIndex(space)
        _SHARED[study] = index
    return index


def study_index(study: optuna.Study, space: SearchSpace, index: DesignIndex | None = None) -> DesignIndex:
    """``index`` (or a new one) refreshed with every trial of ``study``."""
    index = index or DesignIndex(space)
    index.refresh(study.get_trials(deepcopy=False))
    return index


LINE_MAX_VALUES = 16
"""Integer and ordinal parameters with at most this many values are searched along their whole
range by :func:`neighbourhood` (its last tier)."""


def _step_values(p: Parameter) -> tuple[Any, ...]:
    if p.type in ("categorical", "ordinal"):
        return p.choices
    return p.grid()


def neighbour(space: SearchSpace, design: Mapping[str, Any], rng: random.Random,
              changes: int = 1, weights: Mapping[str, float] | None = None) -> dict[str, Any]:
    """``design`` with ``changes`` active parameters moved: an ordinal or int to a nearby value
    (one or two steps; a log-scale int by up to a factor of two), a categorical to another choice,
    a float by a tenth of its range (a third on its log scale). Parameters that become active are
    left out (the sampler draws them). ``weights``: how likely each parameter is to be the one
    moved (default: all alike)."""
    out = dict(design)
    names = [n for n in space.parameters if n in design]
    chosen: list[str] = []
    while names and len(chosen) < changes:
        w = [weights.get(n, 1.0) if weights else 1.0 for n in names]
        pick = rng.choices(names, weights=w)[0]
        chosen.append(pick)
        names.remove(pick)
    for name in chosen:
        out[name] = _move(space.parameters[name], design[name], rng)
    return _settled(space, out)


def _settled(space: SearchSpace, design: Mapping[str, Any]) -> dict[str, Any]:
    """A moved design with only the parameters active under its new values (in space order),
    canonical (:func:`~dse.search.study.encoding.canonical_design`: a move that changes nothing for
    the design is no move)."""
    kept: dict[str, Any] = {}
    for name in space.parameters:
        if name in design and space.active(name, kept):
            kept[name] = design[name]
    return canonical_design(space, kept)


def _move(p: Parameter, value: Any, rng: random.Random) -> Any:
    if p.type == "categorical":
        others = [c for c in p.choices if c != value]
        return rng.choice(others) if others else value
    if p.type == "float":
        assert p.low is not None and p.high is not None
        if p.log:
            x = math.log(value) + rng.gauss(0.0, (math.log(p.high) - math.log(p.low)) / 3)
            return min(max(math.exp(x), p.low), p.high)
        return min(max(value + rng.gauss(0.0, (p.high - p.low) / 10), p.low), p.high)
    values = _step_values(p)
    i = values.index(value) if value in values else 0
    if p.type == "int" and p.log and isinstance(value, int | float) and value > 0 and rng.random() < 0.5:
        # Half the moves of a log-scale int are by up to a factor of two, so 1-64 nodes is
        # crossed in a few steps; the other half are a step or two, to settle on the best count.
        factor = 2.0 ** rng.uniform(-1.0, 1.0)
        target = value * factor
        j = min(range(len(values)), key=lambda k: abs(math.log(max(values[k], 1e-9)) - math.log(target)))
        if j == i:
            j = i + (1 if factor > 1 else -1)
    else:
        j = i + rng.choice((-2, -1, -1, 1, 1, 2))
    return values[min(max(j, 0), len(values) - 1)]


def neighbourhood(space: SearchSpace, design: Mapping[str, Any],
                  rng: random.Random) -> list[dict[str, Any]]:
    """Every design one parameter away from ``design``, nearest first (tier 1: the next value
    either side and every other categorical choice; tier 2: two steps, or a factor of two for a
    log-scale int; tier 3: four steps or a factor of four; tier 4: every other value of a
    parameter with at most :data:`LINE_MAX_VALUES` values), shuffled within a tier. Scanned in
    order it is a complete local search: the best design of an objective whose whole
    neighbourhood is evaluated is a local optimum of it."""
    return [cand for cand, _ in keyed_neighbourhood(space, design, rng)]


Tiers = dict[int, list[tuple[dict[str, Any], str]]]
"""A design's neighbours by tier (1-4), each with its :func:`design_key`, before shuffling."""


def keyed_neighbourhood(space: SearchSpace, design: Mapping[str, Any], rng: random.Random,
                        cache: dict[str, Tiers] | None = None) -> list[tuple[dict[str, Any], str]]:
    """:func:`neighbourhood` with each design's key, the same designs in the same order for the
    same ``rng`` state. ``cache`` (design key -> its tiers, kept by the caller) spares building
    and keying the neighbours of a design met again (an extreme move scans the same parents'
    neighbourhoods trial after trial once they are used up): only the shuffles draw from
    ``rng``, and they draw the same with or without it."""
    own = design_key(design)
    tiers = cache.get(own) if cache is not None else None
    if tiers is None:
        tiers = _tiers(space, design)
        if cache is not None:
            cache[own] = tiers
    out: list[tuple[dict[str, Any], str]] = []
    seen: set[str] = {own}
    for t in (1, 2, 3, 4):
        shuffled = list(tiers[t])
        rng.shuffle(shuffled)
        for cand, key in shuffled:
            if key not in seen:
                seen.add(key)
                out.append((dict(cand), key))
    return out


def _tiers(space: SearchSpace, design: Mapping[str, Any]) -> Tiers:
    """The unshuffled tiers of :func:`neighbourhood`."""
    tiers: Tiers = {1: [], 2: [], 3: [], 4: []}
    for name in space.parameters:
        if name not in design:
            continue
        p = space.parameters[name]
        value = design[name]
        moves: list[tuple[int, Any]] = []
        if p.type == "categorical":
            moves = [(1, c) for c in p.choices if c != value]
        elif p.type == "float":
            assert p.low is not None and p.high is not None
            span = p.high - p.low
            moves = [(t, min(max(value + sign * f * span, p.low), p.high))
                     for t, f in ((1, 0.05), (2, 0.15)) for sign in (-1, 1)]
        else:
            values = _step_values(p)
            i = values.index(value) if value in values else 0
            moves = [(t, values[i + d]) for t, ds in ((1, (-1, 1)), (2, (-2, 2)), (3, (-4, 4)))
                     for d in ds if 0 <= i + d < len(values)]
            if len(values) <= LINE_MAX_VALUES:
                # Tier 4: every other value (a line search along the parameter): on a front
                # whose good sizes are irregular (10 and 14 accelerators, not 12), a step of
                # one, two or four from the best size misses them.
                moves += [(4, v) for v in values]
            if p.type == "int" and p.log and isinstance(value, int | float) and value > 0:
                for t, f in ((2, 2.0), (2, 0.5), (3, 4.0), (3, 0.25)):
                    target = value * f
                    j = min(range(len(values)), key=lambda k: abs(values[k] - target))
                    moves.append((t, values[j]))
        for t, v in moves:
            if v == value:
                continue
            cand = _settled(space, {**design, name: v})
            tiers[t].append((cand, design_key(cand)))
    return tiers


def fresh_neighbour(space: SearchSpace, design: Mapping[str, Any], taken: Set[str],
                    rng: random.Random, tries: int = 24,
                    weights: Mapping[str, float] | None = None) -> dict[str, Any] | None:
    """A neighbour of ``design`` (:func:`neighbour`, one change, sometimes two) whose key is not in
    ``taken``, or ``None`` after ``tries`` draws."""
    for k in range(tries):
        cand = neighbour(space, design, rng, changes=1 if k < tries // 2 or rng.random() < 0.5 else 2,
                         weights=weights)
        if design_key(cand) not in taken:
            return cand
    return None


def random_design(space: SearchSpace, rng: random.Random) -> dict[str, Any]:
    """A design drawn uniformly per parameter (conditions respected)."""
    out: dict[str, Any] = {}
    for name, p in space.parameters.items():
        if not space.active(name, out):
            continue
        if p.type == "float":
            assert p.low is not None and p.high is not None
            out[name] = (math.exp(rng.uniform(math.log(p.low), math.log(p.high))) if p.log
                         else rng.uniform(p.low, p.high))
        else:
            out[name] = rng.choice(_step_values(p))
    return canonical_design(space, out)


__all__ = ["DUPLICATE_KEY", "DesignIndex", "Tiers", "design_key", "fresh_neighbour",
           "group_by_design", "keyed_neighbourhood", "neighbour", "neighbourhood", "random_design",
           "shared_index", "study_index", "trial_design", "trial_numbers"]
