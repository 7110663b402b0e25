"""How a study searches: Optuna's samplers and dse's own proposals, one evaluation per design,
sweeps of a space, and the Pareto fronts and hypervolume that score what was found.

Samplers by name and ``auto`` (:mod:`~dse.search.algorithms.samplers`), the designs the default
sampler proposes itself (:mod:`~dse.search.algorithms.proposals`), repeated designs and fresh ones
near a design (:mod:`~dse.search.algorithms.dedup`); exhaustive and Sobol sweeps
(:mod:`~dse.search.algorithms.sweep`), the coarse-to-fine sweep a new study starts from
(:mod:`~dse.search.algorithms.refine`) and the space-filling pre-screen of a space too large for
it (:mod:`~dse.search.algorithms.prescreen`); fronts and hypervolume
(:mod:`~dse.search.algorithms.pareto`), the fixed hypervolume reference
(:mod:`~dse.search.algorithms.reference`) and what a finished study says beyond its front
(:mod:`~dse.search.algorithms.analysis`).

Built on the study room (:mod:`dse.search.study`) and Optuna; knows nothing of storages. Imports
nothing itself: import each module by its own name.
"""
