"""What a person reads (issue 18): the placement plan of ``dse evaluate --plan``; ``dse status`` and
``dse pareto`` tables that fit 80 columns, one row per design, numbers never cut; ...

Each test drives the CLI as a user would and checks what they read against the model's own numbers.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState
from study_helpers import CHEAP, ROOT, write_study
from typer.testing import CliRunner

from dse.cli import app
from dse.cli.tables import distinct_designs
from dse.model.evaluate import evaluate
from dse.model.parameters import load_calibration
from dse.model.system import load_system
from dse.model.whatif import bottom_mlp_leads, step_from_stages, what_if
from dse.model.workload import load_workload, workload_presets
from dse.outputs.labels import human_number
from dse.outputs.plan import plan_summary
from dse.outputs.timeline import timeline
from dse.search.algorithms.dedup import DUPLICATE_KEY
from dse.search.storage.journal_writing import journal_storage
from dse.search.storage.recovery import RETRY_KEY

runner = CliRunner()
NARROW = {"COLUMNS": "80"}


def test_plan_json_lists_every_table_and_its_bytes() -> None:
    result = runner.invoke(app, ["evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-dcnv2",
                                 "--set", "nodes=16", "--plan", "--json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)["plan"]
    assert [t["table"] for t in plan["tables"]] == list(range(26))
    assert len(plan["devices"]) == 128
    for t in plan["tables"]:
        assert t["sharding"] in ("replicated", "table_wise", "column_wise", "row_wise", "grid")
        assert set(t["tiers"]) <= {"hbm", "host", "cache"} and t["tiers"]
        assert sum(t["bytes_by_device"].values()) == pytest.approx(t["size_bytes"] * t["copies"],
                                                                     rel=1e-12)
        assert sorted(int(d) for d in t["bytes_by_device"]) == t["devices"]
        assert t["copies"] == (128 if t["sharding"] == "replicated" else 1)
    assert sum(t["embedding_share"] for t in plan["tables"]) == pytest.approx(1.0)
    kinds = {t["sharding"] for t in plan["tables"]}
    assert {"replicated", "column_wise", "row_wise"} <= kinds
    assert any(t["hot_rows"] for t in plan["tables"])


def test_plan_devices_match_the_step() -> None:
    """The busiest device's embedding and all-to-all seconds are the step's stages."""
    wl, sysm = load_workload("mlperf-dlrm-dcnv2"), load_system("dgx-h100", (("nodes", 16),))
    ev = evaluate(wl, sysm)
    summary = plan_summary(ev, load_calibration())
    st = ev.timing.stages
    emb = max(st.emb_fwd, st.host_fwd) + max(st.emb_bwd, st.host_bwd)
    assert max(d.embedding_s for d in summary.devices) == pytest.approx(emb, rel=1e-12)
    a2a = 2 * max(st.a2a_fabric, st.a2a_network)
    assert max(d.alltoall_s for d in summary.devices) == pytest.approx(a2a, rel=1e-12)
    assert [d.hbm_used_gb * 1e9 for d in summary.devices] == pytest.approx(ev.plan.memory.device.used_bytes)


def test_plan_host_tiers() -> None:
    """A plan with host-resident tables shows their tier and the node's DDR."""
    ev = evaluate(load_workload("zion-2019"), load_system("zion"))
    summary = plan_summary(ev, load_calibration())
    for t in summary.tables:
        # Each column-wise chunk keeps its own row-wise optimizer state (zion-2019's optimizer).
        held = sum(t.bytes_by_device.values())
        assert t.size_bytes * t.copies * (1 - 1e-12) <= held <= t.size_bytes * t.copies * 1.03
        if t.sharding != "column_wise":
            assert held == pytest.approx(t.size_bytes * t.copies, rel=1e-12)
    tiers = {tier for t in summary.tables for tier in t.tiers}
    assert tiers & {"host", "cache"}
    assert max(d.ddr_used_gb for d in summary.devices) > 0


def test_plan_printed() -> None:
    result = runner.invoke(app, ["evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-dcnv2",
                                 "--set", "nodes=16", "--plan"], env=NARROW)
    assert result.exit_code == 0, result.output
    assert "placement by table" in result.stdout and "placement by device" in result.stdout
    assert "column-wise" in result.stdout and "all 128" in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80


# --- terminal tables at 80 columns ---------------------------------------------------------------


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("readable")
    path = write_study(tmp / "s.toml", name="s", **CHEAP, sampler="random", budget=25, seed=1,
                       storage=str(tmp / "s.journal"))
    path.write_text(path.read_text().replace("throughput-vs-capex", "throughput-capex-power"))
    result = runner.invoke(app, ["run", str(path), "--quiet", "--no-report"])
    assert result.exit_code == 0, result.output
    return path


def table_cells(text: str) -> list[list[str]]:
    """The body cells of every rich table row in ``text`` (lines between vertical bars)."""
    return [[c.strip() for c in line.split("│")[1:-1]] for line in text.splitlines()
            if line.startswith("│")]


@pytest.mark.parametrize("command", ["status", "pareto"])
def test_tables_fit_80_columns_and_cut_nothing(finished: Path, command: str) -> None:
    result = runner.invoke(app, [command, str(finished)], env=NARROW)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, result.stdout
    cells = table_cells(result.stdout)
    assert cells and not any(c.endswith("…") for row in cells for c in row), result.stdout
    assert "samples/s" in result.stdout and "capex USD" in result.stdout and "power kW" in result.stdout
    # No internal name is a header.
    assert "throughput_samples_per_s" not in result.stdout and "param:" not in result.stdout


def test_pareto_rows_best_first_with_every_front_trial(finished: Path) -> None:
    front = json.loads(runner.invoke(app, ["pareto", str(finished), "--json"]).stdout)
    result = runner.invoke(app, ["pareto", str(finished), "--columns",
                                 "trials,throughput_samples_per_s,nodes"], env=NARROW)
    assert result.exit_code == 0, result.output
    rows = [r for r in table_cells(result.stdout) if r[0]]
    numbers = [int(n) for r in rows for n in r[0].split()[0].split(",") if n]
    assert sorted(numbers) == sorted(r["number"] for r in front)
    throughput = [int(r[1].replace(",", "")) for r in rows]
    assert throughput == sorted(throughput, reverse=True)
    assert "capex USD" not in result.stdout  # only the chosen columns


def test_unknown_column_is_one_line_error(finished: Path) -> None:
    result = runner.invoke(app, ["pareto", str(finished), "--columns", "trials,speed"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "--columns" in result.stderr and "speed" in result.stderr


def test_one_row_per_distinct_design() -> None:
    rows = [{"number": n, "baseline": "", "param:nodes": nodes, "capex_usd": capex}
            for n, nodes, capex in ((3, 2, 200.0), (1, 1, 100.0), (7, 2, 200.0), (4, 4, 400.0))]
    designs = distinct_designs(rows, [("capex_usd", "minimize")])
    assert [d.trials for d in designs] == [(1,), (3, 7), (4,)]
    designs = distinct_designs(rows, [("capex_usd", "maximize")])
    assert [d.trials for d in designs] == [(4,), (3, 7), (1,)]


def test_numbers_never_in_scientific_notation() -> None:
    for value in (1.278e5, 1.5e-5, 3.0e12, 0.5, 12.0):
        text = human_number(value)
        assert "e" not in text.lower()
        assert float(text.replace(",", "")) == pytest.approx(value, rel=5e-3)


# --- Ctrl-C during dse run -----------------------------------------------------------------------


def _dse_run(path: Path) -> subprocess.Popen[str]:
    """``dse run PATH --quiet --no-report`` in a subprocess that a SIGINT interrupts (a shell's
    background job ignores SIGINT; a terminal's Ctrl-C does not)."""
    return subprocess.Popen(
        [sys.executable, "-m", "dse", "run", str(path), "--quiet", "--no-report"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


@pytest.mark.slow
def test_ctrl_c_during_run_says_what_was_kept(tmp_path: Path) -> None:
    """A real SIGINT to ``dse run`` in a subprocess: exit 130, one line on stderr, no traceback;
    the resume retries a trial the interrupt failed."""
    path = write_study(tmp_path / "s.toml", name="s", **CHEAP, sampler="random", budget=100_000,
                       seed=1, storage=str(tmp_path / "s.journal"))
    journal = tmp_path / "s.journal"
    proc = _dse_run(path)
    deadline = time.monotonic() + 180  # a new study's pre-trial sweep is slow on a loaded machine
    while time.monotonic() < deadline and (
            not journal.exists() or journal.read_bytes().count(b'"state":1') < 20):
        time.sleep(0.2)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("interrupted: "), err
    study = optuna.load_study(study_name="s", storage=journal_storage(journal))
    kept = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
    assert lines[0] == f"interrupted: {kept:,} of 100,000 trials kept; `dse run {path}` resumes"
    # A trial the interrupt failed, or left running when it came between Optuna's own steps (the
    # resume then recovers it), is retried by the resume: the retry completes, or, when the cut
    # trial was itself a repeat being pruned, it is pruned as the repeat of a completed trial.
    cut = [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL, TrialState.RUNNING))]

    resumed = runner.invoke(app, ["run", str(path), "--quiet", "--no-report", "--trials", "3"])
    assert resumed.exit_code == 0, resumed.output
    study = optuna.load_study(study_name="s", storage=journal_storage(journal))
    complete = {t.number for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))}
    retried = {t.user_attrs.get(RETRY_KEY) for t in study.get_trials(deepcopy=False)
               if t.number in complete or t.user_attrs.get(DUPLICATE_KEY) in complete}
    assert set(cut) <= retried, (cut, err)


def test_ctrl_c_while_a_new_study_sweeps_says_so_and_the_next_run_completes_it(tmp_path: Path) -> None:
    """A real SIGINT during a new study's pre-trial coarse-to-fine sweep (seconds): exit 130 and
    one line saying so; the next `dse run` completes the recording and runs trials."""
    path = write_study(tmp_path / "s.toml", name="s", **CHEAP, budget=60, seed=1,
                       storage=str(tmp_path / "s.journal"))
    journal = tmp_path / "s.journal"
    proc = _dse_run(path)
    deadline = time.monotonic() + 120
    # The study's definition is recorded before the sweep, its budget after it.
    while time.monotonic() < deadline and (not journal.exists()
                                           or b"dse:files" not in journal.read_bytes()):
        time.sleep(0.05)
    assert b"dse:budget" not in journal.read_bytes()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and out == ""
    assert err.strip() == (f"interrupted while creating the study, before its first trial; "
                           f"`dse run {path}` completes it")
    resumed = runner.invoke(app, ["run", str(path), "--quiet", "--no-report", "--trials", "3"])
    assert resumed.exit_code == 0, resumed.output
    study = optuna.load_study(study_name="s", storage=journal_storage(journal))
    assert study.user_attrs["dse:budget"] == 60
    assert len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))) == 3


# --- time and cost to train the workload's own dataset -------------------------------------------


def test_training_time_uses_the_workloads_own_dataset() -> None:
    criteo = evaluate(load_workload("mlperf-dlrm-dcnv2"), load_system("dgx-h100"))
    seconds, usd = criteo.dataset_pass() or (0.0, 0.0)
    assert criteo.workload.samples_per_epoch == 4_195_197_692
    assert seconds == pytest.approx(4_195_197_692 / criteo.throughput_samples_per_s, rel=1e-12)
    assert usd == pytest.approx(criteo.usd_per_billion_samples * 4.195197692, rel=1e-12)
    assert criteo.usd_per_billion_samples == pytest.approx(
        criteo.economics.usd_per_million_samples * 1e3, rel=1e-12)
    synthetic = evaluate(load_workload("zion-2019"), load_system("zion"))
    assert synthetic.workload.samples_per_epoch == 0 and synthetic.dataset_pass() is None
    data = synthetic.to_dict()
    assert data["dataset_time_s"] is None and data["samples_per_epoch"] is None
    assert "epoch_time_s" in data  # the Criteo-epoch keys stay (a contract)


def test_training_line_printed() -> None:
    result = runner.invoke(app, ["evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-dcnv2"],
                           env={"COLUMNS": "200"})
    assert "one epoch of its dataset (4,195,197,692 samples) in" in result.stdout
    assert "USD per billion samples" in result.stdout
    result = runner.invoke(app, ["evaluate", "-s", "zion", "-w", "zion-2019"], env={"COLUMNS": "200"})
    assert "no time to train: zion-2019 states no dataset size" in result.stdout
    assert "Criteo" not in result.stdout


# --- compare and what-if -------------------------------------------------------------------------


def test_step_from_stages_reproduces_every_preset() -> None:
    """The what-if recomputes the step from raw stage durations exactly as the model does."""
    for workload in workload_presets():
        for system in ("dgx-h100", "zion", "a100-pcie-x4", "gb200-nvl72"):
            for over in ((("nodes", 4),), (("nodes", 2), ("software.bottom_mlp_on_one_device", True))):
                ev = evaluate(load_workload(workload), load_system(system, over))
                assert step_from_stages(ev.timing.stages, bottom_mlp_leads(ev)) == ev.step_time_s
                faster = what_if(ev)
                assert all(t <= ev.step_time_s for t in faster.values())
                # A stage off the critical path gains nothing.
                for stage, seconds in ev.breakdown_s.items():
                    if seconds == 0.0 and stage != "input_exposed":
                        assert faster[stage] == ev.step_time_s


def test_what_if_answers_more_than_the_bottleneck_label() -> None:
    """On 16 DGX H100 the dense-gradient allreduce binds the backward phase and is the largest
    share of the critical path; but halving it gains only until the all-to-all and embedding
    update beside it bind, less than half its share (hand-checked from the raw stages)."""
    result = runner.invoke(app, ["evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-dcnv2", "--set",
                                 "nodes=16", "--what-if", "--json"])
    data = json.loads(result.stdout)
    faster, raw, step = data["step_s_if_2x_faster"], data["stages_s"], data["step_time_s"]
    assert set(faster) == set(data["breakdown_s"])
    assert data["bottleneck"] == "allreduce_exposed"
    beside = max(max(raw["a2a_fabric"], raw["a2a_network"]) + raw["emb_bwd"],
                 raw["top_wgrad"] + raw["bottom_bwd"])
    allreduce = raw["allreduce"]
    assert beside < allreduce
    gain = allreduce - max(beside, allreduce / 2)
    assert faster["allreduce_exposed"] == pytest.approx(step - gain, rel=1e-12)
    assert gain < data["breakdown_s"]["allreduce_exposed"] / 2
    assert faster["dense_compute"] < step * 0.95
    printed = runner.invoke(app, ["evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-dcnv2", "--set",
                                  "nodes=16", "--what-if"], env=NARROW)
    assert "step time were one stage 2x faster" in printed.stdout


def test_compare_two_systems() -> None:
    result = runner.invoke(app, ["compare", "dgx-h100", "hgx-h200", "-w", "mlperf-dlrm-dcnv2",
                                 "--set", "nodes=4", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    one = evaluate(load_workload("mlperf-dlrm-dcnv2"), load_system("dgx-h100", (("nodes", 4),)))
    assert data["designs"] == ["dgx-h100", "hgx-h200"]
    assert data["metrics"]["throughput_samples_per_s"][0] == one.throughput_samples_per_s
    assert sum(a for a, _ in data["breakdown_s"].values()) == pytest.approx(one.step_time_s)
    assert data["bottleneck"][0] == one.bottleneck
    printed = runner.invoke(app, ["compare", "dgx-h100", "hgx-h200", "-w", "mlperf-dlrm-dcnv2"],
                            env=NARROW)
    assert printed.exit_code == 0 and "upgrade first" in printed.stdout and "bound by" in printed.stdout
    assert max(len(line) for line in printed.stdout.splitlines()) <= 80
    missing = runner.invoke(app, ["compare", "dgx-h100", "hgx-h200"])
    assert missing.exit_code == 2 and "--workload" in missing.stderr


def test_compare_two_trials(finished: Path) -> None:
    front = json.loads(runner.invoke(app, ["pareto", str(finished), "--json"]).stdout)
    a, b = front[0], front[-1]
    result = runner.invoke(app, ["compare", str(a["number"]), str(b["number"]), "--study",
                                 str(finished), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["metrics"]["capex_usd"] == [a["capex_usd"], b["capex_usd"]]
    assert data["metrics"]["throughput_samples_per_s"] == [a["throughput_samples_per_s"],
                                                           b["throughput_samples_per_s"]]
    bad = runner.invoke(app, ["compare", "0", "99999", "--study", str(finished)])
    assert bad.exit_code == 2 and "99999" in bad.stderr


# --- the step's timeline -------------------------------------------------------------------------


@pytest.mark.parametrize(("workload", "system", "over"), [
    ("mlperf-dlrm-dcnv2", "dgx-h100", (("nodes", 16),)),
    ("zion-2019", "zion", ()),
    ("mlperf-dlrm-v1", "dgx-a100", (("nodes", 2), ("software.bottom_mlp_on_one_device", True))),
])
def test_timeline_lays_out_the_critical_path(workload: str, system: str,
                                             over: tuple[tuple[str, object], ...]) -> None:
    ev = evaluate(load_workload(workload), load_system(system, over))
    bars = timeline(ev)
    path = [b for b in bars if b.critical]
    assert sum(b.end_s - b.start_s for b in path) == pytest.approx(ev.step_time_s, rel=1e-9)
    # Critical bars follow one another without gaps from 0 to the step's end.
    path.sort(key=lambda b: b.start_s)
    assert path[0].start_s == 0.0
    assert path[-1].end_s == pytest.approx(ev.step_time_s, rel=1e-9)
    for before, after in itertools.pairwise(path):
        assert after.start_s == pytest.approx(before.end_s, rel=1e-9, abs=1e-15)
    assert all(b.end_s <= ev.step_time_s * (1 + 1e-9) for b in bars)


def test_evaluate_html_writes_the_timeline(tmp_path: Path) -> None:
    out = tmp_path / "t" / "timeline.html"
    result = runner.invoke(app, ["evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-dcnv2", "--html",
                                 str(out)])
    assert result.exit_code == 0, result.output
    assert f"timeline written to {out}" in result.stdout
    page = out.read_text(encoding="utf-8")
    # The figure's script travels packed (as the report's): read it as the browser inflates it.
    packed = page.split("<script id='figures-gz' type='application/gzip'>", 1)[1].split("<", 1)[0]
    figure = _inflate(packed)
    assert "critical path" in figure and "embedding backward+update (HBM)" in figure
    assert "<title>dse timeline: mlperf-dlrm-dcnv2" in page


def _inflate(packed: str) -> str:
    """The text :func:`dse.outputs.figures.pack` packed: its alphabet back to base 85, gunzipped."""
    import base64
    import gzip

    from dse.outputs.figures import PACK_ALPHABET

    b85 = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
    table = bytes.maketrans(PACK_ALPHABET.encode("ascii"), b85)
    return gzip.decompress(base64.b85decode(packed.encode("ascii").translate(table))).decode("utf-8")


def test_an_error_raised_while_handling_ctrl_c_counts_as_the_interrupt() -> None:
    """Optuna's ``_run_trial`` can turn a Ctrl-C during its tell into an ``UnboundLocalError``
    (its ``finally`` reads a variable the interrupt left unset); ``dse run`` must still say what
    was kept in one line, so such an error is recognised by the interrupt in its context."""
    from dse.cli.study import _raised_by_interrupt

    def tell() -> None:
        try:
            raise KeyboardInterrupt
        finally:
            raise UnboundLocalError("cannot access local variable 'updated_state'")

    try:
        tell()
    except UnboundLocalError as exc:
        assert _raised_by_interrupt(exc)
    assert not _raised_by_interrupt(UnboundLocalError("a bug of its own"))
