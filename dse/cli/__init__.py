"""The ``dse`` command line: a thin shell over the library.

One module per command group, each registering its commands on the Typer :data:`app` of
:mod:`dse.cli._app` when imported: :mod:`~dse.cli.evaluate` (evaluate, list, calibrate, validate),
:mod:`~dse.cli.case` (case-study), :mod:`~dse.cli.show` (show), :mod:`~dse.cli.study` (init,
run, worker, storage-proxy, status, pareto, export, report, plot) and :mod:`~dse.cli.sweep`
(sweep). Importing this package imports them all, in the order ``dse --help`` lists them. Every command turns
:class:`~dse.errors.DseInputError` into one line on stderr and exit code 2.
"""

from __future__ import annotations

import sys

import typer

from dse.cli._app import app, fail, to_json

# isort: split
# The groups register their commands on import, in this order (the order of ``dse --help``).
from dse.cli import evaluate

# isort: split
from dse.cli import case, show, study, sweep
from dse.errors import DseInputError

__all__ = ["app", "case", "evaluate", "fail", "main", "show", "study", "sweep", "to_json"]


def main() -> None:
    """Console-script entry point (``dse``, ``python -m dse``, ``python -m dse.cli``).

    A reader that stops reading (``dse status | head -1``) is no error of dse's: Click ends the
    command on the broken pipe with exit code 1 and no word; dse exits 0 then, as the output the
    reader wanted was written."""
    try:
        app()
    except DseInputError as exc:  # pragma: no cover - commands catch their own
        typer.echo(f"dse: error: {exc}", err=True)
        sys.exit(2)
    except SystemExit as exc:
        # Click marks a broken stdout by wrapping it (click.utils.PacifyFlushWrapper) before it
        # exits 1; no other exit does.
        if exc.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            sys.exit(0)
        raise
