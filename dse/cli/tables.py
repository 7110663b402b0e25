"""Terminal tables of designs (``dse status``, ``dse pareto``) that fit the terminal: one row per
distinct design with its trial numbers, few default columns with human headers and units
(:mod:`dse.outputs.labels`), and numbers that are never cut (a table too wide for its columns is
printed at the width it needs rather than shortened)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from dse.errors import DseInputError
from dse.outputs.labels import design_phrase, header, show

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
        return design_phrase({k: v for k, v in design.values.items()
                              if k.startswith("param:") and k not in constant},
                             design.values.get("racks"))
    value = _value(design, column)
    return show(column, value).replace("_", " ") if column == "bottleneck" else show(column, value)


def print_designs(console: Console, designs: Sequence[DesignRow], columns: Sequence[str],
                  title: str) -> None:
    """``designs`` as a table of ``columns``; wider than the console only when its unbreakable
    cells need it (then at exactly that width, so no value is cut)."""
    if not designs:
        console.print("no feasible design yet")
        return
    constant = _constant_params(designs) if "design" in columns else {}
    table = Table(title=title, caption=f"every design: {design_phrase(constant)}" if constant else None)
    # Widths are set here, not by rich, which would cut a number or word to fit the terminal.
    cells = [[_cell(d, c, constant) for c in columns] for d in designs]
    heads = [col if col in SPECIAL else header(col) for col in columns]
    text = [col in SPECIAL or any(isinstance(_value(d, col), str) for d in designs) for col in columns]
    widths = _widths(cells, heads, text, console.width)
    for head, is_text, width in zip(heads, text, widths, strict=True):
        table.add_column(head, justify="left" if is_text else "right", no_wrap=not is_text,
                         width=width)
    for row in cells:
        table.add_row(*row)
    need = sum(widths) + 3 * len(widths) + 1
    if need > console.width:
        console = Console(width=need, file=console.file)
    console.print(table)


def _widths(cells: list[list[str]], heads: list[str], text: list[bool], width: int) -> list[int]:
    """Column widths: numbers at full width; text columns at least their longest word (so they wrap
    between words, never inside one), given the rest of ``width`` up to their longest line."""
    columns = range(len(heads))
    natural = [max(len(heads[i]), *(len(row[i]) for row in cells)) for i in columns]
    # A list, not max(*a, *b): a text column whose cells are all empty has only its header's words.
    least = [max([len(w) for w in heads[i].split()] + [len(w) for row in cells for w in row[i].split()])
             if text[i] else natural[i] for i in columns]
    out = list(least)
    spare = width - (sum(least) + 3 * len(heads) + 1)
    # The narrowest text columns get their full width first, the widest (the design) the rest.
    for i in sorted((i for i in columns if text[i]), key=lambda i: natural[i]):
        grow = min(max(spare, 0), natural[i] - least[i])
        out[i] += grow
        spare -= grow
    return out
