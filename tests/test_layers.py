"""The package's layers: data flows one way, from the shared modules through the model, the
calibration and the search to the outputs and the CLI, and nothing imports upward. Checked on each
module's import statements (its source, not what it happens to load, imports inside functions
included), so a stray import fails here with the module and the line that made it.

Every module under ``dse/`` is checked, the top-level ones too: the shared modules
(:data:`SHARED`: errors, reading, records, safe_write, limits) import only each other.
``dse/__init__.py`` is the public API: it names every layer's public names and imports each lazily,
on first use, so it alone may import anything; ``dse/__main__.py`` is ``python -m dse``, the CLI's
entry point, and may import what the CLI may.

Inside the search layer the same holds for its rooms (:data:`ROOMS`): what a study is
(``search/study/``) imports nothing of the search above it; how it searches
(``search/algorithms/``) and where it lives (``search/storage/``) build on the study room and on
Optuna's private names (``search/_optuna.py``), never on each other. And no module imports itself
back through others: the package's import graph has no circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import dse

PACKAGE = Path(dse.__file__).parent
LAYERS = ("model", "calibration", "search", "outputs", "cli")
SHARED = frozenset({"errors", "limits", "reading", "records", "safe_write"})
"""The top-level modules below every layer."""
PUBLIC_API = "__init__"
"""``dse/__init__.py``: may import anything (lazily: see the module)."""
ENTRY = "__main__"
"""``dse/__main__.py``: the CLI's entry point, checked as the CLI."""
VERSION = "__version__"
"""The one name any module may take from the public API: dse's version, defined there (the package
metadata reads it) beside nothing imported eagerly."""
ALLOWED: dict[str, frozenset[str]] = {
    # what each layer may import from dse besides the shared modules: itself and the layers below
    "shared": frozenset(),
    **{layer: frozenset(LAYERS[:i + 1]) for i, layer in enumerate(LAYERS)},
}
OPTUNA_LAYERS = frozenset({"search", "cli"})
ROOMS: dict[str, frozenset[str]] = {
    # what each room of dse/search/ may import of the search: itself and what lies below it
    "study": frozenset({"study"}),
    "algorithms": frozenset({"study", "algorithms", "_optuna"}),
    "storage": frozenset({"study", "storage", "_optuna"}),
}


def _imports(path: Path, package: Path = PACKAGE) -> list[tuple[int, str]]:
    """(line, module) of every import in ``path``, those inside functions too; a name imported
    from a package of dse (``from dse import limits``, ``from dse.search import _optuna``) as the
    module it names."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            folder = package.parent.joinpath(*node.module.split("."))
            if node.module.split(".")[0] == "dse" and folder.is_dir():
                found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, node.module))
    return found


def _layer(path: Path, package: Path = PACKAGE) -> str | None:
    """The layer ``path`` belongs to: a package's name, ``shared`` for a shared module, ``cli``
    for the entry point, ``None`` for the public API (unchecked)."""
    parts = path.relative_to(package).parts
    if len(parts) > 1:
        assert parts[0] in LAYERS, f"dse/{parts[0]}/ is no layer: add it to LAYERS in its place"
        return parts[0]
    name = path.stem
    if name == PUBLIC_API:
        return None
    if name == ENTRY:
        return "cli"
    assert name in SHARED, f"dse/{name}.py is a top-level module of no layer: add it to SHARED"
    return "shared"


def _violations(package: Path = PACKAGE) -> list[str]:
    bad: list[str] = []
    for path in sorted(package.rglob("*.py")):
        layer = _layer(path, package)
        if layer is None:
            continue
        for line, name in _imports(path, package):
            where = f"{path.relative_to(package.parent)}:{line} imports {name}"
            if name.split(".")[0] == "optuna" and layer not in OPTUNA_LAYERS:
                bad.append(f"{where} (only dse.search and dse.cli import optuna)")
            if name == "dse" or not name.startswith("dse."):
                if name == "dse":
                    bad.append(f"{where} (import a module, not the public API)")
                continue
            target = name.removeprefix("dse.").split(".")[0]
            if target in SHARED or target in ALLOWED[layer] or target == VERSION:
                bad += _room_violation(path, package, name, where)
                continue
            bad.append(f"{where} (the {layer} layer may import {sorted(ALLOWED[layer])} and the "
                       f"shared modules {sorted(SHARED)})")
    return bad


def _room_violation(path: Path, package: Path, name: str, where: str) -> list[str]:
    """The import ``name`` of ``path`` if it leaves its room of the search (:data:`ROOMS`)."""
    parts = path.relative_to(package).parts
    if len(parts) < 3 or parts[0] != "search" or not name.startswith("dse.search."):
        return []
    room, target = parts[1], name.removeprefix("dse.search.").split(".")[0]
    if target in ROOMS[room]:
        return []
    return [f"{where} (the search's {room} room may import {sorted(ROOMS[room])} of the search)"]


def _graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Every module of the package (dotted) and the modules of the package it imports, the public
    API aside (it imports every layer lazily, and a layer takes only the version from it)."""
    modules = {".".join(p.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__"): p
               for p in package.rglob("*.py")}
    api = package.name
    return {name: {m for _, m in _imports(path, package) if m in modules and m != api}
            for name, path in modules.items() if name != api}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one module, or a module that
    imports itself (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    found.append(sorted(component))
    return found


def test_every_layer_imports_only_the_layers_below_it() -> None:
    assert _violations() == []


def test_no_module_imports_itself_back() -> None:
    assert _circles(_graph()) == []


def test_the_circle_check_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}, "e": {"a"}}
    assert _circles(graph) == [["a", "b", "c"], ["d"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_the_model_imports_only_the_model_and_the_shared_modules() -> None:
    assert ALLOWED["model"] == {"model"}
    assert ALLOWED["shared"] == set()


def test_the_check_sees_every_layer() -> None:
    layers = {_layer(p) for p in PACKAGE.rglob("*.py")}
    assert {*LAYERS, "shared", None} == layers
    assert {p.stem for p in PACKAGE.glob("*.py")} == {*SHARED, PUBLIC_API, ENTRY}
    assert any(name == "optuna" or name.startswith("optuna.")
               for p in (PACKAGE / "search").rglob("*.py") for _, name in _imports(p))


def test_the_check_finds_every_upward_import(tmp_path: Path) -> None:
    package = tmp_path / "dse"
    files = {
        "__init__.py": "from dse.cli import app\n",  # the public API: anything
        "__main__.py": "from dse.cli import main\n",
        "errors.py": "",
        "limits.py": "from dse.errors import DseInputError\n",
        "records.py": "from dse import limits\nfrom dse.model.system import System\n"
                      "from dse import __version__, evaluate\n",
        "model/evaluate.py": "def f():\n    from dse.calibration.fit import fit\n",
        "calibration/fit.py": "from dse.model.evaluate import evaluate\nimport optuna\n",
        "search/runner.py": "import optuna\nfrom dse.outputs.report import page\n",
        "search/study/study_file.py": "from dse.search.algorithms.samplers import SAMPLERS\n",
        "search/storage/opening.py": "from dse.search import _optuna\n"
                                     "from dse.search.study.study_file import StudySpec\n"
                                     "from dse.search.algorithms import sweep\n",
        "search/algorithms/sweep.py": "from dse.search.study import study_file\n",
    }
    for name, source in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(source, encoding="utf-8")
    found = [v.split(" (")[0] for v in _violations(package)]
    assert found == ["dse/calibration/fit.py:2 imports optuna",
                     "dse/model/evaluate.py:2 imports dse.calibration.fit",
                     "dse/records.py:2 imports dse.model.system",
                     "dse/records.py:3 imports dse.evaluate",
                     "dse/search/runner.py:2 imports dse.outputs.report",
                     "dse/search/storage/opening.py:3 imports dse.search.algorithms.sweep",
                     "dse/search/study/study_file.py:1 imports dse.search.algorithms.samplers"]
