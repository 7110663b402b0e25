"""Study creation killed at each step (issue 16, item 2): the next run completes what the dead
creator left out (its definition, the baselines, the budget) at once, without the silent
15-second wait, and enqueues no baseline twice.
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
from dse.search.recovery import BASELINE_KEY
from dse.search.runner import (
    CREATOR_KEY,
    OPEN_WAIT_S,
    _describe,
    enqueue_baselines,
    open_study,
)
from dse.search.space import preset_params
from dse.search.spec import study_objectives, study_space
from dse.search.storage import open_storage

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
    from dse.search.encoding import encode_design

    study.enqueue_trial(encode_design(study_space(spec), baselines[first]),
                        user_attrs={BASELINE_KEY: first})
    if step == "all baselines enqueued":
        enqueue_baselines(study, study_space(spec))
    return study


@pytest.mark.parametrize("step", STEPS)
def test_a_killed_creation_is_completed_on_resume(tmp_path: Path, step: str) -> None:
    _killed_after(step, tmp_path)
    spec = make_spec(tmp_path)
    start = time.monotonic()
    study = open_study(spec, open_storage(None, spec))
    waited = time.monotonic() - start
    if step != "created":  # the creator is known (and dead): no wait at all
        assert waited < OPEN_WAIT_S / 3, waited
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
    assert "being created by another process" in caplog.text
    assert opened.user_attrs["dse:budget"] == spec.budget
