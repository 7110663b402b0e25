"""What-if: the step time were one stage of the step faster, by the model's own overlap tree.

"Which part to upgrade" is then answered by the model, not read off the bottleneck label: halving a
stage that hides behind another gains nothing, and halving the bottleneck gains only until the next
stage binds (docs/design.md, section 5, "Overlaps").

>>> from dse import evaluate, load_system, load_workload
>>> ev = evaluate(load_workload("mlperf-dlrm-v1"), load_system("dgx-a100"))
>>> step_from_stages(ev.timing.stages, bottom_mlp_leads(ev)) == ev.step_time_s
True
"""

from __future__ import annotations

from dse.model.evaluate import Evaluation
from dse.model.stages import STAGES, StageCosts
from dse.model.timing import critical, step_tree


def bottom_mlp_leads(ev: Evaluation) -> bool:
    """Whether the bottom MLP runs model-parallel on device 0 (the ``lead`` of the overlap tree)."""
    return ev.plan.devices > 1 and ev.system.spec.software.bottom_mlp_on_one_device


def step_from_stages(stages: StageCosts, lead: bool) -> float:
    """The step time from raw stage durations, by the overlaps of
    :func:`dse.model.timing.step_time`: the allreduce beside the backward phase, the input
    pipeline behind the whole step."""
    compute, _, _ = critical(step_tree(stages, lead))
    return stages.input if stages.input - compute > 0 else compute


def what_if(ev: Evaluation, factor: float = 2.0) -> dict[str, float]:
    """Step seconds of ``ev`` were each stage ``factor`` times faster (the others unchanged; the
    parts of each stage: :data:`dse.model.stages.STAGE_PARTS`)."""
    lead = bottom_mlp_leads(ev)
    return {stage: step_from_stages(ev.timing.stages.faster(stage, factor), lead) for stage in STAGES}
