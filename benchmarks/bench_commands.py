"""Wall and CPU time of the read-only study commands on a large study, each in a cold process as
a user runs it.

    python benchmarks/bench_commands.py                      # 3,000 trials in a temporary folder
    python benchmarks/bench_commands.py --folder /tmp/big    # build once there, reuse after
    python benchmarks/bench_commands.py --repeat 5 --json
    python benchmarks/bench_commands.py --before /path/to/older/checkout   # before/after

The study is the default one (``zion-2020``: zion-2019 on zion-node, throughput against capex)
with a budget of ``--trials`` under another name, run with ``--jobs 2`` (so its journal holds two
workers' records); about 80 s for 3,000 trials (a 25 MB journal) on this 2-core machine. Then
``dse status``, ``dse pareto`` and ``dse report`` each run ``--repeat`` times in a fresh Python
process (imports included), and, for reference, a process that only loads the study through
Optuna's own journal storage. Medians are printed with every run's time. ``--before DIR`` also
times the dse of another source tree (``PYTHONPATH=DIR``) on a copy of the study in
``FOLDER/before`` (its caches its own), run by run in turn with this one, so that both meet the
same load on a shared machine (a first, untimed report there fills that copy's caches). The first
read of a journal (a cold cache, ``NAME.journal.snapshot``) is timed apart from the later ones,
and so is the first report (its robust section retimes every front and near-front design under
the ensemble, and it makes the sections it keeps in caches: cold ``NAME.journal.retiming``,
``.retiming.front`` and ``.report``; ``dse run`` fills them when it writes its report, so the
next ``dse report`` finds them warm). CPU seconds (user + system of the command's process and
its children) are printed beside the wall time: on a loaded machine they are the figure to
compare.

Target (the faults issue, item 7): each command within 2 s on a study of 3,000 trials.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dse.outputs.report import report_cache
from dse.search.robust_front import front_cache, retiming_cache
from dse.search.storage.journal_snapshot import cache_path

TARGET_S = 2.0
COMMANDS = {
    "status": ["status", "{study}"],
    "pareto": ["pareto", "{study}"],
    "report": ["report", "{study}", "--out", "{folder}/report"],
}
PLAIN_OPTUNA = """
import sys, optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock
storage = JournalStorage(JournalFileBackend(sys.argv[1], lock_obj=JournalFileOpenLock(sys.argv[1])))
print(len(optuna.load_study(study_name=sys.argv[2], storage=storage).get_trials(deepcopy=False)))
"""


def study_file(folder: Path, trials: int) -> Path:
    """A copy of studies/zion-2020.toml named ``zion-2020-N`` with a budget of ``trials``."""
    source = Path(__file__).resolve().parents[1] / "studies" / "zion-2020.toml"
    text = source.read_text(encoding="utf-8")
    text = re.sub(r'(?m)^name = .*$', f'name = "zion-2020-{trials}"', text)
    text = re.sub(r"(?m)^budget = .*$", f"budget = {trials}", text)
    path = folder / f"zion-2020-{trials}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def dse(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dse", *args], capture_output=True, text=True,
                          check=False, cwd=tempfile.gettempdir())


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], tree: Path | None = None) -> tuple[float, float]:
    """Wall and CPU time (user + system) of ``argv`` in a fresh process (with ``tree`` first on
    its path, if given)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    cpu = _children_cpu_s()
    start = time.perf_counter()
    # Run outside any source tree: ``python -m`` puts the working directory first on the path.
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, env=env,
                          cwd=tempfile.gettempdir())
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.strip()[-400:]}")
    return seconds, _children_cpu_s() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=3000)
    parser.add_argument("--folder", type=Path, default=None,
                        help="where the study lives (built there unless already complete)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", type=Path, default=None,
                        help="another dse source tree to time in turn with this one")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="bench-commands-"))
    folder.mkdir(parents=True, exist_ok=True)
    study = study_file(folder, args.trials)
    journal = study.with_suffix(".journal")
    start = time.perf_counter()
    built = dse("run", str(study), "--jobs", "2", "--quiet", "--no-report")
    if built.returncode != 0:
        raise SystemExit(f"building the study failed: {built.stderr.strip()[-400:]}")
    build_s = time.perf_counter() - start
    runs: dict[str, list[tuple[float, float]]] = {}
    cache_path(journal).unlink(missing_ok=True)
    runs["status, cold cache"] = [timed([sys.executable, "-m", "dse", "status", str(study)])]
    for cold in (retiming_cache(journal), front_cache(retiming_cache(journal)), report_cache(journal)):
        cold.unlink(missing_ok=True)
    runs["report, cold caches"] = [timed([sys.executable, "-m", "dse", *(
        a.format(study=study, folder=folder) for a in COMMANDS["report"])])]
    # The other tree reads its own copy of the study: the two would otherwise overwrite each
    # other's caches (made by other code, so in another context) at every run.
    trees: dict[str, tuple[Path | None, Path]] = {"": (None, study)}
    if args.before is not None:
        other = folder / "before"
        other.mkdir(exist_ok=True)
        for source in (study, journal):
            shutil.copyfile(source, other / source.name)
        trees["before: "] = (args.before, other / study.name)
        timed([sys.executable, "-m", "dse", *(a.format(study=other / study.name, folder=other)
                                              for a in COMMANDS["report"])], args.before)
    for _ in range(args.repeat):
        for name, template in COMMANDS.items():
            for label, (tree, path) in trees.items():
                argv = [sys.executable, "-m", "dse", *(a.format(study=path, folder=path.parent)
                                                       for a in template)]
                runs.setdefault(label + name, []).append(timed(argv, tree))
    runs["plain optuna load"] = [
        timed([sys.executable, "-c", PLAIN_OPTUNA, str(journal), f"zion-2020-{args.trials}"])
        for _ in range(args.repeat)]
    result = {
        "trials": args.trials, "journal_mb": round(journal.stat().st_size / 1e6, 1),
        "build_or_resume_s": round(build_s, 1),
        "median_s": {k: round(statistics.median(w for w, _ in v), 2) for k, v in runs.items()},
        "median_cpu_s": {k: round(statistics.median(c for _, c in v), 2) for k, v in runs.items()},
        "runs_s": {k: [round(w, 2) for w, _ in v] for k, v in runs.items()},
        "runs_cpu_s": {k: [round(c, 2) for _, c in v] for k, v in runs.items()},
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"{args.trials} trials, journal {result['journal_mb']} MB in {folder} "
          f"(built or resumed in {result['build_or_resume_s']} s)")
    for name, pairs in runs.items():
        median = statistics.median(w for w, _ in pairs)
        cpu = statistics.median(c for _, c in pairs)
        mark = "" if name not in COMMANDS else ("  ok" if median <= TARGET_S else
                                               f"  over the {TARGET_S:g} s target")
        name = name.replace("before: ", "  before: ")
        print(f"  {name:20s} median {median:5.2f} s wall, {cpu:5.2f} s CPU  runs "
              f"{', '.join(f'{w:.2f}/{c:.2f}' for w, c in pairs)}{mark}")


if __name__ == "__main__":
    main()
