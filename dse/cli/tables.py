"""Terminal tables that fit the terminal (80 columns included): the designs of ``dse status`` and
``dse pareto`` (one row per distinct design with its trial numbers, few default columns with
human headers and units, :mod:`dse.outputs.labels`) and every other command's table
(:func:`print_table`). Numbers are never cut: text wraps between words, optional columns are left
out (and named in the caption), and a table that still cannot fit is printed as one record per
row; only when even that cannot fit is it printed at the width it needs."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dse.cli._app import console as plain_console
from dse.errors import DseInputError
from dse.outputs.labels import design_phrase, header, rack_scale_racks, show

SPECIAL = ("trials", "design")
"""Columns that are not a metric or parameter: the trial numbers and the design in words."""


@dataclass(frozen=True, slots=True)
class DesignRow:
    """One distinct design and the trials that evaluated it (their metrics are equal)."""

    trials: tuple[int, ...]
    baseline: str
    values: dict[str, Any]
    """The first trial's row: ``param:`` keys and metrics."""


def distinct_designs(rows: Sequence[dict[str, Any]],
                     objectives: Sequence[tuple[str, str]]) -> list[DesignRow]:
    """``rows`` (trial rows with ``number``, ``baseline``, ``param:`` keys and metrics) merged by
    design and sorted best first by the first of ``objectives`` ((metric, direction) pairs)."""
    groups: dict[tuple[tuple[str, str], ...], list[dict[str, Any]]] = {}
    for row in rows:
        key = tuple(sorted((k, repr(v)) for k, v in row.items() if k.startswith("param:")))
        groups.setdefault(key, []).append(row)
    out = [DesignRow(tuple(sorted({n for r in group for n in _numbers(r)})),
                     next((str(r["baseline"]) for r in group if r.get("baseline")), ""), group[0])
           for group in groups.values()]
    if objectives:
        metric, direction = objectives[0]
        sign = -1.0 if direction.lower() == "maximize" else 1.0
        out.sort(key=lambda d: (sign * float(d.values.get(metric) or 0.0), d.trials))
    return out


def _numbers(row: dict[str, Any]) -> list[int]:
    """The trial numbers of a row: its own, and those of its ``trials`` cell ("12, 40, 77") when
    the row already stands for every trial of its design."""
    cell = row.get("trials")
    listed = [int(x) for x in str(cell).split(",") if x.strip().isdigit()] if cell else []
    return [int(row["number"]), *listed]


def choose_columns(columns: str | None, rows: Sequence[dict[str, Any]],
                   objectives: Sequence[tuple[str, str]]) -> list[str]:
    """The columns to show: ``columns`` (comma-separated metric or parameter names, ``trials``,
    ``design``), else the trial numbers, the objectives, the bottleneck and the design in words."""
    if not columns:
        return ["trials", *(m for m, _ in objectives), "bottleneck", "design"]
    known = set(SPECIAL) | {k.removeprefix("param:") for row in rows[:1] for k in row
                            if ":" not in k.removeprefix("param:")}
    chosen = [c.strip() for c in columns.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in known]
    if unknown:
        raise DseInputError("--columns", "", f"unknown {', '.join(unknown)} "
                            f"(known: {', '.join(sorted(known))})")
    return chosen


def _constant_params(designs: Sequence[DesignRow]) -> dict[str, Any]:
    """Parameters with one value across ``designs`` (stated once, in the caption), when more than
    one design is shown."""
    if len(designs) < 2:
        return {}
    first = designs[0].values
    return {k: v for k, v in first.items() if k.startswith("param:")
            and all(repr(d.values.get(k)) == repr(v) for d in designs[1:])}


def _value(design: DesignRow, column: str) -> Any:
    return design.values.get(column, design.values.get(f"param:{column}"))


def _cell(design: DesignRow, column: str, constant: dict[str, Any]) -> str:
    if column == "trials":
        numbers = ", ".join(str(n) for n in design.trials)
        return f"{numbers} {design.baseline}" if design.baseline else numbers
    if column == "design":
        phrase = design_phrase({k: v for k, v in design.values.items()
                                if k.startswith("param:") and k not in constant},
                               rack_scale_racks(design.values))
        same = int(design.values.get("equivalents") or 1)
        return f"{phrase} ({same} equivalent settings)" if same > 1 else phrase
    value = _value(design, column)
    return show(column, value).replace("_", " ") if column == "bottleneck" else show(column, value)


def print_designs(console: Console, designs: Sequence[DesignRow], columns: Sequence[str],
                  title: str, chosen: bool = False) -> None:
    """``designs`` as a table of ``columns`` fitted to the console (:func:`print_fitted`); unless
    the user ``chosen`` them, the bottleneck and then objectives after the second are left out
    (and named in the caption) where the table would not fit otherwise."""
    if not designs:
        console.print("no feasible design yet")
        return
    constant = _constant_params(designs) if "design" in columns else {}
    fitted = [Column(col if col in SPECIAL else header(col), [_cell(d, col, constant) for d in designs],
                     col in SPECIAL or any(isinstance(_value(d, col), str) for d in designs))
              for col in columns]
    metrics = [c for c in columns if c not in SPECIAL and c != "bottleneck"]
    optional = [] if chosen else [c for c in ("bottleneck", *reversed(metrics[2:])) if c in columns]
    print_fitted(console, title, f"every design: {design_phrase(constant)}" if constant else "",
                 fitted, [fitted[columns.index(c)].head for c in optional])


@dataclass(frozen=True, slots=True)
class Column:
    """A table column: its header, its cells (plain text, never Rich markup), and whether it is
    text that may wrap between words (left-aligned) or a number kept on one line (right-aligned)."""

    head: str
    cells: list[str]
    wraps: bool
    justify: Literal["left", "right"] | None = None


def print_fitted(console: Console, title: str, caption: str, columns: Sequence[Column],
                 optional: Sequence[str] = ()) -> None:
    """``columns`` as a table no wider than the console: text columns wrap between words, numbers
    keep every digit; while that is still too wide, the ``optional`` columns (headers, first
    dropped first) are left out and the caption names them; then the rows are printed as records
    (each header beside its value). Only cells that cannot fit even so (a word longer than the
    console) print wider, at exactly the width they need (no value is ever cut)."""
    shown, left_out = list(columns), []
    while _need(shown) > console.width and any(c.head in optional for c in shown):
        drop = next(h for h in optional if any(c.head == h for c in shown))
        shown = [c for c in shown if c.head != drop]
        left_out.append(drop)
    if left_out:
        note = f"left out to fit {console.width} columns: {', '.join(left_out)}"
        caption = f"{caption}; {note}" if caption else note
    if _need(shown) > console.width and _record_need(shown) <= console.width:
        _print_records(console, title, caption, shown)
        return
    table = Table(title=Text(title), caption=Text(caption) if caption else None)
    widths = _widths(shown, console.width)
    for column, width in zip(shown, widths, strict=True):
        table.add_column(Text(column.head), width=width, no_wrap=not column.wraps,
                         justify=column.justify or ("left" if column.wraps else "right"))
    for row in zip(*(c.cells for c in shown), strict=True):
        table.add_row(*(Text(cell) for cell in row))
    need = sum(widths) + 3 * len(widths) + 1
    if need > console.width:
        console = plain_console(width=need, file=console.file)
    console.print(table)


def _least(columns: Sequence[Column]) -> list[int]:
    """Each column's narrowest width: numbers whole, text its longest word (or header word)."""
    # A list, not max(*a, *b): a text column whose cells are all empty has only its header's words.
    return [max([len(w) for w in c.head.split()] + [len(w) for cell in c.cells for w in cell.split()])
            if c.wraps else max(len(c.head), *(len(cell) for cell in c.cells)) for c in columns]


def _need(columns: Sequence[Column]) -> int:
    """The width of ``columns`` at their narrowest, with the table's borders."""
    return sum(_least(columns)) + 3 * len(columns) + 1


def _widths(columns: Sequence[Column], width: int) -> list[int]:
    """Column widths: numbers at full width; text columns at least their longest word (so they wrap
    between words, never inside one), given the rest of ``width`` up to their longest line."""
    natural = [max(len(c.head), *(len(cell) for cell in c.cells)) for c in columns]
    out = _least(columns)
    spare = width - _need(columns)
    # The narrowest text columns get their full width first, the widest (the design) the rest.
    for i in sorted((i for i, c in enumerate(columns) if c.wraps), key=lambda i: natural[i]):
        grow = min(max(spare, 0), natural[i] - out[i])
        out[i] += grow
        spare -= grow
    return out


def _record_need(columns: Sequence[Column]) -> int:
    """The width of ``columns`` printed as records: the longest header beside the longest word."""
    return max(len(c.head) for c in columns) + max(_least(columns)) + 7


def _print_records(console: Console, title: str, caption: str, columns: Sequence[Column]) -> None:
    """A table too wide for the console as one record per row: each column's header beside its
    value (wrapped between words), rows separated by a rule."""
    table = Table(title=Text(title), caption=Text(caption) if caption else None, show_header=False)
    table.add_column(no_wrap=True, style="bold")
    table.add_column(overflow="fold")
    for i in range(len(columns[0].cells)):
        for c in columns:
            table.add_row(Text(c.head), Text(c.cells[i]))
        table.add_section()
    console.print(table)


def print_table(console: Console, table: Table) -> None:
    """A Rich ``table`` built by a command, fitted to the console like :func:`print_fitted`
    (its cells as plain text, never markup: a column of numbers stays on one line, text wraps)."""
    columns = []
    for column in table.columns:
        cells = [c.plain if isinstance(c, Text) else str(c) for c in column.cells]
        numeric = all(_NUMBER.fullmatch(c) for c in cells if c)
        columns.append(Column(str(column.header), cells, not numeric))
    title = table.title if isinstance(table.title, str) else ""
    print_fitted(console, title, "", columns)


_NUMBER = re.compile(r"[-+]?[\d,.]+ ?%?|-")
"""A cell that is a number (kept on one line)."""
