"""Hand-checked numbers for the units, the traffic estimators and the step-time equations.

Every expected value is worked out by hand in the comments (from docs/design.md, sections 4-6, and
the catalog figures), never by calling the code under test to produce it. Catalog values may be *read*
(via ``load_catalog``), but the arithmetic on them is written out here.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dse.model.catalog import load_catalog
from dse.model.cost import CostBreakdown, PowerBreakdown, capex, economics
from dse.model.estimators import (
    Traffic,
    cached_traffic,
    granular,
    local_traffic,
    pooled_traffic,
    zipf_hit_rate,
)
from dse.model.evaluate import evaluate
from dse.model.parameters import Calibration
from dse.model.placement import Plan, PlanMemory, Shard, TierUse
from dse.model.stages import Stage, StageCosts
from dse.model.system import gbit_s_to_bytes_s, load_system
from dse.model.tiers import memory_tier
from dse.model.timing import (
    allreduce_time,
    alltoall_elements,
    critical,
    gemm_time,
    key_exchange_seconds,
    step_tree,
    topology_factor,
)
from dse.model.workload import load_workload

REL = 1e-12


def approx(x: float) -> object:
    return pytest.approx(x, rel=REL, abs=0.0)


def make_plan(devices: int, shards: tuple[Shard, ...] = (), replicated: float = 0.0) -> Plan:
    """A hand-built plan (only the fields the equations under test read matter)."""
    return Plan(
        shards=shards,
        devices=devices,
        memory=PlanMemory(tiers=(TierUse(memory_tier("hbm", "device", 80e9, 2e12), (0.0,) * devices, 72e9),
                                 TierUse(memory_tier("ddr", "node", 1e12, 2e11), (0.0,), 9e11)),
                          dense_bytes_per_device=0.0, activation_bytes_per_device=0.0),
        replicated_grad_elements=replicated,
    )


def shard(
    table: int, sharding: str, dim: int, device: int, rows: int = 1000, out_rows: float = 4000.0
) -> Shard:
    # out_rows defaults to the whole global batch of the 4-device, b = 1000 cases (B = 4,000): no
    # hot rows replicated, every sample's pooled vector crosses the all-to-all.
    return Shard(table, sharding, rows, dim, 0.0, out_rows, 0.0, device, "hbm", "local", Traffic())  # type: ignore[arg-type]


# --- units ----------------------------------------------------------------------------------------


def test_gbit_s_to_bytes_s() -> None:
    # 400 Gb/s = 400e9 bit/s / 8 bit/B = 50e9 B/s; 200 Gb/s -> 25e9 B/s.
    assert gbit_s_to_bytes_s(400) == approx(50e9)
    assert gbit_s_to_bytes_s(200) == approx(25e9)
    assert gbit_s_to_bytes_s(100) == approx(12.5e9)


def test_pcie_bandwidth_with_switch_sharing() -> None:
    # PCIe gen4 x16 = 31.5 GB/s per direction (catalog). a100-pcie-x4: one x16 link per GPU
    # (pcie_switch_share = 1) -> 31.5e9 B/s; a100-pcie-x8: two GPUs per uplink -> 31.5e9 / 2.
    assert load_catalog().pcie_gen(4).x16_gb_s == 31.5
    x4 = load_system("a100-pcie-x4")
    x8 = load_system("a100-pcie-x8")
    assert x4.pcie_gen == 4 and x8.pcie_gen == 4
    assert x4.pcie_bytes_s == approx(31.5e9)
    assert x8.pcie_bytes_s == approx(15.75e9)


def test_nic_bandwidth_dgx_a100() -> None:
    # 8 NICs x 200 Gb/s = 1600 Gb/s = 1600e9 / 8 B/s = 200e9 B/s per direction.
    s = load_system("dgx-a100")
    assert s.nic_bytes_s == approx(200e9)
    # Front end: 2 x 200 Gb/s = 400 Gb/s = 50e9 B/s.
    assert s.frontend_bytes_s == approx(50e9)


def test_scaleup_none_is_a_value_not_a_missing_key() -> None:
    # "none" is a scale-up topology (through PCIe and the host), not "use the catalog default":
    # turning NVLink off on an SXM part must stick.
    s = load_system("dgx-a100", (("node.scaleup", "none"),))
    assert s.spec.node.scaleup == "none" and s.scaleup == "none"
    assert s.scaleup_bytes_s == 0.0
    # For a plain optional number "none" still means absent.
    assert load_system("dgx-a100", (("node.hbm_cache_gb", "none"),)).spec.node.hbm_cache_gb is None


def test_hbm_and_scaleup_units_dgx_a100() -> None:
    # A100 SXM4 80 GB: 80 GB = 80e9 B, 2039 GB/s, NVLink 300 GB/s per direction (catalog figures).
    s = load_system("dgx-a100")
    assert s.hbm_bytes == approx(80e9)
    assert s.hbm_bytes_s == approx(2039e9)
    assert s.scaleup_bytes_s == approx(300e9)
    # 2 sockets x 8 DDR4-3200 channels x 25.6 GB/s = 409.6 GB/s.
    assert s.ddr_bytes_s == approx(409.6e9)
    assert s.ddr_bytes == approx(2048e9)


# --- dense parameters and the allreduce -----------------------------------------------------------

# mlperf-dlrm-v1 dense parameters (weights + biases), by hand:
#   bottom 13-512-256-128:
#     13*512 + 512    =   6,656 +   512 =     7,168
#     512*256 + 256   = 131,072 +   256 =   131,328
#     256*128 + 128   =  32,768 +   128 =    32,896          bottom = 171,392
#   top input = 128 + 27*26/2 = 128 + 351 = 479; 479-1024-1024-512-256-1:
#     479*1024 + 1024   =   490,496 + 1,024 =   491,520
#     1024*1024 + 1024  = 1,048,576 + 1,024 = 1,049,600
#     1024*512 + 512    =   524,288 +   512 =   524,800
#     512*256 + 256     =   131,072 +   256 =   131,328
#     256*1 + 1         =                          257        top = 2,197,505
#   total = 171,392 + 2,197,505 = 2,368,897
MLPERF_V1_DENSE_PARAMS = 2_368_897


def test_mlperf_v1_dense_params() -> None:
    wl = load_workload("mlperf-dlrm-v1")
    assert wl.top_mlp_input() == 479
    assert wl.dense_params() == MLPERF_V1_DENSE_PARAMS


def test_allreduce_two_devices_on_a_switch() -> None:
    wl = load_workload("mlperf-dlrm-v1")  # amp: gradients communicated in 2 bytes
    sysm = load_system("dgx-a100", (("node.accelerators", 2),))
    assert sysm.scaleup == "switch" and sysm.accelerators_total == 2
    calib = Calibration(fabric_efficiency=0.5, collective_latency_s=10e-6)
    # bytes = 2,368,897 x 2 = 4,737,794 B -> one 25 MB DDP bucket.
    # t = 2(n-1)/n x bytes / (link x eff) + buckets x latency
    #   = 2*1/2 x 4,737,794 / (300e9 x 0.5) + 1 x 10e-6
    #   = 4,737,794 / 150e9 + 1e-5 = 3.158529333...e-5 + 1e-5 = 4.158529333...e-5 s
    t, buckets = allreduce_time(wl, make_plan(2), sysm, calib)
    assert buckets == 1
    assert t == approx(4_737_794 / 150e9 + 1e-5)
    assert t == pytest.approx(4.1585293333e-5, rel=1e-9)


FLAT_KEYS = (("software.flat_key_exchange", True),)


def test_flat_key_exchange_by_hand() -> None:
    calib = Calibration(collective_latency_s=10e-6, key_peer_latency_s=2e-6)
    # 16 DGX H100 = 128 devices, 8 a domain: the exchange crosses the network.
    # t = 2 rounds x (collective latency + (G - 1) peers x per-peer latency)
    #   = 2 x (10 us + 127 x 2 us) = 2 x 264 us = 528 us
    big = load_system("dgx-h100", (("nodes", 16), *FLAT_KEYS))
    assert key_exchange_seconds(128, big, calib) == (0.0, pytest.approx(528e-6, rel=REL))
    # One node, 8 devices: it stays on the fabric, 2 x (10 + 7 x 2) = 48 us.
    one = load_system("dgx-h100", FLAT_KEYS)
    assert key_exchange_seconds(8, one, calib) == (pytest.approx(48e-6, rel=REL), 0.0)
    # Nothing to exchange on one device, and nothing without the data distributor (the default
    # software: keys arrive with each device's input).
    assert key_exchange_seconds(1, one, calib) == (0.0, 0.0)
    assert key_exchange_seconds(128, load_system("dgx-h100", (("nodes", 16),)), calib) == (0.0, 0.0)
    # It grows with the device count: one more peer a round for every device added.
    totals = [sum(key_exchange_seconds(8 * n, load_system("dgx-h100", (("nodes", n), *FLAT_KEYS)), calib))
              for n in (1, 2, 4, 8, 16)]
    assert totals == sorted(totals) and len(set(totals)) == len(totals)
    assert totals[-1] - totals[-2] == pytest.approx(2 * 64 * 2e-6, rel=1e-9)


def test_flat_key_exchange_hides_behind_the_middle_only() -> None:
    # The tree puts the exchange beside the middle (interaction + top MLP fwd/bwd): it costs the
    # step only what it has beyond the middle. Middle = 300 + 500 - 0 = 800 us.
    t = StageCosts.zero()._replace(top_fwd=300e-6, top_bwd=500e-6, a2a_network=100e-6, optimizer=50e-6)
    base, _, _ = critical(step_tree(t))  # 100 + 800 + 100 + 50 = 1050 us
    assert base == pytest.approx(1050e-6, rel=1e-12)
    hidden, _, _ = critical(step_tree(t._replace(keys_network=700e-6)))
    assert hidden == pytest.approx(1050e-6, rel=1e-12)
    exposed, attr, path = critical(step_tree(t._replace(keys_network=1000e-6)))
    # 100 + max(800, 1000) + 100 + 50 = 1250 us; the extra 200 us are network all-to-all time.
    assert exposed == pytest.approx(1250e-6, rel=1e-12)
    assert attr[Stage.alltoall_network] == pytest.approx(1200e-6, rel=1e-12)
    assert "key all-to-all, next step (prefetch stream)" in path


def test_allreduce_adds_replicated_gradients_and_buckets() -> None:
    wl = load_workload("mlperf-dlrm-v1")
    sysm = load_system("dgx-a100", (("node.accelerators", 2),))
    calib = Calibration(fabric_efficiency=0.5, collective_latency_s=10e-6)
    # 20,000,000 replicated elements: (2,368,897 + 20,000,000) x 2 B = 44,737,794 B
    # -> ceil(44,737,794 / 25e6) = 2 buckets; t = 44,737,794 / 150e9 + 2 x 1e-5.
    t, buckets = allreduce_time(wl, make_plan(2, replicated=20_000_000.0), sysm, calib)
    assert buckets == 2
    assert t == approx(44_737_794 / 150e9 + 2e-5)


def test_allreduce_without_nics_across_nodes_is_infinite() -> None:
    # 2 nodes with node.nics = 0 cannot exchange gradients: infinite time, not ZeroDivisionError
    # (evaluate() then reports the design infeasible).
    wl = load_workload("mlperf-dlrm-v1")
    sysm = load_system("dgx-a100", (("nodes", 2), ("node.nics", 0)))
    t, buckets = allreduce_time(wl, make_plan(16), sysm, Calibration())
    assert math.isinf(t) and buckets == 1
    ev = evaluate(wl, sysm)
    assert not ev.feasible and any("nics" in r for r in ev.reasons)


def test_allreduce_single_device_is_free() -> None:
    wl = load_workload("mlperf-dlrm-v1")
    sysm = load_system("dgx-a100", (("node.accelerators", 1),))
    assert allreduce_time(wl, make_plan(1), sysm, Calibration()) == (0.0, 0)


# --- all-to-all elements --------------------------------------------------------------------------


def test_alltoall_elements_table_wise() -> None:
    # 4 devices, scale-up domain 2, b = 1000, one table-wise shard of dim 128 on device 0:
    #   same-domain peers: 2 - 1 = 1 -> 1 x 1000 x 128 = 128,000 elements
    #   other-domain peers: 4 - 2 = 2 -> 2 x 1000 x 128 = 256,000 elements
    plan = make_plan(4, (shard(0, "table_wise", 128, 0),))
    same, cross = alltoall_elements(plan, 2, 1000.0)
    assert same == [128_000.0, 0.0, 0.0, 0.0]
    assert cross == [256_000.0, 0.0, 0.0, 0.0]


def test_alltoall_elements_ignore_replicas_and_add_up() -> None:
    # Column-wise shards count like table-wise ones; replicas (device -1) send nothing.
    # Device 1 holds two column shards of dims 32 and 64 (96 in all): same = 1 x 1000 x 96 = 96,000;
    # cross = 2 x 1000 x 96 = 192,000.
    plan = make_plan(4, (shard(0, "column_wise", 32, 1), shard(0, "column_wise", 64, 1),
                         shard(1, "replicated", 128, -1)))
    same, cross = alltoall_elements(plan, 2, 1000.0)
    assert same == [0.0, 96_000.0, 0.0, 0.0]
    assert cross == [0.0, 192_000.0, 0.0, 0.0]


def test_alltoall_elements_row_wise_same_domain() -> None:
    # One table of dim 64 split row-wise in k = 2 shards on devices 0 and 1 (one domain of 2),
    # G = 4, b = 1000. Reduce-scatter chunk = G x b x dim / k = 4 x 1000 x 64 / 2 = 128,000 to the
    # co-shard (same domain), then each sends its 1/k of b x dim to every peer:
    #   same  = 1 x 128,000 + (2 - 1) x 1000 x 64 / 2 = 128,000 + 32,000 = 160,000
    #   cross = 0 x 128,000 + (4 - 2) x 1000 x 64 / 2 =                    64,000
    plan = make_plan(4, (shard(0, "row_wise", 64, 0, rows=500),
                         shard(0, "row_wise", 64, 1, rows=500)))
    same, cross = alltoall_elements(plan, 2, 1000.0)
    assert same == [160_000.0, 160_000.0, 0.0, 0.0]
    assert cross == [64_000.0, 64_000.0, 0.0, 0.0]


def test_alltoall_elements_row_wise_across_domains() -> None:
    # The same two shards on devices 0 and 2 (different domains), reduced hierarchically (issue 13):
    # each domain has n = 1 co-shard, so no reduce-scatter; each sends its domain's partial sum,
    # 1/n = all of b x dim, to every peer, which adds the two domains' sums:
    #   same  = 0 + (2 - 1) x 1000 x 64 / 1 =  64,000
    #   cross = 0 + (4 - 2) x 1000 x 64 / 1 = 128,000 (the flat reduce-scatter sent 192,000)
    plan = make_plan(4, (shard(0, "row_wise", 64, 0, rows=500),
                         shard(0, "row_wise", 64, 2, rows=500)))
    same, cross = alltoall_elements(plan, 2, 1000.0)
    assert same == [64_000.0, 0.0, 64_000.0, 0.0]
    assert cross == [128_000.0, 0.0, 128_000.0, 0.0]


# --- GEMM roofline and wave quantisation ----------------------------------------------------------


def test_gemm_compute_bound_without_quantisation() -> None:
    # m=1000, k=500, n=200: FLOPs = 2 x 1000 x 500 x 200 = 2e8; at 1e12 x 0.5 -> 4e-4 s.
    # Memory: (1000x500 + 500x200 + 1000x200) x 2 B = 800,000 x 2 = 1.6e6 B at 1e12 B/s = 1.6e-6 s.
    t = gemm_time(1000, 500, 200, peak=1e12, eff=0.5, units=0, mem_bytes_s=1e12, elem=2)
    assert t == approx(4e-4)


def test_gemm_memory_bound() -> None:
    # m=1e6, k=1, n=1: FLOPs = 2e6 at 5e11 -> 4e-6 s; bytes = (1e6 + 1 + 1e6) x 2 = 4,000,002 at
    # 1e11 B/s -> 4.000002e-5 s (memory bound).
    t = gemm_time(1_000_000, 1, 1, peak=1e12, eff=0.5, units=0, mem_bytes_s=1e11, elem=2)
    assert t == approx(4.000002e-5)


def test_gemm_wave_quantisation_one_tile() -> None:
    # m=n=k=128 on 108 units: one 128x128 tile, no split-K (k // 512 = 0) -> 1 task on 108 units,
    # util = 1/108. FLOPs = 2 x 128^3 = 4,194,304 -> 4,194,304 x 108 / 1e12 = 4.52984832e-4 s.
    # (Memory: 3 x 16,384 x 2 B at 1e12 B/s = 9.8e-8 s, far below.)
    t = gemm_time(128, 128, 128, peak=1e12, eff=1.0, units=108, mem_bytes_s=1e12, elem=2)
    assert t == approx(4_194_304 * 108 / 1e12)
    assert t == approx(4.52984832e-4)


def test_gemm_wave_quantisation_split_k() -> None:
    # m=n=128, k=4096 on 108 units: 1 tile, split-K into min(108, 4096 // 512 = 8) = 8 tasks,
    # util = 8/108. FLOPs = 2 x 128 x 4096 x 128 = 134,217,728
    #   -> 134,217,728 x 108 / 8 / 1e12 = 1.811939328e-3 s.
    t = gemm_time(128, 4096, 128, peak=1e12, eff=1.0, units=108, mem_bytes_s=1e15, elem=2)
    assert t == approx(134_217_728 * 108 / 8 / 1e12)


def test_gemm_partial_tile_fill() -> None:
    # m=64, n=128, k=128 on 1 unit: 1 tile, half filled (64 x 128 / 128^2 = 0.5) -> util 0.5.
    # FLOPs = 2 x 64 x 128 x 128 = 2,097,152 -> / (1e12 x 0.5) = 4.194304e-6 s.
    t = gemm_time(64, 128, 128, peak=1e12, eff=1.0, units=1, mem_bytes_s=1e15, elem=2)
    assert t == approx(4.194304e-6)


def test_gemm_full_waves_reach_peak() -> None:
    # m = 108 x 128 = 13,824, n = 128, k = 128 on 108 units: 108 tiles in exactly one wave, util 1.
    # FLOPs = 2 x 13,824 x 128 x 128 = 452,984,832 -> at 1e12: 4.52984832e-4 s.
    t = gemm_time(13_824, 128, 128, peak=1e12, eff=1.0, units=108, mem_bytes_s=1e15, elem=2)
    assert t == approx(4.52984832e-4)


# --- traffic estimators ---------------------------------------------------------------------------


def test_granular() -> None:
    # (row bytes, state bytes) each rounded up to whole accesses; none for none.
    assert granular(0, 1, 32) == (0, 32)
    assert granular(32, 33, 32) == (32, 64)
    assert granular(256, 8, 64) == (256, 64)


def test_local_traffic_by_hand() -> None:
    # 10 lookups of 40 B rows (2 x 32 B sectors = 64 B), 4 B state (one 32 B sector), 100 B out.
    # fwd = 10 x (64 + 8 index) + 100 = 820
    # bwd = 100 + 10 x (2 x (64 + 32) + 8) = 100 + 10 x 200 = 2,100
    t = local_traffic(10, 40, 4, 100.0, unit=32)
    assert (t.local_fwd, t.local_bwd) == (approx(820.0), approx(2100.0))
    assert t.link_fwd == t.link_bwd == t.far_fwd == t.far_bwd == 0.0
    # SGD (no state): bwd = 100 + 10 x (2 x 64 + 8) = 1,460.
    assert local_traffic(10, 40, 0, 100.0, unit=32).local_bwd == approx(1460.0)
    # In 64 B lines (a CPU device's own DDR): row 64 B, state 64 B: bwd = 100 + 10 x (2 x 128 + 8).
    assert local_traffic(10, 40, 4, 100.0, unit=64).local_bwd == approx(2740.0)


def test_pooled_traffic_by_hand() -> None:
    # Host lines are 64 B: row 40 B -> 64 B, state 4 B -> 64 B.
    # far_fwd = 10 x (64 + 8) = 720; far_bwd = 10 x 2 x (64 + 64) = 2,560; the link carries the
    # 100 B of pooled output each way; nothing touches the device's own memory.
    t = pooled_traffic(10, 40, 4, 100.0, unit=64)
    assert t == Traffic(local_fwd=0.0, local_bwd=0.0, link_fwd=100.0, link_bwd=100.0,
                        far_fwd=720.0, far_bwd=2560.0)


def test_cached_traffic_by_hand() -> None:
    # Hit rate 0.5 on 10 lookups: 5 hits served from HBM as local_traffic(5, 40, 4, 100):
    #   fwd = 5 x 72 + 100 = 460, bwd = 100 + 5 x 200 = 1,100; the 5 misses add 5 x 8 index bytes
    #   to HBM forward (460 + 40 = 500) and move 64 B units over PCIe and DDR:
    #   link_fwd = far_fwd = 5 x 64 = 320; link_bwd = far_bwd = 5 x 2 x (64 + 64) = 1,280.
    t = cached_traffic(10, 40, 4, 100.0, 0.5, local_unit=32, far_unit=64)
    assert t == Traffic(local_fwd=500.0, local_bwd=1100.0, link_fwd=320.0, link_bwd=1280.0,
                        far_fwd=320.0, far_bwd=1280.0)


def test_zipf_hit_rate_edges() -> None:
    assert zipf_hit_rate(0, 1_000_000, 1.05) == 0.0
    assert zipf_hit_rate(-5, 1_000_000, 1.05) == 0.0
    assert zipf_hit_rate(1_000_000, 1_000_000, 1.05) == pytest.approx(1.0)
    assert zipf_hit_rate(1_000_000, 1_000_000, 1.0) == pytest.approx(1.0)
    assert zipf_hit_rate(5_000_000, 1_000_000, 0.8) == pytest.approx(1.0)  # capped at all rows
    # Exponent 1: ln(k + 1) / ln(n + 1); k = 999, n = 999,999 -> ln 1000 / ln 1e6 = 3/6 = 0.5.
    assert zipf_hit_rate(999, 999_999, 1.0) == pytest.approx(0.5, rel=1e-12)
    # Exponent 0 (uniform): ((k+1) - 1) / ((n+1) - 1) = k/n = 0.25.
    assert zipf_hit_rate(250, 1000, 0.0) == pytest.approx(0.25, rel=1e-12)


@given(
    rows=st.integers(1, 10**9),
    exponent=st.sampled_from([0.0, 0.5, 0.9, 1.0, 1.05, 1.2, 2.0]),
    a=st.floats(0, 1.0),
    b=st.floats(0, 1.0),
)
def test_zipf_hit_rate_monotone_and_bounded(rows: int, exponent: float, a: float, b: float) -> None:
    lo, hi = sorted((a * rows, b * rows))
    h_lo = zipf_hit_rate(lo, rows, exponent)
    h_hi = zipf_hit_rate(hi, rows, exponent)
    assert 0.0 <= h_lo <= h_hi + 1e-12
    assert h_hi <= 1.0 + 1e-12


# --- topology factors -----------------------------------------------------------------------------


def test_topology_factors() -> None:
    # Ring of 8: mean hop distance (1 + 2 + 3 + 4 + 3 + 2 + 1) / 7 = 16/7 = 2.2857...
    assert topology_factor("ring", 8) == approx(16 / 7)
    assert topology_factor("switch", 8) == 1.0
    assert topology_factor("fully_connected", 8) == 1.0
    assert topology_factor("hybrid_cube_mesh", 8) == approx(1.55)
    assert topology_factor("hybrid_cube_mesh", 4) == 1.0
    # Ring of 4: (1 + 2 + 1) / 3 = 4/3.
    assert topology_factor("ring", 4) == approx(4 / 3)
    for topo in ("ring", "hybrid_cube_mesh", "fully_connected", "switch", "none"):
        assert topology_factor(topo, 2) == 1.0


# --- cost and economics ---------------------------------------------------------------------------


def test_capex_dgx_a100_is_sum_of_parts() -> None:
    cat = load_catalog()
    acc = cat.accelerator["a100-sxm4-80gb"]
    cpu = cat.cpu["epyc-7742"]
    ddr = cat.ddr[cpu.ddr]
    nic200 = cat.nic["200g"]
    pcie4 = cat.pcie["gen4"]
    sw = cat.scaleup_switch
    ch = cat.chassis
    # dgx-a100: 1 node, 8 GPUs at catalog HBM (no knob premium), 2 CPUs, 2048 GB DDR,
    # 8 + 2 NICs of 200 Gb/s, 8 / 2 = 4 PCIe switches, NVSwitch per GPU, chassis; one node needs no
    # scale-out switch tier (network capex 0).
    expected = (
        8 * acc.price_usd
        + 2 * cpu.price_usd
        + 2048 * ddr.usd_per_gb
        + (8 + 2) * nic200.price_usd
        + 4 * pcie4.switch_usd
        + 8 * sw.usd_per_accelerator
        + ch.usd_per_node + 8 * ch.usd_per_accelerator
    )
    got = capex(load_system("dgx-a100"), cat)
    assert got.capex_usd == pytest.approx(expected, rel=1e-12)
    assert got.network_capex_usd == 0.0
    assert got.capex_usd == pytest.approx(sum(got.parts_usd.values()), rel=1e-12)
    # With the current catalog figures (estimates) this is
    # 8 x 16,500 + 2 x 6,950 + 2048 x 2.5 + 10 x 1,400 + 4 x 600 + 8 x 1,500 + 10,000 + 8 x 1,000
    # = 132,000 + 13,900 + 5,120 + 14,000 + 2,400 + 12,000 + 18,000 = 197,420 USD.
    if (acc.price_usd, cpu.price_usd, ddr.usd_per_gb, nic200.price_usd) == (16500, 6950, 2.5, 1400):
        assert got.capex_usd == pytest.approx(197_420.0, rel=1e-12)


def test_economics_by_hand() -> None:
    cat = load_catalog()
    fac = cat.facility
    cost = CostBreakdown(parts_usd={"x": 200_000.0}, capex_usd=200_000.0, network_capex_usd=0.0)
    pw = PowerBreakdown(parts_w={"x": 5000.0}, power_w=5000.0, accelerator_utilisation=0.5)
    eco = economics(1e6, cost, pw, cat)
    # energy per sample = 5000 W / 1e6 samples/s = 5e-3 J
    assert eco.energy_per_sample_j == approx(5e-3)
    # one Criteo epoch = 4,195,197,692 / 1e6 = 4,195.197692 s
    assert eco.epoch_time_s == approx(4195.197692)
    # 1e6 / 5000 W = 200 samples/s/W; 1e6 / 200,000 USD x 1000 = 5,000 samples/s per kUSD
    assert eco.samples_per_s_per_w == approx(200.0)
    assert eco.samples_per_s_per_kusd == approx(5000.0)
    # energy per year = 5 kW x PUE x 8766 h x price; TCO = capex / server years + energy
    energy = 5.0 * fac.pue * 8766.0 * fac.usd_per_kwh
    assert eco.energy_usd_per_year == approx(energy)
    tco = 200_000.0 / fac.server_amortisation_years + energy
    assert eco.tco_usd_per_year == approx(tco)
    # cost of one epoch = TCO per second x epoch seconds
    assert eco.epoch_cost_usd == approx(tco / (8766.0 * 3600.0) * 4195.197692)


def test_economics_zero_throughput() -> None:
    cost = CostBreakdown(parts_usd={}, capex_usd=1.0, network_capex_usd=0.0)
    pw = PowerBreakdown(parts_w={}, power_w=1.0, accelerator_utilisation=0.0)
    eco = economics(0.0, cost, pw)
    assert math.isinf(eco.epoch_time_s) and math.isinf(eco.energy_per_sample_j)


def test_evaluation_metrics_are_consistent() -> None:
    ev = evaluate(load_workload("mlperf-dlrm-v1"), load_system("dgx-a100"))
    m = ev.metrics()
    thr = ev.throughput_samples_per_s
    # throughput = global batch / step = 55,296 / step
    assert thr == approx(55_296 / ev.step_time_s)
    assert m["energy_per_sample_j"] == approx(ev.power.power_w / thr)
    assert m["epoch_time_s"] == approx(4_195_197_692 / thr)
    assert sum(ev.breakdown_s.values()) == pytest.approx(ev.step_time_s, rel=1e-9)
