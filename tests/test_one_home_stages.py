"""The step's stages are named in one module, dse/model/stages.py: no other module under dse/ spells
a stage's name as a string (it names it through ``Stage`` or a record's field), and the typed
records carry what the old string-keyed dicts did, the JSON keys included."""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import pytest

import dse
from dse import evaluate, load_system, load_workload
from dse.model.stages import (
    STAGE_PARTS,
    STAGES,
    Breakdown,
    DenseTimes,
    EmbeddingTimes,
    LinkTimes,
    Stage,
    StageCosts,
)

PACKAGE = Path(dse.__file__).parent
HOME = PACKAGE / "model" / "stages.py"
NAMES = frozenset(STAGES) | frozenset(StageCosts._fields)
"""Every stage name: the breakdown's and the raw costs' (the keys of ``breakdown_s`` and
``stages_s``)."""


def stage_literals(source: str, filename: str = "<source>") -> list[tuple[int, str]]:
    """(line, name) of every string constant in ``source`` that is exactly a stage name (a
    docstring or a longer string containing one does not count)."""
    tree = ast.parse(source, filename=filename)
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in NAMES]


def test_the_finder_sees_a_planted_name() -> None:
    planted = 'x = t["emb_fwd"]\nif b == "host_pcie":\n    """host_pcie in prose"""\n'
    assert stage_literals(planted) == [(1, "emb_fwd"), (2, "host_pcie")]
    assert stage_literals('label = "embedding forward (HBM)"') == []


def test_no_stage_name_is_spelled_outside_its_home() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == HOME:
            continue
        found += [f"{path.relative_to(PACKAGE.parent)}:{line}: {name!r}"
                  for line, name in stage_literals(path.read_text(encoding="utf-8"), str(path))]
    assert not found, "stage names spelled outside dse/model/stages.py:\n" + "\n".join(found)
    assert stage_literals(HOME.read_text(encoding="utf-8")), "the home itself names them"


def test_stage_is_its_name() -> None:
    assert [str(s) for s in Stage] == list(STAGES) == list(Breakdown._fields)
    assert Stage.host_pcie == "host_pcie" and hash(Stage.host_pcie) == hash("host_pcie")
    assert json.dumps({Stage.overhead: 1.0}) == '{"overhead": 1.0}'
    assert all(type(s) is str for s in STAGES)


def test_costs_take_each_part_by_its_name() -> None:
    # Distinct powers of two: a part that lands in another field shows in that field's value.
    dense = DenseTimes(bottom_fwd=1.0, bottom_bwd=2.0, top_fwd=4.0, top_bwd=8.0, top_wgrad=16.0,
                       optimizer=32.0)
    emb = EmbeddingTimes(emb_fwd=64.0, emb_bwd=128.0, host_fwd=256.0, host_bwd=512.0)
    costs = StageCosts.of(dense, emb, LinkTimes(fabric=1024.0, network=2048.0),
                          LinkTimes(fabric=4096.0, network=8192.0), allreduce=2.0**14,
                          allreduce_exposed=2.0**15, overhead=2.0**16, input_s=2.0**17)
    expected = {**dense._asdict(), **emb._asdict(), "a2a_fabric": 1024.0, "a2a_network": 2048.0,
                "keys_fabric": 4096.0, "keys_network": 8192.0, "allreduce": 2.0**14,
                "allreduce_exposed": 2.0**15, "overhead": 2.0**16, "input": 2.0**17}
    assert costs.as_dict() == expected
    assert list(costs.as_dict()) == list(StageCosts._fields)
    assert costs.total == 2.0**18 - 1.0


def test_addition_and_totals() -> None:
    a = StageCosts.zero()._replace(emb_fwd=1.5, a2a_network=2.0)
    b = StageCosts.zero()._replace(emb_fwd=0.25, top_wgrad=3.0)
    s = a + b
    assert (s.emb_fwd, s.a2a_network, s.top_wgrad, s.total) == (1.75, 2.0, 3.0, 6.75)
    assert (a + a).top_wgrad is None and "top_wgrad" not in (a + a).as_dict()
    x = Breakdown.of({Stage.dense_compute: 2.0, Stage.alltoall_network: 3.0}, input_exposed=0.5)
    y = x + x
    assert y.as_dict() == {**dict.fromkeys(STAGES, 0.0), "dense_compute": 4.0, "alltoall_network": 6.0,
                           "input_exposed": 1.0}
    assert (y.total, y.bottleneck) == (11.0, "alltoall_network")
    assert Breakdown.of({}, 0.0).bottleneck == "dense_compute"  # the first of equal stages


def test_faster_divides_a_stage_s_parts_only() -> None:
    c = StageCosts.zero()._replace(a2a_fabric=4.0, keys_fabric=2.0, a2a_network=8.0, top_fwd=1.0)
    f = c.faster(Stage.alltoall_fabric, 2.0)
    assert (f.a2a_fabric, f.keys_fabric, f.a2a_network, f.top_fwd, f.top_wgrad) == (2.0, 1.0, 8.0, 1.0, None)
    assert set(STAGE_PARTS) == set(STAGES)


@pytest.mark.parametrize(("workload", "system", "overrides"), [
    ("mlperf-dlrm-v1", "dgx-a100", ()),
    ("mlperf-dlrm-dcnv2", "dgx-h100", (("nodes", 16),)),
])
def test_the_json_keys_stay(workload: str, system: str, overrides: tuple[tuple[str, object], ...]) -> None:
    ev = evaluate(load_workload(workload), load_system(system, overrides))
    out = json.loads(json.dumps(ev.to_dict()))
    assert list(out["breakdown_s"]) == list(STAGES)
    overlapped = ev.plan.devices > 1 and ev.system.spec.software.overlap_weight_gradients
    assert list(out["stages_s"]) == [f for f in StageCosts._fields if overlapped or f != "top_wgrad"]
    assert out["bottleneck"] in STAGES and type(ev.bottleneck) is str
    assert math.isclose(ev.timing.breakdown.total, ev.step_time_s, rel_tol=1e-12)
    assert out["stages_s"]["a2a_fabric"] == ev.timing.stages.a2a_fabric
