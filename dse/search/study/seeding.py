"""How a new study is seeded before its sampler starts: the modes of ``dse run --warm-start`` and
how many designs a warm start may enqueue, each rule in one place (the runner, the coarse-to-fine
sweep, the coarse sweep and the CLI's help read them from here).

Imports nothing of dse, so the CLI builds its help from these without loading the search.
"""

from __future__ import annotations

from enum import StrEnum


class WarmStart(StrEnum):
    """How ``dse run`` seeds a new study (the values are ``--warm-start``'s, a CLI contract)."""

    AUTO = "auto"
    """The default (no ``--warm-start``): a new study of the ``auto`` sampler on a space small
    enough for the coarse-to-fine sweep is seeded with its front."""
    NONE = "none"
    """Not seeded (the sweep still fixes the hypervolume reference)."""
    SWEEP = "sweep"
    """A new study of any sampler is seeded with a sweep's front (the coarse-to-fine sweep's where
    the space allows it, else a coarse sweep's)."""


WARM_START_CHOICES = (WarmStart.SWEEP, WarmStart.NONE)
"""The values ``--warm-start`` accepts (:attr:`WarmStart.AUTO` is what giving none means)."""

WARM_MAX_TRIALS = 40
"""Designs of the sweep's front a default warm start enqueues (and at most a fifth of the budget,
so a study of 100 trials gets 20 and one of 200 or more gets 40). Measured with the best-first
coarse-to-fine sweep on the four benchmark spaces (docs/benchmarks.md, 5 seeds, against the exact
front): 40 instead of 20 changes nothing at 50 and 100 trials (a fifth of the budget binds) and
at 200 trials raises production-12t from 0.999 to 1.000 and issue-mixed from 0.998 to 1.000
(zion-2020 and todays-nodes-3d: 1.000 either way). At 300 trials on the spaces too large to sweep
(5 seeds) see docs/benchmarks.md."""

WARM_BUDGET_DIVISOR = 5
"""A warm start enqueues at most ``budget // WARM_BUDGET_DIVISOR`` designs (and at least one),
so the sampler keeps most of the budget for its own proposals."""
WARM_BUDGET_SHARE = "a fifth"
""":data:`WARM_BUDGET_DIVISOR` in words, for help and docstrings."""


PRESCREEN_S = 30.0
"""Default CPU seconds (one core) of the pre-screen of a space too large for a coarse grid
(:mod:`dse.search.algorithms.prescreen`). At about 1.1 ms per design through the memo (the ``full`` space on
MLPerf DLRM-DCNv2, measured here: 2,000 Sobol designs in 2.2 s of CPU) it scores some 25,000
designs; with the refinement after it (at most :data:`dse.search.algorithms.prescreen.REFINE_SHARE` times as
long, or its design cap) a study is created in about a minute of CPU (the issue's bound: 90 s)."""
MAX_PRESCREEN_S = 3600.0
"""The longest pre-screen a study file or ``--prescreen-s`` may ask for (an hour of CPU)."""


def warm_start_trials(budget: int, cap: int | None = None) -> int:
    """Designs a warm start of a study of ``budget`` trials may enqueue: a fifth of the budget (at
    least one), and at most ``cap`` when given."""
    share = max(1, budget // WARM_BUDGET_DIVISOR)
    return share if cap is None else min(cap, share)


__all__ = ["MAX_PRESCREEN_S", "PRESCREEN_S", "WARM_BUDGET_DIVISOR", "WARM_BUDGET_SHARE",
           "WARM_MAX_TRIALS", "WARM_START_CHOICES", "WarmStart", "warm_start_trials"]
