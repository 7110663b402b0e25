"""DLRM workload specification and its derived figures.

A :class:`Workload` is plain data: embedding tables, MLP widths, the feature interaction, the global
batch, precisions and optimizers. Derived figures (parameters, bytes, FLOPs and lookups per sample) are
methods, so every equation for the model's size lives here and nowhere else.

Presets live in ``dse/data/workloads/*.toml``; a workload file lists its tables explicitly
(``[tables] rows = [...], dim = 128, pooling = 1``) or describes a synthetic population
(``[synthetic]``) that is generated deterministically from a seed.

>>> w = load_workload("mlperf-dlrm-v1")
>>> round(w.forward_flops_per_sample() / 1e6, 2)
4.82
"""

from __future__ import annotations

import dataclasses
import functools
import math
import random
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from dse.errors import DseInputError
from dse.limits import (
    MAX_EMBEDDING_DIM,
    MAX_EMBEDDING_PARAMS,
    MAX_GLOBAL_BATCH,
    MAX_MLP_LAYERS,
    MAX_MLP_WIDTH,
    MAX_POOLING,
    MAX_ROWS_PER_TABLE,
    MAX_SIZE_SIGMA,
    MAX_TABLES,
    MAX_ZIPF,
    positive,
    upto,
)
from dse.model.catalog import Precision
from dse.model.convergence import ConvergenceCurve, OwnCurve, larger_batch, load_curve, own_curve
from dse.model.estimators import MultiHotIds
from dse.model.widths import INDEX_BYTES
from dse.records import WORKLOAD, apply_override, convert, from_mapping, named_file, read_toml, source_name

Interaction = Literal["dot", "dcnv2"]
EmbeddingDtype = Literal["fp32", "fp16", "int8"]
Optimizer = Literal["sgd", "adagrad", "rowwise_adagrad", "adam"]

EMBEDDING_DTYPE_BYTES: dict[str, int] = {"fp32": 4, "fp16": 2, "int8": 1}
DENSE_FEATURE_BYTES = 8

_STATE_PER_ELEMENT: dict[str, int] = {"sgd": 0, "adagrad": 1, "rowwise_adagrad": 0, "adam": 2}
_STATE_PER_ROW: dict[str, int] = {"sgd": 0, "adagrad": 0, "rowwise_adagrad": 1, "adam": 0}
OPTIMIZER_STATE_BYTES = 4
"""Optimizer state is kept in fp32 (PyTorch, TorchRec FBGEMM and HugeCTR defaults)."""

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def _memo(method: F) -> F:
    """Cache a method's result per instance and arguments (workloads are immutable, and the model
    asks for the same derived figures thousands of times per second)."""
    name = method.__name__

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any) -> Any:
        cache: dict[tuple[Any, ...], Any] = self.__dict__.setdefault("_memo", {})
        key = (name, *args)
        try:
            return cache[key]
        except KeyError:
            value = cache[key] = method(self, *args)
            return value

    return wrapper  # type: ignore[return-value]


def derived(workload: Workload, key: str, compute: Callable[[Workload], T]) -> T:
    """``compute(workload)``, computed once per workload object (as :func:`_memo` does for the
    methods): for figures another module derives from the workload alone. ``key`` names the figure
    and must be unique to ``compute``."""
    cache: dict[Any, Any] = workload.__dict__.setdefault("_memo", {})
    try:
        value: T = cache[key]
    except KeyError:
        value = cache[key] = compute(workload)
    return value


@dataclass(frozen=True, slots=True)
class EmbeddingTable:
    """One embedding table: ``rows`` x ``dim`` elements, ``pooling`` lookups per sample (sum-pooled)."""

    rows: int
    dim: int
    pooling: float
    """Average lookups per sample (1 for one-hot features)."""

    def params(self) -> int:
        """Number of embedding parameters."""
        return self.rows * self.dim


@dataclass(frozen=True, slots=True)
class TableSet:
    """Explicit table list in a workload file; ``dim`` and ``pooling`` may be scalars (broadcast)."""

    rows: tuple[int, ...] = field(metadata=upto(MAX_ROWS_PER_TABLE, 1))
    dim: tuple[int, ...] = field(metadata=upto(MAX_EMBEDDING_DIM, 1))
    pooling: tuple[float, ...] = field(metadata=upto(MAX_POOLING))


@dataclass(frozen=True, slots=True)
class SyntheticTables:
    """A deterministic synthetic table population (production-scale models, marked synthetic).

    Table sizes follow a log-normal spread with ``size_sigma`` and are scaled so that the embedding
    parameters total ``total_params``; dims are drawn from ``dims``; pooling is drawn around
    ``pooling_mean`` (geometric, at least 1).
    """

    seed: int
    count: int = field(metadata=upto(MAX_TABLES, 1))
    total_params: float = field(metadata=positive(MAX_EMBEDDING_PARAMS))
    dims: tuple[int, ...] = field(metadata=upto(MAX_EMBEDDING_DIM, 1))
    pooling_mean: float = field(metadata=upto(MAX_POOLING, 1.0))
    size_sigma: float = field(default=1.5, metadata=upto(MAX_SIZE_SIGMA, 0.0))

    def generate(self) -> tuple[EmbeddingTable, ...]:
        """The tables, identical for the same fields on every platform (``random.Random``)."""
        rng = random.Random(self.seed)
        dims = [rng.choice(self.dims) for _ in range(self.count)]
        weights = [rng.lognormvariate(0.0, self.size_sigma) for _ in range(self.count)]
        p = 1.0 / self.pooling_mean
        pooling = [_geometric(rng, p) for _ in range(self.count)]
        scale = self.total_params / sum(w * d for w, d in zip(weights, dims, strict=True))
        return tuple(
            EmbeddingTable(rows=max(1, round(w * scale)), dim=d, pooling=float(k))
            for w, d, k in zip(weights, dims, pooling, strict=True)
        )


def _geometric(rng: random.Random, p: float) -> int:
    """A geometric draw on {1, 2, ...} with success probability ``p`` (mean 1/p)."""
    if p >= 1.0:
        return 1
    u = 1.0 - rng.random()
    return 1 + int(math.log(u) / math.log(1.0 - p))


@dataclass(frozen=True)
class Workload:
    """A DLRM training workload (docs/design.md, section 3)."""

    name: str
    tables: tuple[EmbeddingTable, ...]
    dense_features: int
    bottom_mlp: tuple[int, ...]
    top_mlp: tuple[int, ...]
    interaction: Interaction
    global_batch: int
    precision: Precision
    embedding_dtype: EmbeddingDtype
    embedding_optimizer: Optimizer
    dense_optimizer: Optimizer
    dcn_layers: int = 0
    dcn_rank: int = 0
    access_zipf: float = 1.05
    """Zipf exponent of row popularity: the hit rate of hot rows and HBM caches, and how many
    distinct rows a step's lookups touch, which the embedding backward reads and writes once each
    (Criteo features are heavily skewed; exponents near 1 are typical for click logs, an
    assumption no measurement pins: every interval takes in the calibration's
    ``access_zipf_spread`` either side of it)."""
    multi_hot_ids: MultiHotIds = "drawn"
    """How a sample's lookups into one multi-hot table are chosen (:data:`MultiHotIds`): ``drawn``
    independently, or ``derived`` from one drawn id (MLPerf DLRM-DCNv2's synthetic multi-hot)."""
    description: str = ""
    source: str = ""
    synthetic: bool = False
    samples_per_epoch: int = 0
    """Training samples in one pass over the workload's own dataset; 0 when its file states none
    (synthetic models and benchmarks on random data)."""
    convergence: str = ""
    """The convergence curve (samples to converge by global batch, :mod:`dse.model.convergence`)
    of this model and dataset; empty when none is published."""
    convergence_curve: ConvergenceCurve | None = None
    """The workload's own curve (its file's ``[convergence_curve]``), in place of a packaged one."""
    global_batch_accelerators: int = 0
    """The accelerators ``global_batch`` was measured on (the reference run's); 0: not said. A
    design of more gets a note with the larger batch the curve allows (:meth:`larger_batch`)."""

    def curve(self) -> ConvergenceCurve | None:
        """Samples to converge by batch: the workload's own curve, else its packaged one."""
        if self.convergence_curve is not None:
            return self.convergence_curve
        return load_curve(self.convergence) if self.convergence else None

    def larger_batch(self, devices: int) -> int | None:
        """The largest batch the curve allows, when ``devices`` are more than the stated batch
        was measured on and the curve reaches beyond it (:func:`dse.model.convergence.larger_batch`)."""
        return larger_batch(self.curve(), self.global_batch, self.global_batch_accelerators, devices)

    # --- sizes -----------------------------------------------------------------------------------
    @_memo
    def embedding_params(self) -> int:
        """Embedding parameters (rows x dim summed over tables)."""
        return sum(t.params() for t in self.tables)

    def row_bytes(self, dim: int) -> int:
        """Bytes of one embedding row of ``dim`` elements."""
        return dim * EMBEDDING_DTYPE_BYTES[self.embedding_dtype]

    @_memo
    def embedding_bytes(self) -> int:
        """Bytes of all embedding rows (without optimizer state)."""
        return self.embedding_params() * EMBEDDING_DTYPE_BYTES[self.embedding_dtype]

    def table_bytes(self, table: EmbeddingTable) -> int:
        """Bytes one table occupies in memory: rows plus its optimizer state."""
        return table.rows * self.row_state_bytes(table.dim)

    def row_state_bytes(self, dim: int) -> int:
        """Bytes per row including the embedding optimizer's state."""
        opt = self.embedding_optimizer
        state = (_STATE_PER_ELEMENT[opt] * dim + _STATE_PER_ROW[opt]) * OPTIMIZER_STATE_BYTES
        return self.row_bytes(dim) + state

    @_memo
    def embedding_footprint_bytes(self) -> int:
        """Bytes of all tables with optimizer state."""
        return sum(self.table_bytes(t) for t in self.tables)

    @_memo
    def lookups_per_sample(self) -> float:
        """Embedding rows read per sample (sum of pooling factors)."""
        return sum(t.pooling for t in self.tables)

    @_memo
    def embedding_output_dim(self) -> int:
        """Sum of table dims: the pooled activations one sample produces."""
        return sum(t.dim for t in self.tables)

    # --- dense part --------------------------------------------------------------------------------
    def interaction_dim(self) -> int:
        """Feature width entering the interaction (bottom-MLP output width)."""
        return self.bottom_mlp[-1] if self.bottom_mlp else self.dense_features

    def interaction_features(self) -> int:
        """Number of feature vectors interacting: one per table plus the dense vector."""
        return len(self.tables) + 1

    @_memo
    def top_mlp_input(self) -> int:
        """Width entering the top MLP."""
        if self.interaction == "dot":
            f = self.interaction_features()
            return self.interaction_dim() + f * (f - 1) // 2
        return self.interaction_dim() + self.embedding_output_dim()

    @_memo
    def mlp_layers(self) -> tuple[tuple[int, int], ...]:
        """(in, out) of every dense GEMM per sample: bottom MLP, DCNv2 projections, top MLP."""
        layers: list[tuple[int, int]] = []
        width = self.dense_features
        for out in self.bottom_mlp:
            layers.append((width, out))
            width = out
        if self.interaction == "dcnv2":
            x0 = self.top_mlp_input()
            for _ in range(self.dcn_layers):
                layers.append((x0, self.dcn_rank))
                layers.append((self.dcn_rank, x0))
        width = self.top_mlp_input()
        for out in self.top_mlp:
            layers.append((width, out))
            width = out
        return tuple(layers)

    @_memo
    def interaction_flops_per_sample(self) -> float:
        """Forward FLOPs of the dot interaction (2 x pairs x dim); DCNv2 is in :meth:`mlp_layers`."""
        if self.interaction != "dot":
            return 0.0
        f = self.interaction_features()
        return 2.0 * (f * (f - 1) // 2) * self.interaction_dim()

    @_memo
    def forward_flops_per_sample(self) -> float:
        """Dense forward FLOPs per sample: 2 x sum(in x out) over GEMMs plus the interaction."""
        return 2.0 * sum(i * o for i, o in self.mlp_layers()) + self.interaction_flops_per_sample()

    def training_flops_per_sample(self) -> float:
        """Forward plus backward (backward is about 2x forward: data and weight gradients)."""
        return 3.0 * self.forward_flops_per_sample()

    @_memo
    def dense_params(self) -> int:
        """Parameters of the data-parallel dense part (weights and biases)."""
        return sum(i * o + o for i, o in self.mlp_layers())

    def dense_optimizer_state_per_param(self) -> int:
        """fp32 optimizer state values per dense parameter."""
        return _STATE_PER_ELEMENT[self.dense_optimizer] + (
            1 if self.dense_optimizer == "rowwise_adagrad" else 0
        )

    @_memo
    def input_bytes_per_sample(self) -> float:
        """Bytes the host ships per sample: dense features, sparse indices and the label."""
        return (
            self.dense_features * DENSE_FEATURE_BYTES
            + self.lookups_per_sample() * INDEX_BYTES
            + DENSE_FEATURE_BYTES
        )

    def summary(self) -> dict[str, Any]:
        """Headline figures for reports and ``dse list``."""
        return {
            "name": self.name,
            "tables": len(self.tables),
            "embedding_params": self.embedding_params(),
            "embedding_gb": self.embedding_bytes() / 1e9,
            "footprint_gb": self.embedding_footprint_bytes() / 1e9,
            "dense_params": self.dense_params(),
            "forward_mflop_per_sample": self.forward_flops_per_sample() / 1e6,
            "lookups_per_sample": self.lookups_per_sample(),
            "global_batch": self.global_batch,
            "precision": self.precision,
            "interaction": self.interaction,
            "synthetic": self.synthetic,
        }


@dataclass(frozen=True, slots=True)
class _WorkloadFile:
    """The on-disk form of a workload (tables explicit or synthetic)."""

    name: str
    dense_features: int = field(metadata=upto(MAX_MLP_WIDTH, 1))
    bottom_mlp: tuple[int, ...] = field(metadata=upto(MAX_MLP_WIDTH, 1))
    top_mlp: tuple[int, ...] = field(metadata=upto(MAX_MLP_WIDTH, 1))
    interaction: Interaction
    global_batch: int = field(metadata=upto(MAX_GLOBAL_BATCH, 1))
    precision: Precision
    embedding_dtype: EmbeddingDtype
    embedding_optimizer: Optimizer
    dense_optimizer: Optimizer
    tables: TableSet | None = None
    synthetic: SyntheticTables | None = None
    dcn_layers: int = field(default=0, metadata=upto(MAX_MLP_LAYERS))
    dcn_rank: int = field(default=0, metadata=upto(MAX_MLP_WIDTH))
    access_zipf: float = field(default=1.05, metadata=upto(MAX_ZIPF, 0.0))
    multi_hot_ids: MultiHotIds = "drawn"
    samples_per_epoch: int = field(default=0, metadata={"min": 0})
    convergence: str = ""
    convergence_curve: OwnCurve | None = None
    global_batch_accelerators: int = field(default=0, metadata=upto(MAX_GLOBAL_BATCH))
    description: str = ""
    source: str = ""


def _broadcast_tables(data: dict[str, Any], source: str) -> dict[str, Any]:
    tables = data.get("tables")
    if not isinstance(tables, dict):
        return data
    rows = tables.get("rows")
    if not isinstance(rows, list):
        raise DseInputError(source, "tables.rows", "expected a list of row counts")
    _check_count(len(rows), MAX_TABLES, source, "tables.rows", "tables")
    out = dict(tables)
    for key in ("dim", "pooling"):
        value = out.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = [value] * len(rows)
        elif isinstance(value, list) and len(value) != len(rows):
            raise DseInputError(
                source, f"tables.{key}", f"has {len(value)} entries but tables.rows has {len(rows)}"
            )
    return {**data, "tables": out}


def _check_count(n: int, limit: int, source: str, key: str, what: str) -> None:
    """Refuse a list of more than ``limit`` entries (limits in :mod:`dse.limits`)."""
    if n > limit:
        raise DseInputError(source, key, f"has {n:,} {what}; at most {limit:,} are supported")


def _check_shape(spec: _WorkloadFile, tables: tuple[EmbeddingTable, ...], source: str) -> None:
    """A DLRM has at least one table and a top MLP; no table exceeds the row limit (a synthetic
    population may concentrate ``total_params`` in a few tables)."""
    if not tables:
        raise DseInputError(source, "tables.rows", "a workload needs at least one embedding table")
    if not spec.top_mlp:
        raise DseInputError(source, "top_mlp", "a workload needs at least one top-MLP layer")
    for key, layers in (("bottom_mlp", spec.bottom_mlp), ("top_mlp", spec.top_mlp)):
        _check_count(len(layers), MAX_MLP_LAYERS, source, key, "layers")
    if spec.synthetic is not None:
        largest = max(t.rows for t in tables)
        if largest > MAX_ROWS_PER_TABLE:
            raise DseInputError(source, "synthetic.total_params",
                                f"makes a table of {largest:.3g} rows; at most "
                                f"{MAX_ROWS_PER_TABLE:.0e} rows per table are supported")


def workload_from_mapping(data: dict[str, Any], source: str) -> Workload:
    """Validate a workload table (as read from TOML) and build the :class:`Workload`."""
    spec = from_mapping(_WorkloadFile, _broadcast_tables(data, source), source)
    if (spec.tables is None) == (spec.synthetic is None):
        raise DseInputError(source, "tables", "give exactly one of [tables] or [synthetic]")
    if spec.tables is not None:
        for key, values in (("rows", spec.tables.rows), ("dim", spec.tables.dim)):
            for i, v in enumerate(values):
                if v < 1:
                    raise DseInputError(source, f"tables.{key}[{i}]", f"must be at least 1, got {v}")
        for i, p in enumerate(spec.tables.pooling):
            if p <= 0:
                raise DseInputError(source, f"tables.pooling[{i}]", f"must be positive, got {p}")
        tables = tuple(
            EmbeddingTable(rows=r, dim=d, pooling=float(p))
            for r, d, p in zip(spec.tables.rows, spec.tables.dim, spec.tables.pooling, strict=True)
        )
    else:
        assert spec.synthetic is not None
        if not spec.synthetic.dims:
            raise DseInputError(source, "synthetic.dims", "needs at least one dim")
        tables = spec.synthetic.generate()
    _check_shape(spec, tables, source)
    if spec.convergence and spec.convergence_curve is not None:
        raise DseInputError(source, "convergence_curve", "give convergence (a packaged curve) or "
                            "[convergence_curve] (the workload's own), not both")
    if spec.convergence:
        load_curve(spec.convergence, source)
    own = (own_curve(spec.convergence_curve, spec.name, spec.samples_per_epoch, source)
           if spec.convergence_curve is not None else None)
    if spec.interaction == "dcnv2" and (spec.dcn_layers < 1 or spec.dcn_rank < 1):
        raise DseInputError(source, "dcn_layers", "dcnv2 needs dcn_layers >= 1 and dcn_rank >= 1")
    # A dot interaction needs equal widths; tables of other dims are taken as projected to the
    # bottom-MLP width (the projection's FLOPs are negligible next to the MLPs).
    return Workload(
        name=spec.name,
        tables=tables,
        dense_features=spec.dense_features,
        bottom_mlp=spec.bottom_mlp,
        top_mlp=spec.top_mlp,
        interaction=spec.interaction,
        global_batch=spec.global_batch,
        precision=spec.precision,
        embedding_dtype=spec.embedding_dtype,
        embedding_optimizer=spec.embedding_optimizer,
        dense_optimizer=spec.dense_optimizer,
        dcn_layers=spec.dcn_layers,
        dcn_rank=spec.dcn_rank,
        access_zipf=spec.access_zipf,
        multi_hot_ids=spec.multi_hot_ids,
        description=spec.description,
        source=spec.source,
        synthetic=spec.synthetic is not None,
        samples_per_epoch=spec.samples_per_epoch,
        convergence=spec.convergence,
        convergence_curve=own,
        global_batch_accelerators=spec.global_batch_accelerators,
    )


def workload_presets() -> tuple[str, ...]:
    """Names of the workload presets: ``./workloads`` under the working directory and the packaged ones."""
    return WORKLOAD.names()


def read_workload_data(name_or_path: str) -> tuple[dict[str, Any], str]:
    """The raw table of a workload preset or file, and the source name used in errors."""
    path = named_file(name_or_path, WORKLOAD)
    return read_toml(path), source_name(path, WORKLOAD)


def load_workload(name_or_path: str, overrides: tuple[tuple[str, Any], ...] = ()) -> Workload:
    """Load a workload by preset name or TOML path, with ``(dotted.key, value)`` overrides applied.

    Overrides use the file's keys (``global_batch``, ``precision``, ``tables.dim``...).
    """
    if not overrides:
        return _load_cached(name_or_path)
    data, source = read_workload_data(name_or_path)
    for key, value in overrides:
        data = apply_override(data, key, value)
    return workload_from_mapping(data, source)


@functools.lru_cache(maxsize=64)
def _load_cached(name_or_path: str) -> Workload:
    data, source = read_workload_data(name_or_path)
    return workload_from_mapping(data, source)


SEARCHABLE_FIELDS: dict[str, str] = {
    "global_batch": "the batch trades throughput against samples to converge (the workload's "
                    "convergence curve); the published reference runs retune nothing but the "
                    "learning rate with it, which the curve already includes",
    "precision": "compute precision (amp, bf16, fp8...): a system choice that keeps the model "
                 "and its optimizer settings",
    "embedding_dtype": "storage precision of embedding rows: trades memory and lookup bytes, "
                       "model and optimizer settings unchanged",
}
"""Workload fields a search space may vary (``workload.NAME``), and why each is a design choice.
Left out on purpose: the optimizers (another optimizer needs its own learning rate and has no
published convergence points), the model's shape (tables, MLPs, interaction: another model, not
another design) and the dataset (``samples_per_epoch``, ``access_zipf``: facts about the data)."""


PER_DEVICE_FIELDS: dict[str, tuple[str, str]] = {
    "batch_per_accelerator": (
        "global_batch", "the batch each training device (an accelerator, or a CPU node's sockets) "
        "runs: the global batch grows with the design, as a cluster's operator sizes it"),
}
"""Searchable names that set a workload field to their value times the design's training
devices (``workload.batch_per_accelerator = 4096`` on 16 GPUs is a global batch of 65,536), with
the field they set and why each is a design choice."""


def with_fields(workload: Workload, changes: tuple[tuple[str, Any], ...], source: str,
                devices: int = 1) -> Workload:
    """A copy of ``workload`` with searchable fields (:data:`SEARCHABLE_FIELDS`) changed, each
    value checked as a workload file's would be, and per-device ones (:data:`PER_DEVICE_FIELDS`)
    set to their value times ``devices``; anything else is a :class:`DseInputError`."""
    if not changes:
        return workload
    fields: dict[str, Any] = {}
    for key, value in changes:
        if key in PER_DEVICE_FIELDS:
            field_name = PER_DEVICE_FIELDS[key][0]
            fields[field_name] = searchable_value(field_name, searchable_value(key, value, source)
                                                  * devices, source)
        else:
            fields[key] = searchable_value(key, value, source)
    return dataclasses.replace(workload, **fields)


def searchable_value(key: str, value: Any, source: str) -> Any:
    """``value`` checked (and converted) as the workload field ``key`` of a file would be (a
    per-device one as its field's, a whole number of at least 1); a :class:`DseInputError` for a
    field not in :data:`SEARCHABLE_FIELDS` or :data:`PER_DEVICE_FIELDS`, or a bad value."""
    if key in PER_DEVICE_FIELDS:
        key_of = PER_DEVICE_FIELDS[key][0]
        bounds = next(f.metadata for f in dataclasses.fields(_WorkloadFile) if f.name == key_of)
        return convert(int, value, source, f"workload.{key}", bounds)
    if key not in SEARCHABLE_FIELDS:
        names = (*SEARCHABLE_FIELDS, *PER_DEVICE_FIELDS)
        raise DseInputError(source, f"workload.{key}", "not a searchable workload field "
                            f"(searchable: {', '.join('workload.' + f for f in names)})")
    meta = {f.name: f.metadata for f in dataclasses.fields(_WorkloadFile)}
    hint = typing.get_type_hints(_WorkloadFile)[key]
    return convert(hint, value, source, f"workload.{key}", meta[key])


def with_batch(workload: Workload, global_batch: int) -> Workload:
    """A copy of ``workload`` with another global batch."""
    return dataclasses.replace(workload, global_batch=global_batch)


def repeat_tables(workload: Workload, copies: int) -> Workload:
    """A copy with ``copies`` times as many tables (each table repeated): a model grown by sparse
    features, so its all-to-all volume and its interaction grow with it (the growth question of
    the Zion paper); ``copies = 1`` is the workload itself."""
    if copies < 1:
        raise ValueError(f"copies must be at least 1, got {copies}")
    if copies == 1:
        return workload
    return dataclasses.replace(workload, tables=workload.tables * copies,
                               name=f"{workload.name}-t{copies}")


def scale_tables(workload: Workload, factor: float) -> Workload:
    """A copy with every table's rows scaled by ``factor`` (the growth question: tables 4x larger)."""
    tables = tuple(dataclasses.replace(t, rows=max(1, round(t.rows * factor))) for t in workload.tables)
    return dataclasses.replace(workload, tables=tables, name=f"{workload.name}-x{factor:g}")
