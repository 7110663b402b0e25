"""ruff and mypy stay clean, and no function is longer than the project's limit: run as tests so
the README's one test command checks them too."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_FUNCTION_LINES = 80
"""The standard's limit: a function (or method) from its ``def`` line to its last, docstring and
signature included, decorators not."""


def test_ruff_clean() -> None:
    result = subprocess.run(
        ["ruff", "check", "dse", "tests", "benchmarks"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_clean() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def long_functions(folder: Path, most: int = MAX_FUNCTION_LINES) -> list[str]:
    """``file:line name (N lines)`` of every function and method under ``folder`` longer than
    ``most`` lines, nested ones included."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > most:
                    found.append(f"{path.relative_to(folder.parent)}:{node.lineno} {node.name} "
                                 f"({lines} lines)")
    return found


def test_long_functions_are_found(tmp_path: Path) -> None:
    """The count is ``def`` to last line: 81 lines is one too many, 80 is not, and a nested or
    async function counts on its own."""
    body = "".join(f"    x{i} = {i}\n" for i in range(79))
    (tmp_path / "m.py").write_text(
        f"def at_limit():\n{body}\n"
        f"class C:\n    async def over(self):\n{''.join('    ' + line for line in body.splitlines(True))}"
        "        return 0\n")
    found = [line.split(" ", 1)[1] for line in long_functions(tmp_path)]
    assert found == ["over (81 lines)"]


def test_no_function_over_80_lines() -> None:
    assert long_functions(ROOT / "dse") == []
