"""Evaluation results of random designs, compared bit for bit with another git revision.

    python benchmarks/same_results.py                    # 2,000 designs, this checkout against main
    python benchmarks/same_results.py --ref HEAD~3 --designs 500
    python benchmarks/same_results.py --print            # this checkout's fingerprints, one a line

A speed-up of the model must not change a single result. This draws designs at random (seeded)
from every search space under ``search_spaces/`` (decoded with :mod:`dse.search.study.encoding`),
pairs each with a workload in turn, evaluates it here and in a checkout of ``--ref`` (``git worktree``
under a temporary directory, run in a subprocess with that tree first on ``PYTHONPATH``), and
compares every design's fingerprint exactly: the whole ``Evaluation.to_dict()`` (throughput, step
breakdown and stages, bottleneck, critical path, capex and power by part, feasibility, reasons,
placement counts; floats by their ``repr``, as JSON writes them) and the plan's shards. Exit code
1 and the first differences when any differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ("mlperf-dlrm-dcnv2", "mlperf-dlrm-v1", "synthetic-production-a", "synthetic-production-12t",
             "zion-2019", "criteo-1tb-large-dcnv2", "criteo-1tb-small", "dlrm-benchmark")


def _draw(rng: random.Random, p: Any) -> Any:
    """A random value of search-space parameter ``p`` (log-uniform where it is searched so)."""
    if p.type in ("categorical", "ordinal"):
        return rng.choice(p.choices)
    low, high = float(p.low), float(p.high)
    if p.type == "int":
        step = int(p.step or 1)
        if p.log and step == 1:
            return int(min(high, math.floor(math.exp(rng.uniform(math.log(low), math.log(high + 1))))))
        return int(low) + step * rng.randrange((int(high) - int(low)) // step + 1)
    return math.exp(rng.uniform(math.log(low), math.log(high))) if p.log else rng.uniform(low, high)


def _space_code() -> tuple[Any, Any]:
    """``load_space`` and ``design_system`` wherever the revision on the path keeps them: in the
    search's study room (``dse.search.study``), or in the search package itself before it had
    rooms, so that this file compares with revisions of either layout."""
    try:
        from dse.search.study.encoding import design_system
        from dse.search.study.search_space import load_space
    except ModuleNotFoundError:
        from dse.search.encoding import design_system
        from dse.search.space import load_space
    return load_space, design_system


def designs(n: int, seed: int) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``n`` (space, workload, design) triples, spaces and workloads in turn."""
    load_space, _ = _space_code()
    spaces = sorted(p.stem for p in (ROOT / "search_spaces").glob("*.toml"))
    rng = random.Random(seed)
    for i in range(n):
        space = load_space(str(ROOT / "search_spaces" / f"{spaces[i % len(spaces)]}.toml"))
        design: dict[str, Any] = {}
        for name, p in space.parameters.items():
            if space.active(name, design):
                design[name] = _draw(rng, p)
        yield space.name, WORKLOADS[(i // len(spaces)) % len(WORKLOADS)], design


def _shard_fields(s: Any) -> tuple[Any, ...]:
    """A shard's figures in a form every revision gives alike: its place by the name the placement
    counts use (``where``; a revision before memory tiers were data called it ``tier``), its
    traffic as plain numbers in field order."""
    where = s.where if hasattr(s, "where") else s.tier
    return (s.table, s.sharding, s.rows, s.dim, s.lookups, s.out_rows, s.footprint_bytes, s.device, where,
            tuple(s.traffic), s.hit_rate, s.partial_sums)


def fingerprints(n: int, seed: int) -> Iterator[str]:
    """One line per design: what it is and everything its evaluation says (see the module doc)."""
    from dse import evaluate, load_calibration, load_catalog, load_workload
    from dse.errors import DseInputError

    load_space, design_system = _space_code()

    calib, cat = load_calibration(), load_catalog()
    for space_name, workload, design in designs(n, seed):
        head = json.dumps([space_name, workload, design], sort_keys=True)
        try:
            space = load_space(str(ROOT / "search_spaces" / f"{space_name}.toml"))
            system = design_system(space, design, cat)
        except DseInputError as e:
            yield f"{head} error {e}"
            continue
        ev = evaluate(load_workload(workload), system, calib, cat)
        shards = hashlib.sha256(repr([_shard_fields(s) for s in ev.plan.shards]).encode()).hexdigest()[:16]
        yield f"{head} {json.dumps(ev.to_dict(), sort_keys=True)} shards={shards}"


def _at_ref(ref: str, n: int, seed: int) -> list[str]:
    """The fingerprints of the same designs computed by the code of git revision ``ref``."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), ref], check=True,
                       capture_output=True)
        try:
            env = dict(os.environ, PYTHONPATH=str(tree))
            # The designs are drawn by this file (the same at both revisions); the model is ref's.
            code = ("import sys; sys.path.insert(0, sys.argv[1]); import same_results as s; "
                    "[print(line) for line in s.fingerprints(int(sys.argv[2]), int(sys.argv[3]))]")
            out = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent), str(n), str(seed)],
                                 env=env, cwd=tmp, check=True, capture_output=True, text=True)
            import_check = subprocess.run([sys.executable, "-c", "import dse; print(dse.__file__)"], env=env,
                                          cwd=tmp, check=True, capture_output=True, text=True)
            assert import_check.stdout.startswith(str(tree)), import_check.stdout
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=True,
                           capture_output=True)
    return out.stdout.splitlines()


def _changes(here: str, there: str, ref: str) -> str:
    """The keys of two fingerprint lines whose values differ, each with both values."""
    def parts(line: str) -> tuple[dict[str, Any], str]:
        body = line.split("] ", 1)[1]
        if body.startswith("error"):
            return {"error": body}, ""
        result, shards = body.rsplit(" shards=", 1)
        return json.loads(result), shards
    (a, sa), (b, sb) = parts(here), parts(there)
    out = [f"{k}: {a.get(k)!r} here, {b.get(k)!r} at {ref}" for k in sorted(a.keys() | b.keys())
           if a.get(k) != b.get(k)]
    if sa != sb:
        out.append("the plan's shards differ")
    return "; ".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ref", default="main", help="git revision to compare with (default: main)")
    parser.add_argument("--designs", type=int, default=2000, help="random designs (default: 2,000)")
    parser.add_argument("--seed", type=int, default=2026, help="random seed")
    parser.add_argument("--print", action="store_true", help="print this checkout's fingerprints only")
    args = parser.parse_args()
    here = list(fingerprints(args.designs, args.seed))
    if args.print:
        print("\n".join(here))
        return
    there = _at_ref(args.ref, args.designs, args.seed)
    differ = [(a, b) for a, b in zip(here, there, strict=True) if a != b]
    evaluated = sum(" error " not in line for line in here)
    feasible = sum('"feasible": true' in line for line in here)
    print(f"{len(here)} designs ({evaluated} evaluated, {feasible} feasible): "
          f"{len(differ)} differ from {args.ref}")
    for a, b in differ[:5]:
        print(f"{a.split('] ', 1)[0]}]\n  {_changes(a, b, args.ref)}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
