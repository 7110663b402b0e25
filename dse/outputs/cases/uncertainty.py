"""Case-study claims under the model's uncertainty: each claim checked again under calibrations
of the ensemble (:mod:`dse.calibration.ensemble`) and under joint draws of a calibration and of
prices.

A *draw* ``k`` takes bootstrap member ``k`` of the ensemble (members in file order, cycling when
there are fewer than ``draws``) and re-scores every design of the case's data with it
(:func:`dse.outputs.cases.framework.rescored`, the analysis reruns on the re-scored data, so a
claim that scores extra designs scores them with the member too). A *joint draw* also moves the
prices: every accelerator's price and the HBM and network prices each by an independent factor
drawn uniformly in ``[1 - PRICE_SPREAD, 1 + PRICE_SPREAD]`` (±30%, the range the cases' own
sensitivity uses; street prices of most parts are estimates, docs/sources.md), or, for a part whose
user catalog states a price range, uniformly within that range (:func:`price_draw`). A claim's
share is the fraction of draws under which it holds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.calibration.ensemble import CalibrationEnsemble
from dse.model.catalog import Accelerator, Catalog
from dse.model.user_catalog import draw_ranged_prices, price_range, priced_at
from dse.outputs.cases.framework import (
    CaseData,
    CaseStudy,
    _check,
    rescored,
    scale_hbm_price,
    scale_network_prices,
)

DRAWS = 20
"""Draws per claim set when a case study is published: each re-scores every design of the study,
so a page costs ``2 * DRAWS`` re-scorings more (about 1 s per thousand trials each). With 20 draws
a share is known to about ±10 points (binomial standard error at 50%)."""
PRICE_SPREAD = 0.3
"""Half-width of the uniform price factors of a joint draw."""


@dataclass(frozen=True)
class ClaimUncertainty:
    """One claim's verdict share under the ensemble."""

    text: str
    calibrations: float
    """Share of the calibration draws (prices as catalogued) under which the claim holds."""
    joint: float
    """Share of the joint calibration-and-price draws under which it holds."""
    draws: int


def price_draw(catalog: Catalog, rng: np.random.Generator, spread: float = PRICE_SPREAD) -> Catalog:
    """``catalog`` with every accelerator's price, the HBM price and the network prices each
    scaled by an independent uniform factor in ``[1 - spread, 1 + spread]``. A part whose user
    catalog states a price range is drawn uniformly within it instead (an accelerator from the
    same variate, mapped onto its range; CPUs, NICs and quotes for whole nodes after the network
    factor), so without ranges the draws are those of the spread alone."""
    def accelerator(a: Accelerator) -> Accelerator:
        factor = float(rng.uniform(1 - spread, 1 + spread))
        if price_range(a) is None:
            return dataclasses.replace(a, price_usd=a.price_usd * factor)
        return priced_at(a, (factor - (1 - spread)) / (2 * spread) if spread else 0.5)

    acc = {k: accelerator(a) for k, a in sorted(catalog.accelerator.items())}
    moved = dataclasses.replace(catalog, accelerator=acc)
    moved = scale_hbm_price(moved, float(rng.uniform(1 - spread, 1 + spread)))
    moved = scale_network_prices(moved, float(rng.uniform(1 - spread, 1 + spread)))
    return draw_ranged_prices(moved, lambda: float(rng.uniform()), ("cpu", "nic", "node_price"))


def claims_under_ensemble(case: CaseStudy[Any], data: CaseData, ensemble: CalibrationEnsemble,
                          draws: int = DRAWS, seed: int = 0) -> tuple[ClaimUncertainty, ...]:
    """Each claim of ``case`` checked under ``draws`` calibrations of ``ensemble`` and under as
    many joint calibration-and-price draws (module docstring)."""
    rng = np.random.default_rng(seed)
    members: Sequence[Any] = ensemble.members
    held = np.zeros((2, len(case.claims)))
    for k in range(draws):
        member = dataclasses.replace(members[k % len(members)], version=data.calibration.version)
        with_member = dataclasses.replace(data, calibration=member)
        for row, catalog in enumerate((data.catalog, price_draw(data.catalog, rng))):
            findings = case.analyse(rescored(with_member, catalog))
            held[row] += [_check(c, findings) for c in case.claims]
    share = held / max(draws, 1)
    return tuple(ClaimUncertainty(c.text, float(share[0, i]), float(share[1, i]), draws)
                 for i, c in enumerate(case.claims))


def uncertainty_lines(claims: Sequence[ClaimUncertainty], note: str = "",
                      ranged: Sequence[str] = ()) -> list[str]:
    """The page's section "Under the model's error" (Markdown lines): each claim's share, or
    ``note`` (why there is none). ``ranged``: the parts whose user-catalog price range the price
    draws used (:func:`dse.model.user_catalog.ranged_parts`)."""
    lines = ["## Under the model's error", ""]
    if not claims:
        return [*lines, f"Not checked: {note}", ""]
    n = claims[0].draws
    lines += [
        f"Each claim checked again under {n} calibrations of the calibration ensemble (bootstrap "
        "refits of the calibration to the published measurements; docs/validation.md) and under "
        f"{n} joint draws of a calibration and of prices (every accelerator's price, HBM and "
        f"network prices each moved by an independent factor in ±{PRICE_SPREAD:.0%}"
        + (f"; {', '.join(f'`{k}`' for k in ranged)} drawn within the user catalog's price ranges)."
           if ranged else ")."),
        "",
        "| claim | holds under calibrations | under calibrations and prices |",
        "|---|---|---|",
        *(f"| {c.text} | {c.calibrations:.0%} | {c.joint:.0%} |" for c in claims),
        "",
    ]
    return lines
