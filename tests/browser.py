"""Debian's Chromium for the tests that open pages (Playwright drives it; no browser of its own is
downloaded). A test module importing this is skipped when Chromium or Playwright is missing, except
in CI, where a missing Chromium fails the run."""

from __future__ import annotations

import os
import shutil

import pytest

CHROMIUM = shutil.which("chromium")
if CHROMIUM is None and not os.environ.get("CI"):
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)
playwright_api = pytest.importorskip("playwright.sync_api")
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"]
