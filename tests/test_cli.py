"""The ``dse`` command line: ``evaluate`` (readable and JSON), ``--set`` overrides, system files,
``list``, and one-line errors with exit code 2 (docs/design.md, section 7).

Most tests drive ``dse.cli.app`` through typer's CliRunner (click >= 8.2 keeps ``result.stderr``
apart from ``result.stdout``); one runs the installed console script in a subprocess.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from dse.cli import app
from dse.model.catalog import load_catalog
from dse.model.system import system_presets
from dse.model.workload import workload_presets

WIDE = {"COLUMNS": "250"}
"""Rich wraps tables to the terminal; a wide one keeps names whole (see the 80-column test)."""

runner = CliRunner()

REQUIRED_KEYS = (
    "throughput_samples_per_s",
    "step_time_s",
    "feasible",
    "bottleneck",
    "breakdown_s",
    "capex_usd",
    "power_w",
)


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(app, list(args), env=env)


def evaluate_json(*extra: str) -> dict[str, object]:
    result = run("evaluate", "--system", "dgx-a100", "--workload", "mlperf-dlrm-v1", "--json",
                 *extra)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert isinstance(data, dict)
    return data


def test_runner_separates_stderr() -> None:
    # The error tests below read result.stderr apart from result.stdout (typer's own runner since
    # typer 0.2x dropped click; click's runner before 8.2 mixed them).
    result = runner.invoke(app, ["list", "nonsense"])
    assert result.exit_code == 2
    assert result.stdout == "" and "nonsense" in result.stderr


# --- evaluate -------------------------------------------------------------------------------------


def test_evaluate_json_has_the_contract_keys() -> None:
    data = evaluate_json()
    for key in REQUIRED_KEYS:
        assert key in data, key
    assert data["feasible"] is True
    thr, step = data["throughput_samples_per_s"], data["step_time_s"]
    assert isinstance(thr, float) and isinstance(step, float)
    assert thr > 0 and step > 0
    assert thr == pytest.approx(55_296 / step, rel=1e-12)  # global batch 55,296
    breakdown = data["breakdown_s"]
    assert isinstance(breakdown, dict) and breakdown
    assert all(isinstance(v, float) and v >= 0 for v in breakdown.values())
    assert sum(breakdown.values()) == pytest.approx(step, rel=1e-9)
    assert data["bottleneck"] in breakdown
    assert data["bottleneck"] == max(breakdown, key=breakdown.__getitem__)
    assert isinstance(data["capex_usd"], float) and data["capex_usd"] > 0
    assert isinstance(data["power_w"], float) and data["power_w"] > 0


def test_evaluate_design_md_example_changes_the_result() -> None:
    base = evaluate_json()
    changed = evaluate_json(
        "--set", "node.accelerators=4", "--set", "nodes=16",
        "--set", "workload.global_batch=135168", "--set", "workload.precision=amp",
    )
    for key in REQUIRED_KEYS:
        assert key in changed
    # 16 nodes x 4 GPUs = 64 accelerators: the cluster and its price change.
    assert changed["accelerators"] == 64 and changed["nodes"] == 16
    assert changed["capex_usd"] != base["capex_usd"]
    assert changed["throughput_samples_per_s"] != base["throughput_samples_per_s"]
    step = changed["step_time_s"]
    assert isinstance(step, float)
    assert changed["throughput_samples_per_s"] == pytest.approx(135_168 / step, rel=1e-12)
    # 16 nodes: part of the all-to-all now crosses the network.
    breakdown = changed["breakdown_s"]
    assert isinstance(breakdown, dict)
    assert changed["stages_s"]["a2a_network"] > 0  # type: ignore[index]
    assert sum(breakdown.values()) == pytest.approx(step, rel=1e-9)


def test_evaluate_readable_output() -> None:
    result = run("evaluate", "--system", "dgx-a100", "--workload", "mlperf-dlrm-v1", env=WIDE)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "bottleneck" in out
    assert "mlperf-dlrm-v1" in out
    for stage in ("dense_compute", "embedding_memory", "alltoall_fabric"):
        assert stage in out
    assert result.stderr == ""


def test_evaluate_infeasible_design_is_reported_not_an_error() -> None:
    result = run("evaluate", "--system", "dgx-a100", "--workload", "synthetic-production-12t",
                 "--set", "node.ddr_gb=64", env=WIDE)
    assert result.exit_code == 0, result.output
    assert "INFEASIBLE" in result.stdout
    data = json.loads(run("evaluate", "--system", "dgx-a100", "--workload",
                          "synthetic-production-12t", "--set", "node.ddr_gb=64", "--json").stdout)
    assert data["feasible"] is False
    assert data["infeasible_reasons"]


def test_evaluate_json_is_strict_json_for_an_infinite_step() -> None:
    # 2 nodes without NICs: the step time is infinite.
    result = run("evaluate", "--system", "dgx-a100", "--workload", "mlperf-dlrm-v1",
                 "--set", "nodes=2", "--set", "node.nics=0", "--json")
    assert result.exit_code == 0, result.output

    def reject(token: str) -> float:
        raise AssertionError(f"non-standard JSON constant {token}")

    data = json.loads(result.stdout, parse_constant=reject)
    assert data["feasible"] is False


def test_system_file_with_some_fields_overridden(tmp_path: Path) -> None:
    # A system file that names only what it needs; HBM and scale-up default from the catalog part.
    path = tmp_path / "my-box.toml"
    path.write_text(
        'name = "my-box"\n'
        "nodes = 2\n"
        "[node]\n"
        'accelerator = "a100-sxm4-80gb"\n'
        "accelerators = 4\n"
        'cpu = "epyc-7742"\n'
        "cpu_sockets = 2\n"
        "ddr_gb = 1024\n"
        "nics = 4\n"
        "nic_gbit_s = 200\n"
    )
    result = run("evaluate", "--system", str(path), "--workload", "mlperf-dlrm-v1", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["accelerators"] == 8 and data["nodes"] == 2
    assert data["hbm_capacity_gb"] == pytest.approx(80 * 0.9)  # catalog 80 GB less the 10% reserve
    assert data["feasible"] is True
    # --set still overrides a file.
    more = run("evaluate", "--system", str(path), "--workload", "mlperf-dlrm-v1", "--json",
               "--set", "nodes=4")
    assert json.loads(more.stdout)["accelerators"] == 16


# --- errors: exit 2, one line on stderr naming the file/preset and the key ------------------------


def assert_one_line_error(result: Result, *needles: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert "Traceback" not in result.output


def evaluate_with(
    *sets: str, system: str = "dgx-a100", workload: str = "mlperf-dlrm-v1"
) -> Result:
    args = ["evaluate", "--system", system, "--workload", workload]
    for s in sets:
        args += ["--set", s]
    return run(*args)


def test_malformed_toml_system_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("nodes = [\n[node\naccelerator = \n")
    result = run("evaluate", "--system", str(path), "--workload", "mlperf-dlrm-v1")
    assert_one_line_error(result, str(path), "TOML")


def test_missing_system_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.toml"
    assert_one_line_error(run("evaluate", "--system", str(path), "--workload", "mlperf-dlrm-v1"),
                          str(path))


def test_unknown_system_key() -> None:
    assert_one_line_error(evaluate_with("node.warp_drive=1"), "dgx-a100", "node.warp_drive",
                          "unknown key")


def test_unknown_key_in_system_file(tmp_path: Path) -> None:
    path = tmp_path / "typo.toml"
    path.write_text('nodes = 1\n[node]\naccelerator = "a100-sxm4-80gb"\naccelerators = 8\n'
                    'cpu = "epyc-7742"\ncpu_sockets = 2\nddr_gb = 1024\nnics = 8\n'
                    "nic_gbit_s = 200\nnic_gbits = 200\n")
    assert_one_line_error(run("evaluate", "--system", str(path), "--workload", "mlperf-dlrm-v1"),
                          str(path), "node.nic_gbits")


def test_unknown_presets() -> None:
    assert_one_line_error(evaluate_with(system="dgx-9000"), "dgx-9000", "unknown system preset")
    assert_one_line_error(evaluate_with(workload="dlrm-9000"), "dlrm-9000",
                          "unknown workload preset")


def test_negative_bandwidth() -> None:
    assert_one_line_error(evaluate_with("node.scaleup_gb_s=-1"), "dgx-a100", "node.scaleup_gb_s")


def test_zero_bandwidth() -> None:
    assert_one_line_error(evaluate_with("node.nic_gbit_s=0"), "dgx-a100", "node.nic_gbit_s")


def test_non_integer_accelerator_count() -> None:
    assert_one_line_error(evaluate_with("node.accelerators=4.5"), "dgx-a100",
                          "node.accelerators", "integer")


def test_unknown_workload_key() -> None:
    assert_one_line_error(evaluate_with("workload.embedding_size=3"), "mlperf-dlrm-v1",
                          "embedding_size", "unknown key")


def test_bad_workload_value() -> None:
    assert_one_line_error(evaluate_with("workload.precision=fp64"), "mlperf-dlrm-v1", "precision")


def test_unknown_accelerator_in_catalog() -> None:
    assert_one_line_error(evaluate_with("node.accelerator=tpu-v9"), "dgx-a100",
                          "node.accelerator", "tpu-v9")


# --- list -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "names"),
    [
        ("workloads", workload_presets()),
        ("systems", system_presets()),
        ("accelerators", tuple(load_catalog().accelerator)),
    ],
)
def test_list_names_every_entry(kind: str, names: tuple[str, ...]) -> None:
    assert names
    result = run("list", kind, env=WIDE)
    assert result.exit_code == 0, result.output
    for name in names:
        assert name in result.stdout, f"{name} missing from dse list {kind}"


def test_list_systems_names_survive_an_80_column_terminal() -> None:
    result = run("list", "systems", env={"COLUMNS": "80"})
    assert result.exit_code == 0
    for name in system_presets():
        assert name in result.stdout, name


def test_list_unknown_kind() -> None:
    assert_one_line_error(run("list", "nonsense"), "nonsense")


# --- the installed console script -----------------------------------------------------------------


def _dse() -> list[str]:
    exe = shutil.which("dse")
    return [exe] if exe else [sys.executable, "-m", "dse.cli"]


def test_console_script_evaluate_json() -> None:
    proc = subprocess.run(
        [*_dse(), "evaluate", "--system", "dgx-a100", "--workload", "mlperf-dlrm-v1", "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    for key in REQUIRED_KEYS:
        assert key in data
    assert math.isfinite(data["step_time_s"])
    assert sum(data["breakdown_s"].values()) == pytest.approx(data["step_time_s"], rel=1e-9)


def test_console_script_error_exit_code() -> None:
    proc = subprocess.run(
        [*_dse(), "evaluate", "--system", "dgx-a100", "--workload", "mlperf-dlrm-v1",
         "--set", "node.accelerators=4.5"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "node.accelerators" in lines[0]
    assert proc.stdout == ""


def test_importing_dse_cli_registers_every_command_in_help_order() -> None:
    # No command module needs importing by hand: the package imports every group.
    assert [c.name for c in app.registered_commands] == [
        "evaluate", "compare", "list", "calibrate", "validate", "case-study", "show", "init", "run", "worker",
        "storage-proxy", "repair", "status", "pareto", "export", "report", "plot", "sweep"]


# --- issue 42, item 9 ---------------------------------------------------------------------------


def test_a_byte_order_mark_is_no_content(tmp_path: Path) -> None:
    """A file saved with a UTF-8 byte-order mark (Windows editors) was "malformed TOML: Invalid
    statement (line 1, column 1)"; it reads as the same file without one."""
    plain = Path(__file__).resolve().parents[1] / "dse" / "data" / "systems" / "dgx-h100.toml"
    marked = tmp_path / "dgx.toml"
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    runs = [run("evaluate", "--system", str(p), "--workload", "mlperf-dlrm-v1", "--json")
            for p in (plain, marked)]
    assert [r.exit_code for r in runs] == [0, 0], runs[1].output
    assert json.loads(runs[0].stdout)["throughput_samples_per_s"] == json.loads(runs[1].stdout)[
        "throughput_samples_per_s"]
    shown = run("show", "system", str(marked))
    assert shown.exit_code == 0 and "\ufeff" not in shown.stdout


@pytest.mark.parametrize("args", [["list", "accelerators"], ["list", "accelerators", "--json"],
                                  ["evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-v1"]])
def test_a_reader_that_stops_reading_is_no_error(args: list[str]) -> None:
    """``dse status | head -1`` exited 1 with no word: Rich (text) and Click (JSON) end a command
    whose stdout is a broken pipe with code 1. The reader closing first makes every write fail."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before dse writes a byte
    try:
        done = subprocess.run([sys.executable, "-m", "dse", *args], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Broken pipe" not in done.stderr, done.stderr


def test_an_ipv6_host_is_served_without_grpc_noise(tmp_path: Path) -> None:
    """``--host ::1`` printed gRPC's "E1207 ... add_port.cc" line, then failed: gRPC reads an IPv6
    address only in brackets."""
    import socket

    pytest.importorskip("grpc")
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
            port = probe.getsockname()[1]
    except OSError:
        pytest.skip("no IPv6 loopback here")
    proxy = subprocess.Popen([sys.executable, "-m", "dse", "storage-proxy", "--storage",
                              f"sqlite:///{tmp_path / 'p.db'}", "--host", "::1", "--port", str(port)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proxy.stdout is not None
        line = proxy.stdout.readline()
        assert f"on [::1]:{port}" in line and f"grpc://[::1]:{port}" in line, (
            line + proxy.communicate(timeout=30)[1])
    finally:
        proxy.terminate()
        _, err = proxy.communicate(timeout=30)
    assert "add_port" not in err and not err.strip(), err
