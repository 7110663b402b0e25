"""Installed anywhere (issue 17): dse from a wheel, run from an empty directory, with the user's
own study files, objectives and catalog; plus the lookup order, ``dse init``, ``dse list`` of
parts and the user catalog through the CLI in-process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dse.cli import app
from dse.records import STUDY, named_file

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("dse", "studies", "search_spaces", "objectives", "pyproject.toml", "setup.py", "README.md")
PARTS = '[price]\nxeon-cooper-lake = 9000\n[facility]\nusd_per_kwh = 0.2\n'
OWN_OBJECTIVES = ('name = "own-objectives"\n[[objectives]]\nmetric = "throughput_samples_per_s"\n'
                  'direction = "maximize"\n[[objectives]]\nmetric = "power_w"\ndirection = "minimize"\n')


runner = CliRunner()


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with dse installed from a wheel built from this checkout. Its dependencies are
    those of the Python running the tests, named in a ``.pth`` file (nothing is downloaded but the
    build backend): the site-packages folders on this process's path, after the venv's own (which
    holds the wheel). Not ``system_site_packages``: inside a virtual environment those are the base
    interpreter's, without dse's dependencies. Plain folders in a ``.pth`` file have their own
    ``.pth`` files left unread, so an editable install of the checkout there stays out."""
    base = tmp_path_factory.mktemp("install")
    src = base / "src"
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            src.mkdir(exist_ok=True)
            shutil.copy(ROOT / name, src / name)
    wheels = base / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "-q", "-w", str(wheels)],
                   cwd=src, check=True, env=_clean_env())
    env_dir = base / "venv"
    venv.create(env_dir, with_pip=False)
    (wheel,) = wheels.glob("dse-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(env_dir / "bin" / "python"), "install",
                    "--no-deps", "--no-index", "-q", str(wheel)], check=True, env=_clean_env())
    # After the install, so pip does not take a dse of the same version there for this one.
    (_site_packages(env_dir) / "dependencies.pth").write_text(
        "".join(f"{p}\n" for p in _dependency_folders()), encoding="utf-8")
    return env_dir


def _dependency_folders() -> list[str]:
    """The site-packages folders this Python imports dse's dependencies from (a virtual
    environment's and, when it sees them, its base interpreter's or the user's)."""
    return [p for p in dict.fromkeys(sys.path)
            if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]


def _site_packages(env_dir: Path) -> Path:
    """The site-packages folder of the venv ``env_dir`` (of this Python's version)."""
    return Path(sysconfig.get_path("purelib", "venv", {"base": str(env_dir), "platbase": str(env_dir)}))


def _clean_env() -> dict[str, str]:
    """The environment without PYTHONPATH, so the checkout cannot shadow the installed package."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}


def _dse(env_dir: Path, cwd: Path, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([str(env_dir / "bin" / "dse"), *args], cwd=cwd, env=_clean_env(),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == code, (args, out.stdout, out.stderr)
    return out


@pytest.mark.slow
def test_wheel_runs_anywhere(installed: Path, tmp_path: Path) -> None:
    work = tmp_path / "empty"
    work.mkdir()
    where = subprocess.run([str(installed / "bin" / "python"), "-c", "import dse; print(dse.__file__)"],
                           cwd=work, env=_clean_env(), capture_output=True, text=True, check=True)
    package = Path(where.stdout.strip()).parent
    assert package.is_relative_to(installed), where.stdout
    assert (package / "presets" / "studies" / "zion-2020.toml").is_file()

    # The default study: results under ./studies, never in the installed package.
    out = _dse(installed, work, "run", "--trials", "2", "--quiet")
    assert "studies/zion-2020.journal" in out.stdout and "studies/zion-2020.html" in out.stdout
    assert (work / "studies" / "zion-2020.journal").is_file()
    assert (work / "studies" / "zion-2020.html").is_file()
    assert not list(package.rglob("*.journal")) and not list(package.rglob("*.html"))

    # dse init, then the user's own files with their own objectives and catalog, by path.
    out = _dse(installed, work, "init", "mine")
    assert "dse run mine/my-study.toml" in out.stdout
    (work / "mine" / "own-objectives.toml").write_text(OWN_OBJECTIVES)
    (work / "mine" / "my-parts.toml").write_text(PARTS)
    study = (work / "mine" / "my-study.toml")
    study.write_text(study.read_text().replace("my-objectives.toml", "own-objectives.toml"))
    elsewhere = work / "elsewhere"
    elsewhere.mkdir()
    out = _dse(installed, elsewhere, "run", "../mine/my-study.toml", "--trials", "2", "--quiet")
    assert "stored in ../mine/my-study.journal" in out.stdout
    assert (work / "mine" / "my-study.journal").is_file() and (work / "mine" / "my-study.html").is_file()
    status = json.loads(_dse(installed, elsewhere, "status", "../mine/my-study.toml", "--json").stdout)
    assert status["complete"] == 2
    assert [o["metric"] for o in status["objectives"]] == ["throughput_samples_per_s", "power_w"]
    out = _dse(installed, work, "report", "mine/my-study.toml")
    assert "report written to mine/my-study.html" in out.stdout
    page = (work / "mine" / "my-study.html").read_text()
    assert "xeon-cooper-lake.price_usd = 9000" in page and "facility.usd_per_kwh = 0.2" in page

    # dse evaluate with a user catalog and single-run overrides (against the packaged catalog's
    # answer, computed here: the same code).
    (work / "parts.toml").write_text(PARTS)
    base = json.loads(runner.invoke(app, ["evaluate", "-s", "zion", "-w", "zion-2019", "--json"]).output)
    own = json.loads(_dse(installed, work, "evaluate", "-s", "zion", "-w", "zion-2019", "--json",
                          "--catalog", "parts.toml", "--set", "facility.pue=1.1").stdout)
    assert own["capex_usd"] < base["capex_usd"]  # 8 Cooper Lake sockets at 9,000 instead of the list
    assert {c["key"] for c in own["catalog_changes"]} == {
        "cpu.xeon-cooper-lake.price_usd", "facility.usd_per_kwh", "facility.pue"}
    assert own["throughput_samples_per_s"] == base["throughput_samples_per_s"]
    # The calibration ensemble ships as package data: intervals from the installed package.
    assert (package / "data" / "calibration_ensemble.json").is_file()
    assert own["throughput_interval_samples_per_s"] == base["throughput_interval_samples_per_s"]
    assert own["throughput_interval_samples_per_s"][0] < own["throughput_samples_per_s"]
    # Nothing landed anywhere but where the messages said.
    assert sorted(p.name for p in work.iterdir()) == ["elsewhere", "mine", "parts.toml", "studies"]
    assert sorted(p.name for p in elsewhere.iterdir()) == []


def test_lookup_order_prefers_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert named_file("zion-2020", STUDY).resolve().parent == STUDY.builtin.resolve()
    (tmp_path / "studies").mkdir()
    own = (ROOT / "studies" / "zion-2020.toml").read_text().replace("budget = 300", "budget = 7")
    (tmp_path / "studies" / "zion-2020.toml").write_text(own)
    assert named_file("zion-2020", STUDY) == Path("studies/zion-2020.toml")
    result = runner.invoke(app, ["list", "studies"])
    assert result.exit_code == 0 and "7" in result.output


def test_init_refuses_to_overwrite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["init", "here"]).exit_code == 0
    again = runner.invoke(app, ["init", "here"])
    assert again.exit_code == 2 and "already exists" in again.output


@pytest.mark.parametrize("args, message", [
    (["--set", "price.no-such-part=1"], "--set: price.no-such-part: unknown part"),
    (["--set", "facility.bogus=1"], "--set: facility.bogus: unknown key"),
    (["--set", "facility.pue=0.5"], "--set: facility.pue: must be at least 1.0"),
    (["--catalog", "missing.toml"], "missing.toml: file not found"),
])
def test_bad_catalog_input_is_one_line(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["evaluate", "-s", "zion", "-w", "zion-2019", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and result.output.count("\n") == 1


@pytest.mark.parametrize("text, message", [
    ("[facility]\nusd_per_kwhh = 0.2\n", "bad.toml: facility.usd_per_kwhh: unknown key"),
    # Of a switch, only its vendors and prices are the user's; its radix is the model's.
    ("[network_switch]\nradix = 32\n", "bad.toml: network_switch.radix: only a switch's vendors and prices"),
    ("[cpu.my-cpu]\ncores = 8\n", "bad.toml: cpu.my-cpu.name: required key is missing"),
    ("[price\n", "bad.toml: malformed TOML"),
])
def test_bad_catalog_file_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "bad.toml").write_text(text)
    result = runner.invoke(app, ["evaluate", "-s", "zion", "-w", "zion-2019", "--catalog",
                                 str(tmp_path / "bad.toml")])
    assert result.exit_code == 2 and message in result.output and result.output.count("\n") == 1


def test_user_catalog_adds_a_part(tmp_path: Path) -> None:
    h100 = json.loads(runner.invoke(app, ["list", "accelerators", "--json"]).output)
    entry = next(a for a in h100 if a["key"] == "h100-sxm5-80gb")
    fields = "\n".join(f"{k} = {json.dumps(v)}" for k, v in entry.items()
                       if k not in ("key", "peak_tflops"))
    peaks = "\n".join(f"{k} = {v}" for k, v in entry["peak_tflops"].items())
    (tmp_path / "parts.toml").write_text(f"[accelerator.my-h100]\n{fields}\n"
                                         f"[accelerator.my-h100.peak_tflops]\n{peaks}\n"
                                         "[price]\nmy-h100 = 1000\n")
    listed = json.loads(runner.invoke(app, ["list", "accelerators", "--json", "--catalog",
                                            str(tmp_path / "parts.toml")]).output)
    assert next(a for a in listed if a["key"] == "my-h100")["price_usd"] == 1000
    base = json.loads(runner.invoke(app, ["evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-dcnv2",
                                          "--json"]).output)
    mine = json.loads(runner.invoke(app, [
        "evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-dcnv2", "--json", "--catalog",
        str(tmp_path / "parts.toml"), "--set", "node.accelerator=my-h100"]).output)
    assert mine["throughput_samples_per_s"] == base["throughput_samples_per_s"]
    assert mine["capex_usd"] < base["capex_usd"]


@pytest.mark.parametrize("kind", ["cpus", "nics", "switches", "accelerators"])
def test_list_parts(kind: str) -> None:
    rows = json.loads(runner.invoke(app, ["list", kind, "--json"]).output)
    assert rows and all("key" in r and "source" in r for r in rows)
    assert runner.invoke(app, ["list", kind]).exit_code == 0


def test_own_study_resumes_from_any_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["init", "mine"]).exit_code == 0
    (tmp_path / "mine" / "my-parts.toml").write_text(PARTS)
    first = runner.invoke(app, ["run", "mine/my-study.toml", "--trials", "1", "--no-report", "--quiet"])
    assert first.exit_code == 0 and "stored in mine/my-study.journal" in first.output
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    again = runner.invoke(app, ["run", "../mine/my-study.toml", "--trials", "1", "--no-report", "--quiet"])
    assert again.exit_code == 0, again.output
    assert "2 of 300 trials complete" in again.output
    front = runner.invoke(app, ["pareto", "../mine/my-study.toml", "--csv", "front.csv"])
    assert front.exit_code == 0 and "written to front.csv" in front.output
