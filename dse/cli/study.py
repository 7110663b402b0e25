"""Study commands of the ``dse`` CLI: init, run, worker, storage-proxy, status, pareto, export, report,
plot (registered on :data:`dse.cli._app.app`)."""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import shlex
import signal
import socket
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlsplit

import typer
from rich.console import Console
from rich.text import Text

from dse.cli._app import app, check_targets, fail, to_json, warn, write_or_fail
from dse.cli._app import console as plain_console
from dse.cli.tables import choose_columns, distinct_designs, print_designs
from dse.errors import DseInputError
from dse.search import _optuna
from dse.search.algorithms.reference import (
    REFERENCE_MAX_DESIGNS,
    REFERENCE_MIN_BUDGET,
    is_own_range,
    own_range_reason,
)
from dse.search.results import load_stored_study, refresh_snapshot, status, trial_rows, trials_frame
from dse.search.storage.failures import quiet_lost_storage, storage_failure
from dse.search.storage.journal_check import JournalScan, repair_journal
from dse.search.storage.journal_writing import check_journal_file
from dse.search.storage.opening import (
    default_storage_path,
    journal_file,
    open_storage,
    storage_file,
    study_exists,
)
from dse.search.storage.proxy import PROXY_THREADS, serve_proxy
from dse.search.storage.servers import is_loopback, redact
from dse.search.study.attribute_keys import WARM_START_KEY, WORKER_KEY
from dse.search.study.objective_sets import METRICS as METRIC_NAMES
from dse.search.study.seeding import (
    MAX_PRESCREEN_S,
    PRESCREEN_S,
    WARM_BUDGET_SHARE,
    WARM_MAX_TRIALS,
    WARM_START_CHOICES,
    WarmStart,
)
from dse.search.study.study_file import (
    DEFAULT_STUDY,
    StudySpec,
    as_recorded,
    batch_without_curve,
    calibration_differs,
    load_study_spec,
    results_dir,
    with_calibration,
    with_catalog,
)

if TYPE_CHECKING:
    import optuna
    import pandas as pd
    from rich.progress import Progress, TaskID

    from dse.search.parallel import WorkerExits
    from dse.search.runner import Progress as StudyProgress

# The commands that run a study import the runner (and its sweep, pandas, samplers) when they
# run: the read-only commands (status, pareto, report) are timed against a target
# (benchmarks/bench_commands.py) and never need them.

ColumnsOpt = Annotated[str | None, typer.Option(
    "--columns", help="Comma-separated columns: metrics (capex_usd, power_w, ...), parameters "
    "(nodes, node.nics, ...), trials, design. Default: trials, objectives, bottleneck, design.")]

REPAIR_SHOWN = 20
"""Damaged lines ``dse repair`` lists one by one (then only their number)."""
StorageOpt = Annotated[str | None, typer.Option(
    "--storage", help="Optuna storage: a .journal path (default: NAME.journal beside the study file; "
    "./studies/NAME.journal for a built-in study), "
    "postgresql://USER@HOST:PORT/DB (the password from PGPASSWORD or ~/.pgpass, or in the URL, "
    "where ps shows it), sqlite:///FILE or grpc://HOST:PORT (a dse storage-proxy). A server "
    "URL may end in ?dse_answer_timeout=S (a hung server: one line after S, default 20) and "
    "?dse_reconnect=S (a server restarting mid-run: retried for S, default 60).")]


ForceOpt = Annotated[bool, typer.Option(
    "--force", help="Replace an existing output file (without it, an existing file is refused "
    "and left as it is).")]
CatalogOpt = Annotated[Path | None, typer.Option(
    "--catalog", help="A user catalog (your parts, prices, facility figures) instead of the "
    "study's own catalog key.")]
CalibrationOpt = Annotated[Path | None, typer.Option(
    "--calibration", help="A calibration file to score with instead of the study's own "
    "calibration key (or the packaged calibration): dse calibrate --data mine.csv writes one "
    "from your own measurements. Recorded by its content: a resume with another is refused "
    "unless --force.")]
ScoredWithOpt = Annotated[Path | None, typer.Option(
    "--calibration", help="The calibration file the study was scored with (checked against what "
    "it recorded; by default the recorded one is used): its ensemble, beside it, gives the "
    "intervals and the front under the model's error.")]


def _spec(study: str, catalog: Path | None = None, calibration: Path | None = None) -> StudySpec:
    try:
        spec = with_catalog(load_study_spec(study), str(catalog) if catalog else "")
        return with_calibration(spec, str(calibration) if calibration else "")
    except DseInputError as exc:
        fail(str(exc))
        raise  # unreachable: fail() exits


def _scored_with(spec: StudySpec, stored: optuna.Study, calibration: Path | None) -> StudySpec:
    """``spec`` as its stored study recorded it (:func:`as_recorded`); with ``--calibration``,
    once that file is the calibration the study was scored with (else one line, exit 2)."""
    if calibration is not None and (differs := calibration_differs(spec, stored.user_attrs)):
        fail(f"--calibration {differs}")
    return as_recorded(spec, stored.user_attrs)


def _shown(url: str, spec: StudySpec) -> str:
    """The storage as messages name it: the journal's path, or the URL without its password."""
    return redact(url) if url else str(default_storage_path(spec))


def _warm_start_mode(given: str | None) -> WarmStart:
    """``--warm-start``'s value as a mode (none given: :attr:`WarmStart.AUTO`); another value
    fails with one line naming those it accepts."""
    if given is None:
        return WarmStart.AUTO
    if given not in WARM_START_CHOICES:
        fail(f"--warm-start {given!r}: expected " + " or ".join(f"'{c}'" for c in WARM_START_CHOICES))
    return WarmStart(given)


def _seed_sweep(study: optuna.Study, spec: StudySpec, new: bool) -> None:
    """`--warm-start sweep`: a ``new`` study was seeded as it was created (the coarse-to-fine
    sweep's front); where the space was too large for that sweep, it is seeded from a coarse
    sweep now (once per study: a seeded study is left as it is). Says what was enqueued."""
    from dse.search.algorithms.sweep import warm_start_study

    seeded = warm_start_study(study, spec)
    info = study.user_attrs.get(WARM_START_KEY)
    if (new or seeded) and info:
        typer.echo(f"warm start: {info['enqueued']} designs of a {info['method']}'s front "
                   "enqueued", err=True)


@contextmanager
def _storage_errors(where: str = "") -> Iterator[None]:
    """A storage lost mid-run (database down or hung, proxy stopped, the journal ``where`` on a
    full or read-only disk) ends the command with one line (none from its helper threads)."""
    try:
        with quiet_lost_storage():
            yield
    except Exception as exc:
        message = storage_failure(exc, where)
        if message is None:
            raise
        fail(message)


@app.command("init")
def init_cmd(
    folder: Annotated[Path, typer.Argument(help="Folder for the files (created).")] = Path("my-dse"),
    start: Annotated[str | None, typer.Option(
        "--from", help="The study to start from: a packaged study (dse list studies; zion-2020 "
        "for the 2019 Zion question), one under ./studies, or a study file. Default: "
        "todays-hardware (today's nodes on MLPerf DLRM-DCNv2).")] = None,
) -> None:
    """Copy a study (today's nodes on DLRM-DCNv2 unless --from names another), its workload,
    search space and objectives, and a user catalog into a folder for editing, and print the
    command that runs it."""
    from dse.search.study.init_folder import INIT_STUDY, write_starter

    try:
        starter = write_starter(folder, start or INIT_STUDY)
    except DseInputError as exc:
        fail(str(exc))
        return
    for path in starter.files:
        typer.echo(f"wrote {path}")
    typer.echo(f"next: dse run {shlex.quote(str(starter.study))}  (results land beside it)")


@app.command("run")
def run_cmd(
    study: Annotated[str, typer.Argument(
        help="Study file, or name (./studies/NAME.toml, else a built-in study).")] = DEFAULT_STUDY,
    storage: StorageOpt = None,
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Worker processes on this machine.")] = 1,
    trials: Annotated[int | None, typer.Option(
        "--trials", min=0, help="Work at most this many more trials (all jobs together); 0 only "
        "creates (or checks) the study, for workers to join.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Resume although the study's workload, "
                                        "space or objectives changed (the change is recorded).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bar.")] = False,
    report: Annotated[bool, typer.Option("--report/--no-report",
                                         help="Write the report beside the journal when done (NAME.html; for "
                                         "another --storage, the journal's name).")] = True,
    warm_start: Annotated[str | None, typer.Option(
        "--warm-start", help=f"'{WarmStart.SWEEP}': before the sampler starts, enqueue designs of a "
        f"sweep's front (at most {WARM_BUDGET_SHARE} of the budget), whatever the sampler: the "
        "coarse-to-fine sweep's where the space allows it (a coarse grid of at most "
        f"{REFERENCE_MAX_DESIGNS:,} designs and a budget of {REFERENCE_MIN_BUDGET} or more), else a "
        "coarse sweep's; once per study. Default: a new study of the auto sampler on such a space "
        f"is seeded with up to {WARM_MAX_TRIALS} designs of that coarse-to-fine front; "
        f"'{WarmStart.NONE}' turns that off.")] = None,
    catalog: CatalogOpt = None,
    calibration: CalibrationOpt = None,
    prescreen_s: Annotated[float | None, typer.Option(
        "--prescreen-s", min=0.0, max=MAX_PRESCREEN_S,
        help="CPU seconds of the space-filling pre-screen a new study runs before its first trial "
        "when its space is too large for a coarse grid (not trials; 0: none). Default: the study "
        f"file's prescreen_s, else {PRESCREEN_S:g}.")] = None,
) -> None:
    """Create or resume a study and work until its budget of completed trials is reached, then
    write its report."""
    spec = _spec(study, catalog, calibration)
    if prescreen_s is not None:
        spec = dataclasses.replace(spec, prescreen_s=prescreen_s)
    url = storage if storage is not None else spec.storage
    shown = _shown(url, spec)
    _warn_catalog(spec)
    warn(spec.name, [note] if (note := batch_without_curve(spec)) else [])
    if jobs > 1 and url.startswith("sqlite"):
        fail("--jobs > 1 needs a storage safe for several processes: SQLite is not; use the default "
             "journal file or PostgreSQL")
    created, until = _open_for_run(spec, study, url, force, warm_start, quiet, trials)
    if trials == 0:
        info = status(created)
        join = "" if not url else " --storage " + ("URL" if "***" in shown else shown)
        typer.echo(f"{spec.name}: ready in {shown}, {info['complete']} of {spec.budget} trials "
                   f"complete, {info['waiting']} queued; workers join it with: dse worker "
                   f"{study}{join}")
        return
    result = _work_until(spec, study, url, until, jobs, quiet, spec.catalog if catalog else "",
                         spec.calibration if calibration else "")
    if result is None:
        return
    _after_run(result, spec, url, shown, until, report)


def _open_for_run(spec: StudySpec, study: str, url: str, force: bool, warm_start: str | None,
                  quiet: bool, trials: int | None) -> tuple[optuna.Study, int]:
    """``dse run``'s study, created or checked (and seeded, for ``--warm-start sweep``) before
    any worker starts, and the number of completed trials to work until, fixed once so that
    ``--trials N`` means N more for all workers together. A storage or input error ends the
    command in one line; Ctrl-C says how to complete the creation (exit code 130)."""
    from dse.search.runner import open_study, target_of

    try:
        with _storage_errors(_shown(url, spec)):
            mode = _warm_start_mode(warm_start)
            store = open_storage(url, spec)
            new = mode == WarmStart.SWEEP and not study_exists(store, spec.name)
            with _sweep_progress(quiet) as on_sweep:
                created = open_study(spec, store, force, storage_path=storage_file(url, spec),
                                     warm_start=mode, on_sweep=on_sweep)
            if mode == WarmStart.SWEEP:
                _seed_sweep(created, spec, new)
            return created, target_of(spec, created, trials)
    except DseInputError as exc:
        fail(str(exc))
        raise  # not reached: fail exits
    except KeyboardInterrupt:
        # Before the first trial (the coarse-to-fine sweep of a new study takes seconds): the
        # recording is completed by the next run, which sweeps again.
        resume = _resume_command(spec, study, url)
        typer.echo(f"interrupted while creating the study, before its first trial; `{resume}` "
                   "completes it", err=True)
        raise typer.Exit(code=130) from None


def _work_until(spec: StudySpec, study: str, url: str, until: int, jobs: int, quiet: bool,
                catalog: str, calibration: str) -> tuple[optuna.Study, WorkerExits] | None:
    """:func:`_run_with_progress`, with Ctrl-C (also when it ends a trial, which Optuna re-raises
    as another error) ending the command with what was kept and how to resume."""
    try:
        with _quiet_interrupted_trials():
            return _run_with_progress(spec, study, url, until, jobs, quiet, catalog, calibration)
    except KeyboardInterrupt:
        _interrupted(spec, study, url)
        return None
    except Exception as exc:
        if not _raised_by_interrupt(exc):
            raise
        _interrupted(spec, study, url)
        return None


def _warn_catalog(spec: StudySpec) -> None:
    """Warn about the study catalog's implausible prices (:mod:`dse.model.plausible`) before the
    study spends its budget on them; a catalog that cannot load is reported by the run itself."""
    from dse.model.plausible import catalog_warnings
    from dse.search.study.study_file import study_catalog

    try:
        found = catalog_warnings(study_catalog(spec).catalog)
    except DseInputError:
        return
    warn(spec.catalog or "catalog", [w.describe() for w in found])


def _run_with_progress(spec: StudySpec, study: str, url: str, until: int, jobs: int,
                       quiet: bool, catalog: str, calibration: str
                       ) -> tuple[optuna.Study, WorkerExits] | None:
    """Work on the study (with ``jobs - 1`` helper processes, given the user ``catalog`` and
    ``calibration`` files or "") under a progress bar; the stored study and the helpers' exits."""

    from dse.search.parallel import join_workers, start_workers
    from dse.search.runner import run_study

    workers = start_workers(study, url, until, jobs - 1, catalog, calibration)
    bar = progress_bar(plain_console(stderr=True), quiet, "detail")
    with bar:
        task = bar.add_task(spec.name, total=until, detail="")

        def show(p: StudyProgress) -> None:
            bar.update(task, completed=p.complete, detail=trial_detail(p))

        try:
            with _storage_errors(_shown(url, spec)):
                result = run_study(spec, url, force=False, on_trial=None if bar.disable else show,
                                   until=until)
        except DseInputError as exc:
            fail(str(exc))
            return None
        finally:
            exits = join_workers(workers)
    return result, exits


def progress_bar(console: Console, quiet: bool, field: str) -> Progress:
    """A one-line progress display that fits an 80-column terminal: the name (cut to 12
    characters), a short bar, done/total, the task's ``field`` (cut to 36) and the time spent;
    disabled with ``quiet`` or when stderr is not a terminal."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Column

    def cut(width: int) -> Column:
        return Column(max_width=width, no_wrap=True, overflow="ellipsis")

    return Progress(TextColumn("{task.description}", style="bold", markup=False, table_column=cut(12)),
                    BarColumn(bar_width=10), MofNCompleteColumn(table_column=Column(no_wrap=True)),
                    TextColumn(f"{{task.fields[{field}]}}", markup=False, table_column=cut(36)),
                    TimeElapsedColumn(), console=console, disable=quiet or not console.is_terminal)


def trial_detail(p: StudyProgress) -> str:
    """The progress bar's words on a study: feasible share, front size, hypervolume ("hv"; its
    reference is in the closing line) and whether the front still moves."""
    share = p.feasible / p.complete if p.complete else 0.0
    return (f"{share:.0%} feasible, front {p.front}, hv {p.hypervolume:.3f}"
            + (" moving" if p.moving else ""))


@contextmanager
def _sweep_progress(quiet: bool) -> Iterator[Callable[[int, int], None]]:
    """The progress of the sweep a new study runs before its first trial (its hypervolume
    reference and warm start): a line announcing it, then a bar of designs scored."""
    console = plain_console(stderr=True)
    bar = progress_bar(console, quiet, "what")
    task: list[TaskID] = []

    def show(done: int, total: int) -> None:
        if not task:
            if not quiet:
                console.print("sweeping before the first trial (a coarse grid or a CPU-timed "
                              "pre-screen, then refined along its front): the hypervolume "
                              "reference", soft_wrap=False)
            task.append(bar.add_task("sweep", total=total, what="designs scored"))
        bar.update(task[0], completed=done, total=total)

    with bar:
        yield show


def _after_run(done: tuple[optuna.Study, WorkerExits], spec: StudySpec, url: str, shown: str,
               until: int, report: bool) -> None:
    """The closing line of ``dse run``, its helpers' failures, and the report."""
    from dse.search.runner import read_after_run

    result, exits = done
    summary = read_after_run(result, spec, url, "", status)
    trend = _trend(summary["hypervolume_gained"], summary["hypervolume_window"], summary["front_moving"])
    typer.echo(f"{spec.name}: {summary['complete']} of {spec.budget} trials complete, "
               f"{summary['feasible']} feasible, front of {summary['front_size']}, hypervolume "
               f"{summary['hypervolume']:.3f} ({_against(summary['hypervolume_reference'])}; "
               f"{trend}); stored in {shown}")
    failed, killed = list(exits.failed), list(exits.killed)
    if failed or (killed and summary["complete"] < until):
        fail(f"{len(failed) + len(killed)} worker process(es) failed (exit codes "
             f"{failed + [-k for k in killed]})")
    if killed:
        typer.echo(f"dse: note: {len(killed)} worker process(es) were killed (signals {killed}); "
                   "their trials were retried by the others", err=True)
    if report:
        typer.echo(f"report: {_write_report(result, spec, url, None)}")
    refresh_snapshot(spec, url)


class _InterruptedTrialFilter(logging.Filter):
    """Drops Optuna's two warnings about a trial failed by Ctrl-C (one with a traceback): the
    command says in one line what was kept (the trial's design is re-enqueued for the resume)."""

    def __init__(self) -> None:
        super().__init__()
        self.trials: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and isinstance(record.exc_info[1], KeyboardInterrupt):
            self.trials.add(message.split()[1])  # "Trial N failed with parameters: ..."
            record.exc_info = None
            return False
        words = message.split()
        return not (len(words) > 2 and words[0] == "Trial" and words[1] in self.trials
                    and message.endswith("failed with value None."))


@contextmanager
def _quiet_interrupted_trials() -> Iterator[None]:
    logger = _optuna.optimize_logger()
    quiet = _InterruptedTrialFilter()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def _resume_command(spec: StudySpec, study: str, url: str) -> str:
    """The command that resumes ``study`` (its storage named when it is not the study file's)."""
    return f"dse run {study}" + (f" --storage {redact(url)}" if url and url != spec.storage else "")


def _raised_by_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while handling a Ctrl-C: Optuna 5's ``_run_trial`` reads a
    variable in its ``finally`` that a KeyboardInterrupt during its tell leaves unset, so the
    interrupt reaches the CLI as an ``UnboundLocalError`` whose context is the interrupt."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _interrupted(spec: StudySpec, study: str, url: str) -> None:
    """Ctrl-C: one line saying what the study kept and how to resume, exit code 130 (128 + SIGINT)."""
    try:
        kept = status(load_stored_study(spec, url or None))["complete"]
        what = f"{kept:,} of {spec.budget:,} trials kept"
    except Exception:  # the storage itself may be what hung: the line must still come
        what = "the completed trials are kept"
    resume = _resume_command(spec, study, url)
    typer.echo(f"interrupted: {what}; `{resume}` resumes", err=True)
    raise typer.Exit(code=130)


def output_base(spec: StudySpec, storage: str) -> Path:
    """Where a study's pages go, without their suffix: beside its journal and named after it
    (``runs/other.journal``: ``runs/other``), so a study run into another storage never writes
    over the pages of its own (``dse run zion-2020 --storage other.journal`` wrote
    ``studies/zion-2020.html``); a database other than the study's own: ``NAME@HOST-DB`` beside
    the study file; the study's own storage (its file's key, or the default): ``NAME`` there
    (:func:`results_dir`)."""
    if not storage or storage == spec.storage:
        return results_dir(spec) / spec.name
    journal = journal_file(storage, spec)
    if journal is not None:
        return journal.with_suffix("")
    where = urlsplit(redact(storage))
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{where.hostname or ''}{where.path}").strip("-")
    return results_dir(spec) / f"{spec.name}@{slug or where.scheme}"


def _write_report(stored: Any, spec: StudySpec, storage: str, folder: Path | None) -> Path:
    """Render the study's report into ``folder`` (default: beside the journal, :func:`output_base`)
    as NAME.html (the journal's name, for another storage)."""
    from dse.outputs.report import render_report, report_cache
    from dse.search.results import objective_set_of
    from dse.search.robust_front import retiming_cache

    base = output_base(spec, storage)
    path = (folder / base.name if folder else base).with_name(f"{base.name}.html")
    check_targets(True, path)  # a link or a folder there is refused before the work
    journal = journal_file(storage or None, spec)
    page = render_report(stored, spec, objective_set_of(stored, spec), redact(storage),
                         retimings=retiming_cache(journal) if journal is not None else None,
                         cache=report_cache(journal) if journal is not None else None)
    write_or_fail(path, page)  # a report regenerated replaces its previous one, in one rename
    return path


@app.command("worker")
def worker_cmd(
    study: Annotated[str, typer.Argument(
        help="Study file, or name (./studies/NAME.toml, else a built-in study).")],
    storage: StorageOpt = None,
    trials: Annotated[int | None, typer.Option(
        "--trials", min=1, help="Complete at most this many trials in this worker.")] = None,
    catalog: CatalogOpt = None,
    calibration: CalibrationOpt = None,
) -> None:
    """Join an existing study and work on it until its budget is complete (shared by all workers:
    together they stop at the total). Start any number, on any machines that reach the storage."""
    from optuna.trial import TrialState

    from dse.search.parallel import stop_gracefully
    from dse.search.runner import STOP, read_after_run, run_study

    spec = _spec(study, catalog, calibration)
    url = storage if storage is not None else spec.storage
    shown = _shown(url, spec)
    stopped_by = stop_gracefully()
    try:
        with _storage_errors(shown), _quiet_interrupted_trials():
            me = f"{socket.gethostname()}:{os.getpid()}"
            result = run_study(spec, url, max_trials=trials, create=False, worker=me)

            def summary(done: optuna.Study) -> tuple[int, dict[str, Any]]:
                mine = sum(1 for t in done.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                           if t.system_attrs.get(WORKER_KEY) == me)
                return mine, status(done)

            mine, info = read_after_run(result, spec, url, me, summary)
    except DseInputError as exc:
        fail(str(exc))
        return
    except KeyboardInterrupt:
        typer.echo("dse: worker interrupted; its running trial was put back for another worker",
                   err=True)
        raise typer.Exit(code=130) from None
    typer.echo(f"{spec.name}: this worker completed {mine} trials; the study has {info['complete']} "
               f"of {info['budget']} complete, {info['running']} running, in {shown}")
    if not STOP.is_set() and info["complete"] >= int(info["budget"] or 0):
        # The study is done: like `dse run`, leave the snapshot cache current for the reads after.
        refresh_snapshot(spec, url)
    if STOP.is_set():
        signum = stopped_by[0] if stopped_by else signal.SIGTERM
        typer.echo(f"dse: worker stopped by {signal.Signals(signum).name} after its running trial",
                   err=True)
        raise typer.Exit(code=128 + signum)


@app.command("storage-proxy")
def storage_proxy_cmd(
    storage: Annotated[str, typer.Option(
        "--storage", help="The database to serve: postgresql://USER@HOST:PORT/DB (the password "
        "from PGPASSWORD or ~/.pgpass, or in the URL, where ps shows it), or sqlite:///FILE.")],
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")] = 13000,
    host: Annotated[str, typer.Option(
        "--host", help="Address to listen on (default: loopback only).")] = "127.0.0.1",
    allow_remote: Annotated[bool, typer.Option(
        "--allow-remote", help="Allow a --host other machines can reach. The proxy has no "
        "authentication or encryption: anyone who reaches the port can read and change every "
        "study in the database.")] = False,
    threads: Annotated[int, typer.Option(
        "--threads", min=1, help="Requests served at once (= database connections held).")
    ] = PROXY_THREADS,
) -> None:
    """Serve a database to many workers through Optuna's gRPC storage proxy: workers use
    --storage grpc://HOST:PORT and hold no database connection; the proxy holds --threads."""
    if not is_loopback(host) and not allow_remote:
        fail(f"--host {host} lets other machines reach the proxy, which has no authentication: "
             "add --allow-remote to mean it (or keep the default 127.0.0.1)")

    def ready(bound: int) -> None:
        where = f"[{host}]" if ":" in host else host
        reach = ("any machine that reaches this address" if not is_loopback(host)
                 else "any process on this machine")
        typer.echo(f"dse storage-proxy: serving {redact(storage)} on {where}:{bound} "
                   f"({threads} connections) with no authentication or encryption: {reach} can "
                   f"read, change and delete every study in that database; workers: --storage "
                   f"grpc://{where}:{bound}; stop with Ctrl-C or SIGTERM")
        sys.stdout.flush()
        if not is_loopback(host):
            typer.echo(f"dse storage-proxy: warning: --allow-remote: {where}:{bound} is open to "
                       "other machines, unauthenticated and unencrypted: anyone on the network who "
                       "reaches it can read, change and delete every study in the database, and "
                       "see the traffic; use it only on a network you trust, or keep the default "
                       "127.0.0.1 with one proxy per machine", err=True)

    try:
        with _storage_errors():
            serve_proxy(storage, host, port, threads, on_ready=ready)
    except DseInputError as exc:
        fail(str(exc))
    typer.echo("dse storage-proxy: stopped")


@app.command("repair")
def repair_cmd(
    study: Annotated[str, typer.Argument(help="Study name or file.")],
    storage: StorageOpt = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Where to write the repaired copy (default: NAME.repaired.journal beside "
        "the journal).")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Replace an existing repaired copy (an earlier repair, perhaps resumed "
        "since: its trials are lost).")] = False,
) -> None:
    """Write a repaired copy of a damaged study journal beside it (the original is left as it
    is): every intact record kept, the damage listed. An existing copy is never replaced without
    --force."""
    spec = _spec(study)
    path = storage_file(storage, spec)
    if path is None or not str(path).endswith(".journal"):
        fail(f"{study}: repair works on journal files; its storage is {redact(str(path or storage))}")
        return
    try:
        check_journal_file(path)
    except DseInputError as exc:
        fail(str(exc))
    if not path.is_file():
        fail(f"{path}: no journal to repair")
        return
    if out is not None and out.exists() and out.resolve() == path.resolve():
        fail(f"--out {out}: is the journal being repaired; write the copy elsewhere")
    try:
        written, scan = repair_journal(path, out, force)
    except DseInputError as exc:
        fail(str(exc))
        return
    except OSError as exc:
        fail(f"{exc.filename or path}: cannot read the journal: {exc.strerror or exc}")
        return
    _report_repair(path, written, scan, study)


def _report_repair(path: Path, out: Path, scan: JournalScan, study: str) -> None:
    """What ``dse repair`` found and kept, and how to resume on the copy."""
    shown = scan.damage[:REPAIR_SHOWN]
    for d in shown:
        typer.echo(f"{path}: line {d.line}: {d.problem}", err=True)
    if len(scan.damage) > len(shown):
        typer.echo(f"{path}: ... and {len(scan.damage) - len(shown)} more damaged lines", err=True)
    if scan.tail_bytes:
        typer.echo(f"{path}: from line {scan.tail_from_line}: a damaged tail of {scan.tail_bytes} "
                   "bytes, cut", err=True)
    restored = sum(scan.missing.values())
    typer.echo(f"{out}: {scan.records} records of {path.name} kept"
               + (f", {restored} lost trial creation record(s) restored" if restored else "")
               + f"; {path.name} left as it is. Resume with: dse run {study} --storage {out} "
               f"(or move it over {path})")


@app.command("status")
def status_cmd(
    study: Annotated[str, typer.Argument(help="Study name or file.")],
    storage: StorageOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    columns: ColumnsOpt = None,
) -> None:
    """Progress, running and failed trials, and the best designs of a study."""
    spec = _spec(study)
    try:
        info = status(load_stored_study(spec, storage))
    except DseInputError as exc:
        fail(str(exc))
        return
    if as_json:
        typer.echo(to_json(info))
        return
    console = plain_console()
    console.print(Text(spec.name, "bold"), Text(
        f": {info['complete']} of {info['budget']} complete, {info['running']} "
        f"running, {info['failed']} failed ({info['retried']} retried), {info['pruned']} pruned; "
        f"{info['feasible']} feasible; front of {info['front_size']}, hypervolume "
        f"{info['hypervolume']:.3f} ({_against(info['hypervolume_reference'])}; "
        f"{_trend(info['hypervolume_gained'], info['hypervolume_window'], info['front_moving'])}); "
        f"calibration {info['calibration_version']}"), sep="")
    if info.get("prescreen"):
        console.print(prescreen_line(info["prescreen"]))
    objectives = [(o["metric"], o["direction"]) for o in info["objectives"]]
    _print_designs(console, info["front"], objectives, columns,
                   "best designs (front, first objective first)")


def prescreen_line(pre: dict[str, Any]) -> str:
    """`dse status`'s line on a study's pre-screen (the ``prescreen`` of its status)."""
    return (f"pre-screen before the first trial (not trials): {pre['designs']:,} designs in "
            f"{pre['cpu_s']:.1f} s CPU (budget {pre['budget_s']:g} s), then {pre['refined']:,} "
            f"refining its front in {pre['refine_cpu_s']:.1f} s CPU")


def _against(reference: str) -> str:
    """What a hypervolume figure is relative to, in words (and why no fixed box is used, when the
    study's is flat)."""
    if is_own_range(reference):
        why = own_range_reason(reference)
        return "in the front's own range: not a convergence figure" + (f"; {why}" if why else "")
    return f"1.0 = the front of a {reference}"


def _trend(gained: float, window: int, moving: bool) -> str:
    """Whether the front still moves: the hypervolume gained over the last ``window`` trials."""
    return (f"still moving: +{gained:.3f} in the last {window} trials" if moving
            else f"+{gained:.3f} in the last {window} trials")


def _print_designs(console: Console, rows: Sequence[dict[str, Any]], objectives: Sequence[tuple[str, str]],
                   columns: str | None, title: str) -> None:
    """One row per distinct design, best first by the first objective (see :mod:`dse.cli.tables`)."""
    try:
        chosen = choose_columns(columns, rows, objectives)
    except DseInputError as exc:
        fail(str(exc))
        return
    print_designs(console, distinct_designs(rows, objectives), chosen, title, chosen=bool(columns))


@app.command("pareto")
def pareto_cmd(
    study: Annotated[str, typer.Argument(help="Study name or file.")],
    storage: StorageOpt = None,
    csv: Annotated[Path | None, typer.Option("--csv", help="Write the front as CSV.")] = None,
    parquet: Annotated[Path | None, typer.Option("--parquet", help="Write the front as Parquet.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the front as JSON.")] = False,
    columns: ColumnsOpt = None,
    robust: Annotated[bool, typer.Option(
        "--robust", help="Each front design's probability of staying on the front across the "
        "calibration ensemble, its 80% intervals, and the front that holds with >= 80% "
        "probability (one row per distinct design).")] = False,
    force: ForceOpt = False,
    calibration: ScoredWithOpt = None,
) -> None:
    """The Pareto front of a study: a table (one row per distinct design, best first by the first
    objective), or CSV / JSON / Parquet (every front trial)."""
    from dse.search.results import objective_set_of

    spec = _spec(study, None, calibration)
    check_targets(force, csv, parquet)
    if robust:
        _pareto_robust(spec, storage, csv, parquet, as_json, force, calibration)
        return
    try:
        stored = load_stored_study(spec, storage)
        _scored_with(spec, stored, calibration)
        # The records of the front's frame, without pandas unless a file is written.
        rows = trial_rows(stored, only_front=True)
        objectives = [(o.metric, o.direction) for o in objective_set_of(stored, spec).objectives]
    except DseInputError as exc:
        fail(str(exc))
        return
    if csv is not None or parquet is not None:
        frame = trials_frame(stored, only_front=True)
        _export(frame, csv, parquet, force, "front", True)
    if as_json:
        typer.echo(to_json(rows))
    elif csv is None and parquet is None:
        _print_designs(plain_console(), rows, objectives, columns, f"{spec.name}: Pareto front")


def _export(frame: pd.DataFrame, csv: Path | None, parquet: Path | None, force: bool,
            what: str, index: bool) -> None:
    """Write ``frame`` as CSV and/or Parquet (each a new file, see :func:`_write`) and say so."""
    for target, encode in ((csv, frame.to_csv), (parquet, frame.to_parquet)):
        if target is not None:
            write_or_fail(target, encode(index=index), replace=force)
            typer.echo(f"{what} of {len(frame)} designs written to {target}", err=True)


def _pareto_robust(spec: StudySpec, storage: str | None, csv: Path | None, parquet: Path | None,
                   as_json: bool, force: bool, calibration: Path | None) -> None:
    """``dse pareto STUDY --robust``: the front under the calibration ensemble
    (:mod:`dse.search.robust_front`)."""
    import pandas as pd

    from dse.search.results import objective_set_of
    from dse.search.robust_front import retiming_cache, robust_front

    journal = journal_file(storage, spec)
    try:
        stored = load_stored_study(spec, storage)
        spec = _scored_with(spec, stored, calibration)
        objectives = objective_set_of(stored, spec)
        result = robust_front(stored, spec, objectives,
                              cache=retiming_cache(journal) if journal is not None else None)
    except DseInputError as exc:
        fail(str(exc))
        return
    frame = pd.DataFrame(result.rows())
    _export(frame, csv, parquet, force, "robust front", False)
    if as_json:
        typer.echo(to_json(result.to_dict()))
    elif csv is None and parquet is None:
        from dse.cli.robust import print_robust

        print_robust(plain_console(), result, f"{spec.name}: Pareto front under the calibration ensemble")


@app.command("export")
def export_cmd(
    study: Annotated[str, typer.Argument(help="Study name or file.")],
    out: Annotated[Path, typer.Option("--out", help="Output file: .csv or .parquet.")],
    storage: StorageOpt = None,
    force: ForceOpt = False,
) -> None:
    """Every trial with its parameters and metrics, as CSV or Parquet."""
    spec = _spec(study)
    if out.suffix not in (".csv", ".parquet"):
        fail(f"--out: {out}: expected a .csv or .parquet file")
    check_targets(force, out)
    try:
        frame = trials_frame(load_stored_study(spec, storage))
    except DseInputError as exc:
        fail(str(exc))
        return
    write_or_fail(out, frame.to_csv() if out.suffix == ".csv" else frame.to_parquet(), replace=force)
    typer.echo(f"{len(frame)} trials written to {out}", err=True)


@app.command("report")
def report_cmd(
    study: Annotated[str, typer.Argument(help="Study name or file.")],
    out: Annotated[Path | None, typer.Option(
        "--out", help="Folder for the page (default: beside the journal).")] = None,
    storage: StorageOpt = None,
    calibration: ScoredWithOpt = None,
) -> None:
    """Write the study's interactive Pareto report: one self-contained HTML file."""
    spec = _spec(study, None, calibration)
    try:
        stored = load_stored_study(spec, storage)
        path = _write_report(stored, _scored_with(spec, stored, calibration), storage or "", out)
    except DseInputError as exc:
        fail(str(exc))
        return
    typer.echo(f"report written to {path} ({path.stat().st_size / 1e6:.1f} MB)")


@app.command("plot")
def plot_cmd(
    study: Annotated[str, typer.Argument(help="Study name or file.")],
    storage: StorageOpt = None,
    x: Annotated[str | None, typer.Option("--x", help="Objective on x (default: the first).")] = None,
    y: Annotated[str | None, typer.Option("--y", help="Objective on y (default: the second).")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="HTML file (default: NAME-front.html beside the journal, unless --png or "
        "--svg is given).")] = None,
    png: Annotated[Path | None, typer.Option("--png", help="Export a PNG (kaleido + Chromium).")] = None,
    svg: Annotated[Path | None, typer.Option(
        "--svg", help="Export an SVG (kaleido + Chromium).")] = None,
) -> None:
    """A quick single front of two objectives: HTML, or PNG/SVG through kaleido (then HTML only
    with --out)."""
    from dse.outputs.figures import titled_page, to_graph_object
    from dse.outputs.report import gather, pair_figure
    from dse.search.results import objective_set_of

    spec = _spec(study)
    try:
        stored = load_stored_study(spec, storage)
        spec = as_recorded(spec, stored.user_attrs)
        objectives = objective_set_of(stored, spec)
    except DseInputError as exc:
        fail(str(exc))
        return
    names = [o.metric for o in objectives.objectives]
    x = x or names[0]
    y = y or (names[1] if len(names) > 1 else "capex_usd")
    for flag, metric in (("--x", x), ("--y", y)):
        if metric not in names and metric not in METRIC_NAMES:
            fail(f"{flag}: unknown metric {metric!r}")
    plain = pair_figure(gather(stored, spec, objectives), x, y)
    written: list[Path] = []
    if out is not None or (png is None and svg is None):
        base = output_base(spec, storage or "")
        path = out or base.with_name(f"{base.name}-front.html")
        write_or_fail(path, titled_page(plain, f"dse front: {spec.name}, {y} by {x}"))
        written.append(path)
    for target, kind in ((png, "png"), (svg, "svg")):
        if target is None:
            continue
        try:
            image = to_graph_object(plain).to_image(format=kind)
        except Exception as exc:  # kaleido raises several types when no browser is found
            fail(f"static export to {target} needs kaleido 1.x and a Chromium browser "
                 f"(pip install kaleido; apt-get install chromium): {str(exc).splitlines()[0]}")
            return
        write_or_fail(target, image)
        written.append(target)
    typer.echo(f"front written to {', '.join(str(p) for p in written)}")
