"""dse: design-space exploration of DLRM training systems.

The model is pure: a :class:`Workload` and a :class:`System` go in, an :class:`Evaluation` comes out.

>>> import dse
>>> ev = dse.evaluate(dse.load_workload("mlperf-dlrm-v1"), dse.load_system("dgx-a100"))
>>> ev.feasible
True

Prediction intervals (80%, from the calibration ensemble; docs/validation.md) are a separate
call, so plain :func:`evaluate` costs what it did: ``dse.prediction_interval(ev)``.
"""

from dse.calibration.ensemble import (
    CalibrationEnsemble,
    EnsembleMismatch,
    EnsembleUnavailable,
    PredictionInterval,
    load_ensemble,
    prediction_interval,
)
from dse.calibration.parameters import Calibration, load_calibration
from dse.errors import DseInputError
from dse.model.catalog import Accelerator, Catalog, load_catalog
from dse.model.evaluate import Evaluation, evaluate
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
