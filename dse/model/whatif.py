"""What-if: the step time were one stage of the step faster, by the model's own overlap tree.

"Which part to upgrade" is then answered by the model, not read off the bottleneck label: halving a
stage that hides behind another gains nothing, and halving the bottleneck gains only until the next
stage binds (docs/design.md, section 5, "Overlaps").

>>> from dse import evaluate, load_system, load_workload
>>> ev = evaluate(load_workload("mlperf-dlrm-v1"), load_system("dgx-a100"))
>>> step_from_stages(ev.timing.stages_s, bottom_mlp_leads(ev)) == ev.step_time_s
True
"""

from __future__ import annotations

from collections.abc import Mapping

from dse.model.evaluate import Evaluation
from dse.model.timing import STAGES, critical, step_tree

STAGE_PARTS: Mapping[str, tuple[str, ...]] = {
    "dense_compute": ("bottom_fwd", "bottom_bwd", "top_fwd", "top_bwd", "top_wgrad", "optimizer"),
    "embedding_memory": ("emb_fwd", "emb_bwd"),
    "host_pcie": ("host_fwd", "host_bwd"),
    "alltoall_fabric": ("a2a_fabric", "keys_fabric"),
    "alltoall_network": ("a2a_network", "keys_network"),
    "allreduce_exposed": ("allreduce",),
    "input_exposed": ("input",),
    "overhead": ("overhead",),
}
"""The raw durations (keys of ``StepTime.stages_s``) behind each stage of the breakdown: making a
stage faster divides these (the allreduce and the input pipeline before their overlaps; ``top_wgrad``,
part of ``top_bwd``, only where the software overlaps it)."""
assert tuple(STAGE_PARTS) == STAGES


def bottom_mlp_leads(ev: Evaluation) -> bool:
    """Whether the bottom MLP runs model-parallel on device 0 (the ``lead`` of the overlap tree)."""
    return ev.plan.devices > 1 and ev.system.spec.software.bottom_mlp_on_one_device


def step_from_stages(stages_s: Mapping[str, float], lead: bool) -> float:
    """The step time from raw stage durations, by the overlaps of
    :func:`dse.model.timing.step_time`: the allreduce hides behind the backward phase's compute,
    the input pipeline behind the whole step."""
    t = dict(stages_s)
    backward_compute = max(t["emb_bwd"], t["host_bwd"], t["bottom_bwd"])
    t["allreduce_exposed"] = max(0.0, t["allreduce"] - backward_compute)
    compute, _, _ = critical(step_tree(t, lead))
    return t["input"] if t["input"] - compute > 0 else compute


def what_if(ev: Evaluation, factor: float = 2.0) -> dict[str, float]:
    """Step seconds of ``ev`` were each stage ``factor`` times faster (the others unchanged)."""
    lead = bottom_mlp_leads(ev)
    out = {}
    for stage, parts in STAGE_PARTS.items():
        faster = dict(ev.timing.stages_s)
        for key in parts:
            if key in faster:
                faster[key] /= factor
        out[stage] = step_from_stages(faster, lead)
    return out
