"""Settings that cannot change any metric (issue 41 item 6): the model's rule
(:mod:`dse.model.equivalence`) holds for every system preset, and a study scores and shows each
class of equivalent designs once, with how many it stands for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from study_helpers import run_cli

from dse import evaluate, load_workload
from dse.model.catalog import load_catalog
from dse.model.equivalence import INERT_VALUES, canonical_spec, inert_settings, switch_hops, switch_tiers
from dse.model.system import SystemSpec, read_system_data, resolve_system, system_spec_from_mapping
from dse.records import SYSTEM, apply_override
from dse.search.results import load_stored_study, trial_rows
from dse.search.study.study_file import load_study_spec

PRESETS = sorted(p.stem for p in SYSTEM.builtin.glob("*.toml"))
RADIX = load_catalog().network_switch.radix
WORKLOAD = load_workload("mlperf-dlrm-v1")


def _spec(name: str, **changes: Any) -> SystemSpec:
    """Preset ``name`` with dotted-key ``changes`` (``node__accelerators=1``)."""
    data, _ = read_system_data(name)
    for key, value in changes.items():
        data = apply_override(data, key.replace("__", "."), value)
    return system_spec_from_mapping(data, name)


def _scored(spec: SystemSpec) -> dict[str, Any]:
    """Everything an evaluation reports but the system's name."""
    out = evaluate(WORKLOAD, resolve_system(spec, load_catalog())).to_dict()
    out.pop("system", None)
    return out


def test_switch_tiers_and_hops_by_hand() -> None:
    """A 64-port switch: 8 nodes of 8 NICs are 64 ports (one leaf either way), 9 nodes are 72
    (a fat tree's spine, still one leaf per rail); 2,048 ports are the last two-tier fat tree."""
    assert RADIX == 64
    assert [switch_tiers(n, 8, "fat_tree", 64) for n in (1, 8, 9, 256, 257)] == [0, 1, 2, 2, 3]
    assert [switch_tiers(n, 8, "rail_optimized", 64) for n in (1, 8, 64, 65)] == [0, 1, 1, 2]
    assert [switch_hops(n, 8, "fat_tree", 64) for n in (8, 9, 256, 257)] == [1, 3, 3, 5]
    assert [switch_hops(n, 8, "rail_optimized", 64) for n in (8, 64, 65)] == [1, 1, 3]


def test_which_settings_are_inert_by_hand() -> None:
    h100 = "dgx-h100"
    assert inert_settings(_spec(h100), RADIX) == ("network.oversubscription", "network.topology")
    assert inert_settings(_spec(h100, nodes=8), RADIX) == ("network.topology",)
    assert inert_settings(_spec(h100, nodes=9), RADIX) == ()
    # 256 nodes: a fat tree of 2,048 ports is two tiers, 3 hops; rails of 256 are two tiers, 3 hops.
    assert inert_settings(_spec(h100, nodes=256), RADIX) == ("network.topology",)
    one = _spec(h100, nodes=2, node__accelerators=1)
    assert inert_settings(one, RADIX) == ("network.topology", "node.scaleup", "node.scaleup_gb_s")
    canonical = canonical_spec(one, RADIX)
    assert (canonical.node.scaleup, canonical.node.scaleup_gb_s, canonical.network.topology) == (
        "none", None, "fat_tree")
    # A pod of several nodes is one scale-up domain of several devices, whatever a node holds.
    assert "node.scaleup" not in inert_settings(_spec("gb200-nvl72", node__accelerators=1), RADIX)


@pytest.mark.parametrize("name", PRESETS)
def test_inert_settings_change_no_metric_of_any_preset(name: str) -> None:
    """For every preset at sizes across the switch boundaries, and with one accelerator a node:
    every value of every setting the rule calls inert gives the same evaluation, and the
    topology the rule keeps changes it."""
    variants: dict[str, tuple[dict[str, Any], ...]] = {
        "network.oversubscription": ({"network.oversubscription": 1.0},
                                     {"network.oversubscription": 3.0}),
        "network.topology": ({"network.topology": "fat_tree"},
                             {"network.topology": "rail_optimized"}),
        "node.scaleup": ({"node.scaleup": "none"},
                         {"node.scaleup": "ring", "node.scaleup_gb_s": 50.0},
                         {"node.scaleup": "switch", "node.scaleup_gb_s": 400.0}),
        "node.scaleup_gb_s": ({"node.scaleup_gb_s": 50.0}, {"node.scaleup_gb_s": 400.0})}
    base = _spec(name)
    sizes = [{"nodes": n} for n in (1, 8, 9, 256)] if not base.rack.nodes else [{}]
    if base.node.accelerators > 1 and base.pod.nodes == 1:
        sizes += [{"nodes": 2, "node.accelerators": 1}, {"nodes": 1, "node.accelerators": 1}]
    for size in sizes:
        spec = _spec(name, **{k.replace(".", "__"): v for k, v in size.items()})
        inert = inert_settings(spec, RADIX)
        results = []
        for key in inert:
            if key == "node.scaleup_gb_s" and spec.node.scaleup == "none":
                continue  # no fabric to give a bandwidth to (the node.scaleup variants give it)
            for change in variants[key]:
                changed = _spec(name, **{k.replace(".", "__"): v for k, v in {**size, **change}.items()})
                results.append(_scored(changed))
        assert all(r == results[0] for r in results), (name, size, inert)
        if "network.topology" not in inert and spec.nodes > 1 and spec.node.nics:
            fat, rail = (_scored(_spec(name, **{k.replace(".", "__"): v for k, v in
                                                {**size, "network.topology": t}.items()}))
                         for t in ("fat_tree", "rail_optimized"))
            assert fat != rail, (name, size)


def test_inert_values_name_real_keys() -> None:
    """Every key the rule may return sets a system field (its canonical value included)."""
    data, _ = read_system_data("dgx-h100")
    for key, value in INERT_VALUES.items():
        if value is not None:
            system_spec_from_mapping(apply_override(data, key, value), "dgx-h100")


_ONE_GPU_SPACE = """name = "one-gpu"
base_system = "dgx-h100"
[fixed]
"node.accelerators" = 1
[parameters.nodes]
type = "ordinal"
choices = [1, 2]
[parameters."node.scaleup"]
type = "categorical"
choices = ["switch", "ring", "none"]
[parameters."network.topology"]
type = "categorical"
choices = ["fat_tree", "rail_optimized"]
"""
"""One H100 a node on one or two nodes: 12 combinations and 2 designs (one accelerator has no
scale-up traffic, and one or two nodes of 8 NICs are one leaf switch either way)."""


def test_a_study_scores_and_shows_equivalent_designs_once(tmp_path: Path) -> None:
    (tmp_path / "one-gpu.toml").write_text(_ONE_GPU_SPACE, encoding="utf-8")
    study = tmp_path / "s.toml"
    study.write_text('name = "s"\nworkload = "mlperf-dlrm-v1"\nspace = "one-gpu.toml"\n'
                     'objectives = "throughput-vs-capex"\nsampler = "random"\nbudget = 12\n'
                     'seed = 3\n', encoding="utf-8")
    result = run_cli("run", str(study), "--quiet", "--no-report", "--warm-start", "none")
    assert result.exit_code == 0, result.output
    stored = load_stored_study(load_study_spec(str(study)))
    rows = [r for r in trial_rows(stored, distinct=True) if r["state"] == "COMPLETE"]
    assert sorted((r["param:nodes"], r["param:node.scaleup"], r["param:network.topology"])
                  for r in rows) == [(1, "none", "fat_tree"), (2, "none", "fat_tree")]
    drawn = {json.dumps(t.params, sort_keys=True) for t in stored.trials if t.params}
    assert sum(r["equivalents"] for r in rows) == len(drawn) > 2
    front = run_cli("pareto", str(study), "--json")
    assert front.exit_code == 0
    assert all(row["equivalents"] >= 1 for row in json.loads(front.output))
    table = run_cli("pareto", str(study))
    assert "equivalent settings)" in table.output


@pytest.mark.parametrize("space_name", ["todays-racks", "zion-node", "todays-nodes", "scale-out"])
def test_the_search_reads_the_rule_as_the_model_does(space_name: str) -> None:
    """:func:`inert_keys` reads a design's table (fast, for every design a search draws); the
    model reads the validated spec (racks turned into nodes): the same settings, design by design."""
    import random

    from dse.search.algorithms.dedup import random_design
    from dse.search.study.encoding import _design_table, inert_keys
    from dse.search.study.search_space import load_space

    space = load_space(space_name)
    rng = random.Random(1)
    for _ in range(60):
        design = random_design(space, rng)
        spec = system_spec_from_mapping(_design_table(space, design), space_name)
        assert inert_keys(space, design) == tuple(
            k for k in inert_settings(spec, RADIX) if k in space.parameters), design
