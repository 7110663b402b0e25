"""Shared helpers of the study tests (test_study.py, test_space_objectives.py, test_study_cli.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from dse.search.storage.opening import open_storage
from dse.search.study.study_file import StudySpec

if TYPE_CHECKING:
    from typer.testing import Result

ROOT = Path(__file__).resolve().parents[1]
CHEAP = {"workload": "mlperf-dlrm-v1", "space": "scale-out", "objectives": "throughput-vs-capex"}
"""A workload that evaluates in well under a millisecond, on a space with baselines."""
SPACE_HEAD = 'name = "small"\nbase_system = "dgx-h100"\n'
"""The head of a search-space file over the DGX H100."""


def storage_for(tmp_path: Path, kind: str, name: str = "study") -> str:
    """A storage URL of ``kind`` (journal, the default storage type, or sqlite) in ``tmp_path``."""
    if kind == "journal":
        return str(tmp_path / f"{name}.journal")
    assert kind == "sqlite"
    return f"sqlite:///{tmp_path / name}.db"


def make_spec(tmp_path: Path, kind: str = "journal", **fields: Any) -> StudySpec:
    """A StudySpec on the cheap workload with its storage in ``tmp_path``."""
    values: dict[str, Any] = {"name": "t", **CHEAP, "sampler": "random", "budget": 10, "seed": 1}
    values.update(fields)
    values.setdefault("storage", storage_for(tmp_path, kind, str(values["name"])))
    return StudySpec(**values)


def toml_value(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, bool) else str(value).lower()


def write_study(path: Path, **fields: Any) -> Path:
    """Write a study TOML (fields as given, strings quoted) and return its path."""
    lines = [f"{k} = {toml_value(v)}" for k, v in fields.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def journal_study(folder: Path, budget: int, journal: Path | None = None) -> Path:
    """The study file ``folder/s.toml`` of a cheap random study named ``s`` (seed 1) whose journal
    is ``journal`` (default ``folder/s.journal``)."""
    return write_study(folder / "s.toml", name="s", **CHEAP, sampler="random", budget=budget,
                       seed=1, storage=str(journal or folder / "s.journal"))


def run_cli(*args: str) -> Result:
    """A dse command run in this process, as typed (wide enough that no line wraps)."""
    from typer.testing import CliRunner

    from dse.cli import app

    return CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})


def finished_journal_study(folder: Path, budget: int) -> Path:
    """``folder`` holding a finished :func:`journal_study` of ``budget`` trials, run by dse."""
    result = run_cli("run", str(journal_study(folder, budget)), "--quiet", "--no-report")
    assert result.exit_code == 0, result.output
    return folder


FULL = "full"
"""The shipped space of every node and cluster knob, too large for a coarse grid."""


@contextmanager
def full_space_too_large() -> Iterator[None]:
    """Meanwhile a new study's check of its space (``sweep_allowed``) is answered for :data:`FULL`
    as ``tests/test_prescreen.py::test_the_full_space_is_too_large_for_a_coarse_grid`` finds it,
    instead of recounted: the count builds a 739,206-design grid, seconds of CPU for every study
    created on the space, before anything these tests look at."""
    from unittest import mock

    import dse.search.refine as refine

    real = refine.sweep_allowed

    def known(space: Any, budget: int) -> bool:
        return False if space.name == FULL else bool(real(space, budget))

    with mock.patch.object(refine, "sweep_allowed", known):
        yield


def random_dcnv2_study(folder: Path, name: str, budget: int, seed: int) -> tuple[optuna.Study, StudySpec]:
    """A finished study of ``budget`` random designs of MLPerf DCNv2 on the full space against
    throughput, capex and power, stored in ``folder/NAME.journal``, with its spec. No pre-screen
    (``prescreen_s`` 0): the full space is too large for a coarse grid, so creating the study
    would otherwise spend the default pre-screen's CPU seconds on designs these tests never read
    (tests/test_prescreen.py tests the pre-screen)."""
    from dse.search.runner import run_study

    spec = StudySpec(name=name, workload="mlperf-dlrm-dcnv2", space=FULL,
                     objectives="throughput-capex-power", budget=budget, sampler="random", seed=seed,
                     storage=str(folder / f"{name}.journal"), prescreen_s=0.0)
    with full_space_too_large():
        run_study(spec)
    return load(spec), spec


def load(spec: StudySpec) -> optuna.Study:
    return optuna.load_study(study_name=spec.name, storage=open_storage(None, spec))


def trials(study: optuna.Study, *states: TrialState) -> list[FrozenTrial]:
    return study.get_trials(deepcopy=False, states=states or None)


def complete(study: optuna.Study) -> list[FrozenTrial]:
    return trials(study, TrialState.COMPLETE)


def design_key(t: FrozenTrial) -> tuple[tuple[str, Any], ...]:
    """The parameters of a trial (enqueued ones included) as a hashable key."""
    params = {**t.system_attrs.get("fixed_params", {}), **t.params}
    return tuple(sorted((k, params[k]) for k in params))


def journal_states(path: Path) -> dict[int, int]:
    """Trial number -> state code (0 RUNNING, 1 COMPLETE, 2 PRUNED, 3 FAIL, 4 WAITING) read
    straight from a journal file (one study), without Optuna."""
    states: dict[int, int] = {}
    ids: list[int] = []
    with path.open("rb") as f:
        for line in f:
            if not line.endswith(b"\n"):
                break
            log = json.loads(line)
            if log["op_code"] == 4:  # CREATE_TRIAL
                ids.append(len(ids))
                states[len(ids) - 1] = int(log.get("state", 0))
            elif log["op_code"] == 6:  # SET_TRIAL_STATE_VALUES
                states[int(log["trial_id"])] = int(log["state"])
    return states


def run_dse(*args: str, timeout: float = 120, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m dse ARGS`` in a subprocess."""
    env = {**os.environ, "COLUMNS": "250"}
    return subprocess.run([sys.executable, "-m", "dse", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd or ROOT, env=env)


# A 12-point discrete space without conditions (3 x 2 x 2; 9 designs, the one-node points being
# one design), for grid search tests.
GRID_PARAMS = """
[parameters.nodes]
type = "int"
low = 1
high = 3

[parameters."network.topology"]
type = "categorical"
choices = ["fat_tree", "rail_optimized"]

[parameters."network.oversubscription"]
type = "ordinal"
choices = [1.0, 2.0]
"""
