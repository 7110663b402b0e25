"""``dse calibrate --data mine.csv``: a calibration fitted to the user's own measurements
(:mod:`dse.calibration.own`), written beside their files, and its ensemble
(:mod:`dse.calibration.own_ensemble`)."""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from dse.calibration.own import MIN_ELASTICITY, OwnFit
from dse.cli._app import console as plain_console
from dse.cli._app import fail
from dse.cli.tables import print_table
from dse.errors import DseInputError
from dse.model.parameters import Calibration, unpinned
from dse.records import PACKAGE_DIR

OUT_SUFFIX = "-calibration.toml"
"""``mine.csv`` is fitted into ``mine-calibration.toml`` beside it unless ``--out`` says where."""


def own_out(data: Path, out: Path | None) -> Path:
    """Where ``dse calibrate --data`` writes: ``out``, or ``NAME-calibration.toml`` beside the CSV;
    never into the installed package (one line naming the file, exit 2)."""
    target = out if out is not None else data.with_name(data.stem + OUT_SUFFIX)
    if target.resolve().is_relative_to(PACKAGE_DIR):
        fail(f"{'--out ' if out is not None else ''}{target}: inside the installed dse package "
             f"({PACKAGE_DIR}); a calibration of your own measurements is written beside your "
             "files (give --out elsewhere)")
    return target


def calibrate_own(data: Path, out: Path, version: str, members: int, seed: int) -> None:
    """Fit the rows of ``data`` on top of the packaged calibration, write the calibration to
    ``out`` (and, with ``members``, its ensemble beside it) and say what was fitted."""
    from dse.calibration.ensemble import EnsembleUnavailable, ensemble_beside, load_ensemble, write_ensemble
    from dse.calibration.own import fit_own, load_own_measurements, prior_of
    from dse.calibration.own_ensemble import build_own_ensemble
    from dse.model.parameters import load_calibration, write_calibration

    try:
        rows = load_own_measurements(data)
        base = load_calibration()
        packaged = load_ensemble(None, base)
        label = version or f"{base.version}+{data.stem}-n{len(rows)}"
        own = fit_own(rows, base, label, prior_of(packaged))
        write_calibration(own.calibration, out)
    except EnsembleUnavailable as exc:
        fail(f"{exc} (a fit to your rows weighs them against the packaged ensemble)")
        return
    except DseInputError as exc:
        fail(str(exc))
        return
    console = plain_console()
    print_own_fit(own, data, console)
    console.print(f"written to {out}: dse evaluate ... --calibration {out}; dse run STUDY "
                         f"--calibration {out} (or calibration = \"{out.name}\" in a study file "
                         "beside it)")
    if not members:
        console.print(f"no ensemble, so no intervals with it (add --ensemble 100 to build "
                             f"{ensemble_beside(out).name} beside it)")
        return
    ens = build_own_ensemble(own, packaged, members, seed)
    try:
        write_ensemble(ens, ensemble_beside(out))
    except DseInputError as exc:
        fail(str(exc))
    console.print(
        f"ensemble of {members} members (seed {seed}) written to {ensemble_beside(out)}: the "
        f"packaged ensemble's members with the fitted parameters refitted to your rows and drawn "
        f"from the fit's uncertainty; coverage is not measured on your rows")


def print_own_fit(own: OwnFit, data: Path, console: Console) -> None:
    """The parameters fitted from the rows and those kept, then each row before and after."""
    base, calib = own.base, own.calibration
    ranges = unpinned(base)
    table = Table("parameter", "value", "packaged", "source", title=(
        f"calibration {calib.version}: {len(own.rows)} rows of {data.name} on top of calibration "
        f"{base.version}"))
    unseen = []
    for c in own.choices:
        if not c.fitted and abs(c.elasticity) < MIN_ELASTICITY:
            unseen.append(c.name)
            continue
        packaged = _value(base, c.name) + (f" (range {ranges[c.name][0]:g}-{ranges[c.name][1]:g})"
                                           if c.name in ranges else "")
        table.add_row(c.name, _value(calib, c.name), packaged,
                      ("your rows: " if c.fitted else "packaged: ") + c.reason)
    print_table(console, table)
    rows = Table("row", "measured", "packaged predicts", "fitted predicts", "error",
                 title="your rows (samples/s)")
    for r, before, after in zip(own.rows, own.before, own.after, strict=True):
        m = r.measurement.samples_per_s
        rows.add_row(r.measurement.id, f"{m:,.0f}", f"{m * math.exp(before):,.0f}",
                     f"{m * math.exp(after):,.0f}", f"{math.expm1(after):+.1%}")
    print_table(console, rows)
    fitted = ", ".join(own.fitted) or "none"
    pinned = [n for n in own.fitted if n in ranges]
    console.print(
        f"fitted from your rows: {fitted}" + (f" (no longer a range: {', '.join(pinned)})"
                                              if pinned else "")
        + f"; every other parameter keeps calibration {base.version}'s value and range (your "
        f"rows do not depend on {', '.join(unseen) or 'none'}). Your rows are one software "
        "family, yours, scored at factor 1 like every design: what they fit takes in your "
        "software's speed.")


def _value(calib: Calibration, name: str) -> str:
    """A parameter's value as the tables show it."""
    return f"{float(getattr(calib, name)):.4g}"


def is_own_csv(path: Path) -> bool:
    """Whether ``path`` is a user's measurement CSV (:data:`~dse.calibration.own.OWN_COLUMNS`)
    rather than one in the published measurements' format (``dse/data/dlrm_measurements.csv``'s
    columns), which ``dse calibrate --data`` still refits from the priors."""
    from dse.calibration.measurements import COLUMNS
    from dse.limits import MAX_DATA_FILE_BYTES
    from dse.reading import read_text

    try:
        first = read_text(path, MAX_DATA_FILE_BYTES).partition("\n")[0]
    except DseInputError as exc:
        fail(str(exc))
        raise typer.Exit(code=2) from None  # not reached: fail exits
    return [c.strip() for c in first.split(",")][:3] != list(COLUMNS[:3])
