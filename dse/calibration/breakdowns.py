"""Published per-stage breakdowns of DLRM training steps, set beside the model's critical path.

Throughput measurements (:mod:`dse.calibration.measurements`) check how fast the model says a
design trains; these check *what binds* it, the stage an architect would upgrade. Each row of
``dse/data/stage_breakdowns.csv`` records one published breakdown or timeline (its source, URL and
exact figure or section), the dse workload and system that describe the measured run (presets and
``--set`` overrides, so ``dse evaluate`` reproduces it), the published binding stage and shares of
the step where the source states them, and a status the code recomputes:

- ``agree``: the model's largest stage is the published binding one (where stated) and each
  published share is within :data:`SHARE_TOLERANCE` of the model's;
- ``disagree``: not so; the row's ``note`` says why and why the model was (not) changed;
- ``unmatched``: the run cannot be described by the model yet (``system`` empty); the note says why.

A status the model no longer earns is an error of the data file (tests/test_stage_breakdowns.py),
so the table in docs/validation.md cannot go stale.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from dse.errors import DseInputError
from dse.limits import MAX_DATA_FILE_BYTES
from dse.model.evaluate import evaluate
from dse.model.parameters import Calibration
from dse.model.stages import STAGE_WORDS, STAGES
from dse.model.system import load_system
from dse.model.workload import load_workload
from dse.reading import read_text
from dse.records import parse_override

DATA_FILE = "stage_breakdowns.csv"
COLUMNS = ("id", "source", "url", "reference", "published", "workload", "system", "set",
           "published_binding", "published_shares", "published_step_ms", "status", "note")
STATUSES = ("agree", "disagree", "unmatched")
SHARE_TOLERANCE = 0.15
"""Largest absolute difference between a published and a modelled share of the step (0.15 = 15
points) that still counts as agreement: published shares are read off profiler spans and bar
charts, and a span holds whatever waits inside it."""


@dataclass(frozen=True, slots=True)
class PublishedBreakdown:
    """One row of the data file: a published breakdown and the design that describes its run."""

    id: str
    source: str
    url: str
    reference: str
    published: str
    workload: str
    system: str
    """System preset; empty when the model cannot describe the run (status ``unmatched``)."""
    overrides: tuple[tuple[str, Any], ...]
    """``--set`` overrides in order (``workload.``-prefixed ones apply to the workload)."""
    binding: str
    """The stage the source says binds the step; empty when it does not say."""
    shares: dict[str, float]
    """Published shares of the step by stage (fractions), only those the source states."""
    step_ms: float | None
    status: str
    note: str


@dataclass(frozen=True, slots=True)
class StageComparison:
    """A published breakdown and what the model says of the same design."""

    row: PublishedBreakdown
    model_shares: dict[str, float]
    """Every stage's share of the modelled step (adds up to 1)."""
    model_binding: str
    model_step_ms: float

    @property
    def agrees(self) -> bool:
        """The binding stage (where published) and every published share (within
        :data:`SHARE_TOLERANCE`) match the model's."""
        if self.row.binding and self.row.binding != self.model_binding:
            return False
        return all(abs(share - self.model_shares[stage]) <= SHARE_TOLERANCE
                   for stage, share in self.row.shares.items())

    def to_dict(self) -> dict[str, Any]:
        """The comparison as ``dse validate --json`` reports it (``stage_breakdowns``)."""
        return {"id": self.row.id, "url": self.row.url, "reference": self.row.reference,
                "status": self.row.status, "published_binding": self.row.binding or None,
                "model_binding": self.model_binding, "published_shares": self.row.shares,
                "model_shares": self.model_shares, "published_step_ms": self.row.step_ms,
                "model_step_ms": self.model_step_ms, "note": self.row.note}


def load_breakdowns(path: Path | None = None) -> tuple[PublishedBreakdown, ...]:
    """Load the breakdown file strictly (exact columns, known stages, presets and statuses);
    without ``path``, the packaged ``dse/data/stage_breakdowns.csv``."""
    if path is None:
        with resources.as_file(resources.files("dse") / "data" / DATA_FILE) as p:
            return _load(p, f"dse/data/{DATA_FILE}")
    return _load(path, str(path))


def _load(path: Path, name: str) -> tuple[PublishedBreakdown, ...]:
    reader = csv.DictReader(read_text(path, MAX_DATA_FILE_BYTES, name).splitlines())
    header = tuple(reader.fieldnames or ())
    if header != COLUMNS:
        raise DseInputError(name, "header", f"expected columns {', '.join(COLUMNS)}")
    rows: list[PublishedBreakdown] = []
    for line, raw in enumerate(reader, start=2):
        where = f"{name}:{line}"
        if None in raw or any(v is None for v in raw.values()):
            raise DseInputError(where, "", f"expected {len(COLUMNS)} fields")
        if any(r.id == raw["id"] for r in rows):
            raise DseInputError(where, "id", f"duplicate id {raw['id']!r}")
        rows.append(_row(raw, where))
    if not rows:
        raise DseInputError(name, "", "no breakdowns")
    return tuple(rows)


def _row(raw: dict[str, str], where: str) -> PublishedBreakdown:
    status = raw["status"]
    if status not in STATUSES:
        raise DseInputError(where, "status", f"expected one of {', '.join(STATUSES)}, got {status!r}")
    if (status == "unmatched") != (not raw["system"]):
        raise DseInputError(where, "system", "empty exactly when the status is unmatched")
    if status != "agree" and not raw["note"].strip():
        raise DseInputError(where, "note", f"a {status} row says why")
    binding = raw["published_binding"]
    if binding and binding not in STAGES:
        raise DseInputError(where, "published_binding", f"unknown stage {binding!r}")
    return PublishedBreakdown(
        id=raw["id"], source=raw["source"], url=raw["url"], reference=raw["reference"],
        published=raw["published"], workload=raw["workload"], system=raw["system"],
        overrides=tuple(parse_override(item) for item in raw["set"].split(";") if item.strip()),
        binding=binding, shares=_shares(raw["published_shares"], where),
        step_ms=_positive(raw["published_step_ms"], where, "published_step_ms"),
        status=status, note=raw["note"])


def _shares(text: str, where: str) -> dict[str, float]:
    """``stage=fraction;...`` as a dict, each stage known and each fraction in (0, 1]."""
    out: dict[str, float] = {}
    for item in filter(None, (s.strip() for s in text.split(";"))):
        stage, _, value = item.partition("=")
        if stage not in STAGES:
            raise DseInputError(where, "published_shares", f"unknown stage {stage!r}")
        share = _positive(value, where, "published_shares")
        if share is None or share > 1:
            raise DseInputError(where, "published_shares", f"{stage} share must be in (0, 1]")
        out[stage] = share
    return out


def _positive(text: str, where: str, key: str) -> float | None:
    """A positive number, or None for an empty field."""
    if not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        raise DseInputError(where, key, f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise DseInputError(where, key, f"expected a positive number, got {text!r}")
    return value


def compare(row: PublishedBreakdown, calibration: Calibration | None = None) -> StageComparison:
    """Evaluate the design of a matched row (under ``calibration``, the packaged one by default) and
    set its critical-path shares beside the published ones."""
    assert row.system, f"{row.id} is unmatched"
    wl_set = tuple((k.removeprefix("workload."), v) for k, v in row.overrides if k.startswith("workload."))
    sys_set = tuple((k, v) for k, v in row.overrides if not k.startswith("workload."))
    try:
        ev = evaluate(load_workload(row.workload, wl_set), load_system(row.system, sys_set), calibration)
    except DseInputError as exc:
        raise DseInputError(f"dse/data/{DATA_FILE}", f"{row.id}.set", exc.message) from None
    step = ev.timing.step_s
    shares = {stage: seconds / step for stage, seconds in ev.timing.breakdown_s.items()}
    return StageComparison(row=row, model_shares=shares, model_binding=ev.bottleneck,
                           model_step_ms=step * 1e3)


def compare_all(rows: Sequence[PublishedBreakdown] | None = None,
                calibration: Calibration | None = None) -> tuple[StageComparison, ...]:
    """:func:`compare` every matched row (the packaged file by default)."""
    return tuple(compare(r, calibration) for r in (rows if rows is not None else load_breakdowns())
                 if r.system)


def breakdown_line(c: StageComparison) -> str:
    """One line of ``dse validate``'s console report: a breakdown's binding stage and shares,
    published beside modelled."""
    shares = ", ".join(f"{stage} {share:.0%} (model {c.model_shares[stage]:.0%})"
                       for stage, share in c.row.shares.items())
    return (f"breakdown {c.row.id}: binds {c.row.binding or 'not stated'} (model "
            f"{c.model_binding}){'; ' + shares if shares else ''}: {c.row.status}")


def markdown_lines(rows: Sequence[PublishedBreakdown], comparisons: Sequence[StageComparison]) -> list[str]:
    """The section of docs/validation.md: one table per published breakdown (published share
    beside model share by stage, and the binding stage), then the unmatched ones."""
    out = ["## What binds the step: published breakdowns", "",
           f"Data: `dse/data/{DATA_FILE}` (one row per published breakdown, its source and the "
           "design that describes its run); `dse validate` recomputes every comparison and fails "
           "the tests if a row's status no longer holds. Shares are of the step on the critical "
           "path (`breakdown_s` of `dse evaluate --json`); a published share is what the source "
           f"states (blank: not stated). Agreement: the same binding stage and every stated share "
           f"within {SHARE_TOLERANCE * 100:.0f} percentage points.", ""]
    for c in comparisons:
        r = c.row
        step = f"{r.step_ms:g} ms" if r.step_ms is not None else "not stated"
        out += [f"### {r.id} ({r.status})", "",
                f"{r.source}, {r.reference}: <{r.url}>. Published: {r.published}.", "",
                f"Design: `dse evaluate -w {r.workload} -s {r.system}"
                + "".join(f" --set {k}={_text(v)}" for k, v in r.overrides) + "`.", "",
                "| stage | published share | model share |", "|---|---|---|"]
        for stage in STAGES:
            published = r.shares.get(stage)
            if published is None and c.model_shares[stage] < 0.005 and stage != r.binding:
                continue
            out.append(f"| {STAGE_WORDS[stage]} | {'' if published is None else f'{published:.0%}'} "
                       f"| {c.model_shares[stage]:.1%} |")
        out += [f"| **binding stage** | {STAGE_WORDS.get(r.binding, 'not stated')} "
                f"| {STAGE_WORDS[c.model_binding]} |",
                f"| step | {step} | {c.model_step_ms:.2f} ms |", ""]
        if r.note:
            out += [r.note, ""]
    for r in rows:
        if not r.system:
            out += [f"### {r.id} (unmatched)", "",
                    f"{r.source}, {r.reference}: <{r.url}>. Published: {r.published}. {r.note}", ""]
    return out


def _text(value: Any) -> str:
    """An override's value as ``--set`` takes it (TOML booleans in lower case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)
