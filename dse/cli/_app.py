"""The Typer application every command group registers on, and the helpers the groups share:
one-line errors and warnings, safe writes, strict JSON and numbers with SI prefixes. Imports
nothing else of :mod:`dse.cli`, so the groups can import it without an import circle."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from dse.errors import DseInputError
from dse.safe_write import check_target, write_file

app = typer.Typer(
    help="Design-space exploration of DLRM training systems.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
"""The ``dse`` command; each module of :mod:`dse.cli` adds its commands to it when imported."""


def _print_version(given: bool) -> None:
    """``dse --version``: the version and exit (before any command runs)."""
    if given:
        from dse import __version__

        typer.echo(f"dse {__version__}")
        raise typer.Exit()


@app.callback()
def quiet_optuna(
    version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print dse's version and exit.")] = False,
) -> None:
    """Run before every command: Optuna's log shows warnings only. Optuna logs every trial at
    INFO, and a study of thousands of trials would drown dse's own output; the library leaves the
    level alone (importing it sets none), the command sets it as it starts."""
    import optuna  # already loaded by the study commands' modules; imported here for the name

    optuna.logging.set_verbosity(optuna.logging.WARNING)


def fail(message: str) -> None:
    """Print one error line to stderr and exit with code 2."""
    typer.echo(f"dse: error: {message}", err=True)
    raise typer.Exit(code=2)


def warn(where: str, lines: Sequence[str]) -> None:
    """Print each of ``lines`` as one warning about ``where`` (a file or option) on stderr."""
    for line in lines:
        typer.echo(f"dse: warning: {where}: {line}", err=True)


def write_or_fail(path: Path, data: bytes | str, replace: bool = True) -> None:
    """Write a file the safe way (:func:`dse.safe_write.write_file`: a new file renamed into
    place; an existing one replaced only with ``replace``), failing in one line."""
    try:
        write_file(path, data, replace)
    except DseInputError as exc:
        fail(str(exc))


def check_targets(replace: bool, *paths: Path | None) -> None:
    """Refuse, before a command's work, a target that is a link or a device, or that exists
    when it may not be replaced (``replace``: a report regenerated; else a new artefact)."""
    try:
        for path in paths:
            if path is not None:
                check_target(path, replace)
    except DseInputError as exc:
        fail(str(exc))


def finite(value: Any) -> Any:
    """``value`` with every non-finite float replaced by ``None`` (JSON has no Infinity or NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def to_json(value: Any) -> str:
    """Strict JSON (non-finite numbers become null)."""
    return json.dumps(finite(value), indent=2, allow_nan=False)


class _PlainConsole(Console):
    """Rich's console, ending the command with exit code 0 when its reader stopped reading
    (``dse status | head -1``: the output the reader wanted was written), where Rich exits 1 with
    no word."""

    def on_broken_pipe(self) -> None:
        try:
            super().on_broken_pipe()  # quiets the console, points stdout at /dev/null, exits 1
        except SystemExit:
            raise SystemExit(0) from None


def console(stderr: bool = False, width: int | None = None, soft_wrap: bool = False,
            file: Any = None) -> Console:
    """Every console the CLI prints text to: plain, without Rich markup or highlighting, so a
    user's string (a name, a description, a reason naming a part) prints as written ("[red]" in a
    name is not a style) and in linear time: Rich's highlighter took 7 s on a 30 kB system name
    and over 120 s on 100 kB (issue 42). What is styled is built as :class:`rich.text.Text`."""
    return _PlainConsole(stderr=stderr, width=width, soft_wrap=soft_wrap, file=file,
                         highlight=False, markup=False)


def si(value: float, unit: str) -> str:
    """``value`` with an SI prefix (k, M, G, T) and three significant digits, e.g. ``1.23 Msamples/s``."""
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"
