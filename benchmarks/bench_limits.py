"""Wall time, CPU time and peak memory of dse at its input limits (issue 30, item 5), each command
in a fresh process as a user runs it, measured by ``/usr/bin/time -v``.

    python benchmarks/bench_limits.py                    # every case below
    python benchmarks/bench_limits.py --case tables      # one case
    python benchmarks/bench_limits.py --set nodes=128    # another cluster for the table cases
    python benchmarks/bench_limits.py --create           # also create a study at the table limit

Cases (``dse.limits``):

- ``tables``: ``dse evaluate`` of a synthetic workload of :data:`MAX_TABLES` tables (the
  production Model-A file with its ``count`` raised, DCNv2 interaction) on 16 DGX H100 nodes;
  one ``dse evaluate`` scores 11 designs (the design and its sensitive defaults);
- ``tables-dot``: the same with a dot interaction (a top-MLP input quadratic in tables);
- ``tables-wide``: the ``tables`` workload on as many DGX H100 nodes as
  :data:`MAX_TABLE_ACCELERATORS` allows (12,500: 100,000 accelerators);
- ``tables-over``: the refusal of :data:`MAX_TABLES` + 1 tables;
- ``choices``: ``dse status`` of a study whose space has an ordinal of :data:`MAX_CHOICES`
  choices (the space is loaded and every choice probed; no journal, so it ends with exit 2
  after the load);
- ``spec-size``: the refusal of a spec one byte over :data:`MAX_SPEC_FILE_BYTES`.

Target (issue 30): every input refused in one line, or done within 60 s and 2 GB an evaluation.
CPU seconds are the figure to compare on a loaded machine.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dse import limits  # noqa: E402

TARGET_S = 60.0
TARGET_GB = 2.0
MODEL_A = ROOT / "dse" / "data" / "workloads" / "synthetic-production-a.toml"


def _time_v(args: list[str], cwd: Path) -> dict[str, float | int | str]:
    """Run ``python -m dse ARGS`` under ``/usr/bin/time -v``: wall s, CPU s, peak GB, exit code."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "dse", *args], cwd=cwd,
                         env=env, capture_output=True, text=True)
    stats = dict(re.findall(r"^\s*(.+?): (.+)$", out.stderr, flags=re.M))
    wall = stats["Elapsed (wall clock) time (h:mm:ss or m:ss)"].split(":")
    seconds = sum(float(x) * 60**i for i, x in enumerate(reversed(wall)))
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("dse: error")]
    return {"wall_s": seconds,
            "cpu_s": float(stats["User time (seconds)"]) + float(stats["System time (seconds)"]),
            "peak_gb": int(stats["Maximum resident set size (kbytes)"]) / 1e6,
            "exit": int(stats["Exit status"]), "error": errors[0] if errors else ""}


def _workload(folder: Path, count: int, dot: bool) -> Path:
    text = MODEL_A.read_text(encoding="utf-8")
    text = re.sub(r"^count = \d+", f"count = {count}", text, flags=re.M)
    text = re.sub(r'^name = ".*"', f'name = "model-a-{count}"', text, flags=re.M)
    if dot:
        text = re.sub(r'^interaction = "dcnv2"', 'interaction = "dot"', text, flags=re.M)
    path = folder / f"tables-{count}{'-dot' if dot else ''}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _choices_study(folder: Path) -> Path:
    choices = ", ".join(str(i) for i in range(1, limits.MAX_CHOICES + 1))
    (folder / "wide.toml").write_text(
        f'name = "wide"\nbase_system = "dgx-h100"\n[parameters."node.nic_gbit_s"]\n'
        f'type = "ordinal"\nchoices = [{choices}]\n[parameters.nodes]\ntype = "int"\n'
        "low = 1\nhigh = 16\n", encoding="utf-8")
    study = folder / "wide-study.toml"
    study.write_text('name = "wide-study"\nworkload = "mlperf-dlrm-dcnv2"\nspace = "wide.toml"\n'
                     'objectives = "throughput-capex-power"\nbudget = 60\nseed = 1\n',
                     encoding="utf-8")
    return study


def _cases(folder: Path, overrides: list[str], create: bool) -> dict[str, list[str]]:
    sets = [a for o in overrides for a in ("--set", o)]
    evaluate = ["evaluate", "-s", "dgx-h100", *sets, "-w"]
    widest = limits.MAX_TABLE_ACCELERATORS // (limits.MAX_TABLES * 8)  # DGX H100: 8 a node
    big = folder / "big.toml"
    big.write_bytes(b"#" * limits.MAX_SPEC_FILE_BYTES + b"\n")
    cases = {
        "tables": [*evaluate, str(_workload(folder, limits.MAX_TABLES, dot=False))],
        "tables-dot": [*evaluate, str(_workload(folder, limits.MAX_TABLES, dot=True))],
        "tables-wide": ["evaluate", "-s", "dgx-h100", "--set", f"nodes={widest}", "-w",
                        str(_workload(folder, limits.MAX_TABLES, dot=False))],
        "tables-over": [*evaluate, str(_workload(folder, limits.MAX_TABLES + 1, dot=False))],
        "choices": ["status", str(_choices_study(folder))],
        "spec-size": [*evaluate, str(big)],
    }
    if create:
        study = folder / "tables-study.toml"
        study.write_text(f'name = "tables-study"\nworkload = "{cases["tables"][-1]}"\n'
                         'space = "scale-out"\nobjectives = "throughput-capex-power"\n'
                         "budget = 100\nseed = 1\n", encoding="utf-8")
        cases["create"] = ["run", str(study), "--trials", "0", "--no-report", "--quiet"]
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", help="Run only this case (repeatable).")
    parser.add_argument("--set", action="append", default=["nodes=16"], dest="overrides",
                        help="System overrides for the evaluate cases (default nodes=16).")
    parser.add_argument("--create", action="store_true",
                        help="Also time creating a study (scale-out space) at the table limit.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, argv in _cases(folder, args.overrides, args.create).items():
            if args.case and name not in args.case:
                continue
            r = _time_v(argv, folder)
            within = float(r["wall_s"]) <= TARGET_S and float(r["peak_gb"]) <= TARGET_GB
            print(f"{name:12s} wall {r['wall_s']:7.1f} s  cpu {r['cpu_s']:7.1f} s  "
                  f"peak {r['peak_gb']:5.2f} GB  exit {r['exit']}  "
                  f"{'within' if within else 'OVER'} {TARGET_S:.0f} s / {TARGET_GB:.0f} GB"
                  + (f"\n{'':12s} {str(r['error'])[:150]}" if r["error"] else ""), flush=True)


if __name__ == "__main__":
    main()
