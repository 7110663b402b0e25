"""What binds the step, checked (issue 27, item 4): the published per-stage breakdowns of
``dse/data/stage_breakdowns.csv`` set beside the model's critical-path shares.

Every matched row is evaluated; its status (agree / disagree) must be the one the model earns
now, so a model change that moves a binding stage fails here until the data file and
docs/validation.md say so.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dse.calibration.breakdowns import (
    COLUMNS,
    SHARE_TOLERANCE,
    compare,
    compare_all,
    load_breakdowns,
    markdown_lines,
)
from dse.cli import app
from dse.errors import DseInputError
from dse.model.stages import STAGES

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()


def test_the_file_holds_three_sources_each_with_its_reference_and_a_reason_for_every_disagreement() -> None:
    rows = load_breakdowns()
    assert len({r.url for r in rows}) >= 3
    for r in rows:
        assert r.url.startswith("https://") and r.reference and r.published
        assert r.status == "agree" or len(r.note) > 80, r.id  # a disagreement is explained
    assert sum(r.status != "unmatched" for r in rows) >= 3


def test_every_matched_case_earns_its_status_and_its_shares_add_to_one() -> None:
    comparisons = compare_all()
    assert len(comparisons) >= 3
    for c in comparisons:
        assert tuple(c.model_shares) == STAGES
        assert all(s >= 0 for s in c.model_shares.values())
        assert math.isclose(sum(c.model_shares.values()), 1.0, rel_tol=1e-12), c.row.id
        assert c.model_shares[c.model_binding] == max(c.model_shares.values())
        assert c.agrees == (c.row.status == "agree"), (
            f"{c.row.id}: the model now {'agrees' if c.agrees else 'disagrees'} (binds "
            f"{c.model_binding}, shares {c.model_shares}); update dse/data/stage_breakdowns.csv "
            "and docs/validation.md")
    assert any(c.row.status == "agree" for c in comparisons)


def test_the_two_node_exchange_share_is_both_all_to_alls_over_the_step() -> None:
    """Hand-checked: on two nodes with one 100 Gb/s NIC each, the forward and the backward
    all-to-all over the network both lie on the critical path (nothing overlaps them but the
    bottom MLP, far shorter), so the stage's share is 2 x one all-to-all / the step."""
    row = next(r for r in load_breakdowns() if r.id == "dlrm356-torchrec-2x8-a100-100g")
    c = compare(row)
    from dse import evaluate, load_system, load_workload

    ev = evaluate(load_workload("mlperf-dlrm-v1", (("global_batch", 32768), ("precision", "fp32"))),
                  load_system("dgx-a100", (("software.hot_embedding_replication", False), ("nodes", 2),
                                           ("node.nics", 1), ("node.nic_gbit_s", 100))))
    one = ev.timing.stages.a2a_network
    assert one > 10 * ev.timing.stages.bottom_fwd
    assert math.isclose(c.model_shares["alltoall_network"], 2 * one / ev.timing.step_s, rel_tol=1e-12)
    assert abs(c.model_shares["alltoall_network"] - row.shares["alltoall_network"]) <= SHARE_TOLERANCE


def test_docs_validation_holds_the_section_the_code_writes() -> None:
    rows = load_breakdowns()
    section = "\n".join(markdown_lines(rows, compare_all(rows)))
    doc = (ROOT / "docs" / "validation.md").read_text(encoding="utf-8")
    assert section in doc, "regenerate the section: dse validate --forward --markdown docs/validation.md"
    assert doc.index("## What binds the step") < doc.index("## Analysis")
    for r in rows:
        assert r.url in doc and r.id in doc


def test_validate_reports_the_breakdowns_in_json_and_on_the_console() -> None:
    result = runner.invoke(app, ["validate", "--no-loo", "--json"])
    assert result.exit_code == 0, result.output
    got = {b["id"]: b for b in json.loads(result.stdout)["stage_breakdowns"]}
    assert set(got) == {r.id for r in load_breakdowns() if r.system}
    two = got["dlrm356-torchrec-2x8-a100-100g"]
    assert two["published_binding"] == two["model_binding"] == "alltoall_network"
    assert math.isclose(sum(two["model_shares"].values()), 1.0, rel_tol=1e-12)
    text = runner.invoke(app, ["validate", "--no-loo"], env={"COLUMNS": "250"}).stdout
    assert "breakdown naumov2019-fig6-gpu: binds embedding_memory (model dense_compute)" in text


@pytest.mark.parametrize(("column", "value", "key"), [
    ("published_shares", "alltoall_fabric=0.5;dense=0.2", "published_shares"),
    ("published_shares", "dense_compute=1.5", "published_shares"),
    ("published_binding", "network", "published_binding"),
    ("status", "maybe", "status"),
    ("note", "", "note"),
    ("published_step_ms", "-3", "published_step_ms"),
])
def test_a_bad_row_is_one_error_naming_the_file_line_and_column(
        tmp_path: Path, column: str, value: str, key: str) -> None:
    good = (ROOT / "dse" / "data" / "stage_breakdowns.csv").read_text(encoding="utf-8")
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(good)))
    bad = next(r for r in rows if r["status"] == "disagree")
    bad[column] = value
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path = tmp_path / "b.csv"
    path.write_text(out.getvalue(), encoding="utf-8")
    with pytest.raises(DseInputError) as err:
        load_breakdowns(path)
    assert str(path) in str(err.value) and err.value.key == key and "\n" not in str(err.value)


def test_a_wrong_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text("id,source\nx,y\n", encoding="utf-8")
    with pytest.raises(DseInputError, match="header"):
        load_breakdowns(path)
