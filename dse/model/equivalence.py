"""Settings of a design that cannot change any metric, by the model's own reading of it.

Two designs that differ only in such settings are one machine to the model: every figure it
computes (step, cost, power, rules) is the same. The search scores each such class once, under one
canonical value (:func:`dse.search.study.encoding.canonical_design`), and shows it once. The rule is
here, beside the model, as a pure function of the design (:func:`inert_settings`), so it can only
say what the model reads:

- one node has no scale-out network: no switch is bought (:func:`switch_tiers` is 0) and no
  traffic crosses a NIC, so neither the network's ``oversubscription`` nor its ``topology``
  enters a figure;
- a ``topology`` whose switch tiers (what the network costs and draws) and switch hops (its
  latency) are the other topology's at this size: a rail-optimised network of up to ``radix``
  nodes and a fat tree of up to ``radix`` NIC ports are both one leaf tier, one hop;
- a scale-up domain of one device (one accelerator a node without a multi-node pod, or a node
  that trains on its CPUs) has no scale-up traffic and buys no scale-up switch
  (:func:`dse.model.cost.capex` charges the switch share only to a domain of several devices),
  so neither its fabric (``node.scaleup``) nor its bandwidth (``node.scaleup_gb_s``) enters a
  figure.

``tests/test_equivalence.py`` checks the claim for every system preset: the whole evaluation is
unchanged across the values of every setting this module calls inert.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from dse.model.system import NetworkSpec, SystemSpec

INERT_VALUES: Mapping[str, Any] = MappingProxyType({
    "network.oversubscription": NetworkSpec().oversubscription,
    "network.topology": NetworkSpec().topology,
    "node.scaleup": "none",
    "node.scaleup_gb_s": None,
})
"""Every setting (its dotted system key) the model may find inert, with the value that stands for
all its values: the schema's default for the network; no fabric (``none``, no bandwidth) for a
one-device scale-up domain."""

RAIL, FAT = "rail_optimized", "fat_tree"
"""The scale-out topologies (``network.topology``)."""


def switch_tiers(nodes: int, nics: int, topology: str, radix: int) -> int:
    """Switch tiers a scale-out network needs for its compute NIC ports (0 for one node or none).

    A fat tree joins every NIC port in one folded Clos; a rail-optimised network joins NIC ``i``
    of every node in rail ``i``, so each rail is a Clos of one port per node. One tier up to
    ``radix`` ports (of a rail, or of the whole tree), two up to ``radix**2 / 2``, else three."""
    if nodes <= 1 or nics == 0:
        return 0
    ports = nodes * (1 if topology == RAIL else nics)
    if ports <= radix:
        return 1
    return 2 if ports <= radix * radix // 2 else 3


def switch_hops(nodes: int, nics: int, topology: str, radix: int) -> int:
    """Switch hops between two nodes: 1 through a single switch, 3 leaf-spine-leaf, 5 with a third
    tier; a rail-optimised network keeps rail traffic on one switch tier up to ``radix`` nodes."""
    if topology == RAIL:
        return 1 if nodes <= radix else 3
    ports = nodes * max(nics, 1)
    if ports <= radix:
        return 1
    return 3 if ports <= radix * radix // 2 else 5


def inert_settings(spec: SystemSpec, radix: int) -> tuple[str, ...]:
    """The settings of ``spec`` (keys of :data:`INERT_VALUES`, in its order) that cannot change any
    metric of it (module docstring), for a network switch of ``radix`` ports."""
    return inert_at(spec.nodes, spec.node.nics, spec.node.accelerators, spec.pod.nodes, radix)


@functools.lru_cache(maxsize=4096)
def inert_at(nodes: int, nics: int, accelerators: int, pod_nodes: int, radix: int) -> tuple[str, ...]:
    """:func:`inert_settings` of a system of ``nodes`` nodes of ``nics`` compute NICs and
    ``accelerators`` accelerators each, in scale-up pods of ``pod_nodes`` nodes: all the rule
    reads (a search asks it for every design it draws, so it takes the figures, not a spec)."""
    out: list[str] = []
    if nodes <= 1:
        out += ["network.oversubscription", "network.topology"]
    elif len({(switch_tiers(nodes, nics, t, radix), switch_hops(nodes, nics, t, radix))
              for t in (RAIL, FAT)}) == 1:
        out.append("network.topology")
    if accelerators <= 1 and pod_nodes <= 1:
        out += ["node.scaleup", "node.scaleup_gb_s"]
    return tuple(out)


def canonical_spec(spec: SystemSpec, radix: int) -> SystemSpec:
    """``spec`` with every inert setting (:func:`inert_settings`) at its canonical value
    (:data:`INERT_VALUES`): the one machine its class of equivalent designs is."""
    inert = inert_settings(spec, radix)
    network = {k.removeprefix("network."): INERT_VALUES[k] for k in inert if k.startswith("network.")}
    node = {k.removeprefix("node."): INERT_VALUES[k] for k in inert if k.startswith("node.")}
    return dataclasses.replace(spec, network=dataclasses.replace(spec.network, **network),
                               node=dataclasses.replace(spec.node, **node))
