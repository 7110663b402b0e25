"""A full disk, a read-only file system and a directory without permission (issue 16, item 3):
one line naming the path, exit code 2, and the journal intact and resumable.

The disk is a small tmpfs mounted for the test: it needs root (CAP_SYS_ADMIN); elsewhere those
tests are skipped with that reason.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import FrozenTrial, TrialState
from study_helpers import CHEAP, write_study
from typer.testing import CliRunner, Result

from dse.cli import app

runner = CliRunner()


def run(*args: str) -> Result:
    return runner.invoke(app, list(args), env={"COLUMNS": "250"})


def _mount(where: Path, options: str) -> bool:
    where.mkdir(exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                          capture_output=True)
    return done.returncode == 0


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB tmpfs (about 150 trials of a journal)."""
    disk = tmp_path / "disk"
    if os.geteuid() != 0 or not _mount(disk, "size=1m"):
        pytest.skip("mounting a small tmpfs needs root with CAP_SYS_ADMIN")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _study(folder: Path, journal: Path, budget: int) -> Path:
    return write_study(folder / "s.toml", name="s", **CHEAP, sampler="random", budget=budget,
                       seed=1, storage=str(journal))


def assert_one_line(result: Result, *names: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dse: error:"), result.stderr
    for name in names:
        assert name in lines[0], lines[0]


def test_disk_full_is_one_line_and_the_study_resumes(tmp_path: Path, small_disk: Path) -> None:
    journal = small_disk / "s.journal"
    study = _study(tmp_path, journal, 100_000)
    result = run("run", str(study), "--quiet", "--no-report")
    assert_one_line(result, str(journal), "No space left on device")
    status = run("status", str(study), "--json")
    assert status.exit_code == 0, status.output
    kept = _complete(_stored(journal))
    assert kept and json.loads(status.stdout)["complete"] == len(kept)
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], check=True)
    more = run("run", str(study), "--trials", "5", "--quiet", "--no-report")
    assert more.exit_code == 0, more.output
    # Read back from the journal itself: the trials completed before the disk filled are all
    # there unchanged, five more completed after them, and the budget is the study's.
    resumed = _stored(journal)
    after = _complete(resumed)
    assert len(after) == len(kept) + 5
    for number, trial in kept.items():
        assert (after[number].params, after[number].values) == (trial.params, trial.values)
    assert min(set(after) - set(kept)) > max(kept)
    assert resumed.user_attrs["dse:budget"] == 100_000


def _stored(journal: Path) -> optuna.Study:
    """The study in ``journal``, read with Optuna's own journal storage (not dse's)."""
    return optuna.load_study(study_name="s", storage=JournalStorage(JournalFileBackend(str(journal))))


def _complete(study: optuna.Study) -> dict[int, FrozenTrial]:
    """The completed trials of ``study`` by number."""
    return {t.number: t for t in study.get_trials(states=(TrialState.COMPLETE,))}


def test_a_read_only_file_system_is_one_line(tmp_path: Path, small_disk: Path) -> None:
    made = tmp_path / "made.journal"
    assert run("run", str(_study(tmp_path, made, 4)), "--quiet", "--no-report").exit_code == 0
    journal = small_disk / "s.journal"
    journal.write_bytes(made.read_bytes())  # no file left open: the remount needs none
    before = journal.read_bytes()
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    study = tmp_path / "s.toml"
    _study(tmp_path, journal, 8)
    result = run("run", str(study), "--quiet", "--no-report")
    assert_one_line(result, str(small_disk))
    assert journal.read_bytes() == before
    fresh = _study(tmp_path, small_disk / "new" / "t.journal", 4)
    assert_one_line(run("run", str(fresh), "--quiet", "--no-report"), str(small_disk))


def test_a_directory_without_permission_is_one_line(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores file permissions")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        study = _study(tmp_path, locked / "s.journal", 4)
        assert_one_line(run("run", str(study), "--quiet", "--no-report"), str(locked))
    finally:
        locked.chmod(0o700)
