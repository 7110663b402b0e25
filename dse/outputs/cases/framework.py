"""Case studies: a study, the analysis that answers its design question, and checked claims.

A :class:`CaseStudy` names a study file (``studies/``), an analysis that turns the study's trials
(and, where a question needs a controlled comparison, a few designs scored directly) into
*findings* (a frozen dataclass of the case's own), and the *claims* its page makes in words, each
with the predicate over the findings that makes it true. :func:`run_case` runs (or resumes) the
study and checks every claim, at the catalog's prices and with the most uncertain assumption moved
by the case's :class:`Sensitivity`; :func:`render_page` writes the page
(``docs/case-studies/NAME.md``). A claim is text and test at once, so a page cannot drift from
what the model says: ``tests/test_case_studies.py`` reruns each case with fewer trials and checks
every claim the page carries.

The cases themselves are one module each (:mod:`dse.outputs.cases.zion`, ``zionex``, ``today``,
``growth``), listed by :func:`dse.outputs.cases.get_case`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
import pandas as pd

from dse.errors import DseInputError
from dse.model.catalog import Catalog, load_catalog
from dse.model.evaluate import Evaluation, evaluate
from dse.model.metrics import METRIC
from dse.model.parameters import Calibration, load_calibration
from dse.model.system import System
from dse.model.workload import Workload
from dse.outputs.markup import markdown_text
from dse.search.algorithms.pareto import pareto_mask
from dse.search.results import Study, TrialState, trials_frame
from dse.search.runner import run_study
from dse.search.study.encoding import design_system, design_workload
from dse.search.study.objective_sets import ObjectiveSet, losses_of
from dse.search.study.search_space import SearchSpace
from dse.search.study.study_file import (
    StudySpec,
    load_study_spec,
    study_catalog,
    study_objectives,
    study_space,
    study_workload,
)

F = TypeVar("F")
"""A case's findings: what its analysis measured (numbers, lists and small ``pandas.DataFrame``
tables), a frozen dataclass of the case's own."""


# Generic classes here are not slotted: Python 3.11 cannot set ``__orig_class__`` on a frozen
# slotted instance made through a subscripted alias such as ``Claim[ZionFindings](...)``.
@dataclass(frozen=True)
class Claim(Generic[F]):
    """A sentence a case-study page states, and the check over the findings that makes it true."""

    text: str
    holds: Callable[[F], bool]


@dataclass(frozen=True, slots=True)
class Sensitivity:
    """The most uncertain assumption of a case, moved by ``±factor`` to see whether the answer holds.

    ``perturb(catalog, scale)`` returns the catalog with the assumption multiplied by ``scale``.
    """

    assumption: str
    perturb: Callable[[Catalog, float], Catalog]
    factor: float = 0.3


@dataclass(frozen=True)
class CaseStudy(Generic[F]):
    """One worked design question (see the module docstring)."""

    name: str
    title: str
    study: str
    question: str
    analyse: Callable[[CaseData], F]
    claims: tuple[Claim[F], ...]
    explain: Callable[[F], str]
    """Markdown paragraphs that explain the findings (numbers filled in from them)."""
    sensitivity: Sensitivity
    reduced_trials: int = 100
    """Trials of the reduced run the tests check the claims on."""


@dataclass(frozen=True)
class CaseData:
    """A study's scored designs: one row per complete trial (or re-scored design), with
    ``param:`` columns, the model's metrics, ``breakdown_s:`` columns and ``feasible``."""

    spec: StudySpec
    workload: Workload
    space: SearchSpace
    objectives: ObjectiveSet
    frame: pd.DataFrame
    calibration: Calibration
    catalog: Catalog

    def feasible(self) -> pd.DataFrame:
        """The rows that meet the model's and the objective set's constraints."""
        return self.frame[self.frame["feasible"].astype(bool)]

    def front(self, rows: pd.DataFrame | None = None, metrics: Sequence[str] | None = None) -> pd.DataFrame:
        """The non-dominated rows among ``rows`` (default: every feasible row) on the study's
        objectives, or on ``metrics`` (a 2-D projection: each maximised as the study maximises it,
        throughput always maximised)."""
        rows = self.feasible() if rows is None else rows
        if rows.empty:
            return rows
        directions = {o.metric: o.direction for o in self.objectives.objectives}
        chosen = list(metrics) if metrics is not None else list(directions)
        loss = losses_of(rows[chosen].to_numpy(dtype=float), [_direction(m, directions) for m in chosen])
        return rows[pareto_mask(loss)]

    def system(self, design: Mapping[str, Any], base: str | None = None) -> System:
        """The system of one design of this study's space (a mapping of parameter values;
        parameters left out keep the base system's values), priced from this data's catalog."""
        return design_system(self.space, design, self.catalog, base)

    def evaluate(self, design: Mapping[str, Any], base: str | None = None) -> Evaluation:
        """Score one design (see :meth:`system`) with this data's catalog and calibration."""
        return evaluate(design_workload(self.space, design, self.workload), self.system(design, base),
                        self.calibration, self.catalog)


def _direction(metric: str, directions: Mapping[str, str]) -> str:
    """The study's direction of ``metric``, else the better one of its registry record (a column
    that is no metric is minimised)."""
    known = METRIC.get(metric)
    return directions.get(metric) or (known.better if known else None) or "minimize"


@dataclass(frozen=True)
class ClaimResult:
    """A claim checked at the catalog's prices and with the sensitivity assumption at ``±factor``."""

    text: str
    holds: bool
    holds_low: bool
    holds_high: bool


@dataclass(frozen=True)
class CaseResult(Generic[F]):
    """A case study run: its data and findings, and the same with the assumption moved."""

    case: CaseStudy[F]
    data: CaseData
    findings: F
    low: F
    high: F
    claims: tuple[ClaimResult, ...]
    front_kept_low: float
    """Share of the front's designs still on the front with the assumption at ``1 - factor``."""
    front_kept_high: float


# --- scoring ------------------------------------------------------------------------------------


def study_data(spec: StudySpec, study: Study, catalog: Catalog | None = None,
               calibration: Calibration | None = None) -> CaseData:
    """The complete trials of ``study`` as :class:`CaseData`."""
    frame = trials_frame(study)
    if not frame.empty:
        frame = frame[frame["state"] == TrialState.COMPLETE.name]
    return CaseData(spec, study_workload(spec), study_space(spec), study_objectives(spec),
                    frame, calibration or load_calibration(), catalog or load_catalog())


def score_row(data: CaseData, design: Mapping[str, Any]) -> dict[str, Any]:
    """One design scored as a study trial is: its parameters, metrics, breakdown and verdict."""
    try:
        ev = data.evaluate(design)
    except DseInputError as exc:
        return {**{f"param:{k}": v for k, v in design.items()}, "feasible": False,
                "model_feasible": False, "reasons": str(exc)}
    metrics = ev.metrics()
    row: dict[str, Any] = {f"param:{k}": v for k, v in design.items()}
    row.update(metrics)
    row["model_feasible"] = bool(metrics["feasible"])
    row["feasible"] = all(v <= 0 for v in data.objectives.violations(
        metrics, ev.rule_violations()).values())
    row.update({f"breakdown_s:{k}": v for k, v in ev.breakdown_s.items()})
    row["reasons"] = "; ".join(ev.reasons)
    return row


def designs_of(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Each row's design: its ``param:`` columns that are set."""
    cols = [c for c in frame.columns if c.startswith("param:")]
    out = []
    for _, row in frame[cols].iterrows():
        out.append({c.removeprefix("param:"): _plain(v) for c, v in row.items() if _is_set(v)})
    return out


def _is_set(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def rescored(data: CaseData, catalog: Catalog) -> CaseData:
    """The same designs scored again with ``catalog`` (prices and power moved, say)."""
    moved = dataclasses.replace(data, catalog=catalog)
    rows = [score_row(moved, d) for d in designs_of(data.frame)]
    frame = pd.DataFrame(rows, index=data.frame.index)
    if "baseline" in data.frame:
        frame["baseline"] = data.frame["baseline"]
    return dataclasses.replace(moved, frame=frame)


# --- running ------------------------------------------------------------------------------------


def case_spec(case: CaseStudy[Any], trials: int | None = None, storage: str | None = None) -> StudySpec:
    """The study of ``case``; ``trials`` replaces its budget, ``storage`` its storage."""
    spec = load_study_spec(case.study)
    if trials is not None:
        spec = dataclasses.replace(spec, budget=trials)
    if storage is not None:
        spec = dataclasses.replace(spec, storage=storage)
    return spec


def run_case(case: CaseStudy[F], trials: int | None = None, storage: str | None = None,
             on_trial: Callable[[Any], None] | None = None) -> CaseResult[F]:
    """Run (or resume) the case's study up to its budget (``trials`` when given), analyse it and
    check every claim, also with the sensitivity assumption at ``1 ± factor``."""
    spec = case_spec(case, trials, storage)
    study = run_study(spec, on_trial=on_trial)
    return analyse_case(case, study_data(spec, study))


def analyse_case(case: CaseStudy[F], data: CaseData) -> CaseResult[F]:
    """Findings and claims of ``data``, at the catalog's values and with the assumption moved."""
    findings = case.analyse(data)
    f = case.sensitivity.factor
    low_data = rescored(data, case.sensitivity.perturb(data.catalog, 1.0 - f))
    high_data = rescored(data, case.sensitivity.perturb(data.catalog, 1.0 + f))
    low, high = case.analyse(low_data), case.analyse(high_data)
    claims = tuple(ClaimResult(c.text, _check(c, findings), _check(c, low), _check(c, high))
                   for c in case.claims)
    front = set(data.front().index)
    return CaseResult(case, data, findings, low, high, claims,
                      front_kept_low=_kept(front, low_data), front_kept_high=_kept(front, high_data))


def _check(claim: Claim[F], findings: F) -> bool:
    try:
        return bool(claim.holds(findings))
    except (KeyError, IndexError, ValueError, ZeroDivisionError):
        # A claim about something the data lacks (no design of a kind on the front) is false.
        return False


def _kept(front: set[Any], moved: CaseData) -> float:
    if not front:
        return 1.0
    return len(front & set(moved.front().index)) / len(front)


# --- perturbations -----------------------------------------------------------------------------


def scale_accelerator_prices(catalog: Catalog, scale: float) -> Catalog:
    """Every accelerator's price times ``scale`` (street prices are estimates for most parts)."""
    acc = {k: dataclasses.replace(a, price_usd=a.price_usd * scale) for k, a in catalog.accelerator.items()}
    return dataclasses.replace(catalog, accelerator=acc)


def scale_hbm_price(catalog: Catalog, scale: float) -> Catalog:
    """The price of HBM capacity and bandwidth beyond a part's own (USD per GB and per GB/s)."""
    fac = catalog.facility
    return dataclasses.replace(catalog, facility=dataclasses.replace(
        fac, hbm_usd_per_gb=fac.hbm_usd_per_gb * scale, hbm_usd_per_gb_s=fac.hbm_usd_per_gb_s * scale))


def scale_network_prices(catalog: Catalog, scale: float) -> Catalog:
    """NIC ports, scale-out switch ports and optics times ``scale``."""
    nics = {k: dataclasses.replace(n, price_usd=n.price_usd * scale) for k, n in catalog.nic.items()}
    sw = catalog.network_switch
    switch = dataclasses.replace(sw, usd_per_port_per_400g=sw.usd_per_port_per_400g * scale,
                                 optics_usd_per_end_per_400g=sw.optics_usd_per_end_per_400g * scale)
    return dataclasses.replace(catalog, nic=nics, network_switch=switch)


# --- reading a front ---------------------------------------------------------------------------


BEND_MIN_SPAN = 0.02
"""Share of a front's cost range a bend leaves on either side, at least."""


def front_bend(front: pd.DataFrame, cost: str = "capex_usd",
               gain: str = "throughput_samples_per_s") -> dict[str, Any]:
    """Where a 2-D front bends: the design that splits it into the two chords (cheapest design to
    it, it to the dearest) whose slopes (``gain`` per unit of ``cost``) differ most, with the
    bottlenecks on either side. Chords, not neighbouring segments, so two near-equal designs do
    not make a bend; and a bend leaves at least :data:`BEND_MIN_SPAN` of the front's cost range on
    each side, so a chord between two designs a few dollars apart (a slope of millions of
    samples/s per $1k) is not read as one. Empty for a front of fewer than three distinct points
    or without a point so placed."""
    pts = front.drop_duplicates([cost, gain]).sort_values(cost)
    if len(pts) < 3:
        return {}
    x, y = pts[cost].to_numpy(dtype=float), pts[gain].to_numpy(dtype=float)

    def chord(a: int, b: int) -> float:
        return float((y[b] - y[a]) / max(x[b] - x[a], 1e-12))

    span = BEND_MIN_SPAN * (x[-1] - x[0])
    drops = [(chord(0, i) / max(chord(i, len(x) - 1), 1e-300), i) for i in range(1, len(x) - 1)
             if x[i] - x[0] >= span and x[-1] - x[i] >= span]
    if not drops:
        return {}
    ratio, i = max(drops)
    return {
        "at": pts.iloc[i], "ratio": ratio,
        "slope_before": chord(0, i), "slope_after": chord(i, len(x) - 1),
        "bottlenecks_before": _counts(pts.iloc[: i + 1]["bottleneck"]),
        "bottlenecks_after": _counts(pts.iloc[i + 1:]["bottleneck"]),
    }


def _counts(values: pd.Series) -> str:
    return ", ".join(f"{k} ({v})" for k, v in values.value_counts().items())


def describe_bend(bend: Mapping[str, Any], what: Callable[[pd.Series], str],
                  unit: str = "$1k", scale: float = 1e3) -> str:
    """One sentence on :func:`front_bend`: where the front bends and what bounds it on each side."""
    if not bend:
        return "The front has no bend (too few distinct points apart from its ends)."
    return (f"The front bends at {what(bend['at'])}: before it each extra {unit} buys "
            f"{bend['slope_before'] * scale:,.0f} samples/s on average, after it "
            f"{bend['slope_after'] * scale:,.0f}. Up to the bend the designs are bound by "
            f"{bend['bottlenecks_before']}; past it by {bend['bottlenecks_after']}.")


# --- the page -----------------------------------------------------------------------------------


def _prices(data: CaseData) -> list[str]:
    """The prices that set this study's capex: its accelerators', HBM beyond a part's own, NIC
    ports, with their sources."""
    names: set[str] = set()
    for base in data.space.bases():
        names.add(data.system({}, base).spec.node.accelerator)
    acc = data.space.parameters.get("node.accelerator")
    names.update(str(c) for c in (acc.choices if acc else ()))
    cat = data.catalog
    # Names and sources may be a user catalog's: escaped, as Markdown passes HTML through.
    lines = [f"- {markdown_text(cat.accelerator[n].name)}: ${cat.accelerator[n].price_usd:,.0f} per "
             f"accelerator ({markdown_text(cat.accelerator[n].price_source)})" for n in sorted(names)]
    nics = ", ".join(f"{n.gbit_s:g} Gb/s ${n.price_usd:,.0f}" for n in
                     sorted(cat.nic.values(), key=lambda n: n.gbit_s))
    lines.append(f"- NIC ports: {nics}; HBM beyond a part's own ${cat.facility.hbm_usd_per_gb:g}/GB "
                 "(`dse/data/catalog.toml` gives every source)")
    return lines



def _mark(ok: bool) -> str:
    return "holds" if ok else "**does not hold**"


def _user_catalog_lines(spec: StudySpec) -> list[str]:
    """The page's list of the user catalog's changes (nothing for the packaged catalog alone)."""
    if not spec.catalog:
        return []
    changes = study_catalog(spec).changes
    return [f"- User catalog `{spec.catalog}`:" + ("" if changes else " no changes"),
            *(f"  - `{c.key}` = {markdown_text(c.value)}" for c in changes)]


def render_page(result: CaseResult[Any], report_file: str | None = None,
                extra: Sequence[str] = ()) -> str:
    """The case study's page (Markdown): question, reproducing command, assumptions, findings
    explained, claims with their checks, and the sensitivity of the answer; ``extra`` lines end
    it (the claims under the model's error, :mod:`dse.outputs.cases.uncertainty`)."""
    case, data = result.case, result.data
    spec = data.spec
    wl = data.workload.summary()
    s = case.sensitivity
    pct = f"{s.factor:.0%}"
    lines = [
        f"# Case study: {case.title}",
        "",
        case.question,
        "",
        "## Reproduce",
        "",
        "```",
        f"dse case-study {case.name}          # runs `dse run {spec.name}`, then this analysis",
        "```",
        "",
        f"Study `studies/{spec.name}.toml`: {markdown_text(spec.description)} Sampler `{spec.sampler}`, "
        f"seed {spec.seed}, {len(data.frame)} trials scored "
        f"({len(data.feasible())} feasible, front of {len(data.front())}).",
    ]
    if report_file:
        lines += ["", f"Interactive report (every trial, the front, step breakdowns): "
                      f"[{report_file}]({report_file})."]
    lines += [
        "",
        "## Assumptions",
        "",
        f"- Workload `{wl['name']}`: {wl['tables']} tables, {wl['embedding_gb']:,.0f} GB of embeddings, "
        f"{wl['forward_mflop_per_sample']:.1f} MFLOP/sample forward, global batch {wl['global_batch']}, "
        f"{wl['precision']}.",
        f"- Search space `{spec.space}` ({data.space.description}); objectives `{spec.objectives}`.",
        f"- Model calibration `{data.calibration.version}`, catalog `{data.catalog.version}` "
        "(prices and their sources: `dse/data/catalog.toml`; `dse validate` for the model's error).",
        f"- Most uncertain assumption here: {s.assumption}; moved by ±{pct} below.",
        "- Prices (catalog):",
        *("  " + line for line in _prices(data)),
        *_user_catalog_lines(spec),
        "",
        "## What the study shows",
        "",
        case.explain(result.findings).strip(),
        "",
        "## Claims",
        "",
        f"Each is checked against the data by `tests/test_case_studies.py` (on a reduced run of "
        f"{case.reduced_trials} trials) and here on the full run, also with {s.assumption} at "
        f"-{pct} and +{pct}.",
        "",
        f"| claim | as priced | -{pct} | +{pct} |",
        "|---|---|---|---|",
    ]
    lines += [f"| {c.text} | {_mark(c.holds)} | {_mark(c.holds_low)} | {_mark(c.holds_high)} |"
              for c in result.claims]
    changed = [c.text for c in result.claims if not c.holds == c.holds_low == c.holds_high]
    verdict = ("Every claim keeps its verdict at both ends: the answer does not hinge on this "
               "assumption." if not changed else
               "These claims change verdict, so the answer hinges on this assumption: "
               + " ".join(f"*{t}*" for t in changed))
    lines += [
        "",
        f"## Sensitivity: {s.assumption} ±{pct}",
        "",
        f"Every design the study scored, re-scored with {s.assumption} at -{pct} and +{pct}: "
        f"{result.front_kept_low:.0%} and {result.front_kept_high:.0%} of the front's designs stay "
        "on the front" + (" (many of its designs lie within a few percent of each other, so small "
                          "price moves reorder them)" if min(result.front_kept_low,
                                                             result.front_kept_high) < 0.5 else "")
        + f". {verdict}",
        "",
        *extra,
    ]
    return "\n".join(lines)


def markdown_table(frame: pd.DataFrame) -> str:
    """A small DataFrame as a Markdown table (no optional dependency): numbers of 100 and more
    with thousands separators, smaller ones to three significant digits."""
    head = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join(_cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def _cell(v: Any) -> str:
    if isinstance(v, bool | np.bool_):
        return "yes" if v else "no"
    if isinstance(v, float | np.floating):
        x = float(v)
        return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"
    return str(v)


__all__ = [
    "CaseData", "CaseResult", "CaseStudy", "Claim", "ClaimResult", "Sensitivity",
    "analyse_case", "case_spec", "describe_bend", "designs_of", "front_bend", "markdown_table",
    "render_page", "rescored", "run_case", "scale_accelerator_prices", "scale_hbm_price",
    "scale_network_prices", "score_row", "study_data",
]
