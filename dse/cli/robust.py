"""The table of ``dse pareto STUDY --robust``: the front under the calibration ensemble."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dse.outputs.labels import design_phrase, header, show
from dse.outputs.robust import RobustFront


def _cell(metric: str, value: float, span: tuple[float, float] | None) -> str:
    """``value [low-high]`` for an objective the calibration moves, the value alone otherwise."""
    return f"{show(metric, value)} [{show(metric, span[0])}-{show(metric, span[1])}]" if span \
        else show(metric, value)


def print_robust(console: Console, front: RobustFront, title: str) -> None:
    """One row per distinct front design: each objective (with its 80% interval where the
    calibration moves it), the probability of staying on the front, whether it is on the robust
    front, and the design parameters that vary on the front; then the neighbouring pairs the
    model cannot tell apart."""
    if not front.designs:
        console.print("no feasible design yet")
        return
    keys = sorted({k for d in front.designs for k in d.design})
    varying = [k for k in keys if len({repr(d.design.get(k)) for d in front.designs}) > 1]
    constant = {k: front.designs[0].design.get(k) for k in keys if k not in varying}
    table = Table(title=title, caption=(
        f"{front.members} calibrations of the ensemble (calibration {front.calibration_version}), "
        f"{front.candidates} front and near-front designs retimed; [low-high]: "
        f"{front.level:.0%} interval; robust: on the front with probability >= "
        f"{front.threshold:.0%}" + (f"; every design: {design_phrase(constant)}" if constant else "")))
    table.add_column("trial", justify="right", no_wrap=True)
    table.add_column("P(front)", justify="right", no_wrap=True)
    table.add_column("robust", no_wrap=True)
    for metric, direction in front.objectives:
        table.add_column(f"{header(metric)} ({direction[:3]})", justify="right", no_wrap=True)
    table.add_column("design", overflow="fold", min_width=30)
    for d in front.designs:
        cells = [str(d.trial), f"{d.probability:.0%}", "yes" if d.probability >= front.threshold else "no"]
        cells += [_cell(m, v, span) for (m, _), v, span in
                  zip(front.objectives, d.values, d.intervals, strict=True)]
        cells.append(escape(design_phrase({k: d.design.get(k) for k in varying})))
        table.add_row(*cells)
    wide = Console(width=max(console.width, 190), file=console.file)
    wide.print(table)
    wide.print(f"robust front: {len(front.robust)} of {len(front.designs)} designs "
               f"(trials {', '.join(str(d.trial) for d in front.robust) or 'none'})")
    close = [c for c in front.comparisons if c.within_error]
    if front.comparisons:
        pairs = "; ".join(f"{c.first}-{c.second} x{c.throughput_ratio:.3f} (order kept by "
                          f"{c.order_kept:.0%})" for c in close)
        wide.print(f"within the model's error ({front.level:.0%} throughput intervals overlap): "
                   f"{len(close)} of {len(front.comparisons)} neighbouring pairs" +
                   (f": {pairs}" if pairs else ""))
    for note in front.notes:
        wide.print(f"note: {escape(note)}")
