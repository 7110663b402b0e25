"""Checks on the packaged hardware catalog (dse/data/catalog.toml) and its loader."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from dse.errors import DseInputError
from dse.model.catalog import Catalog, load_catalog

# Accelerator keys of docs/sources.md#accelerators (public names used by measurement data).
SOURCED_ACCELERATOR_KEYS = (
    "v100-sxm2-32gb",
    "v100-sxm3-32gb",
    "a100-sxm4-40gb",
    "a100-sxm4-80gb",
    "a100-pcie-80gb",
    "a30",
    "a40",
    "l40s",
    "h100-sxm5-80gb",
    "h100-pcie-80gb",
    "h200-sxm5-141gb",
    "b200-sxm-180gb",
    "gb200",
    "mi300x",
    "gaudi2",
)
REQUIRED_CPUS = (
    "epyc-7742",
    "epyc-9654",
    "xeon-8380",
    "xeon-8480p",
    "xeon-6980p",
    "xeon-cooper-lake",
)


PACKAGED = Path(__file__).resolve().parents[1] / "dse" / "data" / "catalog.toml"


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def _entries(cat: Catalog) -> list[tuple[str, object]]:
    """Every catalog entry with a dotted name."""
    out: list[tuple[str, object]] = []
    for table in ("accelerator", "cpu", "ddr", "pcie", "nic"):
        for key, entry in getattr(cat, table).items():
            out.append((f"{table}.{key}", entry))
    for single in ("network_switch", "scaleup_switch", "chassis", "facility"):
        out.append((single, getattr(cat, single)))
    return out


def test_packaged_catalog_loads(cat: Catalog) -> None:
    assert cat.version == "2026.11"
    assert cat.accelerator["a100-sxm4-80gb"].hbm_gb == 80.0


def test_explicit_path_gives_the_same_catalog(cat: Catalog) -> None:
    assert load_catalog(PACKAGED) == cat


def test_every_sourced_accelerator_is_present(cat: Catalog) -> None:
    missing = [k for k in (*SOURCED_ACCELERATOR_KEYS, "zion-oam") if k not in cat.accelerator]
    assert not missing


def test_required_cpus_present_and_their_ddr_exists(cat: Catalog) -> None:
    assert set(REQUIRED_CPUS) <= set(cat.cpu)
    for key, cpu in cat.cpu.items():
        assert cpu.ddr in cat.ddr, f"cpu.{key}.ddr = {cpu.ddr!r} is not a ddr key"


@pytest.mark.parametrize(
    ("key", "per_direction"),
    [
        ("v100-sxm2-32gb", 150.0),  # NVLink2 300 bidirectional
        ("v100-sxm3-32gb", 150.0),
        ("a100-sxm4-40gb", 300.0),  # NVLink3 600
        ("a100-sxm4-80gb", 300.0),
        ("h100-sxm5-80gb", 450.0),  # NVLink4 900
        ("h200-sxm5-141gb", 450.0),
        ("b200-sxm-180gb", 900.0),  # NVLink5 1800
        ("gb200", 900.0),
        ("mi300x", 448.0),  # 7 x 128 GB/s bidirectional
        ("gaudi2", 262.5),  # 21 in-node ports x 100 Gb/s each way
    ],
)
def test_scaleup_is_vendor_bidirectional_halved(
    cat: Catalog, key: str, per_direction: float
) -> None:
    assert cat.accelerator[key].scaleup_gb_s == pytest.approx(per_direction)


def test_scaleup_topologies(cat: Catalog) -> None:
    acc = cat.accelerator
    assert acc["v100-sxm2-32gb"].default_scaleup == "hybrid_cube_mesh"
    assert acc["zion-oam"].default_scaleup == "hybrid_cube_mesh"
    for key in (
        "v100-sxm3-32gb",
        "a100-sxm4-40gb",
        "a100-sxm4-80gb",
        "h100-sxm5-80gb",
        "h200-sxm5-141gb",
        "b200-sxm-180gb",
        "gb200",
    ):
        assert acc[key].default_scaleup == "switch", key
    assert acc["mi300x"].default_scaleup == "fully_connected"
    assert acc["gaudi2"].default_scaleup == "fully_connected"
    assert acc["gb200"].scaleup_domain == 72
    assert acc["gb300"].scaleup_domain == 72  # NVL72 racks, the only multi-node domains
    for key, a in acc.items():
        if a.form_factor == "pcie":
            assert a.scaleup_gb_s == 0 and a.default_scaleup == "none", key
        else:
            assert a.scaleup_gb_s > 0 and a.default_scaleup != "none", key
        if key not in ("gb200", "gb300"):
            assert a.scaleup_domain == 0, key


def test_peak_tflops_sane(cat: Catalog) -> None:
    v100 = cat.accelerator["v100-sxm2-32gb"].peak_tflops
    assert v100.tf32 is None and v100.bf16 is None and v100.fp8 is None
    assert cat.accelerator["gaudi2"].peak_tflops.bf16 == 432.0
    for key, a in cat.accelerator.items():
        p = a.peak_tflops
        assert p.for_precision("amp"), f"{key} has no mixed-precision peak"
        # Lower precision is never slower than higher precision on the same part.
        chain = [v for v in (p.fp32, p.tf32, p.fp16 or p.bf16, p.fp8) if v is not None]
        assert chain == sorted(chain), key
        if p.fp16 is not None and p.bf16 is not None:
            assert p.fp16 == p.bf16, key


def test_every_entry_has_a_source(cat: Catalog) -> None:
    for name, entry in _entries(cat):
        assert getattr(entry, "source", "").strip(), f"{name} has no source"
        if hasattr(entry, "price_source"):
            assert entry.price_source.strip(), f"{name} has no price_source"


def test_assumed_names_real_fields(cat: Catalog) -> None:
    for name, entry in _entries(cat):
        fields = {f.name for f in dataclasses.fields(entry)}  # type: ignore[arg-type]
        for assumed in entry.assumed:  # type: ignore[attr-defined]
            assert assumed in fields - {"assumed", "source", "price_source"}, (
                f"{name}.assumed lists {assumed!r}, which is not a field"
            )
        assert len(set(entry.assumed)) == len(entry.assumed), name  # type: ignore[attr-defined]


def test_zion_values_are_marked_assumed(cat: Catalog) -> None:
    assumed = set(cat.accelerator["zion-oam"].assumed)
    assert {"peak_tflops", "hbm_gb", "hbm_gb_s", "tdp_w", "price_usd"} <= assumed


def test_nic_for_is_monotone(cat: Catalog) -> None:
    speeds = [25.0 + 5.0 * i for i in range(int((1600 - 25) / 5) + 1)]
    assert speeds[0] == 25.0 and speeds[-1] == 1600.0
    prev_price, prev_w = cat.nic_for(speeds[0])
    for s in speeds[1:]:
        price, w = cat.nic_for(s)
        assert price >= prev_price - 1e-9, f"price falls at {s} Gb/s"
        assert w >= prev_w - 1e-9, f"power falls at {s} Gb/s"
        prev_price, prev_w = price, w


def test_nic_for_hits_grades(cat: Catalog) -> None:
    for nic in cat.nic.values():
        assert cat.nic_for(nic.gbit_s) == pytest.approx((nic.price_usd, nic.tdp_w))


def test_pcie_bandwidths(cat: Catalog) -> None:
    assert cat.pcie_gen(4).x16_gb_s == 31.5
    assert cat.pcie_gen(3).x16_gb_s == 15.75
    assert cat.pcie_gen(5).x16_gb_s == 63.0
    rates = [cat.pcie_gen(g).x16_gb_s for g in (3, 4, 5, 6)]
    assert rates == sorted(rates)


def test_ddr_channel_rate_is_mts_times_8_bytes(cat: Catalog) -> None:
    for key, ddr in cat.ddr.items():
        m = re.fullmatch(r"ddr[45]-(\d+)", key)
        if m:
            assert ddr.channel_gb_s == pytest.approx(int(m.group(1)) * 8 / 1000, rel=1e-3), key
    assert cat.ddr["ddr4-3200"].channel_gb_s == 25.6
    assert cat.ddr["ddr5-4800"].channel_gb_s == 38.4


def test_facility_defaults(cat: Catalog) -> None:
    f = cat.facility
    assert f.pue == 1.58
    assert f.usd_per_kwh == pytest.approx(0.0806)
    assert f.hbm_w_per_gb_s == pytest.approx(8e9 * 3.9e-12, rel=0.01)


def _edit_accelerator(text: str, key: str, edit: re.Pattern[str], repl: str) -> str:
    header = f"[accelerator.{key}]\n"
    head, sep, body = text.partition(header)
    assert sep, f"{header!r} not found"
    new_body, n = edit.subn(repl, body, count=1)
    assert n == 1
    return head + sep + new_body


def test_unknown_key_names_file_and_dotted_key(tmp_path: Path) -> None:
    text = PACKAGED.read_text(encoding="utf-8")
    bad = tmp_path / "bad_unknown.toml"
    bad.write_text(
        _edit_accelerator(text, "a100-sxm4-80gb", re.compile(r"^", re.M), "bogus_field = 1\n"),
        encoding="utf-8",
    )
    with pytest.raises(DseInputError) as info:
        load_catalog(bad)
    msg = str(info.value)
    assert str(bad) in msg
    assert "accelerator.a100-sxm4-80gb.bogus_field" in msg
    assert info.value.key == "accelerator.a100-sxm4-80gb.bogus_field"


def test_negative_hbm_names_file_and_dotted_key(tmp_path: Path) -> None:
    text = PACKAGED.read_text(encoding="utf-8")
    bad = tmp_path / "bad_negative.toml"
    bad.write_text(
        _edit_accelerator(
            text, "h100-sxm5-80gb", re.compile(r"^hbm_gb = .*$", re.M), "hbm_gb = -80"
        ),
        encoding="utf-8",
    )
    with pytest.raises(DseInputError) as info:
        load_catalog(bad)
    msg = str(info.value)
    assert str(bad) in msg
    assert "accelerator.h100-sxm5-80gb.hbm_gb" in msg


def test_malformed_toml_names_file(tmp_path: Path) -> None:
    bad = tmp_path / "broken.toml"
    bad.write_text('version = "2026.11"\n[accelerator.x\n', encoding="utf-8")
    with pytest.raises(DseInputError) as info:
        load_catalog(bad)
    assert str(bad) in str(info.value)
