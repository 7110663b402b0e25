"""The space-filling pre-screen of a space too large to sweep on a coarse grid.

A new study's default sweep (:mod:`dse.search.algorithms.refine`) starts from the exact front of a
coarse grid, which only exists for spaces of at most
:data:`~dse.search.algorithms.reference.REFERENCE_MAX_DESIGNS` coarse designs. The spaces architects
write are larger (several accelerators, HBM and DDR as floats, fabrics, 1-64 nodes, NICs, network):
for them the sweep starts instead from the front of a space-filling sample scored for a budget of
CPU seconds (:data:`~dse.search.study.seeding.PRESCREEN_S` by default; the study file's
``prescreen_s``, ``dse run --prescreen-s``). The sample is drawn in batches of
:data:`BATCH_DESIGNS`, each a Latin hypercube over every parameter (floats on their linear or log
scale, ints and choices by stratum: :func:`dse.search.algorithms.sweep.from_unit`), so that wherever
the budget stops it, the designs scored cover every parameter's range evenly. A Latin hypercube
needs only numpy (scipy's Sobol sequence is an optional extra). Each batch is scored in one process
through one memo (:class:`dse.model.Memo`), ordered so consecutive designs share a placement.

It is deterministic for a given ``seed`` up to where the budget stops it: a faster machine scores
more batches of the same sequence.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from dse.model.catalog import Catalog
from dse.model.evaluate import Memo
from dse.model.parameters import Calibration
from dse.model.workload import Workload
from dse.search.algorithms.dedup import design_key
from dse.search.algorithms.sweep import SweepResult, explicit_grid, from_unit, run_sweep, sweep_order
from dse.search.study.objective_sets import ObjectiveSet
from dse.search.study.search_space import SearchSpace

REFINE_SHARE = 1.5
"""The refinement after a pre-screen stops after this many times the pre-screen's CPU seconds
(or at its design cap, whichever comes first), so creation stays bounded on any space."""
BATCH_DESIGNS = 256
"""Designs per Latin hypercube batch: the granularity at which the budget is checked (a batch
costs a fraction of a second)."""
METHOD = "pre-screen refined along its front"
"""The label of a reference fixed on a pre-screened sweep's front
(``pre-screen refined along its front of N designs``)."""


def latin_batch(space: SearchSpace, n: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    """``n`` designs of a Latin hypercube over every parameter of ``space`` (each parameter's
    range cut into ``n`` strata, one design per stratum, strata paired at random), inactive
    parameters left out (in space order, as a trial draws them)."""
    names = list(space.parameters)
    strata = np.argsort(rng.random((n, len(names))), axis=0)
    u = (strata + rng.random((n, len(names)))) / n
    designs = []
    for row in u:
        chosen: dict[str, Any] = {}
        for j, name in enumerate(names):
            if space.active(name, chosen):
                chosen[name] = from_unit(space.parameters[name], float(row[j]))
        designs.append(chosen)
    return designs


def prescreen(space: SearchSpace, workload: Workload, objectives: ObjectiveSet, seconds: float,
              calibration: Calibration, catalog: Catalog, memo: Memo, seed: int = 0,
              on_progress: Callable[[int], None] | None = None) -> list[SweepResult]:
    """Latin hypercube batches of ``space`` scored until ``seconds`` of this process's CPU time
    are spent (at least one batch), each design once; the scored batches in order.
    ``on_progress(designs)``: designs scored so far, after each batch."""
    start = time.process_time()
    rng = np.random.default_rng(seed)
    order = sweep_order(space)
    seen: set[str] = set()
    parts: list[SweepResult] = []
    scored = 0
    while not parts or time.process_time() - start < seconds:
        batch = []
        for design in latin_batch(space, BATCH_DESIGNS, rng):
            key = design_key(design)
            if key not in seen:
                seen.add(key)
                batch.append(design)
        if not batch:  # a small discrete space, every design already drawn
            break
        parts.append(run_sweep(space, workload, objectives, jobs=1, calibration=calibration,
                               catalog=catalog, memo=memo, grid=explicit_grid(space, batch, order)))
        scored += len(batch)
        if on_progress is not None:
            on_progress(scored)
    return parts


__all__ = ["BATCH_DESIGNS", "METHOD", "REFINE_SHARE", "latin_batch", "prescreen"]
