"""The state-change exclusion rule: on synthetic logs at its thresholds, in the measurement files,
in the fit and in ``dse validate``."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dse.calibration.fit import fit, predict_full, validate
from dse.calibration.measurements import COLUMNS, STATE_COLUMNS, fitted, load_measurements
from dse.calibration.state_change import (
    MIN_CHANGED_STEPS,
    RATE_CHANGE,
    check_run,
    check_runs,
    parse_windows,
)
from dse.cli import app
from dse.errors import DseInputError
from dse.model.parameters import load_calibration

QUANTA = "mlperf-v3.1-quanta-d54u-3u"


def hugectr_log(seconds: list[float], window: int = 100) -> str:
    """A log in HugeCTR's format: one ``Iter: N Time(K iters): Ts`` line per window."""
    lines = ["[HCTR][06:43:45.708][INFO][RK0][main]: lr: 0.004000, warmup_steps: 0"]
    lines += [f"[HCTR][06:43:48.900][INFO][RK0][main]: Iter: {(i + 1) * window} "
              f"Time({window} iters): {t}s Loss: 0.13 lr:0.004" for i, t in enumerate(seconds)]
    return "\n".join(lines)


def stretch(factor: float, windows: int, base: float = 2.0, before: int = 100,
            after: int = 100) -> list[float]:
    """Window times: ``before`` at ``base``, ``windows`` slower by ``factor``, ``after`` at base."""
    return [base] * before + [base * factor] * windows + [base] * after


def test_parse_reads_hugectr_windows_of_either_width() -> None:
    ws = parse_windows(hugectr_log([2.5, 4.0]) + "\n" + hugectr_log([3.0], window=1000))
    assert [(w.last_step, w.steps, w.seconds) for w in ws] == [(100, 100, 2.5), (200, 100, 4.0),
                                                               (1000, 1000, 3.0)]
    assert ws[0].steps_per_s == pytest.approx(40.0)
    assert parse_windows(":::MLLOG {\"key\": \"run_start\"}") == ()
    assert check_run(()) is None


def test_rule_trips_above_the_rate_threshold_and_not_below() -> None:
    steps = MIN_CHANGED_STEPS // 100  # 100-step windows covering exactly the step limit
    above = check_run(parse_windows(hugectr_log(stretch(1 + RATE_CHANGE + 0.01, steps))))
    below = check_run(parse_windows(hugectr_log(stretch(1 + RATE_CHANGE - 0.01, steps))))
    assert above is not None and above.trips
    assert (above.first_step, above.last_step, above.changed_steps) == (10_001, 15_000, 5_000)
    assert above.median_steps_per_s == pytest.approx(50.0)  # 100 steps / 2 s
    assert above.stretch_steps_per_s == pytest.approx(50.0 / 1.51)
    assert below is not None and not below.trips and below.changed_steps == 0


def test_rule_trips_at_the_step_count_and_not_one_window_short() -> None:
    steps = MIN_CHANGED_STEPS // 100
    enough = check_run(parse_windows(hugectr_log(stretch(2.0, steps))))
    short = check_run(parse_windows(hugectr_log(stretch(2.0, steps - 1))))
    assert enough is not None and enough.trips
    assert short is not None and not short.trips and short.changed_steps == MIN_CHANGED_STEPS - 100


def test_a_faster_stretch_trips_too_and_scattered_slow_windows_do_not() -> None:
    faster = check_run(parse_windows(hugectr_log(stretch(0.49, 60))))
    assert faster is not None and faster.trips  # 1 / 0.49 > 1.5: either way
    # An evaluation slows one window in every ten (3x): never two in a row, so no stretch.
    evals = [6.0 if i % 10 == 5 else 2.0 for i in range(300)]
    scattered = check_run(parse_windows(hugectr_log(evals)))
    assert scattered is not None and not scattered.trips and scattered.changed_steps == 100


def test_a_measurement_is_changed_when_any_run_trips() -> None:
    steady = hugectr_log([2.0] * 200)
    changed = hugectr_log(stretch(2.0, 60))
    state, evidence = check_runs([("result_0.txt", changed), ("result_1.txt", steady)])
    assert state == "changed"
    assert evidence.startswith("result_0.txt: steps 10001-16000 at 25 steps/s against the run's "
                               "median 50 (0.50x, 6000 steps)")
    assert check_runs([("result_0.txt", steady), ("result_1.txt", steady)])[0] == "steady"
    assert check_runs([("result_0.txt", steady), ("result_1.txt", "no windows")]) == ("unlogged", "")
    assert check_runs([]) == ("unlogged", "")


# --- the measurement files -------------------------------------------------------------------------


ROW = ("x1,test source,2022-06,mlperf-dlrm-v1,amp,55296,a100-sxm4-80gb,8,1,switch,40000000,"
       "net_of_eval,HugeCTR 2022-04,mlcommons/training_results_v2.0:x")


def write(tmp_path: Path, *rows: str, header: tuple[str, ...] = COLUMNS + STATE_COLUMNS) -> Path:
    path = tmp_path / "m.csv"
    path.write_text("\n".join((",".join(header), *rows)) + "\n", encoding="utf-8")
    return path


def test_state_columns_load_and_a_changed_point_is_excluded(tmp_path: Path) -> None:
    ms = load_measurements(write(tmp_path, ROW + ",steady,5 runs",
                                 ROW.replace("x1,", "x2,") + ',changed,"result_0.txt: steps 1-9"'))
    assert [(m.state_check, m.excluded) for m in ms] == [("steady", False), ("changed", True)]
    assert ms[1].state_evidence == "result_0.txt: steps 1-9"
    assert [m.id for m in fitted(ms)] == ["x1"]
    (old,) = load_measurements(write(tmp_path, ROW, header=COLUMNS))  # files without the columns
    assert old.state_check == "unlogged" and not old.excluded


@pytest.mark.parametrize(("tail", "key"), [(",changed,", "state_evidence"),
                                           (",shaky,evidence", "state_check")])
def test_state_columns_are_checked(tmp_path: Path, tail: str, key: str) -> None:
    with pytest.raises(DseInputError) as err:
        load_measurements(write(tmp_path, ROW + tail))
    assert err.value.key == key and err.value.source.endswith("m.csv:2")


def test_packaged_data_mark_the_quanta_point_changed_with_its_evidence() -> None:
    ms = load_measurements()
    changed = [m for m in ms if m.excluded]
    assert [m.id for m in changed] == [QUANTA]
    assert "steps 101-12600" in changed[0].state_evidence and "2.03x" in changed[0].state_evidence
    assert changed[0].samples_per_s == 1192423  # the published figure stays
    assert {m.state_check for m in ms} == {"steady", "changed", "unlogged"}


# --- the fit and validation ------------------------------------------------------------------------


def test_validate_json_lists_the_excluded_point_with_its_error() -> None:
    result = CliRunner().invoke(app, ["validate", "--json", "--no-loo"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    ids = [p["id"] for p in report["points"]]
    assert QUANTA not in ids and len(ids) == len(load_measurements()) - 1
    (ex,) = report["excluded"]
    assert ex["id"] == QUANTA and ex["state_check"] == "changed"
    assert ex["abs_pct_error"] == pytest.approx(
        abs(ex["predicted"] - ex["measured"]) / ex["measured"] * 100)
    assert ex["predicted"] == pytest.approx(
        predict_full(next(m for m in load_measurements() if m.id == QUANTA), load_calibration()))
    assert "steps 101-12600" in ex["state_evidence"]


def test_leave_one_out_refits_without_the_point_and_without_the_excluded_one() -> None:
    # A tiny case checked by hand: three fitted points and the excluded one; each point's
    # leave-one-out prediction is the fit on the two others (never on the excluded point).
    ms = load_measurements()
    small = [m for m in ms if m.id.startswith("mlperf-v2.0-h3c")] + [
        next(m for m in ms if m.id == QUANTA)]
    calib = load_calibration()
    report = validate(small, calib, leave_one_out=True)
    assert [p.measurement.id for p in report.excluded] == [QUANTA]
    assert len(report.points) == 3
    for i, p in enumerate(report.points):
        rest = [m for j, m in enumerate(small[:3]) if j != i]
        by_hand = predict_full(p.measurement, fit(rest, calib, max_iter=60).calibration)
        assert p.loo_predicted == pytest.approx(by_hand, rel=1e-9)
    errors = sorted(p.loo_abs_pct_error for p in report.points if p.loo_abs_pct_error is not None)
    assert report.loo_median_abs_pct_error == pytest.approx(errors[1])


# --- the scan script -------------------------------------------------------------------------------


def test_scan_script_reads_a_mirror_and_reports_each_run(tmp_path: Path) -> None:
    repo = tmp_path / "mirror"
    folder = repo / "Acme" / "results" / "box" / "dlrm_dcnv2"
    folder.mkdir(parents=True)
    (folder / "result_0.txt").write_text(hugectr_log(stretch(2.0, 60)))
    (folder / "result_1.txt").write_text(hugectr_log([2.0] * 200))
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "logs"], check=True)
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "state_change_scan.py"
    spec = importlib.util.spec_from_file_location("state_change_scan", path)
    assert spec is not None and spec.loader is not None
    scan = importlib.util.module_from_spec(spec)
    sys.modules["state_change_scan"] = scan
    spec.loader.exec_module(scan)
    mirrors = {"acme/results": str(repo / ".git")}
    state, evidence, lines = scan._verdict(
        mirrors, "acme/results:Acme/results/box/dlrm_dcnv2/result_*.txt")
    assert state == "changed" and evidence.startswith("result_0.txt: steps 10001-16000")
    assert lines[0].startswith("  result_0.txt: TRIPS") and lines[1].startswith("  result_1.txt: ok")
    assert scan._verdict(mirrors, "other/repo:x/result_*.txt")[0] == "unlogged"
