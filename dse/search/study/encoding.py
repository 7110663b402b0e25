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
from typing import Any

from optuna.trial import Trial

from dse.errors import DseInputError
from dse.model.catalog import Catalog, load_catalog
from dse.model.equivalence import INERT_VALUES, inert_at
from dse.model.system import System, resolve_system, system_spec_from_mapping
from dse.model.workload import PER_DEVICE_FIELDS, Workload, with_fields
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
    once canonical (:func:`canonical_design`: every combination of the parameters the model finds
    inert for a design is one design). Which parameters are inert depends only on the others
    (:func:`dse.model.equivalence.inert_settings` reads nodes, NICs, accelerators and the pod),
    so it is asked once per combination of them. A grid study is covered at this count."""
    inertable = [k for k in grid if k.removesuffix(ORDINAL_SUFFIX) in INERT_VALUES]
    if not inertable:
        return math.prod(len(v) for v in grid.values())
    others = [k for k in grid if k not in inertable]
    first = {k: grid[k][0] for k in inertable}
    count = 0
    for values in itertools.product(*(grid[k] for k in others)):
        design = decode_params(space, {**dict(zip(others, values, strict=True)), **first})
        inert = inert_keys(space, design)
        count += math.prod(1 if k.removesuffix(ORDINAL_SUFFIX) in inert else len(grid[k])
                           for k in inertable)
    return count


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


def inert_keys(space: SearchSpace, design: Mapping[str, Any]) -> tuple[str, ...]:
    """The parameters of ``space`` that change nothing for ``design``'s system, by the model's own
    reading (:func:`dse.model.equivalence.inert_settings`), whether or not the design holds them;
    none for a design that is not a system at all (scoring reports why)."""
    if not any(k in space.parameters for k in INERT_VALUES):
        return ()
    try:
        size = _size(_design_table(space, design))
    except DseInputError:
        return ()
    if size is None:
        return ()
    radix = load_catalog().network_switch.radix  # a user catalog cannot change the switch
    return tuple(k for k in inert_at(*size, radix) if k in space.parameters)


def _size(table: Mapping[str, Any]) -> tuple[int, int, int, int] | None:
    """What :func:`~dse.model.equivalence.inert_at` reads of a system table: nodes (``racks`` whole
    racks when given, as :func:`~dse.model.system.with_racks` reads them), NICs and accelerators
    a node, nodes a pod; ``None`` for a table that is no system (scoring says why). Read from the
    table, not a validated spec: a search asks it for every design it draws or moves to."""
    def part(key: str) -> Mapping[str, Any]:
        value = table.get(key)
        return value if isinstance(value, Mapping) else {}

    node, rack, pod = part("node"), part("rack"), part("pod")
    racks = table.get("racks")
    nodes = racks * rack.get("nodes", 0) if isinstance(racks, int) else table.get("nodes")
    size = (nodes, node.get("nics"), node.get("accelerators"), pod.get("nodes", 1))
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in size):
        return None
    return size  # type: ignore[return-value]


def canonical_design(space: SearchSpace, design: Mapping[str, Any]) -> dict[str, Any]:
    """``design`` with every parameter that changes nothing for it (:func:`inert_keys`) at one
    canonical value (:func:`canonical_value`), and the parameters that value leaves inactive
    dropped (no fabric: no fabric bandwidth), so designs the model cannot tell apart are one
    design (one trial, one row of a study, a sweep or a refinement). Other values are kept as
    drawn, keys outside the space too."""
    inert = inert_keys(space, design)
    if not inert:
        return dict(design)
    out: dict[str, Any] = {}
    for name, p in space.parameters.items():
        if not space.active(name, out):
            continue
        if name in inert:
            out[name] = canonical_value(p)
        elif name in design:
            out[name] = design[name]
    out.update({k: v for k, v in design.items() if k not in space.parameters})
    return out


def canonical_value(p: Parameter) -> Any:
    """The value an inert parameter ``p`` takes (:data:`~dse.model.equivalence.INERT_VALUES`):
    the model's canonical value when ``p`` can take it, else its first choice or its low bound
    (a value the space can enqueue; any value scores the same)."""
    default = INERT_VALUES[p.name]
    if default is not None and p.contains(default):
        return default
    return p.choices[0] if p.choices else p.low


def design_workload(space: SearchSpace, design: Mapping[str, Any], workload: Workload) -> Workload:
    """The workload one design of ``space`` trains: ``workload`` with the design's workload
    parameters (``workload.global_batch``...; ``workload.batch_per_accelerator`` times the
    design's training devices) applied; ``workload`` itself when it has none. Raises
    :class:`DseInputError` for a value the workload schema refuses."""
    changes = space.workload_overrides(design)
    devices = 1
    if any(k in PER_DEVICE_FIELDS for k, _ in changes):
        size = _size(_design_table(space, design))
        if size is None:
            raise DseInputError(f"space {space.name}", "nodes", "the design is no system")
        nodes, _, accelerators, _ = size
        devices = nodes * max(accelerators, 1)  # a node without accelerators: one CPU device
    return with_fields(workload, changes, f"space {space.name}", devices)

