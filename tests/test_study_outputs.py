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
