"""Calibration: the fit of the model's named efficiency parameters to published measurements and
the validation of that fit.

The parameters themselves (:class:`Calibration`, :func:`load_calibration`) belong to the model that
reads them (:mod:`dse.model.parameters`) and are re-exported here, so ``from dse.calibration import
Calibration`` keeps working; the fit (:mod:`dse.calibration.fit`) and the measurement set
(:mod:`dse.calibration.measurements`) are imported by their own names.
"""

from dse.model.parameters import Calibration, load_calibration

__all__ = ["Calibration", "load_calibration"]
