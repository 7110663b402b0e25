"""The study report in a real browser: Debian's Chromium driven by Playwright.

The page must load with no console errors and no network requests, render every figure, show as
many front points as Optuna's own front, and show a design's parameters on hover.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from browser import BROWSER_ARGS, CHROMIUM, playwright_api

from dse.outputs.report import render_report
from dse.search.runner import run_study
from dse.search.storage.opening import open_storage
from dse.search.study.objective_sets import load_objectives
from dse.search.study.study_file import StudySpec, study_space


def make_study(tmp_path: Path, objectives: str, budget: int,
               workload: str = "mlperf-dlrm-v1") -> tuple[optuna.Study, StudySpec]:
    spec = StudySpec(name=f"report-{objectives}", workload=workload, space="scale-out",
                     objectives=objectives, budget=budget, sampler="random", seed=7,
                     storage=str(tmp_path / f"{objectives}.journal"))
    run_study(spec)
    return optuna.load_study(study_name=spec.name, storage=open_storage(None, spec)), spec


def open_page(path: Path, shot: Path) -> dict[str, object]:
    """Load the page in Chromium; return console errors, outside requests and figure facts."""
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[str] = []
        requests: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url)
                if not r.url.startswith(("file:", "data:", "blob:")) else None)
        page.goto(path.as_uri(), wait_until="load")
        # The figures are drawn one a frame after plotly.js is inflated: wait for the last.
        page.wait_for_function("""() => { const d = document.querySelectorAll('.plotly-graph-div');
            return d.length > 0 && Array.from(d).every(x => x._fullLayout); }""", timeout=120_000)
        facts = page.evaluate("""() => {
            const plots = Array.from(document.querySelectorAll('.js-plotly-plot'));
            const pair = plots.find(p => p.id.startsWith('front-') && p.id !== 'front-3d');
            const front = pair.data.find(t => t.name.startsWith('Pareto front'));
            return {ids: plots.map(p => p.id), rendered: plots.map(p => !!p._fullLayout &&
                    p.querySelectorAll('.main-svg').length > 0), frontPoints: front.x.length,
                    frontTrace: pair.data.indexOf(front), pairId: pair.id,
                    tableRows: document.querySelectorAll('#front tbody tr').length};
        }""")
        page.evaluate(f"""() => Plotly.Fx.hover('{facts["pairId"]}',
                          [{{curveNumber: {facts["frontTrace"]}, pointNumber: 0}}])""")
        page.wait_for_selector(".hoverlayer .hovertext", timeout=5000)
        facts["hover"] = page.evaluate(
            "() => document.querySelector('.hoverlayer').textContent")
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    facts["errors"] = errors
    facts["requests"] = requests
    return facts


@pytest.mark.slow
@pytest.mark.parametrize(("objectives", "figures"), [
    ("throughput-vs-capex", {"front-throughput_samples_per_s-capex_usd", "breakdown", "parcoords",
                             "progress", "timeline", "robust-front"}),
    ("throughput-capex-power", {"front-throughput_samples_per_s-capex_usd",
                                "front-throughput_samples_per_s-power_w", "front-capex_usd-power_w",
                                "front-3d", "breakdown", "parcoords", "progress", "timeline",
                                "robust-front"}),
])
def test_report_in_chromium(tmp_path: Path, objectives: str, figures: set[str]) -> None:
    study, spec = make_study(tmp_path, objectives, 60)
    page = tmp_path / "report.html"
    page.write_text(render_report(study, spec, load_objectives(objectives)), encoding="utf-8")
    shot = tmp_path / "report.png"
    facts = open_page(page, shot)
    assert facts["errors"] == []
    assert facts["requests"] == []
    assert set(facts["ids"]) == figures  # type: ignore[arg-type]
    assert all(facts["rendered"])  # type: ignore[arg-type]
    assert facts["frontPoints"] == len(study.best_trials) == facts["tableRows"]
    assert "node.accelerator" in str(facts["hover"]) and "nodes" in str(facts["hover"])
    assert shot.stat().st_size > 50_000


@pytest.mark.slow
def test_report_cli_and_static_export(tmp_path: Path) -> None:
    _, spec = make_study(tmp_path, "throughput-vs-capex", 30)
    study_file = tmp_path / "s.toml"
    study_file.write_text(
        f'name = "{spec.name}"\nworkload = "mlperf-dlrm-v1"\nspace = "scale-out"\n'
        f'objectives = "throughput-vs-capex"\nbudget = 30\nsampler = "random"\nseed = 7\n'
        f'storage = "{spec.storage}"\n')
    run = subprocess.run([sys.executable, "-m", "dse", "report", str(study_file), "--out",
                          str(tmp_path / "out")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "out" / f"{spec.name}.html").stat().st_size > 1_000_000  # plotly.js inside
    png = tmp_path / "front.png"
    run = subprocess.run([sys.executable, "-m", "dse", "plot", str(study_file), "--out",
                          str(tmp_path / "f.html"), "--png", str(png)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Without a browser (kaleido told to use one that does not exist), static export fails with
    # one clear line and exit code 2.
    env = {**os.environ, "BROWSER_PATH": str(tmp_path / "no-such-chromium")}
    run = subprocess.run([sys.executable, "-m", "dse", "plot", str(study_file), "--out",
                          str(tmp_path / "g.html"), "--svg", str(tmp_path / "f.svg")],
                         capture_output=True, text=True, env=env)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "Chromium" in run.stderr


@pytest.mark.slow
def test_report_is_readable(tmp_path: Path) -> None:
    """Issue 18: nothing wider than the window except inside its own scroll box; no axis title,
    tick or dimension label names an internal metric or parameter; one screenshot per figure
    (``figure-ID.png`` in the test's temporary folder) for a person to look at."""
    study, spec = make_study(tmp_path, "throughput-capex-power", 40)
    page_file = tmp_path / "report.html"
    page_file.write_text(render_report(study, spec, load_objectives(spec.objectives)), encoding="utf-8")
    internal = [n for n in json.loads(study.user_attrs["dse:space"])["parameters"] if "." in n or "_" in n]
    internal += ["throughput_samples_per_s", "capex_usd", "power_w", "step_time_s", "_index"]
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.goto(page_file.as_uri(), wait_until="load")
        # The figures are drawn one a frame after plotly.js is inflated: wait for the last.
        page.wait_for_function("""() => { const d = document.querySelectorAll('.plotly-graph-div');
            return d.length > 0 && Array.from(d).every(x => x._fullLayout); }""", timeout=120_000)
        page.wait_for_timeout(500)
        overflow = page.evaluate("""() => {
            const w = document.documentElement.clientWidth;
            return Array.from(document.querySelectorAll('body *'))
                .filter(e => e.getBoundingClientRect().right > w + 1 && !e.closest('.scroll'))
                .map(e => e.tagName + '#' + e.id + '.' + e.className);
        }""")
        labels = page.evaluate("""() => {
            const out = [];
            document.querySelectorAll('.xtitle, .ytitle, .xtick text, .ytick text, .gtitle, '
                                      + '.parcoords text, .colorbar text').forEach(
                e => out.push(e.textContent));
            document.querySelectorAll('.js-plotly-plot').forEach(p => {
                for (const [key, value] of Object.entries(p._fullLayout)) {
                    if (/^scene\\d*$/.test(key)) {
                        for (const a of ['xaxis', 'yaxis', 'zaxis']) out.push(value[a].title.text);
                    }
                }
                for (const trace of p._fullData) {
                    for (const d of trace.dimensions || []) out.push(d.label, ...(d.ticktext || []));
                }
            });
            return out;
        }""")
        widest = page.evaluate("() => document.querySelector('#front').scrollWidth")
        for figure in page.query_selector_all(".js-plotly-plot"):
            figure.screenshot(path=str(tmp_path / f"figure-{figure.get_attribute('id')}.png"))
        browser.close()
    assert overflow == []
    assert widest > 0
    named = [text for text in labels if any(name in text for name in internal)]
    assert named == [], named
    shots = list(tmp_path.glob("figure-*.png"))
    assert len(shots) == 9 and all(s.stat().st_size > 10_000 for s in shots)


def _evaluate_plan(spec: StudySpec, design: dict[str, object]) -> dict[str, object]:
    """``dse evaluate --plan --json`` of one design of ``spec``'s space: its base system with the
    space's fixed keys and the design's parameters as ``--set`` overrides."""
    space = study_space(spec)
    sets = [f"{k}={json.dumps(v) if isinstance(v, str) else v}"
            for k, v in space.overrides(design)]
    run = subprocess.run([sys.executable, "-m", "dse", "evaluate", "-s", space.base_for(design),
                          "-w", spec.workload, "--plan", "--json",
                          *[a for s in sets for a in ("--set", s)]],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    plan: dict[str, object] = json.loads(run.stdout)["plan"]
    return plan


@pytest.mark.slow
def test_report_plan_and_timeline_of_a_chosen_design(tmp_path: Path) -> None:
    """Issue 18: choosing a second front design in the report changes its plan table and its
    timeline, and the plan shown is ``dse evaluate --plan --json``'s for that design."""
    study, spec = make_study(tmp_path, "throughput-vs-capex", 40)
    page_file = tmp_path / "report.html"
    page_file.write_text(render_report(study, spec, load_objectives(spec.objectives)), encoding="utf-8")
    read = """() => {
        const shown = document.querySelector('.chosen-plan:not([style*="none"])');
        const rows = sel => Array.from(shown.querySelectorAll(sel)).map(
            r => Array.from(r.children).map(c => JSON.parse(c.dataset.v)));
        const gd = document.getElementById('timeline');
        return {k: shown.dataset.k, tables: rows('tr.table-row'), devices: rows('tr.device-row'),
                timeline: gd.layout.title.text, bars: gd.data.map(t => t.x),
                options: document.querySelectorAll('#design-choice option').length};
    }"""
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(page_file.as_uri(), wait_until="load")
        page.wait_for_function("document.getElementById('timeline')?._fullLayout !== undefined")
        # The plans are inflated from the page's packed copy.
        page.wait_for_function("document.querySelector('.chosen-plan tr.table-row') !== null")
        first = page.evaluate(read)
        page.select_option("#design-choice", "1")
        # Its plan tables are inflated from the packed copy first.
        page.wait_for_function("""() => document.querySelector(
            '.chosen-plan[data-k="1"]:not([style*="none"]) tr.table-row') !== null""")
        second = page.evaluate(read)
        page.query_selector("#timeline").screenshot(path=str(tmp_path / "figure-timeline-1.png"))
        browser.close()
    assert errors == []
    assert first["options"] >= 2 and first["k"] == "0" and second["k"] == "1"
    assert second["tables"] != first["tables"] or second["devices"] != first["devices"]
    assert second["timeline"] != first["timeline"] and second["bars"] != first["bars"]
    # The second design offered: the second distinct front design, best throughput first.
    from dse.outputs.report import chosen_designs, gather

    _, design = chosen_designs(gather(study, spec, load_objectives(spec.objectives)))[1]
    plan = _evaluate_plan(spec, design)
    tables = plan["tables"]
    assert isinstance(tables, list)
    assert second["tables"] == [[t["table"], t["sharding"], t["hot_rows"], t["devices"], t["tiers"],
                                 t["gb_per_device"], t["embedding_share"]] for t in tables]
    devices = plan["devices"]
    assert isinstance(devices, list)
    expanded = [[d, *row[1:]] for row in second["devices"] for d in row[0]]
    assert expanded == [[d["device"], d["tables"], d["hbm_used_gb"], d["ddr_used_gb"],
                         d["embedding_s"], d["alltoall_s"]] for d in devices]


def test_plot_png_only(tmp_path: Path) -> None:
    """``dse plot --png F`` writes the PNG only and prints its path."""
    _, spec = make_study(tmp_path, "throughput-vs-capex", 12)
    study_file = tmp_path / "s.toml"
    study_file.write_text(
        f'name = "{spec.name}"\nworkload = "mlperf-dlrm-v1"\nspace = "scale-out"\n'
        f'objectives = "throughput-vs-capex"\nbudget = 12\nsampler = "random"\nseed = 7\n'
        f'storage = "{spec.storage}"\n')
    png = tmp_path / "front.png"
    run = subprocess.run([sys.executable, "-m", "dse", "plot", str(study_file), "--png", str(png)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"front written to {png}"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.rglob("*.html"))
    assert not (Path(__file__).parents[1] / "studies" / f"{spec.name}-front.html").exists()
