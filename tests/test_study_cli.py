"""The study commands: ``dse run`` (one line and exit code 2 for a bad file, refusal of a changed
study unless --force, SIGKILL mid-study then resume, --jobs 2), ``dse status``, ``dse pareto``,
``dse export`` and ``dse list spaces|objectives|studies``."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import optuna
import pandas as pd
import pytest
import stalling
from optuna.trial import TrialState
from study_helpers import (
    CHEAP,
    ROOT,
    complete,
    design_key,
    journal_states,
    run_dse,
    write_study,
)
from typer.testing import CliRunner, Result

from dse.cli import app
from dse.search.algorithms.pareto import pareto_trials
from dse.search.storage.journal_writing import journal_storage
from dse.search.storage.recovery import BASELINE_KEY, RETRY_KEY, WORKER_KEY
from dse.search.study.objective_sets import objective_names
from dse.search.study.search_space import space_names
from dse.search.study.study_file import study_names

runner = CliRunner()
WIDE = {"COLUMNS": "250"}


def run(*args: str) -> Result:
    return runner.invoke(app, list(args), env=WIDE)


def assert_one_line_error(result: Result, *names: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dse: error: "), result.stderr
    for name in names:
        assert name in lines[0], (name, lines[0])


def study_file(tmp_path: Path, name: str = "s", **fields: object) -> Path:
    values: dict[str, object] = {"name": name, **CHEAP, "sampler": "random", "budget": 6,
                                 "seed": 1, "storage": str(tmp_path / f"{name}.journal")}
    values.update(fields)
    return write_study(tmp_path / f"{name}.toml", **values)


def stored(journal: Path, name: str = "s") -> optuna.Study:
    return optuna.load_study(study_name=name, storage=journal_storage(journal))


# --- refused input --------------------------------------------------------------------------------

BAD_SPACES = {
    "unknown parameter type": ('[parameters.nodes]\ntype = "integer"\nlow = 1\nhigh = 4\n',
                               "parameters.nodes.type"),
    "empty choice list": ('[parameters."network.topology"]\ntype = "categorical"\nchoices = []\n',
                          "parameters.network.topology.choices"),
    "low above high": ('[parameters.nodes]\ntype = "int"\nlow = 8\nhigh = 4\n', "parameters.nodes.low"),
    "condition on a non-parameter": ('[parameters.nodes]\ntype = "int"\nlow = 1\nhigh = 4\n'
                                     'when = { "node.scaleup" = ["ring"] }\n', "parameters.nodes.when"),
    "not a system key": ('[parameters."node.nonsense"]\ntype = "int"\nlow = 1\nhigh = 4\n',
                         "parameters.node.nonsense"),
}


@pytest.mark.parametrize("case", sorted(BAD_SPACES))
def test_run_refuses_a_bad_space_before_any_trial(tmp_path: Path, case: str) -> None:
    body, key = BAD_SPACES[case]
    space = tmp_path / "space.toml"
    space.write_text(f'name = "bad"\nbase_system = "dgx-h100"\n{body}', encoding="utf-8")
    path = study_file(tmp_path, space=str(space))
    assert_one_line_error(run("run", str(path), "--quiet", "--no-report"), str(path), str(space), key)
    assert not (tmp_path / "s.journal").exists()


def test_run_refuses_an_objective_on_an_unknown_metric(tmp_path: Path) -> None:
    obj = tmp_path / "obj.toml"
    obj.write_text('name = "o"\n[[objectives]]\nmetric = "speed"\ndirection = "maximize"\n',
                   encoding="utf-8")
    path = study_file(tmp_path, objectives=str(obj))
    assert_one_line_error(run("run", str(path), "--quiet", "--no-report"), str(path), str(obj),
                          "objectives[0].metric", "speed")
    assert not (tmp_path / "s.journal").exists()


@pytest.mark.parametrize(("change", "key"), [
    ({"sampler": "cmaes"}, "sampler"),
    ({"workload": "no-such-workload"}, "workload"),
    ({"trials": 5}, "trials"),
    ({"sampler": "grid", "space": "zion-node"}, "sampler"),
])
def test_run_refuses_a_bad_study_file_before_any_trial(tmp_path: Path, change: dict[str, object],
                                                       key: str) -> None:
    path = study_file(tmp_path, **change)
    assert_one_line_error(run("run", str(path), "--quiet", "--no-report"), str(path), f": {key}")
    assert not (tmp_path / "s.journal").exists()


def test_jobs_refuse_sqlite(tmp_path: Path) -> None:
    path = study_file(tmp_path)
    result = run("run", str(path), "--jobs", "2", "--storage", f"sqlite:///{tmp_path / 's.db'}",
                 "--quiet", "--no-report")
    assert_one_line_error(result, "--jobs", "SQLite")
    assert not (tmp_path / "s.db").exists()


def test_status_of_a_study_never_run(tmp_path: Path) -> None:
    path = study_file(tmp_path, storage=str(tmp_path / "sub" / "s.journal"))
    assert_one_line_error(run("status", str(path)), "no stored study")
    assert_one_line_error(run("status", str(path), "--json"), "no stored study")
    db = tmp_path / "s.db"
    assert_one_line_error(run("status", str(path), "--storage", f"sqlite:///{db}"), "no stored study")
    assert not (tmp_path / "sub").exists() and not db.exists()  # looking created nothing
    assert_one_line_error(run("status", "no-such-study"), "unknown study")


@pytest.mark.parametrize(("field", "value", "part"), [
    ("workload", "criteo-1tb-small", "workload"),
    ("objectives", "throughput-vs-power", "objectives"),
    ("space", "full", "space"),
])
def test_resuming_a_changed_study_is_refused_unless_forced(tmp_path: Path, field: str, value: str,
                                                          part: str) -> None:
    path = study_file(tmp_path, budget=3)
    assert run("run", str(path), "--quiet", "--no-report").exit_code == 0
    changed = study_file(tmp_path, budget=5, **{field: value})
    assert_one_line_error(run("run", str(changed), "--quiet", "--no-report"), part, "--force")
    study = stored(tmp_path / "s.journal")
    assert len(study.trials) == 3 and "dse:changes" not in study.user_attrs

    result = run("run", str(changed), "--quiet", "--no-report", "--force")
    assert result.exit_code == 0, result.output
    study = stored(tmp_path / "s.journal")
    assert len(complete(study)) == 5
    changes = study.user_attrs["dse:changes"]
    assert len(changes) == 1 and part in changes[0]["changed"] and changes[0]["at"]
    # The forced description is now the study's: resuming again needs no --force.
    assert run("run", str(changed), "--quiet", "--no-report").exit_code == 0


def test_changed_objective_directions_are_refused_even_forced(tmp_path: Path) -> None:
    path = study_file(tmp_path, budget=3)  # maximize throughput, minimize capex
    assert run("run", str(path), "--quiet", "--no-report").exit_code == 0
    flipped = study_file(tmp_path, budget=5, objectives="tco-per-sample")  # minimize, maximize
    for extra in ((), ("--force",)):
        assert_one_line_error(run("run", str(flipped), "--quiet", "--no-report", *extra),
                              "directions", "cannot change")
    assert len(stored(tmp_path / "s.journal").trials) == 3


# --- reading studies ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("finished")
    path = study_file(tmp, budget=25, objectives="throughput-capex-power")
    result = run("run", str(path), "--quiet", "--no-report")
    assert result.exit_code == 0, result.output
    assert "25 of 25 trials complete" in result.stdout
    return path


def test_status_json(finished: Path) -> None:
    result = run("status", str(finished), "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["complete"] == 25 and info["budget"] == 25
    assert info["running"] == 0 and info["failed"] == 0
    assert info["front_size"] == len(pareto_trials(stored(finished.with_suffix(".journal"))))
    readable = run("status", str(finished))
    assert readable.exit_code == 0 and "25 of 25 complete" in readable.stdout


def test_pareto_json_csv_parquet(finished: Path, tmp_path: Path) -> None:
    front = {t.number for t in pareto_trials(stored(finished.with_suffix(".journal")))}
    assert front
    result = run("pareto", str(finished), "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {r["number"] for r in rows} == front
    assert all("param:nodes" in r and "throughput_samples_per_s" in r for r in rows)

    csv, parquet = tmp_path / "front.csv", tmp_path / "front.parquet"
    assert run("pareto", str(finished), "--csv", str(csv), "--parquet", str(parquet)).exit_code == 0
    for frame in (pd.read_csv(csv), pd.read_parquet(parquet).reset_index()):
        assert set(frame["number"]) == front and len(frame) == len(front)
        assert {"param:nodes", "param:node.accelerator", "capex_usd", "power_w"} <= set(frame.columns)
        assert frame["feasible"].all()
    table = run("pareto", str(finished))
    assert table.exit_code == 0 and "Pareto front" in table.stdout


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_export_every_trial(finished: Path, tmp_path: Path, suffix: str) -> None:
    out = tmp_path / "sub" / f"all{suffix}"
    result = run("export", str(finished), "--out", str(out))
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out).reset_index()
    assert len(frame) == 25 and sorted(frame["number"]) == list(range(25))
    assert {"state", "param:nodes", "param:network.topology", "throughput_samples_per_s",
            "breakdown_s:dense_compute", "constraint:memory"} <= set(frame.columns)
    assert set(frame["baseline"].dropna()) >= {"dgx-h100", "hgx-h200"}
    assert_one_line_error(run("export", str(finished), "--out", str(tmp_path / "x.txt")), "--out")


@pytest.mark.parametrize(("what", "names"), [
    ("spaces", space_names()), ("objectives", objective_names()), ("studies", study_names())])
def test_list_study_files(what: str, names: tuple[str, ...]) -> None:
    result = run("list", what)
    assert result.exit_code == 0, result.output
    assert names and all(name in result.stdout for name in names)
    files = {p.stem for p in (ROOT / {"spaces": "search_spaces"}.get(what, what)).glob("*.toml")}
    assert files == set(names)


# --- crashes and parallel workers (subprocesses) --------------------------------------------------


def _wait_for(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def test_sigkill_mid_study_then_resume(tmp_path: Path) -> None:
    """``dse run`` SIGKILLed as it appends its 31st completed trial, holding the journal's write
    lock (:mod:`stalling`: caught there, not raced for), then resumed: the lock was the kernel's
    to drop (an ``flock``: nothing stale to wait out), the trial is failed and retried once and
    nothing completed is redone."""
    journal = tmp_path / "k.journal"
    path = study_file(tmp_path, "k", sampler="auto", budget=3000, seed=11, storage=str(journal))
    stalled = tmp_path / "stalled"
    proc = subprocess.Popen([*stalling.command(stalled, 31, in_lock=True), "run", str(path),
                             "--quiet", "--no-report"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    lock = os.open(f"{journal}.write.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _wait_for(lambda: stalled.exists() or proc.poll() is not None, 180, "the 31st trial")
        assert proc.poll() is None, proc.communicate()[1]
        with pytest.raises(BlockingIOError):  # the run holds the lock
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        states = journal_states(journal)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free at once: raises if still held
    fcntl.flock(lock, fcntl.LOCK_UN)
    os.close(lock)
    assert not os.path.lexists(f"{journal}.lock")  # nor Optuna's lock file, which a kill leaves
    running = [n for n, s in states.items() if s == 0]
    assert running == [int(stalled.read_text())]
    killed = running[0]
    done_at_kill = sum(s == 1 for s in states.values())
    assert done_at_kill == 30

    budget = done_at_kill + 15
    path = study_file(tmp_path, "k", sampler="auto", budget=budget, seed=11, storage=str(journal))
    result = run_dse("run", str(path), "--quiet", "--no-report", timeout=120)
    assert result.returncode == 0, result.stderr

    study = stored(journal, "k")
    all_trials = study.trials
    by_number = {t.number: t for t in all_trials}
    assert len(by_number) == len(all_trials)  # no duplicate trial numbers
    assert len(complete(study)) == budget
    assert not [t for t in all_trials if t.state == TrialState.RUNNING]
    assert by_number[killed].state == TrialState.FAIL
    retries = [t for t in all_trials if t.user_attrs.get(RETRY_KEY) == killed]
    assert len(retries) == 1 and retries[0].state == TrialState.COMPLETE
    assert by_number[killed].params.items() <= retries[0].params.items()
    for t in complete(study):  # nothing completed twice because of the crash
        if RETRY_KEY in t.user_attrs:
            assert by_number[t.user_attrs[RETRY_KEY]].state == TrialState.FAIL
    if BASELINE_KEY in by_number[killed].user_attrs:
        assert retries[0].user_attrs[BASELINE_KEY] == by_number[killed].user_attrs[BASELINE_KEY]
    # Completed trials are never re-evaluated on resume: those done at the kill kept their values.
    assert all(by_number[n].state == TrialState.COMPLETE for n, s in states.items() if s == 1)


SLOW = "synthetic-production-a"
"""1,000 tables: trials of some milliseconds, so the second worker starts before the first is done."""


@pytest.mark.slow
def test_two_jobs_share_one_study(tmp_path: Path) -> None:
    journal = tmp_path / "j.journal"
    path = study_file(tmp_path, "j", workload=SLOW, budget=200, seed=3, storage=str(journal))
    result = run_dse("run", str(path), "--jobs", "2", "--quiet", "--no-report", timeout=180)
    assert result.returncode == 0, result.stderr
    # The command quiets Optuna, and its --jobs worker process logs as it does: no per-trial
    # INFO line ("[I <time>] Trial N finished ...") from either.
    assert not [line for line in result.stderr.splitlines() if line.startswith("[I ")], result.stderr
    study = stored(journal, "j")
    done = complete(study)
    assert len(done) == 200
    assert not [t for t in study.trials if t.state in (TrialState.RUNNING, TrialState.FAIL)]
    assert len({t.number for t in study.trials}) == len(study.trials)
    assert len({t.system_attrs[WORKER_KEY] for t in done}) == 2  # both processes worked
    assert sorted(t.user_attrs.get(BASELINE_KEY) for t in study.trials
                  if BASELINE_KEY in t.user_attrs) == ["dgx-h100", "hgx-h200"]
    assert len({design_key(t) for t in done if BASELINE_KEY in t.user_attrs}) == 2

    # --trials N with two jobs: N more in all, not N per worker.
    path = study_file(tmp_path, "j", workload=SLOW, budget=2000, seed=3, storage=str(journal))
    result = run_dse("run", str(path), "--jobs", "2", "--trials", "30", "--quiet", "--no-report")
    assert result.returncode == 0, result.stderr
    assert len(complete(stored(journal, "j"))) == 230


def test_a_failing_worker_process_reports_one_line_and_exit_code_1(capfd: pytest.CaptureFixture[str]) -> None:
    from dse.search.parallel import WorkerExits, join_workers, start_workers

    exits = join_workers(start_workers("no-such-study", None, until=1, count=1))
    assert exits == WorkerExits(failed=(1,), killed=())
    lines = capfd.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dse: error: ") and "no-such-study" in lines[0], lines


def test_run_leaves_the_snapshot_cache_current(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`dse run` ends by bringing the journal's snapshot cache up to date, so that the first
    read-only command after it replays nothing (a large study's first `dse status` would
    otherwise read its whole journal); what that command reads is still Optuna's reading."""
    from dse.search.storage import journal_snapshot as snapshot_module

    monkeypatch.setattr(snapshot_module, "CACHE_AFTER_BYTES", 0)  # cache even a small journal
    path = study_file(tmp_path, budget=8)
    journal = tmp_path / "s.journal"
    result = run("run", str(path), "--quiet", "--no-report")
    assert result.exit_code == 0, result.output
    data = journal.read_bytes()
    assert snapshot_module._load_cache(journal, data)[1] == len(data)
    read = snapshot_module.read_snapshot(journal)
    assert read is not None
    ours = optuna.load_study(study_name="s", storage=read).get_trials(deepcopy=False)
    assert [(t.number, t.state, t.values) for t in ours] == [
        (t.number, t.state, t.values) for t in stored(journal).get_trials(deepcopy=False)]


def test_worker_that_completes_the_study_leaves_the_snapshot_cache_current(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A study filled by `dse worker` ends as one filled by `dse run`: the worker that sees the
    budget complete brings the snapshot cache up to date (a worker stopped earlier does not)."""
    from dse.search.storage import journal_snapshot as snapshot_module

    monkeypatch.setattr(snapshot_module, "CACHE_AFTER_BYTES", 0)
    path = study_file(tmp_path, budget=8)
    journal = tmp_path / "s.journal"
    assert run("run", str(path), "--quiet", "--no-report", "--trials", "3").exit_code == 0
    partial = run("worker", str(path), "--trials", "2")
    assert partial.exit_code == 0, partial.output
    data = journal.read_bytes()
    assert snapshot_module._load_cache(journal, data)[1] < len(data)  # not refreshed mid-study
    result = run("worker", str(path))
    assert result.exit_code == 0, result.output
    assert "8 of 8 complete" in result.output
    data = journal.read_bytes()
    assert snapshot_module._load_cache(journal, data)[1] == len(data)
