"""The bill of materials (dse/model/bom.py, issue 38 item 4): a design's parts are counted once, in
typed lines, and capex, wall power and a rack's draw are that one list priced (dse/model/cost.py);
the breakdowns keep the JSON keys of ``dse evaluate --json`` exactly."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

import dse
from dse import evaluate, load_catalog, load_system, load_workload
from dse.model.bom import WALL_PARTS, Bill, Line, Load, Part, Per, bill_of_materials, count_parts
from dse.model.cost import capex, power, priced
from dse.model.power import flat
from dse.model.system import system_presets

CAT = load_catalog()
WL = load_workload("mlperf-dlrm-dcnv2")
CAPEX_KEYS = ["accelerators", "cpus", "ddr", "nics", "pcie_switches", "scaleup_switches", "chassis"]
"""The rows every capex breakdown has (before the rack-scale ones and the network), as before."""


def _row(line: Line) -> tuple[object, ...]:
    return (line.part, line.item, line.per, line.each, line.quantity, line.usd, line.w, line.w_active,
            line.load)


def test_two_dgx_h100_by_hand() -> None:
    bill = count_parts(load_system("dgx-h100", (("nodes", 2),)), CAT)
    assert (bill.nodes, bill.racks, bill.psu_efficiency) == (2, 0, 0.94)
    # Each line: its price, its draw no activity moves, and its span that follows its work.
    assert [_row(line) for line in bill.lines] == [
        # idle 15% of 700 W, and TDP - idle by the step's activity
        (Part.accelerators, "h100-sxm5-80gb", Per.node, 8, 16, 27_500.0, 105.0, 595.0, Load.accelerator),
        (Part.cpus, "xeon-8480p", Per.node, 2, 4, 10_710.0, 0.0, 350.0, Load.cpu),
        (Part.ddr, "ddr5-4800", Per.node, 2048.0, 4096.0, 4.0, 0.15, 0.0, Load.constant),
        (Part.nics, "400g", Per.node, 8, 16, 2000.0, 0.0, 25.0, Load.network),  # compute NICs ...
        (Part.nics, "400g", Per.node, 2, 4, 2000.0, 0.0, 25.0, Load.network),  # ... and the front-end ones
        (Part.pcie_switches, "gen5", Per.node, 4, 8, 1200.0, 0.0, 55.0, Load.host),
        (Part.scaleup_switches, "scaleup_switch", Per.node, 8, 16, 1500.0, 0.0, 75.0, Load.fabric),
        (Part.chassis, "chassis", Per.node, 1, 2, 10_000.0 + 8 * 1000.0, 1200.0, 0.0, Load.constant),
        # 16 ports in one leaf tier: a leaf port and two optical ends per 400G port.
        (Part.network, "network_switch", Per.cluster, 16.0, 16.0, 525.0 + 2 * 1000.0, 0.0, 6.25 + 2 * 9.0,
         Load.network),
    ]
    assert bill.lines[0].vendor == "nvidia" and bill.lines[1].vendor == "intel"
    # The NIC grades are ConnectX cards; NVSwitch is NVIDIA's; the network's vendor is not known.
    assert bill.lines[3].vendor == bill.lines[6].vendor == "nvidia" and bill.lines[8].vendor == ""
    # Two DGX H100 in the facility's 41 kW, 42U rack: 8U each, two fit its power.
    assert (bill.node_units, bill.rack_w, bill.rack_units) == (8, 41_000.0, 42)
    cost, pw, rack_kw, racks = priced(bill, 0.61)
    usd = {Part.accelerators: 440_000.0, Part.cpus: 42_840.0, Part.ddr: 16_384.0, Part.nics: 40_000.0,
           Part.pcie_switches: 9600.0, Part.scaleup_switches: 24_000.0, Part.chassis: 36_000.0,
           Part.network: 40_400.0}
    assert cost.parts_usd == usd
    assert (cost.capex_usd, cost.network_capex_usd) == (sum(usd.values()), 40_400.0)
    nodes_w = 16 * (105.0 + 595.0 * 0.61) + 700.0 + 614.4 + 500.0 + 440.0 + 1200.0 + 2400.0
    assert pw.parts_w[Part.accelerators] == pytest.approx(7487.2)
    assert pw.parts_w[Part.psu_loss] == pytest.approx(nodes_w * (1 / 0.94 - 1))
    assert pw.power_w == pytest.approx(nodes_w / 0.94 + 388.0)
    assert pw.accelerator_utilisation == 0.61
    # The facility's rack: one node at TDP draws (16 x 700 + ...) / 2 / 0.94 W; two fit 41 kW.
    node_kw = (nodes_w + 16 * 595.0 * 0.39) / 0.94 / 2 / 1e3
    assert racks == 1 and rack_kw == pytest.approx(2 * node_kw)


def test_two_gb200_racks_by_hand() -> None:
    bill = count_parts(load_system("gb200-nvl72", (("nodes", 36),)), CAT)
    rows = {line.part: line for line in bill.lines}
    assert bill.racks == 2 and rows[Part.rack].quantity == 2 and rows[Part.rack].per == Per.rack
    trays = rows[Part.scaleup_switches]
    assert (trays.item, trays.per, trays.each, trays.quantity) == ("switch_tray", Per.rack, 9, 18)
    # The rack's price covers the CPUs, DDR and chassis: listed at 0 USD, still drawing power.
    assert rows[Part.cpus].usd == rows[Part.ddr].usd == rows[Part.chassis].usd == 0.0
    assert rows[Part.cpus].quantity * rows[Part.cpus].w_active == 72 * 250.0
    cdu = rows[Part.cooling]
    assert (cdu.per, cdu.quantity) == (Per.rack, pytest.approx(2 * cdu.each))
    assert bill.node_units == 0  # the rack's own racks, not the facility's
    cost, _, rack_kw, racks = priced(bill, 0.61)
    assert racks == 2
    assert cost.parts_usd[Part.cooling] == pytest.approx(2 * 6446)
    # One rack with every accelerator at TDP, through the PSUs; network and CDUs outside.
    at_tdp = 144 * 1200.0 + 9000.0 + 3456.0 + 4500.0 + 7200.0 + 43_200.0
    assert rack_kw == pytest.approx(at_tdp / 0.94 / 2 / 1e3)
    assert 120 <= rack_kw <= 132  # NVIDIA GB200 NVL72 datasheet
    full = power(load_system("gb200-nvl72", (("nodes", 36),)), CAT, 1.0)
    assert rack_kw == pytest.approx(
        (full.power_w - (full.parts_w[Part.network] + full.parts_w[Part.cooling])) / 2 / 1e3, rel=1e-12)
    # The accelerators' share over the step does not enter it: they are at TDP.
    assert priced(bill, 0.3).rack_kw == pytest.approx(rack_kw, rel=1e-12)


@pytest.mark.parametrize("preset", system_presets())
def test_the_breakdowns_are_the_bill_priced(preset: str) -> None:
    system = load_system(preset)
    bill = count_parts(system, CAT)
    # Lines are built without the named tuple's checks (bom.new_line): every field is there.
    assert all(len(line) == len(Line._fields) and isinstance(line.part, Part) and isinstance(line.per, Per)
               and isinstance(line.load, Load) and all(isinstance(v, int | float) for v in line[4:])
               for line in bill.lines)
    for util in (0.0, 0.61, 1.0):
        cost, pw, _, _ = priced(bill, util)
        for part in Part:
            lines = [line for line in bill.lines if line.part == part]
            if not lines:  # rack and cooling where there are none; the PSU losses (power alone)
                assert part not in cost.parts_usd, part
                assert (part in pw.parts_w) == (part == Part.psu_loss), part
                continue
            assert cost.parts_usd[part] == pytest.approx(sum(ln.quantity * ln.usd for ln in lines)), part
            shares = flat(util)
            assert pw.parts_w[part] == pytest.approx(sum(ln.quantity * ln.w_at(shares[ln.load])
                                                         for ln in lines))
        behind = sum(w for part, w in pw.parts_w.items() if part not in (*WALL_PARTS, Part.psu_loss))
        wall = sum(pw.parts_w.get(part, 0.0) for part in WALL_PARTS)
        assert pw.power_w == pytest.approx(behind / bill.psu_efficiency + wall)
        assert cost.capex_usd == sum(cost.parts_usd.values())
    assert capex(system, CAT) == priced(bill, 0.0).cost
    assert power(system, CAT, 0.61) == priced(bill, 0.61).power


def test_the_json_keys_of_the_breakdowns_are_as_before() -> None:
    node = evaluate(WL, load_system("dgx-h100", (("nodes", 2),))).to_dict()
    assert list(node["capex_by_part_usd"]) == [*CAPEX_KEYS, "network"]
    assert list(node["power_by_part_w"]) == [*CAPEX_KEYS, "psu_loss", "network"]
    racks = evaluate(WL, load_system("gb200-nvl72", (("nodes", 36),))).to_dict()
    assert list(racks["capex_by_part_usd"]) == [*CAPEX_KEYS, "rack", "cooling", "network"]
    assert list(racks["power_by_part_w"]) == [*CAPEX_KEYS, "rack", "psu_loss", "network", "cooling"]
    for out in (node, racks):
        keys = [*out["capex_by_part_usd"], *out["power_by_part_w"]]
        assert all(type(k) is str for k in keys)  # plain names at the output, Part inside
        assert json.loads(json.dumps(out))["power_by_part_w"] == out["power_by_part_w"]
    # A CXL row only where a node has CXL memory, after DDR.
    assert [p.value for p in Part] == [*CAPEX_KEYS[:3], "cxl", *CAPEX_KEYS[3:], "node_quote", "rack",
                                       "cooling", "network", "psu_loss"]


def test_a_bill_is_counted_once_per_system_and_catalog() -> None:
    system = load_system("dgx-b200", (("nodes", 4),))
    bill = bill_of_materials(system, CAT)
    assert isinstance(bill, Bill) and bill_of_materials(system, CAT) is bill
    other = dataclasses.replace(CAT)  # the same figures in another catalog object
    assert bill_of_materials(system, other) is not bill and bill_of_materials(system, other) == bill
    dearer = dataclasses.replace(CAT, chassis=dataclasses.replace(CAT.chassis, usd_per_node=20_000.0))
    assert bill_of_materials(system, dearer).lines[-2].usd == 20_000.0 + 8 * 1000.0
    again = load_system("dgx-b200", (("nodes", 4),))  # an equal system, another object
    assert again is not system and bill_of_materials(again, CAT) == bill


def _part_subscripts(path: Path) -> list[str]:
    """``x["network"]``-style subscripts of ``path`` whose key is a part's name."""
    names = {p.value for p in Part}
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                and node.slice.value in names):
            found.append(f"{path.name}:{node.lineno}: [{node.slice.value!r}]")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("get", "pop") and node.args
                and isinstance(node.args[0], ast.Constant) and node.args[0].value in names):
            found.append(f"{path.name}:{node.lineno}: .{node.func.attr}({node.args[0].value!r})")
    return found


def test_the_finder_sees_a_planted_part_name(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('a = parts_w["network"]\nb = parts.get("cooling", 0.0)\nc = d["nodes"]\n')
    assert _part_subscripts(planted) == ['planted.py:1: [\'network\']', "planted.py:2: .get('cooling')"]


def test_no_part_is_looked_up_by_its_name_in_the_model() -> None:
    model = Path(dse.__file__).parent / "model"
    found = [hit for path in sorted(model.rglob("*.py")) for hit in _part_subscripts(path)]
    assert not found, "parts looked up by a string in dse/model (use Part):\n" + "\n".join(found)
