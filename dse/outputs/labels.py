"""Human names, units and number formats for every metric and design parameter: the one table the
terminal tables and the report read, so a column header and an axis title say the same thing. A
metric's label is its record in the metric registry (:mod:`dse.model.metrics`); the parameters'
are listed here.

>>> header("capex_usd"), title("power_w"), show("power_w", 5975.3)
('capex USD', 'power (W)', '5.98')
>>> human_number(1_693_670.3), human_number(29.2093), human_number(0.00108287)
('1,693,670', '29.2', '0.00108')
>>> design_phrase({"param:nodes": 1, "param:node.nics": 8, "param:network.oversubscription": 1.0})
'1 node, 8 NICs, 1:1 oversubscribed'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from dse.model.metrics import METRICS
from dse.model.racks import rack_phrase


@dataclass(frozen=True, slots=True)
class Label:
    """How one metric or parameter is shown."""

    header: str
    """Short column header with its unit (terminal tables)."""
    title: str
    """Axis title with the unit of the stored value (figures plot stored values)."""
    scale: float = 1.0
    """Multiplies the stored value into the unit of ``header`` (W -> kW: 1e-3)."""
    phrase: str = ""
    """How a design states the value, ``{}`` standing for it (``"{} nodes"``); empty: not a knob."""


PARAMETER_LABELS: Mapping[str, Label] = {
    # Design parameters (search-space keys); those that are also metrics (nodes, racks) are labelled
    # with the metrics.
    "workload.global_batch": Label("batch", "global batch (samples)", phrase="batch {}"),
    "workload.batch_per_accelerator": Label("batch/acc", "batch per accelerator (samples)",
                                            phrase="batch {} an accelerator"),
    "system": Label("system", "system", phrase="{}"),
    "node.accelerator": Label("accelerator", "accelerator", phrase="{}"),
    "node.accelerators": Label("accel./node", "accelerators per node", phrase="{} accelerators"),
    "node.hbm_gb": Label("HBM GB", "HBM per accelerator (GB)", phrase="{} GB HBM"),
    "node.ddr_gb": Label("DDR GB", "host DDR per node (GB)", phrase="{} GB DDR"),
    "node.pcie_gen": Label("PCIe gen", "PCIe generation", phrase="PCIe {}"),
    "node.scaleup": Label("scale-up", "scale-up fabric", phrase="{}"),
    "node.scaleup_gb_s": Label("scale-up GB/s", "scale-up bandwidth (GB/s)", phrase="{} GB/s scale-up"),
    "node.nics": Label("NICs", "NICs per node", phrase="{} NICs"),
    "node.nic_gbit_s": Label("NIC Gb/s", "NIC speed (Gb/s)", phrase="{} Gb/s"),
    "node.nic_attach": Label("NIC on", "NICs attached to", phrase="NICs on {}"),
    "network.topology": Label("network", "network topology", phrase="{}"),
    "network.oversubscription": Label("oversub.", "network oversubscription", phrase="{}:1 oversubscribed"),
}
"""How each design parameter is shown."""

LABELS: Mapping[str, Label] = MappingProxyType({
    **{m.name: Label(m.header, m.title, m.scale, m.phrase) for m in METRICS},
    **PARAMETER_LABELS,
})
"""Every metric and parameter a table or figure names; others fall back to :func:`label`."""


def label(name: str) -> Label:
    """The label of ``name``; an unknown one (or an encoded parameter, ``node.pcie_gen_index``) is
    named after its last part, without underscores."""
    key = name.removeprefix("param:").removesuffix("_index")
    found = LABELS.get(key)
    if found is not None:
        return found
    plain = key.rsplit(".", 1)[-1].replace("_", " ")
    return Label(plain, plain, phrase=f"{plain} {{}}")


def header(name: str) -> str:
    """Short column header with unit."""
    return label(name).header


def title(name: str) -> str:
    """Axis or legend title with unit."""
    return label(name).title


def human_number(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits, thousands separators and never scientific
    notation; integers of more digits keep them all (1,693,670, not 1.69e+06)."""
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    if magnitude >= digits - 1:
        return f"{round(value):,}"
    decimals = digits - 1 - magnitude
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def show(name: str, value: Any) -> str:
    """``value`` of metric or parameter ``name`` in its label's unit, as a table cell."""
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value).lower()
    if isinstance(value, int):
        return f"{round(value * label(name).scale):,}" if label(name).scale != 1.0 else f"{value:,}"
    if isinstance(value, float):
        return human_number(value * label(name).scale)
    return str(value)


def rack_scale_racks(values: Mapping[str, Any]) -> Any:
    """The ``racks`` metric of a design's recorded values where it is a rack-scale system's (its
    ``rack_nodes`` metric not 0; a record from before that metric counted racks of rack-scale
    systems alone), for :func:`design_phrase`; None for nodes the facility's racks hold."""
    return values.get("racks") if values.get("rack_nodes", 1) else None


def design_phrase(params: Mapping[str, Any], racks: Any = None) -> str:
    """A design in words from its parameters (``param:`` prefixes allowed), in the order given:
    ``16 accelerators, 29.2 GB HBM, 2 NICs, 400 Gb/s``; a count and a kind of accelerator read
    ``8x H100``. ``racks``: the design's ``racks`` metric; a rack-scale design's nodes then read
    ``2 racks (36 trays)``. A parameter without a value (inactive in this design: the node count
    of a system searched by the rack) says nothing and is left out."""
    named = {k.removeprefix("param:"): v for k, v in params.items()
             if v is not None and not (isinstance(v, float) and math.isnan(v))}
    parts = []
    for name, value in named.items():
        if name == "nodes" and racks:
            parts.append(rack_phrase(int(racks), int(value)))
        elif name == "node.accelerators" and "node.accelerator" in named:
            parts.append(f"{value}x {named['node.accelerator']}")
        elif name != "node.accelerator" or "node.accelerators" not in named:
            phrase, shown = label(name).phrase, show(name, value)
            if shown == "1" and phrase.endswith("s"):
                phrase = phrase[:-1]  # 1 node, 1 NIC
            parts.append(phrase.format(shown))
    return ", ".join(parts)
