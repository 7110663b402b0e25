"""Warnings for values that are possible but implausible: a price in the wrong unit, a node with
less host memory than one DIMM per channel (docs/design.md, section 7). Refusals are the limits
of :mod:`dse.limits` and the buildability rules of :mod:`dse.model.rules`; these are only
reported (``dse: warning: ...`` on stderr), the design still evaluated as written."""

from __future__ import annotations

from dataclasses import dataclass

from dse.limits import (
    MAX_PLAUSIBLE_PUE,
    MAX_PLAUSIBLE_USD_PER_KWH,
    MIN_DIMM_GB,
    MIN_PLAUSIBLE_ACCELERATOR_USD,
    MIN_PLAUSIBLE_USD_PER_KWH,
)
from dse.model.catalog import Catalog
from dse.model.system import System


@dataclass(frozen=True, slots=True)
class Implausible:
    """One implausible value: the field as a user writes it, its value and why it is doubted."""

    field: str
    value: float
    why: str

    def describe(self) -> str:
        return f"{self.field} = {self.value:.6g}: {self.why}"


def catalog_warnings(catalog: Catalog) -> list[Implausible]:
    """The catalog's implausible electricity price, PUE and accelerator prices (a user catalog or
    ``--set`` may have written them)."""
    fac = catalog.facility
    out = []
    if fac.usd_per_kwh > MAX_PLAUSIBLE_USD_PER_KWH:
        out.append(Implausible("facility.usd_per_kwh", fac.usd_per_kwh,
                               f"above ${MAX_PLAUSIBLE_USD_PER_KWH:g} per kWh, more than any grid "
                               "charges (US cents written as dollars?)"))
    elif 0 < fac.usd_per_kwh < MIN_PLAUSIBLE_USD_PER_KWH:
        out.append(Implausible("facility.usd_per_kwh", fac.usd_per_kwh,
                               f"below ${MIN_PLAUSIBLE_USD_PER_KWH:g} per kWh (dollars per MWh?)"))
    if fac.pue > MAX_PLAUSIBLE_PUE:
        out.append(Implausible("facility.pue", fac.pue,
                               f"above {MAX_PLAUSIBLE_PUE:g}; data centres average about 1.6"))
    for key, acc in sorted(catalog.accelerator.items()):
        if acc.price_usd < MIN_PLAUSIBLE_ACCELERATOR_USD:
            out.append(Implausible(f"price.{key}", acc.price_usd,
                                   f"below ${MIN_PLAUSIBLE_ACCELERATOR_USD:,.0f} for a data-centre "
                                   "accelerator (a price in thousands?)"))
    return out


def system_warnings(system: System) -> list[Implausible]:
    """The node's host DDR when it is less than one DIMM per channel of every socket, and keys the
    design sets that it does not read (so a typo of intent does not pass silently)."""
    node = system.spec.node
    out = []
    least = node.cpu_sockets * system.cpu.ddr_channels * MIN_DIMM_GB
    ddr = node.ddr_gb  # the stated DDR (a node without accelerators holds its tables there)
    if ddr < least:
        out.append(Implausible("node.ddr_gb", ddr,
                               f"less than one {MIN_DIMM_GB:g} GB DIMM in each of the {node.cpu_sockets} x "
                               f"{system.cpu.ddr_channels} DDR channels ({least:g} GB); the model still "
                               "counts every channel's bandwidth"))
    if node.cpu_compute_cores is not None and not system.cpu_only:
        out.append(Implausible("node.cpu_compute_cores", node.cpu_compute_cores,
                               "read only on a node without accelerators (accelerators = 0); "
                               "ignored here"))
    software = system.spec.software
    if software.replicate_below_rows is not None and not software.replicate_small_tables:
        out.append(Implausible("software.replicate_below_rows", software.replicate_below_rows,
                               "ignored while software.replicate_small_tables is false"))
    return out
