"""Every private name of Optuna that dse uses (gathered in ``dse/search/_optuna.py``) still exists
and behaves as dse expects: an Optuna upgrade that renames one fails here, by name."""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import optuna
import pytest
from optuna.storages import JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState

from dse.search import _optuna

ROOT = Path(__file__).resolve().parents[1]

PRIVATE_IMPORTS = [
    ("optuna.storages", "_CachedStorage"),
    ("optuna.storages.journal._file", "BaseJournalFileLock"),
    ("optuna.storages.journal._storage", "JournalOperation"),
    ("optuna.study._constrained_optimization", "_CONSTRAINTS_KEY"),
    ("optuna.study._frozen", "FrozenStudy"),
    ("optuna.storages._heartbeat", "is_heartbeat_enabled"),
    ("optuna.storages._rdb.models", "TrialModel"),
    ("optuna.storages._rdb.models", "TrialUserAttributeModel"),
    ("optuna.storages._rdb.models", "TrialSystemAttributeModel"),
    ("optuna.storages._rdb.models", "TrialHeartbeatModel"),
    ("optuna.storages._rdb.storage", "_create_scoped_session"),
    ("optuna.storages._grpc.servicer", "OptunaStorageProxyService"),
    ("optuna.storages._grpc.auto_generated.api_pb2_grpc", "add_StorageServiceServicer_to_server"),
    ("optuna.storages._grpc.auto_generated.api_pb2_grpc", "StorageServiceStub"),
    ("optuna.storages._grpc.client", "GrpcClientCache"),
    ("optuna._hypervolume", "compute_hypervolume"),
    ("optuna.search_space.intersection", "_calculate"),
]
PRIVATE_ATTRS = [
    (optuna.Study, "_storage", "instance"),
    (optuna.Study, "_study_id", "instance"),
    (optuna.Study, "_get_trials", "class"),
    (optuna.Trial, "_trial_id", "instance"),
    (optuna.Trial, "_cached_frozen_trial", "instance"),
    (optuna.trial.FrozenTrial, "_trial_id", "instance"),
    (optuna.samplers.NSGAIISampler, "_get_generation_key", "class"),
    (optuna.samplers.NSGAIISampler, "_get_parent_cache_key_prefix", "class"),
    (RDBStorage, "_set_trial_attr_without_commit", "class"),
    (JournalStorage, "_sync_with_backend", "class"),
]


@pytest.mark.parametrize(("module", "name"), PRIVATE_IMPORTS)
def test_private_name_imports(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name), f"Optuna lost {module}.{name}"


def _journal_study(tmp_path: Path) -> optuna.Study:
    storage = JournalStorage(JournalFileBackend(str(tmp_path / "s.journal")))
    return optuna.create_study(storage=storage, directions=["minimize", "maximize"])


@pytest.mark.parametrize(("cls", "name", "where"), PRIVATE_ATTRS,
                         ids=[f"{c.__name__}.{n}" for c, n, _ in PRIVATE_ATTRS])
def test_private_attribute_exists(tmp_path: Path, cls: type, name: str, where: str) -> None:
    if where == "class":
        assert hasattr(cls, name), f"Optuna lost {cls.__name__}.{name}"
        return
    study = _journal_study(tmp_path)
    trial = study.ask()
    objects = {optuna.Study: study, optuna.Trial: trial,
               optuna.trial.FrozenTrial: study.get_trials(deepcopy=False)[0]}
    assert hasattr(objects[cls], name), f"Optuna lost {cls.__name__}.{name}"


def test_the_wrappers_work_on_a_journal_study(tmp_path: Path) -> None:
    study = _journal_study(tmp_path)
    trial = study.ask()
    storage = _optuna.study_storage(study)
    assert isinstance(storage, JournalStorage)
    assert _optuna.study_id_of(study) == storage.get_study_id_from_name(study.study_name)
    tid = _optuna.trial_id_of(trial)
    assert storage.get_trial(tid).number == trial.number
    assert _optuna.cached_frozen_trial(trial).number == trial.number
    assert not _optuna.heartbeat_enabled(storage)
    assert _optuna.rdb_backend(storage) is None

    def logs(worker_id: str) -> list[dict[str, object]]:
        return [{"op_code": _optuna.JournalOperation.SET_TRIAL_SYSTEM_ATTR, "worker_id": worker_id,
                 "trial_id": tid, "system_attr": {f"{_optuna.CONSTRAINTS_KEY}:c": 0.5}}]

    assert _optuna.journal_append(storage, logs)
    frozen = storage.get_trial(tid)
    assert dict(frozen.constraints) == {"c": 0.5}, "Optuna reads constraints from another key"
    _optuna.fail_trial(study, frozen)
    assert storage.get_trial(tid).state == TrialState.FAIL
    done = study.ask()
    study.tell(done, [1.0, 2.0])
    assert [t.number for t in _optuna.completed_trials_cached(study)] == [done.number]


def test_the_journal_records_are_as_dse_reads_them(tmp_path: Path) -> None:
    """Every operation Optuna writes names the id ``JOURNAL_ID_KEY`` gives, third after
    ``op_code`` and ``worker_id``, and holds the keys ``JOURNAL_FIELDS`` lists."""
    path = tmp_path / "s.journal"
    storage = JournalStorage(JournalFileBackend(str(path)))
    study = optuna.create_study(study_name="s", storage=storage)
    study.set_user_attr("u", 1)
    storage.set_study_system_attr(_optuna.study_id_of(study), "s", 2)
    trial = study.ask()
    trial.suggest_float("x", 0.0, 1.0)
    trial.report(0.5, step=1)
    trial.set_user_attr("u", 3)
    storage.set_trial_system_attr(_optuna.trial_id_of(trial), "s", 4)
    study.tell(trial, 1.0)
    optuna.delete_study(study_name="s", storage=storage)
    ops = _optuna.JournalOperation
    assert set(_optuna.JOURNAL_FIELDS) == set(ops)
    assert set(_optuna.JOURNAL_ID_KEY) == set(ops) - {ops.DISCARD_TRIALS}
    seen = set()
    for line in path.read_text().splitlines():
        record = json.loads(line)
        op = ops(record["op_code"])
        seen.add(op)
        assert list(record)[:3] == ["op_code", "worker_id", _optuna.JOURNAL_ID_KEY[op]], record
        assert set(_optuna.JOURNAL_FIELDS[op]) <= set(record), record
    assert seen == set(ops) - {ops.DISCARD_TRIALS}, "Optuna no longer writes every operation"
    study_ops = {ops.DELETE_STUDY, ops.SET_STUDY_USER_ATTR, ops.SET_STUDY_SYSTEM_ATTR,
                 ops.CREATE_TRIAL}
    assert study_ops == _optuna.STUDY_OPS
    assert set(ops) - study_ops - {ops.CREATE_STUDY, ops.DISCARD_TRIALS} == _optuna.TRIAL_OPS


def test_the_rdb_wrappers_work_on_sqlite(tmp_path: Path) -> None:
    storage = RDBStorage(f"sqlite:///{tmp_path / 's.db'}")
    study = optuna.create_study(storage=storage)
    trial = study.ask()
    backend = _optuna.rdb_backend(_optuna.study_storage(study))
    assert backend is not None, "Optuna no longer wraps RDB storages as dse expects"
    models = _optuna.rdb_models()
    with _optuna.rdb_session(backend, commit=True) as session:
        _optuna.rdb_set_attr(backend, session, models.TrialUserAttributeModel,
                             _optuna.trial_id_of(trial), "k", 1)
    assert backend.get_trial(_optuna.trial_id_of(trial)).user_attrs == {"k": 1}


def test_nsga2_keys_and_hypervolume() -> None:
    assert _optuna.nsga2_generation_key()
    assert _optuna.nsga2_parent_cache_key_prefix()
    points = np.array([[0.0, 0.5], [0.5, 0.0]])
    assert _optuna.compute_hypervolume(points, [1.0, 1.0]) == pytest.approx(0.75)


def test_intersection_step_reads_only_the_trials_from_its_cached_number(tmp_path: Path) -> None:
    study = _journal_study(tmp_path)
    space: dict[str, object] | None = None
    cached = -1
    for k in range(12):
        trial = study.ask()
        trial.suggest_int("a", 0, 9)
        if k % 3:  # a parameter some trials lack leaves the intersection
            trial.suggest_float("b", 0.0, 1.0)
        if k == 7:
            study.tell(trial, state=TrialState.PRUNED)
        elif k != 10:  # trial 10 stays running: read again from its number on
            study.tell(trial, [float(k), 1.0])
        trials = _optuna.trials_since(study, max(cached, 0))
        assert not trials or trials[0].number == max(cached, 0)
        space, cached = _optuna.intersection_step(trials, space, cached)
        want = optuna.search_space.IntersectionSearchSpace().calculate(study)
        assert dict(sorted((space or {}).items())) == want
    assert set(space or {}) == {"a"} and cached == 10


def test_a_missing_private_name_fails_with_a_clear_message() -> None:
    with pytest.raises(_optuna.OptunaPrivateError, match=r"optuna\.storages\.no_such\.thing"):
        _optuna._private("optuna.storages.no_such", "thing")


PRIVATE_LOGGERS = [
    # (logger name, the start of the message dse filters from it)
    (_optuna.OPTIMIZE_LOGGER, "Trial {trial_number} failed with parameters"),
    (_optuna.RDB_STORAGE_LOGGER, "Caught an error from sqlalchemy"),
]


@pytest.mark.parametrize(("name", "message"), PRIVATE_LOGGERS, ids=[n for n, _ in PRIVATE_LOGGERS])
def test_private_logger_is_the_module_that_logs_the_filtered_message(name: str, message: str) -> None:
    # Optuna names each logger after its module: the module must still exist, log through the
    # logger dse filters (the same object), and write the message the filter recognises.
    module = importlib.import_module(name)
    assert getattr(module, "_logger", None) is logging.getLogger(name), f"Optuna lost the logger {name}"
    assert message in inspect.getsource(module), f"{name} no longer logs {message!r}"


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _interrupted_trial(records: _Records) -> list[str]:
    """The messages Optuna's optimize logger emits for a trial interrupted by Ctrl-C."""
    def objective(trial: optuna.Trial) -> float:
        raise KeyboardInterrupt

    records.messages.clear()
    with pytest.raises(KeyboardInterrupt):
        optuna.create_study().optimize(objective, n_trials=1)
    return list(records.messages)


def test_the_optimize_logger_carries_the_interrupted_trial_warnings_the_cli_drops() -> None:
    from dse.cli.study import _quiet_interrupted_trials

    records = _Records()
    logger = _optuna.optimize_logger()
    logger.addHandler(records)
    try:
        loud = _interrupted_trial(records)
        with _quiet_interrupted_trials():
            quiet = _interrupted_trial(records)
    finally:
        logger.removeHandler(records)
    assert [m.split(" because")[0] for m in loud] == [
        "Trial 0 failed with parameters: {}", "Trial 0 failed with value None."]
    assert quiet == []


def _levels_after(code: str) -> str:
    """What ``code`` prints, run in a fresh interpreter on this checkout."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return out.stdout.strip()


LEVELS = ("import logging, optuna; print(logging.getLogger().level, logging.getLogger('optuna').level, "
          "optuna.logging.get_verbosity())")


def test_importing_dse_changes_no_log_level() -> None:
    # Every module of the package, the CLI's included: only running a command sets a level.
    every_module = ("import importlib, pkgutil, dse; [importlib.import_module(m.name) for m in "
                    "pkgutil.walk_packages(dse.__path__, 'dse.') if not m.name.endswith('__main__')]; ")
    plain = _levels_after(LEVELS)
    assert plain == f"{logging.WARNING} {logging.INFO} {logging.INFO}"  # Python's and Optuna's own
    assert _levels_after(every_module + LEVELS) == plain


def test_a_cli_command_quiets_optuna() -> None:
    run = ("from typer.testing import CliRunner; from dse.cli import app; "
           "assert CliRunner().invoke(app, ['list', 'workloads']).exit_code == 0; ")
    assert _levels_after(run + LEVELS) == f"{logging.WARNING} {logging.WARNING} {logging.WARNING}"
