"""What a study's files said when it ran (``dse:contents``): the text and digest of every file and
preset it resolved, the systems its search space names included.

A study's definition names files (its workload, space, objectives, catalog) and the space names
systems; a name resolves beside the file that gives it, then among the packaged presets
(:func:`dse.records.named_beside`), so a study resolves the same files from any working
directory. The content is recorded anyway, because the files can still change or be copied
elsewhere with other content under the same name: a run or resume whose systems resolve to other
content than recorded stops with one line naming both (unless forced: the change is then
logged), and the read-only commands build the space from the recorded systems, not the files
(:func:`dse.search.study.search_space.with_recorded_systems`), so a front is shown with the machines it was
scored on.
"""

from __future__ import annotations

import json
from pathlib import Path

from dse.records import OBJECTIVES, SPACE, WORKLOAD, NamedFile, named_file, read_named
from dse.search.study.search_space import SYSTEM_LABEL
from dse.search.study.study_file import StudySpec, resolved, study_space


def study_contents(spec: StudySpec) -> dict[str, NamedFile]:
    """Every file ``spec`` resolves, read now: ``workload``, ``space``, ``objectives``,
    ``catalog`` (when the study has one) and ``system NAME`` for each system its space names."""
    out = {key: read_named(named_file(resolved(spec, value, kind), kind), kind)
           for key, value, kind in (("workload", spec.workload, WORKLOAD), ("space", spec.space, SPACE),
                                    ("objectives", spec.objectives, OBJECTIVES))}
    if spec.catalog:
        out["catalog"] = read_named(Path(spec.catalog), None)
    out.update({SYSTEM_LABEL + name: named for name, named in study_space(spec).systems.items()})
    return out


def contents_json(contents: dict[str, NamedFile]) -> str:
    """The attribute's value: label -> path, digest and text, as JSON."""
    return json.dumps({label: named.record() for label, named in contents.items()}, sort_keys=True)


def moved_systems(recorded: str | None, current: dict[str, NamedFile]) -> dict[str, dict[str, str]]:
    """The systems that resolve now to other content than the study ``recorded`` (its
    ``dse:contents``, if any), by label: ``{"from": "PATH (sha256 ...)", "to": ...}``."""
    return moved(recorded, {k: v for k, v in current.items() if k.startswith(SYSTEM_LABEL)})


def moved(recorded: str | None, current: dict[str, NamedFile]) -> dict[str, dict[str, str]]:
    """The files of ``current`` whose content differs from what the study ``recorded``, by label
    (a label the study did not record is not compared)."""
    if not recorded:
        return {}
    old: dict[str, dict[str, str]] = json.loads(recorded)
    out: dict[str, dict[str, str]] = {}
    for label, now in current.items():
        was = old.get(label)
        if was is not None and was["sha256"] != now.digest:
            out[label] = {"from": f"{was['path']} (sha256 {was['sha256'][:12]})",
                          "to": f"{now.path} (sha256 {now.digest[:12]})"}
    return out


def moved_message(moved: dict[str, dict[str, str]]) -> str:
    """The one line that stops a run: each moved system with the recorded and the new file."""
    parts = [f"{label} resolves to {m['to']}, not to the {m['from']} the study recorded"
             for label, m in moved.items()]
    return ("; ".join(parts) + "; the results would mix two machines under one name (rerun with "
            "--force to continue anyway: the change is recorded)")


def where_from(recorded: str | None, current: dict[str, NamedFile], labels: list[str]) -> str:
    """For a refused definition change: which of the files ``labels`` (``workload``, ``space``...)
    now hold other content than recorded, and where each was and is (empty when none)."""
    found = moved(recorded, {k: v for k, v in current.items() if k in labels})
    return "".join(f" ({label}: {m['to']}; recorded: {m['from']})" for label, m in found.items())
