"""What the read-only commands build without pandas or Plotly's graph objects is what those build:
the front's records (:func:`dse.search.results.trial_rows` against ``trials_frame``'s records,
value and type) and the report's plain figures (:mod:`dse.outputs.figures` against the same
figure validated as a ``go.Figure``, and its HTML against ``go.Figure.to_html``)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import optuna
import plotly.graph_objects as go
import pytest
from study_helpers import random_dcnv2_study

from dse.model.evaluate import evaluate
from dse.model.parameters import load_calibration
from dse.model.system import load_system
from dse.model.timing import STAGES
from dse.model.workload import load_workload
from dse.outputs.figures import CONFIG, figure_html, template, to_graph_object
from dse.outputs.report import (
    breakdown_figure,
    front_3d,
    gather,
    pair_figure,
    parcoords_figure,
    progress_figure,
)
from dse.outputs.robust_page import robust_figure
from dse.outputs.timeline import timeline_plot
from dse.search.results import _column_like_pandas, trial_rows, trials_frame
from dse.search.robust_front import front_cache, robust_front
from dse.search.study.objective_sets import load_objectives
from dse.search.study.study_file import StudySpec


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[optuna.Study, StudySpec]:
    return random_dcnv2_study(tmp_path_factory.mktemp("fast"), "fast", budget=40, seed=3)


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


@pytest.mark.parametrize(("only_front", "distinct"), [(True, True), (False, True), (False, False)])
def test_trial_rows_are_the_frames_records(study: tuple[optuna.Study, StudySpec], only_front: bool,
                                           distinct: bool) -> None:
    stored, _ = study
    frame = trials_frame(stored, only_front=only_front, distinct=distinct)
    records = frame.reset_index().to_dict(orient="records")
    rows = trial_rows(stored, only_front=only_front, distinct=distinct)
    assert len(rows) == len(records) > 0
    for mine, theirs in zip(rows, records, strict=True):
        assert list(mine) == list(theirs)
        bad = {k: (mine[k], v) for k, v in theirs.items() if not same(mine[k], v)}
        assert not bad, bad


@pytest.mark.parametrize("values", [
    [1, 2], [1, None], [1, 2.5], [None, None], [True, False], [True, None], ["x", None],
    [True, 1], [[1], None], ["x", 1], [1.5, None], [float("nan"), 1],
])
def test_columns_are_typed_as_pandas_types_them(values: list[Any]) -> None:
    """Each kind of column, with and without a row that lacks the key."""
    import pandas as pd

    for rows in ([{"a": v} for v in values], [*({"a": v} for v in values), {}]):
        theirs = [r["a"] for r in pd.DataFrame(rows).to_dict(orient="records")]
        mine = _column_like_pandas(rows, "a")
        assert all(same(m, t) for m, t in zip(mine, theirs, strict=True)), (rows, mine, theirs)


def newplot(html: str) -> tuple[str, list[Any], str]:
    """A figure's HTML: the text before and after ``Plotly.newPlot(...)``, and its arguments
    parsed (key order is Plotly's business; the JSON's content is the figure)."""
    start = html.index("Plotly.newPlot(") + len("Plotly.newPlot(")
    decoder, args, k = json.JSONDecoder(), [], start
    for _ in range(4):
        while html[k] in " ,\n":
            k += 1
        value, k = decoder.raw_decode(html, k)
        args.append(value)
    return html[:start], args, html[k:]


def without_template(fig: dict[str, Any]) -> dict[str, Any]:
    return {"data": fig["data"], "layout": {k: v for k, v in fig["layout"].items() if k != "template"}}


def test_front_figure_is_its_validated_self(study: tuple[optuna.Study, StudySpec]) -> None:
    stored, spec = study
    objectives = load_objectives(spec.objectives)
    data = gather(stored, spec, objectives)
    fig = pair_figure(data, "throughput_samples_per_s", "capex_usd")
    validated = go.Figure(fig)
    assert without_template(validated.to_plotly_json()) == fig
    assert validated.to_plotly_json()["layout"]["template"] == template()
    mine = newplot(figure_html(fig, "front"))
    theirs = newplot(validated.to_html(full_html=False, include_plotlyjs=False, div_id="front",
                                       config=CONFIG))
    assert mine == theirs  # the div, the script around it, and the figure's JSON parsed
    assert len(fig["data"][0]["x"]) + len(fig["data"][1]["x"]) + len(fig["data"][2]["x"]) == len(data.trials)


def test_breakdown_figure_is_its_validated_self(study: tuple[optuna.Study, StudySpec]) -> None:
    stored, spec = study
    fig = breakdown_figure(gather(stored, spec, load_objectives(spec.objectives)))
    assert without_template(go.Figure(fig).to_plotly_json()) == fig
    assert len(fig["data"]) == len(STAGES) and fig["data"][0]["x"]


def test_other_report_figures_are_their_validated_selves(
        study: tuple[optuna.Study, StudySpec]) -> None:
    """The 3-D front, the parallel coordinates (a named colour scale expanded as validation
    expands it), the progress panels (laid out as ``make_subplots`` lays them out) and the robust
    front (error bars, a second named scale)."""
    from plotly.subplots import make_subplots

    stored, spec = study
    objectives = load_objectives(spec.objectives)
    data = gather(stored, spec, objectives)
    figures = {"3d": front_3d(data), "parcoords": parcoords_figure(data),
               "progress": progress_figure(stored, data),
               "robust": robust_figure(robust_front(stored, spec, objectives))}
    for name, fig in figures.items():
        assert without_template(go.Figure(fig).to_plotly_json()) == fig, name
    assert len(figures["3d"]["data"][1]["x"]) == len(data.front) > 0
    assert figures["parcoords"]["data"][0]["line"]["colorscale"][-1] == [1.0, "#fde725"]
    assert len(figures["progress"]["data"]) == 1 + len(objectives.objectives)
    panels = make_subplots(rows=1, cols=2, subplot_titles=("a", "b")).to_plotly_json()["layout"]
    layout = figures["progress"]["layout"]
    for key in ("xaxis", "yaxis", "xaxis2", "yaxis2"):
        assert {k: v for k, v in layout[key].items() if k != "title"} == panels[key]
    assert [a["x"] for a in layout["annotations"]] == [a["x"] for a in panels["annotations"]]


def test_timeline_figure_is_its_validated_self(tmp_path: Path) -> None:
    ev = evaluate(load_workload("mlperf-dlrm-v1"), load_system("dgx-a100"), load_calibration())
    fig = timeline_plot(ev)
    assert without_template(to_graph_object(fig).to_plotly_json()) == fig
    assert sum(len(t["x"]) for t in fig["data"]) >= 4


def test_the_robust_front_is_cached_and_read_back_only_for_the_same_inputs(
        tmp_path: Path, study: tuple[optuna.Study, StudySpec]) -> None:
    """The front kept beside the retimings equals the one computed (every field, floats bit for
    bit), is what a second call returns (doctored, it shows), and is not read once the retimings
    or the trials differ."""
    stored, spec = study
    objectives = load_objectives(spec.objectives)
    cache = tmp_path / "fast.journal.retiming"
    plain = robust_front(stored, spec, objectives)
    first = robust_front(stored, spec, objectives, cache=cache)
    saved = json.loads(front_cache(cache).read_text(encoding="utf-8"))
    assert plain == first == robust_front(stored, spec, objectives, cache=cache)
    assert len(saved["front"]["designs"]) == len(plain.designs) > 0
    saved["front"]["designs"][0][4] = -1.0  # its probability
    front_cache(cache).write_text(json.dumps(saved), encoding="utf-8")
    assert robust_front(stored, spec, objectives, cache=cache).designs[0].probability == -1.0
    # Other retimings (one doctored): the cached front is not read.
    retimings = json.loads(cache.read_text(encoding="utf-8"))
    key = next(iter(retimings["designs"]))
    retimings["designs"][key][1] = [0.0] * len(retimings["designs"][key][1])
    cache.write_text(json.dumps(retimings), encoding="utf-8")
    doctored = robust_front(stored, spec, objectives, cache=cache)
    assert doctored != plain and doctored.designs[0].probability >= 0.0
    # Other trials (the study without its first front design): not read either.
    cache.unlink()
    robust_front(stored, spec, objectives, cache=cache)
    fewer = optuna.create_study(directions=stored.directions)
    gone = set(plain.designs[0].trials)
    fewer.add_trials([t for t in stored.get_trials(deepcopy=False)
                      if t.state.name == "COMPLETE" and t.number not in gone])
    fewer.set_user_attr("dse:calibration_version", stored.user_attrs.get("dse:calibration_version"))
    without = robust_front(fewer, spec, objectives, cache=cache)
    assert without == robust_front(fewer, spec, objectives) != plain
    assert plain.designs[0].trial not in {d.trial for d in without.designs}
    front_cache(cache).write_text("{not json", encoding="utf-8")
    assert robust_front(stored, spec, objectives, cache=cache) == plain


def test_the_hypervolume_curve_is_one_volume_of_every_trial_so_far_per_point(
        study: tuple[optuna.Study, StudySpec]) -> None:
    """Measured front by front, the curve is the volume of all the trials before each n, exactly,
    with the study's fixed reference and without one (its own range)."""
    import numpy as np

    from dse.search.algorithms.analysis import hypervolume_curve
    from dse.search.algorithms.pareto import feasible_trials, hypervolume, reference_point, study_losses
    from dse.search.algorithms.reference import REFERENCE_KEY, study_reference

    stored, _ = study
    own = optuna.create_study(directions=stored.directions)
    own.add_trials(stored.get_trials(deepcopy=False))
    for s, has_fixed in ((stored, study_reference(stored) is not None), (own, False)):
        assert (study_reference(s) is not None) == has_fixed and REFERENCE_KEY not in own.user_attrs
        feasible = feasible_trials(s)
        trials = s.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        xs, ys = hypervolume_curve(s, feasible, trials, points=17)
        fixed = study_reference(s)
        loss = study_losses(s, feasible)
        numbers = np.array([t.number for t in feasible])
        expected = []
        for n in xs:
            subset = [t for t in feasible if t.number < n]
            if fixed is not None:
                expected.append(fixed.volume(loss[numbers < n]) / fixed.hypervolume if subset else 0.0)
            else:
                expected.append(hypervolume(s, subset, reference_point(s, feasible), loss.min(axis=0))
                                if subset else 0.0)
        assert len(xs) == 17 and ys == expected and ys[-1] > 0


def test_the_report_sections_are_cached_and_read_back_only_for_the_same_inputs(
        tmp_path: Path, study: tuple[optuna.Study, StudySpec]) -> None:
    """The importances and the plan-and-timeline section kept in the report cache are what was
    made (the page is the same with the cache cold, warm, or absent), are what a later page
    shows (doctored, they show), and are made again for other trials or other designs."""
    from dse.outputs.front_design_detail import chosen_section, score_designs
    from dse.outputs.report import (
        cached_chosen,
        cached_importances,
        chosen_designs,
        render_report,
        report_cache,
    )
    from dse.search.algorithms.analysis import importances

    stored, spec = study
    objectives = load_objectives(spec.objectives)
    data = gather(stored, spec, objectives)
    cache = report_cache(tmp_path / "fast.journal")
    plain = render_report(stored, spec, objectives, robust=False)
    assert render_report(stored, spec, objectives, robust=False, cache=cache) == plain
    assert render_report(stored, spec, objectives, robust=False, cache=cache) == plain
    saved = json.loads(cache.read_text(encoding="utf-8"))
    made = importances(stored, data.trials, objectives)
    assert saved["importances"]["value"] == made and made
    designs = chosen_designs(data)
    assert saved["chosen"]["value"] == chosen_section(score_designs(spec, designs))
    # Read back: doctored, they show.
    saved["importances"]["value"] = {"x": {"p": 1.0}}
    saved["chosen"]["value"] = "<p>doctored</p>"
    cache.write_text(json.dumps(saved), encoding="utf-8")
    assert cached_importances(stored, data, cache) == {"x": {"p": 1.0}}
    assert cached_chosen(spec, designs, cache) == "<p>doctored</p>"
    # Other designs, other trials: made again (and the cache replaced).
    assert cached_chosen(spec, designs[1:], cache) == chosen_section(score_designs(spec, designs[1:]))
    fewer = optuna.create_study(directions=stored.directions)
    fewer.add_trials(data.trials[:-1])
    fewer_data = gather(fewer, spec, objectives)
    assert cached_importances(fewer, fewer_data, cache) == importances(fewer, fewer_data.trials,
                                                                       objectives)
    assert json.loads(cache.read_text(encoding="utf-8"))["importances"]["value"] != {"x": {"p": 1.0}}
    cache.write_text("{not json", encoding="utf-8")
    assert render_report(stored, spec, objectives, robust=False, cache=cache) == plain
