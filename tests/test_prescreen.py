"""The pre-screen of a space too large for a coarse grid (dse.search.algorithms.prescreen, issue 29): its
Latin hypercube batches stratify every parameter, it stops at its CPU budget, a new study on such
a space records it (designs and CPU seconds) in ``dse:prescreen`` and ``dse status`` shows it, the
trial budget is unchanged, and a second process joining the study waits for it rather than
repeating it."""

from __future__ import annotations

import json
import math
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dse.search.algorithms.refine as refine_mod
import dse.search.runner as runner
from dse.model.workload import load_workload
from dse.search.algorithms.dedup import Tiers, design_key, keyed_neighbourhood, neighbourhood
from dse.search.algorithms.prescreen import BATCH_DESIGNS, METHOD, latin_batch
from dse.search.algorithms.reference import study_reference
from dse.search.algorithms.refine import screen_to_fine
from dse.search.algorithms.sweep import sweep_allowed
from dse.search.runner import open_study
from dse.search.storage.opening import open_storage
from dse.search.study.attribute_keys import BUDGET_KEY, PRESCREEN_KEY, WORKLOAD_KEY
from dse.search.study.objective_sets import load_objectives
from dse.search.study.search_space import load_space
from tests.study_helpers import FULL, full_space_too_large, make_spec, run_cli, write_study

# FULL (study_helpers): floats for HBM, DDR and fabric bandwidth, so no coarse grid; the study
# tests' cheap workload (MLPerf DLRM v1) scores it in about a ms.
TINY_S = 0.4
"""A pre-screen budget of a fraction of a second: one or two batches."""


@pytest.mark.slow
def test_the_full_space_is_too_large_for_a_coarse_grid() -> None:
    assert not sweep_allowed(load_space(FULL), 300)


@pytest.fixture
def full_too_large() -> Iterator[None]:
    """:func:`~study_helpers.full_space_too_large` meanwhile: what the tests using it check comes
    after the space's check."""
    with full_space_too_large():
        yield


def test_a_latin_batch_puts_one_design_in_each_stratum_of_every_parameter() -> None:
    space = load_space(FULL)
    n = 64
    designs = latin_batch(space, n, np.random.default_rng(3))
    assert len(designs) == n
    hbm = space.parameters["node.hbm_gb"]
    assert hbm.low is not None and hbm.high is not None
    # A log-scale float back on the unit interval: one value in each 1/64 of it.
    u = [math.log(d["node.hbm_gb"] / hbm.low) / math.log(hbm.high / hbm.low) for d in designs]
    assert sorted(int(x * n) for x in u) == list(range(n))
    # Five accelerator counts over 64 strata: each spans 12.8 strata, 11 or 12 of them whole and
    # at most two shared with a neighbour, so 11 to 14 designs each (a plain random draw of 64
    # would stray further one time in three).
    counts = [sum(d["node.accelerators"] == c for d in designs) for c in (1, 2, 4, 8, 16)]
    assert sum(counts) == n and all(11 <= c <= 14 for c in counts), counts
    # The fabric bandwidth is drawn only where a fabric is.
    assert all(("node.scaleup_gb_s" in d) == (d["node.scaleup"] != "none") for d in designs)


def test_a_pre_screen_stops_at_its_cpu_budget_and_is_then_refined() -> None:
    space = load_space(FULL)
    start = time.process_time()
    got = screen_to_fine(space, load_workload("mlperf-dlrm-v1"), load_objectives("throughput-vs-capex"),
                         TINY_S, max_designs=300)
    cpu = time.process_time() - start
    assert BATCH_DESIGNS <= got.screened <= 40 * BATCH_DESIGNS
    assert TINY_S <= got.screen_cpu_s < TINY_S + 5.0
    assert 0 < got.refined <= 300
    assert got.screen_cpu_s + got.refine_cpu_s <= cpu + 1e-6
    assert len(got.result.frame) == got.screened + got.refined
    assert got.result.method == METHOD
    assert len(got.result.front) > 0


def test_the_progress_of_a_pre_screened_sweep_ends_where_its_budgets_stop_it() -> None:
    """The bar's total is what the CPU budgets are projected to allow at the rate so far, not
    the memory cap (200,000 designs); it ends exactly at the designs scored."""
    calls: list[tuple[int, int]] = []
    got = screen_to_fine(load_space(FULL), load_workload("mlperf-dlrm-v1"),
                         load_objectives("throughput-vs-capex"), TINY_S,
                         on_progress=lambda done, total: calls.append((done, total)))
    final = len(got.result.frame)
    assert calls[-1] == (final, final)
    assert all(done <= total for done, total in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    assert max(total for _, total in calls) < 5 * final < refine_mod.PRESCREEN_REFINE_MAX_DESIGNS


@pytest.mark.usefixtures("full_too_large")
def test_a_new_study_on_a_too_large_space_records_its_pre_screen(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, space=FULL, sampler="auto", budget=50, prescreen_s=TINY_S)
    study = open_study(spec, open_storage(None, spec))
    pre = study.user_attrs[PRESCREEN_KEY]
    assert pre["designs"] >= BATCH_DESIGNS and pre["budget_s"] == TINY_S
    assert pre["cpu_s"] >= TINY_S and pre["refined"] > 0
    ref = study_reference(study)
    assert ref is not None and ref.method == METHOD
    assert ref.designs == pre["designs"] + pre["refined"]
    # Off the trial budget: the budget is as given, nothing has run, and only the baselines and
    # a warm start of at most a fifth of it are queued.
    assert study.user_attrs[BUDGET_KEY] == 50
    queued = study.get_trials(deepcopy=False)
    assert all(t.state.name == "WAITING" for t in queued)
    warm = [t for t in queued if t.user_attrs.get("warm_start") == "sweep"]
    assert 1 <= len(warm) <= 10
    info = run_cli("status", str(write_study(tmp_path / "t.toml", **_fields(spec))), "--json")
    assert info.exit_code == 0, info.output
    assert json.loads(info.output)["prescreen"] == pre
    shown = run_cli("status", str(tmp_path / "t.toml"))
    assert shown.exit_code == 0, shown.output
    assert (f"pre-screen before the first trial (not trials): {pre['designs']:,} designs in "
            f"{pre['cpu_s']:.1f} s CPU (budget {TINY_S:g} s)") in shown.output


@pytest.mark.usefixtures("full_too_large")
def test_the_pre_screen_draws_with_the_study_seed(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Studies that differ only in their seed start from different samples (the seed is recorded
    with the pre-screen); a study without a seed draws with 0, so its creation is repeatable."""
    drawn: dict[int, list[str]] = {}
    real = refine_mod.prescreen

    def recorded(*args: Any, **kwargs: Any) -> Any:
        parts = real(*args, **kwargs)
        drawn[args[7]] = [design_key(parts[0].grid.design(i)) for i in range(20)]
        return parts

    monkeypatch.setattr(refine_mod, "prescreen", recorded)
    for name, seed in (("a", 7), ("b", 8), ("c", None)):
        # The first batch is all this looks at: a budget that stops after it, and its refinement.
        spec = make_spec(tmp_path, name=name, space=FULL, sampler="auto", budget=50,
                         prescreen_s=0.01, seed=seed)
        study = open_study(spec, open_storage(None, spec))
        assert study.user_attrs[PRESCREEN_KEY]["seed"] == (0 if seed is None else seed)
    assert sorted(drawn) == [0, 7, 8]
    assert drawn[7] != drawn[8] and drawn[7] != drawn[0]


@pytest.mark.usefixtures("full_too_large")
def test_no_pre_screen_below_the_reference_budget_or_at_zero_seconds(tmp_path: Path) -> None:
    small = make_spec(tmp_path, name="small", space=FULL, sampler="auto", budget=20)
    off = make_spec(tmp_path, name="off", space=FULL, sampler="auto", budget=50, prescreen_s=0.0)
    for spec in (small, off):
        study = open_study(spec, open_storage(None, spec))
        assert PRESCREEN_KEY not in study.user_attrs
        assert study_reference(study) is None


@pytest.mark.usefixtures("full_too_large")
def test_a_second_process_joining_waits_for_the_pre_screen_instead_of_repeating_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The joiner's own wait is cut to 0.2 s: without the allowance for the creator's pre-screen
    (runner.open_wait_s) it would take the creator for dead and pre-screen again. The allowance's
    wall seconds per CPU second are raised for a machine this loaded (tests run beside others)."""
    monkeypatch.setattr(runner, "OPEN_WAIT_S", 0.2)
    monkeypatch.setattr(runner, "CREATION_WALL_FACTOR", 30.0)
    calls: list[float] = []
    real = refine_mod.prescreen

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(time.monotonic())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(refine_mod, "prescreen", counted)
    spec = make_spec(tmp_path, space=FULL, sampler="auto", budget=50, prescreen_s=1.0)
    creator = threading.Thread(target=open_study, args=(spec, open_storage(None, spec)))
    creator.start()
    storage = open_storage(None, spec)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the creator has recorded itself and the definition
        studies = storage.get_all_studies()
        if studies and WORKLOAD_KEY in studies[0].user_attrs:
            break
        time.sleep(0.02)
    joined = open_study(spec, storage, create=False)
    creator.join()
    assert len(calls) == 1
    assert joined.user_attrs[BUDGET_KEY] == 50
    assert PRESCREEN_KEY in joined.user_attrs


def _fields(spec: object) -> dict[str, object]:
    from dataclasses import asdict

    keep = ("name", "workload", "space", "objectives", "sampler", "budget", "seed", "storage",
            "prescreen_s")
    return {k: v for k, v in asdict(spec).items() if k in keep}  # type: ignore[call-overload]


def test_a_cached_neighbourhood_is_the_same_designs_in_the_same_order_and_draws() -> None:
    """The extreme moves' cache of parents' neighbourhoods (issue 29's per-trial cost) changes
    nothing a study does: same designs, same order, the random generator left in the same state,
    on a first call (cache filled) and on a second (cache hit)."""
    space = load_space(FULL)
    parent = latin_batch(space, 1, np.random.default_rng(5))[0]
    plain, cached = random.Random(7), random.Random(7)
    cache: dict[str, Tiers] = {}
    for _ in range(2):
        want = neighbourhood(space, parent, plain)
        got = keyed_neighbourhood(space, parent, cached, cache)
        assert [c for c, _ in got] == want and [k for _, k in got] == [design_key(c) for c in want]
        assert plain.getstate() == cached.getstate()
    assert list(cache) == [design_key(parent)] and len(want) > 20


def test_a_round_with_nothing_new_is_skipped_not_scored(monkeypatch: pytest.MonkeyPatch) -> None:
    """A round whose parents' candidates were all scored before is empty (the reduced benchmark's
    zion grid meets one); the refinement goes on to the next round, capped or not."""
    space = load_space(FULL)
    wl, objectives = load_workload("mlperf-dlrm-v1"), load_objectives("throughput-vs-capex")
    first = screen_to_fine(space, wl, objectives, TINY_S, max_designs=0).result
    rounds: Iterator[list[dict[str, Any]] | None] = iter([])
    monkeypatch.setattr(refine_mod._State, "next_round", lambda self, room: next(rounds))
    from dse.model.catalog import load_catalog
    from dse.model.evaluate import Memo
    from dse.model.parameters import load_calibration

    calib = load_calibration()
    for cpu_s in (math.inf, 60.0):
        rounds = iter([[], latin_batch(space, 3, np.random.default_rng(1)), None])
        parts = refine_mod.refine(space, first, wl, objectives, 100, calib, load_catalog(),
                                  Memo(wl, calib), cpu_s=cpu_s)
        assert [len(p.frame) for p in parts[1:]] == [3]


def test_a_refinement_expands_its_best_parents_first_and_climbs_from_a_new_best(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The refinement takes two parents a round, best-first: the first of the extremes (the
    fastest design, then the cheapest, ...) and the first other design of the front, both
    recomputed after every round. So the round after one that found a faster design climbs from
    it, and a CPU budget that stops the refinement on a space whose rounds would hold thousands
    of designs (Model-A on ``full``) has climbed instead of spreading one round thinly over the
    whole front."""
    space = load_space(FULL)
    wl, objectives = load_workload("mlperf-dlrm-v1"), load_objectives("throughput-vs-capex")
    first = screen_to_fine(space, wl, objectives, TINY_S, max_designs=0).result
    expanded: list[dict[str, Any]] = []
    lines = refine_mod._State._lines

    def recorded(self: Any, parent: dict[str, Any]) -> Iterator[dict[str, Any]]:
        expanded.append(dict(parent))
        return lines(self, parent)

    monkeypatch.setattr(refine_mod._State, "_lines", recorded)
    from dse.model.catalog import load_catalog
    from dse.model.evaluate import Memo
    from dse.model.parameters import load_calibration

    calib = load_calibration()
    parts = refine_mod.refine(space, first, wl, objectives, 3_000, calib, load_catalog(),
                              Memo(wl, calib))
    by_speed = [first.front_designs()[int(i)] for i in np.lexsort(first.losses().T[::-1])]
    assert [design_key(d) for d in expanded[:2]] == [design_key(d) for d in by_speed[:2]]
    # A round is those two parents' line searches only (the full space: about 130 designs each).
    assert 100 < len(parts[1].frame) < 600
    after_one = refine_mod.combine_sweeps(space, parts[:2], 0.0, METHOD)
    assert after_one.losses()[:, 0].min() < first.losses()[:, 0].min()  # round 1 found a faster one
    assert design_key(expanded[2]) == design_key(_fastest(after_one))  # and round 2 climbs from it
    assert len(expanded) > 10


def _fastest(result: Any) -> dict[str, Any]:
    """The fastest design of a sweep's front (the cheapest of equally fast ones)."""
    return result.front_designs()[int(np.lexsort(result.losses().T[::-1])[0])]
