"""Study files (``studies/*.toml``): what a study searches, and how it is named and found.

A study file names a workload, a search space, an objective set, a sampler, a trial budget, a seed
and optionally a storage; :func:`load_study_spec` validates it and everything it names.
:func:`dse.search.runner.run_study` creates or resumes the study.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dse.errors import DseInputError
from dse.model.workload import Workload, load_workload, scale_tables
from dse.records import from_mapping, named_file, read_toml
from dse.search.encoding import grid_of
from dse.search.objectives import ObjectiveSet, load_objectives
from dse.search.samplers import SAMPLERS
from dse.search.space import SearchSpace, load_space

STUDIES_DIR = Path(__file__).resolve().parents[2] / "studies"
DEFAULT_STUDY = "zion-2020"


@dataclass(frozen=True, slots=True)
class StudySpec:
    """A study definition."""

    name: str
    workload: str
    space: str
    objectives: str
    budget: int = field(metadata={"min": 1})
    sampler: str = "auto"
    seed: int | None = None
    storage: str = ""
    """Optuna storage URL; empty = the journal file ``studies/NAME.journal``."""
    description: str = ""
    workload_overrides: dict[str, Any] = field(default_factory=dict)
    """Workload fields changed for this study (``global_batch = 135168``)."""
    table_scale: float = field(default=1.0, metadata={"min": 0.0, "min_exclusive": True})
    """Every embedding table's rows multiplied by this (the growth question: 4 = tables 4x larger;
    :func:`dse.model.workload.scale_tables`)."""


def study_names() -> tuple[str, ...]:
    """Studies defined in ``studies/``."""
    return tuple(sorted(p.stem for p in STUDIES_DIR.glob("*.toml")))


def study_path(name_or_path: str) -> Path:
    """The file of a study given by name or path."""
    return named_file(name_or_path, STUDIES_DIR, "study")


def load_study_spec(name_or_path: str) -> StudySpec:
    """Load and validate a study file; its workload, space and objectives must load too, and the
    objectives may only name metrics the model reports."""
    path = study_path(name_or_path)
    source = str(path)
    spec = from_mapping(StudySpec, read_toml(path), source)
    # A file named by a relative path is looked for beside the study file first.
    def beside(v: str) -> str:
        near = path.parent / v
        return str(near) if v.endswith(".toml") and not Path(v).is_absolute() and near.exists() else v

    spec = dataclasses.replace(spec, workload=beside(spec.workload), space=beside(spec.space),
                               objectives=beside(spec.objectives))
    if spec.sampler not in SAMPLERS:
        raise DseInputError(source, "sampler", f"unknown sampler {spec.sampler!r} "
                            f"(known: {', '.join(SAMPLERS)})")
    loaders = (("workload", study_workload), ("space", study_space),
               ("objectives", study_objectives))
    for key, loader in loaders:
        try:
            loader(spec)
        except DseInputError as exc:
            raise DseInputError(source, key, str(exc)) from None
    if spec.sampler == "grid" and grid_of(study_space(spec)) is None:
        raise DseInputError(source, "sampler", f"grid search needs a discrete space without "
                            f"conditional parameters; space {spec.space!r} has float or "
                            "conditional parameters (give them choices, or use another sampler)")
    return spec


def study_workload(spec: StudySpec) -> Workload:
    """The workload a study scores: its preset or file, overrides applied, tables scaled."""
    wl = load_workload(spec.workload, tuple(spec.workload_overrides.items()))
    return wl if spec.table_scale == 1.0 else scale_tables(wl, spec.table_scale)


def study_space(spec: StudySpec) -> SearchSpace:
    """The search space a study explores."""
    return load_space(spec.space)


def study_objectives(spec: StudySpec) -> ObjectiveSet:
    """The objective set a study optimises."""
    return load_objectives(spec.objectives)
