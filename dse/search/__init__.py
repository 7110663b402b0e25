"""Search: studies of a design space with Optuna, in three rooms and the modules that join them.
The only layer (with the CLI) that imports Optuna.

- :mod:`dse.search.study`: what a study is: its file, search space, objective sets, the encoding of
  a design and its system, the warm-start rules, the names of what it stores. Imports nothing of
  the search above it.
- :mod:`dse.search.algorithms`: how it searches: samplers and dse's proposals, one evaluation per
  design, sweeps, Pareto fronts and hypervolume. Built on the study room.
- :mod:`dse.search.storage`: where it lives: the journal file (its format, writing, damage check and
  repair, one replay, the one-pass reader), database servers, the gRPC proxy, lost storages, and
  the recovery of dead workers' trials. Built on the study room.

Above them: the Optuna objective of a trial (:mod:`~dse.search.trial_objective`), running a study
(:mod:`~dse.search.runner`, :mod:`~dse.search.parallel`), reading stored studies
(:mod:`~dse.search.results`) and their fronts under the model's error
(:mod:`~dse.search.robust_front`); below them every private name of Optuna
(:mod:`~dse.search._optuna`) and the model's fingerprint (:mod:`~dse.search.fingerprint`).
``tests/test_layers.py`` checks the rooms as it checks the layers.

Importing it sets no log level, Optuna's included: the ``dse`` command quiets Optuna's per-trial
lines when it starts (:func:`dse.cli._app.quiet_optuna`); a program using the library chooses.
"""
