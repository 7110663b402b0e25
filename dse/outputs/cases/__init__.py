"""Case studies: worked questions, each a study, an analysis with claims checked against its data,
and a page in ``docs/case-studies/``.

:mod:`~dse.outputs.cases.framework` runs a case and renders its page; each case is a module of its
own with a typed findings dataclass (:mod:`~dse.outputs.cases.zion`,
:mod:`~dse.outputs.cases.zionex`, :mod:`~dse.outputs.cases.today`,
:mod:`~dse.outputs.cases.growth`); :mod:`~dse.outputs.cases.pipeline` runs, checks and writes
them (``dse case-study``). :func:`case_names` and :func:`get_case` list them.
"""

from __future__ import annotations

from typing import Any

from dse.errors import DseInputError
from dse.outputs.cases.framework import CaseStudy
from dse.outputs.cases.growth import GROWTH
from dse.outputs.cases.today import TODAY
from dse.outputs.cases.zion import ZION
from dse.outputs.cases.zionex import ZIONEX

CASES: dict[str, CaseStudy[Any]] = {c.name: c for c in (ZION, ZIONEX, TODAY, GROWTH)}
"""Every case study by name, in the order their pages present them."""


def case_names() -> tuple[str, ...]:
    """The case studies, in the order their pages present them."""
    return tuple(CASES)


def get_case(name: str) -> CaseStudy[Any]:
    """The case study ``name``, or an error listing the known ones."""
    try:
        return CASES[name]
    except KeyError:
        raise DseInputError("case study", name, f"unknown case study (known: {', '.join(CASES)})") from None


__all__ = ["CASES", "case_names", "get_case"]
