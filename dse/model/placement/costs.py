"""The planner's estimator: each shard's bandwidth-free loads (bytes in the device's own memory and
all-to-all bytes per step) and its traffic there, from the per-lookup coefficients of
:mod:`dse.model.estimators`."""

from __future__ import annotations

from dse.model.estimators import Traffic, local_traffic, new_traffic
from dse.model.widths import COMM_BYTES, INDEX_BYTES
from dse.model.workload import Workload, derived


def alltoall_bytes(per_elem: float, dim: int, out_rows: float, batch: float) -> float:
    """All-to-all bytes per step of a shard whose pooled output is ``out_rows`` of the ``batch``
    rows, ``dim`` wide, at ``per_elem`` bytes per element of a full batch
    (:attr:`ShardCosts.comm_per_elem`): the one place this balancing load is computed."""
    return per_elem * dim * out_rows / batch


Coefficients = dict[int, tuple[float, float, float]]
"""Per dim: the per-lookup, per-updated-row and per-output-row bytes of
:meth:`ShardCosts._coefficients`."""


def _row_cost_caches(wl: Workload) -> tuple[dict[int, tuple[int, int]], dict[int, Coefficients]]:
    """Empty caches for :class:`ShardCosts`, kept with ``wl`` (their figures depend on it alone): row
    bytes per dim, and per access unit the traffic coefficients per dim."""
    return {}, {}


class ShardCosts:
    """Bandwidth-free shard loads for balancing: bytes in the device's own memory and all-to-all
    bytes, kept apart because the step waits for the slowest device in each. Keeping bandwidths out
    of the plan makes the plan the same for every link speed, so a faster link can only shorten the
    step (the timing is monotone for a fixed plan). ``unit``: the access unit of the device's own
    memory (its first tier's, bytes)."""

    def __init__(self, wl: Workload, g: int, b: float, unit: int) -> None:
        self.wl, self.g, self.b, self.unit = wl, g, b, unit
        self.s_c = COMM_BYTES[wl.precision]
        self.comm_per_elem = 2.0 * (g - 1) * b * self.s_c
        # Per-dim figures depend on the workload (and the unit) alone: kept with it, filled as dims
        # come up; the coefficients of one unit are a dict of their own, read by dim.
        self._rows, by_unit = derived(wl, "placement.row_costs", _row_cost_caches)
        coef = by_unit.get(unit)
        if coef is None:
            coef = by_unit[unit] = {}
        self._coef: Coefficients = coef

    def row(self, dim: int) -> tuple[int, int]:
        """(row bytes, optimizer-state bytes per row) for ``dim``."""
        got = self._rows.get(dim)
        if got is None:
            rb = self.wl.row_bytes(dim)
            got = self._rows[dim] = (rb, self.wl.row_state_bytes(dim) - rb)
        return got

    def _coefficients(self, dim: int) -> tuple[float, float, float]:
        """Per-lookup forward bytes, per-updated-row backward bytes and per-output-row bytes of
        :func:`~dse.model.estimators.local_traffic` for ``dim`` (its traffic is linear in each
        count). Called on a miss of ``self._coef``, which the callers read first (a method call per
        shard costs)."""
        rb, st = self.row(dim)
        one = local_traffic(1.0, rb, st, 0.0, unit=self.unit)
        got = self._coef[dim] = (one.local_fwd, one.local_bwd - INDEX_BYTES, float(dim * self.s_c))
        return got

    def traffic(self, lookups: float, dim: int, out_rows: float, update_rows: float = 0.0,
                touched: float | None = None) -> Traffic:
        """Traffic in the device's own memory of a shard whose backward updates its ``touched``
        distinct rows (None: a row a lookup), or ``update_rows`` rows when more (a replica, updated
        densely): :func:`~dse.model.estimators.local_traffic`, from its coefficients."""
        per_lookup, per_update, per_out = self._coef.get(dim) or self._coefficients(dim)
        out = out_rows * per_out
        rows = lookups if touched is None else touched
        if update_rows > rows:  # max(), without its call
            rows = update_rows
        return new_traffic((lookups * per_lookup + out,  # local forward, backward; no host traffic
                            out + rows * per_update + lookups * INDEX_BYTES, 0.0, 0.0, 0.0, 0.0))

    def piece(self, lookups: float, dim: int, out_rows: float, batch: float,
              touched: float) -> tuple[float, float, Traffic]:
        """(Bytes in the device's own memory, all-to-all bytes) per step of one piece and its
        :func:`~dse.model.estimators.local_traffic`, its ``touched`` distinct rows (see
        :func:`~dse.model.estimators.distinct_rows`) read and written once."""
        per_lookup, per_update, per_out = self._coef.get(dim) or self._coefficients(dim)
        out = out_rows * per_out
        mem = lookups * (per_lookup + INDEX_BYTES) + touched * per_update + 2.0 * out
        traffic = new_traffic((lookups * per_lookup + out,
                               out + touched * per_update + lookups * INDEX_BYTES, 0.0, 0.0, 0.0, 0.0))
        return mem, alltoall_bytes(self.comm_per_elem, dim, out_rows, batch), traffic
