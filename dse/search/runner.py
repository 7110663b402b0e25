"""Running a study: create or resume it, work until its budget, report progress.

:func:`run_study` creates or resumes the study of a :class:`~dse.search.study.study_file.StudySpec` and works
until the budget of *completed* trials is reached, so running it twice never doubles the work. A
new study records its definition, the model's fingerprint (:func:`model_fingerprint`) and the
versions that scored it, and is seeded with the baseline systems its space can express
(:func:`enqueue_baselines`). Several workers (processes, hosts) share one study through its storage
and stop together at the budget (:func:`dse.search.trial_objective.over_budget`, and :func:`_optimize`
waits for trials running elsewhere rather than stopping one short); dead workers' trials are
retried (:mod:`dse.search.storage.recovery`).
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import logging
import os
import socket
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import optuna
from optuna.exceptions import DuplicatedStudyError
from optuna.storages import BaseStorage
from optuna.trial import FrozenTrial, TrialState

from dse import __version__
from dse.errors import DseInputError
from dse.model.catalog import Catalog
from dse.model.parameters import Calibration
from dse.model.workload import Workload
from dse.search import _optuna
from dse.search.algorithms.dedup import DesignIndex, group_by_design, shared_index
from dse.search.algorithms.pareto import is_feasible, pareto_trials
from dse.search.algorithms.prescreen import REFINE_SHARE
from dse.search.algorithms.reference import OWN_RANGE, REFERENCE_MIN_BUDGET, convergence
from dse.search.algorithms.refine import seed_new_study
from dse.search.algorithms.samplers import make_sampler, worker_seed
from dse.search.broken_rules import RuleWatch
from dse.search.fingerprint import MODEL_DATA as MODEL_DATA  # re-exported: first defined here
from dse.search.fingerprint import model_fingerprint
from dse.search.fingerprint import model_sources as model_sources
from dse.search.storage.failures import ReconnectGaveUp, ServerRestarting, storage_failure, storage_lost
from dse.search.storage.opening import open_storage, state_counts, storage_file
from dse.search.storage.recovery import (
    BASELINE_KEY,
    WorkerLock,
    heartbeat_enabled,
    recover,
    recover_stale_trials,
    taken_by_another,
)
from dse.search.storage.servers import RECONNECT_FIRST_S, RECONNECT_MAX_WAIT_S, reconnect_window, redact
from dse.search.study.attribute_keys import (
    BUDGET_KEY,
    CALIBRATION_VERSION_KEY,
    CATALOG_KEY,
    CHANGES_KEY,
    CONTENTS_KEY,
    CREATOR_KEY,
    FILES_KEY,
    KEY_PREFIX,
    MODEL_KEY,
    OBJECTIVES_KEY,
    SPACE_KEY,
    STUDY_KEY,
    VERSION_KEY,
    WORKLOAD_KEY,
)
from dse.search.study.contents import (
    contents_json,
    moved_key,
    moved_message,
    moved_systems,
    study_contents,
    where_from,
)
from dse.search.study.encoding import encode_design, grid_designs, grid_of
from dse.search.study.objective_sets import ObjectiveSet, loss_sign
from dse.search.study.search_space import SearchSpace, preset_params
from dse.search.study.seeding import WarmStart, warm_start_trials
from dse.search.study.study_file import (
    StudySpec,
    study_calibration,
    study_catalog,
    study_files,
    study_objectives,
    study_space,
    study_workload,
)
from dse.search.trial_objective import DesignObjective

T = TypeVar("T")

RECOVER_EVERY_S = 2.0
"""How often a worker looks for dead workers' trials while it works (and every second while it
waits for the last trials of the study), so a trial a dead worker left is retried by the others
before they stop."""
WAIT_POLL_S = 0.2
OPEN_WAIT_S = 15.0
"""How long a process that finds a study being created by another waits for it to be ready,
beyond the creator's pre-screen (:func:`open_wait_s`)."""
CREATION_WALL_FACTOR = 3.0
"""Wall seconds per CPU second of a creator's pre-screen and refinement that a joining process
allows for (the creator may share its cores: on this 2-core machine shared by 7 users a
pre-screen's wall time was twice its CPU time, at a load average of 17 fifteen times), before it
takes the creator for dead and creates the study itself. A creator on the same host that is alive
is waited for this long too; one known dead is not waited for."""
PROGRESS_EVERY_S = 0.5
"""The shortest interval between two progress updates of a worker."""
PROGRESS_SHARE = 0.02
"""The largest share of a worker's time its progress updates take: an update that took ``t``
seconds (the front, the hypervolume, the display) is followed by none for ``t / PROGRESS_SHARE``
seconds, so the figure of a study of many thousand trials is recomputed less often rather than
costing more per trial (under 10 ms, as up to 5,000 trials, the half second holds)."""

log = logging.getLogger("dse")
STOP = threading.Event()
"""Set (by a SIGTERM handler, say) to stop this process's workers after their running trials."""


def _describe(spec: StudySpec) -> dict[str, str]:
    """What a study is made of, compared on resume (a change is refused unless forced)."""
    wl = study_workload(spec)
    # Only a study with a user catalog records it, so studies made before catalogs existed resume;
    # its changes are recorded by file name, so the study resumes from any working directory.
    changes = [{**dataclasses.asdict(c), "source": Path(c.source).name}
               for c in study_catalog(spec).changes]
    catalog = {CATALOG_KEY: json.dumps(changes)} if spec.catalog else {}
    return {
        WORKLOAD_KEY: json.dumps({"name": spec.workload, "overrides": spec.workload_overrides,
                                    **({"table_scale": spec.table_scale} if spec.table_scale != 1.0
                                       else {}),
                                    **_own_curve(wl), **wl.summary()}, sort_keys=True),
        SPACE_KEY: json.dumps(study_space(spec).to_dict(), sort_keys=True),
        OBJECTIVES_KEY: json.dumps(study_objectives(spec).to_dict(), sort_keys=True),
        **catalog,
    }


def _own_curve(wl: Workload) -> dict[str, Any]:
    """A workload's own convergence curve as a study records it (only a workload with one: the
    studies made before workloads could carry one resume), so a changed curve is a changed
    definition."""
    curve = wl.convergence_curve
    if curve is None:
        return {}
    return {"convergence_curve": {"source": curve.reference, "samples_per_epoch": curve.samples_per_epoch,
                                  "points": [[p.global_batch, list(p.epochs_to_converge)]
                                             for p in curve.points]}}


def open_study(spec: StudySpec, storage: BaseStorage, force: bool = False,
               create: bool = True, where: str = "", worker: str = "",
               storage_path: Path | None = None,
               warm_start: WarmStart = WarmStart.AUTO,
               on_sweep: Callable[[int, int], None] | None = None) -> optuna.Study:
    """Create the study, or load it and check it was made with the same workload, space and
    objectives (refused unless ``force``, which records the change in ``dse:changes``).

    ``create=False`` (a worker joining a study) refuses a study that does not exist (``where``
    names the storage in the message). Several processes may open a new study at once: the one
    whose ``create_study`` succeeds records it and enqueues the baselines, then writes
    ``dse:budget`` last; the others wait for that before they work. ``storage_path`` (the
    storage's local file, if any) lets them tell a creator killed before it recorded itself:
    every process opening the study holds the file's workers lock shared meanwhile
    (:class:`~dse.search.storage.recovery.WorkerLock`), so one that finds the lock free of others knows
    the creator is dead and completes the creation at once.

    ``warm_start``: ``auto`` (a new study of the default sampler is seeded from the front of a
    coarse-to-fine sweep, :func:`dse.search.algorithms.refine.seed_new_study`, when
    :func:`dse.search.algorithms.sweep.sweep_allowed`), ``none`` (not seeded; the sweep still fixes the
    hypervolume reference) or ``sweep`` (a new study of any sampler is seeded from that front with
    up to a fifth of its budget; where the space is too large for that sweep, the caller seeds it
    from a coarse sweep, :func:`dse.search.algorithms.sweep.warm_start_study`). ``on_sweep(done, total)``:
    that sweep's progress in designs (it runs before the first trial, for seconds).
    """
    with WorkerLock(storage_path) as lock:
        lock.share()
        return _open_study(spec, storage, force, create, where, worker, lock, warm_start, on_sweep)


def _open_study(spec: StudySpec, storage: BaseStorage, force: bool, create: bool, where: str,
                worker: str, lock: WorkerLock, warm_start: WarmStart,
                on_sweep: Callable[[int, int], None] | None = None) -> optuna.Study:
    """:func:`open_study` under the workers lock: create the study, or load it, wait for its
    creator to record it and check it against ``spec`` (:func:`_resume`)."""
    objectives = study_objectives(spec)
    seed = worker_seed(spec.seed, worker)
    sampler = make_sampler(spec.sampler, seed, grid_of(study_space(spec)), spec.name,
                           space=study_space(spec))
    if create:
        try:
            study = optuna.create_study(storage=storage, study_name=spec.name, sampler=sampler,
                                        directions=objectives.directions)
            _record_new(study, spec, warm_start, on_sweep)
            return study
        except DuplicatedStudyError:
            pass
    try:
        study = optuna.load_study(study_name=spec.name, storage=storage, sampler=sampler)
    except KeyError:
        raise DseInputError(spec.name, "", f"no such study in {where or 'the storage'}; create "
                            f"it first with dse run {spec.name} --storage URL --trials 0") from None
    attrs = _wait_until_recorded(study, lock, open_wait_s(spec))
    done = len(study.get_trials(deepcopy=False))
    if done and spec.seed is not None:
        # A resumed sampler seeded as at the start would replay its first draws (designs the
        # study already holds): seed it from the study's seed, the worker and the trial count.
        study.sampler = make_sampler(spec.sampler, worker_seed(spec.seed, f"{worker}/resume-{done}"),
                                     grid_of(study_space(spec)), spec.name, space=study_space(spec))
    described = _describe(spec)
    if BUDGET_KEY not in attrs:  # made by plain Optuna, or its creator died while recording it
        _record_new(study, spec, warm_start, on_sweep)
    else:
        _resume(study, spec, attrs, described, force)
    return study


def _resume(study: optuna.Study, spec: StudySpec, attrs: dict[str, Any], described: dict[str, str],
            force: bool) -> None:
    """Check a recorded study (its user attributes ``attrs``) against ``spec`` (``described``:
    :func:`_describe`): other directions are refused, another workload, space, objectives or
    catalog and systems whose files moved unless ``force``; what changed, and a new model,
    calibration or dse version, is recorded in ``dse:changes`` with the trial it starts from."""
    objectives = study_objectives(spec)
    changed = [k.removeprefix(KEY_PREFIX) for k, v in described.items() if attrs.get(k) != v]
    directions = [optuna.study.StudyDirection.MAXIMIZE if loss_sign(d) < 0
                  else optuna.study.StudyDirection.MINIMIZE for d in objectives.directions]
    if list(study.directions) != directions:
        # Optuna cannot change a study's directions: forced, every value would be read the wrong
        # way round (or every trial would fail on a count mismatch).
        raise DseInputError(spec.name, "objectives",
                            f"directions {[d.name.lower() for d in directions]} differ from the "
                            f"stored study's {[d.name.lower() for d in study.directions]}, which "
                            "cannot change (not even with --force): start a new study (another "
                            "name or storage)")
    contents = study_contents(spec)
    if changed and not force:
        raise DseInputError(spec.name, ", ".join(changed),
                            "differs from what the stored study was created with"
                            f"{where_from(attrs.get(CONTENTS_KEY), contents, changed)}; "
                            "rerun with --force to continue anyway (the change is recorded)")
    systems_moved = moved_systems(attrs.get(CONTENTS_KEY), contents)
    if systems_moved and not force:
        raise DseInputError(spec.name, moved_key(systems_moved), moved_message(systems_moved))
    log = list(attrs.get(CHANGES_KEY, []))
    now = datetime.now(UTC).isoformat()
    if changed:
        log.append({"at": now, "changed": changed, **described})
        for key, value in described.items():
            study.set_user_attr(key, value)
    if systems_moved:
        log.append({"at": now, "changed": list(systems_moved),
                    "from_trial": len(study.get_trials(deepcopy=False)), **systems_moved})
    recorded = contents_json(contents)
    if attrs.get(CONTENTS_KEY) != recorded:  # forced, a comment edited, or recorded before contents
        study.set_user_attr(CONTENTS_KEY, recorded)
    _record_versions(study, attrs, log, now, study_calibration(spec))
    _record_rest(study, spec, attrs, objectives)


def _record_versions(study: optuna.Study, attrs: dict[str, Any], log: list[dict[str, Any]],
                     now: str, calibration: Calibration) -> None:
    """A new model (its code or data), calibration (``calibration``, the study's) or dse version
    is not refused, but recorded: trials after this point were scored by it. ``log``
    (``dse:changes`` so far, this resume's entries included) is written when it grew."""
    versions = {CALIBRATION_VERSION_KEY: calibration.version, VERSION_KEY: __version__,
                MODEL_KEY: model_fingerprint()}
    moved = {k: {"from": attrs.get(k), "to": v} for k, v in versions.items() if attrs.get(k) != v}
    if moved:
        log.append({"at": now, "changed": [k.removeprefix(KEY_PREFIX) for k in moved],
                    "from_trial": len(study.get_trials(deepcopy=False)), **moved})
        for key, value in versions.items():
            study.set_user_attr(key, value)
    if len(log) > len(attrs.get(CHANGES_KEY, [])):
        study.set_user_attr(CHANGES_KEY, log)


def _record_rest(study: optuna.Study, spec: StudySpec, attrs: dict[str, Any],
                 objectives: ObjectiveSet) -> None:
    """On resume: the files a study was made from where they are now, its metrics named as its
    ``objectives``' (created before dse named them, or its objectives forced), and its budget."""
    files = json.dumps(study_files(spec), sort_keys=True)
    if attrs.get(FILES_KEY) != files:  # the files moved, or the study predates the record
        study.set_user_attr(FILES_KEY, files)
    if study.metric_names != [o.metric for o in objectives.objectives]:
        name_metrics(study, spec)
    study.set_user_attr(BUDGET_KEY, spec.budget)


def name_metrics(study: optuna.Study, spec: StudySpec) -> None:
    """Name the study's values by their objectives' metrics (``throughput_samples_per_s``, ...),
    so Optuna's own tools (optuna-dashboard, ``plot_pareto_front``) show them instead of
    "Objective 0", "Objective 1"."""
    with warnings.catch_warnings():
        # Experimental since Optuna 3.2 and unchanged since; the warning would reach every run.
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names([o.metric for o in study_objectives(spec).objectives])


def _record_new(study: optuna.Study, spec: StudySpec, warm_start: WarmStart = WarmStart.AUTO,
                on_sweep: Callable[[int, int], None] | None = None) -> None:
    """Record a new study's definition and enqueue its baselines; ``dse:budget`` comes last and
    tells other processes the study is ready. Also completes a recording its creator did not
    finish (killed at any step): baselines already enqueued are not enqueued again."""
    _optuna.study_storage(study).set_study_system_attr(
        _optuna.study_id_of(study), CREATOR_KEY, _this_process())
    for key, value in _describe(spec).items():
        study.set_user_attr(key, value)
    study.set_user_attr(VERSION_KEY, __version__)
    study.set_user_attr(CALIBRATION_VERSION_KEY, study_calibration(spec).version)
    study.set_user_attr(MODEL_KEY, model_fingerprint())
    study.set_user_attr(STUDY_KEY, json.dumps(_spec_dict(spec), sort_keys=True))
    study.set_user_attr(FILES_KEY, json.dumps(study_files(spec), sort_keys=True))
    study.set_user_attr(CONTENTS_KEY, contents_json(study_contents(spec)))
    name_metrics(study, spec)
    if spec.sampler != "grid":  # the grid holds every design; an enqueued one would repeat
        enqueue_baselines(study, study_space(spec), study_catalog(spec).catalog)
        # `--warm-start sweep` seeds any sampler, with up to a fifth of the budget.
        asked = warm_start == WarmStart.SWEEP
        default = spec.sampler == "auto" and warm_start == WarmStart.AUTO
        seed_new_study(study, study_space(spec), study_workload(spec), study_objectives(spec),
                       spec.budget, warm=asked or default, catalog=study_catalog(spec).catalog,
                       max_trials=warm_start_trials(spec.budget) if asked else None,
                       on_progress=on_sweep, prescreen_s=spec.prescreen_s,
                       seed=0 if spec.seed is None else spec.seed,
                       calibration=study_calibration(spec))
    study.set_user_attr(BUDGET_KEY, spec.budget)


def _this_process() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _creator_gone(study: optuna.Study, lock: WorkerLock) -> bool:
    """Whether the process recording this study is known to be dead: it ran on this host and its
    pid is gone, or it has not recorded itself (killed right after ``create_study``) and no other
    process holds the study file's workers lock (every creator holds it while creating)."""
    creator = str(_optuna.study_storage(study).get_study_system_attrs(
        _optuna.study_id_of(study)).get(CREATOR_KEY, ""))
    if not creator:
        return lock.alone()
    host, _, pid = creator.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def open_wait_s(spec: StudySpec) -> float:
    """How long a process joining the new study of ``spec`` waits for its creator:
    :data:`OPEN_WAIT_S`, and for a study that may be pre-screened (a budget of at least
    :data:`~dse.search.algorithms.reference.REFERENCE_MIN_BUDGET`, not a grid) its pre-screen and the
    refinement after it (:data:`~dse.search.algorithms.prescreen.REFINE_SHARE` times as long) at
    :data:`CREATION_WALL_FACTOR` wall seconds per CPU second; so ``dse worker`` started beside
    ``dse run`` shares the pre-screen instead of repeating it."""
    if spec.budget < REFERENCE_MIN_BUDGET or spec.sampler == "grid":
        return OPEN_WAIT_S
    return OPEN_WAIT_S + CREATION_WALL_FACTOR * (1.0 + REFINE_SHARE) * spec.prescreen_s


def _wait_until_recorded(study: optuna.Study, lock: WorkerLock, wait_s: float) -> dict[str, Any]:
    """The study's user attributes once its creator has recorded it (``dse:budget`` set), at once
    when the creator is known dead (:func:`_creator_gone`), or as they are after ``wait_s``
    seconds (announced on the log: a creator on another host may be alive)."""
    deadline = time.monotonic() + wait_s
    announced = False
    while True:
        attrs: dict[str, Any] = study.user_attrs
        if BUDGET_KEY in attrs or time.monotonic() > deadline or _creator_gone(study, lock):
            return attrs
        if not announced:
            log.warning("dse: study %s is being created by another process; waiting up to %g s "
                        "for it (then this process completes the creation)",
                        study.study_name, wait_s)
            announced = True
        time.sleep(0.1)


def _spec_dict(spec: StudySpec) -> dict[str, Any]:
    return {"name": spec.name, "workload": spec.workload, "space": spec.space,
            "objectives": spec.objectives, "sampler": spec.sampler, "budget": spec.budget,
            "seed": spec.seed, "workload_overrides": spec.workload_overrides,
            "table_scale": spec.table_scale, "prescreen_s": spec.prescreen_s,
            **({"catalog": spec.catalog} if spec.catalog else {}),
            **({"calibration": spec.calibration} if spec.calibration else {})}


def enqueue_baselines(study: optuna.Study, space: SearchSpace,
                      catalog: Catalog | None = None) -> list[str]:
    """Enqueue the system presets the space can express (but not those already in the study),
    so every front is compared with real machines; returns their names. ``catalog``: the study's
    (a space whose base system uses a part only its user catalog defines resolves against it)."""
    baselines = preset_params(space, catalog)
    present = {t.user_attrs.get(BASELINE_KEY) for t in study.get_trials(deepcopy=False)}
    for name, design in baselines.items():
        if name in present:
            continue
        study.enqueue_trial(encode_design(space, design), user_attrs={BASELINE_KEY: name})
    return list(baselines)


def completed(study: optuna.Study) -> int:
    """Number of completed trials."""
    return len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))


@dataclass
class Progress:
    """What a progress display shows after each trial."""

    complete: int
    budget: int
    feasible: int
    front: int
    """Distinct designs on the feasible front."""
    hypervolume: float
    """Against the study's fixed reference (``reference`` says which; see
    :mod:`dse.search.algorithms.reference`)."""
    reference: str = OWN_RANGE
    gained: float = 0.0
    """Hypervolume gained over the last ``window`` completed trials."""
    window: int = 0
    moving: bool = False
    """The front is still moving (``gained`` above :data:`dse.search.algorithms.reference.MOVING_GAIN`)."""


def target_of(spec: StudySpec, study: optuna.Study, trials: int | None) -> int:
    """The number of completed trials to work until: the budget, or ``trials`` more than now
    (never past the budget); a grid study stops when its grid is covered."""
    budget = spec.budget
    grid = grid_of(study_space(spec)) if spec.sampler == "grid" else None
    if grid is not None:
        budget = min(budget, grid_designs(study_space(spec), grid))
    return budget if trials is None else min(budget, completed(study) + trials)


def run_study(
    spec: StudySpec,
    storage_url: str | None = None,
    force: bool = False,
    trials: int | None = None,
    on_trial: Callable[[Progress], None] | None = None,
    until: int | None = None,
    max_trials: int | None = None,
    create: bool = True,
    worker: str = "",
) -> optuna.Study:
    """Create or resume ``spec`` and work until its budget (or ``trials`` more) is complete.

    One worker per call; start several processes with the same storage to work in parallel, and
    give them one absolute target ``until`` (:func:`target_of`), computed once before they start:
    ``trials`` counted by each worker from its own start would overshoot. ``max_trials`` caps
    the trials this worker completes itself; ``create=False`` joins an existing study only.
    ``worker`` names this worker among the study's others (empty for the first): its sampler
    seed is drawn from it (:func:`~dse.search.algorithms.samplers.worker_seed`).
    The worker stops when the target is complete, not merely started: while the last trials run
    elsewhere it waits, and retries any that a dead worker leaves (:func:`recover`). A database
    server or storage proxy that goes away mid-run (a restart) is reached again
    (:func:`_reconnect`), also while the study is being opened (the server answered, then
    restarted) and, for a worker joining (``create=False``), when its first connection meets a
    restart under way (:class:`~dse.search.storage.failures.ServerRestarting`); one that is down at the
    start (refused) fails at once.
    """
    where = _where(spec, storage_url)
    try:
        storage = open_storage(storage_url, spec)
    except ServerRestarting as exc:  # it answered, then hung up: a restart under way
        if create:
            raise  # `dse run` may create the study; the reconnection only joins one
        study = _reconnect(exc, spec, storage_url, where, worker)
    else:
        try:
            study = open_study(spec, storage, force, create=create, where=where,
                               worker=worker, storage_path=storage_file(storage_url, spec))
        except Exception as exc:  # the server answered open_storage, so this is a restart
            study = _reconnect(exc, spec, storage_url, where, worker)
    quota = _Quota(max_trials)
    budget: int | None = None
    while True:
        try:
            with WorkerLock(storage_file(storage_url, spec)) as lock:
                recover(study, alone=lock.exclusive())
                lock.share()
                if budget is None:
                    budget = target_of(spec, study, trials) if until is None else min(until, spec.budget)
                if budget - completed(study) > 0 and quota.left():
                    _optimize(study, spec, budget, on_trial, quota)
            return study
        except Exception as exc:
            study = _reconnect(exc, spec, storage_url, where, worker)


def read_after_run(study: optuna.Study, spec: StudySpec, storage_url: str | None, worker: str,
                   read: Callable[[optuna.Study], T]) -> T:
    """``read(study)`` after :func:`run_study` returned ``study``, reconnecting once as
    :func:`_reconnect` does when the storage was lost meanwhile: a server restarted while this
    worker was paused between its last trial and this read ends the connection that read would
    use (seen once: a worker's summary failed after the study it had finished came back)."""
    try:
        return read(study)
    except Exception as exc:
        return read(_reconnect(exc, spec, storage_url, _where(spec, storage_url), worker))


def _where(spec: StudySpec, storage_url: str | None) -> str:
    """The study's storage as the log and errors name it (a URL without its password)."""
    url = spec.storage if storage_url is None else storage_url
    return redact(url) if url else "the default journal"


@dataclass
class _Quota:
    """The trials this worker completed (across reconnections) against its cap ``most``."""

    most: int | None
    own: int = 0

    def left(self) -> bool:
        return self.most is None or self.own < self.most


def _reconnect(lost: Exception, spec: StudySpec, storage_url: str | None, where: str,
               worker: str) -> optuna.Study:
    """The study again, once its storage answers after ``lost`` (a server that went away,
    :func:`~dse.search.storage.failures.storage_lost`), tried with a doubling wait for the URL's
    reconnection window (:func:`~dse.search.storage.servers.reconnect_window`); says so in one line on
    the log. Re-raises ``lost`` for any other error, and raises
    :class:`~dse.search.storage.failures.ReconnectGaveUp` (from the last failure) when the window passes.
    The trials this process was running when it lost the storage are failed and retried."""
    window = reconnect_window(spec.storage if storage_url is None else storage_url)
    if window <= 0 or not storage_lost(lost):
        raise lost
    said = (storage_failure(lost, where) or type(lost).__name__).partition("; the completed")[0]
    log.warning("dse: lost the storage %s (%s); reconnecting for up to %g s", where, said, window)
    started = time.monotonic()
    wait = RECONNECT_FIRST_S
    while True:
        if STOP.wait(max(0.0, min(wait, started + window - time.monotonic()))):
            raise lost  # SIGTERM or Ctrl-C while the storage is away: stop now, in one line
        wait = min(2 * wait, RECONNECT_MAX_WAIT_S)
        try:
            study = open_study(spec, open_storage(storage_url, spec), create=False, where=where,
                               worker=worker)
            recover_stale_trials(study, mine=True)
        except Exception as exc:
            if not storage_lost(exc):
                raise
            if time.monotonic() - started >= window:
                raise ReconnectGaveUp(window) from exc
            continue
        log.warning("dse: reconnected to %s after %.0f s", where, time.monotonic() - started)
        return study


def _counts(study: optuna.Study) -> tuple[int, int, int]:
    """(complete, running, waiting) trials of ``study``."""
    counts = state_counts(study)
    return (counts.get(TrialState.COMPLETE, 0), counts.get(TrialState.RUNNING, 0),
            counts.get(TrialState.WAITING, 0))


def _objective(spec: StudySpec, study: optuna.Study, budget: int) -> DesignObjective:
    """What scores this worker's trials: the study's workload, space and objectives, with its
    calibration and catalog."""
    return DesignObjective(study_workload(spec), study_space(spec), study_objectives(spec), budget,
                           study_calibration(spec), study_catalog(spec).catalog,
                           heartbeat=heartbeat_enabled(study))


def _optimize(study: optuna.Study, spec: StudySpec, budget: int,
              on_trial: Callable[[Progress], None] | None, quota: _Quota) -> None:
    """Work on ``study`` until ``budget`` trials are complete (or this worker's ``quota`` of
    completed trials is used up, counted in it)."""
    objective = _objective(spec, study, budget)
    tracker = _Tracker(study, budget, on_trial, study_space(spec))
    watch = RuleWatch(objective.space.base_for)
    last_recovery = time.monotonic()

    def recover_now(every: float) -> None:
        nonlocal last_recovery
        if time.monotonic() - last_recovery >= every:
            last_recovery = time.monotonic()
            recover(study)

    def after_trial(st: optuna.Study, finished: FrozenTrial) -> None:
        # Stops this worker once all workers together have the budget complete or running, so it
        # does not start a trial only to prune it. Only an early stop (the exact check is
        # over_budget, at the start of every trial), so the O(trials) read is skipped while the
        # trial numbers say the budget is still far.
        tracker.update()
        for line in watch.update(finished):
            log.warning(line)
        quota.own += finished.state == TrialState.COMPLETE
        if STOP.is_set() or not quota.left():
            st.stop()
            return
        recover_now(RECOVER_EVERY_S)
        if finished.number + 1 < budget:
            return
        # Complete and running, from the study's shared index (refreshed: what changed only).
        index = shared_index(st, objective.space)
        index.refresh_study(st)
        if index.live_below(1 << 62) - index.waiting() >= budget:
            st.stop()

    room_since: float | None = None  # None: not waited; 0: waiting; else when room appeared
    while quota.left() and not STOP.is_set():
        complete, running, waiting = _counts(study)
        if complete >= budget:
            break
        if complete + running >= budget:
            # The rest of the budget is running elsewhere: wait until it completes, or until a
            # dead worker's trial is failed and retried (then there is room again).
            room_since = 0.0
            time.sleep(WAIT_POLL_S)
            recover_now(1.0)
            continue
        if room_since is not None and not waiting:
            # Room after waiting is a trial just failed as abandoned, and its retry is a moment
            # behind (failing and enqueueing are two writes, by Optuna's heartbeat or by
            # recover_stale_trials). A new trial started in between would take its place and
            # leave the retry queued past the budget: wait for the retry (or, when none comes,
            # as after a trial that failed for good, for half a second).
            if not room_since:
                room_since = time.monotonic()
            if time.monotonic() - room_since < 0.5:
                time.sleep(WAIT_POLL_S / 4)
                continue
        room_since = None
        if _run_trials(study, objective, budget - complete, after_trial):
            break


def _run_trials(study: optuna.Study, objective: DesignObjective, trials: int,
                after_trial: Callable[[optuna.Study, FrozenTrial], None]) -> bool:
    """Run up to ``trials`` trials of ``objective`` on ``study`` (Optuna's loop, its log line of
    a trial another process took quieted); True when every design of the space is evaluated and
    the study stops. A trial of this worker that another process failed as abandoned while this
    one was not running is said in one line, and the worker goes on."""
    optuna_log = logging.getLogger("optuna.study._optimize")
    quiet = _TakenTrialFilter()
    optuna_log.addFilter(quiet)
    try:
        study.optimize(objective, n_trials=trials, callbacks=[after_trial], catch=(), gc_after_trial=False)
        if objective.exhausted:
            log.warning("dse: every design of the space is evaluated; the study stops at %d "
                        "distinct designs", completed(study))
            return True
    except Exception as exc:
        if not taken_by_another(exc):
            raise
        # This worker stalled (stopped, paused, starved) past the time others wait for a
        # running trial, and another failed its trial as abandoned and enqueued its retry.
        log.warning("dse: trial %d of this worker was failed as abandoned by another process "
                    "while this one was not running; its retry redoes the design, and this "
                    "worker goes on", objective.trial)
    finally:
        optuna_log.removeFilter(quiet)
    return False


class _TakenTrialFilter(logging.Filter):
    """Drops Optuna's two warnings on a trial that failed because another process failed it
    first (one with a traceback), or because the storage was lost (reconnected, or reported in
    one line by the caller): :func:`_optimize` says it in one line."""

    def __init__(self) -> None:
        super().__init__()
        self.trials: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        words = record.getMessage().split()
        error = record.exc_info[1] if record.exc_info else None
        if error is not None and (taken_by_another(error) or storage_lost(error)):
            self.trials.add(words[1])  # "Trial N failed with parameters: ..."
            return False
        return not (len(words) > 2 and words[0] == "Trial" and words[1] in self.trials)


class _Tracker:
    """Feeds a progress callback at most every half second (less often when an update takes more
    than :data:`PROGRESS_SHARE` of the time). The feasible trials are kept as they complete, in
    number order (read through the study's shared index: each trial's constraints are read
    once), so an update costs the front and the hypervolume, not a read of every trial."""

    def __init__(self, study: optuna.Study, budget: int, cb: Callable[[Progress], None] | None,
                 space: SearchSpace | None = None):
        self.study, self.budget, self.cb, self.space = study, budget, cb, space
        self.last = 0.0
        self.every = PROGRESS_EVERY_S
        self._read = 0
        self._feasible: list[FrozenTrial] = []
        self._index: DesignIndex | None = None

    def update(self, force: bool = False) -> None:
        start = time.monotonic()
        if self.cb is None or (not force and start - self.last < self.every):
            return
        self._update()
        self.last = time.monotonic()
        self.every = max(PROGRESS_EVERY_S, (self.last - start) / PROGRESS_SHARE)

    def _update(self) -> None:
        assert self.cb is not None
        if self.space is None:
            self.cb(progress(self.study, self.budget))
            return
        index = shared_index(self.study, self.space)
        if index is not self._index:
            self._index, self._read, self._feasible = index, 0, []
        index.refresh_study(self.study)
        fresh = index.completed_trials[self._read:]
        self._read += len(fresh)
        for t in fresh:  # mostly in number order: appended (other workers' may come late)
            if is_feasible(t):
                bisect.insort(self._feasible, t, key=lambda u: u.number)
        self.cb(progress(self.study, self.budget, self._feasible, self._read))


def progress(study: optuna.Study, budget: int, feasible: list[FrozenTrial] | None = None,
             complete: int | None = None) -> Progress:
    """Completed trials, feasible count, front size and hypervolume of ``study``; given its
    ``feasible`` completed trials (in number order) and the number ``complete``, without reading
    every trial."""
    if feasible is None or complete is None:
        trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        feasible = [t for t in trials if is_feasible(t)]
        complete = len(trials)
    front = group_by_design(pareto_trials(study, feasible))
    conv = convergence(study, feasible, complete)
    return Progress(complete, budget, len(feasible), len(front), conv.hypervolume,
                    conv.reference, conv.gained, conv.window, conv.moving)
