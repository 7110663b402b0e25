"""The default sampler's bookkeeping kept incrementally (issue 15: the per-trial cost of a long study
stays flat in the trial count) gives what a read of every trial gives."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from optuna.search_space import IntersectionSearchSpace
from optuna.trial import FrozenTrial, TrialState

from dse.search.samplers import HandoverNSGAIISampler
from dse.search.storage import journal_storage

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
