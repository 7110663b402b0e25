"""The ensemble of a calibration fitted to a user's own rows (``dse calibrate --data mine.csv
--ensemble N``): the prediction intervals of designs scored with it.

A user's calibration keeps the packaged values of everything its rows do not constrain, so it
keeps their uncertainty too, and adds that of what the rows fitted. Member ``k`` is the packaged
ensemble's bootstrap member ``k`` (cycled when ``N`` exceeds it; the unpinned parameters drawn
across their ranges as for any ensemble), with the rows' parameters:

1. refitted to the rows from that member (:func:`dse.calibration.own.refit`), so they agree with
   its other values: a member whose dense efficiency is lower reads the same rows with a higher
   host efficiency, and at the measured node the members agree;
2. then moved by a draw from the fit's uncertainty, ``N(0, sigma^2 (J^T J)^-1)`` in the fit's
   free coordinates (``J``: the rows' log predictions by those coordinates). ``sigma`` is one
   row's error: the packaged leave-one-out residuals' normalised median absolute deviation (the
   model's error on a measured point, :class:`dse.calibration.own.Prior`), or the rows' own
   root-mean-square error over their ``n - k`` degrees of freedom when that is larger. A single
   row therefore pins a parameter no tighter than the model's error on one point allows, and ten
   rows about three times tighter (``J^T J`` grows with the rows).

The residuals an interval adds (:func:`dse.calibration.ensemble.prediction_interval`) are the
packaged leave-one-out residuals (the equations' error on the published systems, which a few rows
cannot measure again) and, with two rows or more, each row's error under the fit that left it out.
The measured regime takes in the rows' classes (their placement, vendor and architecture): a design
like the measured node is not widened as one never measured. The leave-one-class-out residuals are
the packaged ones. Coverage is not measured on a user's rows (it would take a refit of every member
per row); the ensemble file says so (``coverage`` null).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

from dse.calibration.ensemble import CalibrationEnsemble, with_drawn_ranges
from dse.calibration.own import RIDGE, OwnFit, OwnRow, decode, encode, jacobian, log_errors, refit
from dse.calibration.regime import AXES, DesignClass, Regime, design_class
from dse.errors import DseInputError
from dse.model.parameters import FITTED_APART, Calibration, fingerprint


def row_sigma(own: OwnFit) -> float:
    """One row's log error (module docstring): the packaged residuals' normalised MAD
    (:attr:`~dse.calibration.own.Prior.sigma`), or the rows' own root-mean-square error over
    ``n - k`` degrees of freedom when larger."""
    free = len(own.rows) - len(own.fitted)
    own_rms = math.sqrt(sum(x * x for x in own.after) / free) if free > 0 else 0.0
    return max(own.prior.sigma, own_rms)


def fit_spread(own: OwnFit, sigma: float) -> np.ndarray:
    """The Cholesky factor of the fitted parameters' covariance in their free coordinates,
    ``sigma^2 (J^T J)^-1`` (empty when nothing was fitted)."""
    names = own.fitted
    if not names:
        return np.zeros((0, 0))
    jac = jacobian(own.rows, own.calibration, names)
    cov = sigma ** 2 * np.linalg.inv(jac.T @ jac + RIDGE * np.eye(len(names)))
    return np.linalg.cholesky(cov)


def own_loo_residuals(own: OwnFit) -> tuple[tuple[Calibration, ...], tuple[float, ...]]:
    """With two rows or more, each row's ``log measured - log predicted`` under the fit that left
    it out (from the packaged values, of at most ``n - 1`` of the fitted parameters: no more
    parameters than rows), and those fits."""
    rows, names = own.rows, own.fitted
    if len(rows) < 2:
        return (), ()
    fits, residuals = [], []
    for i, row in enumerate(rows):
        rest = [r for j, r in enumerate(rows) if j != i]
        c = refit(rest, own.base, names[:len(rest)])
        fits.append(dataclasses.replace(c, version=own.calibration.version, fit={}))
        residuals.append(-float(log_errors([row], c)[0]))
    return tuple(fits), tuple(residuals)


def with_rows(regime: Regime | None, rows: Sequence[OwnRow]) -> Regime | None:
    """``regime`` with the classes of the rows' designs added on every axis but software (a
    user's rows are their own family, whose layout the regime cannot name)."""
    if regime is None:
        return None
    found: list[DesignClass] = [design_class(r.measurement.design_system, r.plan) for r in rows]
    merged = {a: set(regime.classes(a)) | ({c.of(a) for c in found} if a != "software" else set())
              for a in AXES}
    return Regime(*(tuple(sorted(merged[a])) for a in AXES))


def build_own_ensemble(own: OwnFit, packaged: CalibrationEnsemble, members: int, seed: int = 0,
                       progress: Callable[[int, int], None] | None = None) -> CalibrationEnsemble:
    """The ensemble of ``own.calibration`` (module docstring) from ``packaged``, the ensemble of
    the calibration it was fitted on (as :func:`~dse.calibration.ensemble.load_ensemble` returns
    it), with ``members`` members; ``seed`` seeds the ranges' draws and the fit's."""
    if members < 1:
        raise DseInputError("--ensemble", "", f"needs at least 1 member, got {members}")
    calib, names = own.calibration, own.fitted
    apart = {n: getattr(calib, n) for n in FITTED_APART}
    starts = tuple(packaged.bootstrap[k % len(packaged.bootstrap)].with_values(**apart)
                   for k in range(members))
    # The unpinned parameters drawn as load_ensemble will draw them for this calibration (same
    # seed, same members), so each refit below sees the values its member is scored with.
    drawn = with_drawn_ranges(CalibrationEnsemble(calib.version, fingerprint(calib), seed, (),
                                                  starts, ((),) * members, (), ()), calib).bootstrap
    factor = fit_spread(own, row_sigma(own))
    rng = np.random.default_rng([seed, len(own.rows)])
    out = []
    for k, start in enumerate(drawn):
        member = refit(own.rows, start.with_values(**{n: getattr(calib, n) for n in names}), names)
        if names:
            member = decode(encode(member, names) + factor @ rng.standard_normal(len(names)),
                            member, names)
        out.append(dataclasses.replace(member, version=calib.version, fit={}))
        if progress:
            progress(k + 1, members)
    loo, residuals = own_loo_residuals(own)
    return CalibrationEnsemble(
        calib.version, fingerprint(calib), seed,
        (*packaged.measurement_ids, *(r.measurement.id for r in own.rows[:len(loo)])),
        tuple(out), ((),) * members, (*packaged.leave_one_out, *loo),
        (*packaged.loo_log_residuals, *residuals), None, with_rows(packaged.regime, own.rows),
        packaged.holdouts, packaged.class_coverage)
