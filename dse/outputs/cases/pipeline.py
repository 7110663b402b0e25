"""Publishing a case study (``dse case-study``): run or resume its study, analyse it and check its
claims, then write its page and its study's interactive report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dse.calibration.ensemble import CalibrationEnsemble, EnsembleUnavailable, load_ensemble
from dse.model.user_catalog import ranged_parts
from dse.outputs.cases.framework import (
    CaseData,
    CaseResult,
    CaseStudy,
    analyse_case,
    case_spec,
    render_page,
    study_data,
)
from dse.outputs.cases.uncertainty import (
    DRAWS,
    ClaimUncertainty,
    claims_under_ensemble,
    uncertainty_lines,
)
from dse.safe_write import write_file
from dse.search.results import Study
from dse.search.runner import run_study
from dse.search.study.study_file import StudySpec, study_catalog, with_catalog


@dataclass(frozen=True)
class PublishedCase:
    """A case study run and written: its result (claims checked), its page and its report."""

    result: CaseResult[Any]
    page: Path
    """``OUT/NAME.md``."""
    report: Path | None
    """``OUT/NAME.html``, or ``None`` when no report was asked for."""
    uncertainty: tuple[ClaimUncertainty, ...] = ()
    """Each claim's share of calibrations (and of calibration-and-price draws) it holds under;
    empty without a usable ensemble."""


def publish_case(case: CaseStudy[Any], out: Path, trials: int | None = None,
                 storage: str | None = None, report: bool = True, catalog: str = "",
                 draws: int = DRAWS) -> PublishedCase:
    """Run (or resume) ``case``'s study, with ``trials`` as its budget and ``storage`` as its
    storage when given, check its claims, and write its page to ``out`` (and, with ``report``, the
    study's report beside it, loading plotly.js from its CDN so the page's folder stays small).

    ``catalog``: a user catalog file to price the study with (listed on the page and report).
    ``draws``: calibration (and price) draws each claim is checked under
    (:mod:`dse.outputs.cases.uncertainty`; 0: none). ``out`` must exist. Raises
    :class:`~dse.errors.DseInputError` for a bad study or storage."""
    spec = with_catalog(case_spec(case, trials, storage), catalog)
    study = run_study(spec)
    result = analyse_case(case, study_data(spec, study, study_catalog(spec).catalog))
    uncertain, note = case_uncertainty(case, result.data, draws)
    report_file = write_case_report(study, spec, storage, out, case.name) if report else None
    page = out / f"{case.name}.md"
    write_file(page, render_page(result, report_file, uncertainty_lines(
        uncertain, note, ranged_parts(result.data.catalog))))
    return PublishedCase(result, page, out / report_file if report_file else None, uncertain)


def case_uncertainty(case: CaseStudy[Any], data: CaseData, draws: int = DRAWS,
                     ensemble: CalibrationEnsemble | None = None
                     ) -> tuple[tuple[ClaimUncertainty, ...], str]:
    """The claims under the packaged ensemble (or ``ensemble``), or none and why (no ensemble, one
    built for another calibration, or ``draws`` = 0)."""
    if draws <= 0:
        return (), "no draws asked for"
    try:
        ens = ensemble or load_ensemble(calibration=data.calibration)
    except EnsembleUnavailable as exc:
        return (), str(exc)
    return claims_under_ensemble(case, data, ens, draws), ""


def write_case_report(study: Study, spec: StudySpec, storage: str | None, out: Path,
                      name: str) -> str:
    """Write the study's interactive report to ``out/NAME.html``; returns the file's name (the
    page links to it relative to its own folder)."""
    # Imported here: the report pulls in plotly, which analysing a case does not need.
    from dse.outputs.report import render_report
    from dse.search.results import objective_set_of
    from dse.search.storage.servers import redact

    html = render_report(study, spec, objective_set_of(study, spec.objectives),
                         redact(storage or ""), plotlyjs="cdn")
    write_file(out / f"{name}.html", html)
    return f"{name}.html"
