"""The partitioner: which device holds each piece. HBM pieces are balanced on two loads at once
(HBM bytes and all-to-all bytes), largest first, to the least-loaded device with room (LPT), the
row-wise pieces of one table inside one scale-up domain; host pieces go to nodes by the same rule
on their host traffic, then to the node's least-loaded device."""

from __future__ import annotations

import heapq
import itertools
import math
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from dse.model.estimators import Traffic, pooled_traffic, zipf_norm
from dse.model.placement.budgets import Budgets
from dse.model.placement.candidates import Candidate
from dse.model.placement.costs import ShardCosts
from dse.model.placement.plan import Shard, new_shard


def lpt_assign(
    costs: Sequence[float],
    sizes: Sequence[float],
    capacities: Sequence[float],
    loads: Sequence[float] | None = None,
) -> list[int | None]:
    """Assign items (largest cost first) to the least-loaded bin that still has room.

    Returns the bin of each item, ``None`` where no bin has room. ``loads`` are the bins' starting
    loads (zero by default). Without capacity limits this is Graham's LPT rule: the max load is within
    4/3 - 1/(3m) of optimal for m bins.
    """
    order = sorted(range(len(costs)), key=lambda i: -costs[i])
    free = list(capacities)
    start = loads if loads is not None else [0.0] * len(capacities)
    heap = [(start[b], b) for b in range(len(capacities))]
    heapq.heapify(heap)
    out: list[int | None] = [None] * len(costs)
    for i in order:
        skipped: list[tuple[float, int]] = []
        while heap:
            load, b = heapq.heappop(heap)
            if sizes[i] <= free[b]:
                out[i] = b
                free[b] -= sizes[i]
                heapq.heappush(heap, (load + costs[i], b))
                break
            skipped.append((load, b))
        for entry in skipped:
            heapq.heappush(heap, entry)
    return out


@dataclass(frozen=True, slots=True)
class DeviceState:
    """Every device's state as the partitioner fills them: one entry a device in each list, the
    lists changed in place as pieces land."""

    free: list[float]
    """Bytes of room left for tables."""
    load_mem: list[float]
    """HBM bytes per step of the pieces placed (non-negative) ..."""
    load_comm: list[float]
    """... and their all-to-all bytes per step."""

    def part(self, lo: int, hi: int) -> DeviceState:
        """A copy of devices ``lo`` to ``hi - 1`` (the caller's to change)."""
        return DeviceState(self.free[lo:hi], self.load_mem[lo:hi], self.load_comm[lo:hi])

    def idle(self) -> bool:
        """Whether no device carries any load."""
        return not (any(self.load_mem) or any(self.load_comm))


class Norm(NamedTuple):
    """The normalisers of the two loads: 1 / all HBM bytes and 1 / all all-to-all bytes (a device's
    key is its larger normalised load)."""

    mem: float
    comm: float


Slice = list[tuple[float, float, float, int, int]]
"""Runs of equal pieces for :func:`assign_hbm`, each (HBM bytes, all-to-all bytes, size in bytes,
how many, the flat index of its first piece): the pieces of a split come as one run."""


def _ranked(mem: Sequence[float], comm: Sequence[float], load_mem: Sequence[float],
            load_comm: Sequence[float]) -> tuple[float, float, list[float], list[int]]:
    """For :func:`balanced_assign`: the normalisers (1 / all HBM bytes, 1 / all all-to-all bytes),
    each item's key (its larger normalised load) and the items by key, largest first (the sort is
    stable: ties keep their order)."""
    inv_m = 1.0 / ((sum(mem) + sum(load_mem)) or 1.0)
    inv_c = 1.0 / ((sum(comm) + sum(load_comm)) or 1.0)
    keys = [m * inv_m if m * inv_m > c * inv_c else c * inv_c for m, c in zip(mem, comm, strict=True)]
    return inv_m, inv_c, keys, sorted(range(len(keys)), key=keys.__getitem__, reverse=True)


def balanced_assign(
    mem: Sequence[float],
    comm: Sequence[float],
    sizes: Sequence[float],
    capacities: Sequence[float],
    load_mem: list[float],
    load_comm: list[float],
) -> list[int | None]:
    """LPT on two loads at once: items (largest normalised load first) go to the device whose larger
    normalised load (HBM bytes / all HBM bytes, all-to-all bytes / all such bytes) is smallest and
    that has room. Updates ``load_mem`` and ``load_comm`` (non-negative); returns each item's device
    or ``None``. (:func:`balanced_runs` with a run per item.)"""
    out = [-1] * len(mem)
    balanced_runs([(m, c, s, 1, i) for i, (m, c, s) in enumerate(zip(mem, comm, sizes, strict=True))],
                  DeviceState(list(capacities), load_mem, load_comm), out)
    return [None if d < 0 else d for d in out]


def balanced_runs(runs: Slice, state: DeviceState, out: list[int]) -> None:
    """:func:`balanced_assign` of runs of equal items, each (HBM bytes, all-to-all bytes, size,
    count, index in ``out`` of its first item; the items are the runs' in order): sets ``out`` of
    each item placed (the others keep theirs), uses up the devices' room, updates their loads.

    A run's items have one key, so sorting the runs (stably) orders the items as sorting them one
    by one would."""
    free, load_mem, load_comm = state.free, state.load_mem, state.load_comm
    total_m = total_c = 0.0  # the items' sums, in order, as sum() adds them
    for m, c, _, k, _ in runs:
        if k == 1:
            total_m += m
            total_c += c
            continue
        for _ in range(k):
            total_m += m
            total_c += c
    norm = Norm(1.0 / ((total_m + sum(load_mem)) or 1.0), 1.0 / ((total_c + sum(load_comm)) or 1.0))
    inv_m, inv_c = norm
    keys = [m * inv_m if m * inv_m > c * inv_c else c * inv_c for m, c, _, _, _ in runs]
    order = sorted(range(len(runs)), key=keys.__getitem__, reverse=True)  # stable: ties in order
    n = len(free)
    # A device without load has key 0.0, below every loaded device's: a heap of (key, device) would
    # yield the idle ones first, in index order. So while the next idle device has room and the last
    # placement left a key above 0.0, that device is the choice, and the heap is built only if items
    # are left then (usually none are: fewer items than idle devices).
    started_idle = not (any(load_mem) or any(load_comm))
    idle: Sequence[int] = range(n)
    if not started_idle:
        # The devices with zero loads, when the loads are non-negative (else the guard fails) and
        # no loaded device's key is 0.0.
        idle = [d for d, m, c in zip(range(n), load_mem, load_comm, strict=True) if not (m or c)]
        if not (idle and _keys_apart(load_mem, inv_m) and _keys_apart(load_comm, inv_c)):
            idle = ()
    left: list[float] = []  # the key each idle placement left, in order of the idle devices
    at, j = _fill_idle(runs, order, idle, state, norm, out, left)
    if at == len(order):
        return
    # (key, device) of every device (or of the least-loaded ones: _least_keys), a heap: the pairs
    # are distinct (one per device), so the device each pop yields does not depend on the heap's
    # internal order, and replacing the top in place picks the same devices as a pop followed by a
    # push, with one sift instead of two.
    # The sizes of the items left, in order, when they may be fewer than the devices (each run left
    # has one at least, the first one past its j placed): otherwise _least_keys takes every device.
    need: list[float] | None = None
    if len(order) - at < n:
        need = []
        for r in order[at:]:
            need += [runs[r][2]] * runs[r][3]
        need = need[j:] if j else need
    heap = _least_keys(_device_keys(left, idle, started_idle, state, norm), need, free, norm)
    replace = heapq.heapreplace
    # Devices passed over as full leave the heap for ``parked``, (-room, device, key), a heap too:
    # the largest room first. Their room and loads stay as they are while they are out, so for each
    # run it suffices to bring back those with room for its pieces, and a piece picks the device it
    # would pick with them all in the heap (a device's pair is unique: the others come off in the
    # same order), without passing over the full ones again.
    parked: list[tuple[float, int, float]] = []
    for r in order[at:] if heap else ():
        m, c, size, k, first = runs[r]
        if parked and not size > -parked[0][0]:
            _unpark(heap, parked, size)
        for i in range(first + j, first + k) if heap else ():
            d = heap[0][1]
            if size > free[d]:  # the least-loaded device is full
                _place_past_full(heap, i, (size, m, c), norm, state, out, parked)
                if not heap:
                    break  # no device has room for this run's pieces
                continue
            out[i] = d
            free[d] -= size
            lm = load_mem[d] = load_mem[d] + m
            lc = load_comm[d] = load_comm[d] + c
            lm *= inv_m
            lc *= inv_c
            replace(heap, (lm if lm > lc else lc, d))
        j = 0


def _fill_idle(runs: Slice, order: list[int], idle: Sequence[int], state: DeviceState, norm: Norm,
               out: list[int], left: list[float]) -> tuple[int, int]:
    """For :func:`balanced_runs`: the items, in ``order`` of their runs, on the ``idle`` devices one
    each, while the next has room and the last placement left a key above 0.0 (``left`` gets each
    key left). Returns where it stopped: the position in ``order`` and the items of that run
    placed. (Writing a run's items a slice at a time costs more than this loop for runs of 4.)"""
    free, load_mem, load_comm = state.free, state.load_mem, state.load_comm
    inv_m, inv_c = norm
    placed, n_idle = 0, len(idle)
    last = 1.0  # the key the last placement left
    for at, r in enumerate(order):
        m, c, size, k, first = runs[r]
        for j in range(k):
            if placed == n_idle or not last > 0.0 or size > free[idle[placed]]:
                return at, j
            d = out[first + j] = idle[placed]
            free[d] -= size
            lm = load_mem[d] = load_mem[d] + m
            lc = load_comm[d] = load_comm[d] + c
            lm *= inv_m
            lc *= inv_c
            last = lm if lm > lc else lc
            left.append(last)
            placed += 1
    return len(order), 0


def _device_keys(left: list[float], idle: Sequence[int], started_idle: bool, state: DeviceState,
                 norm: Norm) -> list[float]:
    """For :func:`balanced_runs`: every device's key once the idle devices are filled: ``left`` for
    the idle devices it reached, 0.0 for the other idle ones (their loads are zeros), the others'
    from their loads."""
    load_mem, load_comm = state.load_mem, state.load_comm
    inv_m, inv_c = norm
    n = len(load_mem)
    if started_idle:  # (0 x inf is nan: the devices not reached keep the key they started with)
        return left + [0.0] * (n - len(left))
    if not idle or idle[-1] - idle[0] != len(idle) - 1:
        return _load_keys(load_mem, load_comm, inv_m, inv_c)
    lo, hi = idle[0], idle[-1] + 1  # consecutive idle devices: the loaded ones lie around them
    keys = _load_keys(load_mem[:lo], load_comm[:lo], inv_m, inv_c) if lo else []
    keys += left
    keys += [0.0] * (hi - lo - len(left))
    if hi < n:
        keys += _load_keys(load_mem[hi:], load_comm[hi:], inv_m, inv_c)
    return keys


def _load_keys(load_mem: list[float], load_comm: list[float], inv_m: float, inv_c: float) -> list[float]:
    """Each device's key: its larger normalised load. Devices in a row often hold the same loads
    (the same float objects: the equal pieces of a split, one a device), which share one key."""
    n = len(load_mem)
    if n and load_mem.count(load_mem[0]) == n and load_comm.count(load_comm[0]) == n:
        m, c = load_mem[0] * inv_m, load_comm[0] * inv_c  # one load pair (a C scan tells): one key
        return [m if m > c else c] * n
    keys: list[float] = []
    keep = keys.append
    last_m = last_c = None
    key = 0.0
    for m, c in zip(load_mem, load_comm, strict=True):
        if m is not last_m or c is not last_c:
            last_m, last_c = m, c
            m *= inv_m
            c *= inv_c
            key = m if m > c else c
        keep(key)
    return keys


def _place_past_full(heap: list[tuple[float, int]], i: int, item: tuple[float, float, float], norm: Norm,
                     state: DeviceState, out: list[int], parked: list[tuple[float, int, float]]) -> None:
    """For :func:`balanced_runs`, when its least-loaded device has no room for item ``i`` (its
    size, HBM bytes and all-to-all bytes): the least-loaded device with room takes it (``out[i]``,
    the device's loads and room updated); the devices passed over go to ``parked`` with their room
    and keys (see there)."""
    size, mem, comm = item
    free, load_mem, load_comm = state.free, state.load_mem, state.load_comm
    inv_m, inv_c = norm
    pop, push = heapq.heappop, heapq.heappush
    while heap and size > free[heap[0][1]]:
        key, d = pop(heap)
        push(parked, (-free[d], d, key))
    if heap:
        d = out[i] = heap[0][1]
        free[d] -= size
        lm = load_mem[d] = load_mem[d] + mem
        lc = load_comm[d] = load_comm[d] + comm
        lm *= inv_m
        lc *= inv_c
        heapq.heapreplace(heap, (lm if lm > lc else lc, d))


def _unpark(heap: list[tuple[float, int]], parked: list[tuple[float, int, float]], size: float) -> None:
    """For :func:`balanced_runs`: the ``parked`` devices with room for a piece of ``size`` bytes
    back in the heap, largest room first (those left have less room than the last one out)."""
    pop, push = heapq.heappop, heapq.heappush
    while parked and not size > -parked[0][0]:
        _, d, key = pop(parked)
        push(heap, (key, d))


def _least_keys(keys: list[float], need: list[float] | None, free: list[float],
                norm: Norm) -> list[tuple[float, int]]:
    """For :func:`balanced_assign`: the heap of (key, device) its last items (``need``: their sizes;
    None: at least as many as the devices) are placed from, given every device's key.

    Usually only the m smallest pairs, for m items, sorted (a sorted list is a heap): the j-th
    placement leaves at most j - 1 of them replaced, so an untouched one among them is below every
    pair outside, and the m placements pop what the whole heap's would, as long as none finds its
    device full. That holds when each of those devices has room for all m items (twice over, for
    the rounding of the running differences). The keys must be ordered (no nan): the normalisers
    positive and finite, so every load is finite. Otherwise the heap of every device."""
    inv_m, inv_c = norm
    if need is not None and len(need) < len(keys) and 0.0 < inv_m < math.inf and 0.0 < inv_c < math.inf \
            and min(need) >= 0.0:
        # A stable sort by key: ties in device order, as the pairs compare.
        low = sorted(range(len(keys)), key=keys.__getitem__)[:len(need)]
        if min(map(free.__getitem__, low)) >= 2.0 * sum(need):
            return [(keys[d], d) for d in low]
    heap = list(zip(keys, range(len(keys)), strict=True))
    heapq.heapify(heap)
    return heap


def _keys_apart(loads: list[float], inv: float) -> bool:
    """Whether the normalised loads ``load x inv`` stay 0.0 for a zero load and are above 0.0 for the
    others: every load is non-negative, no product underflows, and ``inv`` is positive and finite."""
    # (A 1.0 after the loads instead of min(..., default=1.0), whose keyword costs more than the
    # min: with a positive, finite ``inv``, a smallest load of 1.0 or more passes either way.)
    return 0.0 < inv < math.inf and min(itertools.chain(filter(None, loads), (1.0,))) * inv > 0.0


def _place_group(mem: list[float], comm: list[float], sizes: list[float],
                 state: DeviceState) -> list[int] | None:
    """:func:`balanced_assign` of a group's pieces on one domain's devices (``state``: theirs, a
    copy it may change), or ``None`` unless it places every piece.

    On devices without load it puts the j-th piece (by key) on the j-th device while that device has
    room and the piece before left a key above 0.0 (see there). Usually the group goes to an idle
    domain and every piece passes: that is then its answer, found without running it.
    """
    room, load_mem, load_comm = state.free, state.load_mem, state.load_comm
    if len(mem) <= len(room) and state.idle():
        _, _, keys, order = _ranked(mem, comm, load_mem, load_comm)
        got = [0] * len(order)
        for j, i in enumerate(order):
            if sizes[i] > room[j] or (j and not keys[order[j - 1]] > 0.0):
                break
            got[i] = j
        else:
            return got
    placed = balanced_assign(mem, comm, sizes, room, load_mem, load_comm)
    return None if None in placed else [d for d in placed if d is not None]


def _keys_above_zero(m: float, c: float, k: int) -> bool:
    """Whether ``k`` equal pieces of ``m`` HBM bytes and ``c`` all-to-all bytes on devices without
    load each leave a key above 0.0 there (as :func:`_ranked` gives them; one piece needs none)."""
    if k == 1:
        return True
    inv_m = 1.0 / (sum([m] * k) or 1.0)  # (the loads, all zero, add nothing)
    inv_c = 1.0 / (sum([c] * k) or 1.0)
    m *= inv_m
    c *= inv_c
    return (m if m > c else c) > 0.0


def _domain_slices(groups: Iterable[Slice], per_domain: Iterable[int]) -> list[list[Slice]]:
    """The row-wise groups (each its table's runs), heaviest first, each as the slices that go to
    one scale-up domain apiece: a group with ``per_domain`` (its table's, in order) is cut in
    slices of that many pieces; any other group is one slice."""
    each = itertools.chain.from_iterable

    def heaviest_first(item: tuple[Slice, int]) -> float:
        return -sum(each(itertools.repeat(m + c, n) for m, c, _, n, _ in item[0]))

    out: list[list[Slice]] = []
    for group, step in sorted(zip(groups, per_domain, strict=True), key=heaviest_first):
        slices: list[Slice] = [[]]
        left = step or sum(n for *_, n, _ in group)
        for m, c, size, n, first in group:
            while n:
                if not left:
                    slices.append([])
                    left = step
                k = n if n < left else left
                slices[-1].append((m, c, size, k, first))
                first, n, left = first + k, n - k, left - k
        out.append(slices)
    return out


def assign_hbm(
    runs: Sequence[tuple[Candidate, int]], state: DeviceState, domain: int,
) -> tuple[list[int], list[Candidate]]:
    """Assign HBM shards to devices (updating their loads; their room is used up): ``runs`` are the
    pieces, each size of piece once with the number of its pieces in a row (see
    :func:`~dse.model.placement.tiers.choose_tiers`). Returns the device of each piece, flat in
    run order (-1 where none has room), and those unplaced, in the order they were tried.

    Row-wise shards of one table are kept inside one scale-up domain when it has room (as TorchRec's
    table-wise-row-wise sharding), so their partial-sum reduce-scatter stays on the fabric; a table
    spread over several domains (``per_domain`` pieces each) puts each slice in its own domain.
    Pieces are numbered flat (a run of n equal pieces takes n numbers), but placed a run at a time.
    """
    groups: dict[int, Slice] = {}
    per_domain: list[int] = []  # of each group's first run
    # Each run's first flat index, then the end of the last (zip stops at the runs' end); the runs
    # not in a group (most) listed in one comprehension, for balanced_runs.
    starts = list(itertools.accumulate([count for _, count in runs], initial=0))
    rest: Slice = [(c.mem, c.comm, c.footprint, count, start)
                   for (c, count), start in zip(runs, starts, strict=False)
                   if not (c.sharding == "row_wise" and c.partial)]
    if len(rest) < len(runs):
        for (c, count), start in zip(runs, starts, strict=False):
            if c.sharding == "row_wise" and c.partial:
                group = groups.get(c.table)
                if group is None:
                    group = groups[c.table] = []
                    per_domain.append(c.per_domain)
                group.append((c.mem, c.comm, c.footprint, count, start))
    devices = [-1] * starts[-1]
    if groups:
        rest += _place_groups(_domain_slices(groups.values(), per_domain), state, domain, devices)
    balanced_runs(rest, state, devices)  # (no one reads the room after it)
    unplaced: list[int] = []
    if -1 in devices:  # (every piece is in a group or in ``rest``)
        unplaced = [i for *_, n, first in rest for i in range(first, first + n) if devices[i] < 0]
    return devices, _candidates_at(runs, unplaced)


def _place_groups(groups: Iterable[list[Slice]], state: DeviceState, domain: int,
                  devices: list[int]) -> Slice:
    """For :func:`assign_hbm`: each slice of a row-wise group (``groups``: each group's slices) in
    the least-loaded scale-up domain (the first of equal ones) where it fits and that no slice of
    its group took (``devices`` of its pieces set); returns the slices that fit nowhere."""
    load_mem, load_comm = state.load_mem, state.load_comm
    n = len(load_mem)

    def domain_load(lo: int) -> float:
        total: float = sum(map(operator.add, load_mem[lo:lo + domain], load_comm[lo:lo + domain]))
        return total

    # A slice changes only the loads of the domain it lands in, so only that domain's sum is
    # taken again (the same sum as before, hence the same order of domains for the next group).
    starts = range(0, n, domain)
    loads = [0.0] * len(starts) if state.idle() else [domain_load(lo) for lo in starts]
    failed: Slice = []
    for slices in groups:
        # The domains by load (a stable sort: ties by index), once a group: its slices change the
        # loads of the domains they take, which leave the list, and the others keep their order.
        ranked = sorted(range(len(loads)), key=loads.__getitem__)
        filled: dict[tuple[float, float, int], float] = {}
        for j, equal in _take_domains(slices, ranked, loads, state, domain, devices, failed):
            # A domain an idle one's equal pieces filled holds what any other they filled holds.
            if equal is None:
                loads[j] = domain_load(j * domain)
            elif equal in filled:
                loads[j] = filled[equal]
            else:
                loads[j] = filled[equal] = domain_load(j * domain)
    return failed


def _take_domains(slices: list[Slice], ranked: list[int], loads: list[float], state: DeviceState, domain: int,
                  devices: list[int], failed: Slice) -> list[tuple[int, tuple[float, float, int] | None]]:
    """For :func:`_place_groups`: the slices of one group, each in the first domain of ``ranked``
    (those it takes leave the list) where it fits (those that fit nowhere added to ``failed``).
    Returns the domains taken, each with the (HBM bytes, all-to-all bytes, count) of the equal
    pieces that filled it from idle, or None.

    A slice of equal pieces whose keys are above 0.0 goes to an idle domain (its sum is 0.0 just
    when every load in it is, none being negative) one piece a device, from its first, when each
    has room: what _place_group answers then (see there), found without a search. Such slices are
    listed and written at the end, consecutive ones (a split's, domain after domain) at once."""
    free, load_mem, load_comm = state.free, state.load_mem, state.load_comm
    n = len(free)
    above_zero: dict[tuple[float, float, int], bool] = {}  # (the slices of a run share it)
    idle: list[list[Any]] = []  # lo, end, (m, c, size), first: equal pieces on consecutive devices
    taken: list[tuple[int, tuple[float, float, int] | None]] = []
    for runs in slices:
        m, c, size, k, first = runs[0]
        if (m, c, k) not in above_zero:
            above_zero[m, c, k] = _keys_above_zero(m, c, k)
        uniform = len(runs) == 1 and above_zero[m, c, k]
        for j in ranked:
            lo = j * domain
            end = lo + k
            if uniform and not loads[j] and end <= min(lo + domain, n) and \
                    not any(map(operator.gt, itertools.repeat(size, k), free[lo:end])):
                if idle and idle[-1][1] == lo and idle[-1][2] == (m, c, size) and \
                        idle[-1][3] + lo - idle[-1][0] == first:
                    idle[-1][1] = end
                else:
                    idle.append([lo, end, (m, c, size), first])
                taken.append((j, (m, c, k)))
            elif _place_slice(runs, state, lo, lo + domain, devices):
                taken.append((j, None))
            else:
                continue
            ranked.remove(j)
            break
        else:
            failed += runs
    for lo, end, (m, c, size), first in idle:
        # Its loads are zero and the pieces' are not negative: each device's becomes the piece's.
        # Their room is one figure as a rule (nothing placed there yet): one subtraction then.
        block = free[lo:end]
        free[lo:end] = [block[0] - size] * (end - lo) if block.count(block[0]) == end - lo else \
            [room - size for room in block]
        load_mem[lo:end] = [m] * (end - lo)
        load_comm[lo:end] = [c] * (end - lo)
        devices[first:first + end - lo] = range(lo, end)
    return taken


def _place_slice(runs: Slice, state: DeviceState, lo: int, hi: int, devices: list[int]) -> bool:
    """For :func:`_take_domains`: place the pieces of ``runs`` on the domain ``lo:hi`` with
    :func:`_place_group`, or say they do not fit there."""
    each = itertools.chain.from_iterable
    g_mem, g_comm, g_size = ([*each(itertools.repeat(at[f], at[3]) for at in runs)] for f in range(3))
    got = _place_group(g_mem, g_comm, g_size, state.part(lo, hi))
    if got is None:
        return False
    free, load_mem, load_comm = state.free, state.load_mem, state.load_comm
    flat = each(range(first, first + n) for _, _, _, n, first in runs)
    for i, x, m, c, size in zip(flat, got, g_mem, g_comm, g_size, strict=True):
        d = devices[i] = lo + x
        free[d] -= size
        load_mem[d] += m
        load_comm[d] += c
    return True


def _candidates_at(runs: Sequence[tuple[Candidate, int]], indices: list[int]) -> list[Candidate]:
    """The candidate of each flat piece index in ``indices`` (usually none)."""
    if not indices:
        return []
    flat = [c for c, count in runs for c in [c] * count]
    return [flat[i] for i in indices]


class HostAssignment(NamedTuple):
    """Where the pieces of one node tier went."""

    by_device: dict[int, list[tuple[Candidate, Traffic]]]
    """Per serving device: its pieces, each with its traffic when pooled by the CPUs (computed
    once, here)."""
    used_bytes: list[float]
    """Per node: bytes of the pieces in the tier."""
    unplaced: list[Candidate]
    """The pieces no node had room for, in the order they were tried."""


def assign_host(host_set: list[Candidate], load: list[float], capacity: float, nodes: int,
                per_node: int, costs: ShardCosts, unit: int,
                cached: CacheShares | None = None) -> HostAssignment:
    """A node tier is per node: place each piece on a node (LPT on its host traffic, within
    ``capacity`` bytes a node), then on one of the node's devices (:func:`_serving_device`), whose
    ``load`` (HBM bytes of its own pieces, plus the host traffic of the pieces placed before, this
    tier's included) is updated. ``unit``: the tier's access unit (bytes). ``cached``: the devices'
    caches of their host pieces, updated (:func:`cache_shares`; None: not served from one)."""
    used = [0.0] * nodes
    if not host_set:
        return HostAssignment({}, used, [])
    traffic: list[Traffic] = []
    host_costs: list[float] = []
    row, s_c = costs.row, costs.s_c
    for c in host_set:
        rb, state = row(c.dim)
        t = pooled_traffic(c.lookups, rb, state, c.out_rows * c.dim * s_c, c.touched, unit=unit)
        traffic.append(t)
        host_costs.append(t.far_fwd + t.far_bwd + t.link_fwd + t.link_bwd)
    node_of = lpt_assign(host_costs, [c.footprint for c in host_set], [capacity] * nodes)
    by_device: dict[int, list[tuple[Candidate, Traffic]]] = {}
    unplaced: list[Candidate] = []
    ranked = sorted(zip(host_set, traffic, host_costs, node_of, strict=True), key=operator.itemgetter(2),
                    reverse=True)  # (stable: equal costs keep their order)
    for c, t, cost, node in ranked:
        if node is None:
            unplaced.append(c)
            continue
        devs = range(node * per_node, node * per_node + per_node)
        dev = _serving_device(devs, c, cost, load, cached, costs.wl.access_zipf)
        load[dev] += cost
        used[node] += c.footprint
        by_device.setdefault(dev, []).append((c, t))
    return HostAssignment(by_device, used, unplaced)


class CacheShares(NamedTuple):
    """For :func:`assign_host` when host pieces are served from a cache in their device's own
    memory: per device, the memory left for it, and the bytes and host traffic of the host pieces it
    serves so far, of every node tier (the tiers' pieces share one cache)."""

    spare: list[float]
    footprint: list[float]
    traffic: list[float]


def cache_shares(spare: list[float] | None) -> CacheShares | None:
    """The caches of devices with ``spare`` bytes of their own memory each for their host pieces,
    none taken yet; None when no device has any (the least-loaded device then serves)."""
    if not spare or not any(spare):
        return None
    return CacheShares(spare, [0.0] * len(spare), [0.0] * len(spare))


def _serving_device(devs: range, c: Candidate, cost: float, load: list[float],
                    cached: CacheShares | None, zipf: float) -> int:
    """The device of ``devs`` that serves host piece ``c`` (host traffic ``cost``). Without a cache,
    the one with the least ``load``. Behind a cache, which the pieces of a device share in
    proportion to their bytes (so each holds the same fraction of its rows, spare over the pieces'
    bytes), the one whose misses after taking it are fewest: its host traffic times the Zipf miss
    share at that fraction, taken at ``c``'s rows for all its pieces. Least load alone put
    lookup-heavy tables on devices whose own memory was full, whose every lookup then missed."""
    if cached is None:
        return min(devs, key=load.__getitem__)
    spare, fp, traffic = cached
    size, rows = c.footprint, float(c.rows)
    a, den = zipf_norm(rows, zipf)
    log = math.log
    dev, fewest = devs.start, math.inf
    # Host traffic x (1 - zipf_share(k, rows, a, den)), written out in zipf_share's own operations
    # (so the same figure to the bit): a call for every host piece and device of a design cost 8%
    # of a Zion evaluation. Tests hold its choice to zipf_hit_rate's.
    for d in devs:
        k = spare[d] / (fp[d] + size) * rows
        if k > 0.0:
            k = rows if k > rows else 1.0 if k < 1.0 else k
            misses = (traffic[d] + cost) * (1.0 - ((k + 1.0) ** a - 1.0 if a else log(k + 1.0)) / den)
        else:
            misses = traffic[d] + cost
        if misses < fewest:
            dev, fewest = d, misses
    fp[dev] += size
    traffic[dev] += cost
    return dev


class HbmAssignment(NamedTuple):
    """Where the HBM pieces went."""

    shards: list[Shard]
    """The placed pieces, a group per run of equal pieces, in the order they were given: the
    group's :class:`~dse.model.placement.plan.Shard` (on its first device) ..."""
    devices: list[tuple[int, ...]]
    """... and the devices of its pieces."""
    hbm_used_bytes: list[float]
    """Per device: dense model, activations, replicas and the placed pieces."""
    loads: list[float]
    """Per device: HBM bytes per step of its pieces."""
    unplaced: list[Candidate]
    """Pieces no device had room for (they go to host DDR)."""


def place_hbm(runs: Sequence[tuple[Candidate, int]], budgets: Budgets, device_cap: float,
              replica_bytes: float, costs: ShardCosts) -> HbmAssignment:
    """Assign the pieces chosen for HBM (``runs``: each size of piece with the number of its pieces,
    see :func:`assign_hbm`) to devices, each with ``device_cap`` bytes for tables (none on device 0
    when it runs the bottom MLP alone: ``budgets.lead``)."""
    g = budgets.devices
    hbm_used = [budgets.dense_bytes + budgets.activation_bytes + replica_bytes] * g
    state = DeviceState(free=[device_cap] * g, load_mem=[0.0] * g, load_comm=[0.0] * g)
    if budgets.lead:
        state.free[0] = 0.0
    devices, unplaced = assign_hbm(runs, state, budgets.domain)
    traffic = costs.traffic
    own = budgets.tiers[0].name
    shards: list[Shard] = []
    placed: list[tuple[int, ...]] = []
    start = 0
    for c, count in runs:
        if count == 1:  # most runs are one whole table
            d = devices[start]
            start += 1
            if d < 0:
                continue
            on: tuple[int, ...] = (d,)
            hbm_used[d] += c.footprint
        else:
            on = tuple(devices[start:start + count])
            start += count
            if -1 in on:
                on = tuple(d for d in on if d >= 0)
                if not on:
                    continue
            footprint = c.footprint
            for d in on:
                hbm_used[d] += footprint
        # (Built from the tuple of its fields, see new_shard: one a run, in the planner's hot loop.)
        shard = new_shard((c.table, c.sharding, c.rows, c.dim, c.lookups, c.out_rows, c.footprint, on[0],
                           own, "local", c.traffic or traffic(c.lookups, c.dim, c.out_rows, 0.0, c.touched),
                           1.0, c.partial))
        shards.append(shard)
        placed.append(on)
    return HbmAssignment(shards, placed, hbm_used, state.load_mem, unplaced)
