"""The package's layers: data flows one way, from the model through the search to the outputs and
the CLI. Checked on each module's import statements (its source, not what it happens to load), so a
stray import fails here with the module and the line that made it."""

from __future__ import annotations

import ast
from pathlib import Path

import dse

PACKAGE = Path(dse.__file__).parent
LAYERS = ("model", "calibration", "search", "outputs", "cli")
ALLOWED: dict[str, frozenset[str]] = {
    # what each layer may import from dse, besides the shared dse.errors, dse.records,
    # dse.reading and dse.safe_write (SHARED)
    "model": frozenset({"model", "calibration.parameters"}),
    "calibration": frozenset({"model", "calibration"}),
    "search": frozenset({"model", "calibration", "search"}),
    "outputs": frozenset({"model", "calibration", "search", "outputs"}),
    "cli": frozenset(LAYERS),
}
SHARED = frozenset({"errors", "reading", "records", "safe_write"})
OPTUNA_LAYERS = frozenset({"search", "cli"})


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def _layer(path: Path) -> str | None:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 and parts[0] in LAYERS else None


def _violations() -> list[str]:
    bad: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        layer = _layer(path)
        if layer is None:
            continue
        for line, name in _imports(path):
            where = f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
            if name.split(".")[0] == "optuna" and layer not in OPTUNA_LAYERS:
                bad.append(f"{where} (only dse.search and dse.cli import optuna)")
            if not name.startswith("dse."):
                continue
            target = name.removeprefix("dse.")
            if target.split(".")[0] in SHARED:
                continue
            if not any(target == a or target.startswith(a + ".") for a in ALLOWED[layer]):
                bad.append(f"{where} (the {layer} layer may import {sorted(ALLOWED[layer])})")
    return bad


def test_every_layer_imports_only_the_layers_below_it() -> None:
    assert _violations() == []


def test_the_check_sees_every_layer() -> None:
    layers = {_layer(p) for p in PACKAGE.rglob("*.py")}
    assert set(LAYERS) <= layers
    assert any(name == "optuna" or name.startswith("optuna.")
               for p in (PACKAGE / "search").rglob("*.py") for _, name in _imports(p))
