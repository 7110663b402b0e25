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
