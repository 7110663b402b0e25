"""The exclusion rule for runs whose machine changed state during the timed run.

A published training figure describes one machine in one state. When a run's own log shows its
per-step rate moving to a different level and staying there, the figure averages two machines
(or reports a state whose cause is not published), and no model of the hardware can be fitted to
it. The rule, applied to every log the same way and never by name:

    A run *trips* when its logged per-window step rate differs from the run's own median window
    rate by a factor of more than ``1 + RATE_CHANGE`` (either way) over consecutive windows that
    together cover at least ``MIN_CHANGED_STEPS`` training steps. A measurement is excluded from
    the fit when at least one of its timed runs trips: the runs of one submission are one
    measurement of one machine, and once one of them shows two states, which state the others
    ran in cannot be told from the figure.

Both constants were set from the MLPerf Training v0.7-v3.1 DLRM logs that print HugeCTR's
per-window times (``Iter: N Time(K iters): Ts``; ``benchmarks/state_change_scan.py`` reads them):

- ``RATE_CHANGE`` = 0.5: the slowest sustained stretch of any logged run other than the Quanta
  D54U-3U's is the warm-up of MLPerf v0.7's DGX A100 runs, 1.25-1.43x the median window time for
  their first 3,000-12,000 steps; a threshold of 0.25 would call that warm-up a change of state.
  Single windows that hold an evaluation reach 1.5-2.9x and are removed by the step count below.
- ``MIN_CHANGED_STEPS`` = 5,000: an evaluation inflates one window (100 or 1,000 steps), never two
  in a row; 5,000 steps is five 1,000-step windows or fifty 100-step ones.

The Quanta D54U-3U (v3.1) run 0 trips: steps 1-12,600 at 2.03x its median rate, the rest at the
median (``docs/sources.md``, "The Quanta D54U-3U (v3.1, 4x H100 PCIe) ran at two speeds").
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

RATE_CHANGE = 0.5
"""A window's rate is *changed* when it differs from the run's median window rate by more than
this fraction, either way (``max(r / m, m / r) > 1 + RATE_CHANGE``); the module docstring says why."""
MIN_CHANGED_STEPS = 5000
"""Changed windows in a row must cover at least this many training steps for the run to trip."""
STATE_CHECKS = ("steady", "changed", "unlogged")
"""Values of a measurement's ``state_check`` column: ``steady`` (every run's log prints per-window
step times and none trips), ``changed`` (a run trips: the point is excluded from the fit and kept
with its evidence), ``unlogged`` (no per-step rate in the logs, or no logs: the rule cannot be
applied and the point is fitted)."""
_WINDOW = re.compile(r"Iter: (\d+) Time\((\d+) iters\): ([0-9.]+)s")


@dataclass(frozen=True, slots=True)
class Window:
    """One logged window of training steps."""

    last_step: int
    steps: int
    seconds: float

    @property
    def steps_per_s(self) -> float:
        """Training steps per second over the window."""
        return self.steps / self.seconds


@dataclass(frozen=True, slots=True)
class RunCheck:
    """The rule applied to one run's windows."""

    windows: int
    median_steps_per_s: float
    first_step: int
    """First step of the longest stretch of changed windows (0 when there is none)."""
    last_step: int
    changed_steps: int
    """Steps the longest stretch covers."""
    stretch_steps_per_s: float
    """Median rate of the windows in that stretch (0 when there is none)."""
    trips: bool

    def evidence(self) -> str:
        """One line a reader can check against the log: the stretch, its rate and the median's."""
        if not self.changed_steps:
            return (f"{self.windows} windows at a median {self.median_steps_per_s:.4g} steps/s, "
                    "none changed")
        ratio = self.stretch_steps_per_s / self.median_steps_per_s
        return (f"steps {self.first_step}-{self.last_step} at {self.stretch_steps_per_s:.4g} "
                f"steps/s against the run's median {self.median_steps_per_s:.4g} "
                f"({ratio:.2f}x, {self.changed_steps} steps)")


def parse_windows(log: str) -> tuple[Window, ...]:
    """The step windows HugeCTR prints (``Iter: N Time(K iters): Ts``), in log order; empty when
    the log prints none. Windows of zero duration are skipped (no rate to read)."""
    return tuple(Window(int(n), int(k), float(t)) for n, k, t in _WINDOW.findall(log)
                 if float(t) > 0 and int(k) > 0)


def check_run(windows: Sequence[Window], rate_change: float = RATE_CHANGE,
              min_steps: int = MIN_CHANGED_STEPS) -> RunCheck | None:
    """Apply the rule (module docstring) to one run's windows; ``None`` when there are none."""
    if not windows:
        return None
    median = statistics.median(w.steps_per_s for w in windows)
    best: tuple[int, int] = (0, 0)  # (steps, start index) of the longest changed stretch
    start, steps = 0, 0
    for i, w in enumerate(windows):
        ratio = w.steps_per_s / median
        if max(ratio, 1.0 / ratio) > 1.0 + rate_change:
            start, steps = (i, w.steps) if steps == 0 else (start, steps + w.steps)
            best = max(best, (steps, -start))
        else:
            steps = 0
    if best[0] == 0:
        return RunCheck(len(windows), median, 0, 0, 0, 0.0, False)
    first = -best[1]
    stretch = []
    covered = 0
    for w in windows[first:]:
        if covered >= best[0]:
            break
        stretch.append(w)
        covered += w.steps
    return RunCheck(len(windows), median, stretch[0].last_step - stretch[0].steps + 1,
                    stretch[-1].last_step, best[0],
                    statistics.median(w.steps_per_s for w in stretch), best[0] >= min_steps)


def check_runs(logs: Sequence[tuple[str, str]]) -> tuple[str, str]:
    """The ``state_check`` and ``state_evidence`` of a measurement from its runs' logs (name, text):
    ``changed`` with the tripping runs' evidence when any run trips, ``steady`` when every run is
    logged and none trips, else ``unlogged`` (one run without windows is enough: it cannot be
    checked)."""
    checks = [(name, check_run(parse_windows(text))) for name, text in logs]
    tripped = [f"{name}: {c.evidence()}" for name, c in checks if c is not None and c.trips]
    if tripped:
        return "changed", "; ".join(tripped)
    if not checks or any(c is None for _, c in checks):
        return "unlogged", ""
    longest = max((c for _, c in checks if c is not None), key=lambda c: c.changed_steps)
    return "steady", (f"{len(checks)} runs, longest changed stretch {longest.changed_steps} "
                      f"steps (limit {MIN_CHANGED_STEPS})")
