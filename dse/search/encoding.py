"""Designs: drawing them from a trial, encoding them for Optuna and back, and building their system.

A design is ``{parameter: value}`` over a search space's active parameters, values decoded (an
ordinal's choice, not its index). Optuna sees ordinals as integer indices (:data:`ORDINAL_SUFFIX`)
so its samplers can exploit their order. :func:`design_system` is the one way from a design to
the system the model scores, for study trials, sweeps and case studies alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from optuna.trial import Trial

from dse.model.catalog import Catalog, load_catalog
from dse.model.system import System, resolve_system, system_spec_from_mapping
from dse.model.workload import Workload, with_fields
from dse.records import apply_override
from dse.search.space import Parameter, SearchSpace, is_workload_param

ORDINAL_SUFFIX = "_index"
"""An ordinal parameter is searched as the integer index of its choice, named ``NAME_index``;
the decoded value is in the trial's ``design`` attribute."""


def suggest_design(trial: Trial, space: SearchSpace) -> dict[str, Any]:
    """Draw a design's parameters from ``trial`` (conditional ones only when active)."""
    design: dict[str, Any] = {}
    for name, p in space.parameters.items():
        if not space.active(name, design):
            continue
        design[name] = _suggest(trial, p)
    return design


def _suggest(trial: Trial, p: Parameter) -> Any:
    if p.type == "categorical":
        return trial.suggest_categorical(p.name, list(p.choices))
    if p.type == "ordinal":
        index = trial.suggest_int(p.name + ORDINAL_SUFFIX, 0, len(p.choices) - 1)
        return p.choices[index]
    assert p.low is not None and p.high is not None
    if p.type == "int":
        step = int(p.step or 1)
        return trial.suggest_int(p.name, int(p.low), int(p.high), step=step, log=p.log and step == 1)
    return trial.suggest_float(p.name, p.low, p.high, log=p.log)


def encode_design(space: SearchSpace, design: Mapping[str, Any]) -> dict[str, Any]:
    """Optuna parameters of a design (for enqueueing): ordinals become indices."""
    out: dict[str, Any] = {}
    for name, value in design.items():
        p = space.parameters[name]
        if p.type == "ordinal":
            out[name + ORDINAL_SUFFIX] = p.choices.index(value)
        else:
            out[name] = value
    return out


def decode_params(space: SearchSpace, params: Mapping[str, Any]) -> dict[str, Any]:
    """A design from Optuna parameters (the inverse of :func:`encode_design`)."""
    out: dict[str, Any] = {}
    for name, p in space.parameters.items():
        if p.type == "ordinal" and name + ORDINAL_SUFFIX in params:
            out[name] = p.choices[int(params[name + ORDINAL_SUFFIX])]
        elif name in params:
            out[name] = params[name]
    return out


def grid_of(space: SearchSpace) -> dict[str, list[Any]] | None:
    """The Optuna grid of a discrete, unconditional space (``None`` otherwise)."""
    if not space.is_discrete() or any(p.when for p in space.parameters.values()):
        return None
    grid: dict[str, list[Any]] = {}
    for name, p in space.parameters.items():
        if p.type == "ordinal":
            grid[name + ORDINAL_SUFFIX] = list(range(len(p.choices)))
        else:
            grid[name] = list(p.grid())
    return grid


def design_system(space: SearchSpace, design: Mapping[str, Any], catalog: Catalog | None = None,
                  base: str | None = None) -> System:
    """The system of one design of ``space`` (decoded parameter values; those left out keep the
    base system's; other system keys, such as a fixed ``nodes``, are applied last, for
    comparisons outside the space). ``base`` replaces the base system. Raises
    :class:`DseInputError` for a combination the schema cannot express."""
    data, _ = space.system_table(base or space.base_for(design))
    extra = tuple((k, v) for k, v in design.items()
                  if k not in space.parameters and not is_workload_param(k))
    for key, value in space.overrides(design) + extra:
        data = apply_override(data, key, value)
    spec = system_spec_from_mapping(data, f"space {space.name}")
    return resolve_system(spec, catalog or load_catalog(), f"space {space.name}")


def design_workload(space: SearchSpace, design: Mapping[str, Any], workload: Workload) -> Workload:
    """The workload one design of ``space`` trains: ``workload`` with the design's workload
    parameters (``workload.global_batch``...) applied; ``workload`` itself when it has none.
    Raises :class:`DseInputError` for a value the workload schema refuses."""
    return with_fields(workload, space.workload_overrides(design), f"space {space.name}")

