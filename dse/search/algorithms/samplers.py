"""Samplers by name, and ``auto``: a Bayesian start that hands over to an evolutionary sampler.

Measured on this 2-core machine (see the studies issue): multi-objective TPE costs about 190 ms per
trial at 1,000 trials and over 1.2 s at 2,000 (its hypervolume-based subset selection grows with the
front), NSGA-II about 2 ms, GP about 4 s. ``auto`` therefore runs multivariate TPE with a constant
liar while the study is small, where its model pays off, and NSGA-II afterwards, seeding NSGA-II's
first generation with the best designs TPE found (NSGA-II's own elite selection over every earlier
trial) rather than with random ones.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler, NSGAIISampler, RandomSampler, TPESampler
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from dse.errors import DseInputError
from dse.search import _optuna
from dse.search.algorithms.proposals import Proposer
from dse.search.study.attribute_keys import PROPOSAL_KEY
from dse.search.study.search_space import SearchSpace
from dse.search.study.study_file import SAMPLERS

AUTO_SWITCH_TRIALS = 250
"""Completed trials after which ``auto`` hands over from TPE to NSGA-II (OptunaHub's AutoSampler
switches at 250; TPE's per-trial cost passes 100 ms near 1,000 trials on this machine)."""
NSGA2_POPULATION = 50
"""NSGA-II population (Optuna's default)."""


class AutoSampler(BaseSampler):
    """TPE (multivariate, constant liar) for the first ``switch`` completed trials, then NSGA-II
    seeded with TPE's best designs; given the study's search space, it also proposes designs of
    its own (:class:`~dse.search.algorithms.proposals.Proposer`): a stratified start that gives every choice
    of every categorical parameter its share, moves to unevaluated neighbours of the front and of
    each objective's best design, and of the best design of the least-tried choice.

    The choice is made once per trial in :meth:`before_trial` and kept for all of its parameters;
    a proposed design is set as the trial's fixed parameters (as an enqueued trial's are).
    """

    def __init__(self, seed: int | None = None, switch: int = AUTO_SWITCH_TRIALS,
                 population_size: int = NSGA2_POPULATION, space: SearchSpace | None = None) -> None:
        self._tpe = TPESampler(multivariate=True, constant_liar=True, seed=seed)
        self._nsga = HandoverNSGAIISampler(population_size=population_size, seed=seed)
        self._switch = switch
        self._population = population_size
        self._use: dict[int, BaseSampler] = {}
        self._switched = False
        """Completed trials never decrease: once past the switch, stop counting them."""
        self._proposer = Proposer(space, seed) if space is not None else None

    def _sampler(self, trial: FrozenTrial) -> BaseSampler:
        return self._use.get(trial.number, self._tpe)

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        if not self._switched:
            done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
            self._switched = len(done) >= self._switch
        chosen: BaseSampler = self._nsga if self._switched else self._tpe
        if self._proposer is not None and "fixed_params" not in trial.system_attrs:
            proposal = self._proposer.propose(study)
            if proposal is not None:
                kind, params = proposal
                trial.system_attrs["fixed_params"] = params
                trial.system_attrs[PROPOSAL_KEY] = kind
        self._use[trial.number] = chosen
        chosen.before_trial(study, trial)

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return self._sampler(trial).infer_relative_search_space(study, trial)

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        return self._sampler(trial).sample_relative(study, trial, search_space)

    def sample_independent(
        self, study: Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        return self._sampler(trial).sample_independent(study, trial, param_name, param_distribution)

    def after_trial(
        self, study: Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        self._sampler(trial).after_trial(study, trial, state, values)
        self._use.pop(trial.number, None)

    def reseed_rng(self) -> None:
        self._tpe.reseed_rng()
        self._nsga.reseed_rng()


class HandoverNSGAIISampler(NSGAIISampler):
    """NSGA-II whose generation 0 is every trial completed before it took over: its first
    generation breeds from the best of them (elite selection by Pareto rank, crowding and
    constraints) instead of starting from a random population.

    It also reads the study incrementally where Optuna's NSGA-II reads every trial on every trial
    (O(trials) per trial, the larger part of a long study's sampler cost): its relative search
    space (Optuna's intersection of the completed trials' distributions) and its generation
    bookkeeping (the latest generation and its members) are brought up to date from the trials
    created or changed since the last trial (:func:`dse.search._optuna.trials_since`), with the
    same results as Optuna's."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._space_study: int | None = None
        self._space: dict[str, BaseDistribution] | None = None
        self._space_from = -1
        """Optuna's cached trial number of the intersection: trials from it on are read."""
        self._gen_study: int | None = None
        self._gen_latest = 0
        self._gen_members: list[FrozenTrial] = []
        """Completed trials of generation ``_gen_latest``, in the order they were read."""
        self._gen_open: list[int] = []
        """Trials that were unfinished when last read (read again next time)."""
        self._gen_next = 0
        """Every trial numbered below this has been read."""

    @classmethod
    def _get_generation_key(cls) -> str:
        # NSGA-II's own keys, so the study reads as NSGA-II's and `nsga2` can take it over.
        return _optuna.nsga2_generation_key()

    @classmethod
    def _get_parent_cache_key_prefix(cls) -> str:
        return _optuna.nsga2_parent_cache_key_prefix()

    _handed_over = False
    """Set once a completed trial carries a generation (NSGA-II has taken over for good)."""

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        """NSGA-II's relative search space (the intersection of the completed trials'
        distributions, single-valued ones left to independent sampling), reading only the trials
        from the intersection's cached trial number on."""
        sid = _optuna.study_id_of(study)
        if sid != self._space_study:
            self._space_study, self._space, self._space_from = sid, None, -1
        trials = _optuna.trials_since(study, max(self._space_from, 0))
        self._space, self._space_from = _optuna.intersection_step(trials, self._space,
                                                                  self._space_from)
        return {name: d for name, d in sorted((self._space or {}).items()) if not d.single()}

    def _sync_generations(self, study: Study) -> None:
        """Read the trials created since the last call and those unfinished then: the completed
        ones with a generation update the latest generation and its members (what Optuna's
        NSGA-II keeps, from a read of every trial)."""
        sid = _optuna.study_id_of(study)
        if sid != self._gen_study:
            self._gen_study, self._gen_latest, self._gen_members = sid, 0, []
            self._gen_open, self._gen_next = [], 0
        key = _optuna.nsga2_generation_key()
        still_open = []
        for t in _optuna.trials_since(study, self._gen_next, self._gen_open):
            self._gen_next = max(self._gen_next, t.number + 1)
            if t.state == TrialState.COMPLETE:
                generation = t.system_attrs.get(key)
                if generation is None:
                    continue
                if generation > self._gen_latest:
                    self._gen_latest, self._gen_members = generation, [t]
                elif generation == self._gen_latest:
                    self._gen_members.append(t)
            elif not t.state.is_finished():
                still_open.append(t.number)
        self._gen_open = still_open

    def get_parent_population(self, study: Study, generation: int) -> list[FrozenTrial]:
        """NSGA-II's parents of ``generation``, kept once read: Optuna stores them in the study
        (fixed once written) but reads every trial of the study to look them up again on every
        trial, O(trials) per trial. Completed trials never change, so the list is kept."""
        key = (_optuna.study_id_of(study), generation)
        cache: dict[tuple[int, int], list[FrozenTrial]] = self.__dict__.setdefault("_parents", {})
        if key not in cache:
            cache[key] = super().get_parent_population(study, generation)
        return cache[key]

    def get_population(self, study: Study, generation: int) -> list[FrozenTrial]:
        if generation == 0:
            key = _optuna.nsga2_generation_key()
            trials = _optuna.completed_trials_cached(study)
            if not any(key in t.system_attrs for t in trials):
                return list(trials)
            earlier = [t for t in trials if key not in t.system_attrs]
            return earlier + super().get_population(study, 0)
        self._sync_generations(study)
        if generation == self._gen_latest:
            return list(self._gen_members)
        return super().get_population(study, generation)  # an older generation: rarely asked

    def get_trial_generation(self, study: Study, trial: FrozenTrial) -> int:
        key = _optuna.nsga2_generation_key()
        if key in trial.system_attrs:
            return int(trial.system_attrs[key])
        storage = _optuna.study_storage(study)
        if not self._handed_over:
            trials = _optuna.completed_trials_cached(study)
            self._handed_over = any(key in t.system_attrs for t in reversed(trials))
            if trials and not self._handed_over:
                storage.set_trial_system_attr(_optuna.trial_id_of(trial), key, 1)
                return 1
        # Optuna's rule: the latest generation, or the next once it has a full population.
        self._sync_generations(study)
        assert self.population_size is not None
        generation = self._gen_latest + (len(self._gen_members) >= self.population_size)
        storage.set_trial_system_attr(_optuna.trial_id_of(trial), key, generation)
        return generation


def worker_seed(seed: int | None, worker: str) -> int | None:
    """The sampler seed of one worker of a study: the study's ``seed`` for the first worker
    (``worker`` empty), so a single-process study is reproducible, and for every other worker a
    seed drawn from the study's seed and the worker's name, so two workers never draw the same
    designs from the same history (``None`` stays ``None``: each process seeds from the OS)."""
    if seed is None or not worker:
        return seed
    digest = hashlib.sha256(f"{seed}/{worker}".encode()).digest()
    return int.from_bytes(digest[:4], "big")  # NumPy seeds are below 2**32


def make_sampler(name: str, seed: int | None, grid: dict[str, list[Any]] | None = None,
                 source: str = "study", space: SearchSpace | None = None) -> BaseSampler:
    """The sampler called ``name`` (see :data:`SAMPLERS`); ``auto`` given the study's ``space``
    proposes designs of its own as well (:class:`AutoSampler`)."""
    if name == "auto":
        return AutoSampler(seed=seed, space=space)
    if name == "tpe":
        return TPESampler(multivariate=True, constant_liar=True, seed=seed)
    if name == "nsga2":
        return NSGAIISampler(population_size=NSGA2_POPULATION, seed=seed)
    if name == "random":
        return RandomSampler(seed=seed)
    if name == "gp":
        if any(importlib.util.find_spec(m) is None for m in ("torch", "scipy", "greenlet")):
            raise DseInputError(source, "sampler", "the gp sampler needs torch, scipy and greenlet: "
                                "pip install 'dse[gp]'")
        return optuna.samplers.GPSampler(seed=seed)
    if name == "grid":
        if grid is None:
            raise DseInputError(source, "sampler", "grid search needs a discrete space without "
                                "conditional parameters")
        return optuna.samplers.GridSampler(grid, seed=seed)
    raise DseInputError(source, "sampler", f"unknown sampler {name!r} (known: {', '.join(SAMPLERS)})")
