"""Which defaults a system file leaned on, and which of them move the result.

A system file may leave out many fields (``frontend_nics``, ``input_source``, the network's
oversubscription, the software switches...); the schema fills them with defaults. A default that
decides the answer should never do so silently: :func:`sensitive_defaults` re-scores the design
with each defaulted field stated otherwise (every other choice of a literal or a switch; half and
twice a number) and reports the ones that change throughput by more than a threshold, so that
``dse evaluate`` can list them. Fields that default from the accelerator's catalog entry (HBM,
PCIe generation, scale-up) are the part's datasheet values, not guesses, and are not probed.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, fields
from typing import Any, get_args, get_origin

from dse.errors import DseInputError
from dse.model.catalog import Catalog
from dse.model.evaluate import evaluate
from dse.model.parameters import Calibration
from dse.model.system import (
    NetworkSpec,
    NodeSpec,
    SoftwareSpec,
    read_system_data,
    resolve_system,
    system_spec_from_mapping,
)
from dse.model.workload import Workload
from dse.records import apply_override

THRESHOLD = 0.05
"""Relative throughput change above which a default is reported (5%, issue 13)."""

_TABLES: tuple[tuple[str, type], ...] = (
    ("node", NodeSpec), ("network", NetworkSpec), ("software", SoftwareSpec),
)


@dataclass(frozen=True, slots=True)
class DefaultEffect:
    """A defaulted field whose stated alternative changes the design's throughput."""

    key: str
    """Dotted key of the field (``node.input_source``)."""
    default: Any
    alternative: Any
    change: float
    """Relative throughput change when ``alternative`` is stated instead (-0.47 = 47% lower)."""

    def describe(self) -> str:
        """One line for the terminal."""
        return (f"{self.key} = {self.default!r} (default): stating {self.alternative!r} gives "
                f"{self.change:+.0%} throughput")


def defaulted_fields(data: dict[str, Any]) -> list[tuple[str, Any, type]]:
    """``(dotted key, default, annotation)`` of every probed field the system table leaves out."""
    out = []
    for table, cls in _TABLES:
        given = data.get(table, {})
        hints = typing.get_type_hints(cls)
        for f in fields(cls):
            if f.name in given or f.default is dataclasses.MISSING or f.default is None:
                continue
            out.append((f"{table}.{f.name}", f.default, hints[f.name]))
    return out


def alternatives(default: Any, annotation: Any) -> list[Any]:
    """Other values a user could state for a field: the other options of a literal or switch,
    half and twice a number (whole numbers for counts; 0 for a count that may be 0)."""
    if isinstance(default, bool):
        return [not default]
    if get_origin(annotation) is typing.Literal:
        return [v for v in get_args(annotation) if v != default]
    if isinstance(default, int):
        return sorted({max(0, default // 2), default * 2} - {default})
    if isinstance(default, float):
        return [default / 2, default * 2]
    return []


def sensitive_defaults(
    workload: Workload,
    system: str,
    overrides: tuple[tuple[str, Any], ...] = (),
    calibration: Calibration | None = None,
    threshold: float = THRESHOLD,
    catalog: Catalog | None = None,
) -> list[DefaultEffect]:
    """Defaulted fields of ``system`` (preset or file, with ``overrides``) whose stated
    alternatives change throughput by more than ``threshold``; the largest change per field
    (parts resolved in ``catalog``, the packaged one by default)."""
    data, source = read_system_data(system)
    for key, value in overrides:
        data = apply_override(data, key, value)
    base = evaluate(workload, resolve_system(system_spec_from_mapping(data, source), catalog),
                    calibration, catalog).throughput_samples_per_s
    found = []
    for key, default, annotation in defaulted_fields(data):
        worst: DefaultEffect | None = None
        for alt in alternatives(default, annotation):
            try:
                spec = system_spec_from_mapping(apply_override(data, key, alt), source)
                got = evaluate(workload, resolve_system(spec, catalog), calibration, catalog)
            except DseInputError:  # an alternative the rest of the file rules out
                continue
            change = got.throughput_samples_per_s / base - 1.0 if base > 0 else 0.0
            if abs(change) > threshold and (worst is None or abs(change) > abs(worst.change)):
                worst = DefaultEffect(key, default, alt, change)
        if worst is not None:
            found.append(worst)
    return found
