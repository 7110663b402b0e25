"""Search: study files, design encoding, the Optuna objective, storage, recovery, the runner,
exhaustive sweeps and Pareto fronts. The only layer (with the CLI) that imports Optuna.

Modules: :mod:`~dse.search.spec` (study files), :mod:`~dse.search.space`,
:mod:`~dse.search.objectives` (and the sign rule), :mod:`~dse.search.encoding` (design -> system),
:mod:`~dse.search.objective` (a trial), :mod:`~dse.search.storage` (and PostgreSQL's timeouts in
:mod:`~dse.search.storage.postgres`), :mod:`~dse.search.storage.recovery`,
:mod:`~dse.search.runner`, :mod:`~dse.search.samplers`, :mod:`~dse.search.sweep` (and the
coarse-to-fine sweep of :mod:`~dse.search.refine`),
:mod:`~dse.search.pareto`; every private name of Optuna is in :mod:`~dse.search._optuna`; the
names of the attributes dse stores in studies and trials are in :mod:`~dse.search.attribute_keys`,
the warm-start rules in :mod:`~dse.search.seeding`.

Importing it sets no log level, Optuna's included: the ``dse`` command quiets Optuna's per-trial
lines when it starts (:func:`dse.cli._app.quiet_optuna`); a program using the library chooses.
"""
