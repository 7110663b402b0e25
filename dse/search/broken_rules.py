"""A rule broken in every trial: the base system of a study whose every scored design breaks one
buildability rule, said once a run by ``dse run`` (:class:`RuleWatch`).

A study's samplers learn from each rule (a named constraint), but a system file that breaks a
rule whatever the space varies (eight GPUs and eight NICs on two Xeons without PCIe switches:
``pcie_lanes``) only ever gives infeasible trials, and the run ends with no front for it and no
word why. After :data:`WATCH_TRIALS` trials, each base system with at least
:data:`MIN_SYSTEM_TRIALS` scored trials that all break the same rule is named, with the rule's
own line (its numbers, and for ``pcie_lanes`` the switch share that fits).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from optuna.trial import FrozenTrial, TrialState

from dse.search.study.objective_sets import RULE_PREFIX

WATCH_TRIALS = 20
"""Completed trials a run scores before it looks (a study's baselines and first draws)."""
MIN_SYSTEM_TRIALS = 5
"""Scored trials of one base system, all breaking one rule, that make it worth a line: fewer
could be a corner of the space the sampler happened to start in."""


@dataclass(frozen=True, slots=True)
class AlwaysBroken:
    """A base system every scored trial of which broke ``rule``."""

    system: str
    rule: str
    trials: int
    reason: str
    """The rule's line on the first such trial (its numbers)."""

    def line(self) -> str:
        """The one line ``dse run`` prints."""
        return (f"dse: warning: all {self.trials} trials of system {self.system} so far break the "
                f"rule {self.rule} ({self.reason}); no design on it can be built as its file "
                "stands: change the file, or leave it out of the space")


@dataclass
class _Tally:
    """Per base system: its scored trials, the rules every one of them broke, each rule's line."""

    counts: dict[str, int] = field(default_factory=dict)
    broken: dict[str, set[str]] = field(default_factory=dict)
    reasons: dict[tuple[str, str], str] = field(default_factory=dict)

    def add(self, t: FrozenTrial, system: str) -> None:
        rules = {k.removeprefix(RULE_PREFIX) for k, v in t.constraints.items()
                 if k.startswith(RULE_PREFIX) and v > 0}
        self.broken[system] = self.broken[system] & rules if system in self.broken else rules
        self.counts[system] = self.counts.get(system, 0) + 1
        for reason in t.user_attrs.get("infeasible_reasons") or []:
            rule, _, words = str(reason).partition(": ")
            self.reasons.setdefault((system, rule), words)

    def found(self, min_trials: int) -> list[AlwaysBroken]:
        return [AlwaysBroken(system, rule, self.counts[system], self.reasons.get((system, rule), ""))
                for system, rules in self.broken.items() if self.counts[system] >= min_trials
                for rule in sorted(rules)]


def _scored(t: FrozenTrial) -> dict[str, Any] | None:
    """A completed trial's design (``None`` for any other trial: pruned repeats have no score)."""
    design = t.user_attrs.get("design")
    return design if t.state == TrialState.COMPLETE and isinstance(design, dict) else None


@dataclass
class RuleWatch:
    """Watches the trials one run completes and says, once each, which base system breaks a rule
    in every one of them (:meth:`_Tally.found`), once :data:`WATCH_TRIALS` are complete."""

    base_of: Callable[[Mapping[str, Any]], str]
    tally: _Tally = field(default_factory=_Tally)
    seen: int = 0
    said: set[tuple[str, str]] = field(default_factory=set)

    def update(self, finished: FrozenTrial) -> list[str]:
        """Take a finished trial; the lines to print now (none before :data:`WATCH_TRIALS`)."""
        design = _scored(finished)
        if design is None:
            return []
        self.tally.add(finished, self.base_of(design))
        self.seen += 1
        if self.seen < WATCH_TRIALS:
            return []
        out = []
        for found in self.tally.found(MIN_SYSTEM_TRIALS):
            if (found.system, found.rule) not in self.said:
                self.said.add((found.system, found.rule))
                out.append(found.line())
        return out
