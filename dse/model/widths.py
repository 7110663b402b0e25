"""Byte widths of the elements a training step stores and moves, by precision.

Placement sizes memory with them, the estimators count traffic with them and timing turns both into
seconds, so each width is defined once, here (docs/design.md, section 5).
"""

from __future__ import annotations

COMM_BYTES: dict[str, int] = {"fp32": 4, "tf32": 4, "amp": 2, "bf16": 2, "fp16": 2, "fp8": 2}
"""Bytes per communicated activation or gradient element by precision (fp8 training still
communicates 16-bit activations and gradients)."""
ACTIVATION_BYTES: dict[str, int] = {"fp32": 4, "tf32": 4, "amp": 2, "bf16": 2, "fp16": 2, "fp8": 1}
"""Bytes per stored activation element by precision (the GEMMs' inputs and outputs)."""
INDEX_BYTES = 8
"""Bytes per sparse index: indices are int64 (docs/design.md, section 5: dense features and
indices, 8 bytes each)."""
