"""How many distinct rows a step's lookups touch (dse.model.estimators.distinct_rows): the rows the
embedding backward reads and writes once each. Checked against an exact sum over ranks, by hand for
MLPerf DLRM-DCNv2's derived multi-hot ids, and by the properties any count of distinct draws has."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dse import evaluate, load_system, load_workload
from dse.errors import DseInputError
from dse.model.estimators import distinct_rows, unique_rows, zipf_distinct, zipf_hit_rate
from dse.model.placement import plan_placement


def exact_distinct(draws: float, rows: int, exponent: float, skip: int = 0) -> float:
    """The expectation summed rank by rank: rank i holds the Zipf mass between i and i + 1 of the
    model's law (zipf_hit_rate's cumulative share), and is touched unless every draw misses it."""
    edges = np.array([zipf_hit_rate(float(i), rows, exponent) for i in range(rows + 1)])
    p = np.diff(edges)[skip:]
    return float(np.sum(1.0 - (1.0 - p) ** draws))


@pytest.mark.parametrize(("draws", "rows", "exponent", "skip"),
                         [(5_000, 20_000, 1.05, 0), (50_000, 20_000, 1.05, 0), (5_000, 20_000, 0.8, 0),
                          (5_000, 20_000, 1.2, 0), (5_000, 20_000, 1.05, 300), (2_000, 20_000, 1.0, 0)])
def test_quadrature_matches_the_exact_sum(draws: int, rows: int, exponent: float, skip: int) -> None:
    # Simpson's rule in log rank against the sum over every rank: within 1.5% (the continuous law
    # differs from the discrete masses most on the first few ranks, which every such batch touches).
    assert zipf_distinct(draws, rows, exponent, skip) == pytest.approx(
        exact_distinct(draws, rows, exponent, skip), rel=0.015)


def test_uniform_access_is_the_uniform_count() -> None:
    # Exponent 0 (dlrm-benchmark's random data) is exactly the count of uniform draws.
    for draws, rows in [(55_296, 40e6), (1e6, 10.0), (3.0, 7.0)]:
        assert zipf_distinct(draws, rows, 0.0) == unique_rows(draws, rows)
        assert distinct_rows(draws, rows, 1.0, 0.0) == unique_rows(draws, rows)


def test_distinct_rows_properties() -> None:
    rows = 40e6
    one = zipf_distinct(55_296, rows, 1.05)
    # Never more than the draws or the rows; skew repeats the popular rows.
    assert 0.0 < one < 55_296 and zipf_distinct(1e9, 1_000.0, 1.05) == pytest.approx(1_000.0)
    assert zipf_distinct(55_296, rows, 1.2) < one < zipf_distinct(55_296, rows, 0.8)
    # More draws touch more rows, each fewer new ones (concave).
    two, four = zipf_distinct(110_592, rows, 1.05), zipf_distinct(221_184, rows, 1.05)
    assert one < two < four and (two - one) / 55_296 > (four - two) / 110_592
    # Skipping the hot set's ranks leaves the rarer rows, which repeat less.
    cold = zipf_distinct(55_296, rows, 1.05, skip=4_096)
    assert cold < one and cold / (55_296 * (1 - zipf_hit_rate(4_096, 40_000_000, 1.05))) > one / 55_296


def test_derived_multi_hot_by_hand() -> None:
    # DCNv2's 100-hot table of 40M rows at the one-node batch of 55,296: D distinct ids drawn, each
    # with 99 fixed uniform partners, which land on the 40e6 - D rows not drawn as
    # (40e6 - D)(1 - exp(-99 D / 40e6)) distinct rows; against 55,296 x 100 independent draws, which
    # repeat popular rows more.
    d = zipf_distinct(55_296, 40e6, 1.05)
    derived = distinct_rows(55_296, 40e6, 100, 1.05, "derived")
    assert derived == pytest.approx(d + (40e6 - d) * -math.expm1(-99 * d / 40e6))
    assert 0.40 < d / 55_296 < 0.48  # Zipf 1.05 over 40M ranks: under half the ids are distinct
    drawn = distinct_rows(55_296, 40e6, 100, 1.05, "drawn")
    assert drawn == zipf_distinct(55_296 * 100, 40e6, 1.05)
    assert drawn < derived < 55_296 * 100


def test_derived_partners_never_collide_with_their_drawn_ids() -> None:
    # A table of 39,060 rows (one of DCNv2's), two-hot, at the one-node batch: nearly every row's id
    # is drawn (D), and each drawn id's partner can only add rows not drawn. Counting the D drawn
    # ids among the uniform throws (R (1 - exp(-2 D / R))) would lose rows a step touches.
    rows = 39_060.0
    d = zipf_distinct(55_296, rows, 1.05)
    got = distinct_rows(55_296, rows, 2, 1.05, "derived")
    assert d < got < rows
    assert got == pytest.approx(d + (rows - d) * -math.expm1(-d / rows))
    assert got > rows * -math.expm1(-2 * d / rows)
    # Simulated: Zipf(1.05) draws of 55,296 ids, each with one fixed uniform partner; the rows
    # touched against the partners' count from the simulation's own distinct ids (the old count,
    # every id a uniform throw, is 6% under).
    rng = np.random.default_rng(0)
    weights = 1.0 / np.arange(1, rows + 1) ** 1.05
    ids = np.unique(rng.choice(int(rows), size=55_296, p=weights / weights.sum()))
    partner = rng.integers(0, int(rows), size=int(rows))
    touched = np.union1d(ids, partner[ids]).size
    d_sim = float(ids.size)
    assert d_sim + (rows - d_sim) * -math.expm1(-d_sim / rows) == pytest.approx(touched, rel=0.01)
    assert rows * -math.expm1(-2 * d_sim / rows) < 0.95 * touched


def test_the_cold_part_of_a_derived_table_gets_the_hot_ids_partners() -> None:
    # A 10-hot table of 1M rows whose 65,536 most popular ranks are a hot set: its cold part is
    # touched by the cold ids drawn and by the partners of every id drawn, hot ones included (they
    # land uniformly, mostly on cold rows). Simulated: 151,316 cold rows touched; the count from
    # the simulation's own distinct ids is within 1% (counting the cold ids' partners alone, on
    # rows that include the hot set's, gave under half).
    rows, k, skip, samples = 1_000_000, 10, 65_536, 55_296
    rng = np.random.default_rng(1)
    weights = 1.0 / np.arange(1, rows + 1) ** 1.05
    ids = np.unique(rng.choice(rows, size=samples, p=weights / weights.sum()))
    partners = rng.integers(0, rows, size=(rows, k - 1))
    touched = np.union1d(ids, partners[ids].ravel())
    cold = float((touched >= skip).sum())
    d_all, d_cold = float(ids.size), float((ids >= skip).sum())
    from_sim = d_cold + (rows - skip - d_cold) * -math.expm1(-(k - 1) * d_all / rows)
    assert from_sim == pytest.approx(cold, rel=0.01)
    # The model's count under its continuous Zipf law (distinct ids about 5% above the discrete
    # law's on this table) and its parts.
    got = distinct_rows(samples, rows, k, 1.05, "derived", skip)
    drawn, every = zipf_distinct(samples, rows, 1.05, skip), zipf_distinct(samples, rows, 1.05)
    assert got == pytest.approx(drawn + (rows - skip - drawn) * -math.expm1(-(k - 1) * every / rows))
    assert got == pytest.approx(cold, rel=0.06)


def test_the_dcnv2_preset_touches_fewer_rows_than_its_lookups() -> None:
    wl = load_workload("mlperf-dlrm-dcnv2")
    assert wl.multi_hot_ids == "derived"
    plan = plan_placement(wl, load_system("dgx-h100"))
    shards = [s for s in plan.shards if s.tier == "hbm"]
    lookups = sum(s.lookups for s in shards)
    bwd = sum(s.traffic.local_bwd for s in shards)
    uniform = plan_placement(load_workload("mlperf-dlrm-dcnv2", (("access_zipf", 0.0),)),
                             load_system("dgx-h100"))
    bwd_uniform = sum(s.traffic.local_bwd for s in uniform.shards if s.tier == "hbm")
    assert lookups > 0 and bwd < 0.8 * bwd_uniform


def test_more_skew_never_slows_a_step() -> None:
    # Fewer distinct rows to update is less backward traffic: the step can only shorten.
    system = load_system("dgx-h100")
    rates = [evaluate(load_workload("mlperf-dlrm-dcnv2", (("access_zipf", z),)), system)
             .throughput_samples_per_s for z in (0.0, 0.8, 1.05, 1.3)]
    assert all(a <= b for a, b in itertools.pairwise(rates)) and rates[0] < rates[-1]


def test_an_unknown_way_of_choosing_multi_hot_ids_is_refused_in_one_line() -> None:
    with pytest.raises(DseInputError, match="multi_hot_ids: expected one of 'drawn', 'derived', got 'bogus'"):
        load_workload("mlperf-dlrm-dcnv2", (("multi_hot_ids", "bogus"),))

