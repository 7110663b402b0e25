"""Vendor discounts and price ranges in user catalogs: the discount's effect on capex by hand,
one-line errors naming the file and field, and the ranges reaching the robust front's and the case
studies' price draws."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from study_helpers import full_space_too_large, load

from dse.calibration.ensemble import CalibrationEnsemble
from dse.errors import DseInputError
from dse.model.catalog import load_catalog, vendor_of
from dse.model.evaluate import evaluate
from dse.model.parameters import fingerprint, load_calibration
from dse.model.system import load_system
from dse.model.user_catalog import load_user_catalog
from dse.model.workload import load_workload
from dse.outputs.cases.uncertainty import PRICE_SPREAD, ClaimUncertainty, price_draw, uncertainty_lines
from dse.search.robust_front import price_draws, price_ratios, robust_front
from dse.search.runner import run_study
from dse.search.study.objective_sets import load_objectives
from dse.search.study.study_file import StudySpec

CAT = load_catalog()
WL = load_workload("mlperf-dlrm-dcnv2")


def _user(tmp_path: Path, text: str, name: str = "parts.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _capex(system: str, catalog_path: Path | None) -> tuple[float, dict[str, float]]:
    cat = load_user_catalog(catalog_path).catalog
    ev = evaluate(WL, load_system(system, catalog=cat), catalog=cat)
    return ev.cost.capex_usd, ev.cost.parts_usd


def test_vendors_come_from_the_names() -> None:
    assert vendor_of(CAT.accelerator["b300-sxm-288gb"]) == "nvidia"
    assert vendor_of(CAT.accelerator["mi355x"]) == "amd"
    assert vendor_of(CAT.cpu["xeon-8570"]) == "intel"
    assert vendor_of(CAT.nic["800g"]) == "nvidia"  # the packaged NIC grades are ConnectX cards
    assert CAT.scaleup_switch.vendor == "nvidia"  # NVSwitch
    assert CAT.network_switch.vendor == CAT.network_switch.optics_vendor == ""  # any vendor's


def test_a_discount_lowers_capex_by_the_discount_times_the_vendors_parts(tmp_path: Path) -> None:
    base, parts = _capex("hgx-b300", None)
    nvidia = _user(tmp_path, "[discounts]\nnvidia = 0.15\n")
    # HGX B300's NVIDIA parts with a price of their own: the 8 GPUs (8 x 45,000), its NICs
    # (ConnectX: 8 x 3,250 compute and 2 x 2,000 front-end) and its NVSwitch silicon (8 x 1,500 a
    # GPU); its Xeons are Intel's.
    assert (parts["accelerators"], parts["nics"], parts["scaleup_switches"]) == (360_000, 30_000, 12_000)
    nvidia_parts = 360_000 + 8 * 3_250 + 2 * 2_000 + 8 * 1_500
    assert _capex("hgx-b300", nvidia)[0] == pytest.approx(base - 0.15 * nvidia_parts)
    intel = _user(tmp_path, "[discounts]\nintel = 0.1\nNVIDIA = 0.15\n", "both.toml")
    assert _capex("hgx-b300", intel)[0] == pytest.approx(base - 0.15 * nvidia_parts - 0.1 * parts["cpus"])
    # A NIC grade the user assigns to another vendor is discounted with that vendor, not NVIDIA.
    nics = _user(tmp_path, '[discounts]\nnvidia = 0.2\n[nic.800g]\nvendor = "broadcom"\n', "nics.toml")
    assert _capex("hgx-b300", nics)[0] == pytest.approx(base - 0.2 * (nvidia_parts - 8 * 3_250))


def test_a_stated_price_is_the_price_paid(tmp_path: Path) -> None:
    base, _ = _capex("hgx-b300", None)
    quoted = _user(tmp_path, "[discounts]\nnvidia = 0.5\n[price]\nb300-sxm-288gb = 40000\n")
    user = load_user_catalog(quoted)
    assert user.catalog.accelerator["b300-sxm-288gb"].price_usd == 40_000
    b200 = CAT.accelerator["b200-sxm-180gb"].price_usd
    assert user.catalog.accelerator["b200-sxm-180gb"].price_usd == b200 / 2
    # The stated GPU price stands; NVIDIA's NICs and NVSwitch take the discount.
    assert _capex("hgx-b300", quoted)[0] == pytest.approx(base - 8 * 5_000 - 0.5 * (30_000 + 12_000))
    assert any(c.describe() == "accelerator.b200-sxm-180gb.price_usd = 17500 (50% nvidia discount) "
               f"({quoted})" for c in user.changes)


def test_set_discounts_apply_once(tmp_path: Path) -> None:
    path = _user(tmp_path, "[discounts]\nnvidia = 0.1\n")
    user = load_user_catalog(path, (("discounts.nvidia", 0.2),))
    assert user.catalog.accelerator["h100-sxm5-80gb"].price_usd == pytest.approx(
        CAT.accelerator["h100-sxm5-80gb"].price_usd * 0.8)


@pytest.mark.parametrize(("text", "where", "message"), [
    ("[discounts]\nnvidia = 1.0\n", "discounts.nvidia", "a discount is a fraction in [0, 1)"),
    ("[discounts]\nnvidia = -0.1\n", "discounts.nvidia", "a discount is a fraction in [0, 1)"),
    ('[discounts]\nnvidia = "15%"\n', "discounts.nvidia", "a discount is a fraction in [0, 1)"),
    ("[discounts]\nnvida = 0.1\n", "discounts.nvida", "no part of vendor 'nvida'"),
    ("[price_range]\nh100-sxm5-80gb = [30000, 40000]\n", "accelerator.h100-sxm5-80gb.price_low_usd",
     "must hold the price 27500"),
    ("[accelerator.h100-sxm5-80gb]\nprice_low_usd = 20000\nprice_high_usd = 25000\n",
     "accelerator.h100-sxm5-80gb.price_high_usd", "must hold the price 27500"),
    ("[accelerator.h100-sxm5-80gb]\nprice_low_usd = 20000\n",
     "accelerator.h100-sxm5-80gb.price_high_usd", "needs both price_low_usd and price_high_usd"),
    ("[price_range]\nh100-sxm5-80gb = 20000\n", "price_range.h100-sxm5-80gb", "expected [low, high]"),
    ("[price_range]\nh999 = [1, 2]\n", "price_range.h999", "unknown part"),
])
def test_bad_discounts_and_ranges_are_one_line_errors(tmp_path: Path, text: str, where: str,
                                                      message: str) -> None:
    path = _user(tmp_path, text)
    with pytest.raises(DseInputError) as err:
        load_user_catalog(path)
    line = str(err.value)
    assert line.startswith(f"{path}: {where}: ") and message in line and "\n" not in line


def test_the_cli_refuses_a_bad_discount_in_one_line(tmp_path: Path) -> None:
    path = _user(tmp_path, "[discounts]\nnvidia = 1.5\n")
    run = subprocess.run([sys.executable, "-m", "dse", "evaluate", "--system", "hgx-b300", "--workload",
                          "mlperf-dlrm-dcnv2", "--catalog", str(path)],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines() == [
        f"dse: error: {path}: discounts.nvidia: a discount is a fraction in [0, 1) (0.15 = 15% off), "
        "got 1.5"]


# --- price ranges in the draws -----------------------------------------------------------------

RANGES = """\
[price_range]
b300-sxm-288gb = [30000, 60000]
mi355x = [15000, 40000]
xeon-8570 = [8000, 12000]
[nic.800g]
price_low_usd = 2000
price_high_usd = 5000
"""


def test_robust_price_draws_stay_within_the_ranges(tmp_path: Path) -> None:
    cat = load_user_catalog(_user(tmp_path, RANGES)).catalog
    draws = price_draws(cat, 200)
    assert len(draws) == 200 and price_draws(CAT, 200) == ()
    for section, key, low, high in (("accelerator", "b300-sxm-288gb", 30_000, 60_000),
                                    ("accelerator", "mi355x", 15_000, 40_000),
                                    ("cpu", "xeon-8570", 8_000, 12_000), ("nic", "800g", 2_000, 5_000)):
        prices = np.array([getattr(d, section)[key].price_usd for d in draws])
        assert low <= prices.min() and prices.max() <= high
        assert prices.max() - prices.min() > 0.8 * (high - low)  # they spread over the range
    unranged = {d.accelerator["h100-sxm5-80gb"].price_usd for d in draws}
    assert unranged == {CAT.accelerator["h100-sxm5-80gb"].price_usd}


def test_price_ratios_are_the_capex_under_the_drawn_prices(tmp_path: Path) -> None:
    cat = load_user_catalog(_user(tmp_path, RANGES)).catalog
    system = load_system("hgx-b300", catalog=cat)
    ev = evaluate(WL, system, catalog=cat)
    draws = price_draws(cat, 3)
    ratios = price_ratios(system, ev, draws)
    for d, (capex_ratio, tco_ratio) in zip(draws, ratios, strict=True):
        moved = (8 * (d.accelerator["b300-sxm-288gb"].price_usd - 45_000)
                 + 2 * (d.cpu["xeon-8570"].price_usd - 10_000) + 8 * (d.nic["800g"].price_usd - 3_250))
        assert capex_ratio == pytest.approx((ev.cost.capex_usd + moved) / ev.cost.capex_usd)
        assert tco_ratio != 1.0 and (tco_ratio > 1) == (moved > 0)


def test_case_study_price_draws_use_the_ranges_and_nothing_else_moves(tmp_path: Path) -> None:
    cat = load_user_catalog(_user(tmp_path, RANGES)).catalog
    for seed in range(50):
        drawn = price_draw(cat, np.random.default_rng(seed))
        unranged = price_draw(CAT, np.random.default_rng(seed))
        assert 30_000 <= drawn.accelerator["b300-sxm-288gb"].price_usd <= 60_000
        assert 8_000 <= drawn.cpu["xeon-8570"].price_usd <= 12_000
        assert 2_000 <= drawn.nic["800g"].price_usd <= 5_000
        # Unranged parts draw the same factors as without a user catalog.
        assert drawn.accelerator["h100-sxm5-80gb"] == unranged.accelerator["h100-sxm5-80gb"]
        factor = unranged.accelerator["b300-sxm-288gb"].price_usd / 45_000
        assert 1 - PRICE_SPREAD <= factor <= 1 + PRICE_SPREAD
        # The same variate, mapped onto the range.
        fraction = (factor - (1 - PRICE_SPREAD)) / (2 * PRICE_SPREAD)
        assert drawn.accelerator["b300-sxm-288gb"].price_usd == pytest.approx(30_000 + fraction * 30_000)


def test_the_robust_front_moves_with_the_drawn_prices(tmp_path: Path) -> None:
    """Eight identical members: the ensemble moves nothing, so only prices can move the front
    (throughput against capex). MI300X may cost up to 5 times its catalog price and nothing else
    moves: the cheapest front design, on MI300X, leaves the front under some draws, every other
    front design (on other parts, whose capex stays) under none."""
    price = CAT.accelerator["mi300x"].price_usd
    path = _user(tmp_path, f"[price_range]\nmi300x = [{price}, {5 * price}]\n")
    spec = StudySpec(name="ranged", workload="mlperf-dlrm-dcnv2", space="full",
                     objectives="throughput-vs-capex", budget=60, sampler="random", seed=5,
                     storage=str(tmp_path / "ranged.journal"), catalog=str(path), prescreen_s=0.0)
    with full_space_too_large():
        run_study(spec)
    calib = load_calibration()
    ens = CalibrationEnsemble(calib.version, fingerprint(calib), 0, (), (calib,) * 8, ((),) * 8, (), ())
    ranged = robust_front(load(spec), spec, load_objectives(spec.objectives), ens, calib)
    assert any("prices drawn within the user catalog's ranges (1 parts)" in n for n in ranged.notes)
    on_mi300x = [d for d in ranged.designs if d.design["node.accelerator"] == "mi300x"]
    others = [d for d in ranged.designs if d.design["node.accelerator"] != "mi300x"]
    assert on_mi300x and others
    assert all(d.probability < 1.0 for d in on_mi300x)
    assert all(d.probability == 1.0 for d in others)
    plain = robust_front(load(spec), dataclasses.replace(spec, catalog=""),
                         load_objectives(spec.objectives), ens, calib)
    assert all(d.probability == 1.0 for d in plain.designs) and not plain.notes


def test_the_case_page_names_the_ranged_parts() -> None:
    claim = ClaimUncertainty("the cheapest front design is on MI300X", 1.0, 0.75, 20)
    lines = "\n".join(uncertainty_lines([claim], ranged=("accelerator.mi300x", "nic.800g")))
    assert ("±30%; `accelerator.mi300x`, `nic.800g` drawn within the user catalog's price ranges)."
            in lines)
    assert "| the cheapest front design is on MI300X | 100% | 75% |" in lines
    assert "±30%)." in "\n".join(uncertainty_lines([claim]))
