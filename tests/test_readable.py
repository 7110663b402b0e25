"""What a person reads (issue 18): the placement plan of ``dse evaluate --plan``, ...

Each test drives the CLI as a user would and checks what they read against the model's own numbers.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dse.calibration.parameters import load_calibration
from dse.cli import app
from dse.model.evaluate import evaluate
from dse.model.system import load_system
from dse.model.workload import load_workload
from dse.outputs.plan import plan_summary

runner = CliRunner()
NARROW = {"COLUMNS": "80"}


def test_plan_json_lists_every_table_and_its_bytes() -> None:
    result = runner.invoke(app, ["evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-dcnv2",
                                 "--set", "nodes=16", "--plan", "--json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)["plan"]
    assert [t["table"] for t in plan["tables"]] == list(range(26))
    assert len(plan["devices"]) == 128
    for t in plan["tables"]:
        assert t["sharding"] in ("replicated", "table_wise", "column_wise", "row_wise")
        assert set(t["tiers"]) <= {"hbm", "host", "cache"} and t["tiers"]
        assert sum(t["bytes_by_device"].values()) == pytest.approx(t["size_bytes"] * t["copies"],
                                                                     rel=1e-12)
        assert sorted(int(d) for d in t["bytes_by_device"]) == t["devices"]
        assert t["copies"] == (128 if t["sharding"] == "replicated" else 1)
    assert sum(t["embedding_share"] for t in plan["tables"]) == pytest.approx(1.0)
    kinds = {t["sharding"] for t in plan["tables"]}
    assert {"replicated", "column_wise", "row_wise"} <= kinds
    assert any(t["hot_rows"] for t in plan["tables"])


def test_plan_devices_match_the_step() -> None:
    """The busiest device's embedding and all-to-all seconds are the step's stages."""
    wl, sysm = load_workload("mlperf-dlrm-dcnv2"), load_system("dgx-h100", (("nodes", 16),))
    ev = evaluate(wl, sysm)
    summary = plan_summary(ev, load_calibration())
    st = ev.timing.stages_s
    emb = max(st["emb_fwd"], st["host_fwd"]) + max(st["emb_bwd"], st["host_bwd"])
    assert max(d.embedding_s for d in summary.devices) == pytest.approx(emb, rel=1e-12)
    a2a = 2 * max(st["a2a_fabric"], st["a2a_network"])
    assert max(d.alltoall_s for d in summary.devices) == pytest.approx(a2a, rel=1e-12)
    assert [d.hbm_used_gb * 1e9 for d in summary.devices] == pytest.approx(ev.plan.hbm_used_bytes)


def test_plan_host_tiers() -> None:
    """A plan with host-resident tables shows their tier and the node's DDR."""
    ev = evaluate(load_workload("zion-2019"), load_system("zion"))
    summary = plan_summary(ev, load_calibration())
    for t in summary.tables:
        # Each column-wise chunk keeps its own row-wise optimizer state (zion-2019's optimizer).
        held = sum(t.bytes_by_device.values())
        assert t.size_bytes * t.copies * (1 - 1e-12) <= held <= t.size_bytes * t.copies * 1.03
        if t.sharding != "column_wise":
            assert held == pytest.approx(t.size_bytes * t.copies, rel=1e-12)
    tiers = {tier for t in summary.tables for tier in t.tiers}
    assert tiers & {"host", "cache"}
    assert max(d.ddr_used_gb for d in summary.devices) > 0


def test_plan_printed() -> None:
    result = runner.invoke(app, ["evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-dcnv2",
                                 "--set", "nodes=16", "--plan"], env=NARROW)
    assert result.exit_code == 0, result.output
    assert "placement by table" in result.stdout and "placement by device" in result.stdout
    assert "column-wise" in result.stdout and "all 128" in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
