"""Each stored key and each search rule is spelled in one module and used from there (issue 26): study
and trial attribute names (``dse:...``) only in :mod:`dse.search.study.attribute_keys`, the
warm-start modes only in :mod:`dse.search.study.seeding`, the coarse grid's 20,000-design cap only
in :mod:`dse.search.algorithms.reference`, the "fifth of the budget" only in :mod:`dse.search.study.seeding`,
the version only in ``dse/__init__.py``. Checked on the package's syntax trees (string and number
literals, not comments or prose), so a literal typed anywhere else fails here with its file and
line."""

from __future__ import annotations

import ast
import functools
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import dse
from dse.search.algorithms import reference
from dse.search.study import attribute_keys, seeding

PACKAGE = Path(dse.__file__).parent
ROOT = PACKAGE.parent
KEYS_HOME = Path(attribute_keys.__file__)
SEEDING_HOME = Path(seeding.__file__)
CAP_HOME = Path(reference.__file__)
REFERENCE_MAX_DESIGNS = reference.REFERENCE_MAX_DESIGNS
STUDY_KEY = re.compile(r"dse:[a-z_]*")
MODES = frozenset(m.value for m in seeding.WarmStart)


@functools.cache
def _parsed() -> tuple[tuple[Path, ast.AST], ...]:
    """Every module of the package, parsed once for all the checks."""
    return tuple((p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(PACKAGE.rglob("*.py")))


def _trees(skip: Path) -> Iterator[tuple[str, ast.AST]]:
    for path, tree in _parsed():
        if path != skip:
            yield str(path.relative_to(ROOT)), tree


def _strings(node: ast.AST) -> Iterator[ast.Constant]:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield sub


def study_key_literals(skip: Path = KEYS_HOME) -> list[str]:
    """``file:line 'dse:...'`` for every string literal that is a whole attribute name (or the
    bare prefix) outside ``skip``."""
    return [f"{where}:{s.lineno} {s.value!r}" for where, tree in _trees(skip)
            for s in _strings(tree) if STUDY_KEY.fullmatch(s.value)]


def _warm(node: ast.AST) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return "warm_start" in name


def _mode_strings(nodes: list[ast.AST]) -> list[ast.Constant]:
    return [s for n in nodes for s in _strings(n) if s.value in MODES]


def mode_hits(tree: ast.AST) -> list[ast.Constant]:
    """Warm-start modes typed as strings in ``tree``: compared with a ``warm_start`` value, passed
    as ``warm_start=``, or a ``warm_start`` parameter's default."""
    hits: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(_warm(n) for n in [node.left, *node.comparators]):
            hits += _mode_strings([node.left, *node.comparators])
        elif isinstance(node, ast.keyword) and node.arg == "warm_start":
            hits += _mode_strings([node.value])
        elif isinstance(node, ast.arguments):
            params = [*node.posonlyargs, *node.args]
            pairs = [*zip(params[len(params) - len(node.defaults):], node.defaults, strict=True),
                     *zip(node.kwonlyargs, node.kw_defaults, strict=True)]
            hits += _mode_strings([d for a, d in pairs if d is not None and "warm_start" in a.arg])
    return hits


def warm_start_literals(skip: Path = SEEDING_HOME) -> list[str]:
    """``file:line 'mode'`` for every :func:`mode_hits` outside ``skip``."""
    return [f"{where}:{s.lineno} {s.value!r}" for where, tree in _trees(skip) for s in mode_hits(tree)]


def cap_literals() -> list[str]:
    """The 20,000-design cap typed as a number, or as "20,000" in a string, outside its home."""
    return [f"{where}:{getattr(n, 'lineno', 0)}" for where, tree in _trees(CAP_HOME)
            for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and (n.value == REFERENCE_MAX_DESIGNS
                 or (isinstance(n.value, str) and f"{REFERENCE_MAX_DESIGNS:,}" in n.value))]


def fifth_literals() -> list[str]:
    """``x // 5`` (a fifth of the budget) outside :mod:`dse.search.study.seeding`."""
    return [f"{where}:{n.lineno}" for where, tree in _trees(SEEDING_HOME) for n in ast.walk(tree)
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.FloorDiv)
            and isinstance(n.right, ast.Constant) and n.right.value == seeding.WARM_BUDGET_DIVISOR]


def test_study_attribute_names_are_spelled_only_in_their_home() -> None:
    assert study_key_literals() == []


def test_warm_start_modes_are_spelled_only_in_their_home() -> None:
    assert warm_start_literals() == []


def test_the_design_cap_and_the_budget_share_live_in_one_module_each() -> None:
    assert cap_literals() == []
    assert fifth_literals() == []


def test_the_checks_see_the_literals_in_their_homes() -> None:
    # Each check, run on its own home, finds what the home defines: it is not blind.
    keys = {v for k, v in vars(attribute_keys).items() if k.endswith(("_KEY", "_PREFIX"))}
    assert {line.split(" ", 1)[1].strip("'") for line in study_key_literals(skip=Path())} >= keys
    assert len(keys) == len([k for k in vars(attribute_keys) if k.endswith(("_KEY", "_PREFIX"))])
    assert all(k.startswith(attribute_keys.KEY_PREFIX) for k in keys)
    sample = ast.parse('def f(warm_start="auto", sampler="auto"):\n'
                       '    g(warm_start=warm_start or "none", mode="sweep")\n'
                       '    return warm_start == "sweep" or self.warm_start in ("sweep", None)\n')
    hits = [s.value for s in mode_hits(sample)]
    assert sorted(hits) == ["auto", "none", "sweep", "sweep"]


def test_the_warm_start_share_is_a_fifth_of_the_budget_and_at_least_one_design() -> None:
    assert [seeding.warm_start_trials(b) for b in (0, 4, 5, 9, 10, 100, 1000)] == [1, 1, 1, 1, 2, 20, 200]
    assert seeding.warm_start_trials(1000, cap=seeding.WARM_MAX_TRIALS) == 40
    assert seeding.warm_start_trials(50, cap=seeding.WARM_MAX_TRIALS) == 10


def test_the_version_is_read_from_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "dse.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", dse.__version__)
