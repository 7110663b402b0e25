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
