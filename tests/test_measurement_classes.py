"""Measurement classes: the optional column, and each class's errors reported apart."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from dse.calibration.fit import validate
from dse.calibration.measurements import (
    COLUMNS,
    MEASUREMENT_CLASSES,
    STATE_COLUMNS,
    load_measurements,
)
from dse.errors import DseInputError
from dse.model.parameters import load_calibration
from dse.outputs.validation_page import class_lines

ROW = ("x1,test source,2022-06,mlperf-dlrm-v1,amp,55296,a100-sxm4-80gb,8,1,switch,40000000,"
       "net_of_eval,HugeCTR 2022-04,mlcommons/training_results_v2.0:x")


def test_the_class_column_is_optional_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    header = ",".join((*COLUMNS, "measurement_class", *STATE_COLUMNS))
    path.write_text(f"{header}\n{ROW},host_memory,unlogged,\n", encoding="utf-8")
    (m,) = load_measurements(path)
    assert m.measurement_class == "host_memory" and not m.excluded
    path.write_text(f"{header}\n{ROW},in_the_cloud,unlogged,\n", encoding="utf-8")
    with pytest.raises(DseInputError) as err:
        load_measurements(path)
    assert err.value.key == "measurement_class"
    assert {m.measurement_class for m in load_measurements()} == {"hbm_resident"}
    assert MEASUREMENT_CLASSES[:3] == ("hbm_resident", "host_memory", "cpu_only")


def test_each_class_reports_its_own_in_sample_and_leave_one_out_errors() -> None:
    ms = [m for m in load_measurements() if m.id.startswith("mlperf-v2.0-h3c")]
    ms[2] = dataclasses.replace(ms[2], measurement_class="host_memory")  # a class of one point
    report = validate(ms, load_calibration(), leave_one_out=True)
    classes = report.classes()
    assert list(classes) == ["hbm_resident", "host_memory"]
    hbm = [p for p in report.points if p.measurement.measurement_class == "hbm_resident"]
    assert classes["hbm_resident"]["points"] == 2
    assert classes["hbm_resident"]["median_abs_pct_error"] == pytest.approx(
        (hbm[0].abs_pct_error + hbm[1].abs_pct_error) / 2)
    assert classes["hbm_resident"]["loo_median_abs_pct_error"] == pytest.approx(
        float(np.mean([p.loo_abs_pct_error for p in hbm])))
    host = report.points[2]
    assert classes["host_memory"]["max_abs_pct_error"] == host.abs_pct_error
    assert classes["host_memory"]["loo_median_abs_pct_error"] == host.loo_abs_pct_error
    lines = class_lines(report)
    assert lines[1].startswith("class host_memory: 1 points") and "targets: every point" in lines[1]
    assert report.to_dict()["classes"] == classes
