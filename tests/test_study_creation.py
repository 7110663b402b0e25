"""Study creation killed at each step (issue 16, item 2): the next run completes what the dead
creator left out (its definition, the baselines, the budget) at once, without the silent
15-second wait, and enqueues no baseline twice.

A wait for a creator is always announced first (``WAITING``, on the log), so "no wait" is that
line's absence, not a clock's reading.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from study_helpers import make_spec

from dse.search import _optuna
from dse.search.runner import (
    CREATOR_KEY,
    _describe,
    enqueue_baselines,
    open_study,
)
from dse.search.storage.opening import open_storage, storage_file
from dse.search.storage.recovery import BASELINE_KEY, WorkerLock
from dse.search.study.search_space import preset_params
from dse.search.study.study_file import study_objectives, study_space

WAITING = "being created by another process"
"""What a process says before it waits for a study's creator (:func:`dse.search.runner`'s
``_wait_until_recorded``)."""
STEPS = ("created", "creator recorded", "definition recorded", "one baseline enqueued",
         "all baselines enqueued")


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(proc.stdout)


def _killed_after(step: str, tmp_path: Path) -> optuna.Study:
    """What a creator killed after ``step`` leaves in a fresh journal."""
    import socket

    spec = make_spec(tmp_path)
    study = optuna.create_study(storage=open_storage(None, spec), study_name=spec.name,
                                directions=study_objectives(spec).directions)
    if step == "created":
        return study
    _optuna.study_storage(study).set_study_system_attr(
        _optuna.study_id_of(study), CREATOR_KEY, f"{socket.gethostname()}:{_dead_pid()}")
    if step == "creator recorded":
        return study
    for key, value in _describe(spec).items():
        study.set_user_attr(key, value)
    if step == "definition recorded":
        return study
    baselines = preset_params(study_space(spec))
    first = next(iter(baselines))
    from dse.search.study.encoding import encode_design

    study.enqueue_trial(encode_design(study_space(spec), baselines[first]),
                        user_attrs={BASELINE_KEY: first})
    if step == "all baselines enqueued":
        enqueue_baselines(study, study_space(spec))
    return study


@pytest.mark.parametrize("step", STEPS)
def test_a_killed_creation_is_completed_on_resume(tmp_path: Path, step: str,
                                                  caplog: pytest.LogCaptureFixture,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the study file's lock to look at, a creator that never recorded itself is waited
    for (cut to 0.5 s here: the wait's length is not what this tests); one known dead is not."""
    import dse.search.runner as runner

    monkeypatch.setattr(runner, "OPEN_WAIT_S", 0.5)
    _killed_after(step, tmp_path)
    spec = make_spec(tmp_path)
    with caplog.at_level("WARNING", logger="dse"):
        study = open_study(spec, open_storage(None, spec))
    assert (WAITING in caplog.text) == (step == "created"), caplog.text
    attrs = study.user_attrs
    assert attrs["dse:budget"] == spec.budget
    assert "dse:space" in attrs and "dse:model" in attrs
    names = [t.user_attrs.get(BASELINE_KEY) for t in study.get_trials(deepcopy=False)]
    assert sorted(n for n in names if n) == sorted(preset_params(study_space(spec)))


def test_a_creator_on_another_host_is_waited_for_with_a_note(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    import dse.search.runner as runner

    monkeypatch.setattr(runner, "OPEN_WAIT_S", 0.5)
    study = _killed_after("creator recorded", tmp_path)
    _optuna.study_storage(study).set_study_system_attr(
        _optuna.study_id_of(study), CREATOR_KEY, "another-host:1")
    spec = make_spec(tmp_path)
    with caplog.at_level("WARNING", logger="dse"):
        opened = open_study(spec, open_storage(None, spec))
    assert WAITING in caplog.text
    assert opened.user_attrs["dse:budget"] == spec.budget


def test_a_creator_killed_before_recording_itself_is_not_waited_for(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Killed between Optuna's create_study and its creator record: nobody holds the study file's
    workers lock, so the next run completes the creation at once (it used to wait 15 s)."""
    _killed_after("created", tmp_path)
    spec = make_spec(tmp_path)
    with caplog.at_level("WARNING", logger="dse"):
        study = open_study(spec, open_storage(None, spec), storage_path=storage_file(None, spec))
    assert WAITING not in caplog.text, caplog.text
    assert study.user_attrs["dse:budget"] == spec.budget
    names = [t.user_attrs.get(BASELINE_KEY) for t in study.get_trials(deepcopy=False)]
    assert sorted(n for n in names if n) == sorted(preset_params(study_space(spec)))


def test_a_live_creator_not_yet_recorded_is_waited_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A creator still alive holds the workers lock while it creates: the other process waits for
    it (here until the shortened wait ends, as for a creator on another host)."""
    import dse.search.runner as runner

    monkeypatch.setattr(runner, "OPEN_WAIT_S", 1.0)
    _killed_after("created", tmp_path)
    spec = make_spec(tmp_path)
    with WorkerLock(storage_file(None, spec)) as creator:
        creator.share()
        start = time.monotonic()
        study = open_study(spec, open_storage(None, spec), storage_path=storage_file(None, spec))
        assert time.monotonic() - start >= 1.0  # a lower bound: load can only lengthen it
    assert study.user_attrs["dse:budget"] == spec.budget


def test_dse_run_resumes_a_creation_killed_before_the_creator_record(tmp_path: Path) -> None:
    """The whole command, as a user meets it: no silent wait, the baselines and budget recorded."""
    _killed_after("created", tmp_path)
    spec = make_spec(tmp_path)
    study_file = tmp_path / "t.toml"
    study_file.write_text("".join(f'{k} = "{v}"\n' for k, v in (
        ("name", spec.name), ("workload", spec.workload), ("space", spec.space),
        ("objectives", spec.objectives), ("sampler", "random"), ("storage", spec.storage)))
        + "budget = 10\nseed = 1\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "dse", "run", str(study_file), "--quiet",
                           "--no-report", "--trials", "0"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert WAITING not in proc.stderr, proc.stderr
    study = optuna.load_study(study_name=spec.name, storage=open_storage(None, spec))
    assert study.user_attrs["dse:budget"] == 10
