"""A user's own parts and prices on top of the packaged catalog.

A buyer with a quote, or a part the catalog lacks, needs no edit of the packaged
``dse/data/catalog.toml``: a user catalog file (``--catalog my-parts.toml``, or ``catalog = "..."``
in a study) and ``--set`` items add or change entries. They may hold these tables::

    [accelerator.my-gpu]          # a new part: every key an entry of the packaged catalog has
    [accelerator.h100-sxm5-80gb]  # an existing part: only the keys that change
    price_usd = 25000
    [cpu.KEY] / [nic.KEY] / [ddr.KEY] / [chassis]  (likewise)
    [price]                       # shorthand: price_usd of an accelerator, CPU or NIC by its key
    h100-sxm5-80gb = 25000
    [price_range]                 # shorthand: price_low_usd and price_high_usd, by key
    h100-sxm5-80gb = [22000, 28000]
    [discounts]                   # a vendor's discount off the catalog's prices, a fraction in [0, 1)
    nvidia = 0.15
    [node_price.dgx-h100]         # a quote for a whole node of a system (a preset's name or a file)
    price_usd = 350000            # replaces the prices of the parts it covers (default: all of the node's)
    price_low_usd = 320000        # and its range, drawn as a part's is
    price_high_usd = 380000
    [facility]                    # electricity, PUE, years of amortisation, the racks nodes go in
    usd_per_kwh = 0.2
    rack_kw = 60
    [cdu]                         # the coolant distribution unit liquid-cooled racks share
    usd = 60000
    [network_switch]              # whose scale-out switches and optics (cables) are bought, and
    vendor = "nvidia"             # their prices; [scaleup_switch] likewise (vendor, usd_per_accelerator)
    optics_vendor = "nvidia"

A part's price range (``price_low_usd`` <= ``price_usd`` <= ``price_high_usd``, or the
``[price_range]`` shorthand) replaces the default spread of the draws that move prices: the robust
front's (:mod:`dse.search.robust_front`) and the case studies' (:mod:`dse.outputs.cases.uncertainty`).
A discount multiplies the price (and range) of every part of that vendor by ``1 - discount``:
accelerators, CPUs, CXL memory, NICs (:func:`~dse.model.catalog.vendor_of`: the part's ``vendor``,
else the first word of its name; the packaged NIC grades are NVIDIA ConnectX cards), the scale-up
switch silicon (NVSwitch, NVIDIA's) and the scale-out switches and their optics when the user
catalog names their vendors; never a part whose price or range the user states, nor a quote for a
whole node: a stated price is the price paid. Discounts from the file and ``--set`` are applied
once, after both (``--set`` wins for a vendor both name). A quote for a whole node
(``[node_price.SYSTEM]``) replaces the prices of the node's parts it covers wherever the node is as
that system states it (:func:`dse.model.bom.node_quote`).

The result is a plain :class:`~dse.model.catalog.Catalog` passed to the model, which never reads
a user file itself. Of the scale-out and scale-up switches only their vendors and prices can be
changed here (:data:`SWITCH_KEYS`), and PCIe generations not at all: the step-time model reads
their latencies and radix from the packaged catalog. Every change is listed as a
:class:`CatalogChange`, so the pages that used it can say so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, TypeVar

from dse.errors import DseInputError
from dse.model.bom import NODE_PARTS
from dse.model.catalog import (
    CATALOG_FILE,
    PART_SECTIONS,
    PRICED_SECTIONS,
    Catalog,
    PricedPart,
    load_catalog,
    vendor_of,
)
from dse.model.system import load_system_spec
from dse.records import apply_override, from_mapping, read_toml

SWITCH_KEYS: dict[str, tuple[str, ...]] = {
    "network_switch": ("vendor", "optics_vendor", "usd_per_port_per_400g", "optics_usd_per_end_per_400g"),
    "scaleup_switch": ("vendor", "usd_per_accelerator"),
}
"""The fields of the switch tables a user catalog may change: whose they are and what they cost
(their radix and latencies are the step-time model's, read from the packaged catalog)."""
SWITCH_PRICES: dict[str, tuple[tuple[str, str], ...]] = {
    "network_switch": (("usd_per_port_per_400g", "vendor"), ("optics_usd_per_end_per_400g", "optics_vendor")),
    "scaleup_switch": (("usd_per_accelerator", "vendor"),),
}
"""Each switch table's prices and the field naming the vendor whose discount reaches each."""
FIELD_SECTIONS = ("chassis", "facility", "cdu", *SWITCH_KEYS)
"""Single tables: a user entry changes some of their fields (the tables of parts by key, where a
user entry changes the named part or adds a new one, are
:data:`~dse.model.catalog.PART_SECTIONS`)."""
PRICED = PRICED_SECTIONS
"""Sections the ``[price]`` shorthand reaches (their ``price_usd``)."""
P = TypeVar("P", bound=PricedPart)
"""A priced part type (:data:`~dse.model.catalog.PricedPart`)."""
PRICE_KEYS = ("price_usd", "price_low_usd", "price_high_usd")
"""A part's own price figures: a part whose table states one is not discounted."""
SHORTHANDS = {"price": ("price_usd",), "price_range": ("price_low_usd", "price_high_usd")}
"""Tables of figures by part key alone, and the fields they set."""
USER_KEYS = (*PART_SECTIONS, *FIELD_SECTIONS, *SHORTHANDS, "discounts")
SET_PREFIXES = tuple(f"{k}." for k in USER_KEYS)
"""``--set`` keys with these prefixes change the catalog (``--set price.a100-sxm4-80gb=9000``)."""


@dataclass(frozen=True, slots=True)
class CatalogChange:
    """One change a user made to the catalog, for the pages that list them."""

    key: str
    """Dotted catalog key (``accelerator.h100-sxm5-80gb.price_usd``, ``accelerator.my-gpu``)."""
    value: str
    """The new value as written (``new part`` for an added entry)."""
    source: str
    """The user catalog file, or ``--set``."""

    def describe(self) -> str:
        """One line: ``key = value (source)``."""
        return f"{self.key} = {self.value} ({self.source})"


@dataclass(frozen=True, slots=True)
class UserCatalog:
    """The catalog the model uses, and what the user changed in it."""

    catalog: Catalog
    changes: tuple[CatalogChange, ...] = ()


def _packaged_table() -> dict[str, Any]:
    ref = resources.files("dse") / "data" / CATALOG_FILE
    with resources.as_file(ref) as p:
        return read_toml(p)


@dataclass(frozen=True, slots=True)
class _Merged:
    """A catalog table with one source's tables applied."""

    table: dict[str, Any]
    changes: list[CatalogChange]
    stated: dict[tuple[str, str], str]
    """(section, part) whose price or range the user stated -> the source that stated it."""
    discounts: dict[str, tuple[float, str]]
    """Vendor key -> (discount, the source that stated it)."""


def _owner(table: dict[str, Any], part: str, source: str, key: str) -> str:
    """The one priced section holding ``part`` (for the shorthands), or an error."""
    owners = [s for s in PRICED if part in table[s]]
    if len(owners) != 1:
        known = ", ".join(sorted(k for s in PRICED for k in table[s]))
        why = "names parts in several sections" if owners else "unknown part"
        raise DseInputError(source, key, f"{why} (known: {known})")
    return owners[0]


def _shorthand_values(short: str, value: Any, source: str, key: str) -> tuple[Any, ...]:
    """The field values a shorthand entry sets: one price, or a ``[low, high]`` pair."""
    if short == "price":
        return (value,)
    if not isinstance(value, list) or len(value) != 2:
        raise DseInputError(source, key, f"expected [low, high] in USD, got {value!r}")
    return tuple(value)


def _merge(merged: _Merged, user: dict[str, Any], source: str) -> _Merged:
    """``merged`` with the user's tables applied (unknown keys refused)."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in merged.table.items()}
    changes, stated = list(merged.changes), dict(merged.stated)
    discounts = dict(merged.discounts)
    for section, table in user.items():
        if section not in USER_KEYS:
            raise DseInputError(source, section, f"unknown key (known keys: {', '.join(USER_KEYS)})")
        if not isinstance(table, dict):
            raise DseInputError(source, section, f"expected a table, got {table!r}")
        if section in SHORTHANDS:
            continue
        if section == "discounts":
            discounts.update({str(v).lower(): (_discount(d, source, f"discounts.{v}"), source)
                              for v, d in table.items()})
            continue
        for key, value in table.items():
            if section in FIELD_SECTIONS:
                allowed = SWITCH_KEYS.get(section)
                if allowed is not None and key not in allowed:
                    raise DseInputError(source, f"{section}.{key}", "only a switch's vendors and prices "
                                        f"may be changed here (known keys: {', '.join(allowed)})")
                out[section] = {**out[section], key: value}
                changes.append(CatalogChange(f"{section}.{key}", repr(value), source))
                if key.startswith("usd") or key.startswith("optics_usd"):
                    stated[section, key] = source
                continue
            if not isinstance(value, dict):
                raise DseInputError(source, f"{section}.{key}", f"expected a table, got {value!r}")
            existing = key in out[section]
            out[section][key] = {**out[section].get(key, {}), **value}
            changes.extend(CatalogChange(f"{section}.{key}.{k}", repr(v), source) for k, v in value.items())
            if any(k in PRICE_KEYS for k in value):
                stated[section, key] = source
            if not existing:
                changes.append(CatalogChange(f"{section}.{key}", "new part", source))
    for short, fields in SHORTHANDS.items():
        for part, value in user.get(short, {}).items():
            key = f"{short}.{part}"
            section = _owner(out, part, source, key)
            values = _shorthand_values(short, value, source, key)
            out[section][part] = {**out[section][part], **dict(zip(fields, values, strict=True))}
            changes.extend(CatalogChange(f"{section}.{part}.{f}", repr(v), source)
                           for f, v in zip(fields, values, strict=True))
            stated[section, part] = source
    return _Merged(out, changes, stated, discounts)


def _discount(value: Any, source: str, key: str) -> float:
    """A discount as a fraction in [0, 1), or an error naming the file and key."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
        raise DseInputError(source, key, f"a discount is a fraction in [0, 1) (0.15 = 15% off), "
                            f"got {value!r}")
    return float(value)


class PartMap(Protocol):
    """A change of one priced part: ``(section, key, part) -> part`` of the same type."""

    def __call__(self, section: str, key: str, part: P, /) -> P: ...


def map_priced(catalog: Catalog, change: PartMap) -> Catalog:
    """``catalog`` with ``change`` applied to every priced part (:data:`PRICED`, in that order and
    sorted by key, so a change that draws random numbers draws them in one order)."""
    return dataclasses.replace(catalog, **{  # type: ignore[arg-type]
        section: {k: change(section, k, v) for k, v in sorted(getattr(catalog, section).items())}
        for section in PRICED})


def _apply_discounts(catalog: Catalog, merged: _Merged) -> tuple[Catalog, list[CatalogChange]]:
    """``catalog`` with every discount applied to its vendor's parts whose price the user did not
    state (module docstring), and the changes that made."""
    vendors = ({vendor_of(p) for s in PRICED for p in getattr(catalog, s).values()}
               | {getattr(getattr(catalog, t), v).lower() for t, prices in SWITCH_PRICES.items()
                  for _, v in prices}) - {""}
    changes: list[CatalogChange] = []
    for vendor, (_, source) in sorted(merged.discounts.items()):
        if vendor not in vendors:
            raise DseInputError(source, f"discounts.{vendor}", f"no part of vendor {vendor!r} "
                                f"(vendors: {', '.join(sorted(vendors))})")

    def change(section: str, key: str, part: P, /) -> P:
        found = merged.discounts.get(vendor_of(part))
        if found is None or (section, key) in merged.stated:
            return part
        moved = discounted(part, 1.0 - found[0])
        changes.append(CatalogChange(f"{section}.{key}.price_usd", f"{moved.price_usd:.6g} "
                                     f"({found[0]:.0%} {vendor_of(part)} discount)", found[1]))
        return moved

    return _discounted_switches(map_priced(catalog, change), merged, changes), changes


def _discounted_switches(catalog: Catalog, merged: _Merged, changes: list[CatalogChange]) -> Catalog:
    """``catalog`` with each switch price (:data:`SWITCH_PRICES`) discounted by its vendor's
    discount unless the user stated it; the changes appended to ``changes``."""
    tables = {}
    for section, prices in SWITCH_PRICES.items():
        table = getattr(catalog, section)
        moved = {}
        for price, vendor_field in prices:
            vendor = getattr(table, vendor_field).lower()
            found = merged.discounts.get(vendor)
            if found is None or (section, price) in merged.stated:
                continue
            moved[price] = getattr(table, price) * (1.0 - found[0])
            changes.append(CatalogChange(f"{section}.{price}", f"{moved[price]:.6g} ({found[0]:.0%} "
                                         f"{vendor} discount)", found[1]))
        tables[section] = dataclasses.replace(table, **moved)
    return dataclasses.replace(catalog, **tables)


def discounted(part: P, factor: float) -> P:
    """``part`` with its price and price range times ``factor``."""
    def scale(v: float | None) -> float | None:
        return None if v is None else v * factor
    return dataclasses.replace(part, price_usd=part.price_usd * factor,
                               price_low_usd=scale(part.price_low_usd),
                               price_high_usd=scale(part.price_high_usd))


def price_range(part: PricedPart) -> tuple[float, float] | None:
    """The part's stated price range (USD), or None."""
    if part.price_low_usd is None or part.price_high_usd is None:
        return None
    return part.price_low_usd, part.price_high_usd


def priced_at(part: P, fraction: float) -> P:
    """``part`` priced at ``fraction`` (0-1) of the way from its range's low to its high end."""
    span = price_range(part)
    if span is None:
        return part
    return dataclasses.replace(part, price_usd=span[0] + fraction * (span[1] - span[0]))


def ranged_parts(catalog: Catalog, sections: tuple[str, ...] = PRICED) -> tuple[str, ...]:
    """Dotted keys (``accelerator.KEY``) of the parts of ``sections`` with a price range."""
    return tuple(f"{s}.{k}" for s in sections for k, p in sorted(getattr(catalog, s).items())
                 if price_range(p) is not None)


def draw_ranged_prices(catalog: Catalog, unit: Callable[[], float],
                       sections: tuple[str, ...] = PRICED) -> Catalog:
    """``catalog`` with the price of every part of ``sections`` that has a range drawn in it:
    ``low + u (high - low)`` with ``u = unit()`` (uniform in [0, 1] for a uniform draw), one call
    per ranged part in key order; parts without a range keep their price."""
    def change(section: str, key: str, part: P, /) -> P:
        del key
        if section not in sections or price_range(part) is None:
            return part
        return priced_at(part, unit())

    return map_priced(catalog, change)


def check_price_ranges(catalog: Catalog, stated: dict[tuple[str, str], str]) -> None:
    """Every price range is whole and holds its price: ``price_low_usd <= price_usd <=
    price_high_usd``; an error names the file that stated the part and the field."""
    for section in PRICED:
        for key, part in getattr(catalog, section).items():
            low, high = part.price_low_usd, part.price_high_usd
            if low is None and high is None:
                continue
            source = stated.get((section, key), "catalog")
            where = f"{section}.{key}"
            if low is None or high is None:
                missing = "price_low_usd" if low is None else "price_high_usd"
                raise DseInputError(source, f"{where}.{missing}",
                                    "a price range needs both price_low_usd and price_high_usd")
            if not low <= part.price_usd <= high:
                field = "price_low_usd" if part.price_usd < low else "price_high_usd"
                raise DseInputError(source, f"{where}.{field}",
                                    f"the range {low:.6g}-{high:.6g} USD must hold the price "
                                    f"{part.price_usd:.6g} (low <= price <= high)")


def check_node_quotes(catalog: Catalog, stated: dict[tuple[str, str], str]) -> None:
    """Every quote for a whole node names a system that loads (a preset or a system file) and
    covers only parts a node is bought with (:data:`~dse.model.bom.NODE_PARTS`); one-line errors
    naming the file that stated it and ``node_price.SYSTEM``."""
    parts = [str(p) for p in NODE_PARTS]
    for name, quote in catalog.node_price.items():
        source = stated.get(("node_price", name), "catalog")
        try:
            load_system_spec(name)
        except DseInputError as exc:
            raise DseInputError(source, f"node_price.{name}",
                                f"names no system that loads ({exc.message})") from None
        unknown = [c for c in quote.covers if c not in parts]
        if unknown:
            raise DseInputError(source, f"node_price.{name}.covers", f"{unknown[0]!r} is no part a node is "
                                f"bought with (those are: {', '.join(parts)})")


def load_user_catalog(path: Path | None = None,
                      overrides: tuple[tuple[str, Any], ...] = ()) -> UserCatalog:
    """The packaged catalog with a user catalog file and then ``--set`` items applied.

    ``overrides`` are ``(dotted.key, value)`` pairs whose first part is one of :data:`USER_KEYS`.
    Errors name the user file (or ``--set``) and the dotted key, like every other file.
    """
    if path is None and not overrides:
        return UserCatalog(load_catalog())
    merged = _Merged(_packaged_table(), [], {}, {})
    if path is not None:
        merged = _merge(merged, read_toml(path), str(path))
        from_mapping(Catalog, merged.table, str(path))
    if overrides:
        items: dict[str, Any] = {}
        for key, value in overrides:
            items = apply_override(items, key, value)
        merged = _merge(merged, items, "--set")
    catalog = from_mapping(Catalog, merged.table, "--set" if overrides else str(path))
    check_node_quotes(catalog, merged.stated)
    catalog, discount_changes = _apply_discounts(catalog, merged)
    check_price_ranges(catalog, merged.stated)
    return UserCatalog(catalog, (*merged.changes, *discount_changes))


def split_catalog_overrides(
    items: tuple[tuple[str, Any], ...],
) -> tuple[tuple[tuple[str, Any], ...], tuple[tuple[str, Any], ...]]:
    """Split ``(key, value)`` overrides into (catalog, other) by the :data:`SET_PREFIXES` of their keys."""
    catalog = tuple(kv for kv in items if kv[0].startswith(SET_PREFIXES))
    return catalog, tuple(kv for kv in items if not kv[0].startswith(SET_PREFIXES))
