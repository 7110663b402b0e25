"""Designs: drawing them from a trial, encoding them for Optuna and back, and building their system.

A design is ``{parameter: value}`` over a search space's active parameters, values decoded (an
ordinal's choice, not its index). Optuna sees ordinals as integer indices (:data:`ORDINAL_SUFFIX`)
so its samplers can exploit their order. :func:`design_system` is the one way from a design to
the system the model scores, for study trials, sweeps and case studies alike.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from optuna.trial import Trial

from dse.errors import DseInputError
from dse.model.catalog import Catalog, load_catalog
from dse.model.system import System, resolve_system, system_spec_from_mapping
from dse.model.workload import Workload, with_fields
from dse.records import apply_override
from dse.search.study.search_space import Parameter, SearchSpace, is_workload_param

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


def grid_designs(space: SearchSpace, grid: Mapping[str, list[Any]]) -> int:
    """Distinct designs of the grid ``grid_of(space)``: its points, less those that repeat another
    once canonical (:func:`canonical_design`: on one node, every combination of the
    :data:`ONE_NODE_INERT` parameters is one design). A grid study is covered at this count."""
    inert = [k for k in grid if k.removesuffix(ORDINAL_SUFFIX) in ONE_NODE_INERT]
    points = math.prod(len(v) for v in grid.values())
    if not inert:
        return points
    others = [k for k in grid if k not in inert]
    per_combo = math.prod(len(grid[k]) for k in inert)
    first = {k: grid[k][0] for k in inert}
    one_node = 0
    for values in itertools.product(*(grid[k] for k in others)):
        design = decode_params(space, {**dict(zip(others, values, strict=True)), **first})
        try:
            one_node += _design_table(space, design).get("nodes", 1) == 1
        except DseInputError:
            continue
    return points - one_node * (per_combo - 1)


def design_system(space: SearchSpace, design: Mapping[str, Any], catalog: Catalog | None = None,
                  base: str | None = None) -> System:
    """The system of one design of ``space`` (decoded parameter values; those left out keep the
    base system's; other system keys, such as a fixed ``nodes``, are applied last, for
    comparisons outside the space). ``base`` replaces the base system. Raises
    :class:`DseInputError` for a combination the schema cannot express."""
    spec = system_spec_from_mapping(_design_table(space, design, base), f"space {space.name}")
    return resolve_system(spec, catalog or load_catalog(), f"space {space.name}")


def _design_table(space: SearchSpace, design: Mapping[str, Any], base: str | None = None
                  ) -> dict[str, Any]:
    """The system table of a design: its base system's, with the space's and the design's values."""
    data, _ = space.system_table(base or space.base_for(design))
    extra = tuple((k, v) for k, v in design.items()
                  if k not in space.parameters and not is_workload_param(k))
    for key, value in space.overrides(design) + extra:
        data = apply_override(data, key, value)
    return data


ONE_NODE_INERT: Mapping[str, Any] = MappingProxyType(
    {"network.oversubscription": 1.0, "network.topology": "fat_tree"})
"""Parameters that change nothing on one node, with the value they take there (the schema's
defaults): one node has no scale-out network (``dse.model.bom.scaleout_tiers`` is 0, so no
switch ports or optics are bought) and no traffic crosses a NIC, so neither its oversubscription
nor its topology enters the step, cost or power (checked for every system preset in
tests/test_dataset_and_questioned_numbers.py)."""


def inert_params(space: SearchSpace, design: Mapping[str, Any]) -> list[str]:
    """The parameters of ``design`` that change nothing for it (:data:`ONE_NODE_INERT`, when it
    has one node), in :data:`ONE_NODE_INERT`'s order; none for a design that is not a system at
    all (scoring reports why)."""
    inert = [k for k in ONE_NODE_INERT if k in design and k in space.parameters]
    if not inert:
        return []
    try:
        nodes = _design_table(space, design).get("nodes", 1)
    except DseInputError:
        return []
    return inert if nodes == 1 else []


def canonical_design(space: SearchSpace, design: Mapping[str, Any]) -> dict[str, Any]:
    """``design`` with every parameter that changes nothing for it (:func:`inert_params`) set to
    one canonical value (:func:`canonical_value`), so designs the model cannot tell apart are one
    design (one trial, one row of a study, a sweep or a refinement). Values of a design are
    otherwise kept as drawn."""
    out = dict(design)
    for key in inert_params(space, design):
        out[key] = canonical_value(space.parameters[key])
    return out


def canonical_value(p: Parameter) -> Any:
    """The value an inert parameter ``p`` takes (:data:`ONE_NODE_INERT`): the schema's default
    when ``p`` can take it, else its first choice or its low bound (a value the space can
    enqueue)."""
    default = ONE_NODE_INERT[p.name]
    if p.contains(default):
        return default
    return p.choices[0] if p.choices else p.low


def design_workload(space: SearchSpace, design: Mapping[str, Any], workload: Workload) -> Workload:
    """The workload one design of ``space`` trains: ``workload`` with the design's workload
    parameters (``workload.global_batch``...) applied; ``workload`` itself when it has none.
    Raises :class:`DseInputError` for a value the workload schema refuses."""
    return with_fields(workload, space.workload_overrides(design), f"space {space.name}")

