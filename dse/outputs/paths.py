"""Where the outputs are written by default, importable without the outputs themselves (the CLI
shows these defaults in its help without importing pandas)."""

from __future__ import annotations

from pathlib import Path

from dse.records import PACKAGE_DIR

_CHECKOUT_CASES = PACKAGE_DIR.parent / "docs" / "case-studies"
CASE_DIR = _CHECKOUT_CASES if _CHECKOUT_CASES.is_dir() else Path("case-studies")
"""``docs/case-studies/`` of the checkout, where the pages live; ``./case-studies`` under the
working directory for an installed dse (never the installed package)."""
