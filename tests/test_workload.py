"""Tests of the workload presets and loader (dse.model.workload).

Expected figures are worked out by hand in the comments from docs/sources.md#workloads,
never by calling the code under test.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from dse.errors import DseInputError
from dse.model.workload import (
    SyntheticTables,
    Workload,
    load_workload,
    read_workload_data,
    scale_tables,
    with_batch,
    workload_from_mapping,
    workload_presets,
)

GIB = 2**30

PRESETS = (
    "criteo-1tb-small",
    "criteo-1tb-large",
    "criteo-1tb-small-dcnv2",
    "criteo-1tb-large-dcnv2",
    "mlperf-dlrm-v1",
    "mlperf-dlrm-dcnv2",
    "dlrm-benchmark",
    "synthetic-production-a",
    "synthetic-production-12t",
    "zion-2019",
)
SYNTHETIC = ("synthetic-production-a", "synthetic-production-12t", "zion-2019")
CRITEO = PRESETS[:6]

# Row totals stated in docs/sources.md#workloads.
ROWS_SMALL = 32_709_138
ROWS_LARGE = 177_944_275
ROWS_MLPERF_V1 = 187_767_399
ROWS_MLPERF_DCNV2 = 204_184_588


def rows_total(w: Workload) -> int:
    return sum(t.rows for t in w.tables)


# --- the preset set -------------------------------------------------------------------------------


def test_preset_names() -> None:
    assert set(workload_presets()) == set(PRESETS)


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_loads_with_metadata(name: str) -> None:
    w = load_workload(name)
    assert w.name == name
    assert w.description
    assert w.source
    assert w.synthetic == (name in SYNTHETIC)
    if w.synthetic:
        assert "synthetic" in w.description
        assert "2104.05158" in w.description
    assert w.embedding_params() > 0
    assert w.forward_flops_per_sample() > 0


@pytest.mark.parametrize("name", CRITEO)
def test_criteo_common_shape(name: str) -> None:
    w = load_workload(name)
    assert len(w.tables) == 26
    assert {t.dim for t in w.tables} == {128}
    assert w.dense_features == 13
    assert w.bottom_mlp == (512, 256, 128)
    assert w.top_mlp == (1024, 1024, 512, 256, 1)
    assert w.embedding_dtype == "fp32"


# --- row totals and table bytes against docs/sources.md --------------------------------------------


@pytest.mark.parametrize(
    ("name", "rows", "gib"),
    [
        # 32,709,138 rows x 128 x 4 B = 16,747,078,656 B = 15.597 GiB ("15.6 GiB")
        ("criteo-1tb-small", ROWS_SMALL, 15.597),
        ("criteo-1tb-small-dcnv2", ROWS_SMALL, 15.597),
        # 177,944,275 x 512 B = 91,107,468,800 B = 84.85 GiB ("about 85 GiB")
        ("criteo-1tb-large", ROWS_LARGE, 84.85),
        ("criteo-1tb-large-dcnv2", ROWS_LARGE, 84.85),
        # 187,767,399 x 512 B = 96,136,908,288 B = 89.53 GiB ("89.5 GiB")
        ("mlperf-dlrm-v1", ROWS_MLPERF_V1, 89.53),
        # 204,184,588 x 512 B = 104,542,509,056 B = 97.36 GiB ("97.4 GiB")
        ("mlperf-dlrm-dcnv2", ROWS_MLPERF_DCNV2, 97.36),
    ],
)
def test_rows_and_table_bytes(name: str, rows: int, gib: float) -> None:
    w = load_workload(name)
    assert rows_total(w) == rows
    assert w.embedding_bytes() == rows * 128 * 4
    assert w.embedding_bytes() / GIB == pytest.approx(gib, abs=0.01)


def test_small_and_large_share_structure_with_dcnv2_variants() -> None:
    for base in ("criteo-1tb-small", "criteo-1tb-large"):
        dot, dcn = load_workload(base), load_workload(f"{base}-dcnv2")
        assert [t.rows for t in dot.tables] == [t.rows for t in dcn.tables]
        assert dot.interaction == "dot"
        assert dcn.interaction == "dcnv2"
        assert (dcn.dcn_layers, dcn.dcn_rank) == (3, 512)
        assert (dot.embedding_optimizer, dot.dense_optimizer) == ("sgd", "sgd")
        assert (dcn.embedding_optimizer, dcn.dense_optimizer) == ("adam", "adam")


# --- mlperf-dlrm-v1: the hand-checked model -------------------------------------------------------


def test_mlperf_v1_embedding_params_and_bytes() -> None:
    w = load_workload("mlperf-dlrm-v1")
    # 187,767,399 x 128 = 24,034,227,072 parameters ("24.0 B")
    assert w.embedding_params() == 24_034_227_072
    # x 4 B = 96,136,908,288 B = 89.53 GiB; SGD keeps no state, so footprint = rows
    assert w.embedding_bytes() == 96_136_908_288
    assert w.embedding_footprint_bytes() == 96_136_908_288
    assert w.embedding_bytes() / GIB == pytest.approx(89.5, abs=0.05)


def test_mlperf_v1_forward_flops() -> None:
    w = load_workload("mlperf-dlrm-v1")
    # bottom MACs: 13*512 + 512*256 + 256*128 = 6,656 + 131,072 + 32,768 = 170,496
    # 27 features (26 tables + dense) -> 27*26/2 = 351 pairs; top input 128 + 351 = 479
    assert w.top_mlp_input() == 479
    # top MACs: 479*1024 + 1024*1024 + 1024*512 + 512*256 + 256*1
    #         = 490,496 + 1,048,576 + 524,288 + 131,072 + 256 = 2,194,688
    # dot interaction: 2 * 351 * 128 = 89,856 FLOPs
    assert w.interaction_flops_per_sample() == 89_856
    # total: 2 * (170,496 + 2,194,688) + 89,856 = 4,730,368 + 89,856 = 4,820,224
    assert w.forward_flops_per_sample() == 4_820_224
    assert w.training_flops_per_sample() == 3 * 4_820_224


def test_mlperf_v1_dense_params_lookups_and_input() -> None:
    w = load_workload("mlperf-dlrm-v1")
    # weights 170,496 + 2,194,688 = 2,365,184; biases 512+256+128 + 1024+1024+512+256+1 = 3,713
    assert w.dense_params() == 2_368_897
    assert w.lookups_per_sample() == 26
    # 13 dense x 8 B + 26 indices x 8 B + 8 B label = 104 + 208 + 8 = 320 B
    assert w.input_bytes_per_sample() == 320
    assert w.global_batch == 55_296
    assert w.precision == "amp"
    assert (w.embedding_optimizer, w.dense_optimizer) == ("sgd", "sgd")


# --- DCNv2 models ---------------------------------------------------------------------------------


def test_mlperf_dcnv2_shape_and_flops() -> None:
    w = load_workload("mlperf-dlrm-dcnv2")
    assert w.lookups_per_sample() == 214  # 3+2+1+2+6+1+1+1+1+7+3+8+1+6+9+5+1+1+1+12+100+27+10+3+1+1
    assert [t.pooling for t in w.tables][20] == 100
    # DCNv2 input: bottom output 128 + 26 tables x 128 = 3,456
    assert w.top_mlp_input() == 3456
    assert w.global_batch == 55_296
    # MACs: bottom 170,496
    #     + cross: 3 layers x (3456*512 + 512*3456) = 3 x 3,538,944 = 10,616,832
    #     + top: 3456*1024 + 1,048,576 + 524,288 + 131,072 + 256
    #          = 3,538,944 + 1,704,192 = 5,243,136
    #     = 16,030,464 MACs -> 32,060,928 FLOPs (no separate interaction FLOPs)
    assert w.interaction_flops_per_sample() == 0
    assert w.forward_flops_per_sample() == 32_060_928
    # 214 indices x 8 B + 13 x 8 B + 8 B = 1,712 + 104 + 8 = 1,824 B
    assert w.input_bytes_per_sample() == 1824


@pytest.mark.parametrize("name", ["criteo-1tb-small-dcnv2", "criteo-1tb-large-dcnv2"])
def test_criteo_dcnv2_top_input(name: str) -> None:
    w = load_workload(name)
    assert w.top_mlp_input() == 128 + 26 * 128 == 3456
    assert w.lookups_per_sample() == 26
    assert w.forward_flops_per_sample() == 32_060_928  # same dense part as mlperf-dlrm-dcnv2


# --- optimizer state ------------------------------------------------------------------------------


def test_adam_adds_two_fp32_per_element() -> None:
    w = load_workload("criteo-1tb-small-dcnv2")
    # rows x 128 x (4 B weight + 2 x 4 B moments) = 32,709,138 x 1,536 = 50,241,235,968 B
    assert w.row_state_bytes(128) == 128 * 12
    assert w.embedding_footprint_bytes() == 50_241_235_968
    assert w.dense_optimizer_state_per_param() == 2


def test_adagrad_adds_one_fp32_per_element() -> None:
    w = load_workload("mlperf-dlrm-dcnv2")
    assert (w.embedding_optimizer, w.dense_optimizer) == ("adagrad", "adagrad")
    # element-wise Adagrad: 204,184,588 x 128 x (4 + 4) B = 209,085,018,112 B (2 x 97.36 GiB)
    assert w.embedding_footprint_bytes() == 209_085_018_112
    assert w.dense_optimizer_state_per_param() == 1


def test_rowwise_adagrad_adds_one_fp32_per_row() -> None:
    w = load_workload("mlperf-dlrm-dcnv2", (("embedding_optimizer", "rowwise_adagrad"),))
    # 204,184,588 rows x (128 x 4 + 4) B = 204,184,588 x 516 = 105,359,247,408 B
    assert w.row_state_bytes(128) == 516
    assert w.embedding_footprint_bytes() == 105_359_247_408


def test_sgd_keeps_no_state() -> None:
    w = load_workload("criteo-1tb-small")
    assert w.embedding_footprint_bytes() == w.embedding_bytes() == ROWS_SMALL * 512
    assert w.dense_optimizer_state_per_param() == 0


# --- dlrm-benchmark -------------------------------------------------------------------------------


def test_dlrm_benchmark() -> None:
    w = load_workload("dlrm-benchmark")
    assert len(w.tables) == 8
    assert all((t.rows, t.dim, t.pooling) == (1_000_000, 64, 100) for t in w.tables)
    assert w.dense_features == 512
    assert w.bottom_mlp == (512, 64)
    assert w.top_mlp == (1024, 1024, 1024, 1)
    assert w.global_batch == 2048
    assert w.lookups_per_sample() == 800
    # 8 x 1M x 64 = 512,000,000 params x 4 B = 2,048,000,000 B
    assert w.embedding_params() == 512_000_000
    assert w.embedding_bytes() == 2_048_000_000
    # 9 features -> 36 pairs; top input 64 + 36 = 100
    assert w.top_mlp_input() == 100
    # bottom MACs 512*512 + 512*64 = 294,912; top MACs 100*1024 + 2 x 1,048,576 + 1,024 = 2,200,576
    # interaction 2 x 36 x 64 = 4,608; total 2 x 2,495,488 + 4,608 = 4,995,584
    assert w.forward_flops_per_sample() == 4_995_584


# --- synthetic production models ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "count", "total_params", "pooling"),
    [
        ("synthetic-production-a", 1000, 0.8e12, 15.0),
        ("synthetic-production-12t", 48, 12e12, 20.0),
        ("zion-2019", 80, 2e11, 25.0),
    ],
)
def test_synthetic_population(name: str, count: int, total_params: float, pooling: float) -> None:
    w = load_workload(name)
    assert w.synthetic
    assert len(w.tables) == count
    assert w.embedding_params() == pytest.approx(total_params, rel=0.01)
    mean_pooling = w.lookups_per_sample() / len(w.tables)
    assert mean_pooling == pytest.approx(pooling, rel=0.15)
    assert all(t.rows >= 1 and t.pooling >= 1 for t in w.tables)


@pytest.mark.parametrize("name", SYNTHETIC)
def test_synthetic_generation_is_deterministic(name: str) -> None:
    data, source = read_workload_data(name)
    first = workload_from_mapping(data, source)
    second = workload_from_mapping(read_workload_data(name)[0], source)
    assert first == second
    # an uncached load (with a no-op override) gives the same tables as the cached preset
    again = load_workload(name, (("global_batch", first.global_batch),))
    assert again.tables == load_workload(name).tables


def test_synthetic_seed_changes_tables() -> None:
    a = load_workload("zion-2019")
    b = load_workload("zion-2019", (("synthetic.seed", 7),))
    assert a.tables != b.tables
    assert b.embedding_params() == pytest.approx(a.embedding_params(), rel=0.01)


def test_synthetic_generator_directly() -> None:
    spec = SyntheticTables(seed=1, count=10, total_params=1e6, dims=(8, 16), pooling_mean=1.0)
    tables = spec.generate()
    assert tables == spec.generate()
    assert len(tables) == 10
    assert {t.dim for t in tables} <= {8, 16}
    assert all(t.pooling == 1.0 for t in tables)  # pooling_mean 1 -> exactly one lookup
    assert sum(t.params() for t in tables) == pytest.approx(1e6, rel=0.01)


def test_synthetic_production_a_flops_and_dims() -> None:
    w = load_workload("synthetic-production-a")
    # paper: Model-A 638 MFLOPS/sample; the preset's MLP widths aim at about 620
    assert 550e6 <= w.forward_flops_per_sample() <= 700e6
    assert {t.dim for t in w.tables} <= {4, 8, 16, 32, 64, 128, 256, 384}
    assert min(t.dim for t in w.tables) == 4
    assert max(t.dim for t in w.tables) == 384


def test_synthetic_production_12t() -> None:
    w = load_workload("synthetic-production-12t")
    assert {t.dim for t in w.tables} == {256}
    # paper: Model-F about 5 MFLOPS/sample
    assert 3e6 <= w.forward_flops_per_sample() <= 7e6
    # 49 features -> 49*48/2 = 1,176 pairs; top input 256 + 1,176 = 1,432
    assert w.top_mlp_input() == 1432


def test_zion_2019_exceeds_node_hbm_fits_ddr() -> None:
    w = load_workload("zion-2019")
    footprint = w.embedding_footprint_bytes()
    assert 256e9 < footprint < 1.5e12  # one Zion node: 8 x 32 GB HBM; 1.5-2 TB DDR
    assert {t.dim for t in w.tables} <= {64, 128}
    assert w.embedding_optimizer == "rowwise_adagrad"
    assert w.precision == "fp32"
    assert 10e6 <= w.forward_flops_per_sample() <= 30e6


# --- overrides and helpers ------------------------------------------------------------------------


def test_override_global_batch() -> None:
    w = load_workload("mlperf-dlrm-v1", (("global_batch", 4096),))
    assert w.global_batch == 4096
    assert load_workload("mlperf-dlrm-v1").global_batch == 55_296  # the preset is untouched


def test_override_precision_and_table_dim() -> None:
    w = load_workload("criteo-1tb-small", (("precision", "amp"), ("tables.dim", 64)))
    assert w.precision == "amp"
    assert {t.dim for t in w.tables} == {64}
    assert w.embedding_bytes() == ROWS_SMALL * 64 * 4


def test_override_bad_value_is_input_error() -> None:
    with pytest.raises(DseInputError) as exc:
        load_workload("mlperf-dlrm-v1", (("precision", "fp64"),))
    assert exc.value.key == "precision"
    assert "mlperf-dlrm-v1" in exc.value.source


def test_with_batch_and_scale_tables() -> None:
    w = load_workload("mlperf-dlrm-v1")
    assert with_batch(w, 1024).global_batch == 1024
    big = scale_tables(w, 4)
    assert rows_total(big) == 4 * ROWS_MLPERF_V1
    assert big.name == "mlperf-dlrm-v1-x4"
    assert dataclasses.replace(big, name=w.name, tables=w.tables) == w


# --- bad input ------------------------------------------------------------------------------------

GOOD = """
name = "tiny"
dense_features = 13
bottom_mlp = [64, 16]
top_mlp = [32, 1]
interaction = "dot"
global_batch = 128
precision = "fp32"
embedding_dtype = "fp32"
embedding_optimizer = "sgd"
dense_optimizer = "sgd"
"""
TABLES = """
[tables]
rows = [10, 20, 30]
dim = 16
pooling = 1
"""
SYNTH = """
[synthetic]
seed = 1
count = 3
total_params = 1e4
dims = [16]
pooling_mean = 2.0
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "w.toml"
    path.write_text(text)
    return str(path)


def error_for(tmp_path: Path, text: str) -> DseInputError:
    path = write(tmp_path, text)
    with pytest.raises(DseInputError) as exc:
        load_workload(path)
    assert exc.value.source == path
    return exc.value


def test_good_file_loads(tmp_path: Path) -> None:
    w = load_workload(write(tmp_path, GOOD + TABLES))
    assert w.name == "tiny"
    assert [t.rows for t in w.tables] == [10, 20, 30]
    assert not w.synthetic
    # 3 tables -> 4 features -> 6 pairs; top input 16 + 6 = 22
    # MACs 13*64 + 64*16 + 22*32 + 32*1 = 832 + 1,024 + 704 + 32 = 2,592; dot 2*6*16 = 192
    assert w.forward_flops_per_sample() == 2 * 2592 + 192


def test_malformed_toml(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD + "global_batch = = 3\n")
    assert "malformed TOML" in err.message


def test_unknown_key(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD.replace("global_batch", "global_bacth") + TABLES)
    assert err.key == "global_bacth"
    assert "unknown key" in err.message


def test_unknown_key_in_tables(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD + TABLES + "width = 3\n")
    assert err.key == "tables.width"


def test_unknown_preset() -> None:
    with pytest.raises(DseInputError) as exc:
        load_workload("no-such-workload")
    assert exc.value.source == "no-such-workload"
    assert "unknown workload preset" in exc.value.message
    assert "mlperf-dlrm-v1" in exc.value.message  # lists the known presets


def test_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "absent.toml")
    with pytest.raises(DseInputError) as exc:
        load_workload(path)
    assert exc.value.source == path


def test_dim_list_of_wrong_length(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD + TABLES.replace("dim = 16", "dim = [16, 16]"))
    assert err.key == "tables.dim"
    assert "2 entries" in err.message


def test_pooling_list_of_wrong_length(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD + TABLES.replace("pooling = 1", "pooling = [1, 2, 3, 4]"))
    assert err.key == "tables.pooling"


def test_negative_rows(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD + TABLES.replace("[10, 20, 30]", "[10, -20, 30]"))
    assert err.key == "tables.rows[1]"


def test_zero_pooling(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD + TABLES.replace("pooling = 1", "pooling = [1, 0, 1]"))
    assert err.key == "tables.pooling[1]"


def test_global_batch_zero(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD.replace("global_batch = 128", "global_batch = 0") + TABLES)
    assert err.key == "global_batch"


def test_wrong_type(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD.replace("global_batch = 128", 'global_batch = "big"') + TABLES)
    assert err.key == "global_batch"


def test_missing_required_key(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD.replace('precision = "fp32"\n', "") + TABLES)
    assert err.key == "precision"


def test_both_tables_and_synthetic(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD + TABLES + SYNTH)
    assert err.key == "tables"


def test_neither_tables_nor_synthetic(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD)
    assert err.key == "tables"


def test_dcnv2_needs_layers_and_rank(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD.replace('"dot"', '"dcnv2"') + TABLES)
    assert err.key == "dcn_layers"


def test_synthetic_bad_count(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD + SYNTH.replace("count = 3", "count = 0"))
    assert err.key == "synthetic.count"


def test_synthetic_file_loads(tmp_path: Path) -> None:
    w = load_workload(write(tmp_path, GOOD + SYNTH))
    assert w.synthetic
    assert len(w.tables) == 3
    assert w.embedding_params() == pytest.approx(1e4, rel=0.01)
