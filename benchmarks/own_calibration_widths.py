"""How the 80% intervals of a calibration fitted to a user's own measurements narrow with the rows
it is fitted to (issue 39, item 5; the figures of docs/own-calibration.md).

    python benchmarks/own_calibration_widths.py                  # the table
    python benchmarks/own_calibration_widths.py --csv rows.csv   # and the ten rows, as a CSV

Ten rows of a Zion-like node (the ``zion`` preset training ``zion-2019``, whose tables live in host
DDR) are made by the model itself at ``host_efficiency`` = :data:`TRUTH` with :data:`NOISE` of
seeded log-normal noise on each: dse has no measurement of a real Zion, and rows made so show the fit
recovering a known value. The calibration is fitted as ``dse calibrate --data`` fits it to the first
1, 3 and 10 rows, each with an ensemble of :data:`MEMBERS` members (seed 0), and the 80% intervals
are read, as ``dse evaluate --calibration`` reads them, at the measured node (the first row) and
at a design no row measured (:data:`UNMEASURED`: fp16 embedding rows on 16 GB of HBM); the
first line is the packaged calibration with its packaged ensemble.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from dse.calibration.ensemble import load_ensemble, prediction_interval
from dse.calibration.own import fit_own, load_own_measurements, prior_of
from dse.calibration.own_ensemble import build_own_ensemble
from dse.model.evaluate import Evaluation, evaluate
from dse.model.parameters import Calibration, load_calibration
from dse.model.system import load_system
from dse.model.workload import load_workload
from dse.records import parse_override

TRUTH = 0.65
"""The host efficiency the rows are made with."""
NOISE = 0.03
"""Standard deviation of each row's log noise (a run-to-run spread of about 3%)."""
SEED = 39
MEMBERS = 100
SETTINGS = (
    "",
    "node.accelerators=4",
    "workload.global_batch=32768",
    "node.hbm_gb=16",
    "workload.global_batch=8192",
    "workload.global_batch=65536",
    "node.accelerators=4;workload.global_batch=8192",
    "node.hbm_gb=16;workload.global_batch=32768",
    "node.accelerators=4;workload.global_batch=32768",
    "node.hbm_gb=16;workload.global_batch=8192",
)
"""The ``set`` column of the ten rows, in order (the worked example uses the first three): designs
of the node that keep part of the tables in host DDR, so that each row depends on the host
efficiency (with more nodes the tables fit the accelerators' memory and a row would not)."""
UNMEASURED = "workload.embedding_dtype=fp16;node.hbm_gb=16"
"""A design none of the rows measured: the node with 16 GB of HBM per accelerator (as the Zion OAM
was also offered) training the model with fp16 embedding rows (half the bytes over the host link),
which still reads host memory."""
HEADER = "id,system,workload,set,samples_per_s,note"


def scored(setting: str, calib: Calibration) -> Evaluation:
    """The Zion-like node with ``setting`` (the ``set`` column's form) under ``calib``; every
    setting here is a feasible design."""
    over = [parse_override(item) for item in setting.split(";") if item]
    wl = load_workload("zion-2019", tuple((k.removeprefix("workload."), v) for k, v in over
                                          if k.startswith("workload.")))
    sysm = load_system("zion", tuple((k, v) for k, v in over if not k.startswith("workload.")))
    ev = evaluate(wl, sysm, calib)
    assert ev.feasible, (setting, ev.reasons)
    return ev


def design(setting: str, calib: Calibration) -> float:
    """Samples/s of the Zion-like node with ``setting`` under ``calib``."""
    return scored(setting, calib).throughput_samples_per_s


def rows_csv(count: int = len(SETTINGS)) -> str:
    """The first ``count`` rows as the CSV ``dse calibrate --data`` reads."""
    truth = load_calibration().with_values(host_efficiency=TRUTH)
    noise = np.exp(NOISE * np.random.default_rng(SEED).standard_normal(len(SETTINGS)))
    lines = [HEADER]
    for k, setting in enumerate(SETTINGS[:count]):
        lines.append(f"zion-{k + 1},zion,zion-2019,{setting},{design(setting, truth) * noise[k]:.0f},")
    return "\n".join(lines) + "\n"


def widths(count: int, folder: Path) -> dict[str, object]:
    """The fit to the first ``count`` rows (0: the packaged calibration) and its intervals."""
    base = load_calibration()
    packaged = load_ensemble(None, base)
    if count:
        path = folder / f"rows-{count}.csv"
        path.write_text(rows_csv(count), encoding="utf-8")
        own = fit_own(load_own_measurements(path), base, f"own-{count}", prior_of(packaged))
        calib, ens = own.calibration, build_own_ensemble(own, packaged, MEMBERS)
        fitted = [f"{c.name} +-{c.pinned:.0%}" for c in own.choices if c.fitted]
    else:
        calib, ens, fitted = base, packaged, []
    out: dict[str, object] = {"rows": count, "fitted": ", ".join(fitted) or "-",
                              "host_efficiency": calib.host_efficiency}
    for label, setting in (("measured", SETTINGS[0]), ("unmeasured", UNMEASURED)):
        ev = scored(setting, calib)
        iv = prediction_interval(ev, ens, calib)
        assert iv is not None
        lo, hi = iv.relative
        spread = (iv.spread_high - iv.spread_low) / iv.throughput_samples_per_s * 100
        out[label] = (ev.throughput_samples_per_s, lo, hi, (hi - lo) * 100, spread)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, help="Also write the ten rows to this CSV.")
    args = parser.parse_args()
    if args.csv:
        args.csv.write_text(rows_csv(), encoding="utf-8")
    truth = load_calibration().with_values(host_efficiency=TRUTH)
    print(f"truth: host_efficiency {TRUTH}; the measured node at it: "
          f"{design(SETTINGS[0], truth):,.0f} samples/s; the unmeasured design: "
          f"{design(UNMEASURED, truth):,.0f}")
    print("| rows | fitted (pinned to) | host_efficiency | measured node: prediction, 80% interval, "
          "width (parameters alone) | unmeasured design: the same |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for count in (0, 1, 3, len(SETTINGS)):
            w = widths(count, Path(tmp))
            cells = []
            for label in ("measured", "unmeasured"):
                point, lo, hi, width, spread = w[label]  # type: ignore[misc]
                cells.append(f"{point / 1e3:,.0f} k, {lo:.2f}-{hi:.2f}, {width:.0f}% ({spread:.0f}%)")
            rows = "none (packaged)" if not count else str(count)
            print(f"| {rows} | {w['fitted']} | {w['host_efficiency']:.3f} | {cells[0]} | {cells[1]} |")
    print(f"(ensembles of {MEMBERS} members, seed 0; rows made with {NOISE:.0%} log-normal noise, "
          f"seed {SEED})")


if __name__ == "__main__":
    main()
