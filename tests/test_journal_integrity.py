"""Damage that leaves valid JSON (issue 30, item 3): a duplicated trial creation line, a deleted
state record and a changed digit, which Optuna's own reading accepts and misreads, are found by
dse's check of each record (:mod:`dse.search.storage.journal_format`), refused by ``dse status`` with one line
naming the line, and repaired by ``dse repair``; journals of plain Optuna and of earlier dse (no
checks) still read, and a dse run appending to them checks its own records. Read-only commands
never write to a journal, and read a damaged one in a read-only folder."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState
from study_helpers import ROOT, finished_journal_study, journal_study
from study_helpers import run_cli as run

from dse.search._optuna import JournalOperation
from dse.search.storage.journal_check import repair_journal, repaired_path, scan_journal
from dse.search.storage.journal_format import RecordNumbers, checks_hold, read_check, record_line
from dse.search.storage.journal_snapshot import read_snapshot

BUDGET = 12
OP = JournalOperation


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished study of :data:`BUDGET` trials (two baselines enqueued first), run by dse."""
    return finished_journal_study(tmp_path_factory.mktemp("integrity"), BUDGET)


def copy_study(made: Path, folder: Path) -> Path:
    shutil.copy(made / "s.journal", folder / "s.journal")
    return journal_study(folder, BUDGET)


@pytest.fixture
def study(made: Path, tmp_path: Path) -> Path:
    """A fresh copy of the finished study (its study file; the journal beside it)."""
    return copy_study(made, tmp_path)


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in lines_of(path)]


def optuna_reading(path: Path) -> list[optuna.trial.FrozenTrial]:
    """The trials Optuna's own replay reads from ``path`` (no dse check involved)."""
    storage = JournalStorage(JournalFileBackend(str(path)))
    return optuna.load_study(study_name="s", storage=storage).get_trials()


def dse_reading(path: Path) -> list[optuna.trial.FrozenTrial]:
    snapshot = read_snapshot(path, cache=False)
    assert snapshot is not None
    return optuna.load_study(study_name="s", storage=snapshot).get_trials()


def refused(study: Path, line: int, words: str) -> None:
    """``dse status`` refuses the study in one line naming the journal, ``line`` and ``words``."""
    journal = study.with_suffix(".journal")
    before = journal.read_bytes()
    result = run("status", str(study))
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dse: error:"), result.stderr
    assert f"{journal}: line {line}:" in lines[0] and words in lines[0], lines[0]
    assert "dse repair" in lines[0]
    assert journal.read_bytes() == before


def every_line_checked(path: Path) -> bool:
    return all((c := read_check(line.rstrip(b"\n"))) is not None and c[1] and c[0] == i
               for i, line in enumerate(lines_of(path)))


def test_every_record_dse_writes_is_numbered_and_checked(made: Path) -> None:
    journal = made / "s.journal"
    assert every_line_checked(journal)
    assert not scan_journal(journal).damage
    # Optuna reads the same study from it: the check is one more key its replay ignores.
    assert [t.params for t in optuna_reading(journal)] == [t.params for t in dse_reading(journal)]


def test_a_duplicated_trial_creation_line_is_found_and_repaired(study: Path) -> None:
    journal = study.with_suffix(".journal")
    intact = lines_of(journal)
    creation = next(i for i, r in enumerate(records(journal)) if r["op_code"] == OP.CREATE_TRIAL
                    and r.get("user_attrs", {}).get("baseline"))  # type: ignore[attr-defined]
    journal.write_bytes(b"".join(intact[:creation + 1] + intact[creation:]))
    # What Optuna reads: one trial more, a baseline given its neighbour's design, the last
    # trial left RUNNING (the misreading the issue reports).
    misread = optuna_reading(journal)
    assert len(misread) == BUDGET + 1 and misread[-1].state == TrialState.RUNNING
    refused(study, creation + 2, f"a copy of line {creation + 1}")
    resumed = run("run", str(study), "--trials", "1", "--quiet", "--no-report")
    assert resumed.exit_code == 2 and f"line {creation + 2}" in resumed.stderr  # nothing appended
    result = run("repair", str(study))
    assert result.exit_code == 0, result.output
    assert f"line {creation + 2}: a copy of line {creation + 1}" in result.stderr
    assert lines_of(repaired_path(journal)) == intact


def test_a_deleted_state_record_is_found_and_its_trial_retried(study: Path) -> None:
    journal = study.with_suffix(".journal")
    lines = lines_of(journal)
    finals = [i for i, r in enumerate(records(journal)) if r["op_code"] == OP.SET_TRIAL_STATE_VALUES
              and r["state"] == TrialState.COMPLETE.value]
    lost = finals[len(finals) // 2]
    journal.write_bytes(b"".join(lines[:lost] + lines[lost + 1:]))
    misread = optuna_reading(journal)  # Optuna: a finished trial shown RUNNING, nothing said
    assert [t.state for t in misread].count(TrialState.RUNNING) == 1
    refused(study, lost + 1, "1 record(s) lost just before this line")
    result = run("repair", str(study))
    assert result.exit_code == 0, result.output
    fixed = repaired_path(journal)
    assert every_line_checked(fixed) and not scan_journal(fixed).damage
    # The trial whose end was lost is RUNNING in the copy; the run fails it, retries its design
    # and ends at the budget.
    more = run("run", str(study), "--storage", str(fixed), "--quiet", "--no-report")
    assert more.exit_code == 0, more.output
    trials = dse_reading(fixed)
    assert sum(t.state == TrialState.COMPLETE for t in trials) == BUDGET
    assert [t.state for t in trials].count(TrialState.FAIL) == 1
    assert not any(t.state == TrialState.RUNNING for t in trials)


def test_a_changed_digit_is_found_and_its_trial_failed(study: Path) -> None:
    journal = study.with_suffix(".journal")
    lines = lines_of(journal)
    original = dse_reading(journal)
    at = next(i for i, r in enumerate(records(journal)) if r["op_code"] == OP.SET_TRIAL_STATE_VALUES
              and r["state"] == TrialState.COMPLETE.value)
    match = re.search(rb'"values":\[(-?\d)', lines[at])
    assert match is not None
    digit = match[1][-1:]
    lines[at] = lines[at][:match.end() - 1] + (b"8" if digit != b"8" else b"7") + lines[at][match.end():]
    journal.write_bytes(b"".join(lines))
    trial = records(journal)[at]["trial_id"]
    assert isinstance(trial, int)
    assert optuna_reading(journal)[trial].values != original[trial].values  # Optuna: accepted
    refused(study, at + 1, "altered since dse wrote it")
    result = run("repair", str(study))
    assert result.exit_code == 0, result.output
    fixed = repaired_path(journal)
    assert not scan_journal(fixed).damage
    trials = dse_reading(fixed)
    assert trials[trial].state == TrialState.FAIL  # never read as complete with a wrong value
    assert sum(t.state == TrialState.COMPLETE for t in trials) == BUDGET - 1


def strip_checks(data: bytes) -> bytes:
    """A journal as Optuna (or dse before the checks) writes it."""
    return re.sub(rb',"dse_check":\[\d+,\d+\]\}$', b"}", data, flags=re.MULTILINE)


def test_journals_without_checks_read_and_a_run_checks_what_it_adds(study: Path) -> None:
    journal = study.with_suffix(".journal")
    old = strip_checks(journal.read_bytes())
    assert b"dse_check" not in old
    journal.write_bytes(old)
    assert not scan_journal(journal).damage
    assert run("status", str(study)).exit_code == 0
    # A duplicated line of such a journal is not dse's to find (Optuna accepts it too)...
    lines = lines_of(journal)
    result = run("run", str(study), "--trials", "3", "--quiet", "--no-report")
    assert result.exit_code == 0, result.output
    added = lines_of(journal)[len(lines):]
    assert added and all(read_check(line.rstrip(b"\n")) == (len(lines) + i, True)
                         for i, line in enumerate(added))
    # ...but one of the checked records that followed is: numbered by the lines before it.
    journal.write_bytes(b"".join(lines[:-1] + added))
    refused(study, len(lines), "1 record(s) lost just before this line")


WRITER = """
import sys, optuna
from pathlib import Path
from dse.search.storage.journal_writing import journal_storage
optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.create_study(study_name="c", storage=journal_storage(Path(sys.argv[1])),
                            load_if_exists=True)
for _ in range(150):
    trial = study.ask()
    trial.suggest_float("x", 0.0, 1.0)
    trial.set_user_attr("writer", sys.argv[2])
    study.tell(trial, 1.0)
"""


def test_two_writers_at_once_number_their_lines_in_file_order(tmp_path: Path) -> None:
    """Two processes appending to one journal at the same time, each under dse's lock."""
    journal = tmp_path / "c.journal"
    optuna.create_study(study_name="c", storage=JournalStorage(JournalFileBackend(str(journal))))
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(journal), name],
                                env={**os.environ, "PYTHONPATH": str(ROOT)}) for name in "ab"]
    assert [w.wait(timeout=300) for w in writers] == [0, 0]
    written = [r["user_attr"]["writer"] for r in records(journal)
               if r["op_code"] == OP.SET_TRIAL_USER_ATTR]
    assert sorted(written) == ["a"] * 150 + ["b"] * 150
    switches = sum(x != y for x, y in itertools.pairwise(written))
    assert switches > 2, "the two writers did not write at the same time"
    assert not scan_journal(journal).damage
    checked = lines_of(journal)[1:]  # the first line: the study, created by plain Optuna
    assert all(read_check(line.rstrip(b"\n")) == (i + 1, True) for i, line in enumerate(checked))


def numbered_journal(*numbers: int | None) -> bytes:
    """A journal of trial attribute records, each checked as line ``n`` (or unchecked: None)."""
    log = {"op_code": OP.SET_STUDY_USER_ATTR, "worker_id": "w", "study_id": 0, "user_attr": {"k": 1}}
    head = [record_line({"op_code": OP.CREATE_STUDY, "worker_id": "w", "study_name": "s",
                         "directions": [1]}, 0)]
    return b"".join(head + [record_line(log, n) if n is not None else
                            json.dumps(log, separators=(",", ":")).encode() + b"\n"
                            for n in numbers])


@pytest.mark.parametrize(("numbers", "damaged"), [
    ((1, 2, 3), []),
    ((1, None, 2, 4), []),  # a foreign writer's line slipped in between a count and its write
    ((None, None, 1, 4, 5), []),  # two slipped in before the count of line 1's write
    ((1, 3, 4), [3]),  # line 2 lost
    ((1, None, 3, 4), []),  # a lost line hidden by an unchecked one (it cannot be told apart)
    ((1, 2, 2, 3), [4]),  # a copy
    ((1, 2, 5, 6), [4]),  # two lost
    ((1, 3, 2, 4), [3]),  # two records swapped: the one out of the rising run, nothing lost
    ((2, 1, 3), [2]),
])
def test_record_numbers(tmp_path: Path, numbers: tuple[int | None, ...], damaged: list[int]) -> None:
    path = tmp_path / "n.journal"
    path.write_bytes(numbered_journal(*numbers))
    assert [d.line for d in scan_journal(path).damage] == damaged
    assert checks_hold(path.read_bytes(), 0, 0, RecordNumbers()) == (not damaged)
    assert (read_snapshot(path, cache=False) is None) == bool(damaged)


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("command", ["status", "pareto", "export", "report", "plot"])
def test_read_only_commands_never_write_a_journal(study: Path, command: str) -> None:
    journal = study.with_suffix(".journal")
    with journal.open("ab") as f:
        f.write(b'{"op_code":6,"worker_id":"w","trial_id":3,"sta')  # torn by power loss
    before = journal.read_bytes()
    out = study.parent / "out"
    out.mkdir()
    extra = {"export": ["--out", str(out / "t.csv")], "report": ["--out", str(out / "r.html")],
             "plot": ["--out", str(out / "p.html")]}.get(command, [])
    result = run(command, str(study), *extra)
    assert result.exit_code == 0, result.output
    assert journal.read_bytes() == before


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(a writable folder, the same folder mounted read-only): root ignores file modes, so only a
    read-only mount makes a folder read-only to it."""
    rw, ro = tmp_path / "rw", tmp_path / "ro"
    rw.mkdir()
    ro.mkdir()
    mounted = subprocess.run(["mount", "--bind", str(rw), str(ro)], capture_output=True)
    if mounted.returncode:
        pytest.skip(f"cannot bind-mount here: {mounted.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(ro)], check=True)
        yield rw, ro
    finally:
        subprocess.run(["umount", str(ro)], check=True)


def test_a_damaged_journal_reads_in_a_read_only_folder(made: Path,
                                                      read_only: tuple[Path, Path]) -> None:
    rw, ro = read_only
    copy_study(made, rw)
    journal_study(rw, BUDGET, journal=ro / "s.journal")
    with (rw / "s.journal").open("ab") as f:
        f.write(b'{"op_code":6,"worker_id":"w","trial_id":3,"sta')  # torn by power loss
    with pytest.raises(OSError):
        (ro / "probe").write_bytes(b"")  # the mount is read-only, even to root
    before = digests(rw)
    result = run("status", str(rw / "s.toml"), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["complete"] == BUDGET
    assert digests(rw) == before
    # Damage before the tail: still the one line, not a traceback about the read-only folder.
    lines = lines_of(rw / "s.journal")
    (rw / "s.journal").write_bytes(b"".join([*lines[:30], b"garbage\n", *lines[30:]]))
    result = run("status", str(rw / "s.toml"))
    assert result.exit_code == 2 and "line 31" in result.stderr and "dse repair" in result.stderr


# --- Issue 42, item 1: records checked as a sequence ------------------------------------------


def repaired(study: Path) -> bytes:
    """``dse repair``'s copy of the study's journal (the command must succeed)."""
    result = run("repair", str(study))
    assert result.exit_code == 0, result.output
    return repaired_path(study.with_suffix(".journal")).read_bytes()


def test_swapped_lines_are_reordered_not_dropped(study: Path) -> None:
    """Two adjacent records swapped (the sweep's lines 7001 and 7002) read as a lost record and a
    copy before; a trial then lost a parameter in the repaired copy. Now one line names the record
    out of order, and the copy is the journal as dse wrote it, byte for byte."""
    journal = study.with_suffix(".journal")
    intact = lines_of(journal)
    at = next(i for i, r in enumerate(records(journal)) if i > 20 and r["op_code"] == OP.SET_TRIAL_PARAM)
    swapped = [*intact[:at], intact[at + 1], intact[at], *intact[at + 2:]]
    journal.write_bytes(b"".join(swapped))
    refused(study, at + 1, f"dse's record {at + 1} is out of order (it belongs after record {at}, "
            f"line {at + 2})")
    assert len(scan_journal(journal).damage) == 1
    assert repaired(study) == b"".join(intact)  # every parameter of every trial kept


def test_a_record_moved_far_is_one_damaged_line_and_put_back(study: Path) -> None:
    journal = study.with_suffix(".journal")
    intact = lines_of(journal)
    moved = intact[:10] + intact[11:60] + [intact[10]] + intact[60:]
    journal.write_bytes(b"".join(moved))
    scan = scan_journal(journal)
    assert [d.line for d in scan.damage] == [60]
    assert "dse's record 10 is out of order (it belongs after record 9, line 10)" in scan.damage[0].problem
    assert repaired(study) == b"".join(intact)


def test_a_different_record_under_a_repeated_number_is_kept(study: Path) -> None:
    """A record numbered like another but not byte-identical is no copy: refused, and kept by the
    repair (numbered afresh), never dropped."""
    journal = study.with_suffix(".journal")
    intact = lines_of(journal)
    log = {"op_code": OP.SET_STUDY_USER_ATTR, "worker_id": "elsewhere", "study_id": 0,
           "user_attr": {"k": 1}}
    journal.write_bytes(b"".join([*intact[:31], record_line(log, 30), *intact[31:]]))
    refused(study, 32, "numbered like line 31 (dse's record 30) but a different record, so not a copy")
    copy = repaired(study).splitlines(keepends=True)
    assert len(copy) == len(intact) + 1 and b'"worker_id":"elsewhere"' in copy[31]
    assert every_line_checked(repaired_path(journal))


def test_a_record_added_above_dses_first_is_refused_and_dropped(study: Path) -> None:
    """Another study's creation record put above line 1 of a checked journal made every record of
    the study name the other one (status: "0 of None complete", exit 0)."""
    journal = study.with_suffix(".journal")
    intact = journal.read_bytes()
    other = b'{"op_code":0,"worker_id":"x","study_name":"other","directions":[2,1]}\n'
    journal.write_bytes(other + intact)
    refused(study, 1, "added above dse's first record (record 0, written when the journal was "
            "empty), so written by no dse version (it creates study 'other')")
    assert repaired(study) == intact
    assert not checks_hold(other + intact, 0, 0, RecordNumbers())
    assert read_snapshot(journal, cache=False) is None


def unchecked(*logs: dict[str, object]) -> bytes:
    """Records as another tool (plain Optuna, optuna-dashboard) writes them: no dse check."""
    return b"".join(json.dumps(log, separators=(",", ":")).encode() + b"\n" for log in logs)


def test_a_study_created_after_dses_first_is_refused_and_dropped(study: Path) -> None:
    """Unchecked records on dse's own study (optuna-dashboard's notes) are accepted as before; a
    study another tool creates in the journal is refused at its line, and the repaired copy drops
    it and the records naming it, keeping every other line byte for byte."""
    journal = study.with_suffix(".journal")
    intact = journal.read_bytes()
    trials = sum(r["op_code"] == OP.CREATE_TRIAL for r in records(journal))
    notes = unchecked(
        {"op_code": OP.SET_STUDY_SYSTEM_ATTR, "worker_id": "dashboard", "study_id": 0,
         "system_attr": {"dashboard:study_note:0": {"version": 1, "body": "look at 7"}}},
        {"op_code": OP.SET_STUDY_USER_ATTR, "worker_id": "dashboard", "study_id": 0,
         "user_attr": {"reviewed": True}})
    journal.write_bytes(intact + notes)
    assert run("status", str(study)).exit_code == 0
    assert not scan_journal(journal).damage and checks_hold(intact + notes, 0, 0, RecordNumbers())
    snapshot = read_snapshot(journal, cache=False)
    assert snapshot is not None and snapshot.get_study_user_attrs(0)["reviewed"] is True
    other = unchecked(
        {"op_code": OP.CREATE_STUDY, "worker_id": "x", "study_name": "other", "directions": [1]},
        {"op_code": OP.SET_STUDY_USER_ATTR, "worker_id": "x", "study_id": 1, "user_attr": {"a": 1}},
        {"op_code": OP.CREATE_TRIAL, "worker_id": "x", "study_id": 1, "datetime_start": None},
        {"op_code": OP.SET_TRIAL_USER_ATTR, "worker_id": "x", "trial_id": trials,
         "user_attr": {"b": 2}})
    journal.write_bytes(intact + notes + other)
    at = intact.count(b"\n") + 3
    refused(study, at, "creates study 'other' without dse's check, in a journal dse writes (its "
            "first record on line 1): written by no dse version; a repaired copy drops it and "
            "every record naming that study")
    damage = scan_journal(journal).damage
    assert [d.line for d in damage] == [at, at + 1, at + 2, at + 3]
    assert damage[1].problem == (f"names study 'other', created on line {at} without dse's "
                                 "check: a repaired copy drops it with that study")
    assert damage[3].problem.startswith(f"names trial {trials} of study 'other'")
    assert not checks_hold(intact + notes + other, 0, 0, RecordNumbers())
    assert read_snapshot(journal, cache=False) is None
    assert repaired(study) == intact + notes


@pytest.mark.parametrize("worker", ["w", "w\u00f6rker"])  # Optuna's layout; escaped: another
def test_the_records_after_a_dropped_study_keep_their_trials(tmp_path: Path, worker: str) -> None:
    """dse's records written after another tool's study and trial name ids counting them: the
    repaired copy closes the ids up, so each record still names its own trial (checks renewed)."""
    path = tmp_path / "r.journal"
    lines = [record_line({"op_code": OP.CREATE_STUDY, "worker_id": "w", "study_name": "s",
                          "directions": [1]}, 0),
             unchecked({"op_code": OP.CREATE_STUDY, "worker_id": "x", "study_name": "x",
                        "directions": [1]},
                       {"op_code": OP.CREATE_TRIAL, "worker_id": "x", "study_id": 1,
                        "datetime_start": None})]
    lines += [record_line(log, 3 + i) for i, log in enumerate([
        {"op_code": OP.CREATE_TRIAL, "worker_id": "w", "study_id": 0, "datetime_start": None},
        {"op_code": OP.SET_TRIAL_USER_ATTR, "worker_id": worker, "trial_id": 1,
         "user_attr": {"mine": True}}])]
    path.write_bytes(b"".join(lines))
    assert [d.line for d in scan_journal(path).damage] == [2, 3]
    out, _ = repair_journal(path)
    assert every_line_checked(out) and len(lines_of(out)) == 3
    assert [r.get("trial_id", r.get("study_id")) for r in records(out)] == [None, 0, 0]
    trial, = optuna_reading(out)
    assert trial.user_attrs == {"mine": True} and not scan_journal(out).damage


def extended(study: Path) -> Path:
    """The study's journal after dse appended to it in place (so its lock keeps its extent)."""
    from dse.search.storage.journal_writing import journal_storage

    journal = study.with_suffix(".journal")
    optuna.load_study(study_name="s", storage=journal_storage(journal)).set_user_attr("k", 1)
    return journal


@pytest.mark.parametrize("torn", [True, False])
def test_a_cut_in_the_middle_says_how_many_records_were_lost(study: Path, torn: bool) -> None:
    journal = extended(study)
    lines = lines_of(journal)
    kept = len(lines) // 2
    size = sum(map(len, lines[:kept])) + (40 if torn else 0)
    with journal.open("r+b") as f:  # cut in place, as truncate(1) or a lost extent would
        f.truncate(size)
    refused(study, kept + 1, f"held {len(lines)} lines when dse last wrote to it (s.journal.write.lock): "
            f"its last {len(lines) - kept} record(s) were lost (the file was cut")
    result = run("repair", str(study))
    assert result.exit_code == 0 and f"its last {len(lines) - kept} record(s) were lost" in result.stderr
    assert lines_of(repaired_path(journal)) == lines[:kept]
    # The repaired copy moved over the journal is another file: read as it is, then resumed.
    repaired_path(journal).replace(journal)
    assert run("status", str(study)).exit_code == 0
    assert run("run", str(study), "--trials", "1", "--quiet", "--no-report").exit_code == 0


def test_a_torn_last_write_is_no_cut(study: Path) -> None:
    """An append interrupted mid-line never updated the extent: its torn line is cut as before."""
    journal = extended(study)
    before = journal.read_bytes()
    with journal.open("ab") as f:
        f.write(b'{"op_code":6,"worker_id":"w","trial_id":3,"sta')
    assert run("status", str(study)).exit_code == 0
    assert run("run", str(study), "--trials", "1", "--quiet", "--no-report").exit_code == 0
    assert journal.read_bytes().startswith(before) and not scan_journal(journal).damage


def test_a_journal_read_while_another_writer_appends_is_no_cut(study: Path) -> None:
    """A reader reads the journal, then the extent: a writer that appended in between (two jobs
    of one study) counted lines the reader's bytes lack; the file as it is now holds them."""
    from dse.search.storage.journal_sequence import was_cut

    journal = extended(study)
    before = journal.read_bytes()
    extended(study)  # another process's append, after the read
    assert was_cut(journal, before) == 0
    assert check_journal_ok(journal, before)
    with journal.open("r+b") as f:  # a real cut is still one
        f.truncate(len(before) // 2)
    assert was_cut(journal, journal.read_bytes()) > 0


def check_journal_ok(journal: Path, data: bytes) -> bool:
    from dse.search.storage.journal_check import check_journal

    return not check_journal(journal, "s", data=data).damage
