"""Files and faults (issue 30, items 1, 6 and 7): every file dse writes goes through
:func:`dse.safe_write.write_file` (a fsynced temporary file renamed into place, never through a
link, never over a new artefact without ``--force``); a full disk, a read-only folder, a journal
linked to /dev/null and absurd prices end in one line; a study file's relative journal path is
taken from its folder; a symlink-loop journal is named; a study may use a part only its user
catalog defines.

The full disk is a real tmpfs of a few KB and the read-only folder a real read-only mount (the
tests run as root, who ignores permission bits, so chmod would prove nothing); both are skipped,
saying why, where mounting is not allowed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from study_helpers import CHEAP, write_study
from typer.testing import CliRunner, Result

from dse.cli import app
from dse.errors import DseInputError
from dse.safe_write import write_file

runner = CliRunner()
BUDGET = 6


def run(*args: str) -> Result:
    return runner.invoke(app, list(args), env={"COLUMNS": "250"})


def one_line_error(result: Result, *names: str) -> str:
    """The one error line of a command that failed cleanly (exit 2, no traceback)."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dse: error: "), result.stderr
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


@contextlib.contextmanager
def tmpfs(folder: Path, size: str, read_only: bool = False) -> Iterator[Path]:
    """A real tmpfs of ``size`` mounted on ``folder`` (then remounted read-only if asked)."""
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root and mount rights): {mounted.stderr}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def read_only(folder: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)


def fill(folder: Path) -> None:
    """Fill the file system of ``folder`` to the last byte."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        with contextlib.suppress(OSError):
            while os.write(fd, b"\0" * 512):
                pass
    finally:
        os.close(fd)
    probe = folder / "probe"
    with pytest.raises(OSError):  # really full
        probe.write_bytes(b"x" * 4096)
    probe.unlink()


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished study of :data:`BUDGET` trials: its folder holds s.toml and s.journal."""
    from dse.search.runner import run_study
    from dse.search.study.study_file import load_study_spec

    folder = tmp_path_factory.mktemp("finished")
    spec = load_study_spec(str(write_study(folder / "s.toml", name="s", **CHEAP,
                                           sampler="random", budget=BUDGET, seed=1)))
    run_study(spec)
    return folder


@pytest.fixture
def study(made: Path, tmp_path: Path) -> Path:
    """A fresh copy of the finished study's folder; its study file (the journal beside it)."""
    return Path(shutil.copytree(made, tmp_path / "study", ignore=shutil.ignore_patterns(
        "*.lock", "*.snapshot"))) / "s.toml"


# --- the helper ---------------------------------------------------------------------------------


def test_write_replaces_in_one_rename_keeping_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "page.html"
    target.write_text("old")
    target.chmod(0o640)
    write_file(target, "new ü")
    assert target.read_bytes() == "new ü".encode()
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]  # no temporary left


def test_a_new_artefact_never_replaces_a_file(tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    target.write_text("precious")
    with pytest.raises(DseInputError, match="already exists and is left as it is"):
        write_file(target, "other", replace=False)
    assert target.read_text() == "precious"
    write_file(tmp_path / "fresh.csv", "x", replace=False)
    assert (tmp_path / "fresh.csv").read_text() == "x"


def test_links_and_devices_are_refused_never_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "s.html"
    link.symlink_to(victim)
    for replace in (True, False):
        with pytest.raises(DseInputError, match="is a symbolic link"):
            write_file(link, "report", replace=replace)
    assert victim.read_text() == "keep me" and link.is_symlink()
    null = tmp_path / "null.csv"
    null.symlink_to("/dev/null")
    with pytest.raises(DseInputError, match="symbolic link"):
        write_file(null, "x")
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    with pytest.raises(DseInputError, match="not a regular file"):
        write_file(fifo, "x")
    assert os.path.exists("/dev/null") and not Path("/dev/null").is_file()


def test_a_full_disk_leaves_the_old_file_whole(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "64k") as disk:
        target = disk / "report.html"
        target.write_text("the old report\n")
        fill(disk)
        with pytest.raises(DseInputError, match="the disk is full") as caught:
            write_file(target, "x" * 200_000)
        assert "previous file is left as it was" in str(caught.value)
        assert target.read_text() == "the old report\n"
        assert sorted(p.name for p in disk.iterdir()) == ["filler", "report.html"]


# --- dse repair ---------------------------------------------------------------------------------


def test_a_second_repair_refuses_to_overwrite_and_says_where(study: Path) -> None:
    first = run("repair", str(study))
    assert first.exit_code == 0, first.output
    repaired = study.parent / "s.repaired.journal"
    resumed = repaired.read_bytes() + b'{"op_code":4,"worker_id":"later","study_id":0,' \
                                       b'"datetime_start":"2026-01-01T00:00:00"}\n'
    repaired.write_bytes(resumed)  # as if a study had resumed on the copy since
    line = one_line_error(run("repair", str(study)), str(repaired), "--force", "--out")
    assert "already exists" in line
    assert repaired.read_bytes() == resumed
    other = study.parent / "elsewhere.journal"
    assert run("repair", str(study), "--out", str(other)).exit_code == 0
    assert other.read_bytes() == (study.parent / "s.journal").read_bytes()
    forced = run("repair", str(study), "--force")
    assert forced.exit_code == 0, forced.output
    assert repaired.read_bytes() == (study.parent / "s.journal").read_bytes()


def test_a_study_named_name_repaired_keeps_its_journal(study: Path) -> None:
    folder = study.parent
    write_study(folder / "s.repaired.toml", name="s.repaired", **CHEAP, sampler="random",
                budget=3, seed=2)
    assert run("run", str(folder / "s.repaired.toml"), "--quiet", "--no-report").exit_code == 0
    journal = folder / "s.repaired.journal"
    before = journal.read_bytes()
    one_line_error(run("repair", str(study)), str(journal))
    assert journal.read_bytes() == before


def test_repair_refuses_to_write_over_the_journal_it_repairs(study: Path) -> None:
    journal = study.parent / "s.journal"
    before = journal.read_bytes()
    one_line_error(run("repair", str(study), "--out", str(journal), "--force"), "--out")
    assert journal.read_bytes() == before


# --- exports and reports ------------------------------------------------------------------------


def test_exports_refuse_an_existing_file_without_force(study: Path) -> None:
    out = study.parent / "all.csv"
    assert run("export", str(study), "--out", str(out)).exit_code == 0
    first = out.read_text()
    assert first.count("\n") == BUDGET + 1
    out.write_text("mine")
    one_line_error(run("export", str(study), "--out", str(out)), str(out), "--force")
    assert out.read_text() == "mine"
    assert run("export", str(study), "--out", str(out), "--force").exit_code == 0
    assert out.read_text() == first
    front = study.parent / "front.parquet"
    front.write_bytes(b"mine")
    one_line_error(run("pareto", str(study), "--parquet", str(front)), str(front))
    assert front.read_bytes() == b"mine"
    assert run("pareto", str(study), "--parquet", str(front), "--force").exit_code == 0
    assert front.read_bytes()[:4] == b"PAR1"


@pytest.mark.parametrize("command", [("export", "--out", "x.csv"), ("export", "--out", "x.parquet"),
                                     ("pareto", "--csv", "x.csv"), ("pareto", "--parquet", "x.parquet")])
def test_a_full_disk_during_an_export_is_one_line(study: Path, command: tuple[str, str, str]) -> None:
    name, flag, file = command
    with tmpfs(study.parent / "disk", "64k") as disk:
        fill(disk)
        line = one_line_error(run(name, str(study), flag, str(disk / file)), str(disk / file))
        assert "the disk is full" in line and "nothing was written" in line
        assert sorted(p.name for p in disk.iterdir()) == ["filler"]


@pytest.mark.parametrize("command", [("export", "--out", "x.csv"), ("pareto", "--csv", "x.csv"),
                                     ("report", "--out", "")])
def test_a_read_only_folder_is_one_line(study: Path, command: tuple[str, str, str]) -> None:
    name, flag, file = command
    with tmpfs(study.parent / "ro", "1m") as folder:
        read_only(folder)
        with pytest.raises(OSError):  # the mount is really read-only, even for root
            (folder / "probe").write_text("x")
        target = folder / file if file else folder
        line = one_line_error(run(name, str(study), flag, str(target)))
        assert "read-only" in line and str(folder) in line


def test_a_report_on_a_full_disk_keeps_the_previous_report(study: Path) -> None:
    with tmpfs(study.parent / "disk", "256k") as disk:
        old = disk / "s.html"
        old.write_text("<html>the previous report</html>")
        fill(disk)
        line = one_line_error(run("report", str(study), "--out", str(disk)), str(old))
        assert "previous file is left as it was" in line
        assert old.read_text() == "<html>the previous report</html>"


def test_a_report_is_never_written_through_a_link(study: Path) -> None:
    victim = study.parent / "victim.txt"
    victim.write_text("keep me")
    (study.parent / "s.html").symlink_to(victim)
    one_line_error(run("report", str(study)), "s.html", "symbolic link")
    assert victim.read_text() == "keep me"


def test_a_report_regenerated_replaces_the_previous_one(study: Path) -> None:
    page = study.parent / "s.html"
    page.write_text("old")
    assert run("report", str(study)).exit_code == 0
    assert page.stat().st_size > 1_000_000 and page.read_text().startswith("<")


# --- journals that are no files -----------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "status", "repair"])
def test_a_journal_linked_to_dev_null_is_one_line(tmp_path: Path, command: str) -> None:
    study = write_study(tmp_path / "s.toml", name="s", **CHEAP, sampler="random", budget=3, seed=1)
    (tmp_path / "s.journal").symlink_to("/dev/null")
    one_line_error(run(command, str(study)), "s.journal", "not a regular file")


@pytest.mark.parametrize("command", ["run", "status", "repair"])
def test_a_symlink_loop_journal_is_named(tmp_path: Path, command: str) -> None:
    study = write_study(tmp_path / "s.toml", name="s", **CHEAP, sampler="random", budget=3, seed=1)
    (tmp_path / "s.journal").symlink_to(tmp_path / "s.journal")
    line = one_line_error(run(command, str(study)), "s.journal", "symbolic link loop")
    assert "no stored study" not in line


def test_the_cli_in_a_process_prints_no_traceback(tmp_path: Path) -> None:
    """The same through ``python -m dse``, as a user runs it."""
    study = write_study(tmp_path / "s.toml", name="s", **CHEAP, sampler="random", budget=3, seed=1)
    (tmp_path / "s.journal").symlink_to("/dev/null")
    done = subprocess.run([sys.executable, "-m", "dse", "run", str(study), "--no-report"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "not a regular file" in done.stderr


# --- files changed in place: the journal and its locks (issue 42, item 2) -------------------------


@pytest.mark.parametrize("target", ["missing", "existing"])
def test_a_journal_that_is_a_link_is_never_written_through(tmp_path: Path, target: str) -> None:
    """``ln -s ../elsewhere/x s.journal``: ``dse run`` created and filled the link's target, and
    appended to an existing one, while every other output refused links."""
    study = write_study(tmp_path / "s.toml", name="s", **CHEAP, sampler="random", budget=3, seed=1)
    elsewhere = tmp_path / "elsewhere" / "x"
    elsewhere.parent.mkdir()
    if target == "existing":
        elsewhere.write_bytes(b"")
    (tmp_path / "s.journal").symlink_to(elsewhere)
    one_line_error(run("run", str(study), "--no-report"), "s.journal", "is a symbolic link",
                   str(elsewhere))
    assert (elsewhere.read_bytes() == b"") if target == "existing" else not elsewhere.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "s.journal", "s.toml"]


@pytest.mark.parametrize("lock", ["s.journal.write.lock", "s.journal.workers.lock"])
def test_a_lock_that_is_a_link_is_never_written_through(study: Path, lock: str) -> None:
    victim = study.parent / "victim"
    victim.write_text("keep me")
    (study.parent / lock).symlink_to(victim)
    before = study.with_suffix(".journal").read_bytes()
    one_line_error(run("run", str(study), "--trials", "1", "--no-report"), lock, "symbolic link")
    assert victim.read_text() == "keep me"
    assert study.with_suffix(".journal").read_bytes() == before


def test_the_journal_writer_opens_no_link_put_there_later(tmp_path: Path) -> None:
    """A link put in the journal's place after it was opened is refused at the next append (the
    writer opens the file with O_NOFOLLOW each time), not written through."""
    import optuna

    from dse.search.storage.journal_writing import journal_storage

    journal = tmp_path / "s.journal"
    storage = journal_storage(journal)
    study = optuna.create_study(study_name="s", storage=storage)
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    journal.unlink()
    journal.symlink_to(victim)
    with pytest.raises(DseInputError, match="is a symbolic link"):
        study.set_user_attr("k", 1)
    assert victim.read_text() == "keep me"


def test_a_sqlite_storage_that_is_a_link_is_refused(tmp_path: Path) -> None:
    study = write_study(tmp_path / "s.toml", name="s", **CHEAP, sampler="random", budget=3, seed=1)
    (tmp_path / "s.db").symlink_to(tmp_path / "elsewhere.db")
    one_line_error(run("run", str(study), "--storage", f"sqlite:///{tmp_path / 's.db'}",
                       "--no-report"), "s.db", "symbolic link")
    assert not (tmp_path / "elsewhere.db").exists()


# --- prices -------------------------------------------------------------------------------------


def test_an_overflowing_price_is_refused_naming_the_file_and_field(tmp_path: Path) -> None:
    base = ("evaluate", "--system", "dgx-h100", "--workload", "mlperf-dlrm-v1")
    one_line_error(run(*base, "--set", "price.h100-sxm5-80gb=1e308"),
                   "--set", "accelerator.h100-sxm5-80gb.price_usd", "at most")
    catalog = tmp_path / "parts.toml"
    catalog.write_text("[facility]\nusd_per_kwh = 1e308\n")
    one_line_error(run(*base, "--catalog", str(catalog)), str(catalog), "facility.usd_per_kwh")
    dear = run(*base, "--set", "price.h100-sxm5-80gb=1e9", "--json")  # the bound itself is fine
    assert dear.exit_code == 0, dear.output
    assert "inf" not in dear.stdout.lower().replace("infeasible", "")


# --- study files --------------------------------------------------------------------------------


def test_a_relative_storage_path_is_taken_from_the_study_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    study = write_study(folder / "s.toml", name="s", **CHEAP, sampler="random", budget=3, seed=1,
                        storage="runs/s.journal")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert run("run", str(study), "--quiet", "--no-report").exit_code == 0
    assert (folder / "runs" / "s.journal").is_file()
    assert not (elsewhere / "runs").exists()
    monkeypatch.chdir(folder)
    status = run("status", "s.toml", "--json")
    assert status.exit_code == 0 and '"complete": 3' in status.stdout


def test_absolute_paths_and_urls_in_a_study_file_are_kept(tmp_path: Path) -> None:
    from dse.search.study.study_file import load_study_spec

    absolute = str(tmp_path / "abs" / "s.journal")
    for storage in (absolute, "sqlite:///rel.db", "postgresql://u@h/db", f"journal:{absolute}"):
        spec = load_study_spec(str(write_study(tmp_path / "s.toml", name="s", **CHEAP,
                                               budget=3, storage=storage)))
        assert spec.storage == storage
    spec = load_study_spec(str(write_study(tmp_path / "s.toml", name="s", **CHEAP, budget=3,
                                           storage="journal:x/s.journal")))
    assert spec.storage == f"journal:{tmp_path / 'x' / 's.journal'}"


def test_a_study_may_use_a_part_only_its_user_catalog_defines(tmp_path: Path) -> None:
    """The space's base system names an accelerator defined only in the study's catalog: the
    baselines are matched against that catalog, and the study runs on it."""
    from dse.records import read_toml

    packaged = Path(__file__).resolve().parents[1] / "dse" / "data"
    text = (packaged / "catalog.toml").read_text()
    start = text.index("[accelerator.v100-sxm2-32gb]")
    entry = text[start:text.index("\n[", start + 1)].replace("[accelerator.v100-sxm2-32gb]",
                                                               "[accelerator.my-gpu]")
    (tmp_path / "parts.toml").write_text(entry + "\n")
    system = (packaged / "systems" / "dgx-h100.toml").read_text()
    (tmp_path / "mine.toml").write_text(system.replace('"h100-sxm5-80gb"', '"my-gpu"')
                                        .replace('name = "dgx-h100"', 'name = "mine"'))
    assert read_toml(tmp_path / "mine.toml")["node"]["accelerator"] == "my-gpu"
    (tmp_path / "sp.toml").write_text(f'name = "sp"\nbase_system = "{tmp_path / "mine.toml"}"\n'
                                      '[fixed]\nnodes = 1\n[parameters."node.accelerators"]\n'
                                      'type = "int"\nlow = 1\nhigh = 8\n')
    study = write_study(tmp_path / "st.toml", name="st", workload="mlperf-dlrm-v1",
                        space="sp.toml", objectives="throughput-vs-capex", catalog="parts.toml",
                        sampler="random", budget=4, seed=1)
    result = run("run", str(study), "--quiet", "--no-report")
    assert result.exit_code == 0, result.output
    assert "4 of 4 trials complete" in result.stdout


def test_a_sweep_refuses_an_existing_out_before_sweeping(tmp_path: Path) -> None:
    out = tmp_path / "designs.parquet"
    out.write_bytes(b"an earlier sweep")
    result = run("sweep", "scale-out", "-w", "mlperf-dlrm-v1", "--out", str(out))
    one_line_error(result, str(out), "--force")
    assert "designs/s" not in result.output and out.read_bytes() == b"an earlier sweep"
