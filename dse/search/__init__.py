"""Search: study files, design encoding, the Optuna objective, storage, recovery, the runner,
exhaustive sweeps and Pareto fronts. The only layer (with the CLI) that imports Optuna.

Modules: :mod:`~dse.search.study.study_file` (study files), :mod:`~dse.search.study.search_space`,
:mod:`~dse.search.study.objective_sets` (and the sign rule), :mod:`~dse.search.study.encoding`
(design -> system), :mod:`~dse.search.trial_objective` (a trial), :mod:`~dse.search.storage` (and
PostgreSQL's timeouts in :mod:`~dse.search.storage.postgres`), :mod:`~dse.search.storage.recovery`,
:mod:`~dse.search.runner`, :mod:`~dse.search.algorithms.samplers`,
:mod:`~dse.search.algorithms.sweep` (and the coarse-to-fine sweep of
:mod:`~dse.search.algorithms.refine`), :mod:`~dse.search.algorithms.pareto`; every private name of
Optuna is in :mod:`~dse.search._optuna`; the names of the attributes dse stores in studies and
trials are in :mod:`~dse.search.study.attribute_keys`, the warm-start rules in
:mod:`~dse.search.study.seeding`.

Importing it sets no log level, Optuna's included: the ``dse`` command quiets Optuna's per-trial
lines when it starts (:func:`dse.cli._app.quiet_optuna`); a program using the library chooses.
"""
