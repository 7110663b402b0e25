"""A newcomer's trial (issue 41): the README's system template works as written, its required
keys are the schema's, an error inside a space names the file and key, and a rule every trial
breaks is named by ``dse run``."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from study_helpers import ROOT, run_cli

from dse.errors import DseInputError
from dse.model.system import NodeSpec, SystemSpec
from dse.search.study.search_space import load_space

README = (ROOT / "README.md").read_text(encoding="utf-8")
TEMPLATE_HEAD = "A system file (required: "


def _template() -> str:
    """The README's system template: the first TOML block after its heading sentence."""
    start = README.index(TEMPLATE_HEAD)
    return README[start:].split("```toml\n", 1)[1].split("```", 1)[0]


def _required() -> set[str]:
    """The keys a system file must give: the schema's fields without a default (``accelerator``
    has one, ``""``, for a node without accelerators, and is required otherwise)."""
    def no_default(cls: type, prefix: str) -> set[str]:
        return {prefix + f.name for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}

    return no_default(SystemSpec, "") - {"node"} | no_default(NodeSpec, "node.") | {"node.accelerator"}


def test_the_readme_states_the_required_keys() -> None:
    sentence = README[README.index(TEMPLATE_HEAD):].split(";", 1)[0]
    top, node = sentence.split("and in `[node]`")
    stated = set(re.findall(r"`(\w+)`", top)) | {f"node.{k}" for k in re.findall(r"`(\w+)`", node)}
    assert stated == _required()


def test_the_readme_template_is_feasible_as_written(tmp_path: Path) -> None:
    system = tmp_path / "my-node.toml"
    system.write_text(_template(), encoding="utf-8")
    result = run_cli("evaluate", "-s", str(system), "-w", "mlperf-dlrm-dcnv2", "--json")
    assert result.exit_code == 0, result.output
    import json

    ev = json.loads(result.output)
    assert ev["feasible"] and ev["infeasible_reasons"] == []
    printed = run_cli("evaluate", "-s", str(system), "-w", "mlperf-dlrm-dcnv2")
    assert "INFEASIBLE" not in printed.output and "warning" not in printed.output.lower()


@pytest.mark.parametrize("key", sorted(_required() - {"node"}))
def test_each_required_key_is_named_when_missing_through_a_space(tmp_path: Path, key: str) -> None:
    """A system file without one required key, named by a space: the error names the space, the
    system file and the key (it said only ``choice 'mynode': required key is missing``)."""
    template = _template()
    name = key.removeprefix("node.")
    lines = template.splitlines()
    lines.remove(next(line for line in lines if re.match(rf"{name}\s*=", line)))
    (tmp_path / "systems").mkdir()
    (tmp_path / "systems" / "mynode.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    space = tmp_path / "sp.toml"
    space.write_text('name = "sp"\nbase_system = "dgx-h100"\n[parameters.system]\n'
                     'type = "categorical"\nchoices = ["dgx-h100", "mynode"]\n', encoding="utf-8")
    with pytest.raises(DseInputError) as info:
        load_space(str(space))
    message = str(info.value)
    assert message.startswith(f"{space}: parameters.system: choice 'mynode': ")
    assert f"{tmp_path / 'systems' / 'mynode.toml'}: {key}: " in message
    assert "\n" not in message


def test_a_rule_every_trial_breaks_is_named_by_dse_run(tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    """The template without its PCIe switches (eight GPUs and eight NICs on two Xeons: 256 lanes
    of 160) beside a DGX H100: after the first trials ``dse run`` names the system, the rule, its
    numbers and the switch share that fits, once; the DGX H100 is not named."""
    (tmp_path / "systems").mkdir()
    bare = "\n".join(line for line in _template().splitlines()
                     if not line.startswith(("pcie_switch_share", "  ")))
    (tmp_path / "systems" / "mynode.toml").write_text(bare + "\n", encoding="utf-8")
    (tmp_path / "sp.toml").write_text(
        'name = "sp"\nbase_system = "dgx-h100"\n[parameters.system]\ntype = "categorical"\n'
        'choices = ["dgx-h100", "mynode"]\n[parameters.nodes]\ntype = "int"\nlow = 1\nhigh = 32\n',
        encoding="utf-8")
    study = tmp_path / "s.toml"
    study.write_text('name = "s"\nworkload = "mlperf-dlrm-v1"\nspace = "sp.toml"\n'
                     'objectives = "throughput-vs-capex"\nsampler = "random"\nbudget = 40\n'
                     'seed = 4\n', encoding="utf-8")
    with caplog.at_level("WARNING", logger="dse"):
        result = run_cli("run", str(study), "--quiet", "--no-report", "--warm-start", "none")
    assert result.exit_code == 0, result.output
    lines = [r.getMessage() for r in caplog.records if "so far break the rule" in r.getMessage()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("dse: warning: all ")
    assert "of system mynode so far break the rule " in lines[0]
    assert "pcie_lanes (8 accelerators and 8 NICs need 256 PCIe lanes" in lines[0]
    assert "node.pcie_switch_share = 2" in lines[0] and "dgx-h100" not in lines[0]


# --- item 7: the smaller defects, each with a test ---------------------------------------------------


def test_one_label_one_figure_in_evaluate() -> None:
    """``allreduce_exposed`` was 7.119 ms in the critical-path table and 3.444 ms in the table of
    durations before overlap: the second is the allreduce beyond the backward, and says so."""
    import dse

    wl = dse.load_workload("mlperf-dlrm-dcnv2")
    ev = dse.evaluate(wl, dse.load_system("dgx-h100", (("nodes", 16),)))
    assert ev.breakdown_s["allreduce_exposed"] != ev.timing.stages_s["allreduce_exposed"]
    out = run_cli("evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-dcnv2", "--set", "nodes=16").output
    rows = re.findall(r"│ (allreduce[ a-z_]*?)\s+│\s+([\d.]+) │", out)
    shown: dict[str, set[str]] = {}
    for name, ms in rows:
        shown.setdefault(name, set()).add(ms)
    assert all(len(values) == 1 for values in shown.values()), shown
    assert shown["allreduce_exposed"] == {f"{ev.breakdown_s['allreduce_exposed'] * 1e3:.3f}"}
    assert shown["allreduce beyond backward"] == {f"{ev.timing.stages_s['allreduce_exposed'] * 1e3:.3f}"}


def test_compare_says_whose_change_it_shows() -> None:
    """``dse compare A B``: the change is B's relative to A, and the title and column say so (the
    cheaper trial read as "+44% capex")."""
    out = run_cli("compare", "dgx-h100", "hgx-h200", "-w", "mlperf-dlrm-v1").output
    assert "hgx-h200 relative to dgx-h100" in out and "hgx-h200 vs dgx-h100" in out
    import dse

    wl = dse.load_workload("mlperf-dlrm-v1")
    a, b = (dse.evaluate(wl, dse.load_system(s)) for s in ("dgx-h100", "hgx-h200"))
    line = next(x for x in out.splitlines() if x.startswith("│ capex USD"))
    assert line.rstrip(" │").endswith(f"{b.cost.capex_usd / a.cost.capex_usd - 1:+.1%}")


def _small_study(folder: Path, objectives: str = "throughput-vs-capex") -> Path:
    study = folder / "s.toml"
    study.write_text(f'name = "s"\nworkload = "mlperf-dlrm-v1"\nspace = "scale-out"\n'
                     f'objectives = "{objectives}"\nsampler = "random"\nbudget = 8\nseed = 2\n',
                     encoding="utf-8")
    return study


def test_another_storage_never_writes_over_the_study_pages(tmp_path: Path) -> None:
    """``dse run zion-2020 --storage other.journal`` wrote ``studies/zion-2020.html``: pages of
    another storage go beside its journal, under its name."""
    study = _small_study(tmp_path)
    assert run_cli("run", str(study), "--trials", "3", "--quiet").exit_code == 0
    own = tmp_path / "s.html"
    before = own.read_bytes()
    other = tmp_path / "runs" / "other.journal"
    other.parent.mkdir()
    result = run_cli("run", str(study), "--storage", str(other), "--trials", "2", "--quiet")
    assert result.exit_code == 0, result.output
    assert (other.parent / "other.html").is_file() and own.read_bytes() == before
    assert run_cli("plot", str(study), "--storage", str(other)).exit_code == 0
    assert (other.parent / "other-front.html").is_file() and not (tmp_path / "s-front.html").exists()
    assert run_cli("report", str(study), "--storage", str(other), "--out", str(tmp_path / "pages")
                   ).exit_code == 0
    assert (tmp_path / "pages" / "other.html").is_file()


def test_a_front_of_three_objectives_is_not_joined_in_a_plane(tmp_path: Path) -> None:
    from dse.outputs.report import gather, pair_figure
    from dse.search.results import load_stored_study, objective_set_of
    from dse.search.study.study_file import load_study_spec

    for objectives, mode in (("throughput-capex-power", "markers"), ("throughput-vs-capex",
                                                                     "lines+markers")):
        folder = tmp_path / objectives
        folder.mkdir()
        study = _small_study(folder, objectives)
        assert run_cli("run", str(study), "--quiet", "--no-report").exit_code == 0
        spec = load_study_spec(str(study))
        stored = load_stored_study(spec)
        fig = pair_figure(gather(stored, spec, objective_set_of(stored, spec)),
                          "throughput_samples_per_s", "capex_usd")
        front = next(t for t in fig["data"] if str(t["name"]).startswith("Pareto front"))
        assert front["mode"] == mode, objectives


def test_a_timeline_page_carries_plotly_packed(tmp_path: Path) -> None:
    """One design's ``--html`` timeline was 4.8 MB (plotly.js inline, as Plotly writes it)."""
    page = tmp_path / "step.html"
    result = run_cli("evaluate", "-s", "dgx-h100", "-w", "mlperf-dlrm-dcnv2", "--html", str(page))
    assert result.exit_code == 0, result.output
    size = page.stat().st_size
    assert size < 2.2e6, size
    text = page.read_text(encoding="utf-8")
    assert "<title>dse timeline: mlperf-dlrm-dcnv2 on 1 x 8 NVIDIA H100" in text
    assert "plotlyjs-gz" in text and "dse/figure" in text


def _robust(ratio: float, kept: float) -> object:
    """A two-design robust front whose throughputs differ by ``ratio``, intervals overlapping,
    whose order ``kept`` share of the members keep."""
    import numpy as np

    from dse.calibration.ensemble import PredictionInterval
    from dse.search.robust_front import RobustDesign, _compare_neighbours

    def design(trial: int, point: float) -> RobustDesign:
        iv = PredictionInterval(0.8, point, point / 1.6, point * 1.6, 0.7, 1.3, 100)
        return RobustDesign((trial,), {"nodes": trial}, (point, 1.0), (None, None), 1.0, iv)

    a, b = design(1, 1e6), design(2, 1e6 * ratio)
    members = 100
    moved = round(members * (1 - kept))
    dev_a = np.zeros(members)
    dev_b = np.zeros(members)
    dev_b[:moved] = -2 * np.log(ratio)  # these members reverse the order
    return _compare_neighbours(a, b, dev_a, dev_b)


def test_within_the_model_s_error_means_the_order_is_not_kept() -> None:
    """Pairs 1.49x apart were "within the model's error" (their intervals overlap) while every
    member kept their order: within the error now means fewer than 80% of members keep it."""
    apart = _robust(1.49, 1.0)
    close = _robust(1.05, 0.6)
    assert apart.order_kept == 1.0 and not apart.within_error  # type: ignore[attr-defined]
    assert close.order_kept == pytest.approx(0.6) and close.within_error  # type: ignore[attr-defined]


def test_the_robust_table_spells_its_directions() -> None:
    """"train h (min)" read as minutes: the direction is written out."""
    from rich.console import Console

    from dse.cli.robust import print_robust
    from dse.search.robust_front import RobustDesign, RobustFront

    designs = tuple(RobustDesign((i,), {"nodes": i}, (3600.0 * i, 1e6 / i), (None, None), 0.9, None)
                    for i in (1, 2))
    front = RobustFront((("time_to_train_s", "minimize"), ("capex_usd", "minimize")), designs,
                        (), 100, 2, "test")
    console = Console(width=200, record=True)
    print_robust(console, front, "robust")
    out = console.export_text()
    assert ", minimized" in out and "(min)" not in out


def test_a_base_system_missing_a_key_is_named_with_its_file(tmp_path: Path) -> None:
    """Without a ``system`` parameter the error names the space's base_system (not a fixed
    value it does not have), the system file and the key."""
    (tmp_path / "systems").mkdir()
    lines = [line for line in _template().splitlines() if not line.startswith("nic_gbit_s")]
    (tmp_path / "systems" / "mynode.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    space = tmp_path / "sp.toml"
    space.write_text('name = "sp"\nbase_system = "mynode"\n[parameters.nodes]\ntype = "int"\n'
                     'low = 1\nhigh = 2\n', encoding="utf-8")
    with pytest.raises(DseInputError) as info:
        load_space(str(space))
    assert str(info.value) == (f"{space}: base_system: {tmp_path / 'systems' / 'mynode.toml'}: "
                               "node.nic_gbit_s: required key is missing")
