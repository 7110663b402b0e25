"""The one Pareto algorithm and the one sign rule of the search."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dse.model.rules import RULE_NAMES
from dse.search.algorithms.pareto import non_dominated, pareto_mask
from dse.search.algorithms.sweep import objective_losses
from dse.search.study.objective_sets import (
    UNSCORABLE_CONSTRAINTS,
    WORST_LOSS,
    Constraint,
    Objective,
    ObjectiveSet,
    loss_sign,
    losses_of,
)


def _brute_front(loss: np.ndarray) -> list[int]:
    """Non-dominated rows by definition, in lexicographic order of their rows (ties by index)."""
    on = [i for i in range(len(loss)) if not any(
        np.all(loss[j] <= loss[i]) and np.any(loss[j] < loss[i]) for j in range(len(loss)))]
    return sorted(on, key=lambda i: (tuple(loss[i]), i))


@pytest.mark.parametrize("dims", [1, 2, 3, 4])
def test_non_dominated_matches_the_definition_with_ties_and_duplicates(dims: int) -> None:
    rng = np.random.default_rng(dims)
    for trial in range(40):
        n = int(rng.integers(0, 50))
        loss = (rng.integers(0, 4, size=(n, dims)).astype(float) if trial % 2
                else rng.normal(size=(n, dims)))
        if n > 2:
            loss[-1] = loss[0]  # an exact duplicate
        assert non_dominated(loss) == _brute_front(loss)
        assert np.flatnonzero(pareto_mask(loss)).tolist() == sorted(_brute_front(loss))


def test_the_sign_rule() -> None:
    assert loss_sign("maximize") == -1.0 and loss_sign("MAXIMIZE") == -1.0
    assert loss_sign("minimize") == 1.0
    loss = losses_of([[2.0, 3.0], [4.0, -1.0]], ["maximize", "minimize"])
    assert loss.tolist() == [[-2.0, 3.0], [-4.0, -1.0]]
    assert losses_of([], ["maximize", "minimize"]).shape == (0, 2)


def test_every_user_of_the_sign_rule_agrees() -> None:
    objectives = ObjectiveSet("t", (Objective("throughput_samples_per_s", "maximize"),
                                    Objective("capex_usd", "minimize")),
                              (Constraint("power_w", max=1.0),))
    frame = pd.DataFrame({"throughput_samples_per_s": [10.0, math.inf], "capex_usd": [5.0, 1.0]})
    assert objective_losses(frame, objectives).tolist() == [[-10.0, 5.0], [-math.inf, 1.0]]
    assert objectives.values({"throughput_samples_per_s": math.nan, "capex_usd": math.inf}) == \
        [-WORST_LOSS, WORST_LOSS]
    assert objectives.worst_values() == [-1e300, 1e300]
    assert objectives.losses([objectives.worst_values()]).tolist() == [[WORST_LOSS, WORST_LOSS]]
    assert dict(UNSCORABLE_CONSTRAINTS) == {"feasible": 1.0, "memory": 0.0,
                                            **{f"rule:{name}": 0.0 for name in RULE_NAMES}}
