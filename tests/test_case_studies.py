"""The case studies (docs/case-studies/): each is rerun in a reduced form (fewer trials, a fresh
journal) and every claim its committed page makes is checked against that run's data, with the
verdicts the page prints at the catalog's prices and with the case's assumption at ±30%. A page
whose claims, calibration version or command no longer match the code fails here, so the docs
cannot silently go stale. Also the parts the cases rest on: a space's ``system`` parameter, a
study's ``table_scale``, the price perturbations and re-scoring."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from study_helpers import ROOT
from typer.testing import CliRunner

from dse import (
    Catalog,
    evaluate,
    load_calibration,
    load_catalog,
    load_system,
    load_system_spec,
    load_workload,
    resolve_system,
)
from dse.cli import app
from dse.errors import DseInputError
from dse.model.workload import repeat_tables
from dse.outputs.cases import case_names, get_case
from dse.outputs.cases.framework import (
    CaseResult,
    Claim,
    analyse_case,
    case_spec,
    markdown_table,
    rescored,
    scale_accelerator_prices,
    scale_hbm_price,
    scale_network_prices,
    study_data,
)
from dse.search.algorithms.sweep import run_sweep
from dse.search.runner import run_study
from dse.search.study.encoding import design_system
from dse.search.study.search_space import load_space, preset_params, space_from_mapping
from dse.search.study.study_file import load_study_spec, study_workload

PAGES = ROOT / "docs" / "case-studies"
runner = CliRunner()


SLOW_CASES = ("zion", "zionex")
"""Cases whose reduced run takes over 10 s (the tests using it are marked slow with it)."""


@pytest.fixture(scope="module", params=[pytest.param(name, marks=pytest.mark.slow)
                                        if name in SLOW_CASES else name for name in case_names()])
def reduced(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> CaseResult:
    """Each case rerun with its reduced budget in a fresh journal."""
    case = get_case(request.param)
    folder = tmp_path_factory.mktemp(case.name)
    spec = case_spec(case, case.reduced_trials, str(folder / "study.journal"))
    return analyse_case(case, study_data(spec, run_study(spec)))


def page_claims(name: str) -> dict[str, tuple[bool, bool, bool]]:
    """The claims table of a committed page: claim text -> verdicts (as priced, -x%, +x%)."""
    text = (PAGES / f"{name}.md").read_text(encoding="utf-8")
    table = text.split("## Claims", 1)[1].split("\n## ", 1)[0]
    out: dict[str, tuple[bool, bool, bool]] = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[1] in ("holds", "**does not hold**"):
            ok = [c == "holds" for c in cells[1:]]
            out[cells[0]] = (ok[0], ok[1], ok[2])
    return out


def test_every_case_has_a_page_and_a_report() -> None:
    for name in case_names():
        page = PAGES / f"{name}.md"
        assert page.is_file(), f"{page} missing: run `dse case-study {name}`"
        text = page.read_text(encoding="utf-8")
        assert f"dse case-study {name}" in text
        assert f"[{name}.html]({name}.html)" in text and (PAGES / f"{name}.html").is_file()
        spec = load_study_spec(get_case(name).study)
        assert f"studies/{spec.name}.toml" in text


def test_reduced_run_confirms_every_claim_the_page_makes(reduced: CaseResult) -> None:
    name = reduced.case.name
    on_page = page_claims(name)
    # The page carries exactly the case's claims, with the verdicts this run reaches.
    assert set(on_page) == {c.text for c in reduced.case.claims}, f"{name}.md is stale: regenerate it"
    for c in reduced.claims:
        assert c.holds, f"{name}: {c.text}"
        assert on_page[c.text] == (c.holds, c.holds_low, c.holds_high), f"{name}: {c.text}"


def test_page_states_the_current_calibration_and_workload(reduced: CaseResult) -> None:
    text = (PAGES / f"{reduced.case.name}.md").read_text(encoding="utf-8")
    assert f"calibration `{load_calibration().version}`" in text
    assert f"catalog `{load_catalog().version}`" in text
    assert f"Workload `{reduced.data.workload.name}`" in text


def test_reduced_run_scores_the_reduced_budget(reduced: CaseResult) -> None:
    assert len(reduced.data.frame) == reduced.case.reduced_trials
    assert reduced.data.feasible()["feasible"].all()
    assert 0 < len(reduced.data.front()) <= len(reduced.data.feasible())


# --- the parts the cases rest on ---------------------------------------------------------------


def test_claim_about_missing_data_is_false_not_a_crash() -> None:
    from dse.outputs.cases.framework import _check

    assert _check(Claim("x", lambda f: f["absent"] > 1), {}) is False
    assert _check(Claim("x", lambda f: f["a"] > 1), {"a": 2}) is True


def test_system_parameter_picks_each_designs_base_system() -> None:
    space = load_space("todays-nodes")
    cat = load_catalog()
    mi = design_system(space, {"system": "mi300x-x8", "nodes": 2}, cat)
    node = mi.spec.node
    assert (node.accelerator, node.cpu, mi.nodes, mi.scaleup) == ("mi300x", "epyc-9654", 2,
                                                                  "fully_connected")
    h = design_system(space, {"system": "dgx-h100", "node.nic_gbit_s": 800}, cat)
    assert (h.spec.node.accelerator, h.spec.node.nic_gbit_s) == ("h100-sxm5-80gb", 800)
    # Every vendor node is a baseline: the space expresses each preset as sold.
    baselines = preset_params(space)
    assert set(baselines) == {"dgx-h100", "hgx-h200", "dgx-b200", "mi300x-x8", "gaudi2-x8"}
    assert all(b["system"] == name and b["nodes"] == 1 for name, b in baselines.items())
    # The design as a baseline scores exactly as the preset does.
    wl = load_workload("mlperf-dlrm-dcnv2")
    via_space = evaluate(wl, design_system(space, baselines["mi300x-x8"], cat))
    assert via_space.step_time_s == evaluate(wl, load_system("mi300x-x8")).step_time_s


@pytest.mark.parametrize(("param", "message"), [
    ({"type": "ordinal", "choices": ["dgx-h100"]}, "categorical"),
    ({"type": "categorical", "choices": ["dgx-h100", "no-such-node"]}, "no-such-node"),
])
def test_bad_system_parameter_is_refused_naming_the_field(param: dict[str, object], message: str) -> None:
    data = {"name": "s", "base_system": "dgx-h100", "parameters": {"system": param}}
    with pytest.raises(DseInputError) as err:
        space_from_mapping(data, "bad.toml")
    text = str(err.value)
    assert "bad.toml" in text and "parameters.system" in text and message in text
    assert "\n" not in text


def test_sweep_covers_every_base_system_of_a_system_parameter() -> None:
    """A space choosing the vendor node per design is swept over every node (each design on its
    own base system), so its exact front and a study's coarse sweep cover them all."""
    from dse.search.study.objective_sets import load_objectives

    space = load_space("todays-nodes")
    result = run_sweep(space, load_workload("mlperf-dlrm-v1"), load_objectives("throughput-vs-capex"),
                       jobs=1)
    # Every design once, except that on one node the network's topology and oversubscription
    # cannot change a result: those designs are one row each (canonical_grid).
    params = space.parameters
    network = len(params["network.topology"].choices) * len(params["network.oversubscription"].choices)
    one_node = len(params["system"].choices) * len(params["node.nic_gbit_s"].choices)
    assert len(result.frame) == space.size() - one_node * (network - 1)
    assert not result.frame[list(params)].astype(str).duplicated().any()
    assert set(result.frame["system"].astype(str)) == set(space.parameters["system"].choices)


def test_study_table_scale_grows_every_table() -> None:
    spec = load_study_spec("todays-hardware-4x")
    base = load_workload(spec.workload)
    grown = study_workload(spec)
    assert spec.table_scale == 4.0
    assert [t.rows for t in grown.tables] == [max(1, round(4 * t.rows)) for t in base.tables]
    assert grown.summary()["embedding_gb"] == pytest.approx(4 * base.summary()["embedding_gb"], rel=1e-6)
    assert grown.summary()["forward_mflop_per_sample"] == base.summary()["forward_mflop_per_sample"]


@pytest.mark.parametrize("value", [0.0, -2.0])
def test_non_positive_table_scale_is_refused(tmp_path: Path, value: float) -> None:
    from study_helpers import CHEAP, write_study

    path = write_study(tmp_path / "s.toml", name="s", budget=5, table_scale=value, **CHEAP)
    with pytest.raises(DseInputError) as err:
        load_study_spec(str(path))
    assert str(path) in str(err.value) and "table_scale" in str(err.value)


def test_repeat_tables_multiplies_tables_and_their_exchange() -> None:
    wl = load_workload("zion-2019")
    grown = repeat_tables(wl, 3)
    assert len(grown.tables) == 3 * len(wl.tables)
    assert grown.summary()["embedding_params"] == 3 * wl.summary()["embedding_params"]
    assert grown.summary()["lookups_per_sample"] == 3 * wl.summary()["lookups_per_sample"]
    assert repeat_tables(wl, 1) is wl
    with pytest.raises(ValueError, match="at least 1"):
        repeat_tables(wl, 0)


def test_price_perturbations_move_capex_by_hand_checked_amounts() -> None:
    cat = load_catalog()
    wl = load_workload("mlperf-dlrm-v1")

    def parts(catalog: Catalog, *overrides: tuple[str, object]) -> dict[str, float]:
        # Parts are priced from the catalog the system is resolved against.
        system = resolve_system(load_system_spec("dgx-h100", (("nodes", 2), *overrides)), catalog)
        return dict(evaluate(wl, system, catalog=catalog).cost.parts_usd)

    base = parts(cat)
    up = parts(scale_accelerator_prices(cat, 1.3))
    price = cat.accelerator["h100-sxm5-80gb"].price_usd
    assert up["accelerators"] - base["accelerators"] == pytest.approx(0.3 * 16 * price)
    assert {k: v for k, v in up.items() if k != "accelerators"} == \
        {k: v for k, v in base.items() if k != "accelerators"}
    net = parts(scale_network_prices(cat, 0.7))
    assert net["nics"] == pytest.approx(0.7 * base["nics"])
    assert net["network"] == pytest.approx(0.7 * base["network"])
    # HBM beyond the part's own (80 GB): 40 GB more on each of 16 accelerators, at twice the USD/GB.
    plain = parts(cat, ("node.hbm_gb", 120.0))
    extra = parts(scale_hbm_price(cat, 2.0), ("node.hbm_gb", 120.0))
    assert extra["accelerators"] - plain["accelerators"] == \
        pytest.approx(16 * 40.0 * cat.facility.hbm_usd_per_gb)


def test_rescoring_with_other_prices_keeps_every_step_time(tmp_path: Path) -> None:
    case = get_case("today")
    spec = case_spec(case, 12, str(tmp_path / "s.journal"))
    data = study_data(spec, run_study(spec))
    moved = rescored(data, scale_accelerator_prices(data.catalog, 1.3))
    assert list(moved.frame.index) == list(data.frame.index)
    pd.testing.assert_series_equal(moved.frame["step_time_s"], data.frame["step_time_s"],
                                   check_dtype=False)
    assert (moved.frame["capex_usd"] > data.frame["capex_usd"]).all()
    assert list(moved.frame["baseline"]) == list(data.frame["baseline"])


def test_front_bend_is_where_marginal_throughput_drops_most() -> None:
    from dse.outputs.cases.framework import describe_bend, front_bend

    front = pd.DataFrame({"capex_usd": [1e3, 2e3, 3e3, 4e3, 5e3, 5e3],
                          "throughput_samples_per_s": [10.0, 20.0, 30.0, 31.0, 32.0, 32.0],
                          "bottleneck": ["a", "a", "a", "b", "b", "b"]})
    bend = front_bend(front)
    # Chords from the cheapest point and to the dearest: at the third point 10 samples/s per $1k
    # before and 1 after (ratio 10; 2.5 at the second, 7 at the fourth).
    assert bend["at"]["capex_usd"] == 3e3
    assert (bend["slope_before"] * 1e3, bend["slope_after"] * 1e3) == pytest.approx((10.0, 1.0))
    assert bend["bottlenecks_before"] == "a (3)" and bend["bottlenecks_after"] == "b (2)"
    assert "buys 10 samples/s on average, after it 1." in describe_bend(bend, lambda r: "x")
    assert front_bend(front.iloc[:2]) == {}
    # A design $1 dearer than the cheapest is no bend, however steep the chord to it.
    near = pd.concat([front.iloc[:1].assign(capex_usd=1e3 + 1.0, throughput_samples_per_s=15.0),
                      front]).sort_values("capex_usd")
    assert front_bend(near)["at"]["capex_usd"] == 3e3


def test_counts_on_case_pages_are_singular_for_one() -> None:
    from dse.outputs.cases.common import count, nodes_point
    from dse.outputs.cases.today import systems_list

    assert (count(1, "accelerator"), count(14, "accelerator")) == ("1 accelerator", "14 accelerators")
    row = pd.Series({"nodes": 1, "param:system": "dgx-h100", "capex_usd": 4e5,
                     "throughput_samples_per_s": 1.2e7})
    assert nodes_point(row) == "1 dgx-h100 node ($400 k, 12.00 M samples/s)"
    assert systems_list({"a": [1], "b": [2, 4]}) == "a at 1 node; b at 2, 4 nodes"


def test_markdown_table_formats_numbers() -> None:
    frame = pd.DataFrame({"a": [1234.5, 0.01234], "b": ["x", "y"], "c": [True, False]})
    assert markdown_table(frame).splitlines() == [
        "| a | b | c |", "|---|---|---|", "| 1,234 | x | yes |", "| 0.0123 | y | no |"]


# --- the command -------------------------------------------------------------------------------


@pytest.mark.slow
def test_case_study_command_writes_page_and_report(tmp_path: Path) -> None:
    result = runner.invoke(app, ["case-study", "zion", "--trials", "40", "--storage",
                                 str(tmp_path / "zion.journal"), "--out", str(tmp_path / "pages")])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "pages" / "zion.md").read_text(encoding="utf-8")
    assert "40 trials scored" in page and "dse case-study zion" in page
    assert len(re.findall(r"^\| .+ \| holds \| holds \| holds \|$", page, flags=re.M)) == \
        len(get_case("zion").claims)
    html = (tmp_path / "pages" / "zion.html").read_text(encoding="utf-8")
    assert "cdn.plot.ly" in html and len(html) < 1_000_000


def test_unknown_case_study_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["case-study", "nope", "--out", str(tmp_path)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "nope" in lines[0] and "zion" in lines[0]
