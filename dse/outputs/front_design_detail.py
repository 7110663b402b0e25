"""One front design of a study, chosen from a list: its placement plan and its step's timeline.

The report's section "One front design: its plan and its timeline". Only the designs offered are
scored again (the trials store the design, not its plan), by the same path a study trial takes:
design -> :func:`~dse.search.study.encoding.design_system` -> :func:`~dse.model.evaluate.evaluate`, with
the study's workload, catalog and the calibration in force. The plan is
:func:`~dse.outputs.plan.plan_summary` (as ``dse evaluate --plan``) and the timeline
:func:`~dse.outputs.timeline.timeline_plot` (as ``dse evaluate --html``); docs/design.md,
section 5, "Placement" and "Overlaps".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dse.errors import DseInputError
from dse.model.evaluate import evaluate
from dse.model.parameters import Calibration, load_calibration
from dse.model.system import GB
from dse.outputs.figures import AFTER_FIRST_SCREEN, INFLATE_SCRIPT, Figure, figure_html, pack
from dse.outputs.markup import text
from dse.outputs.plan import PlanSummary, plan_summary
from dse.outputs.timeline import timeline_plot
from dse.search.study.encoding import design_system, design_workload
from dse.search.study.study_file import StudySpec, study_catalog, study_space, study_workload

MAX_DESIGNS = 30
"""Designs offered in the list: each is scored again and carries its plan and timeline in the page,
so the page grows with every one (a front rarely has more distinct designs worth a look)."""


@dataclass(frozen=True)
class Chosen:
    """One design offered: its label in words, its plan and its timeline (a plain figure without
    Plotly's template, :mod:`dse.outputs.figures`)."""

    label: str
    plan: PlanSummary
    figure: Figure


def score_designs(spec: StudySpec, designs: Sequence[tuple[str, dict[str, Any]]],
                  calibration: Calibration | None = None) -> list[Chosen]:
    """Plan and timeline of each ``(label, design)``, scored as the study scored it; a design the
    schema cannot express (none reaches the front) is left out."""
    space, workload = study_space(spec), study_workload(spec)
    catalog = study_catalog(spec).catalog
    calib = calibration or load_calibration()
    out = []
    for label, design in designs[:MAX_DESIGNS]:
        try:
            system = design_system(space, design, catalog)
            trained = design_workload(space, design, workload)
        except DseInputError:
            continue
        ev = evaluate(trained, system, calib, catalog)
        out.append(Chosen(label, plan_summary(ev, calib), timeline_plot(ev)))
    return out


def device_ranges(devices: Sequence[int]) -> str:
    """Device numbers as ranges, e.g. ``0-7, 12``."""
    runs: list[list[int]] = []
    for d in sorted(devices):
        if runs and runs[-1][1] == d - 1:
            runs[-1][1] = d
        else:
            runs.append([d, d])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _cell(raw: Any, shown: str) -> str:
    return f"<td data-v='{text(json.dumps(raw))}'>{text(shown)}</td>"


def _table(head: Sequence[str], rows: list[str], caption: str) -> str:
    cells = "".join(f"<th>{text(h)}</th>" for h in head)
    return (f"<div class='scroll'><table class='plan'><caption>{text(caption)}</caption>"
            f"<thead><tr>{cells}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def plan_tables(plan: PlanSummary) -> str:
    """The plan as two HTML tables, as ``dse evaluate --plan`` prints it: a row per table, then a
    row per group of devices with identical rows. Each cell keeps its raw value (the JSON of
    ``dse evaluate --plan --json``) in ``data-v``."""
    rows = []
    for t in plan.tables:
        gb = max(t.bytes_by_device.values(), default=0.0) / GB
        where = f"all {len(t.devices)}" if t.copies > 1 else device_ranges(t.devices)
        rows.append("<tr class='table-row'>" + "".join([
            _cell(t.table, str(t.table)), _cell(t.sharding, t.sharding.replace("_", "-")),
            _cell(t.hot_rows, f"{t.hot_rows:,}" if t.hot_rows else ""),
            _cell(list(t.devices), where), _cell(list(t.tiers), ", ".join(t.tiers)),
            _cell(gb, f"{gb:,.3f}"), _cell(t.embedding_share, f"{t.embedding_share:.1%}")]) + "</tr>")
    by_table = _table(("table", "sharding", "hot rows", "devices", "tier", "GB per device",
                       "share of embedding time"), rows, "placement by table")
    groups: list[tuple[list[int], tuple[Any, ...]]] = []
    for d in plan.devices:
        key = (d.tables, d.hbm_used_gb, d.ddr_used_gb, d.embedding_s, d.alltoall_s)
        if groups and groups[-1][1] == key:
            groups[-1][0].append(d.device)
        else:
            groups.append(([d.device], key))
    rows = []
    for devices, (tables, hbm, ddr, emb, a2a) in groups:
        rows.append("<tr class='device-row'>" + "".join([
            _cell(devices, device_ranges(devices)), _cell(tables, str(tables)),
            _cell(hbm, f"{hbm:,.2f}"), _cell(ddr, f"{ddr:,.2f}"), _cell(emb, f"{emb * 1e3:,.3f}"),
            _cell(a2a, f"{a2a * 1e3:,.3f}")]) + "</tr>")
    by_device = _table(("devices", "tables", "HBM used (GB)", "node DDR used (GB)",
                        "embedding (ms)", "all-to-all (ms)"), rows,
                       "placement by device (embedding and all-to-all: forward + backward)")
    return by_table + by_device


CHOOSE_SCRIPT = INFLATE_SCRIPT + """<script>
async function chooseDesign(k) {
  const gd = document.getElementById('timeline');
  const plan = document.querySelector(`.chosen-plan[data-k='${k}']`);
  const packed = await dsePlans;
  if (!plan.firstChild) plan.innerHTML = packed.plans[k];
  document.querySelectorAll('.chosen-plan').forEach(
    e => { e.style.display = e.dataset.k === String(k) ? '' : 'none'; });
  const fig = JSON.parse(packed.timelines[k]);
  fig.layout.template = gd.layout.template;
  Plotly.react(gd, fig.data, fig.layout, {displaylogo: false});
}
</script>"""


def _figure_json(figure: dict[str, Any]) -> str:
    """A timeline for the page's script: without Plotly's template (the drawn figure lends its
    own), as JSON text (parsed afresh each time it is drawn)."""
    from plotly.utils import PlotlyJSONEncoder

    layout = {k: v for k, v in figure["layout"].items() if k != "template"}
    return json.dumps({"data": figure["data"], "layout": layout}, cls=PlotlyJSONEncoder)


def chosen_section(chosen: Sequence[Chosen]) -> str:
    """The section: a list of the designs, the chosen one's plan tables and its timeline (the
    first design's drawn at load, the others drawn into it when chosen)."""
    if not chosen:
        return ""
    options = "".join(f"<option value='{k}'>{text(c.label)}</option>"
                      for k, c in enumerate(chosen))
    hidden = " style='display:none'"
    # The plans (a row per embedding table each: most of a report's size for a workload of
    # hundreds of tables) and the timelines travel packed as one JSON object, alike designs
    # compressing together; the first plan is filled in once the first figure is drawn, the
    # others when chosen.
    plans = "".join(f"<div class='chosen-plan' data-k='{k}'{hidden if k else ''}></div>"
                    for k in range(len(chosen)))
    packed = pack(json.dumps({"plans": [plan_tables(c.plan) for c in chosen],
                              "timelines": [_figure_json(c.figure) for c in chosen]}))
    plans += (f"<script type='application/gzip' id='plans-gz'>{packed}</script><script>"
              f"const dsePlans = {AFTER_FIRST_SCREEN}.then(() => dseInflate("
              "document.getElementById('plans-gz').textContent)).then(JSON.parse);\n"
              "dsePlans.then(p => { document.querySelector("
              "\".chosen-plan[data-k='0']\").innerHTML = p.plans[0]; });</script>")
    first = figure_html(chosen[0].figure, "timeline")
    return ("<h2>One front design: its plan and its timeline</h2>"
            f"<p>design (best first by the first objective; at most {MAX_DESIGNS}): "
            f"<select id='design-choice' onchange='chooseDesign(this.value)'>{options}</select></p>"
            f"{CHOOSE_SCRIPT}{first}{plans}")
