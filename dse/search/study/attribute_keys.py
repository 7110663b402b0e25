"""The names of the attributes dse stores in Optuna studies and trials (``dse:...``), each spelled
once, here: the stored names are a contract (studies made by earlier versions are read with
them), so a module that reads or writes one imports it from this module rather than typing it,
and ``tests/test_one_home_keys.py`` fails on a ``"dse:..."`` literal anywhere else in the package.

Imports nothing, so any module of the package can use it without an import circle.
"""

from __future__ import annotations

KEY_PREFIX = "dse:"
"""What every dse attribute name starts with (a study's change log names them without it)."""

# --- study user attributes: what a study is made of, compared on resume -------------------------

WORKLOAD_KEY = "dse:workload"
"""The workload (JSON: its name, overrides, table scale and summary)."""
SPACE_KEY = "dse:space"
"""The search space (JSON: :meth:`dse.search.study.search_space.SearchSpace.to_dict`)."""
OBJECTIVES_KEY = "dse:objectives"
"""The objective set (JSON: :meth:`dse.search.study.objective_sets.ObjectiveSet.to_dict`)."""
CATALOG_KEY = "dse:catalog"
"""The user catalog's changes (JSON list, by file name); only a study with a user catalog has it."""

# --- study user attributes: how and by what a study was made ----------------------------------

BUDGET_KEY = "dse:budget"
"""The study's budget of completed trials; written last when a study is created, so its presence
tells other processes the study is ready."""
VERSION_KEY = "dse:version"
"""The dse version that scored the study's trials (since the last entry of :data:`CHANGES_KEY`)."""
CALIBRATION_VERSION_KEY = "dse:calibration_version"
"""The calibration version that scored the study's trials."""
MODEL_KEY = "dse:model"
"""The model's fingerprint (:func:`dse.search.fingerprint.model_fingerprint`)."""
STUDY_KEY = "dse:study"
"""The study file's fields (JSON) as the study was created."""
FILES_KEY = "dse:files"
"""Where a study's files were (:func:`dse.search.study.study_file.study_files`), so its results can be read
again wherever the files live."""
CONTENTS_KEY = "dse:contents"
"""What every file the study resolved held (:func:`dse.search.study.contents.study_contents`; JSON:
label -> ``path``, ``sha256``, ``text``), the systems its space names included, so a resume that
would resolve a name to other content stops, and results are rebuilt from any folder."""
CHANGES_KEY = "dse:changes"
"""The log of what changed on resume (forced definition changes, new versions), oldest first."""
REFERENCE_KEY = "dse:reference"
"""The fixed hypervolume box (JSON: ``ideal``, ``nadir``, ``hypervolume`` of the coarse front in
it, ``designs`` swept, ``method``; :mod:`dse.search.algorithms.reference`)."""
WARM_START_KEY = "dse:warm_start"
"""That a study was seeded from a sweep's front, and with what
(:func:`dse.search.algorithms.sweep.warm_start`)."""
PRESCREEN_KEY = "dse:prescreen"
"""That a new study's sweep started from a space-filling pre-screen (its space too large for a
coarse grid), how many designs it scored and its CPU seconds, and those of the refinement after
it (:meth:`dse.search.algorithms.refine.Screened.record`)."""

# --- study system attributes -------------------------------------------------------------------

CREATOR_KEY = "dse:creator"
"""``HOST:PID`` of the process that records the study, so a process on the same host that finds
the recording unfinished and its creator dead completes it at once."""

# --- trial attributes --------------------------------------------------------------------------

WORKER_KEY = "dse:worker"
"""Trial system attribute: the worker (host:pid) running the trial."""
RETRY_KEY = "dse:retry_of"
"""Trial user attribute: the number of the trial whose design this one retries."""
PROPOSAL_KEY = "dse:proposal"
"""Trial system attribute set in memory by the default sampler on the trials whose design it
chose itself (``stratified``, ``neighbour``, ``extreme``); the objective stores it as the user
attribute ``proposal``."""

__all__ = [
    "BUDGET_KEY",
    "CALIBRATION_VERSION_KEY",
    "CATALOG_KEY",
    "CHANGES_KEY",
    "CONTENTS_KEY",
    "CREATOR_KEY",
    "FILES_KEY",
    "KEY_PREFIX",
    "MODEL_KEY",
    "OBJECTIVES_KEY",
    "PRESCREEN_KEY",
    "PROPOSAL_KEY",
    "REFERENCE_KEY",
    "RETRY_KEY",
    "SPACE_KEY",
    "STUDY_KEY",
    "VERSION_KEY",
    "WARM_START_KEY",
    "WORKER_KEY",
    "WORKLOAD_KEY",
]
