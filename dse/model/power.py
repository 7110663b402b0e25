"""Power by activity: what each part of a design draws while it trains, from what it does during
the step (docs/design.md, section 6).

The bill of materials (:mod:`dse.model.bom`) gives every part's draw as a floor ``w`` and an active
span ``w_active`` that follows one kind of work (:class:`~dse.model.bom.Load`). This module says how
much of that span each kind draws over a step, an :class:`Activity`, from the step's stage times
(:class:`~dse.model.timing.StepTime`) and the calibration's power levels:

- **accelerators**: the step's seconds are filled, longest-drawing first, with the device's dense
  kernels (tensor-core GEMMs), its embedding kernels (HBM gathers and updates) and its waits on a
  transfer it takes part in (the host link, the scale-up fabric, the network), each for as long as
  its stages last; what is left of the step it idles. Each draws its level of ``TDP - idle``
  (the calibration's, :data:`~dse.model.parameters.POWER_LEVELS`): embedding kernels
  ``accelerator_memory_power`` and waits
  ``accelerator_wait_power`` (ranges from published measurements,
  :mod:`dse.model.parameters`), dense kernels the level that makes the measured node
  (:data:`REFERENCE`: the 8x H100 node whose wall power was measured training DLRM-DCNv2) draw the
  calibration's fitted ``accelerator_training_utilisation`` on average. So the measured node draws
  what it was fitted to whatever the other levels are, and a design waiting on its host draws less;
- **CPUs** (of a node with accelerators): ``cpu_feed_power`` of TDP while they feed the devices,
  ``cpu_pool_power`` while they pool tables (the step's ``cpu_pooling`` seconds);
- **NICs and switches**: ``link_idle_power`` of their draw with no traffic, all of it while they
  carry the step's traffic (the network's: all-to-all and allreduce across nodes; the scale-up
  fabric's; the host links').

A node without accelerators draws as before: its CPUs are its device, at TDP.

>>> from dse import evaluate, load_system, load_workload
>>> ev = evaluate(load_workload("mlperf-dlrm-dcnv2"), load_system("dgx-h100"))
>>> round(ev.power.accelerator_utilisation, 4)  # the measured node: the fitted average
0.62
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

from dse.model.bom import CPU_TRAINING_UTILISATION
from dse.model.parameters import FITTED_PARAMETERS, INTERVAL_ONLY, POWER_LEVELS, Calibration
from dse.model.placement import Plan, plan_placement
from dse.model.stages import StageCosts
from dse.model.system import System, load_system
from dse.model.timing import StepTime, step_loads, step_time
from dse.model.workload import Workload, load_workload
from dse.records import SYSTEM, WORKLOAD


class Activity(NamedTuple):
    """The share of its active span (``w_active``) each kind of part draws while training, indexed
    by :class:`~dse.model.bom.Load` (a line's ``load``): 0 for constant draws, then accelerators,
    CPUs, the network's links, the scale-up fabric's, the host links'."""

    constant: float
    accelerator: float
    """Share of ``TDP - idle`` each accelerator draws on average over the step."""
    cpu: float
    """Share of TDP the host CPUs draw."""
    network: float
    """Share of their draw the NICs and the scale-out switches draw."""
    fabric: float
    """Share the scale-up switches draw."""
    host: float
    """Share the PCIe switches draw."""

    def at_tdp(self) -> Activity:
        """The same with every accelerator at TDP: what a rack's power feed must carry."""
        return self._replace(accelerator=1.0)


def flat(accelerator: float) -> Activity:
    """Every accelerator at ``accelerator`` of ``TDP - idle``, the CPUs at their feeding prior and
    every link at its full draw, whatever the step: the power model before issue 41, and what
    :func:`dse.model.cost.power` prices a system at without a step."""
    util = min(max(accelerator, 0.0), 1.0)
    return Activity(0.0, util, CPU_TRAINING_UTILISATION, 1.0, 1.0, 1.0)


REFERENCE = ("mlperf-dlrm-dcnv2", "dgx-h100")
"""Workload and system preset of the measured node the dense-kernel level is set by: the one
wall-power measurement (``dse.calibration.measurements.POWER_MEASUREMENTS``, MLPerf Training v4.0
DLRM-DCNv2 on an 8x H100 SXM node)."""


class DeviceTimes(NamedTuple):
    """An accelerator's seconds of one step by what it does, longest-drawing first: dense kernels,
    embedding kernels, waits on a transfer (each at most what the step leaves), and the step."""

    dense: float
    embedding: float
    waiting: float
    step: float


def device_times(t: StageCosts, step: float) -> DeviceTimes:
    """:class:`DeviceTimes` from a step's raw stage costs: the dense stages (MLPs, interaction,
    optimizer: ``top_wgrad`` is part of ``top_bwd``), the embedding stages in the device's own
    memory, and the transfers it takes part in (host-link traffic, both all-to-alls on whichever of
    fabric and network is longer, the key exchange, the allreduce), filled into the step in that
    order."""
    # Unpacked rather than read field by field: every evaluation reads them (mypy checks the
    # unpacking against StageCosts' fields).
    (bottom_fwd, bottom_bwd, top_fwd, top_bwd, _wgrad, optimizer, emb_fwd, emb_bwd, host_fwd, host_bwd,
     _cpu_fwd, _cpu_bwd, a2a_fabric, a2a_network, keys_fabric, keys_network, allreduce, _exposed,
     _overhead, _input) = t
    dense = min(bottom_fwd + bottom_bwd + top_fwd + top_bwd + optimizer, step)
    embedding = min(emb_fwd + emb_bwd, step - dense)
    links = (host_fwd + host_bwd + 2.0 * max(a2a_fabric, a2a_network) + keys_fabric + keys_network
             + allreduce)
    return _device_times((dense, embedding, min(links, step - dense - embedding), step))


_device_times = functools.partial(tuple.__new__, DeviceTimes)
"""A DeviceTimes from the tuple of its fields, skipping the named tuple's ``__new__`` (as
:data:`dse.model.bom.new_line`)."""


@functools.cache
def _reference_design() -> tuple[Workload, System, Plan]:
    """The measured node as the packaged presets describe it, whatever ``./systems`` and
    ``./workloads`` of the working directory hold (the plan does not depend on the calibration)."""
    workload = load_workload(str(WORKLOAD.builtin / f"{REFERENCE[0]}.toml"))
    system = load_system(str(SYSTEM.builtin / f"{REFERENCE[1]}.toml"))
    return workload, system, plan_placement(workload, system)


REFERENCES_REMEMBERED = 256
"""Calibrations whose measured-node times :func:`reference_times` keeps, by identity: an
evaluation reads them once per calibration, and the ensemble's members are a hundred more."""
_REFERENCES: dict[int, tuple[Calibration, DeviceTimes]] = {}


_BY_VALUES: dict[tuple[object, ...], DeviceTimes] = {}


def reference_times(calib: Calibration) -> DeviceTimes:
    """:class:`DeviceTimes` of the measured node (:data:`REFERENCE`) under ``calib``, remembered by
    the calibration's identity (calibrations are frozen) and, for a calibration that differs from
    one met before only in its power levels (an interval's range ends), by the values that time a
    step."""
    known = _REFERENCES.get(id(calib))
    if known is not None and known[0] is calib:
        return known[1]
    key = timing_values(calib)
    times = _BY_VALUES.get(key)
    if times is None:
        workload, system, plan = _reference_design()
        timing = step_time(workload, system, plan, calib, step_loads(workload, system, plan, calib))
        times = device_times(timing.stages, timing.step_s)
        if len(_BY_VALUES) >= REFERENCES_REMEMBERED:
            _BY_VALUES.clear()
        _BY_VALUES[key] = times
    if len(_REFERENCES) >= REFERENCES_REMEMBERED:
        _REFERENCES.clear()
    _REFERENCES[id(calib)] = (calib, times)
    return times


def timing_values(calib: Calibration) -> tuple[object, ...]:
    """Every value of ``calib`` a step's time can depend on: its scalar parameters but the power
    levels (:data:`~dse.model.parameters.POWER_LEVELS`) and the fitted power average, and its
    software factors."""
    return (*(getattr(calib, name) for name in FITTED_PARAMETERS if name not in NOT_TIMING),
            *sorted(calib.software_factor.items()))


NOT_TIMING = frozenset({*POWER_LEVELS, *INTERVAL_ONLY, "accelerator_training_utilisation"})
"""The calibration's parameters no step time reads."""


_LEVELS: dict[int, tuple[Calibration, float]] = {}


def dense_level(calib: Calibration) -> float:
    """Share of ``TDP - idle`` an accelerator draws while its dense kernels run: the level at which
    the measured node's accelerators, with the stated embedding and wait levels, draw the fitted
    ``accelerator_training_utilisation`` on average; clipped to [0, 1]. Remembered by the
    calibration's identity, as :func:`reference_times`."""
    known = _LEVELS.get(id(calib))
    if known is not None and known[0] is calib:
        return known[1]
    ref = reference_times(calib)
    level = calib.accelerator_training_utilisation
    if ref.dense > 0.0:
        level = (calib.accelerator_training_utilisation * ref.step
                 - calib.accelerator_memory_power * ref.embedding
                 - calib.accelerator_wait_power * ref.waiting) / ref.dense
    if len(_LEVELS) >= REFERENCES_REMEMBERED:
        _LEVELS.clear()
    _LEVELS[id(calib)] = (calib, min(max(level, 0.0), 1.0))
    return _LEVELS[id(calib)][1]


def activity(timing: StepTime, system: System, calib: Calibration) -> Activity:
    """What every part draws of its active span over ``timing``'s step (module docstring). A step
    that never ends (a link without bandwidth) draws idle: nothing it waits on ever moves."""
    step = timing.step_s
    t = timing.stages
    idle = calib.link_idle_power
    if not 0.0 < step < math.inf:
        return _activity((0.0, 0.0, calib.cpu_feed_power, idle, idle, idle))
    dense, embedding, waiting, _ = device_times(t, step)
    # A node without accelerators has none to draw (its CPUs are its device): no level to set.
    level = 0.0 if system.cpu_only else dense_level(calib)
    accelerator = (level * dense + calib.accelerator_memory_power * embedding
                   + calib.accelerator_wait_power * waiting) / step
    pooling = min((t.cpu_fwd + t.cpu_bwd) / step, 1.0)
    feed = calib.cpu_feed_power
    cpu = feed + (calib.cpu_pool_power - feed) * pooling
    # Traffic of each kind of link, in seconds of the step: both all-to-alls and the key exchange;
    # the allreduce on the fabric within a scale-up domain and on the network beyond it; the input
    # on the host links, and on the NICs where it streams in through them.
    allreduce, domain = t.allreduce, system.scaleup_domain
    crosses = system.accelerators_total > domain
    network = 2.0 * t.a2a_network + t.keys_network + (allreduce if crosses else 0.0)
    if system.input_nic_bytes_s > 0:
        network += t.input
    fabric = 2.0 * t.a2a_fabric + t.keys_fabric + (allreduce if domain > 1 else 0.0)
    host = t.host_fwd + t.host_bwd + t.input + network
    busy = 1.0 - idle
    # (Each level is in [0, 1] and the device's times add up to at most the step: so is the share.)
    return _activity((0.0, accelerator, cpu, idle + busy * min(network / step, 1.0),
                      idle + busy * min(fabric / step, 1.0), idle + busy * min(host / step, 1.0)))


_activity = functools.partial(tuple.__new__, Activity)
"""An Activity from the tuple of its fields (every evaluation makes one)."""
