"""Nodes without accelerators (``node.accelerators = 0``): the CPU path of the model, its
feasibility, monotonicity and cost, the seed paper's preset and the CPU-only measurement class."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from dse.calibration.cpu import (
    TARGET_ABS_PCT,
    CpuReport,
    cpu_design,
    load_cpu_measurements,
    validate_cpu,
)
from dse.errors import DseInputError
from dse.model.catalog import load_catalog
from dse.model.evaluate import evaluate
from dse.model.parameters import load_calibration
from dse.model.plausible import system_warnings
from dse.model.rules import check_rules
from dse.model.stages import STAGES
from dse.model.system import load_system
from dse.model.timing import alltoall_seconds
from dse.model.workload import Workload, load_workload

PRESET = "dual-socket-cpu"
CALIB = load_calibration()


def test_cpu_step_hand_checked() -> None:
    """dlrm-benchmark (batch 2048, fp32; 8 tables x 100 lookups of 64 x fp32) on one dual-socket
    Xeon 8168 node: the bottom MLP's first layer and the embedding forward, by hand."""
    ev = evaluate(load_workload("dlrm-benchmark"), load_system(PRESET), CALIB)
    eff, host = CALIB.cpu_dense_efficiency, CALIB.host_efficiency
    peak = 2 * 4.1472e12  # two sockets x 24 cores x 2.7 GHz x 64 fp32 FLOP/cycle (2 FMAs x 16 lanes x 2)
    mem = 2 * 6 * 21.328e9 * host  # two sockets x 6 channels of DDR4-2666, at the host efficiency
    b = 2048

    def layer(m: float, k: float, n: float) -> float:
        compute = 2 * m * k * n / (peak * eff)
        memory = (m * k + k * n + m * n) * 4 / mem
        return max(compute, memory)

    # Bottom MLP 512 -> 512 -> 64: each layer's GEMM and its two element-wise passes over m x n.
    bottom_fwd = sum(layer(b, k, n) + 2 * b * n * 4 / mem for k, n in ((512, 512), (512, 64)))
    # Forward lookups: 2048 samples x 8 tables x 100 rows of 256 B (+ an 8 B index each), and the
    # pooled outputs (2048 x 8 x 64 fp32) written; all on the one device, read from DDR.
    emb_fwd = (b * 8 * 100 * (256 + 8) + b * 8 * 64 * 4) / mem
    stages = ev.timing.stages
    assert stages.bottom_fwd == pytest.approx(bottom_fwd, rel=1e-9)
    assert stages.emb_fwd == pytest.approx(emb_fwd, rel=1e-9)
    # One node: nothing crosses a link; the host path is the device's own memory.
    assert stages.host_fwd == stages.a2a_network == stages.allreduce == 0.0
    assert tuple(ev.breakdown_s) == STAGES
    assert sum(ev.breakdown_s.values()) == pytest.approx(ev.step_time_s, rel=1e-12)
    assert ev.feasible and ev.metrics()["accelerators"] == 0 and ev.metrics()["hbm_capacity_gb"] == 0.0


def test_tables_beyond_ddr_are_infeasible_not_raised() -> None:
    wl = load_workload("zion-2019")  # 800 GB of tables
    one = evaluate(wl, load_system(PRESET), CALIB)
    # The node's 384 GB of DDR is its device's own memory, its one tier: 90% usable (345.6 GB),
    # less the dense model (0.14 GB) and activations (2.02 GB) leaves 343.4 GB for 807.4 GB of rows.
    assert not one.feasible
    # Whole tables pack the DDR less than full, so the rows left out outweigh the difference.
    short = one.metrics()["memory_short_gb"]
    assert short >= 807.4 - 343.4
    assert f"embedding tables need 807.4 GB; host DDR holds 343.4 GB: short by {short:.1f} GB" in one.reasons
    eight = evaluate(wl, load_system(PRESET, (("nodes", 8),)), CALIB)
    assert eight.feasible  # 8 x 384 GB hold 800 GB
    fp8 = evaluate(dataclasses.replace(load_workload("mlperf-dlrm-v1"), precision="fp8"),
                   load_system(PRESET), CALIB)
    assert not fp8.feasible and any("fp8" in r for r in fp8.reasons)


@pytest.mark.parametrize("workload", ["mlperf-dlrm-v1", "mlperf-dlrm-dcnv2", "dlrm-benchmark"])
@pytest.mark.parametrize("nodes", [1, 4])
def test_more_cores_or_bandwidth_never_slows(workload: str, nodes: int) -> None:
    wl = load_workload(workload)
    base = (("nodes", nodes), ("node.ddr_gb", 1536), ("node.cpu", "xeon-cooper-lake"))
    step = evaluate(wl, load_system(PRESET, base), CALIB).step_time_s
    for more in ((("node.cpu_sockets", 4),), (("node.ddr_channels_per_socket", 6),),
                 (("node.nic_gbit_s", 100),), (("node.nics", 2),)):
        faster = evaluate(wl, load_system(PRESET, base + more), CALIB).step_time_s
        assert faster <= step * (1 + 1e-12), more
    fewer = evaluate(wl, load_system(PRESET, (*base, ("node.ddr_channels_per_socket", 3))), CALIB)
    assert fewer.step_time_s >= step


def test_each_nic_has_its_own_pcie_link() -> None:
    """Four dual-socket nodes with 100 GbE NICs on PCIe Gen3: a NIC's x16 link (15.75 GB/s, 7.7 at
    the fabric efficiency) binds the network all-to-all, not the NIC (12.5 GB/s, 10.5 at the
    network efficiency) nor DDR, so a second NIC, on a link of its own, halves the all-to-all's
    transfer time (its latency unchanged)."""
    x16 = load_catalog().pcie_gen(3).x16_gb_s * 1e9
    base = (("nodes", 4), ("node.nic_gbit_s", 100), ("node.pcie_gen", 3))
    one, two = (load_system(PRESET, (*base, ("node.nics", n))) for n in (1, 2))
    assert (one.nic_links_bytes_s, two.nic_links_bytes_s) == (x16, 2 * x16)
    assert not any(r.violation > 0 for r in check_rules(two, load_catalog()))
    cross = 1e9
    t1, t2 = (alltoall_seconds(0.0, cross, 4, s, CALIB).network for s in (one, two))
    transfer = cross / (x16 * CALIB.fabric_efficiency)
    assert transfer > cross / (one.nic_bytes_s * CALIB.network_efficiency)
    assert transfer > 2 * cross / (one.ddr_bytes_s * CALIB.host_efficiency)
    assert t1 - t2 == pytest.approx(transfer / 2, rel=1e-9)


def test_cost_and_power_grow_with_each_part() -> None:
    wl = load_workload("mlperf-dlrm-v1")
    base = evaluate(wl, load_system(PRESET), CALIB)
    assert base.cost.parts_usd["accelerators"] == 0.0 and base.power.parts_w["accelerators"] == 0.0
    for more in (("node.cpu_sockets", 4), ("node.ddr_gb", 768), ("node.nics", 2),
                 ("node.nic_gbit_s", 200), ("nodes", 2)):
        ev = evaluate(wl, load_system(PRESET, (more,)), CALIB)
        assert ev.cost.capex_usd > base.cost.capex_usd, more
        assert ev.power.power_w > base.power.power_w, more
    # The CPUs do the training: they draw their TDP (two 205 W sockets).
    assert base.power.parts_w["cpus"] == pytest.approx(2 * 205.0)


def test_preset_describes_the_seed_papers_server() -> None:
    system = load_system(PRESET)
    assert system.cpu_only and system.spec.node.cpu_sockets == 2 and system.accelerators_per_node == 1
    assert "2003.09518" in system.spec.source
    assert system_warnings(system) == []  # its 384 GB of DDR are stated, though no host tier is left
    ev = evaluate(load_workload("mlperf-dlrm-v1"), system, CALIB)
    assert ev.feasible and ev.throughput_samples_per_s > 0
    assert ev.bottleneck == "dense_compute"


def test_node_needs_an_accelerator_key_unless_it_has_none(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('nodes = 1\n[node]\naccelerators = 8\ncpu = "xeon-8168"\ncpu_sockets = 2\n'
                    'ddr_gb = 384\nnics = 1\nnic_gbit_s = 25\n', encoding="utf-8")
    with pytest.raises(DseInputError, match=r"node\.accelerator"):
        load_system(str(path))
    with pytest.raises(DseInputError, match="no peak_tflops"):
        load_system(PRESET, (("node.cpu", "grace"),))


@pytest.mark.parametrize(("cpu", "fp32_tflops"), [("epyc-7742", 4.608), ("epyc-7763", 5.0176),
                                                  ("epyc-9654", 7.3728), ("epyc-9755", 22.1184)])
def test_an_epyc_node_trains_on_its_cores(cpu: str, fp32_tflops: float) -> None:
    # Each generation's peak by hand: cores x base GHz x FLOP a cycle (32 fp32 on Zen 2-4's two
    # 256-bit pipes, 64 on Zen 5's 512-bit ones), two sockets.
    system = load_system(PRESET, (("node.cpu", cpu), ("constraints.year", 2026)))
    assert system.peak_flops["fp32"] == pytest.approx(2 * fp32_tflops * 1e12, rel=1e-12)
    ev = evaluate(load_workload("mlperf-dlrm-v1"), system, CALIB)
    assert ev.feasible and ev.throughput_samples_per_s > 0, ev.reasons


def test_cpu_measurements_load_strictly(tmp_path: Path) -> None:
    ms = load_cpu_measurements()
    assert len(ms) == 10 and len({m.id for m in ms}) == 10
    text = (Path(__file__).parents[1] / "dse" / "data" / "cpu_measurements.csv").read_text(encoding="utf-8")
    bad = tmp_path / "cpu.csv"
    bad.write_text(text.replace(",478597,", ",fast,"), encoding="utf-8")
    with pytest.raises(DseInputError, match=r"cpu.csv: row 2.samples_per_s"):
        load_cpu_measurements(bad)
    for m in ms:
        wl, system = cpu_design(m)
        assert system.cpu_only and system.nodes == m.nodes and wl.global_batch == m.global_batch


@pytest.fixture(scope="module")
def report() -> CpuReport:
    return validate_cpu(load_cpu_measurements(), load_calibration())


def test_cpu_fit_matches_the_packaged_calibration(report: CpuReport) -> None:
    assert report.efficiency == pytest.approx(CALIB.cpu_dense_efficiency, rel=1e-3)
    assert report.matrix_efficiency == pytest.approx(CALIB.cpu_matrix_efficiency, rel=1e-3)
    for eff in (report.efficiency, report.matrix_efficiency):
        assert 0.01 < eff < 0.95  # not at a bound
    # Each parameter is fitted on its own points: Cooper Lake on its vector units, Sapphire
    # Rapids' bf16 on AMX.
    units = dict(zip(report.ids, report.timed_by, strict=True))
    assert {i for i, t in units.items() if t == "cpu_matrix_efficiency"} == {
        "mlperf-v2.1-intel-1n2s-spr", "mlperf-v2.1-intel-2n2s-spr", "mlperf-v2.1-intel-4n2s-spr",
        "mlperf-v3.1-intel-4n2s-8480p-dcnv2"}


def test_cooper_lake_avx512_points_within_target(report: CpuReport) -> None:
    """The MLPerf v0.7 Cooper Lake points (AVX512_BF16, 1-4 nodes) and v1.0's eight-node run are
    within the target in sample and left out of the fit."""
    ins = CpuReport.errors(report.in_sample, report.measured)
    loo = CpuReport.errors(report.left_out, report.measured)
    for i, e_in, e_out in zip(report.ids, ins, loo, strict=True):
        if i.startswith(("mlperf-v0.7", "mlperf-v1.0-intel-8n")):
            assert abs(e_in) <= TARGET_ABS_PCT and abs(e_out) <= TARGET_ABS_PCT, (i, e_in, e_out)


def test_every_miss_has_a_stated_reason(report: CpuReport) -> None:
    """A point outside the target, in sample or left out, is one docs/validation.md explains."""
    from dse.outputs.cpu_class_doc import MISS_REASONS

    ins = CpuReport.errors(report.in_sample, report.measured)
    loo = CpuReport.errors(report.left_out, report.measured)
    for i, e_in, e_out in zip(report.ids, ins, loo, strict=True):
        if max(abs(e_in), abs(e_out)) > TARGET_ABS_PCT:
            assert any(i.startswith(k) for k in MISS_REASONS), i


@pytest.mark.xfail(strict=True, reason=(
    "Issue 27's target (every CPU point within 25%) is not met: the v1.0 four-node run is -29% "
    "with its network assumed (not published), and the Sapphire Rapids runs on one and four "
    "nodes are -23% and +25% in sample, -31% and +33% left out (the model's step shrinks with "
    "the nodes faster than the measured one does); docs/validation.md"))
def test_every_cpu_point_within_target(report: CpuReport) -> None:
    ins = CpuReport.errors(report.in_sample, report.measured)
    loo = CpuReport.errors(report.left_out, report.measured)
    assert max(map(abs, [*ins, *loo])) <= TARGET_ABS_PCT


def test_fit_moves_each_efficiency_on_its_own_points() -> None:
    """A point on the vector units does not move ``cpu_matrix_efficiency``, and the reverse: the
    fit without the AMX points keeps the matrix prior and the same vector efficiency."""
    from dse.calibration.cpu import fit_cpu

    ms = load_cpu_measurements()
    vector = [m for m in ms if m.cpu != "xeon-8480p"]
    start = dataclasses.replace(CALIB, cpu_matrix_efficiency=0.5, cpu_dense_efficiency=0.5)
    fitted = fit_cpu(vector, start)
    assert fitted.cpu_matrix_efficiency == 0.5
    assert fitted.cpu_dense_efficiency == pytest.approx(CALIB.cpu_dense_efficiency, rel=1e-3)
    amx = fit_cpu([m for m in ms if m.cpu == "xeon-8480p"], start)
    assert amx.cpu_dense_efficiency == 0.5
    assert amx.cpu_matrix_efficiency == pytest.approx(CALIB.cpu_matrix_efficiency, rel=1e-3)


def test_compute_cores_scale_the_peak_and_are_checked() -> None:
    """``node.cpu_compute_cores``: fewer cores for the math never speed a step, 20 of 28 cores give
    20/28 of the peak, and more cores than the CPU has is a one-line error naming the field."""
    wl = load_workload("mlperf-dlrm-v1")
    base = (("node.cpu", "xeon-8376h"), ("node.cpu_sockets", 8), ("node.ddr_gb", 1536))
    full = load_system(PRESET, base)
    some = load_system(PRESET, (*base, ("node.cpu_compute_cores", 20)))
    assert some.peak_flops["bf16"] == pytest.approx(full.peak_flops["bf16"] * 20 / 28, rel=1e-12)
    assert evaluate(wl, some, CALIB).step_time_s > evaluate(wl, full, CALIB).step_time_s
    with pytest.raises(DseInputError, match=r"node.cpu_compute_cores.*29 exceeds the 28 cores"):
        load_system(PRESET, (*base, ("node.cpu_compute_cores", 29)))


def test_memo_tells_socket_counts_apart() -> None:
    """Two sockets of six DDR channels and four of three have the same DDR bandwidth but not the
    same peak: a sweep's memo must not hand one the other's step loads."""
    from dse.model.evaluate import Memo

    wl = load_workload("mlperf-dlrm-v1")
    memo = Memo(wl, CALIB)
    designs = [load_system(PRESET, (("node.cpu_sockets", s), ("node.ddr_channels_per_socket", c)))
               for s, c in ((2, 6), (4, 3))]
    for system in designs:
        assert evaluate(wl, system, CALIB, memo=memo).step_time_s == evaluate(wl, system, CALIB).step_time_s
    assert designs[0].hbm_bytes_s == designs[1].hbm_bytes_s
    # Nor one core count another's: the peak differs, nothing else does.
    for cores in (None, 12, 24):
        system = load_system(PRESET, () if cores is None else (("node.cpu_compute_cores", cores),))
        assert evaluate(wl, system, CALIB, memo=memo).step_time_s == evaluate(wl, system, CALIB).step_time_s


def test_validate_reports_the_cpu_class(tmp_path: Path) -> None:
    """``dse validate``: the class's line, its JSON key and its section of docs/validation.md."""
    import json

    from typer.testing import CliRunner

    from dse.cli import app

    runner = CliRunner()
    env = {"COLUMNS": "250"}
    doc = tmp_path / "validation.md"
    result = runner.invoke(app, ["validate", "--no-loo", "--forward", "--json", "--markdown", str(doc)],
                           env=env)
    assert result.exit_code == 0, result.output
    cpu = json.loads(result.stdout)["cpu_class"]
    assert len(cpu["points"]) == 10 and cpu["target_abs_pct"] == TARGET_ABS_PCT
    assert cpu["cpu_dense_efficiency"] == pytest.approx(CALIB.cpu_dense_efficiency, rel=1e-3)
    assert cpu["cpu_matrix_efficiency"] == pytest.approx(CALIB.cpu_matrix_efficiency, rel=1e-3)
    text = doc.read_text(encoding="utf-8")
    section = text[text.index("## CPU-only class"):text.index("## Analysis")]
    assert all(p["id"] in section for p in cpu["points"])
    assert "**not met** in sample, **not met** left out" in section
    assert "Forward in time: fitted on the 9 points published up to 2022-12" in section
    assert [p["id"] for p in cpu["forward"]["points"]] == ["mlperf-v3.1-intel-4n2s-8480p-dcnv2"]
    # The packaged page carries the section as the generator writes it.
    packaged = (Path(__file__).parents[1] / "docs" / "validation.md").read_text(encoding="utf-8")
    assert section in packaged
    result = runner.invoke(app, ["validate", "--no-loo"], env=env)
    heading = (f"CPU-only class (10 points): cpu_dense_efficiency {CALIB.cpu_dense_efficiency:.3g}, "
               f"cpu_matrix_efficiency {CALIB.cpu_matrix_efficiency:.3g}")
    assert heading in result.stdout


def test_ensemble_stays_valid_when_the_cpu_efficiency_moves() -> None:
    """cpu_dense_efficiency is fitted apart: the accelerator fit's ensemble stays the calibration's
    when it moves, and every member carries the calibration's value (so a CPU design's spread is
    not that of a stale efficiency)."""
    from dse.calibration.ensemble import load_ensemble
    from dse.model.parameters import fingerprint

    moved = dataclasses.replace(CALIB, cpu_dense_efficiency=0.2, cpu_matrix_efficiency=0.1)
    assert fingerprint(moved) == fingerprint(CALIB)
    for calib in (CALIB, moved):
        ens = load_ensemble(calibration=calib)
        members = (*ens.bootstrap, *ens.leave_one_out)
        assert {m.cpu_dense_efficiency for m in members} == {calib.cpu_dense_efficiency}
        assert {m.cpu_matrix_efficiency for m in members} == {calib.cpu_matrix_efficiency}
    assert fingerprint(dataclasses.replace(CALIB, memory_efficiency=0.4)) != fingerprint(CALIB)
    # An unpinned parameter (a range, drawn by the members) moves no refit either.
    assert fingerprint(dataclasses.replace(CALIB, host_efficiency=0.4)) == fingerprint(CALIB)


def test_amx_precisions_are_timed_at_the_matrix_efficiency() -> None:
    """On Sapphire Rapids, bf16 runs on AMX (``matrix_precisions``) and fp32 on AVX-512: each
    precision's dense time answers to its own efficiency and not to the other."""
    system = load_system(PRESET, (("node.cpu", "xeon-8480p"), ("node.ddr_gb", 1024)))
    for precision, own, other in (("bf16", "cpu_matrix_efficiency", "cpu_dense_efficiency"),
                                  ("fp32", "cpu_dense_efficiency", "cpu_matrix_efficiency")):
        wl = dataclasses.replace(load_workload("mlperf-dlrm-v1"), precision=precision)

        def top_fwd(name: str, factor: float, wl: Workload = wl) -> float:
            calib = dataclasses.replace(CALIB, **{name: getattr(CALIB, name) * factor})
            return evaluate(wl, system, calib).timing.stages.top_fwd

        base = top_fwd(own, 1.0)
        assert top_fwd(other, 0.5) == base
        assert top_fwd(own, 0.5) > base


def test_intel_layout_copies_the_tables_under_2048_rows() -> None:
    """``software.replicate_below_rows`` = 2,048 (Intel's ``sparse_dense_boundary``): on four
    nodes, the ten MLPerf tables of fewer rows are copied on every node and the other 16 shared
    out whole, four a node; the batch rule would copy every table of up to 65,536 rows (18)."""
    from dse.model.placement import plan_placement

    m = next(m for m in load_cpu_measurements() if m.id == "mlperf-v1.0-intel-4n8s-8376h")
    wl, system = cpu_design(m)
    small = {i for i, t in enumerate(wl.tables) if t.rows < 2048}
    plan = plan_placement(wl, system)
    assert len(small) == 10
    assert {s.table for s in plan.shards if s.sharding == "replicated"} == small
    per_node = [sum(1 for s in plan.shards if s.device == d) for d in range(4)]
    assert per_node == [4, 4, 4, 4]
    batch_rule = load_system(PRESET, (("node.cpu", "xeon-8376h"), ("node.cpu_sockets", 8),
                                      ("node.ddr_gb", 1536), ("nodes", 4),
                                      ("software.hot_embedding_replication", False)))
    wide = plan_placement(wl, batch_rule)
    assert sum(1 for s in wide.shards if s.sharding == "replicated") == 18
    with pytest.raises(DseInputError, match=r"software.replicate_below_rows"):
        load_system(PRESET, (("software.replicate_below_rows", 0),))


@pytest.mark.parametrize("tables", [8, 80])  # the per-table loop and the array path (64 or more)
def test_replicate_below_rows_is_a_strict_bound(tables: int) -> None:
    """``replicate_below_rows = 2048`` copies a table of 2,047 rows and not one of 2,048, on both
    of the placement's paths; without it, the batch rule copies both."""
    from dse.model.placement import plan_placement
    from dse.model.workload import EmbeddingTable

    rows = [2047, 2048] + [10_000_000] * (tables - 2)
    wl = dataclasses.replace(load_workload("mlperf-dlrm-v1"), global_batch=65536,
                             tables=tuple(EmbeddingTable(rows=r, dim=128, pooling=1.0) for r in rows))
    base = (("nodes", 4), ("node.ddr_gb", 1536), ("software.hot_embedding_replication", False))
    bound = plan_placement(wl, load_system(PRESET, (*base, ("software.replicate_below_rows", 2048))))
    assert {s.table for s in bound.shards if s.sharding == "replicated"} == {0}
    batch = plan_placement(wl, load_system(PRESET, base))
    assert {s.table for s in batch.shards if s.sharding == "replicated"} == {0, 1}


def test_keys_a_design_does_not_read_are_warned() -> None:
    """``node.cpu_compute_cores`` on a node with accelerators and ``replicate_below_rows`` with
    replication off are ignored: said as warnings naming the key, not silently."""
    on_gpus = system_warnings(load_system("dgx-h100", (("node.cpu_compute_cores", 10),)))
    assert [w.field for w in on_gpus] == ["node.cpu_compute_cores"]
    off = system_warnings(load_system(PRESET, (("software.replicate_below_rows", 2048),
                                               ("software.replicate_small_tables", False))))
    assert [w.field for w in off] == ["software.replicate_below_rows"]
    assert system_warnings(load_system(PRESET, (("software.replicate_below_rows", 2048),))) == []


def test_forward_fits_only_the_past() -> None:
    """``validate_cpu(..., forward_cut)``: the later points are predicted by a fit on the earlier
    ones alone, from the priors; a unit with no earlier point stays at its prior and says so."""
    from dse.calibration.cpu import fit_cpu, predict_cpu

    ms = load_cpu_measurements()
    report = validate_cpu(ms, CALIB, forward_cut="2020-12")
    later = [m for m in ms if m.published > "2020-12"]
    assert report.forward_ids == [m.id for m in later] and len(later) == 6
    assert report.forward_unfitted == ("cpu_matrix_efficiency",)
    priors = CALIB.with_values(cpu_dense_efficiency=0.5, cpu_matrix_efficiency=0.5)
    past = fit_cpu([m for m in ms if m.published <= "2020-12"], priors)
    assert [p for _, p in report.forward] == predict_cpu([cpu_design(m) for m in later], past)
    # Guessed at the prior (0.5 of AMX's peak, against about 0.06 fitted): far too fast.
    errors = dict(zip(report.forward_ids, report.forward_errors(), strict=True))
    assert all(errors[m.id] > 50 for m in later if m.cpu == "xeon-8480p")
    assert validate_cpu(ms, CALIB).forward == ()


@pytest.mark.parametrize(("setting", "message"), [
    ("node.cpu_compute_cores=99", "node.cpu_compute_cores: 99 exceeds the 24 cores of cpu 'xeon-8168'"),
    ("node.cpu_compute_cores=0", "node.cpu_compute_cores: must be at least 1, got 0"),
    ("software.replicate_below_rows=0", "software.replicate_below_rows: must be at least 1, got 0"),
    ("software.replicate_below_rows=100000000000000",
     "software.replicate_below_rows: must be at most 10000000000000, got 100000000000000"),
])
def test_bad_new_keys_fail_in_one_line(setting: str, message: str) -> None:
    """``dse evaluate --set`` with an impossible value of the new keys: one line naming the system
    and the field, exit code 2, no traceback."""
    from typer.testing import CliRunner

    from dse.cli import app

    result = CliRunner().invoke(app, ["evaluate", "-w", "mlperf-dlrm-v1", "-s", PRESET, "--set", setting],
                                env={"COLUMNS": "250"})
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [f"dse: error: system preset {PRESET}: {message}"]
