"""Calibration: the model's named efficiency parameters, their fit to published measurements and
the validation of that fit.

Only :mod:`dse.calibration.parameters` is imported here (the model reads it); the fit
(:mod:`dse.calibration.fit`) and the measurement set (:mod:`dse.calibration.measurements`) import
the model, so import them by their own names.
"""

from dse.calibration.parameters import Calibration, load_calibration

__all__ = ["Calibration", "load_calibration"]
