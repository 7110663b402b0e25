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

    from dse.search.reference import REFERENCE_MIN_BUDGET, study_reference
    from dse.search.runner import open_study
    from dse.search.storage import open_storage

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
