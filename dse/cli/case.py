"""``dse case-study``: run a worked case study, check its claims and write its page (registered on
:data:`dse.cli._app.app`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from dse.cli._app import app, console, fail
from dse.cli.tables import print_table
from dse.errors import DseInputError
from dse.outputs.paths import CASE_DIR

if TYPE_CHECKING:
    from dse.outputs.cases.framework import CaseResult


@app.command("case-study")
def case_study_cmd(
    names: Annotated[list[str] | None, typer.Argument(
        help="Case studies to run (zion, zionex, today, growth); none or 'all': every one.")] = None,
    trials: Annotated[int | None, typer.Option(
        "--trials", min=1, help="Budget of each case's study instead of its file's (a reduced run; "
        "use with --storage so the full study is left alone).")] = None,
    storage: Annotated[str | None, typer.Option(
        "--storage", help="Optuna storage for the studies (default: each study's own, "
        "studies/NAME.journal).")] = None,
    out: Annotated[Path, typer.Option("--out", help="Folder for the pages.")] = CASE_DIR,
    report: Annotated[bool, typer.Option("--report/--no-report",
                                         help="Also write each study's interactive report beside "
                                         "its page (plotly.js from its CDN).")] = True,
    check: Annotated[bool, typer.Option("--check/--no-check",
                                        help="Exit 1 when a claim does not hold.")] = True,
    catalog: Annotated[Path | None, typer.Option(
        "--catalog", help="A user catalog (your parts and prices) to price the studies with; "
        "the pages list its changes.")] = None,
    draws: Annotated[int, typer.Option(
        "--draws", min=0, help="Calibrations of the ensemble (and as many joint calibration and "
        "price draws) each claim is checked under; 0: none.")] = 20,
) -> None:
    """Run each case study's study (resuming it), check the claims its page makes against the data,
    also with the case's most uncertain assumption moved by ±30% and under the calibration
    ensemble (and price draws), and write the page (OUT/NAME.md) and the study's report
    (OUT/NAME.html)."""
    from dse.outputs.cases import case_names, get_case
    from dse.outputs.cases.pipeline import publish_case

    chosen = list(case_names()) if not names or names == ["all"] else names
    try:
        cases = [get_case(n) for n in chosen]
    except DseInputError as exc:
        fail(str(exc))
        return
    out.mkdir(parents=True, exist_ok=True)
    failed: list[str] = []
    for case in cases:
        try:
            published = publish_case(case, out, trials, storage, report,
                                     str(catalog) if catalog else "", draws)
        except DseInputError as exc:
            fail(str(exc))
            return
        _show(case.name, published.result)
        for u in published.uncertainty:
            typer.echo(f"under the model's error: {u.text} holds under {u.calibrations:.0%} of "
                       f"{u.draws} calibrations, {u.joint:.0%} with prices drawn too")
        typer.echo(f"page: {published.page}"
                   + (f" (report {published.report})" if published.report else ""))
        failed += [f"{case.name}: {c.text}" for c in published.result.claims if not c.holds]
    if failed and check:
        for line in failed:
            typer.echo(f"dse: claim does not hold: {line}", err=True)
        raise typer.Exit(1)


def _show(name: str, result: CaseResult[Any]) -> None:
    table = Table(title=f"{name}: claims (as priced, -30%, +30%)")
    table.add_column("claim", overflow="fold")
    for col in ("as priced", "-30%", "+30%"):
        table.add_column(col)
    for c in result.claims:
        table.add_row(c.text, *("holds" if ok else "fails"
                                for ok in (c.holds, c.holds_low, c.holds_high)))
    print_table(console(), table)
