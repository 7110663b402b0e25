"""``dse show KIND NAME`` (a file as it is, saying where it came from, that loads back to the same
thing) and ``dse init [--from STUDY]`` (an editable study folder, by default today's nodes),
with real files in temporary folders."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dse.cli import app
from dse.model.system import load_system_spec, system_spec_from_mapping
from dse.model.workload import load_workload, workload_from_mapping
from dse.records import SPACE, SYSTEM, WORKLOAD, named_file
from dse.search.study.objective_sets import load_objectives, objectives_from_mapping
from dse.search.study.search_space import load_space, space_from_mapping
from dse.search.study.study_file import load_study_spec, study_objectives, study_space, study_workload

runner = CliRunner()


def _show(*args: str) -> str:
    result = runner.invoke(app, ["show", *args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("kind, name, load, rebuild", [
    ("system", "dgx-b200", load_system_spec, system_spec_from_mapping),
    ("workload", "mlperf-dlrm-dcnv2", load_workload, workload_from_mapping),
    ("space", "todays-nodes", load_space, space_from_mapping),
    ("objectives", "throughput-capex-power", load_objectives, objectives_from_mapping),
])
def test_show_prints_the_packaged_file_that_loads_back_the_same(
        kind: str, name: str, load: Any, rebuild: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ./systems etc.: the packaged presets
    out = _show(kind, name)
    first, rest = out.split("\n", 1)
    path = {"system": SYSTEM, "workload": WORKLOAD, "space": SPACE}.get(kind)
    assert first.startswith("# packaged ") and f" preset {name} (" in first
    if path is not None:
        shipped = named_file(name, path)
        assert first.endswith(f"({shipped.resolve()})")
        assert rest == shipped.read_text(encoding="utf-8")  # the file as shipped, comments kept
    assert rebuild(tomllib.loads(out), "shown") == load(name)


def test_show_prints_the_users_own_file_and_its_copy_is_usable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "systems").mkdir()
    packaged = (SYSTEM.builtin / "dgx-h100.toml").read_text(encoding="utf-8")
    (tmp_path / "systems" / "dgx-h100.toml").write_text(
        packaged.replace("accelerators = 8", "accelerators = 4"), encoding="utf-8")
    out = _show("system", "dgx-h100")
    assert out.startswith(f"# your file {(tmp_path / 'systems' / 'dgx-h100.toml').resolve()}\n")
    assert system_spec_from_mapping(tomllib.loads(out), "shown").node.accelerators == 4

    # Saved as a new system, the copy scores as the preset it was shown from.
    (tmp_path / "systems" / "mine.toml").write_text(_show("system", "dgx-b200"), encoding="utf-8")
    scores = [json.loads(runner.invoke(app, ["evaluate", "-s", s, "-w", "mlperf-dlrm-dcnv2",
                                             "--json"]).output) for s in ("mine", "dgx-b200")]
    assert scores[0]["throughput_samples_per_s"] == scores[1]["throughput_samples_per_s"] > 0
    assert scores[0]["capex_usd"] == scores[1]["capex_usd"] > 0


@pytest.mark.parametrize("args, message", [
    (["sys", "dgx-h100"], "dse: error: show: unknown kind 'sys' (known: system, workload, space, "
                          "objectives, study)"),
    (["workload", "nope"], "dse: error: nope: unknown workload preset (known: "),
])
def test_show_refuses_in_one_line(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["show", *args])
    assert result.exit_code == 2 and result.output.startswith(message)
    assert len(result.output.strip().splitlines()) == 1


def test_init_starts_from_todays_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["init", "mine"])
    assert result.exit_code == 0, result.output
    spec = load_study_spec("mine/my-study.toml")
    assert spec.name == "my-study" and spec.catalog == "mine/my-parts.toml"
    assert study_space(spec).bases() == ("dgx-h100", "hgx-h200", "dgx-b200", "mi300x-x8", "gaudi2-x8")
    shipped = load_workload("mlperf-dlrm-dcnv2")
    assert study_workload(spec).tables == shipped.tables
    assert study_workload(spec).global_batch == shipped.global_batch
    assert [o.metric for o in study_objectives(spec).objectives] == [
        o.metric for o in load_objectives("throughput-capex-power").objectives]


def test_init_from_zion_keeps_the_2019_question(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["init", "old", "--from", "zion-2020"])
    assert result.exit_code == 0, result.output
    spec = load_study_spec("old/my-study.toml")
    assert study_space(spec).bases() == ("zion",)
    assert study_workload(spec).tables == load_workload("zion-2019").tables
    assert "2019-class DLRM" in (tmp_path / "old" / "my-study.toml").read_text(encoding="utf-8")


def test_init_from_a_users_study_copies_its_catalog_and_drops_its_storage(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "parts.toml").write_text("[price]\nxeon-8480p = 9000\n", encoding="utf-8")
    (tmp_path / "a" / "s.toml").write_text(
        'name = "s"\nworkload = "mlperf-dlrm-v1"\nspace = "scale-out"\n'
        'objectives = "throughput-vs-capex"\nbudget = 5\ncatalog = "parts.toml"\n'
        f'storage = "{tmp_path / "shared.journal"}"\n', encoding="utf-8")
    result = runner.invoke(app, ["init", "b", "--from", "a/s.toml"])
    assert result.exit_code == 0, result.output
    spec = load_study_spec("b/my-study.toml")
    assert spec.storage == "" and spec.catalog == "b/my-parts.toml"
    assert (tmp_path / "b" / "my-parts.toml").read_text() == "[price]\nxeon-8480p = 9000\n"


def test_init_from_an_unknown_study_fails_in_one_line(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["init", "x", "--from", "no-such-study"])
    assert result.exit_code == 2 and result.output.startswith(
        "dse: error: no-such-study: unknown study (known: ")
    assert len(result.output.strip().splitlines()) == 1 and not (tmp_path / "x").exists()
