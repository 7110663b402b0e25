"""Build step: the repository's studies, search spaces and objective sets go into the wheel.

The top-level ``studies/``, ``search_spaces/`` and ``objectives/`` folders are the one canonical,
editable copy (never duplicated in git); a wheel carries them as ``dse/presets/FOLDER`` so an
installed dse finds its built-in presets anywhere (``dse.records.builtin_folder``). An editable
install reads the top-level folders themselves, so nothing is copied then. Everything else about
the package is declared in ``pyproject.toml``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PRESET_FOLDERS = ("studies", "search_spaces", "objectives")
ROOT = Path(__file__).resolve().parent


class BuildWithPresets(build_py):
    """``build_py`` that also copies the preset TOML files into ``dse/presets/`` of the build."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for folder in PRESET_FOLDERS:
            target = Path(self.build_lib) / "dse" / "presets" / folder
            target.mkdir(parents=True, exist_ok=True)
            for toml in sorted((ROOT / folder).glob("*.toml")):
                shutil.copyfile(toml, target / toml.name)


setup(cmdclass={"build_py": BuildWithPresets})
