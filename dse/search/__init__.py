"""Search: study files, design encoding, the Optuna objective, storage, recovery, the runner,
exhaustive sweeps and Pareto fronts. The only layer (with the CLI) that imports Optuna.

Modules: :mod:`~dse.search.spec` (study files), :mod:`~dse.search.space`,
:mod:`~dse.search.objectives` (and the sign rule), :mod:`~dse.search.encoding` (design -> system),
:mod:`~dse.search.objective` (a trial), :mod:`~dse.search.storage` (and PostgreSQL's timeouts in
:mod:`~dse.search.postgres`), :mod:`~dse.search.recovery`,
:mod:`~dse.search.runner`, :mod:`~dse.search.samplers`, :mod:`~dse.search.sweep` (and the
coarse-to-fine sweep of :mod:`~dse.search.refine`),
:mod:`~dse.search.pareto`; every private name of Optuna is in :mod:`~dse.search._optuna`.
"""

import optuna

# Optuna logs every trial at INFO; a study of thousands of trials would drown dse's own output.
optuna.logging.set_verbosity(optuna.logging.WARNING)
