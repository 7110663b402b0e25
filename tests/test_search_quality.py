"""The search-quality benchmark in its reduced CI form: one seed, small budgets, a small space; the
default sampler must beat random search at the largest budget (the full run is in
docs/benchmarks.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "search_quality.py"


def load_benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("search_quality", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_default_sampler_beats_random_in_reduced_benchmark(tmp_path: Path) -> None:
    bench = load_benchmark()
    md = tmp_path / "b.md"
    results = bench.main(["--quick", "--markdown", str(md)])  # exits non-zero if default <= random
    got = results["cases"]["ci"]["samplers"]
    assert got["auto"]["summary"]["60"]["median"] > got["random"]["summary"]["60"]["median"]
    assert 0.0 < got["auto"]["summary"]["60"]["median"] <= 1.0 + 1e-9
    assert "| default (auto) |" in md.read_text()


def _large_part(sampler: str, losses: list[list[float]]) -> dict[str, object]:
    """A ``--large --json`` result of one case and one sampler's run (losses: -throughput, capex)."""
    run = {"losses": losses, "sweep_front": [], "seconds": 1.0, "cpu_s": 1.0, "warm_start_s": 0.0,
           "warm_trials": 0, "prescreen": None}
    case = {"workload": "w", "space": "s", "objectives": "o",
            "reference": {"samples": 4, "designs": 4, "seconds": 1.0, "cpu_s": 1.0,
                          "front": [[-1.0, 1.0]]},
            "runs": {sampler: [run]}}
    return {"cases": {}, "large": {"budget": 300, "prescreen_s": 30.0, "cases": {"c": case}}}


def test_merge_joins_large_cases_run_apart_and_scores_them_on_every_run() -> None:
    """Large cases run in separate processes: --merge keeps every part's runs (not the last part
    alone) and scores each run against the front of all of them."""
    bench = load_benchmark()
    merged = bench.merge([_large_part("auto", [[-4.0, 2.0]]), _large_part("tpe", [[-2.0, 1.0]]),
                          _large_part("tpe", [[-1.0, 0.5]])])
    case = merged["large"]["cases"]["c"]
    assert {s: len(r) for s, r in case["runs"].items()} == {"auto": 1, "tpe": 2}
    # Known front: (-4, 2), (-2, 1), (-1, 0.5); the Sobol point (-1, 1) is dominated.
    assert case["known_front"] == 3 and case["fastest_known"] == 4.0
    assert case["runs"]["auto"][0]["fastest_share"] == 1.0
    assert [r["fastest_share"] for r in case["runs"]["tpe"]] == [0.5, 0.25]
    assert 0.0 < case["runs"]["tpe"][1]["ratio"] < case["runs"]["tpe"][0]["ratio"] < 1.0
