"""Damaged journals (issue 16, item 1), as the fault sweep made them: every kind of damage in the
middle gives one line naming the file and line with exit code 2 and leaves the file as it was;
``dse repair`` writes a clean copy beside it that ``dse run`` resumes; a torn or garbage tail is
cut as before; a lost trial-creation record is detected, not misread.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from study_helpers import complete, finished_journal_study, journal_study
from study_helpers import run_cli as run

from dse.errors import DseInputError
from dse.search.storage.journal_check import check_journal, repair_journal, repaired_path, scan_journal
from dse.search.storage.journal_writing import journal_storage

BUDGET = 12

MIDDLE_DAMAGE: dict[str, bytes] = {
    "garbage": b"garbage!!\n",
    "truncated JSON": b'{"op_code": 6, "worker_id": "w", "trial_id": 1, "sta\n',
    "NUL block": b"\x00" * 4096 + b"\n",
    "invalid UTF-8": b'{"op_code": 2, "study_id": 0, "user_attr": {"k": "\xff\xfe"}}\n',
    "JSON but no record": b"[1, 2, 3]\n",
    "record without its keys": b'{"op_code": 4}\n',
    "broken inside an Optuna-shaped record":
        b'{"op_code":8,"worker_id":"w","trial_id":0,"user_attr":{"a":]}}\n',
}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished study of :data:`BUDGET` trials: its folder holds s.toml and s.journal."""
    return finished_journal_study(tmp_path_factory.mktemp("journal"), BUDGET)


@pytest.fixture
def study(made: Path, tmp_path: Path) -> Path:
    """A fresh copy of the finished study (its study file; the journal beside it)."""
    shutil.copy(made / "s.journal", tmp_path / "s.journal")
    return journal_study(tmp_path, BUDGET)


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def complete_count(journal: Path) -> int:
    import optuna

    return len(complete(optuna.load_study(study_name="s", storage=journal_storage(journal))))


def damage_at(journal: Path, line: int, content: bytes) -> None:
    lines = lines_of(journal)
    journal.write_bytes(b"".join([*lines[:line - 1], content, *lines[line - 1:]]))


@pytest.mark.parametrize("kind", sorted(MIDDLE_DAMAGE))
@pytest.mark.parametrize("command", ["status", "run", "pareto", "export"])
def test_middle_damage_is_one_line_and_nothing_is_written(study: Path, kind: str,
                                                          command: str) -> None:
    journal = study.with_suffix(".journal")
    damage_at(journal, 40, MIDDLE_DAMAGE[kind])
    before = digest(journal)
    extra = ["--out", str(study.with_suffix(".csv"))] if command == "export" else []
    result = run(command, str(study), *extra)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dse: error:"), result.stderr
    assert str(journal) in lines[0] and "line 40" in lines[0] and "dse repair" in lines[0]
    assert digest(journal) == before


@pytest.mark.parametrize("kind", sorted(MIDDLE_DAMAGE))
def test_repair_keeps_every_intact_record_and_run_resumes(study: Path, kind: str) -> None:
    journal = study.with_suffix(".journal")
    intact = lines_of(journal)
    damage_at(journal, 40, MIDDLE_DAMAGE[kind])
    before = digest(journal)
    result = run("repair", str(study))
    assert result.exit_code == 0, result.output
    assert f"{journal}: line 40:" in result.stderr
    assert digest(journal) == before  # the original is left as it was
    fixed = repaired_path(journal)
    assert lines_of(fixed) == intact
    assert complete_count(fixed) == BUDGET
    more = run("run", str(study), "--storage", str(fixed), "--trials", "3", "--quiet",
               "--no-report")
    assert more.exit_code == 0, more.output


def test_lost_trial_creation_is_detected_not_misread(study: Path) -> None:
    journal = study.with_suffix(".journal")
    lines = lines_of(journal)
    creations = [i for i, line in enumerate(lines) if json.loads(line)["op_code"] == 4]
    lost = creations[len(creations) // 2]
    journal.write_bytes(b"".join(lines[:lost] + lines[lost + 1:]))
    result = run("status", str(study))
    assert result.exit_code == 2, result.output
    assert f"line {lost + 1}" in result.stderr and "no earlier record created" in result.stderr
    repaired = run("repair", str(study))
    assert repaired.exit_code == 0, repaired.output
    assert "1 lost trial creation record(s) restored" in repaired.stdout
    assert complete_count(repaired_path(journal)) == BUDGET


@pytest.mark.parametrize("tail", [b"garbage!!\n", b'{"op_code": 6, "trial', b"\x00" * 512,
                                  b"garbage\n\x00\x00\n{not json\n"])
def test_a_damaged_tail_is_cut_and_the_study_resumes(study: Path, tail: bytes) -> None:
    journal = study.with_suffix(".journal")
    intact = journal.read_bytes()
    with journal.open("ab") as f:
        f.write(tail)
    assert run("status", str(study)).exit_code == 0
    assert journal.read_bytes() == intact + tail  # a read-only command leaves it as it is
    result = run("run", str(study), "--trials", "2", "--quiet", "--no-report")
    assert result.exit_code == 0, result.output
    after = journal.read_bytes()
    assert after.startswith(intact) and len(after) > len(intact) and tail not in after


def test_a_file_that_is_no_journal_is_refused_and_left_alone(tmp_path: Path) -> None:
    other = tmp_path / "notes.journal"
    other.write_bytes(b"my notes\nmore notes\n")
    with pytest.raises(DseInputError, match="not an Optuna journal"):
        journal_storage(other)
    assert other.read_bytes() == b"my notes\nmore notes\n"


def test_scan_reports_every_damaged_line(study: Path) -> None:
    journal = study.with_suffix(".journal")
    damage_at(journal, 50, b"garbage\n")
    damage_at(journal, 30, b"\x00\x00\n")
    scan = scan_journal(journal)
    assert [d.line for d in scan.damage] == [30, 51]
    with pytest.raises(DseInputError, match="and 1 more damaged lines"):
        check_journal(journal)
    out, _ = repair_journal(journal)
    assert complete_count(out) == BUDGET


def test_repair_of_a_sound_journal_changes_nothing(study: Path) -> None:
    journal = study.with_suffix(".journal")
    result = run("repair", str(study))
    assert result.exit_code == 0
    assert repaired_path(journal).read_bytes() == journal.read_bytes()


@pytest.mark.parametrize("thorough", [True, False])
def test_a_study_deleted_and_created_again_is_no_damage(tmp_path: Path, thorough: bool) -> None:
    """Optuna numbers a study created again under a deleted one's name as a new study (id 1 here):
    the damage check follows the one replay the snapshot reader follows
    (:class:`dse.search.storage.journal_replay.JournalReplay`), so the new study's trials name a
    study a record created, and the snapshot reads them as Optuna does."""
    import optuna

    from dse.search.storage.journal_snapshot import read_snapshot

    path = tmp_path / "again.journal"
    for round_ in range(2):
        again = optuna.create_study(study_name="again", storage=journal_storage(path))
        again.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2 + round_)
        if round_ == 0:
            optuna.delete_study(study_name="again", storage=journal_storage(path))
    scan = check_journal(path, "again", thorough=thorough)
    assert (scan.damage, scan.tail_bytes, scan.records) == ((), 0, len(lines_of(path)))
    snapshot = read_snapshot(path, cache=False)
    assert snapshot is not None
    assert [s._study_id for s in snapshot.get_all_studies()] == [1]
    assert [t.value for t in snapshot.get_all_trials(1)] == [
        t.value for t in optuna.load_study(study_name="again", storage=journal_storage(path)).trials]
    assert len(snapshot.get_all_trials(1)) == 3
