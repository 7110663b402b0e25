"""A ``dse`` process that stalls as it is about to complete a trial, for the tests that need a
process caught holding one (killed, stopped or failed by another meanwhile) without racing it:

    python tests/stalling.py MARKER N [--wake FILE] [--in-lock] -- DSE-ARGS...

runs ``python -m dse DSE-ARGS`` with one change: when the process is about to record its N-th
completed trial (Optuna's ``set_trial_state_values`` on the journal, PostgreSQL or the storage
proxy), it writes the trial's number to MARKER and waits: the trial RUNNING and claimed by it,
its completion not sent, its heartbeat (on PostgreSQL) still beating. With ``--in-lock`` it waits
just after taking the journal's write lock (an exclusive ``flock`` on ``FILE.write.lock``) to
append that completion, holding the lock. It goes on once the file ``--wake`` names exists (else
it waits to be killed), and exits with code 3 after :data:`MOST_S` seconds of waiting: a test
that failed before ending it leaves no process behind.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import runpy
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MOST_S = 300.0
POLL_S = 0.05


def command(marker: Path, nth: int, wake: Path | None = None, in_lock: bool = False) -> list[str]:
    """The arguments that start a stalling ``dse`` (the dse arguments follow them)."""
    return [sys.executable, __file__, str(marker), str(nth),
            *(["--wake", str(wake)] if wake else []), *(["--in-lock"] if in_lock else []), "--"]


def stall_at(marker: Path, nth: int, wake: Path | None, in_lock: bool) -> None:
    """Patch the storages (and ``fcntl.flock``, ``in_lock``) so that this process's ``nth``
    completion stalls, as the module says."""
    from optuna.storages import GrpcStorageProxy, JournalStorage, RDBStorage
    from optuna.trial import TrialState

    completions = 0
    pending: list[int] = []  # the trial to stall in at the next exclusive lock (in_lock)

    def stall(number: int) -> None:
        said = marker.with_name(marker.name + ".part")
        said.write_text(str(number))
        said.rename(marker)  # whole or absent
        _wait_for(wake)

    def patched(real: Any) -> Any:
        def set_trial_state_values(self: Any, trial_id: int, state: TrialState,
                                   values: Sequence[float] | None = None) -> bool:
            nonlocal completions
            if state == TrialState.COMPLETE:
                completions += 1
                if completions == nth:
                    number = self.get_trial_number_from_id(trial_id)
                    if in_lock:
                        pending.append(number)
                    else:
                        stall(number)
            return bool(real(self, trial_id, state, values))
        return set_trial_state_values

    for storage in (JournalStorage, RDBStorage, GrpcStorageProxy):
        storage.set_trial_state_values = patched(storage.set_trial_state_values)  # type: ignore[method-assign]
    real_flock = fcntl.flock

    def flock(fd: Any, operation: int) -> None:
        real_flock(fd, operation)
        if pending and operation & fcntl.LOCK_EX and os.readlink(
                f"/proc/self/fd/{fd if isinstance(fd, int) else fd.fileno()}").endswith(".write.lock"):
            stall(pending.pop())

    fcntl.flock = flock


def _wait_for(wake: Path | None) -> None:
    """Until ``wake`` exists (or for good without one); exit 3 after :data:`MOST_S`."""
    deadline = time.monotonic() + MOST_S
    while time.monotonic() < deadline:
        if wake is not None and wake.exists():
            return
        time.sleep(POLL_S)
    os._exit(3)


def main(argv: list[str]) -> None:
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="stalling.py")
    parser.add_argument("marker", type=Path)
    parser.add_argument("nth", type=int)
    parser.add_argument("--wake", type=Path)
    parser.add_argument("--in-lock", action="store_true")
    args = parser.parse_args(argv[:split])
    stall_at(args.marker, args.nth, args.wake, args.in_lock)
    sys.argv = ["dse", *argv[split + 1:]]
    runpy.run_module("dse", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
