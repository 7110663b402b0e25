"""Spec limits and finiteness (issue 16, item 6): an absurd count, size or float in a system,
workload, study or space file is refused at load time with one line naming the file and key and
exit code 2, with little work (counted: :mod:`work`), instead of a MemoryError or OverflowError
minutes later.

The limits themselves live in :mod:`dse.limits` with their reasons.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result
from work import refusal

from dse import limits
from dse.cli import app
from dse.errors import DseInputError
from dse.model.system import load_system, load_system_spec, system_presets
from dse.model.workload import load_workload, workload_presets
from dse.records import OBJECTIVES, SPACE, STUDY, SYSTEM, WORKLOAD, FileKind, read_toml
from dse.search.study.objective_sets import load_objectives
from dse.search.study.search_space import load_space, space_from_mapping
from dse.search.study.study_file import load_study_spec, study_workload

runner = CliRunner()

SYSTEM_CASES: list[tuple[str, Any, str]] = [
    ("nodes", 10**7, "nodes"),
    ("nodes", 2**70, "nodes"),
    ("node.accelerators", 10**9, "node.accelerators"),
    ("node.cpu_sockets", 10**9, "node.cpu_sockets"),
    ("node.ddr_gb", 0, "node.ddr_gb"),
    ("node.ddr_gb", -1.0, "node.ddr_gb"),
    ("node.nic_gbit_s", 1e308, "node.nic_gbit_s"),
    ("node.nic_gbit_s", 10**400, "node.nic_gbit_s"),
    ("node.hbm_gb", 1e300, "node.hbm_gb"),
    ("node.nics", 10**6, "node.nics"),
    ("network.oversubscription", 1e9, "network.oversubscription"),
    ("pod.nodes", 10**9, "pod.nodes"),
]


@pytest.mark.parametrize(("key", "value", "named"), SYSTEM_CASES)
def test_system_past_a_limit_is_refused_fast(key: str, value: Any, named: str) -> None:
    error = refusal(lambda: load_system_spec("zion", ((key, value),)))
    assert isinstance(error, DseInputError), repr(error)
    assert error.key == named
    assert "\n" not in str(error)


def test_cluster_size_is_bounded_by_the_product() -> None:
    per_node = limits.MAX_ACCELERATORS_PER_NODE
    nodes = limits.MAX_ACCELERATORS_TOTAL // per_node
    load_system("zion", (("nodes", nodes), ("node.accelerators", per_node)))
    with pytest.raises(DseInputError, match="accelerators per cluster"):
        load_system_spec("zion", (("nodes", nodes + 1), ("node.accelerators", per_node)))


def _shipped(kind: FileKind) -> list[Path]:
    """Every preset of ``kind`` shipped with dse (its built-in folder, not the working directory)."""
    paths = sorted(kind.builtin.glob("*.toml"))
    assert paths, f"no shipped {kind.noun} in {kind.builtin}"
    return paths


def test_every_shipped_preset_loads_within_the_limits() -> None:
    """The limits are far above anything real: every shipped system, workload, search space,
    objective set and study loads, and holds what its file says."""
    systems = _shipped(SYSTEM)
    assert sorted(p.stem for p in systems) == sorted(system_presets())
    for path in systems:
        raw = read_toml(path)
        system = load_system(path.stem)
        assert system.nodes == raw.get("nodes", 1), path.stem
        assert system.spec.node.accelerators == raw["node"]["accelerators"], path.stem
        # A node without accelerators trains on its CPUs as one device (system.cpu_device).
        assert system.accelerators_per_node == (raw["node"]["accelerators"] or 1), path.stem
        assert system.spec.node.accelerator == raw["node"].get("accelerator", ""), path.stem
        assert 1 <= system.accelerators_total <= limits.MAX_ACCELERATORS_TOTAL
        # Every device has memory of its own (HBM, or a CPU device's DDR), within the limit.
        assert 0 < system.tiers[0].capacity_bytes <= limits.MAX_MEMORY_GB * 1e9, path.stem
    workloads = _shipped(WORKLOAD)
    assert sorted(p.stem for p in workloads) == sorted(workload_presets())
    for path in workloads:
        raw = read_toml(path)
        workload = load_workload(path.stem)
        assert workload.name == raw["name"] == path.stem
        assert workload.global_batch == raw["global_batch"], path.stem
        assert workload.tables, path.stem
        assert all(1 <= t.rows <= limits.MAX_ROWS_PER_TABLE for t in workload.tables), path.stem
    for path in _shipped(SPACE):
        space = load_space(path.stem)
        assert space.name == path.stem and space.parameters, path.stem
        assert set(space.bases()) <= set(system_presets()), path.stem
        assert space.base_spec().node.accelerators >= 1, path.stem
    for path in _shipped(OBJECTIVES):
        objectives = load_objectives(path.stem)
        assert objectives.name == path.stem, path.stem
        assert len(objectives.objectives) == len(read_toml(path)["objectives"]) >= 1, path.stem
    for path in _shipped(STUDY):
        raw = read_toml(path)
        spec = load_study_spec(path.stem)
        assert (spec.name, spec.workload, spec.space, spec.objectives, spec.budget) == (
            path.stem, raw["workload"], raw["space"], raw["objectives"], raw["budget"])
        assert 1 <= spec.budget <= limits.MAX_BUDGET
        assert study_workload(spec).tables, path.stem
        assert load_space(spec.space).name == spec.space
        assert load_objectives(spec.objectives).name == spec.objectives


def test_limits_admit_the_largest_values_of_todays_machines() -> None:
    big = load_system("gb200-nvl72", (("nodes", 1_000),))
    assert big.accelerators_total == 1_000 * big.accelerators_per_node == 4_000
    wide = load_system("zion", (("node.cpu_sockets", 32), ("node.ddr_gb", 48_000)))
    assert wide.spec.node.cpu_sockets == 32 and wide.ddr_bytes == 48_000e9


WORKLOAD_CASES: list[tuple[str, Any, str]] = [
    ("tables.rows", [10**18], "tables.rows[0]"),
    ("tables.rows", [], "tables.rows"),
    ("top_mlp", [], "top_mlp"),
    ("global_batch", 2**40, "global_batch"),
    ("bottom_mlp", [10**9], "bottom_mlp[0]"),
    ("access_zipf", 1e308, "access_zipf"),
]


@pytest.mark.parametrize(("key", "value", "named"), WORKLOAD_CASES)
def test_workload_past_a_limit_is_refused_fast(key: str, value: Any, named: str) -> None:
    error = refusal(lambda: load_workload("dlrm-benchmark", ((key, value),)))
    assert isinstance(error, DseInputError), repr(error)
    assert error.key == named


def test_too_many_tables_are_refused_before_building_them() -> None:
    cases: list[tuple[tuple[tuple[str, Any], ...], str]] = [
        ((("synthetic.count", 10**9),), "synthetic.count"),
        ((("tables.rows", [1] * (limits.MAX_TABLES + 1)),), f"at most {limits.MAX_TABLES:,}"),
        ((("synthetic.count", 1), ("synthetic.dims", [4]), ("synthetic.total_params", 1e16)),
         "rows per table"),
    ]
    for overrides, says in cases:
        preset = "dlrm-benchmark" if overrides[0][0] == "tables.rows" else "synthetic-production-a"
        error = refusal(functools.partial(load_workload, preset, overrides))
        assert isinstance(error, DseInputError) and says in str(error), repr(error)


def _study(tmp_path: Path, **fields: Any) -> Path:
    base = {"name": "s", "workload": "zion-2019", "space": "zion-node",
            "objectives": "throughput-vs-capex", "budget": 10, "seed": 1}
    base.update(fields)
    lines = [f"{k} = {v!r}".replace("'", '"') for k, v in base.items()]
    path = tmp_path / "study.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("name", ["../../../tmp/x", "", ".hidden", "a/b", "a\\\\b", "x" * 101])
def test_study_name_is_a_plain_identifier(tmp_path: Path, name: str) -> None:
    with pytest.raises(DseInputError) as info:
        load_study_spec(str(_study(tmp_path, name=name)))
    assert info.value.key == "name"


@pytest.mark.parametrize(("key", "value"), [("seed", -1), ("seed", 2**64), ("budget", 0),
                                            ("budget", 10**12), ("table_scale", 1e308),
                                            ("table_scale", 0.0)])
def test_study_numbers_are_bounded(tmp_path: Path, key: str, value: Any) -> None:
    with pytest.raises(DseInputError) as info:
        load_study_spec(str(_study(tmp_path, **{key: value})))
    assert info.value.key == key


def test_table_scale_may_not_push_a_table_past_the_row_limit(tmp_path: Path) -> None:
    spec = load_study_spec(str(_study(tmp_path, table_scale=4.0)))
    assert study_workload(spec).name.endswith("-x4")
    with pytest.raises(DseInputError) as info:
        load_study_spec(str(_study(tmp_path, table_scale=1e6)))
    assert info.value.key == "table_scale"
    assert "rows" in info.value.message


@pytest.mark.parametrize(("param", "high"), [("node.accelerators", 10**9), ("nodes", 2**70),
                                             ("node.ddr_gb", 1e308)])
def test_space_whose_range_exceeds_a_limit_is_refused(param: str, high: Any) -> None:
    typ = "float" if isinstance(high, float) else "int"
    data = {"name": "x", "base_system": "zion",
            "parameters": {param: {"type": typ, "low": 1, "high": high}}}
    with pytest.raises(DseInputError) as info:
        space_from_mapping(data, "space.toml")
    assert info.value.key == f"parameters.{param}"


@pytest.mark.parametrize("override", ["nodes=10000000", "node.accelerators=1000000000",
                                      "nodes=1180591620717411303424", "node.nic_gbit_s=1e308",
                                      "node.ddr_gb=0", "node.cpu_sockets=1000000000",
                                      "workload.tables.rows=[]"])
def test_cli_refuses_in_one_line_with_exit_2(override: str) -> None:
    invoked: list[Result] = []
    refusal(lambda: invoked.append(runner.invoke(
        app, ["evaluate", "-s", "zion", "-w", "dlrm-benchmark", "--set", override])))
    result = invoked[0]
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dse: error:"), result.stderr


@pytest.mark.parametrize("content", [b"\xff\xfe\x00n\x00a\x00m\x00e", "n = 1\n".encode("utf-16"),
                                     b"a = " + b"[" * 5000])
def test_unreadable_files_are_one_line(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.toml"
    path.write_bytes(content)
    result = runner.invoke(app, ["evaluate", "-s", str(path), "-w", "dlrm-benchmark"])
    assert result.exit_code == 2, result.output
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_directory_given_as_a_file_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "dir.toml"
    folder.mkdir()
    result = runner.invoke(app, ["evaluate", "-s", str(folder), "-w", "dlrm-benchmark"])
    assert result.exit_code == 2
    assert "is a directory" in result.stderr


@pytest.mark.parametrize("text", ["a = " + "1" * 5000, "[node]\nnodes = " + "9" * 4000])
def test_integers_too_long_to_read_are_one_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "big.toml"
    path.write_text(text + "\n")
    result = runner.invoke(app, ["evaluate", "-s", str(path), "-w", "dlrm-benchmark"])
    assert result.exit_code == 2, result.output
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("override", ["nodes=" + "9" * 5000, "node.ddr_gb=" + "9" * 4000,
                                      "nodes=" + "[" * 3000])
def test_overrides_too_large_to_read_are_one_line(override: str) -> None:
    result = runner.invoke(app, ["evaluate", "-s", "zion", "-w", "dlrm-benchmark", "--set", override])
    assert result.exit_code == 2, result.output
    assert len(result.stderr.strip().splitlines()) == 1
