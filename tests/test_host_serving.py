"""The ways software serves tables that live off the devices (issue 39, item 2):
``software.host_tables`` (a cache in HBM, zero-copy UVM, or the host CPUs pooling) and
``software.host_table_order`` (which tables leave the devices), each hand-checked."""

from __future__ import annotations

import pytest

from dse.model.evaluate import Evaluation, evaluate
from dse.model.parameters import load_calibration
from dse.model.placement import Shard
from dse.model.system import load_system
from dse.model.workload import load_workload

CALIB = load_calibration()
B = 65536
# One one-hot table of 2e9 rows x 64 fp32 (512 GB): it cannot live in one A100's 80 GB. Tiny MLPs,
# so that the host side bounds the step.
ONE_HOT = (("tables.rows", [2_000_000_000]), ("tables.pooling", 1), ("precision", "amp"),
           ("global_batch", B), ("dense_features", 16), ("bottom_mlp", [64]), ("top_mlp", [1]))
ONE_GPU = (("node.accelerators", 1),)


def _ev(serving: str, workload: tuple[tuple[str, object], ...] = ONE_HOT,
        order: str = "density") -> Evaluation:
    system = load_system("dgx-a100", (*ONE_GPU, ("software.host_tables", serving),
                                      ("software.host_table_order", order)))
    return evaluate(load_workload("dlrm-benchmark", workload), system, CALIB)


def _off(ev: Evaluation) -> list[Shard]:
    """The pieces that live off the device (the rest of the table fits its HBM)."""
    return [s for s in ev.plan.shards if s.tier != "hbm"]


def _link_bytes(ev: Evaluation) -> tuple[float, float]:
    return sum(s.traffic.link_fwd for s in _off(ev)), sum(s.traffic.link_bwd for s in _off(ev))


def test_each_way_of_serving_is_what_it_says() -> None:
    places = {serving: {s.where for s in _off(_ev(serving))} for serving in ("cache", "uvm", "cpu")}
    assert places == {"cache": {"cache"}, "uvm": {"uvm"}, "cpu": {"host"}}
    # The default is the placement dse made before the setting: a cache where HBM is to spare.
    assert {s.where for s in _off(_ev("auto"))} == {"cache"}


def test_cpu_pooling_moves_fewer_link_bytes_on_a_uniform_one_hot_table_by_hand() -> None:
    # Pooled by the CPUs, each sample's pooled vector crosses PCIe: 64 elements x 2 B (amp) each
    # way, for the samples whose one lookup lands on the piece. Read by the GPU with no cache, each
    # lookup moves its 256 B row in 64 B requests forward, and writes it back (read and write:
    # 2 x 256 B, SGD has no state) for each distinct row updated.
    for s in _off(_ev("cpu")):
        assert (s.traffic.link_fwd, s.traffic.link_bwd) == (pytest.approx(s.out_rows * 64 * 2),) * 2
    uvm = _off(_ev("uvm"))
    for s in uvm:
        assert s.traffic.link_fwd == pytest.approx(s.lookups * 256)
        # (the lookups of a piece of 2e9 rows are all but all distinct)
        assert s.traffic.link_bwd == pytest.approx(s.lookups * 2 * 256, rel=1e-4)
    # One-hot: a piece's output rows are its lookups, so pooling halves what crosses PCIe.
    assert _link_bytes(_ev("cpu"))[0] == pytest.approx(_link_bytes(_ev("uvm"))[0] / 2)


def test_a_cache_is_fastest_on_a_skewed_table() -> None:
    skewed = (*ONE_HOT, ("access_zipf", 1.2))
    steps = {serving: _ev(serving, skewed).step_time_s for serving in ("cache", "uvm", "cpu")}
    assert steps["cache"] < steps["uvm"] and steps["cache"] < steps["cpu"], steps
    # Its misses alone cross PCIe: a hit rate h leaves (1 - h) of the UVM read.
    for s in _off(_ev("cache", skewed)):
        assert 0.3 < s.hit_rate < 1.0
        assert s.traffic.link_fwd == pytest.approx((1 - s.hit_rate) * s.lookups * 256)


def test_largest_tables_leave_the_devices_first() -> None:
    # Two tables that together do not fit one A100: by density the sparse big one leaves (it has
    # fewer lookups a byte); by size, the larger one leaves either way, so make the small table
    # the sparse one: 20 GB hit once a sample against 60 GB hit 100 times.
    two = (("tables.rows", [80_000_000, 240_000_000]), ("tables.pooling", [1, 100]), ("global_batch", 4096))
    by_density = _ev("cpu", two)
    by_size = _ev("cpu", two, order="largest")
    off = {ev_name: {s.table for s in ev.plan.shards if s.where == "host"}
           for ev_name, ev in (("density", by_density), ("largest", by_size))}
    assert off == {"density": {0}, "largest": {1}}
