"""docs/design.md keeps up with the code (issue 26, item 5): its layout table (section 2) has one row
for every module under ``dse/`` and none for a module that is gone, its command list names every
command of ``dse --help``, and section 5 counts the measurements the data hold.

The failure messages name the module or command, so whoever adds, renames or removes one knows
which row to write or delete.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer

from dse.calibration.measurements import DATA_FILES, load_measurements
from dse.cli import app

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ROOT / "docs" / "design.md"
PACKAGE = ROOT / "dse"
MODULE_ROW = re.compile(r"^\| `(dse/[\w/]+\.py)` \|", flags=re.M)
COMMAND_ROW = re.compile(r"^\| `dse ([a-z][\w -]*)` \|", flags=re.M)


def section(number: int) -> str:
    """The text of ``## N. ...`` of docs/design.md, up to the next ``## `` heading."""
    text = DESIGN.read_text(encoding="utf-8")
    start = re.search(rf"^## {number}\. ", text, flags=re.M)
    assert start is not None, f"docs/design.md has no section {number}"
    end = re.search(r"^## ", text[start.end():], flags=re.M)
    return text[start.start(): start.end() + end.start() if end else len(text)]


def documented_modules(text: str) -> list[str]:
    """The module paths of the layout table's rows, in their order."""
    return MODULE_ROW.findall(text)


def package_modules(root: Path = PACKAGE) -> set[str]:
    """Every Python module under ``root`` (``dse/...``), ``__init__`` and ``__main__`` included."""
    return {p.relative_to(root.parent).as_posix() for p in root.rglob("*.py")
            if "__pycache__" not in p.parts}


def missing_and_stale(documented: list[str], actual: set[str]) -> tuple[list[str], list[str]]:
    """The modules the table lacks and the rows naming a module that does not exist."""
    return sorted(actual - set(documented)), sorted(set(documented) - actual)


def cli_commands(group: Any, prefix: str = "") -> set[str]:
    """Every command of ``group`` (the command typer builds; typer 0.2x ships its own click, so
    no click import here), sub-apps' commands as ``"group command"`` (hidden ones too:
    a hidden command is still a contract)."""
    found: set[str] = set()
    for name, command in getattr(group, "commands", {}).items():
        found.add(prefix + name)
        found |= cli_commands(command, f"{prefix}{name} ")
    return found


def test_every_module_under_dse_has_one_row_and_every_row_a_module() -> None:
    documented = documented_modules(section(2))
    duplicated = sorted({m for m in documented if documented.count(m) > 1})
    assert not duplicated, f"docs/design.md, section 2: more than one row for {duplicated}"
    missing, stale = missing_and_stale(documented, package_modules())
    problems = []
    if missing:
        problems.append("no row for " + ", ".join(missing) + " (add one line per module, e.g. | `"
                        + missing[0] + "` | what it holds |)")
    if stale:
        problems.append("a row for a module that does not exist: " + ", ".join(stale)
                        + " (renamed or removed? update or delete the row)")
    assert not problems, "docs/design.md, section 2, layout table: " + "; ".join(problems)


def test_every_cli_command_is_in_the_command_list() -> None:
    commands = cli_commands(typer.main.get_command(app))
    assert {"evaluate", "init", "repair", "compare", "run", "sweep"} <= commands
    listed = set(COMMAND_ROW.findall(section(2)))
    missing = sorted(commands - listed)
    assert not missing, (
        "docs/design.md, section 2, command list: no row for "
        + ", ".join(f"dse {c}" for c in missing) + "; add | `dse " + missing[0] + "` | what it does |")
    stale = sorted(listed - commands)
    assert not stale, ("docs/design.md, section 2, command list names commands dse does not have: "
                       + ", ".join(f"dse {c}" for c in stale))


def test_the_measurement_count_is_the_datas() -> None:
    text = " ".join(section(5).split())
    total = len(load_measurements())
    assert f"{total} measurements" in text, f"docs/design.md, section 5: the data hold {total} measurements"
    for name in DATA_FILES:
        rows = len(load_measurements(PACKAGE / "data" / name))
        assert f"{rows} in `dse/data/{name}`" in text, (
            f"docs/design.md, section 5: dse/data/{name} holds {rows} measurements")


# --- the checks catch what they should -------------------------------------------------------------


def test_a_new_module_and_a_removed_one_are_named(tmp_path: Path) -> None:
    package = tmp_path / "dse"
    (package / "model").mkdir(parents=True)
    for name in ("__init__.py", "model/__init__.py", "model/types.py"):
        (package / name).write_text("", encoding="utf-8")
    table = "| `dse/__init__.py` | x |\n| `dse/model/__init__.py` | x |\n| `dse/model/gone.py` | x |\n"
    assert documented_modules(table) == ["dse/__init__.py", "dse/model/__init__.py", "dse/model/gone.py"]
    assert missing_and_stale(documented_modules(table), package_modules(package)) == (
        ["dse/model/types.py"], ["dse/model/gone.py"])


def test_a_sub_app_command_is_listed_by_its_full_name() -> None:
    outer = typer.Typer()
    inner = typer.Typer()

    @outer.command("top")
    def top() -> None:
        """A command."""

    @inner.command("leaf")
    def leaf() -> None:
        """A command of a sub-app."""

    outer.add_typer(inner, name="group")
    assert cli_commands(typer.main.get_command(outer)) == {"top", "group", "group leaf"}


@pytest.mark.parametrize("number", [2, 5])
def test_the_sections_read_are_there(number: int) -> None:
    assert section(number).startswith(f"## {number}. ")
