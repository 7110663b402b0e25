"""Objective sets: what a study optimises and under which constraints (``objectives/*.toml``).

```toml
name = "throughput-vs-capex"
[[objectives]]
metric = "throughput_samples_per_s"
direction = "maximize"
[[objectives]]
metric = "capex_usd"
direction = "minimize"
[[constraints]]
metric = "power_per_node_w"
max = 12000.0
```

Memory feasibility (and every other infeasibility the model reports) is always a constraint, whether
the file names it or not: a design that does not fit is never on a front.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from dse.errors import DseInputError
from dse.limits import MAX_CONSTRAINTS, MAX_OBJECTIVES
from dse.model.metrics import METRIC, Direction
from dse.model.metrics import METRICS as REGISTRY
from dse.model.rules import RULE_NAMES
from dse.records import OBJECTIVES, from_mapping, named_file, read_toml

METRICS: Mapping[str, str] = MappingProxyType(
    {m.name: m.words for m in REGISTRY if m.numeric})
"""Metrics objectives and constraints may name, in words: every number of
``Evaluation.metrics()`` (:data:`dse.model.metrics.METRICS`)."""

TRAIN_METRICS: Mapping[str, str] = MappingProxyType(
    {name: words for name, words in METRICS.items() if METRIC[name].needs == "convergence"})
"""Metrics of a whole training run. A design they cannot be computed for (its batch beyond the
workload's convergence curve, or no curve and no dataset size) breaks the ``to_train``
constraint of a study that names one of them."""
TO_TRAIN_CONSTRAINT = "to_train"

DATASET_METRICS = tuple(name for name in METRICS if METRIC[name].needs == "dataset")
"""Metrics defined only for a workload that states its ``samples_per_epoch``."""

WORST_LOSS = 1e300
"""The loss of a design that cannot be scored, or of a non-finite objective value: worse than any
real design, yet finite (Optuna refuses infinite values)."""

RULE_PREFIX = "rule:"
"""Constraint name prefix of the buildability rules (``rule:pcie_lanes``...)."""
UNSCORABLE_CONSTRAINTS: Mapping[str, float] = MappingProxyType(
    {"feasible": 1.0, "memory": 0.0, **{f"{RULE_PREFIX}{name}": 0.0 for name in RULE_NAMES}})
"""Constraint values of a design the system schema cannot express: infeasible (the model's verdict),
with no memory shortfall or rule measured. Constraints of the objective set are not computed for it."""


def loss_sign(direction: str) -> float:
    """The one sign rule of the search: a loss is the value times this, so every objective is
    minimised (a maximised objective is negated; ``direction`` is ``"maximize"`` or
    ``"minimize"``, case-insensitive as Optuna's ``StudyDirection`` names are)."""
    return -1.0 if direction.lower() == "maximize" else 1.0


def losses_of(values: Any, directions: Sequence[str]) -> np.ndarray:
    """Objective ``values`` (rows: designs, columns: objectives in ``directions``' order) as
    losses: each column times :func:`loss_sign` of its direction."""
    signs = np.array([loss_sign(d) for d in directions], dtype=float)
    array = np.asarray(values, dtype=float)
    if array.ndim != 2:  # no designs (an empty list), or one design
        array = array.reshape(-1, len(signs))
    loss: np.ndarray = array * signs
    return loss


@dataclass(frozen=True, slots=True)
class Objective:
    """One optimisation target."""

    metric: str
    direction: Direction


@dataclass(frozen=True, slots=True)
class Constraint:
    """``metric <= max`` and/or ``metric >= min``."""

    metric: str
    max: float | None = None
    min: float | None = None

    def violation(self, value: float) -> float:
        """Relative violation (> 0 infeasible, <= 0 feasible), scaled by the bound so constraints
        of different units weigh alike in a sampler's penalty."""
        out = -math.inf
        if self.max is not None:
            out = max(out, (value - self.max) / max(abs(self.max), 1e-12))
        if self.min is not None:
            out = max(out, (self.min - value) / max(abs(self.min), 1e-12))
        return out if math.isfinite(out) else (1.0 if out > 0 else -1.0)


@dataclass(frozen=True, slots=True)
class ObjectiveSet:
    """Objectives and constraints of a study."""

    name: str
    objectives: tuple[Objective, ...]
    constraints: tuple[Constraint, ...] = ()
    description: str = ""

    @property
    def directions(self) -> list[Direction]:
        """Optuna study directions."""
        return [o.direction for o in self.objectives]

    def values(self, metrics: dict[str, Any]) -> list[float]:
        """Objective values of a design; a non-finite value becomes the worst finite one."""
        out = []
        for o in self.objectives:
            v = float(metrics[o.metric])
            if not math.isfinite(v):
                v = WORST_LOSS * loss_sign(o.direction)
            out.append(v)
        return out

    def worst_values(self) -> list[float]:
        """Objective values of a design that cannot be scored: the worst of each objective."""
        return [WORST_LOSS * loss_sign(o.direction) for o in self.objectives]

    def losses(self, values: Any) -> np.ndarray:
        """Objective values (rows: designs, one column per objective) as losses
        (:func:`losses_of`)."""
        return losses_of(values, self.directions)

    def violations(self, metrics: dict[str, Any],
                   rules: Mapping[str, float] | None = None) -> dict[str, float]:
        """Constraint values for ``trial.set_constraint`` (<= 0 feasible): memory, every
        buildability rule (``rule:<name>``, from ``Evaluation.rule_violations``) and this set's own."""
        rules = rules or {}
        out = {
            "memory": float(metrics["memory_short_gb"]),
            # Every other infeasibility (batch < accelerators, no NICs, unsupported precision, a
            # broken rule: each rule is also its own constraint below, graded by how far over).
            "feasible": 0.0 if metrics["feasible"] or metrics["memory_short_gb"] > 0 else 1.0,
        }
        out.update({f"{RULE_PREFIX}{name}": float(rules.get(name, 0.0)) for name in RULE_NAMES})
        for c in self.constraints:
            out[f"{c.metric}"] = c.violation(float(metrics[c.metric]))
        if self._train_metrics():
            out[TO_TRAIN_CONSTRAINT] = 0.0 if self._trainable(metrics) else 1.0
        return out

    def _train_metrics(self) -> list[str]:
        """The time/cost-to-train metrics this set optimises or constrains."""
        named = [o.metric for o in self.objectives] + [c.metric for c in self.constraints]
        return [m for m in named if m in TRAIN_METRICS]

    def _trainable(self, metrics: Mapping[str, Any]) -> bool:
        return all(math.isfinite(float(metrics[m])) for m in self._train_metrics())

    def violated(self, metrics: dict[str, Any]) -> list[str]:
        """Why a design breaks this set's own constraints (the model's reasons aside)."""
        out = []
        for c in self.constraints:
            value = float(metrics[c.metric])
            if c.violation(value) > 0:
                bounds = " and ".join(f"{word} {bound:.6g}" for word, bound in (("min", c.min),
                                      ("max", c.max)) if bound is not None)
                out.append(f"{c.metric} = {value:.6g} outside {bounds}")
        if self._train_metrics() and not self._trainable(metrics):
            out.append("no time to train: the batch is beyond the workload's convergence curve, "
                       "or it has no curve and no samples_per_epoch")
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain description (study attribute)."""
        return {
            "name": self.name,
            "objectives": [{"metric": o.metric, "direction": o.direction} for o in self.objectives],
            "constraints": [{"metric": c.metric, "max": c.max, "min": c.min} for c in self.constraints],
        }


@dataclass(frozen=True, slots=True)
class _ObjectiveSetFile:
    """An objective set's file as written (``objectives/*.toml``), before its checks."""

    name: str
    objectives: tuple[Objective, ...]
    constraints: tuple[Constraint, ...] = ()
    description: str = ""


def objectives_from_mapping(data: dict[str, Any], source: str) -> ObjectiveSet:
    """Validate an objectives table: known metrics, at least one objective, bounds on constraints."""
    raw = from_mapping(_ObjectiveSetFile, data, source)
    if not raw.objectives:
        raise DseInputError(source, "objectives", "at least one objective is needed")
    for key, items, limit in (("objectives", raw.objectives, MAX_OBJECTIVES),
                              ("constraints", raw.constraints, MAX_CONSTRAINTS)):
        if len(items) > limit:
            raise DseInputError(source, key, f"has {len(items):,} {key}; at most {limit} are "
                                "supported (dse.limits)")
    seen: set[str] = set()
    for i, o in enumerate(raw.objectives):
        if o.metric not in METRICS:
            raise DseInputError(source, f"objectives[{i}].metric",
                                f"unknown metric {o.metric!r} (known: {', '.join(METRICS)})")
        if o.metric in seen:
            raise DseInputError(source, f"objectives[{i}].metric", f"{o.metric!r} appears twice")
        seen.add(o.metric)
    for i, c in enumerate(raw.constraints):
        if c.metric not in METRICS:
            raise DseInputError(source, f"constraints[{i}].metric",
                                f"unknown metric {c.metric!r} (known: {', '.join(METRICS)})")
        if c.max is None and c.min is None:
            raise DseInputError(source, f"constraints[{i}]", "give max, min or both")
        impossible = _impossible(c)
        if impossible:
            raise DseInputError(source, f"constraints[{i}]", f"{c.metric}: {impossible}; no design "
                                "can meet it, so it is refused before any trial")
    return ObjectiveSet(raw.name, raw.objectives, raw.constraints, raw.description)


def _impossible(c: Constraint) -> str:
    """Why no design can meet constraint ``c`` ('' if one may): a ``min`` above its ``max``, or
    a ``max`` below 0, since every metric is at least 0 (a count, a time, a cost, a share, a
    shortfall)."""
    if c.min is not None and c.max is not None and c.min > c.max:
        return f"min {c.min:g} is above max {c.max:g}"
    if c.max is not None and c.max < 0:
        return f"max {c.max:g} is below 0, and every metric is at least 0"
    return ""


def needs_dataset(objectives: ObjectiveSet, samples_per_epoch: int) -> str:
    """The first objective or constraint metric of ``objectives`` that a workload with
    ``samples_per_epoch`` samples (0: none stated) cannot measure, or "" when it can measure all:
    such a metric would be infinite on every design (:data:`DATASET_METRICS`)."""
    if samples_per_epoch:
        return ""
    named = [o.metric for o in objectives.objectives] + [c.metric for c in objectives.constraints]
    return next((m for m in named if m in DATASET_METRICS), "")


def objective_names() -> tuple[str, ...]:
    """Objective sets: ``./objectives`` under the working directory and the built-in ones."""
    return OBJECTIVES.names()


def load_objectives(name_or_path: str) -> ObjectiveSet:
    """Load an objective set by name (``objectives/NAME.toml``) or path."""
    return _load(name_or_path)


@functools.lru_cache(maxsize=32)
def _load(name_or_path: str) -> ObjectiveSet:
    path = named_file(name_or_path, OBJECTIVES)
    return objectives_from_mapping(read_toml(path), str(path))
