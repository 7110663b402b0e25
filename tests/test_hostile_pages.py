"""Every page dse writes, built from hostile strings and opened in Debian's Chromium (issue 30,
item 2): a study description, study name, workload name, part name, catalog file name and
measurement ids that try to open elements, run scripts, start a comment or end a script element.

Each page must fire no dialog and raise no error, hold no element the strings tried to inject,
draw every figure, and show the strings as the text they are (:mod:`dse.outputs.markup`).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import json
import re
from pathlib import Path
from typing import Any

import optuna
import pytest
from browser import BROWSER_ARGS, CHROMIUM, playwright_api
from typer.testing import CliRunner

from dse.cli import app
from dse.outputs.markup import element_id, script_json
from dse.outputs.report import render_report
from dse.search.results import objective_set_of
from dse.search.storage.opening import open_storage
from dse.search.study.study_file import load_study_spec

HOSTILE = ("\"'><img src=x onerror=alert(1)><script>alert(2)</script><!-- </script>"
           "\u2028\u2029<b>bold</b>&amp;")
"""Quotes ending an attribute, an element with a handler, a script, an unclosed comment (which,
unescaped, hides the rest of the page), the end of a script element, the two line separators
JavaScript once refused inside strings, Plotly's own markup and an entity."""
HOSTILE_FILE = "'><img src=x onerror=alert(3)><!--"
"""A catalog file name (everything but ``/``)."""
ROOT = Path(__file__).resolve().parents[1]
BASE_DATA = ROOT / "dse" / "data"
REPORT_FIGURES = 6
"""The report of a two-objective study with a front: the front, the breakdown, parallel
coordinates, progress, the chosen design's timeline and the front under the model's error."""

runner = CliRunner()


def _hostile_part() -> str:
    """A user catalog's accelerator keyed by :data:`HOSTILE` (an H100 by another name)."""
    listed = json.loads(runner.invoke(app, ["list", "accelerators", "--json"]).output)
    h100 = next(a for a in listed if a["key"] == "h100-sxm5-80gb")
    fields = "\n".join(f"{k} = {json.dumps(v)}" for k, v in h100.items() if k not in ("key", "peak_tflops"))
    peaks = "\n".join(f"{k} = {v}" for k, v in h100["peak_tflops"].items())
    key = json.dumps(HOSTILE)
    return f"[accelerator.{key}]\n{fields}\n[accelerator.{key}.peak_tflops]\n{peaks}\n"


@pytest.fixture(scope="module")
def hostile_study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A study file whose description, workload name, catalog file name, a part's name and a part
    the space offers (a parameter value) are hostile, run for 30 trials (its results beside it)."""
    folder = tmp_path_factory.mktemp("hostile")
    workload = (BASE_DATA / "workloads" / "mlperf-dlrm-v1.toml").read_text(encoding="utf-8")
    (folder / "wl.toml").write_text(
        workload.replace('name = "mlperf-dlrm-v1"', f"name = {json.dumps(HOSTILE)}"), encoding="utf-8")
    (folder / f"{HOSTILE_FILE}.toml").write_text(
        f"[accelerator.h100-sxm5-80gb]\nname = {json.dumps(HOSTILE)}\n{_hostile_part()}", encoding="utf-8")
    space = (ROOT / "search_spaces" / "scale-out.toml").read_text(encoding="utf-8")
    (folder / "space.toml").write_text(
        space.replace('name = "scale-out"', 'name = "hostile-space"').replace(
            'choices = ["a100-sxm4-80gb",', f'choices = [{json.dumps(HOSTILE)}, "a100-sxm4-80gb",'),
        encoding="utf-8")
    study = folder / "s.toml"
    study.write_text(
        f'name = "hostile"\ndescription = {json.dumps(HOSTILE)}\nworkload = "wl.toml"\n'
        'space = "space.toml"\nobjectives = "throughput-vs-capex"\nbudget = 30\nsampler = "random"\n'
        f'seed = 7\ncatalog = {json.dumps(HOSTILE_FILE + ".toml")}\n', encoding="utf-8")
    result = runner.invoke(app, ["run", str(study), "--no-report", "--quiet"])
    assert result.exit_code == 0, result.output
    return study


HOVER_HOSTILE = """() => {
    const gd = document.querySelector('.js-plotly-plot');
    if (!gd) { return false; }
    for (const [c, trace] of gd.data.entries()) {
        const k = (trace.customdata || trace.text || []).findIndex(
            v => JSON.stringify(v).includes('onerror=alert(1)'));
        if (k >= 0) { Plotly.Fx.hover(gd, [{curveNumber: c, pointNumber: k}]); return true; }
    }
    return false;
}"""


def open_page(path: Path, figures: int, hover: bool = False) -> dict[str, Any]:
    """Open ``path`` in Chromium, wait for ``figures`` plots (at most 20 s) and return what the
    page did and holds: dialogs, errors, injected elements, figures drawn, its text and its
    figures' text (and, with ``hover``, the hover text of the first figure's first point that
    holds a hostile string; empty when none does)."""
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        dialogs: list[str] = []
        errors: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(path.as_uri(), wait_until="load")
        with contextlib.suppress(playwright_api.TimeoutError):  # the figures are counted below
            page.wait_for_function(f"""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
                                         .filter(p => !!p._fullLayout).length >= {figures}""",
                                   timeout=20_000)
        facts: dict[str, Any] = page.evaluate("""() => ({
            drawn: Array.from(document.querySelectorAll('.js-plotly-plot')).filter(
                p => !!p._fullLayout && p.querySelectorAll('.main-svg').length > 0).length,
            images: document.querySelectorAll('img').length,
            handlers: document.querySelectorAll('[onerror]').length,
            scripts: Array.from(document.scripts).filter(s => s.text.trim() === 'alert(2)').length,
            bold: Array.from(document.querySelectorAll('b')).filter(b => b.textContent === 'bold').length,
            text: document.body.textContent,
            figureText: Array.from(document.querySelectorAll('.js-plotly-plot svg text')).map(
                t => t.textContent).join('\\n'),
        })""")
        facts["hover"] = ""
        if hover and page.evaluate(HOVER_HOSTILE):
            page.wait_for_selector(".hoverlayer .hovertext", timeout=5000)
            facts["hover"] = page.evaluate("() => document.querySelector('.hoverlayer').textContent")
        browser.close()
    facts["dialogs"] = dialogs
    facts["errors"] = errors
    return facts


def shown(text: str) -> str:
    """``text`` without U+2028 and U+2029, to compare hover labels: Plotly breaks some of its
    labels' lines there (the characters then leave no text), others it keeps as written."""
    return text.replace("\u2028", "").replace("\u2029", "")


def assert_safe(facts: dict[str, Any], figures: int) -> None:
    """No dialog, no error, nothing injected, every figure drawn."""
    assert facts["dialogs"] == []
    assert facts["errors"] == []
    assert (facts["images"], facts["handlers"], facts["scripts"], facts["bold"]) == (0, 0, 0, 0)
    assert facts["drawn"] == figures


@pytest.mark.slow
def test_study_report(hostile_study: Path, tmp_path: Path) -> None:
    """``dse report``'s page, and the same report of a study whose name is hostile too (a name a
    study file cannot give, but a study built in code or shared in a database can hold)."""
    result = runner.invoke(app, ["report", str(hostile_study), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    spec = load_study_spec(str(hostile_study))
    study = optuna.load_study(study_name=spec.name, storage=open_storage(None, spec))
    named = tmp_path / "named.html"
    named.write_text(render_report(study, dataclasses.replace(spec, name=HOSTILE),
                                   objective_set_of(study, spec.objectives)), encoding="utf-8")
    for page, names in ((tmp_path / "hostile.html", False), (named, True)):
        facts = open_page(page, REPORT_FIGURES, hover=True)
        assert_safe(facts, REPORT_FIGURES)
        assert shown(HOSTILE) in shown(facts["hover"])  # the part the design uses
        # The description, the workload and the catalog's change (its part name and file name).
        assert facts["text"].count(HOSTILE) >= 3 + names
        assert f"{HOSTILE_FILE}.toml" in facts["text"]
        # The chosen design's timeline is titled by the workload's name.
        assert f"one step of {HOSTILE} on" in facts["figureText"]
        assert facts["figureText"].count(HOSTILE) >= 2, facts["figureText"]  # and in a design


def test_front_plot(hostile_study: Path, tmp_path: Path) -> None:
    """``dse plot``'s page (Plotly's own full page): the hostile part in a design's hover."""
    page = tmp_path / "front.html"
    result = runner.invoke(app, ["plot", str(hostile_study), "--out", str(page)])
    assert result.exit_code == 0, result.output
    facts = open_page(page, 1, hover=True)
    assert_safe(facts, 1)
    assert shown(HOSTILE) in shown(facts["hover"])


def test_evaluate_timeline(hostile_study: Path, tmp_path: Path) -> None:
    """``dse evaluate --html``: the timeline is titled by the workload's and the part's names."""
    page = tmp_path / "timeline.html"
    folder = hostile_study.parent
    result = runner.invoke(app, ["evaluate", "-s", "dgx-h100", "-w", str(folder / "wl.toml"),
                                 "--catalog", str(folder / f"{HOSTILE_FILE}.toml"), "--html", str(page)])
    assert result.exit_code == 0, result.output
    facts = open_page(page, 1)
    assert_safe(facts, 1)
    assert f"one step of {HOSTILE} on 1 x 8 {HOSTILE}:" in facts["figureText"]


def test_validation_page(tmp_path: Path) -> None:
    """``dse validate --html`` of a measurement file whose ids are hostile (shown on hover)."""
    rows = list(csv.DictReader(io.StringIO((BASE_DATA / "dlrm_measurements.csv").read_text())))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows({**r, "id": f"{HOSTILE} {k}"} for k, r in enumerate(rows))
    data = tmp_path / "measurements.csv"
    data.write_text(out.getvalue(), encoding="utf-8")
    page = tmp_path / "validation.html"
    result = runner.invoke(app, ["validate", "--data", str(data), "--no-loo", "--html", str(page)])
    assert result.exit_code == 0, result.output
    facts = open_page(page, 1, hover=True)
    assert_safe(facts, 1)
    assert shown(HOSTILE) in shown(facts["hover"])


def test_script_json_cannot_end_its_element() -> None:
    """What :func:`~dse.outputs.markup.script_json` writes holds no ``<``, ``>``, ``&`` or line
    separator, and reads back as the value; element ids keep only safe characters."""
    value = {"title": HOSTILE, HOSTILE: [1.5, None, "-->"]}
    written = script_json(value)
    assert not set(written) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(written) == value
    assert re.fullmatch(r"front-[A-Za-z0-9_.-]+", element_id(f"front-{HOSTILE}"))
    plain = "front-throughput_samples_per_s-capex_usd"
    assert element_id(plain) == plain
