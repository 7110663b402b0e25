"""Model commands of the ``dse`` CLI: evaluate, list, calibrate and validate."""

from __future__ import annotations

import dataclasses
from datetime import date
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dse.cli._app import app, fail, si, to_json, wide_console
from dse.errors import DseInputError
from dse.model.catalog import Catalog
from dse.model.evaluate import Evaluation, evaluate
from dse.model.system import load_system, system_presets
from dse.model.user_catalog import load_user_catalog, split_catalog_overrides
from dse.model.workload import load_workload, workload_presets
from dse.records import parse_override, to_mapping

Overrides = tuple[tuple[str, Any], ...]

CatalogOpt = Annotated[Path | None, typer.Option(
    "--catalog", help="A user catalog: your own accelerators, CPUs, NICs, prices and facility "
    "figures on top of the packaged catalog.")]


def split_overrides(items: list[str]) -> tuple[Overrides, Overrides, Overrides]:
    """Split ``--set`` items into (workload, system, catalog) overrides: ``workload.`` keys go to
    the workload; ``price.``, ``facility.``, ``accelerator.``, ``cpu.``, ``nic.``, ``ddr.`` and
    ``chassis.`` keys to the catalog; the rest to the system."""
    wl: list[tuple[str, Any]] = []
    sysov: list[tuple[str, Any]] = []
    for item in items:
        key, value = parse_override(item)
        if key.startswith("workload."):
            wl.append((key.removeprefix("workload."), value))
        else:
            sysov.append((key.removeprefix("system."), value))
    catalog, system = split_catalog_overrides(tuple(sysov))
    return tuple(wl), system, catalog


@app.command("evaluate")
def evaluate_cmd(
    system: Annotated[str, typer.Option("--system", "-s", help="System preset name or TOML file.")],
    workload: Annotated[str, typer.Option("--workload", "-w", help="Workload preset or TOML file.")],
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a field: node.accelerators=4, nodes=16, "
                     "workload.global_batch=135168, price.h100-sxm5-80gb=25000, "
                     "facility.usd_per_kwh=0.2 (repeatable)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    catalog: CatalogOpt = None,
) -> None:
    """Score one design: step time by stage, bottleneck, memory, cost and power."""
    try:
        wl_over, sys_over, cat_over = split_overrides(set_ or [])
        user = load_user_catalog(catalog, cat_over)
        wl = load_workload(workload, wl_over)
        sysm = load_system(system, sys_over, user.catalog)
        ev = evaluate(wl, sysm, catalog=user.catalog)
        # Defaults that decide the answer are listed, never applied silently (issue 13).
        from dse.model.defaults import sensitive_defaults
        leaned_on = sensitive_defaults(wl, system, sys_over, catalog=user.catalog)
    except DseInputError as exc:
        fail(str(exc))
        return
    if as_json:
        extra = {"catalog_changes": [dataclasses.asdict(c) for c in user.changes]} if user.changes else {}
        typer.echo(to_json({**ev.to_dict(),
                            "sensitive_defaults": [dataclasses.asdict(d) for d in leaned_on],
                            **extra}))
    else:
        print_evaluation(ev, Console())
        for d in leaned_on:
            Console().print(escape(f"note: {d.describe()}"))
        for change in user.changes:
            Console().print(escape(f"catalog: {change.describe()}"))
    if not ev.feasible:
        raise typer.Exit(code=0)


def print_evaluation(ev: Evaluation, console: Console) -> None:
    """The readable breakdown of ``dse evaluate``."""
    m = {k: v for k, v in ev.metrics().items() if isinstance(v, int | float)}
    s = ev.system
    console.print(
        f"[bold]{ev.workload.name}[/] on [bold]{s.spec.name or s.accelerator.name}[/]: "
        f"{s.nodes} node(s) x {s.accelerators_per_node} {s.accelerator.name} "
        f"({s.scaleup}, {s.network.topology}); calibration {ev.calibration_version}"
    )
    status = "[green]feasible[/]" if ev.feasible else "[red]INFEASIBLE[/]: " + "; ".join(ev.reasons)
    console.print(status)
    if ev.what_if:
        console.print("[yellow]WHAT-IF parts[/] (not on sale): " + "; ".join(ev.what_if))
    console.print(
        f"throughput [bold]{si(ev.throughput_samples_per_s, 'samples/s')}[/], "
        f"step {ev.step_time_s * 1e3:.3f} ms, bottleneck [bold]{ev.bottleneck}[/]"
    )
    stages = Table(title="step time by stage", show_lines=False)
    for col in ("stage", "critical path ms", "share"):
        stages.add_column(col, justify="right" if col != "stage" else "left")
    for stage, sec in ev.breakdown_s.items():
        share = sec / ev.step_time_s if ev.step_time_s else 0.0
        stages.add_row(stage, f"{sec * 1e3:.3f}", f"{share:.0%}")
    console.print(stages)
    raw = Table(title="stage durations before overlap (ms)")
    raw.add_column("stage")
    raw.add_column("ms", justify="right")
    for name, sec in ev.timing.stages_s.items():
        raw.add_row(name, f"{sec * 1e3:.3f}")
    console.print(raw)
    console.print("critical path: " + " -> ".join(ev.timing.critical_path))
    mem = Table(title="memory")
    for col in ("tier", "used GB", "capacity GB"):
        mem.add_column(col)
    mem.add_row("HBM per accelerator (max)", f"{m['hbm_used_gb']:.1f}", f"{m['hbm_capacity_gb']:.1f}")
    mem.add_row("host DDR per node (max)", f"{m['ddr_used_gb']:.1f}", f"{m['ddr_capacity_gb']:.1f}")
    console.print(mem)
    console.print("placement: " + ", ".join(f"{k} {v}" for k, v in sorted(ev.plan.counts.items())))
    money = Table(title="capex and power by part")
    for col in ("part", "capex USD", "power W"):
        money.add_column(col, justify="right" if col != "part" else "left")
    parts = sorted(set(ev.cost.parts_usd) | set(ev.power.parts_w))
    for part in parts:
        money.add_row(part, f"{ev.cost.parts_usd.get(part, 0.0):,.0f}",
                      f"{ev.power.parts_w.get(part, 0.0):,.0f}")
    money.add_row("[bold]total", f"[bold]{ev.cost.capex_usd:,.0f}", f"[bold]{ev.power.power_w:,.0f}")
    console.print(money)
    console.print(
        f"TCO {m['tco_usd_per_year']:,.0f} USD/year, {m['usd_per_million_samples']:.4f} USD per "
        f"million samples, {m['energy_per_sample_j'] * 1e3:.3f} mJ/sample, one Criteo epoch in "
        f"{m['epoch_time_s'] / 60:.1f} min for {m['epoch_cost_usd']:,.2f} USD"
    )
    for note in ev.timing.notes:
        console.print(f"note: {note}")


PART_KINDS = ("accelerators", "cpus", "nics", "switches")
"""``dse list`` kinds read from the catalog (with ``--json`` and ``--catalog``)."""
LIST_KINDS = ("workloads", "systems", *PART_KINDS, "spaces", "objectives", "studies")


@app.command("list")
def list_cmd(
    what: Annotated[str, typer.Argument(help=", ".join(LIST_KINDS))],
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the parts as JSON (accelerators, cpus, nics, switches).")] = False,
    catalog: CatalogOpt = None,
) -> None:
    """List what is available: workloads, systems, accelerators, CPUs, NICs, switches, spaces,
    objective sets or studies."""
    console = wide_console(200)
    if what not in LIST_KINDS:
        fail(f"list: unknown kind {what!r} (known: {', '.join(LIST_KINDS)})")
    if (as_json or catalog is not None) and what not in PART_KINDS:
        fail(f"list {what}: --json and --catalog list parts only ({', '.join(PART_KINDS)})")
    try:
        if what in PART_KINDS:
            rows = part_rows(what, load_user_catalog(catalog).catalog)
            if as_json:
                typer.echo(to_json(rows))
                return
            table = _part_table(what, rows)
        elif what == "workloads":
            table = Table("name", "tables", "params", "footprint GB", "MFLOP/sample", "batch",
                          "precision", "synthetic")
            for name in workload_presets():
                w = load_workload(name).summary()
                table.add_row(name, str(w["tables"]), si(w["embedding_params"], ""),
                              f"{w['footprint_gb']:.1f}", f"{w['forward_mflop_per_sample']:.1f}",
                              str(w["global_batch"]), str(w["precision"]), str(w["synthetic"]))
        elif what == "systems":
            table = Table("name", "nodes", "accelerators", "scale-up", "network", "description")
            for name in system_presets():
                s = load_system(name)
                table.add_row(name, str(s.nodes), f"{s.accelerators_per_node} x {s.accelerator.name}",
                              s.scaleup, f"{s.spec.node.nics} x {s.spec.node.nic_gbit_s:g} Gb/s",
                              s.spec.description)
        else:
            table = _list_study_files(what)
    except DseInputError as exc:
        fail(str(exc))
        return
    console.print(table)


PART_COLUMNS = {
    "accelerators": ("key", "name", "hbm_gb", "hbm_gb_s", "peak_tflops", "scaleup_gb_s",
                     "default_scaleup", "pcie_gen", "tdp_w", "price_usd", "source"),
    "cpus": ("key", "name", "cores", "ddr", "ddr_channels", "pcie_gen", "pcie_lanes", "tdp_w",
             "price_usd", "source"),
    "nics": ("key", "gbit_s", "tdp_w", "price_usd", "source"),
    "switches": ("key", "radix", "usd_per_port_per_400g", "usd_per_accelerator", "latency_s",
                 "hop_latency_s", "source"),
}
"""The table columns of ``dse list``: the key a system file names, the figures it needs (a system's
``node.accelerator``, ``node.cpu``, ``node.nic_gbit_s``), the price and the source; ``--json``
has every field."""


def part_rows(what: str, catalog: Catalog) -> list[dict[str, Any]]:
    """Every part of kind ``what`` (:data:`PART_KINDS`) as a plain record led by its key."""
    by_kind: dict[str, dict[str, Any]] = {
        "accelerators": catalog.accelerator, "cpus": catalog.cpu, "nics": catalog.nic,
        "switches": {"network": catalog.network_switch, "scaleup": catalog.scaleup_switch},
    }
    entries = by_kind[what]
    return [{"key": key, **to_mapping(entry)} for key, entry in sorted(entries.items())]


def _part_table(what: str, rows: list[dict[str, Any]]) -> Table:
    columns = PART_COLUMNS[what]
    table = Table(*columns)
    for row in rows:
        table.add_row(*(escape(_part_cell(row.get(col))) for col in columns))
    return table


def _part_cell(value: Any) -> str:
    if isinstance(value, dict):  # peak_tflops by precision
        return " ".join(f"{k} {v:g}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:,.0f}" if value >= 1000 else f"{value:g}"
    return "" if value is None else str(value)


def _list_study_files(what: str) -> Table:
    from dse.search.objectives import load_objectives, objective_names
    from dse.search.space import load_space, space_names
    from dse.search.spec import load_study_spec, study_names

    if what == "spaces":
        table = Table("name", "base system", "parameters", "description")
        for name in space_names():
            sp = load_space(name)
            table.add_row(name, sp.base_system, ", ".join(sp.parameters), sp.description)
    elif what == "objectives":
        table = Table("name", "objectives", "constraints", "description")
        for name in objective_names():
            o = load_objectives(name)
            table.add_row(name, ", ".join(f"{x.direction} {x.metric}" for x in o.objectives),
                          ", ".join(f"{c.metric} <= {c.max}" if c.max is not None else
                                    f"{c.metric} >= {c.min}" for c in o.constraints), o.description)
    else:
        table = Table("name", "workload", "space", "objectives", "sampler", "budget", "seed")
        for name in study_names():
            st = load_study_spec(name)
            table.add_row(name, st.workload, st.space, st.objectives, st.sampler, str(st.budget),
                          str(st.seed))
    return table


@app.command("calibrate")
def calibrate_cmd(
    out: Annotated[Path, typer.Option("--out", help="Calibration file to write.")] = Path(
        "dse/data/calibration.toml"),
    data: Annotated[Path | None, typer.Option("--data", help="Measurement CSV (default: packaged).")] = None,
    version: Annotated[str, typer.Option("--version", help="Version label to record.")] = "",
) -> None:
    """Fit the calibration parameters to the measurements and write a versioned calibration file."""
    from dse.calibration.fit import FIT_PARAMETERS, fit, validate
    from dse.calibration.measurements import load_measurements
    from dse.calibration.parameters import Calibration, write_calibration

    try:
        measurements = load_measurements(data)
    except DseInputError as exc:
        fail(str(exc))
        return
    result = fit(measurements, Calibration())
    check = validate(measurements, result.calibration, leave_one_out=False)
    label = version or f"{date.today():%Y.%m.%d}-n{len(measurements)}"
    calib = dataclasses.replace(result.calibration, version=label, fit={
        "points": float(len(measurements)),
        "free_parameters": float(result.free_parameters),
        "median_abs_pct_error": check.median_abs_pct_error,
        "mean_abs_pct_error": check.mean_abs_pct_error,
        "spearman": check.spearman,
    })
    write_calibration(calib, out)
    console = Console()
    table = Table("parameter", "fitted", "prior", title=f"calibration {label}")
    prior = Calibration()
    for name in FIT_PARAMETERS:
        table.add_row(name, f"{getattr(calib, name):.4g}", f"{getattr(prior, name):.4g}")
    for family, factor in sorted(calib.software_factor.items()):
        table.add_row(escape(f"software_factor[{family}]"), f"{factor:.4g}", "1")
    console.print(table)
    console.print(
        f"{len(measurements)} points, {result.free_parameters} free parameters: median |error| "
        f"{check.median_abs_pct_error:.1f}%, mean {check.mean_abs_pct_error:.1f}%, Spearman "
        f"{check.spearman:.3f}; written to {out}"
    )


@app.command("validate")
def validate_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    html: Annotated[Path | None, typer.Option("--html", help="Write a Plotly report page.")] = None,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="Write the Markdown report.")] = None,
    calibration: Annotated[Path | None, typer.Option("--calibration", help="Calibration file.")] = None,
    data: Annotated[Path | None, typer.Option("--data", help="Measurement CSV (default: packaged).")] = None,
    loo: Annotated[bool, typer.Option("--loo/--no-loo", help="Leave-one-out refits.")] = True,
    forward: Annotated[bool, typer.Option(
        "--forward", help="Also fit on the points published up to --cut and predict the rest.")] = False,
    cut: Annotated[str, typer.Option("--cut", help="Last month (YYYY-MM) fitted by --forward.")] = "2022-12",
) -> None:
    """Compare the calibrated model with every published measurement (and leave-one-out)."""
    from dse.calibration.fit import validate
    from dse.calibration.measurements import load_measurements
    from dse.calibration.parameters import load_calibration
    from dse.outputs.validation_page import render_html, render_markdown, render_table

    try:
        measurements = load_measurements(data)
        calib = load_calibration(calibration)
    except DseInputError as exc:
        fail(str(exc))
        return
    try:
        report = validate(measurements, calib, leave_one_out=loo,
                          forward_cut=cut if forward else None)
    except DseInputError as exc:
        fail(str(exc))
        return
    if html is not None:
        html.parent.mkdir(parents=True, exist_ok=True)
        html.write_text(render_html(report), encoding="utf-8")
    if markdown is not None:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(render_markdown(report), encoding="utf-8")
    if as_json:
        typer.echo(to_json(report.to_dict()))
    else:
        render_table(report, wide_console(160))
