"""Model commands of the ``dse`` CLI: evaluate, list, calibrate and validate."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from dse.cli._app import app, check_targets, fail, si, to_json, warn, write_or_fail
from dse.cli._app import console as plain_console
from dse.cli.tables import print_table
from dse.errors import DseInputError
from dse.model.catalog import LISTED_SECTIONS, Catalog
from dse.model.evaluate import Evaluation, evaluate
from dse.model.parameters import Calibration, load_calibration
from dse.model.racks import rack_count, rack_phrase, racks_of
from dse.model.stages import Stage
from dse.model.system import System, load_system, system_presets
from dse.model.user_catalog import load_user_catalog, split_catalog_overrides
from dse.model.whatif import what_if
from dse.model.workload import load_workload, with_batch, workload_presets
from dse.outputs.labels import header, human_number, show
from dse.records import parse_override, to_mapping

if TYPE_CHECKING:
    from dse.calibration.ensemble import PredictionInterval
    from dse.outputs.compare import DesignComparison
    from dse.outputs.plan import PlanSummary

Overrides = tuple[tuple[str, Any], ...]

CatalogOpt = Annotated[Path | None, typer.Option(
    "--catalog", help="A user catalog: your own accelerators, CPUs, NICs, prices and facility "
    "figures on top of the packaged catalog.")]
CalibrationOpt = Annotated[Path | None, typer.Option(
    "--calibration", help="A calibration file to score with instead of the packaged one (dse "
    "calibrate --data mine.csv writes one from your own measurements); the 80% intervals come "
    "from the ensemble beside it (NAME_ensemble.json, dse calibrate --ensemble N).")]


def calibration_option(path: Path | None) -> Calibration:
    """The calibration ``--calibration`` names (the packaged one without it); a file that does not
    load is one line naming ``--calibration`` and the file."""
    if path is None:
        return load_calibration()
    try:
        return load_calibration(path)
    except DseInputError as exc:
        raise DseInputError("--calibration", "", str(exc)) from None


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
    plan: Annotated[bool, typer.Option(
        "--plan", help="List the placement: every table's sharding, devices, tier and GB per device, "
        "and every device's memory, embedding and all-to-all time.")] = False,
    what_if_: Annotated[bool, typer.Option(
        "--what-if", help="The step time were each stage twice as fast: which part to upgrade.")] = False,
    html: Annotated[Path | None, typer.Option(
        "--html", help="Write the step's timeline (a Gantt chart of its overlapping stages, the "
        "critical path outlined) to this HTML file.")] = None,
    catalog: CatalogOpt = None,
    ensemble: Annotated[Path | None, typer.Option(
        "--ensemble", help="A calibration ensemble file for the 80% intervals instead of the "
        "calibration's own (dse calibrate --ensemble writes one).")] = None,
    calibration: CalibrationOpt = None,
) -> None:
    """Score one design: step time by stage, bottleneck, memory, cost and power, with the 80%
    prediction interval of everything that scales with throughput."""
    from dse.outputs.plan import plan_summary  # here: no other command needs it

    check_targets(True, html)  # a link there is refused before anything is printed
    try:
        wl_over, sys_over, cat_over = split_overrides(set_ or [])
        user = load_user_catalog(catalog, cat_over)
        wl = load_workload(workload, wl_over)
        sysm = load_system(system, sys_over, user.catalog)
        _warn_implausible(user.catalog, catalog, [sysm], system)
        calib = calibration_option(calibration)
        ev = evaluate(wl, sysm, calib, catalog=user.catalog)
        # Defaults that decide the answer are listed, never applied silently (issue 13).
        from dse.model.defaults import sensitive_defaults
        leaned_on = sensitive_defaults(wl, system, sys_over, calib, catalog=user.catalog)
        summary = plan_summary(ev, calib) if plan else None
        larger = _at_larger_batch(ev, user.catalog, calib)
    except DseInputError as exc:
        fail(str(exc))
        return
    iv, iv_note = design_interval(ev, ensemble, calib, calibration)
    if as_json:
        extra: dict[str, Any] = {"plan": summary.to_dict()} if summary else {}
        extra["larger_batch"] = ({"global_batch": larger.workload.global_batch,
                                  "throughput_samples_per_s": larger.throughput_samples_per_s,
                                  "note": _larger_batch_note(ev, larger)} if larger else None)
        if what_if_:
            extra["step_s_if_2x_faster"] = what_if(ev)
        if user.changes:
            extra["catalog_changes"] = [dataclasses.asdict(c) for c in user.changes]
        typer.echo(to_json({**ev.to_dict(), **interval_json(ev, iv, iv_note),
                            "sensitive_defaults": [dataclasses.asdict(d) for d in leaned_on],
                            **extra}))
    else:
        print_evaluation(ev, plain_console(), iv)
        if iv_note:
            plain_console(stderr=True, soft_wrap=True).print(f"note: {iv_note}")
        if summary:
            print_plan(summary, plain_console())
        if what_if_:
            print_what_if(ev, plain_console())
        for d in leaned_on:
            plain_console().print(f"note: {d.describe()}")
        if larger is not None:
            plain_console().print(f"note: {_larger_batch_note(ev, larger)}")
        for change in user.changes:
            plain_console().print(f"catalog: {change.describe()}")
    if html is not None:
        from dse.outputs.timeline import timeline_page

        write_or_fail(html, timeline_page(ev))
        typer.echo(f"timeline written to {html}", err=as_json)
    if not ev.feasible:
        raise typer.Exit(code=0)


def _at_larger_batch(ev: Evaluation, catalog: Catalog, calib: Calibration) -> Evaluation | None:
    """The design at the larger batch its workload's curve allows, when it runs on more devices
    than the workload's batch was measured on (:meth:`dse.model.workload.Workload.larger_batch`):
    ``dse evaluate -s dgx-h100 -w mlperf-dlrm-dcnv2 --set nodes=16`` runs one node's batch."""
    batch = ev.workload.larger_batch(ev.system.accelerators_total)
    if batch is None:
        return None
    return evaluate(with_batch(ev.workload, batch), ev.system, calib, catalog=catalog)


def _larger_batch_note(ev: Evaluation, larger: Evaluation) -> str:
    """The note of :func:`_at_larger_batch`: the batch, where it comes from, what it gives."""
    wl, curve = ev.workload, ev.workload.curve()
    assert curve is not None
    return (f"global batch {wl.global_batch:,} is {wl.name}'s batch on "
            f"{wl.global_batch_accelerators} accelerators; on {ev.system.accelerators_total:,} its "
            f"convergence curve ({curve.short_source}) reaches {larger.workload.global_batch:,}: "
            f"{larger.throughput_samples_per_s / 1e6:.1f} M samples/s there, against "
            f"{ev.throughput_samples_per_s / 1e6:.1f} M (--set workload.global_batch="
            f"{larger.workload.global_batch})")


RAW_LABELS = {str(Stage.allreduce_exposed): "allreduce beyond backward"}
"""Rows of the durations-before-overlap table named apart from the critical-path table's stage of
the same key: ``stages_s["allreduce_exposed"]`` is the allreduce beyond the backward phase it
runs beside, not the allreduce's share of the critical path (``breakdown_s``)."""


def print_what_if(ev: Evaluation, console: Console) -> None:
    """``dse evaluate --what-if``: the step were each stage twice as fast, best first."""
    table = Table(title="step time were one stage 2x faster")
    for col in ("stage", "now ms", "step ms", "shorter"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    options = what_if(ev)
    for stage in sorted(options, key=options.__getitem__):
        gain = 1.0 - options[stage] / ev.step_time_s if ev.step_time_s else 0.0
        table.add_row(stage.replace("_", " "), f"{ev.breakdown_s[stage] * 1e3:.3f}",
                      f"{options[stage] * 1e3:.3f}", f"{gain:.1%}")
    console.print(table)


@app.command("compare")
def compare_cmd(
    first: Annotated[str, typer.Argument(help="A system preset or file (or, with --study, a trial number).")],
    second: Annotated[str, typer.Argument(help="Another system (or trial number).")],
    workload: Annotated[str | None, typer.Option(
        "--workload", "-w", help="Workload preset or TOML file (for two systems).")] = None,
    study: Annotated[str | None, typer.Option(
        "--study", help="Compare two trials of this study (name or file).")] = None,
    storage: Annotated[str | None, typer.Option(
        "--storage", help="The study's storage (see dse run).")] = None,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a field of both systems or the workload (repeatable).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    catalog: CatalogOpt = None,
    calibration: Annotated[Path | None, typer.Option(
        "--calibration", help="A calibration file to score both with instead of the packaged "
        "one (with --study: instead of the calibration the study was scored with).")] = None,
) -> None:
    """Two systems, or two trials of a study, side by side: metrics, the critical-path time of
    every stage and its difference, what binds each, and the stage to upgrade."""
    try:
        if study is not None:
            (ev_a, ev_b), labels = _trial_pair(study, storage, first, second, calibration)
        else:
            if workload is None:
                fail("compare: give --workload for two systems (or --study for two trials)")
                return
            wl_over, sys_over, cat_over = split_overrides(set_ or [])
            user = load_user_catalog(catalog, cat_over)
            wl = load_workload(workload, wl_over)
            calib = calibration_option(calibration)
            ev_a, ev_b = (evaluate(wl, load_system(s, sys_over, user.catalog), calib, user.catalog)
                          for s in (first, second))
            labels = (first, second)
    except DseInputError as exc:
        fail(str(exc))
        return
    from dse.outputs.compare import compare

    result = compare(ev_a, ev_b, labels)
    if as_json:
        typer.echo(to_json(result.to_dict()))
    else:
        print_comparison(result, plain_console())


def _trial_pair(study: str, storage: str | None, first: str, second: str,
                calibration: Path | None = None) -> tuple[tuple[Evaluation, Evaluation], tuple[str, str]]:
    """The evaluations of two trials of ``study``, rebuilt from their designs and scored with
    ``calibration`` (default: the calibration the study was scored with)."""
    from dse.search.results import load_stored_study
    from dse.search.study.encoding import design_system, design_workload
    from dse.search.study.study_file import (
        as_recorded,
        load_study_spec,
        study_calibration,
        study_catalog,
        study_space,
        study_workload,
    )

    spec = load_study_spec(study)
    stored = load_stored_study(spec, storage)
    spec = as_recorded(spec, stored.user_attrs)  # the machines the trials were scored on
    trials = {t.number: t for t in stored.get_trials(deepcopy=False)}
    wl, space, cat = study_workload(spec), study_space(spec), study_catalog(spec).catalog
    calib = calibration_option(calibration) if calibration is not None else study_calibration(spec)
    out = []
    for given in (first, second):
        trial = trials.get(int(given)) if given.isdigit() else None
        if trial is None or "design" not in trial.user_attrs:
            raise DseInputError(spec.name, "", f"no scored trial {given!r} (give trial numbers, as "
                                "dse pareto lists them)")
        design = trial.user_attrs["design"]
        out.append(evaluate(design_workload(space, design, wl), design_system(space, design, cat),
                            calib, cat))
    return (out[0], out[1]), (f"trial {first}", f"trial {second}")


def print_comparison(c: DesignComparison, console: Console) -> None:
    """The side-by-side table of ``dse compare``."""
    # The change is the second design's, relative to the first (as given): said in the title and
    # the column, so "+44% capex" cannot be read as the first design's.
    table = Table(title=f"{c.labels[1]} relative to {c.labels[0]}")
    table.add_column("")
    for head in (*c.labels, f"{c.labels[1]} vs {c.labels[0]}"):
        table.add_column(head, justify="right")
    for row in c.metrics:
        change = row.change
        table.add_row(header(row.name), show(row.name, row.a), show(row.name, row.b),
                      "" if change is None else f"{change:+.1%}")
    table.add_section()
    for row in c.stages_s:
        if row.a or row.b:
            table.add_row(f"{row.name.replace('_', ' ')} ms", f"{row.a * 1e3:.3f}",
                          f"{row.b * 1e3:.3f}", f"{(row.b - row.a) * 1e3:+.3f}")
    table.add_section()
    table.add_row("feasible", *(str(f).lower() for f in c.feasible), "")
    table.add_row("bound by", *(b.replace("_", " ") for b in c.bottlenecks), "")
    upgrades = [c.best_upgrade(i) for i in (0, 1)]
    table.add_row("upgrade first", *(s.replace("_", " ") for s, _ in upgrades), "")
    table.add_row("step ms after", *(f"{t * 1e3:.3f}" for _, t in upgrades), "")
    console.print(table)


def design_interval(ev: Evaluation, path: Path | None = None, calib: Calibration | None = None,
                    calib_file: Path | None = None) -> tuple[PredictionInterval | None, str]:
    """The 80% interval of ``ev`` (scored with ``calib``, default the packaged calibration, from
    ``calib_file``) from the ensemble in ``path`` (default: the calibration's own, beside its
    file, :func:`dse.calibration.ensemble.ensemble_of`), or None and why there is none (no
    ensemble, or one built for another calibration: no interval rather than a wrong one)."""
    # Imported here: the ensemble module (with the fit and the measurements it needs) is the
    # CLI's largest import, and most commands never use it.
    from dse.calibration.ensemble import (
        EnsembleUnavailable,
        ensemble_of,
        load_ensemble,
        prediction_interval,
    )

    calib = calib or load_calibration()
    try:
        ens = (None if ev.system.cpu_only else load_ensemble(path, calib) if path is not None
               else ensemble_of(calib_file, calib))
        iv = prediction_interval(ev, ens, calib)
    except EnsembleUnavailable as exc:
        return None, str(exc)
    return iv, "" if iv is not None else "no interval: the design has no finite throughput"


def interval_json(ev: Evaluation, iv: PredictionInterval | None, note: str) -> dict[str, Any]:
    """The interval keys of ``dse evaluate --json``: ``throughput_interval_samples_per_s`` and
    ``step_time_interval_s`` as ``[low, high]`` (null without an interval, ``interval_note`` then
    says why), ``metric_intervals`` for every metric that scales with throughput, with wall
    power or with TCO's energy share (``dse.calibration.ensemble.INTERVAL_METRICS``), and
    ``outside_measured_regime``: why the design lies outside the calibration's measured regime (an
    empty list when inside; null without an interval), and ``interval_basis``: ``ensemble`` or,
    for a node without accelerators, ``cpu_class``."""
    if iv is None:
        return {"throughput_interval_samples_per_s": None, "step_time_interval_s": None,
                "metric_intervals": {}, "interval_note": note, "outside_measured_regime": None}
    metrics = ev.to_dict()
    from dse.calibration.ensemble import INTERVAL_METRICS

    spans = {k: iv.of(k, float(metrics[k])) for k in INTERVAL_METRICS
             if isinstance(metrics.get(k), int | float)}
    return {**iv.to_dict(ev.step_time_s),
            "metric_intervals": {k: list(v) for k, v in spans.items() if v is not None}}


def _span(iv: PredictionInterval | None, metric: str, value: float, fmt: Any) -> str:
    """`` (80%: low-high)`` of a metric, formatted by ``fmt``; empty without an interval."""
    span = iv.of(metric, value) if iv else None
    if iv is None or span is None:
        return ""
    return f" ({iv.level:.0%}: {fmt(span[0])}-{fmt(span[1])})"


def print_evaluation(ev: Evaluation, console: Console, iv: PredictionInterval | None = None) -> None:
    """The readable breakdown of ``dse evaluate`` (with ``iv``, each figure the calibration moves
    carries its interval)."""
    m = {k: v for k, v in ev.metrics().items() if isinstance(v, int | float)}
    _print_headline(ev, console, iv)
    _print_stages(ev, console)
    _print_memory_and_parts(ev, m, console)
    _print_costs(ev, m, console, iv)
    if iv is not None:
        _print_interval_source(iv, console)
    for note in ev.timing.notes:
        console.print(f"note: {note}")


def _print_headline(ev: Evaluation, console: Console, iv: PredictionInterval | None) -> None:
    """The workload on the system, its racks' power, feasibility, what-if parts, and throughput,
    step time and bottleneck (with ``iv``, their intervals)."""
    s = ev.system
    racks = rack_count(s.spec)
    size = rack_phrase(racks, s.nodes) if racks_of(s.spec) else f"{s.nodes} node(s)"
    console.print(Text.assemble(
        (ev.workload.name, "bold"), " on ", (s.spec.name or s.accelerator.name, "bold"),
        f": {size} x {s.accelerators_per_node} {s.accelerator.name} "
        f"({s.scaleup}, {s.network.topology}); calibration {ev.calibration_version}"))
    if racks:
        console.print(f"{ev.rack_kw:.1f} kW a rack with every accelerator at TDP")
    elif ev.racks:
        console.print(f"in {ev.racks} of the facility's racks ({ev.rack_kw:.1f} kW the fullest with "
                      "every accelerator at TDP)")
    console.print(Text("feasible", "green") if ev.feasible else
                  Text.assemble(("INFEASIBLE", "red"), ": " + "; ".join(ev.reasons)))
    if ev.what_if:
        console.print(Text.assemble(("WHAT-IF parts", "yellow"), " (not on sale): "
                                    + "; ".join(ev.what_if)))
    console.print(Text.assemble(
        "throughput ", (si(ev.throughput_samples_per_s, 'samples/s'), "bold"),
        f"{_span(iv, 'throughput_samples_per_s', ev.throughput_samples_per_s, lambda v: si(v, ''))}, "
        f"step {ev.step_time_s * 1e3:.3f} ms"
        f"{_span(iv, 'step_time_s', ev.step_time_s, lambda v: f'{v * 1e3:.3f}')}, "
        "bottleneck ", (ev.bottleneck, "bold")))


def _print_stages(ev: Evaluation, console: Console) -> None:
    """The step time by stage on the critical path (ms, share), the stages' durations before
    overlap, and the critical path."""
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
        raw.add_row(RAW_LABELS.get(name, name), f"{sec * 1e3:.3f}")
    console.print(raw)
    console.print("critical path: " + " -> ".join(ev.timing.critical_path))


def _print_memory_and_parts(ev: Evaluation, m: Mapping[str, float], console: Console) -> None:
    """Memory used against capacity (HBM, host DDR; GB), the placement's counts, and capex (USD)
    and power (W) by part. ``m``: the numeric metrics."""
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
    money.add_row(*(Text(cell, "bold") for cell in (
        "total", f"{ev.cost.capex_usd:,.0f}", f"{ev.power.power_w:,.0f}")))
    console.print(money)
    act = ev.power.activity
    if act is not None and ev.system.accelerators_per_node and not ev.system.cpu_only:
        console.print(f"power by activity: accelerators at {act.accelerator:.0%} of TDP - idle over "
                      f"the step, CPUs at {act.cpu:.0%} of TDP, links at {act.network:.0%} (network), "
                      f"{act.fabric:.0%} (scale-up), {act.host:.0%} (host) of their draw")


def _print_costs(ev: Evaluation, m: Mapping[str, float], console: Console,
                 iv: PredictionInterval | None) -> None:
    """TCO (USD/year), cost (USD per billion samples) and energy (mJ) per sample, and the lines on
    training the workload (with ``iv``, their intervals)."""
    console.print(
        f"TCO {m['tco_usd_per_year']:,.0f} USD/year"
        f"{_span(iv, 'tco_usd_per_year', m['tco_usd_per_year'], lambda v: f'{v:,.0f}')}, "
        f"{human_number(ev.usd_per_billion_samples)} USD "
        f"per billion samples"
        f"{_span(iv, 'usd_per_billion_samples', ev.usd_per_billion_samples, human_number)}, "
        f"{m['energy_per_sample_j'] * 1e3:.3f} mJ/sample"
        f"{_span(iv, 'energy_per_sample_j', m['energy_per_sample_j'], lambda v: f'{v * 1e3:.3f}')}"
    )
    console.print(training_line(ev, iv))
    to_train = to_train_line(ev, iv)
    if to_train:
        console.print(to_train)


def _print_interval_source(iv: PredictionInterval, console: Console) -> None:
    """Where the interval comes from (the CPU class, or the ensemble and the fit's errors) and
    why it is widened outside the measured regime."""
    lo, hi = iv.relative
    point = iv.throughput_samples_per_s
    source = ("the CPU class's leave-one-out errors (a node without accelerators is fitted "
              "apart, on Intel's MLPerf CPU runs; docs/validation.md)" if iv.basis == "cpu_class" else
              f"the calibration ensemble ({iv.members} bootstrap refits alone: "
              f"{iv.spread_low / point - 1:+.0%} to {iv.spread_high / point - 1:+.0%}) and the "
              f"fit's {'leave-one-class-out' if iv.outside else 'leave-one-out'} errors "
              "(docs/validation.md)")
    console.print(f"interval: {iv.level:.0%} prediction interval {lo - 1:+.0%} to {hi - 1:+.0%} "
                  f"from {source}")
    for reason in iv.outside:
        console.print(f"outside the measured regime: {reason}; the interval is widened")
    if iv.power_unpinned:
        console.print(f"power: {iv.power_low - 1:+.0%} to {iv.power_high - 1:+.0%} at the ends of the "
                      f"power levels no measurement pins down ({', '.join(iv.power_unpinned)})")


def device_ranges(devices: tuple[int, ...]) -> str:
    """``0-3, 8, 10-11``: consecutive device numbers as ranges."""
    parts: list[str] = []
    start = prev = -2
    for d in (*devices, -2):
        if d == prev + 1:
            prev = d
            continue
        if start >= 0:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = d
    return ", ".join(parts)


def print_plan(summary: PlanSummary, console: Console) -> None:
    """The placement of ``dse evaluate --plan``: a row per table, then a row per device."""
    tables = Table(title="placement by table")
    for col in ("table", "sharding", "hot rows", "devices", "tier", "GB/device", "emb. share"):
        tables.add_column(col, justify="left" if col in ("sharding", "devices", "tier") else "right")
    for t in summary.tables:
        where = f"all {len(t.devices)}" if t.copies > 1 else device_ranges(t.devices)
        tables.add_row(str(t.table), t.sharding.replace("_", "-"), f"{t.hot_rows:,}" if t.hot_rows else "",
                       where, ", ".join(t.tiers), si(max(t.bytes_by_device.values(), default=0.0), "B"),
                       f"{t.embedding_share:.1%}")
    console.print(tables)
    devices = Table(title="placement by device (embedding, all-to-all: forward + backward)")
    cpu = any(d.cpu_pooling_s for d in summary.devices)  # the host CPUs' own stage, when they pool tables
    for col in ("devices", "tables", "HBM GB", "node DDR GB", "embedding ms",
                *(("of it host CPUs ms",) if cpu else ()), "all-to-all ms"):
        devices.add_column(col, justify="right")
    # Devices with identical rows share one line (a balanced plan has a handful of kinds).
    rows: list[tuple[list[int], tuple[str, ...]]] = []
    for d in summary.devices:
        cells = (str(d.tables), f"{d.hbm_used_gb:.2f}", f"{d.ddr_used_gb:.2f}", f"{d.embedding_s * 1e3:.3f}",
                 *((f"{d.cpu_pooling_s * 1e3:.3f}",) if cpu else ()), f"{d.alltoall_s * 1e3:.3f}")
        if rows and rows[-1][1] == cells:
            rows[-1][0].append(d.device)
        else:
            rows.append(([d.device], cells))
    for group, cells in rows:
        devices.add_row(device_ranges(tuple(group)), *cells)
    console.print(devices)


def duration(seconds: float) -> str:
    """``seconds`` in the largest unit that keeps it above 1 (s, min, h, days), 3 significant
    figures."""
    if not math.isfinite(seconds):
        return "never (no throughput)"
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{human_number(seconds / size)} {unit}"
    return f"{human_number(seconds)} s"


def training_line(ev: Evaluation, iv: PredictionInterval | None = None) -> str:
    """Time and TCO of one pass over the workload's own dataset (with ``iv``, their intervals),
    or why there is none."""
    dataset = ev.dataset_pass()
    if dataset is None:
        return f"no time to train: {ev.workload.name} states no dataset size (samples_per_epoch)"
    seconds, usd = dataset
    return (f"one epoch of its dataset ({ev.workload.samples_per_epoch:,} samples) in "
            f"{duration(seconds)}{_span(iv, 'dataset_time_s', seconds, duration)} for "
            f"{human_number(usd)} USD{_span(iv, 'dataset_cost_usd', usd, human_number)}")


def to_train_line(ev: Evaluation, iv: PredictionInterval | None = None) -> str:
    """Time and TCO to train to the target quality (the workload's convergence curve at its batch,
    else one epoch, with ``iv`` their intervals), and where the sample count comes from; or why
    there is none; empty when :func:`training_line` has said so already (no curve, no dataset)."""
    need = ev.training_samples()
    if need.samples is None:
        return f"no time to train: {need.basis}" if need.on_curve else ""
    seconds, usd = ev.to_train()
    return (f"to train: {human_number(need.samples)} samples in {duration(seconds)}"
            f"{_span(iv, 'time_to_train_s', seconds, duration)} for {human_number(usd)} USD"
            f"{_span(iv, 'cost_to_train_usd', usd, human_number)}; {need.basis}")


PART_KINDS = (*LISTED_SECTIONS, "switches")
"""``dse list`` kinds read from the catalog (with ``--json`` and ``--catalog``): its tables of parts
by key (:data:`~dse.model.catalog.LISTED_SECTIONS`) and the switches."""
LIST_KINDS = ("workloads", "systems", *PART_KINDS, "spaces", "objectives", "studies")


def _warn_implausible(cat: Catalog, catalog: Path | None, systems: Sequence[System],
                      name: str) -> None:
    """Warn (stderr) about implausible prices of the catalog (the user's file, ``--set`` or the
    packaged one) and capacities of ``systems`` (named ``name``, with ``--set``)."""
    from dse.model.plausible import catalog_warnings, system_warnings

    warn(str(catalog) if catalog else "catalog (with --set)",
         [w.describe() for w in catalog_warnings(cat)])
    warn(f"system {name} (with --set)", [w.describe() for s in systems for w in system_warnings(s)])


@app.command("list")
def list_cmd(
    what: Annotated[str, typer.Argument(help=", ".join(LIST_KINDS))],
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the parts as JSON (" + ", ".join(PART_KINDS) + ").")] = False,
    catalog: CatalogOpt = None,
) -> None:
    """List what is available: workloads, systems, accelerators, CPUs, NICs, CXL memory, switches,
    spaces, objective sets or studies."""
    console = plain_console()
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
    print_table(console, table)


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
has every field. A kind without columns here shows every figure that is not a note."""


def part_rows(what: str, catalog: Catalog) -> list[dict[str, Any]]:
    """Every part of kind ``what`` (:data:`PART_KINDS`) as a plain record led by its key."""
    entries: dict[str, Any] = (
        {"network": catalog.network_switch, "scaleup": catalog.scaleup_switch} if what == "switches"
        else getattr(catalog, LISTED_SECTIONS[what]))
    return [{"key": key, **to_mapping(entry)} for key, entry in sorted(entries.items())]


def _part_table(what: str, rows: list[dict[str, Any]]) -> Table:
    notes = ("assumed", "price_low_usd", "price_high_usd", "vendor")
    columns = PART_COLUMNS.get(what) or tuple(k for k in (rows[0] if rows else {}) if k not in notes)
    table = Table(*columns)
    for row in rows:
        table.add_row(*(_part_cell(row.get(col)) for col in columns))
    return table


def _part_cell(value: Any) -> str:
    if isinstance(value, dict):  # peak_tflops by precision
        return " ".join(f"{k} {v:g}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:,.0f}" if value >= 1000 else f"{value:g}"
    return "" if value is None else str(value)


def _list_study_files(what: str) -> Table:
    from dse.search.study.objective_sets import load_objectives, objective_names
    from dse.search.study.search_space import load_space, space_names
    from dse.search.study.study_file import load_study_spec, study_names

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
    out: Annotated[Path | None, typer.Option("--out", help=(
        "Calibration file to write (default: dse/data/calibration.toml; with --data, "
        "NAME-calibration.toml beside NAME.csv, never inside the installed package)."))] = None,
    data: Annotated[Path | None, typer.Option("--data", help=(
        "Your own measurements (CSV: id, system, workload, set, samples_per_s, note; "
        "docs/own-calibration.md): fit what they constrain on top of the packaged calibration. "
        "A CSV in the published measurements' format is refitted from the priors instead."))] = None,
    version: Annotated[str, typer.Option("--version", help="Version label to record.")] = "",
    ensemble: Annotated[int, typer.Option(
        "--ensemble", help="Also refit on this many bootstrap resamples and once without each "
        "measurement, and write the ensemble (prediction intervals, robust fronts) beside the "
        "calibration as NAME_ensemble.json (calibration_ensemble.json for calibration.toml); "
        "with your own --data, this many members made from the packaged ensemble's; 0: none.",
        min=0)] = 0,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap resamples.")] = 0,
    jobs: Annotated[int, typer.Option("--jobs", help="Processes for the ensemble's refits.",
                                      min=1)] = 1,
    loss: Annotated[str | None, typer.Option(
        "--loss", help="Loss of the fit on the log residuals: huber (robust M-estimator, "
        "k = 1.345, MAD scale) or squares; default: squares (dse.calibration.fit.FIT_LOSS; "
        "docs/validation.md says why). The ensemble's "
        "refits use the same.")] = None,
) -> None:
    """Fit the calibration parameters to the measurements and write a versioned calibration file
    (with --ensemble, its ensemble too); with --data YOUR.csv, fit only what your own rows
    constrain on top of the packaged calibration and write it beside your file."""
    from dse.cli.own_calibration import calibrate_own, is_own_csv, own_out

    if data is not None and is_own_csv(data):
        if loss is not None:
            fail("--loss: a fit to your own rows is least squares; --loss is for the published "
                 "measurements' fit")
        calibrate_own(data, own_out(data, out), version, ensemble, seed)
        return
    out = own_out(data, out) if data is not None else out or Path("dse/data/calibration.toml")
    _calibrate_published(data, out, version, ensemble, seed, jobs, loss)


def _calibrate_published(data: Path | None, out: Path, version: str, ensemble: int, seed: int,
                         jobs: int, loss: str | None) -> None:
    """``dse calibrate`` on the published measurements (``data``: a CSV in their format, default
    the packaged ones): fit from the priors, write ``out`` and say what was fitted."""
    from dse.calibration.cpu import fit_cpu, load_cpu_measurements
    from dse.calibration.fit import (
        FIT_LOSS,
        FIT_PARAMETERS,
        check_loss,
        fit,
        fit_power,
        loss_record,
        power_record,
        validate,
    )
    from dse.calibration.measurements import fitted, load_measurements
    from dse.model.parameters import write_calibration

    try:
        everything = load_measurements(data)
        measurements = fitted(everything)
        loss = check_loss(loss or FIT_LOSS)
    except DseInputError as exc:
        fail(str(exc))
        return
    result = fit(measurements, Calibration(), loss=loss)
    # The CPU-only class moves only the CPU efficiencies, fitted apart (dse.calibration.cpu).
    result = dataclasses.replace(result, calibration=fit_power(
        fit_cpu(load_cpu_measurements(), result.calibration)))
    check = validate(measurements, result.calibration, leave_one_out=False, loss=loss)
    label = version or f"{date.today():%Y.%m.%d}-n{len(measurements)}"
    calib = dataclasses.replace(result.calibration, version=label, fit={
        "points": float(len(measurements)),
        "free_parameters": float(result.free_parameters),
        "median_abs_pct_error": check.median_abs_pct_error,
        "mean_abs_pct_error": check.mean_abs_pct_error,
        "spearman": check.spearman,
        **loss_record(loss),
        **power_record(result.calibration),
    })
    try:
        write_calibration(calib, out)
    except DseInputError as exc:
        fail(str(exc))
    console = plain_console()
    table = Table("parameter", "fitted", "prior", title=f"calibration {label}")
    prior = Calibration()
    for name in FIT_PARAMETERS:
        table.add_row(name, f"{getattr(calib, name):.4g}", f"{getattr(prior, name):.4g}")
    for family, factor in sorted(calib.software_factor.items()):
        table.add_row(f"software_factor[{family}]", f"{factor:.4g}", "1")
    console.print(table)
    console.print(
        f"{len(measurements)} points, {result.free_parameters} free parameters: median |error| "
        f"{check.median_abs_pct_error:.1f}%, mean {check.mean_abs_pct_error:.1f}%, Spearman "
        f"{check.spearman:.3f}; loss {loss}; written to {out}"
    )
    for m in everything:
        if m.excluded:
            console.print(f"excluded from the fit (machine changed state during the run): {m.id}: "
                          f"{m.state_evidence}")
    for p, w in check.downweighted:
        console.print(f"weight {w:.2f}: {p.measurement.id} (|error| {p.abs_pct_error:.0f}%)")
    if ensemble:
        _write_ensemble(measurements, calib, out, ensemble, seed, jobs, console)


def _write_ensemble(measurements: Any, calib: Any, out: Path, members: int, seed: int,
                    jobs: int, console: Console) -> None:
    """``dse calibrate --ensemble N``: build, write (beside the calibration file ``out``) and
    summarise the calibration's ensemble."""
    import time

    from dse.calibration.ensemble import build_ensemble, ensemble_beside, write_ensemble

    start = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if done % 10 == 0 or done == total:
            typer.echo(f"ensemble: {done} of {total} refits", err=True)

    ens = build_ensemble(measurements, calib, members, seed, jobs, progress)
    path = ensemble_beside(out)
    try:
        write_ensemble(ens, path)
    except DseInputError as exc:
        fail(str(exc))
    cov = ens.coverage
    assert cov is not None
    console.print(
        f"ensemble of {members} bootstrap and {len(ens.leave_one_out)} leave-one-out refits "
        f"(seed {seed}) written to {path} in {time.perf_counter() - start:.0f} s; leave-one-out "
        f"coverage of the {cov.level:.0%} intervals {cov.covered} of {cov.points} "
        f"({cov.share:.0%}), median width {cov.median_width_pct:.0f}% (bootstrap spread alone: "
        f"{cov.spread_covered} of {cov.points}, width {cov.median_spread_width_pct:.0f}%)")


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
    from dse.calibration.breakdowns import breakdown_line, markdown_lines
    from dse.calibration.cpu import load_cpu_measurements, validate_cpu
    from dse.calibration.fit import validate
    from dse.calibration.measurements import load_measurements
    from dse.model.parameters import load_calibration
    from dse.outputs.cpu_class_doc import cpu_class_line, cpu_class_lines, cpu_class_summary
    from dse.outputs.validation_page import render_html, render_markdown, summary_lines, validation_table

    check_targets(True, html, markdown)
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
    section, summary, note = _validation_intervals(measurements, calib, report)
    cpu_report = validate_cpu(load_cpu_measurements(), calib, forward_cut=cut if forward else None)
    section = [*section, *cpu_class_lines(cpu_report)]
    breakdowns, comparisons = _stage_breakdowns(calib)
    if html is not None:
        write_or_fail(html, render_html(report))
    if markdown is not None:
        write_or_fail(markdown, render_markdown(report, [*section, *markdown_lines(breakdowns, comparisons)]))
    if as_json:
        typer.echo(to_json({**report.to_dict(), "intervals": summary, "intervals_note": note or None,
                            "stage_breakdowns": [c.to_dict() for c in comparisons],
                            "cpu_class": cpu_class_summary(cpu_report)}))
    else:
        console = plain_console()
        print_table(console, validation_table(report))
        for line in summary_lines(report):
            console.print(line)
        console.print((summary and coverage_text(summary)) or f"no intervals: {note}")
        console.print(cpu_class_line(cpu_report))
        for c in comparisons:
            console.print(breakdown_line(c))


def _stage_breakdowns(calib: Any) -> tuple[Any, Any]:
    """The published per-stage breakdowns (``dse/data/stage_breakdowns.csv``) and the model's
    critical-path shares beside them, under ``calib``."""
    from dse.calibration.breakdowns import compare_all, load_breakdowns

    try:
        rows = load_breakdowns()
        return rows, compare_all(rows, calib)
    except DseInputError as exc:
        fail(str(exc))
        return (), ()


def coverage_text(summary: dict[str, Any]) -> str:
    """``dse validate``'s line on the intervals' coverage."""
    classes = "".join(f"\n{c['axis']} {c['class']} left out of the fit: {c['covered']} of "
                      f"{c['points']} inside its widened interval ({c['coverage']:.0%})"
                      for c in summary.get("class_coverage", []))
    return (f"leave-one-out coverage of the {summary['level']:.0%} prediction intervals: "
            f"{summary['covered']} of {summary['points']} ({summary['coverage']:.0%}; target "
            f"70%-90%), median width {summary['median_width_pct']:.0f}%{classes}")


def _validation_intervals(measurements: Any, calib: Any, report: Any
                          ) -> tuple[list[str], dict[str, Any] | None, str]:
    """The prediction-interval section of the validation: coverage recomputed from the packaged
    ensemble's members over ``measurements``, and the example designs' intervals; or why there
    is none (no ensemble, one of another calibration or other measurements)."""
    from dse.calibration.ensemble import EnsembleUnavailable, class_coverages, coverage, load_ensemble
    from dse.outputs.intervals_doc import examples, interval_lines, intervals_dict

    try:
        ens = load_ensemble(calibration=calib)
        cov = coverage(ens, measurements)
        ens = dataclasses.replace(ens, class_coverage=class_coverages(ens, measurements, calib))
    except EnsembleUnavailable as exc:
        return [], None, str(exc)
    shown = examples(ens, calib)
    forward = report.forward.median_abs_pct_error if report.forward is not None else None
    return (interval_lines(ens, cov, shown, report.loo_median_abs_pct_error, forward, calib),
            intervals_dict(cov, shown, ens.class_coverage), "")
