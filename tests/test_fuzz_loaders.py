"""Property-based fuzz of every loader (issue 16, checks): random bytes, and valid files with random
keys replaced by values of random types and magnitudes, for the system, workload, study, space
and objectives loaders and ``--set``. Each case either loads (and a loaded system and workload
evaluate) or fails with one :class:`DseInputError` line, i.e. exit code 0 or 2, with bounded work
(the calls dse makes counted, :mod:`work`, where issue 16 said "within 5 s": memory is bounded by
the limits, whose tests count it) and never with a traceback. Examples are bounded so the suite
stays fast; failures found while writing it stay as ``@example`` regression cases.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result
from work import work_of

from dse.cli import app
from dse.errors import DseInputError
from dse.model.evaluate import evaluate
from dse.model.system import load_system, resolve_system
from dse.model.workload import load_workload
from dse.records import parse_override
from dse.search.study.objective_sets import load_objectives
from dse.search.study.search_space import load_space
from dse.search.study.study_file import load_study_spec

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "dse" / "data"
BASES = {
    "system": DATA / "systems" / "zion.toml",
    "workload": DATA / "workloads" / "dlrm-benchmark.toml",
    "synthetic": DATA / "workloads" / "synthetic-production-a.toml",
    "study": ROOT / "studies" / "zion-2020.toml",
    "space": ROOT / "search_spaces" / "zion-node.toml",
    "objectives": ROOT / "objectives" / "throughput-vs-capex.toml",
}
CASE_CALLS = 2_000_000
"""Calls one case may make: twice a workload at the table limit loaded and evaluated (10,000
synthetic tables: 1,000,000, measured; the base files: 20,000), the most a valid file can ask."""
FUZZ = settings(max_examples=int(os.environ.get("DSE_FUZZ_EXAMPLES", "40")), deadline=None,
                derandomize="DSE_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
_names = itertools.count()


def _load_system(path: str) -> None:
    system = load_system(path)
    resolve_system(system.spec)
    evaluate(load_workload("dlrm-benchmark"), system)


def _load_workload(path: str) -> None:
    evaluate(load_workload(path), load_system("zion"))


LOADERS: dict[str, Callable[[str], Any]] = {
    "system": _load_system, "workload": _load_workload, "synthetic": _load_workload,
    "study": load_study_spec, "space": load_space, "objectives": load_objectives,
}


def toml_value(v: Any) -> str:
    """A value in TOML syntax (inline tables for mappings)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    assert isinstance(v, dict)
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + "}"


def toml_text(data: dict[str, Any]) -> str:
    return "".join(f"{json.dumps(k)} = {toml_value(v)}\n" for k, v in data.items())


def paths_of(data: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for k, v in data.items():
        out.append((*prefix, k))
        if isinstance(v, dict):
            out.extend(paths_of(v, (*prefix, k)))
    return out


def set_path(data: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = dict(data)
    if len(path) == 1:
        if value is _DELETE:
            out.pop(path[0], None)
        else:
            out[path[0]] = value
        return out
    inner = out.get(path[0])
    out[path[0]] = set_path(inner if isinstance(inner, dict) else {}, path[1:], value)
    return out


_DELETE = object()
NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, -1, 2**31, 2**63, 10**13 + 1, 10**18, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-308, 5e-324, 1e308, 1e-9]),
)
SCALARS = st.one_of(NUMBERS, st.booleans(), st.text(max_size=12),
                    st.sampled_from(["none", "", "../x", "switch", "fp32", "a/b"]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8)


def check_loads(kind: str, path: Path) -> None:
    """Loading ``path`` (and evaluating what it defines) succeeds or raises one input error line,
    within :data:`CASE_CALLS`."""
    work = work_of(lambda: LOADERS[kind](str(path)), calls=CASE_CALLS, memory=False)
    if work.error is not None:
        assert isinstance(work.error, DseInputError), repr(work.error)
        assert "\n" not in str(work.error), str(work.error)


def _write(tmp_path: Path, kind: str, content: bytes) -> Path:
    path = tmp_path / f"{kind}-{next(_names)}.toml"
    path.write_bytes(content)
    return path


@pytest.mark.parametrize("kind", sorted(LOADERS))
@FUZZ
@given(content=st.binary(max_size=600))
@example(content=b"\xff\xfe\x00")
@example(content="n = 1".encode("utf-16"))
@example(content=b"a = " + b"[" * 3000)
@example(content=b"a = " + b"9" * 5000)
def test_random_bytes(tmp_path: Path, kind: str, content: bytes) -> None:
    check_loads(kind, _write(tmp_path, kind, content))


@pytest.mark.parametrize("kind", sorted(LOADERS))
@FUZZ
@given(data=st.data())
def test_random_values_in_a_valid_file(tmp_path: Path, kind: str, data: st.DataObject) -> None:
    base = tomllib.loads(BASES[kind].read_text())
    paths = [*paths_of(base), ("unknown_key",), ("node", "extra")]
    changed = base
    for path in data.draw(st.lists(st.sampled_from(paths), min_size=1, max_size=3)):
        value = data.draw(st.one_of(VALUES, st.just(_DELETE)))
        changed = set_path(changed, path, value)
    check_loads(kind, _write(tmp_path, kind, toml_text(changed).encode()))


REGRESSIONS: list[tuple[str, dict[str, Any]]] = [
    ("system", {"node": {"ddr_gb": 0}}),
    ("system", {"nodes": 2**70}),
    ("system", {"node": {"nic_gbit_s": 1e308}}),
    ("system", {"node": {"ddr_gb": 10**400}}),
    ("workload", {"tables": {"rows": []}}),
    ("workload", {"tables": {"rows": [10**18]}}),
    ("synthetic", {"synthetic": {"count": 1_000_000_000}}),
    ("study", {"seed": -1}),
    ("study", {"table_scale": 1e308}),
    ("study", {"name": "../../../tmp/x"}),
    ("study", {"name": ""}),
    ("space", {"parameters": {"node.accelerators": {"type": "int", "low": 1, "high": 10**9}}}),
]


@pytest.mark.parametrize(("kind", "change"), REGRESSIONS)
def test_hostile_values_from_the_fault_sweep(tmp_path: Path, kind: str,
                                             change: dict[str, Any]) -> None:
    base = tomllib.loads(BASES[kind].read_text())
    for path in paths_of(change):
        value: Any = change
        for part in path:
            value = value[part]
        if not isinstance(value, dict):
            base = set_path(base, path, value)
    with pytest.raises(DseInputError):
        LOADERS[kind](str(_write(tmp_path, kind, toml_text(base).encode())))


@FUZZ
@given(key=st.sampled_from(["nodes", "node.accelerators", "node.ddr_gb", "network", "node",
                            "workload.global_batch", "workload.tables.rows", "x.y.z", "node.nics"]),
       raw=st.one_of(st.text(max_size=20), NUMBERS.map(toml_value), VALUES.map(toml_value)))
def test_set_overrides(key: str, raw: str) -> None:
    """``dse evaluate --set KEY=VALUE``: exit 0 or one line with exit 2."""
    text = f"{key}={raw}"
    with contextlib.suppress(DseInputError):
        parse_override(text)
    invoked: list[Result] = []
    work = work_of(lambda: invoked.append(CliRunner().invoke(
        app, ["evaluate", "-s", "zion", "-w", "dlrm-benchmark", "--set", text])), calls=CASE_CALLS,
        memory=False)
    assert work.error is None, repr(work.error)  # the runner keeps the command's own
    result = invoked[0]
    assert result.exit_code in (0, 2), (text, result.output, result.exception)
    if result.exit_code == 2:
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
