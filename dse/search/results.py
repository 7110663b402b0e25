"""Reading stored studies: status, the Pareto front and every trial as pandas tables.

The outputs (report, case studies) read studies through this module: ``Study``, ``FrozenTrial`` and
``TrialState`` are Optuna's, named here so that only the search layer imports Optuna and an Optuna
upgrade is met in one layer."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import optuna
from optuna import Study
from optuna.storages import BaseStorage
from optuna.trial import FrozenTrial, TrialState

from dse.errors import DseInputError
from dse.records import OBJECTIVES
from dse.search.algorithms.dedup import DUPLICATE_KEY, design_key, group_by_design, trial_numbers
from dse.search.algorithms.pareto import hypervolume, is_feasible, pareto_trials
from dse.search.algorithms.reference import convergence
from dse.search.storage.journal_snapshot import read_journal, read_snapshot
from dse.search.storage.journal_writing import check_journal_file
from dse.search.storage.opening import (
    default_storage_path,
    journal_file,
    open_storage,
    storage_file,
    study_exists,
)
from dse.search.storage.recovery import BASELINE_KEY
from dse.search.study.attribute_keys import (
    BUDGET_KEY,
    CALIBRATION_VERSION_KEY,
    FILES_KEY,
    MODEL_KEY,
    OBJECTIVES_KEY,
    PRESCREEN_KEY,
    RETRY_KEY,
    VERSION_KEY,
)
from dse.search.study.objective_sets import ObjectiveSet, load_objectives, objectives_from_mapping
from dse.search.study.study_file import StudySpec, resolved, study_objectives

if TYPE_CHECKING:
    import pandas as pd


def load_stored_study(spec: StudySpec, storage_url: str | None = None) -> Study:
    """The stored study of ``spec`` to read (not to run), or a clear error when it has never been
    run there.

    A journal is read in one pass into a read-only snapshot (:mod:`dse.search.storage.journal_snapshot`: the
    same trials, several times faster), never written to: damage before its tail is reported as
    :func:`open_storage` reports it, a damaged tail left out (:func:`dse.search.storage.journal_snapshot.
    read_journal`). Every other storage is opened by :func:`open_storage`."""
    where = storage_url or spec.storage or str(default_storage_path(spec))
    missing = DseInputError(spec.name, "", f"no stored study in {where} (run the study first)")
    journal = journal_file(storage_url, spec)
    if journal is not None:
        check_journal_file(journal)  # a link loop or /dev/null is named, not "no stored study"
    path = storage_file(storage_url, spec)
    if path is not None and not path.exists():
        raise missing  # opening it would create an empty file
    storage: BaseStorage
    if journal is not None:
        try:
            storage = read_journal(journal, spec.name)
        except OSError as exc:
            raise DseInputError(str(exc.filename or journal), "", f"cannot read the journal: "
                                f"{exc.strerror or exc}") from None
    else:
        storage = open_storage(storage_url, spec)
    if not study_exists(storage, spec.name):
        raise missing
    return optuna.load_study(study_name=spec.name, storage=storage)


def refresh_snapshot(spec: StudySpec, storage_url: str | None = None) -> None:
    """Bring the snapshot cache of a journal study up to date (``dse run`` does it as it ends), so
    that the read-only commands after a run read only what later runs add: the first ``dse
    status`` of a 3,000-trial study otherwise replays its 25 MB journal (about 1 s more). A
    journal that cannot be read is left to the commands that read it, which say why."""
    journal = journal_file(storage_url, spec)
    if journal is None:
        return
    try:
        read_snapshot(journal)
    except OSError:
        return


def status(study: Study) -> dict[str, Any]:
    """Progress, failures and the best designs of a study (``dse status --json``)."""
    trials = study.get_trials(deepcopy=False)
    counts = {state: 0 for state in TrialState}
    for t in trials:
        counts[t.state] += 1
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    feasible = [t for t in complete if is_feasible(t)]
    front = _with_repeats(group_by_design(pareto_trials(study, feasible)), trials)
    conv = convergence(study, feasible, len(complete))
    attrs = study.user_attrs
    objectives = json.loads(attrs.get(OBJECTIVES_KEY, "{}"))
    return {
        "study": study.study_name,
        "budget": attrs.get(BUDGET_KEY),
        "complete": counts[TrialState.COMPLETE],
        "running": counts[TrialState.RUNNING],
        "failed": counts[TrialState.FAIL],
        "pruned": counts[TrialState.PRUNED],
        "waiting": counts[TrialState.WAITING],
        "retried": sum(1 for t in trials if RETRY_KEY in t.user_attrs),
        "feasible": len(feasible),
        "front_size": len(front),
        "distinct_designs": len(group_by_design(complete)),
        "repeats_pruned": sum(1 for t in trials if DUPLICATE_KEY in t.user_attrs),
        "hypervolume": conv.hypervolume,
        "hypervolume_reference": conv.reference,
        "hypervolume_gained": conv.gained,
        "hypervolume_window": conv.window,
        "front_moving": conv.moving,
        "prescreen": attrs.get(PRESCREEN_KEY),
        "hypervolume_own_range": hypervolume(study, feasible),
        "objectives": objectives.get("objectives", []),
        "dse_version": attrs.get(VERSION_KEY),
        "calibration_version": attrs.get(CALIBRATION_VERSION_KEY),
        "model": attrs.get(MODEL_KEY),
        "running_trials": [t.number for t in trials if t.state == TrialState.RUNNING],
        "failed_trials": [t.number for t in trials if t.state == TrialState.FAIL],
        "front": [{**_row(g[0]), "trials": trial_numbers(g), "equivalents": equivalents(g)}
                  for g in front[:10]],
    }


def equivalents(group: list[FrozenTrial]) -> int:
    """How many designs as drawn one design's trials stand for (at least 1): those that differ
    only in settings the model finds inert (:func:`dse.search.study.encoding.canonical_design`)
    were scored once and their repeats pruned, so the row is shown once with this count."""
    return max(1, len({design_key(t.params) for t in group if t.params}))


def _with_repeats(groups: list[list[FrozenTrial]], trials: list[FrozenTrial]) -> list[list[FrozenTrial]]:
    """Each design's group with the pruned trials that repeated it (``duplicate_of``) added."""
    repeats: dict[int, list[FrozenTrial]] = {}
    for t in trials:
        earlier = t.user_attrs.get(DUPLICATE_KEY)
        if t.state == TrialState.PRUNED and isinstance(earlier, int):
            repeats.setdefault(earlier, []).append(t)
    return [[*g, *(r for t in g for r in repeats.get(t.number, []))] for g in groups]


def _row(t: FrozenTrial) -> dict[str, Any]:
    out: dict[str, Any] = {"number": t.number, "baseline": t.user_attrs.get(BASELINE_KEY, "")}
    out.update({f"param:{k}": v for k, v in (t.user_attrs.get("design") or {}).items()})
    for key, value in t.user_attrs.items():
        if key in ("design", "breakdown_s", "infeasible_reasons", BASELINE_KEY, RETRY_KEY):
            continue
        out[key] = value
    for stage, seconds in (t.user_attrs.get("breakdown_s") or {}).items():
        out[f"breakdown_s:{stage}"] = seconds
    return out


def trials_frame(study: Study, only_front: bool = False, distinct: bool = True) -> pd.DataFrame:
    """Every trial (or the front) with its state, design parameters (``param:`` columns),
    metrics, step breakdown (``breakdown_s:`` columns) and constraint values.

    ``distinct``: each completed design once, on the row of its first trial, with the numbers of
    every trial that holds it (``trials``, e.g. ``"12, 40, 77"``: repeats evaluated by racing
    workers or by studies made before repeats were pruned, and the pruned repeats); the other
    trials (running, failed, pruned for another reason) keep a row each."""
    import pandas as pd  # half a second of import: only the commands that make tables pay it

    frame = pd.DataFrame(_rows(study, only_front, distinct))
    if not frame.empty:
        frame = frame.set_index("number").sort_index()
    return frame


def trial_rows(study: Study, only_front: bool = False, distinct: bool = True) -> list[dict[str, Any]]:
    """The records of :func:`trials_frame` without pandas: ``trials_frame(...).reset_index()
    .to_dict(orient="records")``, value for value and type for type (a column holding a missing
    value or a float holds floats, a missing value is NaN, a text column's missing value NaN), for
    the commands that only print a table (``dse pareto``: pandas alone costs them half a second)."""
    rows = _rows(study, only_front, distinct)
    columns = list(dict.fromkeys(k for row in rows for k in row))
    typed = {c: _column_like_pandas(rows, c) for c in columns if c != "number"}
    order = sorted(range(len(rows)), key=lambda k: rows[k]["number"])
    return [{"number": rows[k]["number"], **{c: typed[c][k] for c in columns if c != "number"}}
            for k in order]


def _column_like_pandas(rows: list[dict[str, Any]], column: str) -> list[Any]:
    """Column ``column`` of ``rows`` as ``pd.DataFrame(rows)`` types it and ``to_dict`` gives it
    back: whole numbers stay int only with none missing, numbers with a missing value or a float
    are floats (missing: NaN); text with missing values is a string column (missing: NaN); bools
    stay bools (missing: NaN, None kept); all None stays None; anything else as it is."""
    nan = math.nan
    marker = object()
    values = [row.get(column, marker) for row in rows]
    present = [v for v in values if v is not marker]
    missing = len(present) < len(values)
    nulls = [v for v in present if v is None]
    real = [v for v in present if v is not None]

    def number(v: Any) -> bool:
        return isinstance(v, int | float) and not isinstance(v, bool)

    if not real:
        return [None] * len(values) if not missing else [nan] * len(values)
    if all(number(v) for v in real):
        if all(isinstance(v, int) for v in real) and not missing and not nulls:
            return values
        return [nan if v is marker or v is None else float(v) for v in values]
    if all(isinstance(v, str) for v in real):
        return [nan if v is marker or v is None else v for v in values]
    return [nan if v is marker else v for v in values]


def _rows(study: Study, only_front: bool, distinct: bool) -> list[dict[str, Any]]:
    """The rows of :func:`trials_frame`, one dict per row, in trial order of their groups."""
    everything = study.get_trials(deepcopy=False)
    trials = pareto_trials(study) if only_front else everything
    groups: list[list[FrozenTrial]]
    if distinct:
        complete = [t for t in trials if t.state == TrialState.COMPLETE]
        groups = _with_repeats(group_by_design(complete), everything)
        folded = {t.number for g in groups for t in g}
        groups += [[t] for t in trials if t.number not in folded
                   and not (only_front or (DUPLICATE_KEY in t.user_attrs and t.state == TrialState.PRUNED))]
    else:
        groups = [[t] for t in trials]
    rows = []
    for group in groups:
        t = group[0]
        done = t.state == TrialState.COMPLETE
        row: dict[str, Any] = {"state": t.state.name, "feasible": is_feasible(t) if done else None}
        row.update(_row(t))
        row.update({f"constraint:{k}": v for k, v in t.constraints.items()})
        row["retry_of"] = t.user_attrs.get(RETRY_KEY)
        row["reasons"] = "; ".join(t.user_attrs.get("infeasible_reasons") or [])
        if distinct:
            row["trials"] = trial_numbers(group)
            row["equivalents"] = equivalents(group)
        rows.append(row)
    return rows


def objective_set_of(study: Study, spec: StudySpec) -> ObjectiveSet:
    """The objective set the study was made with, wherever its file lives now.

    Tried in order: the file recorded in ``dse:files`` (a study made from the user's own files),
    the study file's ``objectives`` (resolved beside it, :func:`resolved`), the packaged preset of
    the recorded set's name; when none of them loads the set the study recorded, the recorded set
    itself (without its description). Never a file of the working directory."""
    attrs = study.user_attrs
    recorded: dict[str, Any] = json.loads(attrs.get(OBJECTIVES_KEY, "{}"))
    files: dict[str, str] = json.loads(attrs.get(FILES_KEY, "{}"))
    def packaged(name: str) -> str:
        """A recorded file (an absolute path), or the packaged preset a recorded name is."""
        if not name or name.endswith(".toml"):
            return name
        path = OBJECTIVES.preset(name)
        return str(path) if path is not None else ""

    candidates: list[Callable[[], str]] = [
        lambda: packaged(files.get("objectives", "")),
        lambda: resolved(spec, spec.objectives, OBJECTIVES),
        lambda: packaged(str(recorded.get("name", "")))]
    for candidate in candidates:
        try:
            path = candidate()
            found = load_objectives(path) if path else None
        except DseInputError:
            continue
        if found is not None and (not recorded or found.to_dict() == recorded):
            return found
    if not recorded:
        return study_objectives(spec)  # raises the one-line error naming it
    return objectives_from_mapping(recorded, f"study {study.study_name}")


__all__ = [
    "FrozenTrial", "Study", "TrialState", "load_stored_study", "objective_set_of", "status", "trial_rows",
    "trials_frame",
]
