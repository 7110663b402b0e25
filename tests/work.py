"""The work a call does, counted instead of timed, for the tests that hold dse to "fast" (a
refusal reads and builds nothing large; a fuzzed file loads or fails without a pathological
loop): a clock flakes on a loaded machine, a count does not.

Two counts, each blind where the other sees: the calls dse's own code makes (a profile hook's
``call`` events whose caller is in ``dse/`` and its ``c_call`` events from there: a loop over an
absurd count makes a call per item at least) and the peak memory allocated meanwhile
(:mod:`tracemalloc`: a vectorised build of an absurd count allocates it). The calls a parser
makes inside itself (``tomllib``) are not counted: reading is bounded by the file's size
(:mod:`dse.reading`), and the tests that bound it count bytes. The same code makes the same counts
on any machine, loaded or not.
"""

from __future__ import annotations

import os
import sys
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import dse

DSE = str(Path(dse.__file__).parent) + os.sep
"""The folder of dse's own code (calls made from a frame of a file under it are counted)."""
REFUSAL_CALLS = 50_000
"""Calls a refusal may make. Measured: 100 to 800 for a system or workload past a limit (a spec
parsed, its overrides merged, its fields checked), 17,000 for a command's first run in a process
(its modules imported). Building what a count past a limit asks for takes one call per item at
least: 21 per synthetic table (210,000 for 10,000), 60 per listed one, 10**7 for 10**7 nodes."""
REFUSAL_BYTES = 64 * 2**20
"""Memory a refusal may allocate at its peak: reading a spec allocates its limit, 4 MiB
(``dse.model.limits.MAX_SPEC_FILE_BYTES``), once; a list of 10**7 of anything is 80 MB."""


class TooMuchWork(AssertionError):
    """A call went past its budget of calls: raised from inside it (so a regression that would
    loop over 10**9 items fails within a second instead of hanging the run), and again after it
    should the call have caught the first."""


@dataclass(frozen=True)
class Work:
    """What a call did: ``calls`` dse made, ``peak_bytes`` allocated at once, and ``error``, what it
    raised (``None`` when it returned)."""

    calls: int
    peak_bytes: int
    error: BaseException | None


def work_of(call: Callable[[], Any], calls: int = REFUSAL_CALLS, memory: bool = True) -> Work:
    """Run ``call`` on this thread, counting the calls dse makes in it and (when ``memory``; 0
    otherwise) the peak memory it allocates; an exception it raises is kept in the
    :class:`Work`, not raised. Past ``calls`` calls it is stopped with :class:`TooMuchWork`.
    Counting costs time: calls about 3 times the call's own, memory 4 more."""
    made = 0

    def count(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal made
        caller = frame.f_back if event == "call" else frame if event == "c_call" else None
        if caller is not None and caller.f_code.co_filename.startswith(DSE):
            made += 1
            if made > calls:
                sys.setprofile(None)
                raise TooMuchWork(f"over {calls:,} calls")

    tracing = tracemalloc.is_tracing()
    if memory and not tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    error: BaseException | None = None
    sys.setprofile(count)
    try:
        call()
    except TooMuchWork:
        raise
    except Exception as exc:
        error = exc
    finally:
        sys.setprofile(None)
        peak = tracemalloc.get_traced_memory()[1] - before if memory else 0
        if memory and not tracing:
            tracemalloc.stop()
    if made > calls:
        raise TooMuchWork(f"over {calls:,} calls")
    return Work(made, peak, error)


def refusal(call: Callable[[], Any], calls: int = REFUSAL_CALLS,
            peak_bytes: int = REFUSAL_BYTES) -> BaseException | None:
    """What ``call`` raised (``None`` if it returned), once it is shown to have made at most
    ``calls`` calls and allocated at most ``peak_bytes`` at once."""
    work = work_of(call, calls)
    assert work.peak_bytes <= peak_bytes, (
        f"{work.peak_bytes:,} bytes allocated at once, over {peak_bytes:,}")
    return work.error
