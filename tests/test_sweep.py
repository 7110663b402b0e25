"""Exhaustive sweeps: enumeration with conditions, equality with the model, the exact front against a
brute-force loop, Sobol samples, Parquet, warm starts and the CLI."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pytest
from typer.testing import CliRunner

from dse.cli import app
from dse.errors import DseInputError
from dse.model.evaluate import Memo, evaluate
from dse.model.system import load_system, load_system_spec, resolve_system
from dse.model.workload import Workload, load_workload
from dse.search.algorithms.pareto import pareto_mask
from dse.search.algorithms.sweep import (
    WARM_START_KEY,
    coarse_grid,
    coarse_space,
    design_grid,
    run_sweep,
    sobol_designs,
    warm_start,
    write_parquet,
)
from dse.search.study.encoding import decode_params
from dse.search.study.objective_sets import ObjectiveSet, load_objectives
from dse.search.study.search_space import SearchSpace, load_space, space_from_mapping

SMALL = {
    "name": "small",
    "base_system": "zion",
    "fixed": {"nodes": 1},
    "parameters": {
        "node.accelerators": {"type": "ordinal", "choices": [2, 8]},
        "node.hbm_gb": {"type": "ordinal", "choices": [16.0, 32.0]},
        "node.ddr_gb": {"type": "ordinal", "choices": [512.0, 1536.0]},
        "node.scaleup": {"type": "categorical", "choices": ["none", "ring", "switch"]},
        "node.scaleup_gb_s": {"type": "ordinal", "choices": [50.0, 150.0],
                              "when": {"node.scaleup": ["ring", "switch"]}},
        "node.nics": {"type": "int", "low": 1, "high": 2},
        "node.nic_gbit_s": {"type": "ordinal", "choices": [100, 400]},
    },
}


def small_space() -> SearchSpace:
    return space_from_mapping(json.loads(json.dumps(SMALL)), "test space")


def brute_force(space: SearchSpace, wl: Workload, objectives: ObjectiveSet) -> dict[frozenset[Any], Any]:
    """Every design by a plain product (inactive parameters dropped, duplicates merged), each built
    through the system file path a study trial takes and scored by ``evaluate`` alone."""
    names = list(space.parameters)
    designs: dict[frozenset[Any], dict[str, Any]] = {}
    for values in itertools.product(*(space.parameters[n].grid() for n in names)):
        chosen: dict[str, Any] = {}
        for n, v in zip(names, values, strict=True):
            if space.active(n, chosen):
                chosen[n] = v
        designs[frozenset(chosen.items())] = chosen
    out: dict[frozenset[Any], Any] = {}
    for key, design in designs.items():
        system = resolve_system(load_system_spec(space.base_system, space.overrides(design)))
        metrics = evaluate(wl, system).metrics()
        ok = all(v <= 0 for v in objectives.violations(metrics).values())
        out[key] = (metrics, ok, objectives.values(metrics))
    return out


def brute_front(scored: dict[frozenset[Any], Any], objectives: ObjectiveSet) -> set[frozenset[Any]]:
    signs = [-1.0 if o.direction == "maximize" else 1.0 for o in objectives.objectives]
    pts = {k: [s * v for s, v in zip(signs, vals, strict=True)] for k, (_, ok, vals) in scored.items() if ok}
    front = set()
    for k, a in pts.items():
        dominated = any(all(x <= y for x, y in zip(b, a, strict=True)) and any(x < y for x, y in
                        zip(b, a, strict=True)) for b in pts.values())
        if not dominated:
            front.add(k)
    return front


def test_grid_respects_conditions() -> None:
    space = small_space()
    grid = design_grid(space)
    # 2 x 2 x 2 x (none + 2 fabrics x 2 bandwidths) x 2 x 2
    assert len(grid) == 2 * 2 * 2 * (1 + 2 * 2) * 2 * 2
    rows = {frozenset(grid.design(i).items()) for i in range(len(grid))}
    assert len(rows) == len(grid)
    for i in range(len(grid)):
        d = grid.design(i)
        assert ("node.scaleup_gb_s" in d) == (d["node.scaleup"] != "none")


@pytest.mark.parametrize("objective_set", ["throughput-vs-capex", "throughput-capex-power"])
def test_front_equals_brute_force(objective_set: str) -> None:
    space = small_space()
    wl = load_workload("zion-2019")
    objectives = load_objectives(objective_set)
    scored = brute_force(space, wl, objectives)
    expected = brute_front(scored, objectives)
    result = run_sweep(space, wl, objectives, jobs=2)
    got = {frozenset(d.items()) for d in result.front_designs()}
    assert len(result.frame) == len(scored)
    assert got == expected
    assert 0 < len(expected) < len(scored)
    # Some designs miss memory (512 GB of DDR for ~800 GB of tables) and never reach the front.
    assert not result.frame["eligible"].all()


def test_sweep_metrics_equal_evaluate() -> None:
    space = load_space("zion-node-grid")
    wl = load_workload("mlperf-dlrm-v1")
    objectives = load_objectives("throughput-vs-capex")
    full = design_grid(space)
    rng = np.random.default_rng(7)
    picks = np.sort(rng.choice(len(full), size=300, replace=False))
    grid = type(full)(full.names, full.choices, full.codes[picks])
    result = run_sweep(space, wl, objectives, jobs=1, grid=grid)
    for row in range(len(grid)):
        design = grid.design(row)
        system = resolve_system(load_system_spec(space.base_system, space.overrides(design)))
        ev = evaluate(wl, system)
        for key, value in ev.metrics().items():
            got = result.frame[key].iat[row]
            if isinstance(value, str):
                assert got == value
            elif isinstance(value, bool):
                assert bool(got) == value
            elif math.isfinite(value):
                assert got == pytest.approx(value, rel=1e-9, abs=1e-12), (key, design)
            else:
                assert not math.isfinite(got)
        for stage, seconds in ev.breakdown_s.items():
            assert result.frame[f"breakdown_s:{stage}"].iat[row] == pytest.approx(seconds, rel=1e-9)


def test_memo_returns_what_evaluate_returns() -> None:
    wl = load_workload("mlperf-dlrm-dcnv2")
    memo = Memo(wl, load_calibration())
    for nodes, fabric, gb_s, nics in itertools.product((1, 2), ("switch", "ring"), (100.0, 450.0), (1, 8)):
        system = load_system("dgx-h100", (("nodes", nodes), ("node.scaleup", fabric),
                                          ("node.scaleup_gb_s", gb_s), ("node.nics", nics)))
        direct = evaluate(wl, system)
        memoised = evaluate(wl, system, memo.calibration, memo=memo)
        assert memoised.metrics() == direct.metrics()
        assert memoised.breakdown_s == direct.breakdown_s
    assert len(memo.plans) == 2  # placements depend on the node count here, not on the links


def load_calibration() -> Any:
    from dse.model.parameters import load_calibration as load

    return load()


def test_pareto_mask_matches_pairwise_check() -> None:
    rng = np.random.default_rng(1)
    for dims in (1, 2, 3):
        loss = rng.integers(0, 6, size=(200, dims)).astype(float)  # many ties and duplicates
        expected = [not any(np.all(loss[j] <= loss[i]) and np.any(loss[j] < loss[i])
                            for j in range(len(loss))) for i in range(len(loss))]
        assert pareto_mask(loss).tolist() == expected


def test_float_parameters_need_samples() -> None:
    space = load_space("zion-node")
    with pytest.raises(DseInputError, match="--samples"):
        design_grid(space)


def test_sobol_sample() -> None:
    pytest.importorskip("scipy")
    space = load_space("zion-node")
    grid = sobol_designs(space, 64, seed=3)
    assert len(grid) == 64
    for i in range(len(grid)):
        d = grid.design(i)
        for name, value in d.items():
            assert space.parameters[name].contains(value), (name, value)
        assert ("node.scaleup_gb_s" in d) == (d["node.scaleup"] != "none")
    result = run_sweep(space, load_workload("criteo-1tb-small"), load_objectives("throughput-vs-capex"),
                       jobs=1, grid=grid)
    assert len(result.front) >= 1


def test_parquet_round_trip(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    space = small_space()
    result = run_sweep(space, load_workload("criteo-1tb-small"), load_objectives("throughput-vs-capex"),
                       jobs=1)
    path = tmp_path / "sweep.parquet"
    write_parquet(result, str(path))
    back = pd.read_parquet(path)
    assert len(back) == len(result.frame)
    assert back["front"].sum() == len(result.front)
    assert back["node.scaleup_gb_s"].isna().sum() == (back["node.scaleup"] == "none").sum()
    assert {"throughput_samples_per_s", "capex_usd", "breakdown_s:dense_compute", "eligible"} <= set(back)


def test_coarse_grid_stays_in_space() -> None:
    space = load_space("zion-node")
    coarse, grid = coarse_grid(space, max_designs=5_000)
    assert 0 < len(grid) <= 5_000
    for name, p in coarse.parameters.items():
        assert all(space.parameters[name].contains(v) for v in p.grid())
    # A float range coarsened to two points keeps its ends (zion-node's HBM is now the part's
    # offered sizes, an ordinal; its host DDR is still a range).
    assert coarse_space(space, 2).parameters["node.ddr_gb"].choices == (256.0, 8192.0)


def test_warm_start_enqueues_coarse_front_once() -> None:
    space = small_space()
    wl = load_workload("zion-2019")
    objectives = load_objectives("throughput-vs-capex")
    study = optuna.create_study(directions=objectives.directions)
    designs = warm_start(study, space, wl, objectives, max_trials=3)
    assert 1 <= len(designs) <= 3
    waiting = study.get_trials(states=(optuna.trial.TrialState.WAITING,))
    assert [decode_params(space, t.system_attrs["fixed_params"]) for t in waiting] == designs
    assert study.user_attrs[WARM_START_KEY]["enqueued"] == len(designs)
    assert warm_start(study, space, wl, objectives) == []  # resuming does not seed again


def test_cli_sweep(tmp_path: Path) -> None:
    space_file = tmp_path / "small.toml"
    lines = ['name = "small"', 'base_system = "zion"', "[fixed]", "nodes = 1"]
    for name, p in SMALL["parameters"].items():  # type: ignore[attr-defined]
        lines.append(f'[parameters."{name}"]')
        for k, v in p.items():
            if k == "when":
                lines.append('when = { "node.scaleup" = ["ring", "switch"] }')
            else:
                lines.append(f"{k} = {json.dumps(v)}")
    space_file.write_text("\n".join(lines) + "\n")
    runner = CliRunner()
    out = tmp_path / "s.parquet"
    got = runner.invoke(app, ["sweep", str(space_file), "--workload", "criteo-1tb-small",
                              "--out", str(out), "--jobs", "1"])
    assert got.exit_code == 0, got.output
    assert "exact front" in got.output and "designs/s" in got.output and out.exists()
    got = runner.invoke(app, ["sweep", str(space_file), "-w", "criteo-1tb-small", "--json", "--jobs", "1"])
    data = json.loads(got.output)
    assert data["designs"] == 160 and data["front_size"] == len(data["front"]) > 0
    got = runner.invoke(app, ["sweep", "zion-node", "-w", "criteo-1tb-small"])
    assert got.exit_code == 2 and "--samples" in got.output


def test_warm_start_study_seeds_a_run(tmp_path: Path) -> None:
    """What `dse run --warm-start sweep` does: seed the opened study, then run it."""
    import dataclasses

    from dse.search.algorithms.sweep import warm_start_study
    from dse.search.runner import open_study, run_study
    from dse.search.storage.opening import open_storage
    from dse.search.study.study_file import load_study_spec

    spec = dataclasses.replace(load_study_spec("zion-2020-grid"), budget=25,
                               storage=str(tmp_path / "w.journal"))
    study = open_study(spec, open_storage(None, spec))
    seeded = warm_start_study(study, spec)
    assert 1 <= len(seeded) <= spec.budget // 5
    done = run_study(spec).get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert len(done) == spec.budget
    warm = [t for t in done if t.user_attrs.get("warm_start") == "sweep"]
    assert len(warm) == len(seeded)
    assert warm_start_study(study, spec) == []


def test_run_warm_start_cli(tmp_path: Path) -> None:
    import subprocess
    import sys

    study = tmp_path / "ws.toml"
    study.write_text('name = "ws"\nworkload = "mlperf-dlrm-v1"\nspace = "zion-node-grid"\n'
                     'objectives = "throughput-vs-capex"\nbudget = 40\nseed = 1\n'
                     f'storage = "{tmp_path / "ws.journal"}"\n')
    cmd = [sys.executable, "-m", "dse", "run", str(study), "--no-report", "--quiet"]
    run = subprocess.run([*cmd, "--warm-start", "sweep"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "designs of a coarse sweep's front enqueued" in run.stderr
    assert "40 of 40 trials complete" in run.stdout
    bad = subprocess.run([*cmd, "--warm-start", "bogus"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_run_warm_start_sweep_seeds_any_sampler_from_the_refined_front(tmp_path: Path) -> None:
    """`--warm-start sweep` on a space small enough for the coarse-to-fine sweep seeds a TPE study
    from that sweep's front (computed once, when the study is created), with up to a fifth of
    its budget; the same sweep is the study's hypervolume reference."""
    import subprocess
    import sys

    from dse.search.algorithms.reference import study_reference
    from dse.search.algorithms.sweep import WARM_START_KEY

    study = tmp_path / "wt.toml"
    study.write_text('name = "wt"\nworkload = "mlperf-dlrm-v1"\nspace = "zion-node-grid"\n'
                     'objectives = "throughput-vs-capex"\nbudget = 60\nseed = 1\nsampler = "tpe"\n'
                     f'storage = "{tmp_path / "wt.journal"}"\n')
    cmd = [sys.executable, "-m", "dse", "run", str(study), "--no-report", "--quiet", "--trials", "0",
           "--warm-start", "sweep"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "designs of a coarse-to-fine sweep's front enqueued" in run.stderr
    stored = optuna.load_study(study_name="wt", storage=optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(tmp_path / "wt.journal"))))
    info = stored.user_attrs[WARM_START_KEY]
    waiting = [t for t in stored.get_trials() if t.user_attrs.get("warm_start") == "sweep"]
    assert info["method"] == "coarse-to-fine sweep" and 1 <= len(waiting) == info["enqueued"] <= 12
    ref = study_reference(stored)
    assert ref is not None and ref.method == "coarse-to-fine sweep" and ref.designs == info["designs"]
    again = subprocess.run(cmd, capture_output=True, text=True)
    assert again.returncode == 0 and "enqueued" not in again.stderr


def test_a_sweep_from_a_process_with_threads_spawns_its_workers() -> None:
    """A forked worker can inherit a lock another thread holds and wait on it forever (a CI run
    under pytest-xdist hung so): a sweep forks its workers only from a one-thread process."""
    import threading

    from dse.search.algorithms.sweep import _start_method

    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert _start_method() == "spawn"
    finally:
        stop.set()
        other.join()
    assert _start_method() == ("spawn" if threading.active_count() > 1 else "fork")


def test_a_sweep_worker_takes_the_default_signal_handling() -> None:
    """A forked pool worker inherits its parent's Python handlers; ``dse run``'s SIGTERM handler
    (stop after the trial) would make it ignore the pool's SIGTERM and the join hang. The
    initializer restores the default SIGTERM and leaves Ctrl-C to the parent."""
    import signal

    from dse.search.algorithms import sweep

    before = (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT), sweep._CTX)
    try:
        signal.signal(signal.SIGTERM, lambda *_: None)
        sweep._init_worker(before[2])  # type: ignore[arg-type]
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, before[0])
        signal.signal(signal.SIGINT, before[1])
        sweep._CTX = before[2]
