"""Results independent of the working directory (issue 28 item 1): names in a study's files
resolve beside the file that names them, then among the packaged presets; a study records the
content of every file and system it resolves (``dse:contents``); a run that would resolve a name
to other content stops with one line naming both; the read-only commands work from any folder
and rebuild designs from what the study recorded. All with real files in temporary folders."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import optuna
import pytest
from study_helpers import write_study
from typer.testing import CliRunner

from dse.cli import app
from dse.errors import DseInputError
from dse.model.system import load_system_spec
from dse.records import SYSTEM, WORKLOAD, named_beside, table_digest
from dse.search.study.attribute_keys import CHANGES_KEY, CONTENTS_KEY
from dse.search.study.search_space import load_space
from dse.search.study.study_file import as_recorded, load_study_spec, study_space, study_workload

runner = CliRunner()
PACKAGED = (SYSTEM.builtin / "dgx-h100.toml").read_text(encoding="utf-8")


def _system(folder: Path, accelerators: int, name: str = "dgx-h100") -> Path:
    """``folder/systems/NAME.toml``: the packaged DGX H100 with ``accelerators`` GPUs a node."""
    text = PACKAGED.replace("accelerators = 8", f"accelerators = {accelerators}")
    assert text != PACKAGED or accelerators == 8
    (folder / "systems").mkdir(parents=True, exist_ok=True)
    path = folder / "systems" / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _project(folder: Path, accelerators: int, journal: Path) -> Path:
    """A study folder: study, space over ``dgx-h100`` (its own, of ``accelerators`` GPUs), all
    stored in ``journal``."""
    folder.mkdir(parents=True, exist_ok=True)
    _system(folder, accelerators)
    (folder / "space.toml").write_text(
        'name = "own"\nbase_system = "dgx-h100"\n'
        '[parameters.nodes]\ntype = "int"\nlow = 1\nhigh = 4\n', encoding="utf-8")
    return write_study(folder / "study.toml", name="two", workload="mlperf-dlrm-v1",
                       space="space.toml", objectives="throughput-vs-capex", sampler="random",
                       budget=20, seed=1, storage=str(journal))


def _run(study: Path, *more: str) -> tuple[int, str]:
    result = runner.invoke(app, ["run", str(study), "--trials", "2", "--no-report", "--quiet", *more])
    return result.exit_code, result.output


def _stored(journal: Path) -> optuna.Study:
    """The study as Optuna's own journal storage reads it."""
    backend = optuna.storages.journal.JournalFileBackend(str(journal))
    return optuna.load_study(study_name="two", storage=optuna.storages.JournalStorage(backend))


def _contents(journal: Path) -> dict[str, dict[str, str]]:
    study = _stored(journal)
    return json.loads(study.user_attrs[CONTENTS_KEY])  # type: ignore[no-any-return]


def test_two_folders_with_one_name_refuse_with_one_line(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    journal = tmp_path / "shared" / "two.journal"
    journal.parent.mkdir()
    four = _project(tmp_path / "a", 4, journal)
    eight = _project(tmp_path / "b", 8, journal)
    monkeypatch.chdir(tmp_path)
    code, out = _run(four)
    assert code == 0, out
    recorded = _contents(journal)["system dgx-h100"]
    assert recorded["path"] == str((tmp_path / "a" / "systems" / "dgx-h100.toml").resolve())
    assert "accelerators = 4" in recorded["text"]
    assert recorded["sha256"] == table_digest(tomllib.loads(recorded["text"]))

    code, out = _run(eight)
    lines = out.strip().splitlines()
    assert code == 2 and len(lines) == 1, out
    line = lines[0]
    assert line.startswith("dse: error: two: space: system dgx-h100 resolves to ")
    assert str((tmp_path / "b" / "systems" / "dgx-h100.toml").resolve()) in line
    assert str((tmp_path / "a" / "systems" / "dgx-h100.toml").resolve()) in line
    assert recorded["sha256"][:12] in line and "--force" in line
    # Nothing was added by the refused run: still the first run's two trials, 4 GPUs recorded.
    study = _stored(journal)
    assert len(study.trials) == 2 and "accelerators = 4" in _contents(journal)["system dgx-h100"]["text"]

    # Forced, the change is logged and the new content recorded.
    code, out = _run(eight, "--force")
    assert code == 0, out
    study = _stored(journal)
    change = study.user_attrs[CHANGES_KEY][-1]
    assert change["changed"] == ["system dgx-h100"] and change["from_trial"] == 2
    assert "accelerators = 8" in _contents(journal)["system dgx-h100"]["text"]


def test_the_working_directory_does_not_change_what_a_name_means(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    journal = tmp_path / "a" / "two.journal"
    study = _project(tmp_path / "a", 4, journal)
    decoy = tmp_path / "decoy"
    _system(decoy, 2)  # ./systems/dgx-h100.toml of the working directory: not the study's
    for cwd in (tmp_path, decoy):
        monkeypatch.chdir(cwd)
        assert load_study_spec(str(study)) and study_space(load_study_spec(str(study))) \
            .base_spec().node.accelerators == 4
        code, out = _run(study)
        assert code == 0, out
    done = [t for t in _stored(journal).trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(done) >= 3  # two runs of two trials (a repeated design is pruned)
    assert all(t.user_attrs["accelerators"] == 4 * t.params["nodes"] for t in done)
    # A name typed on the command line still means the working directory's file.
    assert load_system_spec(str(named_beside("dgx-h100", SYSTEM, None))).node.accelerators == 2


def test_read_only_commands_from_another_folder_use_what_was_recorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    journal = tmp_path / "a" / "two.journal"
    study = _project(tmp_path / "a", 4, journal)
    monkeypatch.chdir(tmp_path)
    assert _run(study)[0] == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    relative = "../a/study.toml"
    status = runner.invoke(app, ["status", relative, "--json"])
    assert status.exit_code == 0, status.output
    assert json.loads(status.output)["complete"] == 2
    front = runner.invoke(app, ["pareto", relative, "--json"])
    assert front.exit_code == 0 and json.loads(front.output), front.output
    assert runner.invoke(app, ["export", relative, "--out", "all.csv"]).exit_code == 0
    assert len((elsewhere / "all.csv").read_text().splitlines()) == 3  # header and two trials
    report = runner.invoke(app, ["report", relative, "--out", str(elsewhere)])
    assert report.exit_code == 0, report.output
    assert (elsewhere / "two.html").stat().st_size > 0
    plot = runner.invoke(app, ["plot", relative, "--out", "front.html"])
    assert plot.exit_code == 0 and (elsewhere / "front.html").is_file(), plot.output

    # The system file edited after the run: the read-only view keeps the recorded 4 GPUs.
    _system(tmp_path / "a", 8)
    spec = load_study_spec(relative)
    assert study_space(spec).base_spec().node.accelerators == 8
    stored = _stored(journal)
    recorded = as_recorded(spec, stored.user_attrs)
    assert study_space(recorded).base_spec().node.accelerators == 4
    assert study_space(recorded).systems["dgx-h100"].source.endswith("(as the study recorded it)")


def test_a_path_choice_resolves_beside_the_space_file(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    spaces = tmp_path / "proj" / "spaces"
    spaces.mkdir(parents=True)
    node = _system(tmp_path / "proj", 4, "my-node")
    (spaces / "mine.toml").write_text(
        'name = "mine"\nbase_system = "dgx-h100"\n[parameters.system]\ntype = "categorical"\n'
        'choices = ["dgx-h100", "../systems/my-node.toml"]\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # neither the space's folder nor its project's
    space = load_space(str(spaces / "mine.toml"))
    assert space.systems["../systems/my-node.toml"].path == str(node.resolve())
    assert space.system_spec("../systems/my-node.toml").node.accelerators == 4
    # dgx-h100 is not beside the space: the packaged preset.
    assert space.systems["dgx-h100"].path == str((SYSTEM.builtin / "dgx-h100.toml").resolve())
    (spaces / "bad.toml").write_text(
        'name = "bad"\nbase_system = "no-such-node"\n[parameters]\n', encoding="utf-8")
    with pytest.raises(DseInputError) as info:
        load_space(str(spaces / "bad.toml"))
    assert str(info.value).startswith(f"{spaces / 'bad.toml'}: base_system: 'no-such-node': ")
    assert "unknown system preset beside" in str(info.value)


def test_a_project_layout_finds_its_systems_folder(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # search_spaces/x.toml names "dgx-h100": the project's systems/ folder, from any directory.
    (tmp_path / "search_spaces").mkdir()
    (tmp_path / "search_spaces" / "x.toml").write_text(
        'name = "x"\nbase_system = "dgx-h100"\n[parameters.nodes]\ntype = "int"\nlow = 1\nhigh = 2\n',
        encoding="utf-8")
    _system(tmp_path, 4)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert load_space(str(tmp_path / "search_spaces" / "x.toml")).base_spec().node.accelerators == 4


def test_a_workload_name_beside_the_study_and_its_change_named_with_both_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = (WORKLOAD.builtin / "mlperf-dlrm-v1.toml").read_text(encoding="utf-8")
    journal = tmp_path / "two.journal"
    studies = []
    for folder, batch in (("a", 32768), ("b", 65536)):
        project = tmp_path / folder
        _project(project, 8, journal)
        (project / "workloads").mkdir()
        text = re.sub(r"(?m)^global_batch = \d+", f"global_batch = {batch}", shipped)
        assert text != shipped
        (project / "workloads" / "mine.toml").write_text(text, encoding="utf-8")
        study = project / "study.toml"
        study.write_text(study.read_text().replace('"mlperf-dlrm-v1"', '"mine"'), encoding="utf-8")
        studies.append(study)
    monkeypatch.chdir(tmp_path)
    assert study_workload(load_study_spec(str(studies[0]))).global_batch == 32768
    assert _run(studies[0])[0] == 0
    code, out = _run(studies[1])
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert out.startswith("dse: error: two: workload: differs from what the stored study was "
                          f"created with (workload: {(tmp_path / 'b' / 'workloads' / 'mine.toml').resolve()}")
    assert f"recorded: {(tmp_path / 'a' / 'workloads' / 'mine.toml').resolve()} (sha256 " in out
