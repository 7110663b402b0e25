"""Optuna's journal op codes have one home (issue 26, item 3): ``JournalOperation``, imported through
``dse/search/_optuna.py`` with the id and the keys each operation names. Anywhere else under dse/
an op code spelled as a number (``"op_code": 5``, ``op == 4``, ``op == b"8"``, ``CREATE_TRIAL = 4``,
``frozenset({5, 6})`` of operations, a table keyed by op numbers) fails here with its file and
line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import dse

PACKAGE = Path(dse.__file__).parent
HOME = PACKAGE / "search" / "_optuna.py"
_OP = r"""(?:\bop(?:_code)?\b|["']op_code["']\])"""
_NUM = r"""b?["']?\d"""
LITERALS = [
    re.compile(r"""["']op_code\\?["']\s*:\s*\d"""),  # a record written or matched with a number
    re.compile(_OP + r"\s*(?:==|!=|<=?|>=?)\s*" + _NUM),  # compared with a number
    re.compile(_OP + r"""\s*(?:not\s+)?in\s*(?:frozenset\(|set\()?[(\[{]\s*""" + _NUM),
    re.compile(r"""\b(?:CREATE_STUDY|DELETE_STUDY|CREATE_TRIAL|DISCARD_TRIALS|(?:SET_)?(?:STUDY|"""
               r"""TRIAL)_(?:USER_ATTR|SYSTEM_ATTR|PARAM|STATE(?:_VALUES)?|INTERMEDIATE\w*))"""
               r"""\b[\w, ]*=\s*\d"""),  # a constant of its own
    re.compile(r"""_OPS\b\s*=\s*frozenset\(\{\s*\d"""),  # a set of operations by number
    re.compile(r"""(?:^\s*|[{,]\s*)\d+\s*:\s*\(?\s*b?["'](?:study_id|trial_id|study_name)["']"""),
]
"""How an op code is spelled as a number (each pattern is tried on every line)."""


def literals(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every op code spelled as a number in ``text``."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), start=1)
            if any(p.search(line) for p in LITERALS)]


def test_no_journal_op_code_literal_outside_optuna_module() -> None:
    found = [f"{path.relative_to(PACKAGE.parent)}:{n}: {line}"
             for path in sorted(PACKAGE.rglob("*.py")) if path != HOME
             for n, line in literals(path.read_text(encoding="utf-8"))]
    assert not found, "journal op codes spelled as numbers (use _optuna.JournalOperation):\n" + \
        "\n".join(found)


@pytest.mark.parametrize("line", [
    # As dse/search/journal.py and snapshot.py spelled them before they had one home.
    "CREATE_STUDY, DELETE_STUDY, CREATE_TRIAL, DISCARD_TRIALS = 0, 1, 4, 10",
    "TRIAL_PARAM, TRIAL_STATE, TRIAL_INTERMEDIATE, TRIAL_USER_ATTR, TRIAL_SYSTEM_ATTR = 5, 6, 7, 8, 9",
    "DISCARD_TRIALS = 10",
    "STUDY_OPS = frozenset({1, 2, 3, 4})",
    '    0: ("study_name", "directions"), 1: ("study_id",), 2: ("study_id", "user_attr"),',
    '            if op == b"8" or op == b"9":  # attributes, most of a journal: the hot path',
    "        if record['op_code'] == 4:",
    '        placeholder = {"op_code": 4, "worker_id": PLACEHOLDER_WORKER,',
    "            if op in (5, 6):",
    """creation = [i for i, line in enumerate(lines) if line.startswith(b'{"op_code":4,')]""",
])
def test_the_check_finds_an_op_code_spelled_as_a_number(line: str) -> None:
    assert literals(line), f"not found: {line}"


@pytest.mark.parametrize("line", [
    '        placeholder = {"op_code": OP.CREATE_TRIAL, "worker_id": PLACEHOLDER_WORKER,',
    "        if op == OP.SET_TRIAL_PARAM:",
    '    if topology == "fully_connected" or (topology == "hybrid_cube_mesh" and n == 4):',
    "    for op, key in JOURNAL_ID_KEY.items():",
])
def test_the_check_passes_op_codes_by_name(line: str) -> None:
    assert not literals(line)
