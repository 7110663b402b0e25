"""dse: design-space exploration of DLRM training systems.

The model is pure: a :class:`Workload` and a :class:`System` go in, an :class:`Evaluation` comes out.

>>> import dse
>>> ev = dse.evaluate(dse.load_workload("mlperf-dlrm-v1"), dse.load_system("dgx-a100"))
>>> ev.feasible
True

Prediction intervals (80%, from the calibration ensemble; docs/validation.md) are a separate
call, so plain :func:`evaluate` costs what it did: ``dse.prediction_interval(ev)``.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dse.calibration.ensemble import (
        CalibrationEnsemble,
        EnsembleMismatch,
        EnsembleUnavailable,
        PredictionInterval,
        load_ensemble,
        prediction_interval,
    )
    from dse.errors import DseInputError
    from dse.model.catalog import Accelerator, Catalog, load_catalog
    from dse.model.evaluate import Evaluation, evaluate
    from dse.model.parameters import Calibration, load_calibration
    from dse.model.placement import Plan, Shard, ShardGroup, plan_placement
    from dse.model.system import (
        NetworkSpec,
        NodeSpec,
        PodSpec,
        System,
        SystemSpec,
        load_system,
        load_system_spec,
        resolve_system,
        system_presets,
    )
    from dse.model.timing import STAGES, StepTime, step_time
    from dse.model.workload import EmbeddingTable, Workload, load_workload, workload_presets

__version__ = "0.1.0"
"""dse's version, here only: the package metadata reads it (``pyproject.toml``'s dynamic
``version``), and studies record it (``dse:version``)."""

_PUBLIC = {
    "CalibrationEnsemble": "dse.calibration.ensemble",
    "EnsembleMismatch": "dse.calibration.ensemble",
    "EnsembleUnavailable": "dse.calibration.ensemble",
    "PredictionInterval": "dse.calibration.ensemble",
    "load_ensemble": "dse.calibration.ensemble",
    "prediction_interval": "dse.calibration.ensemble",
    "Calibration": "dse.model.parameters",
    "load_calibration": "dse.model.parameters",
    "DseInputError": "dse.errors",
    "Accelerator": "dse.model.catalog",
    "Catalog": "dse.model.catalog",
    "load_catalog": "dse.model.catalog",
    "Evaluation": "dse.model.evaluate",
    "evaluate": "dse.model.evaluate",
    "Plan": "dse.model.placement",
    "Shard": "dse.model.placement",
    "ShardGroup": "dse.model.placement",
    "plan_placement": "dse.model.placement",
    "NetworkSpec": "dse.model.system",
    "NodeSpec": "dse.model.system",
    "PodSpec": "dse.model.system",
    "System": "dse.model.system",
    "SystemSpec": "dse.model.system",
    "load_system": "dse.model.system",
    "load_system_spec": "dse.model.system",
    "resolve_system": "dse.model.system",
    "system_presets": "dse.model.system",
    "STAGES": "dse.model.timing",
    "StepTime": "dse.model.timing",
    "step_time": "dse.model.timing",
    "EmbeddingTable": "dse.model.workload",
    "Workload": "dse.model.workload",
    "load_workload": "dse.model.workload",
    "workload_presets": "dse.model.workload",
}
"""Where each public name lives: imported on first use (:func:`__getattr__`), so that a command
importing one part of dse (the study commands, the CLI's start) does not pay for the others
(the calibration ensemble alone pulls in the fit and the measurements: about 0.3 s)."""


__all__ = [
    "STAGES",
    "Accelerator",
    "Calibration",
    "CalibrationEnsemble",
    "Catalog",
    "DseInputError",
    "EmbeddingTable",
    "EnsembleMismatch",
    "EnsembleUnavailable",
    "Evaluation",
    "NetworkSpec",
    "NodeSpec",
    "Plan",
    "PodSpec",
    "PredictionInterval",
    "Shard",
    "ShardGroup",
    "StepTime",
    "System",
    "SystemSpec",
    "Workload",
    "__version__",
    "evaluate",
    "load_calibration",
    "load_catalog",
    "load_ensemble",
    "load_system",
    "load_system_spec",
    "load_workload",
    "plan_placement",
    "prediction_interval",
    "resolve_system",
    "step_time",
    "system_presets",
    "workload_presets",
]


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (then kept in this module)."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'dse' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
