"""Study files (``studies/*.toml``): what a study searches, and how it is named and found.

A study file names a workload, a search space, an objective set, a sampler, a trial budget, a seed
and optionally a storage; :func:`load_study_spec` validates it and everything it names.
:func:`dse.search.runner.run_study` creates or resumes the study.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dse.errors import DseInputError
from dse.limits import MAX_BUDGET, MAX_ROWS_PER_TABLE, MAX_SEED, MAX_TABLE_SCALE, check_placement_work, upto
from dse.model.parameters import Calibration, calibration_from, load_calibration
from dse.model.user_catalog import UserCatalog, load_user_catalog
from dse.model.workload import PER_DEVICE_FIELDS, Workload, load_workload, scale_tables
from dse.records import (
    OBJECTIVES,
    SPACE,
    STUDY,
    WORKLOAD,
    FileKind,
    from_mapping,
    named_beside,
    named_file,
    read_named,
    read_toml,
)
from dse.search.study.attribute_keys import CALIBRATION_VERSION_KEY, CONTENTS_KEY
from dse.search.study.encoding import grid_of
from dse.search.study.objective_sets import ObjectiveSet, load_objectives, needs_dataset
from dse.search.study.search_space import (
    WORKLOAD_PREFIX,
    SearchSpace,
    load_space,
    max_accelerators,
    with_recorded_systems,
)
from dse.search.study.seeding import MAX_PRESCREEN_S, PRESCREEN_S

STUDIES_DIR = Path(STUDY.folder)
"""Where the results of a built-in study go: ``./studies`` under the working directory."""
INTERNAL_KEYS = ("file", "recorded")
"""StudySpec fields set by :func:`load_study_spec`, never read from a study file."""
DEFAULT_STUDY = "zion-2020"
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
"""A study name: a plain identifier, since it names files (``studies/NAME.journal``, the report)
and so may hold no path separator, may not be empty and may not start with a dot."""
SAMPLERS = ("auto", "tpe", "gp", "nsga2", "random", "grid")
"""The samplers a study file may name (``sampler``); :func:`dse.search.algorithms.samplers.make_sampler`
makes each."""
_TABLE_SCALE = "table_scale"
CALIBRATION_LABEL = "calibration"
"""The label of a study's calibration file in ``dse:contents`` and ``dse:files``."""


@dataclass(frozen=True, slots=True)
class StudySpec:
    """A study definition."""

    name: str
    workload: str
    space: str
    objectives: str
    budget: int = field(metadata=upto(MAX_BUDGET, 1))
    sampler: str = "auto"
    seed: int | None = field(default=None, metadata=upto(MAX_SEED))
    storage: str = ""
    """Optuna storage URL or journal path; empty = the journal file ``NAME.journal`` beside the
    study file. A relative journal path is taken from the study file's folder
    (:func:`storage_beside`); URLs are used as given."""
    description: str = ""
    workload_overrides: dict[str, Any] = field(default_factory=dict)
    """Workload fields changed for this study (``global_batch = 135168``)."""
    table_scale: float = field(default=1.0, metadata=upto(MAX_TABLE_SCALE, 0.0, exclusive=True))
    """Every embedding table's rows multiplied by this (the growth question: 4 = tables 4x larger;
    :func:`dse.model.workload.scale_tables`)."""
    catalog: str = ""
    """A user catalog file (:mod:`dse.model.user_catalog`) on top of the packaged catalog; empty =
    the packaged catalog. A relative path is looked for beside the study file."""
    calibration: str = ""
    """A calibration file to score with instead of the packaged calibration (``dse calibrate
    --data mine.csv`` writes one from your own measurements); empty = the packaged one. A relative
    path is looked for beside the study file. Recorded by its content (``dse:contents``) as the
    systems are: a resume that finds other content there is refused unless forced."""
    prescreen_s: float = field(default=PRESCREEN_S, metadata=upto(MAX_PRESCREEN_S))
    """CPU seconds (one core) of the space-filling pre-screen a new study runs before its first
    trial when its space is too large for a coarse grid (:mod:`dse.search.algorithms.prescreen`); 0: none.
    Not trials: the budget is unchanged."""
    file: str = ""
    """The study file this was loaded from: set by :func:`load_study_spec`, never read from the
    file; empty for a spec built in code (its results then go under ``./studies``)."""
    recorded: str = ""
    """What a stored study recorded of its files (``dse:contents``, :func:`as_recorded`): set for
    the read-only commands, never read from the file; empty = the files as they are."""


def study_names() -> tuple[str, ...]:
    """Studies: ``./studies`` under the working directory and the built-in ones."""
    return STUDY.names()


def study_path(name_or_path: str) -> Path:
    """The file of a study given by name or path (:func:`dse.records.named_file`)."""
    return named_file(name_or_path, STUDY)


def results_dir(spec: StudySpec) -> Path:
    """Where the journal and pages of ``spec`` go: beside the study file the user named, or
    ``./studies`` for a built-in study (whose folder may be inside the installed package)."""
    if not spec.file or STUDY.is_builtin(Path(spec.file)):
        return STUDIES_DIR
    return Path(spec.file).parent


def load_study_spec(name_or_path: str) -> StudySpec:
    """Load and validate a study file; its workload, space and objectives must load too, and the
    objectives may only name metrics the model reports."""
    path = study_path(name_or_path)
    source = str(path)
    raw = read_toml(path)
    for key in INTERNAL_KEYS:
        if key in raw:
            raise DseInputError(source, key, "set by dse, not by a study file")
    spec = from_mapping(StudySpec, raw, source)
    if not NAME_PATTERN.fullmatch(spec.name):
        raise DseInputError(source, "name", f"expected a plain name of letters, digits, '.', '_' "
                            f"and '-' (at most 100, not starting with '.'), got {spec.name!r}")
    # The workload, space and objectives keep the words the file gives (recorded as the study's
    # definition, the same from every folder); :func:`resolved` finds their files beside it.
    spec = dataclasses.replace(spec, storage=storage_beside(spec.storage, path),
                               catalog=_beside(spec.catalog, path),
                               calibration=_beside(spec.calibration, path), file=str(path))
    if spec.sampler not in SAMPLERS:
        raise DseInputError(source, "sampler", f"unknown sampler {spec.sampler!r} "
                            f"(known: {', '.join(SAMPLERS)})")
    loaders = (("workload", study_workload), ("space", study_space),
               ("objectives", study_objectives), ("catalog", study_catalog),
               ("calibration", study_calibration))
    for key, loader in loaders:
        try:
            loader(spec)
        except DseInputError as exc:
            if exc.source == _TABLE_SCALE:
                raise DseInputError(source, _TABLE_SCALE, exc.message) from None
            raise DseInputError(source, key, str(exc)) from None
    if metric := needs_dataset(study_objectives(spec), study_workload(spec).samples_per_epoch):
        raise DseInputError(source, "objectives", f"{metric} needs the workload's dataset size, "
                            f"and workload {spec.workload!r} states no samples_per_epoch")
    check_placement_work(len(study_workload(spec).tables), max_accelerators(study_space(spec)),
                         source, "space")
    if spec.sampler == "grid" and grid_of(study_space(spec)) is None:
        raise DseInputError(source, "sampler", f"grid search needs a discrete space without "
                            f"conditional parameters; space {spec.space!r} has float or "
                            "conditional parameters (give them choices, or use another sampler)")
    return spec


def _beside(value: str, study_file: Path) -> str:
    """A file a study file names by path (``catalog``, ``calibration``), taken from the study
    file's folder when relative; empty stays empty."""
    return str(study_file.parent / value) if value and not Path(value).is_absolute() else value


def storage_beside(storage: str, study_file: Path) -> str:
    """A study file's ``storage`` with a relative journal path (``runs/x.journal`` or
    ``journal:runs/x``) taken from the study file's folder, as its other files are, so the
    study reads the same journal from any working directory; an absolute path, a URL
    (``postgresql://``, ``sqlite:///``, ``grpc://``) and the packaged studies' keys are kept."""
    if not storage or "://" in storage or STUDY.is_builtin(study_file):
        return storage
    prefix = "journal:" if storage.startswith("journal:") else ""
    journal = Path(storage.removeprefix(prefix))
    if journal.is_absolute() or not (prefix or storage.endswith(".journal")):
        return storage
    return prefix + str(study_file.parent / journal)


def study_workload(spec: StudySpec) -> Workload:
    """The workload a study scores: its preset or file, overrides applied, tables scaled."""
    wl = load_workload(resolved(spec, spec.workload, WORKLOAD), tuple(spec.workload_overrides.items()))
    if spec.table_scale == 1.0:
        return wl
    largest = max(t.rows for t in wl.tables) * spec.table_scale
    if largest > MAX_ROWS_PER_TABLE:
        raise DseInputError(_TABLE_SCALE, "", f"{spec.table_scale:g} makes a table of "
                            f"{largest:.3g} rows; at most {MAX_ROWS_PER_TABLE:.0e} are supported")
    return scale_tables(wl, spec.table_scale)


def study_space(spec: StudySpec) -> SearchSpace:
    """The search space a study explores."""
    return with_recorded_systems(load_space(resolved(spec, spec.space, SPACE)), spec.recorded)


def study_objectives(spec: StudySpec) -> ObjectiveSet:
    """The objective set a study optimises."""
    return load_objectives(resolved(spec, spec.objectives, OBJECTIVES))


def study_catalog(spec: StudySpec) -> UserCatalog:
    """The catalog a study prices its designs with: the packaged one, or with its user catalog."""
    return load_user_catalog(Path(spec.catalog) if spec.catalog else None)


def study_calibration(spec: StudySpec) -> Calibration:
    """The calibration a study scores with: for a read-only command, the one its stored study
    recorded (:func:`as_recorded`: the trials were scored with it, whatever the file holds now);
    else its calibration file; else the packaged calibration."""
    recorded = _recorded_calibration(spec.recorded)
    if recorded is not None:
        return calibration_from(tomllib.loads(recorded["text"]), f"{recorded['path']} (as the "
                                "study recorded it)")
    return load_calibration(Path(spec.calibration)) if spec.calibration else load_calibration()


def study_calibration_file(spec: StudySpec) -> Path | None:
    """The file of :func:`study_calibration` (its ensemble lies beside it,
    :func:`dse.calibration.ensemble.ensemble_beside`); None for the packaged calibration."""
    recorded = _recorded_calibration(spec.recorded)
    if recorded is not None:
        return Path(recorded["path"])
    return Path(spec.calibration) if spec.calibration else None


def _recorded_calibration(recorded: str) -> dict[str, str] | None:
    """The calibration file a stored study recorded (its ``dse:contents`` entry), if any."""
    if not recorded:
        return None
    found: dict[str, str] | None = json.loads(recorded).get(CALIBRATION_LABEL)
    return found


def calibration_differs(spec: StudySpec, attrs: dict[str, Any]) -> str:
    """One line when the calibration ``spec`` names (``--calibration``, or its file's key) is not
    the one the stored study (its user attributes ``attrs``) was scored with: other content than
    it recorded, or another version; empty when it is the same (or the study recorded neither)."""
    given = study_calibration(dataclasses.replace(spec, recorded=""))
    where = spec.calibration or "the packaged calibration"
    was = _recorded_calibration(str(attrs.get(CONTENTS_KEY, "")))
    if was is not None and spec.calibration:
        now = read_named(Path(spec.calibration), None).digest
        if now != was["sha256"]:
            return (f"{where}: the study was scored with {was['path']} (sha256 "
                    f"{was['sha256'][:12]}), which this file is not (sha256 {now[:12]}): rerun "
                    "the study with it to see its front under this calibration")
        return ""
    scored = attrs.get(CALIBRATION_VERSION_KEY)
    if scored is not None and scored != given.version:
        return (f"{where}: the study was scored with calibration {scored}, this is "
                f"{given.version}: rerun the study with it to see its front under this calibration")
    return ""


def with_calibration(spec: StudySpec, calibration: str) -> StudySpec:
    """``spec`` scored with the calibration file ``calibration`` instead of its own
    (``--calibration``; empty: unchanged), validated."""
    if not calibration:
        return spec
    return _checked(dataclasses.replace(spec, calibration=calibration), "--calibration", study_calibration)


def resolved(spec: StudySpec, value: str, kind: FileKind) -> str:
    """Where a name or path the study file gives (``workload``, ``space``, ``objectives``)
    resolves: the one rule for every file a study names, in every command and check. Beside the
    study file (a relative path from its folder; a name in its folder's or its project's kind
    folder), then the packaged presets (:func:`dse.records.named_beside`), never the working
    directory. A spec built in code (no file) looks a name up as the command line does."""
    return str(named_beside(value, kind, Path(spec.file) if spec.file else None))


BATCH_PARAMS = ("workload.global_batch", *(WORKLOAD_PREFIX + k for k in PER_DEVICE_FIELDS
                                           if PER_DEVICE_FIELDS[k][0] == "global_batch"))
"""The space parameters that set the global batch."""


def searched_batch(parameters: Container[str]) -> str:
    """Of a space's ``parameters`` (names), the one that sets the global batch (empty when the
    space keeps the workload's)."""
    return next((p for p in BATCH_PARAMS if p in parameters), "")


def batch_without_curve(spec: StudySpec) -> str:
    """One line when ``spec`` searches the batch but its workload has no convergence curve:
    then time to train holds the samples fixed whatever the batch, so the largest batch always
    trains fastest; empty otherwise (no batch searched, or a curve charges a larger batch its
    extra samples)."""
    param = searched_batch(study_space(spec).parameters)
    wl = study_workload(spec)
    if not param or wl.curve() is not None:
        return ""
    held = (f"one epoch ({wl.samples_per_epoch:,} samples)" if wl.samples_per_epoch
            else "nothing (no samples_per_epoch: no time to train)")
    return (f"{param} is searched, but workload {wl.name} has no convergence curve: time to train "
            f"holds the samples to train at {held} whatever the batch, so a larger batch is never "
            "charged the samples it needs to converge and the search favours the largest (give "
            "the workload a [convergence_curve], samples to its target by batch)")


def study_files(spec: StudySpec) -> dict[str, str]:
    """Where the files of a study were when it ran (recorded as ``dse:files``): absolute paths of
    the study and of every file it names, or the preset name of a built-in one."""
    def where(value: str, kind: FileKind) -> str:
        try:
            path = Path(resolved(spec, value, kind))
        except DseInputError:
            return value
        return value if kind.is_builtin(path) else str(path.resolve())

    files = {"study": str(Path(spec.file).resolve()) if spec.file else spec.name,
             "workload": where(spec.workload, WORKLOAD), "space": where(spec.space, SPACE),
             "objectives": where(spec.objectives, OBJECTIVES)}
    if spec.catalog:
        files["catalog"] = str(Path(spec.catalog).resolve())
    if spec.calibration:
        files[CALIBRATION_LABEL] = str(Path(spec.calibration).resolve())
    return files


def as_recorded(spec: StudySpec, attrs: dict[str, Any]) -> StudySpec:
    """``spec`` reading the systems its stored study recorded (the study's user attributes
    ``attrs``): a report or a front rebuilt from another folder, or after a system file was
    edited, shows the machines the trials were scored on."""
    return dataclasses.replace(spec, recorded=str(attrs.get(CONTENTS_KEY, "")))


def with_catalog(spec: StudySpec, catalog: str) -> StudySpec:
    """``spec`` priced with the user catalog file ``catalog`` instead of its own (``--catalog``;
    empty: unchanged), validated."""
    if not catalog:
        return spec
    return _checked(dataclasses.replace(spec, catalog=catalog), "--catalog", study_catalog)


def _checked(spec: StudySpec, flag: str, load: Callable[[StudySpec], object]) -> StudySpec:
    """``spec`` once ``load`` has read the file ``flag`` gave it: a bad file fails here, in one
    line naming the flag."""
    try:
        load(spec)
    except DseInputError as exc:
        raise DseInputError(flag, "", str(exc)) from None
    return spec
