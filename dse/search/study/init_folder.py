"""``dse init``: a folder of the user's own study files to edit, copied from a packaged study.

The study (:data:`INIT_STUDY`, today's nodes on a DCNv2 workload, unless ``dse init --from``
names another, such as ``zion-2020``) and the workload, search space and objective set it names
are copied under ``my-*`` names, the study's references rewritten to the copies beside it, plus a
user catalog of commented examples (prices, parts, facility) that the study names. Run it with
``dse run DIR/my-study.toml``: its results land beside it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from dse.errors import DseInputError
from dse.limits import MAX_DATA_FILE_BYTES, MAX_SPEC_FILE_BYTES
from dse.reading import read_text
from dse.records import OBJECTIVES, SPACE, SYSTEM, WORKLOAD, named_beside, read_toml
from dse.safe_write import check_target, write_file
from dse.search.study.search_space import load_space
from dse.search.study.study_file import study_path

INIT_STUDY = "todays-hardware"
"""The study ``dse init`` starts from: MLPerf DLRM-DCNv2 on today's eight-accelerator nodes as
sold (H100, H200, B200, MI300X, Gaudi2) at 1-16 nodes, the question a buyer asks today."""
STUDY_FILE = "my-study.toml"
CATALOG_FILE = "my-parts.toml"
CALIBRATION_FILE = "my-calibration.toml"
"""The copy of a study's own calibration (its ensemble beside it as ``my-calibration_ensemble.json``)."""
COPIES = {"workload": (WORKLOAD, "my-workload"), "space": (SPACE, "my-space"),
          "objectives": (OBJECTIVES, "my-objectives")}
"""Study key -> (kind of file, name of its copy)."""

CATALOG_EXAMPLE = """\
# Your own parts, prices and facility figures, on top of dse's catalog (dse list accelerators,
# dse list cpus, dse list nics show its keys and figures). Uncomment and edit; unknown keys are
# errors naming this file. The study page lists every change made here.
#
# [price]                          # price_usd of an accelerator, CPU or NIC, by its key
# h100-sxm5-80gb = 25000
# xeon-8480p = 9000
#
# [discounts]                      # a vendor's discount on every part of theirs you do not price
# nvidia = 0.15
#
# [node_price.dgx-h100]            # a quote for a whole node of a system, in place of its parts
# price_usd = 350000
# price_low_usd = 320000           # the quote's spread, drawn by the robust front
# price_high_usd = 380000
#
# [facility]
# usd_per_kwh = 0.12               # electricity
# pue = 1.2
# server_amortisation_years = 4
# rack_kw = 40                     # power and space of the racks a system of nodes fills
# rack_units = 42
#
# [accelerator.h100-sxm5-80gb]     # change any figure of a part ...
# tdp_w = 650
#
# [cpu.my-cpu]                     # ... or add a part: every key an entry of `dse list cpus --json` has
"""


@dataclass(frozen=True, slots=True)
class Starter:
    """The files ``dse init`` wrote, the study first."""

    study: Path
    files: tuple[Path, ...]


def _rename(text: str, key: str, value: str) -> str:
    """``text`` with the top-level string ``key = "..."`` set to ``value`` (comments kept)."""
    pattern = re.compile(rf'^{key}\s*=\s*"[^"]*"', re.MULTILINE)
    if not pattern.search(text):
        raise DseInputError("dse init", key, "the example study has no such key to rewrite")
    return pattern.sub(f'{key} = "{value}"', text, count=1)


def _own_systems(space: Path, folder: Path, texts: dict[Path, str]) -> dict[Path, str]:
    """The user's own systems the space ``space`` names (not packaged presets), copied into
    ``folder/systems/`` where the copied space finds them by name; a choice named by a path is
    rewritten to the copy's name in the space's copy (in ``texts``, changed in place)."""
    copied = folder / f"{COPIES['space'][1]}.toml"
    out: dict[Path, str] = {}
    for name, named in load_space(str(space)).systems.items():
        path = Path(named.path)
        if SYSTEM.is_builtin(path):
            continue
        out[folder / "systems" / f"{path.stem}.toml"] = named.text
        if name != path.stem:
            texts[copied] = texts[copied].replace(f'"{name}"', f'"{path.stem}"')
    return out


def _own_calibration(calibration: Path, folder: Path) -> dict[Path, str]:
    """The study's own calibration file and, when it has one, its ensemble beside it
    (:func:`dse.calibration.ensemble.ensemble_beside`), as copies in ``folder``."""
    from dse.calibration.ensemble import ensemble_beside

    out = {folder / CALIBRATION_FILE: read_text(calibration, MAX_SPEC_FILE_BYTES)}
    ensemble = ensemble_beside(calibration)
    if ensemble.is_file():
        out[ensemble_beside(folder / CALIBRATION_FILE)] = read_text(ensemble, MAX_DATA_FILE_BYTES)
    return out


def write_starter(folder: Path, start: str = INIT_STUDY) -> Starter:
    """Copy the study ``start`` (a name: ``./studies``, then the packaged studies; or a file) and
    the files it names into ``folder`` (created) for editing. Its names resolve as the study's
    own do (beside it, then the packaged presets); its catalog and its calibration (with that
    calibration's ensemble) are copied too, and its storage left to the default (the copy's
    results land beside it).

    The user's own systems the space names are copied into ``folder/systems/``, so the copy
    finds them. Existing files are never overwritten: a folder that already holds one is refused.
    """
    source = study_path(start)
    spec = read_toml(source)
    for key in COPIES:
        if not isinstance(spec.get(key), str):
            raise DseInputError(str(source), key, "dse init copies a study that names its "
                                f"{key} (a string); this one does not")
    texts = {folder / STUDY_FILE: _rename(source.read_text(encoding="utf-8"), "name", "my-study")}
    for key, (kind, copy) in COPIES.items():
        original = named_beside(str(spec[key]), kind, source)
        texts[folder / f"{copy}.toml"] = _rename(original.read_text(encoding="utf-8"), "name", copy)
        texts[folder / STUDY_FILE] = _rename(texts[folder / STUDY_FILE], key, f"{copy}.toml")
        if kind is SPACE:
            texts.update(_own_systems(original, folder, texts))
    if "storage" in spec:  # the copy keeps its own results: NAME.journal beside it
        texts[folder / STUDY_FILE] = _rename(texts[folder / STUDY_FILE], "storage", "")
    if "catalog" in spec:
        texts[folder / CATALOG_FILE] = (source.parent / str(spec["catalog"])).read_text(encoding="utf-8")
        texts[folder / STUDY_FILE] = _rename(texts[folder / STUDY_FILE], "catalog", CATALOG_FILE)
    else:
        study = texts[folder / STUDY_FILE]
        line = 'objectives = "my-objectives.toml"'
        texts[folder / STUDY_FILE] = study.replace(line, f'{line}\ncatalog = "{CATALOG_FILE}"  # your '
                                                   "parts and prices (all commented out at first)", 1)
        texts[folder / CATALOG_FILE] = CATALOG_EXAMPLE
    if isinstance(spec.get("calibration"), str) and spec["calibration"]:
        texts.update(_own_calibration(source.parent / str(spec["calibration"]), folder))
        texts[folder / STUDY_FILE] = _rename(texts[folder / STUDY_FILE], "calibration", CALIBRATION_FILE)
    never = "dse init never overwrites (choose another folder)"
    for path in texts:
        check_target(path, False, never)
    for path, text in texts.items():
        write_file(path, text, replace=False, hint=never)
    return Starter(folder / STUDY_FILE, tuple(texts))
