"""The one-pass journal reader of the read-only commands (:mod:`dse.search.storage.journal_snapshot`)
gives exactly the studies and trials Optuna's own replay gives, on real journals: a dse study run
with two workers (complete, infeasible, baseline trials with user and system attributes and
constraints); plain Optuna studies in a journal of their own (failed, pruned, running and waiting
trials, intermediate values, records Optuna ignores, several studies, a deleted one); and a
repaired journal. It hands anything damaged back to Optuna's reading (which reports it as before),
a study written into dse's journal by plain Optuna included: refused, and repaired away."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import optuna
import pytest
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState
from study_helpers import make_spec

from dse.errors import DseInputError
from dse.search._optuna import study_storage, trial_id_of
from dse.search.results import load_stored_study
from dse.search.runner import run_study
from dse.search.storage import journal_snapshot as snapshot_module
from dse.search.storage.journal_check import repair_journal, scan_journal
from dse.search.storage.journal_format import RecordNumbers, checks_hold, read_check
from dse.search.storage.journal_snapshot import JournalSnapshot, ReadOnlyError, cache_path, read_snapshot
from dse.search.storage.journal_writing import CheckedJournalBackend, FlockLock, QueueJournalStorage


def optuna_storage(path: Path) -> JournalStorage:
    return JournalStorage(JournalFileBackend(str(path), lock_obj=FlockLock(str(path))))


def assert_same(path: Path, cache: bool = False) -> JournalSnapshot:
    """The snapshot of ``path`` equals Optuna's reading of it, study by study and trial by trial."""
    snapshot = read_snapshot(path, cache=cache)
    assert snapshot is not None, "the reader refused a sound journal"
    reference = optuna_storage(path)
    studies = reference.get_all_studies()
    assert [(s.study_name, s._study_id) for s in studies] == [
        (s.study_name, s._study_id) for s in snapshot.get_all_studies()]
    for s in studies:
        sid = s._study_id
        assert snapshot.get_study_id_from_name(s.study_name) == sid
        assert snapshot.get_study_directions(sid) == reference.get_study_directions(sid)
        assert snapshot.get_study_user_attrs(sid) == reference.get_study_user_attrs(sid)
        assert snapshot.get_study_system_attrs(sid) == reference.get_study_system_attrs(sid)
        mine = snapshot.get_all_trials(sid, deepcopy=False)
        theirs = reference.get_all_trials(sid, deepcopy=False)
        assert len(mine) == len(theirs)
        for a, b in zip(mine, theirs, strict=True):
            assert a.__dict__ == b.__dict__, f"trial {b.number} of {s.study_name} differs"
        for state in TrialState:
            assert ([t.number for t in snapshot.get_all_trials(sid, states=(state,))]
                    == [t.number for t in reference.get_all_trials(sid, states=(state,))])
    return snapshot


def append(path: Path, *records: dict[str, object]) -> None:
    with path.open("a", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")


def write_plain_studies(path: Path) -> None:
    """Plain Optuna studies written into the journal ``path`` by two "workers" (two storages):
    complete, failed, pruned, running and waiting trials, intermediate values, attributes, a trial
    added whole, a deleted study, and records Optuna's replay ignores (none with dse's check)."""
    one, two = optuna_storage(path), optuna_storage(path)
    plain = optuna.create_study(study_name="plain", storage=one, directions=["minimize", "maximize"])
    other = optuna.load_study(study_name="plain", storage=two)
    plain.enqueue_trial({"x": 0.5, "c": "b"}, user_attrs={"queued": True})
    for k, study in enumerate([plain, other, plain, other, plain]):
        t = study.ask()
        t.suggest_float("x", 0.0, 1.0)
        t.suggest_categorical("c", ["a", "b", None])
        t.suggest_int("n", 1, 64, log=True)
        t.set_user_attr("design", {"k": k, "list": [1, 2.5, "s"], "inf": float("inf")})
        study_storage(study).set_trial_system_attr(trial_id_of(t), "constraints", [k - 2.0])
        if k == 0:
            study.tell(t, [1.0, 2.0])
        elif k == 1:
            study.tell(t, state=TrialState.FAIL)
        elif k == 2:
            study_storage(study).set_trial_intermediate_value(trial_id_of(t), 3, 0.25)
            study.tell(t, state=TrialState.PRUNED)
        elif k == 3:
            study.tell(t, [float("inf"), -0.0])
        # k == 4 stays RUNNING
    plain.enqueue_trial({"x": 0.1})  # stays WAITING
    single = optuna.create_study(study_name="single", storage=two)
    single.optimize(lambda t: t.suggest_float("y", -1, 1) ** 2, n_trials=3)
    added = optuna.create_study(study_name="added", storage=one)
    added.add_trial(optuna.trial.create_trial(
        params={"p": 0.5}, distributions={"p": optuna.distributions.FloatDistribution(0, 1)},
        value=1.0, user_attrs={"made": "whole"}))
    asked = added.ask()
    doomed = optuna.create_study(study_name="doomed", storage=one)
    doomed.optimize(lambda t: t.suggest_float("y", -1, 1), n_trials=2)
    optuna.delete_study(study_name="doomed", storage=one)
    # Records Optuna's replay ignores: a write to a finished trial by another worker, a second
    # creation of a study's name, a parameter incompatible with the study's earlier one, a
    # record of the deleted study, and a creation record with an extra field.
    finished = trial_id_of(plain.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))[0])
    append(path,
           {"op_code": 8, "worker_id": "late-1", "trial_id": finished, "user_attr": {"late": 1}},
           {"op_code": 0, "worker_id": "late-1", "study_name": "plain", "directions": [1]},
           {"op_code": 2, "worker_id": "late-1", "study_id": doomed._study_id,
            "user_attr": {"gone": 1}})
    running = trial_id_of(plain.get_trials(deepcopy=False, states=(TrialState.RUNNING,))[0])
    append(path, {"op_code": 5, "worker_id": "late-2", "trial_id": running, "param_name": "x",
                  "param_value_internal": 1.0,
                  "distribution": json.dumps({"name": "IntDistribution", "attributes": {
                      "log": False, "step": 1, "low": 0, "high": 3}})},
           {"op_code": 8, "worker_id": "late-2", "trial_id": running, "user_attr": {"z": [None]}},
           # Incompatible with the distribution of the trial added whole: ignored.
           {"op_code": 5, "worker_id": "late-2", "trial_id": trial_id_of(asked), "param_name": "p",
            "param_value_internal": 1.0, "distribution": json.dumps({
                "name": "IntDistribution", "attributes": {"log": False, "step": 1, "low": 0,
                                                          "high": 3}})})


@pytest.fixture(scope="module")
def plain_journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A journal of plain Optuna studies only (:func:`write_plain_studies`): no dse check."""
    path = tmp_path_factory.mktemp("plain") / "plain.journal"
    write_plain_studies(path)
    return path


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The journal of a dse study run by two workers, every record with dse's check."""
    folder = tmp_path_factory.mktemp("snapshot")
    spec = make_spec(folder, name="dse-study", budget=12)
    run_study(spec, trials=6, worker="a")
    run_study(spec, worker="b")  # a second worker process (other worker ids) to the budget
    return Path(spec.storage)


def test_the_snapshot_is_optunas_reading(journal: Path, plain_journal: Path) -> None:
    snapshot = assert_same(plain_journal)
    states = {t.state for t in snapshot.get_all_trials(snapshot.get_study_id_from_name("plain"))}
    assert states == {TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED, TrialState.RUNNING,
                      TrialState.WAITING}
    assert [s.study_name for s in snapshot.get_all_studies()] == ["plain", "single", "added"]
    with pytest.raises(KeyError):
        snapshot.get_study_id_from_name("doomed")
    snapshot = assert_same(journal)
    dse_trials = snapshot.get_all_trials(snapshot.get_study_id_from_name("dse-study"))
    assert sum(t.state == TrialState.COMPLETE for t in dse_trials) == 12
    assert all(t.constraints and "design" in t.user_attrs for t in dse_trials)
    creators = {r["worker_id"] for r in map(json.loads, journal.read_bytes().splitlines())
                if r["op_code"] == 4 and r["study_id"] == 0}
    assert len(creators) == 2  # two runs, each with its own storage (worker ids)


def test_a_repaired_journal_reads_the_same(journal: Path, tmp_path: Path) -> None:
    damaged = tmp_path / "d.journal"
    lines = journal.read_bytes().splitlines(keepends=True)
    creation = [i for i, line in enumerate(lines) if line.startswith(b'{"op_code":4,')][5]
    damaged.write_bytes(b"".join(lines[:creation] + lines[creation + 1:]))
    assert read_snapshot(damaged) is None  # a lost creation record: Optuna would misread it
    repaired, scan = repair_journal(damaged)
    assert sum(scan.missing.values()) == 1
    assert_same(repaired)


@pytest.mark.parametrize("damage", [b'{"op_code":8,"worker_id":"w","trial_id":0,"user_a',
                                    b"garbage!!\n", b"\x00" * 40 + b"\n"])
def test_damage_is_left_to_the_checked_reading(journal: Path, tmp_path: Path,
                                               damage: bytes) -> None:
    path = tmp_path / "t.journal"
    shutil.copy(journal, path)
    with path.open("ab") as f:
        f.write(damage)
    assert read_snapshot(path) is None
    spec = make_spec(tmp_path, name="dse-study", storage=str(path))
    study = load_stored_study(spec)  # read without the damaged tail, which is left in place
    assert path.read_bytes() == journal.read_bytes() + damage
    assert len(study.get_trials()) == len(optuna.load_study(
        study_name="dse-study", storage=optuna_storage(journal)).get_trials())


def test_damage_in_the_middle_is_refused_with_its_line(journal: Path, tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    lines = journal.read_bytes().splitlines(keepends=True)
    lines[40] = lines[40][:30] + b"\xff" + lines[40][31:]
    path.write_bytes(b"".join(lines))
    with pytest.raises(DseInputError, match="line 41"):
        load_stored_study(make_spec(tmp_path, name="dse-study", storage=str(path)))


def test_the_study_read_is_read_only(journal: Path, tmp_path: Path) -> None:
    spec = make_spec(tmp_path, name="dse-study", storage=str(journal))
    study = load_stored_study(spec)
    assert isinstance(study_storage(study), JournalSnapshot)
    with pytest.raises(ReadOnlyError):
        study.set_user_attr("x", 1)
    with pytest.raises(ReadOnlyError):
        study.ask()
    with pytest.raises(DseInputError, match="no stored study"):
        load_stored_study(make_spec(tmp_path, name="absent", storage=str(journal)))


def test_the_cache_resumes_where_it_stopped_and_is_dropped_when_stale(
        plain_journal: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read keeps its replay beside the journal; the next reads only the lines added since, and
    gives Optuna's reading still. A cache of another journal, or damaged, is not used."""
    monkeypatch.setattr(snapshot_module, "CACHE_AFTER_BYTES", 0)
    path = tmp_path / "c.journal"
    lines = plain_journal.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:len(lines) // 2]))
    assert_same(path, cache=True)
    assert cache_path(path).exists()
    with path.open("ab") as f:  # the rest arrives, as from a running study
        f.write(b"".join(lines[len(lines) // 2:]))
    data = path.read_bytes()
    assert snapshot_module._load_cache(path, data)[1] == sum(map(len, lines[:len(lines) // 2]))
    assert_same(path, cache=True)  # resumed from the cache, then cached again
    assert snapshot_module._load_cache(path, data)[1] == len(data)
    # The journal replaced by another of the same length: its bytes differ, the cache is stale.
    other = data.replace(b'"queued":true', b'"queued":null')
    assert len(other) == len(data) and other != data
    path.write_bytes(other)
    assert snapshot_module._load_cache(path, other) == (None, 0)
    assert_same(path, cache=True)
    # A damaged cache (a flipped byte) is not read.
    blob = bytearray(cache_path(path).read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    cache_path(path).write_bytes(bytes(blob))
    assert snapshot_module._load_cache(path, other) == (None, 0)
    assert_same(path, cache=True)
    # A journal cut short (a repaired copy moved over it) is read afresh.
    path.write_bytes(b"".join(lines[:10]))
    assert snapshot_module._load_cache(path, path.read_bytes()) == (None, 0)
    assert_same(path, cache=True)


def test_a_cached_dse_journal_resumes_and_finds_a_study_created_since(
        journal: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache keeps dse's record numbers: the lines after it run on from them, and a study
    created after them by plain Optuna (no check) is found in the lines read past the cache."""
    monkeypatch.setattr(snapshot_module, "CACHE_AFTER_BYTES", 0)
    path = tmp_path / "c.journal"
    lines = journal.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:len(lines) // 2]))
    assert_same(path, cache=True)
    with path.open("ab") as f:
        f.write(b"".join(lines[len(lines) // 2:]))
    assert_same(path, cache=True)  # resumed, the numbers running on from the cached ones
    data = path.read_bytes()
    assert snapshot_module._load_cache(path, data)[1] == len(data)
    optuna.create_study(study_name="late", storage=optuna_storage(path))
    assert snapshot_module._load_cache(path, path.read_bytes())[1] == len(data)
    assert read_snapshot(path, cache=True) is None
    with pytest.raises(DseInputError, match=f"line {len(lines) + 1}: damaged journal: creates "
                       "study 'late' without dse's check"):
        load_stored_study(make_spec(tmp_path, name="dse-study", storage=str(path)))


def test_a_study_written_into_a_dse_journal_is_refused_and_repaired_away(
        journal: Path, tmp_path: Path) -> None:
    """The journal this module's fixture used to be: the plain studies written into dse's
    journal, after which dse went on (its storage opened before they came), so its later trials
    have ids after theirs. Every one of their lines is named; the repaired copy holds the dse
    study alone, which reads as in the mixed journal (its trials numbered afresh)."""
    path = tmp_path / "mixed.journal"
    shutil.copy(journal, path)
    ours = len(journal.read_bytes().splitlines())
    write_plain_studies(path)
    theirs = len(path.read_bytes().splitlines()) - ours
    study = optuna.load_study(study_name="dse-study", storage=QueueJournalStorage(
        CheckedJournalBackend(str(path), FlockLock(str(path)))))
    for k in range(3):
        trial = study.ask()
        trial.set_user_attr("after", k)
        if k < 2:
            study.tell(trial, [float(k)] * len(study.directions))
    # A line in another layout (spaced JSON, no check) on the running trial: kept, renumbered.
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"op_code": 8, "worker_id": "tool", "trial_id": trial_id_of(trial),
                            "user_attr": {"spaced": True}}) + "\n")
    assert read_snapshot(path, cache=False) is None
    assert not checks_hold(path.read_bytes(), 0, 0, RecordNumbers())
    with pytest.raises(DseInputError, match=f"line {ours + 1}: damaged journal: creates study "
                       rf"'plain' without dse's check, in a journal dse writes .* \(and "
                       f"{theirs - 1} more damaged lines\\)"):
        load_stored_study(make_spec(tmp_path, name="dse-study", storage=str(path)))
    repaired, scan = repair_journal(path)
    assert [d.line for d in scan.damage] == list(range(ours + 1, ours + theirs + 1))
    assert all("without dse's check" in d.problem for d in scan.damage)
    assert ["creates study" in d.problem for d in scan.damage].count(True) == 5
    assert any("'plain' without dse's check, in a journal dse writes (its first record on line 1):"
               " written by no dse version; a repaired copy drops it (the name is taken, so it "
               "creates nothing)" in d.problem for d in scan.damage)
    snapshot = assert_same(repaired)
    assert [s.study_name for s in snapshot.get_all_studies()] == ["dse-study"]
    mixed = optuna_storage(path)
    assert snapshot.get_study_user_attrs(0) == mixed.get_study_user_attrs(0)
    assert snapshot.get_study_system_attrs(0) == mixed.get_study_system_attrs(0)
    mine, before = snapshot.get_all_trials(0), mixed.get_all_trials(0)
    assert [t._trial_id for t in mine] == list(range(len(before)))
    assert [t._trial_id for t in before][-3:] != [t._trial_id for t in mine][-3:]
    assert [{**t.__dict__, "_trial_id": 0} for t in mine] == [
        {**t.__dict__, "_trial_id": 0} for t in before]
    assert mine[-1].state == TrialState.RUNNING and mine[-1].user_attrs == {"after": 2, "spaced": True}
    assert not scan_journal(repaired).damage
    *checked, spaced = repaired.read_bytes().splitlines()
    assert all(read_check(line) == (i, True) for i, line in enumerate(checked))
    assert spaced == json.dumps({"op_code": 8, "worker_id": "tool", "trial_id": mine[-1]._trial_id,
                                 "user_attr": {"spaced": True}}, separators=(",", ":")).encode()
