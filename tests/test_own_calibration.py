"""A user's own measurements (issue 39, item 5; docs/own-calibration.md): ``dse calibrate --data``
fits only what the rows constrain, beside the user's files and never into the package; the
calibration's ensemble gives intervals; ``--calibration`` reaches every named command; a study
names one and records it by content, so a resume with another is caught as a changed system is."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import re
import tempfile
import tomllib
from pathlib import Path
from types import ModuleType

import optuna
import pytest
from typer.testing import CliRunner, Result

from dse.calibration.ensemble import EnsembleMismatch, ensemble_of, load_ensemble, prediction_interval
from dse.calibration.own import (
    OWN_COLUMNS,
    choose,
    fit_own,
    load_own_measurements,
    prepared,
    prior_of,
)
from dse.cli import app
from dse.errors import DseInputError
from dse.model.evaluate import evaluate
from dse.model.parameters import (
    DEFAULT_RANGES,
    FITTED_PARAMETERS,
    fingerprint,
    load_calibration,
    unpinned,
    write_calibration,
)
from dse.model.system import load_system
from dse.model.workload import load_workload
from dse.records import PACKAGE_DIR

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "own-calibration.md"
runner = CliRunner()
WIDE = {"COLUMNS": "250"}
TRUTH = 0.7
"""The host efficiency the noise-free rows of these tests are made with (the doc's rows use 0.65)."""
SETTINGS = ("", "node.accelerators=4", "workload.global_batch=32768")
"""Three designs of the node that keep tables in host DDR, whose step the host efficiency sets."""


def run(*args: str) -> Result:
    return runner.invoke(app, list(args), env=WIDE)


def one_line_error(result: Result, *needles: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dse: error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert "Traceback" not in result.output
    return lines[0]


def zion(setting: str, host_efficiency: float = TRUTH) -> float:
    """Samples/s of the Zion-like node with ``setting`` at ``host_efficiency`` (packaged values
    otherwise)."""
    over = [tuple(item.split("=")) for item in setting.split(";") if item]
    wl = load_workload("zion-2019", tuple((k.removeprefix("workload."), int(v)) for k, v in over
                                          if k.startswith("workload.")))
    sysm = load_system("zion", tuple((k, int(v)) for k, v in over if not k.startswith("workload.")))
    return evaluate(wl, sysm, load_calibration().with_values(host_efficiency=host_efficiency)
                    ).throughput_samples_per_s


def rows_file(folder: Path, count: int = 3, name: str = "mine.csv") -> Path:
    """``count`` noise-free rows of the Zion-like node made at :data:`TRUTH`."""
    lines = ["id,system,workload,set,samples_per_s,note"]
    lines += [f"z{k},zion,zion-2019,{s},{zion(s)!r},made at {TRUTH}"
              for k, s in enumerate(SETTINGS[:count])]
    path = folder / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``dse calibrate --data mine.csv --ensemble 40`` run on three rows in a folder of its own;
    the folder."""
    folder = tmp_path_factory.mktemp("own")
    result = run("calibrate", "--data", str(rows_file(folder)), "--ensemble", "40")
    assert result.exit_code == 0, result.output
    return folder


# --- the fit ----------------------------------------------------------------------------------


def test_the_fit_recovers_the_host_efficiency_the_rows_were_made_at(fitted: Path) -> None:
    packaged = load_calibration()
    calib = load_calibration(fitted / "mine-calibration.toml")
    assert calib.host_efficiency == pytest.approx(TRUTH, abs=1e-4)
    assert packaged.host_efficiency != pytest.approx(TRUTH, abs=0.05)  # it had to move
    assert calib.own_fitted == ("host_efficiency",)
    assert calib.based_on == packaged.version
    # Everything the rows did not fit keeps the packaged value, bit for bit, but the skew range:
    # the rows were measured on their own data, whose skew is in what they fit.
    for name in FITTED_PARAMETERS:
        if name not in ("host_efficiency", "access_zipf_spread"):
            assert getattr(calib, name) == getattr(packaged, name), name
    assert (calib.access_zipf_spread, packaged.access_zipf_spread) == (0.0, 0.25)
    assert calib.software_factor == packaged.software_factor
    # Pinned by the rows: no longer a range (the file's [ranges] and every draw leave it out).
    assert "host_efficiency" not in unpinned(calib)
    assert "host_efficiency" not in calib.ranges
    assert "host_efficiency = [" not in (fitted / "mine-calibration.toml").read_text()
    assert set(unpinned(calib)) == set(DEFAULT_RANGES) - {"host_efficiency"}
    assert calib.fit["own_points"] == 3 and calib.fit["own_max_abs_pct_error"] < 0.01


def test_the_command_says_what_it_fitted_and_what_it_kept(tmp_path: Path) -> None:
    result = run("calibrate", "--data", str(rows_file(tmp_path)))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert re.search(r"host_efficiency .*your rows: fitted", out), out
    assert re.search(r"fabric_efficiency .*packaged: your rows depend on it .* kept", out), out
    assert "fitted from your rows: host_efficiency (no longer a range: host_efficiency)" in out
    assert "every other parameter keeps calibration" in out
    assert f"written to {tmp_path / 'mine-calibration.toml'}" in out
    assert "no ensemble, so no intervals" in out


def test_one_row_fits_one_parameter_and_rows_that_do_not_read_host_memory_never_fit_it(
        tmp_path: Path) -> None:
    base = load_calibration()
    prior = prior_of(load_ensemble())
    one = fit_own(load_own_measurements(rows_file(tmp_path, 1)), base, "one", prior)
    assert one.fitted == ("host_efficiency",)
    assert one.calibration.host_efficiency == pytest.approx(TRUTH, abs=1e-4)
    kept = {c.name: c.reason for c in one.choices if not c.fitted}
    assert "1 row(s) fit at most 1 parameter(s)" in kept["fabric_efficiency"]
    # Four nodes hold every table in HBM: the row cannot see the host path.
    rate = evaluate(load_workload("zion-2019"), load_system("zion", (("nodes", 4),)), base)
    hbm = tmp_path / "hbm.csv"
    hbm.write_text("id,system,workload,set,samples_per_s\n"
                   f"four,zion,zion-2019,nodes=4,{rate.throughput_samples_per_s * 0.9}\n")
    choices = choose(prepared(load_own_measurements(hbm), base), base, prior)
    host = next(c for c in choices if c.name == "host_efficiency")
    assert not host.fitted and abs(host.elasticity) < 1e-9 and "do not depend" in host.reason


def test_a_parameter_the_published_points_pin_better_is_kept(tmp_path: Path) -> None:
    """Three rows of one node depend on the fabric efficiency (the all-to-all), but pin it far
    less than the 57 published systems do: kept at the packaged value."""
    own = fit_own(load_own_measurements(rows_file(tmp_path)), load_calibration(), "x",
                  prior_of(load_ensemble()))
    fabric = next(c for c in own.choices if c.name == "fabric_efficiency")
    assert not fabric.fitted and fabric.elasticity > 0.05
    assert fabric.pinned > 0.10  # the rows: over 10% of its value; the published points: ~10%
    assert "the published measurements to" in fabric.reason


# --- where it writes ---------------------------------------------------------------------------


def package_digest() -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted((PACKAGE_DIR / "data").glob("*"))
                                   if p.is_file())).hexdigest()


def test_calibrate_data_writes_beside_the_csv_and_never_into_the_package(tmp_path: Path) -> None:
    before = package_digest()
    (tmp_path / "measured").mkdir()
    data = rows_file(tmp_path / "measured", 1)
    result = run("calibrate", "--data", str(data))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "measured" / "mine-calibration.toml").is_file()
    target = PACKAGE_DIR / "data" / "own-test-calibration.toml"
    one_line_error(run("calibrate", "--data", str(data), "--out", str(target)),
                   str(target), "inside the installed dse package")
    assert not target.exists()
    assert package_digest() == before


# --- bad input: one line naming the file and the field, exit 2 -------------------------------


@pytest.mark.parametrize(("text", "needles"), [
    ("id,system,workload,samples_per_s,colour\na,zion,zion-2019,5,red\n",
     ("bad.csv: header", "unknown column 'colour'")),
    ("id,system,samples_per_s\na,zion,5\n", ("bad.csv: header", "missing column 'workload'")),
    ("id,system,workload,samples_per_s\na,zion,zion-2019,5,6\n", ("bad.csv:2", "expected 4 fields")),
    ("id,system,workload,samples_per_s\na,zion,zion-2019,fast\n", ("bad.csv:2: samples_per_s",)),
    ("id,system,workload,samples_per_s\na,zion,zion-2019,-3\n", ("bad.csv:2: samples_per_s",)),
    ("id,system,workload,samples_per_s\na,zionx,zion-2019,5\n", ("bad.csv:2: system", "zionx")),
    ("id,system,workload,samples_per_s\na,zion,nope,5\n", ("bad.csv:2: workload", "nope")),
    ("id,system,workload,set,samples_per_s\na,zion,zion-2019,node.bogus=1,5\n",
     ("bad.csv:2: set", "node.bogus")),
    ("id,system,workload,samples_per_s\na,zion,zion-2019,5\na,zion,zion-2019,6\n",
     ("bad.csv:3: id", "duplicate")),
    ("id,system,workload,set,samples_per_s\na,zion,zion-2019,workload.global_batch=4,5\n",
     ("bad.csv:2: system", "infeasible")),
])
def test_a_bad_csv_is_one_line(tmp_path: Path, text: str, needles: tuple[str, ...]) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(text)
    one_line_error(run("calibrate", "--data", str(bad)), *needles)
    assert not (tmp_path / "bad-calibration.toml").exists()


def test_missing_files_are_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nothere.toml"
    one_line_error(run("calibrate", "--data", str(tmp_path / "nothere.csv")), "nothere.csv")
    for args in (["evaluate", "-s", "zion", "-w", "zion-2019"], ["compare", "zion", "zionex",
                                                                  "-w", "zion-2019"]):
        one_line_error(run(*args, "--calibration", str(missing)), "--calibration", str(missing))
    study = write_study(tmp_path, "calibration = \"nothere.toml\"\n")
    one_line_error(run("run", str(study), "--quiet"), str(study), "calibration", "nothere.toml")
    one_line_error(run("run", str(write_study(tmp_path)), "--quiet", "--calibration", str(missing)),
                   "--calibration", str(missing))


def test_a_calibration_file_that_keeps_a_range_for_a_fitted_parameter_is_refused(
        fitted: Path, tmp_path: Path) -> None:
    text = (fitted / "mine-calibration.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("[ranges]", "[ranges]\nhost_efficiency = [0.25, 0.82]", 1))
    with pytest.raises(DseInputError, match=r"ranges\.host_efficiency: fitted to your own"):
        load_calibration(bad)
    bad.write_text(text.replace('own_fitted = ["host_efficiency"]', 'own_fitted = ["speed"]'))
    with pytest.raises(DseInputError, match="own_fitted: unknown parameter 'speed'"):
        load_calibration(bad)


# --- intervals ---------------------------------------------------------------------------------


def test_evaluate_scores_with_the_calibration_and_its_ensemble(fitted: Path, tmp_path: Path) -> None:
    path = fitted / "mine-calibration.toml"
    data = json.loads(run("evaluate", "-s", "zion", "-w", "zion-2019", "--json",
                          "--calibration", str(path)).stdout)
    assert data["calibration_version"] == load_calibration(path).version
    assert data["throughput_samples_per_s"] == pytest.approx(zion(""), rel=1e-4)
    low, high = data["throughput_interval_samples_per_s"]
    assert low < data["throughput_samples_per_s"] < high
    # host_efficiency is no range any more, nor the skew of the data's popularity: the rows were
    # measured on their data.
    assert data["interval_unpinned_parameters"] == []
    assert data["outside_measured_regime"] == []  # the rows measured this class
    packaged = json.loads(run("evaluate", "-s", "zion", "-w", "zion-2019", "--json").stdout)
    plo, phi = packaged["throughput_interval_samples_per_s"]
    own_width = (high - low) / data["throughput_samples_per_s"]
    assert own_width < 0.7 * (phi - plo) / packaged["throughput_samples_per_s"]
    # Without an ensemble: no interval, and the note says how to build one.
    alone = tmp_path / "alone.toml"
    alone.write_text(path.read_text())
    bare = json.loads(run("evaluate", "-s", "zion", "-w", "zion-2019", "--json",
                          "--calibration", str(alone)).stdout)
    assert bare["throughput_interval_samples_per_s"] is None
    assert "dse calibrate --data" in bare["interval_note"] and "--ensemble" in bare["interval_note"]


def test_the_ensemble_belongs_to_its_calibration(fitted: Path) -> None:
    path = fitted / "mine-calibration.toml"
    calib = load_calibration(path)
    ens = ensemble_of(path, calib)
    assert len(ens.members) == 40 and ens.coverage is None
    assert ens.regime is not None and "host" in ens.regime.placement
    # Every member agrees with the rows: refitted to them, then drawn within the fit's spread.
    values = [m.host_efficiency for m in ens.members]
    assert min(values) < TRUTH < max(values) and max(values) - min(values) < 0.4
    with pytest.raises(EnsembleMismatch):
        ensemble_of(path, calib.with_values(host_efficiency=0.6))
    assert fingerprint(calib) != fingerprint(load_calibration())
    assert fingerprint(load_calibration()) == load_ensemble().calibration_fingerprint


def test_intervals_narrow_as_rows_are_added(tmp_path: Path) -> None:
    """The first row takes the range of host_efficiency away, three rows pin it tighter than one."""
    from dse.calibration.own_ensemble import build_own_ensemble

    base, packaged = load_calibration(), load_ensemble()
    widths = []
    for count in (1, 3):
        own = fit_own(load_own_measurements(rows_file(tmp_path, count, f"r{count}.csv")), base,
                      f"n{count}", prior_of(packaged))
        ens = build_own_ensemble(own, packaged, 40)
        ev = evaluate(load_workload("zion-2019"), load_system("zion"), own.calibration)
        iv = prediction_interval(ev, ens, own.calibration)
        assert iv is not None
        widths.append((iv.spread_high - iv.spread_low) / iv.throughput_samples_per_s)
    iv0 = prediction_interval(evaluate(load_workload("zion-2019"), load_system("zion"), base))
    assert iv0 is not None
    width0 = (iv0.spread_high - iv0.spread_low) / iv0.throughput_samples_per_s
    assert width0 > widths[0] > widths[1] > 0


# --- the named commands -------------------------------------------------------------------------


def test_compare_scores_both_systems_with_the_calibration(fitted: Path) -> None:
    data = json.loads(run("compare", "zion", "zionex", "-w", "zion-2019", "--json",
                          "--calibration", str(fitted / "mine-calibration.toml")).stdout)
    assert data["metrics"]["throughput_samples_per_s"][0] == pytest.approx(zion(""), rel=1e-4)


SPACE = """name = "zion-few"
base_system = "zion"

[parameters."node.hbm_gb"]
type = "ordinal"
choices = [16.0, 32.0]
"""
"""Two designs of the node, both keeping tables in host DDR (their step rests on the fit)."""


def write_study(folder: Path, extra: str = "", name: str = "s") -> Path:
    """A small random study of the Zion node on zion-2019 in ``folder``, its own files beside it."""
    (folder / "zion-few.toml").write_text(SPACE)
    path = folder / f"{name}.toml"
    path.write_text(f'name = "{name}"\nworkload = "zion-2019"\nspace = "zion-few.toml"\n'
                    'objectives = "throughput-vs-capex"\nsampler = "random"\nbudget = 4\nseed = 1\n'
                    + extra)
    return path


def stored_attrs(folder: Path, name: str = "s") -> dict[str, object]:
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(folder / f"{name}.journal")))
    return dict(optuna.load_study(study_name=name, storage=storage).user_attrs)


def trial_rates(folder: Path, name: str = "s") -> dict[int, tuple[int, float]]:
    """Trial number -> (HBM GB per accelerator, samples/s) of every complete trial of the study."""
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(folder / f"{name}.journal")))
    study = optuna.load_study(study_name=name, storage=storage)
    return {t.number: (int(t.user_attrs["design"]["node.hbm_gb"]), t.user_attrs["throughput_samples_per_s"])
            for t in study.get_trials(deepcopy=False) if t.state.name == "COMPLETE"
            and "throughput_samples_per_s" in t.user_attrs}


def assert_scored_at_truth(rates: dict[int, tuple[int, float]]) -> None:
    """Every trial scored with the calibration fitted at :data:`TRUTH` (not the packaged one)."""
    assert rates
    for hbm_gb, rate in rates.values():
        assert rate == pytest.approx(zion(f"node.hbm_gb={hbm_gb}"), rel=1e-4)
        assert rate != pytest.approx(zion(f"node.hbm_gb={hbm_gb}", 0.5), rel=1e-2)


def test_a_study_naming_a_calibration_scores_with_it_and_records_it(fitted: Path, tmp_path: Path) -> None:
    calib_file = tmp_path / "mine-calibration.toml"
    calib_file.write_text((fitted / "mine-calibration.toml").read_text())
    (tmp_path / "mine-calibration_ensemble.json").write_text(
        (fitted / "mine-calibration_ensemble.json").read_text())
    study = write_study(tmp_path, 'calibration = "mine-calibration.toml"\n')
    result = run("run", str(study), "--quiet", "--no-report")
    assert result.exit_code == 0, result.output
    attrs = stored_attrs(tmp_path)
    assert attrs["dse:calibration_version"] == load_calibration(calib_file).version
    recorded = json.loads(str(attrs["dse:contents"]))["calibration"]
    assert recorded["path"] == str(calib_file.resolve())
    assert recorded["sha256"] == hashlib.sha256(json.dumps(
        tomllib.loads(calib_file.read_text()), sort_keys=True).encode()).hexdigest()
    assert_scored_at_truth(trial_rates(tmp_path))
    # pareto and report read the calibration the study recorded; --calibration is checked.
    assert run("pareto", str(study), "--calibration", str(calib_file)).exit_code == 0
    one_line_error(run("pareto", str(study), "--calibration",
                       str(ROOT / "dse" / "data" / "calibration.toml")),
                   "--calibration", "the study was scored with")
    robust = run("pareto", str(study), "--robust", "--json")
    assert robust.exit_code == 0, robust.output
    assert json.loads(robust.stdout)["calibration_version"] == load_calibration(calib_file).version
    report = run("report", str(study), "--calibration", str(calib_file))
    assert report.exit_code == 0, report.output
    # A refit calibration (another host efficiency) is another file: the resume is refused.
    calib_file.write_text(calib_file.read_text().replace(
        f"host_efficiency = {load_calibration(calib_file).host_efficiency!r}", "host_efficiency = 0.6"))
    line = one_line_error(run("run", str(study), "--quiet", "--no-report"), "s: calibration",
                          "trials scored by two calibrations", "--force")
    assert str(calib_file.resolve()) in line
    forced = run("run", str(study), "--quiet", "--no-report", "--force", "--trials", "1")
    assert forced.exit_code == 0, forced.output
    changes = stored_attrs(tmp_path)["dse:changes"]
    assert isinstance(changes, list) and any("calibration" in c["changed"] for c in changes)


def test_run_and_worker_take_calibration_and_a_resume_without_it_is_refused(
        fitted: Path, tmp_path: Path) -> None:
    calib_file = fitted / "mine-calibration.toml"
    study = write_study(tmp_path)
    created = run("run", str(study), "--quiet", "--no-report", "--trials", "0",
                  "--calibration", str(calib_file))
    assert created.exit_code == 0, created.output
    worked = run("worker", str(study), "--trials", "2", "--calibration", str(calib_file))
    assert worked.exit_code == 0, worked.output
    assert stored_attrs(tmp_path)["dse:calibration_version"] == load_calibration(calib_file).version
    rates = trial_rates(tmp_path)
    assert_scored_at_truth(rates)
    # The same study without it would be scored by the packaged calibration: refused.
    one_line_error(run("worker", str(study), "--trials", "1"), "calibration",
                   "the packaged calibration", "trials scored by two calibrations")
    # compare --study rebuilds two trials with the calibration the study recorded, or the one given.
    first, second = sorted(rates)[:2]
    args = ["compare", str(first), str(second), "--study", str(study), "--json"]
    recorded = json.loads(run(*args).stdout)["metrics"]["throughput_samples_per_s"]
    assert recorded == pytest.approx([rates[first][1], rates[second][1]], rel=1e-9)
    packaged = ROOT / "dse" / "data" / "calibration.toml"
    other = json.loads(run(*args, "--calibration", str(packaged)).stdout)
    hbm = [rates[n][0] for n in (first, second)]
    assert other["metrics"]["throughput_samples_per_s"] == pytest.approx(
        [zion(f"node.hbm_gb={h}", load_calibration().host_efficiency) for h in hbm], rel=1e-4)


def test_a_study_scored_with_the_packaged_calibration_refuses_one_added(tmp_path: Path) -> None:
    study = write_study(tmp_path)
    assert run("run", str(study), "--quiet", "--no-report", "--trials", "1").exit_code == 0
    own = tmp_path / "own.toml"
    write_calibration(dataclasses.replace(load_calibration(), version="own-test", host_efficiency=0.7),
                      own)
    one_line_error(run("run", str(study), "--quiet", "--no-report", "--calibration", str(own)),
                   "calibration resolves to", "not to the packaged calibration")


# --- the worked example ---------------------------------------------------------------------------


def widths_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "own_calibration_widths", ROOT / "benchmarks" / "own_calibration_widths.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_worked_example_is_the_script_s_first_three_rows_and_fits_as_the_page_says(
        tmp_path: Path) -> None:
    text = DOC.read_text()
    block = re.search(r"```csv\n(.*?)```", text, re.S)
    assert block is not None
    script = widths_script()
    assert block.group(1) == script.rows_csv(3)
    assert block.group(1).splitlines()[0].split(",") == [c for c in OWN_COLUMNS]
    data = tmp_path / "zion-node.csv"
    data.write_text(block.group(1))
    result = run("calibrate", "--data", str(data))
    assert result.exit_code == 0, result.output
    calib = load_calibration(tmp_path / "zion-node-calibration.toml")
    assert f"`host_efficiency` is {calib.host_efficiency:.3f}" in text
    assert calib.own_fitted == ("host_efficiency",)
    assert f"host_efficiency         {calib.host_efficiency:.4g}" in text


def test_the_page_s_widths_are_what_the_script_measures() -> None:
    script = widths_script()
    text = DOC.read_text()
    with tempfile.TemporaryDirectory() as tmp:
        for count in (0, 1, 3, 10):
            w = script.widths(count, Path(tmp))
            cells = [f"{p / 1e3:,.0f} k, {lo:.2f}-{hi:.2f}, {width:.0f}% ({spread:.0f}%)"
                     for p, lo, hi, width, spread in (w["measured"], w["unmeasured"])]
            rows = "none (packaged)" if not count else str(count)
            line = f"| {rows} | {w['fitted']} | {w['host_efficiency']:.3f} | {cells[0]} | {cells[1]} |"
            assert line in text, line


def test_init_copies_a_study_s_own_calibration_and_its_ensemble(fitted: Path, tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    for name in ("mine-calibration.toml", "mine-calibration_ensemble.json"):
        (source / name).write_text((fitted / name).read_text())
    study = write_study(source, 'calibration = "mine-calibration.toml"\n')
    copy = tmp_path / "copy"
    result = run("init", str(copy), "--from", str(study))
    assert result.exit_code == 0, result.output
    assert 'calibration = "my-calibration.toml"' in (copy / "my-study.toml").read_text()
    assert (copy / "my-calibration.toml").read_text() == (source / "mine-calibration.toml").read_text()
    assert (copy / "my-calibration_ensemble.json").is_file()
    ran = run("run", str(copy / "my-study.toml"), "--quiet", "--no-report", "--trials", "1")
    assert ran.exit_code == 0, ran.output
    attrs = stored_attrs(copy, "my-study")
    assert attrs["dse:calibration_version"] == load_calibration(fitted / "mine-calibration.toml").version
