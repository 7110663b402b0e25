"""The repository explains itself: no tracked file cites a document outside the repository, and
every ``docs/*.md`` reference (with its ``#anchor``, and a "docs/design.md, section N") resolves.

Files are those git tracks under ``dse/``, ``docs/``, ``tests/``, ``benchmarks/`` and ``README.md``;
generated ``.html`` pages are skipped. Anchors are matched against the target's headings, slugged as
GitHub slugs them (lower case, punctuation dropped, spaces to hyphens, ``-1``, ``-2`` for repeats).
"""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCOPE = ("dse", "docs", "tests", "benchmarks", "studies", "search_spaces", "objectives", "setup.py",
         "README.md")

# Spelled in pieces so that this file does not cite them itself.
OUTSIDE = (
    "DESIGN" + ".md",  # the team's private brief, restated in docs/design.md
    "/work" + "/",  # absolute paths of the machine the project was written on
    "../" + "shared",
    "hardware_" + "sources.md",  # the private data notes, restated in docs/sources.md
    "workloads" + ".md",
)
DOC_REF = re.compile(r"(?<![\w./-])(docs/[\w./-]+\.md)(#[\w-]+)?")
SECTION_REF = re.compile(r"docs/design\.md,\s+sections?\s+(\d+)(?:\s*-\s*(\d+))?")
MD_LINK = re.compile(r"\]\(([\w./-]+\.md)(#[\w-]+)?\)")
PLACEHOLDER = re.compile(r"(^|/)[A-Z][A-Z_]*(\.md|/)")
"""A missing path with a part in capitals (``docs/case-studies/NAME.md``) names a pattern."""


def tracked_files() -> list[Path]:
    """Text files in scope that git tracks (generated HTML pages excluded)."""
    out = subprocess.run(["git", "ls-files", "-z", "--", *SCOPE], cwd=ROOT, check=True,
                         capture_output=True).stdout.decode()
    return [ROOT / name for name in out.split("\0") if name and not name.endswith(".html")]


def read_text(path: Path) -> str | None:
    """The file as text, or None for a binary file or one deleted from the work tree."""
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, FileNotFoundError):
        return None


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@functools.cache
def anchors(path: Path) -> frozenset[str]:
    """Every heading anchor of a Markdown file (headings inside code fences do not count)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fenced or not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return frozenset(out)


def design_sections() -> set[int]:
    """Numbers of the ``## N. Title`` sections of docs/design.md."""
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    return {int(n) for n in re.findall(r"^## (\d+)\. ", text, flags=re.M)}


def broken_reference(target: Path, anchor: str | None) -> str:
    """Why a reference to ``target`` (and ``#anchor``) does not resolve, or ''."""
    if not target.is_file():
        return "no such file"
    if anchor and anchor[1:] not in anchors(target):
        return f"no heading for {anchor}"
    return ""


def problems(path: Path, text: str) -> list[str]:
    """Every reference in ``text`` (the content of ``path``) that leaves the repository or dangles."""
    rel = path.relative_to(ROOT)
    out = [f"{rel}:{n}: cites {bad!r}" for n, line in enumerate(text.splitlines(), 1)
           for bad in OUTSIDE if bad in line]
    for m in DOC_REF.finditer(text):
        why = broken_reference(ROOT / m.group(1), m.group(2))
        if why and not (why == "no such file" and PLACEHOLDER.search(m.group(1))):
            out.append(f"{rel}: {m.group(0)}: {why}")
    sections = design_sections()
    for m in SECTION_REF.finditer(text):
        first = int(m.group(1))
        last = int(m.group(2) or first)
        missing = [n for n in range(first, last + 1) if n not in sections]
        if missing:
            out.append(f"{rel}: {m.group(0)}: docs/design.md has no section {missing}")
    if path.suffix == ".md":
        for m in MD_LINK.finditer(text):  # relative Markdown links, as GitHub renders them
            why = broken_reference((path.parent / m.group(1)).resolve(), m.group(2))
            if why:
                out.append(f"{rel}: link {m.group(1)}{m.group(2) or ''}: {why}")
    return out


def test_the_design_and_sources_docs_exist_with_their_sections() -> None:
    assert design_sections() == set(range(1, 8))
    assert {"nvidia-a100", "host-cpus", "criteo-1tb-small", "references"} <= anchors(
        ROOT / "docs" / "sources.md")


def test_no_reference_leaves_the_repository_or_dangles() -> None:
    files = tracked_files()
    assert any(p.name == "catalog.toml" for p in files)  # git ls-files saw the package
    found = [p for path in files if (text := read_text(path)) is not None
             for p in problems(path, text)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(("heading", "expected"), [
    ("NVIDIA A100", "nvidia-a100"),
    ("Intel Xeon Platinum 8480+", "intel-xeon-platinum-8480"),
    ("5. Step-time model", "5-step-time-model"),
    ("The overlap tree (`dse.model.timing.step_tree`)", "the-overlap-tree-dsemodeltimingstep_tree"),
])
def test_slug_follows_github(heading: str, expected: str) -> None:
    assert slug(heading) == expected


def test_the_checker_catches_what_it_should() -> None:
    bad = ROOT / "tests" / "example.py"
    # Pieced together, as OUTSIDE is: the scan of the repository reads this file too.
    text = ("see " + "DESIGN" + ".md section 2; docs/" + "nowhere.md; docs/sources.md#" + "no-such-entry; "
            "docs/design.md, section " + "9; docs/case-studies/NAME.md; docs/sources.md#nvidia-a100")
    found = problems(bad, text)
    assert len(found) == 4, found
