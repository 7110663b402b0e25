"""The interactive Pareto report of a study: one self-contained HTML page (Plotly embedded once).

Sections: a header (study, workload, space, objectives, trials, versions, the reproducing command);
the front for every pair of objectives (and a 3-D view for three) with dominated designs faded,
infeasible ones marked apart, front points joined and baselines labelled; the step time of every
front design by stage; parallel coordinates of the front over the design parameters; hypervolume
against trial number and parameter importances per objective; one front design's placement plan
and step timeline, chosen from a list (:mod:`dse.outputs.front_design_detail`); the front under
the model's error (error bars, each design's probability of staying on the front, the robust
front: :mod:`dse.outputs.robust_page`); a sortable table of the front.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from plotly.offline import get_plotlyjs_version

from dse import __version__
from dse.errors import DseInputError
from dse.limits import MAX_DATA_FILE_BYTES
from dse.model.metrics import METRICS
from dse.model.stages import STAGE_WORDS, STAGES
from dse.model.user_catalog import CatalogChange
from dse.outputs.figures import (
    PACKED_LOADER,
    STAGE_COLOURS,
    Figure,
    colorscale,
    deferred,
    figure_html,
    packed_plotlyjs,
)
from dse.outputs.front_design_detail import MAX_DESIGNS, chosen_section, score_designs
from dse.outputs.labels import design_phrase, rack_scale_racks, show, title
from dse.outputs.labels import header as short_label
from dse.outputs.markup import plot_text, plot_value, text
from dse.reading import read_text
from dse.records import STUDY
from dse.safe_write import write_file
from dse.search.algorithms.analysis import hypervolume_curve, importances, importances_key
from dse.search.algorithms.dedup import group_by_design, trial_numbers
from dse.search.algorithms.pareto import is_feasible, pareto_trials
from dse.search.algorithms.reference import convergence, is_own_range, own_range_reason
from dse.search.results import FrozenTrial, Study, TrialState
from dse.search.storage.recovery import BASELINE_KEY
from dse.search.study.attribute_keys import (
    CALIBRATION_VERSION_KEY,
    CATALOG_KEY,
    MODEL_KEY,
    SPACE_KEY,
    VERSION_KEY,
    WORKLOAD_KEY,
)
from dse.search.study.objective_sets import ObjectiveSet
from dse.search.study.study_file import StudySpec, batch_without_curve, searched_batch

FADED = "rgba(120,120,120,0.25)"

@dataclass(frozen=True)
class ReportData:
    """What the page shows, gathered once from the study."""

    spec: StudySpec
    objectives: ObjectiveSet
    trials: list[FrozenTrial]
    feasible: list[FrozenTrial]
    infeasible: list[FrozenTrial]
    front: list[FrozenTrial]
    params: list[str]


def gather(study: Study, spec: StudySpec, objectives: ObjectiveSet) -> ReportData:
    """Split the completed trials into feasible, infeasible and the front (first objective order)."""
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    feasible = [t for t in trials if is_feasible(t)]
    infeasible = [t for t in trials if not is_feasible(t)]
    front = pareto_trials(study, feasible)
    params = list(json.loads(study.user_attrs.get(SPACE_KEY, "{}")).get("parameters", {}))
    return ReportData(spec, objectives, trials, feasible, infeasible, front, params)


def _design(t: FrozenTrial) -> dict[str, Any]:
    design: dict[str, Any] = t.user_attrs.get("design") or {}
    return design


HOVER_METRICS: tuple[str, ...] = tuple(m.name for m in METRICS if m.hovered)
"""Metrics every point's hover shows after the study's objectives (the registry's ``hovered``)."""


def _hover_metrics(data: ReportData) -> list[str]:
    names = [o.metric for o in data.objectives.objectives]
    return list(dict.fromkeys([*names, *HOVER_METRICS]))


def _round(v: Any) -> Any:
    """Four significant digits: the page stores every point's values, so precision is size."""
    if isinstance(v, float) and math.isfinite(v) and v != 0.0:
        return float(f"{v:.4g}")
    return v if v is not None else ""


def _custom(t: FrozenTrial, data: ReportData) -> list[Any]:
    """One point's hover data: trial, baseline, every design parameter, the metrics, reasons."""
    design = _design(t)
    values = [t.number, t.user_attrs.get(BASELINE_KEY, ""),
              *[_round(design.get(p, "")) for p in data.params],
              *[_round(t.user_attrs.get(m, "")) for m in _hover_metrics(data)],
              "; ".join(map(str, t.user_attrs.get("infeasible_reasons") or []))]
    # The hover shows these through Plotly's markup: names and reasons are the user's.
    return [plot_value(v) for v in values]


def _template(data: ReportData) -> str:
    """The hover template reading :func:`_custom` (the same for every trace)."""
    lines = ["<b>trial %{customdata[0]}</b> %{customdata[1]}"]
    k = 2
    for p in [*data.params, *_hover_metrics(data)]:
        lines.append(f"{plot_text(p)} = %{{customdata[{k}]}}")
        k += 1
    lines.append(f"%{{customdata[{k}]}}")
    return "<br>".join(lines) + "<extra></extra>"


def _value(t: FrozenTrial, metric: str, data: ReportData) -> float:
    names = [o.metric for o in data.objectives.objectives]
    if metric in names and t.values is not None:
        return float(t.values[names.index(metric)])
    v = t.user_attrs.get(metric)
    return float(v) if isinstance(v, int | float) else math.nan


def pair_figure(data: ReportData, x: str, y: str) -> Figure:
    """Front of objectives ``x`` against ``y``: dominated faded, infeasible apart, front joined
    when ``x`` and ``y`` are the study's only objectives (a front of more is no line in their
    plane: joined, it zig-zags), baselines labelled (a plain figure, :mod:`dse.outputs.figures`)."""
    joined = sorted((x, y)) == sorted(o.metric for o in data.objectives.objectives)
    on_front = {t.number for t in data.front}
    dominated = [t for t in data.feasible if t.number not in on_front]

    template = _template(data)

    def trace(trials: list[FrozenTrial], name: str, **kw: Any) -> dict[str, Any]:
        props = {"customdata": [_custom(t, data) for t in trials], "hovertemplate": template,
                 "name": name, "x": [_round(_value(t, x, data)) for t in trials],
                 "y": [_round(_value(t, y, data)) for t in trials], **kw}
        # In Plotly's own order (its properties sorted, the type last), so the page is the same.
        return {**dict(sorted(props.items())), "type": "scatter"}

    ordered = sorted(data.front, key=lambda t: _value(t, x, data))
    base = [t for t in data.trials if t.user_attrs.get(BASELINE_KEY)]
    traces = [
        trace(dominated, f"feasible, dominated ({len(dominated)})",
              marker={"color": FADED, "size": 6}, mode="markers"),
        trace(data.infeasible, f"infeasible ({len(data.infeasible)})",
              marker={"color": "rgba(214,39,40,0.45)", "size": 7, "symbol": "x"}, mode="markers"),
        trace(ordered, f"Pareto front ({len(ordered)})" if joined else
              f"Pareto front of {len(data.objectives.objectives)} objectives ({len(ordered)})",
              line={"color": "#1f77b4"}, marker={"color": "#1f77b4", "size": 9},
              mode="lines+markers" if joined else "markers"),
        {**trace(base, "baselines", marker={"color": "#2ca02c", "size": 12, "symbol": "diamond"},
                 mode="markers+text", textposition="top center"),
         "text": [plot_text(t.user_attrs[BASELINE_KEY]) for t in base]},
    ]
    layout = {"legend": {"orientation": "h", "y": -0.2},
              "xaxis": {"title": {"text": _label(x)}, "type": _axis_type(data, x)},
              "yaxis": {"title": {"text": _label(y)}, "type": _axis_type(data, y)},
              "title": {"text": f"{_label(y)} against {_label(x)}"}, "separators": ".,",
              "height": 520}
    return {"data": traces, "layout": layout}


def _axis_type(data: ReportData, metric: str) -> str:
    """Log scale when the feasible values are positive and span more than two decades."""
    values = [_value(t, metric, data) for t in data.feasible]
    values = [v for v in values if math.isfinite(v)]
    if values and min(values) > 0 and max(values) / min(values) > 100:
        return "log"
    return "linear"


def _label(metric: str) -> str:
    """Axis title of a metric or parameter: its human name with unit (:mod:`dse.outputs.labels`),
    as Plotly text (an unknown name is the user's)."""
    return plot_text(title(metric))


def front_3d(data: ReportData) -> Figure:
    """The three objectives in 3-D (fronts of three objectives are surfaces; a plain figure,
    :mod:`dse.outputs.figures`)."""
    x, y, z = (o.metric for o in data.objectives.objectives[:3])
    on_front = {t.number for t in data.front}
    template = _template(data)
    traces = []
    for trials, name, colour in ((
            [t for t in data.feasible if t.number not in on_front], "dominated", FADED),
            (data.front, "Pareto front", "#1f77b4")):
        traces.append({
            "customdata": [_custom(t, data) for t in trials], "hovertemplate": template,
            "marker": {"color": colour, "size": 3 if name == "dominated" else 5},
            "mode": "markers", "name": name,
            "x": [_round(_value(t, x, data)) for t in trials],
            "y": [_round(_value(t, y, data)) for t in trials],
            "z": [_round(_value(t, z, data)) for t in trials], "type": "scatter3d"})
    # Short axis titles and a camera pulled back keep every title inside the view.
    layout = {"margin": {"l": 0, "r": 0, "b": 0, "t": 40},
              "scene": {"camera": {"eye": {"x": 1.9, "y": 1.9, "z": 1.3}},
                        "xaxis": {"title": {"text": _label(x)}},
                        "yaxis": {"title": {"text": _label(y)}},
                        "zaxis": {"title": {"text": _label(z)}}},
              "title": {"text": "three objectives"}, "height": 650, "separators": ".,"}
    return {"data": traces, "layout": layout}


def distinct_front(data: ReportData, metric: str) -> list[list[FrozenTrial]]:
    """The front's trials grouped by design (a design found twice is one bar), ordered by
    ``metric``."""
    groups: dict[str, list[FrozenTrial]] = {}
    for t in sorted(data.front, key=lambda t: (_value(t, metric, data), t.number)):
        groups.setdefault(json.dumps(_design(t), sort_keys=True, default=str), []).append(t)
    return list(groups.values())


def design_label(trials: list[FrozenTrial], params: list[str]) -> str:
    """A bar's label: its trial numbers and baseline name, then the design in words over
    ``params`` (those that vary on the front) on one line, so the labels of many designs stack
    without overlapping (the bars are horizontal)."""
    design = _design(trials[0])
    base = trials[0].user_attrs.get(BASELINE_KEY)
    numbers = ", ".join(f"#{t.number}" for t in trials) + (f" {base}" if base else "")
    phrase = design_phrase({p: design[p] for p in params if p in design},
                           rack_scale_racks(trials[0].user_attrs))
    return "<br>".join(plot_text(line) for line in (numbers, phrase) if line)




def stage_name(stage: str) -> str:
    """``stage`` in words (:data:`dse.model.stages.STAGE_WORDS`; an unnamed stage with spaces for
    underscores)."""
    return STAGE_WORDS.get(stage, stage.replace("_", " "))


def breakdown_figure(data: ReportData) -> Figure:
    """Step time of every distinct front design by stage (stacked horizontal bars, best first at
    the top by the first objective), labelled by design, with the bounding stage named; buttons
    switch between each stage's share of the step and milliseconds (a plain figure,
    :mod:`dse.outputs.figures`)."""
    first = data.objectives.objectives[0].metric
    designs = distinct_front(data, first)
    ordered = [group[0] for group in designs]
    params = varying_params(data)
    labels = [design_label(group, params) for group in designs]
    ms = {stage: [1e3 * float((t.user_attrs.get("breakdown_s") or {}).get(stage) or 0.0)
                  for t in ordered] for stage in STAGES}
    totals = [sum(ms[stage][k] for stage in STAGES) or 1.0 for k in range(len(ordered))]
    share = {stage: [100.0 * v / tot for v, tot in zip(ms[stage], totals, strict=True)]
             for stage in STAGES}
    bounds = [plot_text(stage_name(t.user_attrs.get("bottleneck", ""))) for t in ordered]
    traces = [{
        "customdata": [[m, b] for m, b in zip(ms[stage], bounds, strict=True)],
        "hovertemplate": (f"{stage_name(stage)}: %{{customdata[0]:.3f}} ms (%{{x:.1f}}%)<br>"
                          "bounded by %{customdata[1]}<extra></extra>"),
        "marker": {"color": STAGE_COLOURS[stage]}, "name": stage_name(stage),
        "orientation": "h", "x": share[stage], "y": labels, "type": "bar"} for stage in STAGES]
    layout = {
        "barmode": "stack", "height": 180 + 44 * len(labels),
        "xaxis": {"title": {"text": "share of the step (%)"}},
        "yaxis": {"automargin": True, "autorange": "reversed"},
        "margin": {"t": 110},
        "title": {"text": f"step time of the front designs by stage, best {_label(first)} first "
                          "(hover: the bound)"},
        "updatemenus": [{"buttons": [
            {"args": [{"x": [share[s] for s in STAGES]}, {"xaxis.title.text": "share of the step (%)"}],
             "label": "share of step", "method": "update"},
            {"args": [{"x": [ms[s] for s in STAGES]}, {"xaxis.title.text": "ms per step"}],
             "label": "milliseconds", "method": "update"},
        ], "direction": "right", "type": "buttons", "x": 1.0, "xanchor": "right", "y": 1.0,
            "yanchor": "bottom"}]}
    return {"data": traces, "layout": layout}


def chosen_designs(data: ReportData) -> list[tuple[str, dict[str, Any]]]:
    """The distinct front designs offered in the report's plan-and-timeline section, best first by
    the first objective, each with its bar label in plain text."""
    first = data.objectives.objectives[0]
    designs = distinct_front(data, first.metric)
    if first.direction.lower() == "maximize":
        designs.reverse()
    params = varying_params(data)
    return [(html.unescape(design_label(group, params).replace("<br>", "; ")), _design(group[0]))
            for group in designs[:MAX_DESIGNS]]


def varying_params(data: ReportData) -> list[str]:
    """The design parameters that take more than one value on the front (the others say nothing
    about the trade-off, and are stated once instead)."""
    return [p for p in data.params if len({repr(_design(t).get(p)) for t in data.front}) > 1]


def parcoords_figure(data: ReportData) -> Figure:
    """Parallel coordinates of the front over the design parameters that vary on it, coloured by
    objective 1 (a plain figure, :mod:`dse.outputs.figures`)."""
    first = data.objectives.objectives[0].metric
    dims: list[dict[str, Any]] = []
    varying = varying_params(data)
    for p in varying or data.params[:1]:
        values = [_design(t).get(p) for t in data.front]
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values if v is not None):
            dims.append({"label": plot_text(short_label(p)),
                         "values": [math.nan if v is None else float(v) for v in values]})
        else:
            cats = sorted({str(v) for v in values})
            dims.append({"label": plot_text(short_label(p)), "ticktext": [plot_text(c) for c in cats],
                         "tickvals": list(range(len(cats))),
                         "values": [cats.index(str(v)) for v in values]})
    colour = [_value(t, first, data) for t in data.front]
    constant = [p for p in data.params if p not in varying]
    fixed = design_phrase({p: _design(data.front[0]).get(p) for p in constant}) if constant else ""
    trace = {"dimensions": dims, "labelangle": 0,
             "line": {"color": colour, "colorbar": {"title": {"text": _label(first)}},
                      "colorscale": colorscale("Viridis"), "showscale": True},
             "tickfont": {"size": 10}, "type": "parcoords"}
    layout = {"margin": {"l": 90, "r": 90, "t": 120},
              "title": {"text": f"the front over the design parameters (colour: {_label(first)})"
                        + (f"<br><sup>every front design: {plot_text(fixed)}</sup>" if fixed else "")},
              "height": 520, "separators": ".,"}
    return {"data": [trace], "layout": layout}


PROGRESS_DOMAINS = ((0.0, 0.45), (0.55, 1.0))
"""The x domains of the progress figure's two panels: ``plotly.subplots.make_subplots(rows=1,
cols=2)``'s (a gap of 0.2 / 2 between them)."""


def progress_figure(study: Study, data: ReportData, cache: Path | None = None) -> Figure:
    """Hypervolume against trial number, and the importances as grouped bars (two panels side by
    side, laid out as ``make_subplots(rows=1, cols=2, subplot_titles=...)`` lays them out; a plain
    figure, :mod:`dse.outputs.figures`); ``cache``: :func:`report_cache` (the importances)."""
    conv = convergence(study, data.feasible, len(data.trials))
    title = ("hypervolume of the feasible front (objectives scaled to the study's range)"
             if is_own_range(conv.reference) else
             f"hypervolume of the feasible front (1.0 = the front of a {plot_text(conv.reference)})")
    xs, ys = hypervolume_curve(study, data.feasible, data.trials)
    traces: list[dict[str, Any]] = [{"mode": "lines", "name": "hypervolume", "x": xs, "y": ys,
                                     "type": "scatter", "xaxis": "x", "yaxis": "y"}]
    for metric, imp in cached_importances(study, data, cache).items():
        traces.append({"name": plot_text(short_label(metric)), "x": [plot_text(short_label(p)) for p in imp],
                       "y": list(imp.values()), "type": "bar", "xaxis": "x2", "yaxis": "y2"})
    left, right = PROGRESS_DOMAINS
    titles = [{"font": {"size": 16}, "showarrow": False, "text": text, "x": (lo + hi) / 2,
               "xanchor": "center", "xref": "paper", "y": 1.0, "yanchor": "bottom", "yref": "paper"}
              for text, (lo, hi) in ((title, left),
                                     ("parameter importance per objective (PED-ANOVA)", right))]
    layout = {"xaxis": {"anchor": "y", "domain": list(left), "title": {"text": "trials"}},
              "yaxis": {"anchor": "x", "domain": [0.0, 1.0]},
              "xaxis2": {"anchor": "y2", "domain": list(right)},
              "yaxis2": {"anchor": "x2", "domain": [0.0, 1.0]},
              "annotations": titles, "height": 480, "barmode": "group"}
    return {"data": traces, "layout": layout}


def front_table(data: ReportData) -> str:
    """The front as an HTML table, sortable by clicking a header (inline script, no network), in a
    box that scrolls sideways inside the page; headers with units, numbers with thousands
    separators (the raw value stays in ``data-v`` for sorting)."""
    first = data.objectives.objectives[0].metric
    groups = {t.number: g for g in group_by_design(data.front) for t in g[:1]}
    ordered = sorted((g[0] for g in groups.values()), key=lambda t: _value(t, first, data))
    metrics = [o.metric for o in data.objectives.objectives] + [
        m for m in ("throughput_samples_per_s", "capex_usd", "power_w", "step_time_s",
                    "usd_per_million_samples", "bottleneck") if m not in
        [o.metric for o in data.objectives.objectives]]
    what_if = any(t.user_attrs.get("what_if") for t in ordered)
    names = [*data.params, *metrics]
    head = ["trials", "baseline", *(short_label(n) for n in names), *(["what-if part"] if what_if else [])]
    rows = []
    for t in ordered:
        d = _design(t)
        raw = [t.number, t.user_attrs.get(BASELINE_KEY, ""), *[d.get(p, "") for p in data.params],
               *[t.user_attrs.get(m, "") for m in metrics]]
        shown = [trial_numbers(groups[t.number]), str(raw[1]), *(show(n, v) if v != "" else "" for n, v in
                                                zip(names, raw[2:], strict=True))]
        if what_if:
            raw.append(t.user_attrs.get("what_if", ""))
            shown.append(str(raw[-1]))
        rows.append("<tr>" + "".join(f"<td data-v='{text(str(c))}'>{text(v)}</td>"
                                     for c, v in zip(raw, shown, strict=True)) + "</tr>")
    titles = ["trials", "baseline", *names, *(["what_if"] if what_if else [])]
    cells = "".join(f"<th onclick='sortTable(this)' title='{text(n)}'>{text(h)}</th>"
                    for n, h in zip(titles, head, strict=True))
    return (f"<div class='scroll'><table id='front'><thead><tr>{cells}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>")


SORT_SCRIPT = """<script>
function sortTable(th) {
  const table = th.closest('table'), body = table.tBodies[0];
  const i = Array.from(th.parentNode.children).indexOf(th);
  const asc = th.dataset.dir !== 'asc'; th.dataset.dir = asc ? 'asc' : 'desc';
  const key = r => { const v = r.children[i].dataset.v; const n = parseFloat(v);
                     return isNaN(n) ? v : n; };
  Array.from(body.rows).sort((a, b) => { const x = key(a), y = key(b);
    return (x > y ? 1 : x < y ? -1 : 0) * (asc ? 1 : -1); }).forEach(r => body.appendChild(r));
}
</script>"""
STYLE = """<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: right; }
th { background: #eee; cursor: pointer; position: sticky; top: 0; }
.scroll { max-width: 100%; overflow-x: auto; }
select { max-width: 100%; }
caption { text-align: left; font-weight: bold; padding: 4px 0; }
.header td { text-align: left; border: none; padding: 1px 8px; }
</style>"""


def calibration_source(spec: StudySpec) -> str:
    """Where a study's calibration came from, when not the packaged one: `` (your file PATH,
    fitted to your own measurements: NAMES)``; empty for the packaged calibration."""
    from dse.search.study.study_file import study_calibration, study_calibration_file

    path = study_calibration_file(spec)
    if path is None:
        return ""
    try:
        own = study_calibration(spec).own_fitted
    except DseInputError:
        own = ()
    return f" (your file {path}" + (f", fitted to your own measurements: {', '.join(own)}"
                                    if own else "") + ")"


def catalog_rows(attrs: dict[str, Any], spec: StudySpec) -> list[tuple[str, str]]:
    """The header row listing a study's user catalog and every change it made to the packaged
    catalog (none for a study priced with the packaged catalog alone)."""
    if CATALOG_KEY not in attrs:
        return []
    changes = [CatalogChange(**c) for c in json.loads(attrs[CATALOG_KEY])]
    listed = "; ".join(text(c.describe()) for c in changes) or "no changes"
    return [("catalog", f"packaged catalog with the user catalog {text(spec.catalog)}: {listed}")]


def parts_line(study: Study, data: ReportData) -> str:
    """Which parts the space allows (its ``constraints.year`` and ``constraints.hypothetical``)
    and how many designs on the front are what-ifs (parts nobody sells)."""
    fixed = json.loads(study.user_attrs.get(SPACE_KEY, "{}")).get("fixed", {})
    year = fixed.get("constraints.year")
    line = f"parts on sale by {text(year)}" if year is not None else "any catalogued part"
    line += "; buildability rules (link budgets, PCIe, DDR slots, HBM offers) as constraints"
    if fixed.get("constraints.hypothetical"):
        what_if = sum(1 for t in data.front if t.user_attrs.get("what_if"))
        line += (f"; <b>hypothetical parts allowed</b>: {what_if} of the {len(data.front)} designs on "
                 "the front use a what-if part (an HBM size or speed the accelerator is not sold "
                 "with), marked in the table")
    return line


def convergence_line(study: Study, data: ReportData) -> str:
    """The hypervolume against the study's fixed reference and whether the front still moves."""
    conv = convergence(study, data.feasible, len(data.trials))
    why = own_range_reason(conv.reference)
    against = (f"in the front's own range ({why or 'no fixed reference'}: not a convergence figure)"
               if is_own_range(conv.reference) else f"1.0 = the front of a {conv.reference}")
    trend = (f"<b>still moving</b>: +{conv.gained:.3f} over the last {conv.window} trials"
             if conv.moving else f"+{conv.gained:.3f} over the last {conv.window} trials")
    return f"hypervolume {conv.hypervolume:.3f} ({text(against)}); {trend}"


def _batch_note(spec: StudySpec) -> str:
    """:func:`~dse.search.study.study_file.batch_without_curve`, or nothing when the study's files
    no longer load (the rest of the page comes from what the study recorded)."""
    try:
        return batch_without_curve(spec)
    except DseInputError:
        return ""


def header(study: Study, data: ReportData, storage: str) -> str:
    """Study, workload, space, objectives, trial counts, versions and the reproducing command."""
    attrs = study.user_attrs
    wl = json.loads(attrs.get(WORKLOAD_KEY, "{}"))
    spec = data.spec
    # A user's own study file is rerun by its path; a built-in one by its name.
    own = spec.file and not STUDY.is_builtin(Path(spec.file))
    command = f"dse run {spec.file if own else spec.name}" + (f" --storage {storage}" if storage else "")
    # Every row is HTML: the plain ones escaped here, the others (markup of their own) where made.
    searched = searched_batch(data.params)
    batch = (f"batch searched ({searched})" if searched
             else f"batch {int(wl.get('global_batch') or 0):,}")
    plain = [
        ("study", f"{spec.name}: {spec.description}"),
        ("workload", f"{wl.get('name')}: {wl.get('tables')} tables, "
                     f"{float(wl.get('embedding_params', 0)) / 1e9:.1f} B embedding parameters, "
                     f"{float(wl.get('forward_mflop_per_sample', 0)):.1f} MFLOP/sample, {batch}, "
                     f"{wl.get('precision')}"),
        ("space", f"{spec.space}: " + ", ".join(data.params)),
        *((("time to train", note),) if (note := _batch_note(spec)) else ()),
    ]
    rows = [
        *((k, text(v)) for k, v in plain),
        ("parts", parts_line(study, data)),
        ("objectives", text(", ".join(f"{o.direction} {o.metric}" for o in data.objectives.objectives)
                            + "".join(f"; {c.metric} <= {c.max}"
                                      for c in data.objectives.constraints if c.max))),
        ("trials", text(f"{len(data.trials)} complete, {len(data.feasible)} feasible, "
                        f"{len(data.infeasible)} infeasible, front of "
                        f"{len(group_by_design(data.front))} distinct designs; sampler "
                        f"{spec.sampler}, seed {spec.seed}")),
        ("convergence", convergence_line(study, data)),
        ("versions", text(f"dse {attrs.get(VERSION_KEY)} (report by dse {__version__}), "
                          f"calibration {attrs.get(CALIBRATION_VERSION_KEY)}"
                          f"{calibration_source(spec)}, model {attrs.get(MODEL_KEY)}")),
        *catalog_rows(attrs, spec),
        ("reproduce", f"<code>{text(command)}</code>"),
    ]
    body = "".join(f"<tr><td><b>{k}</b></td><td>{v}</td></tr>" for k, v in rows)
    return f"<h1>dse study report: {text(spec.name)}</h1><table class='header'>{body}</table>"


REPORT_CACHE_SUFFIX = ".report"
"""The cache of a journal's report sections: ``NAME.journal.report`` beside it (:func:`report_cache`)."""
REPORT_CACHE_FORMAT = 1
"""Version of that cache's layout; raise it when it, or what a section holds, changes."""


def report_cache(journal: Path) -> Path:
    """Where the sections of a journal's report that cost most to make and depend only on what
    their key names are kept (:func:`cached_importances`, :func:`cached_chosen`):
    ``NAME.journal.report``. Only a cache: deleting it costs the next report its time, nothing
    else."""
    return journal.with_name(journal.name + REPORT_CACHE_SUFFIX)


def _cached(path: Path | None, section: str, key: str, make: Callable[[], Any]) -> Any:
    """``section`` of the cache ``path`` when it was made under ``key`` (JSON: floats read back
    bit for bit, dicts in their order); else ``make()``, stored there under ``key`` in one
    rename (a folder that cannot be written leaves the file as it was)."""
    stored: dict[str, Any] = {}
    if path is not None:
        try:
            stored = json.loads(read_text(path, MAX_DATA_FILE_BYTES))
            entry = stored[section]
            if stored.get("format") == REPORT_CACHE_FORMAT and entry["key"] == key:
                return entry["value"]
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            pass
    value = make()
    if path is None:
        return value
    if not isinstance(stored, dict) or stored.get("format") != REPORT_CACHE_FORMAT:
        stored = {"format": REPORT_CACHE_FORMAT}
    stored[section] = {"key": key, "value": value}
    with contextlib.suppress(DseInputError):  # a cache not kept costs the next report its time
        write_file(path, json.dumps(stored), durable=False)
    return value


def _sources_digest(*modules: str) -> hashlib._Hash:
    """A SHA-256 started over the cache's format, Plotly's version and the sources of ``modules``
    (the code that makes a cached section)."""
    import importlib

    import plotly

    digest = hashlib.sha256(f"{REPORT_CACHE_FORMAT} {plotly.__version__}".encode())
    for name in modules:
        digest.update(Path(str(importlib.import_module(name).__file__)).read_bytes())
    return digest


def cached_importances(study: Study, data: ReportData, cache: Path | None) -> dict[str, dict[str, float]]:
    """:func:`~dse.search.algorithms.analysis.importances` of the study's completed trials (deterministic),
    kept in ``cache`` under :func:`~dse.search.algorithms.analysis.importances_key`."""
    key = f"{REPORT_CACHE_FORMAT} {importances_key(data.trials, data.objectives)}"
    found: dict[str, dict[str, float]] = _cached(
        cache, "importances", key, lambda: importances(study, data.trials, data.objectives))
    return found


def cached_chosen(spec: StudySpec, designs: list[tuple[str, dict[str, Any]]], cache: Path | None) -> str:
    """The plan-and-timeline section (:mod:`dse.outputs.front_design_detail`) of ``designs``, kept
    in ``cache`` under a key of the model's fingerprint, the output code and Plotly's version, the
    study's workload, space, catalog and calibration, and the designs with their labels."""
    from dse.search.fingerprint import model_fingerprint
    from dse.search.study.study_file import study_calibration, study_catalog, study_space, study_workload

    digest = _sources_digest("dse.outputs.front_design_detail", "dse.outputs.plan",
                             "dse.outputs.timeline", "dse.outputs.figures", "dse.outputs.labels",
                             "dse.outputs.markup",
                             "dse.search.study.encoding")
    digest.update(model_fingerprint().encode())
    for item in (study_workload(spec), study_space(spec), study_catalog(spec).catalog,
                 study_calibration(spec)):
        digest.update(b"\0" + repr(item).encode())
    digest.update(json.dumps(designs, sort_keys=True, default=str).encode())
    page: str = _cached(cache, "chosen", digest.hexdigest(),
                        lambda: chosen_section(score_designs(spec, designs)))
    return page


def robust_html(study: Study, spec: StudySpec, objectives: ObjectiveSet,
                retimings: Path | None = None) -> str:
    """The section "the front under the model's error" (:mod:`dse.outputs.robust_page`), or the
    line saying why there is none (no ensemble, or one of another calibration); ``retimings``:
    the cache of the designs' retimings (:func:`dse.search.robust_front.retiming_cache`)."""
    from dse.outputs.robust_page import robust_section
    from dse.search.robust_front import robust_front

    try:
        return robust_section(robust_front(study, spec, objectives, cache=retimings))
    except DseInputError as exc:
        return robust_section(None, str(exc))


def render_report(study: Study, spec: StudySpec, objectives: ObjectiveSet,
                  storage: str = "", plotlyjs: Literal["inline", "cdn"] = "inline",
                  robust: bool = True, retimings: Path | None = None,
                  cache: Path | None = None) -> str:
    """The whole page as one HTML string: plotly.js embedded once, no network needed (``inline``),
    or loaded from the Plotly CDN (``cdn``: a page 4.6 MB smaller, for pages kept in git).
    ``robust=False`` leaves out the front under the model's error (benchmarks time both);
    ``retimings`` keeps that section's retimings between pages of one study
    (:func:`dse.search.robust_front.retiming_cache` of its journal) and ``cache`` the sections that
    cost most (:func:`report_cache` of its journal)."""
    data = gather(study, spec, objectives)
    figures: list[tuple[str, Figure]] = []
    names = [o.metric for o in objectives.objectives]
    for x, y in itertools.combinations(names, 2):
        figures.append((f"front-{x}-{y}", pair_figure(data, x, y)))
    if len(names) == 3:
        figures.append(("front-3d", front_3d(data)))
    if data.front:
        figures.append(("breakdown", breakdown_figure(data)))
        figures.append(("parcoords", parcoords_figure(data)))
    figures.append(("progress", progress_figure(study, data, cache)))
    inline = plotlyjs == "inline"
    head = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>dse report {text(spec.name)}</title>", STYLE,
        # Inline, plotly.js comes gzipped at the end of the page (a 300-trial report of 5 MB
        # becomes 2.3 MB, and opens no slower: inflating takes milliseconds).
        "" if inline else (f"<script src='https://cdn.plot.ly/plotly-{get_plotlyjs_version()}.min.js' "
                           "charset='utf-8'></script>"),
        SORT_SCRIPT, "</head><body>",
    ]
    parts = [header(study, data, storage)]
    for div_id, fig in figures:
        parts.append(figure_html(fig, div_id))
    if data.front:
        parts.append(cached_chosen(spec, chosen_designs(data), cache))
        if robust:
            parts.append(robust_html(study, spec, objectives, retimings))
    parts += ["<h2>the front</h2>", front_table(data)]
    body = "\n".join(parts)
    tail = [packed_plotlyjs(), PACKED_LOADER] if inline else []
    return "\n".join([*head, deferred(body) if inline else body, *tail, "</body></html>"])
