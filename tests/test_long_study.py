"""The default sampler's bookkeeping kept incrementally (issue 15: the per-trial cost of a long study
stays flat in the trial count) gives what a read of every trial gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import optuna
import pytest
from optuna.search_space import IntersectionSearchSpace
from optuna.trial import FrozenTrial, TrialState
from study_helpers import make_spec

from dse.search.algorithms.pareto import GrowingFront, pareto_mask
from dse.search.algorithms.proposals import Proposer
from dse.search.algorithms.samplers import HandoverNSGAIISampler
from dse.search.runner import run_study
from dse.search.storage.journal_writing import journal_storage
from dse.search.study.search_space import load_space

POPULATION = 6


def _objective(trial: optuna.Trial) -> list[float]:
    x = trial.suggest_int("x", 0, 20)
    kind = trial.suggest_categorical("kind", ["a", "b"])
    y = trial.suggest_float("y", 0.0, 1.0) if kind == "a" else 0.5  # conditional: leaves the space
    if x % 7 == 3:
        raise optuna.TrialPruned()
    return [float(x) + y, float(20 - x) * (1.5 if kind == "b" else 1.0)]


@pytest.mark.parametrize("kind", ["journal", "memory"])
def test_handover_nsga2_reads_incrementally_what_optuna_reads_in_full(tmp_path: Path, kind: str) -> None:
    storage = journal_storage(tmp_path / "s.journal") if kind == "journal" else None
    sampler = HandoverNSGAIISampler(population_size=POPULATION, seed=3)
    study = optuna.create_study(storage=storage, sampler=sampler, directions=["minimize"] * 2)
    key = sampler._get_generation_key()
    checked: list[int] = []

    def check(st: optuna.Study, _: FrozenTrial) -> None:
        # Optuna's own reading of the whole study, by a fresh NSGA-II and intersection.
        plain = optuna.samplers.NSGAIISampler(population_size=POPULATION)
        want_space = {n: d for n, d in IntersectionSearchSpace().calculate(st).items()
                      if not d.single()}
        assert sampler.infer_relative_search_space(st, st.trials[-1]) == want_space
        done = st.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        generations = [t.system_attrs[key] for t in done if key in t.system_attrs]
        if generations:
            latest = max(generations)
            mine = [t.number for t in sampler.get_population(st, latest)]
            assert mine == [t.number for t in plain.get_population(st, latest)]
            assert sampler._gen_latest == latest
            checked.append(latest)

    study.optimize(_objective, n_trials=70, callbacks=[check])
    assert checked and max(checked) >= 4  # several generations, past the first
    assert any(t.state == TrialState.PRUNED for t in study.trials)
    # The generation each trial was given follows Optuna's rule: the latest generation, or the
    # next once the latest has a full population of completed trials.
    for t in study.trials:
        g = t.system_attrs[key]
        earlier = [u for u in study.trials if u.number < t.number and u.state == TrialState.COMPLETE]
        latest = max((u.system_attrs[key] for u in earlier), default=0)
        full = sum(u.system_attrs[key] == latest for u in earlier) >= POPULATION
        assert g == latest + full, t.number


@pytest.mark.parametrize("objectives", [2, 3])
def test_growing_front_is_the_pareto_mask_of_every_row_so_far(objectives: int) -> None:
    rng = np.random.default_rng(objectives)
    # Few distinct values: many ties and equal rows, which pareto_mask keeps all.
    loss = rng.integers(0, 6, size=(300, objectives)).astype(float)
    front = GrowingFront()
    for i, row in enumerate(loss):
        front.add(i, row)
        assert front.rows == np.flatnonzero(pareto_mask(loss[: i + 1])).tolist(), i


def test_proposer_bookkeeping_matches_a_pass_over_every_row(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, name="p", space="scale-out", sampler="random", budget=120, seed=2,
                     objectives="throughput-capex-power")
    study = run_study(spec)
    proposer = Proposer(load_space(spec.space), seed=0)
    proposer._update(study)
    loss = np.array([r[0] for r in proposer._rows])
    designs = [r[1] for r in proposer._rows]
    assert len(designs) >= 30 and loss.shape[1] == 3
    assert np.array_equal(proposer._losses(), loss)
    assert proposer._front.rows == np.flatnonzero(pareto_mask(loss)).tolist()
    for objective in range(3):
        # _best: least loss of the objective, ties by the second objective on, then the row.
        order = np.lexsort([*loss.T[::-1][:-1], loss[:, objective]])
        assert proposer._best(objective) is designs[int(order[0])]
        for p in proposer.categorical:
            for choice in p.choices:
                rows = [i for i, d in enumerate(designs) if d.get(p.name) == choice]
                kept = proposer._choice_best.get((p.name, choice))
                assert (kept is None) == (not rows)
                if rows:
                    assert kept is not None
                    assert kept[objective] == rows[int(np.argmin(loss[rows, objective]))]
        # _importance: rank correlation of each ordered parameter's value index.
        target = np.argsort(np.argsort(loss[:, objective]))
        scores = {}
        for name, p in proposer.space.parameters.items():
            if p.type in ("categorical", "float"):
                continue
            values = p.choices if p.type == "ordinal" else p.grid()
            x = np.array([values.index(d[name]) if d.get(name) in values else -1 for d in designs],
                         dtype=float)
            if np.ptp(x) > 0:
                scores[name] = abs(float(np.corrcoef(np.argsort(np.argsort(x)), target)[0, 1]))
        want = {n: i for i, n in enumerate(sorted(scores, key=lambda n: -scores[n]))}
        assert proposer._importance(objective) == want and want
