"""The stages of a training step, named here and nowhere else.

Two typed views of one step (in the spirit of TorchRec's ``Perf``: immutable records with named
fields, addition and a total):

- :class:`StageCosts`: the raw seconds of every stage before overlaps (``StepTime.stages``), what
  :mod:`dse.model.timing` computes and the overlap tree reads;
- :class:`Breakdown`: each :class:`Stage`'s seconds on the critical path (``StepTime.breakdown``),
  which add up to the step time.

Their field names are the keys of ``stages_s`` and ``breakdown_s`` in ``dse evaluate --json``
(a contract). Other modules name a stage through :class:`Stage` or a field, never as a string
(tests/test_one_home_stages.py checks it).

The records are named tuples rather than frozen dataclasses: every evaluation builds one of each,
and a frozen dataclass sets each field through ``object.__setattr__`` (as frozen dataclasses,
1.4% more instructions an evaluation of DCNv2 on 16 DGX H100 and 3.0% of DLRM v1 on a DGX A100,
by cachegrind). ``+`` adds them field by field (not the tuple concatenation).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum, auto
from typing import Any, NamedTuple


class Stage(StrEnum):
    """A stage of the step-time breakdown (:class:`Breakdown`'s fields, in order). Each member is
    the string of its name (``Stage.host_pcie == "host_pcie"``), so it keys JSON and columns as the
    plain name does."""

    dense_compute = auto()
    embedding_memory = auto()
    host_pcie = auto()
    cpu_pooling = auto()
    alltoall_fabric = auto()
    alltoall_network = auto()
    allreduce_exposed = auto()
    input_exposed = auto()
    overhead = auto()


STAGES: tuple[str, ...] = tuple(stage.value for stage in Stage)
"""The names of the breakdown's stages (plain strings), in order; their critical-path shares add up
to the step time."""

STAGE_WORDS: dict[str, str] = {
    Stage.dense_compute: "dense compute",
    Stage.embedding_memory: "embedding lookups",
    Stage.host_pcie: "host PCIe",
    Stage.cpu_pooling: "host CPUs pooling tables",
    Stage.alltoall_fabric: "all-to-all in the node",
    Stage.alltoall_network: "all-to-all over the network",
    Stage.allreduce_exposed: "gradient all-reduce (exposed)",
    Stage.input_exposed: "input pipeline (exposed)",
    Stage.overhead: "per-step overhead",
}
"""Each stage in words, as figures' legends name it (the names above are identifiers)."""


class LinkTimes(NamedTuple):
    """Seconds of one exchange on the scale-up fabric and on the scale-out network."""

    fabric: float
    network: float


class EmbeddingTimes(NamedTuple):
    """Per-step seconds of embedding work, forward and backward+update: in the slowest device's own
    memory (``emb_*``), on its host link and the node tiers' memory (``host_*``), and by the host
    CPUs of the busiest node for the tables they pool (``cpu_*``)."""

    emb_fwd: float
    emb_bwd: float
    host_fwd: float
    host_bwd: float
    cpu_fwd: float = 0.0
    cpu_bwd: float = 0.0


class DenseTimes(NamedTuple):
    """Forward/backward seconds of the bottom MLP and the top part (DCN + interaction + top MLP),
    and the dense optimizer's, per device."""

    bottom_fwd: float
    bottom_bwd: float
    top_fwd: float
    top_bwd: float
    top_wgrad: float | None
    """The top part's weight gradients (part of ``top_bwd``); ``None`` where the software has no
    side stream for them (they then do not appear in ``stages_s``)."""
    optimizer: float


class StageCosts(NamedTuple):
    """Raw seconds of every stage of one step before overlaps (``stages_s`` of ``dse evaluate
    --json``, keys in this order; ``top_wgrad`` only where it is not ``None``)."""

    bottom_fwd: float
    bottom_bwd: float
    top_fwd: float
    top_bwd: float
    top_wgrad: float | None
    """See :attr:`DenseTimes.top_wgrad`."""
    optimizer: float
    emb_fwd: float
    emb_bwd: float
    host_fwd: float
    host_bwd: float
    cpu_fwd: float
    """The host CPUs' work on the tables they pool (gather, pool, per-operation cost), forward ..."""
    cpu_bwd: float
    """... and backward (the sparse update of every touched row and its optimizer state)."""
    a2a_fabric: float
    """One all-to-all (forward; the backward mirrors it) on the scale-up fabric ..."""
    a2a_network: float
    """... and on the network."""
    keys_fabric: float
    """The next step's flat key all-to-all (``software.flat_key_exchange``) on the fabric ..."""
    keys_network: float
    """... or across the network."""
    allreduce: float
    """The dense-gradient allreduce, before any overlap ..."""
    allreduce_exposed: float
    """... and what of it the backward phase does not hide."""
    overhead: float
    """Kernel launches and the fixed per-step cost."""
    input: float
    """The input pipeline (overlaps the step before)."""

    @classmethod
    def of(cls, dense: DenseTimes, embedding: EmbeddingTimes, alltoall: LinkTimes, keys: LinkTimes,
           allreduce: float, allreduce_exposed: float, overhead: float, input_s: float) -> StageCosts:
        """The costs from their parts (each read by name, passed in field order: 20 keyword
        arguments take four times as long; tests/test_one_home_stages.py checks that every field
        gets its part)."""
        return cls(
            dense.bottom_fwd, dense.bottom_bwd, dense.top_fwd, dense.top_bwd, dense.top_wgrad,
            dense.optimizer, embedding.emb_fwd, embedding.emb_bwd, embedding.host_fwd,
            embedding.host_bwd, embedding.cpu_fwd, embedding.cpu_bwd, alltoall.fabric, alltoall.network,
            keys.fabric, keys.network, allreduce, allreduce_exposed, overhead, input_s)

    @classmethod
    def zero(cls) -> StageCosts:
        """No stage takes any time (and no weight-gradient side stream): what one adds to."""
        return cls._make(None if name == "top_wgrad" else 0.0 for name in cls._fields)

    def __add__(self, other: StageCosts) -> StageCosts:  # type: ignore[override]
        """Field-wise sum (``top_wgrad`` stays ``None`` only where both are)."""
        return StageCosts(*_sums(self, other))

    @property
    def total(self) -> float:
        """Seconds of all stages one after another: the step were nothing overlapped."""
        return sum(self.as_dict().values())

    def as_dict(self) -> dict[str, float]:
        """``stages_s``: every field but a ``None`` ``top_wgrad``, in order."""
        out = self._asdict()
        if self.top_wgrad is None:
            del out["top_wgrad"]
        return out

    def faster(self, stage: str, factor: float) -> StageCosts:
        """These costs were ``stage`` ``factor`` times faster: its parts (:data:`STAGE_PARTS`)
        divided by ``factor``."""
        parts = STAGE_PARTS[stage]
        return self._replace(**{part: value / factor for part, value in self._asdict().items()
                                if part in parts and value is not None})


STAGE_PARTS: Mapping[str, tuple[str, ...]] = {
    Stage.dense_compute: ("bottom_fwd", "bottom_bwd", "top_fwd", "top_bwd", "top_wgrad", "optimizer"),
    Stage.embedding_memory: ("emb_fwd", "emb_bwd"),
    Stage.host_pcie: ("host_fwd", "host_bwd"),
    Stage.cpu_pooling: ("cpu_fwd", "cpu_bwd"),
    Stage.alltoall_fabric: ("a2a_fabric", "keys_fabric"),
    Stage.alltoall_network: ("a2a_network", "keys_network"),
    Stage.allreduce_exposed: ("allreduce",),
    Stage.input_exposed: ("input",),
    Stage.overhead: ("overhead",),
}
"""The :class:`StageCosts` fields behind each stage of the breakdown: making a stage faster divides
these (the allreduce and the input pipeline before their overlaps; ``top_wgrad``, part of
``top_bwd``, only where the software overlaps it)."""


class Breakdown(NamedTuple):
    """Critical-path seconds of each :class:`Stage` (``breakdown_s``; they add up to the step)."""

    dense_compute: float
    embedding_memory: float
    host_pcie: float
    cpu_pooling: float
    alltoall_fabric: float
    alltoall_network: float
    allreduce_exposed: float
    input_exposed: float
    overhead: float

    @classmethod
    def of(cls, attribution: Mapping[str, float], input_exposed: float) -> Breakdown:
        """The breakdown from the critical path's seconds per stage (a stage off the path: 0) and
        the exposed input pipeline."""
        get = attribution.get
        return cls(
            dense_compute=get(Stage.dense_compute, 0.0), embedding_memory=get(Stage.embedding_memory, 0.0),
            host_pcie=get(Stage.host_pcie, 0.0), cpu_pooling=get(Stage.cpu_pooling, 0.0),
            alltoall_fabric=get(Stage.alltoall_fabric, 0.0),
            alltoall_network=get(Stage.alltoall_network, 0.0),
            allreduce_exposed=get(Stage.allreduce_exposed, 0.0), input_exposed=input_exposed,
            overhead=get(Stage.overhead, 0.0))

    def __add__(self, other: Breakdown) -> Breakdown:  # type: ignore[override]
        """Stage-wise sum."""
        return Breakdown(*_sums(self, other))

    @property
    def total(self) -> float:
        """The step time (the shares' sum, in stage order)."""
        return sum(self.as_dict().values())

    @property
    def bottleneck(self) -> str:
        """The stage with the largest share (the first of equal ones)."""
        values = self.as_dict()
        return max(values, key=values.__getitem__)

    def as_dict(self) -> dict[str, float]:
        """``breakdown_s``: seconds by stage name, in stage order."""
        return self._asdict()


def _sums(a: tuple[float | None, ...], b: tuple[float | None, ...]) -> list[Any]:
    """Field-wise sums of two records of one type (``None`` counts as nothing, and two give
    ``None``)."""
    return [None if x is None and y is None else (x or 0.0) + (y or 0.0) for x, y in zip(a, b, strict=True)]


assert Breakdown._fields == STAGES
assert set().union(*STAGE_PARTS.values()) == set(StageCosts._fields) - {"allreduce_exposed"}
