"""The model's fingerprint: a hash of the code and data that decide a design's score.

A study records it (``dse:model``, :mod:`dse.search.runner`), and caches of scores derived from a
study (the retimings of :mod:`dse.search.robust_front`) are keyed by it, so that a fix to the model that
changes scores without a new dse or calibration version is never hidden by a stale record or
cache. Kept apart from the runner so that the read-only commands can hash the model without
importing the runner (its sampler and sweep imports cost half a second)."""

from __future__ import annotations

import functools
import hashlib
from importlib import resources
from pathlib import Path

MODEL_DATA = ("data/catalog.toml", "data/calibration.toml")
"""The data files whose content decides a design's score, beside every module of :mod:`dse.model`
(the workload and system files a study records itself)."""


def model_sources() -> list[str]:
    """Package-relative paths of the files hashed by :func:`model_fingerprint`, in a fixed order."""
    root = Path(str(resources.files("dse")))
    modules = sorted(p.relative_to(root).as_posix() for p in (root / "model").rglob("*.py"))
    return [*modules, *MODEL_DATA]


@functools.cache
def model_fingerprint() -> str:
    """12 hex digits of a SHA-256 over :func:`model_sources`: a study records it, and a resume
    under a different model (a fix that changes scores without a new dse or calibration version)
    is recorded in ``dse:changes`` with the trial it starts from. Any edit counts, a refactoring
    that keeps every score too: the record says the code changed, not that the scores did."""
    digest = hashlib.sha256()
    package = resources.files("dse")
    for name in model_sources():
        digest.update(name.encode())
        digest.update((package / name).read_bytes())
    return digest.hexdigest()[:12]
