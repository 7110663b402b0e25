"""What a study's files said when it ran (``dse:contents``): the text and digest of every file and
preset it resolved, the systems its search space names included.

A study's definition names files (its workload, space, objectives, catalog, calibration) and the
space names systems; a name resolves beside the file that gives it, then among the packaged presets
(:func:`dse.records.named_beside`), so a study resolves the same files from any working
directory. The content is recorded anyway, because the files can still change or be copied
elsewhere with other content under the same name: a run or resume whose systems or calibration
resolve to other content than recorded stops with one line naming both (unless forced: the change
is then logged), and the read-only commands build the space from the recorded systems, not the files
(:func:`dse.search.study.search_space.with_recorded_systems`), so a front is shown with the machines it was
scored on.
"""

from __future__ import annotations

import json
from pathlib import Path

from dse.records import OBJECTIVES, SPACE, WORKLOAD, NamedFile, read_named
from dse.search.study.search_space import SYSTEM_LABEL
from dse.search.study.study_file import CALIBRATION_LABEL, StudySpec, resolved, study_space

PACKAGED_CALIBRATION = "the packaged calibration"
"""How a message names the calibration of a study that names none."""


def study_contents(spec: StudySpec) -> dict[str, NamedFile]:
    """Every file ``spec`` resolves, read now: ``workload``, ``space``, ``objectives``,
    ``catalog`` and ``calibration`` (when the study has them) and ``system NAME`` for each system
    its space names."""
    out = {key: read_named(Path(resolved(spec, value, kind)), kind)
           for key, value, kind in (("workload", spec.workload, WORKLOAD), ("space", spec.space, SPACE),
                                    ("objectives", spec.objectives, OBJECTIVES))}
    if spec.catalog:
        out["catalog"] = read_named(Path(spec.catalog), None)
    if spec.calibration:
        out[CALIBRATION_LABEL] = read_named(Path(spec.calibration), None)
    out.update({SYSTEM_LABEL + name: named for name, named in study_space(spec).systems.items()})
    return out


def contents_json(contents: dict[str, NamedFile]) -> str:
    """The attribute's value: label -> path, digest and text, as JSON."""
    return json.dumps({label: named.record() for label, named in contents.items()}, sort_keys=True)


def moved_systems(recorded: str | None, current: dict[str, NamedFile]) -> dict[str, dict[str, str]]:
    """The systems that resolve now to other content than the study ``recorded`` (its
    ``dse:contents``, if any), by label: ``{"from": "PATH (sha256 ...)", "to": ...}``, and the
    calibration when it is another than the study scored with (:func:`moved_calibration`)."""
    return {**moved(recorded, {k: v for k, v in current.items() if k.startswith(SYSTEM_LABEL)}),
            **moved_calibration(recorded, current)}


def moved_calibration(recorded: str | None, current: dict[str, NamedFile]) -> dict[str, dict[str, str]]:
    """``{"calibration": {"from": ..., "to": ...}}`` when the study's calibration file holds other
    content than the study ``recorded``, or the study names one now and recorded none (it was
    scored with the packaged calibration), or the reverse; empty otherwise (and for a study that
    recorded no contents)."""
    if not recorded:
        return {}
    was: dict[str, str] | None = json.loads(recorded).get(CALIBRATION_LABEL)
    now = current.get(CALIBRATION_LABEL)
    if was is None and now is None:
        return {}
    if was is not None and now is not None:
        return moved(recorded, {CALIBRATION_LABEL: now})
    return {CALIBRATION_LABEL: {
        "from": f"{was['path']} (sha256 {was['sha256'][:12]})" if was else PACKAGED_CALIBRATION,
        "to": f"{now.path} (sha256 {now.digest[:12]})" if now else PACKAGED_CALIBRATION}}


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
    """The one line that stops a run: each moved system (or the calibration) with the recorded
    and the new file."""
    parts = [f"{label} resolves to {m['to']}, not to {'' if m['from'] == PACKAGED_CALIBRATION else 'the '}"
             f"{m['from']} the study recorded" for label, m in moved.items()]
    mixed = [what for what, found in (
        ("two machines under one name", any(k.startswith(SYSTEM_LABEL) for k in moved)),
        ("trials scored by two calibrations", CALIBRATION_LABEL in moved)) if found]
    return ("; ".join(parts) + f"; the results would mix {' and '.join(mixed)} (rerun with "
            "--force to continue anyway: the change is recorded)")


def moved_key(moved: dict[str, dict[str, str]]) -> str:
    """The study file's keys behind ``moved``: ``space`` for its systems, ``calibration``."""
    return ", ".join(sorted({CALIBRATION_LABEL if k == CALIBRATION_LABEL else "space" for k in moved}))


def where_from(recorded: str | None, current: dict[str, NamedFile], labels: list[str]) -> str:
    """For a refused definition change: which of the files ``labels`` (``workload``, ``space``...)
    now hold other content than recorded, and where each was and is (empty when none)."""
    found = moved(recorded, {k: v for k, v in current.items() if k in labels})
    return "".join(f" ({label}: {m['to']}; recorded: {m['from']})" for label, m in found.items())
