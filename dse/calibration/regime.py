"""The calibration's measured regime, and whether a design lies outside it.

Every measurement the calibration is fitted to, and every design, belongs to one class on each of
four axes:

- ``placement``: ``hbm`` when every embedding row lives in accelerator memory, ``host`` when the
  plan keeps any table (or a cache's backing store) in host DDR, a node tier's name (``cxl``) when
  it keeps any in that slower tier;
- ``vendor``: the accelerator's vendor (:func:`dse.model.catalog.vendor_of`);
- ``architecture``: the accelerator's architecture generation (the catalog's ``architecture``;
  empty, not stated, counts as never measured);
- ``software``: for a measurement its software family (:data:`SOFTWARE_FAMILIES`); a design is
  scored at the reference family's speed with its own ``[software]`` layout, and is inside when
  that layout is the one some measured family uses (:data:`SOFTWARE_CAPABILITIES`).

The *measured regime* (:class:`Regime`) is the set of classes the measurements span on each axis.
A design in a class none of them has (tables in host memory, an AMD or Intel accelerator, a
Blackwell GPU, a layout no measured software used) is outside it, and
:mod:`dse.calibration.ensemble` widens its interval with the errors the fit makes on a class it
never saw (leave-one-class-out) instead of its leave-one-out errors. The reasons are plain
sentences, shown by ``dse evaluate`` and the report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from dse.calibration.measurements import SOFTWARE_CAPABILITIES, Measurement, measurement_design
from dse.model.catalog import vendor_of
from dse.model.placement import Plan, plan_placement
from dse.model.system import SoftwareSpec, System
from dse.model.tiers import TIER_KINDS

AXES = ("placement", "vendor", "architecture", "software")
"""The axes of the regime, in the order reasons are given."""
UNSTATED = "not stated"
"""The architecture class of a part whose catalog entry names none."""


@dataclass(frozen=True, slots=True)
class DesignClass:
    """One design's (or measurement's) class on each axis of :data:`AXES`."""

    placement: str
    vendor: str
    architecture: str
    software: str
    """A measurement's family; for a design, ``reference`` when its layout is the default one,
    else ``custom``: the layout itself is compared (:meth:`Regime.outside`)."""
    layout: SoftwareSpec = dataclasses.field(default_factory=SoftwareSpec)
    """The ``[software]`` switches the design (or measurement) is scored with."""

    def of(self, axis: str) -> str:
        """The class on ``axis``."""
        value: str = getattr(self, axis)
        return value


PLACES: dict[str, str] = {
    "hbm": "HBM", "host": "host memory", "cpu": "the DDR of a CPU-only node",
    **{name: kind.label for name, kind in TIER_KINDS.items() if name not in ("hbm", "ddr")}}
"""The placement classes and how a sentence names each: a class per node tier beyond host DDR (CXL
memory, ...), named as its kind (:data:`~dse.model.tiers.TIER_KINDS`)."""


def placement_class(plan: Plan, cpu_only: bool = False) -> str:
    """``cpu`` on a node without accelerators (its tables in its DDR, fitted apart in the CPU
    class); else the slowest node tier the plan keeps table bytes in: ``host`` for host DDR, the
    tier's name beyond it (``cxl``); else ``hbm``."""
    if cpu_only:
        return "cpu"
    held = [use.tier.name for use in plan.memory.tiers[1:] if any(b > 0 for b in use.used_bytes)]
    if not held:
        return "hbm"
    return "host" if held[-1] == "ddr" else held[-1]


def design_class(system: System, plan: Plan) -> DesignClass:
    """The class of a design scored with ``plan`` on ``system`` (cheap: no timing)."""
    acc = system.accelerator
    layout = system.spec.software
    return DesignClass(placement_class(plan, system.cpu_only), vendor_of(acc),
                       "cpu" if system.cpu_only else acc.architecture or UNSTATED,
                       "reference" if layout == SoftwareSpec() else "custom", layout)


def family_layout(family: str) -> SoftwareSpec:
    """The ``[software]`` layout a measured software family runs (:data:`SOFTWARE_CAPABILITIES`)."""
    switches = {k.split(".", 1)[1]: v for k, v in SOFTWARE_CAPABILITIES.get(family, ())}
    return dataclasses.replace(SoftwareSpec(), **switches)


def measurement_class(m: Measurement) -> DesignClass:
    """The class of a measurement: its design's (placed as the model places it) with its own
    software family."""
    workload, system = measurement_design(m)
    found = design_class(system, plan_placement(workload, system))
    return dataclasses.replace(found, software=m.family, layout=family_layout(m.family))


def outside_axes(reasons: Iterable[str]) -> tuple[str, ...]:
    """The axes of :meth:`Regime.outside`'s reasons (each sentence starts with its axis and a
    colon)."""
    return tuple(r.split(":", 1)[0] for r in reasons)


@dataclass(frozen=True, slots=True)
class Regime:
    """The classes the measurements span on each axis (sorted)."""

    placement: tuple[str, ...]
    vendor: tuple[str, ...]
    architecture: tuple[str, ...]
    software: tuple[str, ...]
    """The measured software families."""

    @classmethod
    def of(cls, classes: Iterable[DesignClass]) -> Regime:
        """The regime spanned by ``classes``."""
        found = list(classes)
        return cls(*(tuple(sorted({c.of(a) for c in found})) for a in AXES))

    def classes(self, axis: str) -> tuple[str, ...]:
        """The measured classes on ``axis``."""
        value: tuple[str, ...] = getattr(self, axis)
        return value

    def outside(self, design: DesignClass) -> tuple[str, ...]:
        """Why ``design`` lies outside this regime, one sentence an axis (empty: inside)."""
        reasons = []
        if design.placement not in self.placement:
            reasons.append(f"placement: tables in {PLACES.get(design.placement, design.placement)}, "
                           f"every measurement holds them in {' or '.join(self.placement)}")
        if design.vendor not in self.vendor:
            reasons.append(f"vendor: {design.vendor or 'unknown'} accelerators were never measured "
                           f"(measured: {', '.join(self.vendor)})")
        if design.architecture not in self.architecture:
            reasons.append(f"architecture: {design.architecture} was never measured "
                           f"(measured: {', '.join(self.architecture)})")
        if all(family_layout(f) != design.layout for f in self.software):
            reasons.append("software: a [software] layout no measured software family used")
        return tuple(reasons)

    def to_dict(self) -> dict[str, list[str]]:
        """The ensemble file's ``regime`` object."""
        return {a: list(self.classes(a)) for a in AXES}

    @classmethod
    def from_dict(cls, data: Any) -> Regime:
        """A regime from :meth:`to_dict`'s object (``ValueError`` when malformed)."""
        if not isinstance(data, dict) or set(data) != set(AXES):
            raise ValueError(f"regime needs exactly the keys {', '.join(AXES)}")
        return cls(*(tuple(str(v) for v in data[a]) for a in AXES))
