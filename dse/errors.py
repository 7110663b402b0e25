"""Errors raised on bad input.

Every error that reaches a user names the file (or preset) and the dotted key at fault, so the CLI can
print it on one line and exit with code 2.
"""

from __future__ import annotations


class DseInputError(ValueError):
    """Bad user input: a malformed file, an unknown key or preset, a value out of range.

    Args:
        source: the file path or preset name the value came from (``"--set"`` for overrides).
        key: the dotted key at fault (``"node.scaleup_gb_s"``); empty for the whole file.
        message: what was expected and what was found.
    """

    def __init__(self, source: str, key: str, message: str) -> None:
        self.source = source
        self.key = key
        self.message = message
        where = f"{source}: {key}" if key else source
        super().__init__(f"{where}: {message}")
