"""Samples to converge as a function of global batch (``dse/data/convergence.toml``).

A larger batch needs more samples to reach the target quality. MLPerf Training publishes, per
benchmark, reference convergence points (RCPs): batches at which the reference implementation was
run repeatedly to the target, with each run's epochs to converge. A :class:`ConvergenceCurve` holds
those points with their source; :func:`samples_to_converge` reads the curve:

- at an RCP batch: the olympic mean of its runs (sorted, the fastest and slowest dropped: the
  RCP checker's ``RCP Mean``) times the samples of one epoch;
- between two RCP batches: linear in batch between their means (the RCP checker's own
  interpolation, ``np.interp`` over ``BS`` in ``_create_interp_rcp``);
- below the smallest RCP batch: the smallest batch's samples (flat; a smaller batch is not
  assumed to converge in fewer samples than the fastest published reference);
- above the largest RCP batch: ``None``, with :func:`beyond_curve` saying why. No reference run
  shows the target is reachable there, so no number is extrapolated.

>>> curve = load_curve("mlperf-dlrm-dcnv2")
>>> round(samples_to_converge(curve, 135168) / curve.samples_per_epoch, 4)
0.9279
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from dataclasses import dataclass, field
from importlib import resources

from dse.errors import DseInputError
from dse.records import from_mapping

CONVERGENCE_FILE = "convergence.toml"
"""The packaged curves, under ``dse/data``."""
OLYMPIC_DROP = 1
"""Runs dropped at each end before averaging an RCP's epochs (rcp_checker.py: 1 for every
benchmark but unet3d)."""


@dataclass(frozen=True, slots=True)
class ConvergencePoint:
    """One reference convergence point: a global batch and each reference run's epochs."""

    global_batch: int = field(metadata={"min": 1})
    epochs_to_converge: tuple[float, ...] = field(metadata={"min": 0.0})

    def mean_epochs(self) -> float:
        """Olympic mean of the runs' epochs (the fastest and slowest run dropped when there are
        enough runs to drop them)."""
        runs = sorted(self.epochs_to_converge)
        kept = runs[OLYMPIC_DROP:len(runs) - OLYMPIC_DROP] if len(runs) > 2 * OLYMPIC_DROP else runs
        return sum(kept) / len(kept)


@dataclass(frozen=True, slots=True)
class ConvergenceCurve:
    """A benchmark's reference convergence points (sorted by batch) and where they come from."""

    points: tuple[ConvergencePoint, ...]
    samples_per_epoch: int = field(metadata={"min": 1})
    repository: str = ""
    path: str = ""
    commit: str = ""
    description: str = ""
    name: str = ""
    """The curve's key in the file (set on loading)."""

    @property
    def source(self) -> str:
        """``repository/path@commit``: the file the points were copied from."""
        return f"{self.repository}/{self.path}@{self.commit}"

    @property
    def short_source(self) -> str:
        """The source file's last two path parts (``training_3.1.0/rcps_dlrm_dcnv2.json``)."""
        return "/".join(self.path.split("/")[-2:])

    @property
    def max_batch(self) -> int:
        """The largest batch with a reference point: the curve ends there."""
        return self.points[-1].global_batch


@dataclass(frozen=True, slots=True)
class _ConvergenceFile:
    """``dse/data/convergence.toml`` as written: the curves by benchmark name."""

    curves: dict[str, ConvergenceCurve]


def samples_to_converge(curve: ConvergenceCurve, global_batch: int) -> float | None:
    """Training samples to reach the benchmark's target at ``global_batch`` (module docstring for
    the rule); ``None`` above the curve's largest batch."""
    pts = curve.points
    if global_batch > curve.max_batch:
        return None
    if global_batch <= pts[0].global_batch:
        return pts[0].mean_epochs() * curve.samples_per_epoch
    for lo, hi in itertools.pairwise(pts):
        if global_batch <= hi.global_batch:
            share = (global_batch - lo.global_batch) / (hi.global_batch - lo.global_batch)
            epochs = lo.mean_epochs() + share * (hi.mean_epochs() - lo.mean_epochs())
            return epochs * curve.samples_per_epoch
    raise AssertionError("unreachable: the batch is at most the largest point's")


def beyond_curve(curve: ConvergenceCurve, global_batch: int) -> str:
    """Why a batch has no samples to converge on ``curve`` (empty when it has)."""
    if global_batch <= curve.max_batch:
        return ""
    return (f"global batch {global_batch:,} is above the largest reference convergence point of "
            f"{curve.name} ({curve.max_batch:,}): no published run shows the target is reached "
            "there")


def curve_names() -> tuple[str, ...]:
    """Names of the packaged convergence curves."""
    return tuple(_curves())


def load_curve(name: str, source: str = "convergence") -> ConvergenceCurve:
    """A packaged curve by name; an unknown name is a :class:`DseInputError` against ``source``
    (the workload file that names it)."""
    curves = _curves()
    if name not in curves:
        raise DseInputError(source, "convergence", f"unknown convergence curve {name!r} "
                            f"(known: {', '.join(curves)})")
    return curves[name]


@functools.cache
def _curves() -> dict[str, ConvergenceCurve]:
    import tomllib

    text = (resources.files("dse") / "data" / CONVERGENCE_FILE).read_text(encoding="utf-8")
    source = f"dse/data/{CONVERGENCE_FILE}"
    raw = from_mapping(_ConvergenceFile, tomllib.loads(text), source)
    out: dict[str, ConvergenceCurve] = {}
    for name, c in raw.curves.items():
        points = tuple(sorted(c.points, key=lambda p: p.global_batch))
        if not points or any(not p.epochs_to_converge for p in points):
            raise DseInputError(source, f"curves.{name}.points", "needs points with runs")
        out[name] = dataclasses.replace(c, name=name, points=points)
    return out


@dataclass(frozen=True, slots=True)
class TrainingSamples:
    """The samples a training run needs, and where that number comes from."""

    samples: float | None
    """Samples to train; ``None`` when nothing gives a number (the batch is beyond the curve, or
    the workload has neither a curve nor a dataset size)."""
    basis: str
    """One line: the curve and its source, or why one epoch stands in, or why there is none."""
    on_curve: bool
    """True when a convergence curve gave the number."""


def training_samples(workload_name: str, convergence: str, global_batch: int,
                     samples_per_epoch: int) -> TrainingSamples:
    """Samples to train a workload: its convergence curve at ``global_batch`` when it names one
    (``convergence``), else one epoch of its dataset (``samples_per_epoch``), else none."""
    if convergence:
        curve = load_curve(convergence)
        samples = samples_to_converge(curve, global_batch)
        if samples is None:
            return TrainingSamples(None, beyond_curve(curve, global_batch), True)
        return TrainingSamples(samples, f"samples to converge at batch {global_batch:,}: "
                               f"{curve.name} reference convergence points ({curve.short_source})",
                               True)
    if samples_per_epoch:
        return TrainingSamples(float(samples_per_epoch), f"{workload_name} has no convergence "
                               f"curve: one epoch ({samples_per_epoch:,} samples) stands in", False)
    return TrainingSamples(None, f"{workload_name} has no convergence curve and states no "
                           "dataset size (samples_per_epoch)", False)
