"""``dse show KIND NAME``: a preset or the user's own file printed as it is, to copy and edit."""

from __future__ import annotations

from typing import Annotated

import typer

from dse.cli._app import app, fail
from dse.errors import DseInputError
from dse.records import KINDS, shown_text


@app.command("show")
def show_cmd(
    kind: Annotated[str, typer.Argument(help="What to show: " + ", ".join(KINDS) + ".")],
    name: Annotated[str, typer.Argument(help="Its name (./FOLDER/NAME.toml, else the packaged "
                                        "preset) or a file.")],
) -> None:
    """Print a system, workload, space, objective set or study file as it is (a first comment line
    says where it came from): `dse show system dgx-h100 > systems/my-node.toml` starts your own."""
    if kind not in KINDS:
        fail(f"show: unknown kind {kind!r} (known: {', '.join(KINDS)})")
    try:
        typer.echo(shown_text(name, KINDS[kind]), nl=False)
    except DseInputError as exc:
        fail(str(exc))
