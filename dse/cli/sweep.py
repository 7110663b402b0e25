"""``dse sweep``: score every design of a discrete space (or a Sobol sample) and print the exact
front (registered on :data:`dse.cli._app.app`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from dse.cli._app import app, fail, to_json
from dse.cli._app import console as plain_console
from dse.cli.tables import print_table
from dse.errors import DseInputError
from dse.model.workload import load_workload
from dse.safe_write import check_target
from dse.search.study.objective_sets import load_objectives
from dse.search.study.search_space import load_space

if TYPE_CHECKING:
    from dse.search.algorithms.sweep import SweepResult


@app.command("sweep")
def sweep_cmd(
    space: Annotated[str, typer.Argument(help="Search space name (search_spaces/NAME.toml) or file.")],
    workload: Annotated[str, typer.Option("--workload", "-w", help="Workload preset or TOML file.")],
    objectives: Annotated[str, typer.Option("--objectives", "-o",
                                            help="Objective set name or file.")] = "throughput-vs-capex",
    out: Annotated[Path | None, typer.Option("--out", help="Write every design and metric to this "
                                             "Parquet file.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --out file (without "
                                        "it, an existing file is refused before the sweep).")] = False,
    samples: Annotated[int | None, typer.Option(
        "--samples", min=1, help="Score N designs of a scrambled Sobol sequence instead of every "
        "design (needed for spaces with float parameters).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the Sobol scrambling.")] = 0,
    jobs: Annotated[int | None, typer.Option("--jobs", min=1,
                                             help="Worker processes (default: every core).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the front and the run's figures "
                                          "as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bar.")] = False,
) -> None:
    """Score every design of a discrete SPACE (or a Sobol sample of one with float parameters)
    across the machine's cores, memoising placements, and print the exact Pareto front."""
    from dse.search.algorithms.sweep import run_sweep, write_parquet  # pandas: not for every command

    try:
        if out is not None:
            check_target(out, force)
        sp = load_space(space)
        wl = load_workload(workload)
        obj = load_objectives(objectives)
    except DseInputError as exc:
        fail(str(exc))
        return
    console = plain_console(stderr=True)
    bar = Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
                   MofNCompleteColumn(), TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                   TextColumn("ETA"), TimeRemainingColumn(), console=console,
                   disable=quiet or not console.is_terminal)
    try:
        with bar:
            task = bar.add_task(f"sweep {sp.name}", total=None, rate="")
            started: list[float] = []

            def show(done: int, total: int) -> None:
                import time

                now = time.perf_counter()
                if not started:
                    started.append(now)
                    started.append(done)
                elapsed = now - started[0]
                rate = (done - started[1]) / elapsed if elapsed > 0 else 0.0
                bar.update(task, completed=done, total=total,
                           rate=f"{rate:,.0f} designs/s" if rate else "")

            result = run_sweep(sp, wl, obj, samples=samples, seed=seed, jobs=jobs, on_progress=show)
        if out is not None:
            write_parquet(result, str(out), replace=force)
    except DseInputError as exc:
        fail(str(exc))
        return
    if as_json:
        typer.echo(to_json(summary(result, out)))
        return
    _print_front(result)
    s = summary(result, out)
    processes = f"{s['jobs']} process{'es' if s['jobs'] > 1 else ''}"
    typer.echo(f"{s['designs']:,} designs ({s['eligible']:,} meet every constraint) in "
               f"{s['seconds']:.1f} s with {processes}: {s['designs_per_s']:,.0f} designs/s; "
               f"exact front of {s['front_size']}" + (f"; written to {out}" if out else ""))


def summary(result: SweepResult, out: Path | None = None) -> dict[str, Any]:
    """The sweep's figures and its front (``dse sweep --json``)."""
    frame = result.frame
    metrics = [o.metric for o in result.objectives.objectives]
    rows = []
    for i in result.front:
        row = dict(result.grid.design(int(i)))
        row.update({m: _plain(frame[m].iat[int(i)]) for m in metrics})
        row["bottleneck"] = str(frame["bottleneck"].iat[int(i)])
        rows.append(row)
    return {
        "space": result.space.name,
        "workload": result.workload.name,
        "objectives": result.objectives.name,
        "designs": len(frame),
        "eligible": int(frame["eligible"].sum()),
        "front_size": len(result.front),
        "seconds": result.seconds,
        "jobs": result.jobs,
        "designs_per_s": result.designs_per_s,
        "out": str(out) if out else None,
        "front": rows,
    }


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _print_front(result: SweepResult) -> None:
    """The front, one row per distinct objective vector: designs that tie on every objective (a
    parameter that changes neither, such as the fabric of a one-accelerator node) are counted in
    the ``ties`` column rather than listed."""
    console = plain_console()
    frame = result.frame
    metrics = [o.metric for o in result.objectives.objectives]
    params = list(result.grid.names)
    table = Table(title=f"exact front: {result.workload.name} on {result.space.name} "
                  f"({result.objectives.name})")
    for name in [*params, *metrics, "bottleneck", "ties"]:
        table.add_column(name.removeprefix("node."), justify="left" if name == "bottleneck" else "right")
    groups: dict[tuple[float, ...], list[int]] = {}
    for i in result.front:
        key = tuple(float(frame[m].iat[int(i)]) for m in metrics)
        groups.setdefault(key, []).append(int(i))
    for rows in groups.values():
        first = rows[0]
        design = result.grid.design(first)
        cells = [_cell(design.get(p)) for p in params]
        cells += [_cell(frame[m].iat[first]) for m in metrics]
        cells += [str(frame["bottleneck"].iat[first]), str(len(rows) - 1) if len(rows) > 1 else ""]
        table.add_row(*cells)
    print_table(console, table)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.4g}"
    return str(value)
