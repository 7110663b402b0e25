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
    [facility]                    # electricity, PUE, years of amortisation
    usd_per_kwh = 0.2

The result is a plain :class:`~dse.model.catalog.Catalog` passed to the model, which never reads
a user file itself. Scale-out and scale-up switches and PCIe generations cannot be changed here:
the step-time model reads their latencies and radix from the packaged catalog. Every change is
listed as a :class:`CatalogChange`, so the pages that used it can say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from dse.errors import DseInputError
from dse.model.catalog import CATALOG_FILE, Catalog, load_catalog
from dse.records import apply_override, from_mapping, read_toml

PART_SECTIONS = ("accelerator", "cpu", "nic", "ddr")
"""Tables of parts by key: a user entry changes the named part or adds a new one."""
FIELD_SECTIONS = ("chassis", "facility")
"""Single tables: a user entry changes some of their fields."""
PRICED = ("accelerator", "cpu", "nic")
"""Sections the ``[price]`` shorthand reaches (their ``price_usd``)."""
USER_KEYS = (*PART_SECTIONS, *FIELD_SECTIONS, "price")
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


def _merge(base: dict[str, Any], user: dict[str, Any], source: str) -> tuple[dict[str, Any],
                                                                            list[CatalogChange]]:
    """``base`` with the user's tables applied, and the list of changes (unknown keys refused)."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    changes: list[CatalogChange] = []
    for section, table in user.items():
        if section not in USER_KEYS:
            raise DseInputError(source, section, f"unknown key (known keys: {', '.join(USER_KEYS)})")
        if not isinstance(table, dict):
            raise DseInputError(source, section, f"expected a table, got {table!r}")
        if section == "price":
            continue
        for key, value in table.items():
            if section in FIELD_SECTIONS:
                out[section] = {**out[section], key: value}
                changes.append(CatalogChange(f"{section}.{key}", repr(value), source))
                continue
            if not isinstance(value, dict):
                raise DseInputError(source, f"{section}.{key}", f"expected a table, got {value!r}")
            existing = key in out[section]
            out[section][key] = {**out[section].get(key, {}), **value}
            changes.extend(CatalogChange(f"{section}.{key}.{k}", repr(v), source) for k, v in value.items())
            if not existing:
                changes.append(CatalogChange(f"{section}.{key}", "new part", source))
    for part, price in user.get("price", {}).items():
        owners = [s for s in PRICED if part in out[s]]
        if len(owners) != 1:
            known = ", ".join(sorted(k for s in PRICED for k in out[s]))
            why = "names parts in several sections" if owners else "unknown part"
            raise DseInputError(source, f"price.{part}", f"{why} (known: {known})")
        out[owners[0]][part] = {**out[owners[0]][part], "price_usd": price}
        changes.append(CatalogChange(f"{owners[0]}.{part}.price_usd", repr(price), source))
    return out, changes


def load_user_catalog(path: Path | None = None,
                      overrides: tuple[tuple[str, Any], ...] = ()) -> UserCatalog:
    """The packaged catalog with a user catalog file and then ``--set`` items applied.

    ``overrides`` are ``(dotted.key, value)`` pairs whose first part is one of :data:`USER_KEYS`.
    Errors name the user file (or ``--set``) and the dotted key, like every other file.
    """
    if path is None and not overrides:
        return UserCatalog(load_catalog())
    table = _packaged_table()
    changes: list[CatalogChange] = []
    if path is not None:
        table, changes = _merge(table, read_toml(path), str(path))
        from_mapping(Catalog, table, str(path))
    if overrides:
        items: dict[str, Any] = {}
        for key, value in overrides:
            items = apply_override(items, key, value)
        table, more = _merge(table, items, "--set")
        changes += more
    return UserCatalog(from_mapping(Catalog, table, "--set" if overrides else str(path)), tuple(changes))


def split_catalog_overrides(
    items: tuple[tuple[str, Any], ...],
) -> tuple[tuple[tuple[str, Any], ...], tuple[tuple[str, Any], ...]]:
    """Split ``(key, value)`` overrides into (catalog, other) by the :data:`SET_PREFIXES` of their keys."""
    catalog = tuple(kv for kv in items if kv[0].startswith(SET_PREFIXES))
    return catalog, tuple(kv for kv in items if not kv[0].startswith(SET_PREFIXES))
