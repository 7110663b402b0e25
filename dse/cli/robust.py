"""The table of ``dse pareto STUDY --robust``: the front under the calibration ensemble."""

from __future__ import annotations

from rich.console import Console

from dse.cli._app import si
from dse.cli.tables import Column, print_fitted
from dse.outputs.labels import design_phrase, header, label, show
from dse.search.robust_front import RobustFront


def _cell(metric: str, value: float, span: tuple[float, float] | None) -> str:
    """``value [low-high]`` for an objective the calibration moves (the interval to three
    significant digits with an SI prefix, so it fits under the value when the column wraps), the
    value alone otherwise."""
    if not span:
        return show(metric, value)
    low, high = (si(v * label(metric).scale, "").replace(" ", "") for v in span)
    return f"{show(metric, value)} [{low}-{high}]"


def print_robust(console: Console, front: RobustFront, title: str) -> None:
    """One row per distinct front design: each objective (with its 80% interval where the
    calibration moves it), the probability of staying on the front, whether it is on the robust
    front, and the design parameters that vary on the front; then the neighbouring pairs the
    model cannot tell apart. Fitted to the console (:func:`dse.cli.tables.print_fitted`): where
    it would not fit, the "robust" column (the line after the table names the robust front) and
    then the objectives after the second are left out."""
    if not front.designs:
        console.print("no feasible design yet")
        return
    keys = sorted({k for d in front.designs for k in d.design})
    varying = [k for k in keys if len({repr(d.design.get(k)) for d in front.designs}) > 1]
    constant = {k: front.designs[0].design.get(k) for k in keys if k not in varying}
    caption = (f"{front.members} calibrations of the ensemble (calibration "
               f"{front.calibration_version}), {front.candidates} front and near-front designs "
               f"retimed; [low-high]: {front.level:.0%} interval; robust: on the front with "
               f"probability >= {front.threshold:.0%}"
               + (f"; every design: {design_phrase(constant)}" if constant else ""))
    columns = [Column("trial", [str(d.trial) for d in front.designs], False),
               Column("P(front)", [f"{d.probability:.0%}" for d in front.designs], False),
               Column("robust", ["yes" if d.probability >= front.threshold else "no"
                                 for d in front.designs], False, "left")]
    for i, (metric, direction) in enumerate(front.objectives):
        # Wraps between the value and its interval, kept to the right like a number.
        # The direction in full: "(min)" beside "train h" read as minutes.
        columns.append(Column(f"{header(metric)}, {direction}d",
                              [_cell(metric, d.values[i], d.intervals[i]) for d in front.designs],
                              True, "right"))
    columns.append(Column("design", [design_phrase({k: d.design.get(k) for k in varying})
                                     for d in front.designs], True))
    optional = ["robust", *(c.head for c in reversed(columns[5:-1]))]
    print_fitted(console, title, caption, columns, optional)
    console.print(f"robust front: {len(front.robust)} of {len(front.designs)} designs "
                  f"(trials {', '.join(str(d.trial) for d in front.robust) or 'none'})")
    close = [c for c in front.comparisons if c.within_error]
    if front.comparisons:
        pairs = "; ".join(f"{c.first}-{c.second} x{c.throughput_ratio:.3f} (order kept by "
                          f"{c.order_kept:.0%})" for c in close)
        console.print(f"within the model's error (fewer than {front.level:.0%} of the "
                      f"calibrations keep their order): {len(close)} of {len(front.comparisons)} "
                      "neighbouring pairs"
                      + (f": {pairs}" if pairs else ""))
    for note in front.notes:
        console.print(f"note: {note}")
