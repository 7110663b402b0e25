"""The report's section "The front under the model's error" (:mod:`dse.search.robust_front`).

A front plot of the first two objectives with each front design's 80% interval as error bars and
its marker shaded by its probability of staying on the front across the calibration ensemble; the
robust front (probability >= 80%) outlined; a table of the probabilities; and, in words, which
neighbouring front designs the model cannot tell apart (their throughput intervals overlap).
Without a usable ensemble the section says why in one line, and shows no intervals.
"""

from __future__ import annotations

import math

from dse.outputs.figures import Figure, colorscale, figure_html
from dse.outputs.labels import design_phrase, show, title
from dse.outputs.markup import plot_text, text
from dse.search.robust_front import RobustFront

SECTION_ID = "robust"


def _errors(front: RobustFront, k: int) -> tuple[list[float], list[float]]:
    """Plus and minus error-bar lengths of objective ``k`` for every front design (0 for an
    objective the calibration does not move)."""
    plus, minus = [], []
    for d in front.designs:
        span, v = d.intervals[k], d.values[k]
        plus.append(span[1] - v if span else 0.0)
        minus.append(v - span[0] if span else 0.0)
    return plus, minus


def robust_figure(front: RobustFront) -> Figure:
    """First objective against the second (or against the trial order with one objective), error
    bars at the interval level, colour = probability of staying on the front (a plain figure,
    :mod:`dse.outputs.figures`)."""
    xm = front.objectives[0][0]
    ym = front.objectives[1][0] if len(front.objectives) > 1 else None
    xs = [d.values[0] for d in front.designs]
    ys = [d.values[1] for d in front.designs] if ym else list(range(len(front.designs)))
    xp, xn = _errors(front, 0)
    yp, yn = _errors(front, 1) if ym else ([0.0] * len(xs), [0.0] * len(xs))
    robust = [d.probability >= front.threshold for d in front.designs]
    text = [f"trial {d.trial}: P(front) {d.probability:.0%}<br>{plot_text(design_phrase(d.design))}"
            for d in front.designs]
    bars = "rgba(60,60,60,0.5)"
    trace = {
        "error_x": {"array": xp, "arrayminus": xn, "color": bars, "type": "data"},
        "error_y": {"array": yp, "arrayminus": yn, "color": bars, "type": "data"},
        "hovertemplate": "%{text}<extra></extra>",
        "marker": {"cmax": 1.0, "cmin": 0.0, "color": [d.probability for d in front.designs],
                   "colorbar": {"title": {"text": "P(on front)"}}, "colorscale": colorscale("Blues"),
                   "line": {"color": ["#d62728" if r else "#444" for r in robust],
                            "width": [2.5 if r else 0.5 for r in robust]},
                   "showscale": True, "size": 11},
        "mode": "markers", "name": "front designs", "text": text, "x": xs, "y": ys,
        "type": "scatter"}
    layout = {
        "title": {"text": (f"the front under the model's error ({front.level:.0%} intervals)<br><sup>"
                           f"shade: probability of staying on the front over {front.members} "
                           f"calibrations; red outline: robust (>= {front.threshold:.0%})</sup>")},
        "xaxis": {"title": {"text": plot_text(title(xm))}},
        "yaxis": {"title": {"text": plot_text(title(ym)) if ym else "front design"}},
        "height": 520, "separators": ".,"}
    return {"data": [trace], "layout": layout}


def _table(front: RobustFront) -> str:
    heads = ["trial", *(f"{title(m)} ({front.level:.0%} interval)" for m, _ in front.objectives),
             "P(on front)", "robust", "design"]
    rows = []
    for d in front.designs:
        cells = [str(d.trial)]
        for (m, _), v, span in zip(front.objectives, d.values, d.intervals, strict=True):
            cells.append(f"{show(m, v)}" + (f" ({show(m, span[0])} - {show(m, span[1])})" if span
                                            else " (fixed)"))
        outside = d.throughput.outside if d.throughput else ()
        cells += [f"{d.probability:.0%}", "yes" if d.probability >= front.threshold else "no",
                  design_phrase(d.design) + "".join(f"; outside the measured regime: {r}" for r in outside)]
        rows.append("<tr>" + "".join(f"<td>{text(c)}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{text(h)}</th>" for h in heads)
    return (f"<div class='scroll'><table id='robust-front'><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def _comparisons(front: RobustFront) -> str:
    close = [c for c in front.comparisons if c.within_error]
    apart = [c for c in front.comparisons if not c.within_error]
    if not front.comparisons:
        return ""
    items = [f"<li>trial {c.second} against trial {c.first}: throughput x{c.throughput_ratio:.3f}; "
             f"within the model's error (the order holds under {c.order_kept:.0%} of the "
             "calibrations)</li>" for c in close if math.isfinite(c.throughput_ratio)]
    return (f"<p>Of the {len(front.comparisons)} comparisons between neighbouring front designs "
            f"(in {text(title(front.objectives[0][0]))} order), {len(close)} are within the "
            f"model's error (their {front.level:.0%} throughput intervals overlap) and {len(apart)} "
            "are not.</p>" + (f"<ul>{''.join(items)}</ul>" if items else ""))


def robust_section(front: RobustFront | None, unavailable: str = "") -> str:
    """The section as HTML (its figure included, plotly.js loaded by the page); with no front, a
    line saying why."""
    headline = f"<h2 id='{SECTION_ID}'>the front under the model's error</h2>"
    if front is None:
        return f"{headline}<p>No intervals: {text(unavailable)}</p>"
    robust = front.robust
    intro = (f"<p>Each front design retimed under the {front.members} calibrations of the ensemble "
             f"(bootstrap refits of calibration {text(front.calibration_version)}; "
             f"{front.candidates} front and near-front designs); its error bars are {front.level:.0%} "
             "prediction intervals (the ensemble's spread and the model's leave-one-out error, "
             "or its leave-one-class-out error for a design outside the measured regime, which "
             "its row says; docs/validation.md). <b>Robust front</b>: "
             f"{len(robust)} of {len(front.designs)} designs stay on the front with probability "
             f">= {front.threshold:.0%} (trials {', '.join(str(d.trial) for d in robust) or 'none'}).</p>")
    notes = "".join(f"<p>note: {text(n)}</p>" for n in front.notes)
    figure = figure_html(robust_figure(front), f"{SECTION_ID}-front")
    return headline + intro + notes + figure + _table(front) + _comparisons(front)
