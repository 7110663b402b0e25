"""Parameters no measurement pins down carry their ranges into every number dse prints (issue 39,
item 1): the ensemble draws them across their ranges, and an interval always takes in the
predictions at both ends of every range its design depends on; designs that do not depend on them
keep the intervals they had."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from dse.calibration.ensemble import load_ensemble, prediction_interval, range_ends
from dse.errors import DseInputError
from dse.model.evaluate import Evaluation, evaluate
from dse.model.parameters import DEFAULT_RANGES, fingerprint, load_calibration, unpinned
from dse.model.system import load_system
from dse.model.workload import load_workload

CALIB = load_calibration()
ENS = load_ensemble(calibration=CALIB)

# A Zion-like 2027 node (issue 39): 8 B200, 2 Xeon 6980P, 6 TB of DDR, 400 tables, 3.5 TB of fp16 rows.
ZION_2027 = ("dgx-b200", (("node.cpu", "xeon-6980p"), ("node.ddr_gb", 6144)))
WIDE_MODEL = ("zion-2019", (("synthetic.count", 400), ("synthetic.total_params", 1.75e12),
                            ("embedding_dtype", "fp16"), ("precision", "bf16"), ("global_batch", 65536)))
HOST_BOUND = [
    ("zion preset", ("zion-2019", ()), ("zion", ())),
    ("Zion-like 2027 node", WIDE_MODEL, ZION_2027),
    ("one accelerator, tables in DDR", ("mlperf-dlrm-v1", ()), ("dgx-a100", (("node.accelerators", 1),))),
]


Named = tuple[str, tuple[tuple[str, object], ...]]


def _design(wl: Named, system: Named) -> Evaluation:
    return evaluate(load_workload(*wl), load_system(*system), CALIB)


@pytest.mark.parametrize(("label", "wl", "system"), HOST_BOUND, ids=[h[0] for h in HOST_BOUND])
def test_a_host_bound_interval_holds_both_ends_of_every_range(label: str, wl, system) -> None:
    ev = _design(wl, system)
    assert ev.plan.memory.off_device_bytes > 0, label  # tables in host memory
    iv = prediction_interval(ev, ENS, CALIB)
    assert iv is not None and any(p.startswith("host_efficiency") for p in iv.unpinned)
    for name, (lo, hi) in unpinned(CALIB).items():
        for value in (lo, hi):
            at_end = evaluate(ev.workload, ev.system, CALIB.with_values(**{name: value}))
            assert iv.throughput_low <= at_end.throughput_samples_per_s * (1 + 1e-9), (label, name, value)
            assert at_end.throughput_samples_per_s <= iv.throughput_high * (1 + 1e-9), (label, name, value)
    # ... and both ends of all of them at once.
    for end in (0, 1):
        corner = CALIB.with_values(**{n: r[end] for n, r in unpinned(CALIB).items()})
        t = evaluate(ev.workload, ev.system, corner).throughput_samples_per_s
        assert iv.throughput_low <= t * (1 + 1e-9) and t <= iv.throughput_high * (1 + 1e-9)


def test_a_host_bound_design_is_far_less_sure_than_before() -> None:
    # The Zion preset with its tables in DDR: host_efficiency alone moves it by tens of percent.
    ev = _design(("zion-2019", ()), ("zion", ()))
    low, high = prediction_interval(ev, ENS, CALIB).relative
    ends = range_ends(ev.workload, ev.system, ev.plan, CALIB, ev.throughput_samples_per_s)
    assert math.exp(ends.low) < 0.8 and math.exp(ends.high) > 1.2
    assert low <= math.exp(ends.low) + 1e-12 and high >= math.exp(ends.high) - 1e-12


@pytest.mark.parametrize(("wl", "system", "overrides"), [
    ("mlperf-dlrm-dcnv2", "dgx-h100", (("nodes", 16),)),
    ("mlperf-dlrm-v1", "dgx-a100", ()),
    ("criteo-1tb-small", "hgx-h200", ()),
])
def test_an_hbm_resident_interval_does_not_widen(wl: str, system: str, overrides) -> None:
    ev = evaluate(load_workload(wl), load_system(system, overrides), CALIB)
    assert ev.plan.memory.off_device_bytes == 0
    with_ranges = prediction_interval(ev, ENS, CALIB)
    # The same ensemble with every range shut to its point value: what the interval was before.
    shut = dataclasses.replace(CALIB, ranges={n: (getattr(CALIB, n),) * 2 for n in DEFAULT_RANGES})
    without = prediction_interval(ev, load_ensemble(calibration=shut), shut)
    # Only the skew of the data's row popularity moves it (a range of every skewed workload);
    # none of the host or CXL ranges does.
    assert all(name.startswith("access_zipf ") for name in with_ranges.unpinned)
    assert with_ranges.relative == pytest.approx(without.relative, abs=0.02)


def test_the_members_draw_every_stretch_of_each_range() -> None:
    n = len(ENS.members)
    for name, (lo, hi) in unpinned(CALIB).items():
        drawn = np.sort([getattr(m, name) for m in ENS.members])
        # One draw in each 1/n of the range, at its middle (a Latin hypercube).
        assert drawn == pytest.approx(lo + (hi - lo) * (np.arange(n) + 0.5) / n, rel=1e-12)
    # The draws are independent of each other: not the same order for two parameters.
    a, b = ([getattr(m, n) for m in ENS.members] for n in list(unpinned(CALIB))[:2])
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.3


def test_unpinned_parameters_stay_out_of_the_fingerprint() -> None:
    # No refit moves them, so changing one keeps the ensemble valid; a fitted one does not.
    assert fingerprint(CALIB.with_values(host_efficiency=0.7)) == fingerprint(CALIB)
    assert fingerprint(CALIB.with_values(memory_efficiency=0.7)) != fingerprint(CALIB)


def test_a_stated_range_is_checked(tmp_path: Path) -> None:
    text = (Path(__file__).parent.parent / "dse" / "data" / "calibration.toml").read_text()
    bad = tmp_path / "mine.toml"
    bad.write_text(text.replace("host_efficiency = [0.25, 0.82]", "host_efficiency = [0.6, 0.9]"))
    with pytest.raises(DseInputError,
                       match=r"mine\.toml: ranges\.host_efficiency: .*must hold the value 0\.5"):
        load_calibration(bad)
    bad.write_text(text.replace("host_efficiency = [0.25, 0.82]", "memory_efficiency = [0.1, 0.9]"))
    with pytest.raises(DseInputError, match=r"ranges\.memory_efficiency: not a parameter stated as a range"):
        load_calibration(bad)
