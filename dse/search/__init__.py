"""Search: study files, design encoding, the Optuna objective, storage, recovery, the runner,
exhaustive sweeps and Pareto fronts. The only layer (with the CLI) that imports Optuna."""
