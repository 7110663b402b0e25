"""Apply the state-change exclusion rule (:mod:`dse.calibration.state_change`) to MLPerf DLRM logs.

Reads every ``result_*.txt`` of a measurement row's ``results`` path (``repository:path glob``)
from local git mirrors of the ``mlcommons/training_results_v*`` repositories, prints per run
whether it trips and per measurement its ``state_check``; ``--write`` stores the verdict and its
evidence in the packaged CSVs' ``state_check`` / ``state_evidence`` columns. ``--all`` also
scans every DLRM submission of the mirrors, measured or not, so the rule's margin over all logged
runs can be read.

    python benchmarks/state_change_scan.py \\
        --mirror mlcommons/training_results_v3.1=/path/to/git-dir ... [--write] [--all]

Rows whose repository has no mirror given, or no logs (published tables), stay ``unlogged``.
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import io
import subprocess
import sys
from pathlib import Path

from dse.calibration.state_change import check_run, check_runs, parse_windows

DATA = Path(__file__).resolve().parent.parent / "dse" / "data"
FILES = ("dlrm_measurements.csv", "mlperf_dcnv2_2023.csv")


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True, capture_output=True,
                          text=True, errors="replace").stdout


def _logs(git_dir: str, pattern: str) -> list[tuple[str, str]]:
    """(path, text) of every file of the mirror's HEAD matching ``pattern``."""
    names = _git(git_dir, "ls-tree", "-r", "--name-only", "HEAD").split("\n")
    return [(n, _git(git_dir, "show", f"HEAD:{n}")) for n in sorted(fnmatch.filter(names, pattern))]


def _verdict(mirrors: dict[str, str], results: str) -> tuple[str, str, list[str]]:
    repo, _, pattern = results.partition(":")
    pattern = pattern.split(" ")[0]
    if repo not in mirrors or "result_" not in pattern:
        return "unlogged", "", []
    logs = _logs(mirrors[repo], pattern)
    lines = []
    for name, text in logs:
        check = check_run(parse_windows(text))
        run = name.rsplit("/", 1)[-1]
        lines.append(f"  {run}: " + ("no per-step windows" if check is None else
                                     f"{'TRIPS' if check.trips else 'ok'}; {check.evidence()}"))
    state, evidence = check_runs([(n.rsplit("/", 1)[-1], t) for n, t in logs])
    return state, evidence, lines


def _scan_rows(mirrors: dict[str, str], write: bool) -> None:
    for name in FILES:
        path = DATA / name
        text = path.read_text()
        rows = list(csv.DictReader(io.StringIO(text)))
        header = list(csv.DictReader(io.StringIO(text)).fieldnames or [])
        for row in rows:
            state, evidence, lines = _verdict(mirrors, row["results"])
            print(f"{row['id']}: {state}" + (f" ({evidence})" if evidence else ""))
            print("\n".join(lines)) if lines else None
            row["state_check"], row["state_evidence"] = state, evidence
        if write:
            for col in ("state_check", "state_evidence"):
                if col not in header:
                    header.append(col)
            out = io.StringIO()
            w = csv.DictWriter(out, header, lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
            path.write_text(out.getvalue())


def _scan_all(mirrors: dict[str, str]) -> None:
    for repo, git_dir in sorted(mirrors.items()):
        names = _git(git_dir, "ls-tree", "-r", "--name-only", "HEAD").split("\n")
        folders = sorted({n.rsplit("/", 1)[0] for n in names
                          if "/results/" in n and "/dlrm" in n and "/result_" in n})
        for folder in folders:
            state, evidence, _ = _verdict(mirrors, f"{repo}:{folder}/result_*.txt")
            print(f"{repo}:{folder}: {state}" + (f" ({evidence})" if evidence else ""))


def main(argv: list[str]) -> int:
    """Parse the arguments, scan, print (and with ``--write`` store) the verdicts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mirror", action="append", default=[],
                        help="repository=git-dir of a local mirror (repeatable)")
    parser.add_argument("--write", action="store_true", help="store the verdicts in the CSVs")
    parser.add_argument("--all", action="store_true", help="also scan every DLRM submission")
    args = parser.parse_args(argv)
    mirrors = dict(m.split("=", 1) for m in args.mirror)
    _scan_rows(mirrors, args.write)
    if args.all:
        _scan_all(mirrors)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
