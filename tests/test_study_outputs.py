"""The outputs around a study (issue 28 item 7): tables within an 80-column terminal, the robust
table's ``[low-high]`` legend printed as text, ``dse --version``, and the study's metric names as
optuna-dashboard reads them (its own WSGI application, on the study's real journal)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from study_helpers import journal_study
from typer.testing import CliRunner

from dse import __version__
from dse.cli import app


def _run(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def study_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("study")
    path = journal_study(folder, 40)
    _run("run", str(path), "--quiet", "--no-report")
    return path


@pytest.mark.parametrize("args", [("status",), ("pareto",), ("pareto", "--robust")])
def test_study_tables_fit_80_columns(study_file: Path, args: tuple[str, ...]) -> None:
    out = _run(*args, str(study_file))
    widths = [len(line) for line in out.splitlines()]
    assert max(widths) <= 80, out
    assert "…" not in out  # nothing cut to fit
    if "--robust" in args:
        assert "[low-high]: 80% interval" in out  # the legend, not swallowed as markup
        assert "robust front:" in out


@pytest.mark.parametrize("kind", ["accelerators", "systems", "workloads", "studies"])
def test_list_tables_fit_80_columns(kind: str) -> None:
    out = _run("list", kind)
    assert max(len(line) for line in out.splitlines()) <= 80, out
    assert "…" not in out
    if kind == "accelerators":
        assert "h100-sxm5-80gb" in out and "source" in out  # every field kept, as records


def test_version() -> None:
    assert _run("--version").strip() == f"dse {__version__}"


def test_metric_names_in_optuna_dashboard(study_file: Path) -> None:
    """optuna-dashboard's own API (``create_app``, GET /api/studies/ID) names the objectives."""
    dashboard = pytest.importorskip("optuna_dashboard._app")
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    storage = JournalStorage(JournalFileBackend(str(study_file.with_suffix(".journal"))))
    application = dashboard.create_app(storage)
    status: list[str] = []
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/api/studies/0", "QUERY_STRING": "",
               "SERVER_NAME": "localhost", "SERVER_PORT": "80", "wsgi.input": io.BytesIO(),
               "wsgi.errors": sys.stderr, "wsgi.url_scheme": "http"}
    body = b"".join(application(environ, lambda s, h, *_: status.append(s)))
    assert status[0].startswith("200"), body
    detail = json.loads(body)
    assert detail["name"] == "s"
    assert detail["objective_names"] == ["throughput_samples_per_s", "capex_usd"]


def test_progress_bar_is_one_line_of_80_columns() -> None:
    from rich.console import Console

    from dse.cli.study import progress_bar

    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=True, color_system=None)
    bar = progress_bar(console, False, "detail")
    bar.add_task("a-study-with-a-name-longer-than-the-column", total=5000, completed=1234,
                 detail="78% feasible, front 150, hypervolume 0.989, moving, and more words still")
    console.print(bar.make_tasks_table(bar.tasks))
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and len(lines[0]) <= 80, lines
    assert "1234/5000" in lines[0]


def test_sweep_before_the_first_trial_reports_its_progress(tmp_path: Path) -> None:
    """A new study of the auto sampler sweeps before its first trial; ``open_study`` reports the
    designs scored, up to a total that ends equal to them."""
    from study_helpers import make_spec

    from dse.search.algorithms.reference import REFERENCE_MIN_BUDGET, study_reference
    from dse.search.runner import open_study
    from dse.search.storage.opening import open_storage

    spec = make_spec(tmp_path, sampler="auto", budget=REFERENCE_MIN_BUDGET)
    calls: list[tuple[int, int]] = []
    study = open_study(spec, open_storage(None, spec),
                       on_sweep=lambda done, total: calls.append((done, total)))
    assert len(calls) >= 2
    dones = [d for d, _ in calls]
    assert dones == sorted(dones) and all(d <= t for d, t in calls)
    reference = study_reference(study)
    assert reference is not None
    # It ends at the designs the sweep scored: the reference's count.
    assert calls[-1] == (reference.designs, reference.designs)
    assert reference.designs > 1000


def _evaluate(*args: str) -> tuple[str, str]:
    result = CliRunner().invoke(app, ["evaluate", "-w", "mlperf-dlrm-v1", *args])
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


def test_implausible_price_and_capacity_are_warned(tmp_path: Path) -> None:
    """Files in a folder: a catalog at 12 USD/kWh (cents written as dollars) and a DGX H100 with
    2 GB of DDR; both evaluated as written, each warned about in one line naming its file."""
    catalog = tmp_path / "parts.toml"
    catalog.write_text("[facility]\nusd_per_kwh = 12\n[price]\nh100-sxm5-80gb = 25\n", encoding="utf-8")
    preset = (Path(__file__).parents[1] / "dse/data/systems/dgx-h100.toml").read_text(encoding="utf-8")
    system = tmp_path / "tiny-ddr.toml"
    system.write_text(preset.replace("ddr_gb = 2048", "ddr_gb = 2"), encoding="utf-8")
    out, err = _evaluate("-s", str(system), "--catalog", str(catalog))
    lines = err.splitlines()
    assert f"dse: warning: {catalog}: facility.usd_per_kwh = 12: above $1 per kWh" in err
    assert f"dse: warning: {catalog}: price.h100-sxm5-80gb = 25: below $1,000" in err
    assert any(line.startswith(f"dse: warning: system {system}") and "node.ddr_gb = 2: less than "
               "one 8 GB DIMM in each of the 2 x 8 DDR channels (128 GB)" in line for line in lines)
    assert "samples/s" in out  # still evaluated
    # At 12 USD/kWh the energy is 150 times that at the packaged 0.0806: the warning is earned.
    _, quiet = _evaluate("-s", "dgx-h100", "--set", "facility.usd_per_kwh=0.5",
                         "--set", "node.ddr_gb=128")
    assert "warning" not in quiet


def test_study_run_warns_about_its_catalog(tmp_path: Path) -> None:
    catalog = tmp_path / "parts.toml"
    catalog.write_text("[facility]\nusd_per_kwh = 0.002\n", encoding="utf-8")
    path = journal_study(tmp_path, 3)
    path.write_text(path.read_text(encoding="utf-8") + f'catalog = "{catalog}"\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(path), "--quiet", "--no-report"])
    assert result.exit_code == 0, result.output
    assert "facility.usd_per_kwh = 0.002: below $0.01 per kWh" in result.stderr


def test_four_objectives_fit_80_columns_and_say_what_was_left_out(tmp_path: Path) -> None:
    """A study of four objectives (the issue's case: 94 columns): the table keeps every digit
    within 80 columns by leaving out the bottleneck and later objectives, and names them."""
    objectives = tmp_path / "four.toml"
    objectives.write_text('name = "four"\n' + "".join(
        f'[[objectives]]\nmetric = "{m}"\ndirection = "{d}"\n' for m, d in (
            ("throughput_samples_per_s", "maximize"), ("capex_usd", "minimize"),
            ("power_w", "minimize"), ("usd_per_million_samples", "minimize"))), encoding="utf-8")
    path = journal_study(tmp_path, 40)
    text = path.read_text(encoding="utf-8").replace('objectives = "throughput-vs-capex"',
                                                    f'objectives = "{objectives}"')
    path.write_text(text, encoding="utf-8")
    _run("run", str(path), "--quiet", "--no-report")
    out = _run("pareto", str(path))
    assert max(len(line) for line in out.splitlines()) <= 80, out
    assert "left out to fit 80 columns:" in out
    wide = CliRunner().invoke(app, ["pareto", str(path)], env={"COLUMNS": "250"}).output
    assert "left out" not in wide and "bound by" in wide


def test_timeline_page_has_a_title(tmp_path: Path) -> None:
    page = tmp_path / "step.html"
    _evaluate("-s", "dgx-h100", "--html", str(page))
    html = page.read_text(encoding="utf-8")
    assert "<title>dse timeline: mlperf-dlrm-v1 on 1 x 8 " in html
    assert html.index("<title>") < html.index("</head>")
