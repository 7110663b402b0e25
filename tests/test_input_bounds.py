"""Bounded input (issue 30, item 5): every file dse reads is a regular file of at most a named size,
read as UTF-8 text, and every count past a named limit is refused in one line, fast: with little
work (calls and memory counted, :mod:`work`).

Before: ``--workload /dev/zero`` read to a ``MemoryError`` at 7.5 GB, a named pipe blocked forever,
a workload of 10**6 tables ran one ``dse evaluate`` for over 10 minutes, and a space with an
ordinal of 10**5 choices took 70 s before ``dse status`` printed a line. The limits live in
:mod:`dse.limits`; benchmarks/bench_limits.py times a workload at the table limit.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result
from work import refusal, work_of

from dse import limits
from dse.calibration.ensemble import EnsembleUnavailable, read_ensemble
from dse.calibration.measurements import load_measurements
from dse.cli import app
from dse.errors import DseInputError
from dse.model import Memo, evaluate
from dse.model.parameters import load_calibration
from dse.model.placement import plan_placement
from dse.model.system import load_system, load_system_spec
from dse.model.user_catalog import load_user_catalog
from dse.model.workload import load_workload
from dse.reading import read_bytes, read_text
from dse.search.study.objective_sets import load_objectives
from dse.search.study.search_space import load_space, space_from_mapping
from dse.search.study.study_file import load_study_spec

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()

LOADERS: dict[str, Callable[[str], Any]] = {
    "workload": load_workload,
    "system": load_system_spec,
    "space": load_space,
    "objectives": load_objectives,
    "study": load_study_spec,
    "catalog": lambda p: load_user_catalog(Path(p)),
    "measurements": lambda p: load_measurements(Path(p)),
}
"""Every kind of file a user names, by its library loader."""


def _within(seconds: float, call: Callable[[], Any]) -> BaseException | None:
    """Run ``call`` in a daemon thread; the exception it raised, or fail if it is still running
    after ``seconds`` (a blocked ``open`` of a pipe would otherwise hang the test run)."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    assert outcome, f"still running after {seconds} s"
    return outcome[0]


def _one_line(exc: BaseException | None, *words: str) -> DseInputError:
    assert isinstance(exc, DseInputError), repr(exc)
    assert "\n" not in str(exc)
    for word in words:
        assert word in str(exc), str(exc)
    return exc


@pytest.mark.parametrize("kind", list(LOADERS))
def test_a_named_pipe_is_refused_without_blocking(tmp_path: Path, kind: str) -> None:
    fifo = tmp_path / f"{kind}.toml"
    os.mkfifo(fifo)
    exc = _within(10.0, lambda: LOADERS[kind](str(fifo)))
    _one_line(exc, "named pipe", "not a regular file")


@pytest.mark.parametrize("kind", list(LOADERS))
def test_a_device_is_refused_before_reading(kind: str) -> None:
    """/dev/null (reading it is harmless, so a regression shows as a wrong message, not a hang)."""
    exc = _within(10.0, lambda: LOADERS[kind]("/dev/null"))
    _one_line(exc, "/dev/null", "character device")


def test_the_ensemble_json_goes_through_the_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "ensemble.json"
    os.mkfifo(fifo)
    exc = _within(10.0, lambda: read_ensemble(fifo))
    assert isinstance(exc, EnsembleUnavailable)
    _one_line(exc, "named pipe")


def _limited_child() -> None:
    """In the child: 2 GB of address space at most, so a regression ends in a MemoryError
    instead of taking the machine's memory."""
    resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))


@pytest.mark.parametrize("args", [
    ["evaluate", "-s", "dgx-h100", "-w", "/dev/zero"],
    ["evaluate", "-s", "/dev/urandom", "-w", "dlrm-benchmark"],
    ["evaluate", "-s", "dgx-h100", "-w", "dlrm-benchmark", "--catalog", "/dev/zero"],
])
def test_cli_refuses_endless_devices_in_one_line(args: list[str]) -> None:
    """Refused on the open descriptor before a byte is read (the line says what the file is;
    reading /dev/zero to the size limit would say "larger than"); the timeout guards a hang."""
    result = subprocess.run([sys.executable, "-m", "dse", *args], capture_output=True, text=True,
                            timeout=120, preexec_fn=_limited_child, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "character device" in lines[0], result.stderr[-2000:]


def test_a_study_whose_workload_is_a_device_is_refused(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text('name = "s"\nworkload = "/dev/null"\nspace = "zion-node"\n'
                     'objectives = "throughput-vs-capex"\nbudget = 10\nseed = 1\n')
    exc = _within(10.0, lambda: load_study_spec(str(study)))
    err = _one_line(exc, "character device")
    assert err.key == "workload" and err.source == str(study)


def test_spec_size_limit_is_exact(tmp_path: Path) -> None:
    at = tmp_path / "at.toml"
    at.write_bytes(b"#" * (limits.MAX_SPEC_FILE_BYTES - 1) + b"\n")
    assert len(read_text(at, limits.MAX_SPEC_FILE_BYTES)) == limits.MAX_SPEC_FILE_BYTES
    over = tmp_path / "over.toml"
    over.write_bytes(b"#" * limits.MAX_SPEC_FILE_BYTES + b"\n")
    _one_line(refusal(lambda: load_workload(str(over))), str(over), "larger than 4 MiB")


def test_every_shipped_file_is_within_its_limit() -> None:
    """The limits leave every shipped spec and data file far inside (the reasons in
    dse.limits quote these sizes)."""
    specs = [p for p in ROOT.glob("**/*.toml") if ".git" not in p.parts and "build" not in p.parts]
    assert max(p.stat().st_size for p in specs) * 20 < limits.MAX_SPEC_FILE_BYTES
    data = [*(ROOT / "dse" / "data").glob("*.csv"), *(ROOT / "dse" / "data").glob("*.json")]
    assert max(p.stat().st_size for p in data) * 100 < limits.MAX_DATA_FILE_BYTES


@pytest.mark.parametrize(("content", "words"), [
    (b'name = "x"\n\0\0\0', ("NUL byte at offset 11",)),
    (b'name = "\xff\xfe"\n', ("not UTF-8", "byte 8")),
])
def test_binary_content_is_refused_as_such(tmp_path: Path, content: bytes, words: tuple[str, ...]) -> None:
    path = tmp_path / "bin.toml"
    path.write_bytes(content)
    with pytest.raises(DseInputError) as info:
        load_system_spec(str(path))
    _one_line(info.value, *words)


def test_read_bytes_reads_a_regular_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(range(256)) * 4)
    assert read_bytes(path, 1024) == bytes(range(256)) * 4
    with pytest.raises(DseInputError, match="larger than 1,023 bytes"):
        read_bytes(path, 1023)
    with pytest.raises(DseInputError, match="file not found"):
        read_bytes(tmp_path / "missing", 1024)


def _tables_file(tmp_path: Path, count: int) -> Path:
    path = tmp_path / f"tables-{count}.toml"
    rows = ", ".join(["1000000"] * count)
    path.write_text(f'name = "t"\ndense_features = 13\nbottom_mlp = [64]\ntop_mlp = [64, 1]\n'
                    'interaction = "dcnv2"\ndcn_layers = 1\ndcn_rank = 8\nglobal_batch = 4096\n'
                    'precision = "fp32"\nembedding_dtype = "fp32"\n'
                    'embedding_optimizer = "sgd"\ndense_optimizer = "sgd"\n'
                    f"[tables]\nrows = [{rows}]\ndim = 16\npooling = 1.0\n")
    return path


def test_tables_past_the_limit_are_refused_naming_file_and_field(tmp_path: Path) -> None:
    path = _tables_file(tmp_path, limits.MAX_TABLES + 1)
    invoked: list[Result] = []
    refusal(lambda: invoked.append(runner.invoke(app, ["evaluate", "-s", "dgx-h100", "-w", str(path)])))
    result = invoked[0]
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert str(path) in lines[0] and "tables.rows" in lines[0]
    assert f"has {limits.MAX_TABLES + 1:,} tables; at most {limits.MAX_TABLES:,}" in lines[0]


def test_tables_at_the_limit_load(tmp_path: Path) -> None:
    workload = load_workload(str(_tables_file(tmp_path, limits.MAX_TABLES)))
    assert len(workload.tables) == limits.MAX_TABLES
    assert workload.embedding_params() == limits.MAX_TABLES * 1_000_000 * 16
    synthetic = load_workload("synthetic-production-a", (("synthetic.count", limits.MAX_TABLES),))
    assert len(synthetic.tables) == limits.MAX_TABLES
    with pytest.raises(DseInputError) as info:
        load_workload("synthetic-production-a", (("synthetic.count", limits.MAX_TABLES + 1),))
    assert info.value.key == "synthetic.count"


def _ordinal_space(count: int) -> dict[str, Any]:
    return {"name": "x", "base_system": "dgx-h100", "parameters": {
        "node.nic_gbit_s": {"type": "ordinal", "choices": list(range(1, count + 1))}}}


def test_choices_past_the_limit_are_refused_fast() -> None:
    """The refusal looks at each choice it was given once (4 calls each, measured), where the
    space at the limit is built with 330 calls a choice: at most 10 a choice is no build."""
    choices = 100_000
    space = _ordinal_space(choices)
    work = work_of(lambda: space_from_mapping(space, "space.toml"), calls=10 * choices)
    err = _one_line(work.error, "100,000 choices", f"at most {limits.MAX_CHOICES:,}")
    assert err.key == "parameters.node.nic_gbit_s.choices"
    with pytest.raises(DseInputError):
        space_from_mapping(_ordinal_space(limits.MAX_CHOICES + 1), "space.toml")


def test_choices_at_the_limit_load() -> None:
    space = space_from_mapping(_ordinal_space(limits.MAX_CHOICES), "space.toml")
    assert space.size() == limits.MAX_CHOICES


@pytest.mark.parametrize(("param", "fields", "key", "words"), [
    ("constraints.year", {"low": 2000, "high": 10**15}, "parameters.constraints.year",
     ("999,999,999,998,001 values", f"at most {limits.MAX_GRID_VALUES:,}")),
    ("node.ddr_gb", {"low": 1, "high": 1_000_000, "step": 0.5}, "parameters.node.ddr_gb.step",
     ("whole step", "0.5")),
])
def test_int_grids_are_bounded(param: str, fields: dict[str, Any], key: str,
                               words: tuple[str, ...]) -> None:
    data = {"name": "x", "base_system": "dgx-h100",
            "parameters": {param: {"type": "int", **fields}}}
    assert _one_line(refusal(lambda: space_from_mapping(data, "space.toml")), *words).key == key


def test_an_int_grid_at_the_limit_loads() -> None:
    data = {"name": "x", "base_system": "dgx-h100", "parameters": {
        "node.ddr_gb": {"type": "int", "low": 1, "high": limits.MAX_GRID_VALUES}}}
    assert space_from_mapping(data, "space.toml").size() == limits.MAX_GRID_VALUES


def test_the_placement_memo_is_bounded_and_exact() -> None:
    """A sweep's memo drops its oldest plans beyond its group budget (a study of a 10,000-table
    workload otherwise held 1.7 GB of plans) and scores every design as evaluate alone does."""
    workload = load_workload("mlperf-dlrm-dcnv2")
    calibration = load_calibration()
    systems = [load_system("dgx-h100", (("nodes", n),)) for n in (1, 2, 4, 8, 1)]
    groups = [len(plan_placement(workload, s).group_shards) for s in systems]
    budget = max(groups) + 1
    memo = Memo(workload, calibration, max_groups=budget)
    for system in systems:
        assert evaluate(workload, system, calibration, memo=memo) == evaluate(workload, system,
                                                                              calibration)
        assert sum(len(p.group_shards) for p in memo.plans.values()) <= budget
        assert {k[0] for k in memo.loads} <= set(memo.plans)
    assert 1 <= len(memo.plans) < len(systems) - 1
    unbounded = Memo(workload, calibration)
    for system in systems:
        evaluate(workload, system, calibration, memo=unbounded)
    assert len(unbounded.plans) == len(systems) - 1


def _objectives_file(path: Path, objectives: int, constraints: int) -> Path:
    metrics = ["throughput_samples_per_s", "capex_usd", "power_w", "tco_usd_per_year", "step_time_s",
               "energy_per_sample_j"]
    path.write_text('name = "o"\n'
                    + "".join(f'[[objectives]]\nmetric = "{m}"\ndirection = "minimize"\n'
                              for m in metrics[:objectives])
                    + '[[constraints]]\nmetric = "power_w"\nmax = 1e9\n' * constraints)
    return path


@pytest.mark.parametrize(("section", "over"), [
    ("objectives", (limits.MAX_OBJECTIVES + 1, 0)),
    ("constraints", (1, limits.MAX_CONSTRAINTS + 1)),
])
def test_objectives_and_constraints_are_bounded(tmp_path: Path, section: str,
                                                over: tuple[int, int]) -> None:
    path = _objectives_file(tmp_path / "o.toml", *over)
    with pytest.raises(DseInputError) as info:
        load_objectives(str(path))
    err = _one_line(info.value, f"has {max(over)} {section}")
    assert err.key == section and err.source == str(path)
    at = (over[0] - 1, 0) if section == "objectives" else (1, over[1] - 1)
    loaded = load_objectives(str(_objectives_file(tmp_path / "at.toml", *at)))
    assert len(getattr(loaded, section)) == max(at)


def test_tables_times_accelerators_is_bounded(tmp_path: Path) -> None:
    """Placement time grows with tables times accelerators: a design past the product is refused
    by evaluate, and a study whose space reaches it when its file is loaded."""
    workload = load_workload(str(_tables_file(tmp_path, limits.MAX_TABLES)))
    nodes = limits.MAX_TABLE_ACCELERATORS // (limits.MAX_TABLES * 8)
    at = load_system("dgx-h100", (("nodes", nodes),))
    assert at.accelerators_total * limits.MAX_TABLES == limits.MAX_TABLE_ACCELERATORS
    past = load_system("dgx-h100", (("nodes", nodes + 1),))
    _one_line(refusal(lambda: evaluate(workload, past)), "10,000 tables on 100,008 accelerators",
              "at most 1,000,000,000")
    (tmp_path / "space.toml").write_text('name = "big"\nbase_system = "dgx-h100"\n'
                                         f'[parameters.nodes]\ntype = "int"\nlow = 1\nhigh = {nodes + 1}\n')
    study = tmp_path / "s.toml"
    study.write_text(f'name = "s"\nworkload = "{tmp_path / "tables-10000.toml"}"\n'
                     'space = "space.toml"\nobjectives = "throughput-vs-capex"\nbudget = 10\nseed = 1\n')
    with pytest.raises(DseInputError) as info:
        load_study_spec(str(study))
    assert _one_line(info.value, "table-accelerators").key == "space"
    # Spaces are cached by path: the space at the limit is another file.
    (tmp_path / "space-at.toml").write_text((tmp_path / "space.toml").read_text().replace(
        f"high = {nodes + 1}", f"high = {nodes}"))
    study.write_text(study.read_text().replace("space.toml", "space-at.toml"))
    assert load_study_spec(str(study)).name == "s"


# --- names and texts (issue 42, item 4) --------------------------------------------------------


def _named(tmp_path: Path, kind: str, key: str, value: str) -> Path:
    """A copy of a shipped ``kind`` preset with ``key = value`` in place of its first line of that
    key."""
    shipped = {"system": ROOT / "dse" / "data" / "systems" / "dgx-h100.toml",
               "workload": ROOT / "dse" / "data" / "workloads" / "mlperf-dlrm-v1.toml"}[kind]
    lines = shipped.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"{key} ="))
    lines[at] = f'{key} = "{value}"'
    path = tmp_path / f"{kind}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(("kind", "key", "size", "limit"), [
    ("system", "name", 100_000, limits.MAX_NAME_CHARS),  # dse evaluate's text ran past 120 s
    ("workload", "name", 3 * 2**20, limits.MAX_NAME_CHARS),
    ("system", "description", 10_000, limits.MAX_TEXT_CHARS),
])
def test_names_and_texts_past_their_limit_are_refused_fast(tmp_path: Path, kind: str, key: str,
                                                             size: int, limit: int) -> None:
    path = _named(tmp_path, kind, key, "x" * size)
    option = "--system" if kind == "system" else "--workload"
    other = ["--workload", "mlperf-dlrm-v1"] if kind == "system" else ["--system", "dgx-h100"]
    # Refused before the name reaches the file system or the highlighter: a refusal's work.
    counted = work_of(lambda: runner.invoke(app, ["evaluate", option, str(path), *other]))
    assert counted.error is None and counted.calls < 50_000
    result = runner.invoke(app, ["evaluate", option, str(path), *other])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    assert result.stderr.strip() == (f"dse: error: {path}: {key}: must be at most {limit:,} "
                                     f"characters ({'a name' if key == 'name' else 'a text'}), got {size:,}")
    at = _named(tmp_path, kind, key, "x" * limit)  # the limit itself loads
    loaded = load_system_spec(str(at)) if kind == "system" else load_workload(str(at))
    assert len(getattr(loaded, key)) == limit


def test_a_table_key_past_the_name_limit_is_refused(tmp_path: Path) -> None:
    catalog = tmp_path / "c.toml"
    catalog.write_text(f'[accelerator."{"k" * (limits.MAX_NAME_CHARS + 1)}"]\nname = "x"\n')
    with pytest.raises(DseInputError) as info:
        load_user_catalog(catalog)
    _one_line(info.value, f"a key must be at most {limits.MAX_NAME_CHARS} characters")


@pytest.mark.parametrize("where", ["--system", "--workload", "study", "study file", "space file"])
def test_names_no_file_can_have_are_one_line(tmp_path: Path, where: str) -> None:
    """A name over 255 bytes gave ``OSError: [Errno 36] File name too long`` from the file
    lookup, on the command line and as a study's ``workload`` or a space's ``base_system``."""
    long = "a" * 300
    if where == "--system":
        args = ["evaluate", "--system", long, "--workload", "mlperf-dlrm-v1"]
    elif where == "--workload":
        args = ["evaluate", "--system", "dgx-h100", "--workload", long]
    elif where == "study":
        args = ["status", long]
    else:
        space = tmp_path / "space.toml"
        space.write_text(f'name = "s"\nbase_system = "{long if where == "space file" else "dgx-h100"}"\n'
                         '[parameters.nodes]\ntype = "int"\nlow = 1\nhigh = 2\n')
        workload = long if where == "study file" else "mlperf-dlrm-v1"
        (tmp_path / "s.toml").write_text(f'name = "s"\nworkload = "{workload}"\nspace = "space.toml"\n'
                                         'objectives = "throughput-vs-capex"\nbudget = 3\n')
        args = ["status", str(tmp_path / "s.toml")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.exception
    line = result.stderr.strip()
    assert "\n" not in line and "a file's name is at most 255 bytes" in line, line
    assert long not in line  # the name is cut in the message, not printed back whole


def test_a_recorded_objective_set_name_no_file_can_have_is_passed_over() -> None:
    """A journal recording an objective set named by 300 characters gave ``OSError: [Errno 36]``
    from the packaged-preset lookup (dse report, pareto and plot): the name is refused in one line
    before the file system is asked, and the study file's own set is used."""
    import json

    import optuna

    from dse.search.results import objective_set_of
    from dse.search.study.attribute_keys import OBJECTIVES_KEY

    spec = load_study_spec("zion-2020")
    own = load_objectives(spec.objectives)
    study = optuna.create_study(directions=["maximize", "minimize"])
    study.set_user_attr(OBJECTIVES_KEY, json.dumps({**own.to_dict(), "name": "x" * 300}))
    with pytest.raises(DseInputError) as info:
        objective_set_of(study, spec)
    _one_line(info.value, "")
    study.set_user_attr(OBJECTIVES_KEY, json.dumps(own.to_dict()))
    assert objective_set_of(study, spec).to_dict() == own.to_dict()


def test_a_huge_value_is_not_repeated_in_its_error() -> None:
    """``--set nodes=<100,000 digits>`` repeated every digit in its error."""
    result = runner.invoke(app, ["evaluate", "--system", "dgx-h100", "--workload", "mlperf-dlrm-v1",
                                 "--set", "nodes=" + "1" * 100_000])
    assert result.exit_code == 2
    assert result.stderr.strip().endswith("expected an integer, got '" + "1" * 60
                                          + "'... (a text of 100,000 characters)")
    assert len(result.stderr) < 300


def test_user_text_is_printed_as_written_without_markup(tmp_path: Path) -> None:
    """Text output never reads a user's string as Rich markup (nor highlights it): a system named
    like markup prints as written."""
    name = "[red]x[/red] [bold]1e9[/]"
    path = _named(tmp_path, "system", "name", name)
    result = runner.invoke(app, ["evaluate", "--system", str(path), "--workload", "mlperf-dlrm-v1"],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith(f"mlperf-dlrm-v1 on {name}: 1 node(s)")


# --- catalog figures and constraints (issue 42, item 7) ----------------------------------------


@pytest.mark.parametrize(("line", "key", "words"), [
    ("[accelerator.h100-sxm5-80gb]\ntdp_w = 1e308", "accelerator.h100-sxm5-80gb.tdp_w",
     "must be at most 10000000.0, got 1e+308"),  # printed "inf W", JSON null, a blank in status
    ("[accelerator.h100-sxm5-80gb]\nhbm_gb_s = 1e300", "accelerator.h100-sxm5-80gb.hbm_gb_s",
     f"must be at most {limits.MAX_BANDWIDTH_GB_S}"),
    ("[accelerator.h100-sxm5-80gb.peak_tflops]\nbf16 = 1e300",
     "accelerator.h100-sxm5-80gb.peak_tflops.bf16", f"must be at most {limits.MAX_TFLOPS}"),
    ("[facility]\npue = 1e308", "facility.pue", f"must be at most {limits.MAX_PUE}"),
    ("[cxl.samsung-cmm-d-128gb]\nadded_latency_ns = 1e12", "cxl.samsung-cmm-d-128gb.added_latency_ns",
     f"must be at most {limits.MAX_LATENCY_S * 1e9}"),
    ("[accelerator.h100-sxm5-80gb]\nscaleup_links = 1000000000000000000000",
     "accelerator.h100-sxm5-80gb.scaleup_links", "must be at most 1e+18 (dse.limits.MAX_QUANTITY)"),
])
def test_catalog_figures_are_bounded_like_system_values(tmp_path: Path, line: str, key: str,
                                                       words: str) -> None:
    catalog = tmp_path / "c.toml"
    catalog.write_text(line + "\n")
    result = runner.invoke(app, ["evaluate", "--system", "dgx-h100", "--workload", "mlperf-dlrm-v1",
                                 "--catalog", str(catalog), "--json"])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
    assert result.stderr.startswith(f"dse: error: {catalog}: {key}: {words}"), result.stderr
    assert "\n" not in result.stderr.strip()


def test_catalog_figures_at_their_limit_stay_finite(tmp_path: Path) -> None:
    """At the limit a figure is absurd but every product the model forms stays finite."""
    catalog = tmp_path / "c.toml"
    catalog.write_text(f"[accelerator.h100-sxm5-80gb]\ntdp_w = {limits.MAX_RACK_W}\n")
    result = runner.invoke(app, ["evaluate", "--system", "dgx-h100", "--workload", "mlperf-dlrm-v1",
                                 "--catalog", str(catalog), "--json"])
    assert result.exit_code == 0, result.output
    assert "Infinity" not in result.stdout and "null" not in result.stdout.split('"power_w"')[1][:20]


@pytest.mark.parametrize(("bounds", "words"), [
    ("min = 10\nmax = 1", "power_per_node_w: min 10 is above max 1"),
    ("max = -1", "power_per_node_w: max -1 is below 0, and every metric is at least 0"),
])
def test_an_impossible_constraint_is_refused_before_any_trial(tmp_path: Path, bounds: str,
                                                             words: str) -> None:
    """``min = 10, max = 1`` ran a study with 0 feasible designs and no warning."""
    (tmp_path / "o.toml").write_text(
        'name = "o"\n[[objectives]]\nmetric = "throughput_samples_per_s"\ndirection = "maximize"\n'
        '[[objectives]]\nmetric = "capex_usd"\ndirection = "minimize"\n'
        f'[[constraints]]\nmetric = "power_per_node_w"\n{bounds}\n')
    study = tmp_path / "s.toml"
    study.write_text('name = "s"\nworkload = "mlperf-dlrm-v1"\nspace = "scale-out"\n'
                     'objectives = "o.toml"\nbudget = 5\n')
    result = runner.invoke(app, ["run", str(study), "--no-report"])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
    assert words in result.stderr and "refused before any trial" in result.stderr
    assert "\n" not in result.stderr.strip()
    assert not (tmp_path / "s.journal").exists()
