"""The step as a timeline: the overlap tree of :func:`dse.model.timing.step_tree` laid out in time (a
Gantt chart), so which stages run beside which, and which of them make the critical path, is seen
rather than read (``dse evaluate --html F``; docs/design.md, section 5, "Overlaps")."""

from __future__ import annotations

from dataclasses import dataclass

from dse.model.evaluate import Evaluation
from dse.model.stages import Stage
from dse.model.timing import Leaf, Node, Seq, step_tree
from dse.model.whatif import bottom_mlp_leads
from dse.outputs.figures import STAGE_COLOURS, Figure, titled_page
from dse.outputs.markup import plot_text


@dataclass(frozen=True, slots=True)
class Bar:
    """One stage of the step in time."""

    label: str
    stage: str
    start_s: float
    end_s: float
    critical: bool
    """On the critical path (its seconds count in the step time)."""


def _lay_out(node: Node, start: float, out: list[tuple[Leaf, float]]) -> float:
    """Append every leaf of ``node`` with its start time; returns when ``node`` ends. A sequence
    runs its parts one after another, a parallel block all at once (it ends with its longest)."""
    if isinstance(node, Leaf):
        out.append((node, start))
        return start + node.seconds
    if isinstance(node, Seq):
        t = start
        for part in node.parts:
            t = _lay_out(part, t, out)
        return t
    return max(_lay_out(part, start, out) for part in node.parts)


def timeline(ev: Evaluation) -> tuple[Bar, ...]:
    """Every stage of ``ev``'s step with its start and end, and the input pipeline beside them
    (it prepares the next step, and binds only when it is the longer)."""
    stages = ev.timing.stages
    placed: list[tuple[Leaf, float]] = []
    end = _lay_out(step_tree(stages, bottom_mlp_leads(ev)), 0.0, placed)
    on_path = set(ev.timing.critical_path)
    bars = [Bar(leaf.label or leaf.stage, leaf.stage, start, start + leaf.seconds,
                (leaf.label or leaf.stage) in on_path)
            for leaf, start in placed if leaf.seconds > 0]
    bars.append(Bar("input pipeline (next step)", Stage.input_exposed, 0.0, stages.input, stages.input > end))
    return tuple(bars)


def timeline_plot(ev: Evaluation) -> Figure:
    """The timeline as a Gantt chart in milliseconds, critical-path bars outlined in black, as a
    plain figure (:mod:`dse.outputs.figures`: the report holds one per front design)."""
    bars = timeline(ev)
    traces = []
    for stage, colour in STAGE_COLOURS.items():
        mine = [b for b in bars if b.stage == stage]
        if not mine:
            continue
        traces.append({
            "base": [b.start_s * 1e3 for b in mine],
            "customdata": [[b.start_s * 1e3, b.end_s * 1e3, "critical path" if b.critical else "hidden"]
                           for b in mine],
            "hovertemplate": "%{y}: %{customdata[0]:.3f} to %{customdata[1]:.3f} ms "
                             "(%{customdata[2]})<extra></extra>",
            "marker": {"color": colour, "line": {
                "color": ["black" if b.critical else colour for b in mine],
                "width": [3 if b.critical else 0 for b in mine]}},
            "name": "input pipeline" if stage == Stage.input_exposed else stage.replace("_", " "),
            "orientation": "h", "x": [(b.end_s - b.start_s) * 1e3 for b in mine],
            "y": [b.label for b in mine], "type": "bar"})
    s = ev.system
    layout = {
        "yaxis": {"autorange": "reversed", "categoryorder": "array",
                  "categoryarray": [b.label for b in bars], "automargin": True},
        "title": {"text": plot_text(f"one step of {ev.workload.name} on {s.nodes} x "
                                    f"{s.accelerators_per_node} {s.accelerator.name}: "
                                    f"{ev.step_time_s * 1e3:.3f} ms (outlined: critical path)")},
        "xaxis": {"title": {"text": "time in the step (ms)"}}, "barmode": "overlay",
        "height": 140 + 28 * len(bars)}
    return {"data": traces, "layout": layout}


def timeline_page(ev: Evaluation) -> str:
    """The page of ``dse evaluate --html``: the timeline, titled by the design it shows."""
    s = ev.system
    return titled_page(timeline_plot(ev), f"dse timeline: {ev.workload.name} on {s.nodes} x "
                       f"{s.accelerators_per_node} {s.accelerator.name}")
